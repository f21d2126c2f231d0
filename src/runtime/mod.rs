//! The frame loop: [`Runtime`] and its builder.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::entity::Entity;
use crate::fixed_step::{Advance, FixedStep};
use crate::output::SystemOutputs;
use crate::pool::{Cost, Pool};
use crate::provenance::{Provenance, Watches};
use crate::replay::{Divergence, Recorder, Replay, ReplayError, ReplayFrame, ReplayReport};
use crate::savefile::{LoadError, Put, Reader, SaveError, Sink, Source};
use crate::stats::{AdvanceStats, FrameError, FrameStats, MemoryStats, StageStats, SystemStats};
use crate::sync::StageSync;
use crate::system::{StageId, System, SystemId, SystemInfo, SystemSlot};
use crate::world::World;
use crate::world::{Snapshot, SnapshotError};

/// The fixed-step clock, kept by the runtime as a resource.
///
/// # Frame numbers
///
/// Frames are numbered from 1: frame `N` is the `N`-th frame run. Three counters say
/// where a runtime is, and between frames they agree:
///
/// | counter | what it is | after one frame |
/// |---|---|---|
/// | [`Runtime::frame_count`] | frames completed: the number of the last one | 1 |
/// | [`Time::frame`] | the same count, as a resource systems can read | 1 |
/// | [`FrameStats::frame`](crate::FrameStats::frame) | the number of the frame the figures describe | 1 |
///
/// During frame `N` (its Run and Sync, every stage) `Time::frame` is still `N - 1`: it
/// counts *completed* frames, so `Time::frame as f32 * dt` is the simulated time at the
/// start of the step being computed (0 in the first frame). It becomes `N` when the frame
/// ends. The only time the counters differ between frames is after a frame that did not
/// count (its first stage's Run failed:
/// [`FrameError::SystemPanicked`](crate::FrameError::SystemPanicked)): `frame_count()` and `Time::frame` stay at `N - 1`, and `stats().frame` says
/// `N`, the frame that failed.
///
/// ```
/// # use runsync::prelude::*;
/// let mut rt = Runtime::builder().dt(0.5).build(World::new());
/// rt.frame();
/// let t = rt.world().resource::<Time>();
/// assert_eq!((t.dt, t.frame), (0.5, 1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Time {
    /// Seconds per frame: the builder's fixed step (`1.0 / hz as f32` for
    /// [`fixed_hz`](RuntimeBuilder::fixed_hz)).
    pub dt: f32,
    /// Frames completed so far: between frames, the number of the last frame (as
    /// [`Runtime::frame_count`]); during frame `N`, `N - 1` (see
    /// [frame numbers](Time#frame-numbers)).
    pub frame: u64,
}

/// Configures a [`Runtime`]: `Runtime::builder().workers(4).fixed_hz(60).build(world)`.
#[derive(Clone, Debug)]
pub struct RuntimeBuilder {
    workers: usize,
    step: Step,
    max_catch_up: u32,
    /// The stages' names, in frame order.
    stages: Vec<Cow<'static, str>>,
    /// How the runtime shows itself in Tracy (nothing without `tracy`).
    profile: crate::profile::ProfileSettings,
}

/// The name of the one stage a runtime has unless its builder names others.
const DEFAULT_STAGE: &str = "main";

/// The fixed step, as the builder was given it.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// [`RuntimeBuilder::fixed_hz`]: exactly `1 / hz` seconds.
    Hz(u32),
    /// [`RuntimeBuilder::dt`]: seconds.
    Dt(f32),
}

impl Step {
    /// [`Time::dt`].
    fn dt(self) -> f32 {
        match self {
            Step::Hz(hz) => 1.0 / hz as f32,
            Step::Dt(dt) => dt,
        }
    }

    fn clock(self, max_catch_up: u32) -> FixedStep {
        match self {
            Step::Hz(hz) => FixedStep::from_hz(hz, max_catch_up),
            Step::Dt(dt) => FixedStep::from_dt(dt, max_catch_up),
        }
    }
}

impl RuntimeBuilder {
    /// Number of threads that run systems, counting the thread that calls
    /// [`Runtime::frame`] (so `workers(1)` spawns no thread). `0` (the default) means one
    /// per available core. Ignored with the `single-threaded` feature.
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n;
        self
    }

    /// The fixed rate, in frames per second, counted exactly: a step is `1 / hz` s and
    /// [`Runtime::advance`] runs `N` frames for `N / hz` s of elapsed time, however the
    /// time is cut into calls, so a 60 Hz game never drifts from wall time. Publishes
    /// [`Time::dt`] `= 1.0 / hz as f32`. The default is `fixed_hz(60)`; the later of
    /// `fixed_hz` and [`dt`](Self::dt) wins.
    ///
    /// ```
    /// use std::time::Duration;
    /// use runsync::prelude::*;
    /// let mut rt = Runtime::builder().fixed_hz(60).build(World::new());
    /// assert_eq!(rt.advance(Duration::from_secs(1) / 30).frames, 2);
    /// for _ in 0..598 {
    ///     let _ = rt.advance(Duration::from_secs(1) / 60); // 16,666,666 ns each
    /// }
    /// assert_eq!(rt.frame_count(), 600);
    /// assert_eq!(rt.world().resource::<Time>().dt, 1.0 / 60.0);
    /// ```
    ///
    /// Exactly what holds: elapsed times are whole nanoseconds, steps need not be, so
    /// time is counted in units of `1 / hz` ns (a step is 10⁹ units) and nothing is
    /// rounded as it accumulates. Then:
    /// - an elapsed time less than 1 ns from a whole number of steps counts as exactly
    ///   that many steps: a frame time rounded to the nanosecond either way
    ///   (`Duration::from_secs(1) / 60`, `Duration::from_secs_f64(1.0 / 60.0)`) is one
    ///   step, however many are added up;
    /// - a step is paid once less than 1 ns of it is missing (taken from the next step,
    ///   never lost): elapsed times adding up to `N / hz` s rounded to the nanosecond
    ///   either way run `N` frames, e.g. 10 ms then 23,333,333 ns at 60 Hz run 2;
    /// - other times count to the nanosecond, as a clock measures them. Differences of one
    ///   [`Instant`] add up exactly; adding up durations that were each rounded and are
    ///   not whole steps (1/120 s per call at 60 Hz) can lose up to 1 ns per call.
    ///
    /// # Panics
    /// If `hz` is 0.
    #[track_caller]
    pub fn fixed_hz(mut self, hz: u32) -> Self {
        assert!(
            hz > 0,
            "runsync: fixed_hz needs at least one frame per second"
        );
        self.step = Step::Hz(hz);
        self
    }

    /// The fixed time step in seconds, published as [`Time::dt`]. For a rate, prefer
    /// [`fixed_hz`](Self::fixed_hz): the step that [`Runtime::advance`] counts is `dt`
    /// rounded to the nanosecond (`Duration::from_secs_f32(dt)`), so `dt(1.0 / 60.0)` is
    /// 16,666,668 ns, 80 ppb slower than 60 Hz: `advance` of 1/30 s runs one frame, with
    /// `alpha` 0.9999998. Steps that are whole nanoseconds as `f32` (`1.0 / 64.0`) are
    /// exact.
    ///
    /// # Panics
    /// If `dt` is not finite or is negative.
    #[track_caller]
    pub fn dt(mut self, dt: f32) -> Self {
        assert!(
            dt.is_finite() && dt >= 0.0,
            "runsync: dt must be a finite, non-negative number of seconds, got {dt}"
        );
        self.step = Step::Dt(dt);
        self
    }

    /// The most frames one [`Runtime::advance`] runs to catch up with real time (default
    /// 5). Beyond it the excess time is dropped (reported in [`Advance::dropped`]): the
    /// game slows down instead of spending ever longer frames catching up (the "spiral of
    /// death").
    ///
    /// # Panics
    /// If `frames` is 0.
    #[track_caller]
    pub fn max_catch_up(mut self, frames: u32) -> Self {
        assert!(
            frames > 0,
            "runsync: max_catch_up must allow at least one frame"
        );
        self.max_catch_up = frames;
        self
    }

    /// The frame's stages, by name, in the order they run (the default is one stage,
    /// `"main"`): each stage is a Run of its systems, all in parallel, then a Sync, and
    /// the next stage's systems see the world that Sync left. Systems go to the first
    /// stage unless added with [`Runtime::add_system_to`]; [`Runtime::add_stage`] adds a
    /// stage later. See [`Runtime::add_stage`] for what stages cost and mean.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// let mut rt = Runtime::builder().stages(["input", "physics"]).build(World::new());
    /// let physics = rt.stage_id("physics").unwrap();
    /// assert_eq!((physics.index(), rt.stage_count()), (1, 2));
    /// rt.add_system_to(physics, |_: &World, _: &mut Output| {});
    /// ```
    ///
    /// # Panics
    /// If `names` is empty, or names a stage twice.
    #[track_caller]
    pub fn stages<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Cow<'static, str>>,
    {
        let names: Vec<Cow<'static, str>> = names.into_iter().map(Into::into).collect();
        assert!(
            !names.is_empty(),
            "runsync: a frame needs at least one stage; leave `stages` out for the one \
             default stage"
        );
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                duplicate_stage(n);
            }
        }
        self.stages = names;
        self
    }

    /// With `tracy`: names this runtime's Tracy plots after `label` (`runsync entities
    /// [shard 1]`, ...) — for a program that runs several runtimes at once, whose values
    /// would otherwise alternate in one plot. Nothing without `tracy`.
    pub fn tracy_label(mut self, label: impl Into<String>) -> Self {
        self.profile.label(label.into());
        self
    }

    /// With `tracy`: whether this runtime marks the end of each frame on Tracy's timeline
    /// (default `true`). A program that runs several runtimes at once turns it off on all
    /// but one, or on all and marks its frames itself, so Tracy sees one frame mark per
    /// frame. Nothing without `tracy`.
    pub fn tracy_frame_marks(mut self, on: bool) -> Self {
        self.profile.frame_marks(on);
        self
    }

    /// Builds the runtime around `world`, starting its worker threads.
    pub fn build(self, mut world: World) -> Runtime {
        let frame = world.get_resource::<Time>().map_or(0, |t| t.frame);
        let dt = self.step.dt();
        world.insert_resource(Time { dt, frame });
        let mut rt = Runtime {
            world,
            pool: Pool::new(self.workers),
            systems: Vec::new(),
            places: Vec::new(),
            stages: Vec::new(),
            stats: FrameStats::default(),
            advance_stats: AdvanceStats::default(),
            profile: crate::profile::RuntimeProfile::new(&self.profile),
            dt,
            frame,
            clock: self.step.clock(self.max_catch_up),
            sync_scratch: Default::default(),
            watches: Watches::default(),
            recorder: None,
        };
        for name in self.stages {
            rt.add_stage(name);
        }
        rt
    }
}

