//! What Run hands to Sync: each system's output buffers, as plain data.
//!
//! - This file: a system's writes to one component type ([`OutBuf`]), as row-aligned runs
//!   of values keyed in Run, and the per-system set of them ([`SystemOutputs`]).
//! - [`addr`]: where the plain write path remembers a typed buffer
//!   ([`BufAddr`](addr::BufAddr)). A buffer travels from a system to its type's fold
//!   type-erased, as an [`Erased`](crate::erased::Erased).
//! - [`row_writes`]: the write handles of `Output::query`'s `Write<C>` elements, pending
//!   until settled into runs.
//!
//! The folder sits in `output/` because it holds outputs, but on a layer of its own, far
//! below the rest of `output/`: below `fold/` (which consumes the buffers), knowing no
//! `World`. The handle systems write through, `Output` (`output/mod.rs`), is above the
//! world.
//!
//! # Runs and segments
//!
//! A system's writes to one component type go to an [`OutBuf`]. Each write is *keyed in
//! Run*: its target is resolved to a `(column, row)` of the type's storage while the system
//! runs (in parallel with the others), so Sync never looks a target up again.
//!
//! Writes are stored as row-aligned **runs**: a [`RowRun`] says "the next values go to rows
//! `row, row + 1, ..` of column `col`". A system that iterates a query and writes each
//! entity it visits produces one run per table, without storing a single target: the
//! write path only checks that the target is the entity in the next row (see
//! [`RowCursor`]). Any other write starts a run of its own (so keyed writes are runs of
//! length one), and a write to a dead entity, or to one without the type, is dropped and
//! counted right there.
//!
//! Values live in **segments** (one `Vec` each, in emission order). A new segment starts
//! whenever a run starts at row 0 of a table of at least 64 rows — a query loop entering a
//! table — so a loop over a whole table leaves a segment that *is* a full column: Sync can
//! swap it in instead of copying it. (Smaller tables share a segment: a copy is cheaper
//! than a vector each; row writes of small tables share a pending column, see
//! `row_writes`.) Emptied segment vectors (and swapped-out columns) are kept as
//! `spare`s, so a steady state allocates nothing.

pub(crate) mod addr;
pub(crate) mod row_writes;

use std::any::TypeId;
use std::marker::PhantomData;

use crate::commands::CommandList;
use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::erased::{Buffer, Erased};
use crate::storage::Storage;

use row_writes::{FillPart, PendingColumn, PendingPart, RowWrites};

/// Types remembered by an [`Output`](crate::Output), each with its write cursor.
pub(crate) const CACHED_TYPES: usize = 4;

/// Values for rows `row, row + 1, ..` of column `col`, starting at `values[start]` of
/// their segment and running to the next run's `start` (or the segment's end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RowRun {
    pub(crate) col: u32,
    pub(crate) row: u32,
    pub(crate) start: u32,
}

/// Values in emission order; `runs_end` closes this segment's slice of [`OutBuf::runs`].
pub(crate) struct Segment<O> {
    pub(crate) values: Vec<O>,
    pub(crate) runs_end: u32,
}

/// Where the next in-order write of a query loop goes, and where its value goes: the
/// entity in the table's next row, the slot in the buffer's room, and how far both go
/// without a check of their own.
///
/// A write whose target is the entity at `next` extends the current run with no lookup
/// (comparing the full handle, generation included, proves the target alive and in that
/// row). `end` is the nearer of the table's end and the end of the buffer's room, so such
/// a write (with `next` short of `end`) has a slot waiting at `dst`: the hot path is one
/// bound check, one handle compare, a store and a length bump. Reaching `end` sends the
/// write to [`OutBuf::resume`], which grows the room or starts a run elsewhere. (A run
/// started by a lookup has `end == next`: its room is worked out by the next write in
/// row order, if one comes.)
///
/// `dst` points into the buffer's open segment as it was when the cursor was made: a
/// cursor is only used with its own buffer, and forgotten whenever anything else changes
/// that buffer (see `Output`'s cached types).
#[repr(C)] // the same layout for every `O`: see `cast_mut`
pub(crate) struct RowCursor<'w, O> {
    /// The next row's entity.
    next: *const Entity,
    /// Where in-order writes stop being free: the table's end, or the room's.
    end: *const Entity,
    /// The table's end.
    rows_end: *const Entity,
    /// Where the next value goes: the open segment's spare room.
    dst: *mut O,
    /// The entity list `next` walks is the storage's, borrowed for `'w`.
    rows: PhantomData<&'w [Entity]>,
}

// By hand: a derive would ask `O: Copy`, and the cursor only points at values.
impl<O> Clone for RowCursor<'_, O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<O> Copy for RowCursor<'_, O> {}

// SAFETY: a cursor reads the storage's entity list (`Entity` is plain data, shared for
// `'w`) and writes values of type `O` into a buffer that whoever holds the cursor holds
// uniquely (a writer's `&mut OutBuf`, an `Output`'s own buffers): sending it sends the
// right to write `O`s, which `O: Send` allows. Sharing one lets nothing be done through
// the shared reference (every use takes `&mut`).
unsafe impl<O: Send> Send for RowCursor<'_, O> {}
// SAFETY: as above.
unsafe impl<O: Send> Sync for RowCursor<'_, O> {}

