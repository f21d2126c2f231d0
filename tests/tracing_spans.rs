//! The `tracing` feature's spans, as a subscriber sees them: one tree per frame (frame →
//! Run → a span per system, made on whichever thread ran it; frame → Sync → its steps →
//! a span per type's fold), their counts as fields, and an error event in a failed
//! frame. Run with `cargo test --features runsync/tracing --test tracing_spans`.
#![cfg(feature = "tracing")]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, Once};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use runsync::prelude::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// One span as recorded: its name, fields, parent (by sequence number: the registry
/// reuses ids of closed spans) and the thread that made it.
#[derive(Clone, Debug)]
struct SpanRec {
    name: &'static str,
    fields: BTreeMap<String, String>,
    parent: Option<usize>,
    thread: ThreadId,
}

/// One event: its level, fields and the span it was in.
#[derive(Clone, Debug)]
struct EventRec {
    level: Level,
    fields: BTreeMap<String, String>,
    parent: Option<usize>,
}

#[derive(Default)]
struct Records {
    spans: Vec<SpanRec>,
    events: Vec<EventRec>,
}

static RECORDS: Mutex<Records> = Mutex::new(Records {
    spans: Vec::new(),
    events: Vec::new(),
});

/// A span's sequence number, kept in its extensions.
struct Seq(usize);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

/// Records every span, field and event (the tests run one at a time: see [`start`]).
struct Recorder;

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("a new span is in the registry");
        let parent = span
            .parent()
            .and_then(|p| p.extensions().get::<Seq>().map(|s| s.0));
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let mut records = RECORDS.lock().unwrap();
        let seq = records.spans.len();
        records.spans.push(SpanRec {
            name: attrs.metadata().name(),
            fields,
            parent,
            thread: std::thread::current().id(),
        });
        span.extensions_mut().insert(Seq(seq));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("a recorded span is in the registry");
        let Some(seq) = span.extensions().get::<Seq>().map(|s| s.0) else {
            return;
        };
        let mut records = RECORDS.lock().unwrap();
        values.record(&mut Fields(&mut records.spans[seq].fields));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let parent = ctx
            .event_span(event)
            .and_then(|s| s.extensions().get::<Seq>().map(|s| s.0));
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        RECORDS.lock().unwrap().events.push(EventRec {
            level: *event.metadata().level(),
            fields,
            parent,
        });
    }
}

/// Installs the recorder as the global subscriber (workers are other threads), once;
/// then takes the tests' lock and forgets what earlier tests recorded.
fn start() -> MutexGuard<'static, ()> {
    static INSTALL: Once = Once::new();
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    INSTALL.call_once(|| {
        let subscriber = tracing_subscriber::registry().with(Recorder);
        tracing::subscriber::set_global_default(subscriber).expect("no other subscriber");
    });
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    *RECORDS.lock().unwrap() = Records::default();
    guard
}

