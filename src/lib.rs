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
//!    keyed in Run (a write in a query loop is a handle compare and a store); a Sync
//!    that folds runs of rows straight into columns, types and row ranges in parallel,
//!    with no sort for outputs emitted in query order.
//! 4. **Safe to embed.** A panicking system fails its frame, not the world; no safe code a
//!    user writes can break what an `unsafe` block relies on (see
//!    [Where `unsafe` lives](#where-unsafe-lives)); Miri checks each block
//!    (`tools/reliability.sh`).
//!
//! # In the source
//!
//! For contributors: the crate reads bottom-up, one module per mechanism, and nothing
//! imports a module of a higher layer. From the bottom:
//!
//! - **Leaves**: `entity` (handles, the allocator), `component` (the trait, ids, the
//!   registry), `input` (the per-frame input resource), `ids`, `profile` (Tracy zones and
//!   `tracing` spans; nothing without `tracy` or `tracing`), `stamp` (names of a
//!   vector's contents, which let snapshots and checksums skip what did not change), `trace` (trace files: a
//!   frame's timeline as Chrome trace-event JSON), `erased` (the one type-erased buffer: a
//!   box and its `TypeId`, one checked downcast); then `merge`, `checksum`, `stats` (frame
//!   figures and errors), `fixed_step`, `savefile` (the save-file framing and its
//!   errors) and `hierarchy` (the `ChildOf` / `Children` components and their checks),
//!   which know only those.
//! - **Storage** (`storage/`: tables, SoA columns, change marks, entity moves, storage
//!   snapshots). Its fields are private: the rest of the crate goes through its methods
//!   (one entity lookup, `locate`), and Sync borrows the world's parts through one
//!   `World::sync_parts()`. The **worker pool** and the clock are the `runsync-pool` crate, which
//!   knows no ECS (`crate::pool` inside this crate).
//! - **What values become**: `bundle` (a bundle writes into a sink trait), `resource`
//!   (the resource map and written-resource folds), `message` (sent and delivered
//!   messages, double-buffered), `commands` (the one structural command list and its
//!   `apply`, for systems' outputs and hooks alike; `commands::tree` keeps parents and
//!   children in step).
//! - **Output buffers** (`output/buffer/`, Run's hand-over to Sync: `mod.rs`: per-system,
//!   per-type runs of rows; `addr`: the write path's remembered buffer address;
//!   `row_writes`: the write handles of `Output::query`, pending until settled into
//!   runs), then **folds** (`fold/`: one typed fold per component type, knowing no
//!   `World`).
//! - **Queries** (`query/`: `fetch`, `filter`, `state`, `iter`, `write`: one engine for
//!   `query`, `query_mut` and `Output::query`), reading storage and output buffers, never
//!   the `World`.
//! - **The world** (`world/`: `mod`, `resources`, `messages`, `hierarchy`, `snapshot`,
//!   `checksum`, `debug`, ...) and `hooks`, which import each other: the world owns its
//!   hooks, and a hook is handed `&World`.
//! - **What systems see**: `output` (`Output`, the writers, `par_write`, `par_loops`,
//!   `send`), then `system`.
//! - **The frame**: `provenance` (what Sync records for watched entities),
//!   `runtime::replay::file` (replay files, their recorder and reports), `run`
//!   (phase 1) and `sync/` (phase 2), which never import each other, then `runtime/`:
//!   the `Runtime` struct in `mod.rs`, its methods by concern in `builder`, `systems`,
//!   `frame`, `advance`, `persist`, `replay` and `watch`, which import `mod.rs` and are
//!   imported by nothing in the folder.
//!
//! The same list, checked against every `use` in `src/` by
//! `cargo xtask layers` (CI runs it through its test, `xtask/tests/layers.rs`; it also
//! fails on an import cycle of more than two files):
//!
//! # Where `unsafe` lives
//!
//! Every `unsafe` block of the crate, by file, with the fact it relies on and why no safe
//! code a user writes — a system, a merge (`fn`, closure or [`Merge`] impl), a hook, a
//! required component's constructor, a component's `Clone`, `Drop`, `Serialize` or
//! `Deserialize`, a [`Checksum`] — can break that fact. Each block's `// SAFETY:` comment
//! says the same at the block.
//!
//! - `runsync-pool`'s `pool.rs` (jobs handed to workers by raw pointer; `fill` writing
//!   spare capacity):
//!   the batch outlives its jobs because the owner blocks until every ticket is
//!   released, and `fill` sets the length only after every part ran to completion. User
//!   closures run inside jobs; a panic is caught and carried back (a panicked `fill`
//!   leaves the vector empty and leaks, never exposes, what was written).
//! - `query/fetch.rs`, `query/iter.rs`, `output/par_write.rs` (rows read with
//!   `get_unchecked`): a row index is below the table's entity count, and **every column
//!   of a table holds at least as many values as the table has entities**. Only crate
//!   code changes lengths, and it never runs user code between a column's change and the
//!   matching entity-list change, or undoes it if that code unwinds: a merge gets values
//!   only (`&mut C`) or a [`merge::ColumnOutputs`] that cannot change a length;
//!   structural changes move removed values to graveyards and drop them once every move
//!   is complete; a batch spawn whose required constructor panics is cut back
//!   (`Storage::fill_required`); a restore whose `Clone` panics empties the world
//!   (`storage/snapshot.rs`); a value left staged by a spawn that unwound is discarded by
//!   the next. Save files and entity records are decoded into new columns and checked
//!   against the row counts before they replace anything (fuzzed: `fuzz/`).
//! - `query/filter.rs`, `query/write.rs` (the same `get` contract, and `Write<C>`'s
//!   exclusive use of the system's buffer): `Output::query` borrows the system's
//!   [`Output`] mutably for as long as any write handle lives, and refuses a query that
//!   names `Write<C>` twice.
//! - `output/buffer/row_writes.rs` (write handles as raw pointers into a pending column):
//!   each row's handle is handed out once, a handle borrows the `Output` and is neither
//!   `Send` nor `Sync`, and a value is initialised exactly when its flag is set (a
//!   panicking `Drop` in `RowWrite::set` leaves the row absent), or, in a column that
//!   `Output::write_each_some` filled with a value for every row, every value is (its
//!   flags are then never read; the fill's parts cover disjoint rows, and the column is
//!   marked only after every part has run).
//! - `erased.rs` (a type-erased buffer's type recovered from the `TypeId` kept beside
//!   it): the `TypeId` and the box are set together from one typed box and never apart,
//!   and no user type implements the buffer trait (it is crate-private).
//! - `output/buffer/addr.rs`, `output/mod.rs` (the plain write path's remembered buffer
//!   address): private to the output handle; users reach buffers only through
//!   `Output`'s methods, each of which forgets the address before another way to the
//!   buffer is used.
//! - `fold/move_out.rs` (output values moved out by position): the vectors' lengths are
//!   set to 0 before any value moves, and every value is then moved or dropped exactly
//!   once by its owner (a merge sees a slice of moved values and cannot take them);
//!   what a panicking merge never saw is dropped by the unwinding.
//! - `entity.rs` (a hint that a generation is non-zero): it is a `NonZeroU32`.
//!
//! The traits a user implements are safe to implement because none of them feeds these
//! facts: [`System`], [`Merge`] (its `replace_column` gets a [`merge::ColumnOutputs`]),
//! [`Component`] (its hidden `register_required` only declares constructors),
//! [`Checksum`], [`Message`], [`DefaultMerge`], [`WriterSet`] (its hidden method gets
//! only the public `Output`). The query traits ([`QueryData`],
//! [`QueryMut`], [`QueryOut`]) and [`Bundle`] are sealed: their implementations are the
//! crate's own.
//!
//! <!-- layers: checked by `cargo xtask layers` -->
//! ```text
//! 0 base:     entity component input ids profile stamp trace erased
//! 1 leaves:   merge checksum stats fixed_step savefile hierarchy
//! 2 storage:  storage
//! 3 values:   bundle resource message
//! 4 commands: commands
//! 5 buffers:  output::buffer
//! 6 fold:     fold
//! 7 query:    query
//! 8 world:    {world hooks}
//! 9 output:   output
//! 10 system:  system
//! 11 record:  provenance runtime::replay::file
//! 12 phases:  run sync
//! 13 loop:    runtime
//! ```

