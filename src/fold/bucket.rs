//! The bucket path: scattered writes (targets in any order) to a type with not many more
//! rows than outputs — each entity writing to some other one — merged by a hand-written
//! merge. One counting sort by row instead of the [`keyed`](super::keyed) path's radix
//! sort and permutation; every value moves once.
//!
//! 1. [`keys`] — every output's *dense key* (its target's place among all the type's
//!    rows: its column's first row plus its row), in emission order over all sources
//!    (system order, then emission order); the values move, in that order, into one
//!    vector (whole segments at a time).
//! 2. `move_out::group_by_key` — counts each row's outputs, turns the counts into each
//!    row's place, and moves every value straight to its row's group, stably (so a row's
//!    outputs stay in system then emission order). Afterwards `ends[k]` is where row
//!    `k`'s group ends, and it starts where row `k - 1`'s ends.
//! 3. [`rows_written`] — the rows whose group is not empty are marked changed, a word of
//!    64 rows at a time, and listed, with no branch per row (which would mispredict as
//!    often as the targets are random), as are the columns written.
//! 4. [`merge_rows`] — one merge call per listed row, rows in increasing order.
//!    Large types merge in row ranges on the workers, like the in-order path: a range of
//!    rows is a range of dense keys, so its outputs are one stretch of the groups.
//!
//! The work is O(outputs + rows): with few outputs to a type of many rows the radix sort
//! (O(outputs) per pass) is cheaper, so [`applies`] picks this path only where rows are
//! at most [`ROWS_PER_OUTPUT`] times the outputs. Same result at any worker count, bit for
//! bit, and the same as the keyed path; if merges panic, the error names the first row (in
//! merge order) whose merge panicked.

use crate::component::Component;
use crate::merge::Merge;
use crate::output::buffer::OutBuf;
use crate::storage::TypeMarks;

use super::move_out::group_by_key;
use super::part::{
    Emptied, FailedAt, FoldJob, MAX_PARTS, OnUnwind, PAR_MIN_WRITES, dense_bases, row_ranges,
};

/// The bucket path is taken for at most this many rows per output: above, the scan of
/// every row (a counter each, read three times) costs more than the radix sort's passes
/// over the outputs.
pub(super) const ROWS_PER_OUTPUT: usize = 4;

/// Whether scattered writes, `total` of them, to a type of `rows` rows take this path.
pub(super) fn applies(rows: usize, total: usize) -> bool {
    rows <= total.saturating_mul(ROWS_PER_OUTPUT) && rows <= u32::MAX as usize
}

/// Per-type scratch of the bucket path (capacity kept across frames).
pub(super) struct BucketScratch<O> {
    /// Each output's dense key, in emission order.
    keys: Vec<u32>,
    /// Per dense key: where its group ends in `grouped`.
    ends: Vec<u32>,
    /// Column `c`'s first dense key; one more entry for the end.
    bases: Vec<u32>,
    /// Columns written.
    cols: Vec<u32>,
    /// The dense keys with outputs, ascending (with one spare entry).
    hits: Vec<u32>,
    /// The values in emission order, then grouped by key.
    flat: Vec<O>,
    grouped: Vec<O>,
}

impl<O> Default for BucketScratch<O> {
    fn default() -> Self {
        BucketScratch {
            keys: Vec::new(),
            ends: Vec::new(),
            bases: Vec::new(),
            cols: Vec::new(),
            hits: Vec::new(),
            flat: Vec::new(),
            grouped: Vec::new(),
        }
    }
}

impl<O> BucketScratch<O> {
    pub(super) fn capacity_bytes(&self) -> usize {
        use std::mem::size_of;
        (self.keys.capacity() + self.ends.capacity() + self.bases.capacity()) * 4
            + (self.cols.capacity() + self.hits.capacity()) * 4
            // (Apart: a zero-sized `O` has a capacity of `usize::MAX`.)
            + self.flat.capacity() * size_of::<O>()
            + self.grouped.capacity() * size_of::<O>()
    }
}

