//! Trace files: the frames a runtime runs while it traces
//! ([`Runtime::start_trace`](crate::Runtime::start_trace)), written as Chrome trace-event
//! JSON ([`Runtime::finish_trace`](crate::Runtime::finish_trace)), which
//! <https://ui.perfetto.dev> and `chrome://tracing` open. No profiler and no feature needed.
//!
//! A frame writes its timeline into a [`Timeline`]: a [`Trace`] while tracing, else
//! [`Untraced`], whose methods are empty. The runtime picks one once per frame, and the
//! frame's code is generic over it, so a frame that is not traced runs exactly the code it
//! ran before trace files existed (the choice is that one branch per frame).
//!
//! What a trace holds, as complete events (`"ph": "X"`) on the pool's clock, in
//! microseconds since tracing started:
//!
//! - On the thread that runs frames (`tid` 0), nested: each **frame** (its number and
//!   figures as `args`, and the error of a failed frame), each **stage** if there are
//!   several, **Run** and **Sync**, and Sync's **steps**.
//! - Each **system** on the thread that ran it: `tid` is
//!   [`Pool::worker_index`](crate::pool::Pool::worker_index) (0 the frame thread, `i + 1`
//!   the worker `runsync-w{i}`), from its start to its end as its own time is measured (a
//!   system that its thread ran while waiting for another's parallel parts lies within
//!   that one). Always within its frame's Run.
//!
//! Metadata events name the process and each thread.

use std::io::{self, Write};
use std::sync::Arc;

use crate::pool::clock::{Clock, Tick};

/// An event's name: a phase's (static) or a system's or stage's.
pub(crate) enum Name {
    Static(&'static str),
    Shared(Arc<str>),
}

impl Name {
    fn as_str(&self) -> &str {
        match self {
            Name::Static(s) => s,
            Name::Shared(s) => s,
        }
    }
}

/// A value of an event's `args`.
pub(crate) enum Arg {
    Int(u64),
    Text(Box<str>),
}

impl From<u64> for Arg {
    fn from(n: u64) -> Arg {
        Arg::Int(n)
    }
}

impl From<usize> for Arg {
    fn from(n: usize) -> Arg {
        Arg::Int(n as u64)
    }
}

impl From<String> for Arg {
    fn from(s: String) -> Arg {
        Arg::Text(s.into_boxed_str())
    }
}

/// An event's `args`, in order.
pub(crate) type Args = Vec<(&'static str, Arg)>;

/// Where a system ran in its stage's last Run: its thread
/// ([`Pool::worker_index`](crate::pool::Pool::worker_index)) and its start and end on the
/// pool's clock. Set only in traced frames.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Interval {
    pub(crate) start: Tick,
    pub(crate) end: Tick,
    pub(crate) thread: u32,
}

/// What a frame writes its timeline into: a [`Trace`], or [`Untraced`] (nothing).
pub(crate) trait Timeline {
    /// Whether it records anything: code generic over it tests this constant (which
    /// compiles away) rather than the clock.
    const ON: bool;

    /// Opens an event named `name` of category `cat` on the frame thread, now; events
    /// nest.
    fn open(&mut self, name: &'static str, cat: &'static str);

    /// [`open`](Self::open) with a name known at run time (a stage's).
    fn open_named(&mut self, name: &Arc<str>, cat: &'static str);

    /// Closes the innermost open event, now, with `args` (called only when recording).
    fn close(&mut self, args: impl FnOnce() -> Args);

    /// An event of a system that ran `at`, named `name` (its `args` made only when
    /// recording).
    fn system(&mut self, name: &Arc<str>, at: Interval, args: impl FnOnce() -> Args);

    /// Opens a step of Sync (category `step`), closed when the guard is dropped.
    #[inline(always)]
    fn step(&mut self, name: &'static str) -> Step<'_, Self>
    where
        Self: Sized,
    {
        self.open(name, "step");
        Step(self)
    }
}

/// An open step of Sync ([`Timeline::step`]); closes when dropped.
pub(crate) struct Step<'a, T: Timeline>(&'a mut T);

impl<T: Timeline> Drop for Step<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        self.0.close(Args::new);
    }
}

