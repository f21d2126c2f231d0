//! Save files of the storage (see `crate::savefile` for the framing): the registered
//! types by name, each with its encoding, the entity allocator, the tables in creation
//! order (types and entities), then each type's columns — change marks and values
//! (postcard-encoded, or plain bytes), column-wise, as hecs's column serialization — in
//! the order of the tables that hold it; in a version-5 save (a runtime's, with several
//! stages), each type's layers of change marks after its columns. Each of these is a
//! section with its own integrity check (each type's columns one section).
//!
//! Loading parses and checks everything into a [`ParsedStorage`] first (decoding every
//! column), so a bad file changes nothing; [`Storage::apply_save`] then rebuilds the
//! tables in the saved order, so table ids, the match cache and query order are those of
//! the saved world, and later frames run as they would have there.

use std::collections::{HashMap, HashSet};
use std::num::NonZeroU32;

use super::Storage;
use super::marks::TypeMarks;
use crate::component::ComponentId;
use crate::entity::{Entities, Entity, Location};
use crate::erased::Erased;
use crate::hierarchy::{ChildOf, Children, Hierarchy};
use crate::savefile::{ColumnError, Encoding, Found, LoadError, Put, SaveError, SaveSource, Sink};

/// A checked, decoded storage, ready for [`Storage::apply_save`].
pub(crate) struct ParsedStorage {
    entities: Entities,
    /// Per table, in creation order: its sorted types and its entities.
    tables: Vec<SavedTable>,
    /// Per type, by id: its decoded columns (`Vec<Vec<C>>`) and marks.
    columns: Vec<SavedColumns>,
}

impl ParsedStorage {
    /// Forgets the layers of change marks a version-5 save held (their union stays): a
    /// load that does not restore them.
    pub(crate) fn drop_layers(&mut self) {
        for (_, marks) in &mut self.columns {
            marks.drop_layers();
        }
    }
}

/// A table as saved: its sorted types and its entities.
type SavedTable = (Vec<ComponentId>, Vec<Entity>);

/// A type's columns as loaded: `Vec<Vec<C>>`, and their marks.
type SavedColumns = (Erased, TypeMarks);

impl Storage {
    /// The first registered type (by id) not opted into save files.
    pub(crate) fn first_not_saving(&self) -> Option<ComponentId> {
        (0..self.columns.len())
            .find(|&i| self.columns[i].save_encoding().is_none())
            .map(|i| ComponentId(i as u32))
    }

    /// Whether some type keeps its change marks in one layer per stage (a runtime with
    /// several stages has run a frame): what a version-5 save adds.
    pub(crate) fn has_stage_layers(&self) -> bool {
        self.columns.iter().any(|c| c.marks().layers().is_some())
    }

    /// Writes the storage's section of a save to `out`; with `staged` (version 5), each
    /// type's layers of change marks after its columns.
    pub(crate) fn save_to(&self, out: &mut Sink<'_>, staged: bool) -> Result<(), SaveError> {
        if let Some(id) = self.first_not_saving() {
            return Err(SaveError::NotSaving {
                type_name: self.type_name(id),
            });
        }
        out.put_u64(self.registry.len() as u64);
        for i in 0..self.registry.len() {
            out.put_bytes(self.registry.info(ComponentId(i as u32)).name.as_bytes());
            let encoding = self.columns[i].save_encoding().expect("checked above");
            encoding.write(&mut out.buf);
        }
        out.end_section();
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
        out.end_section();
        out.put_u64(self.tables.len() as u64);
        for t in 0..self.tables.len() {
            let table = self.tables.get(t as u32);
            out.put_u64(table.components().len() as u64);
            for c in table.components() {
                out.put_u32(c.0);
            }
            out.put_u64(table.len() as u64);
            for e in table.entities() {
                out.put_u64(e.to_bits());
            }
        }
        out.end_section();
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
                let col = self
                    .tables
                    .get(t)
                    .column(ComponentId(id as u32))
                    .expect("a table has a column per type");
                if let Some(bytes) = columns.column_bytes(col) {
                    // Plain data: its bytes, written without a copy.
                    out.put_bytes(bytes);
                    continue;
                }
                // The column's byte length, patched once its values are encoded in place.
                let at = out.placeholder(8);
                columns
                    .encode_column(col, &mut out.buf)
                    .map_err(|message| SaveError::Encode {
                        type_name: self.type_name(ComponentId(id as u32)),
                        message,
                    })?;
                let len = (out.buf.len() - at - 8) as u64;
                out.buf[at..at + 8].copy_from_slice(&len.to_le_bytes());
            }
            if staged {
                write_layers(out, marks, self.tables_with[id].len());
            }
            out.end_section();
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

