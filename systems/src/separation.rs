//! Boids-style separation on a uniform grid.

use std::borrow::Cow;

use glam::Vec2;
use runsync::prelude::*;

use crate::grid::Grid;
use crate::spatial::SpatialGrid;
use crate::{Collider, Impulse, Position, Projectile, Velocity, dt};

/// Pushes overlapping bodies apart: every entity with [`Position`], [`Velocity`] and
/// [`Collider`] (projectiles excluded) whose circle overlaps others gets one [`Velocity`]
/// change per frame, the sum over its neighbours of
/// `strength * dt * overlap / (ra + rb)` along the direction away from each.
///
/// Where it finds the neighbours:
/// - in the world's [`SpatialGrid`] when it is current (a [`BuildGrid`](crate::BuildGrid)
///   system built it last frame): the grid is shared with [`Contact`](crate::Contact) and
///   built once, and the neighbours are as they were **one frame earlier** — where they
///   were, and who was there: a body that died in the last Sync pushes one frame more, one
///   spawned in it pushes from the next frame (checking each neighbour is still alive
///   would cost a random memory access per overlap);
/// - otherwise (no `SpatialGrid`, as when this is the only neighbour system, and in the
///   first frame) in a [`Grid`] of its own, rebuilt from this frame's world into the same
///   buffers every frame (no allocation in a steady state).
///
/// The per-body pass runs in parallel chunks ([`Output::par_for_each`]), each body's
/// neighbours summed in grid order; two bodies at exactly the same point push apart along
/// x, ordered by entity id. So the result is the same on any worker count.
///
/// ```
/// use glam::Vec2;
/// use runsync::prelude::*;
/// use runsync_systems::*;
/// let mut world = World::new();
/// runsync_systems::register(&mut world);
/// let body = (Velocity(Vec2::ZERO), Collider { radius: 1.0 });
/// let a = world.spawn((Position(Vec2::new(0.0, 0.0)), body.0, body.1));
/// let b = world.spawn((Position(Vec2::new(1.0, 0.0)), body.0, body.1));
/// let mut rt = Runtime::builder().build(world);
/// rt.add_system(Separation::new(10.0));
/// rt.frame();
/// let (va, vb) = (rt.world().get::<Velocity>(a).unwrap().0, rt.world().get::<Velocity>(b).unwrap().0);
/// assert!(va.x < 0.0 && vb.x > 0.0 && va.x == -vb.x);
/// ```
#[derive(Clone, Debug)]
pub struct Separation {
    /// Push strength, in units per second squared at full overlap.
    pub strength: f32,
    grid: Grid,
}

impl Separation {
    /// Separation with the given strength.
    pub fn new(strength: f32) -> Separation {
        Separation {
            strength,
            grid: Grid::new(2.0),
        }
    }

    /// Its own grid as last rebuilt (for inspection and tests); not rebuilt while a
    /// current [`SpatialGrid`] is used instead.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }
}

type Body = (
    &'static Position,
    &'static Collider,
    With<Velocity>,
    Without<Projectile>,
);

/// [`Body`], with the body's own `Velocity` write handle.
type BodyOut = (
    &'static Position,
    &'static Collider,
    Write<Velocity>,
    Without<Projectile>,
);

