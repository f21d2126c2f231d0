//! Edits: changes made to a world between frames from outside its systems (an editor, a
//! debugger, a console), as plain data, so that a replay records them and applies them
//! again at the same point ([`Runtime::edit`](crate::Runtime::edit)).
//!
//! An [`Edit`] names component types by [`ComponentId`] and holds values in their type's
//! save encoding ([`World::encode_component`]), so a world applies one without knowing
//! the types statically: inserting into and removing from an entity rewrite its
//! [entity record](World::export_entity) and put it back under the same id
//! ([`World::evict`], [`World::import_entity`]), after checking every value decodes by
//! importing the record into an empty world of the same types. So an edit fires no hooks and adds no required components
//! (the entity arrives whole), and it works only on entities outside a hierarchy. A
//! despawn is [`World::despawn`], hooks and descendants included.
//!
//! In a replay file (version 9) a frame's edits are: their count (`u64`), then per edit a
//! tag byte and its fields, little-endian: `0` insert (entity bits `u64`, count `u64`,
//! per component its id `u32` and its value, length-prefixed), `1` remove (entity bits,
//! count, ids), `2` spawn (count, per component id and value), `3` despawn (entity bits).
//! [`read_edits`] checks every count against the bytes left before allocating for it.

use super::World;
use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::savefile::{Encoding, LoadError, Put, Reader, SaveError};

/// One change to a world made between frames from outside its systems; applied with
/// [`World::apply_edit`], recorded into replays by [`Runtime::edit`](crate::Runtime::edit).
/// Values are in their type's save encoding ([`World::encode_component`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Edit {
    /// Sets each component of `entity` to its value, inserting those it lacks (marked
    /// added and changed; a replaced one changed).
    Insert {
        /// The entity edited.
        entity: Entity,
        /// Each type (once) and its new value.
        components: Vec<(ComponentId, Vec<u8>)>,
    },
    /// Removes components from `entity` (each must be there).
    Remove {
        /// The entity edited.
        entity: Entity,
        /// The types removed (each once).
        components: Vec<ComponentId>,
    },
    /// Spawns an entity with these components (marked added and changed).
    Spawn {
        /// Each type (once) and its value.
        components: Vec<(ComponentId, Vec<u8>)>,
    },
    /// Despawns `entity` ([`World::despawn`]: its hooks fire, its descendants go too).
    Despawn {
        /// The entity despawned.
        entity: Entity,
    },
}

/// A change mark byte of an entity record: bit 0 changed, bit 1 added.
const CHANGED: u8 = 1;
const ADDED: u8 = 2;

impl World {
    /// Encodes `value` as this world's saves hold a `C`, for an [`Edit`], and returns
    /// `C`'s id. Costs one serde encoding.
    ///
    /// # Errors
    /// [`SaveError::NotSaving`] if `C` is not registered or not opted into saves;
    /// [`SaveError::Encode`] if it is saved as plain data
    /// ([`saving_pod`](Self::saving_pod): an edit encodes through serde, so opt it in
    /// with [`saving`](Self::saving)) or its `Serialize` fails.
    pub fn encode_component<C: Component + serde::Serialize>(
        &self,
        value: &C,
        out: &mut Vec<u8>,
    ) -> Result<ComponentId, SaveError> {
        let type_name = std::any::type_name::<C>();
        let Some(id) = self.storage.registry().get::<C>() else {
            return Err(SaveError::NotSaving { type_name });
        };
        match self.storage.columns(id).save_encoding() {
            None => Err(SaveError::NotSaving { type_name }),
            Some(Encoding::Plain { .. }) => Err(SaveError::Encode {
                type_name,
                message: "it is saved as plain data (`saving_pod`), and an edit encodes \
                          values through serde: opt it in with `World::saving` to edit it"
                    .to_owned(),
            }),
            Some(Encoding::Serde) => {
                crate::savefile::encode_values(std::slice::from_ref(value), out)
                    .map(|()| id)
                    .map_err(|message| SaveError::Encode { type_name, message })
            }
        }
    }

