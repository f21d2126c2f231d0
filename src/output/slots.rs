//! Output slots: the row-aligned write handles of [`Output::query`](super::Output::query),
//! and the one module with `unsafe` code on the write path.
//!
//! A query that names [`Write<C>`](crate::Write) gets, for each table it visits, a
//! [`PendingColumn`]: a value vector with room for every row of the table (its length
//! stays 0 while the loop runs) and one presence flag (a byte) per row. The [`Slot`] of
//! row `r` is two raw pointers — to element `r` of that vector and to flag `r` — so
//! [`Slot::set`] is two stores: no target check, no type lookup, no capacity check, and
//! no read: a flag per byte rather than a bit per row, because a bit set is a
//! read-modify-write of a word that the next row's slot modifies again, and that chain
//! through memory (store-to-load forwarding, about 5 cycles a row) measured as slow as
//! the rest of the loop together. Rows the loop does not write keep their flag clear.
//!
//! When the system next touches that type's buffer (any other write of the type, or the
//! end of the system), the buffer [*settles*](PendingColumn::settle) its pending columns:
//! the written values are moved to the front of the vector (nothing moves when every row
//! was written: the vector then *is* a whole output column, which Sync can swap in), and
//! the set flags become row runs.
//!
//! # Why the raw pointers are sound
//!
//! * **Bounds.** A pending column is made for a table of `rows` rows with capacity for at
//!   least `rows` values and exactly `rows` flags; the query engine asks for
//!   rows `< rows` only (it walks the table's own entity list), so every slot points
//!   inside both allocations.
//! * **One writer per row.** A query iteration hands out each row of a table at most once,
//!   and every query makes new pending columns; so no two live slots share a value or a
//!   flag. A slot is neither `Send` nor `Sync` (raw pointer fields): slots are used on the
//!   thread that ran the query.
//! * **Liveness.** The vectors' heap buffers never move or shrink while a slot may live:
//!   a slot borrows the system's [`Output`](super::Output) (lifetime `'o`), and the only
//!   code that reads, moves or frees a pending column's values — [`PendingColumn::settle`]
//!   and [`Drop`] — is reached through a `&mut` to the output buffer, which exists only
//!   after every slot is gone (the next `Output` call, the end of the system, or Sync).
//!   Moving a `Vec` (the pending list growing, the buffer's box changing hands) does not
//!   move its heap buffer.
//! * **Initialisation.** A value is initialised exactly when its flag is set:
//!   [`Slot::set`] clears the flag before dropping an earlier value and sets it only after
//!   writing the new one, so a panicking `Drop` leaves the row absent, never dropped twice.
//!   `settle` and `Drop` read or drop only rows whose flag is set.
//!
//! Miri runs the tests below under Tree Borrows with strict provenance (`.ci/run`).

use std::marker::PhantomData;
use std::ptr;

/// One table's output slots for one type: rows `0..rows` of column `col`.
pub(crate) struct PendingColumn<O> {
    col: u32,
    rows: u32,
    /// Length 0, capacity `>= rows`; element `r` is initialised iff flag `r` is set.
    values: Vec<O>,
    /// One flag per row: 1 when written, 0 when not; length `rows`.
    present: Vec<u8>,
}

/// A pending column's values after [`PendingColumn::settle`].
pub(crate) struct Settled<O> {
    /// The written values, in row order.
    pub(crate) values: Vec<O>,
    /// The presence flags (handed back for reuse).
    pub(crate) present: Vec<u8>,
}

impl<O> PendingColumn<O> {
    /// Slots for `rows` rows of column `col`, in `values` and `present` (spare vectors:
    /// cleared here, grown if needed).
    pub(crate) fn new(col: u32, rows: usize, mut values: Vec<O>, mut present: Vec<u8>) -> Self {
        values.clear();
        values.reserve(rows);
        present.clear();
        present.resize(rows, 0);
        PendingColumn {
            col,
            rows: u32::try_from(rows).expect("a table of at most u32::MAX rows"),
            values,
            present,
        }
    }

    /// The output column the slots write to.
    pub(crate) fn col(&self) -> u32 {
        self.col
    }

    /// The rows of the table.
    pub(crate) fn rows(&self) -> usize {
        self.rows as usize
    }

    /// Where the slots of this column write: the first value and the first flag. The pointers stay valid until the column is settled or dropped.
    pub(crate) fn base(&mut self) -> SlotBase<O> {
        SlotBase {
            values: self.values.as_mut_ptr(),
            present: self.present.as_mut_ptr(),
            #[cfg(debug_assertions)]
            rows: self.rows as usize,
        }
    }

