//! The frame loop: [`Runtime`], its builder, systems and stats.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::component::ComponentId;
use crate::output::{Output, SystemOutputs};
use crate::pool::Pool;
use crate::world::World;

/// A unit of game logic, run once per frame during Run.
///
/// A system reads the world through `&World` (everything is immutable during Run) and
/// emits outputs through [`Output`]. It may keep its own state in `self`: one system never
/// runs on two threads at once. Any `FnMut(&World, &mut Output) + Send + 'static` closure is
/// a system.
///
/// ```
/// use runsync::prelude::*;
/// struct Counter { frames: u64 }
/// impl System for Counter {
///     fn run(&mut self, _world: &World, _out: &mut Output<'_>) { self.frames += 1; }
/// }
/// let mut rt = Runtime::builder().workers(1).build(World::new());
/// rt.add_system(Counter { frames: 0 });
/// rt.frame();
/// ```
///
/// A system cannot write a component in place during Run; this does not compile:
///
/// ```compile_fail
/// use runsync::prelude::*;
/// #[derive(Clone, Copy)] struct Pos(f32);
/// impl Component for Pos { type Output = Pos; }
/// let mut rt = Runtime::builder().build(World::new());
/// rt.add_system(|world: &World, _out: &mut Output| {
///     for (e, (p,)) in world.query::<(&Pos,)>() {
///         let _: Option<&mut Pos> = world.get_mut::<Pos>(e); // needs &mut World
///     }
/// });
/// ```
///
/// A system must be `Send` (it may run on any worker); this does not compile:
///
/// ```compile_fail
/// use runsync::prelude::*;
/// let shared = std::rc::Rc::new(0);
/// let mut rt = Runtime::builder().build(World::new());
/// rt.add_system(move |_: &World, _: &mut Output| { let _ = &shared; });
/// ```
pub trait System: Send + 'static {
    /// Runs the system for one frame.
    fn run(&mut self, world: &World, out: &mut Output<'_>);

    /// The name shown in [`FrameStats`] and error messages. Defaults to the type name.
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(std::any::type_name::<Self>())
    }
}

impl<F> System for F
where
    F: FnMut(&World, &mut Output<'_>) + Send + 'static,
{
    #[inline]
    fn run(&mut self, world: &World, out: &mut Output<'_>) {
        self(world, out)
    }
}

/// Identifies a system within its [`Runtime`] (registration order, from 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SystemId(u32);

impl SystemId {
    /// The registration index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The fixed-step clock, kept by the runtime as a resource.
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
    /// Seconds per frame (the builder's fixed step).
    pub dt: f32,
    /// Frames completed so far; during Run, the index of the running frame.
    pub frame: u64,
}

pub(crate) struct SystemSlot {
    pub(crate) system: Box<dyn System>,
    pub(crate) name: Arc<str>,
    pub(crate) enabled: bool,
    /// Whether the system ran this frame (its outputs count).
    pub(crate) ran: bool,
    pub(crate) time: Duration,
    pub(crate) out: SystemOutputs,
}

/// Per-system figures of the last frame.
#[derive(Clone, Debug)]
pub struct SystemStats {
    /// The system.
    pub id: SystemId,
    /// Its name.
    pub name: Arc<str>,
    /// Whether it ran (it was enabled).
    pub ran: bool,
    /// Wall time of its `run` (zero if it did not run).
    pub time: Duration,
    /// Component writes it emitted.
    pub writes: usize,
    /// Structural commands it emitted.
    pub commands: usize,
}

/// Figures of the last frame, from [`Runtime::stats`].
#[derive(Clone, Debug, Default)]
pub struct FrameStats {
    /// Index of the frame (0 for the first).
    pub frame: u64,
    /// Wall time of the Run phase.
    pub run: Duration,
    /// Wall time of the Sync phase.
    pub sync: Duration,
    /// Each system, in registration order.
    pub systems: Vec<SystemStats>,
    /// Writes folded into components by their merge.
    pub merged: u64,
    /// Writes to dead entities or to entities lacking the component, plus structural
    /// commands that had nothing to act on (despawn of a dead entity, insert into a dead
    /// entity, remove of an absent component).
    pub dropped: u64,
    /// Entities spawned in Sync.
    pub spawned: u64,
    /// Entities despawned in Sync.
    pub despawned: u64,
    /// Live entities after the frame.
    pub entities: usize,
}

/// Memory the runtime holds on to, from [`Runtime::memory`]. In a steady state (a stable
/// set of archetypes and a bounded entity count) none of these grow from frame to frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryStats {
    /// Archetype tables (never freed; one per component combination ever seen).
    pub tables: usize,
    /// Entity slots ever created (live, free for reuse, or retired).
    pub entity_slots: usize,
    /// Bytes reserved by component columns and table entity lists.
    pub component_bytes: usize,
    /// Bytes reserved by the systems' output buffers (kept across frames).
    pub output_bytes: usize,
}