    /// Applies `edit` now (between frames); returns the entity a spawn made. Every check
    /// comes first — the entity is alive and outside a hierarchy, each type registered,
    /// opted into saves and named once, each value decodes as its type, a removed
    /// component is there — and on an error nothing changed. No hooks fire and no
    /// required components are added, but for a despawn ([`despawn`](Self::despawn)).
    /// An edited entity moves to the end of its table (storage order), as an entity
    /// whose types change does. Costs, for an insert or a remove, an export of the entity
    /// and two imports (each of its values decoded twice: once to check it), plus an
    /// empty world of the same types.
    ///
    /// # Errors
    /// [`LoadError::BadData`] naming what is wrong; [`LoadError::Decode`] for a value
    /// that does not decode as its type; [`LoadError::NotSaving`] for a type not opted
    /// into saves.
    ///
    /// # Panics
    /// As [`despawn`](Self::despawn), if a hook a despawn fires panics.
    pub fn apply_edit(&mut self, edit: &Edit) -> Result<Option<Entity>, LoadError> {
        match edit {
            Edit::Insert { entity, components } => {
                self.check_edit_target(*entity)?;
                let ids: Vec<ComponentId> = components.iter().map(|c| c.0).collect();
                self.check_types(&ids)?;
                self.rewrite(*entity, |fields| {
                    for (id, value) in components {
                        match fields.iter_mut().find(|f| f.id == *id) {
                            Some(f) => {
                                f.marks |= CHANGED;
                                f.value.clone_from(value);
                            }
                            None => fields.push(Field {
                                id: *id,
                                marks: CHANGED | ADDED,
                                value: value.clone(),
                            }),
                        }
                    }
                    Ok(())
                })?;
                Ok(None)
            }
            Edit::Remove { entity, components } => {
                self.check_edit_target(*entity)?;
                self.check_types(components)?;
                let names: Vec<&'static str> = components
                    .iter()
                    .map(|&c| self.storage.type_name(c))
                    .collect();
                self.rewrite(*entity, |fields| {
                    for (id, name) in components.iter().zip(&names) {
                        let Some(k) = fields.iter().position(|f| f.id == *id) else {
                            return Err(LoadError::BadData {
                                what: format!("entity {entity} has no {name} to remove"),
                            });
                        };
                        fields.remove(k);
                    }
                    Ok(())
                })?;
                Ok(None)
            }
            Edit::Spawn { components } => {
                let ids: Vec<ComponentId> = components.iter().map(|c| c.0).collect();
                self.check_types(&ids)?;
                let mut fields: Vec<Field> = components
                    .iter()
                    .map(|(id, value)| Field {
                        id: *id,
                        marks: CHANGED | ADDED,
                        value: value.clone(),
                    })
                    .collect();
                fields.sort_by_key(|f| f.id);
                self.check_decodes(&fields)?;
                let e = self.spawn(());
                self.evict(e);
                self.import_entity(&mut &write_record(e, &fields)[..])
                    .expect("a record whose values decode imports under an evicted id");
                Ok(Some(e))
            }
            Edit::Despawn { entity } => {
                if !self.despawn(*entity) {
                    return Err(not_alive(*entity));
                }
                Ok(None)
            }
        }
    }

    /// `e` is alive and outside a hierarchy (an entity record moves one entity).
    fn check_edit_target(&self, e: Entity) -> Result<(), LoadError> {
        if !self.is_alive(e) {
            return Err(not_alive(e));
        }
        if let Some(h) = self.storage.hierarchy() {
            if self.storage.column_row_of(e, h.child_of).is_some()
                || self.storage.column_row_of(e, h.children).is_some()
            {
                return Err(LoadError::BadData {
                    what: format!(
                        "entity {e} has a parent or children: an edit inserts or removes \
                         components only of an entity outside a hierarchy"
                    ),
                });
            }
        }
        Ok(())
    }

    /// Each id is registered, opted into saves, named once, and not a hierarchy type.
    fn check_types(&self, ids: &[ComponentId]) -> Result<(), LoadError> {
        let registered = self.storage.registry().len();
        let hierarchy = self.storage.hierarchy();
        for (k, &id) in ids.iter().enumerate() {
            if id.index() >= registered {
                return Err(LoadError::BadData {
                    what: format!("component id {} is not registered", id.index()),
                });
            }
            let type_name = self.storage.type_name(id);
            if ids[..k].contains(&id) {
                return Err(LoadError::BadData {
                    what: format!("{type_name} is named twice in one edit"),
                });
            }
            if hierarchy.is_some_and(|h| id == h.child_of || id == h.children) {
                return Err(LoadError::BadData {
                    what: format!("{type_name} is kept by the hierarchy, not edited"),
                });
            }
            if self.storage.columns(id).save_encoding().is_none() {
                return Err(LoadError::NotSaving { type_name });
            }
        }
        Ok(())
    }

