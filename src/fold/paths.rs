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
//! 2. **Swept** — several sources that each visit rows in increasing order (query
//!    loops, whatever rows each wrote) and a merge that must see all of an entity's outputs
//!    at once (a hand-written `fn` or closure): the sources are walked together, row
//!    intervals at a time, each row's outputs moved into one group in system order and
//!    merged once; no keys, no sort. Large types are split by row range over the workers
//!    (see `sweep`).
//! 3. **Bucketed** — otherwise (a source that visits rows out of order or twice:
//!    scattered writes), when the type has at most a few rows per output: one counting
//!    sort by row moves every value straight into its row's group, in system then
//!    emission order, and one merge call per row with outputs follows, rows in order
//!    (see `bucket`). The merges are split by row range over the workers when there are
//!    many outputs.
//! 4. **Keyed** — scattered writes to a type of many more rows than outputs: every output
//!    gets a packed key (its row's place among the type's rows, and its place in emission
//!    order), a stable radix sort on the keys' significant bits puts each entity's
//!    outputs together in system then emission order, the values move to that order, and
//!    one merge call per entity follows (see `keyed`). The sort's passes and the merges
//!    are split over the workers when there are many outputs.
//!
//! Every path marks the rows it merges into as *changed* (see `storage::marks`), from
//! the runs alone: runs inside one word of marks are gathered into one `or`, a longer
//! run is one range fill, so the cost is O(runs + rows / 64) whatever the path, and a
//! whole-column swap is one fill. The in-order path on the calling thread marks each run
//! just before it merges it (one walk over the runs); the others mark every run first.
//! Either way a merge that panics leaves every row it changed marked. (The bucketed and
//! keyed paths mark rows from what they sorted.)
//!
//! No path depends on thread timing.
//!
//! # When a merge panics
//!
//! Every path records where it was in the fold's [`FailedAt`] through an [`OnUnwind`]
//! guard; see the `part` module for how, and why it costs nothing on the normal path.

use crate::component::Component;
use crate::merge::{ColumnOutputs, Merge};
use crate::output::buffer::{OutBuf, RowRun, run_values};
use crate::pool::Pool;
use crate::storage::{ChangedWords, TypeMarks};

use super::bucket::{self, BucketScratch};
use super::keyed::{self, KeyedScratch};
use super::part::{FailedAt, FoldCounts, FoldJob, MAX_PARTS, OnUnwind, PAR_MIN_WRITES, row_ranges};
use super::sweep::{self, SweepScratch};

/// Per-type scratch kept across frames (capacity only).
pub(crate) struct FoldScratch<O> {
    /// Columns touched, for the parallel split.
    cols: Vec<u32>,
    /// The sweep path's.
    sweep: SweepScratch<O>,
    /// The bucket path's.
    bucket: BucketScratch<O>,
    /// The keyed path's.
    keyed: KeyedScratch<O>,
}

impl<O> Default for FoldScratch<O> {
    fn default() -> Self {
        FoldScratch {
            cols: Vec::new(),
            sweep: SweepScratch::default(),
            bucket: BucketScratch::default(),
            keyed: KeyedScratch::default(),
        }
    }
}

impl<O> FoldScratch<O> {
    pub(super) fn capacity_bytes(&self) -> usize {
        self.cols.capacity() * 4
            + self.sweep.capacity_bytes()
            + self.bucket.capacity_bytes()
            + self.keyed.capacity_bytes()
    }
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
    let total = counts.merged as usize;
    let rows = columns.iter().map(Vec::len).sum();
    let mut job = FoldJob {
        merge,
        columns,
        inbox,
        total,
        pool,
        failed,
    };
    if M::ONE_AT_A_TIME || (job.inbox.len() == 1 && job.inbox[0].1.is_ordered()) {
        if !par_in_order(&mut job, marks, &mut scratch.cols) {
            in_order(job, marks);
        }
    } else if sweep::applies(job.inbox) {
        mark_changed(marks, job.inbox);
        sweep::sweep(job, &mut scratch.sweep);
    } else if bucket::applies(rows, total) {
        // Both mark the rows they merge into themselves, from what they sorted.
        bucket::bucket(job, marks, &mut scratch.bucket);
    } else {
        keyed::keyed(job, marks, &mut scratch.keyed);
    }
    counts
}

