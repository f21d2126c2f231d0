//! The arena (`runsync_tools::scenario`) ported to bevy_ecs 0.20, written as a bevy user
//! writes a game for speed, to compare the two engines on the same game.
//!
//! # What is the same
//!
//! The constants (the spawner's templates, waves every 60 frames, steering 6, drag 0.6,
//! separation 30, bounce at the field's edges, cells of 2), the per-frame `dt` (1/60 s),
//! the grid (a plain port of `runsync_systems`' `Grid` and `TeamBlocks`, built once a frame
//! and read by Separation and Contact in the next, as runsync's `SpatialGrid` is; built in
//! parallel as runsync's `BuildGrid` builds it, with the same parts, bands and jobs), the
//! spawner (the same PCG generator, reseeded from the seed and the frame, drawn in the same
//! order), the queries and the arithmetic of every system, and the systems themselves, one
//! bevy system per runsync system with the same name.
//!
//! # What is bevy's
//!
//! One [`Schedule`] on bevy's multi-threaded executor, over a `ComputeTaskPool` of
//! `workers` threads; every per-entity pass that runsync splits into parallel chunks is a
//! `par_iter_mut` (or `par_iter`), and every parallel step of runsync's grid build a task
//! in a `ComputeTaskPool` scope ([`Jobs`]); components are written in place; spawns and
//! despawns are `Commands` (`spawn_batch` for a wave and a frame's shots,
//! `ParallelCommands` in Expire's parallel pass); turrets are `ChildOf` children,
//! despawned with their ship.
//! Commands are applied once, after all systems (no sync point inside the frame: runsync
//! also applies structure in its Sync), and the grid built this frame is swapped in for
//! the next between frames.
//!
//! # The ordering constraints
//!
//! runsync systems all read the world as the last Sync left it. In place, that takes an
//! order wherever one system writes what another reads:
//!
//! - every reader of `Position` (BuildGrid, Spawner, Steer, Separation, Contact,
//!   PropagateTransforms) runs before the two writers, Bounds then Integrate;
//! - the `Velocity` writers run in runsync's registration order: Steer, Drag, Separation,
//!   Bounds, then Integrate reads it;
//! - Death before Contact (Death sees the damage of the frames before, as in runsync);
//! - Spawner before PropagateTransforms (it fires from last frame's turret positions).
//!
//! Everything else (Expire; BuildGrid beside the velocity chain; Spawner beside Contact
//! and Death) is left to the executor.
//!
//! # What cannot be the same
//!
//! See `tests/bevy_arena.rs`: in place, Integrate moves by the velocity of this frame
//! (runsync: of the last), Drag damps the steered velocity, and Bounds clamps before the
//! move; despawns fill holes in bevy's tables in another order than in runsync's, so the
//! spawner's one random stream along the agents picks other shooters after the first
//! deaths. The game is the same in distribution, not bit for bit.

mod components;
mod grid;
mod spawner;
mod systems;
mod timing;

use std::time::{Duration, Instant};

use bevy_ecs::hierarchy::ChildOf;
use bevy_ecs::query::{Or, With};
use bevy_ecs::schedule::{
    IntoScheduleConfigs, MultiThreadedExecutor, Schedule, ScheduleBuildSettings, SystemSet,
};
use bevy_ecs::world::{Mut, World};
use bevy_tasks::{ComputeTaskPool, TaskPoolBuilder};
use runsync_systems::glam::Vec2;
use runsync_systems::{AgentTemplate, ProjectileTemplate, SpawnerConfig, TurretTemplate};
use runsync_tools::scenario::{ArenaConfig, TEAMS, arena_side};

pub use components::{
    ArenaRules, ArenaTime, Collider, Damage, Deaths, GlobalTransform, Health, Lifetime, NextGrid,
    Position, Projectile, SharedGrid, Team, Transform, Velocity,
};
pub use grid::{
    BODY, Built, Grid, GridItem, GridPart, Jobs, MAX_GRID_PARTS, TEAM_MASK, TeamBlocks, VICTIM,
};
pub use systems::{Collidable, index_colliders, index_colliders_serially};
pub use timing::{SYSTEM_NAMES, SystemTimes};

/// The arena's systems, one set each, for the ordering constraints (see the module docs).
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArenaSystem {
    /// `BuildGrid`.
    BuildGrid,
    /// `Spawner`.
    Spawner,
    /// `Steer`.
    Steer,
    /// `Drag`.
    Drag,
    /// `Separation`.
    Separation,
    /// `Integrate`.
    Integrate,
    /// `PropagateTransforms`.
    PropagateTransforms,
    /// `Bounds`.
    Bounds,
    /// `Contact`.
    Contact,
    /// `Expire`.
    Expire,
    /// `Death`.
    Death,
}

/// The spawner's configuration in the arena: the values of `runsync_tools::scenario`'s
/// `add_systems` (which keeps them inline), for `agents` agents and `seed`.
pub fn spawner_config(agents: usize, seed: u64) -> SpawnerConfig {
    let side = arena_side(agents);
    SpawnerConfig {
        seed,
        teams: TEAMS,
        agents_per_team: agents / usize::from(TEAMS),
        wave_every: 60,
        min: Vec2::ZERO,
        max: Vec2::splat(side),
        agent: AgentTemplate {
            radius: 0.5,
            health: 60,
            damage: 1,
            speed: 3.0,
        },
        projectile: ProjectileTemplate {
            radius: 0.2,
            speed: 40.0,
            lifetime: 1.5,
            damage: 20,
            rate: 0.1,
        },
        turrets: TurretTemplate {
            every: 16,
            count: 2,
            distance: 0.9,
        },
    }
}

