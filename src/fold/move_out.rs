//! Moving output values out of their vectors by position: the one place the folds read
//! values with `ptr::read`. Two users:
//!
//! - the sweep ([`TakenValues`], [`Claim`], [`Rows`]): several workers move the values of
//!   the same sources at once, each its own stretch of every source (an ordered source's
//!   values for a row range are a contiguous stretch of its emission order);
//! - the keyed path ([`permute`]): values move from emission order to key order;
//! - the bucket path ([`group_by_key`]): values move from emission order straight into
//!   their row's group (a counting sort).
//!
//! Safe code cannot do either without copying every value once more: `Vec::drain` takes
//! the whole vector, and `&mut [O]` lends values without letting them go.
//!
//! # Ownership protocol
//!
//! Every value is moved out once or dropped once, whatever panics, and the soundness of
//! that does not depend on the callers' arithmetic (a wrong count is a panic, never a
//! value read twice):
//!
//! 1. [`TakenValues::new`] takes every value of a fold's sources: it notes each segment's length
//!    and sets the vector's length to 0, as `Vec::drain` does, so from then on the vectors
//!    neither own nor drop the values (if everything below leaked, the values would leak,
//!    never be dropped twice). Until the `TakenValues` and its claims are gone the vectors are
//!    only read, through shared references.
//! 2. [`TakenValues::claim`] hands out, for every source, its next values in emission order as
//!    one [`Claim`] that owns them. Claims follow each other (each starts where the one
//!    before ended, counted by the `TakenValues`), so no value is in two of them; a claim may
//!    go to another worker.
//! 3. [`Claim::rows`] moves the next values of some sources out as [`Rows`] (one array
//!    per row, each value within one segment, counted), [`Claim::take`] one value.
//! 4. Whatever a [`Rows`], [`Claim`] or [`TakenValues`] still owns when it is dropped, it
//!    drops: on the normal path nothing is left; after a merge panics, the unwinding
//!    drops what the merge never saw.
//!
//! [`permute`] keeps a bitset of the indices it moved: an index named twice panics, and
//! the values not moved are dropped.
//!
//! Miri runs the tests below (and the fold tests that use them) under Tree Borrows with
//! strict provenance: `cargo +nightly miri test -p runsync --lib fold::`.

use std::marker::PhantomData;
use std::mem::needs_drop;
use std::ptr;

use crate::component::Component;
use crate::output::buffer::OutBuf;

/// A place in one source's values, and how many values from there on are owned.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct MoveCursor {
    seg: u32,
    off: u32,
    left: usize,
}

/// Per-type scratch of [`TakenValues`] (plain numbers; capacity kept across frames).
#[derive(Default)]
pub(super) struct TakeScratch {
    /// Every segment's length when taken, source by source.
    lens: Vec<u32>,
    /// Source `s`'s lengths are `lens[firsts[s]..firsts[s + 1]]`.
    firsts: Vec<u32>,
    /// Per source: the first value not claimed yet.
    next: Vec<MoveCursor>,
}

impl TakeScratch {
    pub(super) fn capacity_bytes(&self) -> usize {
        self.lens.capacity() * 4
            + self.firsts.capacity() * 4
            + self.next.capacity() * size_of::<MoveCursor>()
    }
}

/// The sources of one fold, their values taken (shared by a [`TakenValues`] and its claims).
struct Sources<'a, C: Component> {
    inbox: &'a [(u32, Box<OutBuf<C>>)],
    lens: &'a [u32],
    firsts: &'a [u32],
    /// The values are owned (moved out, dropped) through this, wherever it goes.
    _owns: PhantomData<C::Output>,
}

impl<C: Component> Clone for Sources<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C: Component> Copy for Sources<'_, C> {}

