//! Trace files (`Runtime::start_trace`, `finish_trace`): Chrome trace-event JSON whose
//! events nest in time on the frame thread (frame → stage → Run / Sync → steps), each
//! system within its Run on the thread that ran it; a failed frame carries its error;
//! tracing does not change what a frame computes, and works while a replay records.

use runsync::prelude::*;
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
impl Component for Pos {
    type Output = f32;
}

/// A complete event: name, category, thread, start and end in nanoseconds, args.
#[derive(Debug)]
struct Span {
    name: String,
    cat: String,
    tid: u64,
    start: i64,
    end: i64,
    args: Value,
}

impl Span {
    fn within(&self, outer: &Span) -> bool {
        outer.start <= self.start && self.end <= outer.end
    }
}

fn parse(json: &[u8]) -> Vec<Span> {
    let json: Value = serde_json::from_slice(json).expect("valid JSON");
    let ns = |v: &Value| (v.as_f64().expect("microseconds") * 1000.0).round() as i64;
    json["traceEvents"]
        .as_array()
        .expect("traceEvents")
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            for field in ["name", "cat", "ph", "ts", "dur", "pid", "tid", "args"] {
                assert!(e.get(field).is_some(), "no {field} in {e}");
            }
            let start = ns(&e["ts"]);
            Span {
                name: e["name"].as_str().unwrap().to_owned(),
                cat: e["cat"].as_str().unwrap().to_owned(),
                tid: e["tid"].as_u64().unwrap(),
                start,
                end: start + ns(&e["dur"]),
                args: e["args"].clone(),
            }
        })
        .collect()
}

/// Two stages, two systems in the first (one panics in frame 3, once: the retry is frame
/// 3 again), one in the second.
fn runtime() -> Runtime {
    let mut world = World::new();
    world.register::<Pos>(|p: &mut Pos, d: &[f32]| p.0 += d.iter().sum::<f32>());
    for i in 0..500 {
        world.spawn((Pos(i as f32),));
    }
    let mut rt = Runtime::builder()
        .workers(2)
        .stages(["early", "late"])
        .build(world);
    let early = rt.stage_id("early").unwrap();
    let late = rt.stage_id("late").unwrap();
    rt.add_system_named_to(early, "Move", |world: &World, out: &mut Output| {
        for (e, (_,)) in world.query::<(&Pos,)>() {
            out.write::<Pos>(e, 1.0);
        }
    });
    let mut calls = 0;
    rt.add_system_named_to(early, "Boom", move |_: &World, _: &mut Output| {
        calls += 1;
        assert!(calls != 3, "boom in frame 3");
    });
    rt.add_system_named_to(late, "Spawn", |_: &World, out: &mut Output| {
        out.spawn((Pos(0.0),));
    });
    rt
}

#[test]
fn frames_nest_stages_phases_steps_and_systems() {
    let mut rt = runtime();
    let mut plain = runtime();
    assert!(!rt.is_tracing());
    rt.frame();
    plain.frame();
    rt.start_trace();
    assert!(rt.is_tracing());
    for _ in 0..4 {
        let (a, b) = (rt.try_frame(), plain.try_frame());
        assert_eq!(a.is_ok(), b.is_ok());
        assert_eq!(rt.world().len(), plain.world().len());
    }
    let mut json = Vec::new();
    assert_eq!(rt.finish_trace(&mut json).unwrap(), 4);
    assert!(!rt.is_tracing());
    let spans = parse(&json);
    let frames: Vec<&Span> = spans.iter().filter(|s| s.cat == "frame").collect();
    let numbers: Vec<u64> = frames
        .iter()
        .map(|f| f.args["frame"].as_u64().unwrap())
        .collect();
    // The first frame ran before tracing; frame 3 failed and ran again.
    assert_eq!(numbers, [2, 3, 3, 4]);
    for s in &spans {
        if s.cat != "system" {
            assert_eq!(s.tid, 0, "{s:?}");
            assert!(frames.iter().any(|f| s.within(f)), "{s:?} in no frame");
        }
    }
    let failed: Vec<&&Span> = frames
        .iter()
        .filter(|f| f.args.get("error").is_some())
        .collect();
    for f in &frames {
        let inside = |cat: &str, name: &str| {
            spans
                .iter()
                .filter(|s| s.cat == cat && s.name == name && s.within(f))
                .count()
        };
        if f.args.get("error").is_some() {
            // Failed in the first stage's Run: no Sync, no second stage.
            assert_eq!((inside("stage", "early"), inside("stage", "late")), (1, 0));
            assert_eq!((inside("phase", "Run"), inside("phase", "Sync")), (1, 0));
            continue;
        }
        assert_eq!((inside("stage", "early"), inside("stage", "late")), (1, 1));
        assert_eq!((inside("phase", "Run"), inside("phase", "Sync")), (2, 2));
        assert_eq!(inside("step", "gather"), 2);
        assert_eq!(inside("step", "commands"), 2);
        assert_eq!(f.args["spawned"], 1);
        assert!(f.args["merged"].as_u64().unwrap() > 500, "{f:?}");
    }
    assert_eq!(failed.len(), 1, "{frames:?}");
    assert_eq!(failed[0].args["frame"], 3);
    let error = failed[0].args["error"].as_str().unwrap();
    assert!(
        error.contains("boom in frame 3") && error.contains("Boom"),
        "{error}"
    );
    // Each system lies within a Run of its stage, in its frame, on thread 0 or 1.
    let systems: Vec<&Span> = spans.iter().filter(|s| s.cat == "system").collect();
    assert!(systems.len() >= 3 * 4 - 1);
    for s in &systems {
        assert!(s.tid <= 1, "{s:?}");
        let stage = if s.name == "Spawn" { "late" } else { "early" };
        let run = spans
            .iter()
            .find(|r| r.name == "Run" && s.within(r))
            .unwrap_or_else(|| panic!("{s:?} in no Run"));
        assert!(
            spans
                .iter()
                .any(|st| st.cat == "stage" && st.name == stage && run.within(st)),
            "{s:?}"
        );
    }
    assert_eq!(rt.world().len(), plain.world().len());
}

#[test]
fn finishing_without_a_trace_is_an_error_and_a_trace_records_beside_a_replay() {
    let mut rt = Runtime::builder().workers(1).build(World::new());
    rt.add_system_named("Idle", |_: &World, _: &mut Output| {});
    let err = rt.finish_trace(&mut Vec::new()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    rt.record_replay::<()>().unwrap();
    rt.start_trace();
    rt.frame();
    rt.frame();
    let mut json = Vec::new();
    assert_eq!(rt.finish_trace(&mut json).unwrap(), 2);
    let mut replay = Vec::new();
    rt.finish_replay(&mut replay).unwrap();
    let replay = runsync::Replay::read(&mut replay.as_slice()).unwrap();
    assert_eq!(replay.len(), 2);
    let spans = parse(&json);
    assert_eq!(spans.iter().filter(|s| s.name == "Idle").count(), 2);
    // One stage: no stage events.
    assert!(spans.iter().all(|s| s.cat != "stage"));
}
