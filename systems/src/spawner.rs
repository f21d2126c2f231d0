//! Deterministic waves of agents and their projectiles.

use std::borrow::Cow;

use glam::Vec2;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg32;
use runsync::prelude::*;

use crate::transform::GlobalTransform;
use crate::transform::Transform;
use crate::{Collider, Damage, Health, Lifetime, Position, Projectile, Team, Velocity, dt};

/// What an agent is spawned with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AgentTemplate {
    /// [`Collider`] radius.
    pub radius: f32,
    /// Full [`Health`].
    pub health: i32,
    /// Melee [`Damage`] per frame of contact.
    pub damage: i32,
    /// Initial speed (random direction).
    pub speed: f32,
}

/// What a projectile is spawned with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProjectileTemplate {
    /// [`Collider`] radius.
    pub radius: f32,
    /// Speed, towards the enemies' centroid.
    pub speed: f32,
    /// [`Lifetime`] in seconds.
    pub lifetime: f32,
    /// [`Damage`] on impact.
    pub damage: i32,
    /// Shots per agent per second, on average (each frame an agent fires with probability
    /// `rate * dt`).
    pub rate: f32,
}

/// Which agents are ships with turrets, and their turrets.
///
/// A *ship* is an agent spawned with a [`Transform`] (its heading: the direction of its
/// first velocity) and a [`GlobalTransform`]; in the frame after it appears, the
/// [`Spawner`] gives it `count` turrets, children ([`ChildOf`]) with a `Transform` at
/// `distance` to each side, a `GlobalTransform` (kept by
/// [`PropagateTransforms`](crate::PropagateTransforms)) and the ship's [`Team`]. A ship
/// fires from its turrets, in turn; when it dies its turrets go with it (a cascading
/// despawn). Needs [`World::register_hierarchy`] when `every > 0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TurretTemplate {
    /// One agent in `every` of a wave is a ship; 0: none.
    pub every: usize,
    /// Turrets per ship, alternately left and right, further back each pair.
    pub count: u8,
    /// Distance of the turrets from the ship's centre line.
    pub distance: f32,
}

impl TurretTemplate {
    /// No ships.
    pub const NONE: TurretTemplate = TurretTemplate {
        every: 0,
        count: 0,
        distance: 0.0,
    };

    /// Where turret `k` sits on its ship.
    fn offset(&self, k: u8) -> Vec2 {
        let side = if k % 2 == 0 { 1.0 } else { -1.0 };
        Vec2::new(-0.3 * f32::from(k / 2), side * self.distance)
    }
}

/// Configuration of a [`Spawner`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpawnerConfig {
    /// Seed of the spawner's random generator: same seed, same game.
    pub seed: u64,
    /// Number of teams (`Team(0)..Team(teams)`).
    pub teams: u8,
    /// Agents each wave tops every team up to.
    pub agents_per_team: usize,
    /// Frames between waves; the first wave is in the first frame ([`Time::frame`] 0).
    pub wave_every: u64,
    /// Lower corner of the arena. Team `t` spawns in the `t`-th vertical strip.
    pub min: Vec2,
    /// Upper corner of the arena.
    pub max: Vec2,
    /// Agents.
    pub agent: AgentTemplate,
    /// Projectiles.
    pub projectile: ProjectileTemplate,
    /// Ships and their turrets ([`TurretTemplate::NONE`] for none).
    pub turrets: TurretTemplate,
}

