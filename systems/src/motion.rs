//! Motion: [`Integrate`], [`Gravity`], [`Drag`], [`Bounds`].

use std::borrow::Cow;

use glam::Vec2;
use runsync::prelude::*;

use crate::{Displace, Impulse, Position, Velocity, dt};

/// Moves every entity with a [`Velocity`]: emits the displacement `velocity * dt` for its
/// [`Position`] (merged by sum, so a [`Bounds`] correction in the same frame adds to it).
/// Entities at rest emit nothing. Runs in parallel parts.
///
/// ```
/// use glam::Vec2;
/// use runsync::prelude::*;
/// use runsync_systems::*;
/// let mut world = World::new();
/// runsync_systems::register(&mut world);
/// let e = world.spawn((Position(Vec2::ZERO), Velocity(Vec2::new(2.0, -4.0))));
/// let mut rt = Runtime::builder().dt(0.5).build(world);
/// rt.add_system(Integrate);
/// rt.frame();
/// assert_eq!(rt.world().get::<Position>(e).unwrap().0, Vec2::new(1.0, -2.0));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Integrate;

impl System for Integrate {
    fn run(&mut self, world: &World, out: &mut Output<'_>) {
        let dt = dt(world);
        // The entity's own `Position`, in a column per table (one store a write, and no
        // presence flags while every entity of a part moves).
        out.write_each_some::<Position, (&Velocity,)>(|_, (v,)| {
            (v.0 != Vec2::ZERO).then(|| Displace(v.0 * dt))
        });
    }

    fn name(&self) -> Cow<'static, str> {
        "Integrate".into()
    }
}

/// A constant acceleration on every entity with a [`Velocity`]: emits `accel * dt`.
///
/// ```
/// use glam::Vec2;
/// use runsync::prelude::*;
/// use runsync_systems::*;
/// let mut world = World::new();
/// runsync_systems::register(&mut world);
/// let e = world.spawn((Velocity(Vec2::ZERO),));
/// let mut rt = Runtime::builder().dt(0.5).build(world);
/// rt.add_system(Gravity { accel: Vec2::new(0.0, -10.0) });
/// rt.frame();
/// assert_eq!(rt.world().get::<Velocity>(e).unwrap().0, Vec2::new(0.0, -5.0));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Gravity {
    /// Acceleration in units per second squared.
    pub accel: Vec2,
}

impl System for Gravity {
    fn run(&mut self, world: &World, out: &mut Output<'_>) {
        let dv = self.accel * dt(world);
        if dv == Vec2::ZERO {
            return;
        }
        out.par_for_each::<(Write<Velocity>,)>(|_, (mut vel,), _| vel.set(Impulse(dv)));
    }

    fn name(&self) -> Cow<'static, str> {
        "Gravity".into()
    }
}

/// Exponential drag: each frame a moving entity loses the fraction
/// `1 - exp(-per_second * dt)` of its velocity (emitted as a negative delta), so the decay
/// rate does not depend on the step.
///
/// ```
/// use glam::Vec2;
/// use runsync::prelude::*;
/// use runsync_systems::*;
/// let mut world = World::new();
/// runsync_systems::register(&mut world);
/// let e = world.spawn((Velocity(Vec2::new(10.0, 0.0)),));
/// let mut rt = Runtime::builder().dt(1.0).build(world);
/// rt.add_system(Drag { per_second: std::f32::consts::LN_2 }); // halves speed each second
/// rt.frame();
/// assert!((rt.world().get::<Velocity>(e).unwrap().0.x - 5.0).abs() < 1e-5);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Drag {
    /// Decay rate per second (0 = no drag).
    pub per_second: f32,
}

impl System for Drag {
    fn run(&mut self, world: &World, out: &mut Output<'_>) {
        let k = 1.0 - (-self.per_second * dt(world)).exp();
        if k == 0.0 {
            return;
        }
        out.write_each_some::<Velocity, (&Velocity,)>(|_, (v,)| {
            (v.0 != Vec2::ZERO).then(|| Impulse(-v.0 * k))
        });
    }

