//! Failures keep their promises: a failed frame, merge, restore or fixed-step
//! call leaves the world, the clock and the error exactly as their docs say.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use runsync::merge::{ColumnOutputs, Merge};
use runsync::prelude::*;
use runsync::{MergeTarget, SnapshotError};

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
impl Component for Pos {
    type Output = Pos;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Hp(i32);
impl Component for Hp {
    type Output = i32;
}

/// A merge that runs in place: pushes each output, and panics on 666 partway.
#[derive(Clone, Debug, PartialEq)]
struct Bag(Vec<u32>);
impl Component for Bag {
    type Output = u32;
}

fn push_or_panic(b: &mut Bag, outs: &[u32]) {
    for &o in outs {
        if o == 666 {
            panic!("bad output");
        }
        b.0.push(o);
    }
}

fn world() -> World {
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    w.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    w.register::<Bag>(push_or_panic);
    w.snapshotting::<Pos>()
        .snapshotting::<Hp>()
        .snapshotting::<Bag>();
    w
}

/// A copy of `w`, through a snapshot.
fn copy(w: &World) -> World {
    let mut c = world();
    c.restore(&w.snapshot().unwrap());
    c
}

// Case 1: a frame failed by a system panic leaves the world exactly as it was, spawn-id
// reservations included.
#[test]
fn a_system_panic_leaves_the_world_exactly_as_before() {
    let mut w = world();
    for i in 0..5 {
        w.spawn((Pos(i as f32),));
    }
    let mut rt = Runtime::builder().workers(2).build(w);
    let fail = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    rt.add_system(|_: &World, out: &mut Output| {
        for _ in 0..3 {
            out.spawn((Pos(9.0),));
        }
    });
    let f = fail.clone();
    rt.add_system(move |_: &World, _: &mut Output| {
        if f.load(std::sync::atomic::Ordering::Relaxed) {
            panic!("boom");
        }
    });
    // The first frame (no reservation yet) and a later one (reservations to top up) both
    // fail.
    for round in 0..2 {
        fail.store(true, std::sync::atomic::Ordering::Relaxed);
        let before = copy(rt.world());
        let sum = rt.world().checksum();
        let err = rt.try_frame().unwrap_err();
        assert!(
            matches!(err, FrameError::SystemPanicked { .. }),
            "round {round}: {err:?}"
        );
        assert_eq!(
            rt.world().first_difference(&before).map(|d| d.to_string()),
            None,
            "round {round}"
        );
        assert_eq!(rt.world().checksum(), sum, "round {round}");
        fail.store(false, std::sync::atomic::Ordering::Relaxed);
        rt.frame();
    }
    assert_eq!(rt.world().len(), 5 + 3 * 2);
}

// Case 2: a panicking merge names its type and target; the target holds what the merge
// left, documented.
#[test]
fn a_panicking_resource_merge_names_the_resource_and_leaves_what_it_left() {
    let mut w = World::new();
    w.register_resource::<Bag>(push_or_panic);
    w.insert_resource(Bag(vec![9]));
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system(|_: &World, out: &mut Output| {
        for v in [1, 2, 666, 3] {
            out.write_resource::<Bag>(v);
        }
    });
    let err = rt.try_frame().unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("resource `"), "{msg}");
    assert!(msg.contains("Bag"), "{msg}");
    assert!(
        matches!(&err, FrameError::MergePanicked { component, target: MergeTarget::Resource, message, stage: StageId::FIRST }
            if component.ends_with("Bag") && message == "bad output"),
        "{err:?}"
    );
    assert_eq!(rt.frame_count(), 1, "the frame counts as done");
    // Documented: the resource holds whatever the panicking merge left.
    assert_eq!(rt.world().resource::<Bag>(), &Bag(vec![9, 1, 2]));
}

