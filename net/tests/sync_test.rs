//! The sync-test helper and the start-up checks: a game that
//! rolls back cleanly passes, one that keeps state outside its snapshot fails with the
//! entity and values that differ, and a game that cannot be snapshot or checksummed is
//! refused before its first frame, with the type's name.

#[allow(dead_code)]
#[path = "../src/bin/duel/game.rs"]
mod game;

use runsync::prelude::*;
use runsync_net::{MemoryNetwork, NetError, NetSession, PeerId, PlayerInputs, SyncTest, sync_test};

#[test]
fn the_duel_is_rollback_safe_and_the_test_really_rolls_back() {
    let report = sync_test(|| game::build(2), 2, 240, |f, p| game::scripted(p, f)).unwrap();
    assert_eq!(report.frames, 240);
    // ggrs rolls back 7 frames once more than 7 frames have run.
    assert_eq!(report.rollbacks, 240 - 8);
    assert_eq!(report.resimulated, 7 * (240 - 8));
    assert!(report.compared >= 6 * (240 - 8), "{report:?}");
    // The same game, played straight, ends in the same state: the re-runs changed nothing.
    let mut rt = game::build(1);
    for f in 1..=240 {
        rt.frame_with(PlayerInputs::new(vec![
            game::scripted(0, f),
            game::scripted(1, f),
        ]));
    }
    assert_eq!(report.checksum, rt.world().checksum());
    // And the game did something worth rolling back: shots fired, hits landed.
    let hp: i32 = rt
        .world()
        .query::<(&game::Hp,)>()
        .map(|(_, (h,))| h.0)
        .sum();
    let score: u32 = rt
        .world()
        .query::<(&game::Score,)>()
        .map(|(_, (s,))| s.0)
        .sum();
    assert!(hp < 2 * game::MAX_HP || score > 0, "hp {hp}, score {score}");
}

#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq)]
#[component(output = i32, merge = merge::sum, snapshot, checksum)]
struct Gold(i32);
impl std::ops::AddAssign<i32> for Gold {
    fn add_assign(&mut self, d: i32) {
        self.0 += d;
    }
}

/// A game whose system keeps a counter in its closure when `leak`: state a restore does
/// not bring back.
fn leaky(leak: bool) -> Runtime {
    let mut world = World::new();
    world.register_default::<Gold>();
    let miser = world.spawn((Gold(0),));
    world.spawn((Gold(100),));
    let mut rt = Runtime::builder().workers(2).build(world);
    let mut calls = 0;
    rt.add_system(move |w: &World, out: &mut Output| {
        let pads = w.input::<PlayerInputs<u8>>();
        calls += 1;
        for (e, _) in w.query::<(&Gold,)>() {
            let bonus = if leak && e == miser && calls % 5 == 0 {
                1
            } else {
                0
            };
            out.write::<Gold>(e, i32::from(pads.get(0)) + bonus);
        }
    });
    rt
}

#[test]
fn state_outside_the_snapshot_fails_with_the_frame_entity_and_values() {
    let pad = |f: u64, _: usize| (f % 3) as u8;
    assert!(sync_test(|| leaky(false), 1, 100, pad).is_ok());
    let err = SyncTest::new(|| leaky(true), 1)
        .frames(100)
        .check_distance(3)
        .run(pad)
        .unwrap_err();
    let NetError::SyncTestMismatch {
        frame,
        first,
        again,
        difference: Some(d),
    } = &err
    else {
        panic!("{err}");
    };
    assert_ne!(first, again);
    assert!(*frame > 0 && *frame <= 100, "{err}");
    assert!(d.component().unwrap().ends_with("Gold"), "{d}");
    let (a, b) = d.values().unwrap();
    assert_ne!(a, b);
    assert!(a.starts_with("Gold(") && b.starts_with("Gold("), "{a} {b}");
    let shown = err.to_string();
    assert!(
        shown.contains("not rollback-safe") && shown.contains("Gold"),
        "{shown}"
    );
}

/// Every depth of the ring, at 1, 2 and 8 workers: with a check distance of 7, each frame
/// restores the state 1 to 7 frames back (saves and restores copy only what changed since
/// the entry was filled, with shots spawned and despawned in between) and re-runs; every
/// re-run frame's checksum must equal its first run's, and every worker count ends equal.
#[test]
fn the_sync_test_agrees_at_one_two_and_eight_workers_at_every_depth() {
    let reports: Vec<_> = [1, 2, 8]
        .into_iter()
        .map(|w| {
            SyncTest::new(|| game::build(w), 2)
                .frames(120)
                .check_distance(7)
                .run(|f, p| game::scripted(p, f))
                .unwrap()
        })
        .collect();
    let sums: Vec<u64> = reports.iter().map(|r| r.checksum).collect();
    assert!(sums.windows(2).all(|w| w[0] == w[1]), "{sums:x?}");
    for r in &reports {
        assert_eq!(r.rollbacks, 120 - 8, "{r:?}");
        assert!(r.compared >= 6 * (120 - 8), "{r:?}");
    }
}

/// Opted into nothing.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Secret(u32);
impl Component for Secret {
    type Output = Secret;
}

/// Snapshot, not checksum.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Unsummed(u32);
impl Component for Unsummed {
    type Output = Unsummed;
}

