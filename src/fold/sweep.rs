//! The sweep path: a merge that must see all of an entity's outputs at once (a
//! hand-written `fn` or closure) over several sources that each visit rows in increasing
//! order — the shape of query loops, whatever rows each system wrote.
//!
//! No keys and no sort: each source is a *lane* of spans (runs of rows with their
//! values), and one pass sweeps across the lanes together. At each step the lanes whose
//! next row is the smallest *cover* an interval of rows that ends where one of them ends
//! its span or another lane starts; inside it, every row takes one value from each
//! covering lane, in system order, and the merge is called once. With sources that cover
//! the same rows (several systems writing every entity of a table) an interval is a whole
//! span, so the per-row work is one move per source and the merge call: up to four
//! covering lanes, the row's outputs are a stack array (no `Vec`), one loop per lane
//! count.
//!
//! The walk runs over *parts*: row ranges of one column each. On one thread (or with few
//! outputs) a part is a whole column; on more, large columns are split into row ranges
//! like the in-order path's and the parts run on the pool. An ordered source's values for
//! a row range are one stretch of its emission order, so each part claims its stretch of
//! every source and moves the values out itself (see `move_out`, the one module with the
//! `unsafe` this takes). Rows are independent and every row sees the same outputs in the
//! same order, so the result is the same bit for bit at any worker count. If merges panic,
//! the error names the first row (in merge order) whose merge panicked, as on one thread;
//! parts that did not panic merged all their rows.
//!
//! Same result as the keyed path, bit for bit: each row's outputs reach the merge in
//! system order (each source holds at most one output per row, since it is ordered).

use crate::component::Component;
use crate::merge::Merge;
use crate::output::buffer::OutBuf;
use crate::pool::Pool;

use super::move_out::{Claim, DYN_LANES, MoveCursor, TakeScratch, TakenValues};
use super::part::{Emptied, FailedAt, FoldJob, MAX_PARTS, OnUnwind, PAR_MIN_WRITES, row_ranges};

/// Rows `row..row + len` of column `col`, written by one source.
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    col: u32,
    row: u32,
    len: u32,
}

/// A source during the walk of a part: its spans in the part are `spans[next..end]`, the
/// first `done` rows of `spans[next]` before the part or already merged.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Lane {
    next: usize,
    end: usize,
    done: u32,
}

/// Per-type scratch of the sweep (capacity kept across frames).
pub(super) struct SweepScratch<O> {
    spans: Vec<Span>,
    /// Source `s`'s spans are `spans[bounds[s]..bounds[s + 1]]`.
    bounds: Vec<usize>,
    /// Per part, one lane per source.
    lanes: Vec<Lane>,
    /// Per part, the lanes covering the current interval, in system order.
    cover: Vec<u32>,
    /// Per part, one cursor per source into its claimed values.
    cursors: Vec<MoveCursor>,
    /// Per part, one row's outputs when more than four lanes cover it.
    groups: Vec<Vec<O>>,
    /// Columns touched.
    cols: Vec<u32>,
    take: TakeScratch,
}

impl<O> Default for SweepScratch<O> {
    fn default() -> Self {
        SweepScratch {
            spans: Vec::new(),
            bounds: Vec::new(),
            lanes: Vec::new(),
            cover: Vec::new(),
            cursors: Vec::new(),
            groups: Vec::new(),
            cols: Vec::new(),
            take: TakeScratch::default(),
        }
    }
}

impl<O> SweepScratch<O> {
    pub(super) fn capacity_bytes(&self) -> usize {
        use std::mem::size_of;
        self.spans.capacity() * size_of::<Span>()
            + self.bounds.capacity() * size_of::<usize>()
            + self.lanes.capacity() * size_of::<Lane>()
            + self.cover.capacity() * 4
            + self.cursors.capacity() * size_of::<MoveCursor>()
            + self.groups.capacity() * size_of::<Vec<O>>()
            + self
                .groups
                .iter()
                .map(|g| g.capacity() * size_of::<O>())
                .sum::<usize>()
            + self.cols.capacity() * 4
            + self.take.capacity_bytes()
    }
}

/// Sources above which the walk's per-interval scan over lanes may cost more than a sort:
/// more take the sweep only if their spans are long (see [`applies`]).
const FEW_SOURCES: usize = 16;

/// Whether the sweep path takes `inbox`: every source visits rows in increasing order,
/// and the lanes are few (or their spans long: the walk scans every lane once per
/// interval, a sort costs the same whatever the source count).
pub(super) fn applies<C: Component>(inbox: &[(u32, Box<OutBuf<C>>)]) -> bool {
    if !inbox.iter().all(|(_, b)| b.is_ordered()) {
        return false;
    }
    if inbox.len() <= FEW_SOURCES {
        return true;
    }
    let runs: usize = inbox.iter().map(|(_, b)| b.runs.len()).sum();
    let outputs: usize = inbox.iter().map(|(_, b)| b.len()).sum();
    runs * inbox.len() <= outputs * 4
}