#[test]
fn a_panicking_component_merge_names_the_entity() {
    let mut w = world();
    let a = w.spawn((Bag(vec![9]),));
    let b = w.spawn((Bag(vec![7]),));
    let c = w.spawn((Bag(vec![5]),));
    let mut rt = Runtime::builder().workers(2).build(w);
    rt.add_system(move |_: &World, out: &mut Output| {
        out.write::<Bag>(a, 4);
        for v in [1, 2, 666, 3] {
            out.write::<Bag>(b, v);
        }
        out.write::<Bag>(c, 8);
    });
    let err = rt.try_frame().unwrap_err();
    assert!(
        matches!(&err, FrameError::MergePanicked { component, target, .. }
            if component.ends_with("Bag") && *target == MergeTarget::Entity(b)),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains(&format!("{b:?}")), "names the entity: {msg}");
    assert!(msg.contains("Bag"), "{msg}");
    let bag = |e| rt.world().get::<Bag>(e).unwrap().0.clone();
    // One merge call per entity: each other entity holds its old or its merged value;
    // the one named holds what its merge left.
    assert_eq!(bag(a), [9, 4]);
    assert_eq!(bag(b), [7, 1, 2]);
    assert!(bag(c) == [5] || bag(c) == [5, 8], "{:?}", bag(c));
}

/// A sum whose `+=` panics on 666 before adding.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Acc(i64);
impl Component for Acc {
    type Output = i64;
}
impl std::ops::AddAssign<i64> for Acc {
    fn add_assign(&mut self, d: i64) {
        assert!(d != 666, "bad delta");
        self.0 += d;
    }
}

/// `merge::sum` is applied system by system (and, for a large type on several workers, in
/// parallel row ranges): after a panic every other value holds its old value plus the
/// deltas of a prefix of the systems, and the error names the entity that panicked.
#[test]
fn a_panicking_sum_leaves_each_value_with_a_prefix_of_its_outputs() {
    let n = 100_000;
    for workers in [1, 2] {
        let mut w = World::new();
        w.register::<Acc>(merge::sum);
        let ids: Vec<Entity> = (0..n).map(|i| w.spawn((Acc(i * 1000),))).collect();
        let bad = ids[70_001];
        let mut rt = Runtime::builder().workers(workers).build(w);
        rt.add_system(|w: &World, out: &mut Output| {
            for (e, _) in w.query::<(&Acc,)>() {
                out.write::<Acc>(e, 1);
            }
        });
        rt.add_system(move |w: &World, out: &mut Output| {
            let first = w.resource::<Time>().frame == 0;
            for (e, _) in w.query::<(&Acc,)>() {
                out.write::<Acc>(e, if e == bad && first { 666 } else { 10 });
            }
        });
        let err = rt.try_frame().unwrap_err();
        assert!(
            matches!(&err, FrameError::MergePanicked { target, message, .. }
                if *target == MergeTarget::Entity(bad) && message == "bad delta"),
            "{workers} workers: {err:?}"
        );
        for (i, &e) in ids.iter().enumerate() {
            let old = i as i64 * 1000;
            let v = rt.world().get::<Acc>(e).unwrap().0;
            if e == bad {
                assert_eq!(v, old + 1, "what the merge left: the first system's delta");
            } else {
                assert!(
                    [old, old + 1, old + 11].contains(&v),
                    "{workers} workers, #{i}: {v}"
                );
            }
        }
        // The next frame merges normally.
        rt.frame();
        assert_eq!(
            rt.world().get::<Acc>(bad).unwrap().0,
            70_001 * 1000 + 1 + 11
        );
    }
}

/// A merge that replaces whole columns, and panics doing it.
struct ReplaceOrPanic;
impl Merge<Pos> for ReplaceOrPanic {
    fn merge(&self, v: &mut Pos, outs: &[Pos]) {
        *v = *outs.last().unwrap();
    }
    const REPLACES_COLUMNS: bool = true;
    fn replace_column(&self, _: ColumnOutputs<'_, Pos>) -> bool {
        panic!("no swapping today")
    }
}

#[test]
fn a_panicking_replace_column_names_the_column() {
    let mut w = World::new();
    w.register::<Pos>(ReplaceOrPanic);
    w.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    w.spawn((Pos(0.0),));
    let first = w.spawn((Pos(1.0), Hp(0)));
    w.spawn((Pos(2.0), Hp(0)));
    let mut rt = Runtime::builder().workers(2).build(w);
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, _) in w.query_filtered::<(&Pos,), With<Hp>>() {
            out.write::<Pos>(e, Pos(9.0));
        }
    });
    let err = rt.try_frame().unwrap_err();
    assert!(
        matches!(&err, FrameError::MergePanicked { target, .. }
            if *target == MergeTarget::Column { first }),
        "{err:?}"
    );
    assert!(err.to_string().contains("whole column"), "{err}");
}