    /// Moves the written values to the front of the vector, in row order, and hands the
    /// vectors back; `run(row, len)` is called for each maximal stretch of written rows,
    /// in row order.
    pub(crate) fn settle(mut self, mut run: impl FnMut(u32, u32)) -> Settled<O> {
        let rows = self.rows as usize;
        let full = all_set(&self.present);
        let mut values = std::mem::take(&mut self.values);
        let present = std::mem::take(&mut self.present);
        // `self` now owns empty vectors: its `Drop` drops nothing.
        if full {
            // SAFETY: every flag of rows `0..rows` is set, so elements `0..rows` are
            // initialised (module docs), and `rows <= capacity`.
            unsafe { values.set_len(rows) };
            if rows > 0 {
                run(0, rows as u32);
            }
        } else {
            let base = values.as_mut_ptr();
            let mut kept = 0usize;
            for_each_stretch(&present, |from, len| {
                // SAFETY: rows `from..from + len` are set, hence initialised, and inside
                // the capacity; `kept <= from` (the stretches come in row order and
                // `kept` counts the set rows before `from`), so the destination is inside
                // the capacity too, and `ptr::copy` allows the overlap. Each value moves
                // once, to a lower or equal index; a stretch's old place is never read
                // again.
                unsafe { ptr::copy(base.add(from), base.add(kept), len) };
                kept += len;
            });
            // SAFETY: the first `kept` elements now hold the moved values, in row order.
            unsafe { values.set_len(kept) };
            for_each_stretch(&present, |from, len| run(from as u32, len as u32));
        }
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
        for_each_stretch(&self.present, |from, len| {
            // SAFETY: rows `from..from + len` are set, so initialised (module docs), and
            // the vector's length is 0, so it will not drop them again. Their flags are
            // left set, but the vector is never read after this.
            unsafe { ptr::drop_in_place(ptr::slice_from_raw_parts_mut(base.add(from), len)) };
        });
    }
}

/// Whether every flag is set. Flags are 0 or 1, so a block's flags are all set when
/// their AND is 1: the blocks' loop compiles to vector ANDs (`contains(&0)`, a `memchr`
/// a word at a time, took ten times the instructions: 1 µs of a 10k-row frame). The
/// rest (under 256 flags: all of a small table's) goes eight flags to a word, then one
/// at a time; a byte loop there was ~130 instructions for a 20-row table.
fn all_set(present: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    let mut blocks = present.chunks_exact(256);
    if !blocks
        .by_ref()
        .all(|b| b.iter().fold(1, |all, &p| all & p) == 1)
    {
        return false;
    }
    let mut words = blocks.remainder().chunks_exact(8);
    let word = |w: &[u8]| u64::from_ne_bytes(w.try_into().expect("chunks of 8"));
    words.by_ref().fold(ONES, |all, w| all & word(w)) == ONES
        && words.remainder().iter().fold(1, |all, &p| all & p) == 1
}

/// `f(from, len)` for each maximal stretch of set flags, in row order.
fn for_each_stretch(present: &[u8], mut f: impl FnMut(usize, usize)) {
    let rows = present.len();
    let mut at = 0;
    while let Some(from) = present[at..].iter().position(|&p| p != 0).map(|i| at + i) {
        let len = present[from..]
            .iter()
            .position(|&p| p == 0)
            .unwrap_or(rows - from);
        f(from, len);
        at = from + len;
    }
}

/// The start of a pending column, which a query element turns into row slots.
pub struct SlotBase<O> {
    values: *mut O,
    present: *mut u8,
    #[cfg(debug_assertions)]
    rows: usize,
}

// SAFETY: a `SlotBase` is an address, not an access: slots made from it write only rows
// handed out by the query engine, each row once (the contract of `slot`), so copies on
// several threads (the chunks of `Output::par_for_each`) write disjoint elements and
// disjoint flag bytes; the pool's join orders those writes before the column settles.
unsafe impl<O: Send> Send for SlotBase<O> {}
// SAFETY: as for `Send`: sharing the address shares no access.
unsafe impl<O: Send> Sync for SlotBase<O> {}

impl<O> Clone for SlotBase<O> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<O> Copy for SlotBase<O> {}

impl<O> SlotBase<O> {
    /// No column (before the first table): never asked for a row.
    pub(crate) fn none() -> Self {
        SlotBase {
            values: ptr::null_mut(),
            present: ptr::null_mut(),
            #[cfg(debug_assertions)]
            rows: 0,
        }
    }

