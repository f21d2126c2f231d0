//! The keyed path: outputs not in row order — a source that visits rows out of order or
//! twice (scattered writes: each entity writing to some other one), or many sparse
//! sources — to a type of many more rows than outputs (else the
//! [`bucket`](super::bucket) path sorts them in one pass), merged by a hand-written merge.
//!
//! 1. [`keys`] — every output becomes an [`Item`]: its *dense key* (the target's place
//!    among all the type's rows: its column's first row plus its row) packed with its
//!    place in emission order over all sources (system order, then emission order). The
//!    values move, in that order, into one vector.
//! 2. [`sort`] — a stable LSD radix sort of the items on the significant bits of the key
//!    only, those that tell the type's rows apart (17 for 100k rows), in digits of at most
//!    [`DIGIT_BITS`] bits: two passes up to 1M rows, and a pass is skipped if its digit is
//!    the same for every item (writes to a few rows of a large type). Each pass scatters
//!    by its digit's counts, all counted in one pass. With many items on many workers
//!    ([`PAR_SORT_MIN_THREADS`]), each worker counts and scatters its own slice of the
//!    items; where an item goes is fixed by the counts of the slices before it, so
//!    nothing depends on timing.
//! 3. The values move from emission order to key order (`move_out::permute`); on the
//!    way, each key's row is marked changed (rows in increasing order, so a word of bits
//!    at a time).
//! 4. [`merge_groups`] — each key's outputs are now one slice, in system order then
//!    emission order (the sort is stable): one merge call per key, rows in increasing
//!    order. Large types merge in row ranges on the workers, like the in-order path.
//!
//! Same result at any worker count, bit for bit; if merges panic, the error names the
//! first key (in merge order) whose merge panicked.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::component::Component;
use crate::merge::Merge;
use crate::output::buffer::OutBuf;
use crate::pool::Pool;
use crate::storage::TypeMarks;

use super::move_out::permute;
use super::part::{
    Emptied, FailedAt, FoldJob, MAX_PARTS, OnUnwind, PAR_MIN_WRITES, dense_bases, row_ranges,
};

/// One output in the sort: its dense key (high 32 bits, what the sort orders by) and its
/// index in emission order (low 32 bits, carried along).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Item(u64);

impl Item {
    #[inline(always)]
    fn new(key: u32, index: u32) -> Self {
        Item((u64::from(key) << 32) | u64::from(index))
    }

    #[inline(always)]
    fn key(self) -> u32 {
        (self.0 >> 32) as u32
    }

    #[inline(always)]
    fn index(self) -> usize {
        self.0 as u32 as usize
    }

    /// Digit `shift..shift + bits` of the key, as `mask` selects it.
    #[inline(always)]
    fn digit(self, shift: u32, mask: u64) -> usize {
        ((self.0 >> (32 + shift)) & mask) as usize
    }
}

/// Widest radix digit. On scattered keys two passes of 9 or 10 bits beat three narrower
/// ones, but 11-bit digits (2048 places written at once) lose even to three 8-bit passes.
const DIGIT_BITS: u32 = 10;
/// A sort runs in slices over the workers only with this many workers and
/// ([`PAR_SORT_MIN_ITEMS`]) items. On two
/// cores slicing never paid (it was slower than one thread, whose passes stream, and
/// even a histogram alone gained little), so it is kept for wider machines, where each
/// worker's share shrinks: this gate is a guess, not a measurement.
const PAR_SORT_MIN_THREADS: usize = 4;
/// See [`PAR_SORT_MIN_THREADS`].
const PAR_SORT_MIN_ITEMS: usize = 1 << 20;
/// Most slices the items are split into for a parallel pass.
const MAX_SLICES: usize = 16;

/// Per-type scratch of the keyed path (capacity kept across frames).
pub(super) struct KeyedScratch<O> {
    /// The items; relaxed atomics so that workers can scatter into one buffer (plain
    /// loads and stores on the targets we know).
    items: Vec<AtomicU64>,
    spare: Vec<AtomicU64>,
    /// Digit counts: per pass (one thread) or per slice (parallel).
    counts: Vec<u32>,
    /// Column `c`'s first dense key; one more entry for the end.
    bases: Vec<u32>,
    /// Columns written.
    cols: Vec<u32>,
    /// The values in emission order, then in key order.
    flat: Vec<O>,
    sorted: Vec<O>,
    /// Indices moved (for `permute`).
    seen: Vec<u64>,
}

