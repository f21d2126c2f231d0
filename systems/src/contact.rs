//! Contact damage between teams.

use std::borrow::Cow;

use runsync::prelude::*;

use crate::grid::Grid;
use crate::spatial::SpatialGrid;
use crate::spatial::TeamBlocks;
use crate::{Collider, Damage, Health, Position, Projectile, Team};

/// Enemies in contact deal damage: every entity with [`Position`], [`Collider`], [`Team`]
/// and [`Damage`] (an *attacker*) hurts every overlapping entity of another team that has
/// [`Position`], [`Collider`], [`Team`] and [`Health`] (a *victim*) by emitting `-damage`
/// for its [`Health`]. Damage from all attackers (and any other system) merges by sum.
///
/// A [`Projectile`] attacker hits only the first victim it touches (in grid order, which is
/// deterministic) and is despawned in the same Sync.
///
/// Where it finds the victims:
/// - in the world's [`SpatialGrid`] when it is current (a [`BuildGrid`](crate::BuildGrid) system built it
///   last frame): the grid is shared with [`Separation`](crate::Separation) and built
///   once, and victims are where they were **one frame earlier** (victims that died since
///   are skipped; those spawned last Sync can be hit from the next frame);
/// - otherwise (no `SpatialGrid`, and in the first frame) in a [`Grid`] of its own,
///   rebuilt from this frame's world into buffers reused across frames.
///
/// The attacker pass runs in parallel chunks ([`Output::par_for_each`]); an attacker
/// whose surrounding cells hold no victim of another team (noted per block of cells when the
/// grid is built) skips the search.
///
/// ```
/// use glam::Vec2;
/// use runsync::prelude::*;
/// use runsync_systems::*;
/// let mut world = World::new();
/// runsync_systems::register(&mut world);
/// let c = Collider { radius: 1.0 };
/// let red = world.spawn((Position(Vec2::ZERO), c, Team(0), Health::full(10), Damage(1)));
/// let blue = world.spawn((Position(Vec2::new(1.5, 0.0)), c, Team(1), Health::full(10), Damage(2)));
/// let mut rt = Runtime::builder().build(world);
/// rt.add_system(Contact::default());
/// rt.frame();
/// assert_eq!(rt.world().get::<Health>(red).unwrap().hp, 8);
/// assert_eq!(rt.world().get::<Health>(blue).unwrap().hp, 9);
/// ```
#[derive(Clone, Debug)]
pub struct Contact {
    grid: Grid,
    teams: TeamBlocks,
}

impl Default for Contact {
    fn default() -> Self {
        Contact {
            grid: Grid::new(2.0),
            teams: TeamBlocks::default(),
        }
    }
}

impl Contact {
    /// Its own victims' grid as last rebuilt (for inspection and tests); not rebuilt while
    /// a current [`SpatialGrid`] is used instead.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }
}

type Victim = (
    &'static Position,
    &'static Collider,
    &'static Team,
    With<Health>,
);
type Attacker = (
    &'static Position,
    &'static Collider,
    &'static Team,
    &'static Damage,
    Option<&'static Projectile>,
);

impl System for Contact {
    fn run(&mut self, world: &World, out: &mut Output<'_>) {
        let (grid, teams, shared) = match SpatialGrid::current_built(world) {
            Some(b) => (&b.grid, &b.teams, true),
            None => {
                self.grid
                    .rebuild(world.query::<Victim>().map(|(e, (p, c, t, ()))| {
                        (e, p.0, c.radius, u32::from(t.0) | SpatialGrid::VICTIM)
                    }));
                self.teams.rebuild(&self.grid);
                (&self.grid, &self.teams, false)
            }
        };
        if grid.is_empty() {
            return;
        }
        let max_r = grid.max_radius();
        out.par_for_each::<Attacker>(|e, (p, c, team, dmg, shot), out| {
            let reach = c.radius + max_r;
            // Away from the fronts every victim around is a teammate: nothing to search.
            if teams.only(p.0, reach, team.0) {
                return;
            }
            let team = u32::from(team.0);
            let mut hit = false;
            // Only items in reach of the largest collider come out, in grid order.
            grid.for_each_within(p.0, reach, |v| {
                if v.tag & SpatialGrid::VICTIM == 0
                    || v.tag & SpatialGrid::TEAM_MASK == team
                    || (hit && shot.is_some())
                {
                    return;
                }
                let reach = c.radius + v.radius;
                if p.0.distance_squared(v.pos) < reach * reach
                    // A shared grid is a frame old: victims may have died since.
                    && (!shared || world.is_alive(v.entity))
                {
                    // Wrapping: `Damage(i32::MIN)` (from a save) deals `i32::MIN`, as
                    // the release build's negation always did, not an overflow panic.
                    out.write::<Health>(v.entity, dmg.0.wrapping_neg());
                    hit = true;
                }
            });
            if hit && shot.is_some() {
                out.despawn(e);
            }
        });
    }

