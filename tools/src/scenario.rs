//! The arena: teams of agents that steer at each other, separate, bump, shoot, take damage,
//! die and respawn in waves.

use glam::Vec2;
use runsync::Replay;
use runsync::prelude::*;
use runsync_systems::{
    AgentTemplate, Bounds, BoundsMode, BuildGrid, Collider, Contact, Damage, Death, Drag, Expire,
    Health, Impulse, Integrate, Lifetime, Position, Projectile, ProjectileTemplate,
    PropagateTransforms, Separation, SpatialGrid, Spawner, SpawnerConfig, Team, TeamTotals,
    TurretTemplate, Velocity,
};

/// Number of teams in the arena.
pub const TEAMS: u8 = 4;

/// The most agents an arena takes: 2^24, about 7 GiB of world at the ~400 bytes an agent
/// costs (its components, its share of turrets, projectiles and the grid), and a field of
/// 10,000 units a side, where an `f32` position still resolves a thousandth of a unit.
pub const MAX_AGENTS: u64 = 1 << 24;

/// The rule for an arena's agent count, one function for the command line (`--entities`)
/// and for a recording's configuration ([`recorded_config`]) alike: at least one per team
/// (the waves spawn whole teams, so fewer agents than teams would be none), at most
/// [`MAX_AGENTS`].
///
/// # Errors
/// A message saying which bound `agents` breaks, as the command line prints it.
pub fn check_agents(agents: u64) -> Result<usize, String> {
    if agents < u64::from(TEAMS) {
        return Err(format!(
            "the arena has {TEAMS} teams and spawns whole teams, so it needs at least {TEAMS} \
             agents (got {agents})"
        ));
    }
    if agents > MAX_AGENTS {
        return Err(format!(
            "the arena takes at most {MAX_AGENTS} agents (about 7 GiB of world; got {agents})"
        ));
    }
    usize::try_from(agents).map_err(|_| format!("{agents} agents do not fit this machine"))
}

/// What to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArenaConfig {
    /// Agents the waves keep alive (projectiles come on top).
    pub agents: usize,
    /// Seed of the spawner.
    pub seed: u64,
    /// Worker threads (0 = one per core).
    pub workers: usize,
}

/// The arena's configuration, as a resource of its world: [`world`] inserts it and opts it
/// into save files, so a save or a replay of the arena says which arena it is, and
/// [`recorded_config`] builds the same one again. No system writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ArenaSetup {
    /// [`ArenaConfig::agents`].
    pub agents: u64,
    /// [`ArenaConfig::seed`].
    pub seed: u64,
}

/// Side of the square arena for `agents` agents: about 6 square units per agent, so
/// agents of radius 0.5 start spread out and crowd only where teams meet.
pub fn arena_side(agents: usize) -> f32 {
    ((agents.max(1) as f32) * 6.0).sqrt().max(20.0)
}

/// Builds the runtime with every system registered. The first frame spawns the first wave.
///
/// Systems, in registration order (which is the order of their outputs in each merge):
/// `BuildGrid`, `Spawner`, `Steer` (a closure: accelerate towards the enemies' centroid),
/// `Drag`, `Separation`, `Integrate`, `PropagateTransforms`, `Bounds`, `Contact`,
/// `Expire`, `Death`. `BuildGrid` indexes the agents once per frame in the
/// [`SpatialGrid`] resource, which `Separation` and `Contact` both search in the next
/// frame. One agent in 16 is a ship with two turrets (children, placed by
/// `PropagateTransforms` from the ship's position and heading); ships fire from their
/// turrets, and a ship's death takes its turrets with it (a cascading despawn). (The field is seen
/// from above, so there is no [`Gravity`](runsync_systems::Gravity): it would only add
/// 100,000 velocity writes a frame that cancel out against `Bounds`.)
///
/// Every type and resource of its world is opted into snapshots and save files, so the
/// arena can be rolled back (`--rollback`), recorded and replayed (`--record`,
/// `--replay`): the components by [`runsync_systems::register`], the [`SpatialGrid`] the
/// next frame reads by [`SpatialGrid::register`], the [`ArenaSetup`] by [`world`]. The
/// systems keep no state from one frame to the next that changes the game (the spawner
/// seeds its generator from the seed and the frame number), so a loaded save runs on as
/// the saved arena did.
pub fn build(config: ArenaConfig) -> Runtime {
    let world = world(config);
    let mut rt = Runtime::builder()
        .workers(config.workers)
        .fixed_hz(60)
        .build(world);
    add_systems(&mut rt, config, Rules::Whole);
    rt
}