#[cold]
#[track_caller]
fn duplicate_stage(name: &str) -> ! {
    panic!("runsync: there is already a stage named `{name}`; give each stage its own name")
}

/// One stage of the frame: a name, and where its systems end in [`Runtime::systems`]
/// (they start where the previous stage's end).
struct Stage {
    name: Arc<str>,
    /// One past the place of its last system.
    end: usize,
    /// Its Tracy zone's location, made once (nothing without `tracy`).
    zone: crate::profile::ZoneSite,
}

/// A [`Runtime`]'s saved state: a world [`Snapshot`], the frame counter and [`Time`]; see
/// [`Runtime::snapshot`] (an example) and [`Runtime::snapshot_into`] (a reused ring).
///
/// ```
/// use runsync::prelude::*;
/// use runsync::RuntimeSnapshot;
/// let mut rt = Runtime::builder().workers(1).build(World::new());
/// let mut ring: Vec<RuntimeSnapshot> = (0..3).map(|_| RuntimeSnapshot::new()).collect();
/// for f in 0..6 {
///     rt.snapshot_into(&mut ring[f % 3]).unwrap(); // the state before frame f
///     rt.frame();
/// }
/// rt.restore(&ring[4 % 3]);
/// assert_eq!((rt.frame_count(), ring[4 % 3].frame()), (4, 4));
/// ```
#[derive(Debug, Default)]
pub struct RuntimeSnapshot {
    world: Snapshot,
    frame: u64,
    time: Option<Time>,
}