impl<C: Component> Sources<'_, C> {
    /// The length segment `seg` of source `s` had when taken.
    #[inline]
    fn len(&self, s: usize, seg: u32) -> u32 {
        self.lens[self.firsts[s] as usize + seg as usize]
    }

    /// Moves `cur` past the segments it has used up, so that it points at a value (it
    /// owns at least one).
    #[inline]
    fn settle(&self, s: usize, cur: &mut MoveCursor) {
        debug_assert!(cur.left > 0);
        while cur.off == self.len(s, cur.seg) {
            cur.seg += 1;
            cur.off = 0;
        }
    }

    /// A pointer to the value at `cur` and the values after it in its segment, `n` of
    /// them (counted out of `cur`, which moves past them).
    ///
    /// The caller owns those `n` values from then on: it must move each out (or drop it)
    /// once, and only through this pointer.
    #[inline]
    fn split_off(&self, s: usize, cur: &mut MoveCursor, n: usize) -> *const C::Output {
        assert!(n <= cur.left, "more values asked for than owned");
        if n == 0 {
            return ptr::null();
        }
        self.settle(s, cur);
        let len = self.len(s, cur.seg);
        assert!(
            n <= (len - cur.off) as usize,
            "values asked for across segments"
        );
        let values = &self.inbox[s].1.segments[cur.seg as usize].values;
        // SAFETY: `off + n <= len`, the segment's length when taken, which is within the
        // vector's allocation (its capacity has not changed: the vector is only read while
        // taken), so the offset stays inside it. `as_ptr` is the vector's own buffer
        // pointer: reading through it is allowed (we never write through it).
        let p = unsafe { values.as_ptr().add(cur.off as usize) };
        cur.off += n as u32;
        cur.left -= n;
        p
    }

    /// Drops the values `cur` owns.
    fn drop_owned(&self, s: usize, cur: &mut MoveCursor) {
        while cur.left > 0 {
            self.settle(s, cur);
            let n = cur.left.min((self.len(s, cur.seg) - cur.off) as usize);
            let p = self.split_off(s, cur, n);
            for k in 0..n {
                // SAFETY: `split_off` handed us the `n` values at `p`, each initialised
                // (set when the source was written, never moved out: ownership passed
                // only from `TakenValues` to a claim to here) and read nowhere else.
                drop(unsafe { ptr::read(p.add(k)) });
            }
        }
    }
}

/// Every value of a fold's sources, taken from their vectors (see the module docs).
pub(super) struct TakenValues<'a, C: Component> {
    sources: Sources<'a, C>,
    next: &'a mut [MoveCursor],
}

impl<'a, C: Component> TakenValues<'a, C> {
    /// Takes every value of `inbox`'s sources; until this and its claims are dropped,
    /// `inbox` is only read and its vectors are empty.
    pub(super) fn new(
        inbox: &'a mut [(u32, Box<OutBuf<C>>)],
        scratch: &'a mut TakeScratch,
    ) -> Self {
        let TakeScratch { lens, firsts, next } = scratch;
        lens.clear();
        firsts.clear();
        next.clear();
        for (_, src) in inbox.iter_mut() {
            firsts.push(u32::try_from(lens.len()).expect("fewer than 2^32 segments"));
            let mut total = 0;
            for seg in &mut src.segments {
                let n = seg.values.len();
                lens.push(u32::try_from(n).expect("fewer than 2^32 values in a segment"));
                total += n;
                // SAFETY: a length of 0 is within any capacity and claims no element is
                // initialised. The values stay in the buffer, owned by this `TakenValues` now.
                unsafe { seg.values.set_len(0) };
            }
            next.push(MoveCursor {
                seg: 0,
                off: 0,
                left: total,
            });
        }
        firsts.push(u32::try_from(lens.len()).expect("fewer than 2^32 segments"));
        TakenValues {
            sources: Sources {
                inbox,
                lens,
                firsts,
                _owns: PhantomData,
            },
            next,
        }
    }

    /// Values not claimed yet from source `s`.
    pub(super) fn left(&self, s: usize) -> usize {
        self.next[s].left
    }

