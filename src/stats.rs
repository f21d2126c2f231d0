//! Figures the runtime reports: per frame ([`FrameStats`]), per stage ([`StageStats`]),
//! per system ([`SystemStats`]), memory ([`MemoryStats`]), and why a frame failed
//! ([`FrameError`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::entity::Entity;
use crate::hierarchy::HierarchyError;
use crate::ids::{StageId, SystemId};

/// Per-system figures of the last frame.
#[derive(Clone, Debug)]
pub struct SystemStats {
    /// The system.
    pub id: SystemId,
    /// Its name.
    pub name: Arc<str>,
    /// The stage it runs in.
    pub stage: StageId,
    /// Whether it ran: it is enabled, and its stage ran (a frame stops at the first stage
    /// that fails).
    pub ran: bool,
    /// Wall time of its `run` (zero if it did not run).
    pub time: Duration,
    /// Its work: the time of every piece of its `run` added up — its own thread's, and
    /// every chunk of its parallel loops (`par_for_each`, ...) wherever it ran. Zero if it
    /// did not run. See [`FrameStats::work`].
    pub work: Duration,
    /// Its span: the longest chain of its pieces that more workers cannot shorten — its
    /// serial time plus, for each parallel loop, its longest chunk. `work / span` bounds
    /// how much faster more workers can make it. Zero if it did not run.
    pub span: Duration,
    /// Component writes it emitted.
    pub writes: usize,
    /// Structural commands it emitted.
    pub commands: usize,
}

/// Figures of the last frame, from [`Runtime::stats`](crate::Runtime::stats).
#[derive(Clone, Debug, Default)]
pub struct FrameStats {
    /// The number of the frame these figures describe, counting from 1 (0 before any
    /// frame ran): after a frame that counts, [`Runtime::frame_count`](crate::Runtime::frame_count);
    /// after a frame whose first stage's Run failed, one more (the frame that failed and
    /// will run again). See [frame numbers](crate::Time#frame-numbers).
    pub frame: u64,
    /// Wall time of the Run phase: of every stage's Run, added up (per stage in
    /// [`stages`](Self::stages)).
    pub run: Duration,
    /// Wall time of the Sync phase: of every stage's Sync, added up.
    pub sync: Duration,
    /// The frame's work: every piece of every stage's Run and Sync (each system's own
    /// time, each chunk of its parallel loops, each Sync step and fold job), added up —
    /// the time one worker would need, roughly.
    pub work: Duration,
    /// The frame's span: the longest chain of pieces that more workers cannot shorten.
    /// Per stage, the longest system's span (systems run at once; see
    /// [`SystemStats::span`]), then Sync's serial steps plus its longest fold job; stages
    /// add up. See [`speedup_bound`](Self::speedup_bound).
    pub span: Duration,
    /// Each system, in registration order (index them by [`SystemId::index`]).
    pub systems: Vec<SystemStats>,
    /// Each stage, in frame order (index them by [`StageId::index`]). Its figures add up
    /// to the frame's: `run`, `sync`, `merged`, `dropped`, `spawned` and `despawned`.
    pub stages: Vec<StageStats>,
    /// Writes folded into components by their merge.
    pub merged: u64,
    /// Writes to dead entities or to entities lacking the component, plus structural
    /// commands that had nothing to act on (despawn of a dead entity, insert into a dead
    /// entity, remove of an absent component), plus messages sent to an entity dead by
    /// the end of the frame's commands. Commands emitted by
    /// [hooks](crate::World::on_add) count too.
    pub dropped: u64,
    /// Entities spawned in Sync (by systems' commands and by hooks' commands).
    pub spawned: u64,
    /// Entities despawned in Sync (by systems' commands and by hooks' commands).
    pub despawned: u64,
    /// Messages the last Sync delivered, of every type (what the next Run reads; see
    /// [`World::register_message`](crate::World::register_message)). Addressed messages
    /// dropped for a dead entity count in `dropped` instead.
    pub messages: u64,
    /// Reparents the last Sync rejected because they would have made a cycle (each also
    /// counted in `dropped`); see [`World::register_hierarchy`](crate::World::register_hierarchy).
    pub cycles: u64,
    /// The first of them, in command order: which entity, which parent (its `Display`
    /// says why and what to do).
    pub first_cycle: Option<HierarchyError>,
    /// Live entities after the frame.
    pub entities: usize,
}

