//! Per-frame inputs: `Runtime::frame_with`, `advance_with`, `World::input`, and
//! inputs in snapshots.

use std::time::Duration;

use runsync::RuntimeSnapshot;
use runsync::prelude::*;

#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq)]
#[component(output = i64, merge = merge::sum, snapshot, checksum)]
struct X(i64);
impl std::ops::AddAssign<i64> for X {
    fn add_assign(&mut self, d: i64) {
        self.0 = self.0.wrapping_mul(31).wrapping_add(d);
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pad(i64);

fn input_of(frame: u64) -> Pad {
    Pad((frame as i64 * 7919) % 13 - 6)
}

fn game(workers: usize) -> Runtime {
    let mut world = World::new();
    world.register_default::<X>();
    world.spawn_batch((0..50).map(|i| (X(i),)));
    let mut rt = Runtime::builder()
        .workers(workers)
        .fixed_hz(60)
        .build(world);
    for k in 0..3 {
        rt.add_system(move |w: &World, out: &mut Output| {
            let pad = w.input::<Pad>().0;
            for (e, (x,)) in w.query::<(&X,)>() {
                out.write::<X>(e, pad * (k + 1) + x.0 % 5);
            }
        });
    }
    rt
}

#[test]
fn frame_with_and_advance_with_agree_at_any_worker_count() {
    let mut sums = Vec::new();
    for workers in [1, 2, 8] {
        let mut a = game(workers);
        for f in 0..30 {
            a.frame_with(input_of(f));
        }
        let mut b = game(workers);
        let mut asked = Vec::new();
        while b.frame_count() < 30 {
            // 25 ms a call at 60 Hz: one or two frames each, and the callback once per frame.
            let _ = b.advance_with(Duration::from_millis(25), |f| {
                asked.push(f);
                input_of(f)
            });
        }
        assert_eq!(asked, (0..b.frame_count()).collect::<Vec<_>>());
        let mut c = game(workers);
        for f in 0..b.frame_count() {
            c.frame_with(input_of(f));
        }
        assert_eq!(
            b.world().checksum(),
            c.world().checksum(),
            "{workers} workers"
        );
        assert!(b.world().first_difference(c.world()).is_none());
        sums.push(a.world().checksum());
    }
    assert!(sums.windows(2).all(|w| w[0] == w[1]), "{sums:x?}");
}

#[test]
fn inputs_are_part_of_snapshots() {
    let mut rt = game(2);
    rt.frame_with(Pad(3));
    let saved = rt.snapshot().unwrap();
    rt.frame_with(Pad(-5));
    let after_one = rt.world().checksum();
    rt.restore(&saved);
    assert_eq!(
        rt.world().input::<Pad>(),
        &Pad(3),
        "the input restored with the world"
    );
    rt.frame_with(Pad(-5));
    assert_eq!(rt.world().checksum(), after_one);
    // A plain `frame` after a restore runs with the restored input.
    rt.restore(&saved);
    rt.frame();
    let mut again = game(2);
    again.frame_with(Pad(3));
    again.frame_with(Pad(3));
    assert_eq!(rt.world().checksum(), again.world().checksum());
}

#[test]
fn the_ggrs_loop_reaches_the_truth() {
    let truth: Vec<Pad> = (0..40).map(input_of).collect();
    let mut rt = game(2);
    let mut ring: Vec<RuntimeSnapshot> = (0..40).map(|_| RuntimeSnapshot::new()).collect();
    // Run ahead with predicted inputs (the last confirmed one), 5 frames unconfirmed.
    let mut confirmed = 0;
    for f in 0..40u64 {
        rt.snapshot_into(&mut ring[f as usize]).unwrap();
        let predicted = truth[confirmed.min(f as usize)];
        rt.frame_with(predicted);
        if f >= 5 && f % 5 == 0 {
            // Frames confirmed..f-4 are confirmed now: roll back and re-run with them.
            let k = confirmed;
            confirmed = f as usize - 4;
            rt.restore(&ring[k]);
            for j in k..=f as usize {
                rt.snapshot_into(&mut ring[j]).unwrap();
                let i = if j < confirmed {
                    truth[j]
                } else {
                    truth[confirmed]
                };
                rt.frame_with(i);
            }
        }
    }
    rt.restore(&ring[confirmed]);
    for &i in &truth[confirmed..] {
        rt.frame_with(i);
    }
    let mut reference = game(1);
    for &i in &truth {
        reference.frame_with(i);
    }
    assert!(reference.world().first_difference(rt.world()).is_none());
}

#[test]
#[should_panic(expected = "no input of type")]
fn reading_an_input_never_set_is_a_clear_error() {
    World::new().input::<Pad>();
}

#[test]
fn a_failed_frame_asks_for_its_input_again() {
    let mut rt = game(2);
    let fail = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let f2 = fail.clone();
    rt.add_system(move |w: &World, _: &mut Output| {
        if w.resource::<Time>().frame == 1 && f2.swap(false, std::sync::atomic::Ordering::SeqCst) {
            panic!("once");
        }
    });
    let mut asked = Vec::new();
    let r = rt.try_advance_with(Duration::from_secs(1) / 20, |f| {
        asked.push(f);
        input_of(f)
    });
    assert!(matches!(r, Err(FrameError::SystemPanicked { .. })));
    let _ = rt.advance_with(Duration::ZERO, |f| {
        asked.push(f);
        input_of(f)
    });
    assert_eq!(asked, [0, 1, 1, 2]);
    assert!(!fail.load(std::sync::atomic::Ordering::SeqCst));
}
