//! A hostile client — connections that never finish their request, a byte-a-time trickle,
//! a flood of garbage and of expensive valid requests — neither stalls the game's frames
//! nor keeps the inspector from answering once it stops.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Game, raw_request, read_response};
use runsync_inspect::Inspector;

#[test]
fn a_hostile_client_neither_stalls_the_frame_nor_locks_the_inspector() {
    let game = Game::start(
        2,
        Inspector::builder()
            .io_timeout(Duration::from_millis(300))
            .max_connections(4),
    );
    let addr = game.addr;
    while game.frames() < 3 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let start = Instant::now();
    let frames_before = game.frames();

    // A trickle: one byte every 20 ms, which a per-read timeout alone would never cut.
    let (connected, wait) = std::sync::mpsc::channel();
    let trickle = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"G").unwrap();
        connected.send(()).unwrap();
        for b in b"ET /api/status HTTP/1.1\r\nX-Trickle: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
            if s.write_all(&[*b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        read_response(&mut s).0
    });
    wait.recv().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    // Connections that send half a head and stop (more than may be served at once).
    let mut held: Vec<TcpStream> = (0..10)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /api/status HTTP/1.1\r\nX-Slow: ")
                .unwrap();
            s
        })
        .collect();
    // While every connection slot is taken, a flood is answered at once: 503.
    let codes = flood(addr);
    assert!(codes.iter().all(|&c| c == 503), "{codes:?}");

    // The held connections are cut at their deadline, answered 408 (or 503 for those
    // beyond the connection limit).
    for s in &mut held {
        let code = read_response(s).0;
        assert!(code == 408 || code == 503, "{code}");
    }
    assert_eq!(
        trickle.join().unwrap(),
        408,
        "the trickle is cut at the deadline"
    );
    // Meanwhile the game kept running frames (1 ms of sleep each: hundreds in this time;
    // the bound is loose so a loaded machine passes, a stalled frame does not).
    let ran = game.frames() - frames_before;
    assert!(
        ran >= 20,
        "only {ran} frames in {:?} under a hostile client",
        start.elapsed()
    );
    // And the inspector answers again: a flood of garbage and of valid requests that
    // cost the game thread work (a full entity page each) is answered request by request.
    let frames_before = game.frames();
    let codes = flood(addr);
    assert!(
        codes.iter().all(|c| [200, 400, 503].contains(c)),
        "every flood request is answered: {codes:?}"
    );
    assert!(codes.contains(&400) && codes.contains(&200), "{codes:?}");
    assert!(game.frames() > frames_before, "frames ran during the flood");
    let s = game.status();
    assert_eq!(s["paused"], false);
}

/// 100 requests from 4 threads, half garbage, half valid; their status codes.
fn flood(addr: std::net::SocketAddr) -> Vec<u16> {
    let floods: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                let mut codes = Vec::new();
                for _ in 0..25 {
                    let raw: &[u8] = if i % 2 == 0 {
                        b"\x00\xff garbage \r\n\r\n"
                    } else {
                        b"GET /api/entities?limit=1000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                    };
                    codes.push(raw_request(addr, raw).0);
                }
                codes
            })
        })
        .collect();
    floods.into_iter().flat_map(|t| t.join().unwrap()).collect()
}
