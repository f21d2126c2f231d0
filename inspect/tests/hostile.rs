//! A hostile client — connections that never finish their request, a byte-a-time trickle,
//! a flood of garbage and of expensive valid requests, numbers at and past every bound —
//! neither stalls the game's frames, nor stops or changes the game, nor keeps the
//! inspector from answering once it stops.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Game, raw_request, read_response};
use runsync_inspect::Inspector;
use serde_json::Value;

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
    // While the server holds as many connections as it takes, a flood is answered at
    // once: 503.
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

/// `since=u64::MAX` once overflowed `since + 1` on the game thread: a debug build's game
/// died of it, a release build answered every record. Now it is a `400` that says why, and
/// the game runs on.
#[test]
fn the_overflowing_since_is_refused_and_the_game_runs_on() {
    let game = Game::start(2, Inspector::builder());
    while game.frames() < 3 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let (code, v) = game.get("/api/timeline?since=18446744073709551615");
    assert_eq!(code, 400, "{v}");
    let error = v["error"].as_str().unwrap();
    assert!(
        error.contains("`since` is 18446744073709551615") && error.contains("last timeline record"),
        "{error}"
    );
    // The game thread answered it and lives: frames go on, and the API answers.
    let at = game.frames();
    let deadline = Instant::now() + Duration::from_secs(10);
    while game.frames() < at + 5 {
        assert!(
            Instant::now() < deadline,
            "the game stopped after the request"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let s = game.status();
    let last = s["timeline_seq"].as_u64().unwrap();
    let (code, t) = game.get(&format!("/api/timeline?since={last}"));
    assert_eq!(code, 200, "{t}");
    // A record never written (the next one): refused, not an empty answer forever.
    let (code, t) = game.get(&format!("/api/timeline?since={}", last + 1_000_000));
    assert_eq!(code, 400, "{t}");
}

/// Every number a request carries, at and past its bounds, on every endpoint: each is
/// answered (`400` naming what is wrong, or `404` for a frame or an entity that does not
/// exist), and none changes the game.
#[test]
fn hostile_numbers_on_every_endpoint_get_4xx_and_change_nothing() {
    let game = Game::start(2, Inspector::builder().ring(4).paused(true));
    game.ok("/api/step", Some(r#"{"frames": 6}"#));
    let before = game.status();
    let seq = before["timeline_seq"].as_u64().unwrap();
    let max = u64::MAX;
    let over = "18446744073709551616"; // u64::MAX + 1
    let huge = "340282366920938463463374607431768211456"; // 2^128
    let next_seq = format!("/api/timeline?since={}", seq + 1);
    let mut gets: Vec<(String, u16, &str)> = vec![
        // /api/timeline?since=SEQ (u64; at most the last record written)
        (format!("/api/timeline?since={max}"), 400, "since"),
        (format!("/api/timeline?since={}", max - 1), 400, "since"),
        (next_seq, 400, "since"),
        (format!("/api/timeline?since={over}"), 400, "since"),
        (format!("/api/timeline?since={huge}"), 400, "since"),
        ("/api/timeline?since=-1".into(), 400, "since"),
        ("/api/timeline?since=%2B1".into(), 400, "since"), // "+1"
        ("/api/timeline?since=1e3".into(), 400, "since"),
        ("/api/timeline?since=0x10".into(), 400, "since"),
        ("/api/timeline?since=1.0".into(), 400, "since"),
        ("/api/timeline?since=".into(), 400, "since"),
        ("/api/timeline?since=%201".into(), 400, "since"),
        // /api/entities?offset=N&limit=M (offset: entity indices are u32; limit <= 1000)
        (format!("/api/entities?offset={max}"), 400, "offset"),
        ("/api/entities?offset=4294967296".into(), 400, "offset"),
        (format!("/api/entities?offset={over}"), 400, "offset"),
        ("/api/entities?offset=-1".into(), 400, "offset"),
        ("/api/entities?offset=%2B0".into(), 400, "offset"),
        ("/api/entities?limit=1001".into(), 400, "limit"),
        (format!("/api/entities?limit={max}"), 400, "limit"),
        (format!("/api/entities?limit={huge}"), 400, "limit"),
        ("/api/entities?limit=-1".into(), 400, "limit"),
        // /api/entities/{index}v{generation} (u32 each; generation from 1)
        ("/api/entities/4294967296v1".into(), 400, "entity id"),
        ("/api/entities/1v4294967296".into(), 400, "entity id"),
        (format!("/api/entities/{max}v{max}"), 400, "entity id"),
        ("/api/entities/1v0".into(), 400, "entity id"),
        ("/api/entities/+1v1".into(), 400, "entity id"),
        ("/api/entities/-1v1".into(), 400, "entity id"),
        ("/api/entities/4294967295v1".into(), 404, "not alive"),
        (
            "/api/entities/4294967294v4294967295".into(),
            404,
            "not alive",
        ),
        ("/api/entities/0v4294967295".into(), 404, "not alive"),
    ];
    // In range, at the edges: answered 200.
    let fine = [
        format!("/api/timeline?since={seq}"),
        "/api/timeline?since=0".to_owned(),
        "/api/entities?offset=4294967295&limit=1000".to_owned(),
        "/api/entities?offset=0&limit=0".to_owned(),
    ];
    let mut posts: Vec<(String, String, u16, &str)> = Vec::new();
    for action in ["watch", "unwatch", "explain"] {
        for id in ["4294967296v1", "1v0", "1v18446744073709551615", "+0v1"] {
            posts.push((
                format!("/api/entities/{id}/{action}"),
                String::new(),
                400,
                "entity id",
            ));
        }
        for id in ["4294967295v1", "0v4294967295", "4294967294v1"] {
            posts.push((
                format!("/api/entities/{id}/{action}"),
                String::new(),
                404,
                "not",
            ));
        }
    }
    // /api/step {"frames": n}: u32, 1 to 600.
    for n in [
        "0",
        "601",
        "4294967295",
        "4294967296",
        over,
        huge,
        "-1",
        "1.5",
        "1e2",
        "\"1\"",
    ] {
        posts.push((
            "/api/step".into(),
            format!(r#"{{"frames": {n}}}"#),
            400,
            "frames",
        ));
    }
    // /api/rewind {"frame": k} | {"back": n}: u64; 404 unless the ring holds the frame.
    for (body, code, says) in [
        (
            format!(r#"{{"frame": {max}}}"#),
            404,
            "not in the snapshot ring",
        ),
        (
            format!(r#"{{"frame": {}}}"#, max - 1),
            404,
            "not in the snapshot ring",
        ),
        (
            r#"{"frame": 7}"#.to_owned(),
            404,
            "not in the snapshot ring",
        ),
        (
            r#"{"frame": 1}"#.to_owned(),
            404,
            "not in the snapshot ring",
        ),
        (format!(r#"{{"frame": {over}}}"#), 400, "frame"),
        (r#"{"frame": -1}"#.to_owned(), 400, "frame"),
        (r#"{"frame": 2.5}"#.to_owned(), 400, "frame"),
        (format!(r#"{{"back": {max}}}"#), 404, "cannot go"),
        (r#"{"back": 7}"#.to_owned(), 404, "cannot go"),
        (r#"{"back": 5}"#.to_owned(), 404, "not in the snapshot ring"),
        (format!(r#"{{"back": {huge}}}"#), 400, "back"),
        (r#"{"back": -1}"#.to_owned(), 400, "back"),
    ] {
        posts.push(("/api/rewind".into(), body, code, says));
    }
    for (path, want, says) in gets.drain(..) {
        let (code, v) = game.get(&path);
        assert_eq!(code, want, "GET {path}: {v}");
        assert_error_says(&v, says, &path);
    }
    for (path, body, want, says) in posts {
        let (code, v) = game.post(&path, (!body.is_empty()).then_some(body.as_str()));
        assert_eq!(code, want, "POST {path} {body}: {v}");
        assert_error_says(&v, says, &format!("{path} {body}"));
    }
    for path in fine {
        let (code, v) = game.get(&path);
        assert_eq!(code, 200, "GET {path}: {v}");
    }
    // Content-Length: digits that fit, or 400 (413 past the body limit).
    for (cl, want) in [
        ("18446744073709551616", 400),
        ("18446744073709551615", 413),
        ("99999999999999999999999", 400),
        ("+2", 400),
        ("-2", 400),
        ("2 2", 400),
        ("0x2", 400),
    ] {
        let raw = format!(
            "POST /api/step HTTP/1.1\r\nHost: {}\r\nContent-Length: {cl}\r\n\r\n{{}}",
            game.addr
        );
        let (code, body) = raw_request(game.addr, raw.as_bytes());
        assert_eq!(code, want, "Content-Length: {cl}: {body}");
    }
    let after = game.status();
    for key in ["frame", "checksum", "timeline_seq", "watched", "ring"] {
        assert_eq!(after[key], before[key], "{key} changed");
    }
}

fn assert_error_says(v: &Value, says: &str, what: &str) {
    let error = v["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: no error: {v}"));
    assert!(
        error.contains(says),
        "{what}: the error should say `{says}`: {error}"
    );
}
