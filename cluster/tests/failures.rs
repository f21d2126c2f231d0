//! A failed shard is never a success: a shard that fails — a panicking system, a
//! panicking partition, a world that does not build, a shard that stops answering —
//! ends every shard within one exchange round, and the run returns an error naming the
//! shard, the frame and the cause. (Shards as threads of this process; two real
//! processes are in `processes.rs`.)
//!
//! Each run goes on a thread of its own and must end within a hard deadline: a shard
//! that ran on alone would take minutes (100 000 frames).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use runsync::prelude::*;
use runsync_cluster::model;
use runsync_cluster::{Cluster, ClusterError, Partition, Report, timely};

/// Frames enough that a shard running on alone would not finish within the deadline.
const ENDLESS: u64 = 100_000;

/// Runs `run` on a thread and returns what it returned, within `deadline`.
fn within(
    deadline: Duration,
    run: impl FnOnce() -> Result<Option<Report>, ClusterError> + Send + 'static,
) -> (Result<Option<Report>, ClusterError>, Duration) {
    let start = Instant::now();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run());
    });
    match rx.recv_timeout(deadline) {
        Ok(result) => (result, start.elapsed()),
        Err(_) => panic!("the run did not end within {deadline:?}"),
    }
}

/// The cause inside a [`ClusterError::Shard`], with its shard and frame.
fn shard_error(result: Result<Option<Report>, ClusterError>) -> (usize, u64, ClusterError) {
    match result {
        Err(ClusterError::Shard {
            shard,
            frame,
            cause,
        }) => (shard, frame, *cause),
        other => panic!("expected a shard's failure, got {other:?}"),
    }
}

#[test]
fn a_panicking_system_ends_every_shard_in_its_frame() {
    // The first shard to run frame 5 panics; before, the other ran every frame alone and
    // the error came back at the end.
    static FIRED: AtomicBool = AtomicBool::new(false);
    let systems = |rt: &mut Runtime| {
        model::systems(rt);
        rt.add_system_named("boom", |w: &World, _: &mut Output| {
            // `Time::frame` counts the frames before this one.
            if w.resource::<Time>().frame == 4 && !FIRED.swap(true, Ordering::SeqCst) {
                panic!("boom in frame 5");
            }
        });
    };
    let (result, took) = within(Duration::from_secs(60), move || {
        Cluster::new(model::bands(), model::world, systems)
            .frames(ENDLESS)
            .run(timely::Config::process(2))
    });
    let err = result
        .as_ref()
        .err()
        .map(ToString::to_string)
        .unwrap_or_default();
    let (shard, frame, cause) = shard_error(result);
    assert!(shard < 2);
    assert_eq!(frame, 5, "{err}");
    assert!(matches!(cause, ClusterError::Frame { .. }), "{err}");
    assert!(err.contains("boom in frame 5"), "{err}");
    assert!(
        err.contains(&format!("shard {shard} failed in frame 5")),
        "{err}"
    );
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

/// The model's bands, with a partition that panics once, in frame 3.
struct Faulty<P>(P);

static PARTITION_FIRED: AtomicBool = AtomicBool::new(false);

impl<P: Partition> Partition for Faulty<P> {
    fn owner(&self, world: &World, e: Entity, shards: usize) -> usize {
        if world.get_resource::<Time>().is_some_and(|t| t.frame == 3)
            && !PARTITION_FIRED.swap(true, Ordering::SeqCst)
        {
            panic!("the partition gave up on {e}");
        }
        self.0.owner(world, e, shards)
    }

    fn mirrors(&self, world: &World, e: Entity, shards: usize, out: &mut Vec<usize>) {
        self.0.mirrors(world, e, shards, out);
    }
}

#[test]
fn a_panicking_partition_is_caught_and_ends_every_shard() {
    // The partition runs outside runsync's frame (after it, on the owner): its panic is
    // caught by the cluster and becomes the shard's failure.
    let (result, took) = within(Duration::from_secs(60), || {
        Cluster::new(Faulty(model::bands()), model::world, model::systems)
            .frames(ENDLESS)
            .run(timely::Config::process(3))
    });
    let err = result
        .as_ref()
        .err()
        .map(ToString::to_string)
        .unwrap_or_default();
    let (shard, frame, cause) = shard_error(result);
    assert!(shard < 3);
    assert_eq!(frame, 3, "{err}");
    assert!(
        matches!(&cause, ClusterError::Panic { message } if message.starts_with("the partition gave up on")),
        "{err}"
    );
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[test]
fn a_world_that_does_not_build_on_one_shard_ends_every_shard_while_starting() {
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    let world = || {
        if BUILDS.fetch_add(1, Ordering::SeqCst) == 1 {
            panic!("out of agents");
        }
        model::world()
    };
    let (result, _) = within(Duration::from_secs(60), move || {
        Cluster::new(model::bands(), world, model::systems)
            .frames(ENDLESS)
            .run(timely::Config::process(2))
    });
    let err = result
        .as_ref()
        .err()
        .map(ToString::to_string)
        .unwrap_or_default();
    let (_, frame, cause) = shard_error(result);
    assert_eq!(frame, 0);
    assert!(matches!(cause, ClusterError::Panic { .. }), "{err}");
    assert!(
        err.contains("while starting") && err.contains("out of agents"),
        "{err}"
    );
}

#[test]
fn a_shard_that_stops_answering_is_named_after_the_peer_timeout() {
    // The first shard to run frame 3 sleeps for 5 s; the other waits 0.5 s for it in the
    // exchange, then stops, naming it — without waiting for the sleeper to wake.
    static SLEPT: AtomicBool = AtomicBool::new(false);
    let systems = |rt: &mut Runtime| {
        model::systems(rt);
        rt.add_system_named("nap", |w: &World, _: &mut Output| {
            if w.resource::<Time>().frame == 2 && !SLEPT.swap(true, Ordering::SeqCst) {
                std::thread::sleep(Duration::from_secs(5));
            }
        });
    };
    let (result, took) = within(Duration::from_secs(60), move || {
        Cluster::new(model::bands(), model::world, systems)
            .frames(ENDLESS)
            .peer_timeout(Duration::from_millis(500))
            .run(timely::Config::process(2))
    });
    match result {
        Err(ClusterError::PeerTimeout {
            shards,
            processes,
            frame,
            waited,
        }) => {
            assert_eq!(shards.len(), 1, "{shards:?}");
            assert!(processes.is_empty(), "threads of one process");
            assert_eq!(frame, 3);
            assert_eq!(waited, Duration::from_millis(500));
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(
        took < Duration::from_secs(4),
        "waited for the sleeper: {took:?}"
    );
}

#[test]
fn a_failure_is_not_a_report_and_a_good_run_still_is() {
    // The control: the same cluster without a fault reports every frame.
    let (result, _) = within(Duration::from_secs(60), || {
        Cluster::new(model::bands(), model::world, model::systems)
            .frames(10)
            .run(timely::Config::process(2))
    });
    let report = result.unwrap().expect("shard 0 is here");
    assert_eq!(report.frames.len(), 10);
    assert!(report.frames.iter().all(|f| f.entities > 0));
}
