//! Bad input through the public API: each case has a clear error or a documented outcome.

use std::panic::{AssertUnwindSafe, catch_unwind};

use runsync::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
impl Component for Pos {
    type Output = Pos;
}

struct NotRegistered;
impl Component for NotRegistered {
    type Output = ();
}

fn world() -> World {
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    w
}

fn panic_message(f: impl FnOnce()) -> String {
    let err = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap()
}

#[test]
fn workers_zero_means_one_per_core() {
    let rt = Runtime::builder().workers(0).build(World::new());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let expect = if cfg!(feature = "single-threaded") {
        1
    } else {
        cores
    };
    assert_eq!(rt.workers(), expect);
}

#[test]
fn unregistered_type_in_a_query_names_the_type() {
    let w = world();
    let msg = panic_message(|| {
        w.query::<(&Pos, &NotRegistered)>().count();
    });
    assert!(
        msg.contains("NotRegistered") && msg.contains("not registered"),
        "{msg}"
    );
    assert!(msg.contains("world.register::<NotRegistered>"), "{msg}");
}

#[test]
fn unregistered_type_in_a_system_query_fails_the_frame() {
    let mut w = world();
    let e = w.spawn((Pos(1.0),));
    let mut rt = Runtime::builder().workers(2).build(w);
    rt.add_system_named("reader", |world: &World, _: &mut Output| {
        world.query::<(&NotRegistered,)>().count();
    });
    let err = rt.try_frame().unwrap_err();
    assert!(matches!(err, FrameError::SystemPanicked { .. }));
    assert!(err.to_string().contains("NotRegistered"));
    assert_eq!(rt.world().get::<Pos>(e), Some(&Pos(1.0)));
}

#[test]
fn spawning_an_empty_bundle_makes_an_entity_with_no_components() {
    let mut w = world();
    let e = w.spawn(());
    assert!(w.is_alive(e));
    assert!(!w.has::<Pos>(e));
    assert_eq!(w.len(), 1);
    assert_eq!(w.query::<(Option<&Pos>,)>().count(), 1);
    assert!(w.insert(e, Pos(2.0)));
    assert_eq!(w.get::<Pos>(e), Some(&Pos(2.0)));
}

#[test]
fn a_bundle_naming_a_type_twice_is_an_error() {
    let mut w = world();
    let msg = panic_message(|| {
        w.spawn((Pos(1.0), Pos(2.0)));
    });
    assert!(
        msg.contains("names component type") && msg.contains("Pos"),
        "{msg}"
    );
    assert_eq!(w.len(), 0, "nothing was spawned");
    w.spawn((Pos(3.0),));
    assert_eq!(w.len(), 1, "the world is still usable");

    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system(|_: &World, out: &mut Output| {
        out.spawn((Pos(1.0), Pos(2.0)));
    });
    let err = rt.try_frame().unwrap_err().to_string();
    assert!(err.contains("names component type"), "{err}");
    assert_eq!(rt.world().len(), 1);
}

#[test]
fn a_query_naming_a_type_twice_simply_works() {
    let mut w = world();
    w.spawn((Pos(1.0),));
    let v: Vec<(f32, Option<f32>)> = w
        .query::<(&Pos, Option<&Pos>)>()
        .map(|(_, (a, b))| (a.0, b.map(|b| b.0)))
        .collect();
    assert_eq!(v, vec![(1.0, Some(1.0))]);
}

#[test]
fn registering_twice_is_an_error() {
    let mut w = world();
    let msg = panic_message(|| {
        w.register::<Pos>(merge::first);
    });
    assert!(msg.contains("registered twice"), "{msg}");
}

#[test]
fn spawning_an_unregistered_type_names_it() {
    let mut w = world();
    let msg = panic_message(|| {
        w.spawn((Pos(1.0), NotRegistered));
    });
    assert!(msg.contains("NotRegistered"), "{msg}");
    assert_eq!(w.len(), 0);
}

#[test]
#[should_panic(expected = "dt must be a finite")]
fn a_negative_dt_is_an_error() {
    let _ = Runtime::builder().dt(-1.0);
}

#[test]
fn a_row_write_query_writing_a_type_twice_fails_the_frame_and_recovers() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut w = world();
    let e = w.spawn((Pos(1.0),));
    let mut rt = Runtime::builder().workers(2).build(w);
    let fixed = Arc::new(AtomicBool::new(false));
    let f = fixed.clone();
    rt.add_system_named("twice", move |_: &World, out: &mut Output| {
        if f.load(Ordering::Relaxed) {
            for (_, (p, mut pos)) in out.query::<(&Pos, Write<Pos>)>() {
                pos.set(Pos(p.0 + 1.0));
            }
        } else {
            for (_, (mut a, _b)) in out.query::<(Write<Pos>, Write<Pos>)>() {
                a.set(Pos(9.0));
            }
        }
    });
    let err = rt.try_frame().unwrap_err();
    assert!(matches!(err, FrameError::SystemPanicked { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("Write<") && msg.contains("Pos") && msg.contains("twice"),
        "{msg}"
    );
    assert_eq!(rt.world().get::<Pos>(e), Some(&Pos(1.0)), "nothing applied");
    // The same system, fixed, writes through the buffer the failed query had taken.
    fixed.store(true, Ordering::Relaxed);
    rt.frame();
    rt.frame();
    assert_eq!(rt.world().get::<Pos>(e), Some(&Pos(3.0)));
}

#[test]
fn an_unregistered_written_type_names_it() {
    let mut w = world();
    w.spawn((Pos(1.0),));
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system(
        |_: &World, out: &mut Output| {
            for (_, (_p, _s)) in out.query::<(&Pos, Write<NotRegistered>)>() {}
        },
    );
    let err = rt.try_frame().unwrap_err();
    assert!(err.to_string().contains("NotRegistered"), "{err}");
}