impl RuntimeSnapshot {
    /// An empty snapshot, to be filled by [`Runtime::snapshot_into`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of frames completed when it was taken ([`Runtime::frame_count`]).
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// The world part.
    pub fn world(&self) -> &Snapshot {
        &self.world
    }
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
    systems: Vec<SystemSlot>,
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
    /// A builder with the defaults: one worker per core, exactly 60 Hz
    /// ([`fixed_hz(60)`](RuntimeBuilder::fixed_hz), [`Time::dt`] `= 1.0 / 60.0`), at most
    /// 5 catch-up frames per [`advance`](Self::advance).
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            workers: 0,
            step: Step::Hz(60),
            max_catch_up: 5,
            stages: vec![Cow::Borrowed(DEFAULT_STAGE)],
            profile: Default::default(),
        }
    }

    /// Adds a system to the first stage, named by [`System::name`] — a closure by its
    /// call site (`game.rs:42`). Systems run in parallel; their registration order decides
    /// the order of their outputs in every merge.
    #[track_caller]
    pub fn add_system<S: System>(&mut self, system: S) -> SystemId {
        self.add_system_to(StageId::FIRST, system)
    }

    /// Adds a system to the first stage under `name` (shown in stats and errors) — handy
    /// for closures.
    #[track_caller]
    pub fn add_system_named<S: System>(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        system: S,
    ) -> SystemId {
        self.add_system_named_to(StageId::FIRST, name, system)
    }

    /// [`add_system`](Self::add_system) to stage `stage` (see
    /// [`add_stage`](Self::add_stage)): the system runs in that stage's Run, in parallel
    /// with the stage's other systems, and sees the world the previous stage's Sync left.
    ///
    /// # Panics
    /// If `stage` is not a stage of this runtime.
    #[track_caller]
    pub fn add_system_to<S: System>(&mut self, stage: StageId, system: S) -> SystemId {
        let name = system.name_at(std::panic::Location::caller());
        self.add_system_named_to(stage, name, system)
    }

    /// [`add_system_named`](Self::add_system_named) to stage `stage`.
    ///
    /// # Panics
    /// If `stage` is not a stage of this runtime.
    #[track_caller]
    pub fn add_system_named_to<S: System>(
        &mut self,
        stage: StageId,
        name: impl Into<Cow<'static, str>>,
        system: S,
    ) -> SystemId {
        let k = self.stage_index(stage);
        let id = SystemId(self.places.len() as u32);
        let name: Arc<str> = Arc::from(name.into().as_ref());
        self.stats.systems.push(SystemStats {
            id,
            name: name.clone(),
            stage,
            ran: false,
            time: Duration::ZERO,
            work: Duration::ZERO,
            span: Duration::ZERO,
            writes: 0,
            commands: 0,
        });
        // The system goes after the others of its stage: later stages' systems move up a
        // place.
        let place = self.stages[k].end;
        self.systems.insert(
            place,
            SystemSlot {
                id,
                stage,
                system: Box::new(system),
                name,
                enabled: true,
                ran: false,
                time: Duration::ZERO,
                writes: 0,
                cost: Cost::default(),
                out: SystemOutputs::default(),
                // Tracy's "go to source" opens where the user added the system.
                zone: crate::profile::ZoneSite::at(std::panic::Location::caller()),
            },
        );
        for s in &mut self.stages[k..] {
            s.end += 1;
        }
        for p in &mut self.places {
            if *p as usize >= place {
                *p += 1;
            }
        }
        self.places.push(place as u32);
        id
    }

    /// Adds a stage at the end of the frame, named `name`, and returns it.
    ///
    /// A frame runs its stages in order, each a **Run** of its enabled systems — all at
    /// once, in parallel, with no order among them, as a frame always does — then a
    /// **Sync** of their outputs (merges, then structural commands, then hooks). The next
    /// stage's systems see the world that Sync left: what stage 1 writes, stage 2 reads in
    /// the same frame. Use a stage where a chain "input → movement → collision response"
    /// would otherwise cost a frame of latency per hop; systems with no such dependency
    /// belong in the same stage, where they run together.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// #[derive(Clone, Copy, Debug, PartialEq)] struct Pos(f32);
    /// impl Component for Pos { type Output = f32; }
    /// #[derive(Clone, Copy, Debug, PartialEq)] struct Seen(f32);
    /// impl Component for Seen { type Output = Seen; }
    ///
    /// let mut world = World::new();
    /// world.register::<Pos>(|p: &mut Pos, d: &[f32]| p.0 += d.iter().sum::<f32>());
    /// world.register::<Seen>(merge::last);
    /// let e = world.spawn((Pos(0.0), Seen(-1.0)));
    /// let mut rt = Runtime::builder().workers(2).build(world);
    /// let react = rt.add_stage("react");
    /// rt.add_system(move |_: &World, out: &mut Output| out.write::<Pos>(e, 1.0));
    /// rt.add_system_to(react, move |w: &World, out: &mut Output| {
    ///     out.write::<Seen>(e, Seen(w.get::<Pos>(e).unwrap().0)); // stage 0's write, this frame
    /// });
    /// rt.frame();
    /// assert_eq!(rt.world().get::<Seen>(e), Some(&Seen(1.0)));
    /// assert_eq!(rt.stats().stages[react.index()].merged, 1);
    /// ```
    ///
    /// What holds across stages:
    /// - **Merge order** is per stage: a stage's Sync merges its systems' outputs in their
    ///   registration order. Two stages writing one component merge twice a frame.
    /// - **Spawns** made in a stage are alive (and queryable) in the next stage's Run;
    ///   `Output::spawn` ids are reserved per stage, deterministically.
    /// - **Messages and changes: every system sees each exactly once**, the first time it
    ///   runs after the Sync that delivered or made it, whichever stage sent or wrote it
    ///   and whichever reads. A system in stage `k` sees what stages `k..` did in the last
    ///   frame and what stages `..k` did in this one. So
    ///   [`World::messages`](crate::World::messages) holds what the last `S` Syncs
    ///   delivered (oldest first), and [`Changed`](crate::Changed) /
    ///   [`Added`](crate::Added) report what the last `S` Syncs did (between frames: the
    ///   whole last frame): each stage's Sync forgets what its own previous Sync
    ///   delivered and marked. A stage with no enabled system still takes that turn; a
    ///   stage that never has a system changes nothing. A disabled system misses what was
    ///   delivered and forgotten while it was disabled.
    /// - **Failures** stop the frame at the stage that failed: the later stages do not
    ///   run. Only a system panic in the *first* stage leaves the world unchanged and the
    ///   frame uncounted; once a stage has synced, its changes stay (see [`FrameError`]).
    /// - [`set_enabled`](Self::set_enabled), [`watch`](Self::watch) (provenance records
    ///   each stage's Sync, with its stage), [`snapshot`](Self::snapshot) and
    ///   [`restore`](Self::restore) work as with one stage: they act between frames,
    ///   never between the stages of a frame.
    /// - [`stats`](Self::stats) has per-stage figures in
    ///   [`FrameStats::stages`](crate::FrameStats::stages); with Tracy, each stage is a
    ///   zone named by the stage around its Run and Sync (with one stage, no such zone).
    ///
    /// Cost: a stage is a Run and a Sync, so each one added costs about what a frame with
    /// only its systems costs (the fixed part: waking the workers twice, reserving spawn
    /// ids, Sync's steps). With several stages, change marks are set twice (per stage and
    /// in their union) and messages drain a range rather than swap a vector (see
    /// [`Changed`](crate::Changed)). A runtime with one stage pays nothing for the
    /// feature.
    ///
    /// # Panics
    /// If a stage is already named `name`.
    #[track_caller]
    pub fn add_stage(&mut self, name: impl Into<Cow<'static, str>>) -> StageId {
        let name = name.into();
        if self.stage_id(&name).is_some() {
            duplicate_stage(&name);
        }
        let id = StageId(self.stages.len() as u32);
        let name: Arc<str> = Arc::from(name.as_ref());
        self.stats.stages.push(StageStats::new(id, name.clone()));
        self.stages.push(Stage {
            name,
            end: self.systems.len(),
            zone: Default::default(),
        });
        id
    }

    /// The stage named `name`, if any.
    pub fn stage_id(&self, name: &str) -> Option<StageId> {
        self.stages
            .iter()
            .position(|s| &*s.name == name)
            .map(|k| StageId(k as u32))
    }

    /// The name of a stage.
    ///
    /// # Panics
    /// If `stage` is not a stage of this runtime.
    #[track_caller]
    pub fn stage_name(&self, stage: StageId) -> &str {
        &self.stages[self.stage_index(stage)].name
    }

    /// Number of stages (at least one).
    pub fn stage_count(&self) -> usize {
        self.stages.len()
    }

    #[track_caller]
    fn stage_index(&self, stage: StageId) -> usize {
        let n = self.stages.len();
        if stage.index() >= n {
            panic!(
                "runsync: {stage:?} is not a stage of this runtime ({n} stages); add stages \
                 with `Runtime::add_stage` or `RuntimeBuilder::stages`"
            );
        }
        stage.index()
    }

    /// Enables or disables a system from the next frame on. A disabled system does not run
    /// and emits nothing; the others are unaffected.
    ///
    /// # Panics
    /// If `id` is not from this runtime.
    pub fn set_enabled(&mut self, id: SystemId, enabled: bool) {
        self.slot(id).enabled = enabled;
    }

    /// Whether a system is enabled.
    ///
    /// # Panics
    /// If `id` is not from this runtime.
    #[track_caller]
    pub fn is_enabled(&self, id: SystemId) -> bool {
        self.slot_ref(id).enabled
    }

    /// The name of a system.
    ///
    /// # Panics
    /// If `id` is not from this runtime.
    #[track_caller]
    pub fn system_name(&self, id: SystemId) -> &str {
        &self.slot_ref(id).name
    }

    /// The first system (in registration order) named `name`, if any: how to find a
    /// system added elsewhere (by a plugin, by a closure named by its call site) to
    /// [disable](Self::set_enabled) it or read its [`stats`](Self::stats). Names need not
    /// be unique; [`systems`](Self::systems) lists them all. Cost: a walk over the systems.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// let mut rt = Runtime::builder().workers(1).build(World::new());
    /// let ai = rt.add_system_named("ai", |_: &World, _: &mut Output| {});
    /// assert_eq!(rt.system_id("ai"), Some(ai));
    /// assert_eq!(rt.system_id("physics"), None);
    /// rt.set_enabled(rt.system_id("ai").unwrap(), false);
    /// let listed: Vec<_> = rt.systems().map(|s| (s.id, s.name, s.enabled)).collect();
    /// assert_eq!(listed, [(ai, "ai", false)]);
    /// ```
    pub fn system_id(&self, name: &str) -> Option<SystemId> {
        self.systems().find(|s| s.name == name).map(|s| s.id)
    }

    /// Every system, in registration order (the order of their ids), with its name and
    /// whether it is enabled. See [`system_id`](Self::system_id) for an example.
    pub fn systems(&self) -> impl ExactSizeIterator<Item = SystemInfo<'_>> + '_ {
        self.places.iter().map(|&p| {
            let s = &self.systems[p as usize];
            SystemInfo {
                id: s.id,
                name: &s.name,
                enabled: s.enabled,
                stage: s.stage,
            }
        })
    }

    /// Number of systems added, over all stages.
    pub fn system_count(&self) -> usize {
        self.systems.len()
    }

    /// Threads that run systems, counting the caller.
    pub fn workers(&self) -> usize {
        self.pool.threads()
    }

    /// The place of system `id` in `systems`.
    #[track_caller]
    fn place(&self, id: SystemId) -> usize {
        match self.places.get(id.index()) {
            Some(&p) => p as usize,
            None => panic!(
                "runsync: {id:?} is not a system of this runtime ({} systems)",
                self.places.len()
            ),
        }
    }

    #[track_caller]
    fn slot_ref(&self, id: SystemId) -> &SystemSlot {
        &self.systems[self.place(id)]
    }

    #[track_caller]
    fn slot(&mut self, id: SystemId) -> &mut SystemSlot {
        let p = self.place(id);
        &mut self.systems[p]
    }

    /// Runs one frame: Run, then Sync (for each stage, in order).
    ///
    /// # Panics
    /// If the frame fails (a system, a merge, a hook or a `Drop` panicked), with the
    /// message of the [`FrameError`] — the world stays usable. Use
    /// [`try_frame`](Self::try_frame) to handle failures without unwinding.
    #[track_caller]
    pub fn frame(&mut self) {
        if let Err(e) = self.try_frame() {
            panic!("runsync: {e}");
        }
    }

    /// Runs one frame with `input` as its input: sets the resource
    /// [`Input<I>`](crate::Input) (see [`World::set_input`]), which systems read with
    /// [`World::input`], then runs the frame as [`frame`](Self::frame). The input stays
    /// until the next one is set, and is part of snapshots: after a
    /// [`restore`](Self::restore), the world holds the input it held then.
    ///
    /// Rollback (GGRS-style) in a few lines: keep a snapshot before each frame, and when
    /// a confirmed input contradicts a prediction, restore frame k and run again:
    ///
    /// ```
    /// use runsync::prelude::*;
    /// use runsync::RuntimeSnapshot;
    /// #[derive(Component, Checksum, Clone, Copy, Debug, PartialEq)]
    /// #[component(output = i32, merge = merge::sum, snapshot, checksum)]
    /// struct X(i32);
    /// impl std::ops::AddAssign<i32> for X { fn add_assign(&mut self, d: i32) { self.0 += d } }
    ///
    /// let game = || {
    ///     let mut world = World::new();
    ///     world.register_default::<X>();
    ///     world.spawn((X(0),));
    ///     let mut rt = Runtime::builder().workers(2).build(world);
    ///     rt.add_system(|w: &World, out: &mut Output| {
    ///         let step = *w.input::<i32>();
    ///         for (e, _) in w.query::<(&X,)>() { out.write::<X>(e, step); }
    ///     });
    ///     rt
    /// };
    /// let confirmed = [1, 2, 3, 4, 5, 6];
    /// let mut rt = game();
    /// let mut ring: Vec<RuntimeSnapshot> = (0..6).map(|_| RuntimeSnapshot::new()).collect();
    /// for f in 0..6 {
    ///     rt.snapshot_into(&mut ring[f]).unwrap();   // the state before frame f
    ///     rt.frame_with(0);                           // predicted input
    /// }
    /// let k = 2;                                      // inputs of k.. arrive: roll back
    /// rt.restore(&ring[k]);
    /// for f in k..6 {
    ///     rt.snapshot_into(&mut ring[f]).unwrap();
    ///     rt.frame_with(confirmed[f]);
    /// }
    /// let mut truth = game();
    /// for f in 0..6 { truth.frame_with(if f < k { 0 } else { confirmed[f] }); }
    /// assert_eq!(rt.world().checksum(), truth.world().checksum());
    /// ```
    ///
    /// # Panics
    /// As [`frame`](Self::frame).
    #[track_caller]
    pub fn frame_with<I: Clone + Send + Sync + 'static>(&mut self, input: I) {
        if let Err(e) = self.try_frame_with(input) {
            panic!("runsync: {e}");
        }
    }

    /// [`frame_with`](Self::frame_with), reporting a failure instead of panicking (see
    /// [`try_frame`](Self::try_frame)). The input is set whether or not the frame fails.
    ///
    /// # Errors
    /// As [`try_frame`](Self::try_frame).
    pub fn try_frame_with<I: Clone + Send + Sync + 'static>(
        &mut self,
        input: I,
    ) -> Result<(), FrameError> {
        self.world.set_input(input);
        self.try_frame()
    }

    /// Runs one frame: Run, then Sync, stage by stage; reports a failure instead of
    /// panicking.
    ///
    /// If a system panics, every system's outputs for this frame are discarded and the world
    /// is left exactly as it was ([`FrameError::SystemPanicked`]); the pool and the world
    /// stay usable, so the next frame may run. With several [stages](Self::add_stage), that
    /// holds for a panic in the first stage; a failure in a later stage leaves the earlier
    /// stages' changes applied. The frame stops at the stage that failed. Other failures
    /// are described on [`FrameError`].
    pub fn try_frame(&mut self) -> Result<(), FrameError> {
        if self.recorder.is_none() {
            return self.run_frame();
        }
        self.record_input();
        let counted = self.frame;
        let result = self.run_frame();
        if self.frame != counted {
            self.record_frame();
        }
        result
    }

    /// One frame, Run then Sync ([`try_frame`](Self::try_frame) without recording).
    fn run_frame(&mut self) -> Result<(), FrameError> {
        let time = Time {
            dt: self.dt,
            frame: self.frame,
        };
        match self.world.get_resource_mut::<Time>() {
            Some(t) => *t = time,
            None => self.world.insert_resource(time),
        }
        // The number of this frame (from 1): what `frame_count()` says once it is done.
        self.stats.frame = self.frame + 1;
        self.watches.frame = self.frame + 1;
        crate::profile::name_frame_thread();
        let stats = &mut self.stats;
        stats.run = Duration::ZERO;
        stats.sync = Duration::ZERO;
        stats.work = Duration::ZERO;
        stats.span = Duration::ZERO;
        stats.merged = 0;
        stats.dropped = 0;
        stats.spawned = 0;
        stats.despawned = 0;
        stats.messages = 0;
        stats.cycles = 0;
        stats.first_cycle = None;

        let stages = self.stages.len();
        let zones = stages > 1;
        let mut start = 0;
        // Whether a stage has synced this frame yet: the first one to forgets the last
        // frame's provenance records.
        let mut first = true;
        for k in 0..stages {
            let stage = &mut self.stages[k];
            let end = stage.end;
            // A stage with no enabled system is skipped (no reservation, no Run, no Sync)
            // but takes its turn: it forgets the marks and messages its last Sync made
            // (none, for a stage that never has a system: adding an empty stage changes
            // nothing a system, a checksum or a save sees).
            if !self.systems[start..end].iter().any(|slot| slot.enabled) {
                for slot in &mut self.systems[start..end] {
                    slot.ran = false;
                    let st = &mut self.stats.systems[slot.id.index()];
                    (st.ran, st.time, st.writes, st.commands) = (false, Duration::ZERO, 0, 0);
                    (st.work, st.span) = (Duration::ZERO, Duration::ZERO);
                }
                self.stats.stages[k].reset();
                start = end;
                if let Some(message) =
                    crate::sync::sync_nothing(&mut self.world, StageId(k as u32), stages)
                {
                    let error = FrameError::DropPanicked {
                        message,
                        stage: StageId(k as u32),
                    };
                    self.skip_stages_after(k);
                    self.stats.entities = self.world.len();
                    if error.counts_as_done() {
                        self.count_frame();
                    }
                    return Err(self.frame_failed(error));
                }
                continue;
            }
            // A zone per stage, only if there are several (one stage: the frame's zones
            // as they always were).
            let _zone = zones.then(|| crate::profile::zone_named!(&mut stage.zone, stage.name));
            let result = self.stage(StageId(k as u32), start..end, first, stages);
            first = false;
            if let Err(error) = result {
                self.skip_stages_after(k);
                self.stats.entities = self.world.len();
                if error.counts_as_done() {
                    self.count_frame();
                }
                return Err(self.frame_failed(error));
            }
            start = end;
        }
        // Between frames too (checksums, snapshots, saves see the canonical layout).
        self.world.storage_mut().canonicalize();
        self.stats.entities = self.world.len();
        self.count_frame();
        self.profile_frame_end();
        Ok(())
    }

    /// One stage: the Run of the systems at `places`, then their Sync. Its figures go to
    /// the frame's stats, added to those of the stages before.
    fn stage(
        &mut self,
        stage: StageId,
        places: Range<usize>,
        first: bool,
        stages: usize,
    ) -> Result<(), FrameError> {
        // Canonical order (when on): tables and rows sorted before the Run reads them.
        self.world.storage_mut().canonicalize();
        // Ids for this stage's spawns made in Run, per system, in place order
        // (deterministic).
        self.world
            .storage_mut()
            .entities
            .reserve_for_stage(self.systems.len(), places.clone());
        let base = places.start;
        let systems = &mut self.systems[places];
        let run_start = Instant::now();
        let (run, run_cost) = Cost::measure(|| {
            let _zone = crate::profile::zone!("Run");
            crate::run::run(&self.world, systems, base, &self.pool)
        });
        let run_time = run_start.elapsed();
        for slot in systems.iter() {
            let st = &mut self.stats.systems[slot.id.index()];
            st.ran = slot.ran;
            let cost = if slot.ran { slot.cost } else { Cost::default() };
            st.time = if slot.ran { slot.time } else { Duration::ZERO };
            (st.work, st.span) = (cost.work_time(), cost.span_time());
            st.writes = if slot.ran { slot.writes } else { 0 };
            st.commands = slot.out.commands.len();
        }
        self.stats.run += run_time;
        self.stats.work += run_cost.work_time();
        self.stats.span += run_cost.span_time();
        let figures = &mut self.stats.stages[stage.index()];
        figures.reset();
        figures.ran = true;
        figures.run = run_time;

        if let Err(p) = run {
            crate::sync::discard(systems);
            // The reservations are world state (snapshots, checksums): take them back.
            self.world.storage_mut().entities.unreserve_frame();
            let slot = &systems[p.index];
            return Err(FrameError::SystemPanicked {
                system: slot.id,
                name: slot.name.clone(),
                message: p.message(),
                stage,
            });
        }

        let sync_start = Instant::now();
        let at = StageSync {
            stage,
            base,
            first,
            stages,
        };
        let (report, sync_cost) = Cost::measure(|| {
            let _zone = crate::profile::zone!("Sync");
            crate::sync::sync(
                &mut self.world,
                systems,
                at,
                &self.pool,
                &mut self.sync_scratch,
                &mut self.watches,
            )
        });
        let sync_time = sync_start.elapsed();
        let stats = &mut self.stats;
        stats.work += sync_cost.work_time();
        stats.span += sync_cost.span_time();
        let dropped = report.dropped + report.commands.dropped;
        let figures = &mut stats.stages[stage.index()];
        figures.sync = sync_time;
        figures.merged = report.merged;
        figures.dropped = dropped;
        figures.spawned = report.commands.spawned;
        figures.despawned = report.commands.despawned;
        stats.sync += sync_time;
        stats.merged += report.merged;
        stats.dropped += dropped;
        stats.spawned += report.commands.spawned;
        stats.despawned += report.commands.despawned;
        stats.messages += report.messages;
        stats.cycles += report.commands.cycles;
        if stats.first_cycle.is_none() {
            stats.first_cycle = report.commands.first_cycle;
        }
        if let Some((component, target, message)) = report.merge_panic {
            return Err(FrameError::MergePanicked {
                component,
                target,
                message,
                stage,
            });
        }
        if let Some((component, hook, message)) = report.hook_panic {
            return Err(FrameError::HookPanicked {
                component,
                hook,
                message,
                stage,
            });
        }
        if let Some(dropped) = report.commands.hook_cascade {
            return Err(FrameError::HookCascade { dropped, stage });
        }
        if let Some(message) = report.drop_panic {
            return Err(FrameError::DropPanicked { message, stage });
        }
        Ok(())
    }

    /// After stage `k` failed: the later stages and their systems did not run.
    fn skip_stages_after(&mut self, k: usize) {
        let from = self.stages[k].end;
        for slot in &self.systems[from..] {
            let st = &mut self.stats.systems[slot.id.index()];
            st.ran = false;
            st.time = Duration::ZERO;
            (st.work, st.span) = (Duration::ZERO, Duration::ZERO);
            st.writes = 0;
            st.commands = 0;
        }
        for figures in &mut self.stats.stages[k + 1..] {
            figures.reset();
        }
    }

    /// The frame counts as done: the counter and [`Time::frame`] advance.
    fn count_frame(&mut self) {
        self.frame += 1;
        if let Some(t) = self.world.get_resource_mut::<Time>() {
            t.frame = self.frame;
        }
    }

    /// Ends a failed frame: a Tracy message saying why (with `tracy`), then the frame's
    /// plots and mark, so the failure sits in its frame on the timeline.
    #[cold]
    fn frame_failed(&self, error: FrameError) -> FrameError {
        crate::profile::message(format_args!(
            "runsync: frame {} failed: {error}",
            self.stats.frame
        ));
        self.profile_frame_end();
        error
    }

    /// The world as the last Sync left it.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The world, for direct edits between frames (setup, loading, tools).
    pub fn world_mut(&mut self) -> &mut World {
        &mut self.world
    }

    /// Figures of the last frame.
    pub fn stats(&self) -> &FrameStats {
        &self.stats
    }

    /// Figures of every frame the last [`advance`](Self::advance) call ran (or
    /// [`try_advance`](Self::try_advance), [`advance_with`](Self::advance_with),
    /// [`try_advance_with`](Self::try_advance_with)): totals over the call and the
    /// slowest frame, and per system its totals and maxima — where [`stats`](Self::stats)
    /// describes only the call's last frame. Left as it was by a call that runs no frame
    /// and by [`frame`](Self::frame).
    ///
    /// ```
    /// use std::time::Duration;
    /// use runsync::prelude::*;
    ///
    /// let mut rt = Runtime::builder().fixed_hz(60).workers(1).build(World::new());
    /// rt.add_system_named("spawner", |_: &World, out: &mut Output| {
    ///     out.spawn(());
    /// });
    /// let step = rt.advance(Duration::from_millis(50)); // three 60 Hz frames
    /// let call = rt.advance_stats();
    /// assert_eq!((step.frames, call.frames, call.first), (3, 3, 1));
    /// assert_eq!(call.spawned, 3);                // rt.stats().spawned is the last frame's: 1
    /// assert_eq!(call.systems[0].runs, 3);
    /// assert_eq!(call.systems[0].commands, 3);
    /// assert!(call.max_frame <= call.run + call.sync);
    /// ```
    pub fn advance_stats(&self) -> &AdvanceStats {
        &self.advance_stats
    }

    /// Memory held by the world and the output buffers. Walks every column and buffer:
    /// cheap, but not free — call it for diagnostics, not every frame.
    pub fn memory(&self) -> MemoryStats {
        let (tables, entity_slots, component_bytes, fold_bytes) = self.world.memory();
        MemoryStats {
            tables,
            entity_slots,
            component_bytes,
            output_bytes: self
                .systems
                .iter()
                .map(|s| s.out.capacity_bytes())
                .sum::<usize>()
                + fold_bytes,
        }
    }

    /// Frames completed so far: the number of the last frame completed (frames count from
    /// 1; 0 before the first). Equal to [`Time::frame`] and, after a frame that counts, to
    /// [`stats().frame`](FrameStats::frame); see [frame numbers](Time#frame-numbers).
    /// A frame counts once it is completed, or fails in any way but
    /// [`FrameError::SystemPanicked`] in its first stage ([`FrameError::counts_as_done`]).
    pub fn frame_count(&self) -> u64 {
        self.frame
    }

    /// Runs as many fixed-step frames as `elapsed` real time (plus what was left over from
    /// earlier calls) pays for, at most [`max_catch_up`](RuntimeBuilder::max_catch_up), and
    /// says how far real time is past the last frame: the game loop's hard part.
    ///
    /// A game calls it once per rendered frame with the time since the previous call, then
    /// draws its entities interpolated by [`Advance::alpha`] between their previous and
    /// current positions. The simulation stays fixed-step (and so deterministic: the same
    /// elapsed times give the same frames) whatever the display rate. Afterwards
    /// [`stats`](Self::stats) describes the call's last frame, and
    /// [`advance_stats`](Self::advance_stats) all of them (totals, and maxima per system).
    ///
    /// ```
    /// use std::time::Duration;
    /// use runsync::prelude::*;
    ///
    /// let mut rt = Runtime::builder().fixed_hz(60).build(World::new());
    /// // A game loop, with a fake clock: three display frames of 25 ms.
    /// let mut simulated = 0;
    /// for _ in 0..3 {
    ///     let elapsed = Duration::from_millis(25); // really: now - last, from `Instant`
    ///     let step = rt.advance(elapsed);
    ///     simulated += step.frames;
    ///     // render(world, step.alpha): positions lerped by `alpha` between frames
    ///     assert!((0.0..1.0).contains(&step.alpha));
    /// }
    /// assert_eq!(simulated, 4); // 75 ms of 16.7 ms steps: 4 frames, 8.3 ms left over
    /// assert_eq!(rt.frame_count(), 4);
    /// ```
    ///
    /// # Panics
    /// If a frame fails, with the [`FrameError`]'s message (see [`frame`](Self::frame)),
    /// after leaving the world and the accumulated time as
    /// [`try_advance`](Self::try_advance) describes (use it to handle failures without
    /// unwinding); or if the fixed step is zero (`dt(0.0)`).
    #[track_caller]
    pub fn advance(&mut self, elapsed: Duration) -> Advance {
        match self.try_advance(elapsed) {
            Ok(a) => a,
            Err(e) => panic!("runsync: {e}"),
        }
    }

    /// [`advance`](Self::advance), reporting a failed frame instead of panicking.
    ///
    /// # Errors
    /// The first failed frame's [`FrameError`]; the call stops there. It leaves:
    /// - the frames before it run, and their time charged;
    /// - the failed frame's step charged exactly once if the frame counts as done
    ///   ([`FrameError::counts_as_done`]: every failure but a
    ///   [`FrameError::SystemPanicked`] in the first stage; the frame counter advanced,
    ///   the world holds what the error describes), so no later call simulates that time
    ///   again;
    /// - after a [`FrameError::SystemPanicked`] in the first stage, nothing charged for
    ///   that frame: the world and the frame counter are as before it, and the next call
    ///   runs it again;
    /// - the time of the frames after it accumulated, for the next call to run (up to
    ///   [`max_catch_up`](RuntimeBuilder::max_catch_up) per call, as always);
    /// - time beyond the catch-up cap dropped as in a call that succeeds, unreported
    ///   (there is no [`Advance`] to report it in).
    ///
    /// # Panics
    /// If the fixed step is zero (`dt(0.0)`).
    #[track_caller]
    pub fn try_advance(&mut self, elapsed: Duration) -> Result<Advance, FrameError> {
        self.advance_inner(elapsed, |_, _| {})
    }

    /// [`advance`](Self::advance) with one input per simulated frame: before each frame it
    /// runs, `input(frame)` gives that frame's input (`frame` is its index, as
    /// [`frame_count`](Self::frame_count) before it), set as by
    /// [`frame_with`](Self::frame_with). Called exactly once per frame run, in order; a
    /// frame that is re-run after [`FrameError::SystemPanicked`] asks again.
    ///
    /// ```
    /// use std::time::Duration;
    /// use runsync::prelude::*;
    /// #[derive(Clone, Copy, Debug, PartialEq)]
    /// struct Pad(u64);
    ///
    /// let mut rt = Runtime::builder().fixed_hz(60).workers(1).build(World::new());
    /// let mut asked = Vec::new();
    /// let step = rt.advance_with(Duration::from_secs(1) / 20, |frame| {
    ///     asked.push(frame);
    ///     Pad(frame * 10) // e.g. `input_queue.pop_front()`, or the frame's recorded input
    /// });
    /// assert_eq!((step.frames, asked), (3, vec![0, 1, 2]));
    /// assert_eq!(rt.world().input::<Pad>(), &Pad(20));
    /// ```
    ///
    /// # Panics
    /// As [`advance`](Self::advance).
    #[track_caller]
    pub fn advance_with<I: Clone + Send + Sync + 'static>(
        &mut self,
        elapsed: Duration,
        input: impl FnMut(u64) -> I,
    ) -> Advance {
        match self.try_advance_with(elapsed, input) {
            Ok(a) => a,
            Err(e) => panic!("runsync: {e}"),
        }
    }

    /// [`advance_with`](Self::advance_with), reporting a failed frame instead of
    /// panicking, as [`try_advance`](Self::try_advance) does.
    ///
    /// # Errors
    /// As [`try_advance`](Self::try_advance).
    ///
    /// # Panics
    /// If the fixed step is zero (`dt(0.0)`).
    #[track_caller]
    pub fn try_advance_with<I: Clone + Send + Sync + 'static>(
        &mut self,
        elapsed: Duration,
        mut input: impl FnMut(u64) -> I,
    ) -> Result<Advance, FrameError> {
        self.advance_inner(elapsed, |world, frame| world.set_input(input(frame)))
    }

    /// The loop of [`try_advance`](Self::try_advance): `before(world, frame)` runs before
    /// each frame.
    #[track_caller]
    fn advance_inner(
        &mut self,
        elapsed: Duration,
        mut before: impl FnMut(&mut World, u64),
    ) -> Result<Advance, FrameError> {
        let (due, dropped) = self.clock.add(elapsed);
        if due > 0 {
            self.advance_stats.reset();
        }
        for _ in 0..due {
            let counted = self.frame;
            before(&mut self.world, self.frame);
            let result = self.try_frame();
            self.advance_stats.add(&self.stats, result.is_err());
            // A frame that counts as done (the counter moved: every failure but a
            // system's panic) has simulated its step, failed or not: charge it once.
            if self.frame != counted {
                self.clock.ran();
            }
            result?;
        }
        Ok(Advance {
            frames: due,
            alpha: self.clock.alpha(),
            dropped,
        })
    }

    /// A copy of the world ([`World::snapshot`]) plus the frame counter and the [`Time`]
    /// resource: [`restore`](Self::restore) makes the runtime continue exactly as it did
    /// from this frame.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// #[derive(Clone, Copy, Debug, PartialEq)]
    /// struct Hp(i32);
    /// impl Component for Hp { type Output = i32; }
    ///
    /// let mut world = World::new();
    /// world.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    /// world.snapshotting::<Hp>();
    /// let e = world.spawn((Hp(100),));
    /// let mut rt = Runtime::builder().workers(1).build(world);
    /// rt.add_system(move |_: &World, out: &mut Output| out.write::<Hp>(e, -1));
    /// rt.frame();
    /// let saved = rt.snapshot().unwrap();   // after frame 1
    /// rt.frame();
    /// rt.frame();
    /// rt.restore(&saved);
    /// assert_eq!(rt.frame_count(), 1);
    /// assert_eq!(rt.world().resource::<Time>().frame, 1);
    /// assert_eq!(rt.world().get::<Hp>(e), Some(&Hp(99)));
    /// ```
    ///
    /// # Errors
    /// As [`World::snapshot`]: a component type not opted in with
    /// [`World::snapshotting`].
    pub fn snapshot(&self) -> Result<RuntimeSnapshot, SnapshotError> {
        let mut s = RuntimeSnapshot::default();
        self.snapshot_into(&mut s)?;
        Ok(s)
    }

    /// [`snapshot`](Self::snapshot) into an existing one, reusing its memory (see
    /// [`World::snapshot_into`]).
    ///
    /// # Errors
    /// As [`World::snapshot`].
    pub fn snapshot_into(&self, into: &mut RuntimeSnapshot) -> Result<(), SnapshotError> {
        self.world.snapshot_into(&mut into.world)?;
        into.frame = self.frame;
        into.time = self.world.get_resource::<Time>().copied();
        Ok(())
    }

    /// Brings back a [`snapshot`](Self::snapshot): the world ([`World::restore`]), the
    /// frame counter and [`Time`]. Systems, their enabled flags and their own state are
    /// not touched; output buffers are empty between frames. The next [`frame`](Self::frame)
    /// is the one after the snapshot's.
    ///
    /// # Panics
    /// As [`World::restore`]; the runtime is then left as it was.
    #[track_caller]
    pub fn restore(&mut self, snapshot: &RuntimeSnapshot) {
        if let Err(e) = self.try_restore(snapshot) {
            panic!("{e}");
        }
    }

    /// [`restore`](Self::restore), reporting a snapshot that cannot be restored here
    /// instead of panicking.
    ///
    /// # Errors
    /// As [`World::try_restore`]: the world, the frame counter and [`Time`] are then left
    /// as they were.
    pub fn try_restore(&mut self, snapshot: &RuntimeSnapshot) -> Result<(), SnapshotError> {
        self.world.try_restore(&snapshot.world)?;
        self.frame = snapshot.frame;
        match (snapshot.time, self.world.get_resource_mut::<Time>()) {
            (Some(t), Some(now)) => *now = t,
            (Some(t), None) => self.world.insert_resource(t),
            (None, _) => {
                self.world.remove_resource::<Time>();
            }
        }
        Ok(())
    }

    /// Writes a save file ([`World::save`]) that also holds the frame counter and
    /// [`Time`]: [`load`](Self::load) makes a runtime with the same systems continue
    /// exactly as this one does from here.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// #[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    /// #[component(output = i32, merge = merge::sum, save, checksum)]
    /// struct Hp(i32);
    /// impl std::ops::AddAssign<i32> for Hp { fn add_assign(&mut self, d: i32) { self.0 += d } }
    ///
    /// let game = || {
    ///     let mut world = World::new();
    ///     world.register_default::<Hp>();
    ///     let mut rt = Runtime::builder().workers(2).build(world);
    ///     rt.add_system(|w: &World, out: &mut Output| {
    ///         for (e, _) in w.query::<(&Hp,)>() { out.write::<Hp>(e, -1); }
    ///     });
    ///     rt
    /// };
    /// let mut rt = game();
    /// rt.world_mut().spawn((Hp(100),));
    /// rt.frame();
    /// let mut file = Vec::new();
    /// rt.save(&mut file).unwrap();
    /// rt.frame();
    ///
    /// let mut other = game();
    /// other.load(&mut file.as_slice()).unwrap();
    /// assert_eq!(other.frame_count(), 1);
    /// other.frame();
    /// assert_eq!(other.world().checksum(), rt.world().checksum());
    /// ```
    ///
    /// # Errors
    /// As [`World::save`].
    pub fn save(&self, w: &mut impl std::io::Write) -> Result<(), SaveError> {
        self.write_save(w)
    }

    /// Loads a save made by [`save`](Self::save): the world ([`World::load`]), the frame
    /// counter and [`Time`]. Systems, their enabled flags and their own state are not
    /// touched (as [`restore`](Self::restore)).
    ///
    /// # Errors
    /// As [`World::load`], and [`LoadError::NotARuntimeSave`] for a save made by
    /// [`World::save`]. The runtime is then as it was.
    pub fn load(&mut self, r: &mut impl std::io::Read) -> Result<(), LoadError> {
        let mut src = Source::new(r);
        self.read_save(&mut src)?;
        src.finish()
    }

    /// Writes a runtime save to `w`.
    fn write_save(&self, w: &mut dyn std::io::Write) -> Result<(), SaveError> {
        let mut part = Vec::with_capacity(21);
        part.put_u64(self.frame);
        let time = self.world.get_resource::<Time>();
        part.put_u8(u8::from(time.is_some()));
        let t = time.copied().unwrap_or(Time { dt: 0.0, frame: 0 });
        part.put_u32(t.dt.to_bits());
        part.put_u64(t.frame);
        let mut out = Sink::new(w);
        self.world.write_save(&mut out, Some(&part))?;
        out.finish()
    }

    /// Reads a runtime save from `r` (which may go on after it) and applies it.
    fn read_save(&mut self, r: &mut Source<'_>) -> Result<(), LoadError> {
        let parsed = self.world.parse_save_from(r)?;
        let runtime = parsed
            .runtime
            .as_deref()
            .ok_or(LoadError::NotARuntimeSave)?;
        let mut part = Reader::new(runtime);
        let frame = part.u64("the frame counter")?;
        let has_time = part.u8("the time")?;
        let dt = f32::from_bits(part.u32("the time")?);
        let time_frame = part.u64("the time")?;
        part.finish()?;
        self.world.apply_save(parsed);
        self.frame = frame;
        match has_time {
            0 => {
                self.world.remove_resource::<Time>();
            }
            _ => self.world.insert_resource(Time {
                dt,
                frame: time_frame,
            }),
        }
        Ok(())
    }

    /// Starts recording a replay ([`Replay`]): a save of the runtime now, then, for every
    /// frame run, its input (the [`Input<I>`](crate::Input) resource as the frame starts,
    /// set by [`frame_with`](Self::frame_with) or [`advance_with`](Self::advance_with);
    /// or its absence) and the world's [`checksum`](World::checksum) after it, with a
    /// keyframe (a save) every 60 frames; [`finish_replay`](Self::finish_replay) writes
    /// it. Use [`record_replay_keyframes`](Self::record_replay_keyframes) to choose the
    /// keyframe interval. Systems' own state is not saved: start recording where it is at
    /// its initial value (before the first frame), or keep it in the world. With several
    /// [stages](Self::add_stage), start before the first frame too: a save holds the
    /// change marks and messages but not which stage's Sync made each, so a replay started
    /// mid-run, of systems that read [`Changed`](crate::Changed) /
    /// [`Added`](crate::Added) or messages, can diverge at its first frame (see
    /// [`World::saving_message`](crate::World::saving_message)).
    ///
    /// Cost while recording: a checksum per frame, the input's encoding, and a save per
    /// keyframe. Nothing when not recording.
    ///
    /// # Errors
    /// As [`save`](Self::save): every type and written resource must be opted into saves.
    pub fn record_replay<I>(&mut self) -> Result<(), SaveError>
    where
        I: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    {
        self.record_replay_keyframes::<I>(60)
    }

    /// [`record_replay`](Self::record_replay) with a keyframe every `every` frames (0:
    /// none). Keyframes let [`play_replay`](Self::play_replay) show the values that
    /// differ: with `every == 1` they are those right after the diverging frame.
    ///
    /// # Errors
    /// As [`record_replay`](Self::record_replay).
    pub fn record_replay_keyframes<I>(&mut self, every: u64) -> Result<(), SaveError>
    where
        I: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    {
        let mut start = Vec::new();
        self.write_save(&mut start)?;
        self.recorder = Some(Box::new(Recorder {
            replay: Replay {
                input_type: std::any::type_name::<I>().to_owned(),
                start,
                frames: Vec::new(),
                keyframes: Vec::new(),
            },
            encode: |res, out| match res.get::<crate::input::Input<I>>() {
                None => Ok(false),
                Some(i) => {
                    crate::savefile::encode_values(std::slice::from_ref(&i.0), out).map(|()| true)
                }
            },
            keyframe_every: every,
            pending: None,
            error: None,
        }));
        Ok(())
    }

    /// Stops recording and writes the replay to `w` (read it with [`Replay::read`]).
    ///
    /// # Errors
    /// [`SaveError::NotRecording`] if no replay is being recorded; the first error of a
    /// keyframe or input that could not be encoded; [`SaveError::Io`].
    pub fn finish_replay(&mut self, w: &mut impl std::io::Write) -> Result<(), SaveError> {
        let rec = self.recorder.take().ok_or(SaveError::NotRecording)?;
        if let Some(e) = rec.error {
            return Err(e);
        }
        rec.replay.write(w)
    }

    /// Whether a replay is being recorded.
    pub fn is_recording(&self) -> bool {
        self.recorder.is_some()
    }

    /// Before a recorded frame: its input.
    fn record_input(&mut self) {
        let Some(rec) = &mut self.recorder else {
            return;
        };
        let mut bytes = Vec::new();
        rec.pending = match (rec.encode)(self.world.resources(), &mut bytes) {
            Ok(true) => Some(bytes),
            Ok(false) => None,
            Err(message) => {
                rec.error.get_or_insert(SaveError::Encode {
                    type_name: "the input",
                    message,
                });
                None
            }
        };
    }

    /// After a recorded frame that counts as done: its input, checksum and keyframe.
    fn record_frame(&mut self) {
        let checksum = self.world.checksum();
        let Some(rec) = &mut self.recorder else {
            return;
        };
        rec.replay.frames.push(ReplayFrame {
            input: rec.pending.take(),
            checksum,
        });
        let n = rec.replay.frames.len() as u64;
        if rec.keyframe_every > 0 && n % rec.keyframe_every == 0 {
            let mut save = Vec::new();
            let result = self.write_save(&mut save);
            let rec = self.recorder.as_mut().expect("recording");
            match result {
                Ok(()) => rec.replay.keyframes.push((n, save)),
                Err(e) => {
                    rec.error.get_or_insert(e);
                }
            }
        }
    }

    /// Plays `replay` (recorded with input type `I`) in this runtime, which must have the
    /// same registrations and systems (at any worker count): loads its start, then runs
    /// every frame with its recorded input and compares the checksum after it with the
    /// recorded one. At the first mismatch it stops and reports the frame; with a keyframe
    /// after it, the first entity, component and values that differ (recorded vs
    /// replayed); and the provenance of that entity in the diverging frame, re-run from
    /// the keyframe before it with the entity watched (see `src/replay.rs`). The runtime
    /// is left where the replay stopped (after a divergence: after the re-run frame).
    ///
    /// ```
    /// use runsync::prelude::*;
    /// use runsync::Replay;
    /// #[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    /// #[component(output = i64, merge = merge::sum, save, checksum, debug)]
    /// struct X(i64);
    /// impl std::ops::AddAssign<i64> for X { fn add_assign(&mut self, d: i64) { self.0 += d } }
    ///
    /// let game = |workers| {
    ///     let mut world = World::new();
    ///     world.register_default::<X>();
    ///     world.spawn_batch((0..10).map(|i| (X(i),)));
    ///     let mut rt = Runtime::builder().workers(workers).build(world);
    ///     rt.add_system_named("push", |w: &World, out: &mut Output| {
    ///         let pad = *w.input::<i64>();
    ///         for (e, (x,)) in w.query::<(&X,)>() { out.write::<X>(e, pad + x.0 % 3); }
    ///     });
    ///     rt
    /// };
    /// let mut rt = game(2);
    /// rt.record_replay_keyframes::<i64>(1).unwrap();
    /// for f in 0..20 { rt.frame_with(f as i64 - 7); }
    /// let mut file = Vec::new();
    /// rt.finish_replay(&mut file).unwrap();
    ///
    /// let replay = Replay::read(&mut file.as_slice()).unwrap();
    /// let report = game(1).play_replay::<i64>(&replay).unwrap();
    /// assert!(report.is_identical());
    /// assert_eq!(report.frames, 20);
    /// ```
    ///
    /// # Errors
    /// [`ReplayError::InputType`] for a replay of another input type,
    /// [`ReplayError::Load`] if a save in it does not load here (other registrations) or
    /// an input does not decode, [`ReplayError::Frame`] if a replayed frame fails.
    pub fn play_replay<I>(&mut self, replay: &Replay) -> Result<ReplayReport, ReplayError>
    where
        I: serde::Serialize + serde::de::DeserializeOwned + Clone + Send + Sync + 'static,
    {
        let expected = std::any::type_name::<I>();
        if replay.input_type != expected {
            return Err(ReplayError::InputType {
                recorded: replay.input_type.clone(),
                expected,
            });
        }
        self.load_bytes(&replay.start)?;
        let start = self.frame;
        for i in 0..replay.frames.len() {
            // The frame's number (from 1), as `stats().frame` and provenance give it.
            let frame = self.frame + 1;
            self.replay_frame::<I>(replay, i)?;
            let replayed = self.world.checksum();
            let recorded = replay.frames[i].checksum;
            if replayed == recorded {
                continue;
            }
            let mut d = Divergence {
                frame,
                recorded,
                replayed,
                compared_at: None,
                difference: None,
                provenance: None,
            };
            let after = replay.keyframes.iter().find(|(at, _)| *at > i as u64);
            if let Some((at, save)) = after {
                for g in i + 1..*at as usize {
                    self.replay_frame::<I>(replay, g)?;
                }
                let mut recorded_world = self.world.shadow();
                recorded_world.load(&mut save.as_slice())?;
                d.compared_at = Some(start + at);
                d.difference = recorded_world.first_difference(&self.world);
                // No difference: the keyframe holds the replayed state (the resources
                // compared included), so its checksum is a true one, and it must be the
                // one recorded for its frame.
                let recorded = replay.frames[*at as usize - 1].checksum;
                let keyframe = recorded_world.checksum();
                if d.difference.is_none() && keyframe != recorded {
                    return Err(ReplayError::Contradiction {
                        frame: start + at,
                        recorded,
                        keyframe,
                    });
                }
            }
            if let Some(e) = d.difference.as_ref().and_then(|x| x.entity()) {
                let (from, save) = replay
                    .keyframes
                    .iter()
                    .rev()
                    .find(|(at, _)| *at <= i as u64)
                    .map_or((0, &replay.start[..]), |(at, s)| (*at as usize, &s[..]));
                self.load_bytes(save)?;
                for g in from..i {
                    self.replay_frame::<I>(replay, g)?;
                }
                let watched = self.provenance(e).is_some();
                self.watch(e);
                self.replay_frame::<I>(replay, i)?;
                // Nothing targeted it in the diverging frame (an entity spawned or
                // despawned later, before the states were compared): the first frame up
                // to there that did, so the report says who spawned or despawned it.
                let until = d.compared_at.map_or(i + 1, |at| (at - start) as usize);
                let mut g = i + 1;
                while self.provenance(e).is_some_and(Provenance::is_empty) && g < until {
                    self.replay_frame::<I>(replay, g)?;
                    g += 1;
                }
                d.provenance = self.provenance(e).cloned();
                if !watched {
                    self.unwatch(e);
                }
            }
            return Ok(ReplayReport {
                frames: i as u64 + 1,
                divergence: Some(d),
            });
        }
        Ok(ReplayReport {
            frames: replay.frames.len() as u64,
            divergence: None,
        })
    }

    /// Runs frame `i` of `replay` with its input.
    fn replay_frame<I>(&mut self, replay: &Replay, i: usize) -> Result<(), ReplayError>
    where
        I: serde::de::DeserializeOwned + Clone + Send + Sync + 'static,
    {
        match &replay.frames[i].input {
            None => {
                self.world.remove_resource::<crate::input::Input<I>>();
            }
            Some(bytes) => {
                let mut v: Vec<I> = Vec::with_capacity(1);
                crate::savefile::decode_values(bytes, 1, &mut v).map_err(|message| {
                    LoadError::Decode {
                        type_name: std::any::type_name::<I>(),
                        table: None,
                        message,
                    }
                })?;
                self.world.set_input(v.pop().expect("one input decoded"));
            }
        }
        let frame = self.frame + 1;
        self.try_frame()
            .map_err(|error| ReplayError::Frame { frame, error })
    }

    /// Loads a runtime save held in memory (all of it).
    fn load_bytes(&mut self, mut bytes: &[u8]) -> Result<(), LoadError> {
        let mut src = Source::new(&mut bytes);
        self.read_save(&mut src)?;
        src.finish()
    }

    /// Starts recording write provenance for `e` from the next frame on: which systems
    /// wrote which outputs to which of its components, in merge order, with the values
    /// before and after the merge (for types opted in with
    /// [`World::debugging`]), and the structural commands that targeted it. Read it with
    /// [`provenance`](Self::provenance); see [`Provenance`] for an example.
    ///
    /// Watching is meant for a few entities at a time (debugging, tools): each Sync then
    /// scans, per watched entity, the outputs of the types it has, and every system's
    /// structural commands. With nothing watched, recording costs one `is_empty` check.
    /// Watching never changes the world. Watching an entity twice is a no-op; a dead
    /// entity may be watched (its records stay empty).
    pub fn watch(&mut self, e: Entity) {
        self.watches.watch(e);
    }

    /// Stops recording provenance for `e` and drops its record. Returns whether it was
    /// watched.
    pub fn unwatch(&mut self, e: Entity) -> bool {
        self.watches.unwatch(e)
    }

    /// The write provenance of `e` in the last frame that ran Sync (see [`watch`](Self::watch)),
    /// or `None` if `e` is not watched. A watched entity nothing targeted has an empty record.
    pub fn provenance(&self, e: Entity) -> Option<&Provenance> {
        self.watches.get(e)
    }

    /// Stops the workers and returns the world.
    pub fn into_world(self) -> World {
        self.world
    }
}