/// Spawns waves of agents and makes agents fire projectiles, deterministically.
///
/// An *agent* is an entity with [`Team`] and [`Health`]; it is spawned with [`Position`],
/// [`Velocity`], [`Collider`], [`Team`], [`Health`] and [`Damage`]. Every
/// [`wave_every`](SpawnerConfig::wave_every) frames each team is topped up to
/// [`agents_per_team`](SpawnerConfig::agents_per_team) — dead agents respawn in their
/// team's strip of the arena. Every frame each agent fires, with probability
/// `rate * dt`, a [`Projectile`] (with [`Lifetime`] and [`Damage`]) towards the centroid of
/// the other teams' agents.
///
/// With [`turrets`](SpawnerConfig::turrets), one agent in
/// [`every`](TurretTemplate::every) of a wave is a *ship*: it also gets a [`Transform`]
/// (its heading) and a [`GlobalTransform`], turrets as children in the next frame, and
/// fires from them (see [`TurretTemplate`]).
///
/// All randomness comes from a PCG generator seeded with
/// [`seed`](SpawnerConfig::seed) and the frame number at the start of every frame, then
/// consumed in query order — which depends only on the world — so the same seed gives the
/// same game on any worker count. Because the generator's state is a function of the
/// world's frame, the spawner keeps no state of its own across frames: restoring a
/// snapshot ([`Runtime::restore`](runsync::Runtime::restore)) and re-running frames
/// replays exactly the same spawns (rollback).
///
/// A wave is spawned in space-filling-curve order (Z-order over cells of 4 x 4 units), not
/// in the order its positions were drawn: agents near each other in space are then near
/// each other in storage, so neighbour searches ([`Separation`](crate::Separation),
/// [`Contact`](crate::Contact)), which visit agents in storage order, walk the grid's
/// memory mostly in order instead of missing the cache on nearly every search.
///
/// ```
/// use glam::Vec2;
/// use runsync::prelude::*;
/// use runsync_systems::*;
/// let config = SpawnerConfig {
///     seed: 7, teams: 2, agents_per_team: 10, wave_every: 60,
///     min: Vec2::ZERO, max: Vec2::splat(100.0),
///     agent: AgentTemplate { radius: 0.5, health: 10, damage: 1, speed: 2.0 },
///     projectile: ProjectileTemplate { radius: 0.2, speed: 20.0, lifetime: 1.0, damage: 5, rate: 0.0 },
///     turrets: TurretTemplate::NONE,
/// };
/// let mut world = World::new();
/// runsync_systems::register(&mut world);
/// let mut rt = Runtime::builder().build(world);
/// rt.add_system(Spawner::new(config));
/// rt.frame(); // the first wave is spawned in this Sync
/// assert_eq!(rt.world().len(), 20);
/// ```
#[derive(Clone, Debug)]
pub struct Spawner {
    config: SpawnerConfig,
    /// Local rules ([`local`](Spawner::local)).
    local: bool,
    rng: Pcg32,
    /// Per team: live agents and the sum of their positions (reused buffers).
    counts: Vec<usize>,
    sums: Vec<Vec2>,
    /// Per part of the agents, their teams' counts and position sums (kept for the
    /// buffers; see `Output::par_fold`).
    parts: Vec<(Vec<usize>, Vec<Vec2>)>,
    /// The wave being spawned, to be sorted into Z-order (a reused buffer).
    wave: Vec<WaveAgent>,
}

/// An agent of the wave being spawned.
#[derive(Clone, Copy, Debug)]
struct WaveAgent {
    /// Z-order of its 4 x 4 cell (high 32 bits), then the order it was drawn in: a key
    /// that no two agents share, so an unstable (allocation-free) sort is deterministic.
    key: u64,
    pos: Vec2,
    vel: Vec2,
    team: u8,
    ship: bool,
}

/// The Morton code of `(x, y)`: their bits interleaved, `x` in the even positions.
fn z_order(x: u16, y: u16) -> u32 {
    fn spread(v: u16) -> u32 {
        let mut v = u32::from(v);
        v = (v | (v << 8)) & 0x00ff_00ff;
        v = (v | (v << 4)) & 0x0f0f_0f0f;
        v = (v | (v << 2)) & 0x3333_3333;
        (v | (v << 1)) & 0x5555_5555
    }
    spread(x) | (spread(y) << 1)
}

