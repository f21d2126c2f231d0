//! Faults: garbage and corrupted packets, forged messages, a peer that
//! stalls, one that leaves, a desync. Each gives a clear event or error, never a panic,
//! and the local game keeps its state and goes on.

mod common;

use std::time::Duration;

use common::{DELAY, Peer, assert_matches_truth, game, run_until};
use runsync::prelude::*;
use runsync_net::{LinkConfig, MemoryNetwork, NetError, NetEvent, PeerId, PlayerInputs, Tick};

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[test]
fn garbage_and_corrupted_packets_are_dropped_and_every_frame_still_agrees() {
    const FRAMES: u64 = 180;
    // 5 % of packets corrupted (a bit flipped) and 5 % lost, on a 20 ms round trip with
    // jitter (so packets also overtake each other).
    let link = LinkConfig::round_trip(Duration::from_millis(20))
        .jitter(Duration::from_millis(15))
        .loss(0.05)
        .corrupt(0.05);
    let net = MemoryNetwork::new(6, link);
    let mut peers = [
        Peer::start(&net, 0, game::build(1), |b| b),
        Peer::start(&net, 1, game::build(1), |b| b),
    ];
    let mut rng = 99u64;
    let junk = net.clone();
    run_until(
        &mut peers,
        Duration::from_secs(30),
        |p, _| {
            // Before each tick: random bytes claiming to come from the real peer, and
            // from a stranger.
            for from in [PeerId(1 - p.me as u32), PeerId(77)] {
                let len = (splitmix(&mut rng) % 200) as usize;
                let bytes = (0..len).map(|_| splitmix(&mut rng) as u8).collect();
                junk.inject(from, PeerId(p.me as u32), bytes);
            }
            true
        },
        |p| p.iter().all(|p| p.confirmed_to() >= FRAMES),
    );
    let truth = game::truth(FRAMES, DELAY as u64);
    for p in &peers {
        assert_matches_truth(
            &format!("peer {}", p.me),
            &p.confirmed,
            &truth,
            FRAMES as usize,
        );
        assert!(
            !p.events
                .iter()
                .any(|e| matches!(e, NetEvent::Desync { .. }))
        );
        let t = net.probe(PeerId(p.me as u32)).stats();
        // Every injected packet, and every corrupted one, was thrown away.
        assert!(t.garbage >= 2 * FRAMES, "{t:?}");
        assert!(t.received > 0);
    }
    let corrupted: u64 = (0..2).map(|i| net.probe(PeerId(i)).stats().corrupted).sum();
    assert!(corrupted > 0);
}

/// Real packets of the peer with bits flipped and their CRC made good again: messages
/// with the session's magic that decode but say nonsense (frames, statuses, input bytes),
/// as a hostile or broken peer could send. No panic, the games go on, and where a forged
/// input made the two games part, a `Desync` event says so: never a silent divergence.
#[test]
fn forged_messages_from_the_peer_never_panic_nor_part_the_games_silently() {
    let net = MemoryNetwork::new(3, LinkConfig::round_trip(Duration::from_millis(10)));
    net.record();
    let setup = |b: runsync_net::NetSessionBuilder<PeerId>| {
        b.desync_interval(2)
            .disconnect_timeout(Duration::from_millis(800))
    };
    let mut peers = [
        Peer::start(&net, 0, game::build(1), setup),
        Peer::start(&net, 1, game::build(1), setup),
    ];
    let mut rng = 5u64;
    let mut forged = 0;
    // About 10 s on a quiet machine: a forged "peer 1 disconnected" makes peer 0 drop
    // peer 1, and peer 1 then waits out ggrs's 5 s shutdown timer and its own 800 ms
    // timeout (ticking `Waiting`) before it goes on. The bound leaves room for a loaded
    // one, where it takes longer.
    run_until(
        &mut peers,
        Duration::from_secs(60),
        |p, _| {
            if p.me == 0 {
                for (from, to, mut bytes) in net.take_recorded() {
                    // One in three of peer 1's packets is sent again, forged.
                    if from != PeerId(1) || to != PeerId(0) || !splitmix(&mut rng).is_multiple_of(3)
                    {
                        continue;
                    }
                    let body = bytes.len() - 4;
                    for _ in 0..1 + splitmix(&mut rng) % 3 {
                        let bit = (splitmix(&mut rng) % (body as u64 * 8)) as usize;
                        bytes[bit / 8] ^= 1 << (bit % 8);
                    }
                    let crc = crc32c::crc32c(&bytes[..body]);
                    bytes[body..].copy_from_slice(&crc.to_le_bytes());
                    net.inject(PeerId(1), PeerId(0), bytes);
                    forged += 1;
                }
            }
            true
        },
        |p| p.iter().all(|p| p.confirmed_to() >= 240),
    );
    assert!(forged > 100, "{forged}");
    // No panic, and both games went on. Where the peers' games part (a forged input
    // taken for the peer's, a forged "disconnected" status), an event says so: a
    // `Desync` (forged checksum reports make false ones too: a peer that lies cannot be
    // told from one that differs) or a `Disconnected`.
    let parted = peers[0].confirmed[..240]
        .iter()
        .zip(&peers[1].confirmed[..240])
        .position(|(a, b)| a.checksum != b.checksum);
    let reported = peers.iter().any(|p| {
        p.events
            .iter()
            .any(|e| matches!(e, NetEvent::Desync { .. } | NetEvent::Disconnected { .. }))
    });
    if let Some(f) = parted {
        assert!(reported, "the games parted at frame {} unreported", f + 1);
    }
    // Before they part, both are the truth: nothing forged reached the game unseen.
    let same = parted.unwrap_or(240);
    let truth = game::truth(240, DELAY as u64);
    assert_matches_truth("peer 0", &peers[0].confirmed, &truth, same);
    assert_matches_truth("peer 1", &peers[1].confirmed, &truth, same);
}