impl<'w, O> RowCursor<'w, O> {
    /// A cursor that matches nothing (the first write resolves its target).
    pub(crate) const NONE: Self = RowCursor {
        next: std::ptr::null(),
        end: std::ptr::null(),
        rows_end: std::ptr::null(),
        dst: std::ptr::null_mut(),
        rows: PhantomData,
    };

    /// The same cursor for values of type `P`.
    ///
    /// # Safety
    /// A cursor is only used with the buffer it was made for: `P` must be that buffer's
    /// value type (or the cursor kept, not used, until cast back to it).
    pub(crate) unsafe fn cast<P>(self) -> RowCursor<'w, P> {
        RowCursor {
            next: self.next,
            end: self.end,
            rows_end: self.rows_end,
            dst: self.dst.cast(),
            rows: PhantomData,
        }
    }

    /// [`cast`](Self::cast) in place.
    ///
    /// # Safety
    /// As for `cast`.
    pub(crate) unsafe fn cast_mut<P>(&mut self) -> &mut RowCursor<'w, P> {
        // SAFETY: `RowCursor` is `repr(C)` with fields whose layout does not depend on
        // `O` (thin pointers and a `PhantomData`); the caller keeps the value type right.
        unsafe { &mut *(self as *mut Self).cast::<RowCursor<'w, P>>() }
    }

    /// Whether `e` is the next row's entity and a slot waits for its value; if so, moves
    /// past the row.
    #[inline(always)]
    pub(crate) fn advance(&mut self, e: Entity) -> bool {
        // SAFETY: `next < end <= rows_end`, inside the entity list borrowed for `'w`.
        if self.next != self.end && unsafe { *self.next } == e {
            // SAFETY: as above; at most one past the list's last row.
            self.next = unsafe { self.next.add(1) };
            true
        } else {
            false
        }
    }
}

/// Tables smaller than this do not get a segment (and a column swap) of their own.
const SEGMENT_MIN_ROWS: usize = if cfg!(miri) { 4 } else { 64 };

/// Values a run from row 0 of a big table gathers in row order before its segment is
/// given room for the whole table (see `OutBuf::grow`).
const WHOLE_AFTER: usize = if cfg!(miri) { 2 } else { 32 };

/// The outputs of one system for one component type.
///
/// While a system writes, the newest segment is *open*: its values are `open` (pushed to
/// directly, one indirection less on the write path) and its runs are
/// `runs[open_runs..]`. [`seal`](Self::seal) closes it into `segments`; Sync only sees
/// sealed buffers.
pub(crate) struct OutBuf<C: Component> {
    /// Sealed value vectors, in emission order.
    pub(crate) segments: Vec<Segment<C::Output>>,
    /// Every run, in emission order; sealed segment `k` owns
    /// `runs[segments[k-1].runs_end .. segments[k].runs_end]`.
    pub(crate) runs: Vec<RowRun>,
    /// The values of the open segment.
    open: Vec<C::Output>,
    /// The open segment's runs start here.
    open_runs: u32,
    /// The rows of the table whose row 0 the open segment started at (a loop over a
    /// big table, maybe), else 0: once the run reaches [`WHOLE_AFTER`] values in row
    /// order, the segment gets room for the whole table at once.
    whole_rows: u32,
    /// Emptied value vectors, reused by the next segments.
    pub(crate) spare: Vec<Vec<C::Output>>,
    /// Writes dropped in Run (dead target, or no such component).
    pub(crate) dropped: u64,
    /// Row writes handed out by `Output::query` and not settled yet, in emission order
    /// (after everything in `segments` and `open`): one pending column per big table
    /// visited, one per group of small tables sharing one.
    pending: Vec<PendingColumn<C::Output>>,
    /// The tables of the pending columns, in order (each column's `parts()` of them).
    parts: Vec<PendingPart>,
    /// Emptied presence flags of settled pending columns, for the next ones.
    spare_present: Vec<Vec<u8>>,
}

impl<C: Component> Default for OutBuf<C> {
    fn default() -> Self {
        OutBuf {
            segments: Vec::new(),
            runs: Vec::new(),
            open: Vec::new(),
            open_runs: 0,
            whole_rows: 0,
            spare: Vec::new(),
            dropped: 0,
            pending: Vec::new(),
            parts: Vec::new(),
            spare_present: Vec::new(),
        }
    }
}

impl<C: Component> OutBuf<C> {
    /// Appends `value` to the current run, as a write whose cursor matched does (tests
    /// build buffers with it).
    #[cfg(test)]
    pub(crate) fn push_in_run(&mut self, value: C::Output) {
        if self.open.len() == self.open.capacity() {
            self.grow();
        }
        self.open.push(value);
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        // A run from row 0 of a big table that has gone on in row order is a loop over
        // the table: room for all of it, so it does not regrow. (Not at its first value:
        // one write that happens to target row 0 would grow a vector to a table's size,
        // and with scattered writes every chunk's would end up so.)
        let run = self.open.len();
        let rows = self.whole_rows as usize;
        if rows > run && run >= WHOLE_AFTER && self.open_run_is_whole() {
            self.open.reserve(rows - run);
        } else {
            self.open.reserve(1);
        }
    }

