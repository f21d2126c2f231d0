//! Row writes: the row-aligned write handles of [`Output::query`](crate::Output::query),
//! and the one module with `unsafe` code on the write path.
//!
//! A query that names [`Write<C>`](crate::Write) gets, for each table it visits, row
//! writes in a [`PendingColumn`]: a value vector with room for every row of the table
//! (its length stays 0 while the loop runs) and one presence flag (a byte) per row. The
//! [`RowWrite`] of row `r` is two raw pointers — to its element of that vector and to its
//! flag — so [`RowWrite::set`] is two stores: no target check, no type lookup, no
//! capacity check, and no read: a flag per byte rather than a bit per row, because a bit
//! set is a read-modify-write of a word that the next row's write modifies again, and
//! that chain through memory (store-to-load forwarding on every row) costs as much as the
//! rest of the loop together. Rows the loop does not write keep their flag clear.
//!
//! A big table gets a pending column of its own. Small tables (a fragmented world: many
//! tables of a few rows) *join* one: each takes the next rows of a shared column made
//! with room (and zeroed flags) for [`SHARED_ROWS`] rows, so a table costs a part record
//! instead of two vectors taken from the spares, made, settled and copied.
//!
//! [`Output::write_each_some`](crate::Output::write_each_some) fills a table's pending
//! column through the same pointers ([`RowWrites::fill`]), in parts that may run on
//! several workers, and writes no flag in a part while every row of it gets a value: a
//! [`PendingColumn::unflagged`] column's flags are not zeroed, and once every part has
//! run, [`PendingColumn::filled`] either marks the column *dense* (every value
//! initialised, the flags never read) or sets the flags of the parts that wrote none.
//!
//! When the system next touches that type's buffer (any other write of the type, or the
//! end of the system), the buffer [*settles*](PendingColumn::settle) its pending columns:
//! the written values are moved to the front of the vector, table after table (nothing
//! moves when every row was written: a big table's vector then *is* a whole output
//! column, which Sync can swap in), and the set flags become row runs.
//!
//! # Why the raw pointers are sound
//!
//! * **Bounds.** A table's handles start at flag `at` of its pending column (0 for the
//!   first table, the flags of the tables before it otherwise), and the column has room
//!   for at least `at + rows` values and flags; the query engine asks for rows `< rows`
//!   only (it walks the table's own entity list), so every handle points inside both
//!   allocations.
//! * **One writer per row.** A query iteration hands out each row of a table at most
//!   once, and each table visited gets flags and values of its own — new ones, after
//!   those of every table before it; so no two live handles share a value or a flag. A
//!   handle is neither `Send` nor `Sync` (raw pointer fields): handles are used on the
//!   thread that ran the query.
//! * **Liveness.** The vectors' heap buffers never move or shrink while a handle may
//!   live: a handle borrows the system's [`Output`](crate::Output) (lifetime `'o`),
//!   and the only code that reads, moves or frees a pending column's values —
//!   [`PendingColumn::settle`] and [`Drop`] — is reached through a `&mut` to the output
//!   buffer, which exists only after every handle is gone (the next `Output` call, the
//!   end of the system, or Sync). A table joining a shared column
//!   ([`PendingColumn::join`]) changes neither vector: the column's flags were all made
//!   (zeroed) with it, and its values' capacity too; the new handles come from
//!   `Vec::as_mut_ptr`, which makes no reference to the elements, so the handles of
//!   the tables before it stay valid. Moving a `Vec` (the pending list growing, the
//!   buffer's box changing hands) does not move its heap buffer.
//! * **Fills.** The parts of a fill cover the table's rows, each row in one part, and
//!   each part runs once (on one worker): no two write a value or a flag. Until
//!   [`PendingColumn::filled`] the flags may be stale; it runs after every part has
//!   finished or panicked (`Pool::for_each_mut` returns only then), before anything can
//!   settle or drop the column (the system's `Output` is borrowed by the fill meanwhile).
//!   A part that panicked leaves its values initialised up to an unknown row: for a
//!   value type without drop glue its flags are cleared (the values are forgotten, which
//!   leaks nothing); with drop glue the part writes flags as it goes, from zeroed ones.
//! * **Initialisation.** A value is initialised exactly when its flag is set (in a
//!   column not marked dense; in a dense one, every value is):
//!   [`RowWrite::set`] clears the flag before dropping an earlier value and sets it only
//!   after writing the new one, so a panicking `Drop` leaves the row absent, never
//!   dropped twice. `settle` and `Drop` read or drop only rows whose flag is set.
//!
//! Miri runs the tests below under Tree Borrows with strict provenance (`.ci/run`).

use std::marker::PhantomData;
use std::ptr;

/// Rows of a pending column that small tables share (fewer for big values:
/// [`shared_rows`]). One holds a dozen 20-row tables; a bigger one would save little more
/// and hold more memory per buffer.
pub(crate) const SHARED_ROWS: usize = if cfg!(miri) { 8 } else { 256 };

/// At most this many bytes of values in a shared column (fewer rows for big output
/// types), so a buffer that only ever sees one small table does not hold 256 large
/// values.
const SHARED_BYTES: usize = 16 * 1024;