#[test]
fn a_stalled_peer_is_reported_interrupted_then_resumed_and_the_game_catches_up() {
    let net = MemoryNetwork::new(8, LinkConfig::round_trip(Duration::from_millis(20)));
    let setup = |b: runsync_net::NetSessionBuilder<PeerId>| {
        b.disconnect_notify_delay(Duration::from_millis(300))
            .disconnect_timeout(Duration::from_secs(5))
    };
    let mut peers = [
        Peer::start(&net, 0, game::build(1), setup),
        Peer::start(&net, 1, game::build(1), setup),
    ];
    // Peer 1 stops ticking (a frozen process) from 1.5 s to 2.5 s.
    let stalled = |p: &Peer, t: Duration| {
        p.me == 0 || !(Duration::from_millis(1500)..Duration::from_millis(2500)).contains(&t)
    };
    let mut frame_at_stall = None;
    run_until(
        &mut peers,
        Duration::from_secs(30),
        |p, t| {
            if p.me == 0 && t >= Duration::from_millis(1500) && frame_at_stall.is_none() {
                frame_at_stall = Some(p.session.runtime().frame_count());
            }
            stalled(p, t)
        },
        |p| p.iter().all(|p| p.confirmed_to() >= 240),
    );
    let p0 = &peers[0];
    let interrupted = p0
        .events
        .iter()
        .position(|e| {
            matches!(
                e,
                NetEvent::Interrupted {
                    peer: PeerId(1),
                    ..
                }
            )
        })
        .expect("an Interrupted event");
    let resumed = p0
        .events
        .iter()
        .position(|e| matches!(e, NetEvent::Resumed { peer: PeerId(1) }))
        .expect("a Resumed event");
    assert!(interrupted < resumed);
    assert!(
        !p0.events
            .iter()
            .any(|e| matches!(e, NetEvent::Disconnected { .. }))
    );
    // Peer 0 ran ahead on predictions as far as the window allows, then waited.
    assert!(p0.session.stats().waited > 10, "{:?}", p0.session.stats());
    assert!(p0.ticks.iter().any(|t| matches!(t, Tick::Waiting { .. })));
    let truth = game::truth(240, DELAY as u64);
    assert_matches_truth("peer 0", &p0.confirmed, &truth, 240);
    assert_matches_truth("peer 1", &peers[1].confirmed, &truth, 240);
    assert!(frame_at_stall.unwrap() < 240);
}

