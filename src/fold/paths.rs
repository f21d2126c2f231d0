//! The merge paths of a [`Fold`](super::Fold), fastest first.
//!
//! 1. **In order** — when the merge is [`ONE_AT_A_TIME`](Merge::ONE_AT_A_TIME) (`last`,
//!    `sum`), or when there is one source and its runs visit rows in increasing order (a
//!    query loop): every source's runs are applied straight to their columns, source by
//!    source in system order, values in emission order, one inlined merge call per output.
//!    No keys, no sort, no gathering: several systems adding deltas to the same entities
//!    merge column-wise in one pass each. A segment that is a whole column, with a merge
//!    that lets one output become the value ([`Merge::replace_column`]: `last`, `first`,
//!    `min`, `max`), is swapped in instead (no copy). Large types are split by row range
//!    over the workers: entities are independent and every row sees the same merges in
//!    the same order, so the result is bit-identical at any worker count.
//! 2. **Gathered** — several sources that each visit rows in increasing order (query
//!    loops, whatever rows each wrote) and a merge that must see all of an entity's outputs
//!    at once (a hand-written `fn` or closure): the sources are walked together, row
//!    intervals at a time, each row's outputs moved into one group in system order and
//!    merged once; no keys, no sort (see `gather`).
//! 3. **Keyed** — otherwise (a source that visits rows out of order or twice): each source's
//!    outputs get their `(column, row)` key from its runs; a source whose keys are not
//!    already ascending is sorted stably (so emission order survives within an entity);
//!    then one scan over the sources, column-wise, gathers each entity's outputs in system
//!    then emission order and calls the merge once.
//!
//! Every path first marks the rows it is about to merge into as *changed* (see
//! `storage::marks`): one range fill per run, from the runs alone, so the cost is
//! O(runs + rows / 64) whatever the path, and a whole-column swap is one fill.
//!
//! No path depends on thread timing.
//!
//! # When a merge panics
//!
//! Merges run in place on the stored values, and a panic unwinds out of the path (to the
//! pool job of the type, where Sync catches it). On the way out, the path writes where it
//! was — the row whose merge call panicked, or the column a [`Merge::replace_column`] was
//! replacing — into the fold's [`FailedAt`], so the error can name the entity; nothing is
//! undone. At no cost per output on the normal path:
//! - the in-order paths hold an [`OnUnwind`] guard whose position is a local only the
//!   unwinding path reads: where a merge cannot unwind (the ready-made ones on plain
//!   numbers) the compiler drops the per-row updates, and the loops stay as they were
//!   (`sync_sum_1M`-style timings unchanged); on the normal path it is disarmed, never
//!   dropped;
//! - the keyed scan runs under one `catch_unwind` per type and frame, and after a panic
//!   reads the key it was merging back from its cursors ([`scanned_to`]): a guard inside
//!   its loop added cleanup paths that cost 7% of a two-source closure merge.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use crate::component::Component;
use crate::merge::Merge;
use crate::output::buffer::{OutBuf, RowRun, Segment, run_values};
use crate::pool::Pool;
use crate::storage::TypeMarks;

use super::FoldCounts;
use super::gather::{self, GatherScratch};

/// Where a fold's merge panicked: written while unwinding, read by Sync for the error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailedAt {
    /// The merge call for row `row` of column `col`.
    Row { col: u32, row: u32 },
    /// [`Merge::replace_column`] on column `col`.
    Column(u32),
}

/// Writes `at` into `failed` if dropped, which happens only while a merge unwinds: the
/// normal path ends with [`disarm`](Self::disarm).
pub(super) struct OnUnwind<'a> {
    failed: &'a mut Option<FailedAt>,
    at: FailedAt,
}

impl<'a> OnUnwind<'a> {
    #[inline(always)]
    pub(super) fn new(failed: &'a mut Option<FailedAt>, at: FailedAt) -> Self {
        OnUnwind { failed, at }
    }

    /// Before each merge call: the position it merges into.
    #[inline(always)]
    pub(super) fn at(&mut self, col: u32, row: usize) {
        self.at = FailedAt::Row {
            col,
            row: row as u32,
        };
    }