/// Which rules the arena's systems play by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rules {
    /// The arena's own ([`build`]): systems that see the whole world.
    Whole,
    /// Local rules, for a world split into shards (`arena --shards`): the shared grid on
    /// a fixed lattice ([`BuildGrid::on_lattice`]), team centres and counts from the
    /// exact [`TeamTotals`] ([`team_totals`]), each agent firing by its own hash
    /// ([`Spawner::local`]). Another game than [`Rules::Whole`]'s, with the same systems.
    Local,
}

/// The arena's [`TeamTotals`]: what a sharded arena adds up over its shards after every
/// frame (`Cluster::global(team_totals, TeamTotals::combine)`).
pub fn team_totals(world: &World) -> TeamTotals {
    TeamTotals::of(world, TEAMS)
}

/// Adds the arena's systems, in the order [`build`] documents, playing by `rules`.
pub fn add_systems(rt: &mut Runtime, config: ArenaConfig, rules: Rules) {
    let side = arena_side(config.agents);
    let (min, max) = (Vec2::ZERO, Vec2::splat(side));
    let per_team = config.agents / usize::from(TEAMS);
    let local = rules == Rules::Local;
    // First: the longest system that cannot split its work, so it starts at once and the
    // others' parallel parts fill the other workers meanwhile.
    rt.add_system(if local {
        BuildGrid::on_lattice(2.0)
    } else {
        BuildGrid::default()
    });
    let spawner = Spawner::new(SpawnerConfig {
        seed: config.seed,
        teams: TEAMS,
        agents_per_team: per_team,
        wave_every: 60,
        min,
        max,
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
    });
    rt.add_system(if local { spawner.local() } else { spawner });
    if local {
        rt.add_system_named("Steer", steer_locally(6.0));
    } else {
        rt.add_system_named("Steer", steer(6.0));
    }
    rt.add_system(Drag { per_second: 0.6 });
    rt.add_system(Separation::new(30.0));
    rt.add_system(Integrate);
    rt.add_system(PropagateTransforms::new());
    rt.add_system(Bounds {
        min,
        max,
        mode: BoundsMode::Bounce,
    });
    rt.add_system(Contact::default());
    rt.add_system(Expire);
    rt.add_system(Death);
}

/// The arena's world before its first frame: every type registered (and opted in, `Debug`
/// text included: values and outputs in provenance and divergence reports), the
/// [`SpatialGrid`] resource, and the [`ArenaSetup`] of `config`; no entity (the first
/// frame spawns the first wave).
pub fn world(config: ArenaConfig) -> World {
    let mut world = World::new();
    runsync_systems::register(&mut world);
    SpatialGrid::register(&mut world);
    // Ships carry turrets.
    world.register_hierarchy();
    // Values and outputs as `Debug` text, for the inspector and divergence reports.
    world
        .debugging::<Position>()
        .debugging::<Velocity>()
        .debugging::<Lifetime>()
        .debugging::<Health>();
    world
        .debugging::<Team>()
        .debugging::<Collider>()
        .debugging::<Damage>()
        .debugging::<Projectile>();
    world.insert_resource(ArenaSetup {
        agents: config.agents as u64,
        seed: config.seed,
    });
    world.saving_resource::<ArenaSetup>();
    world
}

/// The configuration a replay of the arena was recorded with (its start's
/// [`ArenaSetup`]), to run at `workers` workers: checked by the command line's rules
/// ([`check_agents`]) before anything is built from it.
///
/// # Errors
/// If the replay's start does not load as an arena's world (another program's replay, or
/// a corrupt one), or its agent count is not one `--entities` accepts.
pub fn recorded_config(replay: &Replay, workers: usize) -> Result<ArenaConfig, String> {
    let mut w = world(ArenaConfig {
        agents: usize::from(TEAMS),
        seed: 0,
        workers,
    });
    w.load(&mut replay.start_save())
        .map_err(|e| format!("its start is not an arena's: {e}"))?;
    let setup = *w.resource::<ArenaSetup>();
    let agents = check_agents(setup.agents).map_err(|e| format!("its recorded --entities: {e}"))?;
    Ok(ArenaConfig {
        agents,
        seed: setup.seed,
        workers,
    })
}