pub mod merge;

// Leaves.
mod component;
mod entity;
mod erased;
mod ids;
mod input;
mod profile;
mod stamp;
mod trace;
// Leaves over those.
mod checksum;
mod fixed_step;
mod hierarchy;
mod savefile;
mod stats;
// Where data lives.
mod storage;
// The worker threads (and the clock): a crate of their own, knowing no ECS.
pub(crate) use runsync_pool as pool;
// What values become: bundles, resources, structural commands.
mod bundle;
mod commands;
mod message;
mod resource;
// The per-type folds of Sync; what they fold, the buffers of Run's hand-over to Sync, is
// `output::buffer`, on the layer below (see the list above).
mod fold;
// What systems emit: the handle they write through, and (on a low layer of its own) the
// buffers.
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
pub use hierarchy::{ChildOf, Children, HierarchyError};
pub use hooks::Commands;
pub use input::Input;
pub use merge::Merge;
pub use message::Message;
pub use output::send::Sender;
pub use output::{Output, Parallel, RowWrite, Writer, WriterSet};
pub use provenance::{CommandKind, CommandRecord, ComponentWrites, Provenance, WriteRecord};
pub use query::{
    Added, Changed, QueryData, QueryFiltered, QueryIter, QueryMut, QueryMutIter, QueryOut,
    QueryOutIter, With, Without, Write,
};
/// `#[derive(Checksum)]`: [`Checksum`] by writing every field in declaration order (an
/// enum writes its variant's index first), each with its own `Checksum` impl — floats by
/// their bits. Type parameters get a `Checksum` bound.
///
/// ```
/// use runsync::{Checksum, Checksummer, Entity};
/// #[derive(Checksum)]
/// struct Pos { x: f32, y: f32 }
/// #[derive(Checksum)]
/// enum Order { Idle, Move(f32, f32), Attack { target: Option<Entity> } }
///
/// let sum = |v: &dyn Fn(&mut Checksummer)| { let mut h = Checksummer::new(); v(&mut h); h.finish() };
/// assert_eq!(sum(&|h| Pos { x: 1.0, y: 2.0 }.checksum(h)), sum(&|h| (1.0f32, 2.0f32).checksum(h)));
/// assert_ne!(sum(&|h| Order::Idle.checksum(h)), sum(&|h| Order::Move(0.0, 0.0).checksum(h)));
/// ```
pub use runsync_derive::Checksum;
/// `#[derive(Component)]`: `Output = Self` unless `#[component(output = Type)]`; with
/// `#[component(merge = expr)]` also [`DefaultMerge`], for
/// [`World::register_default`], and the flags `snapshot`, `checksum` and `debug`, which
/// `register_default` applies. See [`DefaultMerge`] for an example.
/// `#[component(requires(A, B = expr))]` declares [required components](World::require)
/// (`A::default()`, and `expr` for `B`) when the type is registered.
pub use runsync_derive::Component;
pub use runtime::Runtime;
pub use runtime::builder::{RuntimeBuilder, Time};
pub use runtime::persist::RuntimeSnapshot;
pub use runtime::replay::{Divergence, Replay, ReplayError, ReplayReport};
pub use savefile::{LoadError, SaveError};
pub use stats::{
    AdvanceStats, FrameError, FrameStats, MAX_HOOK_ROUNDS, MemoryStats, MergeTarget, StageStats,
    SystemStats, SystemTotals,
};
pub use system::{StageId, System, SystemId, SystemInfo};
pub use world::World;
pub use world::declare::DefaultMerge;
pub use world::edit::Edit;
pub use world::hierarchy::{Ancestors, Descendants};
pub use world::snapshot::{Snapshot, SnapshotError};

