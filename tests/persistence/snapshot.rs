//! Snapshots, checksums and desync reports as a user meets them: opt-in errors, one-bit
//! sensitivity, worker-count independence, a golden checksum (the same in every build),
//! table ids replayed exactly after a restore, and the first difference between two
//! worlds.

use runsync::prelude::*;
use runsync::{Desync, SnapshotError};

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32, f32);
impl Component for Pos {
    type Output = Pos;
}
impl Checksum for Pos {
    fn checksum(&self, h: &mut Checksummer) {
        (self.0, self.1).checksum(h);
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Hp(i32);
impl Component for Hp {
    type Output = i32;
}
impl Checksum for Hp {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

/// Not `Clone`: cannot take part in snapshots.
#[derive(Debug)]
struct Handle(#[allow(dead_code)] std::fs::File);
impl Component for Handle {
    type Output = ();
}

/// A world with `Pos` and `Hp` registered, opted into snapshots and checksums.
fn registered() -> World {
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    w.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    w.snapshotting::<Pos>()
        .snapshotting::<Hp>()
        .checksumming::<Pos>()
        .checksumming::<Hp>();
    w
}

fn world() -> World {
    let mut w = registered();
    for i in 0..100 {
        let p = Pos(i as f32, -(i as f32));
        if i % 3 == 0 {
            w.spawn((p,));
        } else {
            w.spawn((p, Hp(i)));
        }
    }
    w
}

#[test]
fn a_type_not_opted_in_is_named_by_the_error() {
    let mut w = world();
    w.register::<Handle>(|_: &mut Handle, _: &[()]| {});
    let err = w.snapshot().unwrap_err();
    let SnapshotError::NotSnapshotting { type_name } = &err else {
        panic!("unexpected {err:?}")
    };
    assert!(type_name.ends_with("Handle"), "{type_name}");
    let msg = err.to_string();
    assert!(
        msg.contains("world.snapshotting::<Handle>()"),
        "the message says the fix: {msg}"
    );
}

#[test]
#[should_panic(expected = "register the same types in the same order")]
fn restore_into_a_world_with_other_types_panics_clearly() {
    let snap = world().snapshot().unwrap();
    let mut other = World::new();
    other.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    other.restore(&snap);
}

#[test]
fn checksum_sees_one_bit_of_one_component() {
    let w = world();
    let base = w.checksum();
    assert_eq!(base, world().checksum(), "same state, same checksum");
    let e = w.query::<(&Hp,)>().nth(40).unwrap().0;
    for bit in 0..32 {
        let mut m = world();
        m.get_mut::<Hp>(e).unwrap().0 ^= 1 << bit;
        assert_ne!(m.checksum(), base, "Hp bit {bit}");
        let mut m = world();
        let p = m.get_mut::<Pos>(e).unwrap();
        p.1 = f32::from_bits(p.1.to_bits() ^ (1 << bit));
        assert_ne!(m.checksum(), base, "Pos.1 bit {bit}");
    }
    // Structure counts too: a despawn, an insert, the free list.
    let mut m = world();
    m.insert(e, Pos(0.0, 0.0));
    assert_ne!(m.checksum(), base);
    let mut m = world();
    m.remove::<Hp>(e);
    assert_ne!(m.checksum(), base);
}

#[test]
fn checksum_is_the_same_at_any_worker_count() {
    let run = |workers| {
        let mut rt = Runtime::builder().workers(workers).build(world());
        rt.add_system(|w: &World, out: &mut Output| {
            let f = w.resource::<Time>().frame as f32;
            for (e, (p, hp)) in w.query::<(&Pos, Option<&Hp>)>() {
                out.write::<Pos>(e, Pos(p.0 * 0.5 + f, p.1 + 0.25));
                if hp.is_some() {
                    out.write::<Hp>(e, -1);
                }
                if e.index() % 17 == f as u32 % 17 {
                    out.despawn(e);
                    out.spawn((Pos(f, f), Hp(3)));
                }
            }
        });
        (0..20)
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
fn first_difference_names_the_entity_the_component_and_both_values() {
    let a = world();
    let mut b = world();
    assert_eq!(a.first_difference(&b), None);
    let e = b.query::<(&Pos, &Hp)>().nth(17).unwrap().0;
    b.get_mut::<Hp>(e).unwrap().0 = 999;
    let d: Desync = a.first_difference(&b).expect("they differ");
    assert_eq!(d.entity(), Some(e));
    assert!(d.component().unwrap().ends_with("Hp"));
    let want = format!("Hp({})", a.get::<Hp>(e).unwrap().0);
    assert_eq!(d.values(), Some((want.as_str(), "Hp(999)")));
    assert!(d.to_string().contains(&format!("{e:?}")), "{d}");

    // A component present on one side only.
    let mut c = world();
    c.remove::<Hp>(e);
    let d = a.first_difference(&c).unwrap();
    assert_eq!(d.entity(), Some(e));
    assert!(d.to_string().contains("only on the left"), "{d}");

    // An entity alive on one side only.
    let mut c = world();
    c.despawn(e);
    let d = a.first_difference(&c).unwrap();
    assert_eq!(d.entity(), Some(e));
    assert!(d.to_string().contains("alive only on the left"), "{d}");

    // Snapshots compare by restoring them into scratch worlds.
    let snap = b.snapshot().unwrap();
    let mut scratch = world();
    scratch.restore(&snap);
    assert_eq!(scratch.first_difference(&b), None);
    assert_eq!(a.first_difference(&scratch).unwrap().entity(), Some(e));
}

#[derive(Clone, Debug, PartialEq)]
struct Score(u32);

#[test]
fn resources_are_saved_when_opted_in_and_left_alone_otherwise() {
    #[derive(Debug, PartialEq)]
    struct Assets(u32);
    let mut w = world();
    w.snapshotting_resource::<Score>();
    w.insert_resource(Assets(1));
    let no_score = w.snapshot().unwrap();
    w.insert_resource(Score(3));
    let with_score = w.snapshot().unwrap();
    w.insert_resource(Score(9));
    w.insert_resource(Assets(2));
    w.restore(&with_score);
    assert_eq!(w.get_resource::<Score>(), Some(&Score(3)));
    assert_eq!(
        w.resource::<Assets>(),
        &Assets(2),
        "not opted in: untouched"
    );
    w.restore(&no_score);
    assert_eq!(
        w.get_resource::<Score>(),
        None,
        "absent when saved: removed"
    );
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Extra(u8);
impl Component for Extra {
    type Output = Extra;
}

#[test]
fn tables_made_after_the_snapshot_are_dropped_so_ids_replay_exactly() {
    let mut w = world();
    w.register::<Extra>(merge::last);
    w.snapshotting::<Extra>();
    let e = w.query::<(&Hp,)>().next().unwrap().0;
    let saved = w.snapshot().unwrap();
    // The reference history: from the snapshot, `Extra` is inserted into `e`.
    let mut reference = world();
    reference.register::<Extra>(merge::last);
    reference.snapshotting::<Extra>();
    reference.restore(&saved);
    reference.insert(e, Extra(1));
    // A diverging history first makes another table ({Pos, Hp} minus Hp = {Pos} exists;
    // {Pos, Extra} is new), then rolls back and replays the reference history.
    let f = w.query::<(&Pos, runsync::Without<Hp>)>().next().unwrap().0;
    w.insert(f, Extra(9));
    w.restore(&saved);
    w.insert(e, Extra(1));
    assert_eq!(w.first_difference(&reference), None);
    assert_eq!(w.checksum(), reference.checksum());
    // Same table ids: a spawn into {Pos, Extra} lands in the same place in both, so the
    // query order (tables in creation order) agrees.
    for x in [&mut w, &mut reference] {
        x.spawn((Pos(7.0, 7.0), Extra(2)));
    }
    let order = |x: &World| {
        x.query::<(&Pos,)>()
            .map(|(e, _)| e.to_bits())
            .collect::<Vec<_>>()
    };
    assert_eq!(order(&w), order(&reference));
    assert_eq!(w.checksum(), reference.checksum());
}

/// The checksum is a fixed function of the state: the same value in every build (debug,
/// release, `single-threaded`) and on every run. If this fails after a deliberate change
/// of the hash or of what it covers, update the constant and say so in the CHANGELOG.
#[test]
fn checksum_is_stable_across_builds_and_runs() {
    let mut w = world();
    let e = w.query::<(&Hp,)>().nth(3).unwrap().0;
    w.despawn(e);
    assert_eq!(w.checksum(), GOLDEN, "got {:#018x}", w.checksum());
    // Versions 1 and 2 of the digest stay what they were: replays recorded with them
    // still check.
    assert_eq!(w.checksum_v2(), GOLDEN_V2, "got {:#018x}", w.checksum_v2());
    assert_eq!(w.checksum_v1(), GOLDEN_V1, "got {:#018x}", w.checksum_v1());
}

/// Digest version 3 (blocks on four chains, two 32-bit writes a word).
const GOLDEN: u64 = 0xec83_1fa2_178f_f805;
/// Digest version 2 (a word per 32-bit write), frozen.
const GOLDEN_V2: u64 = 0x4fe2_b6f9_43d7_b736;
/// Digest version 1 (one chain), frozen.
const GOLDEN_V1: u64 = 0xa5ed_d003_54fe_4009;

#[derive(Clone, Debug, PartialEq)]
struct Rng(u64);
impl Checksum for Rng {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

#[test]
fn opted_in_resources_count_in_the_checksum_and_the_report() {
    let make = |seed| {
        let mut w = world();
        w.checksumming_resource::<Rng>()
            .snapshotting_resource::<Rng>();
        w.insert_resource(Rng(seed));
        w
    };
    let (a, b) = (make(1), make(2));
    assert_ne!(a.checksum(), b.checksum());
    let d = a.first_difference(&b).unwrap();
    assert_eq!(d.values(), Some(("Rng(1)", "Rng(2)")));
    assert!(d.to_string().contains("resource"), "{d}");
    let mut c = make(1);
    assert_eq!(a.checksum(), c.checksum());
    c.remove_resource::<Rng>();
    assert_ne!(a.checksum(), c.checksum(), "absent differs from present");
    c.restore(&a.snapshot().unwrap());
    assert_eq!(a.first_difference(&c), None);
}

/// A resource systems write is game state: a snapshot that would leave it out is an
/// error naming it (a rollback that skipped it re-simulated to other checksums, silently).
#[test]
fn a_written_resource_not_opted_in_is_an_error_not_a_silent_skip() {
    #[derive(Clone, Debug, PartialEq)]
    struct Wind(i32);
    impl Component for Wind {
        type Output = i32;
    }
    let make = |opt_in: bool| {
        let mut w = World::new();
        w.register_resource::<Wind>(|r: &mut Wind, d: &[i32]| r.0 += d.iter().sum::<i32>());
        if opt_in {
            w.snapshotting_resource::<Wind>();
        }
        w.insert_resource(Wind(0));
        let mut rt = Runtime::builder().workers(2).build(w);
        rt.add_system(|_: &World, out: &mut Output| out.write_resource::<Wind>(1));
        rt
    };
    let mut rt = make(false);
    let err = rt.snapshot().unwrap_err();
    assert!(matches!(
        err,
        runsync::SnapshotError::ResourceNotSnapshotting { type_name } if type_name.ends_with("Wind")
    ));
    assert!(
        err.to_string()
            .contains("world.snapshotting_resource::<Wind>()"),
        "{err}"
    );
    assert_eq!(rt.world().unchecksummed(), [std::any::type_name::<Wind>()]);
    // A snapshot from a world that opted in cannot be restored into one that did not.
    let mut good = make(true);
    good.frame();
    let saved = good.snapshot().unwrap();
    good.frame();
    good.restore(&saved);
    assert_eq!(good.world().resource::<Wind>(), &Wind(1));
    rt.frame();
    assert!(matches!(
        rt.try_restore(&saved),
        Err(runsync::SnapshotError::ResourceNotSnapshotting { .. })
    ));
    assert_eq!(rt.world().resource::<Wind>(), &Wind(1), "untouched");
}

/// A world of `n` entities in three tables (`Pos`; `Pos, Hp`; `Hp`) with values drawn
/// from `seed`, and every seventh entity despawned (slots freed, a free list).
fn big_world(n: usize, seed: u64) -> World {
    let mut w = registered();
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut all = Vec::with_capacity(n);
    for _ in 0..n {
        let r = next();
        let p = Pos((r & 0xffff) as f32, (r >> 16 & 0xffff) as f32);
        all.push(match r % 3 {
            0 => w.spawn((p,)),
            1 => w.spawn((p, Hp((r >> 40) as i32))),
            _ => w.spawn((Hp((r >> 40) as i32),)),
        });
    }
    for e in all.into_iter().step_by(7) {
        w.despawn(e);
    }
    w
}

/// The runtime's checksum digests blocks of 4096 rows on the workers; the world's, the
/// same blocks on one thread. Sizes around the block's edges and past the size that
/// goes parallel, random contents: the same value (and the same parts) at 1, 2 and 8
/// workers, and that of a runtime that ran frames to get there.
#[test]
fn the_runtime_checksum_is_the_worlds_at_any_worker_count() {
    for (n, seed) in [
        (0, 1),
        (1, 2),
        (4095, 3),
        (4096, 4),
        (4097 * 3, 5),
        (40_000, 6),
        (70_001, 7),
    ] {
        let serial = big_world(n, seed).checksum();
        let parts = big_world(n, seed).checksum_parts();
        for workers in [1, 2, 8] {
            let rt = Runtime::builder()
                .workers(workers)
                .build(big_world(n, seed));
            assert_eq!(rt.checksum(), serial, "{n} entities, {workers} workers");
            assert_eq!(
                rt.checksum_parts(),
                parts,
                "{n} entities, {workers} workers"
            );
        }
    }
}

/// One value changed anywhere in a big column — first row, a block's last and next,
/// the last row — changes the checksum and names the type among the parts.
#[test]
fn one_value_in_any_block_changes_the_checksum() {
    let n = 30_000;
    let base = big_world(n, 9);
    let rows: Vec<Entity> = base.query::<(&Pos,)>().map(|(e, _)| e).collect();
    let before = base.checksum();
    for k in [0, 4095, 4096, 8191, 8192, rows.len() - 1] {
        let mut w = big_world(n, 9);
        w.get_mut::<Pos>(rows[k]).unwrap().1 += 1.0;
        let rt = Runtime::builder().workers(2).build(w);
        assert_ne!(rt.checksum(), before, "row {k}");
        let differ: Vec<&str> = base
            .checksum_parts()
            .iter()
            .zip(rt.checksum_parts())
            .filter(|(a, b)| a.1 != b.1)
            .map(|(a, _)| a.0)
            .collect();
        assert_eq!(differ, [std::any::type_name::<Pos>()], "row {k}");
    }
}
