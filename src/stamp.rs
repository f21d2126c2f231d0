//! Content stamps: what lets a snapshot copy, a restore overwrite and a checksum digest
//! only what changed.
//!
//! A [`Stamp`] names the contents of one vector (a column, a table's entity list). Every
//! change through `&mut` clears it ([`touch`](Stamp::touch)); reading it
//! ([`get`](Stamp::get)) through `&` gives it a fresh number from a process-wide
//! counter if it was cleared. So two equal non-zero stamps, anywhere in the process (two
//! worlds, a world and a snapshot), mean the same contents: whoever took a stamp copied,
//! or digested, exactly the contents it names, and the contents cannot change without
//! clearing it again. A snapshot keeps the stamp of each vector it copied; the next save
//! into it skips a vector whose stamp is unchanged, a restore skips one whose stamp the
//! world's vector already has, and the checksum reuses the digest of a block whose
//! vector's stamp it digested before.
//!
//! Stamps never reach the state: skipping a copy or a digest gives the same bits as doing
//! it, so they cannot break determinism, only the skip's soundness. That rests on one
//! rule, kept by the types around them: the vectors are private, and every method that
//! lends them mutably or changes them touches their stamp.

use std::sync::atomic::{AtomicU64, Ordering};

/// The stamp of one vector's contents (see the module docs); 0 while unnamed.
#[derive(Debug, Default)]
pub(crate) struct Stamp(AtomicU64);

impl Stamp {
    /// The contents changed (or may have): forget their name. A plain store.
    #[inline]
    pub(crate) fn touch(&mut self) {
        *self.0.get_mut() = 0;
    }

    /// The contents' name, given now if they have none. Threads that race to name the
    /// same contents agree on the first one stored.
    #[inline]
    pub(crate) fn get(&self) -> u64 {
        // Relaxed throughout: the stamp publishes nothing. Contents can only change
        // through `&mut`, which orders them before any later `&` reader by itself.
        match self.0.load(Ordering::Relaxed) {
            0 => {
                let fresh = next();
                match self
                    .0
                    .compare_exchange(0, fresh, Ordering::Relaxed, Ordering::Relaxed)
                {
                    Ok(_) => fresh,
                    Err(named) => named,
                }
            }
            named => named,
        }
    }

    /// The contents' name if they have one, else 0 (which matches nothing).
    #[inline]
    pub(crate) fn peek(&mut self) -> u64 {
        *self.0.get_mut()
    }

    /// The contents were made equal to those named `stamp` (a restore's copy).
    #[inline]
    pub(crate) fn set(&mut self, stamp: u64) {
        *self.0.get_mut() = stamp;
    }
}

/// Whether contents named `saved` are those named `now`: equal and named (0 names
/// nothing).
#[inline]
pub(crate) fn same(saved: u64, now: u64) -> bool {
    saved == now && now != 0
}

/// A name no contents had before, in this process.
fn next() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_touched_stamp_gets_a_new_name_and_an_untouched_one_keeps_it() {
        let mut s = Stamp::default();
        assert_eq!(s.peek(), 0, "unnamed at first");
        let a = s.get();
        assert_ne!(a, 0);
        assert_eq!(s.get(), a, "reading again names the same contents");
        s.touch();
        assert_eq!(s.peek(), 0);
        let b = s.get();
        assert!(b != a && b != 0, "changed contents never get an old name");
        s.set(a);
        assert_eq!(s.get(), a);
        assert!(same(a, a) && !same(a, b) && !same(0, 0));
    }

    #[test]
    fn threads_naming_one_stamp_agree() {
        let s = Stamp::default();
        let names: Vec<u64> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4).map(|_| scope.spawn(|| s.get())).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(names.iter().all(|&n| n == names[0] && n != 0));
    }
}