/// The old name of [`RowWrite`], the write handle a [`Write<C>`] query element yields.
///
/// ```
/// # use runsync::prelude::*;
/// #[allow(deprecated)]
/// fn set_to_zero(mut w: runsync::Slot<'_, f32>) {
///     w.set(0.0);
/// }
/// # let _ = set_to_zero;
/// ```
#[deprecated(
    since = "0.2.0",
    note = "renamed to `RowWrite`: \"slot\" now names only a place in the entity allocator"
)]
pub type Slot<'o, O> = RowWrite<'o, O>;

/// With `tracy`: what runsync has told Tracy, for tests, and the frame mark of a program
/// that runs several runtimes (`RuntimeBuilder::tracy_frame_marks`). Not a stable API.
#[cfg(feature = "tracy")]
#[doc(hidden)]
pub mod __tracy {
    pub use crate::profile::{frame_mark, frame_marks, plot_name, plot_names, zone_sites};
}

/// Everything a game usually needs: `use runsync::prelude::*;`.
pub mod prelude {
    pub use crate::merge;
    pub use crate::{
        Added, Advance, Bundle, Changed, Checksum, Checksummer, ChildOf, Children, Commands,
        Component, DefaultMerge, Entity, FrameError, FrameStats, Input, Output, Runtime, Snapshot,
        StageId, System, SystemId, Time, With, Without, World, Write,
    };
}

/// The README's examples, compiled and run as doctests (the crate's front page is
/// `src/docs/front.md`).
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The guide's examples (`docs/guide.md`), compiled and run as doctests.
#[doc = include_str!("../docs/guide.md")]
#[cfg(doctest)]
pub struct GuideDoctests;

/// The determinism and time-travel page's examples (`docs/determinism.md`), compiled and
/// run as doctests.
#[doc = include_str!("../docs/determinism.md")]
#[cfg(doctest)]
pub struct DeterminismDoctests;