#[test]
fn a_departed_peer_is_disconnected_and_the_local_game_goes_on_without_it() {
    let net = MemoryNetwork::new(9, LinkConfig::round_trip(Duration::from_millis(20)));
    let setup = |b: runsync_net::NetSessionBuilder<PeerId>| {
        b.disconnect_notify_delay(Duration::from_millis(200))
            .disconnect_timeout(Duration::from_millis(800))
    };
    let mut peers = vec![
        Peer::start(&net, 0, game::build(1), setup),
        Peer::start(&net, 1, game::build(1), setup),
    ];
    run_until(
        &mut peers,
        Duration::from_secs(20),
        |_, _| true,
        |p| p.iter().all(|p| p.confirmed_to() >= 60),
    );
    // Peer 1's process ends.
    let gone = peers.pop().unwrap();
    drop(gone);
    let left_at = peers[0].session.runtime().frame_count();
    run_until(
        &mut peers,
        Duration::from_secs(20),
        |_, _| true,
        |p| {
            p[0].events
                .iter()
                .any(|e| matches!(e, NetEvent::Disconnected { peer: PeerId(1) }))
                && p[0].session.runtime().frame_count() > left_at + 60
        },
    );
    let p0 = &peers[0];
    assert!(p0.events.iter().any(|e| matches!(
        e,
        NetEvent::Interrupted {
            peer: PeerId(1),
            ..
        }
    )));
    // The game went on, with player 1 marked gone and its ship still there.
    let w = p0.session.world();
    let inputs = w.input::<PlayerInputs<game::Pad>>();
    assert!(inputs.is_connected(0) && !inputs.is_connected(1));
    assert_eq!(inputs.get(1), game::Pad::default());
    assert_eq!(w.query::<(&game::Ship,)>().count(), 2);
    assert!(matches!(p0.ticks.last(), Some(Tick::Advanced { .. })));
    // Frames after the departure are confirmed by peer 0 alone.
    assert!(p0.confirmed_to() > left_at);
}

#[test]
fn a_desync_is_reported_to_both_peers_and_both_games_go_on() {
    let net = MemoryNetwork::new(10, LinkConfig::round_trip(Duration::from_millis(20)));
    // Peer 1 plays other rules from frame 100 on: a point for nothing, every frame.
    // (Both peers have the system, so that they differ only in what it does: a system
    // more would already be another game, as its spawn-id reservations are world state.)
    let cheat = |at: u64| {
        let mut rt = game::build(1);
        rt.world_mut().debugging::<game::Score>();
        rt.add_system_named("cheat", move |w: &World, out: &mut Output| {
            if w.resource::<Time>().frame >= at {
                for (e, _) in w.query::<(&game::Score,)>() {
                    out.write::<game::Score>(e, 1);
                }
            }
        });
        rt
    };
    let setup = |b: runsync_net::NetSessionBuilder<PeerId>| b.desync_interval(5);
    let mut peers = [
        Peer::start(&net, 0, cheat(u64::MAX), setup),
        Peer::start(&net, 1, cheat(99), setup),
    ];
    run_until(
        &mut peers,
        Duration::from_secs(20),
        |_, _| true,
        |p| p.iter().all(|p| p.confirmed_to() >= 200),
    );
    let truth = game::truth_of(cheat(u64::MAX), 200, DELAY as u64);
    for p in &peers {
        let desyncs: Vec<_> = p
            .events
            .iter()
            .filter_map(|e| match e {
                NetEvent::Desync {
                    frame,
                    local,
                    remote,
                    types,
                    peer,
                } => Some((*frame, *local, *remote, types.clone(), *peer)),
                _ => None,
            })
            .collect();
        let (frame, local, remote, types, peer) = desyncs.first().expect("a Desync event");
        assert!((100..130).contains(frame), "first desync at {frame}");
        assert_ne!(local, remote);
        assert_eq!(*peer, PeerId(1 - p.me as u32));
        // The peer's checksum alone says which type differs.
        assert_eq!(types, &[std::any::type_name::<game::Score>()]);
        // Frames before the cheat agree with the truth; the confirmed checksums after it
        // are each peer's own game's.
        assert_matches_truth(&format!("peer {}", p.me), &p.confirmed, &truth, 99);
        assert!(p.session.stats().desyncs >= 1);
        assert!(p.confirmed_to() >= 200, "the game went on");
    }
    assert_eq!(peers[0].confirmed[150].checksum, truth[150]);
    assert_ne!(peers[1].confirmed[150].checksum, truth[150]);
    // Both peers kept their state of the first reported frame: side by side, the two
    // name each ship's score, with both values.
    let frame = peers[0]
        .events
        .iter()
        .find_map(|e| match e {
            NetEvent::Desync { frame, .. } => Some(*frame),
            _ => None,
        })
        .unwrap();
    let state = |p: &Peer| {
        let mut rt = cheat(u64::MAX);
        let snapshot = p.session.desync_snapshot(frame).expect("kept");
        rt.try_restore(snapshot).unwrap();
        rt
    };
    let (honest, cheater) = (state(&peers[0]), state(&peers[1]));
    let differences = honest.world().differences(cheater.world(), 10);
    assert_eq!(differences.len(), 2, "{differences:?}");
    for d in &differences {
        assert_eq!(d.component(), Some(std::any::type_name::<game::Score>()));
        let (ours, theirs) = d.values().unwrap();
        assert_ne!(ours, theirs);
    }
    // Who wrote the scores in the frames up to that one (since the checked frame
    // before it, which both agreed on): on the cheater, the `cheat` system, from frame
    // 100 on, with the point it added; on the honest peer, no one. Each peer runs the
    // frames again aside, and its game goes on where it was.
    let ships: Vec<Entity> = differences.iter().filter_map(|d| d.entity()).collect();
    let score = std::any::type_name::<game::Score>();
    for (k, p) in peers.iter_mut().enumerate() {
        let (now, at) = (
            p.session.world().checksum(),
            p.session.runtime().frame_count(),
        );
        let records = p
            .session
            .desync_provenance(frame, &ships)
            .expect("kept")
            .expect("runs again");
        let cheats: Vec<(u64, Entity, Option<&str>)> = records
            .iter()
            .flat_map(|r| {
                r.components()
                    .iter()
                    .filter(|c| c.name == score)
                    .flat_map(|c| &c.writes)
                    .filter(|w| &*w.system_name == "cheat")
                    .map(|w| (r.frame().unwrap(), r.entity(), w.value.as_deref()))
            })
            .collect();
        assert!(records.iter().all(|r| r.frame() <= Some(frame)));
        if k == 1 {
            assert!(!cheats.is_empty(), "{records:?}");
            for &(f, e, value) in &cheats {
                assert!(f >= 100 && ships.contains(&e), "{f} {e}");
                assert_eq!(value, Some("1"));
            }
            // In the desync frame itself, the cheat wrote each ship's score.
            let last: Vec<Entity> = cheats
                .iter()
                .filter(|c| c.0 == frame)
                .map(|c| c.1)
                .collect();
            assert_eq!(last, ships);
        } else {
            assert_eq!(cheats, [], "{records:?}");
        }
        assert_eq!(p.session.world().checksum(), now);
        assert_eq!(p.session.runtime().frame_count(), at);
        assert!(p.session.desync_provenance(frame + 1, &ships).is_none());
    }
}