    /// The path finished: nothing to record.
    #[inline(always)]
    pub(super) fn disarm(self) {
        std::mem::forget(self);
    }
}

impl Drop for OnUnwind<'_> {
    // Inlined into the unwind path, so the guard can live in registers.
    #[inline(always)]
    fn drop(&mut self) {
        *self.failed = Some(self.at);
    }
}

/// Per-type scratch kept across frames (capacity only).
pub(crate) struct FoldScratch<O> {
    keys: Vec<u64>,
    pairs: Vec<(u64, u32)>,
    group: Vec<O>,
    /// `(next, end)` of each source's keys during the keyed scan.
    bounds: Vec<(usize, usize)>,
    /// Columns touched, for the parallel split.
    cols: Vec<u32>,
    /// The gather path's.
    gather: GatherScratch<O>,
}

impl<O> Default for FoldScratch<O> {
    fn default() -> Self {
        FoldScratch {
            keys: Vec::new(),
            pairs: Vec::new(),
            group: Vec::new(),
            bounds: Vec::new(),
            cols: Vec::new(),
            gather: GatherScratch::default(),
        }
    }
}

impl<O> FoldScratch<O> {
    pub(super) fn capacity_bytes(&self) -> usize {
        use std::mem::size_of;
        self.keys.capacity() * 8
            + self.pairs.capacity() * size_of::<(u64, u32)>()
            + self.group.capacity() * size_of::<O>()
            + self.bounds.capacity() * size_of::<(usize, usize)>()
            + self.cols.capacity() * 4
            + self.gather.capacity_bytes()
    }
}

/// Types with fewer outputs than this fold on one thread.
const PAR_MIN_WRITES: usize = if cfg!(miri) { 48 } else { 64 * 1024 };
/// Smallest row range given to one worker.
const PART_MIN_ROWS: usize = if cfg!(miri) { 8 } else { 16 * 1024 };
/// Most parts one type is split into (they live in a stack array).
const MAX_PARTS: usize = 64;
/// Sources kept on the stack in the keyed scan (more take a `Vec`).
const STACK_SOURCES: usize = 16;

#[inline]
fn key(col: u32, row: u32) -> u64 {
    (u64::from(col) << 32) | u64::from(row)
}

#[inline]
fn split_key(k: u64) -> (usize, usize) {
    ((k >> 32) as usize, k as u32 as usize)
}

/// Folds `inbox` (in system order) into `columns`; see the module docs. If a merge
/// panics, the panic goes on after `failed` says where (see "When a merge panics").
pub(super) fn fold<C: Component, M: Merge<C>>(
    merge: &M,
    columns: &mut [Vec<C>],
    marks: &mut TypeMarks,
    inbox: &mut [(u32, Box<OutBuf<C>>)],
    scratch: &mut FoldScratch<C::Output>,
    pool: &Pool,
    failed: &mut Option<FailedAt>,
) -> FoldCounts {
    *failed = None;
    let mut counts = FoldCounts::default();
    for (_, b) in inbox.iter() {
        counts.merged += b.len() as u64;
        counts.dropped += b.dropped;
    }
    if counts.merged == 0 {
        return counts;
    }
    mark_changed(marks, inbox);
    if M::ONE_AT_A_TIME || (inbox.len() == 1 && inbox[0].1.is_ordered()) {
        let total = counts.merged as usize;
        if !par_in_order(merge, columns, inbox, scratch, pool, total, failed) {
            in_order(merge, columns, inbox, failed);
        }
    } else if gather::applies(inbox) {
        gather::gather(merge, columns, inbox, &mut scratch.gather, failed);
    } else {
        keyed(merge, columns, inbox, scratch, failed);
    }
    counts
}

/// Marks every row a source's runs will merge into as changed: one range per run.
fn mark_changed<C: Component>(marks: &mut TypeMarks, inbox: &[(u32, Box<OutBuf<C>>)]) {
    for (_, src) in inbox {
        for (r, values) in src.runs_with_values() {
            let row = r.row as usize;
            marks.mark_changed(r.col as usize, row..row + values.len());
        }
    }
}