    fn name(&self) -> Cow<'static, str> {
        "Drag".into()
    }
}

/// What [`Bounds`] does at the edges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoundsMode {
    /// Clamp back inside and reflect the velocity component pointing out.
    Bounce,
    /// Re-enter from the opposite edge (a torus).
    Wrap,
}

/// Keeps entities with a [`Position`] inside the rectangle `min..max`.
///
/// It sees last frame's world, like every system: an entity found outside gets, this
/// frame, a [`Position`] correction (a delta, which adds to [`Integrate`]'s move) and, in
/// [`BoundsMode::Bounce`], a [`Velocity`] change that reflects the outward component
/// (`-2 v`, adding to other forces). So an entity may overshoot an edge by at most one
/// step before it is brought back. Entities inside emit nothing.
///
/// ```
/// use glam::Vec2;
/// use runsync::prelude::*;
/// use runsync_systems::*;
/// let mut world = World::new();
/// runsync_systems::register(&mut world);
/// let e = world.spawn((Position(Vec2::new(11.0, 5.0)), Velocity(Vec2::new(3.0, 0.0))));
/// let mut rt = Runtime::builder().build(world);
/// rt.add_system(Bounds { min: Vec2::ZERO, max: Vec2::splat(10.0), mode: BoundsMode::Bounce });
/// rt.frame();
/// assert_eq!(rt.world().get::<Position>(e).unwrap().0, Vec2::new(10.0, 5.0));
/// assert_eq!(rt.world().get::<Velocity>(e).unwrap().0, Vec2::new(-3.0, 0.0));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// Lower corner.
    pub min: Vec2,
    /// Upper corner.
    pub max: Vec2,
    /// Bounce or wrap.
    pub mode: BoundsMode,
}

impl Bounds {
    /// The correction (position delta, velocity delta) for an entity at `p` moving at `v`;
    /// `None` if it is inside.
    #[inline]
    fn correct(&self, p: Vec2, v: Vec2) -> Option<(Vec2, Vec2)> {
        let outside = p.cmplt(self.min) | p.cmpgt(self.max);
        if !outside.any() {
            return None;
        }
        match self.mode {
            BoundsMode::Bounce => {
                let dp = p.clamp(self.min, self.max) - p;
                let out_low = p.cmplt(self.min) & v.cmplt(Vec2::ZERO);
                let out_high = p.cmpgt(self.max) & v.cmpgt(Vec2::ZERO);
                let reflect = out_low | out_high;
                let dv = Vec2::select(reflect, -2.0 * v, Vec2::ZERO);
                Some((dp, dv))
            }
            BoundsMode::Wrap => {
                let size = self.max - self.min;
                let rel = p - self.min;
                let wrapped = self.min + (rel - size * (rel / size).floor());
                // Guard against float rounding landing exactly on `max` or outside.
                let wrapped = wrapped.clamp(self.min, self.max);
                Some((wrapped - p, Vec2::ZERO))
            }
        }
    }
}

impl System for Bounds {
    fn run(&mut self, _world: &World, out: &mut Output<'_>) {
        let this = *self;
        out.par_for_each::<(&Position, Option<&Velocity>)>(|e, (p, v), out| {
            let vel = v.map_or(Vec2::ZERO, |v| v.0);
            if let Some((dp, dv)) = this.correct(p.0, vel) {
                if dp != Vec2::ZERO {
                    out.write::<Position>(e, Displace(dp));
                }
                if v.is_some() && dv != Vec2::ZERO {
                    out.write::<Velocity>(e, Impulse(dv));
                }
            }
        });
    }

    fn name(&self) -> Cow<'static, str> {
        "Bounds".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{runtime, world};

    #[test]
    fn integrate_moves_by_velocity_times_dt_and_skips_resting() {
        let mut w = world();
        let a = w.spawn((Position(Vec2::ONE), Velocity(Vec2::new(4.0, 2.0))));
        let b = w.spawn((Position(Vec2::ONE), Velocity(Vec2::ZERO)));
        let mut rt = runtime(w);
        rt.add_system(Integrate);
        rt.frame();
        assert_eq!(
            rt.world().get::<Position>(a).unwrap().0,
            Vec2::new(3.0, 2.0)
        );
        assert_eq!(rt.world().get::<Position>(b).unwrap().0, Vec2::ONE);
        assert_eq!(rt.stats().systems[0].writes, 1);
        assert_eq!(&*rt.stats().systems[0].name, "Integrate");
    }