#[test]
fn a_peer_whose_game_is_not_deterministic_learns_it_from_the_desync() {
    use std::sync::atomic::{AtomicU32, Ordering};
    static DRAWS: AtomicU32 = AtomicU32::new(0);
    let net = MemoryNetwork::new(11, LinkConfig::round_trip(Duration::from_millis(20)));
    // Peer 1's game reads a counter outside the world from frame 100 on: each run of a
    // frame draws another number, so running a frame again gives another state.
    let game_of = |at: u64| {
        let mut rt = game::build(1);
        rt.add_system_named("draw", move |w: &World, out: &mut Output| {
            if w.resource::<Time>().frame >= at {
                let n = DRAWS.fetch_add(1, Ordering::Relaxed);
                for (e, _) in w.query::<(&game::Score,)>() {
                    out.write::<game::Score>(e, n % 3);
                }
            }
        });
        rt
    };
    let setup = |b: runsync_net::NetSessionBuilder<PeerId>| b.desync_interval(5);
    let mut peers = [
        Peer::start(&net, 0, game_of(u64::MAX), setup),
        Peer::start(&net, 1, game_of(99), setup),
    ];
    let start = std::time::Instant::now();
    let failed = loop {
        assert!(start.elapsed() < Duration::from_secs(20), "no error");
        peers[0].tick();
        match peers[1].try_tick() {
            Ok(_) => {}
            Err(e) => break e,
        }
        std::thread::sleep(Duration::from_millis(4));
    };
    let NetError::SyncTestMismatch {
        frame,
        first,
        again,
        ..
    } = failed
    else {
        panic!("{failed}");
    };
    assert!(frame >= 100, "{frame}");
    assert_ne!(first, again);
    // The desync itself was reported first, and the honest peer found nothing odd in
    // running the frame again.
    assert!(
        peers[1]
            .session
            .events()
            .any(|e| matches!(e, NetEvent::Desync { frame: f, .. } if f == frame))
    );
}