    /// Claims the next `count(s)` values of every source `s` (in emission order), keeping
    /// their places in `cursors` (one per source; what it held is overwritten).
    pub(super) fn claim<'c>(
        &mut self,
        cursors: &'c mut [MoveCursor],
        count: impl Fn(usize) -> usize,
    ) -> Claim<'c, C>
    where
        'a: 'c,
    {
        assert_eq!(cursors.len(), self.next.len(), "one cursor per source");
        for (s, (mine, next)) in cursors.iter_mut().zip(self.next.iter_mut()).enumerate() {
            let n = count(s);
            assert!(
                n <= next.left,
                "more values claimed than the source has left"
            );
            *mine = MoveCursor { left: n, ..*next };
            // Move `next` past the claimed values, segment by segment.
            let mut n = n;
            while n > 0 {
                self.sources.settle(s, next);
                let here = n.min((self.sources.len(s, next.seg) - next.off) as usize);
                next.off += here as u32;
                next.left -= here;
                n -= here;
            }
        }
        Claim {
            sources: self.sources,
            cursors,
        }
    }
}

impl<C: Component> Drop for TakenValues<'_, C> {
    fn drop(&mut self) {
        if needs_drop::<C::Output>() {
            for (s, cur) in self.next.iter_mut().enumerate() {
                self.sources.drop_owned(s, cur);
            }
        }
    }
}

/// Consecutive values of every source, owned (see [`TakenValues::claim`]); may go to another
/// worker.
pub(super) struct Claim<'c, C: Component> {
    sources: Sources<'c, C>,
    cursors: &'c mut [MoveCursor],
}

impl<'c, C: Component> Claim<'c, C> {
    /// Moves out the next `n` values of each source in `lanes`, as `n` arrays (row `k`
    /// holds the `k`-th of each, in the order of `lanes`). Each source's `n` values must
    /// lie in one segment (the values of one run do).
    #[inline]
    pub(super) fn rows<const N: usize>(
        &mut self,
        lanes: [u32; N],
        n: usize,
    ) -> Rows<'c, C::Output, N> {
        let ptrs = lanes.map(|s| {
            self.sources
                .split_off(s as usize, &mut self.cursors[s as usize], n)
        });
        Rows {
            ptrs,
            len: n,
            next: 0,
            _owns: PhantomData,
        }
    }

    /// Like [`rows`](Self::rows) for up to [`DYN_LANES`] sources, their number known at
    /// run time: rows are pushed onto a `Vec`, a batch at a time (see
    /// [`RowsDyn::next_batch`]).
    #[inline]
    pub(super) fn rows_dyn(&mut self, lanes: &[u32], n: usize) -> RowsDyn<'c, C::Output> {
        assert!(lanes.len() <= DYN_LANES, "at most {DYN_LANES} sources");
        let mut ptrs = [ptr::null(); DYN_LANES];
        for (p, &s) in ptrs.iter_mut().zip(lanes) {
            *p = self
                .sources
                .split_off(s as usize, &mut self.cursors[s as usize], n);
        }
        RowsDyn {
            ptrs,
            lanes: lanes.len(),
            len: n,
            next: 0,
            _owns: PhantomData,
        }
    }

    /// Moves out the next value of source `s`.
    #[inline]
    pub(super) fn take(&mut self, s: u32) -> C::Output {
        let p = self
            .sources
            .split_off(s as usize, &mut self.cursors[s as usize], 1);
        // SAFETY: `split_off` handed us this one value, initialised and read nowhere else.
        unsafe { ptr::read(p) }
    }
}

impl<C: Component> Drop for Claim<'_, C> {
    fn drop(&mut self) {
        if needs_drop::<C::Output>() {
            for (s, cur) in self.cursors.iter_mut().enumerate() {
                self.sources.drop_owned(s, cur);
            }
        }
    }
}

