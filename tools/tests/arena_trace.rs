//! `arena --trace FILE`: the run's trace file (`Runtime::start_trace`) is Chrome /
//! Perfetto trace-event JSON whose events nest in time: every system within its frame's
//! Run, Run and Sync within their frame, Sync's steps within it; every system of the arena
//! present by name. Runs the built `arena` binary.

use std::collections::BTreeSet;
use std::process::Command;

use runsync_tools::scenario::{ArenaConfig, build};
use serde_json::Value;

const FRAMES: usize = 8;

/// A complete event: its name, category, thread, and its start and end in nanoseconds.
#[derive(Debug)]
struct Span {
    name: String,
    cat: String,
    tid: u64,
    start: i64,
    end: i64,
    args: serde_json::Map<String, Value>,
}

impl Span {
    fn within(&self, outer: &Span) -> bool {
        outer.start <= self.start && self.end <= outer.end
    }
}

/// Microseconds as written (to the nanosecond) in nanoseconds.
fn ns(v: &Value) -> i64 {
    (v.as_f64().expect("a number of microseconds") * 1000.0).round() as i64
}

fn trace_of_a_run(workers: &str, extra: &[&str]) -> (Vec<Value>, String) {
    let dir = std::env::temp_dir().join(format!("runsync-arena-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("trace-{workers}-{}.json", extra.len()));
    let frames = FRAMES.to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args([
            "--entities",
            "400",
            "--frames",
            &frames,
            "--workers",
            workers,
        ])
        .args(extra)
        .arg("--trace")
        .arg(&path)
        .output()
        .expect("the arena binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&path).expect("the trace was written");
    std::fs::remove_file(&path).ok();
    let json: Value = serde_json::from_str(&text).expect("the trace is valid JSON");
    let events = json["traceEvents"]
        .as_array()
        .expect("a traceEvents array")
        .clone();
    (events, stdout)
}

/// Checks every event's fields, and returns the complete events.
fn complete_events(events: &[Value]) -> Vec<Span> {
    let mut spans = Vec::new();
    for e in events {
        for field in ["name", "ph", "pid", "tid", "args"] {
            assert!(e.get(field).is_some(), "no {field} in {e}");
        }
        assert!(e["args"].is_object(), "{e}");
        match e["ph"].as_str().unwrap() {
            "M" => {
                let name = e["name"].as_str().unwrap();
                assert!(
                    ["process_name", "thread_name", "thread_sort_index"].contains(&name),
                    "{e}"
                );
            }
            "X" => {
                for field in ["cat", "ts", "dur"] {
                    assert!(e.get(field).is_some(), "no {field} in {e}");
                }
                assert!(e["dur"].as_f64().unwrap() >= 0.0, "{e}");
                let start = ns(&e["ts"]);
                spans.push(Span {
                    name: e["name"].as_str().unwrap().to_owned(),
                    cat: e["cat"].as_str().unwrap().to_owned(),
                    tid: e["tid"].as_u64().unwrap(),
                    start,
                    end: start + ns(&e["dur"]),
                    args: e["args"].as_object().unwrap().clone(),
                });
            }
            other => panic!("an event of phase {other}: {e}"),
        }
    }
    spans
}

#[test]
fn the_trace_nests_systems_in_their_frames_run_and_names_them_all() {
    let (events, stdout) = trace_of_a_run("2", &[]);
    assert!(
        stdout.contains(&format!(
            "({FRAMES} frames; open it in https://ui.perfetto.dev)"
        )),
        "{stdout}"
    );
    let spans = complete_events(&events);
    let on_main = |name: &str| -> Vec<&Span> {
        spans
            .iter()
            .filter(|s| s.name == name && s.tid == 0)
            .collect()
    };
    let frames = on_main("frame");
    assert_eq!(frames.len(), FRAMES);
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f.cat, "frame");
        assert_eq!(f.args["frame"], i as u64 + 1);
        assert!(f.args["entities"].as_u64().unwrap() >= 400, "{f:?}");
        assert!(f.args["merged"].as_u64().unwrap() > 0, "{f:?}");
        for key in ["writes", "commands", "dropped", "spawned", "despawned"] {
            assert!(f.args[key].is_u64(), "{key} in {f:?}");
        }
    }
    let runs = on_main("Run");
    let syncs = on_main("Sync");
    assert_eq!((runs.len(), syncs.len()), (FRAMES, FRAMES));
    // Each frame holds one Run then one Sync; each Sync its steps, in order.
    for ((f, run), sync) in frames.iter().zip(&runs).zip(&syncs) {
        assert!(run.within(f) && sync.within(f), "{run:?} {sync:?} in {f:?}");
        assert!(run.end <= sync.start);
        let steps: Vec<&str> = spans
            .iter()
            .filter(|s| s.cat == "step" && s.within(sync))
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(
            steps,
            [
                "gather",
                "fold_all",
                "fold_resources",
                "return_buffers",
                "commands"
            ]
        );
    }
    // Every system lies within a Run, on the frame thread or worker 1; each Run holds
    // every system once.
    let systems: Vec<&Span> = spans.iter().filter(|s| s.cat == "system").collect();
    assert!(!systems.is_empty());
    for s in &systems {
        assert!(s.tid <= 1, "{s:?}");
        assert!(runs.iter().any(|r| s.within(r)), "{s:?} in no Run");
        for key in ["writes", "commands", "own_us"] {
            assert!(s.args[key].is_u64(), "{key} in {s:?}");
        }
    }
    let rt = build(ArenaConfig {
        agents: 400,
        seed: 1,
        workers: 2,
    });
    let names: BTreeSet<&str> = rt.systems().map(|s| s.name).collect();
    assert!(names.len() > 5, "{names:?}");
    for run in &runs {
        let ran: Vec<&str> = systems
            .iter()
            .filter(|s| s.within(run))
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(
            ran.iter().copied().collect::<BTreeSet<_>>(),
            names,
            "the systems of {run:?}"
        );
        assert_eq!(ran.len(), names.len());
    }
    // Both threads are named (with workers); every system ran on one of them.
    let threads: BTreeSet<(u64, &str)> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(threads.iter().any(|&(tid, _)| tid == 0), "{threads:?}");
    let tids: BTreeSet<u64> = systems.iter().map(|s| s.tid).collect();
    if pooled() {
        // Which thread takes which system is up to the scheduler (a busy machine may
        // leave the worker asleep for a short frame): each is on a named thread.
        assert!(threads.contains(&(1, "runsync-w0")), "{threads:?}");
        assert!(tids.is_subset(&BTreeSet::from([0, 1])), "{tids:?}");
    } else {
        assert_eq!(tids, BTreeSet::from([0]));
    }
}

#[test]
fn a_failed_frame_carries_its_error() {
    let (events, _) = trace_of_a_run("1", &["--fail-at", "3"]);
    let spans = complete_events(&events);
    let frames: Vec<&Span> = spans.iter().filter(|s| s.name == "frame").collect();
    assert_eq!(frames.len(), FRAMES);
    let failed: Vec<&&Span> = frames
        .iter()
        .filter(|f| f.args.contains_key("error"))
        .collect();
    assert_eq!(failed.len(), 1, "{frames:?}");
    assert_eq!(failed[0].args["frame"], 3);
    let error = failed[0].args["error"].as_str().unwrap();
    assert!(error.contains("this frame fails on purpose"), "{error}");
    // Every system sits on the one thread, in a Run.
    assert!(spans.iter().all(|s| s.tid == 0));
}

#[test]
fn trace_picture_draws_the_written_trace_and_needs_trace() {
    let dir = std::env::temp_dir().join(format!("runsync-arena-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("picture.svg");
    let (_, stdout) = trace_of_a_run("2", &["--trace-picture", svg.to_str().unwrap()]);
    assert!(
        stdout.contains("trace picture") && stdout.contains("the last 3 frames"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&svg).expect("the picture was written");
    std::fs::remove_file(&svg).ok();
    assert!(text.starts_with("<svg"), "{}", &text[..text.len().min(80)]);
    let frames = FRAMES;
    let mut labels = vec![
        format!("frames {} to {frames}", frames - 2),
        format!("frame {frames}"),
    ];
    if pooled() {
        labels.push("runsync-w0".to_owned());
    }
    for label in labels {
        assert!(text.contains(&label), "{label} in the picture");
    }

    let out = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["--frames", "2", "--trace-picture"])
        .arg(&svg)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "clap refuses it without --trace"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("--trace"));
    assert!(!svg.exists());
}

/// Whether runtimes here have workers: built `single-threaded`, the pool has none and
/// everything runs (and is traced) on thread 0.
fn pooled() -> bool {
    runsync::Runtime::builder()
        .workers(2)
        .build(runsync::World::new())
        .workers()
        > 1
}