/// Rows whose outputs are moved out at once when more than eight lanes cover them.
const BATCH_ROWS: usize = 64;

/// One part of the walk: rows `lo..lo + rows.len()` of column `col`.
struct WalkPart<'a, C: Component> {
    col: u32,
    lo: u32,
    rows: &'a mut [C],
    /// One lane per source.
    lanes: &'a mut [Lane],
    cover: &'a mut [u32],
    /// This part's values of every source.
    values: Claim<'a, C>,
    group: &'a mut Vec<C::Output>,
    /// Where this part's merge panicked, written while it unwinds.
    failed: &'a mut Option<FailedAt>,
}

/// One part's scratch: a lane per source, the lanes covering the rows at hand, a cursor
/// per source into its claimed values, and one row's outputs.
struct PartLanes<'a, O> {
    lanes: &'a mut [Lane],
    cover: &'a mut [u32],
    cursors: &'a mut [MoveCursor],
    group: &'a mut Vec<O>,
}

/// Every part's [`PartLanes`], for the parallel split: `MAX_PARTS` of each, one after
/// another (one group per part).
struct AllLanes<'a, O> {
    lanes: &'a mut [Lane],
    cover: &'a mut [u32],
    cursors: &'a mut [MoveCursor],
    groups: &'a mut [Vec<O>],
}

/// Folds the job's sources (in system order; every source ordered, see [`applies`]) into
/// its columns, in parallel parts on the job's pool when it pays (then returns `true`).
/// If a merge panics, the panic goes on after the job's `failed` says where.
pub(super) fn sweep<C: Component, M: Merge<C>>(
    job: FoldJob<'_, C, M>,
    scratch: &mut SweepScratch<C::Output>,
) -> bool {
    let (merge, pool, total) = (job.merge, job.pool, job.total);
    let SweepScratch {
        spans,
        bounds,
        lanes,
        cover,
        cursors,
        groups,
        cols,
        take,
    } = scratch;
    collect_spans(job.inbox, spans, bounds, cols);
    let n = job.inbox.len();
    let threads = pool.threads();
    let parallel = threads > 1 && total >= PAR_MIN_WRITES;
    let parts = if parallel { MAX_PARTS } else { 1 };
    lanes.resize(parts * n, Lane::default());
    cover.resize(parts * n, 0);
    cursors.resize(parts * n, MoveCursor::default());
    if groups.len() < parts {
        groups.resize_with(parts, Vec::new);
    }
    let mut taken = TakenValues::new(job.inbox, take);
    let mut plan = PartPlan::new(spans, bounds, cols);
    if parallel {
        let all = AllLanes {
            lanes: &mut lanes[..],
            cover: &mut cover[..],
            cursors: &mut cursors[..],
            groups: &mut groups[..],
        };
        if par_sweep(
            merge,
            pool,
            job.columns,
            job.failed,
            &mut plan,
            &mut taken,
            all,
        ) {
            return true;
        }
    }
    // One part per column, on this thread.
    for &c in cols.iter() {
        let one = PartLanes {
            lanes: &mut lanes[..n],
            cover: &mut cover[..n],
            cursors: &mut cursors[..n],
            group: &mut groups[0],
        };
        let mut part = plan.part(
            c,
            0,
            &mut job.columns[c as usize],
            one,
            job.failed,
            &mut taken,
        );
        walk(merge, spans, &mut part);
    }
    debug_assert!((0..n).all(|s| taken.left(s) == 0), "every value claimed");
    false
}

/// The spans of every source (`bounds` says whose), and the columns they touch.
fn collect_spans<C: Component>(
    inbox: &[(u32, Box<OutBuf<C>>)],
    spans: &mut Vec<Span>,
    bounds: &mut Vec<usize>,
    cols: &mut Vec<u32>,
) {
    spans.clear();
    bounds.clear();
    cols.clear();
    for (_, src) in inbox {
        bounds.push(spans.len());
        for (r, v) in src.runs_with_values() {
            if v.is_empty() {
                continue;
            }
            spans.push(Span {
                col: r.col,
                row: r.row,
                len: v.len() as u32,
            });
            if cols.last() != Some(&r.col) {
                cols.push(r.col);
            }
        }
    }
    bounds.push(spans.len());
    cols.sort_unstable();
    cols.dedup();
}