impl System for Separation {
    fn run(&mut self, world: &World, out: &mut Output<'_>) {
        let k = self.strength * dt(world);
        let grid = match SpatialGrid::current(world) {
            Some(grid) => grid,
            None => {
                self.grid.rebuild(
                    world
                        .query::<Body>()
                        .map(|(e, (p, c, (), ()))| (e, p.0, c.radius, SpatialGrid::BODY)),
                );
                &self.grid
            }
        };
        if grid.is_empty() || k == 0.0 {
            return;
        }
        let max_r = grid.max_radius();
        out.par_for_each::<BodyOut>(|e, (p, c, mut vel, ()), _| {
            let mut push = Vec2::ZERO;
            // Only items in reach of the largest collider come out, in grid order.
            grid.for_each_within(p.0, c.radius + max_r, |other| {
                if other.entity == e || other.tag & SpatialGrid::BODY == 0 {
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
                vel.set(Impulse(push * k));
            }
        });
    }

    fn name(&self) -> Cow<'static, str> {
        "Separation".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{runtime, world};

    fn body(w: &mut World, x: f32, y: f32) -> Entity {
        w.spawn((
            Position(Vec2::new(x, y)),
            Velocity(Vec2::ZERO),
            Collider { radius: 0.5 },
        ))
    }

    #[test]
    fn pushes_overlapping_apart_and_leaves_others() {
        let mut w = world();
        let a = body(&mut w, 0.0, 0.0);
        let b = body(&mut w, 0.5, 0.0);
        let far = body(&mut w, 50.0, 50.0);
        let shot = w.spawn((
            Position(Vec2::new(0.2, 0.0)),
            Velocity(Vec2::ZERO),
            Collider { radius: 0.5 },
            Projectile,
        ));
        let mut rt = runtime(w);
        rt.add_system(Separation::new(4.0));
        rt.frame();
        let v = |e| rt.world().get::<Velocity>(e).unwrap().0;
        // overlap 0.5 of reach 1.0, strength 4, dt 0.5 => 1.0
        assert_eq!(v(a), Vec2::new(-1.0, 0.0));
        assert_eq!(v(b), Vec2::new(1.0, 0.0));
        assert_eq!(v(far), Vec2::ZERO);
        assert_eq!(v(shot), Vec2::ZERO, "projectiles are ignored");
        assert_eq!(rt.stats().systems[0].writes, 2);
    }

    #[test]
    fn coincident_bodies_split_deterministically() {
        let mut w = world();
        let a = body(&mut w, 1.0, 1.0);
        let b = body(&mut w, 1.0, 1.0);
        let mut rt = runtime(w);
        rt.add_system(Separation::new(1.0));
        rt.frame();
        let (va, vb) = (
            rt.world().get::<Velocity>(a).unwrap().0,
            rt.world().get::<Velocity>(b).unwrap().0,
        );
        assert_eq!(va, -vb);
        assert!(va.x != 0.0 && va.y == 0.0);
    }

    #[test]
    fn with_a_spatial_grid_neighbours_are_where_they_were_a_frame_earlier() {
        let mut w = world();
        crate::spatial::SpatialGrid::register(&mut w);
        let a = body(&mut w, 0.0, 0.0);
        let b = body(&mut w, 0.5, 0.0);
        let c = body(&mut w, 20.0, 0.0);
        let d = body(&mut w, 20.5, 0.0);
        let mut rt = runtime(w);
        rt.add_system(crate::spatial::BuildGrid::default());
        rt.add_system(Separation::new(4.0));
        let v = |rt: &Runtime, e| rt.world().get::<Velocity>(e).unwrap().0;
        rt.frame(); // no grid yet: its own, of this world
        assert_eq!((v(&rt, a), v(&rt, b)), (Vec2::new(-1.0, 0.0), Vec2::X));
        // Between frames b moves away and d dies; the grid built in the first frame still has b
        // overlapping a, and d beside c.
        rt.world_mut().get_mut::<Position>(b).unwrap().0 = Vec2::new(10.0, 0.0);
        rt.world_mut().despawn(d);
        rt.frame();
        assert_eq!(v(&rt, a), Vec2::new(-2.0, 0.0), "pushed by b where it was");
        assert_eq!(v(&rt, b), Vec2::X, "b, now alone, finds no one near it");
        assert_eq!(
            v(&rt, c),
            Vec2::new(-2.0, 0.0),
            "d, dead since, pushes a last time"
        );
        rt.frame(); // the grid of the second frame saw the move
        assert_eq!(v(&rt, a), Vec2::new(-2.0, 0.0));
    }

    #[test]
    fn grid_is_reused_across_frames() {
        let mut w = world();
        for i in 0..100 {
            body(&mut w, (i % 10) as f32 * 0.8, (i / 10) as f32 * 0.8);
        }
        let mut sep = Separation::new(1.0);
        let mut rt = runtime(w);
        // Run it directly twice against the same world through a closure wrapper.
        rt.add_system(move |world: &World, out: &mut Output| {
            sep.run(world, out);
            assert_eq!(sep.grid().len(), 100);
        });
        rt.frame();
        rt.frame();
        assert!(rt.stats().systems[0].writes > 0);
    }
}
