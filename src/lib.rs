#![doc = include_str!("docs/front.md")]
//!
//! # Design goals, in order
//!
//! 1. **Deterministic.** The world after every frame is bit-for-bit the same whatever the
//!    worker count, and with the `single-threaded` feature.
//! 2. **No ordering constraints.** Systems read an immutable world and write only their own
//!    output buffers, so every enabled system runs at once; adding one never serialises
//!    the others.
//! 3. **Fast where every frame pays:** query iteration over SoA columns; output writes
//!    keyed in Run (a write in a query loop is a handle compare and a `Vec::push`); a Sync
//!    that folds runs of rows straight into columns, types and row ranges in parallel,
//!    with no sort for outputs emitted in query order.
//! 4. **Safe to embed.** A panicking system fails its frame, not the world; unsafe code is
//!    confined to the worker pool and one checked cast on the write path.
//!
//! # In the source
//!
//! One module per mechanism: `entity`, `component`, `merge`, `stats`,
//! `checksum` (leaves); `storage/` (tables, columns, entity moves, storage snapshots);
//! `output/` (what systems emit); `pool` (the workers); `fold/` (one typed fold per
//! component type); `hooks` (on_add / on_remove); `world`, `query`, `bundle`,
//! `snapshot` (save, restore, compare); `system`, `run` (phase 1), `sync/` (phase 2),
//! `provenance` (what Sync records for watched entities), `runtime`, `profile`.

pub mod merge;

// Leaves.
mod checksum;
mod component;
mod entity;
mod stats;
// Where data lives, and what systems emit.
mod output;
mod storage;
// Threads.
mod pool;
mod primitive;
// Per-type folds, then the public world over storage + folds + resources.
mod bundle;
mod commands;
mod fold;
mod hooks;
mod query;
mod resource;
mod world;
// The frame: systems, the two phases, the loop, profiling.
mod fixed_step;
mod profile;
mod provenance;
mod run;
mod runtime;
mod sync;
mod system;

pub use bundle::Bundle;
pub use checksum::{Checksum, Checksummer, Desync};
pub use component::{Component, ComponentId};
pub use entity::Entity;
pub use fixed_step::Advance;
pub use hooks::Commands;
pub use merge::{DefaultMerge, Merge};
pub use output::{Output, Writer, WriterSet};
pub use provenance::{CommandKind, CommandRecord, ComponentWrites, Provenance, WriteRecord};
pub use query::{
    Added, Changed, QueryData, QueryFiltered, QueryIter, QueryMut, QueryMutIter, With, Without,
};
/// `#[derive(Component)]`: `Output = Self` unless `#[component(output = Type)]`; with
/// `#[component(merge = expr)]` also [`DefaultMerge`], for
/// [`World::register_default`]. See [`DefaultMerge`] for an example.
pub use runsync_derive::Component;
pub use runtime::{Runtime, RuntimeBuilder, RuntimeSnapshot, Time};
pub use stats::{FrameError, FrameStats, MAX_HOOK_ROUNDS, MemoryStats, MergeTarget, SystemStats};
pub use system::{System, SystemId};
pub use world::{Snapshot, SnapshotError, World};

/// Everything a game usually needs: `use runsync::prelude::*;`.
pub mod prelude {
    pub use crate::merge;
    pub use crate::{
        Added, Advance, Bundle, Changed, Checksum, Checksummer, Commands, Component, DefaultMerge,
        Entity, FrameError, FrameStats, Output, Runtime, Snapshot, System, SystemId, Time, With,
        Without, World,
    };
}

/// The README's examples, compiled and run as doctests (the crate's front page is
/// `src/docs/front.md`).
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
