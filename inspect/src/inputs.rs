//! The frames' inputs: what each frame the inspector ran read as its
//! [`Input<I>`](runsync::Input), kept beside the snapshot ring so that a re-simulated
//! frame reads the input its first run read.
//!
//! Where a frame's input comes from, in order:
//!
//! 1. **Recorded**: the frame ran before (we are re-simulating after a rewind, or
//!    `explain` re-runs it) and its input is held here — it is set in the world before the
//!    frame, whatever the game or the API would give.
//! 2. **The API**: a `POST /api/step` with an `input` runs its frames past the recorded end
//!    with that input.
//! 3. **The game**: the callback given to [`Inspector::frame_with`](crate::Inspector::frame_with)
//!    (called only for a frame that needs a fresh input).
//! 4. **The world**: as the game left it (it set the input itself with
//!    [`World::set_input`](runsync::World::set_input), or the last one stays).
//!
//! Whatever it came from, the input of a frame run for the first time is recorded here
//! (cloned: one `I` per frame of the ring, overwritten in place).
//!
//! Inputs are keyed like the ring: by the frame's start, the number of frames completed
//! before it. An entry is kept when the ring drops states after a divergence: the states
//! belong to another history, but the inputs are still the ones the game gave.

use std::any::{Any, type_name};

use runsync::{Input, World};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::by_frame::ByFrame;

/// What a game's input type must be for the inspector to record it, show it and take it
/// from the API: cloned into the record, and written and read as JSON.
pub trait GameInput: Clone + Send + Sync + Serialize + DeserializeOwned + 'static {}

impl<I: Clone + Send + Sync + Serialize + DeserializeOwned + 'static> GameInput for I {}

/// An input given through the API, parsed for the recorded type (an `I`).
pub(crate) type Given = Box<dyn Any + Send>;

/// The frames' inputs of one input type, type-erased.
pub(crate) trait Inputs: Send {
    /// The input type's name (`my_game::Pad`).
    fn type_name(&self) -> &'static str;

    /// Whether the input of the frame starting from `start` is recorded.
    fn holds(&self, start: u64) -> bool;

    /// Sets the recorded input of the frame starting from `start` in the world (or takes
    /// the input away, if that frame had none); `false` if it is not recorded.
    fn replay(&self, world: &mut World, start: u64) -> bool;

    /// Records the world's input now as the input of the frame starting from `start`.
    fn record(&mut self, world: &World, start: u64);

    /// The input the frame starting from `start` read, as JSON (`Some(null)` for a frame
    /// with no input); `None` if it is not recorded.
    fn json(&self, start: u64) -> Option<serde_json::Value>;

    /// Reads an input from JSON (the API's), for [`set`](Self::set).
    fn parse(&self, json: &serde_json::Value) -> Result<Given, String>;

    /// Sets an input made by [`parse`](Self::parse) in the world.
    fn set(&self, world: &mut World, input: &Given);

    /// The first and last frame starts recorded, if any.
    fn range(&self) -> Option<(u64, u64)>;

    /// As `Any`, to check the type of a later `frame_with`.
    fn as_any(&self) -> &dyn Any;
}

/// The inputs of input type `I`, in a ring of `capacity` frames: what each frame read
/// (`None`: no input).
pub(crate) struct Track<I> {
    frames: ByFrame<Option<I>>,
}

impl<I: GameInput> Track<I> {
    /// Holds the inputs of the last `capacity` frames (0: none; inputs from the API and the
    /// game still reach the frames).
    pub(crate) fn new(capacity: usize) -> Track<I> {
        Track {
            frames: ByFrame::new(capacity),
        }
    }
}

impl<I: GameInput> Inputs for Track<I> {
    fn type_name(&self) -> &'static str {
        type_name::<I>()
    }

    fn holds(&self, start: u64) -> bool {
        self.frames.get(start).is_some()
    }

    fn replay(&self, world: &mut World, start: u64) -> bool {
        let Some(input) = self.frames.get(start) else {
            return false;
        };
        match input {
            Some(i) => world.set_input(i.clone()),
            None => {
                world.remove_resource::<Input<I>>();
            }
        }
        true
    }

    fn record(&mut self, world: &World, start: u64) {
        let Some(place) = self.frames.place(start) else {
            return;
        };
        let input = world.get_input::<I>();
        match place {
            // Written in place: no allocation of the entry once it exists.
            Some((at, kept)) => {
                *at = start;
                match (kept, input) {
                    (Some(old), Some(new)) => old.clone_from(new),
                    (old, new) => *old = new.cloned(),
                }
            }
            None => *place = Some((start, input.cloned())),
        }
    }

    fn json(&self, start: u64) -> Option<serde_json::Value> {
        Some(match self.frames.get(start)? {
            Some(i) => serde_json::to_value(i)
                .unwrap_or_else(|e| serde_json::Value::String(format!("(not shown as JSON: {e})"))),
            None => serde_json::Value::Null,
        })
    }

    fn parse(&self, json: &serde_json::Value) -> Result<Given, String> {
        I::deserialize(json)
            .map(|i| Box::new(i) as Given)
            .map_err(|e| {
                format!(
                    "`input` is not a `{}` in JSON ({e}); GET /api/status shows the input \
                     the next recorded frame reads, as an example",
                    type_name::<I>()
                )
            })
    }

    fn set(&self, world: &mut World, input: &Given) {
        let i = input
            .downcast_ref::<I>()
            .expect("an input parsed by this track is of its type");
        world.set_input(i.clone());
    }

    fn range(&self) -> Option<(u64, u64)> {
        let (lo, hi) = self
            .frames
            .starts()
            .fold((u64::MAX, 0), |(lo, hi), s| (lo.min(s), hi.max(s)));
        (lo != u64::MAX).then_some((lo, hi))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Pad {
        x: i32,
    }

    #[test]
    fn records_replays_and_forgets_what_the_ring_no_longer_covers() {
        let mut t = Track::<Pad>::new(4);
        let mut w = World::new();
        assert!(!t.replay(&mut w, 0));
        w.set_input(Pad { x: 1 });
        t.record(&w, 0);
        w.set_input(Pad { x: 2 });
        t.record(&w, 1);
        w.remove_resource::<Input<Pad>>();
        t.record(&w, 2);
        assert_eq!(t.range(), Some((0, 2)));
        assert!(t.replay(&mut w, 0));
        assert_eq!(w.get_input::<Pad>(), Some(&Pad { x: 1 }));
        assert!(t.replay(&mut w, 2));
        assert_eq!(
            w.get_input::<Pad>(),
            None,
            "a frame without input replays without"
        );
        assert_eq!(t.json(1), Some(serde_json::json!({"x": 2})));
        assert_eq!(t.json(2), Some(serde_json::Value::Null));
        assert_eq!(t.json(3), None);
        // Frame 4 takes frame 0's entry.
        w.set_input(Pad { x: 5 });
        t.record(&w, 4);
        assert!(!t.holds(0) && t.holds(4));
        assert_eq!(t.range(), Some((1, 4)));
        let given = t.parse(&serde_json::json!({"x": 9})).unwrap();
        t.set(&mut w, &given);
        assert_eq!(w.get_input::<Pad>(), Some(&Pad { x: 9 }));
        let e = t.parse(&serde_json::json!({"y": 9})).err().unwrap();
        assert!(e.contains("Pad"), "{e}");
        assert!(!Track::<Pad>::new(0).holds(0));
    }
}
