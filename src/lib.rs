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
//!    confined to the worker pool, the write path (output slots in `output::slots`, the
//!    typed buffer's cast and remembered address in `output::erased`), the query engine's
//!    unchecked row access (`query`), and one module that moves output values out by
//!    position (`fold::move_out`); Miri checks each (`.ci/run`).
//!
//! # In the source
//!
//! For contributors: the crate reads bottom-up, one module per mechanism, and nothing
//! imports a module of a higher layer. From the bottom:
//!
//! - **Leaves**: `entity` (handles, the allocator), `component` (the trait, ids, the
//!   registry), `system::id`, `primitive` (one lock-free primitive of the pool), `profile`
//!   (Tracy zones; nothing without `tracy`); then `merge`, `checksum`, `stats` (frame
//!   figures and errors) and `fixed_step`, which know only those.
//! - **Storage** (`storage/`: tables, SoA columns, change marks, entity moves, storage
//!   snapshots) and the **worker pool** (`pool`, which knows no ECS).
//! - **What values become**: `bundle` (a bundle writes into a sink trait), `resource`
//!   (the resource map and written-resource folds), `commands` (the one structural
//!   command list and its `apply`, for systems' outputs and hooks alike).
//! - **Output buffers** (`output::buffer`, `output::erased`: per-system, per-type runs of
//!   rows; `output::slots`: the row slots of `Output::query`, pending until settled into
//!   runs), then **folds** (`fold/`: one typed fold per component type, knowing no
//!   `World`).
//! - **The world's face**, one thing in three modules that import each other: `world/`
//!   (`mod`, `resources`, `snapshot`, `checksum`, `debug`), `query/` (`fetch`, `filter`,
//!   `state`, `iter`, `write`: one engine for `query`, `query_mut` and `Output::query`)
//!   and `hooks`.
//! - **What systems see**: `output` (`Output`, the writers, `par`), then `system`.
//! - **The frame**: `provenance` (what Sync records for watched entities), `run`
//!   (phase 1) and `sync/` (phase 2), which never import each other, then `runtime`.
//!
//! The same list, checked against every `use` in `src/` by
//! `cargo run -p runsync-tools --bin layers` (CI runs it through its test; it also
//! fails on an import cycle of more than five files):
//!
//! <!-- layers: checked by `cargo run -p runsync-tools --bin layers` -->
//! ```text
//! 0 base:     entity component system::id primitive profile
//! 1 leaves:   merge checksum clock stats fixed_step
//! 2 storage:  storage pool
//! 3 values:   bundle resource
//! 4 commands: commands
//! 5 buffers:  {output::buffer output::erased output::slots}
//! 6 fold:     fold
//! 7 world:    {world query hooks}
//! 8 output:   output
//! 9 system:   system
//! 10 record:  provenance
//! 11 phases:  run sync
//! 12 loop:    runtime
//! ```

pub mod merge;

// Leaves.
mod component;
mod entity;
mod primitive;
mod profile;
// Leaves over those.
mod checksum;
mod clock;
mod fixed_step;
mod stats;
// Where data lives; the worker threads.
mod pool;
mod storage;
// What values become: bundles, resources, structural commands.
mod bundle;
mod commands;
mod resource;
// What systems emit (the buffers), and the per-type folds of Sync.
mod fold;
mod output;
// The world's face: the world, its queries and hooks.
mod hooks;
mod query;
mod world;
// Systems and the frame.
mod provenance;
mod run;
mod runtime;
mod sync;
mod system;

pub use bundle::Bundle;
pub use checksum::{Checksum, Checksummer, Desync};
#[doc(hidden)]
pub use component::RequireSink;
pub use component::{Component, ComponentId};
pub use entity::Entity;
pub use fixed_step::Advance;
pub use hooks::Commands;
pub use merge::{DefaultMerge, Merge};
pub use output::{Output, Slot, Writer, WriterSet};
pub use provenance::{CommandKind, CommandRecord, ComponentWrites, Provenance, WriteRecord};
pub use query::{
    Added, Changed, QueryData, QueryFiltered, QueryIter, QueryMut, QueryMutIter, QueryOut,
    QueryOutIter, With, Without, Write,
};
/// `#[derive(Component)]`: `Output = Self` unless `#[component(output = Type)]`; with
/// `#[component(merge = expr)]` also [`DefaultMerge`], for
/// [`World::register_default`]. See [`DefaultMerge`] for an example.
/// `#[component(requires(A, B = expr))]` declares [required components](World::require)
/// (`A::default()`, and `expr` for `B`) when the type is registered.
pub use runsync_derive::Component;
pub use runtime::{Runtime, RuntimeBuilder, RuntimeSnapshot, Time};
pub use stats::{
    FrameError, FrameStats, MAX_HOOK_ROUNDS, MemoryStats, MergeTarget, StageStats, SystemStats,
};
pub use system::{StageId, System, SystemId, SystemInfo};
pub use world::{Snapshot, SnapshotError, World};

/// Everything a game usually needs: `use runsync::prelude::*;`.
pub mod prelude {
    pub use crate::merge;
    pub use crate::{
        Added, Advance, Bundle, Changed, Checksum, Checksummer, Commands, Component, DefaultMerge,
        Entity, FrameError, FrameStats, Output, Runtime, Snapshot, StageId, System, SystemId, Time,
        With, Without, World, Write,
    };
}

/// The README's examples, compiled and run as doctests (the crate's front page is
/// `src/docs/front.md`).
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