fn take() -> Records {
    std::mem::take(&mut *RECORDS.lock().unwrap())
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
impl Component for Pos {
    type Output = f32;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Ping;

/// A world of 100 entities, a merge and a message type; 2 workers.
fn runtime() -> Runtime {
    let mut world = World::new();
    world.register::<Pos>(|p: &mut Pos, d: &[f32]| p.0 += d.iter().sum::<f32>());
    world.register_message::<Ping>();
    for i in 0..100 {
        world.spawn((Pos(i as f32),));
    }
    Runtime::builder().workers(2).build(world)
}

/// Waits (a while at most) until `n` systems have arrived, so that with 2 workers each
/// thread runs one (single-threaded, they run one after the other).
fn meet(arrived: &AtomicUsize, n: usize) {
    arrived.fetch_add(1, Ordering::SeqCst);
    if cfg!(feature = "single-threaded") {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while arrived.load(Ordering::SeqCst) < n && Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

/// The children of span `of`, by name.
fn children<'a>(spans: &'a [SpanRec], of: usize, name: &str) -> Vec<(usize, &'a SpanRec)> {
    spans
        .iter()
        .enumerate()
        .filter(|(_, s)| s.parent == Some(of) && s.name == name)
        .collect()
}

#[test]
fn one_frame_is_one_tree_from_frame_to_systems_and_steps() {
    let _one = start();
    let mut rt = runtime();
    let arrived = std::sync::Arc::new(AtomicUsize::new(0));
    let a = arrived.clone();
    rt.add_system_named("Move", move |world: &World, out: &mut Output| {
        meet(&a, 2);
        for (e, (_,)) in world.query::<(&Pos,)>() {
            out.write::<Pos>(e, 1.0);
        }
    });
    let b = arrived.clone();
    rt.add_system_named("Spawn", move |_: &World, out: &mut Output| {
        meet(&b, 2);
        out.spawn((Pos(0.0),));
        out.send(Ping);
    });
    rt.frame();
    let records = take();
    let spans = &records.spans;

    let frames: Vec<usize> = (0..spans.len())
        .filter(|&i| spans[i].name == "frame")
        .collect();
    assert_eq!(frames.len(), 1, "{spans:#?}");
    let frame = frames[0];
    let f = &spans[frame].fields;
    assert_eq!(spans[frame].parent, None, "a root");
    assert_eq!(f["frame"], "1");
    assert_eq!(f["entities"], "101");
    assert_eq!(f["merged"], "100");
    assert_eq!(f["spawned"], "1");
    assert_eq!(f["despawned"], "0");
    assert_eq!(f["writes"], "100");
    assert_eq!(f["messages"], "1");

    // frame → Run → a span per system, both by name, each made on its own thread.
    let run = children(spans, frame, "Run");
    assert_eq!(run.len(), 1, "{spans:#?}");
    let (run, run_span) = run[0];
    assert_eq!(run_span.fields["systems"], "2");
    let systems = children(spans, run, "system");
    let mut names: Vec<&str> = systems
        .iter()
        .map(|(_, s)| s.fields["system"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["Move", "Spawn"], "{spans:#?}");
    let moved = systems
        .iter()
        .find(|(_, s)| s.fields["system"] == "Move")
        .unwrap();
    assert_eq!(moved.1.fields["writes"], "100");
    assert!(moved.1.fields.contains_key("own_us"));
    if cfg!(not(feature = "single-threaded")) {
        assert_ne!(
            systems[0].1.thread, systems[1].1.thread,
            "the two systems ran on two threads, both under Run"
        );
    }
    // Every system span of the process is in this tree.
    assert_eq!(spans.iter().filter(|s| s.name == "system").count(), 2);

    // frame → Sync → its steps, in order; fold_all → a fold per type with sources.
    let sync = children(spans, frame, "Sync");
    assert_eq!(sync.len(), 1, "{spans:#?}");
    let (sync, sync_span) = sync[0];
    assert_eq!(sync_span.fields["merged"], "100");
    assert_eq!(sync_span.fields["spawned"], "1");
    let steps: Vec<&str> = spans
        .iter()
        .filter(|s| s.parent == Some(sync))
        .map(|s| s.name)
        .collect();
    assert_eq!(
        steps,
        [
            "gather",
            "fold_all",
            "fold_resources",
            "return_buffers",
            "commands",
            "deliver_messages"
        ]
    );
    let fold_all = children(spans, sync, "fold_all")[0].0;
    let folds = children(spans, fold_all, "fold");
    assert_eq!(folds.len(), 1, "{spans:#?}");
    assert!(folds[0].1.fields["component"].ends_with("Pos"));
    assert_eq!(folds[0].1.fields["merged"], "100");
    assert!(records.events.is_empty(), "{:?}", records.events);

    // The next frame is a tree of its own.
    rt.frame();
    let spans = take().spans;
    let frames: Vec<&SpanRec> = spans.iter().filter(|s| s.name == "frame").collect();
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].fields["frame"], "2");
    assert_eq!(spans.iter().filter(|s| s.parent.is_none()).count(), 1);
}

#[test]
fn a_failed_frame_emits_an_error_event_in_its_span() {
    let _one = start();
    let mut rt = runtime();
    rt.add_system_named("Fine", |_: &World, _: &mut Output| {});
    let mut calls = 0;
    rt.add_system_named("Boom", move |_: &World, _: &mut Output| {
        calls += 1;
        if calls == 2 {
            panic!("boom in frame 2");
        }
    });
    rt.frame();
    assert!(take().events.is_empty());
    let error = rt.try_frame().expect_err("the second frame fails");
    let records = take();
    let errors: Vec<&EventRec> = records
        .events
        .iter()
        .filter(|e| e.level == Level::ERROR)
        .collect();
    assert_eq!(errors.len(), 1, "{:?}", records.events);
    let event = errors[0];
    assert_eq!(event.fields["frame"], "2");
    assert!(
        event.fields["error"].contains("boom in frame 2"),
        "{event:?}"
    );
    assert_eq!(event.fields["error"], error.to_string());
    // In the failed frame's tree.
    let mut at = event.parent;
    let mut frame = None;
    while let Some(i) = at {
        if records.spans[i].name == "frame" {
            frame = Some(i);
        }
        at = records.spans[i].parent;
    }
    let frame = frame.expect("the event is inside a frame span");
    assert_eq!(records.spans[frame].fields["frame"], "2");
    // The panicking system's span was still made, under Run.
    let run = children(&records.spans, frame, "Run")[0].0;
    let names: Vec<&str> = children(&records.spans, run, "system")
        .iter()
        .map(|(_, s)| s.fields["system"].as_str())
        .collect();
    assert!(
        names.contains(&"Boom") && names.contains(&"Fine"),
        "{names:?}"
    );
}
