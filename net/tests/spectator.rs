//! Spectators: a host player forwards every confirmed input to a `NetSpectator`, which
//! runs the same frames with the same checksums; one that pauses catches up, one that
//! vanishes never stops the players, and hostile packets either way are refused.
//!
//! Each test prints the spectator's lag behind the players' confirmed frame
//! (`cargo test -p runsync-net --test spectator -- --nocapture`).

mod common;

use std::time::{Duration, Instant};

use common::forge::{self, Input};
use common::{DELAY, Peer, assert_matches_truth, game};
use runsync_net::{
    ConfirmedFrame, LinkConfig, MemoryNetwork, NetError, NetEvent, NetSpectator,
    NetSpectatorBuilder, PeerId, PlayerInputs, SpectatorTick,
};

/// The spectator's address; the host is player 0, at `PeerId(0)`.
const WATCHER: PeerId = PeerId(2);
const HOST: PeerId = PeerId(0);

/// A spectator and what it saw.
struct Watcher {
    spectator: NetSpectator<game::Pad, PeerId>,
    confirmed: Vec<ConfirmedFrame>,
    /// Each of `confirmed`'s inputs, read as it came out of `confirmed_frames`
    /// (`None` unless `keep_confirmed_inputs`).
    inputs: Vec<Option<PlayerInputs<game::Pad>>>,
    events: Vec<NetEvent<PeerId>>,
    ticks: Vec<SpectatorTick>,
}

impl Watcher {
    fn start(
        net: &MemoryNetwork,
        setup: impl FnOnce(NetSpectatorBuilder<PeerId>) -> NetSpectatorBuilder<PeerId>,
    ) -> Watcher {
        let spectator = setup(NetSpectator::builder(2, HOST))
            .start::<game::Pad>(game::build(1), net.socket(WATCHER))
            .unwrap();
        Watcher {
            spectator,
            confirmed: Vec::new(),
            inputs: Vec::new(),
            events: Vec::new(),
            ticks: Vec::new(),
        }
    }

    fn tick(&mut self) -> SpectatorTick {
        let tick = self.spectator.tick().unwrap();
        self.events.extend(self.spectator.events());
        for c in self.spectator.confirmed_frames() {
            self.inputs
                .push(self.spectator.confirmed_inputs(c.frame).cloned());
            self.confirmed.push(c);
        }
        self.ticks.push(tick);
        tick
    }

    fn confirmed_to(&self) -> u64 {
        self.confirmed.last().map_or(0, |c| c.frame)
    }
}

/// The two players; the host (player 0) has the spectator at [`WATCHER`].
fn players(net: &MemoryNetwork, timeout: Duration) -> [Peer; 2] {
    [
        Peer::start(net, 0, game::build(1), |b| {
            b.spectator(WATCHER).disconnect_timeout(timeout)
        }),
        Peer::start(net, 1, game::build(1), |b| b.disconnect_timeout(timeout)),
    ]
}

/// The spectator's lag behind the players' confirmed frame, sampled every loop.
#[derive(Default)]
struct Lag {
    samples: Vec<u64>,
}

impl Lag {
    fn sample(&mut self, peers: &[Peer], watcher: &Watcher) {
        if watcher.confirmed_to() > 0 {
            let players = peers.iter().map(Peer::confirmed_to).min().unwrap_or(0);
            self.samples
                .push(players.saturating_sub(watcher.confirmed_to()));
        }
    }

    fn report(&self, what: &str) -> (f64, u64) {
        let mut s = self.samples.clone();
        s.sort_unstable();
        let mean = s.iter().sum::<u64>() as f64 / s.len().max(1) as f64;
        let at = |q: f64| {
            s.get(((s.len() as f64 - 1.0) * q) as usize)
                .copied()
                .unwrap_or(0)
        };
        println!(
            "{what}: spectator lag behind the players' confirmed frame, in frames: \
             mean {mean:.1}, median {}, p95 {}, max {} ({} samples)",
            at(0.5),
            at(0.95),
            at(1.0),
            s.len()
        );
        (mean, at(1.0))
    }
}

