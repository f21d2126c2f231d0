//! Contact damage between teams.

use std::borrow::Cow;

use runsync::prelude::*;

use crate::{Collider, Damage, Grid, Health, Position, Projectile, Team};

/// Enemies in contact deal damage: every entity with [`Position`], [`Collider`], [`Team`]
/// and [`Damage`] (an *attacker*) hurts every overlapping entity of another team that has
/// [`Position`], [`Collider`], [`Team`] and [`Health`] (a *victim*) by emitting `-damage`
/// for its [`Health`]. Damage from all attackers (and any other system) merges by sum.
///
/// A [`Projectile`] attacker hits only the first victim it touches (in grid order, which is
/// deterministic) and is despawned in the same Sync.
///
/// Victims are indexed in a [`Grid`] kept in the system and reused across frames; the
/// attacker pass runs in parallel chunks.
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
}

impl Default for Contact {
    fn default() -> Self {
        Contact {
            grid: Grid::new(2.0),
        }
    }
}

impl Contact {
    /// The victims' grid as last rebuilt (for inspection and tests).
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
        let mut max_r = 0.0f32;
        self.grid
            .rebuild(world.query::<Victim>().map(|(e, (p, c, t, ()))| {
                max_r = max_r.max(c.radius);
                (e, p.0, c.radius, u32::from(t.0))
            }));
        if self.grid.is_empty() {
            return;
        }
        let grid = &self.grid;
        out.par_for_each::<Attacker>(|e, (p, c, team, dmg, shot), out| {
            let team = u32::from(team.0);
            let mut hit = false;
            grid.for_each_near(p.0, c.radius + max_r, |v| {
                if v.tag == team || (hit && shot.is_some()) {
                    return;
                }
                let reach = c.radius + v.radius;
                if p.0.distance_squared(v.pos) < reach * reach {
                    out.write::<Health>(v.entity, -dmg.0);
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
