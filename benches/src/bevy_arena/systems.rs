//! The arena's systems but the spawner, written as a bevy user writes them for speed:
//! in-place writes through `&mut` query items, `par_iter_mut` for every per-entity pass
//! that runsync runs in parallel chunks (`Output::par_for_each`), `Commands` (and
//! `ParallelCommands` inside a parallel pass) for despawns, and thread-local buffers
//! (`bevy_utils::Parallel`, bevy's own pattern) where a parallel pass writes to other
//! entities. Each mirrors a `runsync_systems` system of the same name: the same queries,
//! constants and arithmetic.

use bevy_ecs::entity::{Entities, Entity};
use bevy_ecs::hierarchy::ChildOf;
use bevy_ecs::query::{Has, With, Without};
use bevy_ecs::system::{Commands, Local, ParallelCommands, Query, Res, ResMut};
use bevy_ecs::utils::Parallel;
use bevy_tasks::ComputeTaskPool;
use runsync_systems::glam::Vec2;

use super::components::{
    ArenaRules, ArenaTime, Collider, Damage, Deaths, GlobalTransform, Health, Lifetime, NextGrid,
    Position, Projectile, SharedGrid, Team, Transform, Velocity,
};
use super::grid::{BODY, Built, Jobs, MAX_GRID_PARTS, TEAM_MASK, VICTIM};
use super::timing::{SystemTimes, id};

/// The shared grid if it is current: built during the previous frame (runsync's
/// `SpatialGrid::current`). In the arena it is current from the second frame on; in the
/// first, runsync's neighbour systems index that frame's world themselves, which is empty
/// (the first wave spawns at its end), so finding nothing is the same game.
fn current<'a>(shared: &'a SharedGrid, time: &ArenaTime) -> Option<&'a Built> {
    let built = &shared.0;
    (built.frame.and_then(|f| f.checked_add(1)) == Some(time.frame)).then_some(built)
}

/// The entities BuildGrid indexes (`Has` reads no data, so it orders nothing against the
/// systems that write `Velocity` and `Health`).
pub type Collidable = (
    Entity,
    &'static Position,
    &'static Collider,
    Option<&'static Team>,
    Has<Velocity>,
    Has<Health>,
    Has<Projectile>,
);

/// Rows per part below which BuildGrid gathers no more parts (runsync's
/// `GATHER_MIN_PART`).
const GATHER_MIN_PART: usize = 2048;

/// `BuildGrid`: indexes bodies and victims (tagged with team and flags) into the grid the
/// next frame reads, in parallel on the `ComputeTaskPool` as runsync's on its workers
/// ([`index_colliders`]).
pub(crate) fn build_grid(
    time: Res<ArenaTime>,
    colliders: Query<Collidable>,
    mut next: ResMut<NextGrid>,
    times: Res<SystemTimes>,
) {
    let timed = times.start(id::BUILD_GRID);
    let built = &mut next.0;
    built.frame = Some(time.frame);
    let jobs = Jobs::new(ComputeTaskPool::get()).timed(&timed);
    index_colliders(&colliders, built, jobs);
}

/// BuildGrid's work, as runsync's `BuildGrid` does it: the colliders cut into at most
/// [`MAX_GRID_PARTS`] parts of consecutive rows (by count only, at least 2,048 rows each,
/// so the grid is the same at every thread count), each gathered by a job a table at a
/// time (`contiguous_iter`: which optional components a table has is decided once, not
/// per row), the grid placed and sorted by cell in parallel
/// ([`Grid::rebuild_parallel`](super::Grid::rebuild_parallel)), then the teams per block,
/// a band of block rows per job. The grid is [`index_colliders_serially`]'s, bit for bit.
///
/// # Panics
/// If the query is not dense (a component of [`Collidable`] stored in a sparse set).
pub fn index_colliders(colliders: &Query<Collidable>, built: &mut Built, jobs: Jobs<'_>) {
    let tables = || {
        colliders
            .contiguous_iter()
            .expect("BuildGrid's components are stored in tables")
    };
    let rows: usize = tables().map(|(entities, ..)| entities.len()).sum();
    let per = rows.div_ceil(MAX_GRID_PARTS).max(GATHER_MIN_PART);
    let parts = rows.div_ceil(per);
    built.grid.rebuild_parallel(jobs, parts, |k, part| {
        let (from, to) = (k * per, (k + 1) * per);
        let mut at = 0;
        for (entities, pos, collider, team, vel, health, shot) in tables() {
            // This table's rows in the part, if any.
            let (start, end) = (at, at + entities.len());
            at = end;
            if end <= from {
                continue;
            }
            if start >= to {
                break;
            }
            let rows = from.max(start) - start..to.min(end) - start;
            let body = vel && !shot;
            let victim = team.is_some() && health;
            if !(body || victim) {
                continue;
            }
            let flags = if body { BODY } else { 0 } | if victim { VICTIM } else { 0 };
            let items = entities[rows.clone()]
                .iter()
                .zip(&pos[rows.clone()])
                .zip(&collider[rows.clone()]);
            match team {
                Some(team) => {
                    for (((&e, p), c), t) in items.zip(&team[rows]) {
                        part.push(e, p.0, c.radius, flags | u32::from(t.0));
                    }
                }
                None => {
                    for ((&e, p), c) in items {
                        part.push(e, p.0, c.radius, flags);
                    }
                }
            }
        }
    });
    built.teams.rebuild_parallel(&built.grid, jobs);
}