/// The rows of a shared column of `O` values: [`SHARED_ROWS`], or fewer for values over
/// 64 bytes.
fn shared_rows<O>() -> usize {
    (SHARED_BYTES / std::mem::size_of::<O>().max(1)).clamp(1, SHARED_ROWS)
}

/// One table of a pending column: its `rows` rows, of output column `col`, take the
/// column's next `rows` flags and values. The buffer keeps the parts of its pending
/// columns in one list, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PendingPart {
    pub(crate) col: u32,
    pub(crate) rows: u32,
}

/// The row writes of one table, or of several small tables one after the other, for
/// one type.
pub(crate) struct PendingColumn<O> {
    /// How many tables (parts) hold rows here.
    parts: u32,
    /// Whether small tables may [`join`](Self::join).
    joinable: bool,
    /// Length 0, capacity `>= present.len()`; element `i` is initialised iff flag `i` is
    /// set.
    values: Vec<O>,
    /// One flag per row of every part, in order (`..used`), then a joinable column's room
    /// for more, zeroed when it was made (so a table joining writes no flag): 1 when
    /// written, 0 when not. Its length never changes while handles may live.
    present: Vec<u8>,
    /// Flags of the parts held: `present[..used]`.
    used: usize,
    /// Every value of `..used` is initialised and the flags are not read: a column that
    /// [`RowWrites::fill`] filled with a value for every row (it then writes no flag).
    dense: bool,
}

/// A pending column's values after [`PendingColumn::settle`].
pub(crate) struct Settled<O> {
    /// The written values, in row order.
    pub(crate) values: Vec<O>,
    /// The presence flags (handed back for reuse).
    pub(crate) present: Vec<u8>,
}

impl<O> PendingColumn<O> {
    /// Row writes for a table of `rows` rows (its part is the first), in `values` and
    /// `present` (spare vectors: cleared here, grown if needed); `joinable`: a small
    /// table, which later small tables may join, up to [`SHARED_ROWS`] rows in all (fewer
    /// for big values: at most 16 KiB of them, unless the first table needs more).
    pub(crate) fn new(
        rows: usize,
        joinable: bool,
        mut values: Vec<O>,
        mut present: Vec<u8>,
    ) -> Self {
        let room = if joinable {
            rows.max(shared_rows::<O>())
        } else {
            rows
        };
        values.clear();
        values.reserve(room);
        present.clear();
        present.resize(room, 0);
        PendingColumn {
            parts: 1,
            joinable,
            values,
            present,
            used: rows,
            dense: false,
        }
    }

    /// A column for one table of `rows` rows that [`RowWrites::fill`] fills part by part
    /// (then [`filled`](Self::filled)), in `values` and `present` (spare vectors). Its
    /// flags are not zeroed: a part that gives every row a value writes none, and one
    /// that does not writes all of its own. (For an output type with drop glue they are
    /// zeroed, and set as values are written, so that they are right whenever a part
    /// panics.)
    pub(crate) fn unflagged(rows: usize, mut values: Vec<O>, mut present: Vec<u8>) -> Self {
        values.clear();
        values.reserve(rows);
        if std::mem::needs_drop::<O>() {
            present.clear();
        }
        present.resize(rows, 0);
        PendingColumn {
            parts: 1,
            joinable: false,
            values,
            present,
            used: rows,
            dense: false,
        }
    }

    /// After the fills of `parts` (rows `0..used` in order, each filled at most once,
    /// none running): marks the column dense if every part gave every row a value, else
    /// makes the flags say which values are initialised — the rows of a part that gave
    /// every row a value are all set, those of a part that did not finish (it panicked)
    /// all clear (its values have no drop glue, so forgetting them leaks nothing).
    pub(crate) fn filled(&mut self, parts: &[FillPart]) {
        debug_assert!(!self.joinable && self.parts == 1);
        if parts.iter().all(|p| p.outcome == Outcome::Dense) {
            self.dense = true;
            return;
        }
        for p in parts {
            let flags = &mut self.present[p.rows.clone()];
            match p.outcome {
                Outcome::Dense => flags.fill(1),
                Outcome::Flagged => {}
                Outcome::Unfinished if !std::mem::needs_drop::<O>() => flags.fill(0),
                // Zeroed when made and set value by value: right as they are.
                Outcome::Unfinished => {}
            }
        }
    }

    /// How many tables hold rows here (their parts are the buffer's).
    pub(crate) fn parts(&self) -> usize {
        self.parts as usize
    }

    /// Where the handles of the first table write: its first value and first flag. The
    /// pointers stay valid until the column is settled or dropped.
    pub(crate) fn base(&mut self) -> RowWrites<O> {
        let rows = self.used;
        self.base_at(0, rows)
    }

    /// Row writes for the next table, of `rows` rows, after those held — if this column
    /// is joinable and has room for them without growing a vector (so the handles
    /// handed out before stay valid: module docs).
    pub(crate) fn join(&mut self, rows: usize) -> Option<RowWrites<O>> {
        let at = self.used;
        let end = at.checked_add(rows)?;
        if !self.joinable || end > self.present.len() || end > self.values.capacity() {
            return None;
        }
        // The flags are there, zeroed: no vector changes.
        self.used = end;
        self.parts += 1;
        Some(self.base_at(at, rows))
    }

