//! Two peers over the in-process network at 100 ms round trip and 5 % loss: every
//! confirmed frame's checksum is the same on both peers and equals a single-process run
//! of the same inputs; rollbacks are counted.

mod common;

use std::time::Duration;

use common::{DELAY, Peer, assert_matches_truth, game, run_until};
use runsync_net::{LinkConfig, MemoryNetwork, NetEvent, PeerId, SessionKey, Tick};

const FRAMES: u64 = 600;

#[test]
fn two_peers_at_100ms_and_5_percent_loss_agree_on_every_confirmed_frame() {
    play(None);
}

/// The same with a session key: every packet sealed and checked, nothing else changes.
#[test]
fn two_keyed_peers_at_100ms_and_5_percent_loss_agree_on_every_confirmed_frame() {
    play(Some(SessionKey::derive("two_peers.rs")));
}

fn play(key: Option<SessionKey>) {
    let link = LinkConfig::round_trip(Duration::from_millis(100)).loss(0.05);
    let net = MemoryNetwork::new(37, link);
    let socket = |me: u32| match &key {
        Some(k) => net.socket(PeerId(me)).with_key(k.clone()),
        None => net.socket(PeerId(me)),
    };
    let mut peers = [
        Peer::start_on(socket(0), 0, game::build(2), |b| b),
        Peer::start_on(socket(1), 1, game::build(2), |b| b),
    ];
    let wall = run_until(
        &mut peers,
        Duration::from_secs(40),
        |_, _| true,
        |p| p.iter().all(|p| p.confirmed_to() >= FRAMES),
    );
    let truth = game::truth(FRAMES, DELAY as u64);
    for p in &peers {
        let who = format!("peer {}", p.me);
        assert_matches_truth(&who, &p.confirmed, &truth, FRAMES as usize);
        assert!(
            !p.events
                .iter()
                .any(|e| matches!(e, NetEvent::Desync { .. })),
            "{who}: {:?}",
            p.events
        );
        assert!(
            p.events
                .iter()
                .any(|e| matches!(e, NetEvent::Synchronized { .. }))
        );
        let s = p.session.stats();
        assert_eq!(
            (s.rejected, s.strangers),
            (0, 0),
            "{who}: an honest peer's messages all pass the checks"
        );
        let rollbacks_seen: u32 = p
            .ticks
            .iter()
            .map(|t| match *t {
                Tick::Advanced { resimulated } | Tick::Waiting { resimulated } => {
                    u32::from(resimulated > 0)
                }
                Tick::Synchronizing => 0,
            })
            .sum();
        // 100 ms is 6 frames of round trip, more than the 2 frames of input delay: a
        // remote input is predicted for ~4 frames, and the script changes direction
        // every 5 to 20 frames, so predictions fail and frames are re-run.
        assert!(s.rollback.rollbacks >= 20, "{who}: {s:?}");
        assert!(s.rollback.resimulated >= s.rollback.rollbacks);
        assert!(u64::from(rollbacks_seen) <= s.rollback.rollbacks);
        assert!(s.rollback.deepest <= 8, "{who}: {s:?}");
        let secs = wall.as_secs_f64();
        println!(
            "{who}: {FRAMES} frames confirmed in {secs:.1} s; {} rollbacks ({:.1}/s), {} frames \
             re-run (deepest {}), {} ticks waited; save {:.1} us, load {:.1} us, frame {:.1} us \
             on average",
            s.rollback.rollbacks,
            s.rollback.rollbacks as f64 / secs,
            s.rollback.resimulated,
            s.rollback.deepest,
            s.waited,
            s.rollback.save_time.as_secs_f64() * 1e6 / s.rollback.saves.max(1) as f64,
            s.rollback.load_time.as_secs_f64() * 1e6 / s.rollback.rollbacks.max(1) as f64,
            s.rollback.frame_time.as_secs_f64() * 1e6 / s.rollback.frames.max(1) as f64,
        );
    }
    for id in 0..2 {
        let t = net.probe(runsync_net::PeerId(id)).stats();
        assert!(t.lost > 0 && t.lost < t.sent / 10, "loss near 5 %: {t:?}");
        assert_eq!(t.garbage, 0);
    }
}