/// [`index_colliders`] on one thread, in one pass over the query
/// ([`Grid::rebuild`](super::Grid::rebuild), then the team blocks): the same grid, what
/// the port built before its BuildGrid was parallel, kept as the reference.
pub fn index_colliders_serially(colliders: &Query<Collidable>, built: &mut Built) {
    built.grid.rebuild(
        colliders
            .iter()
            .filter_map(|(e, p, c, team, vel, health, shot)| {
                let body = vel && !shot;
                let victim = team.is_some() && health;
                let tag = team.map_or(0, |t| u32::from(t.0))
                    | if body { BODY } else { 0 }
                    | if victim { VICTIM } else { 0 };
                (body || victim).then_some((e, p.0, c.radius, tag))
            }),
    );
    built.teams.rebuild(&built.grid);
}

/// `Steer`'s sums, kept between frames for their buffers.
#[derive(Default)]
pub(crate) struct SteerScratch {
    sums: Vec<Vec2>,
    counts: Vec<usize>,
    targets: Vec<Vec2>,
}

/// `Steer`: every agent accelerates towards the centroid of the other teams' agents
/// (summed in one pass, then the velocities in parallel).
pub(crate) fn steer(
    rules: Res<ArenaRules>,
    time: Res<ArenaTime>,
    agents: Query<(&Position, &Team), With<Health>>,
    mut movers: Query<(&Position, &Team, &mut Velocity), With<Health>>,
    mut scratch: Local<SteerScratch>,
    times: Res<SystemTimes>,
) {
    let timed = times.start(id::STEER);
    let teams = usize::from(rules.spawner.teams);
    let SteerScratch {
        sums,
        counts,
        targets,
    } = &mut *scratch;
    sums.clear();
    sums.resize(teams, Vec2::ZERO);
    counts.clear();
    counts.resize(teams, 0);
    targets.resize(teams, Vec2::ZERO);
    for (p, t) in &agents {
        let t = usize::from(t.0) % teams;
        sums[t] += p.0;
        counts[t] += 1;
    }
    let (total, n): (Vec2, usize) = (sums.iter().sum(), counts.iter().sum());
    for t in 0..teams {
        let enemies = n - counts[t];
        targets[t] = if enemies == 0 {
            Vec2::NAN
        } else {
            (total - sums[t]) / enemies as f32
        };
    }
    let dv = rules.steer * time.dt;
    let targets = &*targets;
    timed.parallel(|| {
        movers.par_iter_mut().for_each_init(
            || times.chunk(id::STEER),
            |_, (p, t, mut v)| {
                let target = targets[usize::from(t.0) % targets.len()];
                let dir = (target - p.0).normalize_or_zero();
                if dir != Vec2::ZERO {
                    v.0 += dir * dv;
                }
            },
        );
    });
}

/// `Drag`: each moving entity loses the fraction `1 - exp(-drag * dt)` of its velocity.
pub(crate) fn drag(
    rules: Res<ArenaRules>,
    time: Res<ArenaTime>,
    mut q: Query<&mut Velocity>,
    times: Res<SystemTimes>,
) {
    let timed = times.start(id::DRAG);
    let k = 1.0 - (-rules.drag * time.dt).exp();
    if k == 0.0 {
        return;
    }
    timed.parallel(|| {
        q.par_iter_mut().for_each_init(
            || times.chunk(id::DRAG),
            |_, mut v| {
                if v.0 != Vec2::ZERO {
                    let d = -v.0 * k;
                    v.0 += d;
                }
            },
        );
    });
}