/// Ticks the players and the spectator at 60 Hz each (the players as `run_until` does:
/// `recommended_interval`, skipping the ticks a wait recommendation asks to skip), the
/// spectator only while `watching` says so, until `done` holds; panics after `limit`.
fn run(
    peers: &mut [Peer],
    watcher: &mut Watcher,
    limit: Duration,
    mut watching: impl FnMut(Duration) -> bool,
    mut done: impl FnMut(&[Peer], &Watcher) -> bool,
) -> Duration {
    let start = Instant::now();
    let mut next = vec![start; peers.len() + 1];
    let mut skip = vec![0u32; peers.len()];
    let mut seen = vec![0usize; peers.len()];
    while !done(peers, watcher) {
        let elapsed = start.elapsed();
        assert!(elapsed < limit, "not done after {limit:?}");
        let now = Instant::now();
        for (i, p) in peers.iter_mut().enumerate() {
            if next[i] > now {
                continue;
            }
            if skip[i] > 0 {
                skip[i] -= 1;
            } else {
                p.tick();
                for e in &p.events[seen[i]..] {
                    if let NetEvent::WaitRecommended { frames } = e {
                        skip[i] += frames;
                    }
                }
                seen[i] = p.events.len();
            }
            next[i] += p.session.recommended_interval();
            if now > next[i] + Duration::from_millis(100) {
                next[i] = now;
            }
        }
        let w = peers.len();
        if next[w] <= now {
            if watching(elapsed) {
                watcher.tick();
            }
            next[w] += watcher.spectator.recommended_interval();
            if now > next[w] + Duration::from_millis(100) {
                next[w] = now;
            }
        }
        let wake = next.iter().min().copied().unwrap_or(now);
        let now = Instant::now();
        if wake > now {
            std::thread::sleep(wake - now);
        }
    }
    start.elapsed()
}

/// The spectator's frames are the players' frames, checksum for checksum, and
/// `game::truth`'s, from frame 1 on.
fn assert_same_frames(peers: &[Peer], watcher: &Watcher, n: usize) {
    let truth = game::truth(n as u64, DELAY as u64);
    for p in peers {
        assert_matches_truth(&format!("player {}", p.me), &p.confirmed, &truth, n);
    }
    assert_matches_truth("spectator", &watcher.confirmed, &truth, n);
    assert_eq!(watcher.confirmed[..n], peers[0].confirmed[..n]);
}

#[test]
fn a_spectator_runs_every_frame_the_players_confirm_over_a_lossy_link() {
    const FRAMES: u64 = 300;
    let link = LinkConfig::round_trip(Duration::from_millis(100)).loss(0.05);
    let net = MemoryNetwork::new(11, link);
    let mut peers = players(&net, Duration::from_secs(2));
    let mut watcher = Watcher::start(&net, |b| b);
    let mut lag = Lag::default();
    run(
        &mut peers,
        &mut watcher,
        Duration::from_secs(60),
        |_| true,
        |p, w| {
            lag.sample(p, w);
            w.confirmed_to() >= FRAMES
        },
    );
    assert_same_frames(&peers, &watcher, FRAMES as usize);
    let (mean, max) = lag.report("100 ms round trip, 5 % loss");
    assert!(mean < 30.0 && max < 60, "the spectator keeps up");
    let s = watcher.spectator.stats();
    assert_eq!((s.rejected, s.strangers), (0, 0), "{s:?}");
    assert_eq!(s.frames, watcher.confirmed.len() as u64);
    assert_eq!(s.confirmed, watcher.confirmed_to());
    assert_eq!(watcher.spectator.runtime().frame_count(), s.confirmed);
    assert!(
        watcher.inputs.iter().all(Option::is_none),
        "no inputs kept without keep_confirmed_inputs"
    );
    for p in &peers {
        let st = p.session.stats();
        assert_eq!(
            (st.rejected, st.strangers),
            (0, 0),
            "player {}: {st:?}",
            p.me
        );
    }
    assert!(
        watcher
            .events
            .contains(&NetEvent::Synchronized { peer: HOST }),
        "{:?}",
        watcher.events
    );
    assert!(
        !watcher
            .events
            .iter()
            .any(|e| matches!(e, NetEvent::Disconnected { .. })),
        "{:?}",
        watcher.events
    );
}

