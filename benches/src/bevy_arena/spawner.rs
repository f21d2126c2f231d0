//! `Spawner`: runsync_systems' spawner in bevy_ecs, with the same generator seeded the same
//! way each frame and drawn in the same order (one stream along the agents: who fires;
//! then the wave), so a frame with the same agents in the same query order fires the same
//! shots and spawns the same wave. Its spawns go through `Commands::spawn_batch`.

use bevy_ecs::change_detection::DetectChanges;
use bevy_ecs::entity::Entity;
use bevy_ecs::hierarchy::{ChildOf, Children};
use bevy_ecs::query::{Added, With, Without};
use bevy_ecs::system::{Commands, Local, Query, Res};
use bevy_ecs::world::{FromWorld, Ref, World};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg32;
use runsync_systems::SpawnerConfig;
use runsync_systems::glam::Vec2;

use super::components::{
    ArenaRules, ArenaTime, Collider, Damage, GlobalTransform, Health, Lifetime, Position,
    Projectile, Team, Transform, Velocity,
};
use super::timing::{SystemTimes, id};

/// An agent of the wave being spawned (runsync's `WaveAgent`).
#[derive(Clone, Copy, Debug)]
struct WaveAgent {
    /// Z-order of its 4 x 4 cell (high 32 bits), then the order it was drawn in.
    key: u64,
    pos: Vec2,
    vel: Vec2,
    team: u8,
    ship: bool,
}

/// The Morton code of `(x, y)`.
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

type AgentBundle = (Position, Velocity, Collider, Team, Health, Damage);
type ShipBundle = (
    Position,
    Velocity,
    Collider,
    Team,
    Health,
    Damage,
    Transform,
    GlobalTransform,
);
type ShotBundle = (
    Position,
    Velocity,
    Collider,
    Team,
    Damage,
    Lifetime,
    Projectile,
);
type TurretBundle = (Transform, GlobalTransform, ChildOf, Team);

/// The spawner's state: the generator (reseeded every frame) and reused buffers.
pub(crate) struct Spawner {
    config: SpawnerConfig,
    rng: Pcg32,
    counts: Vec<usize>,
    sums: Vec<Vec2>,
    wave: Vec<WaveAgent>,
    shots: Vec<ShotBundle>,
}

impl FromWorld for Spawner {
    /// The spawner of the world's [`ArenaRules`].
    fn from_world(world: &mut World) -> Spawner {
        let config = world.resource::<ArenaRules>().spawner;
        assert!(config.teams > 0, "Spawner needs at least one team");
        Spawner {
            config,
            rng: Pcg32::seed_from_u64(config.seed),
            counts: Vec::new(),
            sums: Vec::new(),
            wave: Vec::new(),
            shots: Vec::new(),
        }
    }
}

impl Spawner {
    /// Failures before the next success of a Bernoulli(`chance`) trial.
    fn gap(&mut self, chance: f32) -> u64 {
        if chance >= 1.0 {
            return 0;
        }
        let u: f64 = self.rng.random();
        let g = (1.0 - u).ln() / (1.0 - f64::from(chance)).ln();
        g as u64
    }

    /// Draws an agent of `team` into the wave.
    fn draw_agent(&mut self, team: u8) {
        let c = &self.config;
        let strip = (c.max.x - c.min.x) / f32::from(c.teams);
        let x0 = c.min.x + strip * f32::from(team);
        let (min, max, speed) = (c.min, c.max, c.agent.speed);
        let pos = Vec2::new(
            self.rng.random_range(x0..x0 + strip),
            self.rng.random_range(min.y..max.y),
        );
        let angle = self.rng.random_range(0.0..std::f32::consts::TAU);
        let vel = Vec2::from_angle(angle) * speed;
        let cell = (pos - min) / 4.0;
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

    /// A projectile from `pos` (or a turret) of `team` towards `target`.
    fn shot(&self, from: Vec2, pos: Vec2, team: Team, target: Vec2) -> ShotBundle {
        let p = self.config.projectile;
        let start_gap = self.config.agent.radius + p.radius + 0.01;
        let dir = (target - pos).normalize_or(Vec2::X);
        (
            Position(from + dir * start_gap),
            Velocity(dir * p.speed),
            Collider { radius: p.radius },
            team,
            Damage(p.damage),
            Lifetime(p.lifetime),
            Projectile,
        )
    }
}

/// The shooters: agents, with their turrets if they are ships.
type Shooters<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static Position,
        &'static Team,
        Option<&'static Children>,
    ),
    With<Health>,
