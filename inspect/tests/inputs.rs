//! Frames re-simulated after a rewind read the input their first run read: a game whose
//! input differs every frame, rewound and stepped, reproduces its checksums; past the
//! recorded end, the input comes from the game (its callback) or from the API.

mod common;

use common::{Game, Hp, Pos};
use runsync::prelude::*;
use runsync_inspect::{Inspector, InspectorBuilder};
use serde_json::{Value, json};

/// The game's input: a steering value, summed into every mover's position.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Pad(i32);

/// The game's live input at its loop iteration `n`: different every frame, and different
/// again when the same frame runs at a later iteration (after a rewind).
fn live(n: u64) -> Pad {
    Pad(((n * 7919 + 3) % 23) as i32 - 11)
}

/// Adds `steer`: every mover moves by its frame's input (none: no move).
fn steer(rt: &mut Runtime) {
    rt.add_system_named("steer", |w: &World, out: &mut Output| {
        if let Some(pad) = w.get_input::<Pad>() {
            for (e, (_, ())) in w.query::<(&Pos, With<Hp>)>() {
                out.write::<Pos>(e, pad.0 as f32 * 0.125);
            }
        }
    });
}

fn paused(ring: usize) -> InspectorBuilder {
    Inspector::builder().ring(ring).paused(true)
}

fn checksum(v: &Value) -> String {
    v["checksum"]
        .as_str()
        .expect("paused: a checksum")
        .to_owned()
}

/// The input sources of the last `n` timeline records, oldest first.
fn sources(game: &Game, n: usize) -> Vec<String> {
    let (_, t) = game.get("/api/timeline");
    let records = t["records"].as_array().unwrap();
    records[records.len() - n..]
        .iter()
        .map(|r| r["input"].as_str().unwrap().to_owned())
        .collect()
}

/// Steps `frames` frames one by one; the checksum after each.
fn step_each(game: &Game, frames: usize) -> Vec<String> {
    (0..frames)
        .map(|_| checksum(&game.ok("/api/step", None)))
        .collect()
}

