//! The frame timeline: figures of the last frames the inspector ran, from
//! [`Runtime::stats`], in fixed memory (a record is written in place: no allocation per
//! frame, unless a frame fails and its error is kept as text).

use runsync::{FrameError, Runtime};
use serde::Serialize;

/// One frame as the timeline shows it.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Record {
    /// Position in the timeline: increases by one per frame run, also across rewinds
    /// (where `frame` goes back).
    pub(crate) seq: u64,
    /// The frame's number, from 1 ([`runsync::FrameStats::frame`]).
    pub(crate) frame: u64,
    pub(crate) run_ns: u64,
    pub(crate) sync_ns: u64,
    /// Each system's time, in registration order (0 if it did not run).
    pub(crate) systems_ns: Vec<u64>,
    pub(crate) merged: u64,
    pub(crate) dropped: u64,
    pub(crate) entities: usize,
    /// Why the frame failed, if it did.
    pub(crate) error: Option<String>,
    /// For a frame run again after a rewind: whether it reproduced the recorded state.
    pub(crate) resim: Option<bool>,
    /// Whether the inspector ran it again to record provenance (`explain`).
    pub(crate) explain: bool,
}

pub(crate) struct Timeline {
    records: Vec<Record>,
    capacity: usize,
    next_seq: u64,
}

impl Timeline {
    pub(crate) fn new(capacity: usize) -> Timeline {
        Timeline {
            records: Vec::with_capacity(capacity),
            capacity: capacity.max(1),
            next_seq: 0,
        }
    }

    /// The last sequence number written, if any.
    pub(crate) fn last_seq(&self) -> Option<u64> {
        self.next_seq.checked_sub(1)
    }

    /// Appends the last frame's figures, overwriting the oldest record when full.
    pub(crate) fn push(
        &mut self,
        rt: &Runtime,
        result: &Result<(), FrameError>,
        resim: Option<bool>,
        explain: bool,
    ) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let at = (seq % self.capacity as u64) as usize;
        if at == self.records.len() {
            self.records.push(Record::default());
        }
        let r = &mut self.records[at];
        let stats = rt.stats();
        r.seq = seq;
        r.frame = stats.frame;
        r.run_ns = stats.run.as_nanos() as u64;
        r.sync_ns = stats.sync.as_nanos() as u64;
        // Reuses the vector's memory: the same number of systems every frame.
        r.systems_ns.clear();
        r.systems_ns
            .extend(stats.systems.iter().map(|s| s.time.as_nanos() as u64));
        r.merged = stats.merged;
        r.dropped = stats.dropped;
        r.entities = stats.entities;
        r.error = result.as_ref().err().map(|e| e.to_string());
        r.resim = resim;
        r.explain = explain;
    }

    /// Sets the last record's `resim` (for `explain`, which compares the re-run itself).
    pub(crate) fn set_last_resim(&mut self, resim: Option<bool>) {
        if let Some(seq) = self.last_seq() {
            let at = (seq % self.capacity as u64) as usize;
            self.records[at].resim = resim;
        }
    }

    /// The records after `since` (all held if `None`), oldest first.
    pub(crate) fn since(&self, since: Option<u64>) -> Vec<&Record> {
        let first = since.map_or(0, |s| s + 1);
        let mut out: Vec<&Record> = self.records.iter().filter(|r| r.seq >= first).collect();
        out.sort_by_key(|r| r.seq);
        out
    }
}
