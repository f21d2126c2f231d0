//! The frame loop: [`Runtime`] and its builder.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::output::SystemOutputs;
use crate::pool::Pool;
use crate::stats::{FrameError, FrameStats, MemoryStats, SystemStats};
use crate::system::{System, SystemId, SystemSlot};
use crate::world::World;

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
            sync_scratch: Default::default(),
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
    sync_scratch: crate::sync::SyncScratch,
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
        crate::profile::name_frame_thread();

        let run_start = Instant::now();
        let run = {
            let _zone = crate::profile::zone!("Run");
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
            let error = FrameError::SystemPanicked {
                system: SystemId(p.index as u32),
                name: self.systems[p.index].name.clone(),
                message: p.message(),
            };
            return Err(self.frame_failed(error));
        }

        let sync_start = Instant::now();
        let report = {
            let _zone = crate::profile::zone!("Sync");
            crate::sync::sync(
                &mut self.world,
                &mut self.systems,
                &self.pool,
                &mut self.sync_scratch,
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
        if let Some((component, message)) = report.merge_panic {
            return Err(self.frame_failed(FrameError::MergePanicked { component, message }));
        }
        if let Some(message) = report.drop_panic {
            return Err(self.frame_failed(FrameError::DropPanicked { message }));
        }
        crate::profile::frame_end(&self.stats);
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
        crate::profile::frame_end(&self.stats);
        error
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
