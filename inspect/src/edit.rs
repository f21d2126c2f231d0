//! Editing the world from the API: the types a game lets the inspector edit, the JSON of
//! an edit request turned into a [`runsync::Edit`], and the edits of each frame, kept
//! beside the snapshot ring so a re-simulated frame is edited as its first run was.
//!
//! An edit is made while paused, between frames `k` and `k + 1`, and is an input of frame
//! `k + 1`, as the game's input is:
//!
//! 1. **Checked whole first**: the entity is alive, each type is editable
//!    ([`InspectorBuilder::editable`](crate::InspectorBuilder::editable)), each JSON value
//!    decodes as its type. A failure is a `400` naming the type, and nothing changed.
//! 2. **Applied at once** with [`Runtime::edit`] (so the page shows it, a spawn has its
//!    id, and a replay being recorded holds it before frame `k + 1`), after the ring
//!    took the state before it: the ring's state `k` is the one frame `k` left, unedited.
//! 3. **Recorded** here under frame start `k`. A frame that starts from state `k` again
//!    (a re-simulation after a rewind, `explain`'s re-run) gets the same edits, in the
//!    same order, right before it runs.
//!
//! An edit made in the past (after a rewind) starts another history there: the ring's
//! later states, and the edits recorded for this frame start and later ones, are
//! forgotten (inputs are kept, as after a divergence). The page showed the world without
//! those edits (they apply when the frame runs), so what is edited is what was seen.

use std::any::type_name;

use runsync::{Component, ComponentId, Edit, Entity, Runtime, World};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::short_name;
use crate::by_frame::ByFrame;

/// Decodes a JSON value as the type and encodes it for an [`Edit`].
type DecodeFn = fn(&World, &serde_json::Value) -> Result<(ComponentId, Vec<u8>), String>;
/// An entity's value of the type as JSON, if it has one.
type JsonFn = fn(&World, Entity) -> Option<serde_json::Value>;

/// One editable type.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EditType {
    pub(crate) name: &'static str,
    decode: DecodeFn,
    json: JsonFn,
}

impl EditType {
    pub(crate) fn of<C: Component + Serialize + DeserializeOwned>() -> EditType {
        EditType {
            name: type_name::<C>(),
            decode: decode::<C>,
            json: json::<C>,
        }
    }

    /// The entity's value as JSON (`None`: it has none).
    pub(crate) fn json(&self, world: &World, e: Entity) -> Option<serde_json::Value> {
        (self.json)(world, e)
    }
}

fn decode<C: Component + Serialize + DeserializeOwned>(
    world: &World,
    value: &serde_json::Value,
) -> Result<(ComponentId, Vec<u8>), String> {
    let c = C::deserialize(value).map_err(|e| {
        format!(
            "the value for `{}` does not decode as one ({e}); GET /api/entities/{{id}} \
             shows a value of it as JSON in `json`",
            type_name::<C>()
        )
    })?;
    let mut bytes = Vec::new();
    let id = world
        .encode_component(&c, &mut bytes)
        .map_err(|e| format!("`{}` cannot be edited: {e}", type_name::<C>()))?;
    Ok((id, bytes))
}

fn json<C: Component + Serialize + DeserializeOwned>(
    world: &World,
    e: Entity,
) -> Option<serde_json::Value> {
    let c = world.get::<C>(e)?;
    Some(
        serde_json::to_value(c)
            .unwrap_or_else(|err| serde_json::Value::String(format!("(not shown as JSON: {err})"))),
    )
}

/// The types a game lets the inspector edit.
#[derive(Clone, Debug, Default)]
pub(crate) struct Editable {
    types: Vec<EditType>,
}

impl Editable {
    /// Adds `t` (once).
    pub(crate) fn add(&mut self, t: EditType) {
        if !self.types.iter().any(|k| k.name == t.name) {
            self.types.push(t);
        }
    }

    /// Every editable type's full name.
    pub(crate) fn names(&self) -> Vec<&'static str> {
        self.types.iter().map(|t| t.name).collect()
    }

    /// The editable type named `name` (full or short).
    pub(crate) fn get(&self, name: &str) -> Option<&EditType> {
        self.types.iter().find(|t| t.name == name).or_else(|| {
            let mut short = self.types.iter().filter(|t| short_name(t.name) == name);
            match (short.next(), short.next()) {
                (Some(t), None) => Some(t),
                _ => None,
            }
        })
    }

    /// The editable type named `name`, or why not (for a `400`).
    fn resolve(&self, name: &str) -> Result<&EditType, String> {
        self.get(name).ok_or_else(|| {
            let shown: String = name.chars().take(80).collect();
            let known: Vec<String> = self.types.iter().map(|t| short_name(t.name)).collect();
            if known.is_empty() {
                format!(
                    "`{shown}` is not editable: this game lets the inspector edit no type \
                     (build it with `Inspector::builder().editable::<T>()`)"
                )
            } else {
                format!(
                    "`{shown}` is not an editable type (editable: {}; others need \
                     `Inspector::builder().editable::<T>()`)",
                    known.join(", ")
                )
            }
        })
    }

    /// Each `(name, JSON value)` decoded and encoded for an [`Edit`]; the first failure
    /// names its type.
    pub(crate) fn values(
        &self,
        world: &World,
        components: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Vec<(ComponentId, Vec<u8>)>, String> {
        components
            .iter()
            .map(|(name, value)| (self.resolve(name)?.decode)(world, value))
            .collect()
    }

    /// Each named type's id.
    pub(crate) fn ids(&self, world: &World, names: &[String]) -> Result<Vec<ComponentId>, String> {
        names
            .iter()
            .map(|name| {
                let t = self.resolve(name)?;
                world
                    .component_types()
                    .find(|(_, n)| *n == t.name)
                    .map(|(id, _)| id)
                    .ok_or_else(|| format!("`{}` is not registered in the world", t.name))
            })
            .collect()
    }
}