    /// The row writes of the `rows` rows from flag `at` (`at + rows <= used`).
    fn base_at(&mut self, at: usize, rows: usize) -> RowWrites<O> {
        debug_assert!(at + rows <= self.used && self.used <= self.values.capacity());
        #[cfg(not(debug_assertions))]
        let _ = rows;
        RowWrites {
            // In bounds (`at` is at most the capacity), but wrapping: no `unsafe` needed.
            values: self.values.as_mut_ptr().wrapping_add(at),
            present: self.present.as_mut_ptr().wrapping_add(at),
            #[cfg(debug_assertions)]
            rows,
        }
    }

    /// Moves the written values to the front of the vector, in order (table after table,
    /// rows in order), and hands the vectors back; `parts` are the tables held, in order
    /// (as many as [`parts`](Self::parts), their rows adding up to the flags'). Calls
    /// `run(col, row, len)` for each maximal stretch of written rows of a table, in that
    /// order: a table whose every row was written is one stretch, `(col, 0, rows)`.
    pub(crate) fn settle(
        mut self,
        parts: &[PendingPart],
        mut run: impl FnMut(u32, u32, u32),
    ) -> Settled<O> {
        debug_assert_eq!(parts.len(), self.parts as usize);
        let mut values = std::mem::take(&mut self.values);
        let present = std::mem::take(&mut self.present);
        let used = std::mem::take(&mut self.used);
        let dense = std::mem::take(&mut self.dense);
        // `self` now owns empty vectors and uses no flag: its `Drop` drops nothing.
        let base = values.as_mut_ptr();
        let (mut at, mut kept) = (0usize, 0usize);
        for p in parts {
            let rows = p.rows as usize;
            let flags = &present[at..at + rows];
            if dense || all_set(flags) {
                if kept != at {
                    // SAFETY: elements `at..at + rows` are set (or the column dense), hence
                    // initialised (module docs), and inside the capacity; `kept < at` (`kept` counts the set
                    // elements before `at`), so the destination is inside it too, and
                    // `ptr::copy` allows the overlap. Each value moves once, to a lower
                    // index; its old place is never read again.
                    unsafe { ptr::copy(base.add(at), base.add(kept), rows) };
                }
                if rows > 0 {
                    run(p.col, 0, rows as u32);
                }
                kept += rows;
            } else {
                for_each_stretch(flags, |from, len| {
                    // SAFETY: elements `at + from..at + from + len` are set, hence
                    // initialised, and inside the capacity; `kept <= at + from` (the
                    // stretches come in order and `kept` counts the set elements before
                    // them), so the destination is inside the capacity too, and
                    // `ptr::copy` allows the overlap. Each value moves once, to a lower or
                    // equal index; a stretch's old place is never read again.
                    unsafe { ptr::copy(base.add(at + from), base.add(kept), len) };
                    run(p.col, from as u32, len as u32);
                    kept += len;
                });
            }
            at += rows;
        }
        debug_assert_eq!(at, used, "the parts cover every flag in use");
        // SAFETY: the first `kept` elements now hold the moved values, in order.
        unsafe { values.set_len(kept) };
        Settled { values, present }
    }
}

impl<O> Drop for PendingColumn<O> {
    /// Drops the written values (a system that panicked, or a buffer cleared before it
    /// settled).
    fn drop(&mut self) {
        if !std::mem::needs_drop::<O>() {
            return;
        }
        let base = self.values.as_mut_ptr();
        if self.dense {
            // SAFETY: a dense column's values `..used` are all initialised, and the
            // vector's length is 0, so it will not drop them again.
            unsafe { ptr::drop_in_place(ptr::slice_from_raw_parts_mut(base, self.used)) };
            return;
        }
        for_each_stretch(&self.present[..self.used], |from, len| {
            // SAFETY: rows `from..from + len` are set, so initialised (module docs), and
            // the vector's length is 0, so it will not drop them again. Their flags are
            // left set, but the vector is never read after this.
            unsafe { ptr::drop_in_place(ptr::slice_from_raw_parts_mut(base.add(from), len)) };
        });
    }
}

/// Whether every flag is set. Flags are 0 or 1, so a group's flags are all set when
/// their AND is 1: the groups' loop compiles to vector ANDs (`contains(&0)`, a `memchr`
/// a word at a time, takes many times the instructions). The rest (under 256 flags: all
/// of a small table's) goes eight flags to a word, then one at a time, fewer steps than
/// a byte loop.
fn all_set(present: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    let mut groups = present.chunks_exact(256);
    if !groups
        .by_ref()
        .all(|b| b.iter().fold(1, |all, &p| all & p) == 1)
    {
        return false;
    }
    let mut words = groups.remainder().chunks_exact(8);
    let word = |w: &[u8]| u64::from_ne_bytes(w.try_into().expect("chunks of 8"));
    words.by_ref().fold(ONES, |all, w| all & word(w)) == ONES
        && words.remainder().iter().fold(1, |all, &p| all & p) == 1
}

