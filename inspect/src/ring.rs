//! The snapshot ring: the state before each of the last N frames, to rewind to.
//!
//! Slot `f % N` holds the state with `f` frames completed (the state frame `f` starts
//! from), with its [`World::checksum`](runsync::World::checksum). Taking one costs a
//! [`Runtime::snapshot_into`] (about a `memcpy` of the columns, no allocation once the
//! slot has grown) and a checksum, every frame: opt-in.
//!
//! After a rewind to frame `k`, the slots of frames after `k` still hold the first run;
//! as the frames are run again, each new state is compared with the recorded one (by
//! checksum) before its slot is overwritten, so a re-simulation that diverges is caught at
//! its first differing frame. The recorded states after a divergence belong to another
//! history and are dropped.

use runsync::{Runtime, RuntimeSnapshot};

struct Slot {
    snapshot: RuntimeSnapshot,
    checksum: u64,
    valid: bool,
}

/// The ring; capacity 0 is off.
pub(crate) struct Ring {
    slots: Vec<Slot>,
    /// Why it stopped recording (a snapshot failed: a type not opted in), if it did.
    error: Option<String>,
}

impl Ring {
    pub(crate) fn new(capacity: usize) -> Ring {
        Ring {
            slots: (0..capacity)
                .map(|_| Slot {
                    snapshot: RuntimeSnapshot::new(),
                    checksum: 0,
                    valid: false,
                })
                .collect(),
            error: None,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    fn recording(&self) -> bool {
        !self.slots.is_empty() && self.error.is_none()
    }

    fn slot(&self, frame: u64) -> Option<&Slot> {
        let s = self
            .slots
            .get((frame % self.slots.len().max(1) as u64) as usize)?;
        (s.valid && s.snapshot.frame() == frame).then_some(s)
    }

    /// Whether the state with `frame` frames completed is held.
    pub(crate) fn holds(&self, frame: u64) -> bool {
        self.slot(frame).is_some()
    }

    /// The oldest and newest frames held, if any. (Held frames are contiguous: each
    /// frame's slot is written before it runs, and a rewind or divergence drops only
    /// frames after the one kept.)
    pub(crate) fn range(&self) -> Option<(u64, u64)> {
        let frames = self
            .slots
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
        let len = self.slots.len() as u64;
        let slot = &mut self.slots[(frame % len) as usize];
        match rt.snapshot_into(&mut slot.snapshot) {
            Ok(()) => {
                slot.checksum = rt.world().checksum();
                slot.valid = true;
            }
            Err(e) => {
                slot.valid = false;
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
        let want = self.slot(frame)?.checksum;
        let same = rt.world().checksum() == want;
        if !same {
            self.drop_after(frame - 1);
        }
        Some(same)
    }

    /// Restores the state with `frame` frames completed. The caller checked
    /// [`holds`](Self::holds).
    pub(crate) fn restore(&self, rt: &mut Runtime, frame: u64) -> Result<(), String> {
        let slot = self
            .slot(frame)
            .ok_or_else(|| format!("frame {frame} is not held"))?;
        rt.try_restore(&slot.snapshot).map_err(|e| e.to_string())
    }

    /// Forgets the states after `frame` (another history).
    fn drop_after(&mut self, frame: u64) {
        for s in &mut self.slots {
            if s.valid && s.snapshot.frame() > frame {
                s.valid = false;
            }
        }
    }
}
