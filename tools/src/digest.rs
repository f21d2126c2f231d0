//! A 64-bit digest of a whole world, for determinism checks.

use std::hash::Hasher;

use fnv::FnvHasher;
use runsync::prelude::*;
use runsync_systems::{Collider, Damage, Health, Lifetime, Position, Projectile, Team, Velocity};

/// FNV-1a over the entity count, the frame counter, and, for every component type of
/// [`runsync_systems`] in a fixed order, every `(entity bits, value bits)` pair in query
/// order (floats by `to_bits`, so `-0.0` and `0.0` or two NaNs differ).
///
/// Two worlds with the same digest almost surely hold the same entities with bitwise
/// equal components *in the same storage order*. The hash is fixed-key and unseeded, so it
/// is the same for every run on one platform.
pub fn digest(world: &World) -> u64 {
    let mut h = FnvHasher::default();
    h.write_u64(world.len() as u64);
    h.write_u64(world.get_resource::<Time>().map_or(0, |t| t.frame));
    for (e, (p,)) in world.query::<(&Position,)>() {
        h.write_u64(e.to_bits());
        h.write_u32(p.0.x.to_bits());
        h.write_u32(p.0.y.to_bits());
    }
    for (e, (v,)) in world.query::<(&Velocity,)>() {
        h.write_u64(e.to_bits());
        h.write_u32(v.0.x.to_bits());
        h.write_u32(v.0.y.to_bits());
    }
    for (e, (l,)) in world.query::<(&Lifetime,)>() {
        h.write_u64(e.to_bits());
        h.write_u32(l.0.to_bits());
    }
    for (e, (x,)) in world.query::<(&Health,)>() {
        h.write_u64(e.to_bits());
        h.write_i32(x.hp);
        h.write_i32(x.max);
    }
    for (e, (t,)) in world.query::<(&Team,)>() {
        h.write_u64(e.to_bits());
        h.write_u8(t.0);
    }
    for (e, (c,)) in world.query::<(&Collider,)>() {
        h.write_u64(e.to_bits());
        h.write_u32(c.radius.to_bits());
    }
    for (e, (d,)) in world.query::<(&Damage,)>() {
        h.write_u64(e.to_bits());
        h.write_i32(d.0);
    }
    for (e, _) in world.query::<(&Projectile,)>() {
        h.write_u64(e.to_bits());
    }
    h.finish()
}

/// Runs `rt` for one frame per entry of `expected`, comparing the world's [`digest`] after
/// each frame with the recorded one; returns the index of the first frame that differs, or
/// `None` if all match. `after_frame` runs after every frame (e.g. to advance a progress
/// bar).
pub fn first_mismatch(
    rt: &mut Runtime,
    expected: &[u64],
    mut after_frame: impl FnMut(),
) -> Option<usize> {
    for (i, &want) in expected.iter().enumerate() {
        rt.frame();
        after_frame();
        if digest(rt.world()) != want {
            return Some(i);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use glam::Vec2;
    use runsync_systems::Displace;

    use super::*;

    /// A runtime whose one system nudges a position, differently from frame `diverge` on.
    fn nudging(workers: usize, diverge: u64) -> Runtime {
        let mut w = World::new();
        runsync_systems::register(&mut w);
        w.spawn((Position(Vec2::ZERO), Team(1)));
        let mut rt = Runtime::builder().workers(workers).build(w);
        rt.add_system(move |world: &World, out: &mut Output| {
            let frame = world.resource::<Time>().frame;
            let step = if frame >= diverge { 2.0 } else { 1.0 };
            for (e, _) in world.query::<(&Position,)>() {
                out.write::<Position>(e, Displace(Vec2::new(step, 0.0)));
            }
        });
        rt
    }

    #[test]
    fn first_mismatch_finds_the_first_differing_frame() {
        let mut reference = nudging(2, u64::MAX);
        let expected: Vec<u64> = (0..8)
            .map(|_| {
                reference.frame();
                digest(reference.world())
            })
            .collect();
        let mut frames = 0;
        assert_eq!(
            first_mismatch(&mut nudging(1, u64::MAX), &expected, || frames += 1),
            None
        );
        assert_eq!(frames, 8);
        assert_eq!(
            first_mismatch(&mut nudging(1, 5), &expected, || {}),
            Some(5)
        );
        assert_eq!(
            first_mismatch(&mut nudging(1, 0), &expected, || {}),
            Some(0)
        );
    }

    #[test]
    fn digest_sees_every_bit() {
        let mut w = World::new();
        runsync_systems::register(&mut w);
        let e = w.spawn((Position(Vec2::ZERO), Team(1)));
        let d0 = digest(&w);
        assert_eq!(d0, digest(&w));
        w.get_mut::<Position>(e).unwrap().0.x = -0.0;
        let d1 = digest(&w);
        assert_ne!(d0, d1, "sign of zero");
        w.get_mut::<Position>(e).unwrap().0.x = 0.0;
        assert_eq!(d0, digest(&w));
        w.insert(e, Projectile);
        assert_ne!(d0, digest(&w));
    }
}
