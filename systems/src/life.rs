//! Life and death: [`Expire`] (lifetimes) and [`Death`] (health).

use std::borrow::Cow;

use runsync::prelude::*;

use crate::{Health, Lifetime, LifetimeDelta, dt};

/// Ages every [`Lifetime`] by `dt` (a `-dt` delta) and despawns the entity in the frame
/// its time runs out (when `lifetime - dt <= 0`).
///
/// ```
/// use runsync::prelude::*;
/// use runsync_systems::*;
/// let mut world = World::new();
/// runsync_systems::register(&mut world);
/// let e = world.spawn((Lifetime(1.0),));
/// let mut rt = Runtime::builder().dt(0.5).build(world);
/// rt.add_system(Expire);
/// rt.frame();
/// assert_eq!(rt.world().get::<Lifetime>(e), Some(&Lifetime(0.5)));
/// rt.frame();
/// assert!(!rt.world().is_alive(e));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Expire;

impl System for Expire {
    fn run(&mut self, world: &World, out: &mut Output<'_>) {
        let dt = dt(world);
        // The entity's own `Lifetime`: its row's write handle (two stores a write, where
        // a write by handle would be a type check and a target check more).
        out.par_for_each::<(&Lifetime, Write<Lifetime>)>(|e, (l, mut left), out| {
            if l.0 - dt <= 0.0 {
                out.despawn(e);
            } else {
                left.set(LifetimeDelta(-dt));
            }
        });
    }

    fn name(&self) -> Cow<'static, str> {
        "Expire".into()
    }
}

/// Despawns every entity whose [`Health`] is at or below zero.
///
/// ```
/// use runsync::prelude::*;
/// use runsync_systems::*;
/// let mut world = World::new();
/// runsync_systems::register(&mut world);
/// let dead = world.spawn((Health { hp: 0, max: 10 },));
/// let alive = world.spawn((Health::full(10),));
/// let mut rt = Runtime::builder().build(world);
/// rt.add_system(Death);
/// rt.frame();
/// assert!(!rt.world().is_alive(dead) && rt.world().is_alive(alive));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Death;

impl System for Death {
    fn run(&mut self, world: &World, out: &mut Output<'_>) {
        for (e, (h,)) in world.query::<(&Health,)>() {
            if h.hp <= 0 {
                out.despawn(e);
            }
        }
    }

    fn name(&self) -> Cow<'static, str> {
        "Death".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{runtime, world};

    #[test]
    fn expire_ages_then_despawns() {
        let mut w = world();
        let short = w.spawn((Lifetime(0.5),));
        let long = w.spawn((Lifetime(2.0),));
        let mut rt = runtime(w);
        rt.add_system(Expire);
        rt.frame();
        assert!(!rt.world().is_alive(short));
        assert_eq!(rt.world().get::<Lifetime>(long), Some(&Lifetime(1.5)));
        assert_eq!(rt.stats().despawned, 1);
        for _ in 0..3 {
            rt.frame();
        }
        assert!(!rt.world().is_alive(long));
        assert_eq!(rt.world().len(), 0);
    }

    #[test]
    fn death_takes_only_the_dead() {
        let mut w = world();
        let a = w.spawn((Health { hp: -3, max: 5 },));
        let b = w.spawn((Health { hp: 1, max: 5 },));
        let mut rt = runtime(w);
        rt.add_system(Death);
        rt.frame();
        assert!(!rt.world().is_alive(a));
        assert!(rt.world().is_alive(b));
    }
}
