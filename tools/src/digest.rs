//! A 64-bit digest of a whole world, for determinism checks, and the report of where two
//! worlds first differ.

use runsync::Checksummer;
use runsync::prelude::*;

/// [`World::checksum`] (the allocator, every table in creation order, every entity and
/// every component of [`runsync_systems`], floats by bits — its `register` opts them all
/// in) mixed with the frame counter of the [`Time`] resource.
///
/// Two worlds with the same digest almost surely hold the same entities with bitwise
/// equal components *in the same storage order*. The hash is runsync's fixed
/// [`Checksummer`], so it is the same for every run, build and platform.
pub fn digest(world: &World) -> u64 {
    let mut h = Checksummer::new();
    h.write_u64(world.checksum());
    h.write_u64(world.get_resource::<Time>().map_or(0, |t| t.frame));
    h.finish()
}

/// Says where `check` first differs from `reference` ([`World::first_difference`]): the
/// entity, the component type and both values; or that they hold the same state.
pub fn desync_report(reference: &World, check: &World) -> String {
    match reference.first_difference(check) {
        Some(d) => d.to_string(),
        None => "no difference in entities or components (only resources differ)".into(),
    }
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
    use runsync_systems::{Displace, Position, Projectile, Team};

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
    fn desync_report_names_the_entity_and_component() {
        let (mut a, mut b) = (nudging(1, u64::MAX), nudging(2, 3));
        for _ in 0..4 {
            a.frame();
            b.frame();
        }
        let e = a.world().query::<(&Position,)>().next().unwrap().0;
        let report = desync_report(a.world(), b.world());
        assert!(report.contains(&format!("entity {e:?}")), "{report}");
        assert!(report.contains("Position"), "{report}");
        assert!(
            report.contains("Position(Vec2(4.0, 0.0)) vs Position(Vec2(5.0, 0.0))"),
            "{report}"
        );
        a.frame();
        let mut c = nudging(1, u64::MAX);
        for _ in 0..5 {
            c.frame();
        }
        assert!(desync_report(a.world(), c.world()).contains("no difference"));
    }

    #[test]
    fn the_arena_rolls_back_bit_exactly() {
        use crate::scenario::{ArenaConfig, build};
        let mut rt = build(ArenaConfig {
            agents: 400,
            seed: 5,
            workers: 2,
        });
        let mut first = Vec::new();
        let mut saved = None;
        for f in 1..=30 {
            rt.frame();
            first.push(digest(rt.world()));
            if f == 10 {
                saved = Some(rt.snapshot().expect("arena types opted in"));
            }
        }
        rt.restore(&saved.unwrap());
        for want in &first[10..] {
            rt.frame();
            assert_eq!(digest(rt.world()), *want, "frame {}", rt.frame_count());
        }
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
