//! What the game shows of itself through the inspector: its picture (of the present and of
//! past frames held by the ring), plots over the timeline, the parent/child tree and
//! resources.

mod common;

use common::{Game, Hp, Pos};
use runsync::prelude::*;
use runsync_inspect::{Color, Inspector, InspectorBuilder};
use serde_json::Value;

/// A resource the game names for the page (read through its `Debug` text only).
#[derive(Debug)]
struct Weather {
    #[allow(dead_code)]
    wind: f32,
}

/// The test game's picture: a dot per `Pos` (x, 0), blue for movers, grey otherwise;
/// a line under them.
fn shown(ring: usize) -> InspectorBuilder {
    Inspector::builder()
        .ring(ring)
        .paused(true)
        .picture(|w: &World, p| {
            p.title("test game");
            p.bounds([-40.0, -1.0], [200.0, 1.0]);
            p.line([-40.0, 0.0], [200.0, 0.0], Color::rgb(0, 0, 0));
            for (e, (pos,)) in w.query::<(&Pos,)>() {
                let c = if w.get::<Hp>(e).is_some() {
                    Color::rgb(0, 0, 255)
                } else {
                    Color::rgb(128, 128, 128)
                };
                p.dot([pos.0, 0.0], 2.0, c);
            }
        })
        .plot("movers", |rt: &Runtime| {
            rt.world().query::<(&Hp,)>().count() as f64
        })
        .plot_mean::<Hp>("mean hp", |h| f64::from(h.0))
        .plot_memory()
        .resource::<Weather>()
}

/// A hierarchy: a root with two children, the first with a child of its own; and a
/// `Weather`.
fn setup(rt: &mut Runtime) {
    let w = rt.world_mut();
    w.register_hierarchy();
    w.insert_resource(Weather { wind: 0.5 });
    let root = w.spawn((Pos(1000.0),));
    let (a, b, a1) = (w.spawn(()), w.spawn(()), w.spawn(()));
    w.set_parent(a, root).unwrap();
    w.set_parent(b, root).unwrap();
    w.set_parent(a1, a).unwrap();
}

/// The x of every dot, sorted (the picture's own order is storage order).
fn xs(picture: &Value) -> Vec<f64> {
    let dots = picture["dots"].as_array().unwrap();
    let mut xs: Vec<f64> = dots.chunks(4).map(|d| d[0].as_f64().unwrap()).collect();
    xs.sort_by(f64::total_cmp);
    xs
}