/// `f(from, len)` for each maximal stretch of set (non-zero) flags, in row order.
///
/// Reads the flags eight to a word (little-endian, so flag `i` of a word is its byte
/// `i`) and finds where a stretch starts or ends from the word's *edges*: the flags that
/// differ from the flag before them (for a word's first flag, the last flag of the word
/// before). A word with no edge — all set inside a stretch, all clear between two — is
/// passed over in one step instead of eight; each edge is a `trailing_zeros`. The
/// flags left over (under eight) make one last word, padded with clear flags, so a
/// stretch that runs to the end ends at the first padding flag: at `present.len()`.
fn for_each_stretch(present: &[u8], mut f: impl FnMut(usize, usize)) {
    const LOW7: u64 = u64::from_ne_bytes([0x7f; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // Bit 7 of each byte of `w` whose flag is non-zero, no other bit: adding 0x7f to a
    // byte's low seven bits sets its bit 7 iff they are not all zero, and carries into
    // no other byte; OR with the byte itself catches bit 7.
    let set = |w: u64| (((w & LOW7) + LOW7) | w) & HIGH;
    // Bit 7 of the last flag seen, moved to the position of the next word's first flag.
    let mut before = 0u64;
    // Where the stretch being walked started (valid while `inside`).
    let mut start = 0usize;
    let mut inside = false;
    let mut word = |at: usize, w: u64| {
        let set = set(w);
        let mut edges = set ^ ((set << 8) | before);
        before = set >> 56;
        while edges != 0 {
            let row = at + (edges.trailing_zeros() / 8) as usize;
            if inside {
                f(start, row - start);
            } else {
                start = row;
            }
            inside = !inside;
            edges &= edges - 1;
        }
    };
    let mut words = present.chunks_exact(8);
    let mut at = 0;
    for w in words.by_ref() {
        word(at, u64::from_le_bytes(w.try_into().expect("chunks of 8")));
        at += 8;
    }
    let mut last = [0u8; 8];
    let rest = words.remainder();
    last[..rest.len()].copy_from_slice(rest);
    word(at, u64::from_le_bytes(last));
    debug_assert!(!inside, "the padding ends every stretch");
}

/// How a part of a [`RowWrites::fill`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Not run, or it panicked.
    Unfinished,
    /// Every row got a value; no flag was written.
    Dense,
    /// Some row got none; every flag of the part was written.
    Flagged,
}

/// Rows `rows` of a table that one job of a fill fills, and how it ended.
#[derive(Clone, Debug)]
pub(crate) struct FillPart {
    pub(crate) rows: std::ops::Range<usize>,
    pub(crate) outcome: Outcome,
}

impl FillPart {
    /// A part of rows `rows`, not run yet.
    pub(crate) fn new(rows: std::ops::Range<usize>) -> Self {
        FillPart {
            rows,
            outcome: Outcome::Unfinished,
        }
    }
}

/// The start of a pending column, which a query element turns into row writes.
pub struct RowWrites<O> {
    values: *mut O,
    present: *mut u8,
    #[cfg(debug_assertions)]
    rows: usize,
}

// SAFETY: a `RowWrites` is an address, not an access: handles made from it write only
// rows handed out by the query engine, each row once (the contract of `row`), so copies
// on several threads (the chunks of `Output::par_for_each`) write disjoint elements and
// disjoint flag bytes; the pool's join orders those writes before the column settles.
unsafe impl<O: Send> Send for RowWrites<O> {}
// SAFETY: as for `Send`: sharing the address shares no access.
unsafe impl<O: Send> Sync for RowWrites<O> {}

impl<O> Clone for RowWrites<O> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<O> Copy for RowWrites<O> {}

impl<O> RowWrites<O> {
    /// No column (before the first table): never asked for a row.
    pub(crate) fn none() -> Self {
        RowWrites {
            values: ptr::null_mut(),
            present: ptr::null_mut(),
            #[cfg(debug_assertions)]
            rows: 0,
        }
    }

    /// The write handle of row `row`. The caller (the query engine) asks for rows of the
    /// table only, each at most once (module docs); pointer arithmetic here is wrapping,
    /// so a wrong row is caught (in debug builds) rather than computed.
    #[inline(always)]
    pub(crate) fn row<'o>(self, row: usize) -> RowWrite<'o, O> {
        #[cfg(debug_assertions)]
        assert!(
            row < self.rows,
            "the write of row {row} in a table of {} rows",
            self.rows
        );
        RowWrite {
            value: self.values.wrapping_add(row),
            present: self.present.wrapping_add(row),
            _out: PhantomData,
        }
    }
}

impl<O> RowWrites<O> {
    /// Gives each row of `part` the value `f(key, row)`, if any, where `key` is the row's
    /// element of `keys` (the table's entities), and records how it ended:
    /// [`Outcome::Dense`] without writing a flag while every row gets a value (from the
    /// first row without one, the flags of the part's rows so far are set, and each
    /// row's after); if `f` panics, the part stays [`Outcome::Unfinished`]. The caller
    /// (the fill of `Output::write_each_some`) hands out each row of a table's
    /// [`PendingColumn::unflagged`] in exactly one part, and calls
    /// [`PendingColumn::filled`] once every part has run.
    pub(crate) fn fill<K: Copy>(
        self,
        part: &mut FillPart,
        keys: &[K],
        f: impl FnMut(K, usize) -> Option<O>,
    ) {
        let rows = part.rows.clone();
        let keys = &keys[rows.clone()];
        #[cfg(debug_assertions)]
        assert!(rows.end <= self.rows, "a part inside the table");
        // SAFETY: rows `rows` are inside the column (`rows.end <= rows` of its table, for
        // which it has room: module docs), and this part is the only one given them, so
        // nothing else reads or writes these values and flags while the slices live; the
        // values may be uninitialised (`MaybeUninit`), the flags are initialised bytes.
        let (values, present) = unsafe {
            (
                std::slice::from_raw_parts_mut(
                    self.values
                        .add(rows.start)
                        .cast::<std::mem::MaybeUninit<O>>(),
                    rows.len(),
                ),
                std::slice::from_raw_parts_mut(self.present.add(rows.start), rows.len()),
            )
        };
        part.outcome = fill_part(values, present, keys, rows.start, f);
    }
}

/// The loop of [`RowWrites::fill`]: a function of its own so that `values` and `present`
/// are `noalias` arguments, and the optimiser keeps `f`'s captures in registers.
#[inline(never)]
fn fill_part<O, K: Copy>(
    values: &mut [std::mem::MaybeUninit<O>],
    present: &mut [u8],
    keys: &[K],
    first: usize,
    mut f: impl FnMut(K, usize) -> Option<O>,
) -> Outcome {
    let n = values.len();
    // Equal lengths let the optimiser drop the bounds checks below.
    let (present, keys) = (&mut present[..n], &keys[..n]);
    let mut at = 0;
    if !std::mem::needs_drop::<O>() {
        // No flags while every row has a value.
        while at < n {
            let Some(v) = f(keys[at], first + at) else {
                break;
            };
            values[at].write(v);
            at += 1;
        }
        if at == n {
            return Outcome::Dense;
        }
        present[..at].fill(1);
        present[at] = 0;
        at += 1;
    }
    // Flags for every row from here (with drop glue: zeroed already, set as a value is
    // written, so a panic leaves them right).
    while at < n {
        match f(keys[at], first + at) {
            Some(v) => {
                values[at].write(v);
                present[at] = 1;
            }
            None => present[at] = 0,
        }
        at += 1;
    }
    Outcome::Flagged
}

/// The write handle of one row for one component type: what a [`Write<C>`](crate::Write)
/// element of [`Output::query`](crate::Output::query) yields. [`set`](Self::set) gives
/// the row's entity its `C` output for this frame (merged in Sync like any write); a row
/// whose handle is never set gets no output.
///
/// A handle borrows the system's `Output` and stays on its thread (it is neither
/// `Send` nor `Sync`).
pub struct RowWrite<'o, O> {
    value: *mut O,
    present: *mut u8,
    _out: PhantomData<&'o mut O>,
}