fn frames_run() -> std::sync::Arc<std::sync::atomic::AtomicU64> {
    std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0))
}

#[test]
fn a_type_outside_snapshots_is_named_at_start_before_any_frame() {
    let ran = frames_run();
    let game = {
        let ran = ran.clone();
        move || {
            let mut w = World::new();
            w.register::<Gold>(|g: &mut Gold, d: &[i32]| g.0 += d.iter().sum::<i32>());
            w.snapshotting::<Gold>().checksumming::<Gold>();
            w.register::<Secret>(merge::last);
            w.spawn((Gold(1), Secret(2)));
            let mut rt = Runtime::builder().workers(1).build(w);
            let ran = ran.clone();
            rt.add_system(move |_: &World, _: &mut Output| {
                ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            });
            rt
        }
    };
    let err = SyncTest::new(&game, 1)
        .allow_unchecksummed()
        .run(|_, _| 0u8)
        .unwrap_err();
    let NetError::NotRollbackReady { unsnapshotted, .. } = &err else {
        panic!("{err}");
    };
    assert!(
        unsnapshotted.len() == 1 && unsnapshotted[0].ends_with("Secret"),
        "{err}"
    );
    assert!(err.to_string().contains("snapshotting::<T>()"), "{err}");
    // A session refuses it too, at `start`: no frame has run, nothing was sent.
    let net = MemoryNetwork::new(0, runsync_net::LinkConfig::PERFECT);
    let socket = net.socket(PeerId(0));
    let probe = socket.probe();
    let err = NetSession::builder(2)
        .local_player(0)
        .remote_player(1, PeerId(1))
        .allow_unchecksummed()
        .start::<u8>(game(), socket)
        .unwrap_err();
    let NetError::NotRollbackReady { unsnapshotted, .. } = &err else {
        panic!("{err}");
    };
    assert!(
        unsnapshotted.len() == 1 && unsnapshotted[0].ends_with("Secret"),
        "{err}"
    );
    assert_eq!(ran.load(std::sync::atomic::Ordering::Relaxed), 0);
    assert_eq!(probe.stats().sent, 0);
}

/// A game missing several opt-ins hears of all of them at once: both types outside
/// snapshots and the one outside the checksum, each with the call that opts it in.
#[test]
fn a_session_names_every_missing_opt_in_at_once() {
    let mut w = World::new();
    w.register::<Gold>(|g: &mut Gold, d: &[i32]| g.0 += d.iter().sum::<i32>());
    w.snapshotting::<Gold>();
    w.register::<Secret>(merge::last);
    w.register::<Unsummed>(merge::last);
    let net = MemoryNetwork::new(0, runsync_net::LinkConfig::PERFECT);
    let err = NetSession::builder(2)
        .local_player(0)
        .remote_player(1, PeerId(1))
        .start::<u8>(
            Runtime::builder().workers(1).build(w),
            net.socket(PeerId(0)),
        )
        .unwrap_err();
    let NetError::NotRollbackReady {
        unsnapshotted,
        unchecksummed,
    } = &err
    else {
        panic!("{err}");
    };
    let short = |names: &[&str]| {
        names
            .iter()
            .map(|n| n.rsplit("::").next().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(short(unsnapshotted), ["Secret", "Unsummed"], "{err}");
    assert_eq!(
        short(unchecksummed),
        ["Gold", "Secret", "Unsummed"],
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("snapshotting::<T>()") && text.contains("checksumming::<T>()"),
        "{text}"
    );
}

#[test]
fn types_the_checksum_cannot_see_are_refused_unless_allowed() {
    let game = || {
        let mut w = World::new();
        w.register::<Unsummed>(merge::last);
        w.snapshotting::<Unsummed>();
        w.spawn((Unsummed(1),));
        Runtime::builder().workers(1).build(w)
    };
    let err = sync_test(game, 1, 10, |_, _| 0u8).unwrap_err();
    let NetError::Unchecksummed { types } = &err else {
        panic!("{err}")
    };
    assert_eq!(types.len(), 1);
    assert!(types[0].ends_with("Unsummed"));
    assert!(err.to_string().contains("allow_unchecksummed"), "{err}");
    let err = NetSession::builder(2)
        .local_player(0)
        .remote_player(1, "127.0.0.1:9".parse().unwrap())
        .start::<u8>(
            game(),
            runsync_net::UdpTransport::bind("127.0.0.1:0").unwrap(),
        )
        .unwrap_err();
    assert!(matches!(err, NetError::Unchecksummed { .. }), "{err}");
    assert!(
        SyncTest::new(game, 1)
            .frames(10)
            .allow_unchecksummed()
            .run(|_, _| 0u8)
            .is_ok()
    );
}

#[test]
fn a_failing_frame_is_an_error_not_a_panic() {
    let game = || {
        let mut rt = game::build(1);
        rt.add_system(|w: &World, _: &mut Output| {
            assert!(w.resource::<Time>().frame != 20, "boom at frame 21");
        });
        rt
    };
    let err = sync_test(game, 2, 60, |f, p| game::scripted(p, f)).unwrap_err();
    assert!(matches!(err, NetError::Frame(_)), "{err}");
    assert!(err.to_string().contains("boom at frame 21"), "{err}");
}