// Case 3: a restore that cannot complete changes nothing.
#[test]
fn a_restore_into_a_world_missing_an_opt_in_changes_nothing() {
    let mut src = world();
    for i in 0..3 {
        src.spawn((Pos(i as f32), Hp(i)));
    }
    let snap = src.snapshot().unwrap();

    let mut dst = World::new();
    dst.register::<Pos>(merge::last);
    dst.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    dst.register::<Bag>(push_or_panic);
    dst.snapshotting::<Pos>().snapshotting::<Bag>(); // not Hp
    let e = dst.spawn((Hp(40),));
    let sum = dst.checksum();

    let err = catch_unwind(AssertUnwindSafe(|| dst.restore(&snap))).unwrap_err();
    let msg = err
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap();
    assert!(msg.contains("Hp"), "names the type: {msg}");
    assert!(msg.contains("snapshotting::<Hp>()"), "says the fix: {msg}");
    assert_eq!(dst.len(), 1, "untouched");
    assert_eq!(dst.checksum(), sum);
    let all: Vec<_> = dst.query::<(&Hp,)>().map(|(e, (h,))| (e, *h)).collect();
    assert_eq!(all, [(e, Hp(40))]);
}

#[test]
fn try_restore_reports_what_stops_it_and_changes_nothing() {
    let mut src = world();
    src.spawn((Pos(1.0), Hp(1)));
    let snap = src.snapshot().unwrap();
    let mut rt_src = Runtime::builder().workers(1).build(src);
    rt_src.frame();
    let rt_snap = rt_src.snapshot().unwrap();

    // A type not opted in: named, with the fix.
    let mut dst = World::new();
    dst.register::<Pos>(merge::last);
    dst.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    dst.register::<Bag>(push_or_panic);
    dst.snapshotting::<Pos>().snapshotting::<Hp>();
    dst.spawn((Bag(vec![1]),));
    let sum = dst.checksum();
    let err = dst.try_restore(&snap).unwrap_err();
    assert!(
        matches!(err, SnapshotError::NotSnapshotting { type_name } if type_name.ends_with("Bag")),
        "{err:?}"
    );
    assert!(err.to_string().contains("snapshotting::<Bag>()"), "{err}");
    assert_eq!((dst.len(), dst.checksum()), (1, sum));

    // Through the runtime: world, frame counter and Time untouched.
    let mut rt = Runtime::builder().workers(1).build(dst);
    rt.frame();
    rt.frame();
    let sum = rt.world().checksum();
    assert!(rt.try_restore(&rt_snap).is_err());
    assert_eq!(rt.frame_count(), 2);
    assert_eq!(rt.world().resource::<Time>().frame, 2);
    assert_eq!(rt.world().checksum(), sum);

    // Other types: both lists.
    let mut other = World::new();
    other.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    other.snapshotting::<Hp>();
    let e = other.spawn((Hp(5),));
    match other.try_restore(&snap).unwrap_err() {
        SnapshotError::OtherTypes { snapshot, world } => {
            assert_eq!(snapshot.len(), 3);
            assert_eq!(world.len(), 1);
            assert!(world[0].ends_with("Hp"));
        }
        err => panic!("{err:?}"),
    }
    assert_eq!(other.get::<Hp>(e), Some(&Hp(5)));

    // Once opted in, the same restore goes through.
    let mut dst = rt.into_world();
    dst.snapshotting::<Bag>();
    dst.try_restore(&snap).unwrap();
    assert_eq!(dst.len(), 1);
}

// Case 4: a frame that counts as done is charged its time once.
#[test]
fn a_failed_frame_that_counts_is_charged_once() {
    let mut w = world();
    let e = w.spawn((Bag(vec![]),));
    let step = Duration::from_nanos(15_625_000); // 1/64 s, exact
    let mut rt = Runtime::builder().workers(1).dt(1.0 / 64.0).build(w);
    rt.add_system(move |w: &World, out: &mut Output| {
        let f = w.resource::<Time>().frame;
        out.write::<Bag>(e, if f == 0 { 666 } else { f as u32 });
    });
    let err = rt.try_advance(step * 3).unwrap_err();
    assert!(matches!(err, FrameError::MergePanicked { .. }), "{err:?}");
    assert_eq!(rt.frame_count(), 1, "the failed frame counts as done");
    let a = rt.try_advance(Duration::ZERO).unwrap();
    assert_eq!(a.frames, 2, "the two frames left, not three");
    assert_eq!(rt.frame_count(), 3, "3 steps of time, 3 frames");
    assert_eq!(rt.try_advance(Duration::ZERO).unwrap().frames, 0);
}