    /// Rewrites live entity `e` (checked) through `change` on its record's fields, and
    /// puts it back under its id; on an error it is put back as it was.
    fn rewrite(
        &mut self,
        e: Entity,
        change: impl FnOnce(&mut Vec<Field>) -> Result<(), LoadError>,
    ) -> Result<(), LoadError> {
        let mut old = Vec::new();
        self.export_entity(e, &mut old)
            .map_err(|error| LoadError::BadData {
                what: format!("entity {e} cannot be edited: {error}"),
            })?;
        let new = {
            let mut fields = read_fields(&old)?;
            change(&mut fields)?;
            fields.sort_by_key(|f| f.id);
            self.check_decodes(&fields)?;
            write_record(e, &fields)
        };
        self.evict(e);
        if let Err(error) = self.import_entity(&mut &new[..]) {
            self.import_entity(&mut &old[..])
                .expect("a record just exported imports back");
            return Err(error);
        }
        Ok(())
    }
}

impl World {
    /// Every value of `fields` (in increasing id order) decodes as its type: they are
    /// imported into an empty world of the same types, so that a value that does not
    /// decode is found before this world changes (its storage order included).
    fn check_decodes(&self, fields: &[Field]) -> Result<(), LoadError> {
        let probe = Entity::from_bits(1 << 32).expect("index 0, generation 1");
        self.shadow()
            .import_entity(&mut &write_record(probe, fields)[..])
            .map(|_| ())
    }
}

fn not_alive(e: Entity) -> LoadError {
    LoadError::BadData {
        what: format!("entity {e} is not alive"),
    }
}

/// One component of an entity record (see `storage::transfer`).
struct Field {
    id: ComponentId,
    marks: u8,
    value: Vec<u8>,
}

/// The fields of a record [`World::export_entity`] wrote.
fn read_fields(record: &[u8]) -> Result<Vec<Field>, LoadError> {
    let mut r = Reader::new(record);
    r.u64("an entity record")?;
    let n = r.u32("an entity record")? as usize;
    let mut fields = Vec::with_capacity(n.min(record.len()));
    for _ in 0..n {
        let id = ComponentId(r.u32("a component id")?);
        let marks = r.u8("a component's change marks")?;
        let value = r.bytes("a component value")?.to_vec();
        fields.push(Field { id, marks, value });
    }
    Ok(fields)
}

/// An entity record of `e` with `fields` (in increasing id order).
fn write_record(e: Entity, fields: &[Field]) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_u64(e.to_bits());
    out.put_u32(fields.len() as u32);
    for f in fields {
        out.put_u32(f.id.0);
        out.put_u8(f.marks);
        out.put_bytes(&f.value);
    }
    out
}

const TAG_INSERT: u8 = 0;
const TAG_REMOVE: u8 = 1;
const TAG_SPAWN: u8 = 2;
const TAG_DESPAWN: u8 = 3;

/// Appends `edits` to `out` in the replay layout (see the module docs).
pub(crate) fn write_edits(edits: &[Edit], out: &mut Vec<u8>) {
    out.put_u64(edits.len() as u64);
    for edit in edits {
        match edit {
            Edit::Insert { entity, components } => {
                out.put_u8(TAG_INSERT);
                out.put_u64(entity.to_bits());
                write_values(components, out);
            }
            Edit::Remove { entity, components } => {
                out.put_u8(TAG_REMOVE);
                out.put_u64(entity.to_bits());
                out.put_u64(components.len() as u64);
                for c in components {
                    out.put_u32(c.0);
                }
            }
            Edit::Spawn { components } => {
                out.put_u8(TAG_SPAWN);
                write_values(components, out);
            }
            Edit::Despawn { entity } => {
                out.put_u8(TAG_DESPAWN);
                out.put_u64(entity.to_bits());
            }
        }
    }
}