impl FrameStats {
    /// How much faster than one worker this frame could run on `workers` workers, at
    /// best: `min(workers, work / span)` — `workers` can share the work, but nothing runs
    /// the span faster. A figure a 2-core machine can measure for 64 cores. (Greedy
    /// scheduling reaches at least `work / (work / workers + span)`.) 1 for a frame with
    /// no measured work.
    pub fn speedup_bound(&self, workers: usize) -> f64 {
        let (work, span) = (self.work.as_secs_f64(), self.span.as_secs_f64());
        if work <= 0.0 || span <= 0.0 {
            return 1.0;
        }
        (work / span).min(workers.max(1) as f64)
    }

    /// Starts the figures of frame number `frame`: the frame's totals back to zero. The
    /// per-system and per-stage figures are set as each stage runs or is skipped, and
    /// [`entities`](Self::entities) when the frame ends.
    pub(crate) fn begin_frame(&mut self, frame: u64) {
        self.frame = frame;
        self.run = Duration::ZERO;
        self.sync = Duration::ZERO;
        self.work = Duration::ZERO;
        self.span = Duration::ZERO;
        self.merged = 0;
        self.dropped = 0;
        self.spawned = 0;
        self.despawned = 0;
        self.messages = 0;
        self.cycles = 0;
        self.first_cycle = None;
    }

    /// Records what system `id` did in its stage's Run (for one that did not run: all
    /// zero, `SystemRun::default()`).
    pub(crate) fn record_system(&mut self, id: SystemId, run: SystemRun) {
        let st = &mut self.systems[id.index()];
        st.ran = run.ran;
        st.time = run.time;
        (st.work, st.span) = (run.work, run.span);
        st.writes = run.writes;
        st.commands = run.commands;
    }

    /// Adds the Run of `stage`: its wall time, work and span. The stage's figures start
    /// over from it (its Sync's come with [`add_sync`](Self::add_sync)).
    pub(crate) fn add_run(
        &mut self,
        stage: StageId,
        time: Duration,
        work: Duration,
        span: Duration,
    ) {
        self.run += time;
        self.work += work;
        self.span += span;
        let figures = &mut self.stages[stage.index()];
        figures.reset();
        figures.ran = true;
        figures.run = time;
    }

    /// Adds the Sync of `stage`: its wall time, work and span, and what it did, to the
    /// stage's figures and the frame's.
    pub(crate) fn add_sync(
        &mut self,
        stage: StageId,
        time: Duration,
        work: Duration,
        span: Duration,
        sync: SyncFigures,
    ) {
        self.work += work;
        self.span += span;
        let figures = &mut self.stages[stage.index()];
        figures.sync = time;
        figures.merged = sync.merged;
        figures.dropped = sync.dropped;
        figures.spawned = sync.spawned;
        figures.despawned = sync.despawned;
        self.sync += time;
        self.merged += sync.merged;
        self.dropped += sync.dropped;
        self.spawned += sync.spawned;
        self.despawned += sync.despawned;
        self.messages += sync.messages;
        self.cycles += sync.cycles;
        if self.first_cycle.is_none() {
            self.first_cycle = sync.first_cycle;
        }
    }
}

/// What one system did in its stage's Run, as [`FrameStats::record_system`] records it in
/// its [`SystemStats`]. The default is a system that did not run.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SystemRun {
    pub(crate) ran: bool,
    pub(crate) time: Duration,
    pub(crate) work: Duration,
    pub(crate) span: Duration,
    pub(crate) writes: usize,
    pub(crate) commands: usize,
}

/// What one stage's Sync did, as [`FrameStats::add_sync`] adds it up (made from Sync's
/// report by `SyncReport::into_result`).
#[derive(Debug, Default)]
pub(crate) struct SyncFigures {
    /// Writes folded.
    pub(crate) merged: u64,
    /// Outputs and commands dropped.
    pub(crate) dropped: u64,
    pub(crate) spawned: u64,
    pub(crate) despawned: u64,
    /// Messages delivered.
    pub(crate) messages: u64,
    /// Reparents rejected for making a cycle, and the first of them.
    pub(crate) cycles: u64,
    pub(crate) first_cycle: Option<HierarchyError>,
}

