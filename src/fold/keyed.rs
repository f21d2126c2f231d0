//! The keyed path: outputs not in row order — a source that visits rows out of order or
//! twice (scattered writes: each entity writing to some other one), or many sparse
//! sources — merged by a hand-written merge.
//!
//! 1. [`keys`] — every output becomes an [`Item`]: its *dense key* (the target's place
//!    among all the type's rows: its column's first row plus its row) packed with its
//!    place in emission order over all sources (system order, then emission order). The
//!    values move, in that order, into one vector.
//! 2. [`sort`] — a stable LSD radix sort of the items on the key bits that differ between
//!    the smallest and the largest key (17 bits for 100k rows), in digits of at most
//!    [`DIGIT_BITS`] bits: two passes up to 4M rows, a pass skipped if its digit is the
//!    same for every item. Each pass counts, then scatters. With many items on several
//!    workers each worker counts and scatters its own slice of the items; where an item
//!    goes is fixed by the counts of the slices before it, so nothing depends on timing.
//! 3. The values move from emission order to key order (`move_out::permute`).
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
use super::paths::{Emptied, FailedAt, MAX_PARTS, OnUnwind, PAR_MIN_WRITES, row_ranges};

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

/// Widest radix digit: 2^11 counters per pass (8 KiB) stay in the first-level cache.
const DIGIT_BITS: u32 = 11;
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
            + (self.flat.capacity() + self.sorted.capacity()) * size_of::<O>()
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

/// Folds `inbox` (in system order, `total` outputs) into `columns` through keys and a
/// radix sort, marking the rows written in `marks`; see the module docs. Returns whether
/// it sorted on the workers of `pool`. If a merge panics, the panic goes on after `failed`
/// says where.
#[allow(clippy::too_many_arguments)]
pub(super) fn keyed<C: Component, M: Merge<C>>(
    merge: &M,
    columns: &mut [Vec<C>],
    marks: &mut TypeMarks,
    inbox: &mut [(u32, Box<OutBuf<C>>)],
    scratch: &mut KeyedScratch<C::Output>,
    pool: &Pool,
    total: usize,
    failed: &mut Option<FailedAt>,
) -> bool {
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
    let digits = keys(columns, marks, inbox, total, items, bases, cols, flat);
    let pool = (pool.threads() > 1 && total >= PAR_MIN_WRITES).then_some(pool);
    sort(items, spare, counts, digits, pool);
    permute(
        flat,
        items.iter_mut().map(|i| Item(*i.get_mut()).index()),
        sorted,
        seen,
    );
    let sorted = Emptied(sorted);
    merge_groups(
        merge,
        columns,
        items,
        &sorted.0[..],
        bases,
        cols,
        pool,
        failed,
    );
    pool.is_some()
}

/// Step 1: the items of every source's `total` outputs, in system then emission order,
/// and their values, moved into `flat` in the same order; the rows marked changed; the
/// columns written (ascending). Returns the digits to sort the keys by.
#[allow(clippy::too_many_arguments)]
fn keys<C: Component>(
    columns: &[Vec<C>],
    marks: &mut TypeMarks,
    inbox: &mut [(u32, Box<OutBuf<C>>)],
    total: usize,
    items: &mut Vec<AtomicU64>,
    bases: &mut Vec<u32>,
    cols: &mut Vec<u32>,
    flat: &mut Vec<C::Output>,
) -> Digits {
    bases.clear();
    let mut rows = 0u64;
    for c in columns {
        bases.push(rows as u32);
        rows += c.len() as u64;
        assert!(
            rows <= u64::from(u32::MAX),
            "fewer than 2^32 rows of one type"
        );
    }
    bases.push(rows as u32);
    assert!(
        total <= u32::MAX as usize,
        "fewer than 2^32 outputs of one type"
    );
    items.truncate(total);
    items.resize_with(total, || AtomicU64::new(0));
    cols.clear();
    flat.clear();
    let (mut lo, mut hi) = (u32::MAX, 0);
    let mut index = 0;
    for (_, src) in inbox.iter_mut() {
        for (runs, seg) in src.sealed() {
            let len = seg.values.len() as u32;
            for (i, r) in runs.iter().enumerate() {
                let n = runs.get(i + 1).map_or(len, |next| next.start) - r.start;
                if n == 0 {
                    continue;
                }
                let row = r.row as usize;
                marks.mark_changed(r.col as usize, row..row + n as usize);
                let first = bases[r.col as usize] + r.row;
                for (d, it) in items[index..index + n as usize].iter_mut().enumerate() {
                    *it.get_mut() = Item::new(first + d as u32, (index + d) as u32).0;
                }
                index += n as usize;
                lo = lo.min(first);
                hi = hi.max(first + n - 1);
                if cols.last() != Some(&r.col) {
                    cols.push(r.col);
                }
            }
        }
        for seg in &mut src.segments {
            flat.append(&mut seg.values);
        }
    }
    assert_eq!(index, total, "one item per output");
    cols.sort_unstable();
    cols.dedup();
    Digits::new(if index == 0 {
        0
    } else {
        32 - (lo ^ hi).leading_zeros()
    })
}

/// Step 2: sorts `items` by the low digits of their keys, stably. `spare` is the other
/// buffer of each pass (they swap); on `pool`, in slices over its workers.
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
    match pool {
        None => {
            // Every pass's counts in one read: they do not depend on the order.
            match digits.passes {
                1 => count_digits::<1>(items, counts, digits),
                2 => count_digits::<2>(items, counts, digits),
                _ => count_digits::<3>(items, counts, digits),
            }
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
        }
        Some(pool) => par_sort(items, spare, counts, digits, pool),
    }
}