/// Folds the job's sources into its columns through one counting sort by row, marking
/// the rows written in `marks`; see the module docs. `bases` are the columns'
/// [`dense_bases`]. Returns whether it merged on the workers of the job's pool. If a
/// merge panics, the panic goes on after the job's `failed` says where.
pub(super) fn bucket<C: Component, M: Merge<C>>(
    mut job: FoldJob<'_, C, M>,
    marks: &mut TypeMarks,
    scratch: &mut BucketScratch<C::Output>,
) -> bool {
    let (merge, pool, total) = (job.merge, job.pool, job.total);
    let BucketScratch {
        keys: dense,
        ends,
        bases,
        cols,
        hits,
        flat,
        grouped,
    } = scratch;
    let rows = dense_bases(job.columns, bases);
    keys(job.inbox, bases, total, dense, flat);
    ends.clear();
    ends.resize(rows, 0);
    group_by_key(flat, dense, ends, grouped);
    let grouped = Emptied(grouped);
    rows_written(bases, ends, marks, cols, hits);
    let groups = Groups {
        bases,
        ends,
        hits,
        grouped: &grouped.0[..],
        cols,
    };
    if pool.threads() > 1 && total >= PAR_MIN_WRITES && par_merge_rows(&mut job, &groups) {
        return true;
    }
    let mut on_unwind = OnUnwind::new(job.failed, FailedAt::Column(0));
    for &c in cols.iter() {
        let (lo, hi) = (bases[c as usize] as usize, bases[c as usize + 1] as usize);
        let mut rows = BucketRows {
            col: c,
            lo: 0,
            base: lo,
            rows: &mut job.columns[c as usize],
            hits: hits_in(hits, lo, hi),
            start: start_of(ends, lo),
        };
        merge_rows(merge, &mut rows, &groups, &mut on_unwind);
    }
    on_unwind.disarm();
    false
}

/// What steps 2 and 3 left for step 4: the columns' dense bases, where each row's group
/// ends, the rows with outputs, the outputs grouped by row, and the columns written.
struct Groups<'a, O> {
    bases: &'a [u32],
    ends: &'a [u32],
    hits: &'a [u32],
    grouped: &'a [O],
    cols: &'a [u32],
}

/// Step 1: the dense key of every source's `total` outputs, in system then emission order,
/// into `dense`, and their values, moved into `flat` in the same order.
fn keys<C: Component>(
    inbox: &mut [(u32, Box<OutBuf<C>>)],
    bases: &[u32],
    total: usize,
    dense: &mut Vec<u32>,
    flat: &mut Vec<C::Output>,
) {
    assert!(
        total <= u32::MAX as usize,
        "fewer than 2^32 outputs of one type"
    );
    dense.clear();
    dense.reserve(total);
    flat.clear();
    flat.reserve(total);
    for (_, src) in inbox.iter_mut() {
        for (runs, seg) in src.sealed_mut() {
            let len = seg.values.len() as u32;
            for (i, r) in runs.iter().enumerate() {
                let n = runs.get(i + 1).map_or(len, |next| next.start) - r.start;
                let first = bases[r.col as usize] + r.row;
                dense.extend(first..first + n);
            }
            flat.append(&mut seg.values);
        }
    }
    assert_eq!(dense.len(), total, "one key per output");
}

/// Where the group of dense key `k` starts: where key `k - 1`'s ends.
#[inline]
fn start_of(ends: &[u32], k: usize) -> u32 {
    if k == 0 { 0 } else { ends[k - 1] }
}

/// Step 3: marks the rows that have outputs changed, lists them (as dense keys, ascending)
/// in `hits` and the columns written (ascending) in `cols`. Without a branch per row:
/// whether a row has outputs is as random as the targets, and a mispredicted branch per
/// row cost more than the rest of the path together.
fn rows_written(
    bases: &[u32],
    ends: &[u32],
    marks: &mut TypeMarks,
    cols: &mut Vec<u32>,
    hits: &mut Vec<u32>,
) {
    cols.clear();
    hits.clear();
    hits.resize(ends.len() + 1, 0);
    let mut n = 0;
    for c in 0..bases.len() - 1 {
        let (lo, hi) = (bases[c] as usize, bases[c + 1] as usize);
        let mut prev = start_of(ends, lo);
        if ends
            .get(hi.wrapping_sub(1))
            .is_none_or(|&last| last == prev)
        {
            continue; // an empty column, or no outputs to it
        }
        cols.push(c as u32);
        for (w, word) in ends[lo..hi].chunks(64).enumerate() {
            let mut bits = 0u64;
            let first = (lo + 64 * w) as u32;
            for (i, &e) in word.iter().enumerate() {
                let hit = e != prev;
                bits |= u64::from(hit) << i;
                hits[n] = first + i as u32; // kept only if `hit`
                n += usize::from(hit);
                prev = e;
            }
            if bits != 0 {
                marks.mark_changed_word(c, w, bits);
            }
        }
    }
    hits.truncate(n);
}

