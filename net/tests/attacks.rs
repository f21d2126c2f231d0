//! The packets that once killed a peer, sent byte for byte: a cut-short varint (N1), a
//! run that decodes to 2^40 bytes (N2), inputs far in the future or past ggrs's input
//! queue (N3), a third party that forges the peer's address and tries every session magic
//! (N4), and a negative checksum frame. Over the in-process network and over UDP, before
//! the handshake and mid-game: the honest peer lives on, drops and counts each one, and
//! its game agrees with a single-process run; with a session key a stranger's packets
//! never reach the checks at all.

mod common;

use std::net::UdpSocket;
use std::time::Duration;

use common::forge::{self, Input};
use common::{DELAY, Peer, assert_matches_truth, game, run_until};
use runsync_net::{
    LinkConfig, MemoryNetwork, NetError, NetSession, PeerId, SessionKey, Tick, UdpTransport,
};

/// Every hostile packet of the attack run, named, as a peer (or someone forging its
/// address) with session magic `magic` would send it; those that ggrs decodes only
/// against the input before their start frame start at `start` (0 before any input,
/// a frame just received mid-game).
fn attacks(magic: u16, start: i32) -> Vec<(&'static str, Vec<u8>)> {
    let pad = bincode::serialized_size(&game::Pad::default()).unwrap() as usize;
    let packet = |input: Input<'_>| input.packet(magic);
    vec![
        (
            "N1: a cut-short varint",
            packet(Input::two_players(start, &[0x80])),
        ),
        (
            "N2: a run of 2^40 zero bytes",
            packet(Input::two_players(start, &forge::zeros(1 << 40))),
        ),
        (
            "N2: a run of 2^28 zero bytes",
            packet(Input::two_players(start, &forge::zeros(1 << 28))),
        ),
        (
            "N3: a first input at frame 200",
            packet(Input::two_players(200, &forge::inputs(1, pad))),
        ),
        (
            "N3: two inputs from frame i32::MAX",
            packet(Input::two_players(i32::MAX, &forge::inputs(2, pad))),
        ),
        (
            "N3: 200 consecutive inputs in one packet",
            packet(Input::two_players(start, &forge::inputs(200, pad))),
        ),
        (
            "a varint of 11 bytes",
            packet(Input::two_players(start, &[0xff; 11])),
        ),
        (
            "a literal run past the end",
            packet(Input::two_players(start, &forge::varint(100 << 1))),
        ),
        (
            "a player disconnected at frame -5",
            packet(Input {
                statuses: &[(true, -5), (true, -5)],
                ..Input::two_players(0, &[])
            }),
        ),
        (
            "a checksum report for frame i32::MIN",
            forge::with_crc(forge::checksum_report(magic, i32::MIN)),
        ),
        (
            "a quality reply from the start of the epoch",
            forge::with_crc(forge::quality_reply(magic, 0)),
        ),
    ]
}

#[test]
fn the_attack_packets_are_the_sizes_the_attack_run_sent() {
    let a = attacks(0, 0);
    assert_eq!(a[0].1.len(), 46, "N1 is 46 bytes");
    assert_eq!(a[1].1.len(), 52, "N2 is 52 bytes");
}

/// Sends each attack to peer 0, from peer 1's address, before either has ticked; then
/// plays 60 frames. One fresh pair per attack, so each is tried on its own.
#[test]
fn each_attack_before_the_handshake_is_dropped_counted_and_the_game_agrees() {
    const FRAMES: u64 = 60;
    let truth = game::truth(FRAMES, DELAY as u64);
    for (name, bytes) in attacks(0, 0) {
        let net = MemoryNetwork::new(1, LinkConfig::round_trip(Duration::from_millis(10)));
        let mut peers = [
            Peer::start(&net, 0, game::build(1), |b| b),
            Peer::start(&net, 1, game::build(1), |b| b),
        ];
        net.inject(PeerId(1), PeerId(0), bytes);
        run_until(
            &mut peers,
            Duration::from_secs(30),
            |_, _| true,
            |p| p.iter().all(|p| p.confirmed_to() >= FRAMES),
        );
        for p in &peers {
            assert_matches_truth(
                &format!("{name}: peer {}", p.me),
                &p.confirmed,
                &truth,
                FRAMES as usize,
            );
        }
        let stats = peers[0].session.stats();
        assert_eq!(stats.rejected, 1, "{name}: dropped and counted: {stats:?}");
        assert_eq!(peers[1].session.stats().rejected, 0, "{name}");
    }
}

