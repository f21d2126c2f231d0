//! Feeds raw bytes to the live inspector (`runsync-inspect`) as if they had arrived on its
//! socket: the head parser, the `Host`/`Origin`/token checks, the router with its query,
//! entity-id and JSON parsing, and — for what passes — the game thread's answer on a small
//! running game with a snapshot ring (timeline, steps, rewinds, entity pages, watch,
//! explain). Every request must get a status the API documents with a JSON error that
//! says something (the page aside); none may panic (an overflow in a debug build), hang or
//! leave the game unable to run; and a non-loopback inspector must never answer its API
//! to a request without its token.
//!
//! By the first byte: bit 0, the policy (0: loopback; 1: a non-loopback bind, token
//! `fuzzing::TOKEN`); bit 1, the rest is the request as is (0), or (1) a template fills a
//! well-formed request around it — the next byte picks an endpoint and where the bytes go
//! (a query value, an entity id, a JSON body), bit 2 whether the token is sent — so the
//! fuzzer spends its time inside the numbers, not the request line.
//!
//! ```sh
//! cargo +nightly fuzz run request -- -max_total_time=120
//! cargo +nightly fuzz run request fuzz/regressions/request/*   # past finds, fixed
//! ```
//!
//! `fuzz/regressions/request/timeline-since-u64-max` (`GET /api/timeline?since=` 2^64 - 1,
//! whose `since + 1` overflowed on the game thread: a debug build's game died, a release
//! build answered every record) is `hostile.rs`'s
//! `the_overflowing_since_is_refused_and_the_game_runs_on`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use runsync::prelude::*;
use runsync_inspect::fuzzing::{ALLOWED_HOST, Harness, TOKEN};

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
impl Component for Pos {
    type Output = f32;
}
impl Checksum for Pos {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Hp(i32);
impl Component for Hp {
    type Output = i32;
}
impl Checksum for Hp {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h)
    }
}

/// Twelve movers whose hit points run out (despawned, and another spawned), four markers.
fn game() -> Runtime {
    let mut w = World::new();
    w.register::<Pos>(|p: &mut Pos, d: &[f32]| p.0 += d.iter().sum::<f32>());
    w.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    w.snapshotting::<Pos>().snapshotting::<Hp>();
    w.checksumming::<Pos>().checksumming::<Hp>();
    w.debugging::<Pos>().debugging::<Hp>();
    for i in 0..12 {
        w.spawn((Pos(i as f32), Hp(2 + i % 5)));
    }
    for i in 0..4 {
        w.spawn((Pos(-(i as f32)),));
    }
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system_named("move", |w: &World, out: &mut Output| {
        for (e, (_, ())) in w.query::<(&Pos, With<Hp>)>() {
            out.write::<Pos>(e, 0.5);
        }
    });
    rt.add_system_named("decay", |w: &World, out: &mut Output| {
        for (e, (h, p)) in w.query::<(&Hp, &Pos)>() {
            if h.0 <= 1 {
                out.despawn(e);
                out.spawn((Pos(p.0 * 0.5), Hp(6)));
            } else {
                out.write::<Hp>(e, -1);
            }
        }
    });
    rt
}

/// Where a template puts the fuzzer's bytes: (method, before, after, body?).
const TEMPLATES: &[(&str, &str, &str, bool)] = &[
    ("GET", "/api/timeline?since=", "", false),
    ("GET", "/api/timeline?", "", false),
    ("GET", "/api/entities?offset=", "&limit=3", false),
    ("GET", "/api/entities?limit=", "", false),
    ("GET", "/api/entities?with=", "", false),
    ("GET", "/api/entities?", "", false),
    ("GET", "/api/entities/", "", false),
    ("POST", "/api/entities/", "/watch", false),
    ("POST", "/api/entities/", "/unwatch", false),
    ("POST", "/api/entities/", "/explain", false),
    ("GET", "/api/status", "", false),
    ("POST", "/api/step", "", true),
    ("POST", "/api/rewind", "", true),
    ("POST", "/api/pause", "", true),
    ("POST", "/api/resume", "", true),
    ("GET", "/", "", false),
];

/// Statuses the API documents (503 and 504 need threads the harness does not have).
const DOCUMENTED: &[u16] = &[200, 400, 401, 403, 404, 405, 408, 409, 411, 413, 431];

fn templated(flags: u8, rest: &[u8]) -> Vec<u8> {
    let Some((&pick, payload)) = rest.split_first() else {
        return Vec::new();
    };
    let (method, before, after, body) = TEMPLATES[usize::from(pick) % TEMPLATES.len()];
    let mut raw = Vec::new();
    raw.extend_from_slice(method.as_bytes());
    raw.push(b' ');
    raw.extend_from_slice(before.as_bytes());
    if !body {
        raw.extend_from_slice(payload);
    }
    raw.extend_from_slice(after.as_bytes());
    raw.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    raw.extend_from_slice(if flags & 1 == 1 {
        ALLOWED_HOST.as_bytes()
    } else {
        b"127.0.0.1:7304"
    });
    raw.extend_from_slice(b"\r\n");
    if flags & 4 != 0 {
        raw.extend_from_slice(format!("Authorization: Bearer {TOKEN}\r\n").as_bytes());
    }
    let body = if body { payload } else { &[][..] };
    raw.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    raw.extend_from_slice(body);
    raw
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let remote = flags & 1 == 1;
    let raw = if flags & 2 == 0 {
        rest.to_vec()
    } else {
        templated(flags, rest)
    };
    let mut rt = game();
    let mut inspector = Harness::new(4, 8);
    for _ in 0..6 {
        inspector.frame(&mut rt).expect("the game's frames succeed");
    }
    let (status, body) = inspector.request(&mut rt, &raw, remote);
    assert!(DOCUMENTED.contains(&status), "status {status}");
    let page = body.starts_with(b"<!doctype html>") || body.starts_with(b"<!DOCTYPE html>");
    if !page {
        let v: serde_json::Value = serde_json::from_slice(&body).expect("a JSON answer");
        if status >= 400 {
            let error = v["error"].as_str().expect("an error message");
            assert!(!error.is_empty());
            assert_eq!(v["status"], status);
        }
    }
    if remote && status == 200 && !page {
        let token = TOKEN.as_bytes();
        assert!(
            raw.windows(token.len()).any(|w| w == token),
            "a non-loopback inspector answered its API without the token"
        );
    }
    // The game runs on after whatever the request did.
    inspector.frame(&mut rt).expect("the game's frames succeed");
});