#[test]
fn a_rewound_game_with_an_input_every_frame_re_simulates_its_checksums() {
    let game = Game::start_looping("127.0.0.1:0", 2, paused(32), steer, |inspector, rt, n| {
        inspector.frame_with(rt, || live(n))
    });
    let first = step_each(&game, 12); // first[k - 1]: after frame k
    assert_eq!(sources(&game, 12), vec!["game"; 12]);

    let s = game.ok("/api/rewind", Some(r#"{"frame": 3}"#));
    assert_eq!(checksum(&s), first[2]);
    assert_eq!(s["input"]["type"], std::any::type_name::<Pad>());
    assert_eq!(s["input"]["replay_next"], true, "{s}");
    let mut recorded = vec![s["input"]["next"].clone()];
    // Frames 4..=12 again, one step at a time: each reads its recorded input, whatever
    // the game's callback would give now, and reaches the checksum of its first run.
    for k in 4..=12 {
        let s = game.ok("/api/step", None);
        assert_eq!(s["frame"], k);
        assert_eq!(checksum(&s), first[k as usize - 1], "frame {k}");
        recorded.push(s["input"]["next"].clone());
    }
    recorded.pop(); // after frame 12: nothing recorded yet for frame 13
    assert!(
        recorded.windows(2).all(|w| w[0] != w[1]),
        "the input differs every frame: {recorded:?}"
    );
    let s = game.status();
    assert_eq!(s["resim"]["checked"], 9, "{s}");
    assert!(s["resim"]["differed_at"].is_null(), "{s}");
    assert_eq!(sources(&game, 9), vec!["recorded"; 9]);
    assert_eq!(
        s["input"]["replay_next"], false,
        "past the recorded end: {s}"
    );
    assert!(s["input"]["next"].is_null());

    // Past the recorded end: the game's input, then the API's.
    let c13 = checksum(&game.ok("/api/step", None));
    let s = game.ok("/api/step", Some(r#"{"frames": 2, "input": 40}"#));
    assert_eq!(s["frame"], 15);
    let c15 = checksum(&s);
    assert_eq!(sources(&game, 3), ["game", "api", "api"]);
    // Those are recorded too: rewound again, the same frames come back, even with
    // another input in the request.
    let s = game.ok("/api/rewind", Some(r#"{"frame": 12}"#));
    assert_eq!(s["input"]["replay_next"], true, "{s}");
    assert_eq!(step_each(&game, 1), [c13]);
    assert_eq!(game.status()["input"]["next"], json!(40));
    let s = game.ok("/api/step", Some(r#"{"frames": 2, "input": -3}"#));
    assert_eq!(checksum(&s), c15, "frames 14 and 15 read their recorded 40");
    assert_eq!(sources(&game, 3), vec!["recorded"; 3]);
    assert!(game.status()["resim"]["differed_at"].is_null());

    // `explain` re-runs the last frame with its recorded input: identical.
    let (_, list) = game.get("/api/entities?with=Hp&limit=1");
    let id = list["entities"][0]["id"].as_str().unwrap().to_owned();
    let v = game.ok(&format!("/api/entities/{id}/explain"), None);
    assert_eq!(v["resim"], true, "{v}");
    let writers: Vec<&str> = v["provenance"]["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["short"] == "Pos")
        .expect("Pos was written")["writes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["system_name"].as_str().unwrap())
        .collect();
    assert!(writers.contains(&"steer"), "{writers:?}");
    assert_eq!(checksum(&game.status()), c15);
}

/// A game that sets its input itself (`World::set_input`) and runs `Inspector::frame`:
/// with the input type named on the builder, the inspector records and replays it; without,
/// the re-simulation reads the game's live input from the second re-run frame on, and the
/// inspector reports the first frame that differed (what every rewind did before inputs
/// were recorded).
#[test]
fn a_game_that_sets_its_own_input_is_replayed_once_the_type_is_named() {
    for named in [true, false] {
        let builder = if named {
            paused(16).input::<Pad>()
        } else {
            paused(16)
        };
        let game = Game::start_looping("127.0.0.1:0", 2, builder, steer, |inspector, rt, n| {
            rt.world_mut().set_input(live(n));
            inspector.frame(rt)
        });
        let first = step_each(&game, 8);
        game.ok("/api/rewind", Some(r#"{"frame": 2}"#));
        let again = step_each(&game, 6);
        let s = game.status();
        if named {
            assert_eq!(again, first[2..], "frames 3..=8 re-simulated");
            assert!(s["resim"]["differed_at"].is_null(), "{s}");
            assert_eq!(sources(&game, 6), vec!["recorded"; 6]);
        } else {
            // Frame 3 reads the input its ring state holds; frame 4 the game's live one.
            assert_eq!(again[0], first[2]);
            assert_ne!(again[1], first[3]);
            assert_eq!(s["resim"]["differed_at"], 4, "{s}");
            assert!(s["input"].is_null(), "no input type: {s}");
            assert_eq!(sources(&game, 6), vec!["world"; 6]);
        }
    }
}

#[test]
fn a_step_input_must_fit_the_game_s_input_type() {
    let game = Game::start_looping("127.0.0.1:0", 1, paused(4), steer, |inspector, rt, n| {
        inspector.frame_with(rt, || live(n))
    });
    let (code, v) = game.post("/api/step", Some(r#"{"input": "left"}"#));
    assert_eq!(code, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("Pad"), "{v}");
    let (code, v) = game.post("/api/step", Some(r#"{"frames": 1, "inputs": 1}"#));
    assert_eq!(code, 400, "an unknown field: {v}");
    assert_eq!(game.status()["frame"], 0, "nothing ran");
    let s = game.ok("/api/step", Some(r#"{"input": 7}"#));
    assert_eq!(s["frame"], 1);

    // A game that named no input type cannot take one from the API.
    let plain = Game::start(1, paused(4));
    let (code, v) = plain.post("/api/step", Some(r#"{"input": 7}"#));
    assert_eq!(code, 409, "{v}");
    assert!(v["error"].as_str().unwrap().contains("input::<"), "{v}");
    assert_eq!(plain.status()["frame"], 0);
}