impl<O> Default for KeyedScratch<O> {
    fn default() -> Self {
        KeyedScratch {
            items: Vec::new(),
            spare: Vec::new(),
            counts: Vec::new(),
            bases: Vec::new(),
            cols: Vec::new(),
            flat: Vec::new(),
            sorted: Vec::new(),
            seen: Vec::new(),
        }
    }
}

impl<O> KeyedScratch<O> {
    pub(super) fn capacity_bytes(&self) -> usize {
        use std::mem::size_of;
        (self.items.capacity() + self.spare.capacity()) * 8
            + self.counts.capacity() * 4
            + self.bases.capacity() * 4
            + self.cols.capacity() * 4
            // (Apart: a zero-sized `O` has a capacity of `usize::MAX`.)
            + self.flat.capacity() * size_of::<O>()
            + self.sorted.capacity() * size_of::<O>()
            + self.seen.capacity() * 8
    }
}

/// How the keys are sorted: `passes` digits of `width` bits, lowest first.
#[derive(Clone, Copy, Debug)]
struct Digits {
    passes: u32,
    width: u32,
}

impl Digits {
    /// The digits for keys whose low `bits` bits differ.
    fn new(bits: u32) -> Self {
        let passes = bits.div_ceil(DIGIT_BITS);
        Digits {
            passes,
            width: bits.div_ceil(passes.max(1)),
        }
    }

    fn buckets(self) -> usize {
        1 << self.width
    }

    fn mask(self) -> u64 {
        (1 << self.width) - 1
    }
}

/// Folds the job's sources into its columns through keys and a radix sort, marking the
/// rows written in `marks`; see the module docs. Returns whether it sorted on the workers
/// of the job's pool. If a merge panics, the panic goes on after the job's `failed` says
/// where.
pub(super) fn keyed<C: Component, M: Merge<C>>(
    mut job: FoldJob<'_, C, M>,
    marks: &mut TypeMarks,
    scratch: &mut KeyedScratch<C::Output>,
) -> bool {
    let (pool, total) = (job.pool, job.total);
    let KeyedScratch {
        items,
        spare,
        counts,
        bases,
        cols,
        flat,
        sorted,
        seen,
    } = scratch;
    let digits = keys(job.columns, job.inbox, total, items, bases, flat, counts);
    let threads = pool.threads();
    let sort_on = (threads >= PAR_SORT_MIN_THREADS && total >= PAR_SORT_MIN_ITEMS).then_some(pool);
    sort(items, spare, counts, digits, sort_on);
    // Step 3, in one pass over the sorted items: the values move to key order, and each
    // key's row is marked changed.
    let mut rows = RowMarks::new(bases, marks, cols);
    permute(
        flat,
        items.iter_mut().map(|i| {
            let it = Item(*i.get_mut());
            rows.see(it.key());
            it.index()
        }),
        sorted,
        seen,
    );
    rows.finish();
    let sorted = Emptied(sorted);
    let parallel = threads > 1 && total >= PAR_MIN_WRITES;
    let groups = Groups {
        items,
        sorted: &sorted.0[..],
        bases,
        cols,
    };
    merge_groups(&mut job, groups, parallel);
    sort_on.is_some() || parallel
}

