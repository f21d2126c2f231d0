//! Save files of the storage (see `crate::savefile` for the framing): the registered
//! types by name, the entity allocator, the tables in creation order (types and
//! entities), then each type's columns — change marks and postcard-encoded values,
//! column-wise, as hecs's column serialization — in the order of the tables that hold it.
//!
//! Loading parses and checks everything into a [`ParsedStorage`] first (decoding every
//! column), so a bad file changes nothing; [`Storage::apply_save`] then rebuilds the
//! tables in the saved order, so table ids, the match cache and query order are those of
//! the saved world, and later frames run as they would have there.

use std::any::Any;
use std::collections::HashSet;
use std::num::NonZeroU32;

use super::{Storage, TypeMarks};
use crate::component::ComponentId;
use crate::entity::{Entities, Entity, Location};
use crate::savefile::{LoadError, Put, Reader, SaveError};

/// A checked, decoded storage, ready for [`Storage::apply_save`].
pub(crate) struct ParsedStorage {
    entities: Entities,
    /// Per table, in creation order: its sorted types and its entities.
    tables: Vec<(Vec<ComponentId>, Vec<Entity>)>,
    /// Per type, by id: its decoded columns (`Vec<Vec<C>>`) and marks.
    columns: Vec<(Box<dyn Any + Send + Sync>, TypeMarks)>,
}

impl Storage {
    /// The first registered type (by id) not opted into save files.
    pub(crate) fn first_not_saving(&self) -> Option<ComponentId> {
        (0..self.columns.len())
            .find(|&i| !self.columns[i].can_serde())
            .map(|i| ComponentId(i as u32))
    }

    /// Appends the storage's section of a save to `out`.
    pub(crate) fn save_to(&self, out: &mut Vec<u8>) -> Result<(), SaveError> {
        if let Some(id) = self.first_not_saving() {
            return Err(SaveError::NotSaving {
                type_name: self.type_name(id),
            });
        }
        // One allocation for the whole file, for values that encode to their size.
        out.reserve(
            self.columns.iter().map(|c| c.value_bytes()).sum::<usize>()
                + 8 * self.entities.len()
                + 4 * self.entities.slots()
                + 4096,
        );
        out.put_u64(self.registry.len() as u64);
        for i in 0..self.registry.len() {
            out.put_bytes(self.registry.info(ComponentId(i as u32)).name.as_bytes());
        }
        let e = &self.entities;
        out.put_u64(e.slots() as u64);
        for (generation, _) in e.slot_states() {
            out.put_u32(generation.get());
        }
        out.put_u64(e.free_list().len() as u64);
        for &f in e.free_list() {
            out.put_u32(f);
        }
        out.put_u64(e.retired() as u64);
        out.put_u64(e.reservations().len() as u64);
        for (ids, spawned_last) in e.reservations() {
            out.put_u32(spawned_last);
            out.put_u64(ids.len() as u64);
            for &i in ids {
                out.put_u32(i);
            }
        }
        let (lane_base, lanes) = e.lanes();
        out.put_u32(lane_base);
        out.put_u32(lanes);
        out.put_u64(self.tables.len() as u64);
        for t in 0..self.tables.len() {
            let table = self.tables.get(t as u32);
            out.put_u64(table.components().len() as u64);
            for c in table.components() {
                out.put_u32(c.0);
            }
            out.put_u64(table.len() as u64);
            out.reserve(8 * table.len());
            for e in &table.entities {
                out.put_u64(e.to_bits());
            }
        }
        for (id, columns) in self.columns.iter().enumerate() {
            let marks = columns.marks();
            for (k, &t) in self.tables_with[id].iter().enumerate() {
                let m = &marks.columns[k];
                for words in [m.changed.words(), m.added.words()] {
                    out.put_u64(words.len() as u64);
                    for &w in words {
                        out.put_u64(w);
                    }
                }
                // The column's byte length, patched once its values are encoded in place.
                let at = out.len();
                out.put_u64(0);
                let col = self
                    .tables
                    .get(t)
                    .column(ComponentId(id as u32))
                    .expect("a table has a column per type");
                columns
                    .encode_column(col, out)
                    .map_err(|message| SaveError::Encode {
                        type_name: self.type_name(ComponentId(id as u32)),
                        message,
                    })?;
                let len = (out.len() - at - 8) as u64;
                out[at..at + 8].copy_from_slice(&len.to_le_bytes());
            }
        }
        Ok(())
    }