#[test]
fn a_frame_failed_by_a_system_panic_is_not_charged() {
    let step = Duration::from_nanos(15_625_000);
    let mut rt = Runtime::builder().workers(1).dt(1.0 / 64.0).build(world());
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let r = ran.clone();
    rt.add_system(move |w: &World, _: &mut Output| {
        r.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if w.resource::<Time>().frame == 1 && r.load(std::sync::atomic::Ordering::Relaxed) == 2 {
            panic!("once");
        }
    });
    let err = rt.try_advance(step * 3).unwrap_err();
    assert!(matches!(err, FrameError::SystemPanicked { .. }), "{err:?}");
    assert_eq!(rt.frame_count(), 1, "frame 2 failed and does not count");
    // Frame 2 is run again, then frame 3: the three steps of time, three frames.
    assert_eq!(rt.try_advance(Duration::ZERO).unwrap().frames, 2);
    assert_eq!(rt.frame_count(), 3);
    assert_eq!(ran.load(std::sync::atomic::Ordering::Relaxed), 4);
}

// Case 5: N/60 s pays for exactly N frames at the default 60 Hz.
#[test]
fn the_default_rate_is_exactly_60_hz() {
    let mut rt = Runtime::builder().workers(1).build(World::new());
    let a = rt.advance(Duration::from_secs(1) / 30);
    assert_eq!(a.frames, 2, "alpha {}", a.alpha);
    assert_eq!(a.alpha, 0.0);
    for _ in 0..598 {
        let _ = rt.advance(Duration::from_secs(1) / 60);
    }
    assert_eq!(rt.frame_count(), 600);
    assert_eq!(rt.world().resource::<Time>().dt, 1.0 / 60.0);
}

#[test]
fn fixed_hz_counts_exact_steps_and_replays_bit_exactly() {
    let make = || {
        let mut w = world();
        let e = w.spawn((Pos(0.0),));
        let mut rt = Runtime::builder()
            .workers(2)
            .fixed_hz(60)
            .max_catch_up(1000)
            .build(w);
        rt.add_system(move |w: &World, out: &mut Output| {
            let p = w.get::<Pos>(e).unwrap().0;
            out.write::<Pos>(e, Pos(p + w.resource::<Time>().dt));
        });
        (rt, e)
    };
    let (mut rt, e) = make();
    // N/60 s as one Duration, rounded down or up: N frames.
    let mut frames = 0;
    for n in [1u64, 2, 3, 7, 59, 60, 61, 600] {
        for ns in [1_000_000_000 * n / 60, 1_000_000_000 * n / 60 + 1] {
            let a = rt.advance(Duration::from_nanos(ns));
            assert_eq!(u64::from(a.frames), n, "{ns} ns");
            frames += n;
        }
    }
    // Frame times from f64 seconds, 10 s of them.
    for _ in 0..600 {
        frames += u64::from(rt.advance(Duration::from_secs_f64(1.0 / 60.0)).frames);
    }
    assert_eq!(rt.frame_count(), frames);
    // The same elapsed times give the same world, bit for bit.
    let (mut again, e2) = make();
    for n in [1u64, 2, 3, 7, 59, 60, 61, 600] {
        for ns in [1_000_000_000 * n / 60, 1_000_000_000 * n / 60 + 1] {
            let _ = again.advance(Duration::from_nanos(ns));
        }
    }
    for _ in 0..600 {
        let _ = again.advance(Duration::from_secs_f64(1.0 / 60.0));
    }
    assert_eq!(
        again.world().get::<Pos>(e2).unwrap().0.to_bits(),
        rt.world().get::<Pos>(e).unwrap().0.to_bits()
    );
    assert_eq!(again.world().checksum(), rt.world().checksum());
}