impl<O> RowWrite<'_, O> {
    /// Emits `value` for this row (replacing what this handle was set to before, if
    /// anything).
    ///
    /// Cost: two stores (the value and a flag) — no target check, no type lookup; one
    /// load more for an output type with drop glue.
    #[inline(always)]
    pub fn set(&mut self, value: O) {
        // SAFETY: `value` and `present` point into the pending column of this row's table
        // (in bounds, alive while this handle lives, used by no other: module docs).
        // The flag is clear while the element is dropped and set once it holds `value`,
        // so the element is initialised exactly when the flag is set.
        unsafe {
            if std::mem::needs_drop::<O>() && *self.present != 0 {
                *self.present = 0;
                ptr::drop_in_place(self.value);
            }
            self.value.write(value);
            *self.present = 1;
        }
    }

    /// Whether this handle has been [`set`](Self::set).
    #[inline]
    pub fn is_set(&self) -> bool {
        // SAFETY: `present` is in bounds and alive (see `set`); reading it races with no
        // one.
        unsafe { *self.present != 0 }
    }
}

impl<O> std::fmt::Debug for RowWrite<'_, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowWrite")
            .field("set", &self.is_set())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    fn stretches(present: &[u8]) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        for_each_stretch(present, |a, n| v.push((a, n)));
        v
    }

    /// The stretches a row-by-row walk finds.
    fn model(present: &[u8]) -> Vec<(usize, usize)> {
        let mut v: Vec<(usize, usize)> = Vec::new();
        for (r, &p) in present.iter().enumerate() {
            if p != 0 {
                match v.last_mut() {
                    Some((a, n)) if *a + *n == r => *n += 1,
                    _ => v.push((r, 1)),
                }
            }
        }
        v
    }

    #[test]
    fn stretches_match_a_row_walk() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for rows in [0, 1, 5, 63, 64, 65, 130, 200] {
            for case in 0..40 {
                let present: Vec<u8> = (0..rows)
                    .map(|_| match case % 3 {
                        0 => (next() % 2) as u8,
                        1 => 1,
                        _ => u8::from(next() % 8 == 0),
                    })
                    .collect();
                assert_eq!(stretches(&present), model(&present), "rows {rows}");
            }
        }
    }

    /// The word scan against the row walk on random flags: random lengths (multiples of
    /// eight and not), slices starting at any offset of their vector (as a table's flags
    /// in a shared column do), sparse, dense and stretchy patterns, and non-zero flags
    /// other than 1 (any non-zero byte counts as set, as in the row walk).
    #[test]
    fn word_scan_matches_a_row_walk_on_random_flags() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let cases = if cfg!(miri) { 60 } else { 4000 };
        for case in 0..cases {
            let len = (next() % if case % 4 == 0 { 600 } else { 70 }) as usize;
            let offset = (next() % 9) as usize;
            let mut flags = vec![0u8; offset + len + (next() % 9) as usize];
            // Bytes around the slice are noise: the scan must not read them.
            for f in &mut flags {
                *f = (next() % 3) as u8;
            }
            let density = next() % 5;
            let mut set = next() % 2 == 0;
            let mut left = 0u64;
            for f in &mut flags[offset..offset + len] {
                let on = match density {
                    0 => next() % 8 == 0,
                    1 => next() % 2 == 0,
                    2 => next() % 8 != 0,
                    // Stretches and gaps of random lengths, up to 20 flags.
                    _ => {
                        if left == 0 {
                            set = !set;
                            left = 1 + next() % 20;
                        }
                        left -= 1;
                        set
                    }
                };
                *f = if !on {
                    0
                } else if density == 4 {
                    [1, 2, 0x7f, 0x80, 0xff][(next() % 5) as usize]
                } else {
                    1
                };
            }
            let present = &flags[offset..offset + len];
            assert_eq!(
                stretches(present),
                model(present),
                "case {case}: len {len}, offset {offset}, flags {present:?}"
            );
        }
    }

    #[cfg(not(miri))]
    proptest::proptest! {
        /// As above, with proptest's shrinking to a minimal failing flag pattern.
        #[test]
        fn word_scan_matches_a_row_walk(
            flags in proptest::collection::vec(proptest::sample::select(vec![0u8, 0, 1, 1, 2, 0xff]), 0..200),
            offset in 0usize..9,
        ) {
            let present = &flags[offset.min(flags.len())..];
            proptest::prop_assert_eq!(stretches(present), model(present));
        }
    }

    /// `all_set` (groups of 256 flags, then words of 8, then the rest) against a plain
    /// walk, with one clear flag anywhere: in the groups, the words or the rest.
    #[test]
    fn all_set_finds_any_clear_flag() {
        for rows in [0, 1, 7, 8, 9, 20, 255, 256, 257, 264, 271, 600] {
            let mut present = vec![1u8; rows];
            assert!(all_set(&present), "rows {rows}");
            for clear in [
                0, 1, 6, 7, 8, 15, 19, 200, 255, 256, 263, 270, 300, 511, 512, 599,
            ] {
                if clear < rows {
                    present[clear] = 0;
                    assert!(!all_set(&present), "rows {rows}, clear {clear}");
                    present[clear] = 1;
                }
            }
        }
    }

    fn column<O>(rows: usize) -> PendingColumn<O> {
        PendingColumn::new(rows, false, Vec::new(), Vec::new())
    }

    /// Column 7's part of `rows` rows.
    fn part(rows: usize) -> [PendingPart; 1] {
        [PendingPart {
            col: 7,
            rows: rows as u32,
        }]
    }

    #[test]
    fn every_row_set_is_a_whole_column() {
        let mut p = column::<u32>(130);
        let base = p.base();
        for r in 0..130 {
            base.row(r).set(r as u32 * 3);
        }
        let mut runs = Vec::new();
        let s = p.settle(&part(130), |c, r, n| runs.push((c, r, n)));
        assert_eq!(runs, vec![(7, 0, 130)]);
        assert_eq!(s.values, (0..130).map(|r| r * 3).collect::<Vec<u32>>());
    }

    #[test]
    fn some_rows_compact_in_row_order() {
        let mut p = column::<String>(100);
        let base = p.base();
        // Set out of order, and one row twice (the first value is dropped).
        for r in [70usize, 3, 4, 5, 64, 63, 99, 4] {
            base.row(r).set(format!("v{r}"));
        }
        let mut s4 = base.row(4);
        assert!(s4.is_set());
        s4.set("again".to_string());
        let mut runs = Vec::new();
        let s = p.settle(&part(100), |_, r, n| runs.push((r, n)));
        assert_eq!(runs, vec![(3, 3), (63, 2), (70, 1), (99, 1)]);
        assert_eq!(s.values, ["v3", "again", "v5", "v63", "v64", "v70", "v99"]);
    }

    #[test]
    fn unsettled_columns_drop_what_was_set() {
        let token = Rc::new(());
        {
            let mut p = column::<Rc<()>>(70);
            let base = p.base();
            for r in [0, 1, 65] {
                base.row(r).set(token.clone());
            }
            base.row(1).set(token.clone()); // replaces (drops) the first
            assert_eq!(Rc::strong_count(&token), 4);
        }
        assert_eq!(Rc::strong_count(&token), 1, "every set value dropped once");
    }

    #[test]
    fn nothing_set_settles_empty_and_reuses_vectors() {
        let p = column::<u64>(10);
        let s = p.settle(&part(10), |_, _, _| panic!("no stretch"));
        assert!(s.values.is_empty());
        let cap = s.values.capacity();
        let again = PendingColumn::new(5, false, s.values, s.present);
        assert_eq!(again.values.capacity(), cap);
        assert_eq!(again.present, vec![0; 5]);
        let empty = column::<u8>(0);
        let settled = empty.settle(&part(0), |_, _, _| panic!("no rows"));
        assert!(settled.values.is_empty());
    }

    /// Small tables join a shared column: each one's handles follow the last's, the
    /// handles handed out before a join stay usable after it (Miri checks that), and
    /// settling gives each table its own runs, the values packed in order — a table
    /// written whole after one with gaps moves down as one piece.
    #[test]
    fn small_tables_share_a_column() {
        let mut p = PendingColumn::<String>::new(3, true, Vec::new(), Vec::new());
        let first = p.base();
        let second = p.join(3).expect("room for a second table");
        let third = p.join(2).expect("and a third");
        let empty = p.join(0).expect("an empty table joins too");
        assert_eq!(p.parts(), 4);
        // The first table's row writes, set after the others joined; one row left out.
        first.row(0).set("a0".into());
        first.row(2).set("a2".into());
        for r in 0..3 {
            second.row(r).set(format!("b{r}"));
        }
        third.row(1).set("c1".into());
        let _ = empty;
        // 8 rows in all: a shared column's room under Miri too.
        let parts = [(1, 3), (2, 3), (3, 2), (4, 0)].map(|(col, rows)| PendingPart { col, rows });
        let mut runs = Vec::new();
        let s = p.settle(&parts, |c, r, n| runs.push((c, r, n)));
        assert_eq!(runs, vec![(1, 0, 1), (1, 2, 1), (2, 0, 3), (3, 1, 1)]);
        assert_eq!(s.values, ["a0", "a2", "b0", "b1", "b2", "c1"]);
    }

    /// A shared column takes tables while it has room, never by growing a vector; a
    /// column made for a big table takes none.
    #[test]
    fn joining_stops_at_the_shared_columns_room() {
        let mut p = PendingColumn::<u8>::new(1, true, Vec::new(), Vec::new());
        let room = p.present.len();
        assert!(room >= SHARED_ROWS && p.values.capacity() >= room);
        // Big values: a shared column of 16 KiB of them (the first table may make it
        // bigger).
        assert_eq!(shared_rows::<[u8; 1024]>(), 16.min(SHARED_ROWS));
        assert_eq!(shared_rows::<()>(), SHARED_ROWS);
        let big = PendingColumn::<[u8; 1024]>::new(3, true, Vec::new(), Vec::new());
        assert_eq!(big.present.len(), 16.min(SHARED_ROWS));
        let bigger = PendingColumn::<[u8; 1024]>::new(40, true, Vec::new(), Vec::new());
        assert_eq!(bigger.present.len(), 40);
        let (values, present) = (p.values.as_ptr(), p.present.as_ptr());
        assert!(
            p.join(room - 1).is_some(),
            "fills the shared column exactly"
        );
        assert!(p.join(1).is_none(), "full");
        assert_eq!((p.values.as_ptr(), p.present.as_ptr()), (values, present));
        assert_eq!((p.used, p.present.len()), (room, room));
        let mut own = PendingColumn::<u8>::new(100, false, Vec::new(), Vec::new());
        assert!(own.join(1).is_none(), "not joinable");
        drop(own);
        assert_eq!(p.parts(), 2);
    }

    /// An unsettled shared column drops what its tables set, each value once.
    #[test]
    fn unsettled_shared_columns_drop_what_was_set() {
        let token = Rc::new(());
        {
            let mut p = PendingColumn::<Rc<()>>::new(2, true, Vec::new(), Vec::new());
            let a = p.base();
            let b = p.join(3).expect("room");
            a.row(1).set(token.clone());
            b.row(0).set(token.clone());
            b.row(2).set(token.clone());
            b.row(2).set(token.clone()); // replaces (drops) the one before
            assert_eq!(Rc::strong_count(&token), 4);
        }
        assert_eq!(Rc::strong_count(&token), 1, "every set value dropped once");
    }

    /// Fills `rows` rows in parts of `size` with `f`, from stale flags (`stale`
    /// repeated), then settles: the runs and values.
    fn fill<O>(
        rows: usize,
        size: usize,
        stale: u8,
        f: impl Fn(usize) -> Option<O>,
    ) -> (Vec<(u32, u32)>, Vec<O>, bool) {
        let mut p = PendingColumn::unflagged(rows, Vec::new(), vec![stale; rows + 3]);
        let base = p.base();
        let mut parts: Vec<FillPart> = (0..rows.div_ceil(size))
            .map(|k| FillPart::new(k * size..((k + 1) * size).min(rows)))
            .collect();
        let keys: Vec<usize> = (0..rows).collect();
        for part in &mut parts {
            base.fill(part, &keys, |k, r| {
                assert_eq!(k, r);
                f(r)
            });
        }
        p.filled(&parts);
        let dense = p.dense;
        let mut runs = Vec::new();
        let s = p.settle(&part(rows), |_, r, n| runs.push((r, n)));
        (runs, s.values, dense)
    }

    /// A fill where every row gets a value writes no flag and is one whole run; one
    /// with gaps settles into the stretches a row walk finds, whatever the flags held
    /// before, with the parts that had no gap set whole.
    #[test]
    fn fills_are_dense_or_flagged_by_part() {
        for stale in [0, 1] {
            let (runs, values, dense) = fill(20, 8, stale, |r| Some(r as u32));
            assert!(dense);
            assert_eq!(runs, vec![(0, 20)]);
            assert_eq!(values, (0..20).collect::<Vec<u32>>());
            // Gaps in the second part only (rows 8..16): the first and last parts are
            // dense and get their flags set.
            let gap = |r: usize| (r != 9 && r != 12 && r != 13).then(|| format!("v{r}"));
            let (runs, values, dense) = fill(20, 8, stale, gap);
            assert!(!dense);
            assert_eq!(runs, vec![(0, 9), (10, 2), (14, 6)]);
            let want: Vec<String> = (0..20).filter_map(gap).collect();
            assert_eq!(values, want);
            // A first row without a value, and nothing at all.
            let (runs, _, _) = fill(5, 8, stale, |r| (r > 0).then_some(r));
            assert_eq!(runs, vec![(1, 4)]);
            let (runs, values, dense) = fill(5, 2, stale, |_| None::<u8>);
            assert!(!dense && runs.is_empty() && values.is_empty());
        }
    }

    /// A part whose `f` panics leaves the column right: a value type without drop glue
    /// forgets the part's values, one with drop glue drops each written value once.
    #[test]
    fn a_panicking_fill_leaves_the_column_right() {
        for rows in [6, 9] {
            let mut p = PendingColumn::<u32>::unflagged(rows, Vec::new(), vec![1; rows]);
            let base = p.base();
            let mut parts = [FillPart::new(0..3), FillPart::new(3..rows)];
            base.fill(&mut parts[0], &[(); 9], |(), r| Some(r as u32));
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                base.fill(&mut parts[1], &[(); 9], |(), r| {
                    if r < 5 { Some(r as u32) } else { panic!() }
                })
            }));
            assert!(r.is_err());
            assert_eq!(parts[1].outcome, Outcome::Unfinished);
            p.filled(&parts);
            let mut runs = Vec::new();
            let s = p.settle(&part(rows), |_, r, n| runs.push((r, n)));
            assert_eq!((runs, s.values), (vec![(0, 3)], vec![0, 1, 2]));
        }
        let token = Rc::new(());
        {
            let mut p = PendingColumn::<Rc<()>>::unflagged(8, Vec::new(), vec![1; 8]);
            let base = p.base();
            let mut parts = [FillPart::new(0..4), FillPart::new(4..8)];
            base.fill(&mut parts[0], &[(); 8], |(), _| Some(token.clone()));
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                base.fill(&mut parts[1], &[(); 8], |(), r| match r {
                    4 | 6 => Some(token.clone()),
                    7 => panic!("in the fill"),
                    _ => None,
                })
            }));
            assert!(r.is_err());
            p.filled(&parts);
            assert_eq!(Rc::strong_count(&token), 7);
        }
        assert_eq!(
            Rc::strong_count(&token),
            1,
            "every written value dropped once"
        );
        // A column whose every row got a value, dropped unsettled, drops every value.
        {
            let mut p = PendingColumn::<Rc<()>>::unflagged(3, Vec::new(), Vec::new());
            let base = p.base();
            let mut parts = [FillPart::new(0..3)];
            base.fill(&mut parts[0], &[(); 3], |(), _| Some(token.clone()));
            p.filled(&parts);
            assert_eq!(Rc::strong_count(&token), 4);
        }
        assert_eq!(Rc::strong_count(&token), 1);
    }

    #[test]
    fn a_panicking_drop_leaves_the_row_absent() {
        struct Bomb(
            #[allow(dead_code, reason = "held for its count")] Rc<()>,
            bool,
        );
        impl Drop for Bomb {
            fn drop(&mut self) {
                if self.1 {
                    self.1 = false;
                    panic!("bomb");
                }
            }
        }
        let token = Rc::new(());
        let mut p = column::<Bomb>(3);
        let base = p.base();
        base.row(1).set(Bomb(token.clone(), true));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            base.row(1).set(Bomb(token.clone(), false));
        }));
        assert!(r.is_err());
        assert!(!base.row(1).is_set(), "the row is absent after the panic");
        drop(p);
        assert_eq!(
            Rc::strong_count(&token),
            1,
            "both values dropped, once each"
        );
    }
}
