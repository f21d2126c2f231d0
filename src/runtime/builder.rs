//! Building a runtime: [`RuntimeBuilder`] (workers, the fixed step, the stages, Tracy
//! settings), [`Runtime::builder`], and the [`Time`] resource the runtime keeps.

use std::borrow::Cow;

use super::Runtime;
use crate::fixed_step::FixedStep;
use crate::pool::Pool;
use crate::provenance::Watches;
use crate::stats::{AdvanceStats, FrameStats};
use crate::world::World;

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
    step: Timestep,
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
enum Timestep {
    /// [`RuntimeBuilder::fixed_hz`]: exactly `1 / hz` seconds.
    Hz(u32),
    /// [`RuntimeBuilder::dt`]: seconds.
    Dt(f32),
}

impl Timestep {
    /// [`Time::dt`].
    fn dt(self) -> f32 {
        match self {
            Timestep::Hz(hz) => 1.0 / hz as f32,
            Timestep::Dt(dt) => dt,
        }
    }

    fn clock(self, max_catch_up: u32) -> FixedStep {
        match self {
            Timestep::Hz(hz) => FixedStep::from_hz(hz, max_catch_up),
            Timestep::Dt(dt) => FixedStep::from_dt(dt, max_catch_up),
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
    ///   [`Instant`](std::time::Instant) add up exactly; adding up durations that were
    ///   each rounded and are not whole steps (1/120 s per call at 60 Hz) can lose up to
    ///   1 ns per call.
    ///
    /// # Panics
    /// If `hz` is 0.
    #[track_caller]
    pub fn fixed_hz(mut self, hz: u32) -> Self {
        assert!(
            hz > 0,
            "runsync: fixed_hz needs at least one frame per second"
        );
        self.step = Timestep::Hz(hz);
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
        self.step = Timestep::Dt(dt);
        self
    }

    /// The most frames one [`Runtime::advance`] runs to catch up with real time (default
    /// 5). Beyond it the excess time is dropped (reported in
    /// [`Advance::dropped`](crate::Advance::dropped)): the game slows down instead of
    /// spending ever longer frames catching up (the "spiral of
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
            trace: None,
            digests: Default::default(),
        };
        for name in self.stages {
            rt.add_stage(name);
        }
        rt
    }
}

#[cold]
#[track_caller]
pub(super) fn duplicate_stage(name: &str) -> ! {
    panic!("runsync: there is already a stage named `{name}`; give each stage its own name")
}

impl Runtime {
    /// A builder with the defaults: one worker per core, exactly 60 Hz
    /// ([`fixed_hz(60)`](RuntimeBuilder::fixed_hz), [`Time::dt`] `= 1.0 / 60.0`), at most
    /// 5 catch-up frames per [`advance`](Self::advance).
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            workers: 0,
            step: Timestep::Hz(60),
            max_catch_up: 5,
            stages: vec![Cow::Borrowed(DEFAULT_STAGE)],
            profile: Default::default(),
        }
    }
}