/// Applies `values` (split by `runs`) to `columns`, one merge call per output.
#[inline]
fn apply_runs<C: Component, M: Merge<C>>(
    merge: &M,
    runs: &[RowRun],
    values: &[C::Output],
    columns: &mut [Vec<C>],
    on_unwind: &mut OnUnwind<'_>,
) {
    for (r, vals) in run_values(runs, values) {
        let row = r.row as usize;
        let rows = &mut columns[r.col as usize][row..row + vals.len()];
        for (k, (v, o)) in rows.iter_mut().zip(vals).enumerate() {
            on_unwind.at(r.col, row + k);
            merge.merge(v, std::slice::from_ref(o));
        }
    }
}

/// [`apply_runs`] restricted to the rows of `part`.
#[inline]
fn apply_runs_to_part<C: Component, M: Merge<C>>(
    merge: &M,
    runs: &[RowRun],
    values: &[C::Output],
    part: &mut Part<'_, C>,
) {
    let Part {
        col,
        lo,
        rows,
        failed,
    } = part;
    let (col, lo, hi) = (*col, *lo, *lo + rows.len());
    let mut on_unwind = OnUnwind::new(failed, FailedAt::Column(col));
    for (r, vals) in run_values(runs, values) {
        let row = r.row as usize;
        let (a, b) = (row.max(lo), (row + vals.len()).min(hi));
        if r.col != col || a >= b {
            continue;
        }
        for (k, (v, o)) in rows[a - lo..b - lo]
            .iter_mut()
            .zip(&vals[a - row..])
            .enumerate()
        {
            on_unwind.at(col, a + k);
            merge.merge(v, std::slice::from_ref(o));
        }
    }
    on_unwind.disarm();
}

/// Whether a segment with these runs is one whole column of `columns`.
#[inline]
fn whole_column<C>(runs: &[RowRun], len: usize, columns: &[Vec<C>]) -> Option<usize> {
    match runs {
        [r] if r.row == 0 && len > 0 && columns[r.col as usize].len() == len => {
            Some(r.col as usize)
        }
        _ => None,
    }
}

/// The in-order path on the calling thread.
fn in_order<C: Component, M: Merge<C>>(
    merge: &M,
    columns: &mut [Vec<C>],
    inbox: &mut [(u32, Box<OutBuf<C>>)],
    failed: &mut Option<FailedAt>,
) {
    let mut on_unwind = OnUnwind::new(failed, FailedAt::Column(0));
    for (_, src) in inbox.iter_mut() {
        for (seg_runs, seg) in src.sealed_mut() {
            if let Some(col) = whole_column(seg_runs, seg.values.len(), columns) {
                on_unwind.at = FailedAt::Column(col as u32);
                if merge.replace_column(&mut columns[col], &mut seg.values) {
                    continue;
                }
            }
            apply_runs(merge, seg_runs, &seg.values, columns, &mut on_unwind);
        }
    }
    on_unwind.disarm();
}

/// Rows `lo..lo + rows.len()` of column `col`, merged by one worker.
struct Part<'a, C> {
    col: u32,
    lo: usize,
    rows: &'a mut [C],
    /// Where this part's merge panicked, if it did.
    failed: Option<FailedAt>,
}