/// Figures of every frame the last [`Runtime::advance`](crate::Runtime::advance) call ran
/// (or [`try_advance`](crate::Runtime::try_advance), [`advance_with`](crate::Runtime::advance_with)),
/// from [`Runtime::advance_stats`](crate::Runtime::advance_stats): totals and maxima over
/// the call, where [`Runtime::stats`](crate::Runtime::stats) describes only its last frame.
///
/// Kept in place: a call that runs frames resets it, keeping its memory (no allocation
/// once the systems' list has grown); a call that runs none leaves it empty. Cost: a few
/// additions per system per frame.
#[derive(Clone, Debug, Default)]
pub struct AdvanceStats {
    /// Frames the call ran, failed ones included.
    pub frames: u32,
    /// Frames that failed (the call stops at the first: 0 or 1).
    pub failed: u32,
    /// The number of the first frame it ran ([`FrameStats::frame`]; 0 if none).
    pub first: u64,
    /// Run time of every frame, added up.
    pub run: Duration,
    /// Sync time of every frame, added up.
    pub sync: Duration,
    /// Work of every frame, added up ([`FrameStats::work`]).
    pub work: Duration,
    /// Span of every frame, added up ([`FrameStats::span`]).
    pub span: Duration,
    /// The longest frame's Run plus Sync time.
    pub max_frame: Duration,
    /// That frame's number.
    pub slowest: u64,
    /// Writes merged, over the call.
    pub merged: u64,
    /// Writes and commands dropped, over the call.
    pub dropped: u64,
    /// Entities spawned, over the call.
    pub spawned: u64,
    /// Entities despawned, over the call.
    pub despawned: u64,
    /// Messages delivered, over the call.
    pub messages: u64,
    /// Live entities after the last frame.
    pub entities: usize,
    /// Each system over the call, in registration order (index by [`SystemId::index`]).
    pub systems: Vec<SystemTotals>,
}

/// One system's figures over the frames of one [`Runtime::advance`](crate::Runtime::advance)
/// call ([`AdvanceStats::systems`]).
#[derive(Clone, Debug)]
pub struct SystemTotals {
    /// The system.
    pub id: SystemId,
    /// Its name.
    pub name: Arc<str>,
    /// Frames in which it ran.
    pub runs: u32,
    /// Its wall time, added up ([`SystemStats::time`]).
    pub time: Duration,
    /// Its longest wall time in one frame.
    pub max_time: Duration,
    /// That frame's number (0 if it never ran).
    pub slowest: u64,
    /// Its work, added up ([`SystemStats::work`]).
    pub work: Duration,
    /// Its longest span in one frame ([`SystemStats::span`]).
    pub max_span: Duration,
    /// Component writes it emitted, added up.
    pub writes: u64,
    /// The most writes it emitted in one frame.
    pub max_writes: usize,
    /// Structural commands it emitted, added up.
    pub commands: u64,
}

impl AdvanceStats {
    /// Back to "no frame", keeping the systems' list's memory.
    pub(crate) fn reset(&mut self) {
        let mut systems = std::mem::take(&mut self.systems);
        systems.clear();
        *self = AdvanceStats {
            systems,
            ..AdvanceStats::default()
        };
    }

    /// Adds one frame's figures (`failed`: whether it failed).
    pub(crate) fn add(&mut self, frame: &FrameStats, failed: bool) {
        if self.frames == 0 {
            self.first = frame.frame;
        }
        self.frames += 1;
        self.failed += u32::from(failed);
        self.run += frame.run;
        self.sync += frame.sync;
        self.work += frame.work;
        self.span += frame.span;
        let total = frame.run + frame.sync;
        if total >= self.max_frame {
            self.max_frame = total;
            self.slowest = frame.frame;
        }
        self.merged += frame.merged;
        self.dropped += frame.dropped;
        self.spawned += frame.spawned;
        self.despawned += frame.despawned;
        self.messages += frame.messages;
        self.entities = frame.entities;
        for s in &frame.systems {
            let i = s.id.index();
            if i >= self.systems.len() {
                // Systems are added between calls, so a new one is always the next id.
                self.systems.push(SystemTotals {
                    id: s.id,
                    name: s.name.clone(),
                    runs: 0,
                    time: Duration::ZERO,
                    max_time: Duration::ZERO,
                    slowest: 0,
                    work: Duration::ZERO,
                    max_span: Duration::ZERO,
                    writes: 0,
                    max_writes: 0,
                    commands: 0,
                });
            }
            let t = &mut self.systems[i];
            if !s.ran {
                continue;
            }
            t.runs += 1;
            t.time += s.time;
            if s.time >= t.max_time {
                t.max_time = s.time;
                t.slowest = frame.frame;
            }
            t.work += s.work;
            t.max_span = t.max_span.max(s.span);
            t.writes += s.writes as u64;
            t.max_writes = t.max_writes.max(s.writes);
            t.commands += s.commands as u64;
        }
    }
}