/// The timeline of a frame that is not traced: nothing.
pub(crate) struct Untraced;

impl Timeline for Untraced {
    const ON: bool = false;

    #[inline(always)]
    fn open(&mut self, _name: &'static str, _cat: &'static str) {}

    #[inline(always)]
    fn open_named(&mut self, _name: &Arc<str>, _cat: &'static str) {}

    #[inline(always)]
    fn close(&mut self, _args: impl FnOnce() -> Args) {}

    #[inline(always)]
    fn system(&mut self, _name: &Arc<str>, _at: Interval, _args: impl FnOnce() -> Args) {}
}

/// One complete event.
struct Event {
    name: Name,
    cat: &'static str,
    tid: u32,
    start: Tick,
    end: Tick,
    args: Args,
}

/// The trace being recorded: every event since it started, in the order they opened.
pub(crate) struct Trace {
    /// When tracing started: time 0 of the file.
    origin: Tick,
    events: Vec<Event>,
    /// The events open on the frame thread, innermost last (indices into `events`).
    open: Vec<usize>,
    /// Threads to name: the pool's (the frame thread and its workers).
    threads: u32,
    /// The name of the thread that ran the first traced frame.
    frame_thread: Option<String>,
    /// Frames recorded.
    frames: u64,
}

impl Trace {
    /// A trace starting now, of a runtime whose pool has `threads` threads.
    pub(crate) fn new(threads: usize) -> Trace {
        Trace {
            origin: Clock::get().now(),
            events: Vec::new(),
            open: Vec::new(),
            threads: threads as u32,
            frame_thread: None,
            frames: 0,
        }
    }

    /// Opens a frame's event (the thread that calls it is the trace's `tid` 0).
    pub(crate) fn open_frame(&mut self) {
        if self.frame_thread.is_none() {
            let name = std::thread::current().name().map(str::to_owned);
            self.frame_thread = Some(name.unwrap_or_else(|| "runsync-frame".to_owned()));
        }
        self.open("frame", "frame");
    }

    /// Closes the frame's event with `args`, and any event a failure left open.
    pub(crate) fn close_frame(&mut self, args: Args) {
        while self.open.len() > 1 {
            self.close(Args::new);
        }
        self.close(|| args);
        self.frames += 1;
    }

    /// Frames recorded so far.
    pub(crate) fn frames(&self) -> u64 {
        self.frames
    }

    /// Writes the trace as Chrome trace-event JSON: `{"traceEvents": [...]}`, metadata
    /// events naming the process and its threads first, then every complete event.
    pub(crate) fn write(&self, w: &mut dyn Write) -> io::Result<()> {
        let mut w = io::BufWriter::new(w);
        let clock = Clock::get();
        let pid = std::process::id();
        // Nanoseconds since the origin: microseconds in the file, to the nanosecond.
        let ns = |t: Tick| clock.between(self.origin, t).as_nanos() as u64;
        let mut line = String::new();
        w.write_all(b"{\"traceEvents\":[\n")?;
        let mut first = true;
        let mut put = |w: &mut io::BufWriter<&mut dyn Write>, line: &str| -> io::Result<()> {
            if !std::mem::take(&mut first) {
                w.write_all(b",\n")?;
            }
            w.write_all(line.as_bytes())
        };
        line.push_str(&format!(
            "{{\"name\":\"process_name\",\"cat\":\"__metadata\",\"ph\":\"M\",\"ts\":0,\
             \"pid\":{pid},\"tid\":0,\"args\":{{\"name\":\"runsync\"}}}}"
        ));
        put(&mut w, &line)?;
        let frame_thread = self.frame_thread.as_deref().unwrap_or("runsync-frame");
        let threads = self
            .events
            .iter()
            .map(|e| e.tid + 1)
            .max()
            .unwrap_or(0)
            .max(self.threads);
        for tid in 0..threads {
            let name = match tid {
                0 => frame_thread.to_owned(),
                i => format!("runsync-w{}", i - 1),
            };
            for (meta, value) in [
                ("thread_name", format!("\"{}\"", escape(&name))),
                ("thread_sort_index", tid.to_string()),
            ] {
                line.clear();
                line.push_str(&format!(
                    "{{\"name\":\"{meta}\",\"cat\":\"__metadata\",\"ph\":\"M\",\"ts\":0,\
                     \"pid\":{pid},\"tid\":{tid},\"args\":{{\"{}\":{value}}}}}",
                    if meta == "thread_name" {
                        "name"
                    } else {
                        "sort_index"
                    }
                ));
                put(&mut w, &line)?;
            }
        }
        for e in &self.events {
            let (start, end) = (ns(e.start), ns(e.end));
            let dur = end.saturating_sub(start);
            line.clear();
            line.push_str(&format!(
                "{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{}.{:03},\"dur\":{}.{:03},\
                 \"pid\":{pid},\"tid\":{},\"args\":{{",
                escape(e.name.as_str()),
                e.cat,
                start / 1000,
                start % 1000,
                dur / 1000,
                dur % 1000,
                e.tid
            ));
            for (i, (key, value)) in e.args.iter().enumerate() {
                if i > 0 {
                    line.push(',');
                }
                match value {
                    Arg::Int(n) => line.push_str(&format!("\"{key}\":{n}")),
                    Arg::Text(s) => line.push_str(&format!("\"{key}\":\"{}\"", escape(s))),
                }
            }
            line.push_str("}}");
            put(&mut w, &line)?;
        }
        w.write_all(b"\n],\"displayTimeUnit\":\"ms\"}\n")?;
        w.flush()
    }
}

impl Timeline for Trace {
    const ON: bool = true;