/// The edits made before each of the last N frames, by frame start (as the ring).
pub(crate) struct Track {
    frames: ByFrame<Vec<Edit>>,
}

impl Track {
    /// Keeps the edits of the last `capacity` frames (0: none; edits still apply once).
    pub(crate) fn new(capacity: usize) -> Track {
        Track {
            frames: ByFrame::new(capacity),
        }
    }

    /// How many edits are recorded for the frame starting from `start`.
    #[cfg(test)]
    fn count(&self, start: u64) -> usize {
        self.frames.get(start).map_or(0, Vec::len)
    }

    /// Records `edit` as the last edit before the frame starting from `start`.
    pub(crate) fn push(&mut self, start: u64, edit: Edit) {
        let Some(place) = self.frames.place(start) else {
            return;
        };
        match place {
            Some((at, edits)) if *at == start => edits.push(edit),
            _ => *place = Some((start, vec![edit])),
        }
    }

    /// Applies the edits recorded for the frame starting from `start` (one that ran
    /// before), in order. One that no longer applies (the re-simulation went another way:
    /// the ring's check says so) is skipped.
    pub(crate) fn replay(&self, rt: &mut Runtime, start: u64) {
        if let Some(edits) = self.frames.get(start) {
            for edit in edits {
                let _ = rt.edit(edit);
            }
        }
    }

    /// Forgets the edits of the frames starting from `start` on (another history).
    pub(crate) fn forget_from(&mut self, start: u64) {
        self.frames.forget_from(start);
    }
}

#[cfg(test)]
mod tests {
    use runsync::prelude::*;

    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Hp(i32);
    impl Component for Hp {
        type Output = Hp;
    }

    #[test]
    fn values_decode_by_full_or_short_name_and_errors_name_the_type() {
        let mut w = World::new();
        w.register::<Hp>(merge::last);
        w.saving::<Hp>();
        let mut editable = Editable::default();
        editable.add(EditType::of::<Hp>());
        editable.add(EditType::of::<Hp>());
        assert_eq!(editable.names().len(), 1);
        let ok: serde_json::Map<_, _> = serde_json::from_str(r#"{"Hp": 4}"#).unwrap();
        let values = editable.values(&w, &ok).unwrap();
        assert_eq!(values.len(), 1);
        let full = format!(r#"{{"{}": 4}}"#, type_name::<Hp>());
        let full: serde_json::Map<_, _> = serde_json::from_str(&full).unwrap();
        assert_eq!(editable.values(&w, &full).unwrap(), values);
        let bad: serde_json::Map<_, _> = serde_json::from_str(r#"{"Hp": "four"}"#).unwrap();
        let e = editable.values(&w, &bad).unwrap_err();
        assert!(
            e.contains(type_name::<Hp>()) && e.contains("invalid type"),
            "{e}"
        );
        let unknown: serde_json::Map<_, _> = serde_json::from_str(r#"{"Mana": 4}"#).unwrap();
        let e = editable.values(&w, &unknown).unwrap_err();
        assert!(e.contains("Mana") && e.contains("editable: Hp"), "{e}");
    }

    #[test]
    fn the_track_keeps_each_frames_edits_in_order_and_forgets_later_ones() {
        let e = Entity::from_bits(1 | 1 << 32).unwrap();
        let mut t = Track::new(4);
        t.push(3, Edit::Despawn { entity: e });
        t.push(3, Edit::Spawn { components: vec![] });
        t.push(5, Edit::Despawn { entity: e });
        assert_eq!((t.count(3), t.count(5), t.count(4)), (2, 1, 0));
        t.forget_from(4);
        assert_eq!((t.count(3), t.count(5)), (2, 0));
        t.push(7, Edit::Despawn { entity: e });
        assert_eq!(t.count(3), 0, "frame 7 took frame 3's entry");
        assert_eq!(Track::new(0).count(0), 0);
    }
}