fn write_values(components: &[(ComponentId, Vec<u8>)], out: &mut Vec<u8>) {
    out.put_u64(components.len() as u64);
    for (id, value) in components {
        out.put_u32(id.0);
        out.put_bytes(value);
    }
}

/// Reads edits written by [`write_edits`]. Every count is checked against the bytes
/// left before anything is allocated for it; what the edits name (entities, types,
/// values) is checked when they are applied.
pub(crate) fn read_edits(r: &mut Reader<'_>) -> Result<Vec<Edit>, LoadError> {
    // Each edit is at least a tag and a `u64`.
    let n = r.count(9, "a frame's edits")?;
    let mut edits = Vec::with_capacity(n);
    for _ in 0..n {
        let edit = match r.u8("an edit")? {
            TAG_INSERT => Edit::Insert {
                entity: read_entity(r)?,
                components: read_values(r)?,
            },
            TAG_REMOVE => {
                let entity = read_entity(r)?;
                let k = r.count(4, "an edit's components")?;
                let mut components = Vec::with_capacity(k);
                for _ in 0..k {
                    components.push(ComponentId(r.u32("a component id")?));
                }
                Edit::Remove { entity, components }
            }
            TAG_SPAWN => Edit::Spawn {
                components: read_values(r)?,
            },
            TAG_DESPAWN => Edit::Despawn {
                entity: read_entity(r)?,
            },
            tag => {
                return Err(LoadError::BadData {
                    what: format!("unknown edit tag {tag}"),
                });
            }
        };
        edits.push(edit);
    }
    Ok(edits)
}

fn read_entity(r: &mut Reader<'_>) -> Result<Entity, LoadError> {
    let bits = r.u64("an edit's entity")?;
    Entity::from_bits(bits).ok_or_else(|| LoadError::BadData {
        what: format!("{bits:#x} is not an entity id"),
    })
}