    /// Reads and checks the storage's sections of a save, decoding every column; changes
    /// nothing. Every list grows as its entries are read, never by the count the file
    /// gives (see [`SaveSource`]). What a section means is checked once its integrity check
    /// has passed (see [`Found`]), the columns' values excepted (decoded as read). One
    /// parser per section, in file order.
    pub(crate) fn parse_save(&self, r: &mut SaveSource<'_>) -> Result<ParsedStorage, LoadError> {
        self.parse_types(r)?;
        let mut allocator = parse_allocator(r)?;
        let tables = self.parse_tables(r, &mut allocator.states)?;
        let entities = allocator.into_entities()?;
        let columns = self.parse_columns(r, &tables)?;
        let parsed = ParsedStorage {
            entities,
            tables,
            columns,
        };
        if let Some(h) = self.hierarchy {
            check_hierarchy(&parsed, h)?;
        }
        Ok(parsed)
    }

    /// The component types section: the same types as this world's, in the same order,
    /// each opted in and saved the way this world saves it.
    fn parse_types(&self, r: &mut SaveSource<'_>) -> Result<(), LoadError> {
        let mut found = Found::default();
        let n = r.count("the component type list")?;
        let mut names = Vec::with_capacity(r.capacity(n, 9));
        let mut encodings = Vec::with_capacity(r.capacity(n, 9));
        for _ in 0..n {
            let name = String::from_utf8(r.bytes("a component type name")?);
            names.push(found.ok(name.map_err(|_| LoadError::BadData {
                what: "a component type name is not UTF-8".into(),
            })));
            encodings.push(Encoding::read(r)?);
        }
        r.end_section(|| "the component types".into())?;
        found.check()?;
        let names: Vec<String> = names.into_iter().map(Option::unwrap_or_default).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        self.check_types(&names)?;
        if let Some(id) = self.first_not_saving() {
            return Err(LoadError::NotSaving {
                type_name: self.type_name(id),
            });
        }
        for (i, &file) in encodings.iter().enumerate() {
            let world = self.columns[i].save_encoding().expect("checked above");
            if file != world {
                return Err(LoadError::Encoding {
                    type_name: self.type_name(ComponentId(i as u32)),
                    file: file.to_string(),
                    world: world.to_string(),
                });
            }
        }
        Ok(())
    }

    /// The tables section: each table's types and entities, every entity's location set
    /// in `states` (the allocator's slots) as it is read.
    fn parse_tables(
        &self,
        r: &mut SaveSource<'_>,
        states: &mut [(NonZeroU32, Location)],
    ) -> Result<Vec<SavedTable>, LoadError> {
        let bad = |what: String| LoadError::BadEntities { what };
        let mut found = Found::default();
        let ntables = r.count("the table list")?;
        let mut tables: Vec<SavedTable> = Vec::with_capacity(r.capacity(ntables, 16));
        let mut sets: HashSet<Vec<ComponentId>> = HashSet::new();
        for t in 0..ntables {
            let table = u32::try_from(t).map_err(|_| LoadError::BadData {
                what: format!("more than {} tables", u32::MAX),
            })?;
            let bad_table = |what: String| LoadError::BadTable { table, what };
            let ntypes = r.count("a table's types")?;
            let mut types = Vec::with_capacity(r.capacity(ntypes, 4));
            for _ in 0..ntypes {
                let c = r.u32("a table's types")?;
                if c as usize >= self.registry.len() {
                    found.keep(bad_table(format!(
                        "component id {c}, past the {} types",
                        self.registry.len()
                    )));
                }
                if types.last().is_some_and(|&l: &ComponentId| l.0 >= c) {
                    found.keep(bad_table("component ids not strictly ascending".into()));
                }
                types.push(ComponentId(c));
            }
            if (t == 0) != types.is_empty() {
                found.keep(bad_table(
                    "table 0, and only it, holds the entities with no component".into(),
                ));
            }
            if !sets.insert(types.clone()) {
                found.keep(bad_table(
                    "the same component set as an earlier table".into(),
                ));
            }
            let rows = r.count("a table's entities")?;
            let mut entities = Vec::with_capacity(r.capacity(rows, 8));
            // Rows read, kept or not (after a problem, the rest is read to the check).
            let mut read = 0;
            while read < rows {
                let run = r.entries(rows - read, 8, "a table's entities")?;
                read += run.len() / 8;
                for bits in run.chunks_exact(8) {
                    let bits = u64::from_le_bytes(bits.try_into().expect("8 bytes"));
                    let row = entities.len();
                    let Some(e) = Entity::from_bits(bits) else {
                        found.keep(bad(format!(
                            "table {t} row {row}: not an entity ({bits:#x})"
                        )));
                        continue;
                    };
                    let i = e.index() as usize;
                    let Some((_, location)) =
                        states.get_mut(i).filter(|(g, _)| g.get() == e.generation())
                    else {
                        found.keep(bad(format!(
                            "table {t} row {row}: entity {e} is not allocated"
                        )));
                        continue;
                    };
                    if *location != Location::NONE {
                        found.keep(LoadError::DuplicateEntity { entity: e });
                        continue;
                    }
                    *location = Location {
                        table,
                        row: row as u32,
                    };
                    entities.push(e);
                }
            }
            tables.push((types, entities));
        }
        r.end_section(|| "the tables".into())?;
        found.check()?;
        if tables.is_empty() {
            return Err(LoadError::BadTable {
                table: 0,
                what: "missing: every world has the empty table".into(),
            });
        }
        Ok(tables)
    }