/// A spectator that stops ticking for `pause` (its inputs pile up at the host and in
/// its socket), then resumes: it runs ggrs's catch-up until it is level again, and its
/// frames are still the players'.
///
/// The pause must stay under what ggrs's host holds for a spectator: it drops one that
/// leaves more than 128 frames unacknowledged, and the frames of the pause plus a round
/// trip pile up (at 60 fps and 100 ms, a pause of 2.0 s leaves 127: the edge, where a
/// loaded machine's late ticks tip it over). 1.5 s leaves a margin of about 30 frames.
fn pause_and_catch_up(pause: Duration, seed: u64) {
    let link = LinkConfig::round_trip(Duration::from_millis(100)).loss(0.05);
    let net = MemoryNetwork::new(seed, link);
    // A host disconnects a spectator silent for its disconnect timeout: longer than the
    // pause here.
    let mut peers = players(&net, pause + Duration::from_secs(1));
    let mut watcher = Watcher::start(&net, |b| b.catchup_speed(4));
    run(
        &mut peers,
        &mut watcher,
        Duration::from_secs(30),
        |_| true,
        |_, w| w.confirmed_to() >= 60,
    );
    let paused_at = watcher.confirmed_to();
    let mut lag = Lag::default();
    let mut resumed: Option<Instant> = None;
    let mut level: Option<Duration> = None;
    let mut pending = 0;
    run(
        &mut peers,
        &mut watcher,
        Duration::from_secs(60),
        |t| t >= pause,
        |p, w| {
            lag.sample(p, w);
            // The host's inputs for the spectator (ggrs handle 2) not yet acknowledged.
            if let Ok(n) = p[0].session.network_stats(2) {
                pending = pending.max(n.send_queue_len);
            }
            if w.confirmed_to() > paused_at && resumed.is_none() {
                resumed = Some(Instant::now());
            }
            let players = p.iter().map(Peer::confirmed_to).min().unwrap_or(0);
            if level.is_none() && w.confirmed_to() + 15 >= players {
                level = resumed.map(|t| t.elapsed());
            }
            level.is_some() && w.confirmed_to() >= paused_at + 360
        },
    );
    let n = watcher.confirmed_to() as usize;
    assert_same_frames(&peers, &watcher, n);
    let (_, max) = lag.report(&format!("{pause:?} pause"));
    let s = watcher.spectator.stats();
    println!(
        "{pause:?} pause: level again {:?} after resuming; {} catch-up ticks, at most {} \
         frames received and not run, {} host messages cut to ggrs's buffer, at most {} \
         frames unacknowledged at the host (it drops the spectator past 128)",
        level.unwrap(),
        s.catchups,
        s.most_behind,
        s.deferred,
        pending
    );
    assert!(
        max as f64 >= pause.as_secs_f64() * 60.0 * 0.8,
        "the pause left it behind"
    );
    assert!(s.catchups > 0, "{s:?}");
    assert_eq!(s.rejected, 0, "{s:?}");
    let host = &peers[0];
    assert!(
        !host
            .events
            .iter()
            .any(|e| matches!(e, NetEvent::Disconnected { .. })),
        "the host kept the spectator: {:?}",
        host.events
    );
}

#[test]
fn a_spectator_that_stops_ticking_for_1_5_s_catches_up() {
    pause_and_catch_up(Duration::from_millis(1500), 12);
}

/// With `keep_confirmed_inputs`, every frame's inputs can be read as it comes out of
/// `confirmed_frames`, catch-up ticks of several frames included, and a fresh runtime of
/// the game run on them from the start reaches every confirmed frame's checksum: how
/// `duel --spectate HOST --inspect ADDR` follows the match, read-only.
#[test]
fn a_spectators_confirmed_inputs_run_from_the_start_reach_every_checksum() {
    let net = MemoryNetwork::new(13, LinkConfig::round_trip(Duration::from_millis(60)));
    let mut peers = players(&net, Duration::from_secs(2));
    let mut watcher = Watcher::start(&net, |b| b.keep_confirmed_inputs().catchup_speed(4));
    run(
        &mut peers,
        &mut watcher,
        Duration::from_secs(30),
        |_| true,
        |_, w| w.confirmed_to() >= 30,
    );
    // A 0.5 s pause leaves it about 30 frames behind: it catches up, several frames a
    // tick.
    let paused_at = watcher.confirmed_to();
    run(
        &mut peers,
        &mut watcher,
        Duration::from_secs(30),
        |t| t >= Duration::from_millis(500),
        |_, w| w.confirmed_to() >= paused_at + 120,
    );
    let s = watcher.spectator.stats();
    assert!(s.catchups > 0, "{s:?}");
    let n = watcher.confirmed_to() as usize;
    assert_same_frames(&peers, &watcher, n);
    assert_eq!(watcher.inputs.len(), n);
    let mut follower = game::build(1);
    for (c, inputs) in watcher.confirmed.iter().zip(&watcher.inputs) {
        let inputs = inputs
            .clone()
            .unwrap_or_else(|| panic!("frame {}: its inputs were not kept", c.frame));
        follower.frame_with(inputs);
        assert_eq!(follower.frame_count(), c.frame);
        assert_eq!(follower.world().checksum(), c.checksum, "frame {}", c.frame);
    }
    // Kept until later frames are handed out: the last ones' are still there, the first
    // frame's are gone, and a frame not run yet has none.
    let spectator = &watcher.spectator;
    assert!(spectator.confirmed_inputs(n as u64).is_some());
    assert!(spectator.confirmed_inputs(1).is_none());
    assert!(spectator.confirmed_inputs(n as u64 + 1).is_none());
    assert!(spectator.confirmed_inputs(0).is_none());
}