/// Per-stage figures of the last frame: a frame runs its stages one after the other, each
/// a Run of its systems then a Sync (see [`Runtime::add_stage`](crate::Runtime::add_stage)).
#[derive(Clone, Debug)]
pub struct StageStats {
    /// The stage.
    pub id: StageId,
    /// Its name.
    pub name: Arc<str>,
    /// Whether it ran this frame: `false` for the stages after one that failed, and for a
    /// stage with no enabled system (skipped whole: an empty stage changes nothing).
    pub ran: bool,
    /// Wall time of its Run.
    pub run: Duration,
    /// Wall time of its Sync (zero if its Run failed).
    pub sync: Duration,
    /// Writes its Sync folded into components and resources.
    pub merged: u64,
    /// Writes and commands its Sync dropped (see [`FrameStats::dropped`]).
    pub dropped: u64,
    /// Entities its Sync spawned.
    pub spawned: u64,
    /// Entities its Sync despawned.
    pub despawned: u64,
}

impl StageStats {
    /// A stage that has not run.
    pub(crate) fn new(id: StageId, name: Arc<str>) -> Self {
        StageStats {
            id,
            name,
            ran: false,
            run: Duration::ZERO,
            sync: Duration::ZERO,
            merged: 0,
            dropped: 0,
            spawned: 0,
            despawned: 0,
        }
    }

    /// Back to "did not run", keeping the name.
    pub(crate) fn reset(&mut self) {
        self.ran = false;
        self.run = Duration::ZERO;
        self.sync = Duration::ZERO;
        self.merged = 0;
        self.dropped = 0;
        self.spawned = 0;
        self.despawned = 0;
    }
}

/// Memory the runtime holds on to, from [`Runtime::memory`](crate::Runtime::memory). In a steady state (a stable
/// set of archetypes and a bounded entity count) none of these grow from frame to frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryStats {
    /// Archetype tables (never freed; one per component combination ever seen).
    pub tables: usize,
    /// Entity slots ever created (live, free for reuse, or retired).
    pub entity_slots: usize,
    /// Bytes reserved by component columns and table entity lists.
    pub component_bytes: usize,
    /// Bytes reserved by the systems' output buffers (kept across frames): value vectors
    /// in use and spare (including columns swapped out by Sync, kept for reuse), runs,
    /// commands, parallel-iteration chunk buffers, and Sync's per-type scratch.
    pub output_bytes: usize,
}

/// The most rounds of hook commands applied after one set of commands: a hook whose
/// commands fire it again without end (an `on_add::<A>` that spawns an entity with `A`)
/// stops here, and the frame fails with [`FrameError::HookCascade`].
pub const MAX_HOOK_ROUNDS: u32 = 16;