    /// The columns sections: per type, one column (its change marks, then its values) per
    /// table that holds the type, in creation order.
    fn parse_columns(
        &self,
        r: &mut SaveSource<'_>,
        tables: &[SavedTable],
    ) -> Result<Vec<SavedColumns>, LoadError> {
        let mut columns = Vec::with_capacity(self.columns.len());
        for (id, typed) in self.columns.iter().enumerate() {
            let type_name = self.type_name(ComponentId(id as u32));
            let mut decoded = typed.new_columns();
            let mut marks = Vec::new();
            let mut rows = Vec::new();
            for (t, (types, entities)) in tables.iter().enumerate() {
                if !types.contains(&ComponentId(id as u32)) {
                    continue;
                }
                let changed = read_words(r)?;
                let added = read_words(r)?;
                marks.push((changed, added));
                rows.push(entities.len());
                let len = r.u64("a column")?;
                typed
                    .read_column(r, len, entities.len(), &mut decoded)
                    .map_err(|e| match e {
                        ColumnError::Load(e) => e,
                        ColumnError::Decode(message) => LoadError::Decode {
                            type_name,
                            table: Some(t as u32),
                            message,
                        },
                    })?;
            }
            let mut found = Found::default();
            let layers = if r.staged() {
                read_layers(r, &marks, &mut found)?
            } else {
                None
            };
            r.end_section(|| format!("the columns of `{type_name}`"))?;
            found.check()?;
            let bad = |e| LoadError::BadData {
                what: format!("`{type_name}`: {e}"),
            };
            let mut marks = TypeMarks::from_words(marks, |k| rows[k]).map_err(bad)?;
            if let Some((current, layers)) = layers {
                marks = marks
                    .with_layers(current, layers, |k| rows[k])
                    .map_err(bad)?;
            }
            columns.push((decoded, marks));
        }
        Ok(columns)
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
            let table = self.tables.get_mut(t as u32);
            *table.entities_mut() = entities;
            table.unsorted = true;
        }
        for (c, (decoded, marks)) in self.columns.iter_mut().zip(parsed.columns) {
            c.install(decoded, marks);
        }
        self.entities = parsed.entities;
    }
}

/// A type's layers of change marks, after its columns in a version-5 save: the stage
/// count (0: none), then, for several, the current stage and each layer: its stage (a
/// `u32`, as a check) and per column its changed and added words, as many as the
/// union's (a layer's marks are among the union's; padded with zeros): no counts of
/// their own.
fn write_layers(out: &mut Sink<'_>, marks: &TypeMarks, columns: usize) {
    let Some((current, layers)) = marks.layers() else {
        out.put_u32(0);
        return;
    };
    let layers: Vec<_> = layers.collect();
    out.put_u32(layers.len() as u32);
    out.put_u32(current as u32);
    for (k, layer) in layers.into_iter().enumerate() {
        out.put_u32(k as u32);
        for (m, u) in layer[..columns].iter().zip(&marks.columns) {
            let pairs = [
                (m.changed.words(), u.changed.words()),
                (m.added.words(), u.added.words()),
            ];
            for (words, union) in pairs {
                for i in 0..union.len() {
                    out.put_u64(words.get(i).copied().unwrap_or(0));
                }
            }
        }
    }
}