impl Spawner {
    /// A spawner with its generator seeded from `config.seed`.
    ///
    /// # Panics
    /// If `config.teams` is 0 or `config.min` is not below `config.max`.
    pub fn new(config: SpawnerConfig) -> Spawner {
        assert!(config.teams > 0, "Spawner needs at least one team");
        assert!(
            config.min.cmplt(config.max).all(),
            "Spawner arena must have min < max"
        );
        Spawner {
            rng: Pcg32::seed_from_u64(config.seed),
            local: false,
            config,
            counts: Vec::new(),
            sums: Vec::new(),
            parts: Vec::new(),
            wave: Vec::new(),
        }
    }

    /// This spawner with *local* rules, for a world split into shards (`runsync-cluster`),
    /// where no system sees the whole world:
    ///
    /// - the team counts and centres come from the [`TeamTotals`] resource when there is
    ///   one (a sharded world adds its shards' parts up after every frame), else from the
    ///   world — summed exactly either way (fixed point), so they do not depend on the
    ///   order of the sum;
    /// - each agent fires or not by a hash of (seed, frame, its id) — not by one random
    ///   stream drawn along the whole world, which a shard cannot draw its part of.
    ///
    /// Waves draw from the seeded generator as before: every shard draws the whole wave
    /// and keeps what lands in its region. Another game than [`new`](Self::new)'s (other
    /// shooters, team centres rounded otherwise).
    pub fn local(mut self) -> Spawner {
        self.local = true;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &SpawnerConfig {
        &self.config
    }

    /// Failures before the next success of a Bernoulli(`chance`) trial, `chance` in (0, 1].
    fn gap(&mut self, chance: f32) -> u64 {
        if chance >= 1.0 {
            return 0;
        }
        let u: f64 = self.rng.random(); // [0, 1)
        let g = (1.0 - u).ln() / (1.0 - f64::from(chance)).ln();
        // `as` saturates, so a huge gap (tiny chance) just means "no shot this frame".
        g as u64
    }

    /// Draws an agent of `team` into the wave.
    fn draw_agent(&mut self, team: u8) {
        let c = &self.config;
        let strip = (c.max.x - c.min.x) / f32::from(c.teams);
        let x0 = c.min.x + strip * f32::from(team);
        let pos = Vec2::new(
            self.rng.random_range(x0..x0 + strip),
            self.rng.random_range(c.min.y..c.max.y),
        );
        let angle = self.rng.random_range(0.0..std::f32::consts::TAU);
        let vel = Vec2::from_angle(angle) * c.agent.speed;
        // `as` saturates: far-off cells share the edge's code, which only costs locality.
        let cell = (pos - c.min) / 4.0;
        let z = z_order(cell.x as u16, cell.y as u16);
        let drawn = self.wave.len() as u64;
        let every = self.config.turrets.every as u64;
        self.wave.push(WaveAgent {
            key: (u64::from(z) << 32) | drawn,
            pos,
            vel,
            team,
            ship: every > 0 && drawn % every == every - 1,
        });
    }

    /// Spawns the wave in Z-order.
    fn spawn_wave(&mut self, out: &mut Output<'_>) {
        let c = &self.config;
        self.wave.sort_unstable_by_key(|a| a.key);
        for a in self.wave.drain(..) {
            // No one needs the id this frame: a deferred spawn reserves none (a wave of
            // thousands would otherwise take overflow ids; see `Output::spawn`). Ships
            // get their turrets next frame, once their ids are known.
            let agent = (
                Position(a.pos),
                Velocity(a.vel),
                Collider {
                    radius: c.agent.radius,
                },
                Team(a.team),
                Health::full(c.agent.health),
                Damage(c.agent.damage),
            );
            if a.ship {
                let heading = Transform {
                    translation: Vec2::ZERO,
                    rotation: a.vel.normalize_or(Vec2::X),
                };
                let (p, v, col, t, h, d) = agent;
                out.spawn_deferred((p, v, col, t, h, d, heading, GlobalTransform::default()));
            } else {
                out.spawn_deferred(agent);
            }
        }
    }

    /// Gives the ships that appeared in the last Sync their turrets.
    fn arm_ships(&self, world: &World, out: &mut Output<'_>) {
        let t = self.config.turrets;
        let new_ships =
            world.query_filtered::<(&Team,), (Added<Transform>, With<Health>, Without<Children>)>();
        for (ship, (team,)) in new_ships {
            for k in 0..t.count {
                out.spawn_deferred((
                    Transform::from_translation(t.offset(k)),
                    GlobalTransform::default(),
                    ChildOf(ship),
                    *team,
                ));
            }
        }
    }

    /// Where `shooter` (at `pos`) fires from in frame `frame`: its turrets in turn, once
    /// their world positions are known (from the frame after they appeared); else itself.
    fn muzzle(world: &World, shooter: Entity, pos: Vec2, frame: u64) -> Vec2 {
        let turrets = world.children(shooter);
        if turrets.is_empty() {
            return pos;
        }
        let turret = turrets[(frame % turrets.len() as u64) as usize];
        match world.get::<GlobalTransform>(turret) {
            Some(g) if !world.is_added::<GlobalTransform>(turret) => g.translation(),
            _ => pos,
        }
    }
}

impl System for Spawner {
    fn run(&mut self, world: &World, out: &mut Output<'_>) {
        let frame = world.resource::<Time>().frame;
        self.rng =
            Pcg32::seed_from_u64(self.config.seed ^ frame.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let teams = usize::from(self.config.teams);
        self.counts.clear();
        self.counts.resize(teams, 0);
        self.sums.clear();
        self.sums.resize(teams, Vec2::ZERO);
        if self.local {
            self.fire_locally(world, out, frame);
        } else {
            // Each team's count and position sum, in parallel parts (cut by row count, so
            // the same bits at any worker count), combined part by part in order.
            out.par_fold::<(&Position, &Team, With<Health>), _>(
                &mut self.parts,
                |(counts, sums)| {
                    counts.clear();
                    counts.resize(teams, 0);
                    sums.clear();
                    sums.resize(teams, Vec2::ZERO);
                },
                |(counts, sums), _, (p, t, ())| {
                    if let Some(n) = counts.get_mut(usize::from(t.0)) {
                        *n += 1;
                        sums[usize::from(t.0)] += p.0;
                    }
                },
            );
            for (counts, sums) in &self.parts {
                for t in 0..teams {
                    self.counts[t] += counts[t];
                    self.sums[t] += sums[t];
                }
            }
            self.fire(world, out, frame);
        }

        if self.config.turrets.every > 0 {
            self.arm_ships(world, out);
        }

        // Waves: top every team up.
        if frame % self.config.wave_every.max(1) == 0 {
            for team in 0..self.config.teams {
                let missing = self
                    .config
                    .agents_per_team
                    .saturating_sub(self.counts[usize::from(team)]);
                for _ in 0..missing {
                    self.draw_agent(team);
                }
            }
            self.spawn_wave(out);
        }
    }

    fn name(&self) -> Cow<'static, str> {
        "Spawner".into()
    }
}

impl Spawner {
    /// One random stream along the whole world's agents: who fires, aimed at the other
    /// teams' centroid (from `counts` and `sums`).
    fn fire(&mut self, world: &World, out: &mut Output<'_>, frame: u64) {
        let p = self.config.projectile;
        let chance = (p.rate * dt(world)).clamp(0.0, 1.0);
        if chance > 0.0 {
            let total: Vec2 = self.sums.iter().sum();
            let total_n: usize = self.counts.iter().sum();
            // Rather than one draw per agent, draw the number of agents to skip before the
            // next shot (geometric with success `chance`): the same distribution, with one
            // draw per shot instead of one per agent.
            // The skipped agents are jumped over (`nth`), not visited.
            let mut query = world.query::<(&Position, &Team, With<Health>)>();
            let mut skip = self.gap(chance);
            while let Some((shooter, (pos, team, ()))) =
                query.nth(usize::try_from(skip).unwrap_or(usize::MAX))
            {
                skip = self.gap(chance);
                let t = usize::from(team.0);
                let Some(&own_n) = self.counts.get(t) else {
                    continue;
                };
                let enemies = total_n - own_n;
                if enemies == 0 {
                    continue;
                }
                let target = (total - self.sums[t]) / enemies as f32;
                self.shoot(world, out, frame, shooter, pos.0, *team, target);
            }
        }
    }

