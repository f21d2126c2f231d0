//! Moving single entities between worlds: an entity's id and components as one
//! self-delimiting record ([`Storage::export_entity`]), read back into another storage
//! with the same registered types under the same id ([`Storage::import_entity`]), and
//! taken out of the first without freeing its id ([`Storage::evict`]). What a shard of a
//! world sharded over machines sends when an entity migrates or is mirrored.
//!
//! A record: the entity's bits (`u64`), the number of its components (`u32`), then per
//! component, in id order: its id (`u32`), its change marks (`u8`: bit 0 changed, bit 1
//! added — by the last frame's Syncs, so a copy elsewhere answers `Changed` and `Added`
//! as the original does), the length of its value (`u64`) and the value in the type's
//! save encoding (postcard or plain bytes). Little-endian.

use std::collections::{HashMap, HashSet};

use super::Storage;
use crate::component::ComponentId;
use crate::entity::{Entity, Location};
use crate::hierarchy::{ChildOf, Children};
use crate::savefile::{ColumnError, LoadError, Reader, SaveError, SaveSource};

impl Storage {
    /// Appends `e`'s record to `out`; `Ok(false)` (nothing written) if `e` is dead.
    pub(crate) fn export_entity(&self, e: Entity, out: &mut Vec<u8>) -> Result<bool, SaveError> {
        let Some(loc) = self.entities.location(e) else {
            return Ok(false);
        };
        let table = self.tables.get(loc.table);
        if let Some(&c) =
            (table.components().iter()).find(|c| self.columns[c.index()].save_encoding().is_none())
        {
            return Err(SaveError::NotSaving {
                type_name: self.type_name(c),
            });
        }
        let start = out.len();
        out.extend_from_slice(&e.to_bits().to_le_bytes());
        out.extend_from_slice(&(table.components().len() as u32).to_le_bytes());
        for &c in table.components() {
            let col = table.column(c).expect("a table has a column per type");
            out.extend_from_slice(&c.0.to_le_bytes());
            let (changed, added) = self.columns[c.index()].marks_of(col, loc.row);
            out.push(u8::from(changed) | u8::from(added) << 1);
            let at = out.len();
            out.extend_from_slice(&[0; 8]);
            if let Err(message) = self.columns[c.index()].encode_value(col, loc.row, out) {
                out.truncate(start);
                return Err(SaveError::Encode {
                    type_name: self.type_name(c),
                    message,
                });
            }
            let len = (out.len() - at - 8) as u64;
            out[at..at + 8].copy_from_slice(&len.to_le_bytes());
        }
        Ok(true)
    }

    /// Reads one record off the front of `src` and places its entity, under its id, in
    /// the table of its types. Every check comes first: on an error nothing changed
    /// (values already decoded are dropped). `ids` and `marks` are scratch. The caller
    /// calls `entities.unlist_placed()` after one or a batch of these.
    pub(crate) fn import_entity(
        &mut self,
        src: &mut &[u8],
        ids: &mut Vec<ComponentId>,
        marks: &mut Vec<u8>,
    ) -> Result<Entity, LoadError> {
        let mut r = Reader::new(src);
        let bits = r.u64("an entity record")?;
        let e = Entity::from_bits(bits).ok_or_else(|| LoadError::BadData {
            what: format!("{bits:#x} is not an entity id"),
        })?;
        if self.entities.index_alive(e.index()) {
            return Err(LoadError::DuplicateEntity { entity: e });
        }
        let n = r.u32("an entity record")? as usize;
        if n > self.registry.len() {
            return Err(LoadError::BadData {
                what: format!(
                    "an entity with {n} components, of {} types",
                    self.registry.len()
                ),
            });
        }
        ids.clear();
        marks.clear();
        let staged = self.stage_record(&mut r, n, ids, marks).and_then(|()| {
            if self.entities.place(e) {
                return Ok(());
            }
            Err(LoadError::BadData {
                what: format!(
                    "entity {e} is more than {} slots past this world's {} (call \
                     `World::reserve_entity_slots` first for ids that far out)",
                    crate::entity::PLACE_SLACK,
                    self.entities.slots()
                ),
            })
        });
        if let Err(error) = staged {
            for &c in ids.iter() {
                self.columns[c.index()].discard_staged();
                self.columns[c.index()].flush_graveyard();
            }
            return Err(error);
        }
        // The record lists its types in increasing order, as the table holds them.
        self.place_marked(e, ids, |k| marks[k]);
        *src = r.rest();
        Ok(e)
    }

    /// Decodes and stages the `n` values of a record, pushing each staged type onto `ids`
    /// (types in increasing id order, each registered and opted into saves) and its
    /// change marks onto `marks`.
    fn stage_record(
        &mut self,
        r: &mut Reader<'_>,
        n: usize,
        ids: &mut Vec<ComponentId>,
        marks: &mut Vec<u8>,
    ) -> Result<(), LoadError> {
        for _ in 0..n {
            let id = r.u32("a component id")?;
            if id as usize >= self.registry.len() || ids.last().is_some_and(|l| l.0 >= id) {
                return Err(LoadError::BadData {
                    what: format!("component id {id} out of order or not registered"),
                });
            }
            let m = r.u8("a component's change marks")?;
            if m > 3 {
                return Err(LoadError::BadData {
                    what: format!("change marks {m:#x} (only bits 0 and 1 are marks)"),
                });
            }
            let c = ComponentId(id);
            let len = r.u64("a component value")?;
            let what = "a component value";
            let mut value = r.take(
                usize::try_from(len).map_err(|_| LoadError::Truncated { what })?,
                what,
            )?;
            let n = value.len();
            let mut source = SaveSource::sized(&mut value, n);
            let type_name = self.type_name(c);
            let columns = &mut self.columns[c.index()];
            if columns.save_encoding().is_none() {
                return Err(LoadError::NotSaving { type_name });
            }
            columns
                .stage_decoded(&mut source, len)
                .map_err(|e| match e {
                    ColumnError::Load(error) => error,
                    ColumnError::Decode(message) => LoadError::Decode {
                        type_name,
                        table: None,
                        message,
                    },
                })?;
            ids.push(c);
            marks.push(m);
        }
        Ok(())
    }