    #[test]
    fn forces_sum_in_one_frame() {
        let mut w = world();
        let e = w.spawn((Velocity(Vec2::new(8.0, 0.0)),));
        let mut rt = runtime(w);
        rt.add_system(Gravity {
            accel: Vec2::new(0.0, -2.0),
        });
        rt.add_system(Drag { per_second: 0.0 });
        rt.frame();
        assert_eq!(
            rt.world().get::<Velocity>(e).unwrap().0,
            Vec2::new(8.0, -1.0)
        );
        assert_eq!(rt.stats().systems[1].writes, 0, "zero drag emits nothing");
    }

    #[test]
    fn drag_decays_towards_zero() {
        let mut w = world();
        let e = w.spawn((Velocity(Vec2::new(8.0, -8.0)),));
        let mut rt = runtime(w);
        rt.add_system(Drag { per_second: 2.0 });
        for _ in 0..20 {
            rt.frame();
        }
        let v = rt.world().get::<Velocity>(e).unwrap().0;
        assert!(v.length() < 1e-3 && v.x > 0.0, "{v}");
    }

    #[test]
    fn bounce_clamps_and_reflects_only_outward_velocity() {
        let b = Bounds {
            min: Vec2::ZERO,
            max: Vec2::splat(10.0),
            mode: BoundsMode::Bounce,
        };
        assert_eq!(b.correct(Vec2::splat(5.0), Vec2::ONE), None);
        // Below min.x moving out: reflect x; y inside untouched.
        assert_eq!(
            b.correct(Vec2::new(-1.0, 5.0), Vec2::new(-2.0, 3.0)),
            Some((Vec2::new(1.0, 0.0), Vec2::new(4.0, 0.0)))
        );
        // Outside but already heading back: clamp only.
        assert_eq!(
            b.correct(Vec2::new(12.0, 5.0), Vec2::new(-1.0, 0.0)),
            Some((Vec2::new(-2.0, 0.0), Vec2::ZERO))
        );
    }

    #[test]
    fn wrap_reenters_from_the_other_side() {
        let mut w = world();
        let e = w.spawn((Position(Vec2::new(12.0, -3.0)), Velocity(Vec2::ONE)));
        let mut rt = runtime(w);
        rt.add_system(Bounds {
            min: Vec2::ZERO,
            max: Vec2::splat(10.0),
            mode: BoundsMode::Wrap,
        });
        rt.frame();
        assert_eq!(
            rt.world().get::<Position>(e).unwrap().0,
            Vec2::new(2.0, 7.0)
        );
        assert_eq!(rt.world().get::<Velocity>(e).unwrap().0, Vec2::ONE);
    }

    #[test]
    fn integrate_and_bounds_compose_by_sum() {
        let mut w = world();
        let e = w.spawn((
            Position(Vec2::new(11.0, 5.0)),
            Velocity(Vec2::new(2.0, 0.0)),
        ));
        let mut rt = runtime(w);
        rt.add_system(Integrate);
        rt.add_system(Bounds {
            min: Vec2::ZERO,
            max: Vec2::splat(10.0),
            mode: BoundsMode::Bounce,
        });
        rt.frame();
        // 11 + 2*0.5 (integrate, old velocity) - 1 (clamp) = 11; velocity reflected.
        assert_eq!(
            rt.world().get::<Position>(e).unwrap().0,
            Vec2::new(11.0, 5.0)
        );
        assert_eq!(
            rt.world().get::<Velocity>(e).unwrap().0,
            Vec2::new(-2.0, 0.0)
        );
        rt.frame();
        assert_eq!(
            rt.world().get::<Position>(e).unwrap().0,
            Vec2::new(9.0, 5.0)
        );
    }
}