/// The in-order path split by row range over the pool. Returns `false`, touching nothing,
/// when it does not pay (few outputs, one thread, many short runs) or a segment could be
/// swapped in whole by a merge that replaces columns (cheaper on one thread).
fn par_in_order<C: Component, M: Merge<C>>(
    merge: &M,
    columns: &mut [Vec<C>],
    inbox: &mut [(u32, Box<OutBuf<C>>)],
    scratch: &mut FoldScratch<C::Output>,
    pool: &Pool,
    total: usize,
    failed: &mut Option<FailedAt>,
) -> bool {
    if pool.threads() < 2 || total < PAR_MIN_WRITES {
        return false;
    }
    let runs: usize = inbox.iter().map(|(_, b)| b.runs.len()).sum();
    if runs * 16 > total {
        return false;
    }
    let cols = &mut scratch.cols;
    cols.clear();
    for (_, src) in inbox.iter() {
        for (seg_runs, seg) in src.sealed() {
            if M::REPLACES_COLUMNS && whole_column(seg_runs, seg.values.len(), columns).is_some() {
                return false;
            }
            cols.extend(seg_runs.iter().map(|r| r.col));
        }
    }
    cols.sort_unstable();
    cols.dedup();

    let mut parts: [Part<'_, C>; MAX_PARTS] = std::array::from_fn(|_| Part {
        col: 0,
        lo: 0,
        rows: &mut [],
        failed: None,
    });
    let per_column = pool.threads() * 2;
    let mut n = 0;
    let mut wanted = cols.iter().peekable();
    for (c, column) in columns.iter_mut().enumerate() {
        if wanted.next_if(|&&w| w as usize == c).is_none() {
            continue;
        }
        let len = column.len();
        let k = (len / PART_MIN_ROWS).clamp(1, per_column);
        let part = len.div_ceil(k).max(1);
        for (i, rows) in column.chunks_mut(part).enumerate() {
            if n == MAX_PARTS {
                // Too many parts for the stack array: nothing was merged yet, so the
                // sequential path can still take over.
                return false;
            }
            parts[n] = Part {
                col: c as u32,
                lo: i * part,
                rows,
                failed: None,
            };
            n += 1;
        }
    }
    let inbox: &[(u32, Box<OutBuf<C>>)] = inbox;
    let result = pool.for_each_mut(&mut parts[..n], &|_, part| {
        for (_, src) in inbox {
            for (seg_runs, seg) in src.sealed() {
                apply_runs_to_part(merge, seg_runs, &seg.values, part);
            }
        }
    });
    if let Err(p) = result {
        // The lowest part that panicked; parts that did not merged all their rows.
        *failed = parts[p.index].failed;
        std::panic::resume_unwind(p.payload);
    }
    true
}

/// The keyed path: keys from runs, a stable sort only for sources not already in key
/// order, then one column-wise scan gathering each entity's outputs.
fn keyed<C: Component, M: Merge<C>>(
    merge: &M,
    columns: &mut [Vec<C>],
    inbox: &mut [(u32, Box<OutBuf<C>>)],
    scratch: &mut FoldScratch<C::Output>,
    failed: &mut Option<FailedAt>,
) {
    let FoldScratch {
        keys,
        pairs,
        group,
        bounds,
        ..
    } = scratch;
    keys.clear();
    bounds.clear();
    for (_, src) in inbox.iter_mut() {
        let start = keys.len();
        for (r, values) in src.runs_with_values() {
            let base = key(r.col, r.row);
            keys.extend((0..values.len() as u64).map(|d| base + d));
        }
        let end = keys.len();
        if !keys[start..end].is_sorted() {
            sort_source(src, &mut keys[start..end], pairs);
        }
        bounds.push((start, end));
    }
    let n = inbox.len();
    // One `catch_unwind` per type and frame, around the whole scan: a guard inside it
    // would put cleanup paths in its loop (measured: 7% slower). After a panic, where the
    // scan stopped is read back from `bounds`.
    let scanned = catch_unwind(AssertUnwindSafe(|| {
        if n <= STACK_SOURCES {
            let mut iters: [Option<_>; STACK_SOURCES] = std::array::from_fn(|_| None);
            for (slot, (_, src)) in iters.iter_mut().zip(inbox.iter_mut()) {
                *slot = Some(drain_values(&mut src.segments));
            }
            scan(merge, columns, keys, bounds, &mut iters[..n], group);
        } else {
            let mut iters: Vec<_> = inbox
                .iter_mut()
                .map(|(_, src)| Some(drain_values(&mut src.segments)))
                .collect();
            scan(merge, columns, keys, bounds, &mut iters, group);
        }
    }));
    if let Err(payload) = scanned {
        *failed = scanned_to(keys, bounds).map(|k| {
            let (col, row) = split_key(k);
            FailedAt::Row {
                col: col as u32,
                row: row as u32,
            }
        });
        resume_unwind(payload);
    }
}

