//! `Runtime::advance_stats`: figures of every frame an `advance` call ran (totals, and
//! maxima per system), where `stats()` keeps only the call's last frame.

use std::time::Duration;

use runsync::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Hp(i32);
impl Component for Hp {
    type Output = i32;
}

/// A world of 10 `Hp`s and three systems: `hit` writes each `Hp` once a frame; `waves`
/// spawns as many entities as the frame's number; `stall` sleeps 50 ms in frame 2 only
/// (and panics in frame `panic_at`).
fn game(panic_at: u64) -> Runtime {
    let mut world = World::new();
    world.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    for _ in 0..10 {
        world.spawn((Hp(100),));
    }
    let mut rt = Runtime::builder().fixed_hz(60).workers(2).build(world);
    rt.add_system_named("hit", |w: &World, out: &mut Output| {
        for (e, _) in w.query::<(&Hp,)>() {
            out.write::<Hp>(e, -1);
        }
    });
    rt.add_system_named("waves", |w: &World, out: &mut Output| {
        let frame = w.resource::<Time>().frame + 1; // the frame running
        for _ in 0..frame {
            out.spawn(());
        }
    });
    rt.add_system_named("stall", move |w: &World, _: &mut Output| {
        let frame = w.resource::<Time>().frame + 1;
        if frame == 2 {
            std::thread::sleep(Duration::from_millis(50));
        }
        if frame == panic_at {
            panic!("stall at {frame}");
        }
    });
    rt
}

#[test]
fn an_advance_call_reports_every_frame_it_ran_not_only_the_last() {
    let mut rt = game(u64::MAX);
    let step = rt.advance(Duration::from_millis(50)); // three 60 Hz frames
    assert_eq!(step.frames, 3);
    assert_eq!(rt.stats().spawned, 3, "stats(): the last frame only");
    let a = rt.advance_stats();
    assert_eq!((a.frames, a.failed, a.first), (3, 0, 1));
    assert_eq!(a.spawned, 1 + 2 + 3);
    assert_eq!(a.merged, 30, "10 writes merged a frame");
    assert_eq!(a.entities, 10 + 6);
    // The slowest frame is at least frame 2's 50 ms (which frame it is, is not asserted:
    // a first frame can be slow on a loaded machine; the stalling system's is, below).
    assert!(a.max_frame >= Duration::from_millis(50));
    assert!(a.run + a.sync >= a.max_frame);
    let names: Vec<&str> = a.systems.iter().map(|s| &*s.name).collect();
    assert_eq!(names, ["hit", "waves", "stall"]);
    let [hit, waves, stall] = &a.systems[..] else {
        unreachable!()
    };
    assert_eq!((hit.runs, hit.writes, hit.max_writes), (3, 30, 10));
    assert_eq!((waves.commands, waves.writes), (6, 0));
    assert_eq!(stall.slowest, 2);
    assert!(stall.max_time >= Duration::from_millis(50));
    assert!(stall.time >= stall.max_time);
    assert!(hit.work > Duration::ZERO && hit.max_span > Duration::ZERO);

    // A call that runs no frame leaves the last call's figures; the next call's replace
    // them (frames 4 and 5).
    let step = rt.advance(Duration::from_millis(1));
    assert_eq!(step.frames, 0);
    assert_eq!(rt.advance_stats().frames, 3);
    let step = rt.advance(Duration::from_millis(33));
    assert_eq!(step.frames, 2);
    let a = rt.advance_stats();
    assert_eq!((a.frames, a.first, a.spawned), (2, 4, 4 + 5));
    assert!((4..=5).contains(&a.slowest), "{}", a.slowest);
    assert!((4..=5).contains(&a.systems[2].slowest));
    assert!(
        a.systems[2].max_time < Duration::from_millis(50),
        "frame 2 is not in it"
    );
}

#[test]
fn a_failed_frame_is_counted_and_a_disabled_system_never_runs() {
    let mut rt = game(3);
    let waves = rt.stats().systems[1].id;
    rt.set_enabled(waves, false);
    let err = rt.try_advance(Duration::from_millis(83)).unwrap_err(); // five frames due
    assert!(err.to_string().contains("stall at 3"), "{err}");
    let a = rt.advance_stats();
    assert_eq!((a.frames, a.failed), (3, 1), "frames 1, 2 and the failed 3");
    assert_eq!(a.systems[1].runs, 0);
    assert_eq!((a.spawned, a.systems[1].commands), (0, 0));
    // Frame 3 failed in Run: its writes were discarded.
    assert_eq!(a.merged, 20);
    assert_eq!(a.first, 1);
}
