//! A ring of per-frame records, found by the frame's start (what the rewind ring calls a
//! frame): the inputs and the edits the inspector keeps beside its snapshots.

/// One record of type `T` for each of the last `capacity` frame starts: the record of
/// start `s` lives in entry `s % capacity`, so a later frame overwrites it.
pub(crate) struct ByFrame<T> {
    entries: Vec<Option<(u64, T)>>,
}

impl<T> ByFrame<T> {
    /// Room for `capacity` frames (0: keeps nothing).
    pub(crate) fn new(capacity: usize) -> Self {
        ByFrame {
            entries: (0..capacity).map(|_| None).collect(),
        }
    }

    /// The record of the frame starting from `start`, if it is still kept.
    pub(crate) fn get(&self, start: u64) -> Option<&T> {
        let len = self.entries.len() as u64;
        if len == 0 {
            return None;
        }
        match &self.entries[(start % len) as usize] {
            Some((s, t)) if *s == start => Some(t),
            _ => None,
        }
    }

    /// The place of the frame starting from `start`, with what it holds (the record of
    /// this frame or of an older one it overwrites), to be written; `None` with no room.
    pub(crate) fn place(&mut self, start: u64) -> Option<&mut Option<(u64, T)>> {
        let len = self.entries.len() as u64;
        if len == 0 {
            return None;
        }
        Some(&mut self.entries[(start % len) as usize])
    }

    /// The frame starts kept, in no particular order.
    pub(crate) fn starts(&self) -> impl Iterator<Item = u64> + '_ {
        self.entries.iter().flatten().map(|(s, _)| *s)
    }

    /// Forgets the frames starting from `start` on.
    pub(crate) fn forget_from(&mut self, start: u64) {
        for s in &mut self.entries {
            if s.as_ref().is_some_and(|(at, _)| *at >= start) {
                *s = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_found_until_a_later_one_takes_its_place() {
        let mut r = ByFrame::<u32>::new(3);
        for start in 0..5 {
            *r.place(start).unwrap() = Some((start, start as u32 * 10));
        }
        assert_eq!((r.get(1), r.get(2), r.get(4)), (None, Some(&20), Some(&40)));
        let mut starts: Vec<u64> = r.starts().collect();
        starts.sort_unstable();
        assert_eq!(starts, [2, 3, 4]);
        r.forget_from(3);
        assert_eq!((r.get(2), r.get(3)), (Some(&20), None));
        let mut none = ByFrame::<u32>::new(0);
        assert!(none.place(0).is_none() && none.get(0).is_none());
    }
}