/// Plays until both peers confirmed `frames`, then reads the session magic of peer 1's
/// packets to peer 0 off the wire (as a peer, or anyone who sees the traffic, can).
fn magic_mid_game(net: &MemoryNetwork, peers: &mut [Peer], frames: u64) -> u16 {
    run_until(
        peers,
        Duration::from_secs(30),
        |_, _| true,
        |p| p.iter().all(|p| p.confirmed_to() >= frames),
    );
    net.record();
    run_until(
        peers,
        Duration::from_secs(30),
        |_, _| true,
        |p| p.iter().all(|p| p.confirmed_to() >= frames + 10),
    );
    let (_, _, real) = net
        .take_recorded()
        .into_iter()
        .find(|(from, to, _)| (*from, *to) == (PeerId(1), PeerId(0)))
        .expect("peer 1 sent packets");
    forge::magic_of(&real)
}

/// Mid-game, with the session magic read off a real packet (as a peer, or anyone who
/// sees the traffic, knows it): every attack at once.
#[test]
fn every_attack_mid_game_with_the_real_magic_is_dropped_and_the_game_goes_on() {
    const FRAMES: u64 = 150;
    let net = MemoryNetwork::new(2, LinkConfig::round_trip(Duration::from_millis(10)));
    let mut peers = [
        Peer::start(&net, 0, game::build(1), |b| b),
        Peer::start(&net, 1, game::build(1), |b| b),
    ];
    let magic = magic_mid_game(&net, &mut peers, 30);
    let attacks = attacks(magic, peers[0].session.ggrs().current_frame());
    let sent = attacks.len() as u64;
    for (_, bytes) in attacks {
        net.inject(PeerId(1), PeerId(0), bytes);
    }
    run_until(
        &mut peers,
        Duration::from_secs(30),
        |_, _| true,
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
    }
    assert_eq!(peers[0].session.stats().rejected, sent);
}

/// N4: a third party forges peer 1's address and tries all 65,536 session magics with
/// N1's bytes. With a session key none of them is authentic: the transport drops them
/// before parsing. Without one, each that reaches ggrs's framing is refused by the checks.
#[test]
fn a_forger_trying_every_magic_gains_nothing_with_or_without_a_key() {
    const FRAMES: u64 = 90;
    for keyed in [true, false] {
        let net = MemoryNetwork::new(3, LinkConfig::round_trip(Duration::from_millis(10)));
        let key = SessionKey::derive("attacks.rs: N4");
        let socket = |me: u32| {
            let s = net.socket(PeerId(me));
            if keyed { s.with_key(key.clone()) } else { s }
        };
        let mut peers = [
            Peer::start_on(socket(0), 0, game::build(1), |b| b),
            Peer::start_on(socket(1), 1, game::build(1), |b| b),
        ];
        run_until(
            &mut peers,
            Duration::from_secs(30),
            |_, _| true,
            |p| p.iter().all(|p| p.confirmed_to() >= 20),
        );
        let magic = std::cell::Cell::new(0u32);
        run_until(
            &mut peers,
            Duration::from_secs(60),
            |p, _| {
                // 4,096 forged packets before each of peer 0's ticks.
                if p.me == 0 {
                    // A start frame ggrs decodes against (the input just received).
                    let start = p.session.ggrs().current_frame();
                    for _ in 0..4096 {
                        let m = magic.get();
                        if m <= u32::from(u16::MAX) {
                            let bytes = Input::two_players(start, &[0x80]).packet(m as u16);
                            net.inject(PeerId(1), PeerId(0), bytes);
                            magic.set(m + 1);
                        }
                    }
                }
                true
            },
            |p| magic.get() > u32::from(u16::MAX) && p.iter().all(|p| p.confirmed_to() >= FRAMES),
        );
        let truth = game::truth(FRAMES, DELAY as u64);
        for p in &peers {
            assert_matches_truth(
                &format!("keyed {keyed}: peer {}", p.me),
                &p.confirmed,
                &truth,
                FRAMES as usize,
            );
        }
        let transport = net.probe(PeerId(0)).stats();
        let rejected = peers[0].session.stats().rejected;
        if keyed {
            assert_eq!(transport.unauthenticated, 1 << 16, "{transport:?}");
            assert_eq!(rejected, 0);
        } else {
            assert_eq!(transport.unauthenticated, 0);
            assert_eq!(rejected, 1 << 16, "{transport:?}");
        }
    }
}