    fn open(&mut self, name: &'static str, cat: &'static str) {
        self.push_open(Name::Static(name), cat);
    }

    fn open_named(&mut self, name: &Arc<str>, cat: &'static str) {
        self.push_open(Name::Shared(Arc::clone(name)), cat);
    }

    fn close(&mut self, args: impl FnOnce() -> Args) {
        let now = Clock::get().now();
        if let Some(i) = self.open.pop() {
            let e = &mut self.events[i];
            e.end = now;
            e.args = args();
        }
    }

    fn system(&mut self, name: &Arc<str>, at: Interval, args: impl FnOnce() -> Args) {
        self.events.push(Event {
            name: Name::Shared(Arc::clone(name)),
            cat: "system",
            tid: at.thread,
            start: at.start,
            end: at.end,
            args: args(),
        });
    }
}

impl Trace {
    fn push_open(&mut self, name: Name, cat: &'static str) {
        let now = Clock::get().now();
        self.open.push(self.events.len());
        self.events.push(Event {
            name,
            cat,
            tid: 0,
            start: now,
            end: now,
            args: Args::new(),
        });
    }
}

/// `s` as the inside of a JSON string.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd\u{1}é"), "a\\\"b\\\\c\\nd\\u0001é");
    }

    #[test]
    fn events_nest_and_a_frame_closes_what_a_failure_left_open() {
        let mut t = Trace::new(2);
        t.open_frame();
        t.open("Run", "phase");
        let name: Arc<str> = "Sys \"quoted\"".into();
        let now = Clock::get().now();
        t.system(
            &name,
            Interval {
                start: now,
                end: now,
                thread: 1,
            },
            || vec![("writes", Arg::from(3usize))],
        );
        t.open("Sync", "phase");
        t.close_frame(vec![
            ("frame", 1u64.into()),
            ("error", "boom".to_owned().into()),
        ]);
        assert!(t.open.is_empty());
        assert_eq!(t.frames(), 1);
        let mut out = Vec::new();
        t.write(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("{\"traceEvents\":[\n"), "{text}");
        assert!(text.contains("\"name\":\"Sys \\\"quoted\\\"\""), "{text}");
        assert!(
            text.contains("\"args\":{\"frame\":1,\"error\":\"boom\"}"),
            "{text}"
        );
        assert!(
            text.contains("\"args\":{\"name\":\"runsync-w0\"}"),
            "{text}"
        );
        assert!(
            text.trim_end().ends_with("],\"displayTimeUnit\":\"ms\"}"),
            "{text}"
        );
    }
}