/// Why a frame failed. See [`Runtime::try_frame`](crate::Runtime::try_frame).
///
/// A frame runs its [stages](crate::Runtime::add_stage) one after the other and **stops at
/// the first stage that fails**: the stages after it do not run. Every variant names that
/// stage ([`stage`](Self::stage)) and says what the failed frame left.
///
/// A frame that *counts as done* ([`counts_as_done`](Self::counts_as_done): every failure
/// but a [`SystemPanicked`](Self::SystemPanicked) in the first stage) advanced the frame
/// counter and [`Time::frame`](crate::Time::frame), and
/// [`Runtime::try_advance`](crate::Runtime::try_advance) charged its fixed step exactly
/// once; the next frame is the one after it. Only a failure in the first stage's Run
/// leaves the world as it was: once a stage has synced, its changes are in the world (no
/// copy of the world is kept to put back; for that, snapshot before the frame with
/// [`Runtime::snapshot_into`](crate::Runtime::snapshot_into) and restore on error).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum FrameError {
    /// A system panicked during a stage's Run. That stage's outputs were all discarded
    /// (every system's of the stage, not only the panicking one's) and the ids reserved
    /// for its spawns taken back, so the world is exactly as the stage found it:
    /// - in the first stage, exactly as before the frame (snapshots,
    ///   [`checksum`](crate::World::checksum) and
    ///   [`first_difference`](crate::World::first_difference) see no change); the frame
    ///   counter did not advance, and [`Runtime::try_advance`](crate::Runtime::try_advance)
    ///   does not charge the frame's time: the next frame runs this one again;
    /// - in a later stage, as the stage before it synced it: the earlier stages' merges
    ///   and commands stay applied, and the frame counts as done.
    SystemPanicked {
        /// The system (the lowest id, if several panicked).
        system: SystemId,
        /// Its name.
        name: Arc<str>,
        /// The panic message.
        message: String,
        /// The stage whose Run failed.
        stage: StageId,
    },
    /// A merge function panicked during a stage's Sync: a component type's, or a
    /// resource's ([`World::register_resource`](crate::World::register_resource)). The
    /// frame counts as done: every other component type and resource merged normally, and
    /// the structural commands were applied. Of the type whose merge panicked:
    /// - the value named by `target` holds whatever the panicking call left in it: merges
    ///   run in place on the stored value, and Sync keeps no copy to put back (that would
    ///   need `Clone` and a copy of every merged value, every frame). A merge that pushes
    ///   outputs into a `Vec` and panics on the third leaves the first two pushed;
    /// - every other value holds its old value merged with a prefix of its outputs (in
    ///   merge order): all of them or none — or, for a merge that takes its outputs one at
    ///   a time ([`Merge::ONE_AT_A_TIME`](crate::Merge::ONE_AT_A_TIME): `merge::sum`,
    ///   `merge::last`), which Sync applies system by system, possibly those of the first
    ///   systems only. Which values were merged follows Sync's merge order, which for a
    ///   large type merged in parallel row ranges depends on the worker count (a failed
    ///   frame is outside the determinism promise); in those ranges, merges of several
    ///   values may have panicked, and `target` names the first range's;
    /// - every value that had outputs is marked [`Changed`](crate::Changed), merged or not.
    ///
    /// To keep state safe from a merge that may panic, snapshot before the frame
    /// ([`Runtime::snapshot_into`](crate::Runtime::snapshot_into)) and restore on error.
    MergePanicked {
        /// The type whose merge panicked: a component type (the lowest id, if several),
        /// else a resource type (the first registered).
        component: &'static str,
        /// The value the panicking merge call was merging into.
        target: MergeTarget,
        /// The panic message.
        message: String,
        /// The stage whose Sync it was.
        stage: StageId,
    },
    /// A component's `Drop` panicked while Sync released removed values. The frame counts
    /// as done: every merge and structural change of the stage was applied, and the
    /// removed and replaced values are out of the world. Those of the type whose `Drop`
    /// panicked were all dropped (the rest after the panicking one); those of later types
    /// (by id) and of discarded hook commands, not reached, are dropped by the end of the
    /// next Sync instead.
    DropPanicked {
        /// The panic message.
        message: String,
        /// The stage whose Sync it was.
        stage: StageId,
    },
    /// A [hook](crate::World::on_add) panicked during a stage's Sync. Its commands were
    /// discarded; every other hook ran and every other command of the stage was applied,
    /// so the world is consistent. The frame counts as done.
    HookPanicked {
        /// The component type whose hook panicked (the first in hook order, if several).
        component: &'static str,
        /// `"on_add"` or `"on_remove"`.
        hook: &'static str,
        /// The panic message.
        message: String,
        /// The stage whose Sync it was.
        stage: StageId,
    },
    /// Hooks kept emitting commands that fired hooks again: after
    /// [`MAX_HOOK_ROUNDS`] rounds the remaining commands were
    /// dropped. Everything before was applied; the frame counts as done.
    HookCascade {
        /// The hook commands dropped.
        dropped: usize,
        /// The stage whose Sync it was.
        stage: StageId,
    },
}

impl FrameError {
    /// The stage where the frame failed (and stopped).
    pub fn stage(&self) -> StageId {
        match self {
            FrameError::SystemPanicked { stage, .. }
            | FrameError::MergePanicked { stage, .. }
            | FrameError::DropPanicked { stage, .. }
            | FrameError::HookPanicked { stage, .. }
            | FrameError::HookCascade { stage, .. } => *stage,
        }
    }

