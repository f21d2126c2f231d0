//! The gather path: a merge that must see all of an entity's outputs at once (a
//! hand-written `fn` or closure) over several sources that each visit rows in increasing
//! order — the shape of query loops, whatever rows each system wrote.
//!
//! No keys and no sort: each source is a *lane* of spans (runs of rows with their values),
//! and the lanes are walked together, column by column. At each step the lanes whose next
//! row is the smallest *cover* an interval of rows that ends where one of them ends its
//! span or another lane starts; inside it, every row takes one value from each covering
//! lane, in system order, and the merge is called once. With sources that cover the same
//! rows (several systems writing every entity of a table) an interval is a whole span, so
//! the per-row work is one move per source and the merge call.
//!
//! Same result as the keyed scan, bit for bit: each row's outputs reach the merge in
//! system order (each source holds at most one output per row, since it is ordered).

use crate::component::Component;
use crate::merge::Merge;
use crate::output::buffer::{OutBuf, Segment};

use super::paths::{FailedAt, OnUnwind};

/// Rows `row..row + len` of column `col`, written by one source.
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    col: u32,
    row: u32,
    len: u32,
}

/// A source during the walk: its spans are `spans[next..end]`, the first `done` rows of
/// `spans[next]` already merged.
#[derive(Clone, Copy, Debug)]
pub(super) struct Lane {
    next: usize,
    end: usize,
    done: u32,
}

/// Per-type scratch of the gather (capacity kept across frames).
pub(super) struct GatherScratch<O> {
    spans: Vec<Span>,
    lanes: Vec<Lane>,
    /// The lanes covering the current interval, in system order.
    cover: Vec<u32>,
    /// One row's outputs, handed to the merge.
    group: Vec<O>,
}

impl<O> Default for GatherScratch<O> {
    fn default() -> Self {
        GatherScratch {
            spans: Vec::new(),
            lanes: Vec::new(),
            cover: Vec::new(),
            group: Vec::new(),
        }
    }
}

impl<O> GatherScratch<O> {
    pub(super) fn capacity_bytes(&self) -> usize {
        use std::mem::size_of;
        self.spans.capacity() * size_of::<Span>()
            + self.lanes.capacity() * size_of::<Lane>()
            + self.cover.capacity() * 4
            + self.group.capacity() * size_of::<O>()
    }
}

/// Whether the gather path takes `inbox`: every source visits rows in increasing order.
pub(super) fn applies<C: Component>(inbox: &[(u32, Box<OutBuf<C>>)]) -> bool {
    inbox.iter().all(|(_, b)| b.is_ordered())
}

/// Folds `inbox` (in system order; every source ordered, see [`applies`]) into `columns`.
pub(super) fn gather<C: Component, M: Merge<C>>(
    merge: &M,
    columns: &mut [Vec<C>],
    inbox: &mut [(u32, Box<OutBuf<C>>)],
    scratch: &mut GatherScratch<C::Output>,
    failed: &mut Option<FailedAt>,
) {
    let GatherScratch {
        spans,
        lanes,
        cover,
        group,
    } = scratch;
    spans.clear();
    lanes.clear();
    for (_, src) in inbox.iter() {
        let next = spans.len();
        spans.extend(
            src.runs_with_values()
                .filter(|(_, v)| !v.is_empty())
                .map(|(r, v)| Span {
                    col: r.col,
                    row: r.row,
                    len: v.len() as u32,
                }),
        );
        lanes.push(Lane {
            next,
            end: spans.len(),
            done: 0,
        });
    }
    let mut on_unwind = OnUnwind::new(failed, FailedAt::Column(0));
    let n = inbox.len();
    let mut walk_lanes = |values: &mut [LaneValues<'_, C::Output>]| {
        walk(
            merge,
            columns,
            spans,
            lanes,
            cover,
            group,
            values,
            &mut on_unwind,
        )
    };
    if n <= STACK_SOURCES {
        let mut values: [LaneValues<'_, C::Output>; STACK_SOURCES] =
            std::array::from_fn(|_| LaneValues::default());
        for (slot, (_, src)) in values.iter_mut().zip(inbox.iter_mut()) {
            *slot = LaneValues::new(&mut src.segments);
        }
        walk_lanes(&mut values[..n]);
    } else {
        let mut values: Vec<_> = inbox
            .iter_mut()
            .map(|(_, src)| LaneValues::new(&mut src.segments))
            .collect();
        walk_lanes(&mut values);
    }
    on_unwind.disarm();
    group.clear();
}

/// A source's values, moved out in emission order: the segment being drained, then the
/// rest.
struct LaneValues<'a, O> {
    current: Option<std::vec::Drain<'a, O>>,
    rest: std::slice::IterMut<'a, Segment<O>>,
}

impl<O> Default for LaneValues<'_, O> {
    fn default() -> Self {
        LaneValues {
            current: None,
            rest: Default::default(),
        }
    }
}

impl<'a, O> LaneValues<'a, O> {
    fn new(segments: &'a mut [Segment<O>]) -> Self {
        LaneValues {
            current: None,
            rest: segments.iter_mut(),
        }
    }

    /// The next value (the walk asks only for values its spans count).
    #[inline(always)]
    fn take(&mut self) -> O {
        match self.current.as_mut().and_then(Iterator::next) {
            Some(v) => v,
            None => self.take_from_next_segment(),
        }
    }

    #[cold]
    #[inline(never)]
    fn take_from_next_segment(&mut self) -> O {
        loop {
            let seg = self.rest.next().expect("one value per row of a span");
            if let Some(v) = self.current.insert(seg.values.drain(..)).next() {
                return v;
            }
        }
    }
}

/// Sources kept on the stack (more take a `Vec`).
const STACK_SOURCES: usize = 16;

/// The walk itself; `values[i]` yields lane `i`'s values in order.
#[allow(clippy::too_many_arguments)]
#[inline]
fn walk<C: Component, M: Merge<C>>(
    merge: &M,
    columns: &mut [Vec<C>],
    spans: &[Span],
    lanes: &mut [Lane],
    cover: &mut Vec<u32>,
    group: &mut Vec<C::Output>,
    values: &mut [LaneValues<'_, C::Output>],
    on_unwind: &mut OnUnwind<'_>,
) {
    loop {
        // The smallest next position of any lane.
        let mut min = (u32::MAX, u32::MAX);
        for l in lanes.iter() {
            if l.next < l.end {
                let s = spans[l.next];
                min = min.min((s.col, s.row + l.done));
            }
        }
        if min.0 == u32::MAX {
            break;
        }
        let (col, lo) = min;
        // The lanes at `min` cover rows `lo..hi`: up to the first end of their spans, or
        // the first start of another lane's span in this column.
        let mut hi = u32::MAX;
        cover.clear();
        for (i, l) in lanes.iter().enumerate() {
            if l.next == l.end {
                continue;
            }
            let s = spans[l.next];
            if s.col != col {
                continue;
            }
            let at = s.row + l.done;
            if at == lo {
                cover.push(i as u32);
                hi = hi.min(s.row + s.len);
            } else {
                hi = hi.min(at);
            }
        }
        let column = &mut columns[col as usize][lo as usize..hi as usize];
        for (k, value) in column.iter_mut().enumerate() {
            group.clear();
            group.extend(cover.iter().map(|&i| values[i as usize].take()));
            on_unwind.at(col, lo as usize + k);
            merge.merge(value, group);
        }
        let n = hi - lo;
        for &i in cover.iter() {
            let l = &mut lanes[i as usize];
            l.done += n;
            if l.done == spans[l.next].len {
                l.next += 1;
                l.done = 0;
            }
        }
    }
}