/// The spans of every source and the columns they touch, for laying out parts.
struct PartPlan<'s> {
    spans: &'s [Span],
    bounds: &'s [usize],
    cols: &'s [u32],
}

impl<'s> PartPlan<'s> {
    fn new(spans: &'s [Span], bounds: &'s [usize], cols: &'s [u32]) -> Self {
        PartPlan {
            spans,
            bounds,
            cols,
        }
    }

    /// The part of rows `lo..lo + rows.len()` of column `col`: each source's lane over
    /// the spans in it, and its values there claimed from `taken`. Parts must be laid out
    /// in increasing `(col, lo)` order (each source's values are claimed in order).
    fn part<'a, 't: 'a, C: Component>(
        &mut self,
        col: u32,
        lo: u32,
        rows: &'a mut [C],
        scratch: PartLanes<'a, C::Output>,
        failed: &'a mut Option<FailedAt>,
        taken: &mut TakenValues<'t, C>,
    ) -> WalkPart<'a, C> {
        let PartLanes {
            lanes,
            cover,
            cursors,
            group,
        } = scratch;
        let hi = lo + rows.len() as u32;
        let spans = self.spans;
        for (s, lane) in lanes.iter_mut().enumerate() {
            let (start, stop) = (self.bounds[s], self.bounds[s + 1]);
            // The first span that ends after `(col, lo)`: spans are in increasing order,
            // so a binary search.
            let next = start
                + spans[start..stop].partition_point(|sp| (sp.col, sp.row + sp.len) <= (col, lo));
            let mut end = next;
            while end < stop && spans[end].col == col && spans[end].row < hi {
                end += 1;
            }
            let done = match spans.get(next) {
                Some(sp) if next < end && sp.row < lo => lo - sp.row,
                _ => 0,
            };
            *lane = Lane { next, end, done };
        }
        let values = taken.claim(cursors, |s| {
            let l = lanes[s];
            spans[l.next..l.end]
                .iter()
                .map(|sp| (sp.row + sp.len).min(hi) - sp.row.max(lo))
                .sum::<u32>() as usize
        });
        WalkPart {
            col,
            lo,
            rows,
            lanes,
            cover,
            values,
            group,
            failed,
        }
    }
}

