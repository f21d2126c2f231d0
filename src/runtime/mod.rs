//! The frame loop: [`Runtime`] and its builder. The struct and its fields are here; its
//! methods are in one child module per concern, each an `impl Runtime` block (a child
//! sees the fields, which stay private):
//!
//! - `builder` — [`RuntimeBuilder`](crate::RuntimeBuilder) (workers, the fixed step,
//!   stages, Tracy settings) and the [`Time`](crate::Time) resource;
//! - `systems` — adding systems and stages; enabling, naming and finding systems;
//! - `frame` — the frame loop: each stage's Run then Sync, and the frame's figures
//!   ([`FrameStats`]);
//! - `advance` — the fixed-step driver ([`Runtime::advance`]) and its figures;
//! - `persist` — snapshots ([`RuntimeSnapshot`](crate::RuntimeSnapshot)) and save files;
//! - `replay` — recording and playing replays; `replay::file` is the replay file and the
//!   reports, which know no `Runtime` (a lower layer: see `lib.rs`);
//! - `watch` — write provenance of watched entities;
//! - `trace` — trace files ([`Runtime::start_trace`]): the frames' timeline as Chrome
//!   trace-event JSON.
//!
//! The children import this module (for `Runtime`) and this module imports none of them
//! but `replay::file`, so they form no import cycle.

mod advance;
pub(crate) mod builder;
mod frame;
pub(crate) mod persist;
pub(crate) mod replay;
mod systems;
mod trace;
mod watch;

use std::fmt;
use std::sync::Arc;

use crate::fixed_step::FixedStep;
use crate::pool::Pool;
use crate::provenance::Watches;
use crate::stats::{AdvanceStats, FrameStats};
use crate::system::SystemEntry;
use crate::world::World;
use replay::file::Recorder;

/// One stage of the frame: a name, and where its systems end in [`Runtime::systems`]
/// (they start where the previous stage's end).
struct Stage {
    name: Arc<str>,
    /// One past the place of its last system.
    end: usize,
    /// Its Tracy zone's location, made once (nothing without `tracy`).
    zone: crate::profile::ZoneSite,
}

/// Runs frames: all enabled systems in parallel (Run), then one merge of their outputs
/// into the world (Sync) — once per [stage](Runtime::add_stage), with one stage unless
/// asked for more.
///
/// See the [crate docs](crate) for an example.
pub struct Runtime {
    world: World,
    pool: Pool,
    /// Stage by stage, in registration order within a stage: each stage's systems are one
    /// slice, run and synced together. A system's place here also numbers its reserved
    /// spawn ids (`Entities::reserve_for_stage`).
    systems: Vec<SystemEntry>,
    /// Per system id, its place in `systems`.
    places: Vec<u32>,
    /// In frame order; at least one.
    stages: Vec<Stage>,
    stats: FrameStats,
    /// Totals and maxima over the last `advance` call's frames.
    advance_stats: AdvanceStats,
    /// Its Tracy plots and frame marks (nothing without `tracy`).
    profile: crate::profile::RuntimeProfile,
    dt: f32,
    frame: u64,
    /// Real time not yet simulated, for [`advance`](Runtime::advance).
    clock: FixedStep,
    sync_scratch: crate::sync::SyncScratch,
    /// Entities whose write provenance Sync records.
    watches: Watches,
    /// The replay being recorded, if any.
    recorder: Option<Box<Recorder>>,
    /// The trace being recorded, if any ([`Runtime::start_trace`]).
    trace: Option<Box<crate::trace::Trace>>,
    /// The checksum's blocks and their digests, reused by [`checksum`](Runtime::checksum).
    digests: std::sync::Mutex<crate::storage::snapshot::Digests>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("world", &self.world)
            .field("workers", &self.pool.threads())
            .field("systems", &self.systems.len())
            .field("stages", &self.stages.len())
            .field("frame", &self.frame)
            .finish()
    }
}

impl Runtime {
    /// The world as the last Sync left it.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The world, for direct edits between frames (setup, loading, tools).
    pub fn world_mut(&mut self) -> &mut World {
        &mut self.world
    }

    /// Threads that run systems, counting the caller.
    pub fn workers(&self) -> usize {
        self.pool.threads()
    }

    /// Stops the workers and returns the world.
    pub fn into_world(self) -> World {
        self.world
    }
}