/// After a panic in [`scan`]: the key it was merging, the largest key any source had
/// consumed (each source's keys are `keys[previous end..end]`, consumed up to `next`).
fn scanned_to(keys: &[u64], bounds: &[(usize, usize)]) -> Option<u64> {
    let mut start = 0;
    let mut last = None;
    for &(next, end) in bounds {
        if next > start {
            last = last.max(Some(keys[next - 1]));
        }
        start = end;
    }
    last
}

/// Every value of `segments`, moved out in emission order.
fn drain_values<O>(segments: &mut [Segment<O>]) -> impl Iterator<Item = O> + '_ {
    segments.iter_mut().flat_map(|s| s.values.drain(..))
}

/// Walks the sources' ascending keys together: for the smallest key left, gathers that
/// entity's outputs from every source in system order (several from one source if it wrote
/// the entity several times, in emission order) and merges them once.
fn scan<C: Component, M: Merge<C>, I: Iterator<Item = C::Output>>(
    merge: &M,
    columns: &mut [Vec<C>],
    keys: &[u64],
    bounds: &mut [(usize, usize)],
    iters: &mut [Option<I>],
    group: &mut Vec<C::Output>,
) {
    loop {
        let mut min = u64::MAX;
        for &(next, end) in bounds.iter() {
            if next < end && keys[next] < min {
                min = keys[next];
            }
        }
        if min == u64::MAX {
            break;
        }
        group.clear();
        for ((next, end), it) in bounds.iter_mut().zip(iters.iter_mut()) {
            let it = it.as_mut().expect("one iterator per source");
            while *next < *end && keys[*next] == min {
                group.push(it.next().expect("one value per key"));
                *next += 1;
            }
        }
        let (col, row) = split_key(min);
        merge.merge(&mut columns[col][row], group);
    }
    group.clear();
}