/// `len` rows of values, `N` per row (one from each of `N` sources), owned and moved out
/// a row at a time; those not moved out are dropped with it.
pub(super) struct Rows<'c, O, const N: usize> {
    /// Source `j`'s values are `ptrs[j][0..len]`.
    ptrs: [*const O; N],
    len: usize,
    /// Rows `next..len` are still owned.
    next: usize,
    _owns: PhantomData<(&'c [O], O)>,
}

impl<O, const N: usize> Iterator for Rows<'_, O, N> {
    type Item = [O; N];

    #[inline(always)]
    fn next(&mut self) -> Option<[O; N]> {
        if self.next == self.len {
            return None;
        }
        let k = self.next;
        self.next += 1;
        // SAFETY: `k < len`, and `ptrs[j][0..len]` were handed to this `Rows` by
        // `split_off` (initialised, read nowhere else); `next` moved past `k` first, so
        // this row is read once and never dropped here again.
        Some(self.ptrs.map(|p| unsafe { ptr::read(p.add(k)) }))
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.len - self.next;
        (n, Some(n))
    }
}

impl<O, const N: usize> Drop for Rows<'_, O, N> {
    fn drop(&mut self) {
        if needs_drop::<O>() {
            for row in self.by_ref() {
                drop(row);
            }
        }
    }
}

/// Most sources a [`RowsDyn`] takes a row from.
pub(super) const DYN_LANES: usize = 16;

/// [`Rows`] of `lanes` sources (at most [`DYN_LANES`]), their number known at run time.
pub(super) struct RowsDyn<'c, O> {
    /// Source `j`'s values are `ptrs[j][0..len]`, for `j < lanes`.
    ptrs: [*const O; DYN_LANES],
    lanes: usize,
    len: usize,
    /// Rows `next..len` are still owned.
    next: usize,
    _owns: PhantomData<(&'c [O], O)>,
}

impl<O> RowsDyn<'_, O> {
    /// Moves the next rows' values, up to `max` rows, onto the end of `group`, row by row
    /// in source order (so row `i` of the batch is `group[i * lanes..(i + 1) * lanes]`
    /// past what `group` held); returns how many rows.
    #[inline]
    pub(super) fn next_batch(&mut self, group: &mut Vec<O>, max: usize) -> usize {
        let (from, rows) = (self.next, max.min(self.len - self.next));
        self.next += rows;
        group.reserve(rows * self.lanes);
        for k in from..from + rows {
            for &p in &self.ptrs[..self.lanes] {
                // SAFETY: `k < len`, and `ptrs[j][0..len]` were handed to this `RowsDyn`
                // by `split_off` (initialised, read nowhere else); `next` moved past these
                // rows first, so each is read once and never dropped here again (a value
                // not pushed, if `push` could fail, would leak, not be dropped twice).
                group.push(unsafe { ptr::read(p.add(k)) });
            }
        }
        rows
    }
}

impl<O> Drop for RowsDyn<'_, O> {
    fn drop(&mut self) {
        if needs_drop::<O>() {
            for k in self.next..self.len {
                self.next = k + 1;
                for &p in &self.ptrs[..self.lanes] {
                    // SAFETY: as in `next_into`: row `k` is owned and unread, and `next`
                    // moved past it first.
                    drop(unsafe { ptr::read(p.add(k)) });
                }
            }
        }
    }
}

/// Moves every value of `from` into `to` (emptied first) in the order `order` gives:
/// `to[j]` is what was `from[order[j]]`. `seen` is scratch (a bitset of moved indices).
/// `from` is left empty, capacity kept.
///
/// # Panics
///
/// If `order` names an index twice or one out of range, or not every index; the values
/// not moved are dropped (and those moved stay in `to`).
pub(super) fn permute<O>(
    from: &mut Vec<O>,
    order: impl Iterator<Item = usize>,
    to: &mut Vec<O>,
    seen: &mut Vec<u64>,
) {
    let n = from.len();
    to.clear();
    to.reserve(n);
    seen.clear();
    seen.resize(n.div_ceil(64), 0);
    // SAFETY: a length of 0 is within any capacity and claims no element is initialised;
    // the `n` values stay in the buffer, owned by `guard` (which drops those not moved).
    unsafe { from.set_len(0) };
    let guard = Unmoved {
        values: from.as_ptr(),
        n,
        seen,
    };
    for i in order {
        assert!(i < n, "index {i} out of range (of {n})");
        let (w, bit) = (i / 64, 1u64 << (i % 64));
        assert!(guard.seen[w] & bit == 0, "index {i} named twice");
        guard.seen[w] |= bit;
        // SAFETY: `i < n`: an initialised value of the taken buffer (see above), not
        // moved before (its bit was clear, and is set now, so never again or dropped).
        to.push(unsafe { ptr::read(guard.values.add(i)) });
    }
    assert_eq!(to.len(), n, "every index must be named");
    drop(guard);
}

