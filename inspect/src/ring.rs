//! The snapshot ring: the state before each of the last N frames, to rewind to.
//!
//! Entry `f % N` holds the state with `f` frames completed (the state frame `f` starts
//! from). Taking one costs a [`Runtime::snapshot_into`] every frame (about a `memcpy` of
//! the columns, no allocation once the entry has grown): opt-in.
//!
//! After a rewind to frame `k`, the entries of frames after `k` still hold the first run;
//! as the frames are run again, each new state is compared with the recorded one by
//! [`World::checksum`](runsync::World::checksum) before its entry is overwritten, so a
//! re-simulation that diverges is caught at its first differing frame. The recorded
//! states' checksums are computed at the rewind (each restored in turn), not every frame:
//! a checksum costs several times a snapshot, and most frames are never rewound to. The
//! recorded states after a divergence belong to another history and are dropped.

use runsync::{Runtime, RuntimeSnapshot};

struct Entry {
    snapshot: RuntimeSnapshot,
    /// The world's checksum in this state, once computed (at a rewind).
    checksum: Option<u64>,
    valid: bool,
}

/// The ring; capacity 0 is off.
pub(crate) struct Ring {
    entries: Vec<Entry>,
    /// Why it stopped recording (a snapshot failed: a type not opted in), if it did.
    error: Option<String>,
}

impl Ring {
    pub(crate) fn new(capacity: usize) -> Ring {
        Ring {
            entries: (0..capacity)
                .map(|_| Entry {
                    snapshot: RuntimeSnapshot::new(),
                    checksum: None,
                    valid: false,
                })
                .collect(),
            error: None,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    fn recording(&self) -> bool {
        !self.entries.is_empty() && self.error.is_none()
    }

    fn entry(&self, frame: u64) -> Option<&Entry> {
        let s = self
            .entries
            .get((frame % self.entries.len().max(1) as u64) as usize)?;
        (s.valid && s.snapshot.frame() == frame).then_some(s)
    }

    /// Whether the state with `frame` frames completed is held.
    pub(crate) fn holds(&self, frame: u64) -> bool {
        self.entry(frame).is_some()
    }

    /// The oldest and newest frames held, if any. (Held frames are contiguous: each
    /// frame's entry is written before it runs, and a rewind or divergence drops only
    /// frames after the one kept.)
    pub(crate) fn range(&self) -> Option<(u64, u64)> {
        let frames = self
            .entries
            .iter()
            .filter(|s| s.valid)
            .map(|s| s.snapshot.frame());
        let (lo, hi) = frames.fold((u64::MAX, 0), |(lo, hi), f| (lo.min(f), hi.max(f)));
        (lo != u64::MAX).then_some((lo, hi))
    }

    /// Before a frame: records the state it starts from. A failing snapshot (a type not
    /// opted in) stops the ring and keeps the error to show.
    pub(crate) fn record(&mut self, rt: &Runtime) {
        if !self.recording() {
            return;
        }
        let frame = rt.frame_count();
        let len = self.entries.len() as u64;
        let entry = &mut self.entries[(frame % len) as usize];
        match rt.snapshot_into(&mut entry.snapshot) {
            Ok(()) => {
                entry.checksum = None;
                entry.valid = true;
            }
            Err(e) => {
                entry.valid = false;
                self.error = Some(format!(
                    "the snapshot ring stopped: {e} (opt every type in with \
                     `World::snapshotting`, or build the inspector without `ring`)"
                ));
            }
        }
    }

    /// After a frame: if the state reached was recorded by an earlier run (we are
    /// re-simulating after a rewind), whether it is bit-identical to it; `None` if there
    /// is nothing to compare with. On a difference, the recorded states from there on are
    /// dropped.
    pub(crate) fn verify(&mut self, rt: &Runtime) -> Option<bool> {
        if !self.recording() {
            return None;
        }
        let frame = rt.frame_count();
        let want = self.entry(frame)?.checksum?;
        let same = rt.checksum() == want;
        if !same {
            self.drop_after(frame - 1);
        }
        Some(same)
    }

    /// Rewinds to the state with `frame` frames completed (the caller checked
    /// [`holds`](Self::holds)), first recording the present (unless its entry is the one
    /// rewound to, or `edited`: the present has edits made since the last frame, and the
    /// ring already holds the state before them) and the checksums of the states after
    /// `frame`, to check the re-simulation against. On an error the runtime is left in
    /// the present (before its edits, if `edited`).
    pub(crate) fn rewind(
        &mut self,
        rt: &mut Runtime,
        frame: u64,
        edited: bool,
    ) -> Result<(), String> {
        let now = rt.frame_count();
        let len = self.entries.len() as u64;
        if frame.abs_diff(now) < len && !edited {
            self.record(rt);
            let present = &mut self.entries[(now % len) as usize];
            if present.valid {
                present.checksum = Some(rt.checksum());
            }
        }
        let later: Vec<usize> = (0..self.entries.len())
            .filter(|&i| {
                let s = &self.entries[i];
                s.valid && s.snapshot.frame() > frame && s.checksum.is_none()
            })
            .collect();
        let mut result = Ok(());
        for i in later {
            if let Err(e) = rt.try_restore(&self.entries[i].snapshot) {
                result = Err(e.to_string());
                break;
            }
            self.entries[i].checksum = Some(rt.checksum());
        }
        if result.is_ok() {
            let entry = self
                .entry(frame)
                .ok_or_else(|| format!("frame {frame} is not held"))?;
            result = rt.try_restore(&entry.snapshot).map_err(|e| e.to_string());
        }
        if result.is_err() {
            if let Some(present) = self.entry(now) {
                let _ = rt.try_restore(&present.snapshot);
            }
        }
        result
    }

    /// Restores the state with `frame` frames completed, as it is (for `explain`).
    pub(crate) fn restore(&self, rt: &mut Runtime, frame: u64) -> Result<(), String> {
        let entry = self
            .entry(frame)
            .ok_or_else(|| format!("frame {frame} is not held"))?;
        rt.try_restore(&entry.snapshot).map_err(|e| e.to_string())
    }

    /// Forgets the states after `frame` (another history).
    pub(crate) fn drop_after(&mut self, frame: u64) {
        for s in &mut self.entries {
            if s.valid && s.snapshot.frame() > frame {
                s.valid = false;
            }
        }
    }
}