#[test]
fn a_spectator_that_vanishes_does_not_stop_the_players() {
    let link = LinkConfig::round_trip(Duration::from_millis(100)).loss(0.05);
    let net = MemoryNetwork::new(13, link);
    let mut peers = players(&net, Duration::from_secs(2));
    let mut watcher = Watcher::start(&net, |b| b);
    run(
        &mut peers,
        &mut watcher,
        Duration::from_secs(30),
        |_| true,
        |_, w| w.confirmed_to() >= 60,
    );
    // Gone for good: no more ticks, no more packets from it.
    let gone = peers[0].confirmed_to();
    let target = gone + 360;
    let elapsed = run(
        &mut peers,
        &mut watcher,
        Duration::from_secs(60),
        |_| false,
        |p, _| p.iter().all(|p| p.confirmed_to() >= target),
    );
    println!("vanished spectator: the players ran 360 frames more in {elapsed:?}");
    assert!(
        elapsed < Duration::from_secs(9),
        "no stall for the spectator: {elapsed:?}"
    );
    let truth = game::truth(target, DELAY as u64);
    for p in &peers {
        assert_matches_truth(
            &format!("player {}", p.me),
            &p.confirmed,
            &truth,
            target as usize,
        );
    }
    assert!(
        peers[0]
            .events
            .contains(&NetEvent::Disconnected { peer: WATCHER }),
        "the host dropped the spectator: {:?}",
        peers[0].events
    );
    assert!(
        !peers[1]
            .events
            .iter()
            .any(|e| matches!(e, NetEvent::Disconnected { .. })),
        "{:?}",
        peers[1].events
    );
    // The frames it ran before it vanished were the players'.
    let n = watcher.confirmed.len();
    assert_matches_truth("spectator", &watcher.confirmed, &truth, n);
}

/// A spectator that stays away so long that the host drops it hears of it (after ggrs's
/// 5 s of courtesy replies and its own disconnect timeout): `Disconnected`, for good.
#[test]
fn a_spectator_the_host_dropped_is_told_so() {
    let link = LinkConfig::round_trip(Duration::from_millis(20));
    let net = MemoryNetwork::new(14, link);
    let mut peers = players(&net, Duration::from_millis(1000));
    let mut watcher = Watcher::start(&net, |b| b.disconnect_timeout(Duration::from_secs(1)));
    run(
        &mut peers,
        &mut watcher,
        Duration::from_secs(30),
        |_| true,
        |_, w| w.confirmed_to() >= 30,
    );
    run(
        &mut peers,
        &mut watcher,
        Duration::from_secs(40),
        |t| t > Duration::from_millis(2500),
        |p, w| {
            p[0].events
                .contains(&NetEvent::Disconnected { peer: WATCHER })
                && w.ticks.last() == Some(&SpectatorTick::Disconnected)
        },
    );
    assert!(
        watcher
            .events
            .contains(&NetEvent::Disconnected { peer: HOST }),
        "{:?}",
        watcher.events
    );
    assert_eq!(watcher.tick(), SpectatorTick::Disconnected);
    let n = watcher.confirmed.len();
    let truth = game::truth(n as u64, DELAY as u64);
    assert_matches_truth("spectator", &watcher.confirmed, &truth, n);
}

/// Plays until the spectator ran `frames`, then reads the session magic of `from`'s
/// packets to `to` off the wire.
fn magic_mid_game(
    net: &MemoryNetwork,
    peers: &mut [Peer],
    watcher: &mut Watcher,
    frames: u64,
    (from, to): (PeerId, PeerId),
) -> u16 {
    let run_to = |peers: &mut [Peer], watcher: &mut Watcher, f: u64| {
        run(
            peers,
            watcher,
            Duration::from_secs(30),
            |_| true,
            |_, w| w.confirmed_to() >= f,
        );
    };
    run_to(peers, watcher, frames);
    net.record();
    run_to(peers, watcher, frames + 10);
    let (_, _, real) = net
        .take_recorded()
        .into_iter()
        .find(|(f, t, _)| (*f, *t) == (from, to))
        .expect("packets on that link");
    forge::magic_of(&real)
}

