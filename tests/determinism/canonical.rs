//! Canonical order (`World::set_canonical_order`): two worlds with the same contents but
//! different histories (which archetype appeared first, which rows despawns and moves
//! swapped) run the same frames bit for bit, at 1, 2 and 8 workers (and in the
//! `single-threaded` build); without canonical order the same two worlds drift apart,
//! which shows the scenario does depend on iteration order. A world holding a subset of
//! another's entities visits them in the same relative order.

use runsync::Checksum;
use runsync::prelude::*;

const FRAMES: u64 = if cfg!(miri) { 3 } else { 40 };
const N: u32 = if cfg!(miri) { 30 } else { 600 };

/// Health: a float sum of scattered deltas (order-dependent bits).
#[derive(Checksum, Clone, Copy, Debug, PartialEq)]
struct Hp(f32);
impl Component for Hp {
    type Output = f32;
}

/// Position: a damped fold (order-dependent).
#[derive(Checksum, Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
impl Component for Pos {
    type Output = f32;
}

/// The last writer's stamp, written by many entities to one target (last wins).
#[derive(Checksum, Clone, Copy, Debug, PartialEq)]
struct Stamp(u32);
impl Component for Stamp {
    type Output = Stamp;
}

/// A marker moved on and off entities (moves rows between tables).
#[derive(Checksum, Clone, Copy, Debug, PartialEq)]
struct Tag;
impl Component for Tag {
    type Output = ();
}

