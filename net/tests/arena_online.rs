//! The arena at 20k agents played online: two peers over the in-process network at
//! 100 ms round trip and 5 % loss, until 600 frames are confirmed. Every confirmed
//! checksum is the same on both peers; the worst tick, the mean tick and the rollbacks
//! per second are printed (what rollback costs a game of this size; run with
//! `--nocapture`). The arena reads no input of its own: a system here steers two agents
//! by the players' pads, so that a wrong prediction changes the game and the frames
//! re-run after it are real work.
//!
//! Release builds only: a debug build runs the arena many times slower than a
//! game ships, which is not what this measures; `.ci/run` runs it with `--release`.

mod common;

use std::time::{Duration, Instant};

use common::{DELAY, Peer, game::Pad};
use runsync::prelude::*;
use runsync_net::{LinkConfig, MemoryNetwork, NetEvent, PlayerInputs};
use runsync_systems::glam::Vec2;
use runsync_systems::{Impulse, Velocity};
use runsync_tools::scenario::{self, ArenaConfig};

const AGENTS: usize = 20_000;
const FRAMES: u64 = 600;
/// How long the test may take (both peers tick on one machine's cores).
const LIMIT: Duration = Duration::from_secs(240);

/// The arena, with each player steering one agent: the first agents with a velocity,
/// one per player, pushed the way its pad points.
fn arena() -> Runtime {
    let mut rt = scenario::build(ArenaConfig {
        agents: AGENTS,
        seed: 3,
        workers: 1,
    });
    rt.add_system_named("pads", |w: &World, out: &mut Output| {
        let pads = w.input::<PlayerInputs<Pad>>();
        for (player, (e, _)) in w.query::<(&Velocity,)>().take(pads.len()).enumerate() {
            let (dx, dy) = pads.get(player).dir();
            out.write::<Velocity>(e, Impulse(Vec2::new(dx as f32, dy as f32)));
        }
    });
    rt
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "measures a release build: `cargo test --release -p runsync-net --test arena_online`"
)]
fn the_arena_at_20k_agents_online_agrees_on_every_confirmed_frame() {
    let link = LinkConfig::round_trip(Duration::from_millis(100)).loss(0.05);
    let net = MemoryNetwork::new(45, link);
    // The spatial grid resource is not in the checksum: it is built from the positions
    // (which are), so a desync in it shows there a frame later.
    let mut peers = [
        Peer::start(&net, 0, arena(), |b| b.allow_unchecksummed()),
        Peer::start(&net, 1, arena(), |b| b.allow_unchecksummed()),
    ];
    let start = Instant::now();
    let mut next = [start; 2];
    let (mut worst, mut busy, mut ticks) = (Duration::ZERO, Duration::ZERO, 0u32);
    while !peers.iter().all(|p| p.confirmed_to() >= FRAMES) {
        assert!(
            start.elapsed() < LIMIT,
            "not done after {LIMIT:?}: confirmed {:?}",
            peers.each_ref().map(Peer::confirmed_to)
        );
        let now = Instant::now();
        for (p, next) in peers.iter_mut().zip(&mut next) {
            if *next > now {
                continue;
            }
            let t = Instant::now();
            p.tick();
            let took = t.elapsed();
            if p.session.stats().confirmed > 0 {
                worst = worst.max(took);
                busy += took;
                ticks += 1;
            }
            *next += p.session.recommended_interval();
            if now > *next + Duration::from_millis(100) {
                *next = now; // behind: no burst of ticks to catch up
            }
        }
        let wake = next.iter().min().copied().unwrap_or(now);
        std::thread::sleep(wake.saturating_duration_since(Instant::now()));
    }
    let wall = start.elapsed();
    let [a, b] = &peers;
    let n = FRAMES as usize;
    assert_eq!(
        a.confirmed[..n],
        b.confirmed[..n],
        "the peers' confirmed frames"
    );
    assert!(
        a.confirmed[..n]
            .iter()
            .enumerate()
            .all(|(i, c)| c.frame == i as u64 + 1)
    );
    for p in &peers {
        let s = p.session.stats();
        assert!(
            !p.events
                .iter()
                .any(|e| matches!(e, NetEvent::Desync { .. })),
            "peer {}",
            p.me
        );
        // 100 ms is 6 frames of round trip, more than the input delay: predictions fail
        // and frames are re-run.
        assert!(s.rollback.rollbacks > 0 && s.rollback.deepest <= 8, "{s:?}");
        println!(
            "peer {}: {} entities; {:.1} rollbacks/s, {} frames re-run ({:.1}/s), deepest {}; \
             save {:.0} µs/frame, frame {:.0} µs",
            p.me,
            p.session.world().len(),
            s.rollback.rollbacks as f64 / wall.as_secs_f64(),
            s.rollback.resimulated,
            s.rollback.resimulated as f64 / wall.as_secs_f64(),
            s.rollback.deepest,
            s.rollback.save_time.as_secs_f64() * 1e6 / s.rollback.saves.max(1) as f64,
            s.rollback.frame_time.as_secs_f64() * 1e6 / s.rollback.frames.max(1) as f64,
        );
    }
    println!(
        "{FRAMES} frames confirmed in {wall:.1?} (input delay {DELAY}); ticks after the \
         handshake: worst {worst:.1?}, mean {:.2?}",
        busy / ticks.max(1)
    );
}