/// Moves every value of `from` into `to` (emptied first), grouped by key and stably: the
/// values of key 0 in their order in `from`, then those of key 1, and so on. `keys[i]` is
/// the key of `from[i]`. On return `ends[k]` is where key `k`'s group ends in `to` (it
/// starts where key `k - 1`'s ends, or at 0); `ends.len()` is the number of keys. `from`
/// is left empty, capacity kept.
///
/// Every place in `to` is computed here, from counts of `keys` themselves (a counting
/// sort), so no caller's arithmetic can make two values meet in one place.
///
/// # Panics
///
/// If `keys` and `from` differ in length, or a key is not below `ends.len()`: before any
/// value has moved.
pub(super) fn group_by_key<O>(from: &mut Vec<O>, keys: &[u32], ends: &mut [u32], to: &mut Vec<O>) {
    let n = from.len();
    assert_eq!(keys.len(), n, "one key per value");
    assert!(n <= u32::MAX as usize, "fewer than 2^32 values");
    ends.fill(0);
    for &k in keys {
        ends[k as usize] += 1; // a key out of range panics here, before anything moves
    }
    // Each key's first place: the counts of the keys before it.
    let mut at = 0u32;
    for e in ends.iter_mut() {
        let count = *e;
        *e = at;
        at += count;
    }
    debug_assert_eq!(at as usize, n);
    to.clear();
    to.reserve(n);
    // SAFETY: a length of 0 is within any capacity and claims no element is initialised;
    // the `n` values stay in the buffer and are moved out below, each once. Nothing below
    // can panic (every key was checked above), and if it could, the values would leak,
    // never be dropped twice.
    unsafe { from.set_len(0) };
    let (src, dst) = (from.as_ptr(), to.as_mut_ptr());
    for (i, &k) in keys.iter().enumerate() {
        let place = &mut ends[k as usize];
        // SAFETY: `i < n`: an initialised value of `from`'s buffer, read once (`i` goes up).
        // Key `k`'s places are its first place (the counts of the smaller keys) plus
        // 0..count(k), and exactly count(k) values have key `k`, so `place` stays inside
        // them: the places of different keys are disjoint, each is written once, and all
        // are below `n <= to.capacity()`.
        unsafe { dst.add(*place as usize).write(src.add(i).read()) };
        *place += 1;
    }
    // SAFETY: the loop wrote each of the places `0..n` once (the keys' places cover them:
    // their counts sum to `n`), so the first `n` elements are initialised.
    unsafe { to.set_len(n) };
}

/// The values of a taken vector not moved out by [`permute`] (their bits clear): dropped
/// with it.
struct Unmoved<'s, O> {
    values: *const O,
    n: usize,
    seen: &'s mut Vec<u64>,
}