    /// Checks the file's type names against the registered ones (same types, same order).
    fn check_types(&self, names: &[&str]) -> Result<(), LoadError> {
        let world: Vec<&'static str> = (0..self.registry.len())
            .map(|i| self.type_name(ComponentId(i as u32)))
            .collect();
        if names.iter().copied().eq(world.iter().copied()) {
            return Ok(());
        }
        if let Some(n) = names.iter().find(|n| !world.contains(n)) {
            return Err(LoadError::UnknownType {
                name: (*n).to_owned(),
            });
        }
        if let Some(&w) = world.iter().find(|w| !names.contains(w)) {
            return Err(LoadError::MissingType { type_name: w });
        }
        Err(LoadError::TypeOrder {
            file: names.iter().map(|n| (*n).to_owned()).collect(),
            world,
        })
    }

    /// Reads and checks the storage's section of a save, decoding every column; changes
    /// nothing.
    pub(crate) fn parse_save(&self, r: &mut Reader<'_>) -> Result<ParsedStorage, LoadError> {
        let n = r.count(8, "the component type list")?;
        let mut names = Vec::with_capacity(n);
        for _ in 0..n {
            names.push(r.name("a component type name")?);
        }
        self.check_types(&names)?;
        if let Some(id) = self.first_not_saving() {
            return Err(LoadError::NotSaving {
                type_name: self.type_name(id),
            });
        }
        let bad = |what: String| LoadError::BadEntities { what };

        // The allocator.
        let slots = r.count(4, "the entity slots")?;
        let mut generations = Vec::with_capacity(slots);
        for i in 0..slots {
            let g = r.u32("the entity slots")?;
            generations
                .push(NonZeroU32::new(g).ok_or_else(|| bad(format!("slot {i} has generation 0")))?);
        }
        let index = |i: u32, what: &str| {
            if (i as usize) < slots {
                Ok(i)
            } else {
                Err(bad(format!(
                    "{what} names slot {i}, past the {slots} slots"
                )))
            }
        };
        let nfree = r.count(4, "the free list")?;
        let mut free = Vec::with_capacity(nfree);
        for _ in 0..nfree {
            free.push(index(r.u32("the free list")?, "the free list")?);
        }
        let retired = r.u64("the retired count")?;
        let nres = r.count(12, "the reservations")?;
        let mut reserved = Vec::with_capacity(nres);
        for _ in 0..nres {
            let spawned_last = r.u32("a reservation")?;
            let n = r.count(4, "a reservation's ids")?;
            let mut ids = Vec::with_capacity(n);
            for _ in 0..n {
                ids.push(index(r.u32("a reservation's ids")?, "a reservation")?);
            }
            reserved.push((ids, spawned_last));
        }
        let lanes = (r.u32("the lanes")?, r.u32("the lanes")?);

        // The tables, and every live entity's location.
        let ntables = r.count(16, "the table list")?;
        let mut locations = vec![Location::NONE; slots];
        let mut tables: Vec<(Vec<ComponentId>, Vec<Entity>)> = Vec::with_capacity(ntables);
        let mut sets: HashSet<Vec<ComponentId>> = HashSet::with_capacity(ntables);
        for t in 0..ntables {
            let table = t as u32;
            let bad_table = |what: String| LoadError::BadTable { table, what };
            let ntypes = r.count(4, "a table's types")?;
            let mut types = Vec::with_capacity(ntypes);
            for _ in 0..ntypes {
                let c = r.u32("a table's types")?;
                if c as usize >= self.registry.len() {
                    return Err(bad_table(format!(
                        "component id {c}, past the {} types",
                        self.registry.len()
                    )));
                }
                if types.last().is_some_and(|&l: &ComponentId| l.0 >= c) {
                    return Err(bad_table("component ids not strictly ascending".into()));
                }
                types.push(ComponentId(c));
            }
            if (t == 0) != types.is_empty() {
                return Err(bad_table(
                    "table 0, and only it, holds the entities with no component".into(),
                ));
            }
            if !sets.insert(types.clone()) {
                return Err(bad_table(
                    "the same component set as an earlier table".into(),
                ));
            }
            let rows = r.count(8, "a table's entities")?;
            let mut entities = Vec::with_capacity(rows);
            for row in 0..rows {
                let bits = r.u64("a table's entities")?;
                let e = Entity::from_bits(bits).ok_or_else(|| {
                    bad(format!("table {t} row {row}: not an entity ({bits:#x})"))
                })?;
                let i = e.index() as usize;
                if i >= slots || generations[i].get() != e.generation() {
                    return Err(bad(format!(
                        "table {t} row {row}: entity {e} is not allocated"
                    )));
                }
                if locations[i] != Location::NONE {
                    return Err(LoadError::DuplicateEntity { entity: e });
                }
                locations[i] = Location {
                    table,
                    row: row as u32,
                };
                entities.push(e);
            }
            tables.push((types, entities));
        }
        if tables.is_empty() {
            return Err(LoadError::BadTable {
                table: 0,
                what: "missing: every world has the empty table".into(),
            });
        }

        // Every dead slot is free, reserved or retired: exactly one of them.
        let mut listed = vec![false; slots];
        for &i in free.iter().chain(reserved.iter().flat_map(|(ids, _)| ids)) {
            let i = i as usize;
            if locations[i] != Location::NONE {
                return Err(bad(format!(
                    "slot {i} is alive and listed as free or reserved"
                )));
            }
            if std::mem::replace(&mut listed[i], true) {
                return Err(bad(format!("slot {i} is listed twice as free or reserved")));
            }
        }
        let mut retired_found = 0u64;
        for i in 0..slots {
            if locations[i] == Location::NONE && !listed[i] {
                if generations[i].get() != u32::MAX {
                    return Err(bad(format!(
                        "slot {i} is neither alive, free, reserved nor retired"
                    )));
                }
                retired_found += 1;
            }
        }
        if retired_found != retired {
            return Err(bad(format!(
                "{retired} retired slots claimed, {retired_found} found"
            )));
        }
        let entities = Entities::from_parts(
            generations.into_iter().zip(locations).collect(),
            free,
            retired as usize,
            reserved,
            lanes,
        );

        // The columns: per type, one per table that holds it, in creation order.
        let mut columns = Vec::with_capacity(self.columns.len());
        for (id, typed) in self.columns.iter().enumerate() {
            let type_name = self.type_name(ComponentId(id as u32));
            let holding: Vec<usize> = (0..tables.len())
                .filter(|&t| tables[t].0.contains(&ComponentId(id as u32)))
                .collect();
            let mut marks = Vec::with_capacity(holding.len());
            let mut bytes = Vec::with_capacity(holding.len());
            for &t in &holding {
                let mut words = || -> Result<Vec<u64>, LoadError> {
                    let n = r.count(8, "change marks")?;
                    (0..n).map(|_| r.u64("change marks")).collect()
                };
                let changed = words()?;
                let added = words()?;
                marks.push((changed, added));
                bytes.push((r.bytes("a column")?, tables[t].1.len()));
            }
            let marks =
                TypeMarks::from_words(marks, |k| bytes[k].1).map_err(|e| LoadError::BadData {
                    what: format!("`{type_name}`: {e}"),
                })?;
            let decoded =
                typed
                    .decode_columns(&bytes)
                    .map_err(|(k, message)| LoadError::Decode {
                        type_name,
                        table: Some(holding[k] as u32),
                        message,
                    })?;
            columns.push((decoded, marks));
        }
        Ok(ParsedStorage {
            entities,
            tables,
            columns,
        })
    }

    /// Makes this storage the parsed one: the tables in the saved order (so the same
    /// ids), their entities, every column and mark, the allocator.
    pub(crate) fn apply_save(&mut self, parsed: ParsedStorage) {
        self.tables.truncate(1);
        for (with, columns) in self.tables_with.iter_mut().zip(&mut self.columns) {
            with.clear();
            columns.truncate_columns(0);
            columns.flush_graveyard();
        }
        for (t, (types, entities)) in parsed.tables.into_iter().enumerate() {
            if t > 0 {
                let id = self.table_for(&types);
                assert_eq!(id as usize, t, "tables are recreated in order");
            }
            self.tables.get_mut(t as u32).entities = entities;
        }
        for (c, (decoded, marks)) in self.columns.iter_mut().zip(parsed.columns) {
            c.install(decoded, marks);
        }
        self.entities = parsed.entities;
    }
}