/// What someone forging the host's address sends a spectator, with the host's magic;
/// inputs that ggrs decodes against the last input received start at `start`.
fn attacks_on_a_spectator(magic: u16, start: i32) -> Vec<(&'static str, Vec<u8>)> {
    let pad = bincode::serialized_size(&game::Pad::default()).unwrap() as usize;
    let frame = 2 * pad; // the host sends both players' inputs per frame
    let packet = |input: Input<'_>| input.packet(magic);
    vec![
        (
            "a cut-short varint",
            packet(Input::two_players(start, &[0x80])),
        ),
        (
            "a run of 2^40 zero bytes",
            packet(Input::two_players(start, &forge::zeros(1 << 40))),
        ),
        (
            "an input a frame past the next one",
            packet(Input::two_players(start + 1, &forge::inputs(1, frame))),
        ),
        (
            "two inputs from frame i32::MAX",
            packet(Input::two_players(i32::MAX, &forge::inputs(2, frame))),
        ),
        (
            "200 inputs in one packet",
            packet(Input::two_players(start, &forge::inputs(200, frame))),
        ),
        (
            "inputs of one player's size",
            packet(Input::two_players(start, &forge::inputs(3, pad))),
        ),
        (
            "a literal run past the end",
            packet(Input::two_players(start, &forge::varint(100 << 1))),
        ),
        (
            "three players' statuses",
            packet(Input {
                statuses: &[(false, -1), (false, -1), (false, -1)],
                ..Input::two_players(start, &forge::inputs(1, frame))
            }),
        ),
        (
            "a player's last frame at -5",
            packet(Input {
                statuses: &[(true, -5), (false, -1)],
                ..Input::two_players(start, &[])
            }),
        ),
        (
            "a checksum report (ggrs asserts a spectator gets none)",
            forge::with_crc(forge::checksum_report(magic, 10)),
        ),
        (
            "a quality reply to a report sent in 1970",
            quality_reply(magic, 0),
        ),
    ]
}

/// A `QualityReply` echoing `pong` (ms since the epoch), as a host answers a spectator's
/// quality report; the spectator takes the time since as its round trip.
fn quality_reply(magic: u16, pong: u128) -> Vec<u8> {
    let mut m = magic.to_le_bytes().to_vec();
    m.extend_from_slice(&5u32.to_le_bytes()); // QualityReply
    m.extend_from_slice(&pong.to_le_bytes());
    forge::with_crc(m)
}