/// Step 4 for one [`BucketRows`]: one merge call for each row in its `hits`.
#[inline]
fn merge_rows<C: Component, M: Merge<C>>(
    merge: &M,
    part: &mut BucketRows<'_, C>,
    groups: &Groups<'_, C::Output>,
    on_unwind: &mut OnUnwind<'_>,
) {
    let BucketRows {
        col,
        lo,
        base,
        rows,
        hits,
        start,
    } = part;
    let (col, lo, base) = (*col, *lo, *base);
    let (ends, grouped) = (groups.ends, groups.grouped);
    let mut at = *start as usize;
    for &k in hits.iter() {
        let end = ends[k as usize] as usize;
        let r = k as usize - base;
        on_unwind.at(col, lo + r);
        merge.merge(&mut rows[r], &grouped[at..end]);
        at = end;
    }
}

/// The part of `hits` (ascending) in `lo..hi`.
fn hits_in(hits: &[u32], lo: usize, hi: usize) -> &[u32] {
    let from = hits.partition_point(|&k| (k as usize) < lo);
    let to = from + hits[from..].partition_point(|&k| (k as usize) < hi);
    &hits[from..to]
}

/// Rows `lo..lo + rows.len()` of column `col` (dense keys from `base`), with those of
/// them that have outputs (`hits`: their dense keys, ascending), the first one's outputs
/// starting at `grouped[start]`.
struct BucketRows<'a, C> {
    col: u32,
    lo: usize,
    base: usize,
    rows: &'a mut [C],
    hits: &'a [u32],
    start: u32,
}

/// [`BucketRows`] merged by one worker, with where its merge panicked.
struct BucketPart<'a, C> {
    rows: BucketRows<'a, C>,
    failed: Option<FailedAt>,
}

/// [`merge_rows`] in row ranges over the job's pool. Returns `false`, touching nothing,
/// when the parts would not fit the stack array.
fn par_merge_rows<C: Component, M: Merge<C>>(
    job: &mut FoldJob<'_, C, M>,
    groups: &Groups<'_, C::Output>,
) -> bool {
    let (merge, pool) = (job.merge, job.pool);
    let Groups {
        bases,
        ends,
        hits,
        cols,
        ..
    } = *groups;
    let mut parts: [Option<BucketPart<'_, C>>; MAX_PARTS] = std::array::from_fn(|_| None);
    let mut count = 0;
    let fits = row_ranges(job.columns, cols, pool.threads(), |col, lo, rows| {
        if count == MAX_PARTS {
            return false;
        }
        let first = bases[col as usize] as usize + lo;
        parts[count] = Some(BucketPart {
            rows: BucketRows {
                col,
                lo,
                base: first,
                hits: hits_in(hits, first, first + rows.len()),
                start: start_of(ends, first),
                rows,
            },
            failed: None,
        });
        count += 1;
        true
    });
    if !fits {
        return false;
    }
    let result = pool.for_each_mut(&mut parts[..count], &|_, part| {
        let BucketPart { rows, failed } = part.as_mut().expect("laid out");
        let mut on_unwind = OnUnwind::new(failed, FailedAt::Column(rows.col));
        merge_rows(merge, rows, groups, &mut on_unwind);
        on_unwind.disarm();
    });
    if let Err(p) = result {
        // The lowest part that panicked holds the first row whose merge panicked.
        *job.failed = parts[p.index].as_ref().and_then(|part| part.failed);
        std::panic::resume_unwind(p.payload);
    }
    true
}
