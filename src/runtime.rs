//! The frame loop: [`Runtime`] and its builder.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::entity::Entity;
use crate::fixed_step::{Advance, FixedStep};
use crate::output::SystemOutputs;
use crate::pool::Pool;
use crate::provenance::{Provenance, Watches};
use crate::stats::{FrameError, FrameStats, MemoryStats, SystemStats};
use crate::system::{System, SystemId, SystemInfo, SystemSlot};
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
/// count (its Run failed: [`FrameError::SystemPanicked`](crate::FrameError::SystemPanicked)):
/// `frame_count()` and `Time::frame` stay at `N - 1`, and `stats().frame` says
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
}

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

    /// Builds the runtime around `world`, starting its worker threads.
    pub fn build(self, mut world: World) -> Runtime {
        let frame = world.get_resource::<Time>().map_or(0, |t| t.frame);
        let dt = self.step.dt();
        world.insert_resource(Time { dt, frame });
        Runtime {
            world,
            pool: Pool::new(self.workers),
            systems: Vec::new(),
            stats: FrameStats::default(),
            dt,
            frame,
            clock: self.step.clock(self.max_catch_up),
            sync_scratch: Default::default(),
            watches: Watches::default(),
        }
    }
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
/// into the world (Sync).
///
/// See the [crate docs](crate) for an example.
pub struct Runtime {
    world: World,
    pool: Pool,
    systems: Vec<SystemSlot>,
    stats: FrameStats,
    dt: f32,
    frame: u64,
    /// Real time not yet simulated, for [`advance`](Runtime::advance).
    clock: FixedStep,
    sync_scratch: crate::sync::SyncScratch,
    /// Entities whose write provenance Sync records.
    watches: Watches,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("world", &self.world)
            .field("workers", &self.pool.threads())
            .field("systems", &self.systems.len())
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
        }
    }

    /// Adds a system, named by [`System::name`] — a closure by its call site
    /// (`game.rs:42`). Systems run in parallel; their registration order decides the order
    /// of their outputs in every merge.
    #[track_caller]
    pub fn add_system<S: System>(&mut self, system: S) -> SystemId {
        let name = system.name_at(std::panic::Location::caller());
        self.add_system_named(name, system)
    }

    /// Adds a system under `name` (shown in stats and errors) — handy for closures.
    pub fn add_system_named<S: System>(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        system: S,
    ) -> SystemId {
        let id = SystemId(self.systems.len() as u32);
        let name: Arc<str> = Arc::from(name.into().as_ref());
        self.stats.systems.push(SystemStats {
            id,
            name: name.clone(),
            ran: false,
            time: Duration::ZERO,
            writes: 0,
            commands: 0,
        });
        self.systems.push(SystemSlot {
            system: Box::new(system),
            name,
            enabled: true,
            ran: false,
            time: Duration::ZERO,
            writes: 0,
            out: SystemOutputs::default(),
            zone: Default::default(),
        });
        id
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
        self.systems.iter().enumerate().map(|(i, s)| SystemInfo {
            id: SystemId(i as u32),
            name: &s.name,
            enabled: s.enabled,
        })
    }

    /// Number of systems added.
    pub fn system_count(&self) -> usize {
        self.systems.len()
    }

    /// Threads that run systems, counting the caller.
    pub fn workers(&self) -> usize {
        self.pool.threads()
    }

    #[track_caller]
    fn slot_ref(&self, id: SystemId) -> &SystemSlot {
        let n = self.systems.len();
        self.systems.get(id.index()).unwrap_or_else(|| {
            panic!("runsync: {id:?} is not a system of this runtime ({n} systems)")
        })
    }

    #[track_caller]
    fn slot(&mut self, id: SystemId) -> &mut SystemSlot {
        let n = self.systems.len();
        self.systems.get_mut(id.index()).unwrap_or_else(|| {
            panic!("runsync: {id:?} is not a system of this runtime ({n} systems)")
        })
    }

    /// Runs one frame: Run, then Sync.
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

    /// Runs one frame: Run, then Sync; reports a failure instead of panicking.
    ///
    /// If a system panics, every system's outputs for this frame are discarded and the world
    /// is left exactly as it was ([`FrameError::SystemPanicked`]); the pool and the world
    /// stay usable, so the next frame may run. Other failures are described on
    /// [`FrameError`].
    pub fn try_frame(&mut self) -> Result<(), FrameError> {
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
        crate::profile::name_frame_thread();

        // Ids for spawns made in Run, per system, in system order (deterministic).
        self.world
            .storage_mut()
            .entities
            .reserve_for_frame(self.systems.len());
        let run_start = Instant::now();
        let run = {
            let _zone = crate::profile::zone!("Run");
            crate::run::run(&self.world, &mut self.systems, &self.pool)
        };
        self.stats.run = run_start.elapsed();
        for (slot, st) in self.systems.iter().zip(self.stats.systems.iter_mut()) {
            st.ran = slot.ran;
            st.time = if slot.ran { slot.time } else { Duration::ZERO };
            st.writes = if slot.ran { slot.writes } else { 0 };
            st.commands = slot.out.commands.len();
        }

        if let Err(p) = run {
            crate::sync::discard(&mut self.systems);
            // The reservations are world state (snapshots, checksums): take them back.
            self.world.storage_mut().entities.unreserve_frame();
            self.stats.sync = Duration::ZERO;
            self.stats.merged = 0;
            self.stats.dropped = 0;
            self.stats.spawned = 0;
            self.stats.despawned = 0;
            self.stats.entities = self.world.len();
            let error = FrameError::SystemPanicked {
                system: SystemId(p.index as u32),
                name: self.systems[p.index].name.clone(),
                message: p.message(),
            };
            return Err(self.frame_failed(error));
        }

        let sync_start = Instant::now();
        self.watches.frame = self.frame + 1;
        let report = {
            let _zone = crate::profile::zone!("Sync");
            crate::sync::sync(
                &mut self.world,
                &mut self.systems,
                &self.pool,
                &mut self.sync_scratch,
                &mut self.watches,
            )
        };
        self.stats.sync = sync_start.elapsed();
        self.stats.merged = report.merged;
        self.stats.dropped = report.dropped + report.commands.dropped;
        self.stats.spawned = report.commands.spawned;
        self.stats.despawned = report.commands.despawned;
        self.stats.entities = self.world.len();
        self.frame += 1;
        if let Some(t) = self.world.get_resource_mut::<Time>() {
            t.frame = self.frame;
        }
        if let Some((component, target, message)) = report.merge_panic {
            let error = FrameError::MergePanicked {
                component,
                target,
                message,
            };
            return Err(self.frame_failed(error));
        }
        if let Some((component, hook, message)) = report.hook_panic {
            let error = FrameError::HookPanicked {
                component,
                hook,
                message,
            };
            return Err(self.frame_failed(error));
        }
        if let Some(dropped) = report.commands.hook_cascade {
            return Err(self.frame_failed(FrameError::HookCascade { dropped }));
        }
        if let Some(message) = report.drop_panic {
            return Err(self.frame_failed(FrameError::DropPanicked { message }));
        }
        self.profile_frame_end();
        Ok(())
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
    /// [`FrameError::SystemPanicked`].
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
    /// elapsed times give the same frames) whatever the display rate.
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
    /// - the failed frame's step charged exactly once if the frame counts as done (every
    ///   failure but [`FrameError::SystemPanicked`]: the frame counter advanced, the world
    ///   holds what the error describes), so no later call simulates that time again;
    /// - after [`FrameError::SystemPanicked`], nothing charged for that frame: the world
    ///   and the frame counter are as before it, and the next call runs it again;
    /// - the time of the frames after it accumulated, for the next call to run (up to
    ///   [`max_catch_up`](RuntimeBuilder::max_catch_up) per call, as always);
    /// - time beyond the catch-up cap dropped as in a call that succeeds, unreported
    ///   (there is no [`Advance`] to report it in).
    ///
    /// # Panics
    /// If the fixed step is zero (`dt(0.0)`).
    #[track_caller]
    pub fn try_advance(&mut self, elapsed: Duration) -> Result<Advance, FrameError> {
        let (due, dropped) = self.clock.add(elapsed);
        for _ in 0..due {
            let counted = self.frame;
            let result = self.try_frame();
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
        let stats = &self.stats;
        crate::profile::plot!("runsync entities", stats.entities as f64);
        crate::profile::plot!(
            "runsync writes",
            stats.systems.iter().map(|s| s.writes).sum::<usize>() as f64
        );
        crate::profile::plot!(
            "runsync commands",
            stats.systems.iter().map(|s| s.commands).sum::<usize>() as f64
        );
        crate::profile::plot!("runsync merged", stats.merged as f64);
        crate::profile::plot!("runsync dropped", stats.dropped as f64);
        // `memory()` walks every column and buffer: with `tracy` only, once per frame.
        #[cfg(feature = "tracy")]
        {
            let memory = self.memory();
            crate::profile::plot!(bytes "runsync component bytes", memory.component_bytes as f64);
            crate::profile::plot!(bytes "runsync output bytes", memory.output_bytes as f64);
        }
        crate::profile::frame_mark();
    }
}