#[test]
fn hostile_packets_to_a_spectator_are_rejected_and_counted() {
    const FRAMES: u64 = 240;
    let net = MemoryNetwork::new(15, LinkConfig::round_trip(Duration::from_millis(10)));
    let mut peers = players(&net, Duration::from_secs(2));
    let mut watcher = Watcher::start(&net, |b| b);
    let magic = magic_mid_game(&net, &mut peers, &mut watcher, 30, (HOST, WATCHER));
    // The frame after the last input received: what an honest host sends next.
    let g = watcher.spectator.ggrs();
    let start = g.current_frame() + g.frames_behind_host() as i32 + 1;
    let attacks = attacks_on_a_spectator(magic, start);
    let sent = attacks.len() as u64;
    for (_, bytes) in attacks {
        net.inject(HOST, WATCHER, bytes);
    }
    run(
        &mut peers,
        &mut watcher,
        Duration::from_secs(30),
        |_| true,
        |_, w| w.confirmed_to() >= FRAMES,
    );
    assert_same_frames(&peers, &watcher, FRAMES as usize);
    let s = watcher.spectator.stats();
    assert_eq!(s.rejected, sent, "{s:?}");
    // From an address that is not the host's: strangers.
    net.inject(
        PeerId(1),
        WATCHER,
        forge::with_crc(forge::checksum_report(magic, 10)),
    );
    net.inject(
        PeerId(9),
        WATCHER,
        forge::with_crc(forge::checksum_report(magic, 10)),
    );
    for _ in 0..3 {
        watcher.tick();
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(watcher.spectator.stats().strangers, 2);
}

/// What someone forging a spectator's address sends its host: an input (ggrs asserts
/// that inputs come from players: the host's process would panic), a checksum report,
/// an acknowledgement of frames not yet sent.
fn attacks_from_a_spectator(magic: u16) -> Vec<(&'static str, Vec<u8>)> {
    let pad = bincode::serialized_size(&game::Pad::default()).unwrap() as usize;
    let ack = |frame: i32| {
        let mut m = magic.to_le_bytes().to_vec();
        m.extend_from_slice(&3u32.to_le_bytes()); // InputAck
        m.extend_from_slice(&frame.to_le_bytes());
        forge::with_crc(m)
    };
    vec![
        (
            "an input",
            Input::two_players(0, &forge::inputs(1, pad)).packet(magic),
        ),
        (
            "a checksum report",
            forge::with_crc(forge::checksum_report(magic, 10)),
        ),
        ("an ack of frame 100,000", ack(100_000)),
        ("an ack of frame -2", ack(-2)),
    ]
}

#[test]
fn hostile_packets_from_a_spectator_address_are_rejected_by_the_host() {
    const FRAMES: u64 = 180;
    let net = MemoryNetwork::new(16, LinkConfig::round_trip(Duration::from_millis(10)));
    let mut peers = players(&net, Duration::from_secs(2));
    let mut watcher = Watcher::start(&net, |b| b);
    let magic = magic_mid_game(&net, &mut peers, &mut watcher, 30, (WATCHER, HOST));
    let attacks = attacks_from_a_spectator(magic);
    let sent = attacks.len() as u64;
    for (_, bytes) in attacks {
        net.inject(WATCHER, HOST, bytes);
    }
    run(
        &mut peers,
        &mut watcher,
        Duration::from_secs(30),
        |_| true,
        |_, w| w.confirmed_to() >= FRAMES,
    );
    assert_same_frames(&peers, &watcher, FRAMES as usize);
    assert_eq!(peers[0].session.stats().rejected, sent);
    assert_eq!(watcher.spectator.stats().rejected, 0);
}

/// Without the checks (a test switch), the input from a spectator's address reaches
/// ggrs, which asserts that inputs come from players: the panic is contained and names
/// the spectator. What the check above keeps from happening.
#[test]
fn without_the_checks_an_input_from_a_spectator_panics_ggrs_contained() {
    let net = MemoryNetwork::new(17, LinkConfig::round_trip(Duration::from_millis(10)));
    let mut peers = [
        Peer::start(&net, 0, game::build(1), |b| {
            b.spectator(WATCHER).without_packet_checks()
        }),
        Peer::start(&net, 1, game::build(1), |b| b),
    ];
    let mut watcher = Watcher::start(&net, |b| b);
    let magic = magic_mid_game(&net, &mut peers, &mut watcher, 20, (WATCHER, HOST));
    let pad = bincode::serialized_size(&game::Pad::default()).unwrap() as usize;
    net.inject(
        WATCHER,
        HOST,
        Input::two_players(0, &forge::inputs(1, pad)).packet(magic),
    );
    let input = game::scripted(0, peers[0].session.input_frame());
    match peers[0].session.tick(input) {
        Err(NetError::PeerPanic { peers, message }) => {
            assert!(message.contains("player < self.num_players"), "{message}");
            assert!(peers.contains(&format!("{WATCHER:?}")), "{peers:?}");
        }
        other => panic!("expected PeerPanic, got {other:?}"),
    }
}

#[test]
fn a_spectator_address_that_is_a_player_or_twice_is_refused() {
    let net = MemoryNetwork::new(18, LinkConfig::round_trip(Duration::from_millis(10)));
    let start = |b: runsync_net::NetSessionBuilder<PeerId>| {
        b.start::<game::Pad>(game::build(1), net.socket(HOST))
            .map(drop)
    };
    let b = || {
        runsync_net::NetSession::builder(2)
            .local_player(0)
            .remote_player(1, PeerId(1))
    };
    assert!(matches!(
        start(b().spectator(PeerId(1))),
        Err(NetError::Ggrs(_))
    ));
    assert!(matches!(
        start(b().spectator(WATCHER).spectator(WATCHER)),
        Err(NetError::Ggrs(_))
    ));
    assert!(start(b().spectator(WATCHER).spectator(PeerId(3))).is_ok());
    let bad = NetSpectator::builder(2, HOST)
        .catchup_speed(0)
        .start::<game::Pad>(game::build(1), net.socket(WATCHER));
    assert!(matches!(bad, Err(NetError::Ggrs(_))));
    let bad = NetSpectator::builder(2, HOST)
        .max_frames_behind(60)
        .start::<game::Pad>(game::build(1), net.socket(WATCHER));
    assert!(matches!(bad, Err(NetError::Ggrs(_))));
}