/// Step 1: the items of every source's `total` outputs, in system then emission order,
/// and their values, moved into `flat` in the same order; each digit's counts (pass by
/// pass, in `counts`). Returns the digits to sort by: enough to tell the type's rows
/// apart.
fn keys<C: Component>(
    columns: &[Vec<C>],
    inbox: &mut [(u32, Box<OutBuf<C>>)],
    total: usize,
    items: &mut Vec<AtomicU64>,
    bases: &mut Vec<u32>,
    flat: &mut Vec<C::Output>,
    counts: &mut Vec<u32>,
) -> Digits {
    let rows = dense_bases(columns, bases) as u64;
    assert!(
        total <= u32::MAX as usize,
        "fewer than 2^32 outputs of one type"
    );
    let digits = Digits::new(32 - (rows.max(1) as u32 - 1).leading_zeros());
    items.truncate(total);
    items.resize_with(total, || AtomicU64::new(0));
    flat.clear();
    counts.clear();
    counts.resize(digits.passes as usize * digits.buckets(), 0);
    let keyed = items_of(inbox, bases, items);
    assert_eq!(keyed, total, "one item per output");
    // Counted in a loop of their own: inside the one above, the counters' increments
    // doubled its time.
    match digits.passes {
        0 => {}
        1 => count_digits::<1>(items, counts, digits),
        2 => count_digits::<2>(items, counts, digits),
        3 => count_digits::<3>(items, counts, digits),
        _ => count_digits::<4>(items, counts, digits),
    }
    for (_, src) in inbox.iter_mut() {
        for seg in &mut src.segments {
            flat.append(&mut seg.values);
        }
    }
    digits
}

/// [`keys`]' loop over the runs; returns the number of items.
fn items_of<C: Component>(
    inbox: &[(u32, Box<OutBuf<C>>)],
    bases: &[u32],
    items: &mut [AtomicU64],
) -> usize {
    let mut index = 0;
    for (_, src) in inbox {
        for (runs, seg) in src.sealed() {
            let len = seg.values.len() as u32;
            for (i, r) in runs.iter().enumerate() {
                let n = (runs.get(i + 1).map_or(len, |next| next.start) - r.start) as usize;
                let first = bases[r.col as usize] + r.row;
                for (d, item) in items[index..index + n].iter_mut().enumerate() {
                    *item.get_mut() = Item::new(first + d as u32, (index + d) as u32).0;
                }
                index += n;
            }
        }
    }
    index
}

/// The counts of each of `P` digits of `items`, pass by pass, into `counts` (zeroed).
fn count_digits<const P: usize>(items: &mut [AtomicU64], counts: &mut [u32], digits: Digits) {
    let (buckets, mask, width) = (digits.buckets(), digits.mask(), digits.width);
    for it in items.iter_mut() {
        let it = Item(*it.get_mut());
        for p in 0..P {
            counts[p * buckets + it.digit(p as u32 * width, mask)] += 1;
        }
    }
}

/// Step 2: sorts `items` by the digits of their keys, stably. `spare` is the other
/// buffer of each pass (they swap). On one thread, `counts` holds every pass's digit
/// counts (from [`keys`]); on `pool`, the items are counted and scattered in slices over
/// its workers.
fn sort(
    items: &mut Vec<AtomicU64>,
    spare: &mut Vec<AtomicU64>,
    counts: &mut Vec<u32>,
    digits: Digits,
    pool: Option<&Pool>,
) {
    if digits.passes == 0 {
        return;
    }
    let n = items.len();
    spare.truncate(n);
    spare.resize_with(n, || AtomicU64::new(0));
    let Some(pool) = pool else {
        let (buckets, mask) = (digits.buckets(), digits.mask());
        for p in 0..digits.passes as usize {
            let count = &mut counts[p * buckets..(p + 1) * buckets];
            if count.iter().any(|&c| c as usize == n) {
                continue; // every item has this digit
            }
            starts(count);
            let shift = p as u32 * digits.width;
            for it in items.iter_mut() {
                let it = Item(*it.get_mut());
                let at = &mut count[it.digit(shift, mask)];
                *spare[*at as usize].get_mut() = it.0;
                *at += 1;
            }
            std::mem::swap(items, spare);
        }
        return;
    };
    par_sort(items, spare, counts, digits, pool);
}