    /// Whether the failed frame counts as done: it advanced the frame counter and its
    /// changes stay. `false` only for a [`SystemPanicked`](Self::SystemPanicked) in the
    /// first stage, which left the world as it was and will run again.
    pub fn counts_as_done(&self) -> bool {
        !matches!(
            self,
            FrameError::SystemPanicked {
                stage: StageId::FIRST,
                ..
            }
        )
    }
}

/// `" of stage N"` after "during Run" / "during Sync" (or `" in the Sync of stage N"`
/// with `sync`) for a later stage; nothing for the first stage, so that a runtime with
/// one stage reads as it always did.
struct InStage(StageId, bool);

impl fmt::Display for InStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InStage(StageId::FIRST, _) => Ok(()),
            InStage(StageId(n), false) => write!(f, " of stage {n}"),
            InStage(StageId(n), true) => write!(f, " in the Sync of stage {n}"),
        }
    }
}

/// What the stages after a failed one did: nothing (said only when the failure was not in
/// the first stage, where a runtime with one stage has nothing after it to mention).
struct LaterStages(StageId);

impl fmt::Display for LaterStages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            StageId::FIRST => Ok(()),
            _ => f.write_str("; the later stages did not run"),
        }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::SystemPanicked {
                system,
                name,
                message,
                stage: StageId::FIRST,
            } => write!(
                f,
                "system `{name}` ({system:?}) panicked during Run: {message}; \
                 the frame's outputs were discarded and the world is unchanged"
            ),
            FrameError::SystemPanicked {
                system,
                name,
                message,
                stage,
            } => write!(
                f,
                "system `{name}` ({system:?}) panicked during Run{}: {message}; that \
                 stage's outputs were discarded, the earlier stages' changes stay applied \
                 and the frame counts as done{}",
                InStage(*stage, false),
                LaterStages(*stage)
            ),
            FrameError::MergePanicked {
                component,
                target: MergeTarget::Resource,
                message,
                stage,
            } => write!(
                f,
                "the merge function of resource `{component}` panicked during Sync{}: \
                 {message}; the resource holds whatever the merge left, everything else \
                 was merged and applied{}",
                InStage(*stage, false),
                LaterStages(*stage)
            ),
            FrameError::MergePanicked {
                component,
                target,
                message,
                stage,
            } => write!(
                f,
                "the merge function of component `{component}` panicked during Sync{} on \
                 {target}: {message}; that value holds whatever the merge left, other \
                 `{component}` values may not have been merged this frame, everything else \
                 was merged and applied{}",
                InStage(*stage, false),
                LaterStages(*stage)
            ),
            FrameError::DropPanicked { message, stage } => write!(
                f,
                "a component's Drop panicked during Sync{}: {message}{}",
                InStage(*stage, false),
                LaterStages(*stage)
            ),
            FrameError::HookPanicked {
                component,
                hook,
                message,
                stage,
            } => write!(
                f,
                "an {hook} hook of component `{component}` panicked{}: {message}; its \
                 commands were discarded, every other hook and command was applied{}",
                InStage(*stage, true),
                LaterStages(*stage)
            ),
            FrameError::HookCascade { dropped, stage } => write!(
                f,
                "hooks were still emitting commands after {} rounds{}; the last {dropped} \
                 were dropped. A hook's commands fire hooks again: make sure the chain ends \
                 (e.g. an on_add hook of `A` must not spawn or insert an `A` every time){}",
                MAX_HOOK_ROUNDS,
                InStage(*stage, true),
                LaterStages(*stage)
            ),
        }
    }
}

impl std::error::Error for FrameError {}

/// What a panicking merge was merging into: see [`FrameError::MergePanicked`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MergeTarget {
    /// This entity's component: the merge call for it panicked.
    Entity(Entity),
    /// The component of every entity in one table: a custom
    /// [`Merge::replace_column`](crate::Merge::replace_column) panicked while replacing
    /// the table's whole column, which holds whatever it left. `first` is the entity in
    /// the table's first row.
    Column {
        /// The entity in the first row of the table.
        first: Entity,
    },
    /// The resource of that type (its one merge call of the frame panicked).
    Resource,
}

impl fmt::Display for MergeTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeTarget::Entity(e) => write!(f, "entity {e}"),
            MergeTarget::Column { first } => {
                write!(f, "the whole column of the table of entity {first}")
            }
            MergeTarget::Resource => f.write_str("the resource"),
        }
    }
}