/// Marks every row a source's runs will merge into as changed, through [`ChangedWords`].
/// Each run's length is the next run's start (or its segment's end) less its own: no
/// values are looked at.
fn mark_changed<C: Component>(marks: &mut TypeMarks, inbox: &[(u32, Box<OutBuf<C>>)]) {
    let mut words = ChangedWords::new(marks);
    for (_, src) in inbox {
        for (runs, seg) in src.sealed() {
            let ends = runs.iter().skip(1).map(|r| r.start as usize);
            for (r, end) in runs.iter().zip(ends.chain([seg.values.len()])) {
                let row = r.row as usize;
                words.mark(r.col as usize, row..row + (end - r.start as usize));
            }
        }
    }
}

/// Applies `values` (split by `runs`) to `columns`, one merge call per output, marking
/// each run's rows changed before it merges into them. A run of one row (a loop that
/// writes some rows and skips others makes many) is merged without the loop.
#[inline]
fn apply_runs<C: Component, M: Merge<C>>(
    merge: &M,
    runs: &[RowRun],
    values: &[C::Output],
    columns: &mut [Vec<C>],
    marks: &mut ChangedWords<'_>,
    on_unwind: &mut OnUnwind<'_>,
) {
    for (r, vals) in run_values(runs, values) {
        let row = r.row as usize;
        marks.mark(r.col as usize, row..row + vals.len());
        let column = &mut columns[r.col as usize];
        if let [o] = vals {
            on_unwind.at(r.col, row);
            merge.merge(&mut column[row], std::slice::from_ref(o));
            continue;
        }
        let rows = &mut column[row..row + vals.len()];
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
    part: &mut RowPart<'_, C>,
) {
    let RowPart {
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

/// The in-order path on the calling thread; it marks the rows as it merges them.
fn in_order<C: Component, M: Merge<C>>(job: FoldJob<'_, C, M>, marks: &mut TypeMarks) {
    let FoldJob {
        merge,
        columns,
        inbox,
        failed,
        ..
    } = job;
    let mut on_unwind = OnUnwind::new(failed, FailedAt::Column(0));
    let mut marks = ChangedWords::new(marks);
    for (_, src) in inbox.iter_mut() {
        for (seg_runs, seg) in src.sealed_mut() {
            if let Some(col) = whole_column(seg_runs, seg.values.len(), columns) {
                on_unwind.at_column(col as u32);
                marks.mark(col, 0..seg.values.len());
                if merge.replace_column(ColumnOutputs::new(&mut columns[col], &mut seg.values)) {
                    continue;
                }
            }
            apply_runs(
                merge,
                seg_runs,
                &seg.values,
                columns,
                &mut marks,
                &mut on_unwind,
            );
        }
    }
    on_unwind.disarm();
}

/// Rows `lo..lo + rows.len()` of column `col`, merged by one worker.
struct RowPart<'a, C> {
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
    job: &mut FoldJob<'_, C, M>,
    marks: &mut TypeMarks,
    cols: &mut Vec<u32>,
) -> bool {
    let FoldJob {
        merge,
        columns,
        inbox,
        total,
        pool,
        failed,
    } = job;
    let (merge, pool, total) = (*merge, *pool, *total);
    if pool.threads() < 2 || total < PAR_MIN_WRITES {
        return false;
    }
    let runs: usize = inbox.iter().map(|(_, b)| b.runs.len()).sum();
    if runs * 16 > total {
        return false;
    }
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

    let mut parts: [RowPart<'_, C>; MAX_PARTS] = std::array::from_fn(|_| RowPart {
        col: 0,
        lo: 0,
        rows: &mut [],
        failed: None,
    });
    let mut n = 0;
    let fits = row_ranges(columns, cols, pool.threads(), |col, lo, rows| {
        if n == MAX_PARTS {
            return false;
        }
        parts[n] = RowPart {
            col,
            lo,
            rows,
            failed: None,
        };
        n += 1;
        true
    });
    if !fits {
        // Too many parts for the stack array: nothing was merged yet, so the sequential
        // path can still take over.
        return false;
    }
    let inbox: &[(u32, Box<OutBuf<C>>)] = inbox;
    mark_changed(marks, inbox);
    let result = pool.for_each_mut(&mut parts[..n], &|_, part| {
        for (_, src) in inbox {
            for (seg_runs, seg) in src.sealed() {
                apply_runs_to_part(merge, seg_runs, &seg.values, part);
            }
        }
    });
    if let Err(p) = result {
        // The lowest part that panicked; parts that did not merged all their rows.
        **failed = parts[p.index].failed;
        std::panic::resume_unwind(p.payload);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge;
    use std::panic::AssertUnwindSafe;

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

    /// A fold job over `columns` and `inbox`, its `total` counted from the inbox.
    fn job<'a, C: Component, M>(
        merge: &'a M,
        columns: &'a mut [Vec<C>],
        inbox: &'a mut [(u32, Box<OutBuf<C>>)],
        pool: &'a Pool,
        failed: &'a mut Option<FailedAt>,
    ) -> FoldJob<'a, C, M> {
        let total = inbox.iter().map(|(_, b)| b.len()).sum();
        FoldJob {
            merge,
            columns,
            inbox,
            total,
            pool,
            failed,
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
        // As many writes as rows, each to a pseudo-random row of any column: some rows
        // get several, some none (enough to sort and merge on several workers).
        let spray: Vec<_> = (0..all.len())
            .map(|i| all[(mix(i as u64) % all.len() as u64) as usize])
            .collect();
        vec![
            tag(1, &all),
            tag(2, &evens),
            tag(3, &rev),
            tag(4, &twice),
            tag(5, &scatter),
            tag(6, &all),
            tag(7, &gaps),
            tag(8, &spray),
        ]
    }

    /// A fixed hash (splitmix64's finaliser), for pseudo-random targets.
    fn mix(i: u64) -> u64 {
        let mut x = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^ (x >> 31)
    }

    /// Worker counts every comparison with the model runs at.
    // Under Miri, where each thread is interpreted, one uneven count (3) stands for both 2
    // and "many": these tests were most of CI's Miri time, and 3 still splits rows and
    // sources over several workers, unevenly. Natively all three run.
    #[cfg(not(miri))]
    const THREADS: &[usize] = &[1, 2, 8];
    #[cfg(miri)]
    const THREADS: &[usize] = &[1, 3];

    fn marks_for<C>(cols: &[Vec<C>]) -> TypeMarks {
        let mut marks = TypeMarks::default();
        cols.iter().for_each(|_| marks.add_column());
        marks
    }

    fn check<M: Merge<V>>(m: M, reference: impl Fn(&mut V, &[i64]) + Copy, pick: &[usize]) {
        let cols = columns();
        let all = shapes(&cols);
        let chosen: Vec<_> = pick.iter().map(|&k| all[k].clone()).collect();
        check_sources(&m, reference, &cols, &chosen, &format!("sources {pick:?}"));
    }

    /// Folds `chosen` (one source each, in system order) into `cols` at every worker count
    /// of [`THREADS`]: the result must be the model's, and the rows written marked.
    fn check_sources<M: Merge<V>>(
        m: &M,
        reference: impl Fn(&mut V, &[i64]) + Copy,
        cols: &[Vec<V>],
        chosen: &[Vec<(u32, u32, i64)>],
        what: &str,
    ) {
        let mut expect = cols.to_vec();
        model(&mut expect, chosen, reference);
        let written: std::collections::BTreeSet<(u32, u32)> =
            chosen.iter().flatten().map(|&(c, r, _)| (c, r)).collect();
        let total: usize = chosen.iter().map(Vec::len).sum();
        for &threads in THREADS {
            let pool = Pool::new(threads);
            let mut cols = cols.to_vec();
            let mut inbox: Vec<(u32, Box<OutBuf<V>>)> = chosen
                .iter()
                .enumerate()
                .map(|(s, w)| (s as u32, source::<V>(w)))
                .collect();
            let mut marks = marks_for(&cols);
            let mut scratch = FoldScratch::default();
            // Twice with the same scratch (as next frame would), from the first's result.
            for round in 0..2 {
                if round == 1 {
                    inbox = chosen
                        .iter()
                        .enumerate()
                        .map(|(s, w)| (s as u32, source::<V>(w)))
                        .collect();
                    marks = marks_for(&cols);
                }
                let counts = fold(
                    m,
                    &mut cols,
                    &mut marks,
                    &mut inbox,
                    &mut scratch,
                    &pool,
                    &mut None,
                );
                assert_eq!(counts.merged as usize, total);
                let want = if round == 0 {
                    expect.clone()
                } else {
                    let mut twice = expect.clone();
                    model(&mut twice, chosen, reference);
                    twice
                };
                assert!(cols == want, "{what}, {threads} threads, round {round}");
                // Exactly the rows some source wrote are marked changed, none added.
                for (c, col) in cols.iter().enumerate() {
                    let m = marks.column(c);
                    for r in 0..col.len() {
                        let w = written.contains(&(c as u32, r as u32));
                        assert_eq!(m.changed.get(r), w, "col {c} row {r}, {what}");
                        assert!(!m.added.get(r));
                    }
                    assert!(m.changed.words().len() <= col.len().div_ceil(64));
                }
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
    fn several_sources_swept_column_wise() {
        check(hash, hash, &[0, 1, 5]);
        check(hash, hash, &[0, 2, 3, 4, 1]);
    }

    /// Scattered writes (targets in no order, some rows written several times): as many
    /// as rows are bucketed (one counting sort by row), a few hundred into 100k rows are
    /// radix-sorted; either way merged on every worker count like the model.
    #[test]
    fn scattered_writes_are_sorted_on_any_worker_count() {
        let cols = columns();
        let all = shapes(&cols);
        let rows = cols.iter().map(Vec::len).sum();
        assert!(!sweep::applies(&[(0, source::<V>(&all[7]))]));
        assert!(bucket::applies(rows, all[7].len()));
        check(hash, hash, &[7]);
        check(hash, hash, &[7, 0]);
        check(hash, hash, &[2, 7, 4]);
        // (Under Miri's 67 rows these are many writes too: the keyed path's own test
        // below calls it directly.)
        assert_eq!(
            bucket::applies(rows, all[3].len() + all[4].len()),
            cfg!(miri)
        );
        check(hash, hash, &[3, 4]);
        check(hash, hash, &[4]);
    }

    /// On more than one worker, a large sweep and a large keyed fold split over them.
    #[test]
    fn large_sweeps_and_keyed_folds_split_over_the_workers() {
        let pool = Pool::new(2);
        let mut cols = columns();
        let all = shapes(&cols);
        let mut inbox = vec![(0, source::<V>(&all[0])), (1, source::<V>(&all[5]))];
        let split = sweep::sweep(
            job(&hash, &mut cols, &mut inbox, &pool, &mut None),
            &mut SweepScratch::default(),
        );
        assert_eq!(split, pool.threads() > 1);
        let mut inbox = vec![(0, source::<V>(&all[7]))];
        let split = keyed::keyed(
            job(&hash, &mut cols, &mut inbox, &pool, &mut None),
            &mut marks_for(&columns()),
            &mut KeyedScratch::default(),
        );
        assert_eq!(split, pool.threads() > 1);
        let mut inbox = vec![(0, source::<V>(&all[7]))];
        let split = bucket::bucket(
            job(&hash, &mut cols, &mut inbox, &pool, &mut None),
            &mut marks_for(&columns()),
            &mut BucketScratch::default(),
        );
        assert_eq!(split, pool.threads() > 1);
    }

    /// The keyed path, called directly on writes it would not get from [`fold`] (as many
    /// as rows: the bucket path's), agrees with the model on every worker count, and a
    /// merge that panics there (in a part split over the workers) is reported at the
    /// first row in merge order.
    #[test]
    fn keyed_path_on_many_outputs_agrees_and_says_where() {
        let cols = columns();
        let all = shapes(&cols);
        let (col, rows) = (2u32, if cfg!(miri) { [3, 13] } else { [1234, 30_000] });
        let mut spray = all[7].clone();
        for r in rows {
            spray.push((col, r, -1));
        }
        let bad = |v: &mut V, outs: &[i64]| {
            assert!(!outs.contains(&-1), "bad output");
            hash(v, outs);
        };
        for &threads in THREADS {
            let pool = Pool::new(threads);
            let mut got = columns();
            let mut inbox = vec![(0, source::<V>(&all[7]))];
            keyed::keyed(
                job(&hash, &mut got, &mut inbox, &pool, &mut None),
                &mut marks_for(&cols),
                &mut KeyedScratch::default(),
            );
            let mut want = columns();
            model(&mut want, &[all[7].clone()], hash);
            assert!(got == want, "{threads} threads");

            let mut got = columns();
            let mut inbox = vec![(0, source::<V>(&spray))];
            let mut failed = None;
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                keyed::keyed(
                    job(&bad, &mut got, &mut inbox, &pool, &mut failed),
                    &mut marks_for(&cols),
                    &mut KeyedScratch::default(),
                )
            }));
            assert!(r.is_err());
            let row = rows[0];
            assert_eq!(
                failed,
                Some(FailedAt::Row { col, row }),
                "{threads} threads"
            );
        }
    }

    /// Many sources: swept with a fixed array per row (up to eight covering lanes), in
    /// batches (up to sixteen) or one output at a time (more, with long spans); many
    /// sparse sources are keyed instead.
    #[test]
    fn many_lanes_are_swept_or_keyed() {
        let n = if cfg!(miri) { 30 } else { 40_000 };
        let cols = vec![(0..n).map(V).collect::<Vec<_>>(), (0..5).map(V).collect()];
        let all: Vec<(u32, u32)> = cols
            .iter()
            .enumerate()
            .flat_map(|(c, col)| (0..col.len() as u32).map(move |r| (c as u32, r)))
            .collect();
        let source_of = |k: usize, keep: &dyn Fn(usize, u32) -> bool| -> Vec<(u32, u32, i64)> {
            all.iter()
                .filter(|&&(_, r)| keep(k, r))
                .map(|&(c, r)| (c, r, (k as i64) << 40 | i64::from(c) << 20 | i64::from(r)))
                .collect()
        };
        // Source `k` skips every `(k + 2)`-th row: every count of covering lanes occurs.
        let gaps = |k: usize, r: u32| (r as usize + k) % (k + 2) != 0;
        let full = |_: usize, _: u32| true;
        let sparse = |k: usize, r: u32| r as usize % 20 == k;
        type Keep<'k> = &'k dyn Fn(usize, u32) -> bool;
        // `None`: either path (17 sources with gaps: swept when their spans are long
        // enough, which depends on the column sizes).
        let cases: [(usize, Keep<'_>, Option<bool>); 6] = [
            (3, &gaps, Some(true)),
            (8, &gaps, Some(true)),
            (9, &gaps, Some(true)),
            (17, &gaps, None),
            (17, &full, Some(true)),
            (20, &sparse, Some(false)),
        ];
        for (lanes, keep, swept) in cases {
            let chosen: Vec<_> = (0..lanes).map(|k| source_of(k, keep)).collect();
            let inbox: Vec<_> = chosen.iter().map(|w| (0, source::<V>(w))).collect();
            if let Some(swept) = swept {
                assert_eq!(sweep::applies(&inbox), swept, "{lanes} lanes");
            }
            check_sources(&hash, hash, &cols, &chosen, &format!("{lanes} lanes"));
        }
    }

    /// Ordered sources covering different rows (all, evens, gaps, none of a column) take
    /// the sweep path, in any system order.
    #[test]
    fn ordered_sources_with_any_coverage_are_swept() {
        let pick = [0, 1, 6];
        assert!(sweep::applies(
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
        let mut cols_touched = Vec::new();
        // Split whenever there is a second thread (none with `single-threaded`).
        let split = par_in_order(
            &mut job(&merge::sum, &mut cols, &mut inbox, &pool, &mut None),
            &mut marks_for(&columns()),
            &mut cols_touched,
        );
        assert_eq!(split, pool.threads() > 1);
        // A merge that swaps whole columns keeps them on one thread.
        let n = if cfg!(miri) { 60 } else { 70_000 };
        let mut l: Vec<Vec<L>> = vec![(0..n as i64).map(L).collect()];
        let whole: Vec<(u32, u32, L)> = (0..n).map(|r| (0, r, L(7))).collect();
        let mut inbox = vec![(0, source::<L>(&whole))];
        let mut cols_touched = Vec::new();
        assert!(!par_in_order(
            &mut job(&merge::last, &mut l, &mut inbox, &pool, &mut None),
            &mut marks_for(&[Vec::<L>::new()]),
            &mut cols_touched,
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
        // Two poisoned rows of column 2, in different parts of a split over the workers:
        // the first (in merge order) is the one reported, at any worker count.
        let col = 2u32;
        let (row, later) = if cfg!(miri) { (3, 13) } else { (1234, 30_000) };
        for &threads in THREADS {
            let pool = Pool::new(threads);
            let cols = columns();
            let all = shapes(&cols);
            // In place where the source writes the row (it stays ordered), else appended
            // (out of order: only for the keyed cases).
            let poison = |src: &[(u32, u32, i64)], append: bool| -> Vec<(u32, u32, i64)> {
                let mut src = src.to_vec();
                for r in [row, later] {
                    match src.iter_mut().find(|w| (w.0, w.1) == (col, r)) {
                        Some(w) => w.2 = -1,
                        None => {
                            assert!(append, "the source writes row {r}");
                            src.push((col, r, -1));
                        }
                    }
                }
                src
            };
            // Swept (several ordered sources, a merge that needs them all), one source
            // in order (in place, or in parallel row ranges), sources out of order (keyed:
            // a few writes, then as many as rows, sorted and merged on the workers).
            let cases: [(&[usize], bool); 6] = [
                (&[0, 5], false),
                (&[1, 6, 0], false),
                (&[0], false),
                (&[0, 5], true),
                (&[4, 0], false),
                (&[7], false),
            ];
            for (pick, one_at_a_time) in cases {
                let mut cols = columns();
                let keyed = !sweep::applies(
                    &pick
                        .iter()
                        .map(|&k| (0, source::<V>(&all[k])))
                        .collect::<Vec<_>>(),
                );
                let mut inbox: Vec<(u32, Box<OutBuf<V>>)> = pick
                    .iter()
                    .enumerate()
                    .map(|(s, &k)| {
                        let w = if s == pick.len() - 1 {
                            poison(&all[k], keyed)
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
                let payload = r.expect_err("the merge panics");
                assert_eq!(
                    crate::pool::payload_message(&*payload),
                    "bad output",
                    "{pick:?}"
                );
                assert_eq!(
                    failed,
                    Some(FailedAt::Row { col, row }),
                    "{pick:?}, {threads} threads"
                );
                // Every row the merge changed before it panicked is marked changed
                // (the in-order path marks as it goes, the others first).
                for (c, (now, was)) in cols.iter().zip(columns()).enumerate() {
                    for (r, (a, b)) in now.iter().zip(&was).enumerate() {
                        assert!(
                            a == b || marks.column(c).changed.get(r),
                            "{pick:?}, {threads} threads: column {c} row {r} changed unmarked"
                        );
                    }
                }
            }
        }
    }

    /// A merge of heap values that panics, on every path that moves values: the outputs
    /// it never saw are dropped once (Miri checks: no leak, no double free), and the
    /// outputs it did see reach it in order.
    #[test]
    fn outputs_a_panicking_merge_never_saw_are_dropped() {
        #[derive(Clone, Debug, PartialEq)]
        struct W(u64);
        impl Component for W {
            type Output = String;
        }
        let merge = |w: &mut W, outs: &[String]| {
            assert!(outs.iter().all(|o| o != "bad"), "bad output");
            for o in outs {
                w.0 =
                    w.0.wrapping_mul(31)
                        .wrapping_add(o.len() as u64 + o.as_bytes()[0] as u64);
            }
        };
        let n = if cfg!(miri) { 40 } else { 70_000 };
        let rows = |f: &dyn Fn(u32) -> bool, tag: &str| -> Vec<(u32, u32, String)> {
            (0..n as u32)
                .filter(|&r| f(r))
                .map(|r| (0, r, format!("{tag}{r}")))
                .collect()
        };
        let spray = |tag: &str| -> Vec<(u32, u32, String)> {
            (0..n as u64)
                .map(|i| (0, (mix(i) % n as u64) as u32, format!("{tag}{i}")))
                .collect()
        };
        for &threads in THREADS {
            let pool = Pool::new(threads);
            // Swept (2, 3 and 9 lanes: fixed arrays, batches), bucketed, then keyed.
            let cases: Vec<Vec<Vec<(u32, u32, String)>>> = vec![
                vec![rows(&|_| true, "a"), rows(&|r| r % 3 != 0, "b")],
                vec![
                    rows(&|_| true, "a"),
                    rows(&|r| r % 2 == 0, "b"),
                    rows(&|_| true, "c"),
                ],
                (0..9).map(|k| rows(&|r| r % (k + 2) != 0, "l")).collect(),
                vec![spray("s"), rows(&|_| true, "a")],
                // Few scattered outputs into many rows: keyed, not bucketed.
                vec![spray("k").into_iter().step_by(9).collect()],
            ];
            for (case, sources) in cases.into_iter().enumerate() {
                for poisoned in [false, true] {
                    let mut sources = sources.clone();
                    if poisoned {
                        let last = sources.last_mut().unwrap();
                        let k = last.len() / 2;
                        last[k].2 = "bad".to_string();
                    }
                    let mut cols: Vec<Vec<W>> = vec![(0..n as u64).map(W).collect()];
                    let mut inbox: Vec<(u32, Box<OutBuf<W>>)> = sources
                        .iter()
                        .enumerate()
                        .map(|(s, w)| (s as u32, source::<W>(w)))
                        .collect();
                    let mut marks = marks_for(&cols);
                    let mut failed = None;
                    let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        fold(
                            &merge,
                            &mut cols,
                            &mut marks,
                            &mut inbox,
                            &mut FoldScratch::default(),
                            &pool,
                            &mut failed,
                        )
                    }));
                    assert_eq!(r.is_err(), poisoned, "case {case}, {threads} threads");
                    assert_eq!(failed.is_some(), poisoned);
                }
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
            marks.column(0).changed.count(),
            n as usize,
            "the swap marks all"
        );
        // The swapped-out column went back to the source as its values (cleared later).
        assert_eq!(inbox[0].1.segments[0].values.len(), n as usize);
    }
}