/// One column's change marks as saved: a `u64` count, then that many words.
fn read_words(r: &mut SaveSource<'_>) -> Result<Vec<u64>, LoadError> {
    let n = r.count("change marks")?;
    read_n_words(r, n)
}

/// `n` words of change marks; grows as they are read (see [`SaveSource`]).
fn read_n_words(r: &mut SaveSource<'_>, n: usize) -> Result<Vec<u64>, LoadError> {
    let mut w = Vec::with_capacity(r.capacity(n, 8));
    while w.len() < n {
        let run = r.entries(n - w.len(), 8, "change marks")?;
        w.extend(
            run.chunks_exact(8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))),
        );
    }
    Ok(w)
}

/// Per stage, per column: `(changed, added)` words.
type SavedLayers = Vec<Vec<(Vec<u64>, Vec<u64>)>>;

/// What [`write_layers`] wrote, for a type whose union of marks is `union`: `None` for
/// no layers, else the current stage and the layers (trailing zero words dropped). A
/// layer that names another stage is kept in `found` (reported after the section's
/// check); `TypeMarks::with_layers` checks the rest. Every layer read is at least its
/// 4-byte stage: the list grows as it is read, never by the count the file gives.
fn read_layers(
    r: &mut SaveSource<'_>,
    union: &[(Vec<u64>, Vec<u64>)],
    found: &mut Found,
) -> Result<Option<(usize, SavedLayers)>, LoadError> {
    let stages = r.u32("a type's stage count")? as usize;
    if stages == 0 {
        return Ok(None);
    }
    let current = r.u32("a type's current stage")? as usize;
    let mut layers = Vec::with_capacity(r.capacity(stages, 4));
    for k in 0..stages {
        let stage = r.u32("a stage's change marks")?;
        if stage as usize != k {
            found.keep(LoadError::BadData {
                what: format!("the change marks of stage {k} say they are stage {stage}'s"),
            });
        }
        let mut columns = Vec::with_capacity(union.len());
        for (changed, added) in union {
            let mut changed = read_n_words(r, changed.len())?;
            let mut added = read_n_words(r, added.len())?;
            for words in [&mut changed, &mut added] {
                while words.last() == Some(&0) {
                    words.pop();
                }
            }
            columns.push((changed, added));
        }
        layers.push(columns);
    }
    Ok(Some((current, layers)))
}

/// The entity allocator section as read: each slot's generation and (set while the tables
/// are read) its entity's location, the free list, the retired count, the reservations
/// and the lanes.
struct SavedAllocator {
    states: Vec<(NonZeroU32, Location)>,
    free: Vec<u32>,
    retired: u64,
    reserved: Vec<(Vec<u32>, u32)>,
    lanes: (u32, u32),
}

