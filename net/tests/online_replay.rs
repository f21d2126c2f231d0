//! An online match recorded as a runsync replay: two peers at 100 ms round trip and 5 %
//! loss (so frames are predicted and re-run) each record the frames that became final.
//! Both recordings hold the same inputs and checksums, and each plays offline, at 1 and 4
//! workers, to the checksum of every confirmed frame.

mod common;

use std::time::Duration;

use common::{Peer, game, run_until};
use runsync::Replay;
use runsync_net::{LinkConfig, MemoryNetwork, NetError, NetSession, PeerId, PlayerInputs};

const FRAMES: u64 = 240;

#[test]
fn an_online_match_records_only_confirmed_frames_and_replays_offline_to_the_same_checksums() {
    let link = LinkConfig::round_trip(Duration::from_millis(100)).loss(0.05);
    let net = MemoryNetwork::new(44, link);
    let mut peers = [
        Peer::start(&net, 0, game::build(2), |b| b.record_replay()),
        Peer::start(&net, 1, game::build(2), |b| b.record_replay()),
    ];
    run_until(
        &mut peers,
        Duration::from_secs(40),
        |_, _| true,
        |p| p.iter().all(|p| p.confirmed_to() >= FRAMES),
    );
    let mut files = Vec::new();
    for p in &mut peers {
        let who = format!("peer {}", p.me);
        let s = p.session.stats();
        assert!(
            s.rollback.rollbacks > 0,
            "{who}: the match rolled back: {s:?}"
        );
        let recorded = p.session.replay().expect("recording").len();
        assert_eq!(
            recorded,
            p.confirmed.len(),
            "{who}: one frame per confirmed frame"
        );
        // The last confirmed frame's state, restored elsewhere, has its checksum; one
        // long gone from the ring is not offered.
        let last = *p.confirmed.last().unwrap();
        let snapshot = p
            .session
            .confirmed_snapshot(last.frame)
            .expect("in the ring");
        let mut scratch = game::build(1);
        scratch.try_restore(snapshot).unwrap();
        assert_eq!(scratch.world().checksum(), last.checksum, "{who}");
        assert!(p.session.confirmed_snapshot(1).is_none());
        let mut file = Vec::new();
        p.session.finish_replay(&mut file).unwrap();
        assert!(p.session.replay().is_none(), "{who}: recording stopped");
        let replay = Replay::read(&mut file.as_slice()).unwrap();
        for (i, c) in p.confirmed.iter().enumerate() {
            assert_eq!(c.frame, i as u64 + 1);
            assert_eq!(
                replay.checksum(i),
                Some(c.checksum),
                "{who}: frame {}",
                c.frame
            );
        }
        for workers in [1, 4] {
            let report = game::build(workers)
                .play_replay::<PlayerInputs<game::Pad>>(&replay)
                .unwrap();
            assert!(
                report.is_identical(),
                "{who}, {workers} workers: {report:?}"
            );
            assert_eq!(report.frames, replay.len() as u64);
        }
        files.push((replay, file));
    }
    // The two recordings agree frame for frame (the shorter is a prefix of the longer).
    let n = files[0].0.len().min(files[1].0.len());
    assert!(n as u64 >= FRAMES);
    for i in 0..n {
        assert_eq!(
            files[0].0.checksum(i),
            files[1].0.checksum(i),
            "frame {}",
            i + 1
        );
    }
    assert_eq!(files[0].0.start_save(), files[1].0.start_save());
}

#[test]
fn a_game_that_cannot_save_is_refused_when_recording_starts() {
    use runsync::prelude::*;
    #[derive(Component, Checksum, Clone, Copy, Debug, PartialEq)]
    #[component(merge = merge::last, snapshot, checksum)]
    struct Unsaved(u8);
    let mut world = World::new();
    world.register_default::<Unsaved>();
    let rt = Runtime::builder().workers(1).build(world);
    let net = MemoryNetwork::new(1, LinkConfig::PERFECT);
    let err = NetSession::builder(2)
        .local_player(0)
        .remote_player(1, PeerId(1))
        .record_replay()
        .start::<u8>(rt, net.socket(PeerId(0)))
        .unwrap_err();
    assert!(matches!(err, NetError::Save(_)), "{err:?}");
    assert!(err.to_string().contains("Unsaved"), "{err}");
}