    fn name(&self) -> Cow<'static, str> {
        "Contact".into()
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec2;

    use super::*;
    use crate::test_util::{runtime, world};

    fn agent(w: &mut World, x: f32, team: u8, dmg: i32) -> Entity {
        w.spawn((
            Position(Vec2::new(x, 0.0)),
            Collider { radius: 0.5 },
            Team(team),
            Health::full(100),
            Damage(dmg),
        ))
    }

    fn hp(rt: &Runtime, e: Entity) -> i32 {
        rt.world().get::<Health>(e).unwrap().hp
    }

    #[test]
    fn damage_from_several_enemies_sums_and_allies_are_spared() {
        let mut w = world();
        let victim = agent(&mut w, 0.0, 0, 1);
        let ally = agent(&mut w, 0.3, 0, 50);
        let e1 = agent(&mut w, 0.6, 1, 3);
        let e2 = agent(&mut w, -0.6, 1, 4);
        let far = agent(&mut w, 10.0, 1, 99);
        let mut rt = runtime(w);
        rt.add_system(Contact::default());
        rt.frame();
        assert_eq!(hp(&rt, victim), 100 - 3 - 4);
        // The ally overlaps e1 (distance 0.3) and e2 (0.9 < reach 1.0).
        assert_eq!(hp(&rt, ally), 100 - 3 - 4);
        assert_eq!(hp(&rt, e1), 100 - 1 - 50);
        assert_eq!(hp(&rt, e2), 100 - 1 - 50);
        assert_eq!(hp(&rt, far), 100);
    }

    /// The most damage an `i32` holds, from a save: the victim dies, no overflow.
    #[test]
    fn the_least_damage_value_kills_and_does_not_overflow() {
        let mut w = world();
        let victim = agent(&mut w, 0.0, 0, 1);
        let _ = agent(&mut w, 0.6, 1, i32::MIN);
        let mut rt = runtime(w);
        rt.add_system(Contact::default());
        rt.frame();
        assert_eq!(hp(&rt, victim), i32::MIN + 100);
    }

    #[test]
    fn with_a_spatial_grid_victims_are_where_they_were_a_frame_earlier() {
        let mut w = world();
        crate::spatial::SpatialGrid::register(&mut w);
        let red = agent(&mut w, 0.0, 0, 1);
        let blue = agent(&mut w, 0.6, 1, 2);
        let green = agent(&mut w, 20.0, 2, 3);
        let gone = agent(&mut w, 20.5, 3, 4);
        let mut rt = runtime(w);
        rt.add_system(crate::spatial::BuildGrid::default());
        rt.add_system(Contact::default());
        rt.frame(); // no grid yet: its own, of this world
        assert_eq!((hp(&rt, red), hp(&rt, blue)), (98, 99));
        // Between frames blue moves away and `gone` dies; the grid built in the first frame still
        // has them where they were.
        rt.world_mut().get_mut::<Position>(blue).unwrap().0 = Vec2::new(10.0, 0.0);
        rt.world_mut().despawn(gone);
        rt.frame();
        assert_eq!(hp(&rt, blue), 98, "red hit blue where it was");
        assert_eq!(hp(&rt, red), 98, "blue, now alone, hit no one");
        assert_eq!(hp(&rt, green), 100 - 4, "hit in the first frame only");
        assert_eq!(rt.stats().dropped, 0, "no damage for the dead");
        rt.frame(); // the grid of the second frame saw the move
        assert_eq!((hp(&rt, red), hp(&rt, blue)), (98, 98));
    }

    #[test]
    fn projectile_hits_once_and_disappears() {
        let mut w = world();
        let a = agent(&mut w, 0.0, 0, 0);
        let b = agent(&mut w, 0.1, 0, 0);
        let friendly = w.spawn((
            Position(Vec2::ZERO),
            Collider { radius: 0.1 },
            Team(0),
            Damage(7),
            Projectile,
        ));
        let shot = w.spawn((
            Position(Vec2::ZERO),
            Collider { radius: 0.1 },
            Team(1),
            Damage(7),
            Projectile,
        ));
        let mut rt = runtime(w);
        rt.add_system(Contact::default());
        rt.frame();
        assert_eq!(hp(&rt, a) + hp(&rt, b), 200 - 7, "exactly one hit");
        assert_eq!(hp(&rt, a), 93, "the first in grid order");
        assert!(!rt.world().is_alive(shot));
        assert!(rt.world().is_alive(friendly), "no friendly fire");
    }
}