/// The entity allocator section.
fn parse_allocator(r: &mut SaveSource<'_>) -> Result<SavedAllocator, LoadError> {
    let bad = |what: String| LoadError::BadEntities { what };
    let mut found = Found::default();
    let slots = r.count("the entity slots")?;
    // Each slot's generation, and (set with the tables) the location of its entity.
    let mut states: Vec<(NonZeroU32, Location)> = Vec::with_capacity(r.capacity(slots, 4));
    while states.len() < slots {
        let run = r.entries(slots - states.len(), 4, "the entity slots")?;
        for g in run.chunks_exact(4) {
            let g = u32::from_le_bytes(g.try_into().expect("4 bytes"));
            let i = states.len();
            let g = NonZeroU32::new(g).unwrap_or_else(|| {
                found.keep(bad(format!("slot {i} has generation 0")));
                NonZeroU32::MIN
            });
            states.push((g, Location::NONE));
        }
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
    let nfree = r.count("the free list")?;
    let mut free = Vec::with_capacity(r.capacity(nfree, 4));
    for _ in 0..nfree {
        let i = index(r.u32("the free list")?, "the free list");
        free.extend(found.ok(i));
    }
    let retired = r.u64("the retired count")?;
    let nres = r.count("the reservations")?;
    let mut reserved = Vec::with_capacity(r.capacity(nres, 12));
    for _ in 0..nres {
        let spawned_last = r.u32("a reservation")?;
        let n = r.count("a reservation's ids")?;
        let mut ids = Vec::with_capacity(r.capacity(n, 4));
        for _ in 0..n {
            let i = index(r.u32("a reservation's ids")?, "a reservation");
            ids.extend(found.ok(i));
        }
        reserved.push((ids, spawned_last));
    }
    // Each system spawned its `spawned_last` entities into slots of their own, and the
    // next frame reserves twice that: a count past the slots would have it reserve
    // billions of ids.
    let spawned: u64 = reserved.iter().map(|&(_, s)| u64::from(s)).sum();
    if spawned > slots as u64 {
        found.keep(bad(format!(
            "the reservations say {spawned} entities were spawned last frame, more than \
                 the {slots} slots"
        )));
    }
    let lanes = (r.u32("the lanes")?, r.u32("the lanes")?);
    r.end_section(|| "the entity allocator".into())?;
    found.check()?;
    Ok(SavedAllocator {
        states,
        free,
        retired,
        reserved,
        lanes,
    })
}

impl SavedAllocator {
    /// The allocator, once the tables have placed every live entity: every dead slot is
    /// free, reserved or retired (at most one of them), or held by an entity living in
    /// another world (`World::evict`): listed nowhere.
    fn into_entities(self) -> Result<Entities, LoadError> {
        let SavedAllocator {
            states,
            free,
            retired,
            reserved,
            lanes,
        } = self;
        let slots = states.len();
        let bad = |what: String| LoadError::BadEntities { what };
        let mut listed = vec![false; slots];
        for &i in free.iter().chain(reserved.iter().flat_map(|(ids, _)| ids)) {
            let i = i as usize;
            if states[i].1 != Location::NONE {
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
            if states[i].1 == Location::NONE && !listed[i] && states[i].0.get() == u32::MAX {
                retired_found += 1;
            }
        }
        if retired_found != retired {
            return Err(bad(format!(
                "{retired} retired slots claimed, {retired_found} found"
            )));
        }
        Ok(Entities::from_parts(
            states,
            free,
            retired as usize,
            reserved,
            lanes,
        ))
    }
}

/// The rows of type `id` in `parsed`, with their entities: `(entity, value)` in table
/// order.
fn rows_of<C: Send + Sync + 'static>(parsed: &ParsedStorage, id: ComponentId) -> Vec<(Entity, &C)> {
    let columns = parsed.columns[id.index()].0.typed::<Vec<Vec<C>>>();
    let tables = parsed
        .tables
        .iter()
        .filter(|(types, _)| types.contains(&id));
    tables
        .zip(columns)
        .flat_map(|((_, entities), column)| entities.iter().copied().zip(column))
        .collect()
}

/// Checks that the parents and children of a parsed save hold together as Sync keeps
/// them (see `commands::tree`): every `ChildOf(p)` names a live `p` other than the child,
/// whose `Children` lists the child; every `Children` is non-empty and lists each of its
/// children once, each naming it; no entity is its own ancestor. A file that breaks one
/// would make later despawns and walks loop or panic.
fn check_hierarchy(parsed: &ParsedStorage, h: Hierarchy) -> Result<(), LoadError> {
    let bad = |what: String| LoadError::BadHierarchy { what };
    let alive: HashSet<Entity> = parsed
        .tables
        .iter()
        .flat_map(|(_, entities)| entities.iter().copied())
        .collect();
    // In table order, so that the first problem reported does not depend on hashing.
    let edges: Vec<(Entity, Entity)> = rows_of::<ChildOf>(parsed, h.child_of)
        .into_iter()
        .map(|(e, &ChildOf(p))| (e, p))
        .collect();
    let mut parent: HashMap<Entity, Entity> = HashMap::with_capacity(edges.len());
    for &(e, p) in &edges {
        if p == e {
            return Err(bad(format!("{e} is its own parent")));
        }
        if !alive.contains(&p) {
            return Err(bad(format!("{e}'s parent {p} is not alive")));
        }
        parent.insert(e, p);
    }
    let mut listed: HashSet<Entity> = HashSet::with_capacity(edges.len());
    for (q, list) in rows_of::<Children>(parsed, h.children) {
        if list.is_empty() {
            return Err(bad(format!("{q} has an empty `Children`")));
        }
        for &c in list.iter() {
            if parent.get(&c) != Some(&q) {
                return Err(bad(format!(
                    "{q}'s `Children` lists {c}, whose `ChildOf` does not name {q}"
                )));
            }
            if !listed.insert(c) {
                return Err(bad(format!("{q}'s `Children` lists {c} twice")));
            }
        }
    }
    if let Some(&(c, p)) = edges.iter().find(|(c, _)| !listed.contains(c)) {
        return Err(bad(format!(
            "{c} names {p} its parent, but {p}'s `Children` leave it out"
        )));
    }
    // Each entity has at most one parent: walk up from each, stopping at an entity known
    // to lead to a root; meeting the walk's own path again is a cycle. Every entity is
    // walked over once.
    let mut rooted: HashSet<Entity> = HashSet::with_capacity(edges.len());
    let mut path: HashSet<Entity> = HashSet::new();
    for &(start, _) in &edges {
        path.clear();
        let mut at = start;
        while !rooted.contains(&at) {
            if !path.insert(at) {
                return Err(bad(format!("{at} is its own ancestor (a cycle)")));
            }
            match parent.get(&at) {
                Some(&p) => at = p,
                None => break,
            }
        }
        rooted.extend(path.iter().copied());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::component::Component;
    use crate::entity::Entity;
    use crate::hierarchy::{ChildOf, Children};
    use crate::savefile::LoadError;
    use crate::world::World;

    #[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Hp(i32);
    impl Component for Hp {
        type Output = i32;
    }

    /// A world with a ship, two turrets and a barrel on the first turret.
    fn fleet() -> (World, [Entity; 4]) {
        let mut w = World::new();
        w.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
        w.saving::<Hp>().register_hierarchy();
        let ship = w.spawn((Hp(10),));
        let left = w.spawn((Hp(2), ChildOf(ship)));
        let right = w.spawn((Hp(2), ChildOf(ship)));
        let barrel = w.spawn((ChildOf(left),));
        (w, [ship, left, right, barrel])
    }

    fn load(w: &World) -> Result<World, LoadError> {
        let mut bytes = Vec::new();
        w.save(&mut bytes).expect("saves");
        let (mut into, _) = fleet();
        into.load(&mut bytes.as_slice()).map(|()| into)
    }

    fn set<C: Component>(w: &mut World, e: Entity, value: C) {
        let id = w.storage().registry.id::<C>();
        let (col, row) = w.storage().column_row_of(e, id).expect("has it");
        *w.storage_mut().typed_mut::<C>(id).get_mut(col, row) = value;
    }

    #[test]
    fn a_hierarchy_round_trips_and_a_broken_one_is_refused() {
        let (w, [ship, left, right, barrel]) = fleet();
        let back = load(&w).expect("a consistent hierarchy loads");
        assert_eq!(back.children(ship), [left, right]);
        assert_eq!(back.parent(barrel), Some(left));
        assert_eq!(back.checksum(), w.checksum());

        type Corrupt = fn(&mut World, [Entity; 4]);
        let broken: [(&str, Corrupt); 5] = [
            ("own parent", |w, [_, l, _, _]| set(w, l, ChildOf(l))),
            ("not alive", |w, [s, l, _, _]| {
                let dead = Entity::from_bits(u64::from(s.index() + 50) | 1 << 32).unwrap();
                set(w, l, ChildOf(dead))
            }),
            ("does not name", |w, [s, l, r, _]| {
                set(w, s, Children(vec![l, r, l]));
                set(w, l, ChildOf(r))
            }),
            ("twice", |w, [s, l, _, _]| set(w, s, Children(vec![l, l]))),
            ("leave it out", |w, [s, l, _, _]| {
                set(w, s, Children(vec![l]))
            }),
        ];
        for (what, corrupt) in broken {
            let (mut w, es) = fleet();
            corrupt(&mut w, es);
            match load(&w) {
                Err(LoadError::BadHierarchy { what: message }) => {
                    assert!(message.contains(what), "{what}: {message}")
                }
                other => panic!("{what}: {other:?}"),
            }
        }
    }

    /// Parents and children that agree with each other but go round: x under y, y
    /// under x.
    #[test]
    fn a_cycle_in_a_save_is_refused() {
        let (mut w, _) = fleet();
        let r = w.spawn((Hp(1),));
        let other = w.spawn((ChildOf(r),));
        let x = w.spawn((ChildOf(r),));
        let y = w.spawn((ChildOf(x),));
        let z = w.spawn((ChildOf(y),));
        set(&mut w, x, ChildOf(y));
        set(&mut w, r, Children(vec![other]));
        set(&mut w, y, Children(vec![z, x]));
        match load(&w) {
            Err(LoadError::BadHierarchy { what }) => assert!(what.contains("cycle"), "{what}"),
            other => panic!("{other:?}"),
        }
    }
}