impl Runtime {
    /// The end of a frame on the Tracy timeline (nothing without `tracy`): the frame's
    /// plots, then its frame mark.
    fn profile_frame_end(&self) {
        use crate::profile::runtime_plot as plot;
        let (stats, p) = (&self.stats, &self.profile);
        plot!(p, Entities, stats.entities as f64);
        plot!(
            p,
            Writes,
            stats.systems.iter().map(|s| s.writes).sum::<usize>() as f64
        );
        plot!(
            p,
            Commands,
            stats.systems.iter().map(|s| s.commands).sum::<usize>() as f64
        );
        plot!(p, Merged, stats.merged as f64);
        plot!(p, WorkMs, stats.work.as_secs_f64() * 1e3);
        plot!(p, SpanMs, stats.span.as_secs_f64() * 1e3);
        plot!(p, SpeedupBound, stats.speedup_bound(usize::MAX));
        plot!(p, Dropped, stats.dropped as f64);
        // `memory()` walks every column and buffer: with `tracy` only, once per frame.
        #[cfg(feature = "tracy")]
        {
            let memory = self.memory();
            plot!(p, ComponentBytes, memory.component_bytes as f64);
            plot!(p, OutputBytes, memory.output_bytes as f64);
        }
        p.frame_mark();
    }
}