/// The sweep split by row range over `pool`. Returns `false`, touching nothing, when
/// the parts would not fit the stack array.
fn par_sweep<C: Component, M: Merge<C>>(
    merge: &M,
    pool: &Pool,
    columns: &mut [Vec<C>],
    failed: &mut Option<FailedAt>,
    plan: &mut PartPlan<'_>,
    taken: &mut TakenValues<'_, C>,
    all: AllLanes<'_, C::Output>,
) -> bool {
    let (spans, cols, threads) = (plan.spans, plan.cols, pool.threads());
    let AllLanes {
        lanes,
        cover,
        cursors,
        groups,
    } = all;
    let mut ranges: [(u32, usize, &mut [C]); MAX_PARTS] =
        std::array::from_fn(|_| (0, 0, &mut [][..]));
    let mut count = 0;
    let fits = row_ranges(columns, cols, threads, |c, lo, rows| {
        if count == MAX_PARTS {
            return false;
        }
        ranges[count] = (c, lo, rows);
        count += 1;
        true
    });
    if !fits {
        return false;
    }
    let n = lanes.len() / MAX_PARTS;
    let mut lanes = lanes.chunks_exact_mut(n);
    let mut cover = cover.chunks_exact_mut(n);
    let mut cursors = cursors.chunks_exact_mut(n);
    let mut groups = groups.iter_mut();
    let mut fails = [None; MAX_PARTS];
    let mut failed_at = fails.iter_mut();
    let mut ranges = ranges.into_iter();
    let mut parts: [Option<WalkPart<'_, C>>; MAX_PARTS] = std::array::from_fn(|_| None);
    for part in &mut parts[..count] {
        let (c, lo, rows) = ranges.next().expect("counted");
        let scratch = PartLanes {
            lanes: lanes.next().expect("one per part"),
            cover: cover.next().expect("one per part"),
            cursors: cursors.next().expect("one per part"),
            group: groups.next().expect("one per part"),
        };
        let failed = failed_at.next().expect("one per part");
        *part = Some(plan.part(c, lo as u32, rows, scratch, failed, taken));
    }
    debug_assert!((0..n).all(|s| taken.left(s) == 0), "every value claimed");
    let result = pool.for_each_mut(&mut parts[..count], &|_, part| {
        walk(merge, spans, part.as_mut().expect("laid out"));
    });
    if let Err(p) = result {
        // Dropping the parts drops the values their merges never saw. The lowest part that
        // panicked holds the first row (in merge order) whose merge panicked.
        drop(parts);
        *failed = fails[p.index];
        std::panic::resume_unwind(p.payload);
    }
    true
}

/// Walks one part: every row some lane covers gets its outputs, in system order, and one
/// merge call.
fn walk<C: Component, M: Merge<C>>(merge: &M, spans: &[Span], part: &mut WalkPart<'_, C>) {
    let WalkPart {
        col,
        lo: first,
        rows,
        lanes,
        cover,
        values,
        group,
        failed,
    } = part;
    let (col, first) = (*col, *first);
    let last = first + rows.len() as u32;
    let mut on_unwind = OnUnwind::new(failed, FailedAt::Column(col));
    let mut group = Emptied(&mut **group);
    loop {
        // The smallest next row of any lane.
        let mut lo = u32::MAX;
        for l in lanes.iter() {
            if l.next < l.end {
                lo = lo.min(spans[l.next].row + l.done);
            }
        }
        if lo >= last {
            break;
        }
        // The lanes at `lo` cover rows `lo..hi`: up to the first end of their spans (or of
        // the part), or the first start of another lane's span.
        let mut hi = last;
        let mut c = 0;
        for (i, l) in lanes.iter().enumerate() {
            if l.next == l.end {
                continue;
            }
            let s = spans[l.next];
            let at = s.row + l.done;
            if at == lo {
                cover[c] = i as u32;
                c += 1;
                hi = hi.min(s.row + s.len);
            } else {
                hi = hi.min(at);
            }
        }
        let rows = &mut rows[(lo - first) as usize..(hi - first) as usize];
        let cover = &cover[..c];
        let at = (col, lo as usize);
        let n = rows.len();
        // Up to eight lanes, a loop of its own for each count: the row's outputs are an
        // array of known length, and a merge that loops over them is unrolled (a `Vec` per
        // row is neither, and far slower).
        macro_rules! fixed_lanes {
            ($($lanes:literal)*) => {
                match c {
                    $($lanes => {
                        let lanes: [u32; $lanes] = std::array::from_fn(|j| cover[j]);
                        merge_rows(merge, rows, at, values.rows(lanes, n), &mut on_unwind);
                    })*
                    _ => more_lanes(merge, rows, at, cover, values, &mut group, &mut on_unwind),
                }
            };
        }
        fixed_lanes!(1 2 3 4 5 6 7 8);
        let n = hi - lo;
        for &i in cover {
            let l = &mut lanes[i as usize];
            l.done += n;
            if l.done == spans[l.next].len {
                l.next += 1;
                l.done = 0;
            }
        }
    }
    on_unwind.disarm();
}

/// Merges each row of `rows` (from row `at.1` of column `at.0`) with the outputs of the
/// lanes in `cover` (more than eight), moved into `group`.
#[inline(never)]
fn more_lanes<C: Component, M: Merge<C>>(
    merge: &M,
    rows: &mut [C],
    (col, lo): (u32, usize),
    cover: &[u32],
    values: &mut Claim<'_, C>,
    group: &mut Emptied<'_, C::Output>,
    on_unwind: &mut OnUnwind<'_>,
) {
    let c = cover.len();
    if c <= DYN_LANES {
        // A batch of rows' outputs at a time, then their merges: no per-row bookkeeping
        // between merge calls.
        let mut outputs = values.rows_dyn(cover, rows.len());
        for (b, batch) in rows.chunks_mut(BATCH_ROWS).enumerate() {
            group.0.clear();
            outputs.next_batch(group.0, batch.len());
            let first = lo + b * BATCH_ROWS;
            for (k, (v, g)) in batch.iter_mut().zip(group.0.chunks_exact(c)).enumerate() {
                on_unwind.at(col, first + k);
                merge.merge(v, g);
            }
        }
    } else {
        for (k, v) in rows.iter_mut().enumerate() {
            group.0.clear();
            group.0.extend(cover.iter().map(|&i| values.take(i)));
            on_unwind.at(col, lo + k);
            merge.merge(v, &group.0[..]);
        }
    }
}

/// Merges each row of `rows` (from row `at.1` of column `at.0`) with its array of outputs.
#[inline(always)]
fn merge_rows<C: Component, M: Merge<C>, const N: usize>(
    merge: &M,
    rows: &mut [C],
    at: (u32, usize),
    outputs: impl Iterator<Item = [C::Output; N]>,
    on_unwind: &mut OnUnwind<'_>,
) {
    for (k, (v, group)) in rows.iter_mut().zip(outputs).enumerate() {
        on_unwind.at(at.0, at.1 + k);
        merge.merge(v, &group);
    }
}