    /// Local rules: team counts from [`TeamTotals`], each agent firing by its own hash.
    fn fire_locally(&mut self, world: &World, out: &mut Output<'_>, frame: u64) {
        let teams = self.config.teams;
        let totals = TeamTotals::current(world, teams);
        for (t, n) in self.counts.iter_mut().enumerate() {
            *n = totals.count(t) as usize;
        }
        let chance = (self.config.projectile.rate * dt(world)).clamp(0.0, 1.0);
        if chance <= 0.0 {
            return;
        }
        let targets: Vec<Option<Vec2>> = (0..usize::from(teams))
            .map(|t| totals.enemies_centre(t))
            .collect();
        let seed = self.config.seed;
        for (shooter, (pos, team, ())) in world.query::<(&Position, &Team, With<Health>)>() {
            if fire_roll(seed, frame, shooter) >= chance {
                continue;
            }
            if let Some(&Some(target)) = targets.get(usize::from(team.0)) {
                self.shoot(world, out, frame, shooter, pos.0, *team, target);
            }
        }
    }

    /// Spawns `shooter`'s projectile towards `target`.
    #[allow(clippy::too_many_arguments)]
    fn shoot(
        &self,
        world: &World,
        out: &mut Output<'_>,
        frame: u64,
        shooter: Entity,
        pos: Vec2,
        team: Team,
        target: Vec2,
    ) {
        let p = self.config.projectile;
        let start_gap = self.config.agent.radius + p.radius + 0.01;
        let dir = (target - pos).normalize_or(Vec2::X);
        let from = if self.config.turrets.every > 0 {
            Self::muzzle(world, shooter, pos, frame)
        } else {
            pos
        };
        out.spawn_deferred((
            Position(from + dir * start_gap),
            Velocity(dir * p.speed),
            Collider { radius: p.radius },
            team,
            Damage(p.damage),
            Lifetime(p.lifetime),
            Projectile,
        ));
    }
}

/// A number in `[0, 1)` from (seed, frame, entity): whether an agent fires this frame,
/// without a stream shared by every agent.
fn fire_roll(seed: u64, frame: u64, e: Entity) -> f32 {
    let mut x = seed ^ frame.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ e.to_bits().rotate_left(17);
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 40) as f32 / (1u64 << 24) as f32
}