    /// Whether the open segment is one run, from row 0 (see `whole_rows`).
    fn open_run_is_whole(&self) -> bool {
        self.runs.len() == self.open_runs as usize + 1
            && self.runs.last().is_some_and(|r| r.row == 0 && r.start == 0)
    }

    /// A write whose target is not the cursor's next row: resolves `e` in `storage` and
    /// starts a run there, returning the cursor after its first row (the caller pushes the
    /// value); or, if `e` is dead or has no `C`, counts the write dropped and returns
    /// `None`. Inlined into each cold path that calls it (a write to another entity makes
    /// one call, not two).
    #[inline(always)]
    fn resolve_run<'w>(
        &mut self,
        storage: &'w Storage,
        id: ComponentId,
        e: Entity,
    ) -> Option<RowCursor<'w, C::Output>> {
        let Some(loc) = storage.locate(e) else {
            self.dropped += 1;
            return None;
        };
        let table = storage.tables().get(loc.table);
        let Some(col) = table.column(id) else {
            self.dropped += 1;
            return None;
        };
        // A loop entering a table big enough for a column swap to pay starts a segment of
        // its own, with room for the whole table (so the pushes that follow never regrow);
        // small tables share one segment and are copied in Sync, which costs less than a
        // vector per table.
        let whole = loc.row == 0 && table.len() >= SEGMENT_MIN_ROWS;
        self.start_run(col, loc.row, whole);
        self.whole_rows = if whole {
            u32::try_from(table.len()).unwrap_or(u32::MAX)
        } else {
            0
        };
        let rows = table.entities().as_ptr_range();
        // SAFETY: `loc.row` is a row of the table: one past it is in (or one past) its
        // entity list.
        let next = unsafe { rows.start.add(loc.row as usize + 1) };
        if self.open.len() == self.open.capacity() {
            self.grow();
        }
        // A slot for this write's value and no free row after it: a run a lookup starts
        // is often one write long (writes to scattered targets), so its room is not worked
        // out here; the next write in row order finds it (`resume`'s first branch).
        Some(RowCursor {
            next,
            end: next,
            rows_end: rows.end,
            // SAFETY: `len < capacity` (grown above): the slot is inside the allocation.
            dst: unsafe { self.open.as_mut_ptr().add(self.open.len()) },
            rows: PhantomData,
        })
    }

    /// Emits `value` for `e` through `cursor`: into the current run if `e` is its next
    /// row, else into a run started at `e` (see [`resume`](Self::resume)).
    #[inline(always)]
    pub(crate) fn write<'w>(
        &mut self,
        storage: &'w Storage,
        id: ComponentId,
        cursor: &mut RowCursor<'w, C::Output>,
        e: Entity,
        value: C::Output,
    ) {
        let goes_on = cursor.advance(e) || {
            // Forgotten first: a panic in the cold path, caught by the system, leaves no
            // cursor into a buffer that path may have changed.
            let (next, rows_end) = (cursor.next, cursor.rows_end);
            *cursor = RowCursor::NONE;
            match self.resume(storage, id, next, rows_end, e) {
                Some(c) => {
                    *cursor = c;
                    true
                }
                None => false,
            }
        };
        if goes_on {
            // SAFETY: the caller's contract (a cursor is used only with its own buffer,
            // and forgotten when anything else changes the buffer); `advance` or `resume`
            // just let a row through.
            unsafe { self.push_at(cursor, value) }
        }
    }

    /// Appends `value` at `cursor`'s slot and moves the slot on.
    ///
    /// # Safety
    /// `cursor` was made by this buffer, nothing else has changed the buffer since, and
    /// [`RowCursor::advance`] or [`resume_in_place`](Self::resume_in_place) has just let a row
    /// through (so a slot waits).
    #[inline(always)]
    pub(crate) unsafe fn push_at(
        &mut self,
        cursor: &mut RowCursor<'_, C::Output>,
        value: C::Output,
    ) {
        // SAFETY: `cursor.dst` was made by `resolve_run` or `run_cursor` from `open` as it
        // is now (the caller's contract), and the row let through had a slot left for its
        // value; a pointer from `as_mut_ptr` stays valid across `set_len`.
        unsafe {
            cursor.dst.write(value);
            cursor.dst = cursor.dst.add(1);
            self.open.set_len(self.open.len() + 1);
        }
    }

    /// [`resume`](Self::resume) for `cursor`, in place and inlined: whether the write goes
    /// on (at `cursor`'s slot), or is dropped (and counted). For a caller whose own cold
    /// path this is (the plain write's), so that a write to another entity makes one call,
    /// not two.
    #[inline(always)]
    pub(crate) fn resume_in_place<'w>(
        &mut self,
        storage: &'w Storage,
        id: ComponentId,
        cursor: &mut RowCursor<'w, C::Output>,
        e: Entity,
    ) -> bool {
        // Forgotten first, as in `write`.
        let (next, rows_end) = (cursor.next, cursor.rows_end);
        *cursor = RowCursor::NONE;
        match self.resume_at(storage, id, next, rows_end, e) {
            Some(c) => {
                *cursor = c;
                true
            }
            None => false,
        }
    }

    /// A write that [`RowCursor::advance`] did not let through: the table's next
    /// row with the room used up, or another target. Returns the cursor past `e`'s row
    /// with a slot for its value, or `None` if the write is dropped (and counted).
    ///
    /// The cursor's two pointers come as plain arguments, not the cursor by value or by
    /// `&mut`: a cursor that went to a call whole was kept on the caller's stack and
    /// stored there on every write.
    #[cold]
    #[inline(never)]
    #[must_use]
    fn resume<'w>(
        &mut self,
        storage: &'w Storage,
        id: ComponentId,
        next: *const Entity,
        rows_end: *const Entity,
        e: Entity,
    ) -> Option<RowCursor<'w, C::Output>> {
        self.resume_at(storage, id, next, rows_end, e)
    }

    /// [`resume`](Self::resume)'s work, inlined into its callers.
    #[inline(always)]
    fn resume_at<'w>(
        &mut self,
        storage: &'w Storage,
        id: ComponentId,
        next: *const Entity,
        rows_end: *const Entity,
        e: Entity,
    ) -> Option<RowCursor<'w, C::Output>> {
        // SAFETY: `next <= rows_end`, inside the entity list borrowed for `'w` (or both
        // null): the cursor's.
        if next != rows_end && unsafe { *next } == e {
            // The run goes on; its room was used up (or not worked out yet).
            // SAFETY: as above, `next < rows_end`.
            return Some(self.run_cursor(unsafe { next.add(1) }, rows_end));
        }
        self.resolve_run(storage, id, e)
    }

    /// A cursor at `next` (one past the row whose value is pushed next), with a slot for
    /// that value and `end` as far as both the table and the room go.
    fn run_cursor<'w>(
        &mut self,
        next: *const Entity,
        rows_end: *const Entity,
    ) -> RowCursor<'w, C::Output> {
        if self.open.len() == self.open.capacity() {
            self.grow();
        }
        let len = self.open.len();
        let room = self.open.capacity() - len - 1;
        // SAFETY: both in (or one past) the same entity list, `next <= rows_end` (so the
        // distance is not negative).
        let rows_left = unsafe { rows_end.offset_from(next) } as usize;
        RowCursor {
            next,
            // SAFETY: at most `rows_left` past `next`.
            end: unsafe { next.add(rows_left.min(room)) },
            rows_end,
            // SAFETY: `len < capacity`: the slot is inside the allocation.
            dst: unsafe { self.open.as_mut_ptr().add(len) },
            rows: PhantomData,
        }
    }

    /// Starts a run at `(col, row)`, in a new segment if `new_segment`.
    pub(crate) fn start_run(&mut self, col: u32, row: u32, new_segment: bool) {
        self.settle_pending();
        if new_segment {
            self.seal();
        }
        if self.open.is_empty() {
            // Runs with no values (none are left by the write paths) are not kept.
            self.runs.truncate(self.open_runs as usize);
            if self.open.capacity() == 0 {
                if let Some(v) = self.spare.pop() {
                    self.open = v;
                }
            }
        }
        self.runs.push(RowRun {
            col,
            row,
            start: self.open.len() as u32,
        });
    }

    /// Row writes for the `rows` rows of column `col` (a table an `Output::query` loop
    /// enters), after everything emitted so far. They stay pending (see `row_writes`)
    /// until this buffer is next written another way, sealed or cleared. A small table
    /// joins the last pending column when it can (a column of small tables).
    pub(crate) fn row_writes(&mut self, col: u32, rows: usize) -> RowWrites<C::Output> {
        let small = rows < SEGMENT_MIN_ROWS;
        let rows32 = u32::try_from(rows).expect("a table of at most u32::MAX rows");
        let part = PendingPart { col, rows: rows32 };
        if small {
            if let Some(base) = self.pending.last_mut().and_then(|p| p.join(rows)) {
                self.parts.push(part);
                return base;
            }
        }
        let values = self.take_spare(rows);
        let present = self.spare_present.pop().unwrap_or_default();
        self.pending
            .push(PendingColumn::new(rows, small, values, present));
        self.parts.push(part);
        self.pending.last_mut().expect("just pushed").base()
    }

    /// A pending column for the `rows` rows of column `col` that the caller fills with
    /// [`RowWrites::fill`], part by part, then closes with [`filled`](Self::filled) (the
    /// fill of `Output::write_each_some`). Settled like row writes.
    pub(crate) fn fill_rows(&mut self, col: u32, rows: usize) -> RowWrites<C::Output> {
        let rows32 = u32::try_from(rows).expect("a table of at most u32::MAX rows");
        let values = self.take_spare(rows);
        // The flag vector that needs no growing (whose growth is zeroed), the shortest
        // such: a fill writes flags only where a row gets no value.
        let mut best: Option<(usize, usize)> = None;
        for (i, v) in self.spare_present.iter().enumerate() {
            let better = match best {
                None => true,
                Some((_, b)) if b >= rows => v.len() >= rows && v.len() < b,
                Some((_, b)) => v.len() > b,
            };
            if better {
                best = Some((i, v.len()));
            }
        }
        let present = best.map_or_else(Vec::new, |(i, _)| self.spare_present.swap_remove(i));
        self.pending
            .push(PendingColumn::unflagged(rows, values, present));
        self.parts.push(PendingPart { col, rows: rows32 });
        self.pending.last_mut().expect("just pushed").base()
    }

    /// Closes the fill begun by the last [`fill_rows`](Self::fill_rows): `parts` cover
    /// its rows, each part run at most once, none running now.
    pub(crate) fn filled(&mut self, parts: &[FillPart]) {
        self.pending
            .last_mut()
            .expect("a fill begun by fill_rows")
            .filled(parts);
    }

    /// Turns the pending row writes into segments and runs, in emission order: a table
    /// big enough for a segment of its own keeps its vector (a whole column when every
    /// row was written, swapped in by Sync), a small one is copied into the open segment.
    #[inline]
    fn settle_pending(&mut self) {
        if !self.pending.is_empty() {
            self.settle_pending_now();
        }
    }

    #[cold]
    #[inline(never)]
    fn settle_pending_now(&mut self) {
        // Whatever was written before the row writes comes first.
        self.close_open();
        let mut pending = std::mem::take(&mut self.pending);
        let mut parts = self.parts.as_slice();
        for column in pending.drain(..) {
            let (mine, rest) = parts.split_at(column.parts());
            parts = rest;
            // Each pending column is a segment of its own (a big table's vector then is a
            // whole column when every row was written; a column of small tables needs no
            // copy either).
            let runs = &mut self.runs;
            let mut start = 0;
            let settled = column.settle(mine, |col, row, len| {
                runs.push(RowRun { col, row, start });
                start += len;
            });
            if settled.values.is_empty() {
                self.spare.push(settled.values);
            } else {
                self.segments.push(Segment {
                    values: settled.values,
                    runs_end: self.runs.len() as u32,
                });
                self.open_runs = self.runs.len() as u32;
            }
            self.spare_present.push(settled.present);
        }
        debug_assert!(parts.is_empty(), "every part settled");
        self.parts.clear();
        // Keep the list's capacity for the next query.
        self.pending = pending;
    }

    /// Closes the open segment (if it has values) into `segments`, after settling any
    /// pending row writes.
    pub(crate) fn seal(&mut self) {
        self.settle_pending();
        self.close_open();
    }

    /// Closes the open segment (if it has values) into `segments`.
    fn close_open(&mut self) {
        if self.open.is_empty() {
            self.runs.truncate(self.open_runs as usize);
            return;
        }
        let values = std::mem::take(&mut self.open);
        self.segments.push(Segment {
            values,
            runs_end: self.runs.len() as u32,
        });
        self.open_runs = self.runs.len() as u32;
    }

    /// Appends a whole segment: `values[i]` goes to row `i` of column `col`.
    pub(crate) fn push_column(&mut self, col: u32, values: Vec<C::Output>) {
        self.seal();
        self.runs.push(RowRun {
            col,
            row: 0,
            start: 0,
        });
        self.segments.push(Segment {
            values,
            runs_end: self.runs.len() as u32,
        });
        self.open_runs = self.runs.len() as u32;
    }

    /// Number of writes kept (not counting dropped ones).
    pub(crate) fn len(&self) -> usize {
        self.segments.iter().map(|s| s.values.len()).sum::<usize>() + self.open.len()
    }

    /// The sealed segments in emission order, each with its runs.
    pub(crate) fn sealed(&self) -> impl Iterator<Item = (&[RowRun], &Segment<C::Output>)> + '_ {
        with_runs(&self.runs, self.segments.iter())
    }

    /// [`sealed`](Self::sealed), with the segments' values mutable.
    pub(crate) fn sealed_mut(
        &mut self,
    ) -> impl Iterator<Item = (&[RowRun], &mut Segment<C::Output>)> + '_ {
        with_runs(&self.runs, self.segments.iter_mut())
    }

    /// Every sealed run with its values, in emission order.
    pub(crate) fn runs_with_values(&self) -> impl Iterator<Item = (RowRun, &[C::Output])> + '_ {
        self.sealed()
            .flat_map(|(runs, seg)| run_values(runs, &seg.values))
    }

    /// Whether this (sealed) buffer's runs visit rows in strictly increasing
    /// `(column, row)` order — the shape of one pass of a query loop — so no row has two
    /// of its writes.
    pub(crate) fn is_ordered(&self) -> bool {
        debug_assert!(self.open.is_empty(), "an unsealed buffer");
        let mut last: Option<(u32, u32)> = None; // (col, last row written)
        for (r, values) in self.runs_with_values() {
            if values.is_empty() {
                continue;
            }
            if last.is_some_and(|(c, row)| (r.col, r.row) <= (c, row)) {
                return false;
            }
            last = Some((r.col, r.row + values.len() as u32 - 1));
        }
        true
    }

    /// The spare vector that best fits `want` values: the smallest with room for them,
    /// else the largest (it grows the least), else a new one. Columns take the vectors
    /// sized for columns and chunks the small ones, so no vector grows to a column's size
    /// only to serve a chunk.
    pub(crate) fn take_spare(&mut self, want: usize) -> Vec<C::Output> {
        let mut best: Option<(usize, usize)> = None;
        for (i, v) in self.spare.iter().enumerate() {
            let cap = v.capacity();
            let better = match best {
                None => true,
                Some((_, b)) if b >= want => cap >= want && cap < b,
                Some((_, b)) => cap > b,
            };
            if better {
                best = Some((i, cap));
            }
        }
        best.map_or_else(Vec::new, |(i, _)| self.spare.swap_remove(i))
    }

    /// Forgets every write (dropping the values), keeping all vectors for reuse.
    pub(crate) fn clear_writes(&mut self) {
        self.seal();
        // Spares are popped from the back: push so that next frame's first segment gets
        // this frame's first vector (capacities then match their tables: nothing regrows).
        let open = std::mem::take(&mut self.open);
        if open.capacity() > 0 {
            self.spare.push(open);
        }
        for mut seg in self.segments.drain(..).rev() {
            seg.values.clear();
            self.spare.push(seg.values);
        }
        self.runs.clear();
        self.open_runs = 0;
        self.dropped = 0;
    }

    /// Moves everything of `other` (a chunk's buffer) to the end of `self`, in order: the
    /// value vectors move, they are not copied.
    pub(crate) fn append(&mut self, other: &mut OutBuf<C>) {
        self.seal();
        other.seal();
        for (runs, mut seg) in with_runs(&other.runs, other.segments.drain(..)) {
            self.runs.extend_from_slice(runs);
            seg.runs_end = self.runs.len() as u32;
            self.segments.push(seg);
            // Give `other` a vector back for the one it lost, so that a chunk buffer
            // refilled every frame does not allocate while its vectors pile up here: the
            // smallest, so that vectors sized for whole columns stay here for columns
            // (handed out, they would each grow a chunk's to a column, one after another).
            if !self.spare.is_empty() {
                other.spare.push(self.take_spare(0));
            }
        }
        self.open_runs = self.runs.len() as u32;
        other.runs.clear();
        other.open_runs = 0;
        self.dropped += std::mem::take(&mut other.dropped);
    }
}

