//! Per-type storage: one `Vec<C>` column per table that holds `C`.

use std::any::{Any, type_name};

use crate::component::{Component, MergeFn, SortedMergeFn};
use crate::output::{AnyBuffer, OutputBuffer};
use crate::sync::{MergeCounts, MergeCtx, MergeScratch};

/// Everything the world keeps for one component type `C`.
pub(crate) struct TypedStorage<C: Component> {
    /// Column `k` belongs to the `k`-th table (in creation order) that holds `C`.
    pub(crate) columns: Vec<Vec<C>>,
    /// The merge registered for `C`.
    pub(crate) merge: MergeFn<C>,
    /// The same merge, looped over a sorted run of writes with the closure inlined.
    pub(crate) merge_sorted: SortedMergeFn<C>,
    /// Whether that merge is [`merge::last`](crate::merge::last) (and `C::Output` is `C`):
    /// then a single writer's whole-column outputs may replace a column outright.
    pub(crate) last_wins: bool,
    /// A value on its way into a column (insert or spawn), set by `stage*`.
    staged: Option<C>,
    /// Values removed by structural changes, dropped by `flush_graveyard` once the
    /// change is complete, so a panicking `Drop` never leaves a table half-moved.
    graveyard: Vec<C>,
    /// This frame's output buffers for `C`, `(system index, buffer)` in system order.
    pub(crate) inbox: Vec<(u32, Box<dyn AnyBuffer>)>,
    pub(crate) scratch: MergeScratch<C>,
}

impl<C: Component> TypedStorage<C> {
    pub(crate) fn new(merge: MergeFn<C>, merge_sorted: SortedMergeFn<C>, last_wins: bool) -> Self {
        TypedStorage {
            columns: Vec::new(),
            merge,
            merge_sorted,
            last_wins,
            staged: None,
            graveyard: Vec::new(),
            inbox: Vec::new(),
            scratch: MergeScratch::default(),
        }
    }

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

/// The type-erased face of [`TypedStorage`], used by table moves and Sync.
pub(crate) trait AnyStorage: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Adds an empty column (for a new table) and returns its index.
    fn add_column(&mut self) -> u32;
    /// Moves row `row` of column `src` to the end of column `dst` (swap-remove).
    fn move_row(&mut self, src: u32, row: u32, dst: u32);
    /// Swap-removes row `row` of column `col` into the graveyard.
    fn remove_row(&mut self, col: u32, row: u32);
    /// Pushes the staged value onto column `col`.
    fn push_staged(&mut self, col: u32);
    /// Replaces row `row` of column `col` with the staged value (old one to the graveyard).
    fn replace_staged(&mut self, col: u32, row: u32);
    /// Sends the staged value to the graveyard (its target was dead).
    fn discard_staged(&mut self);
    /// Stages the next pending insert value of an output buffer of this type.
    fn stage_from(&mut self, buffer: &mut dyn AnyBuffer);
    /// Drops everything in the graveyard.
    fn flush_graveyard(&mut self);
    /// This frame's output buffers for this type.
    fn inbox(&mut self) -> &mut Vec<(u32, Box<dyn AnyBuffer>)>;
    /// Folds the inbox into the columns (the Sync merge for this type).
    fn merge(&mut self, ctx: &MergeCtx<'_>) -> MergeCounts;
    /// Bytes reserved by the columns.
    fn capacity_bytes(&self) -> usize;
}

impl<C: Component> AnyStorage for TypedStorage<C> {
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

    fn move_row(&mut self, src: u32, row: u32, dst: u32) {
        let v = self.columns[src as usize].swap_remove(row as usize);
        self.columns[dst as usize].push(v);
    }

    fn remove_row(&mut self, col: u32, row: u32) {
        let v = self.columns[col as usize].swap_remove(row as usize);
        self.graveyard.push(v);
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

    fn stage_from(&mut self, buffer: &mut dyn AnyBuffer) {
        let buffer = buffer
            .as_any_mut()
            .downcast_mut::<OutputBuffer<C>>()
            .expect("output buffer of another type");
        let v = buffer
            .inserts
            .pop_front()
            .expect("a structural command without its value");
        self.stage(v);
    }

    fn flush_graveyard(&mut self) {
        self.graveyard.clear();
    }

    fn inbox(&mut self) -> &mut Vec<(u32, Box<dyn AnyBuffer>)> {
        &mut self.inbox
    }

    fn merge(&mut self, ctx: &MergeCtx<'_>) -> MergeCounts {
        crate::sync::merge_type(self, ctx)
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