/// Per team, its agents (entities with [`Position`], [`Team`] and [`Health`]) counted and
/// their positions summed in 1/1024 units as integers: exact, so the totals do not depend
/// on the order they were summed in or on how the world was split. What a
/// [`Spawner::local`] and local steering read as team sizes and centres; a world split
/// into shards computes each shard's part and adds them up (`runsync-cluster`'s
/// `Cluster::global(part, TeamTotals::combine)`).
///
/// The sums wrap (as does every count), never overflow: a world whose positions are
/// huge (from a save) and totals from another process (counts and sums of any value) add
/// up to the same bits in every build, and never panic.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TeamTotals {
    /// Per team, its agents.
    pub counts: Vec<u64>,
    /// Per team, the sum of its agents' positions, in 1/1024 units.
    pub sums: Vec<[i64; 2]>,
}

impl TeamTotals {
    /// The totals of `world`'s agents of teams `0..teams` (others are not counted).
    pub fn of(world: &World, teams: u8) -> TeamTotals {
        let n = usize::from(teams);
        let mut t = TeamTotals {
            counts: vec![0; n],
            sums: vec![[0; 2]; n],
        };
        for (_, (p, team, ())) in world.query::<(&Position, &Team, With<Health>)>() {
            let k = usize::from(team.0);
            if k < n {
                // `as` saturates a position past the `i64` range of 1/1024 units.
                let fixed = |v: f32| (f64::from(v) * 1024.0).round() as i64;
                t.counts[k] = t.counts[k].wrapping_add(1);
                t.sums[k][0] = t.sums[k][0].wrapping_add(fixed(p.0.x));
                t.sums[k][1] = t.sums[k][1].wrapping_add(fixed(p.0.y));
            }
        }
        t
    }