/// The one decoder of the run layout: each of a segment's `runs` with its values. Run `i`
/// owns `values[runs[i].start..runs[i + 1].start]`, the last one up to the end.
#[inline]
pub(crate) fn run_values<'a, O>(
    runs: &'a [RowRun],
    values: &'a [O],
) -> impl Iterator<Item = (RowRun, &'a [O])> + 'a {
    runs.iter().enumerate().map(move |(i, &r)| {
        let end = runs.get(i + 1).map_or(values.len(), |n| n.start as usize);
        (r, &values[r.start as usize..end])
    })
}

/// Pairs each segment (`&`, `&mut` or owned) with its runs: segment `k` owns
/// `runs[segments[k - 1].runs_end..segments[k].runs_end]`.
#[inline]
fn with_runs<O, S: std::borrow::Borrow<Segment<O>>>(
    runs: &[RowRun],
    segments: impl Iterator<Item = S>,
) -> impl Iterator<Item = (&[RowRun], S)> {
    let mut from = 0usize;
    segments.map(move |seg| {
        let to = seg.borrow().runs_end as usize;
        let mine = &runs[from..to];
        from = to;
        (mine, seg)
    })
}

/// What Sync and the buffer lists do with an output buffer without naming its type.
impl<C: Component> Buffer for OutBuf<C> {
    /// Writes kept plus writes dropped in Run.
    fn len(&self) -> usize {
        OutBuf::len(self) + self.dropped as usize
    }
    fn clear(&mut self) {
        self.clear_writes();
    }
    /// Settles pending row writes and closes the open segment, and returns
    /// [`len`](Buffer::len) (one call where the Run phase needs both).
    fn seal(&mut self) -> usize {
        OutBuf::seal(self);
        Buffer::len(self)
    }
    fn append(&mut self, other: &mut Self) {
        OutBuf::append(self, other);
    }
    fn capacity_bytes(&self) -> usize {
        use std::mem::size_of;
        let o = size_of::<C::Output>();

        self.segments
            .iter()
            .map(|s| s.values.capacity() * o)
            .sum::<usize>()
            + self.open.capacity() * o
            + self.segments.capacity() * size_of::<Segment<C::Output>>()
            + self.spare.iter().map(|v| v.capacity() * o).sum::<usize>()
            + self.spare.capacity() * size_of::<Vec<C::Output>>()
            + self.runs.capacity() * size_of::<RowRun>()
            + self.pending.capacity() * size_of::<PendingColumn<C::Output>>()
            + self.parts.capacity() * size_of::<PendingPart>()
            + self
                .spare_present
                .iter()
                .map(|v| v.capacity())
                .sum::<usize>()
            + self.spare_present.capacity() * size_of::<Vec<u8>>()
    }
}

/// Everything one system (or one chunk of a parallel iteration) emitted.
pub(crate) struct SystemOutputs {
    /// Typed buffers by component id; `None` until the system first writes the type
    /// (and while Sync holds the buffer).
    pub(crate) buffers: Vec<Option<Erased>>,
    /// The ids that have a buffer, in creation order: what `writes`, `clear`, `absorb`
    /// and Sync's gather walk (a system usually writes a few of many registered types).
    pub(crate) used: Vec<u32>,
    /// The types an [`Output`](crate::Output) remembers, kept across frames so that a
    /// system's first write of a frame needs no registry lookup.
    pub(crate) types: [(TypeId, ComponentId); CACHED_TYPES],
    /// The world (its `uid`) whose component ids key `buffers` and `types`.
    pub(crate) world: u64,
    /// Structural commands (spawn, despawn, insert, remove) with their values.
    pub(crate) commands: CommandList,
    /// Spawns this frame that took a reserved id (`Output::spawn`).
    pub(crate) spawned: u32,
    /// Outputs for written resources (a `Vec<R::Output>` each), by resource index (see
    /// `World::register_resource`).
    pub(crate) resources: Vec<Option<Erased>>,
    /// Messages sent (a `MsgBuf<M>` each), by message index (see
    /// `World::register_message`).
    pub(crate) messages: Vec<Option<Erased>>,
    /// Sub-buffers for parallel iteration, one per chunk, kept across frames.
    pub(crate) chunks: Vec<SystemOutputs>,
    pub(crate) chunk_ranges: Vec<Chunk>,
}

/// One chunk of a parallel iteration: rows `start..end` of the table being visited.
#[derive(Clone, Copy)]
pub(crate) struct Chunk {
    pub(crate) start: u32,
    pub(crate) end: u32,
}

impl Default for SystemOutputs {
    fn default() -> Self {
        SystemOutputs {
            buffers: Vec::new(),
            used: Vec::new(),
            // `()` is never a component: `Component` is not implemented for it.
            types: [(TypeId::of::<()>(), ComponentId(u32::MAX)); CACHED_TYPES],
            world: 0,
            commands: CommandList::default(),
            spawned: 0,
            resources: Vec::new(),
            messages: Vec::new(),
            chunks: Vec::new(),
            chunk_ranges: Vec::new(),
        }
    }
}

impl SystemOutputs {
    /// Makes these buffers belong to world `uid`: if they were another world's (a runtime
    /// whose world was replaced), they start over, since component ids may now name other
    /// types.
    #[inline]
    pub(crate) fn bind(&mut self, uid: u64) {
        if self.world != uid {
            *self = SystemOutputs {
                world: uid,
                ..SystemOutputs::default()
            };
        }
    }

    /// The buffers that exist.
    fn existing(&self) -> impl Iterator<Item = &Erased> {
        self.used
            .iter()
            .filter_map(|&id| self.buffers[id as usize].as_ref())
    }

    /// Bytes reserved by all buffers, commands and chunk sub-buffers.
    pub(crate) fn capacity_bytes(&self) -> usize {
        use std::mem::size_of;
        self.existing().map(|b| b.capacity_bytes()).sum::<usize>()
            + self.buffers.capacity() * size_of::<Option<Erased>>()
            + self.used.capacity() * size_of::<u32>()
            + self
                .resources
                .iter()
                .flatten()
                .map(|r| r.capacity_bytes())
                .sum::<usize>()
            + self
                .messages
                .iter()
                .flatten()
                .map(|m| m.capacity_bytes())
                .sum::<usize>()
            + self.commands.capacity_bytes()
            + self.chunk_ranges.capacity() * size_of::<Chunk>()
            + self.chunks.capacity() * size_of::<SystemOutputs>()
            + self
                .chunks
                .iter()
                .map(|c| c.capacity_bytes())
                .sum::<usize>()
    }

    /// Forgets everything emitted (capacity kept).
    pub(crate) fn clear(&mut self) {
        for &id in &self.used {
            if let Some(b) = &mut self.buffers[id as usize] {
                b.clear();
            }
        }
        self.commands.clear();
        self.spawned = 0;
        for r in self.resources.iter_mut().flatten() {
            r.clear();
        }
        for m in self.messages.iter_mut().flatten() {
            m.clear();
        }
    }

    /// Seals every buffer (the system has returned): pending row writes become runs,
    /// so that counts and Sync see every write. Returns the writes over all types (dropped
    /// ones included), resources included: one pass (with thousands of one-write
    /// systems, a second walk over the buffers showed in the profile).
    pub(crate) fn seal(&mut self) -> usize {
        let mut writes = 0;
        for &id in &self.used {
            if let Some(b) = &mut self.buffers[id as usize] {
                writes += b.seal();
            }
        }
        writes
            + self
                .resources
                .iter()
                .flatten()
                .map(|r| r.len())
                .sum::<usize>()
    }

    /// Appends `other` after everything in `self`, leaving `other` empty.
    pub(crate) fn absorb(&mut self, other: &mut SystemOutputs) {
        for &id in &other.used {
            let Some(theirs) = &mut other.buffers[id as usize] else {
                continue;
            };
            if self.buffers.len() <= id as usize {
                self.buffers.resize_with(id as usize + 1, || None);
            }
            let mine = &mut self.buffers[id as usize];
            if mine.is_none() {
                *mine = Some(theirs.empty_like());
                self.used.push(id);
            }
            mine.as_mut().expect("just ensured").append(theirs);
        }
        self.commands.append(&mut other.commands);
        if self.resources.len() < other.resources.len() {
            self.resources.resize_with(other.resources.len(), || None);
        }
        for (mine, theirs) in self.resources.iter_mut().zip(&mut other.resources) {
            Erased::append_into(mine, theirs);
        }
        if self.messages.len() < other.messages.len() {
            self.messages.resize_with(other.messages.len(), || None);
        }
        for (mine, theirs) in self.messages.iter_mut().zip(&mut other.messages) {
            if theirs.as_ref().is_some_and(|t| t.len() > 0) {
                Erased::append_into(mine, theirs);
            }
        }
    }

    /// The buffer of type `C` (id `id`), created on first use.
    #[inline(always)]
    pub(crate) fn typed<C: Component>(&mut self, id: ComponentId) -> &mut OutBuf<C> {
        if !matches!(self.buffers.get(id.index()), Some(Some(_))) {
            self.create::<C>(id);
        }
        match &mut self.buffers[id.index()] {
            Some(b) => b.typed_mut::<OutBuf<C>>(),
            None => unreachable!("created above"),
        }
    }

    #[cold]
    #[inline(never)]
    fn create<C: Component>(&mut self, id: ComponentId) {
        if self.buffers.len() <= id.index() {
            self.buffers.resize_with(id.index() + 1, || None);
        }
        if self.buffers[id.index()].is_none() {
            self.buffers[id.index()] = Some(Erased::new(OutBuf::<C>::default()));
            // (Already listed if an `Output::query` iterator that held the buffer was
            // leaked instead of dropped.)
            if !self.used.contains(&id.0) {
                self.used.push(id.0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct P;
    impl Component for P {
        type Output = u32;
    }

    fn runs_of(b: &mut OutBuf<P>) -> Vec<(u32, u32, Vec<u32>)> {
        b.seal();
        b.runs_with_values()
            .map(|(r, v)| (r.col, r.row, v.to_vec()))
            .collect()
    }

    #[test]
    fn runs_segments_and_order() {
        let mut b = OutBuf::<P>::default();
        b.start_run(0, 0, true);
        b.push_in_run(1);
        b.push_in_run(2);
        b.start_run(0, 5, false); // a gap: same segment
        b.push_in_run(3);
        b.start_run(1, 0, true); // next table: new segment
        b.push_in_run(4);
        assert_eq!(b.segments.len(), 1, "the second segment is still open");
        assert_eq!(
            runs_of(&mut b),
            vec![(0, 0, vec![1, 2]), (0, 5, vec![3]), (1, 0, vec![4])]
        );
        assert!(b.is_ordered());
        b.start_run(0, 1, false); // back into column 0: out of order
        b.push_in_run(5);
        b.seal();
        assert!(!b.is_ordered());
        assert_eq!(b.len(), 5);
        b.clear_writes();
        assert_eq!((b.len(), b.runs.len(), b.spare.len()), (0, 0, 3));
    }

    #[test]
    fn append_moves_segments_in_order() {
        let mut a = OutBuf::<P>::default();
        a.start_run(0, 0, true);
        a.push_in_run(1);
        let mut c = OutBuf::<P>::default();
        c.start_run(0, 1, false);
        c.push_in_run(2);
        c.start_run(2, 0, true);
        c.push_in_run(3);
        c.dropped = 4;
        a.append(&mut c);
        assert_eq!(
            runs_of(&mut a),
            vec![(0, 0, vec![1]), (0, 1, vec![2]), (2, 0, vec![3])]
        );
        assert_eq!(a.dropped, 4);
        assert!(a.is_ordered());
        assert_eq!((c.len(), c.runs.len()), (0, 0));
    }

    #[test]
    fn row_writes_settle_in_emission_order() {
        let rows = SEGMENT_MIN_ROWS * 2;
        let mut b = OutBuf::<P>::default();
        b.start_run(9, 3, false); // a plain write before the row writes
        b.push_in_run(100);
        b.seal();
        // A big table, every row set: its own segment, one run (a whole column).
        let whole = b.row_writes(0, rows);
        for r in 0..rows {
            whole.row(r).set(r as u32);
        }
        // A big table, some rows: its own segment, a run per stretch.
        let some = b.row_writes(1, rows);
        for r in [1, 2, 5] {
            some.row(r).set(10 + r as u32);
        }
        // A small table: copied into the shared open segment.
        let small = b.row_writes(2, 3);
        small.row(2).set(7);
        // Nothing set: no run at all.
        let _none = b.row_writes(3, rows);
        let segments_before = b.segments.len();
        b.start_run(9, 4, false); // a plain write after: settles the row writes first
        b.push_in_run(200);
        assert!(b.segments.len() > segments_before, "settled into segments");
        let got = runs_of(&mut b);
        let mut want = vec![(9, 3, vec![100]), (0, 0, (0..rows as u32).collect())];
        want.extend([(1, 1, vec![11, 12]), (1, 5, vec![15]), (2, 2, vec![7])]);
        want.push((9, 4, vec![200]));
        assert_eq!(got, want);
        assert_eq!(b.len(), 1 + rows + 3 + 1 + 1);
        b.clear_writes();
        assert_eq!(b.len(), 0);
    }

    #[test]
    fn push_column_is_one_full_run() {
        let mut b = OutBuf::<P>::default();
        b.start_run(3, 0, true); // an empty run left by nothing written
        b.push_column(1, vec![7, 8, 9]);
        assert_eq!(runs_of(&mut b), vec![(1, 0, vec![7, 8, 9])]);
    }
}