/// A deterministic hash of two integers.
fn mix(a: u32, b: u64) -> u64 {
    let mut x = (u64::from(a) << 32) ^ b ^ 0x9E37_79B9_7F4A_7C15;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

fn noise(a: u32, b: u64) -> f32 {
    (mix(a, b) >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

fn register(w: &mut World) {
    w.register::<Hp>(|h: &mut Hp, d: &[f32]| {
        for &x in d {
            h.0 += x;
        }
    });
    w.register::<Pos>(|p: &mut Pos, d: &[f32]| {
        for &x in d {
            p.0 = p.0 * 0.9 + x;
        }
    });
    w.register::<Stamp>(merge::last);
    w.register::<Tag>(|_: &mut Tag, _: &[()]| {});
    w.checksumming::<Hp>()
        .checksumming::<Pos>()
        .checksumming::<Stamp>()
        .checksumming::<Tag>();
}

fn start(i: u32) -> (Pos, Hp, Stamp) {
    (
        Pos(noise(i, 1) * 100.0),
        Hp(50.0 + noise(i, 2) * 10.0),
        Stamp(0),
    )
}

/// Tables created plain first, then tagged; odd entities tagged in ascending order.
fn world_a() -> World {
    let mut w = World::new();
    register(&mut w);
    let es: Vec<Entity> = (0..N).map(|i| w.spawn(start(i))).collect();
    for e in es.iter().filter(|e| e.index() % 2 == 1) {
        w.insert(*e, Tag);
    }
    w
}

/// The same contents the other way round: tagged table first, tags taken off the even
/// entities in descending order (every removal swaps rows).
fn world_b() -> World {
    let mut w = World::new();
    register(&mut w);
    let es: Vec<Entity> = (0..N)
        .map(|i| {
            let (p, h, s) = start(i);
            w.spawn((p, h, s, Tag))
        })
        .collect();
    for e in es.iter().rev().filter(|e| e.index() % 2 == 0) {
        w.remove::<Tag>(*e);
    }
    w
}

fn runtime(w: World, workers: usize) -> Runtime {
    let mut rt = Runtime::builder().workers(workers).dt(0.1).build(w);
    rt.add_system_named("scatter", |world: &World, out: &mut Output| {
        // Every entity hurts two others chosen by its id among the living, sorted by id
        // (a choice that does not depend on iteration order); their order of arrival
        // at a target is the emitters' iteration order.
        let frame = world.resource::<Time>().frame;
        let mut alive: Vec<Entity> = world.query::<&Hp>().map(|(e, _)| e).collect();
        alive.sort_by_key(|e| e.index());
        for (e, (p, _)) in world.query::<(&Pos, &Hp)>() {
            for k in 0..2 {
                let t = alive[(mix(e.index(), frame * 2 + k) % alive.len() as u64) as usize];
                out.write::<Hp>(t, p.0 * 0.013 + noise(e.index(), frame) * 3.1);
                out.write::<Stamp>(t, Stamp(e.index()));
            }
        }
    });
    rt.add_system_named("drift", |world: &World, out: &mut Output| {
        let frame = world.resource::<Time>().frame;
        out.par_for_each::<(&Pos, Option<&Tag>)>(|e, (p, tag), out| {
            out.write::<Pos>(e, noise(e.index(), frame + 5) + p.0 * 1e-3);
            if tag.is_some() && e.index() % 7 == frame as u32 % 7 {
                // Ids chosen in Sync, in chunk order: the iteration order.
                out.spawn_deferred(start(e.index() + 10_000 * frame as u32));
            }
        });
    });
    rt.add_system_named("life", |world: &World, out: &mut Output| {
        let frame = world.resource::<Time>().frame;
        let mut births = 0;
        for (e, (h, tag)) in world.query::<(&Hp, Option<&Tag>)>() {
            if h.0 < 40.0 {
                out.despawn(e);
                births += 1;
            } else if tag.is_none() && mix(e.index(), frame) % 5 == 0 {
                out.insert(e, Tag);
            } else if tag.is_some() && mix(e.index(), frame) % 3 == 0 {
                out.remove::<Tag>(e);
            }
        }
        for i in 0..births {
            out.spawn(start(i + frame as u32 * 1000));
        }
    });
    rt
}

/// Every entity's state, by id, with values as bits: comparable across layouts.
fn contents(w: &World) -> Vec<(u64, u32, u32, u32, bool)> {
    let mut v: Vec<_> = w
        .query::<(&Pos, &Hp, &Stamp, Option<&Tag>)>()
        .map(|(e, (p, h, s, t))| (e.to_bits(), p.0.to_bits(), h.0.to_bits(), s.0, t.is_some()))
        .collect();
    v.sort_unstable();
    v
}

/// Runs both worlds side by side; the first frame whose contents differ, if any.
fn first_divergence(canonical: bool, workers: usize) -> Option<u64> {
    let (mut a, mut b) = (world_a(), world_b());
    a.set_canonical_order(canonical);
    b.set_canonical_order(canonical);
    assert_eq!(contents(&a), contents(&b), "the two worlds start equal");
    let (mut a, mut b) = (runtime(a, workers), runtime(b, workers));
    for frame in 1..=FRAMES {
        a.frame();
        b.frame();
        assert!(
            a.world().len() > N as usize / 2,
            "the scenario keeps its population"
        );
        if contents(a.world()) != contents(b.world()) {
            return Some(frame);
        }
        if canonical {
            assert_eq!(
                a.world().checksum(),
                b.world().checksum(),
                "frame {frame}: same contents, same checksum in canonical order"
            );
        }
    }
    None
}

#[test]
fn same_contents_run_the_same_frames_in_canonical_order() {
    for workers in [1, 2, 8] {
        assert_eq!(first_divergence(true, workers), None, "{workers} workers");
    }
}

#[test]
fn without_canonical_order_the_histories_show() {
    // The control: the scenario does depend on iteration order, so the test above could
    // fail.
    assert!(first_divergence(false, 2).is_some());
}

#[test]
fn the_workers_agree_in_canonical_order() {
    let run = |workers| {
        let mut w = world_b();
        w.set_canonical_order(true);
        let mut rt = runtime(w, workers);
        (0..FRAMES)
            .map(|_| {
                rt.frame();
                rt.world().checksum()
            })
            .collect::<Vec<_>>()
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(8));
}

#[test]
fn a_subset_is_visited_in_the_same_relative_order() {
    let (mut whole, mut part) = (world_b(), world_a());
    whole.set_canonical_order(true);
    part.set_canonical_order(true);
    // `part` loses every third entity (despawns swap rows); a frame re-sorts it.
    let gone: Vec<Entity> = part
        .query::<&Hp>()
        .map(|(e, _)| e)
        .filter(|e| e.index() % 3 == 0)
        .collect();
    for e in gone {
        part.despawn(e);
    }
    let order = |w: World| {
        let mut rt = Runtime::builder().workers(1).build(w);
        rt.frame();
        rt.world()
            .query::<(&Hp, Option<&Tag>)>()
            .map(|(e, _)| e)
            .collect::<Vec<_>>()
    };
    let (whole, part) = (order(whole), order(part));
    let kept: Vec<Entity> = whole
        .iter()
        .copied()
        .filter(|e| e.index() % 3 != 0)
        .collect();
    assert_eq!(part, kept);
    // Tables by their types (plain before tagged), rows by index within each.
    let tagged_at = whole.iter().position(|e| e.index() % 2 == 1).unwrap();
    assert!(
        whole[..tagged_at]
            .windows(2)
            .all(|w| w[0].index() < w[1].index())
    );
    assert!(
        whole[tagged_at..]
            .windows(2)
            .all(|w| w[0].index() < w[1].index())
    );
}

#[test]
fn change_marks_move_with_their_rows() {
    let mut w = World::new();
    register(&mut w);
    w.set_canonical_order(true);
    let [a, b, c, d] = [0, 1, 2, 3].map(|i| w.spawn(start(i)));
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system(move |_: &World, out: &mut Output| {
        out.write::<Hp>(d, 1.0);
        // `d` fills `a`'s row, `c` then `b`'s: rows (d, c), which the frame's end sorts.
        out.despawn(a);
        out.insert(b, Tag);
    });
    rt.frame();
    let w = rt.world();
    let order: Vec<Entity> = w.query::<&Hp>().map(|(e, _)| e).collect();
    assert_eq!(order, [c, d, b], "plain table (c, d), then tagged (b)");
    assert!(w.is_changed::<Hp>(d) && !w.is_changed::<Hp>(c));
    assert!(w.is_added::<Tag>(b) && !w.is_changed::<Hp>(b));
    assert_eq!(w.get::<Hp>(d).map(|h| h.0), Some(start(3).1.0 + 1.0));
    assert_eq!(w.get::<Pos>(c), Some(&start(2).0));
}
