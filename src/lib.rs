#![doc = include_str!("../README.md")]
//!
//! # Design goals, in order
//!
//! 1. **Deterministic.** The world after every frame is bit-for-bit the same whatever the
//!    worker count, and with the `single-threaded` feature.
//! 2. **No ordering constraints.** Systems read an immutable world and write only their own
//!    output buffers, so every enabled system runs at once; adding one never serialises
//!    the others.
//! 3. **Fast where every frame pays:** query iteration over SoA columns, output writes that
//!    are plain `Vec` pushes, and a Sync that merges component types in parallel and needs
//!    no sort for outputs emitted in query order.
//! 4. **Safe to embed.** A panicking system fails its frame, not the world; unsafe code is
//!    confined to the worker pool.
//!
//! # Where things are
//!
//! [`World`] holds entities ([`Entity`]) and components ([`Component`]) in archetype
//! tables; [`World::query`] reads them. [`Runtime`] runs [`System`]s: the Run phase gives
//! each an [`Output`], the Sync phase folds outputs with the [`merge`] functions registered
//! per type, then applies structural commands.

pub mod merge;

mod bundle;
mod component;
mod entity;
mod output;
mod pool;
mod primitive;
mod profile;
mod query;
mod run;
mod runtime;
mod storage;
mod sync;
mod world;

pub use bundle::Bundle;
#[doc(hidden)]
pub use bundle::BundleSink;
pub use component::{Component, ComponentId};
pub use entity::Entity;
pub use output::{Output, Writer};
pub use query::{QueryData, QueryIter, With, Without};
pub use runtime::{
    FrameError, FrameStats, MemoryStats, Runtime, RuntimeBuilder, System, SystemId, SystemStats,
    Time,
};
pub use world::World;

/// Everything a game usually needs: `use runsync::prelude::*;`.
pub mod prelude {
    pub use crate::merge;
    pub use crate::{
        Bundle, Component, Entity, FrameError, FrameStats, Output, Runtime, System, SystemId, Time,
        With, Without, World,
    };
}