/// The digit counts of `items` for each of `P` passes, in `counts` (pass by pass).
fn count_digits<const P: usize>(items: &mut [AtomicU64], counts: &mut Vec<u32>, digits: Digits) {
    let (buckets, mask, width) = (digits.buckets(), digits.mask(), digits.width);
    counts.clear();
    counts.resize(P * buckets, 0);
    for it in items.iter_mut() {
        let it = Item(*it.get_mut());
        for p in 0..P {
            counts[p * buckets + it.digit(p as u32 * width, mask)] += 1;
        }
    }
}

/// [`sort`] over `pool`: each pass counts, then scatters, each worker its own slice of the
/// items; slice `k`'s items of digit `d` go after every item of a smaller digit and after
/// slice `j < k`'s items of digit `d`, so the result is the sequential one.
fn par_sort(
    items: &mut Vec<AtomicU64>,
    spare: &mut Vec<AtomicU64>,
    counts: &mut Vec<u32>,
    digits: Digits,
    pool: &Pool,
) {
    let n = items.len();
    let (buckets, mask) = (digits.buckets(), digits.mask());
    let slices = pool.threads().min(MAX_SLICES).min(n.div_ceil(4096)).max(1);
    let len = n.div_ceil(slices);
    counts.clear();
    counts.resize(slices * buckets, 0);
    for p in 0..digits.passes {
        let shift = p * digits.width;
        let src: &[AtomicU64] = items;
        counts.fill(0);
        let (mut each, slices) = per_slice(counts, buckets);
        pool.for_each_mut(&mut each[..slices], &|k, count| {
            for it in src.chunks(len).nth(k).unwrap_or_default() {
                count[Item(it.load(Relaxed)).digit(shift, mask)] += 1;
            }
        })
        .unwrap_or_else(|p| std::panic::resume_unwind(p.payload));
        // Where each slice's items of each digit go: digit by digit, slice by slice.
        let mut at = 0u32;
        let mut whole = false;
        for d in 0..buckets {
            let mut in_digit = 0;
            for k in 0..slices {
                let c = &mut counts[k * buckets + d];
                in_digit += *c;
                let here = *c;
                *c = at;
                at += here;
            }
            whole |= in_digit as usize == n;
        }
        if whole {
            continue; // every item has this digit
        }
        let dst: &[AtomicU64] = spare;
        let (mut each, slices) = per_slice(counts, buckets);
        pool.for_each_mut(&mut each[..slices], &|k, next| {
            for it in src.chunks(len).nth(k).unwrap_or_default() {
                let x = it.load(Relaxed);
                let at = &mut next[Item(x).digit(shift, mask)];
                dst[*at as usize].store(x, Relaxed);
                *at += 1;
            }
        })
        .unwrap_or_else(|p| std::panic::resume_unwind(p.payload));
        std::mem::swap(items, spare);
    }
}

/// `counts` as one slice of `buckets` counters per slice of the items, and how many
/// (at most [`MAX_SLICES`]), for [`Pool::for_each_mut`].
fn per_slice(counts: &mut [u32], buckets: usize) -> ([&mut [u32]; MAX_SLICES], usize) {
    let mut each: [&mut [u32]; MAX_SLICES] = Default::default();
    let mut n = 0;
    for (k, c) in counts.chunks_exact_mut(buckets).enumerate() {
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

/// Step 4: one merge call per key, with its outputs `sorted[i..j]` (the items of that key
/// are `items[i..j]`). On `pool`, in row ranges over its workers.
#[allow(clippy::too_many_arguments)]
fn merge_groups<C: Component, M: Merge<C>>(
    merge: &M,
    columns: &mut [Vec<C>],
    items: &mut [AtomicU64],
    sorted: &[C::Output],
    bases: &[u32],
    cols: &[u32],
    pool: Option<&Pool>,
    failed: &mut Option<FailedAt>,
) {
    if let Some(pool) = pool {
        if par_merge_groups(merge, columns, items, sorted, bases, cols, pool, failed) {
            return;
        }
    }
    let mut on_unwind = OnUnwind::new(failed, FailedAt::Column(0));
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

/// [`merge_groups`] in row ranges over `pool`. Returns `false`, touching nothing, when the
/// parts would not fit the stack array.
#[allow(clippy::too_many_arguments)]
fn par_merge_groups<C: Component, M: Merge<C>>(
    merge: &M,
    columns: &mut [Vec<C>],
    items: &[AtomicU64],
    sorted: &[C::Output],
    bases: &[u32],
    cols: &[u32],
    pool: &Pool,
    failed: &mut Option<FailedAt>,
) -> bool {
    let mut parts: [Option<KeyedPart<'_, C>>; MAX_PARTS] = std::array::from_fn(|_| None);
    let mut count = 0;
    let mut from = 0;
    let fits = row_ranges(columns, cols, pool.threads(), |col, lo, rows| {
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
        *failed = parts[p.index].as_ref().and_then(|part| part.failed);
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
            assert!(digits.passes as usize <= 3 && digits.width <= DIGIT_BITS);
            for threads in [0, 2, 8] {
                let pool = Pool::new(threads.max(1));
                items.clear();
                items.extend(
                    keys.iter()
                        .enumerate()
                        .map(|(i, &k)| AtomicU64::new(Item::new(k, i as u32).0)),
                );
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