/// With the checks off (a test switch), N1 reaches ggrs and panics inside it: the panic
/// is contained, the session ends with an error naming the peer, and the game's state is
/// kept.
#[test]
fn a_panic_inside_ggrs_ends_the_session_with_an_error_naming_the_peer_and_keeps_the_world() {
    let net = MemoryNetwork::new(4, LinkConfig::round_trip(Duration::from_millis(10)));
    let mut peers = [
        Peer::start(&net, 0, game::build(1), |b| b.without_packet_checks()),
        Peer::start(&net, 1, game::build(1), |b| b),
    ];
    let magic = magic_mid_game(&net, &mut peers, 20);
    let frame = peers[0].session.runtime().frame_count();
    let checksum = peers[0].session.world().checksum();
    net.inject(
        PeerId(1),
        PeerId(0),
        Input::two_players(peers[0].session.ggrs().current_frame(), &[0x80]).packet(magic),
    );
    let pad = game::scripted(0, peers[0].session.input_frame());
    let err = peers[0].session.tick(pad).expect_err("ggrs panicked");
    match &err {
        NetError::PeerPanic { peers, message } => {
            assert_eq!(peers, &[format!("{:?}", PeerId(1))]);
            assert!(message.contains("index out of bounds"), "{message}");
        }
        other => panic!("expected PeerPanic, got {other:?}"),
    }
    assert!(err.to_string().contains("PeerId(1)"), "{err}");
    // Stopped: every later tick says so, and the world is the one before the packet.
    let again = peers[0].session.tick(pad).unwrap_err();
    assert!(matches!(again, NetError::Stopped(_)), "{again:?}");
    assert_eq!(peers[0].session.runtime().frame_count(), frame);
    assert_eq!(peers[0].session.world().checksum(), checksum);
}

/// A UDP peer that answers nothing but hostile datagrams: the session under attack
/// drops each one and goes on ticking. A keyed session drops them as unauthenticated;
/// a keyed *peer* (who holds the key) still gets each one refused by the checks.
#[test]
fn the_attack_datagrams_over_udp_are_dropped_with_and_without_a_key() {
    let key = SessionKey::derive("attacks.rs: udp");
    for (keyed_victim, keyed_attacker) in [(false, false), (true, false), (true, true)] {
        // The attacker is the session's remote peer: a plain UDP socket that sends the
        // bytes as they are, or (holding the key) a keyed transport that seals them.
        let raw = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut sealed = UdpTransport::bind("127.0.0.1:0")
            .unwrap()
            .with_key(key.clone());
        let attacker_addr = if keyed_attacker {
            sealed.local_addr().unwrap()
        } else {
            raw.local_addr().unwrap()
        };
        let victim = UdpTransport::bind("127.0.0.1:0").unwrap();
        let victim_addr = victim.local_addr().unwrap();
        let probe = victim.probe();
        let victim = if keyed_victim {
            victim.with_key(key.clone())
        } else {
            victim
        };
        let mut session = NetSession::builder(2)
            .local_player(0)
            .remote_player(1, attacker_addr)
            .start::<game::Pad>(game::build(1), victim)
            .unwrap();
        let attacks = attacks(0, 0);
        let sent = attacks.len() as u64;
        for (name, bytes) in attacks {
            if keyed_attacker {
                let msg: ggrs::Message = bincode::deserialize(&bytes[..bytes.len() - 4])
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                ggrs::NonBlockingSocket::send_to(&mut sealed, &msg, &victim_addr);
            } else {
                raw.send_to(&bytes, victim_addr).unwrap();
            }
        }
        let mut ticks = 0;
        while session.stats().rejected + probe.stats().unauthenticated < sent && ticks < 200 {
            let tick = session.tick(game::Pad::default()).unwrap();
            assert_eq!(tick, Tick::Synchronizing, "no handshake with an attacker");
            std::thread::sleep(Duration::from_millis(5));
            ticks += 1;
        }
        let t = probe.stats();
        let rejected = session.stats().rejected;
        let what = format!("victim keyed {keyed_victim}, attacker keyed {keyed_attacker}: {t:?}");
        if keyed_victim && !keyed_attacker {
            assert_eq!((t.unauthenticated, rejected), (sent, 0), "{what}");
        } else {
            assert_eq!((t.unauthenticated, rejected), (0, sent), "{what}");
        }
    }
}