/// `Separation`: pushes overlapping bodies apart, neighbours from the shared grid (a frame
/// old), summed per body in grid order; in parallel over the bodies.
pub(crate) fn separation(
    rules: Res<ArenaRules>,
    time: Res<ArenaTime>,
    shared: Res<SharedGrid>,
    mut bodies: Query<(Entity, &Position, &Collider, &mut Velocity), Without<Projectile>>,
    times: Res<SystemTimes>,
) {
    let timed = times.start(id::SEPARATION);
    let k = rules.separation * time.dt;
    let Some(built) = current(&shared, &time) else {
        return;
    };
    let grid = &built.grid;
    if grid.is_empty() || k == 0.0 {
        return;
    }
    let max_r = grid.max_radius();
    timed.parallel(|| {
        bodies.par_iter_mut().for_each_init(
            || times.chunk(id::SEPARATION),
            |_, (e, p, c, mut v)| {
                let mut push = Vec2::ZERO;
                grid.for_each_within(p.0, c.radius + max_r, |other| {
                    if other.entity == e || other.tag & BODY == 0 {
                        return;
                    }
                    let reach = c.radius + other.radius;
                    let d = p.0 - other.pos;
                    let dist2 = d.length_squared();
                    if dist2 >= reach * reach || reach <= 0.0 {
                        return;
                    }
                    let dist = dist2.sqrt();
                    let dir = if dist > 0.0 {
                        d / dist
                    } else if e.to_bits() < other.entity.to_bits() {
                        Vec2::NEG_X
                    } else {
                        Vec2::X
                    };
                    push += dir * ((reach - dist) / reach);
                });
                if push != Vec2::ZERO {
                    v.0 += push * k;
                }
            },
        );
    });
}

/// `Integrate`: moves every entity by `velocity * dt`, in parallel.
pub(crate) fn integrate(
    time: Res<ArenaTime>,
    mut q: Query<(&Velocity, &mut Position)>,
    times: Res<SystemTimes>,
) {
    let timed = times.start(id::INTEGRATE);
    let dt = time.dt;
    timed.parallel(|| {
        q.par_iter_mut().for_each_init(
            || times.chunk(id::INTEGRATE),
            |_, (v, mut p)| {
                if v.0 != Vec2::ZERO {
                    p.0 += v.0 * dt;
                }
            },
        );
    });
}

/// `PropagateTransforms`: every root's `GlobalTransform` from its `Position` and
/// `Transform`, then every child's from its parent's, both passes in parallel.
///
/// runsync walks each root's tree depth first (any depth); the arena's trees are one level
/// deep (ships and their turrets), which these two passes cover with the same work (one
/// composition per entity). A deeper hierarchy would need bevy_transform's walk down the
/// tree (an `unsafe` parallel descent), not more of these passes.
pub(crate) fn propagate_transforms(
    mut roots: Query<(Option<&Position>, &Transform, &mut GlobalTransform), Without<ChildOf>>,
    mut children: Query<(&ChildOf, &Transform, &mut GlobalTransform)>,
    times: Res<SystemTimes>,
) {
    let timed = times.start(id::PROPAGATE);
    timed.parallel(|| {
        roots.par_iter_mut().for_each_init(
            || times.chunk(id::PROPAGATE),
            |_, (pos, local, mut global)| {
                let origin =
                    runsync_systems::Transform::from_translation(pos.map_or(Vec2::ZERO, |p| p.0));
                global.0 = origin.then(&local.0);
            },
        );
    });
    let roots = &roots;
    timed.parallel(|| {
        children.par_iter_mut().for_each_init(
            || times.chunk(id::PROPAGATE),
            |_, (child_of, local, mut global)| {
                if let Ok((_, _, parent)) = roots.get(child_of.parent()) {
                    global.0 = parent.0.then(&local.0);
                }
            },
        );
    });
}

/// `Bounds` (bounce): an entity outside the field is clamped back and the outward
/// component of its velocity reflected; in parallel, writing only what changes.
pub(crate) fn bounds(
    rules: Res<ArenaRules>,
    mut q: Query<(&mut Position, Option<&mut Velocity>)>,
    times: Res<SystemTimes>,
) {
    let (min, max) = (rules.min, rules.max);
    let timed = times.start(id::BOUNDS);
    timed.parallel(|| {
        q.par_iter_mut().for_each_init(
            || times.chunk(id::BOUNDS),
            |_, (mut p, v)| {
                let pos = p.0;
                let outside = pos.cmplt(min) | pos.cmpgt(max);
                if !outside.any() {
                    return;
                }
                let vel = v.as_ref().map_or(Vec2::ZERO, |v| v.0);
                let dp = pos.clamp(min, max) - pos;
                let out_low = pos.cmplt(min) & vel.cmplt(Vec2::ZERO);
                let out_high = pos.cmpgt(max) & vel.cmpgt(Vec2::ZERO);
                let dv = Vec2::select(out_low | out_high, -2.0 * vel, Vec2::ZERO);
                if dp != Vec2::ZERO {
                    p.0 += dp;
                }
                if let Some(mut v) = v
                    && dv != Vec2::ZERO
                {
                    v.0 += dv;
                }
            },
        );
    });
}