    /// The slot of row `row`. The caller (the query engine) asks for rows of the table
    /// only, each at most once (module docs); pointer arithmetic here is wrapping, so a
    /// wrong row is caught (in debug builds) rather than computed.
    #[inline(always)]
    pub(crate) fn slot<'o>(self, row: usize) -> Slot<'o, O> {
        #[cfg(debug_assertions)]
        assert!(
            row < self.rows,
            "slot of row {row} in a table of {} rows",
            self.rows
        );
        Slot {
            value: self.values.wrapping_add(row),
            present: self.present.wrapping_add(row),
            _out: PhantomData,
        }
    }
}

/// The output slot of one row for one component type: what a [`Write<C>`](crate::Write)
/// element of [`Output::query`](super::Output::query) yields. [`set`](Self::set) gives
/// the row's entity its `C` output for this frame (merged in Sync like any write); a row
/// whose slot is never set gets no output.
///
/// A slot borrows the system's `Output` and stays on its thread (it is neither `Send`
/// nor `Sync`).
pub struct Slot<'o, O> {
    value: *mut O,
    present: *mut u8,
    _out: PhantomData<&'o mut O>,
}

impl<O> Slot<'_, O> {
    /// Emits `value` for this row (replacing what this slot was set to before, if
    /// anything).
    ///
    /// Cost: two stores (the value and a flag) — no target check, no type lookup; one
    /// load more for an output type with drop glue.
    #[inline(always)]
    pub fn set(&mut self, value: O) {
        // SAFETY: `value` and `present` point into the pending column of this row's table
        // (in bounds, alive while this slot lives, used by no other slot: module docs).
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

    /// Whether this slot has been [`set`](Self::set).
    #[inline]
    pub fn is_set(&self) -> bool {
        // SAFETY: `present` is in bounds and alive (see `set`); reading it races with no
        // one.
        unsafe { *self.present != 0 }
    }
}

impl<O> std::fmt::Debug for Slot<'_, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot").field("set", &self.is_set()).finish()
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

    /// `all_set` (blocks of 256 flags, then words of 8, then the rest) against a plain
    /// walk, with one clear flag anywhere: in the blocks, the words or the rest.
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
        PendingColumn::new(7, rows, Vec::new(), Vec::new())
    }

    #[test]
    fn every_row_set_is_a_whole_column() {
        let mut p = column::<u32>(130);
        let base = p.base();
        for r in 0..130 {
            base.slot(r).set(r as u32 * 3);
        }
        let mut runs = Vec::new();
        assert_eq!(p.col(), 7);
        let s = p.settle(|r, n| runs.push((r, n)));
        assert_eq!(runs, vec![(0, 130)]);
        assert_eq!(s.values, (0..130).map(|r| r * 3).collect::<Vec<u32>>());
    }

    #[test]
    fn some_rows_compact_in_row_order() {
        let mut p = column::<String>(100);
        let base = p.base();
        // Set out of order, and one row twice (the first value is dropped).
        for r in [70usize, 3, 4, 5, 64, 63, 99, 4] {
            base.slot(r).set(format!("v{r}"));
        }
        let mut s4 = base.slot(4);
        assert!(s4.is_set());
        s4.set("again".to_string());
        let mut runs = Vec::new();
        let s = p.settle(|r, n| runs.push((r, n)));
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
                base.slot(r).set(token.clone());
            }
            base.slot(1).set(token.clone()); // replaces (drops) the first
            assert_eq!(Rc::strong_count(&token), 4);
        }
        assert_eq!(Rc::strong_count(&token), 1, "every set value dropped once");
    }

    #[test]
    fn nothing_set_settles_empty_and_reuses_vectors() {
        let p = column::<u64>(10);
        let s = p.settle(|_, _| panic!("no stretch"));
        assert!(s.values.is_empty());
        let cap = s.values.capacity();
        let again = PendingColumn::new(1, 5, s.values, s.present);
        assert_eq!(again.values.capacity(), cap);
        assert_eq!(again.present, vec![0; 5]);
        let empty = column::<u8>(0);
        assert!(empty.settle(|_, _| panic!("no rows")).values.is_empty());
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
        base.slot(1).set(Bomb(token.clone(), true));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            base.slot(1).set(Bomb(token.clone(), false));
        }));
        assert!(r.is_err());
        assert!(!base.slot(1).is_set(), "the row is absent after the panic");
        drop(p);
        assert_eq!(
            Rc::strong_count(&token),
            1,
            "both values dropped, once each"
        );
    }
}
