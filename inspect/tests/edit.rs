//! Editing the world from the API while paused: an edit is an input of the next frame, so
//! a replay recorded across it and a rewind re-simulated over it reproduce it bit for bit;
//! a bad edit is a `400` naming the type and changes nothing; an edit while running, or
//! from whom may not steer the game, is refused.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use common::request;
use runsync::Replay;
use runsync::prelude::*;
use runsync_inspect::{Inspector, InspectorBuilder, Poll};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(output = f32, merge = merge::sum, save, snapshot, checksum, debug)]
struct Pos(f32, f32);
impl std::ops::AddAssign<f32> for Pos {
    fn add_assign(&mut self, d: f32) {
        self.0 += d;
    }
}

#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(output = i32, merge = merge::sum, save, snapshot, checksum, debug)]
struct Hp {
    hp: i32,
}
impl std::ops::AddAssign<i32> for Hp {
    fn add_assign(&mut self, d: i32) {
        self.hp += d;
    }
}

/// Registered and saved, but not made editable.
#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[component(merge = merge::last, save, snapshot, checksum, debug)]
struct Tag(u8);

/// Ten entities moving right by their hit points / 10, losing one hit point a frame.
fn runtime() -> Runtime {
    let mut world = World::new();
    world.register_default::<Pos>();
    world.register_default::<Hp>();
    world.register_default::<Tag>();
    for i in 0..10 {
        world.spawn((Pos(i as f32, 0.0), Hp { hp: 50 + i }, Tag(i as u8)));
    }
    let mut rt = Runtime::builder().workers(2).build(world);
    rt.add_system_named("walk", |w: &World, out: &mut Output| {
        for (e, (_, hp)) in w.query::<(&Pos, &Hp)>() {
            out.write::<Pos>(e, hp.hp as f32 / 10.0);
        }
    });
    rt.add_system_named("decay", |w: &World, out: &mut Output| {
        for (e, (_,)) in w.query::<(&Hp,)>() {
            out.write::<Hp>(e, -1);
        }
    });
    rt
}

fn editable() -> InspectorBuilder {
    Inspector::builder()
        .ring(16)
        .paused(true)
        .editable::<Pos>()
        .editable::<Hp>()
}

/// What the game thread hands back when stopped: its replay and world.
struct Ended {
    replay: Vec<u8>,
    checksum: u64,
    save: Vec<u8>,
}

/// [`runtime`] on its own thread, recording a replay from its first frame.
struct Game {
    addr: SocketAddr,
    token: Option<String>,
    stop: Arc<AtomicBool>,
    ended: mpsc::Receiver<Ended>,
    thread: Option<JoinHandle<()>>,
}

impl Game {
    fn start(bind: &'static str, builder: InspectorBuilder) -> Game {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let (ended_tx, ended) = mpsc::channel();
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut rt = runtime();
                rt.record_replay_keyframes::<()>(1).unwrap();
                let mut inspector = builder.bind(bind).expect("binds");
                tx.send((inspector.addr(), inspector.token().map(str::to_owned)))
                    .unwrap();
                // `poll`, not `frame`: stopped while paused, it runs no frame more.
                while !stop.load(Ordering::SeqCst) {
                    if let Poll::Ran(result) = inspector.poll(&mut rt) {
                        result.expect("frames succeed");
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                let mut replay = Vec::new();
                rt.finish_replay(&mut replay).unwrap();
                let mut save = Vec::new();
                rt.world().save(&mut save).unwrap();
                let checksum = rt.world().checksum();
                let _ = ended_tx.send(Ended {
                    replay,
                    checksum,
                    save,
                });
            })
        };
        let (mut addr, token) = rx.recv().unwrap();
        if addr.ip().is_unspecified() {
            addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        Game {
            addr,
            token,
            stop,
            ended,
            thread: Some(thread),
        }
    }

    fn auth(&self) -> String {
        self.token
            .as_ref()
            .map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"))
    }

    fn get(&self, path: &str) -> (u16, Value) {
        request(self.addr, "GET", path, None, &self.auth())
    }

    fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let body = (!body.is_null()).then(|| body.to_string());
        request(self.addr, "POST", path, body.as_deref(), &self.auth())
    }

    fn ok(&self, path: &str, body: Value) -> Value {
        let (code, v) = self.post(path, body);
        assert_eq!(code, 200, "POST {path}: {v}");
        v
    }

    fn status(&self) -> Value {
        let (code, v) = self.get("/api/status");
        assert_eq!(code, 200, "{v}");
        v
    }

    fn entity(&self, id: &str) -> Value {
        let (code, v) = self.get(&format!("/api/entities/{id}"));
        assert_eq!(code, 200, "{v}");
        v
    }

    /// Stops the loop and takes what it hands back.
    fn end(mut self) -> Ended {
        self.stop.store(true, Ordering::SeqCst);
        let ended = self.ended.recv().expect("the game thread ends");
        self.thread.take().unwrap().join().unwrap();
        ended
    }
}

impl Drop for Game {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.stop.store(true, Ordering::SeqCst);
            let _ = t.join();
        }
    }
}

/// The JSON value of component `short` in an entity view.
fn value(entity: &Value, short: &str) -> Value {
    entity["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["short"] == short)
        .map_or(Value::Null, |c| c["json"].clone())
}

fn checksum(status: &Value) -> String {
    status["checksum"]
        .as_str()
        .expect("paused: a checksum")
        .to_owned()
}

#[test]
fn edits_are_inputs_of_the_next_frame_and_a_replay_reproduces_them() {
    let game = Game::start("127.0.0.1:0", editable());
    game.ok("/api/step", json!({"frames": 3}));
    let before = game.status();
    assert_eq!(
        before["edits"]["types"],
        json!([std::any::type_name::<Pos>(), std::any::type_name::<Hp>()])
    );
    assert_eq!(value(&game.entity("0v1"), "Hp"), json!({"hp": 47}));

    // Set two components of one entity (BRP's insert: set or add).
    let e = game.ok(
        "/api/entities/0v1/insert",
        json!({"components": {"Hp": {"hp": 1000}, "Pos": [100.0, 7.5]}}),
    );
    assert_eq!(value(&e, "Hp"), json!({"hp": 1000}), "{e}");
    assert_eq!(value(&e, "Pos"), json!([100.0, 7.5]), "{e}");
    let tag = e["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["short"] == "Tag");
    assert_eq!(tag.unwrap()["editable"], false, "{e}");
    // Remove one, spawn one, despawn one.
    let e = game.ok("/api/entities/1v1/remove", json!({"components": ["Hp"]}));
    assert_eq!(value(&e, "Hp"), Value::Null, "{e}");
    let still = value(&e, "Pos");
    let spawned = game.ok(
        "/api/spawn",
        json!({"components": {"Pos": [-3.0, 1.0], "Hp": {"hp": 20}}}),
    );
    let spawned_id = spawned["id"].as_str().unwrap().to_owned();
    assert_eq!(value(&spawned, "Hp"), json!({"hp": 20}));
    let s = game.ok("/api/entities/2v1/despawn", Value::Null);
    assert_eq!(s["entities"], 10, "one spawned, one despawned: {s}");
    assert_eq!(s["edits"]["next"], 4, "{s}");
    assert_eq!(s["frame"], 3, "no frame ran: {s}");
    assert_ne!(
        checksum(&s),
        checksum(&before),
        "the world shows the edits at once"
    );

    game.ok("/api/step", json!({"frames": 2}));
    let after = game.status();
    assert_eq!(after["edits"]["next"], 0);
    assert_eq!(value(&game.entity("0v1"), "Hp"), json!({"hp": 998}));
    assert_eq!(
        value(&game.entity("1v1"), "Pos"),
        still,
        "without `Hp` it no longer walks"
    );
    assert_eq!(
        value(&game.entity(&spawned_id), "Hp"),
        json!({"hp": 18}),
        "the spawned entity took part in both frames"
    );
    let (code, _) = game.get("/api/entities/2v1");
    assert_eq!(code, 404, "despawned");
    let live = checksum(&after);

    let ended = game.end();
    assert_eq!(format!("{:#018x}", ended.checksum), live);
    let replay = Replay::read(&mut ended.replay.as_slice()).unwrap();
    assert_eq!(replay.len(), 5);
    assert_eq!(replay.edits(3).len(), 4, "the edits are frame 4's");
    assert!(
        (0..5)
            .filter(|&i| i != 3)
            .all(|i| replay.edits(i).is_empty())
    );
    let mut again = runtime();
    let report = again.play_replay::<()>(&replay).unwrap();
    assert!(report.is_identical(), "{:?}", report.divergence);
    assert_eq!(again.world().checksum(), ended.checksum, "bit for bit");
    let mut save = Vec::new();
    again.world().save(&mut save).unwrap();
    assert_eq!(save, ended.save, "the same world, byte for byte");
    // Without its edits, the same replay diverges at the edited frame: they matter.
    let mut stripped = Vec::new();
    let mut plain = Replay::new::<()>(replay.start_save().to_vec());
    for i in 0..replay.len() {
        plain
            .push_frame::<()>(None, replay.checksum(i).unwrap())
            .unwrap();
    }
    plain.write(&mut stripped).unwrap();
    let plain = Replay::read(&mut stripped.as_slice()).unwrap();
    let report = runtime().play_replay::<()>(&plain).unwrap();
    assert_eq!(report.divergence.map(|d| d.frame), Some(4));
}

#[test]
fn a_rewind_re_simulates_the_edits_and_an_edit_in_the_past_starts_another_history() {
    let game = Game::start("127.0.0.1:0", editable());
    game.ok("/api/step", json!({"frames": 3}));
    game.ok(
        "/api/entities/4v1/insert",
        json!({"components": {"Hp": {"hp": 500}}}),
    );
    let spawned = game.ok("/api/spawn", json!({"components": {"Hp": {"hp": 9}}}));
    game.ok("/api/step", json!({"frames": 3}));
    let first = game.status();
    assert_eq!(value(&game.entity("4v1"), "Hp"), json!({"hp": 497}));

    // Back to before the edits: the ring's state 3 is the one frame 3 left.
    let s = game.ok("/api/rewind", json!({"frame": 3}));
    assert_eq!(s["edits"]["next"], 0, "{s}");
    assert_eq!(value(&game.entity("4v1"), "Hp"), json!({"hp": 51}));
    let s = game.ok("/api/rewind", json!({"frame": 1}));
    assert_eq!(s["frame"], 1);
    let s = game.ok("/api/step", json!({"frames": 5}));
    assert_eq!(
        s["resim"],
        json!({"checked": 5, "differed_at": null}),
        "{s}"
    );
    assert_eq!(checksum(&s), checksum(&first), "re-simulated bit for bit");
    assert_eq!(value(&game.entity("4v1"), "Hp"), json!({"hp": 497}));
    let id = spawned["id"].as_str().unwrap();
    assert_eq!(
        value(&game.entity(id), "Hp"),
        json!({"hp": 6}),
        "re-spawned, same id"
    );

    // `explain` compares a re-run with the present: not while it has edits.
    game.ok(
        "/api/entities/4v1/insert",
        json!({"components": {"Hp": {"hp": 1}}}),
    );
    let (code, v) = game.post("/api/entities/4v1/explain", Value::Null);
    assert_eq!(code, 409, "{v}");

    // An edit in the past replaces what followed: frames 4.. are not checked against
    // the history that had other edits.
    game.ok("/api/rewind", json!({"frame": 3}));
    game.ok(
        "/api/entities/4v1/insert",
        json!({"components": {"Hp": {"hp": 70}}}),
    );
    let s = game.ok("/api/step", json!({"frames": 3}));
    assert_eq!(
        s["resim"],
        json!({"checked": 0, "differed_at": null}),
        "{s}"
    );
    assert_eq!(value(&game.entity("4v1"), "Hp"), json!({"hp": 67}));
    let (code, _) = game.get(&format!("/api/entities/{id}"));
    assert_eq!(code, 404, "that history's spawn is not made again");
    // And this history re-simulates too.
    let here = checksum(&game.status());
    game.ok("/api/rewind", json!({"frame": 2}));
    let s = game.ok("/api/step", json!({"frames": 4}));
    assert_eq!(
        s["resim"],
        json!({"checked": 4, "differed_at": null}),
        "{s}"
    );
    assert_eq!(checksum(&s), here);
}

#[test]
fn a_bad_edit_is_a_400_naming_the_type_and_changes_nothing() {
    let game = Game::start("127.0.0.1:0", editable());
    game.ok("/api/step", Value::Null);
    game.ok("/api/entities/1v1/remove", json!({"components": ["Hp"]}));
    let before = game.status();
    let entity = game.entity("0v1");
    let hp = std::any::type_name::<Hp>();
    let pos = std::any::type_name::<Pos>();
    for (path, body, names) in [
        // A value that is not the type, alone and after a good one.
        (
            "/api/entities/0v1/insert",
            json!({"components": {"Hp": {"hp": "lots"}}}),
            vec![hp, "invalid type"],
        ),
        (
            "/api/entities/0v1/insert",
            json!({"components": {"Pos": [1.0, 2.0], "Hp": {"mana": 3}}}),
            vec![hp, "missing field `hp`"],
        ),
        (
            "/api/entities/0v1/insert",
            json!({"components": {"Pos": [1.0], "Hp": {"hp": 3}}}),
            vec![pos],
        ),
        (
            "/api/spawn",
            json!({"components": {"Hp": {"hp": 1}, "Pos": "here"}}),
            vec![pos],
        ),
        // Types that are not editable.
        (
            "/api/entities/0v1/insert",
            json!({"components": {"Tag": 3}}),
            vec!["`Tag` is not an editable type", "Pos, Hp"],
        ),
        (
            "/api/entities/0v1/remove",
            json!({"components": ["Mana"]}),
            vec!["Mana"],
        ),
        // What the world refuses, before any change: a component the entity lacks, a
        // type named twice.
        (
            "/api/entities/1v1/remove",
            json!({"components": ["Hp"]}),
            vec!["has no", hp],
        ),
        (
            "/api/entities/0v1/remove",
            json!({"components": ["Pos", "Hp", "Hp"]}),
            vec!["named twice"],
        ),
    ] {
        let (code, v) = game.post(path, body.clone());
        assert_eq!(code, 400, "{path} {body}: {v}");
        let error = v["error"].as_str().unwrap();
        for name in names {
            assert!(error.contains(name), "{body}: {error:?} names {name:?}");
        }
    }
    // Requests malformed before the game sees them, and dead entities.
    for (path, body, want) in [
        ("/api/entities/0v1/insert", "{\"components\": ", 400),
        ("/api/entities/0v1/insert", r#"{"components": {}}"#, 400),
        ("/api/entities/0v1/insert", r#"{"values": {"Hp": 1}}"#, 400),
        ("/api/entities/0v1/remove", r#"{"components": "Hp"}"#, 400),
        ("/api/entities/0v1/despawn", r#"{"now": true}"#, 400),
        ("/api/entities/x/despawn", "", 400),
        (
            "/api/entities/77v1/insert",
            r#"{"components": {"Hp": {"hp": 1}}}"#,
            404,
        ),
        ("/api/entities/77v1/despawn", "", 404),
    ] {
        let (code, v) = request(game.addr, "POST", path, Some(body), "");
        assert_eq!(code, want, "{path} {body}: {v}");
    }
    let (code, _) = request(game.addr, "GET", "/api/entities/0v1/insert", None, "");
    assert_eq!(code, 405);

    let after = game.status();
    assert_eq!(checksum(&after), checksum(&before), "nothing changed");
    assert_eq!(
        after["edits"]["next"], 1,
        "only the first remove is an edit"
    );
    assert_eq!(after["entities"], before["entities"]);
    assert_eq!(game.entity("0v1")["components"], entity["components"]);
}

/// The page offers the edit in its entity view: a value as JSON, sent to `insert`, only
/// while paused and allowed to steer.
#[test]
fn the_page_edits_values_in_the_entity_view() {
    let game = Game::start("127.0.0.1:0", editable());
    let (code, page) = common::raw_request(
        game.addr,
        format!("GET / HTTP/1.1\r\nHost: {}\r\n\r\n", game.addr).as_bytes(),
    );
    assert_eq!(code, 200);
    for part in [
        "/api/entities/${id}/insert",
        "/api/entities/${id}/remove",
        "/api/entities/${id}/despawn",
        "s.paused && !s.stepping && !s.read_only",
        "JSON.stringify(c.json)",
    ] {
        assert!(page.contains(part), "the page lacks {part:?}");
    }
}

#[test]
fn an_edit_while_running_is_refused() {
    let game = Game::start("127.0.0.1:0", editable().paused(false));
    let (code, v) = game.post(
        "/api/entities/0v1/insert",
        json!({"components": {"Hp": {"hp": 1}}}),
    );
    assert_eq!(code, 409, "{v}");
    assert!(v["error"].as_str().unwrap().contains("/api/pause"), "{v}");
    game.ok("/api/pause", Value::Null);
    let (code, v) = game.post(
        "/api/entities/0v1/insert",
        json!({"components": {"Hp": {"hp": 1}}}),
    );
    assert_eq!(code, 200, "{v}");
}

#[test]
fn without_a_ring_edits_still_make_the_next_frame() {
    let game = Game::start(
        "127.0.0.1:0",
        Inspector::builder().paused(true).editable::<Hp>(),
    );
    game.ok(
        "/api/entities/5v1/insert",
        json!({"components": {"Hp": {"hp": 300}}}),
    );
    assert_eq!(game.status()["edits"]["next"], 1);
    let s = game.ok("/api/step", Value::Null);
    assert_eq!(s["edits"]["next"], 0, "{s}");
    assert_eq!(value(&game.entity("5v1"), "Hp"), json!({"hp": 299}));
    let ended = game.end();
    let replay = Replay::read(&mut ended.replay.as_slice()).unwrap();
    assert_eq!(replay.edits(0).len(), 1);
    assert!(runtime().play_replay::<()>(&replay).unwrap().is_identical());
}

#[test]
fn only_who_may_pause_may_edit() {
    let game = Game::start("0.0.0.0:0", editable());
    let host = format!("Host: {}\r\n", game.addr);
    let edit = r#"{"components": {"Hp": {"hp": 1}}}"#;
    let raw = |headers: &str| {
        format!(
            "POST /api/entities/0v1/insert HTTP/1.1\r\n{headers}Content-Length: {}\r\n\r\n{edit}",
            edit.len()
        )
    };
    let token = game.token.clone().expect("a non-loopback bind has a token");
    let bearer = format!("Authorization: Bearer {token}\r\n");
    let before = checksum(&game.status());
    for (what, headers, want) in [
        ("no token", host.clone(), 401),
        (
            "a wrong token",
            format!("{host}Authorization: Bearer {}\r\n", "0".repeat(64)),
            401,
        ),
        (
            "a foreign Host",
            format!("Host: evil.example\r\n{bearer}"),
            403,
        ),
        (
            "cross-origin",
            format!("{host}{bearer}Origin: http://evil.example\r\n"),
            403,
        ),
    ] {
        let (code, body) = common::raw_request(game.addr, raw(&headers).as_bytes());
        assert_eq!(code, want, "{what}: {body}");
    }
    assert_eq!(
        checksum(&game.status()),
        before,
        "refused edits change nothing"
    );
    let (code, body) = common::raw_request(game.addr, raw(&format!("{host}{bearer}")).as_bytes());
    assert_eq!(code, 200, "with the token: {body}");

    let watcher = Game::start("127.0.0.1:0", editable().read_only());
    let (code, v) = watcher.post(
        "/api/entities/0v1/insert",
        json!({"components": {"Hp": {"hp": 1}}}),
    );
    assert_eq!(code, 403, "read-only: {v}");
}
