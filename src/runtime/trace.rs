//! Trace files: [`Runtime::start_trace`] and [`Runtime::finish_trace`] (the recorder and
//! the file's format are `crate::trace`).

use std::io;

use super::Runtime;
use crate::stats::FrameError;
use crate::trace::{Args, Trace};

impl Runtime {
    /// Starts recording a trace of the frames this runtime runs from now on (by
    /// [`frame`](Self::frame), [`try_frame`](Self::try_frame), [`advance`](Self::advance),
    /// a replay...), to write with [`finish_trace`](Self::finish_trace) as a Chrome /
    /// Perfetto trace-event JSON file: open it in <https://ui.perfetto.dev> (or
    /// `chrome://tracing`). No profiler and no cargo feature needed. A trace already being
    /// recorded is discarded.
    ///
    /// What it shows: on the thread that runs frames, each frame (its number and figures:
    /// entities, writes, commands, merged, dropped, spawned, despawned, messages, and the
    /// error of a failed frame), each [stage](Self::add_stage) if there are several, Run
    /// and Sync, and Sync's steps (`gather`, `fold_all`, `fold_resources`,
    /// `return_buffers`, `commands`, `deliver_messages`); each system, by name, on the
    /// thread that ran it (`runsync-w{i}`, or the frame thread), with its writes, commands
    /// and own time.
    ///
    /// The trace is kept in memory until written: some 180 bytes per event with its
    /// arguments, about (systems + 9) events per frame (the arena, with 11 systems: 3.4 KB
    /// a frame). A frame that is not traced pays one branch for it.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// let mut rt = Runtime::builder().workers(2).build(World::new());
    /// rt.add_system_named("Think", |_: &World, _: &mut Output| {});
    /// rt.start_trace();
    /// for _ in 0..3 {
    ///     rt.frame();
    /// }
    /// let mut json = Vec::new();
    /// assert_eq!(rt.finish_trace(&mut json).unwrap(), 3);
    /// let json = String::from_utf8(json).unwrap();
    /// assert!(json.starts_with(r#"{"traceEvents":["#));
    /// assert!(json.contains(r#""name":"Think","cat":"system","ph":"X""#));
    /// ```
    pub fn start_trace(&mut self) {
        self.trace = Some(Box::new(Trace::new(self.pool.threads())));
    }

    /// Stops recording the trace started by [`start_trace`](Self::start_trace) and writes
    /// it to `w` as trace-event JSON (`{"traceEvents": [...]}`: complete events, `"ph":
    /// "X"`, times in microseconds since the trace started). Returns the number of frames
    /// it holds.
    ///
    /// # Errors
    /// An error of kind [`InvalidInput`](io::ErrorKind::InvalidInput) if no trace is being
    /// recorded; else `w`'s errors.
    pub fn finish_trace(&mut self, w: &mut impl io::Write) -> io::Result<u64> {
        let trace = self.trace.take().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "runsync: no trace is being recorded (see Runtime::start_trace)",
            )
        })?;
        trace.write(w)?;
        Ok(trace.frames())
    }

    /// Whether a trace is being recorded ([`start_trace`](Self::start_trace)).
    pub fn is_tracing(&self) -> bool {
        self.trace.is_some()
    }

    /// One frame, its timeline written to `trace`, then the frame's own event with its
    /// figures (and its error if it failed).
    pub(super) fn traced_frame(&mut self, trace: &mut Trace) -> Result<(), FrameError> {
        trace.open_frame();
        let result = self.run_frame(trace);
        let stats = &self.stats;
        let mut args: Args = vec![
            ("frame", stats.frame.into()),
            ("entities", stats.entities.into()),
            (
                "writes",
                stats.systems.iter().map(|s| s.writes).sum::<usize>().into(),
            ),
            (
                "commands",
                stats
                    .systems
                    .iter()
                    .map(|s| s.commands)
                    .sum::<usize>()
                    .into(),
            ),
            ("merged", stats.merged.into()),
            ("dropped", stats.dropped.into()),
            ("spawned", stats.spawned.into()),
            ("despawned", stats.despawned.into()),
            ("messages", stats.messages.into()),
        ];
        if let Err(e) = &result {
            args.push(("error", e.to_string().into()));
        }
        trace.close_frame(args);
        result
    }
}