/// Why a frame failed. See [`Runtime::try_frame`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum FrameError {
    /// A system panicked during Run. The frame's outputs were discarded: the world is
    /// exactly as before the frame, and the frame counter did not advance.
    SystemPanicked {
        /// The system (the lowest id, if several panicked).
        system: SystemId,
        /// Its name.
        name: Arc<str>,
        /// The panic message.
        message: String,
    },
    /// A merge function panicked during Sync. Other component types merged normally and
    /// structural commands were applied; values of this type may be partly merged (each
    /// entity holds either its old or its merged value). The frame counts as done.
    MergePanicked {
        /// The component type whose merge panicked (the lowest id, if several).
        component: &'static str,
        /// The panic message.
        message: String,
    },
    /// A component's `Drop` panicked while Sync released removed values. Every structural
    /// change was applied; the frame counts as done.
    DropPanicked {
        /// The panic message.
        message: String,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::SystemPanicked {
                system,
                name,
                message,
            } => write!(
                f,
                "system `{name}` ({system:?}) panicked during Run: {message}; \
                 the frame's outputs were discarded and the world is unchanged"
            ),
            FrameError::MergePanicked { component, message } => write!(
                f,
                "the merge function of component `{component}` panicked during Sync: \
                 {message}; some `{component}` values may not have been merged this frame"
            ),
            FrameError::DropPanicked { message } => {
                write!(f, "a component's Drop panicked during Sync: {message}")
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// Configures a [`Runtime`]: `Runtime::builder().workers(4).dt(1.0 / 60.0).build(world)`.
#[derive(Clone, Debug)]
pub struct RuntimeBuilder {
    workers: usize,
    dt: f32,
}

impl RuntimeBuilder {
    /// Number of threads that run systems, counting the thread that calls
    /// [`Runtime::frame`] (so `workers(1)` spawns no thread). `0` (the default) means one
    /// per available core. Ignored with the `single-threaded` feature.
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n;
        self
    }

    /// The fixed time step in seconds, published as [`Time::dt`]. Default `1.0 / 60.0`.
    ///
    /// # Panics
    /// If `dt` is not finite or is negative.
    #[track_caller]
    pub fn dt(mut self, dt: f32) -> Self {
        assert!(
            dt.is_finite() && dt >= 0.0,
            "runsync: dt must be a finite, non-negative number of seconds, got {dt}"
        );
        self.dt = dt;
        self
    }

    /// Builds the runtime around `world`, starting its worker threads.
    pub fn build(self, mut world: World) -> Runtime {
        let frame = world.get_resource::<Time>().map_or(0, |t| t.frame);
        world.insert_resource(Time { dt: self.dt, frame });
        Runtime {
            world,
            pool: Pool::new(self.workers),
            systems: Vec::new(),
            stats: FrameStats::default(),
            dt: self.dt,
            frame,
            scratch_ids: Vec::new(),
        }
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
    scratch_ids: Vec<ComponentId>,
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
    /// A builder with the defaults: one worker per core, `dt = 1/60`.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            workers: 0,
            dt: 1.0 / 60.0,
        }
    }

    /// Adds a system, named by its type ([`System::name`]). Systems run in parallel; their
    /// registration order decides the order of their outputs in every merge.
    pub fn add_system<S: System>(&mut self, system: S) -> SystemId {
        let name = system.name();
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
            out: SystemOutputs::default(),
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
    pub fn is_enabled(&self, id: SystemId) -> bool {
        self.systems[id.index()].enabled
    }

    /// The name of a system.
    pub fn system_name(&self, id: SystemId) -> &str {
        &self.systems[id.index()].name
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
    fn slot(&mut self, id: SystemId) -> &mut SystemSlot {
        let n = self.systems.len();
        self.systems.get_mut(id.index()).unwrap_or_else(|| {
            panic!("runsync: {id:?} is not a system of this runtime ({n} systems)")
        })
    }

    /// Runs one frame: Run, then Sync.
    ///
    /// # Panics
    /// If the frame fails (a system, a merge or a `Drop` panicked), with the message of the
    /// [`FrameError`] — the world stays usable. Use [`try_frame`](Self::try_frame) to
    /// handle failures without unwinding.
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
        match self.world.resource_mut::<Time>() {
            Some(t) => *t = time,
            None => self.world.insert_resource(time),
        }
        self.stats.frame = self.frame;

        let run_start = Instant::now();
        let run = {
            let _zone = crate::profile::run_zone();
            crate::run::run(&self.world, &mut self.systems, &self.pool)
        };
        self.stats.run = run_start.elapsed();
        for (slot, st) in self.systems.iter().zip(self.stats.systems.iter_mut()) {
            st.ran = slot.ran;
            st.time = if slot.ran { slot.time } else { Duration::ZERO };
            st.writes = slot.out.writes();
            st.commands = slot.out.commands.len();
        }

        if let Err(p) = run {
            crate::sync::discard(&mut self.systems);
            self.stats.sync = Duration::ZERO;
            self.stats.merged = 0;
            self.stats.dropped = 0;
            self.stats.spawned = 0;
            self.stats.despawned = 0;
            self.stats.entities = self.world.len();
            crate::profile::frame_end(&self.stats);
            let id = SystemId(p.index as u32);
            return Err(FrameError::SystemPanicked {
                system: id,
                name: self.systems[p.index].name.clone(),
                message: p.message(),
            });
        }

        let sync_start = Instant::now();
        let report = {
            let _zone = crate::profile::sync_zone();
            crate::sync::sync(
                &mut self.world,
                &mut self.systems,
                &self.pool,
                &mut self.scratch_ids,
            )
        };
        self.stats.sync = sync_start.elapsed();
        self.stats.merged = report.merged;
        self.stats.dropped = report.dropped;
        self.stats.spawned = report.spawned;
        self.stats.despawned = report.despawned;
        self.stats.entities = self.world.len();
        self.frame += 1;
        if let Some(t) = self.world.resource_mut::<Time>() {
            t.frame = self.frame;
        }
        crate::profile::frame_end(&self.stats);
        if let Some((component, message)) = report.merge_panic {
            return Err(FrameError::MergePanicked { component, message });
        }
        if let Some(message) = report.drop_panic {
            return Err(FrameError::DropPanicked { message });
        }
        Ok(())
    }

    /// Figures of the last frame.
    pub fn stats(&self) -> &FrameStats {
        &self.stats
    }

    /// Memory held by the world and the output buffers. Walks every column and buffer:
    /// cheap, but not free — call it for diagnostics, not every frame.
    pub fn memory(&self) -> MemoryStats {
        let (tables, entity_slots, component_bytes) = self.world.memory();
        MemoryStats {
            tables,
            entity_slots,
            component_bytes,
            output_bytes: self.systems.iter().map(|s| s.out.capacity_bytes()).sum(),
        }
    }

    /// Frames completed so far.
    pub fn frame_count(&self) -> u64 {
        self.frame
    }

    /// The world as the last Sync left it.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The world, for direct edits between frames (setup, loading, tools).
    pub fn world_mut(&mut self) -> &mut World {
        &mut self.world
    }

    /// Stops the workers and returns the world.
    pub fn into_world(self) -> World {
        self.world
    }
}