    /// The world's [`TeamTotals`] resource if it has one (a sharded world's, added up
    /// over its shards), else the totals of the world itself ([`of`](Self::of)).
    pub fn current(world: &World, teams: u8) -> std::borrow::Cow<'_, TeamTotals> {
        match world.get_resource::<TeamTotals>() {
            Some(t) => std::borrow::Cow::Borrowed(t),
            None => std::borrow::Cow::Owned(TeamTotals::of(world, teams)),
        }
    }

    /// Adds `part` (another part of the same world) to `total`.
    pub fn combine(total: &mut TeamTotals, part: TeamTotals) {
        let n = total.counts.len().max(part.counts.len());
        total.counts.resize(n, 0);
        total.sums.resize(n, [0; 2]);
        for (k, (c, s)) in part.counts.iter().zip(&part.sums).enumerate() {
            total.counts[k] = total.counts[k].wrapping_add(*c);
            total.sums[k][0] = total.sums[k][0].wrapping_add(s[0]);
            total.sums[k][1] = total.sums[k][1].wrapping_add(s[1]);
        }
    }

    /// Team `team`'s agents (0 for a team not counted).
    pub fn count(&self, team: usize) -> u64 {
        self.counts.get(team).copied().unwrap_or(0)
    }

    /// The centre of every agent not of team `team`, if there is one.
    pub fn enemies_centre(&self, team: usize) -> Option<Vec2> {
        let (mut n, mut x, mut y) = (0u64, 0i64, 0i64);
        for (k, (c, s)) in self.counts.iter().zip(&self.sums).enumerate() {
            if k != team {
                n = n.wrapping_add(*c);
                x = x.wrapping_add(s[0]);
                y = y.wrapping_add(s[1]);
            }
        }
        (n > 0).then(|| {
            let scale = n as f64 * 1024.0;
            Vec2::new((x as f64 / scale) as f32, (y as f64 / scale) as f32)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::world;

    fn config(rate: f32) -> SpawnerConfig {
        SpawnerConfig {
            seed: 42,
            teams: 2,
            agents_per_team: 50,
            wave_every: 2,
            min: Vec2::ZERO,
            max: Vec2::new(100.0, 50.0),
            agent: AgentTemplate {
                radius: 0.5,
                health: 10,
                damage: 1,
                speed: 1.0,
            },
            projectile: ProjectileTemplate {
                radius: 0.1,
                speed: 10.0,
                lifetime: 1.0,
                damage: 3,
                rate,
            },
            turrets: TurretTemplate::NONE,
        }
    }

    fn snapshot(world: &World) -> Vec<(u64, [u32; 2], u8)> {
        world
            .query::<(&Position, &Team)>()
            .map(|(e, (p, t))| (e.to_bits(), [p.0.x.to_bits(), p.0.y.to_bits()], t.0))
            .collect()
    }

    fn run(seed: u64, workers: usize, frames: usize) -> Vec<(u64, [u32; 2], u8)> {
        let mut rt = Runtime::builder().workers(workers).dt(0.25).build(world());
        rt.add_system(Spawner::new(SpawnerConfig {
            seed,
            ..config(2.0)
        }));
        for _ in 0..frames {
            rt.frame();
        }
        snapshot(rt.world())
    }

    #[test]
    fn a_wave_is_stored_in_z_order() {
        assert_eq!(z_order(0b11, 0b00), 0b0101);
        assert_eq!(z_order(0b00, 0b11), 0b1010);
        assert_eq!(z_order(u16::MAX, u16::MAX), u32::MAX);
        let mut rt = Runtime::builder().workers(1).build(world());
        rt.add_system(Spawner::new(config(0.0)));
        rt.frame();
        let keys: Vec<u32> = rt
            .world()
            .query::<(&Position,)>()
            .map(|(_, (p,))| z_order((p.0.x / 4.0) as u16, (p.0.y / 4.0) as u16))
            .collect();
        assert_eq!(keys.len(), 100);
        assert!(keys.is_sorted(), "{keys:?}");
    }

    #[test]
    fn waves_fill_each_team_in_its_strip_and_respawn_the_dead() {
        let mut rt = Runtime::builder().workers(1).build(world());
        rt.add_system(Spawner::new(config(0.0)));
        rt.frame();
        assert_eq!(rt.world().len(), 100);
        for (_, (p, t)) in rt.world().query::<(&Position, &Team)>() {
            let strip = if t.0 == 0 { 0.0..50.0 } else { 50.0..100.0 };
            assert!(strip.contains(&p.0.x) && (0.0..50.0).contains(&p.0.y));
        }
        let victims: Vec<Entity> = rt
            .world()
            .query::<(&Team,)>()
            .map(|(e, _)| e)
            .take(7)
            .collect();
        for e in victims {
            rt.world_mut().despawn(e);
        }
        rt.frame(); // frame 1: no wave
        assert_eq!(rt.world().len(), 93);
        rt.frame(); // frame 2: wave
        assert_eq!(rt.world().len(), 100);
    }

    #[test]
    fn agents_fire_projectiles_towards_the_enemy() {
        let mut rt = Runtime::builder().workers(1).dt(0.25).build(world());
        rt.add_system(Spawner::new(config(2.0))); // 50% per agent per frame
        rt.frame();
        rt.frame();
        let shots: Vec<(Velocity, Team)> = rt
            .world()
            .query::<(&Velocity, &Team, With<Projectile>)>()
            .map(|(_, (v, t, ()))| (*v, *t))
            .collect();
        assert!(shots.len() > 20 && shots.len() < 80, "{}", shots.len());
        for (v, t) in shots {
            // Team 0 is on the left, so it shoots right, and vice versa.
            assert_eq!(v.0.x > 0.0, t.0 == 0);
            assert!((v.0.length() - 10.0).abs() < 1e-3);
        }
    }

    #[test]
    fn ships_get_turrets_fire_from_them_and_take_them_along_when_they_die() {
        let mut w = world();
        w.register_hierarchy();
        let mut rt = Runtime::builder().workers(2).dt(0.25).build(w);
        rt.add_system(Spawner::new(SpawnerConfig {
            turrets: TurretTemplate {
                every: 5,
                count: 2,
                distance: 0.9,
            },
            ..config(0.0)
        }));
        rt.add_system(crate::transform::PropagateTransforms::new());
        rt.frame(); // the wave: 100 agents, 20 of them ships
        let ships: Vec<Entity> = rt
            .world()
            .query::<(&Transform, With<Health>)>()
            .map(|(e, _)| e)
            .collect();
        assert_eq!(ships.len(), 20);
        rt.frame(); // their turrets
        rt.frame(); // placed
        let w = rt.world();
        for &ship in &ships {
            let turrets = w.children(ship);
            assert_eq!(turrets.len(), 2);
            let at = w.get::<Position>(ship).unwrap().0;
            for &t in turrets {
                let g = w.get::<GlobalTransform>(t).unwrap().translation();
                assert!((g.distance(at) - 0.9).abs() < 1e-4, "{g} vs {at}");
                assert_eq!(w.get::<Team>(t), w.get::<Team>(ship));
            }
        }
        assert_eq!(w.len(), 140);
        rt.world_mut().despawn(ships[0]);
        assert_eq!(rt.world().len(), 137, "the ship and its two turrets");
    }

    #[test]
    fn same_seed_same_game_on_any_worker_count() {
        let a = run(9, 1, 5);
        assert_eq!(a, run(9, 2, 5));
        assert_eq!(a, run(9, 4, 5));
        assert_ne!(a, run(10, 1, 5));
    }

    /// The local spawner: shots by each agent's hash, team sizes from [`TeamTotals`].
    fn run_local(workers: usize, totals: bool) -> (Vec<(u64, [u32; 2], u8)>, usize) {
        let mut rt = Runtime::builder().workers(workers).dt(0.25).build(world());
        rt.add_system(Spawner::new(config(0.5)).local());
        let mut shots = 0;
        for _ in 0..6 {
            if totals {
                // As a sharded world provides it, between frames.
                let t = TeamTotals::of(rt.world(), 2);
                rt.world_mut().insert_resource(t);
            }
            rt.frame();
            shots = rt.world().query::<(&Projectile,)>().count();
        }
        (snapshot(rt.world()), shots)
    }

    #[test]
    fn a_local_spawner_is_the_same_on_any_worker_count_and_fires_about_its_rate() {
        let (a, shots) = run_local(1, false);
        assert_eq!((a.clone(), shots), run_local(3, false));
        // 100 agents, a shot each with probability rate · dt = 1/8 a frame.
        assert!((30..=120).contains(&shots), "{shots} shots");
        // Reading the totals from a resource instead of summing the world: the same.
        assert_eq!(run_local(2, true).0, a);
        assert_ne!(a, run(42, 1, 6), "another game than the stream's");
    }

    #[test]
    fn team_totals_add_up_over_any_split() {
        let mut whole = world();
        let mut parts = [world(), world()];
        for i in 0..40u8 {
            let p = Vec2::new(f32::from(i) * 1.37, 100.0 - f32::from(i) * 0.71);
            let agent = (Position(p), Team(i % 3), Health::full(5));
            whole.spawn(agent);
            parts[usize::from(i % 7 == 0)].spawn(agent);
        }
        let mut total = TeamTotals::of(&parts[1], 3);
        TeamTotals::combine(&mut total, TeamTotals::of(&parts[0], 3));
        assert_eq!(total, TeamTotals::of(&whole, 3));
        assert_eq!(total.counts.iter().sum::<u64>(), 40);
        let c = total.enemies_centre(0).unwrap();
        assert!(c.x > 0.0 && c.y > 0.0);
        assert_eq!(TeamTotals::default().enemies_centre(0), None);
    }

    /// Positions at the edge of `f32` (from a save) and totals of any value (from another
    /// process) wrap, as the release build's arithmetic always did, and never panic.
    #[test]
    fn team_totals_of_any_values_wrap_and_never_panic() {
        let mut w = world();
        for x in [1e30, f32::MAX, -f32::MAX, 3e38] {
            w.spawn((Position(Vec2::new(x, -x)), Team(0), Health::full(5)));
        }
        let of = TeamTotals::of(&w, 2);
        assert_eq!(of.counts, [4, 0]);
        let hostile = TeamTotals {
            counts: vec![u64::MAX, u64::MAX, 3],
            sums: vec![[i64::MAX, i64::MIN], [i64::MAX; 2]],
        };
        let mut total = of.clone();
        TeamTotals::combine(&mut total, hostile.clone());
        assert_eq!(
            total.counts,
            [3, u64::MAX, 0],
            "a count without a sum is left out"
        );
        assert_eq!(total.sums[1], [i64::MAX; 2]);
        TeamTotals::combine(&mut total, hostile.clone());
        let _ = (total.enemies_centre(0), total.enemies_centre(1));
        assert_eq!(hostile.enemies_centre(2), hostile.enemies_centre(2));
    }
}
