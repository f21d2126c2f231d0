//! The frame timeline: figures of the last frames the inspector ran, from
//! [`Runtime::stats`], in fixed memory (a record is written in place: no allocation per
//! frame, unless a frame fails and its error is kept as text).

use runsync::{FrameError, Runtime};
use serde::Serialize;

/// Where a frame's input came from (see `inputs.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum InputSource {
    /// Its recorded input: it ran before (a re-simulation, `explain`).
    Recorded,
    /// The input a `step` request gave.
    Api,
    /// The game's callback ([`Inspector::frame_with`](crate::Inspector::frame_with)).
    Game,
    /// The world's, as the game left it.
    #[default]
    World,
}

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
    /// Where its input came from.
    pub(crate) input: InputSource,
    /// The game's plotted values after it, in the order of the timeline's `plots`
    /// (`NaN`, sent as `null`, for none).
    pub(crate) values: Vec<f64>,
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
        input: InputSource,
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
        r.input = input;
    }

    /// The last record written, if any.
    pub(crate) fn last_mut(&mut self) -> Option<&mut Record> {
        let seq = self.last_seq()?;
        let at = (seq % self.capacity as u64) as usize;
        self.records.get_mut(at)
    }

    /// Sets the last record's `resim` (for `explain`, which compares the re-run itself).
    pub(crate) fn set_last_resim(&mut self, resim: Option<bool>) {
        if let Some(seq) = self.last_seq() {
            let at = (seq % self.capacity as u64) as usize;
            self.records[at].resim = resim;
        }
    }

    /// The records after `since` (all held if `None`), oldest first; an error (to answer
    /// `400`) if `since` is after the last record written: a client can only have seen
    /// sequence numbers up to that one (it talks to another game, or makes them up).
    pub(crate) fn since(&self, since: Option<u64>) -> Result<Vec<&Record>, String> {
        let first = match since {
            None => 0,
            Some(s) => match (self.last_seq(), s.checked_add(1)) {
                (Some(last), Some(next)) if s <= last => next,
                (last, _) => {
                    return Err(format!(
                        "`since` is {s}, but the last timeline record is {}: pass the `seq` \
                         of a record this inspector gave you, or leave `since` out for every \
                         record held",
                        last.map_or("none yet".to_owned(), |l| format!("seq {l}"))
                    ));
                }
            },
        };
        let mut out: Vec<&Record> = self.records.iter().filter(|r| r.seq >= first).collect();
        out.sort_by_key(|r| r.seq);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeline(records: u64) -> Timeline {
        let mut t = Timeline::new(4);
        for seq in 0..records {
            let at = (seq % 4) as usize;
            if at == t.records.len() {
                t.records.push(Record::default());
            }
            t.records[at].seq = seq;
            t.next_seq = seq + 1;
        }
        t
    }

    fn seqs(t: &Timeline, since: Option<u64>) -> Result<Vec<u64>, String> {
        t.since(since).map(|r| r.iter().map(|r| r.seq).collect())
    }

    #[test]
    fn since_answers_the_records_after_it_and_refuses_what_was_never_written() {
        let t = timeline(6);
        assert_eq!(seqs(&t, None).unwrap(), [2, 3, 4, 5]);
        assert_eq!(seqs(&t, Some(0)).unwrap(), [2, 3, 4, 5]);
        assert_eq!(seqs(&t, Some(3)).unwrap(), [4, 5]);
        assert_eq!(seqs(&t, Some(5)).unwrap(), [] as [u64; 0]);
        for s in [6, 7, u64::MAX - 1, u64::MAX] {
            let e = seqs(&t, Some(s)).unwrap_err();
            assert!(e.contains("last timeline record is seq 5"), "{e}");
        }
        let empty = timeline(0);
        assert_eq!(seqs(&empty, None).unwrap(), [] as [u64; 0]);
        for s in [0, u64::MAX] {
            assert!(seqs(&empty, Some(s)).unwrap_err().contains("none yet"));
        }
    }
}
