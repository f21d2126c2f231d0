//! Per-frame inputs: the value a frame's systems read as the player's (or the network's)
//! input, set by [`Runtime::frame_with`](crate::Runtime::frame_with) and
//! [`Runtime::advance_with`](crate::Runtime::advance_with).
//!
//! An input is a resource of type [`Input<I>`], so systems read it like any resource —
//! `world.input::<Pad>()` is `&world.resource::<Input<Pad>>().0` — and, being a
//! resource, it is part of the world: the first time a world is given an `Input<I>` it is
//! opted into snapshots, so a restore brings back the input the next frame would have
//! used. Rollback then reads: restore the snapshot of frame k, and run frames k.. again
//! with `frame_with(confirmed_input)`.

use std::ops::{Deref, DerefMut};

/// The input of the running frame, a resource set by
/// [`Runtime::frame_with`](crate::Runtime::frame_with) (or
/// [`World::set_input`](crate::World::set_input)) and read by systems with
/// [`World::input`](crate::World::input). `I` is the game's input type, e.g. one
/// gamepad state per player.
///
/// ```
/// use runsync::prelude::*;
/// #[derive(Clone, Copy, Debug, Default, PartialEq)]
/// struct Pad { right: bool }
///
/// let mut rt = Runtime::builder().workers(1).build(World::new());
/// rt.frame_with(Pad { right: true });
/// assert_eq!(rt.world().resource::<Input<Pad>>().0, Pad { right: true });
/// assert!(rt.world().input::<Pad>().right);
/// ```
#[derive(Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Input<I>(pub I);

/// `clone_from` is the value's own, so a snapshot into a reused one (and a restore) keeps
/// the memory of an input that owns some (a `Vec` of players' inputs): no allocation.
impl<I: Clone> Clone for Input<I> {
    fn clone(&self) -> Self {
        Input(self.0.clone())
    }

    fn clone_from(&mut self, source: &Self) {
        self.0.clone_from(&source.0);
    }
}

impl<I> Deref for Input<I> {
    type Target = I;
    fn deref(&self) -> &I {
        &self.0
    }
}

impl<I> DerefMut for Input<I> {
    fn deref_mut(&mut self) -> &mut I {
        &mut self.0
    }
}

/// An input saves as its value (a replay records the input of every frame).
impl<I: serde::Serialize> serde::Serialize for Input<I> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de, I: serde::Deserialize<'de>> serde::Deserialize<'de> for Input<I> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        I::deserialize(d).map(Input)
    }
}