/// [`sort`] over `pool`: each worker scatters its own slice of the items in every pass;
/// slice `k`'s items of digit `d` go after every item of a smaller digit and after slice
/// `j < k`'s items of digit `d`, so the result is the sequential one. A worker counts the
/// next pass's digits of what it writes, per slice of the destination, so a pass reads the
/// items once.
fn par_sort(
    items: &mut Vec<AtomicU64>,
    spare: &mut Vec<AtomicU64>,
    counts: &mut Vec<u32>,
    digits: Digits,
    pool: &Pool,
) {
    let n = items.len();
    let (buckets, mask) = (digits.buckets(), digits.mask());
    // Slices of a power-of-two length, so that a destination's slice is a shift away.
    let wanted = pool.threads().min(MAX_SLICES).min(n.div_ceil(4096)).max(1);
    let len = n.div_ceil(wanted).next_power_of_two();
    let (slices, log) = (n.div_ceil(len), len.trailing_zeros());
    // Per worker `k`: `buckets` counters of its slice for this pass (then where its items
    // of each digit go), then `slices × buckets` counters of the next pass's digits by
    // destination slice.
    let stride = buckets * (1 + slices);
    counts.clear();
    counts.resize(slices * stride, 0);
    let mut need_counts = true;
    for p in 0..digits.passes {
        let shift = p * digits.width;
        let src: &[AtomicU64] = items;
        if need_counts {
            let (mut each, _) = per_slice(counts, stride);
            pool.for_each_mut(&mut each[..slices], &|k, mine| {
                let count = &mut mine[..buckets];
                count.fill(0);
                for it in src.chunks(len).nth(k).unwrap_or_default() {
                    count[Item(it.load(Relaxed)).digit(shift, mask)] += 1;
                }
            })
            .unwrap_or_else(|p| std::panic::resume_unwind(p.payload));
        }
        // Where each slice's items of each digit go: digit by digit, slice by slice.
        let mut at = 0u32;
        let mut whole = false;
        for d in 0..buckets {
            let mut in_digit = 0;
            for k in 0..slices {
                let c = &mut counts[k * stride + d];
                in_digit += *c;
                let here = *c;
                *c = at;
                at += here;
            }
            whole |= in_digit as usize == n;
        }
        if whole {
            need_counts = true;
            continue; // every item has this digit
        }
        let last = p + 1 == digits.passes;
        let next_shift = shift + digits.width;
        let dst: &[AtomicU64] = spare;
        let (mut each, _) = per_slice(counts, stride);
        pool.for_each_mut(&mut each[..slices], &|k, mine| {
            let (next, later) = mine.split_at_mut(buckets);
            later.fill(0);
            for it in src.chunks(len).nth(k).unwrap_or_default() {
                let x = it.load(Relaxed);
                let at = &mut next[Item(x).digit(shift, mask)];
                dst[*at as usize].store(x, Relaxed);
                if !last {
                    let s = (*at >> log) as usize;
                    later[s * buckets + Item(x).digit(next_shift, mask)] += 1;
                }
                *at += 1;
            }
        })
        .unwrap_or_else(|p| std::panic::resume_unwind(p.payload));
        std::mem::swap(items, spare);
        if !last {
            // The next pass's counts of slice `s`: what every worker wrote into it.
            for s in 0..slices {
                for d in 0..buckets {
                    let total = (0..slices)
                        .map(|k| counts[k * stride + buckets + s * buckets + d])
                        .sum();
                    counts[s * stride + d] = total;
                }
            }
            need_counts = false;
        }
    }
}

/// Marks the rows of sorted keys changed, and lists the columns written (ascending): rows
/// come in increasing order, so their bits are gathered a word at a time.
struct RowMarks<'m> {
    bases: &'m [u32],
    marks: &'m mut TypeMarks,
    cols: &'m mut Vec<u32>,
    col: usize,
    /// The `(column, word)` being gathered, and its bits so far.
    at: (usize, usize),
    rows: u64,
}

impl<'m> RowMarks<'m> {
    fn new(bases: &'m [u32], marks: &'m mut TypeMarks, cols: &'m mut Vec<u32>) -> Self {
        cols.clear();
        RowMarks {
            bases,
            marks,
            cols,
            col: 0,
            at: (usize::MAX, 0),
            rows: 0,
        }
    }