    /// The digest of `e` alone: see `World::entity_checksum`.
    pub(crate) fn entity_checksum(&self, e: Entity) -> Option<u64> {
        let loc = self.entities.location(e)?;
        let table = self.tables.get(loc.table);
        let mut h = crate::checksum::Checksummer::new();
        h.write_u64(e.to_bits());
        for &c in table.components() {
            let col = table.column(c).expect("a table has a column per type");
            h.write_u32(c.0);
            if let Some(v) = self.columns[c.index()].checksum_value(col, loc.row) {
                h.write_u64(v);
            }
        }
        Some(h.finish())
    }

    /// Gives every `old` entity its `new` id, keeping its row and components (see
    /// `World::renumber`). Checks everything first: on an error nothing changed.
    pub(crate) fn renumber(&mut self, moves: &[(Entity, Entity)]) -> Result<(), String> {
        let mut olds = HashSet::with_capacity(moves.len());
        let mut news = HashSet::with_capacity(moves.len());
        for &(old, new) in moves {
            if self.entities.location(old).is_none() {
                return Err(format!("{old} is not alive"));
            }
            if !olds.insert(old.index()) || !news.insert(new.index()) {
                return Err(format!("{old} or {new} is named twice"));
            }
        }
        let end = (news.iter().max()).map_or(0, |&i| i as usize + 1);
        for &(_, new) in moves {
            if self.entities.index_alive(new.index()) && !olds.contains(&new.index()) {
                return Err(format!("slot {} holds a live entity", new.index()));
            }
        }
        if end > self.entities.max_slots() {
            return Err(format!("index {} is past the last slot", end - 1));
        }
        self.entities.grow_to(end);
        let locations: Vec<Location> = (moves.iter())
            .map(|&(old, _)| self.entities.free(old).expect("checked alive"))
            .collect();
        for (&(_, new), &loc) in moves.iter().zip(&locations) {
            let placed = self.entities.place(new);
            debug_assert!(placed, "checked free");
            self.entities.set_location(new.index(), loc);
            let table = self.tables.get_mut(loc.table);
            table.entities_mut()[loc.row as usize] = new;
            table.unsorted = true;
        }
        self.entities.unlist_placed();
        let Some(h) = self.hierarchy else {
            return Ok(());
        };
        // The hierarchy still holds old ids: read every list to mend from it first, then
        // write (a new id may equal another entity's old one, so nothing is mapped
        // twice).
        let map: HashMap<Entity, Entity> = moves.iter().copied().collect();
        let renamed = |e: Entity| map.get(&e).copied().unwrap_or(e);
        let mut lists: Vec<Entity> = Vec::new();
        let mut children: Vec<(Entity, Entity)> = Vec::new();
        for &(_, new) in moves {
            if let Some(parent) = self.parent_of(h, new) {
                lists.push(renamed(parent));
            }
            let kids = self.children_of(h, new);
            if !kids.is_empty() {
                lists.push(new);
                children.extend(kids.iter().map(|&c| (renamed(c), new)));
            }
        }
        lists.sort_unstable_by_key(|e| e.to_bits());
        lists.dedup();
        let lists: Vec<(Entity, Vec<Entity>)> = (lists.into_iter())
            .map(|p| {
                (
                    p,
                    self.children_of(h, p).iter().map(|&c| renamed(c)).collect(),
                )
            })
            .collect();
        for (parent, list) in lists {
            if let Some((col, row)) = self.column_row_of(parent, h.children) {
                self.typed_mut::<Children>(h.children).get_mut(col, row).0 = list;
            }
        }
        for (child, parent) in children {
            if let Some((col, row)) = self.column_row_of(child, h.child_of) {
                *self.typed_mut::<ChildOf>(h.child_of).get_mut(col, row) = ChildOf(parent);
            }
        }
        Ok(())
    }

    /// `root` and its descendants, breadth first (parents before children).
    pub(crate) fn tree_of(&self, root: Entity) -> Vec<Entity> {
        let mut tree = vec![root];
        if let Some(h) = self.hierarchy {
            let mut at = 0;
            while let Some(&e) = tree.get(at) {
                tree.extend_from_slice(self.children_of(h, e));
                at += 1;
            }
        }
        tree
    }

    /// Takes `e` and its components out without freeing its id (no generation change,
    /// not on the free list); returns where it was, or `None` if `e` is dead.
    pub(crate) fn evict(&mut self, e: Entity) -> Option<Location> {
        let loc = self.entities.evict(e)?;
        self.remove_row_at(loc);
        self.flush_table_graveyards(loc.table);
        Some(loc)
    }
}