fn read_values(r: &mut Reader<'_>) -> Result<Vec<(ComponentId, Vec<u8>)>, LoadError> {
    // Each is at least an id and a length.
    let k = r.count(12, "an edit's components")?;
    let mut components = Vec::with_capacity(k);
    for _ in 0..k {
        let id = ComponentId(r.u32("a component id")?);
        components.push((id, r.bytes("a component value")?.to_vec()));
    }
    Ok(components)
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
    struct Pos(f32, f32);
    impl Component for Pos {
        type Output = Pos;
    }

    #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
    struct Hp(u8);
    impl Component for Hp {
        type Output = Hp;
    }

    fn world() -> World {
        let mut w = World::new();
        w.register::<Pos>(merge::last);
        w.register::<Hp>(merge::last);
        w.saving::<Pos>().saving::<Hp>();
        w
    }

    fn encoded<C: Component + Serialize>(w: &World, c: C) -> (ComponentId, Vec<u8>) {
        let mut out = Vec::new();
        let id = w.encode_component(&c, &mut out).unwrap();
        (id, out)
    }

    #[test]
    fn insert_sets_and_adds_remove_takes_spawn_makes_and_despawn_ends() {
        let mut w = world();
        let a = w.spawn((Pos(1.0, 2.0),));
        let b = w.spawn((Pos(3.0, 4.0), Hp(5)));
        let edit = Edit::Insert {
            entity: a,
            components: vec![encoded(&w, Hp(9)), encoded(&w, Pos(7.0, 8.0))],
        };
        assert_eq!(w.apply_edit(&edit).unwrap(), None);
        assert_eq!(w.get::<Pos>(a), Some(&Pos(7.0, 8.0)));
        assert_eq!(w.get::<Hp>(a), Some(&Hp(9)));
        assert_eq!(w.get::<Pos>(b), Some(&Pos(3.0, 4.0)), "others untouched");
        let hp = encoded(&w, Hp(0)).0;
        w.apply_edit(&Edit::Remove {
            entity: b,
            components: vec![hp],
        })
        .unwrap();
        assert_eq!(w.get::<Hp>(b), None);
        assert_eq!(w.get::<Pos>(b), Some(&Pos(3.0, 4.0)));
        let c = w
            .apply_edit(&Edit::Spawn {
                components: vec![encoded(&w, Hp(1))],
            })
            .unwrap()
            .expect("a spawn makes an entity");
        assert_eq!(w.get::<Hp>(c), Some(&Hp(1)));
        assert_eq!(w.len(), 3);
        w.apply_edit(&Edit::Despawn { entity: c }).unwrap();
        assert!(!w.is_alive(c));
    }

    #[test]
    fn a_failing_edit_changes_nothing() {
        let mut w = world();
        let a = w.spawn((Pos(1.0, 2.0), Hp(3)));
        w.spawn((Pos(3.0, 4.0), Hp(4)));
        let b = w.spawn((Pos(5.0, 6.0),));
        let order = |w: &World| w.entities().map(|(e, _)| e).collect::<Vec<_>>();
        let (before, listed) = (w.checksum(), order(&w));
        let hp = encoded(&w, Hp(0)).0;
        let bad = [
            // No bytes: not an `Hp`.
            Edit::Insert {
                entity: a,
                components: vec![(hp, Vec::new())],
            },
            Edit::Insert {
                entity: a,
                components: vec![encoded(&w, Hp(1)), encoded(&w, Hp(2))],
            },
            Edit::Remove {
                entity: b,
                components: vec![hp],
            },
            Edit::Insert {
                entity: Entity::from_bits(99 | 1 << 32).unwrap(),
                components: vec![encoded(&w, Hp(1))],
            },
            Edit::Insert {
                entity: a,
                components: vec![(ComponentId(40), vec![1])],
            },
            Edit::Despawn {
                entity: Entity::from_bits(99 | 1 << 32).unwrap(),
            },
            Edit::Spawn {
                components: vec![(hp, vec![])],
            },
        ];
        for edit in &bad {
            assert!(w.apply_edit(edit).is_err(), "{edit:?}");
            assert_eq!(w.checksum(), before, "{edit:?}");
            assert_eq!(order(&w), listed, "storage order too: {edit:?}");
            assert_eq!(w.get::<Hp>(a), Some(&Hp(3)));
            assert_eq!(w.get::<Pos>(b), Some(&Pos(5.0, 6.0)));
        }
        let next = w.spawn(());
        assert_eq!(
            (next.index(), next.generation()),
            (3, 1),
            "no id was used up"
        );
    }

    #[test]
    fn plain_data_types_are_not_encoded_for_edits() {
        #[derive(Clone, Copy, Debug, Serialize, bytemuck::Pod, bytemuck::Zeroable)]
        #[repr(C)]
        struct Raw(u32);
        impl Component for Raw {
            type Output = Raw;
        }
        let mut w = world();
        w.register::<Raw>(merge::last);
        assert!(matches!(
            w.encode_component(&Raw(1), &mut Vec::new()),
            Err(SaveError::NotSaving { .. })
        ));
        w.saving_pod::<Raw>();
        let e = w.encode_component(&Raw(1), &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("saving"), "{e}");
    }

    #[test]
    fn edits_read_back_as_written_and_lying_counts_are_refused() {
        let w = world();
        let e = Entity::from_bits(3 | 2 << 32).unwrap();
        let edits = vec![
            Edit::Insert {
                entity: e,
                components: vec![encoded(&w, Pos(1.0, 2.0))],
            },
            Edit::Remove {
                entity: e,
                components: vec![encoded(&w, Hp(0)).0],
            },
            Edit::Spawn {
                components: vec![encoded(&w, Hp(4))],
            },
            Edit::Despawn { entity: e },
        ];
        let mut bytes = Vec::new();
        write_edits(&edits, &mut bytes);
        let mut r = Reader::new(&bytes);
        assert_eq!(read_edits(&mut r).unwrap(), edits);
        assert!(r.rest().is_empty());
        // Every cut is an error, never a panic.
        for cut in 0..bytes.len() {
            assert!(
                read_edits(&mut Reader::new(&bytes[..cut])).is_err(),
                "{cut}"
            );
        }
        let mut huge = Vec::new();
        huge.put_u64(u64::MAX);
        assert!(matches!(
            read_edits(&mut Reader::new(&huge)),
            Err(LoadError::BadLength { .. })
        ));
        let mut tag = Vec::new();
        tag.put_u64(1);
        tag.put_u8(9);
        tag.put_u64(0);
        assert!(matches!(
            read_edits(&mut Reader::new(&tag)),
            Err(LoadError::BadData { .. })
        ));
    }
}