impl<O> Drop for Unmoved<'_, O> {
    fn drop(&mut self) {
        if !needs_drop::<O>() {
            return;
        }
        for i in 0..self.n {
            if self.seen[i / 64] & (1 << (i % 64)) == 0 {
                self.seen[i / 64] |= 1 << (i % 64);
                // SAFETY: `i < n` and its bit was clear: an initialised value of the taken
                // buffer that was never moved out; its bit is set first, so once.
                drop(unsafe { ptr::read(self.values.add(i)) });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::rc::Rc;

    /// Values that count themselves: Miri and the counts catch a value dropped twice or
    /// never. (`String`s: Miri reports a leak or a double free.)
    struct S;
    impl Component for S {
        type Output = String;
    }

    fn source(segments: &[&[&str]]) -> Box<OutBuf<S>> {
        let mut b = Box::new(OutBuf::<S>::default());
        for (k, seg) in segments.iter().enumerate() {
            b.start_run(0, 100 * k as u32, true);
            for v in seg.iter() {
                b.push_in_run(v.to_string());
            }
        }
        b.seal();
        b
    }

    fn inbox() -> Vec<(u32, Box<OutBuf<S>>)> {
        vec![
            (0, source(&[&["a0", "a1", "a2"], &["a3"], &["a4", "a5"]])),
            (1, source(&[&["b0", "b1"], &["b2", "b3", "b4", "b5"]])),
        ]
    }

    #[test]
    fn claims_split_sources_and_move_every_value_once() {
        let mut inbox = inbox();
        let mut scratch = TakeScratch::default();
        let mut cursors = [MoveCursor::default(); 4];
        let (c0, c1) = cursors.split_at_mut(2);
        let mut taken = TakenValues::new(&mut inbox, &mut scratch);
        // Part 0 gets a0..a2 and b0, b1; part 1 the rest.
        let mut p0 = taken.claim(c0, |s| [3, 2][s]);
        let mut p1 = taken.claim(c1, |s| [3, 4][s]);
        assert_eq!((taken.left(0), taken.left(1)), (0, 0));
        drop(taken);
        let rows: Vec<[String; 2]> = p0.rows([0, 1], 2).collect();
        assert_eq!(rows, [["a0", "b0"], ["a1", "b1"]]);
        assert_eq!(p0.take(0), "a2");
        // Across a segment boundary: a3 is alone in its segment.
        let mut r = p1.rows([1, 0], 1);
        assert_eq!(r.next().unwrap(), ["b2", "a3"]);
        assert!(r.next().is_none());
        drop(r);
        assert_eq!(p1.take(0), "a4");
        // Partly read rows, and a claim with values left: dropped.
        let mut r = p1.rows([1], 1);
        assert_eq!(r.next().unwrap(), ["b3"]);
        drop(r);
        let mut group = Vec::new();
        let mut r = p1.rows_dyn(&[1, 0], 1);
        assert_eq!(r.next_batch(&mut group, 4), 1);
        assert_eq!(r.next_batch(&mut group, 4), 0);
        assert_eq!(group, ["b4", "a5"]);
        drop(r);
        let r = p1.rows_dyn(&[1], 1);
        drop(r);
        drop(p1);
        drop(p0);
        for (_, b) in &inbox {
            assert!(b.segments.iter().all(|s| s.values.is_empty()));
        }
    }

    #[test]
    fn dropping_the_taken_drops_what_was_not_claimed() {
        let mut inbox = inbox();
        let mut scratch = TakeScratch::default();
        let mut cursors = vec![MoveCursor::default(); 2];
        let mut taken = TakenValues::new(&mut inbox, &mut scratch);
        let mut c = taken.claim(&mut cursors, |s| s);
        assert_eq!(c.take(1), "b0");
        drop(taken);
        drop(c);
    }

    #[test]
    fn asking_for_more_than_owned_panics_and_leaks_nothing() {
        let mut inbox = inbox();
        let mut scratch = TakeScratch::default();
        let mut cursors = vec![MoveCursor::default(); 2];
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut taken = TakenValues::new(&mut inbox, &mut scratch);
            let mut c = taken.claim(&mut cursors, |_| 2);
            let _ = c.rows([0], 3);
        }));
        assert!(r.is_err());
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut inbox = self::inbox();
            let mut taken = TakenValues::new(&mut inbox, &mut scratch);
            // Across a segment boundary in one `rows` call.
            let mut c = taken.claim(&mut cursors, |_| 6);
            let _ = c.rows([1], 3);
        }));
        assert!(r.is_err());
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut inbox = self::inbox();
            let mut taken = TakenValues::new(&mut inbox, &mut scratch);
            let _ = taken.claim(&mut cursors, |_| 7);
        }));
        assert!(r.is_err());
    }

    #[test]
    fn a_panic_while_rows_are_read_drops_the_rest() {
        let mut inbox = inbox();
        let mut scratch = TakeScratch::default();
        let mut cursors = vec![MoveCursor::default(); 2];
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut taken = TakenValues::new(&mut inbox, &mut scratch);
            let mut c = taken.claim(&mut cursors, |_| 6);
            for row in c.rows([0, 1], 2) {
                assert!(row[0] != "a1", "merge panicked");
            }
        }));
        assert!(r.is_err());
    }

    #[test]
    fn permute_moves_in_order_and_checks_indices() {
        let mut seen = Vec::new();
        let mut to = Vec::new();
        let mut from: Vec<String> = (0..70).map(|i| i.to_string()).collect();
        let order: Vec<usize> = (0..70).map(|i| (i * 17) % 70).collect();
        permute(&mut from, order.iter().copied(), &mut to, &mut seen);
        assert!(from.is_empty() && from.capacity() >= 70);
        assert!(to.iter().zip(&order).all(|(v, &i)| *v == i.to_string()));
        // An index twice, one out of range, one missing: a panic, nothing leaked or
        // dropped twice.
        for bad in [vec![0, 1, 1], vec![0, 3, 1], vec![2, 0]] {
            let mut from: Vec<Rc<u8>> = (0..3).map(Rc::new).collect();
            let keep: Vec<Rc<u8>> = from.clone();
            let mut to = Vec::new();
            let r = catch_unwind(AssertUnwindSafe(|| {
                permute(&mut from, bad.iter().copied(), &mut to, &mut seen)
            }));
            assert!(r.is_err());
            drop(to);
            assert!(keep.iter().all(|v| Rc::strong_count(v) == 1), "{bad:?}");
        }
    }

    #[test]
    fn group_by_key_moves_each_value_once_stably() {
        let keys: Vec<u32> = (0..70u32).map(|i| (i * 7) % 9).collect();
        let mut from: Vec<String> = (0..70).map(|i| i.to_string()).collect();
        let (mut ends, mut to) = (vec![9; 11], vec!["old".to_string()]);
        group_by_key(&mut from, &keys, &mut ends, &mut to);
        assert!(from.is_empty() && from.capacity() >= 70);
        // Key by key (keys 9 and 10 have none), each key's values in their old order.
        let mut want: Vec<usize> = (0..70).collect();
        want.sort_by_key(|&i| keys[i]);
        assert!(to.iter().zip(&want).all(|(v, &i)| *v == i.to_string()));
        for k in 0..11 {
            let n = keys.iter().filter(|&&x| x == k).count() as u32;
            let start = if k == 0 { 0 } else { ends[k as usize - 1] };
            assert_eq!(ends[k as usize] - start, n, "key {k}");
        }
        assert_eq!(ends[10], 70);
        // A key out of range, or a key missing: a panic before anything moved; the
        // values stay where they were (dropped once, with `from`).
        for bad in [vec![0, 3, 1], vec![2, 0]] {
            let mut from: Vec<Rc<u8>> = (0..3).map(Rc::new).collect();
            let keep: Vec<Rc<u8>> = from.clone();
            let mut to = Vec::new();
            let r = catch_unwind(AssertUnwindSafe(|| {
                group_by_key(&mut from, &bad, &mut [0; 3], &mut to)
            }));
            assert!(r.is_err());
            assert_eq!(from.len(), 3, "{bad:?}");
            drop((from, to));
            assert!(keep.iter().all(|v| Rc::strong_count(v) == 1), "{bad:?}");
        }
    }
}
