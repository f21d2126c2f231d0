//! Feeds raw bytes to the live inspector (`runsync-inspect`) as if they had arrived on its
//! socket: the head parser, the `Host`/`Origin`/token checks, the router with its query,
//! entity-id and JSON parsing, and — for what passes — the game thread's answer on a small
//! running game with a snapshot ring (timeline, steps, rewinds, entity pages, watch,
//! explain). Every request must get a status the API documents with a JSON error that
//! says something (the page aside); none may panic (an overflow in a debug build), hang or
//! leave the game unable to run; and a non-loopback inspector must never answer its API
//! to a request without its token.
//!
//! The input is read by `fuzzing::decode` (shared with the test that replays the finds):
//! by the first byte, bit 0, the policy (0: loopback; 1: a non-loopback bind, token
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
//! build answered every record) is `inspect/tests/hostile.rs`'s
//! `the_overflowing_since_is_refused_and_the_game_runs_on`; every file here is also
//! replayed by `cargo test -p runsync-inspect` (`inspect/tests/fuzz_regressions.rs`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use runsync::prelude::*;
use runsync_inspect::fuzzing::{self, Harness, TOKEN};

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

/// Statuses the API documents (503 and 504 need threads the harness does not have).
const DOCUMENTED: &[u16] = &[200, 400, 401, 403, 404, 405, 408, 409, 411, 413, 431];

fuzz_target!(|data: &[u8]| {
    let Some((raw, remote)) = fuzzing::decode(data) else {
        return;
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