/// A steering system as a plain closure: every agent accelerates at `accel` towards the
/// centroid of the other teams' agents (computed from last frame's world).
fn steer(accel: f32) -> impl FnMut(&World, &mut Output<'_>) + Send + 'static {
    const T: usize = TEAMS as usize;
    move |world: &World, out: &mut Output<'_>| {
        // Each team's position sum and count, in parallel parts (the same bits at any
        // worker count: the parts are cut by row count).
        let (sums, counts) = out.par_reduce::<(&Position, &Team, With<Health>), _>(
            || ([Vec2::ZERO; T], [0usize; T]),
            |(sums, counts), _, (p, t, ())| {
                let t = usize::from(t.0) % T;
                sums[t] += p.0;
                counts[t] += 1;
            },
            |(sums, counts), (s, c)| {
                for t in 0..T {
                    sums[t] += s[t];
                    counts[t] += c[t];
                }
            },
        );
        let (total, n): (Vec2, usize) = (sums.iter().sum(), counts.iter().sum());
        let targets: [Vec2; T] = std::array::from_fn(|t| {
            let enemies = n - counts[t];
            if enemies == 0 {
                Vec2::NAN
            } else {
                (total - sums[t]) / enemies as f32
            }
        });
        accelerate_towards(world, out, &targets, accel);
    }
}

/// [`steer`] by local rules: the targets are the other teams' centre from the exact
/// [`TeamTotals`] resource (or, without one, the world's own totals).
fn steer_locally(accel: f32) -> impl FnMut(&World, &mut Output<'_>) + Send + 'static {
    move |world: &World, out: &mut Output<'_>| {
        let totals = TeamTotals::current(world, TEAMS);
        let targets: Vec<Vec2> = (0..usize::from(TEAMS))
            .map(|t| totals.enemies_centre(t).unwrap_or(Vec2::NAN))
            .collect();
        accelerate_towards(world, out, &targets, accel);
    }
}

/// Every agent accelerates at `accel` towards its team's target (`targets[team]`; a NaN
/// target: no push).
fn accelerate_towards(world: &World, out: &mut Output<'_>, targets: &[Vec2], accel: f32) {
    let dv = accel * world.resource::<Time>().dt;
    out.par_for_each::<(&Position, &Team, With<Health>, Write<Velocity>)>(
        |_, (p, t, (), mut vel), _| {
            let target = targets[usize::from(t.0) % targets.len()];
            let dir = (target - p.0).normalize_or_zero();
            if dir != Vec2::ZERO {
                vel.set(Impulse(dir * dv));
            }
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::digest;

    #[test]
    fn a_small_arena_lives_and_is_deterministic_across_worker_counts() {
        let run = |workers| {
            let mut rt = build(ArenaConfig {
                agents: 400,
                seed: 3,
                workers,
            });
            let mut digests = Vec::new();
            for _ in 0..90 {
                rt.frame();
                digests.push(digest(rt.world()));
            }
            (digests, rt)
        };
        let (one, rt) = run(1);
        let (two, _) = run(2);
        assert_eq!(one, two);
        let world = rt.world();
        let agents = world.query::<(&Health,)>().count();
        assert!(agents > 300, "waves keep the population up: {agents}");
        assert!(world.len() > agents, "projectiles are flying");
        let names: Vec<&str> = rt.stats().systems.iter().map(|s| &*s.name).collect();
        assert_eq!(names[..4], ["BuildGrid", "Spawner", "Steer", "Drag"]);
    }

    #[test]
    fn a_replay_says_which_arena_it_is() {
        let config = ArenaConfig {
            agents: 40,
            seed: 9,
            workers: 1,
        };
        let mut rt = build(config);
        rt.record_replay::<()>().unwrap();
        rt.frame();
        let mut file = Vec::new();
        rt.finish_replay(&mut file).unwrap();
        let replay = Replay::read(&mut file.as_slice()).unwrap();
        assert_eq!(
            recorded_config(&replay, 3),
            Ok(ArenaConfig {
                workers: 3,
                ..config
            })
        );
    }

    #[test]
    fn a_rollback_replays_the_same_frames_with_the_shared_grid() {
        let mut rt = build(ArenaConfig {
            agents: 400,
            seed: 5,
            workers: 2,
        });
        for _ in 0..40 {
            rt.frame();
        }
        // The snapshot holds the grid the next frame reads (it is opted in), so the
        // re-simulated frames read the same grids as the first run did.
        let saved = rt.snapshot().expect("the arena's types are opted in");
        let run = |rt: &mut Runtime| {
            (0..30)
                .map(|_| {
                    rt.frame();
                    digest(rt.world())
                })
                .collect::<Vec<_>>()
        };
        let first = run(&mut rt);
        rt.restore(&saved);
        assert_eq!(run(&mut rt), first);
    }
}