    /// The next key (no smaller than the one before).
    #[inline(always)]
    fn see(&mut self, key: u32) {
        while key >= self.bases[self.col + 1] {
            self.col += 1;
        }
        let row = (key - self.bases[self.col]) as usize;
        if (self.col, row / 64) != self.at {
            self.flush();
            if self.cols.last() != Some(&(self.col as u32)) {
                self.cols.push(self.col as u32);
            }
            self.at = (self.col, row / 64);
        }
        self.rows |= 1 << (row % 64);
    }

    #[inline(never)]
    fn flush(&mut self) {
        if self.rows != 0 {
            self.marks
                .mark_changed_word(self.at.0, self.at.1, self.rows);
            self.rows = 0;
        }
    }

    fn finish(mut self) {
        self.flush();
    }
}

/// `counts` as one slice of `stride` counters per slice of the items, and how many (at
/// most [`MAX_SLICES`]), for [`Pool::for_each_mut`].
fn per_slice(counts: &mut [u32], stride: usize) -> ([&mut [u32]; MAX_SLICES], usize) {
    let mut each: [&mut [u32]; MAX_SLICES] = Default::default();
    let mut n = 0;
    for (k, c) in counts.chunks_exact_mut(stride).enumerate() {
        each[k] = c;
        n = k + 1;
    }
    (each, n)
}

/// Turns digit counts into each digit's first place.
fn starts(count: &mut [u32]) {
    let mut at = 0;
    for c in count {
        let here = *c;
        *c = at;
        at += here;
    }
}

/// What the sort left for step 4: the items in key order, their outputs moved to that
/// order, the columns' dense bases and the columns written.
struct Groups<'a, O> {
    items: &'a mut [AtomicU64],
    sorted: &'a [O],
    bases: &'a [u32],
    cols: &'a [u32],
}

/// Step 4: one merge call per key, with its outputs `sorted[i..j]` (the items of that key
/// are `items[i..j]`). If `parallel`, in row ranges over the job's pool.
fn merge_groups<C: Component, M: Merge<C>>(
    job: &mut FoldJob<'_, C, M>,
    groups: Groups<'_, C::Output>,
    parallel: bool,
) {
    if parallel && par_merge_groups(job, &groups) {
        return;
    }
    let Groups {
        items,
        sorted,
        bases,
        ..
    } = groups;
    let (merge, columns) = (job.merge, &mut *job.columns);
    let mut on_unwind = OnUnwind::new(job.failed, FailedAt::Column(0));
    let mut col = 0;
    let mut i = 0;
    let n = items.len();
    while i < n {
        let key = Item(*items[i].get_mut()).key();
        let mut j = i + 1;
        while j < n && Item(*items[j].get_mut()).key() == key {
            j += 1;
        }
        while key >= bases[col + 1] {
            col += 1;
        }
        let row = (key - bases[col]) as usize;
        on_unwind.at(col as u32, row);
        merge.merge(&mut columns[col][row], &sorted[i..j]);
        i = j;
    }
    on_unwind.disarm();
}

/// Rows `lo..lo + rows.len()` of column `col`, with the items and outputs for them.
struct KeyedPart<'a, C: Component> {
    col: u32,
    lo: usize,
    rows: &'a mut [C],
    items: &'a [AtomicU64],
    outputs: &'a [C::Output],
    failed: Option<FailedAt>,
}

