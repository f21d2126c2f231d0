//! Failures keep their promises (issue 21): a failed frame, merge, restore or fixed-step
//! call leaves the world, the clock and the error exactly as their docs say.


use runsync::prelude::*;

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
    // The first frame (no reservation yet) and a later one (blocks to top up) both fail.
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
