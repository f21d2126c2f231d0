//! The inspector's HTTP API, driven as the page drives it, against a small game running on
//! its own thread.

mod common;

use std::time::Duration;

use common::{Game, raw_request};
use runsync_inspect::Inspector;
use serde_json::Value;

fn paused(ring: usize) -> runsync_inspect::InspectorBuilder {
    Inspector::builder().ring(ring).paused(true)
}

fn frame(v: &Value) -> u64 {
    v["frame"].as_u64().expect("status has a frame")
}

fn checksum(v: &Value) -> String {
    v["checksum"]
        .as_str()
        .expect("a paused status has a checksum")
        .to_owned()
}

/// Waits (bounded) until `cond` holds.
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..400 {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("timed out waiting for: {what}");
}

#[test]
fn pause_step_and_resume() {
    let game = Game::start(2, Inspector::builder());
    eventually("the game runs", || game.frames() > 3);
    let s = game.ok("/api/pause", None);
    assert_eq!(s["paused"], true);
    let at = frame(&game.status());
    std::thread::sleep(Duration::from_millis(50));
    let s = game.status();
    assert_eq!(frame(&s), at, "paused: no frame runs");
    assert!(s["checksum"].is_string(), "paused: a checksum: {s}");

    let s = game.ok("/api/step", Some(r#"{"frames": 3}"#));
    assert_eq!(frame(&s), at + 3, "{s}");
    assert_eq!(s["paused"], true, "a step leaves the game paused");
    let s = game.ok("/api/step", None);
    assert_eq!(frame(&s), at + 4, "no body: one frame");

    let (code, t) = game.get(&format!(
        "/api/timeline?since={}",
        s["timeline_seq"].as_u64().unwrap() - 4
    ));
    assert_eq!(code, 200);
    let records = t["records"].as_array().unwrap();
    let frames: Vec<u64> = records
        .iter()
        .map(|r| r["frame"].as_u64().unwrap())
        .collect();
    // Frames count from 1: the frames that took the count from `at` to `at + 4`.
    assert_eq!(frames, [at + 1, at + 2, at + 3, at + 4], "{t}");
    assert_eq!(t["systems"], serde_json::json!(["move", "wind", "decay"]));
    assert_eq!(records[0]["systems_ns"].as_array().unwrap().len(), 3);
    assert!(
        records
            .iter()
            .all(|r| r["error"].is_null() && r["resim"].is_null())
    );

    let s = game.ok("/api/resume", None);
    assert_eq!(s["paused"], false);
    assert!(s["checksum"].is_null(), "running: no checksum");
    eventually("frames run again", || frame(&game.status()) > at + 10);
}

/// Step to frames 12 and 20, rewind to 12 and step again: the same checksums, at 1, 2 and
/// 8 workers alike; each re-simulated frame was compared with the first run.
#[test]
fn rewind_and_resimulate_bit_identically_at_1_2_and_8_workers() {
    let mut seen: Option<(String, String)> = None;
    for workers in [1, 2, 8] {
        let game = Game::start(workers, paused(16));
        assert_eq!(frame(&game.status()), 0);
        let c12 = checksum(&game.ok("/api/step", Some(r#"{"frames": 12}"#)));
        let s20 = game.ok("/api/step", Some(r#"{"frames": 8}"#));
        assert_eq!(frame(&s20), 20);
        let c20 = checksum(&s20);
        assert_ne!(c12, c20);
        assert_eq!(
            (
                s20["ring"]["oldest"].as_u64(),
                s20["ring"]["newest"].as_u64()
            ),
            (Some(4), Some(19))
        );

        let s = game.ok("/api/rewind", Some(r#"{"frame": 12}"#));
        assert_eq!(
            (frame(&s), checksum(&s)),
            (12, c12.clone()),
            "back at frame 12"
        );
        assert_eq!(s["paused"], true);
        // The present was kept: forward to it and back again.
        let s = game.ok("/api/rewind", Some(r#"{"frame": 20}"#));
        assert_eq!((frame(&s), checksum(&s)), (20, c20.clone()));
        game.ok("/api/rewind", Some(r#"{"frame": 12}"#));
        let s = game.ok("/api/step", Some(r#"{"frames": 8}"#));
        assert_eq!(
            (frame(&s), checksum(&s)),
            (20, c20.clone()),
            "re-simulated to frame 20"
        );
        assert_eq!(
            s["resim"]["checked"], 8,
            "frames 13..=20 compared with the first run: {s}"
        );
        assert!(s["resim"]["differed_at"].is_null(), "{s}");

        let s = game.ok("/api/rewind", Some(r#"{"back": 5}"#));
        assert_eq!(frame(&s), 15);
        let (_, t) = game.get(&format!("/api/timeline?since={}", s["timeline_seq"]));
        assert!(t["records"].as_array().unwrap().is_empty());
        let s = game.ok("/api/step", Some(r#"{"frames": 5}"#));
        assert_eq!(checksum(&s), c20);
        let (_, t) = game.get("/api/timeline");
        let last: Vec<_> = t["records"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .take(5)
            .collect();
        assert_eq!(last.iter().filter(|r| r["resim"] == true).count(), 5, "{t}");
        match &seen {
            None => seen = Some((c12, c20)),
            Some(first) => assert_eq!(first, &(c12, c20), "{workers} workers"),
        }
    }
}

/// A system that keeps game state in its own fields (not in the snapshot) re-simulates
/// differently: the inspector says so at the first frame that differs, and drops the
/// recorded states after it (they belong to another history).
#[test]
fn a_divergent_re_simulation_is_caught_at_its_first_frame() {
    let game = Game::start_with(2, paused(16), |rt| {
        let mut calls = 0u32;
        rt.add_system_named(
            "hidden",
            move |w: &runsync::World, out: &mut runsync::Output| {
                calls += 1;
                if let Some((e, _)) = w.query::<(&common::Vel,)>().next() {
                    out.write::<common::Pos>(e, calls as f32);
                }
            },
        );
    });
    game.ok("/api/step", Some(r#"{"frames": 10}"#));
    game.ok("/api/rewind", Some(r#"{"frame": 5}"#));
    let s = game.ok("/api/step", Some(r#"{"frames": 3}"#));
    // Rewound to 5 frames completed: frame 6 is the first re-simulated, and differs.
    assert_eq!(s["resim"]["differed_at"], 6, "{s}");
    assert_eq!(
        s["resim"]["checked"], 1,
        "nothing left to compare after it: {s}"
    );
    assert_eq!(
        s["ring"]["newest"], 7,
        "the first run's states 6..=10 are dropped: {s}"
    );
    let (_, t) = game.get("/api/timeline");
    let records = t["records"].as_array().unwrap();
    let r6 = records.iter().rev().find(|r| r["frame"] == 6).unwrap();
    assert_eq!(r6["resim"], false, "{r6}");
}

#[test]
fn rewinding_outside_the_ring_is_refused_and_changes_nothing() {
    let game = Game::start(2, paused(8));
    let s = game.ok("/api/step", Some(r#"{"frames": 20}"#));
    let c = checksum(&s);
    for body in [r#"{"frame": 3}"#, r#"{"back": 100}"#, r#"{"frame": 21}"#] {
        let (code, v) = game.post("/api/rewind", Some(body));
        assert_eq!(code, 404, "{body}: {v}");
        assert!(v["error"].as_str().unwrap().contains("frame"), "{v}");
    }
    let (code, v) = game.post("/api/rewind", Some(r#"{"frame": 3}"#));
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("holds frames 12 to 19"),
        "{code} {v}"
    );
    let s = game.status();
    assert_eq!((frame(&s), checksum(&s)), (20, c));

    let off = Game::start(1, paused(0));
    off.ok("/api/step", Some(r#"{"frames": 2}"#));
    let (code, v) = off.post("/api/rewind", Some(r#"{"back": 1}"#));
    assert_eq!(code, 409, "{v}");
    assert!(v["error"].as_str().unwrap().contains(".ring(N)"), "{v}");
}

#[test]
fn entities_listed_filtered_and_shown() {
    let game = Game::start(2, paused(4));
    let s = game.status();
    let names: Vec<&str> = s["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["short"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Pos", "Vel", "Hp"]);

    let (code, all) = game.get("/api/entities?limit=1000");
    assert_eq!(code, 200, "{all}");
    assert_eq!(all["total"], 80);
    let (_, hp) = game.get("/api/entities?with=Hp&limit=7&offset=2");
    assert_eq!(hp["total"], 60);
    let listed = hp["entities"].as_array().unwrap();
    assert_eq!(listed.len(), 7);
    assert!(
        listed
            .iter()
            .all(|e| e["components"] == serde_json::json!([0, 1, 2]))
    );
    // Full names filter too; several names must all match.
    let (_, by_full) = game.get("/api/entities?with=api::common::Pos,Vel");
    assert_eq!(by_full["total"], 60, "{by_full}");
    let (_, pos) = game.get("/api/entities?with=Pos");
    assert_eq!(pos["total"], 80);

    let id = listed[0]["id"].as_str().unwrap();
    let (code, e) = game.get(&format!("/api/entities/{id}"));
    assert_eq!(code, 200, "{e}");
    let comps = e["components"].as_array().unwrap();
    assert_eq!(comps.len(), 3);
    assert_eq!(comps[0]["short"], "Pos");
    assert!(
        comps[0]["value"].as_str().unwrap().starts_with("Pos("),
        "{e}"
    );
    assert!(
        comps[2]["value"].as_str().unwrap().starts_with("Hp("),
        "{e}"
    );
    assert_eq!(e["watched"], false);

    let (code, v) = game.get("/api/entities?with=Nope");
    assert_eq!(code, 400);
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("registered: Pos, Vel, Hp"),
        "{v}"
    );
    assert_eq!(game.get("/api/entities?limit=5000").0, 400);
    assert_eq!(game.get("/api/entities?offset=-1").0, 400);
    assert_eq!(game.get("/api/entities/9999v1").0, 404);
    assert_eq!(game.get("/api/entities/banana").0, 400);
    assert_eq!(game.get("/api/entities/3v0").0, 400);
}

#[test]
fn provenance_of_the_last_frame_by_explain_and_by_watch() {
    let game = Game::start(2, paused(4));
    game.ok("/api/step", Some(r#"{"frames": 3}"#));
    let (_, list) = game.get("/api/entities?with=Hp&limit=1");
    let id = list["entities"][0]["id"].as_str().unwrap().to_owned();
    let before = checksum(&game.status());

    let v = game.ok(&format!("/api/entities/{id}/explain"), None);
    assert_eq!(v["frame"], 3, "the last frame: {v}");
    assert_eq!(v["resim"], true, "the re-run reproduced the frame: {v}");
    let p = &v["provenance"];
    assert_eq!(p["entity"], id.as_str());
    assert_eq!(p["frame"], 3);
    let pos = p["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["short"] == "Pos")
        .expect("Pos was written");
    let writers: Vec<&str> = pos["writes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["system_name"].as_str().unwrap())
        .collect();
    assert_eq!(writers, ["move", "wind"], "merge order: registration order");
    assert_eq!(pos["writes"][1]["value"], "0.5");
    assert!(pos["before"].as_str().unwrap().starts_with("Pos("));
    assert!(
        p["text"]
            .as_str()
            .unwrap()
            .contains("wind (system 1) #0: 0.5"),
        "{p}"
    );
    let s = game.status();
    assert_eq!(
        (frame(&s), checksum(&s)),
        (3, before),
        "explain leaves the world as it was"
    );
    assert!(s["watched"].as_array().unwrap().is_empty());

    let s = game.ok(&format!("/api/entities/{id}/watch"), None);
    assert_eq!(s["watched"], serde_json::json!([id]));
    game.ok("/api/step", None);
    let (_, e) = game.get(&format!("/api/entities/{id}"));
    assert_eq!(e["watched"], true);
    assert_eq!(e["provenance"]["frame"], 4, "the frame just run: {e}");
    game.ok(&format!("/api/entities/{id}/unwatch"), None);
    assert_eq!(
        game.post(&format!("/api/entities/{id}/unwatch"), None).0,
        404
    );
    assert_eq!(game.post("/api/entities/9999v1/watch", None).0, 404);

    let off = Game::start(1, paused(0));
    off.ok("/api/step", None);
    let (code, v) = off.post(&format!("/api/entities/{id}/explain"), None);
    assert_eq!(code, 409, "{v}");
}

/// `explain` of an entity dead now and at the start of the last frame answers `404`, as
/// `watch` does, and leaves the world as it was; one that died in the last frame is
/// explained (its despawn, and who sent it).
#[test]
fn explain_of_a_dead_entity_is_404_like_watch() {
    let game = Game::start(1, paused(4));
    // Entity 0v1 starts with Hp 5: `decay` takes one a frame and despawns it in frame 5.
    game.ok("/api/step", Some(r#"{"frames": 5}"#));
    assert_eq!(game.get("/api/entities/0v1").0, 404, "0v1 died in frame 5");
    let v = game.ok("/api/entities/0v1/explain", None);
    assert_eq!(v["frame"], 5, "{v}");
    let commands = v["provenance"]["commands"].as_array().unwrap();
    assert!(
        commands
            .iter()
            .any(|c| c["kind"] == "despawn" && c["system_name"] == "decay"),
        "the despawn that killed it: {v}"
    );

    game.ok("/api/step", None);
    let before = game.status();
    for id in ["0v1", "9999v1", "1v2"] {
        for action in ["watch", "explain"] {
            let (code, v) = game.post(&format!("/api/entities/{id}/{action}"), None);
            assert_eq!(code, 404, "{action} {id}: {v}");
            assert!(
                v["error"].as_str().unwrap().contains("is not alive"),
                "{action} {id}: {v}"
            );
        }
    }
    let after = game.status();
    assert_eq!(
        (frame(&after), checksum(&after), &after["watched"]),
        (frame(&before), checksum(&before), &before["watched"]),
        "a 404 changes nothing"
    );
    // The present is still the one the ring goes on from: a step re-runs no differently.
    let s = game.ok("/api/step", None);
    assert_eq!(frame(&s), 7);
}

#[test]
fn bad_requests_get_4xx_and_change_nothing() {
    let game = Game::start(2, paused(4));
    game.ok("/api/step", Some(r#"{"frames": 2}"#));
    let before = game.status();
    let host = game.addr;
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("bad JSON", post_raw(host, "/api/step", "{frames: 2", ""), 400),
        ("wrong JSON type", post_raw(host, "/api/step", r#"{"frames": "many"}"#, ""), 400),
        ("unknown field", post_raw(host, "/api/rewind", r#"{"frame": 1, "x": 2}"#, ""), 400),
        ("both rewind targets", post_raw(host, "/api/rewind", r#"{"frame": 1, "back": 1}"#, ""), 400),
        ("zero frames", post_raw(host, "/api/step", r#"{"frames": 0}"#, ""), 400),
        ("too many frames", post_raw(host, "/api/step", r#"{"frames": 100000}"#, ""), 400),
        ("a body where none goes", post_raw(host, "/api/pause", "[1,2,3]", ""), 400),
        ("unknown path", get_raw(host, "/api/nope", ""), 404),
        ("unknown path outside the API", get_raw(host, "/etc/passwd", ""), 404),
        ("wrong method", get_raw(host, "/api/pause", ""), 405),
        ("wrong method on an entity", post_raw(host, "/api/entities/1v1", "", ""), 405),
        ("unknown query parameter", get_raw(host, "/api/status?x=1", ""), 400),
        ("bad percent-encoding", get_raw(host, "/api/entities?with=%G0", ""), 400),
        ("garbage", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n".to_vec(), 400),
        (
            "huge body",
            format!(
                "POST /api/step HTTP/1.1\r\nHost: {host}\r\nContent-Length: 104857600\r\n\r\n{}",
                "x".repeat(4096)
            )
            .into_bytes(),
            413,
        ),
        (
            "chunked body",
            format!("POST /api/step HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
                .into_bytes(),
            411,
        ),
        (
            "a head larger than 8 KiB",
            format!("GET /api/status HTTP/1.1\r\nHost: {host}\r\nX-Big: {}\r\n\r\n", "a".repeat(9000))
                .into_bytes(),
            431,
        ),
        (
            "cross-origin",
            post_raw(host, "/api/pause", "", "Origin: http://evil.example\r\n"),
            403,
        ),
        (
            "a DNS-rebinding host",
            b"GET /api/status HTTP/1.1\r\nHost: evil.example:80\r\n\r\n".to_vec(),
            403,
        ),
    ];
    for (what, raw, want) in cases {
        let (code, body) = raw_request(host, &raw);
        assert_eq!(code, want, "{what}: {body}");
        let v: Value =
            serde_json::from_str(&body).unwrap_or_else(|_| panic!("{what}: JSON error: {body}"));
        assert!(
            v["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{what}: {v}"
        );
    }
    // The same origin is fine.
    let (code, _) = raw_request(
        host,
        &post_raw(
            host,
            "/api/pause",
            "",
            &format!("Origin: http://{host}\r\n"),
        ),
    );
    assert_eq!(code, 200);
    let after = game.status();
    assert_eq!(
        (frame(&after), checksum(&after)),
        (frame(&before), checksum(&before))
    );
}

fn post_raw(host: std::net::SocketAddr, path: &str, body: &str, extra: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn get_raw(host: std::net::SocketAddr, path: &str, extra: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n").into_bytes()
}

#[test]
fn the_page_is_served_and_self_contained() {
    let game = Game::start(1, Inspector::builder());
    let (code, body) = raw_request(game.addr, &get_raw(game.addr, "/", ""));
    assert_eq!(code, 200);
    assert!(body.contains("<title>runsync inspector</title>"), "{body}");
    assert!(
        !body.contains("src=\"http") && !body.contains("href=\"http"),
        "no external resources"
    );
}

/// A read-only inspector (a networked game's) serves the views but never pauses, steps,
/// resumes or rewinds the game, and says so.
#[test]
fn a_read_only_inspector_shows_the_game_and_refuses_to_steer_it() {
    let game = Game::start(1, Inspector::builder().ring(8).read_only());
    while game.frames() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let status = game.status();
    assert_eq!(status["read_only"], true, "{status}");
    assert_eq!(status["paused"], false, "{status}");
    for (path, body) in [
        ("/api/pause", None),
        ("/api/resume", None),
        ("/api/step", None),
        ("/api/rewind", Some(r#"{"frame": 5}"#)),
    ] {
        let (code, v) = game.post(path, body);
        assert_eq!(code, 403, "POST {path}: {v}");
        assert!(
            v.to_string()
                .contains("cannot pause, step, resume or rewind"),
            "{v}"
        );
    }
    // Still running, and its views answer.
    let before = game.frames();
    while game.frames() < before + 10 {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let (code, v) = game.get("/api/timeline");
    assert_eq!(code, 200, "{v}");
    let (code, v) = game.get("/api/entities");
    assert_eq!(code, 200, "{v}");
}
