//! What every merge path of a fold shares, below them all (so no path imports another's
//! file, nor the dispatcher in `paths`): what a path is given ([`FoldJob`]), where a
//! panicking merge was ([`FailedAt`],
//! [`OnUnwind`]), the fold's counts, how a type is split into row ranges over the
//! workers ([`row_ranges`]) and into dense keys ([`dense_bases`]), and [`Emptied`].
//!
//! # When a merge panics
//!
//! Merges run in place on the stored values, and a panic unwinds out of the path (to the
//! pool job of the type, where Sync catches it). On the way out, the path writes where it
//! was — the row whose merge call panicked, or the column a [`Merge::replace_column`](crate::merge::Merge::replace_column) was
//! replacing — into the fold's [`FailedAt`], so the error can name the entity; nothing is
//! undone. Every path holds an [`OnUnwind`] guard whose position is a local only the
//! unwinding path reads: where a merge cannot unwind (the ready-made ones on plain
//! numbers) the compiler drops the per-row updates, and the loops stay as they were
//! (`sync_sum_1M`-style timings unchanged); on the normal path it is disarmed, never
//! dropped. A path split over the workers reports the lowest part that panicked, which
//! holds the first row (in merge order) whose merge panicked: the same row as on one
//! thread. (Parts that did not panic merged all their rows.) Outputs a panicking merge
//! never saw are dropped, not leaked.

use crate::component::Component;
use crate::output::buffer::OutBuf;
use crate::pool::Pool;

/// One type's fold, as the dispatcher hands it to a path: the merge, the columns lent by
/// the storage, this frame's sources (`(system index, buffer)`, in system order) and
/// their `total` outputs, the pool to split large folds over, and where a panicking merge
/// is recorded (see "When a merge panics").
pub(super) struct FoldJob<'a, C: Component, M> {
    pub(super) merge: &'a M,
    pub(super) columns: &'a mut [Vec<C>],
    pub(super) inbox: &'a mut [(u32, Box<OutBuf<C>>)],
    pub(super) total: usize,
    pub(super) pool: &'a Pool,
    pub(super) failed: &'a mut Option<FailedAt>,
}

/// Outputs folded in and dropped by one type's fold.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FoldCounts {
    pub(crate) merged: u64,
    pub(crate) dropped: u64,
}

/// Where a fold's merge panicked: written while unwinding, read by Sync for the error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailedAt {
    /// The merge call for row `row` of column `col`.
    Row { col: u32, row: u32 },
    /// [`Merge::replace_column`](crate::merge::Merge::replace_column) on column `col`.
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

    /// Before a whole-column replacement: the column it replaces.
    #[inline(always)]
    pub(super) fn at_column(&mut self, col: u32) {
        self.at = FailedAt::Column(col);
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

/// Types with fewer outputs than this fold on one thread.
pub(super) const PAR_MIN_WRITES: usize = if cfg!(miri) { 48 } else { 16 * 1024 };
/// Smallest row range given to one worker.
const PART_MIN_ROWS: usize = if cfg!(miri) { 8 } else { 4 * 1024 };
/// The most ranges a column is split into is `2 × threads`, and at least this many, so
/// that the longest part (the fold's span) stays a small part of its work whatever the
/// worker count the frame is measured at.
const MIN_SPLIT: usize = 8;
/// Most parts one type is split into (they live in a stack array).
pub(super) const MAX_PARTS: usize = 64;

/// Splits the columns `wanted` (ascending, no repeats) of `columns` into row ranges for
/// `threads` workers: a column into up to `2 × threads` ranges (at least [`MIN_SPLIT`]) of
/// at least [`PART_MIN_ROWS`] rows (or one). Calls `part(col, first row, rows)` for each, in
/// increasing order, and stops, returning `false`, as soon as `part` does.
pub(super) fn row_ranges<'a, C>(
    columns: &'a mut [Vec<C>],
    wanted: &[u32],
    threads: usize,
    mut part: impl FnMut(u32, usize, &'a mut [C]) -> bool,
) -> bool {
    let per_column = (threads * 2).max(MIN_SPLIT);
    let mut wanted = wanted.iter().peekable();
    for (c, column) in columns.iter_mut().enumerate() {
        if wanted.next_if(|&&w| w as usize == c).is_none() {
            continue;
        }
        let len = column.len();
        let k = (len / PART_MIN_ROWS).clamp(1, per_column);
        let size = len.div_ceil(k).max(1);
        for (i, rows) in column.chunks_mut(size).enumerate() {
            if !part(c as u32, i * size, rows) {
                return false;
            }
        }
    }
    true
}

/// A vector of outputs emptied when dropped: at the end of a path, or while a merge
/// unwinds (so the outputs it held are dropped then, not next frame).
pub(super) struct Emptied<'g, O>(pub(super) &'g mut Vec<O>);

impl<O> Drop for Emptied<'_, O> {
    fn drop(&mut self) {
        self.0.clear();
    }
}

/// The dense rows of `columns`: column `c`'s first dense key in `bases[c]`, and the total
/// in the last entry.
pub(super) fn dense_bases<C>(columns: &[Vec<C>], bases: &mut Vec<u32>) -> usize {
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
    rows as usize
}
