//! Per-type columns: one `Vec<C>` per table that holds `C`.

use std::any::{Any, type_name};

use crate::component::Component;

/// Everything the storage keeps for one component type `C`: its columns, plus the value in
/// flight during a structural change. It knows nothing of merges or outputs.
pub(crate) struct TypedColumns<C: Component> {
    /// Column `k` belongs to the `k`-th table (in creation order) that holds `C`.
    pub(crate) columns: Vec<Vec<C>>,
    /// A value on its way into a column (insert or spawn), set by `stage`.
    staged: Option<C>,
    /// Values removed by structural changes, dropped by `flush_graveyard` once the
    /// change is complete, so a panicking `Drop` never leaves a table half-moved.
    graveyard: Vec<C>,
}

impl<C: Component> Default for TypedColumns<C> {
    fn default() -> Self {
        TypedColumns {
            columns: Vec::new(),
            staged: None,
            graveyard: Vec::new(),
        }
    }
}

impl<C: Component> TypedColumns<C> {
    /// Stages a value for the next `push_staged` / `replace_staged`.
    #[inline]
    pub(crate) fn stage(&mut self, value: C) {
        debug_assert!(self.staged.is_none(), "a value is already staged");
        self.staged = Some(value);
    }

    /// Takes the most recently removed value back out of the graveyard.
    pub(crate) fn take_removed(&mut self) -> Option<C> {
        self.graveyard.pop()
    }

    #[inline]
    fn take_staged(&mut self) -> C {
        match self.staged.take() {
            Some(v) => v,
            None => unreachable!("no value staged for `{}`", type_name::<C>()),
        }
    }
}

/// The type-erased face of [`TypedColumns`], used by table moves.
pub(crate) trait AnyColumns: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Adds an empty column (for a new table) and returns its index.
    fn add_column(&mut self) -> u32;
    /// Swap-removes row `row` of column `col` into the graveyard.
    fn remove_row(&mut self, col: u32, row: u32);
    /// Moves each of `rows` of column `src` to the end of column `dst` (swap-remove), in
    /// order: one batch of entity moves from one table to another.
    fn move_rows(&mut self, src: u32, rows: &[u32], dst: u32);
    /// [`remove_row`](Self::remove_row) for each of `rows`, in order.
    fn remove_rows(&mut self, col: u32, rows: &[u32]);
    /// Pushes the staged value onto column `col`.
    fn push_staged(&mut self, col: u32);
    /// Replaces row `row` of column `col` with the staged value (old one to the graveyard).
    fn replace_staged(&mut self, col: u32, row: u32);
    /// Sends the staged value to the graveyard (its target was dead).
    fn discard_staged(&mut self);
    /// Drops everything in the graveyard.
    fn flush_graveyard(&mut self);
    /// Bytes reserved by the columns and the graveyard.
    fn capacity_bytes(&self) -> usize;
}

impl<C: Component> AnyColumns for TypedColumns<C> {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn add_column(&mut self) -> u32 {
        self.columns.push(Vec::new());
        self.columns.len() as u32 - 1
    }

    fn remove_row(&mut self, col: u32, row: u32) {
        let v = self.columns[col as usize].swap_remove(row as usize);
        self.graveyard.push(v);
    }

    fn move_rows(&mut self, src: u32, rows: &[u32], dst: u32) {
        let (src, dst) = (src as usize, dst as usize);
        assert_ne!(src, dst, "moving rows within one column");
        // Two distinct columns borrowed at once.
        let (a, b) = if src < dst {
            let (lo, hi) = self.columns.split_at_mut(dst);
            (&mut lo[src], &mut hi[0])
        } else {
            let (lo, hi) = self.columns.split_at_mut(src);
            (&mut hi[0], &mut lo[dst])
        };
        b.reserve(rows.len());
        for &row in rows {
            b.push(a.swap_remove(row as usize));
        }
    }

    fn remove_rows(&mut self, col: u32, rows: &[u32]) {
        let column = &mut self.columns[col as usize];
        self.graveyard.reserve(rows.len());
        for &row in rows {
            self.graveyard.push(column.swap_remove(row as usize));
        }
    }

    fn push_staged(&mut self, col: u32) {
        let v = self.take_staged();
        self.columns[col as usize].push(v);
    }

    fn replace_staged(&mut self, col: u32, row: u32) {
        let v = self.take_staged();
        let old = std::mem::replace(&mut self.columns[col as usize][row as usize], v);
        self.graveyard.push(old);
    }

    fn discard_staged(&mut self) {
        let v = self.take_staged();
        self.graveyard.push(v);
    }

    fn flush_graveyard(&mut self) {
        self.graveyard.clear();
    }

    fn capacity_bytes(&self) -> usize {
        let size = std::mem::size_of::<C>();
        self.columns
            .iter()
            .map(|c| c.capacity() * size)
            .sum::<usize>()
            + self.graveyard.capacity() * size
    }
}