/// What the arena holds at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    /// Agents (entities with health).
    pub agents: usize,
    /// Projectiles in flight.
    pub projectiles: usize,
    /// Turrets (children of ships).
    pub turrets: usize,
    /// Agents despawned by Death since the start.
    pub deaths: u64,
    /// Live entities.
    pub entities: usize,
}

/// One frame's times.
#[derive(Clone, Debug, Default)]
pub struct FrameTimes {
    /// The whole frame: the schedule, its commands, the grid swap.
    pub wall: Duration,
    /// The schedule's systems (runsync: Run).
    pub run: Duration,
    /// Applying the frame's commands (runsync: Sync, which also merges the outputs).
    pub commands: Duration,
    /// Each system's wall time and work (runsync's `SystemStats::time` and `work`; see
    /// [`SystemTimes`]), in [`SYSTEM_NAMES`] order.
    pub systems: [(Duration, Duration); SYSTEM_NAMES.len()],
}

/// The arena in bevy_ecs: a world and its one schedule.
pub struct BevyArena {
    world: World,
    schedule: Schedule,
}

impl std::fmt::Debug for BevyArena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BevyArena")
            .field("frame", &self.world.resource::<ArenaTime>().frame)
            .finish_non_exhaustive()
    }
}

/// Sets bevy's `ComputeTaskPool` (a process-wide global) to `workers` threads (0: one per
/// core) if nothing set it yet, and returns the threads it has.
pub fn init_task_pool(workers: usize) -> usize {
    let threads = if workers == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        workers
    };
    ComputeTaskPool::get_or_init(|| {
        TaskPoolBuilder::new()
            .num_threads(threads)
            .thread_name("bevy arena".to_string())
            .build()
    })
    .thread_num()
}

impl BevyArena {
    /// The arena of `config`, empty until its first frame spawns the first wave, on bevy's
    /// `ComputeTaskPool` ([`init_task_pool`] with `config.workers`, unless set before).
    pub fn new(config: ArenaConfig) -> BevyArena {
        init_task_pool(config.workers);
        let side = arena_side(config.agents);
        let mut world = World::new();
        world.insert_resource(ArenaTime {
            dt: 1.0 / 60.0,
            frame: 0,
        });
        world.insert_resource(ArenaRules {
            spawner: spawner_config(config.agents, config.seed),
            steer: 6.0,
            drag: 0.6,
            separation: 30.0,
            min: Vec2::ZERO,
            max: Vec2::splat(side),
        });
        world.init_resource::<SharedGrid>();
        world.init_resource::<NextGrid>();
        world.init_resource::<Deaths>();
        world.init_resource::<SystemTimes>();

        let mut schedule = Schedule::default();
        schedule.set_executor(MultiThreadedExecutor::new());
        // Commands are applied once, after every system (runsync applies structure in its
        // Sync): no sync point inside the frame.
        schedule.set_build_settings(ScheduleBuildSettings {
            auto_insert_apply_deferred: false,
            ..Default::default()
        });
        // Applied by `frame` itself, to time it.
        schedule.set_apply_final_deferred(false);
        use ArenaSystem as S;
        use spawner::spawner;
        use systems::{
            bounds, build_grid, contact, death, drag, expire, integrate, propagate_transforms,
            separation, steer,
        };
        schedule.add_systems((
            // The `Velocity` writers in runsync's registration order, then Integrate.
            steer.in_set(S::Steer),
            drag.in_set(S::Drag).after(S::Steer),
            separation.in_set(S::Separation).after(S::Drag),
            bounds.in_set(S::Bounds).after(S::Separation),
            integrate.in_set(S::Integrate).after(S::Bounds),
            // The other readers of `Position` before its writers (Bounds, Integrate).
            build_grid.in_set(S::BuildGrid).before(S::Bounds),
            spawner
                .in_set(S::Spawner)
                .before(S::Bounds)
                .before(S::PropagateTransforms),
            propagate_transforms
                .in_set(S::PropagateTransforms)
                .before(S::Bounds),
            contact.in_set(S::Contact).before(S::Bounds),
            death.in_set(S::Death).before(S::Contact),
            expire.in_set(S::Expire),
        ));
        BevyArena { world, schedule }
    }

    /// Runs one frame: the schedule, its commands, then the grid built in it becomes the
    /// one the next frame reads and the frame count advances.
    pub fn frame(&mut self) -> FrameTimes {
        let start = Instant::now();
        self.schedule.run(&mut self.world);
        let run = start.elapsed();
        self.schedule.apply_deferred(&mut self.world);
        let commands = start.elapsed() - run;
        self.world.resource_scope(|world, mut next: Mut<NextGrid>| {
            std::mem::swap(&mut next.0, &mut world.resource_mut::<SharedGrid>().0);
        });
        self.world.resource_mut::<ArenaTime>().frame += 1;
        let wall = start.elapsed();
        FrameTimes {
            wall,
            run,
            commands,
            systems: self.world.resource::<SystemTimes>().take(),
        }
    }

    /// What the arena holds now.
    pub fn counts(&mut self) -> Counts {
        let w = &mut self.world;
        Counts {
            agents: w.query_filtered::<(), With<Health>>().iter(w).count(),
            projectiles: w.query_filtered::<(), With<Projectile>>().iter(w).count(),
            turrets: w.query_filtered::<(), With<ChildOf>>().iter(w).count(),
            deaths: w.resource::<Deaths>().0,
            // Not `Entities::count_spawned`: bevy 0.20 keeps resources on entities too.
            entities: w
                .query_filtered::<(), Or<(With<Position>, With<Transform>, With<ChildOf>)>>()
                .iter(w)
                .count(),
        }
    }

    /// The world, between frames.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The world, between frames.
    pub fn world_mut(&mut self) -> &mut World {
        &mut self.world
    }
}