/// [`merge_groups`] in row ranges over the job's pool. Returns `false`, touching nothing,
/// when the parts would not fit the stack array.
fn par_merge_groups<C: Component, M: Merge<C>>(
    job: &mut FoldJob<'_, C, M>,
    groups: &Groups<'_, C::Output>,
) -> bool {
    let (merge, pool) = (job.merge, job.pool);
    let (items, sorted, bases, cols): (&[AtomicU64], _, _, _) =
        (groups.items, groups.sorted, groups.bases, groups.cols);
    let mut parts: [Option<KeyedPart<'_, C>>; MAX_PARTS] = std::array::from_fn(|_| None);
    let mut count = 0;
    let mut from = 0;
    let fits = row_ranges(job.columns, cols, pool.threads(), |col, lo, rows| {
        if count == MAX_PARTS {
            return false;
        }
        let end = bases[col as usize] as usize + lo + rows.len();
        let to =
            from + items[from..].partition_point(|i| (Item(i.load(Relaxed)).key() as usize) < end);
        parts[count] = Some(KeyedPart {
            col,
            lo,
            rows,
            items: &items[from..to],
            outputs: &sorted[from..to],
            failed: None,
        });
        from = to;
        count += 1;
        true
    });
    if !fits {
        return false;
    }
    let result = pool.for_each_mut(&mut parts[..count], &|_, part| {
        let part = part.as_mut().expect("laid out");
        let KeyedPart {
            col,
            lo,
            rows,
            items,
            outputs,
            failed,
        } = part;
        let base = bases[*col as usize] as usize + *lo;
        let mut on_unwind = OnUnwind::new(failed, FailedAt::Column(*col));
        let n = items.len();
        let mut i = 0;
        while i < n {
            let key = Item(items[i].load(Relaxed)).key();
            let mut j = i + 1;
            while j < n && Item(items[j].load(Relaxed)).key() == key {
                j += 1;
            }
            let k = key as usize - base;
            on_unwind.at(*col, *lo + k);
            merge.merge(&mut rows[k], &outputs[i..j]);
            i = j;
        }
        on_unwind.disarm();
    });
    if let Err(p) = result {
        // The lowest part that panicked holds the first key whose merge panicked.
        *job.failed = parts[p.index].as_ref().and_then(|part| part.failed);
        std::panic::resume_unwind(p.payload);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(i: u64) -> u64 {
        let mut x = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^ (x >> 31)
    }

    /// Every pass's digit counts, as [`keys`] leaves them for a sort on one thread.
    pub(super) fn count_all(items: &mut [AtomicU64], counts: &mut Vec<u32>, digits: Digits) {
        counts.clear();
        counts.resize(digits.passes as usize * digits.buckets(), 0);
        match digits.passes {
            1 => count_digits::<1>(items, counts, digits),
            2 => count_digits::<2>(items, counts, digits),
            3 => count_digits::<3>(items, counts, digits),
            _ => count_digits::<4>(items, counts, digits),
        }
    }

    /// The sort against a stable comparison sort, for keys that differ in 1 to 32 low
    /// bits (one to three passes; repeated keys keep their emission order), on one thread
    /// and in slices over 2 and 8 workers.
    #[test]
    fn radix_sort_is_stable_for_any_digits_and_workers() {
        let n = if cfg!(miri) { 300 } else { 100_000 };
        let (mut items, mut spare, mut counts) = (Vec::new(), Vec::new(), Vec::new());
        for bits in [1, 5, 11, 12, 17, 23, 32] {
            let mask = if bits == 32 {
                u32::MAX
            } else {
                (1 << bits) - 1
            };
            let keys: Vec<u32> = (0..n)
                .map(|i| (mix(i) as u32 & mask) | (0xA5A5_A5A5 & !mask))
                .collect();
            let mut expect: Vec<Item> = keys
                .iter()
                .enumerate()
                .map(|(i, &k)| Item::new(k, i as u32))
                .collect();
            expect.sort_by_key(|it| it.key());
            let (lo, hi) = (keys.iter().min().unwrap(), keys.iter().max().unwrap());
            let digits = Digits::new(32 - (lo ^ hi).leading_zeros());
            assert!(digits.passes as usize <= 4 && digits.width <= DIGIT_BITS);
            for threads in [0, 2, 8] {
                let pool = Pool::new(threads.max(1));
                items.clear();
                items.extend(
                    keys.iter()
                        .enumerate()
                        .map(|(i, &k)| AtomicU64::new(Item::new(k, i as u32).0)),
                );
                if threads == 0 {
                    count_all(&mut items, &mut counts, digits);
                }
                sort(
                    &mut items,
                    &mut spare,
                    &mut counts,
                    digits,
                    (threads > 0).then_some(&pool),
                );
                let got: Vec<Item> = items.iter_mut().map(|i| Item(*i.get_mut())).collect();
                assert!(got == expect, "{bits} bits, {threads} threads");
            }
        }
    }
}