#[test]
fn the_picture_of_the_present_and_of_a_past_frame_from_the_ring() {
    let game = Game::start_with(2, shown(8), setup);
    let (code, p0) = game.get("/api/picture");
    assert_eq!(code, 200, "{p0}");
    assert_eq!(p0["frame"], 0);
    assert_eq!(p0["title"], "test game");
    assert_eq!(
        p0["shapes"], 82,
        "a line and a dot per Pos: {}",
        p0["shapes"]
    );
    assert_eq!(p0["lines"].as_array().unwrap().len(), 5);
    assert_eq!(p0["colors"].as_array().unwrap().len(), 3);
    assert_eq!(p0["truncated"], false);

    game.ok("/api/step", Some(r#"{"frames": 2}"#));
    let (_, p2) = game.get("/api/picture");
    assert_eq!(p2["frame"], 2);
    assert_ne!(xs(&p0), xs(&p2), "the movers moved");
    let s = game.ok("/api/step", Some(r#"{"frames": 3}"#));
    let before = s["checksum"].clone();

    // Frame 2 again, drawn from the ring: the same picture; the present untouched.
    let (code, again) = game.get("/api/picture?frame=2");
    assert_eq!(code, 200, "{again}");
    assert_eq!((again["frame"].as_u64(), xs(&again)), (Some(2), xs(&p2)));
    let (_, p0_again) = game.get("/api/picture?frame=0");
    assert_eq!(xs(&p0_again), xs(&p0));
    let s = game.status();
    assert_eq!((s["frame"].as_u64(), &s["checksum"]), (Some(5), &before));
    let (_, now) = game.get("/api/picture?frame=5");
    assert_eq!(now["frame"], 5);

    let (code, v) = game.get("/api/picture?frame=6");
    assert_eq!(code, 404, "{v}");
    assert_eq!(game.get("/api/picture?frame=x").0, 400);
    assert_eq!(game.get("/api/picture?at=1").0, 400);

    let plain = Game::start(1, Inspector::builder().paused(true));
    let (code, v) = plain.get("/api/picture");
    assert_eq!(code, 409, "{v}");
    assert!(v["error"].as_str().unwrap().contains(".picture("), "{v}");
}

#[test]
fn plotted_values_follow_every_frame_in_the_timeline() {
    let game = Game::start_with(2, shown(8), setup);
    game.ok("/api/step", Some(r#"{"frames": 3}"#));
    let (_, t) = game.get("/api/timeline");
    assert_eq!(
        t["plots"],
        serde_json::json!(["movers", "mean hp", "memory bytes"])
    );
    // Hp starts at 5 + i % 13 for the 60 movers and loses 1 a frame; none reaches 1 in
    // three frames.
    let mean0 = (0..60).map(|i| f64::from(5 + i % 13)).sum::<f64>() / 60.0;
    let records = t["records"].as_array().unwrap();
    assert_eq!(records.len(), 3);
    for (k, r) in records.iter().enumerate() {
        let v = r["values"].as_array().unwrap();
        assert_eq!(v[0], 60.0, "{r}");
        let mean = v[1].as_f64().unwrap();
        assert!((mean - (mean0 - (k + 1) as f64)).abs() < 1e-9, "{r}");
        assert!(v[2].as_f64().unwrap() > 0.0, "memory: {r}");
    }
    // Without plots, records carry no values.
    let plain = Game::start(1, Inspector::builder().paused(true));
    plain.ok("/api/step", None);
    let (_, t) = plain.get("/api/timeline");
    assert_eq!(t["plots"], serde_json::json!([]));
    assert_eq!(t["records"][0]["values"], serde_json::json!([]));
}

#[test]
fn the_tree_and_the_resources() {
    let game = Game::start_with(1, shown(4), setup);
    let (code, t) = game.get("/api/tree");
    assert_eq!(code, 200, "{t}");
    assert_eq!(
        (t["hierarchy"].as_bool(), t["roots"].as_u64()),
        (Some(true), Some(1))
    );
    let nodes = t["nodes"].as_array().unwrap();
    let depths: Vec<u64> = nodes.iter().map(|n| n["depth"].as_u64().unwrap()).collect();
    let children: Vec<u64> = nodes
        .iter()
        .map(|n| n["children"].as_u64().unwrap())
        .collect();
    assert_eq!(depths, [0, 1, 2, 1], "pre-order: {t}");
    assert_eq!(children, [2, 1, 0, 0]);
    assert_eq!(t["truncated"], false);
    let (_, cut) = game.get("/api/tree?limit=2");
    assert_eq!(cut["nodes"].as_array().unwrap().len(), 2);
    assert_eq!(cut["truncated"], true);
    assert_eq!(game.get("/api/tree?limit=5001").0, 400);

    let (code, r) = game.get("/api/resources");
    assert_eq!(code, 200, "{r}");
    let list = r["resources"].as_array().unwrap();
    let short: Vec<&str> = list.iter().map(|x| x["short"].as_str().unwrap()).collect();
    assert_eq!(short, ["Time", "Weather"]);
    assert!(
        list[0]["value"].as_str().unwrap().contains("frame: 0"),
        "{r}"
    );
    assert_eq!(list[1]["value"], "Weather { wind: 0.5 }");

    let plain = Game::start(1, Inspector::builder().paused(true));
    let (_, t) = plain.get("/api/tree");
    assert_eq!(t["hierarchy"], false);
    let (_, r) = plain.get("/api/resources");
    assert_eq!(r["resources"].as_array().unwrap().len(), 1, "Time: {r}");
}