/// What one thread of Contact's parallel pass found: damage to apply and projectiles
/// spent.
#[derive(Default)]
pub(crate) struct ContactFound {
    hits: Vec<(Entity, i32)>,
    spent: Vec<Entity>,
}

/// The attackers Contact looks at.
type Attacker = (
    Entity,
    &'static Position,
    &'static Collider,
    &'static Team,
    &'static Damage,
    Has<Projectile>,
);

/// `Contact`: every attacker hurts each overlapping victim of another team (a projectile:
/// the first, then it is spent), victims from the shared grid (a frame old, so the dead
/// are skipped). The search runs in parallel over the attackers into per-thread buffers;
/// then the damage is applied and the spent projectiles despawned.
#[allow(clippy::too_many_arguments)]
pub(crate) fn contact(
    time: Res<ArenaTime>,
    shared: Res<SharedGrid>,
    attackers: Query<Attacker>,
    mut victims: Query<&mut Health>,
    entities: &Entities,
    mut found: Local<Parallel<ContactFound>>,
    mut commands: Commands,
    times: Res<SystemTimes>,
) {
    let timed = times.start(id::CONTACT);
    let Some(built) = current(&shared, &time) else {
        return;
    };
    let (grid, teams) = (&built.grid, &built.teams);
    if grid.is_empty() {
        return;
    }
    let max_r = grid.max_radius();
    let found_in = &*found;
    timed.parallel(|| {
        attackers.par_iter().for_each_init(
            || (times.chunk(id::CONTACT), found_in.borrow_local_mut()),
            |(_, found), (e, p, c, team, dmg, shot)| {
                let reach = c.radius + max_r;
                // Away from the fronts every victim around is a teammate: nothing to search.
                if teams.only(p.0, reach, team.0) {
                    return;
                }
                let team = u32::from(team.0);
                let mut hit = false;
                grid.for_each_within(p.0, reach, |v| {
                    if v.tag & VICTIM == 0 || v.tag & TEAM_MASK == team || (hit && shot) {
                        return;
                    }
                    let reach = c.radius + v.radius;
                    // The grid is a frame old: victims may have died since.
                    if p.0.distance_squared(v.pos) < reach * reach
                        && entities.contains_spawned(v.entity)
                    {
                        found.hits.push((v.entity, -dmg.0));
                        hit = true;
                    }
                });
                if hit && shot {
                    found.spent.push(e);
                }
            },
        );
    });
    for found in found.iter_mut() {
        for (victim, change) in found.hits.drain(..) {
            if let Ok(mut h) = victims.get_mut(victim) {
                h.apply(change);
            }
        }
        for shot in found.spent.drain(..) {
            commands.entity(shot).try_despawn();
        }
    }
}

/// `Expire`: ages every lifetime by `dt` and despawns what runs out, in parallel.
pub(crate) fn expire(
    time: Res<ArenaTime>,
    mut q: Query<(Entity, &mut Lifetime)>,
    commands: ParallelCommands,
    times: Res<SystemTimes>,
) {
    let timed = times.start(id::EXPIRE);
    let dt = time.dt;
    timed.parallel(|| {
        q.par_iter_mut().for_each_init(
            || times.chunk(id::EXPIRE),
            |_, (e, mut l)| {
                if l.0 - dt <= 0.0 {
                    commands.command_scope(|mut c| {
                        c.entity(e).try_despawn();
                    });
                } else {
                    l.0 -= dt;
                }
            },
        );
    });
}

/// `Death`: despawns every entity at 0 health or below (a ship takes its turrets: bevy's
/// despawn follows `Children`), counting them.
pub(crate) fn death(
    q: Query<(Entity, &Health)>,
    mut commands: Commands,
    mut deaths: ResMut<Deaths>,
    times: Res<SystemTimes>,
) {
    let _t = times.start(id::DEATH);
    let mut n = 0;
    for (e, h) in &q {
        if h.hp <= 0 {
            commands.entity(e).despawn();
            n += 1;
        }
    }
    deaths.0 += n;
}