/// Puts one source's values (and `keys`, theirs) in ascending key order, stably, as a
/// single segment.
fn sort_source<C: Component>(src: &mut OutBuf<C>, keys: &mut [u64], pairs: &mut Vec<(u64, u32)>) {
    let mut flat = src.spare.pop().unwrap_or_default();
    flat.clear();
    for mut seg in src.segments.drain(..) {
        flat.append(&mut seg.values);
        src.spare.push(seg.values);
    }
    src.runs.clear();
    pairs.clear();
    pairs.extend(keys.iter().enumerate().map(|(i, &k)| (k, i as u32)));
    // (key, emission index) pairs are distinct, so an unstable sort is a stable one.
    pairs.sort_unstable();
    // Apply the permutation in place: position i takes the element at pairs[i].1.
    for i in 0..pairs.len() {
        if pairs[i].1 as usize == i {
            continue;
        }
        let mut cur = i;
        loop {
            let next = pairs[cur].1 as usize;
            pairs[cur].1 = cur as u32;
            if next == i {
                break;
            }
            keys.swap(cur, next);
            flat.swap(cur, next);
            cur = next;
        }
    }
    src.segments.push(Segment {
        values: flat,
        runs_end: 0,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge;

    #[derive(Clone, Debug, PartialEq)]
    struct V(i64);
    impl Component for V {
        type Output = i64;
    }
    #[derive(Clone, Debug, PartialEq)]
    struct L(i64);
    impl Component for L {
        type Output = L;
    }
    impl std::ops::AddAssign<i64> for V {
        fn add_assign(&mut self, d: i64) {
            self.0 += d;
        }
    }

    /// An order-sensitive fold: any reordering or regrouping changes the result.
    fn hash(v: &mut V, outs: &[i64]) {
        v.0 = outs
            .iter()
            .fold(v.0.wrapping_mul(1_000_003) ^ outs.len() as i64, |a, &x| {
                a.wrapping_mul(31).wrapping_add(x)
            });
    }

    /// A source from `(col, row, value)` writes in emission order, through the same calls
    /// the write path makes (a new segment when a run starts at row 0).
    fn source<C: Component>(writes: &[(u32, u32, C::Output)]) -> Box<OutBuf<C>>
    where
        C::Output: Clone,
    {
        let mut b = Box::new(OutBuf::<C>::default());
        let mut next: Option<(u32, u32)> = None;
        for (col, row, v) in writes {
            if next != Some((*col, *row)) {
                b.start_run(*col, *row, *row == 0);
            }
            b.push_in_run(v.clone());
            next = Some((*col, row + 1));
        }
        b.seal();
        b
    }

    /// The model: each entity's outputs in source order, then emission order; one call.
    fn model(
        columns: &mut [Vec<V>],
        sources: &[Vec<(u32, u32, i64)>],
        merge: impl Fn(&mut V, &[i64]),
    ) {
        let mut groups: std::collections::BTreeMap<(u32, u32), Vec<i64>> = Default::default();
        for s in sources {
            for &(c, r, v) in s {
                groups.entry((c, r)).or_default().push(v);
            }
        }
        for ((c, r), outs) in groups {
            merge(&mut columns[c as usize][r as usize], &outs);
        }
    }

    fn columns() -> Vec<Vec<V>> {
        let n = if cfg!(miri) { 40 } else { 70_000 };
        vec![
            (0..n).map(V).collect(),
            (0..7).map(|i| V(-i)).collect(),
            (0..n / 2).map(|i| V(i * 3)).collect(),
        ]
    }

    /// Source shapes: query order over everything, a partial in-order pass, reverse order,
    /// repeats, and a random-looking scatter.
    fn shapes(cols: &[Vec<V>]) -> Vec<Vec<(u32, u32, i64)>> {
        let all: Vec<(u32, u32)> = cols
            .iter()
            .enumerate()
            .flat_map(|(c, col)| (0..col.len() as u32).map(move |r| (c as u32, r)))
            .collect();
        let tag = |k: i64, v: &[(u32, u32)]| -> Vec<(u32, u32, i64)> {
            v.iter()
                .map(|&(c, r)| (c, r, k * 1_000_000 + i64::from(c) * 100_000 + i64::from(r)))
                .collect()
        };
        let evens: Vec<_> = all.iter().copied().filter(|&(_, r)| r % 2 == 0).collect();
        let rev: Vec<_> = all.iter().rev().copied().step_by(3).collect();
        let twice: Vec<_> = all.iter().flat_map(|&x| [x, x]).take(500).collect();
        let scatter: Vec<_> = (0..300u32)
            .map(|i| all[(i as usize * 7919) % all.len()])
            .collect();
        // In order, with gaps of other lengths than `evens`' and a column left out.
        let gaps: Vec<_> = all
            .iter()
            .copied()
            .filter(|&(c, r)| c != 1 && r % 5 < 2)
            .collect();
        vec![
            tag(1, &all),
            tag(2, &evens),
            tag(3, &rev),
            tag(4, &twice),
            tag(5, &scatter),
            tag(6, &all),
            tag(7, &gaps),
        ]
    }

    fn marks_for<C>(cols: &[Vec<C>]) -> TypeMarks {
        let mut marks = TypeMarks::default();
        cols.iter().for_each(|_| marks.add_column());
        marks
    }

    fn check<M: Merge<V>>(m: M, reference: impl Fn(&mut V, &[i64]) + Copy, pick: &[usize]) {
        for threads in [1, 2] {
            let pool = Pool::new(threads);
            let mut cols = columns();
            let all = shapes(&cols);
            let chosen: Vec<_> = pick.iter().map(|&k| all[k].clone()).collect();
            let mut expect = cols.clone();
            model(&mut expect, &chosen, reference);
            let mut inbox: Vec<(u32, Box<OutBuf<V>>)> = chosen
                .iter()
                .enumerate()
                .map(|(s, w)| (s as u32, source::<V>(w)))
                .collect();
            let total: usize = chosen.iter().map(Vec::len).sum();
            let mut marks = marks_for(&cols);
            let counts = fold(
                &m,
                &mut cols,
                &mut marks,
                &mut inbox,
                &mut FoldScratch::default(),
                &pool,
                &mut None,
            );
            assert_eq!(counts.merged as usize, total);
            assert!(cols == expect, "sources {pick:?}, {threads} threads");
            // Exactly the rows some source wrote are marked changed, none added.
            let written: std::collections::BTreeSet<(u32, u32)> =
                chosen.iter().flatten().map(|&(c, r, _)| (c, r)).collect();
            for (c, col) in cols.iter().enumerate() {
                let m = &marks.columns[c];
                for r in 0..col.len() {
                    let w = written.contains(&(c as u32, r as u32));
                    assert_eq!(m.changed.get(r), w, "col {c} row {r}, sources {pick:?}");
                    assert!(!m.added.get(r));
                }
                assert!(m.changed.words().len() <= col.len().div_ceil(64));
            }
        }
    }

    #[test]
    fn one_ordered_source_in_order_path() {
        check(hash, hash, &[0]);
        check(hash, hash, &[1]);
    }

    #[test]
    fn unordered_single_sources_take_the_keyed_path() {
        check(hash, hash, &[2]);
        check(hash, hash, &[3]);
        check(hash, hash, &[4]);
    }

    #[test]
    fn several_sources_gathered_column_wise() {
        check(hash, hash, &[0, 1, 5]);
        check(hash, hash, &[0, 2, 3, 4, 1]);
    }

    /// Ordered sources covering different rows (all, evens, gaps, none of a column) take
    /// the gather path, in any system order.
    #[test]
    fn ordered_sources_with_any_coverage_are_gathered() {
        let pick = [0, 1, 6];
        assert!(gather::applies(
            &pick
                .iter()
                .map(|&k| (0, source::<V>(&shapes(&columns())[k])))
                .collect::<Vec<_>>()
        ));
        check(hash, hash, &[1, 6]);
        check(hash, hash, &[6, 1, 0]);
        check(hash, hash, &[1, 0, 6, 5]);
        check(hash, hash, &[6, 6]);
    }

    #[test]
    fn one_at_a_time_merges_apply_source_by_source() {
        let add = |v: &mut V, d: &[i64]| d.iter().for_each(|x| v.0 = v.0.wrapping_add(*x));
        // Large aligned sources: the parallel row-range split (with 2 threads).
        check(merge::sum, add, &[0, 5, 1]);
        check(merge::sum, add, &[0, 2, 3, 4, 1, 5]);
    }

    /// Aligned whole-table sources of a sum on two threads take the row-range split, and
    /// agree with the model.
    #[test]
    fn parallel_row_ranges_agree_with_the_model() {
        let add = |v: &mut V, d: &[i64]| d.iter().for_each(|x| v.0 = v.0.wrapping_add(*x));
        check(merge::sum, add, &[0, 5]);
        let pool = Pool::new(2);
        let mut cols = columns();
        let all = shapes(&cols);
        let mut inbox = vec![(0, source::<V>(&all[0])), (1, source::<V>(&all[5]))];
        let total = inbox.iter().map(|(_, b)| b.len()).sum();
        let mut scratch = FoldScratch::default();
        // Split whenever there is a second thread (none with `single-threaded`).
        let split = par_in_order(
            &merge::sum,
            &mut cols,
            &mut inbox,
            &mut scratch,
            &pool,
            total,
            &mut None,
        );
        assert_eq!(split, pool.threads() > 1);
        // A merge that swaps whole columns keeps them on one thread.
        let n = if cfg!(miri) { 60 } else { 70_000 };
        let mut l: Vec<Vec<L>> = vec![(0..n as i64).map(L).collect()];
        let whole: Vec<(u32, u32, L)> = (0..n).map(|r| (0, r, L(7))).collect();
        let mut inbox = vec![(0, source::<L>(&whole))];
        let mut scratch = FoldScratch::default();
        let total = n as usize;
        assert!(!par_in_order(
            &merge::last,
            &mut l,
            &mut inbox,
            &mut scratch,
            &pool,
            total,
            &mut None,
        ));
    }

    /// Every path says where its merge panicked; rows it had not reached keep their old
    /// values, rows it had finished hold their merged ones.
    #[test]
    fn a_panicking_merge_says_where() {
        let bad = |v: &mut V, outs: &[i64]| {
            assert!(!outs.contains(&-1), "bad output");
            hash(v, outs);
        };
        let sum_or_panic = |v: &mut V, outs: &[i64]| {
            assert!(!outs.contains(&-1), "bad output");
            v.0 += outs.iter().sum::<i64>();
        };
        struct OneAtATime<F>(F);
        impl<F: Fn(&mut V, &[i64]) + Send + Sync + 'static> Merge<V> for OneAtATime<F> {
            fn merge(&self, v: &mut V, outs: &[i64]) {
                (self.0)(v, outs)
            }
            const ONE_AT_A_TIME: bool = true;
        }
        let (col, row) = (2u32, if cfg!(miri) { 13 } else { 1234 });
        for threads in [1, 2] {
            let pool = Pool::new(threads);
            let cols = columns();
            let all = shapes(&cols);
            let poison = |src: &[(u32, u32, i64)]| -> Vec<(u32, u32, i64)> {
                let mut src = src.to_vec();
                src.iter_mut()
                    .filter(|w| (w.0, w.1) == (col, row))
                    .for_each(|w| w.2 = -1);
                src
            };
            // Gathered (several ordered sources, a merge that needs them all), one source
            // in order (in place, or in parallel row ranges), a source out of order
            // (keyed).
            let cases: [(&[usize], bool); 4] = [
                (&[0, 5], false),
                (&[0], false),
                (&[0, 5], true),
                (&[4, 0], false),
            ];
            for (pick, one_at_a_time) in cases {
                let mut cols = columns();
                let mut inbox: Vec<(u32, Box<OutBuf<V>>)> = pick
                    .iter()
                    .enumerate()
                    .map(|(s, &k)| {
                        let w = if s == pick.len() - 1 {
                            poison(&all[k])
                        } else {
                            all[k].clone()
                        };
                        (s as u32, source::<V>(&w))
                    })
                    .collect();
                let mut marks = marks_for(&cols);
                let mut failed = None;
                let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    let mut scratch = FoldScratch::default();
                    if one_at_a_time {
                        fold(
                            &OneAtATime(sum_or_panic),
                            &mut cols,
                            &mut marks,
                            &mut inbox,
                            &mut scratch,
                            &pool,
                            &mut failed,
                        );
                    } else {
                        fold(
                            &bad,
                            &mut cols,
                            &mut marks,
                            &mut inbox,
                            &mut scratch,
                            &pool,
                            &mut failed,
                        );
                    }
                }));
                assert!(r.is_err(), "{pick:?}");
                assert_eq!(
                    failed,
                    Some(FailedAt::Row { col, row }),
                    "{pick:?}, {threads} threads"
                );
            }
        }
    }

    #[test]
    fn last_swaps_whole_columns_and_keeps_order() {
        let pool = Pool::new(2);
        let n = 50u32;
        let mut cols: Vec<Vec<L>> = vec![(0..n as i64).map(L).collect()];
        let whole: Vec<(u32, u32, L)> = (0..n).map(|r| (0, r, L(100 + i64::from(r)))).collect();
        let partial: Vec<(u32, u32, L)> = (10..20).map(|r| (0, r, L(-1))).collect();
        // Whole column, then a partial overwrite from a later system, then a whole column
        // from the first system of the next... all in system order.
        let mut inbox = vec![(0, source::<L>(&whole)), (1, source::<L>(&partial))];
        let mut marks = marks_for(&cols);
        fold(
            &merge::last,
            &mut cols,
            &mut marks,
            &mut inbox,
            &mut FoldScratch::default(),
            &pool,
            &mut None,
        );
        let expect: Vec<L> = (0..n as i64)
            .map(|r| {
                if (10..20).contains(&r) {
                    L(-1)
                } else {
                    L(100 + r)
                }
            })
            .collect();
        assert_eq!(cols[0], expect);
        assert_eq!(
            marks.columns[0].changed.count(),
            n as usize,
            "the swap marks all"
        );
        // The swapped-out column went back to the source as its values (cleared later).
        assert_eq!(inbox[0].1.segments[0].values.len(), n as usize);
    }
}