>;
/// Ships that appeared in the last frame's commands and have no turrets yet.
type NewShips<'w, 's> =
    Query<'w, 's, (Entity, &'static Team), (Added<Transform>, With<Health>, Without<Children>)>;

/// `Spawner`: who fires (one random stream along the agents), turrets for the ships that
/// appeared last frame, and every `wave_every` frames a wave topping every team up.
pub(crate) fn spawner(
    time: Res<ArenaTime>,
    shooters: Shooters<'_, '_>,
    new_ships: NewShips<'_, '_>,
    globals: Query<Ref<GlobalTransform>>,
    mut commands: Commands,
    mut s: Local<Spawner>,
    times: Res<SystemTimes>,
) {
    let _t = times.start(id::SPAWNER);
    let frame = time.frame;
    s.rng = Pcg32::seed_from_u64(s.config.seed ^ frame.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let teams = usize::from(s.config.teams);
    s.counts.clear();
    s.counts.resize(teams, 0);
    s.sums.clear();
    s.sums.resize(teams, Vec2::ZERO);
    for (_, p, t, _) in &shooters {
        if let Some(n) = s.counts.get_mut(usize::from(t.0)) {
            *n += 1;
            s.sums[usize::from(t.0)] += p.0;
        }
    }

    // Fire: one random stream along the agents, a geometric gap between shooters.
    let chance = (s.config.projectile.rate * time.dt).clamp(0.0, 1.0);
    if chance > 0.0 {
        let total: Vec2 = s.sums.iter().sum();
        let total_n: usize = s.counts.iter().sum();
        let mut skip = s.gap(chance);
        for (_, pos, team, turrets) in &shooters {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            skip = s.gap(chance);
            let t = usize::from(team.0);
            let Some(&own_n) = s.counts.get(t) else {
                continue;
            };
            let enemies = total_n - own_n;
            if enemies == 0 {
                continue;
            }
            let target = (total - s.sums[t]) / enemies as f32;
            // The muzzle: the ship's turrets in turn, once their world position is
            // known (from the frame after they appeared); else the agent itself.
            let from = match turrets.filter(|t| !t.is_empty()) {
                Some(turrets) => {
                    let turret = turrets[(frame % turrets.len() as u64) as usize];
                    match globals.get(turret) {
                        Ok(g) if !g.is_added() => g.0.translation,
                        _ => pos.0,
                    }
                }
                None => pos.0,
            };
            let shot = s.shot(from, pos.0, *team, target);
            s.shots.push(shot);
        }
    }
    if !s.shots.is_empty() {
        commands.spawn_batch(std::mem::take(&mut s.shots));
    }

    // Arm the ships that appeared in the last frame.
    let t = s.config.turrets;
    if t.every > 0 {
        let turrets: Vec<TurretBundle> = new_ships
            .iter()
            .flat_map(|(ship, team)| {
                (0..t.count).map(move |k| {
                    let side = if k % 2 == 0 { 1.0 } else { -1.0 };
                    let offset = Vec2::new(-0.3 * f32::from(k / 2), side * t.distance);
                    (
                        Transform(runsync_systems::Transform::from_translation(offset)),
                        GlobalTransform::default(),
                        ChildOf(ship),
                        *team,
                    )
                })
            })
            .collect();
        if !turrets.is_empty() {
            commands.spawn_batch(turrets);
        }
    }

    // Waves: top every team up, spawned in Z-order.
    if frame.is_multiple_of(s.config.wave_every.max(1)) {
        for team in 0..s.config.teams {
            let missing = s
                .config
                .agents_per_team
                .saturating_sub(s.counts[usize::from(team)]);
            for _ in 0..missing {
                s.draw_agent(team);
            }
        }
        s.wave.sort_unstable_by_key(|a| a.key);
        let a = s.config.agent;
        let agent = |w: &WaveAgent| -> AgentBundle {
            (
                Position(w.pos),
                Velocity(w.vel),
                Collider { radius: a.radius },
                Team(w.team),
                Health::full(a.health),
                Damage(a.damage),
            )
        };
        let plain: Vec<AgentBundle> = s.wave.iter().filter(|w| !w.ship).map(agent).collect();
        let ships: Vec<ShipBundle> = s
            .wave
            .iter()
            .filter(|w| w.ship)
            .map(|w| {
                let (p, v, col, team, h, d) = agent(w);
                let heading = runsync_systems::Transform {
                    translation: Vec2::ZERO,
                    rotation: w.vel.normalize_or(Vec2::X),
                };
                (
                    p,
                    v,
                    col,
                    team,
                    h,
                    d,
                    Transform(heading),
                    GlobalTransform::default(),
                )
            })
            .collect();
        s.wave.clear();
        if !plain.is_empty() {
            commands.spawn_batch(plain);
        }
        if !ships.is_empty() {
            commands.spawn_batch(ships);
        }
    }
}
