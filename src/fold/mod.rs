//! Folds: one typed object per component type that merges a frame's outputs into the
//! type's columns.
//!
//! [`World::register`](crate::World::register) creates a [`Fold<C, M>`] that owns the
//! user's merge `M` unboxed, the typed inbox of this frame's sources (one [`OutBuf`] per
//! system that wrote `C`, in system order) and the scratch the merge paths reuse. It is
//! type-erased once, as a [`AnyFold`]; Sync makes one dynamic call per type per frame and
//! one downcast per (system, type) when a buffer arrives. Inside, everything is
//! monomorphised: the merge is inlined into the loops of [`paths`].
//!
//! Which path a type takes is decided per frame from the *type* of the merge
//! ([`Merge::ONE_AT_A_TIME`], [`Merge::replace_column`]) and the shape of the sources; see
//! [`paths`] for the list.

mod bucket;
mod keyed;
mod move_out;
mod part;
mod paths;
mod sweep;

use std::any::Any;

use crate::component::Component;
use crate::erased::Erased;
use crate::merge::Merge;
use crate::output::buffer::OutBuf;
use crate::pool::Pool;
use crate::storage::{AnyColumns, DebugFn, Show, TypeMarks};

pub(crate) use part::{FailedAt, FoldCounts};
pub(crate) use paths::FoldScratch;

/// The fold of component type `C` with merge `M`.
pub(crate) struct Fold<C: Component, M: Merge<C>> {
    merge: M,
    /// The type's columns, borrowed from the storage during Sync's fold step.
    columns: Vec<Vec<C>>,
    /// The columns' change marks, borrowed with them: the fold marks every row it merges.
    marks: TypeMarks,
    /// This frame's sources, `(system index, buffer)`, in system order.
    inbox: Vec<(u32, Box<OutBuf<C>>)>,
    scratch: FoldScratch<C::Output>,
    /// The merge's profiling zone location, made once (nothing without `tracy`).
    zone: crate::profile::ZoneSite,
    /// The `Debug` formatter of `C::Output`, for write provenance; set by
    /// [`World::debugging`](crate::World::debugging).
    show_output: Option<DebugFn<C::Output>>,
    /// Where the last fold's merge panicked, if it did.
    failed: Option<FailedAt>,
}

impl<C: Component, M: Merge<C>> Fold<C, M> {
    /// The fold of a type registered with `merge`. Its profiling zone points at the
    /// caller: through `#[track_caller]` on `World::register` and the functions that
    /// call it, the user's `register` call.
    #[track_caller]
    pub(crate) fn new(merge: M) -> Self {
        Fold {
            merge,
            columns: Vec::new(),
            marks: TypeMarks::default(),
            inbox: Vec::new(),
            scratch: FoldScratch::default(),
            zone: crate::profile::ZoneSite::at(std::panic::Location::caller()),
            show_output: None,
            failed: None,
        }
    }
}

/// The type-erased face of a [`Fold`], as Sync sees it.
pub(crate) trait AnyFold: Send + Sync {
    /// Takes system `system`'s buffer for this type (systems arrive in order).
    fn accept(&mut self, system: u32, buffer: Erased);
    /// Whether any buffer arrived this frame.
    fn has_sources(&self) -> bool;
    /// Swaps the type's columns (and their change marks) between `storage` and this fold:
    /// Sync lends them for the fold step, then takes them back.
    fn swap_columns(&mut self, storage: &mut dyn AnyColumns);
    /// Folds the inbox into the lent columns. Large types fold in parallel parts on
    /// `pool`. If the merge panics, the panic goes on; [`failed_at`](Self::failed_at)
    /// then says where. With `tracing`, in a span `fold` under `parent` (Sync's
    /// `fold_all`, whichever thread folds).
    fn fold(&mut self, pool: &Pool, parent: &crate::profile::Parent) -> FoldCounts;
    /// Where the last [`fold`](Self::fold)'s merge panicked (`None` if it did not).
    fn failed_at(&self) -> Option<FailedAt>;
    /// Hands every buffer back, emptied (capacity kept), with its system index.
    fn give_back(&mut self, back: &mut dyn FnMut(u32, Erased));
    /// Bytes of scratch kept across frames.
    fn capacity_bytes(&self) -> usize;
    /// Sets the `Debug` formatter of the outputs, for provenance: `show` is a
    /// `DebugFn<C::Output>`.
    fn set_show_output(&mut self, show: &dyn Any);
    /// Provenance: this frame's writes to row `row` of column `col`, in merge order
    /// (system order, then emission order), pushed to `out` as `(system index, value)`
    /// (the value as `Debug` text if opted in). Called between gather and fold, when the
    /// inbox is as Run left it (the keyed path sorts it later).
    fn writes_to(&self, col: u32, row: u32, out: &mut Vec<(u32, Option<String>)>);
}

impl<C: Component, M: Merge<C>> AnyFold for Fold<C, M> {
    fn accept(&mut self, system: u32, buffer: Erased) {
        let mut typed = buffer.into_typed::<OutBuf<C>>();
        typed.seal();
        self.inbox.push((system, typed));
    }

    fn has_sources(&self) -> bool {
        !self.inbox.is_empty()
    }

    fn swap_columns(&mut self, storage: &mut dyn AnyColumns) {
        storage
            .typed_mut::<C>()
            .swap_with(&mut self.columns, &mut self.marks);
    }

    fn fold(&mut self, pool: &Pool, parent: &crate::profile::Parent) -> FoldCounts {
        let zone = crate::profile::enter!(
            DEBUG, &mut self.zone, std::any::type_name::<C>(), "fold", component,
            parent: parent; merged, dropped
        );
        let counts = paths::fold(
            &self.merge,
            &mut self.columns,
            &mut self.marks,
            &mut self.inbox,
            &mut self.scratch,
            pool,
            &mut self.failed,
        );
        crate::profile::record!(zone.span, merged = counts.merged, dropped = counts.dropped);
        zone.end(format_args!(
            "merged={} dropped={} sources={}",
            counts.merged,
            counts.dropped,
            self.inbox.len()
        ));
        counts
    }

    fn failed_at(&self) -> Option<FailedAt> {
        self.failed
    }

    fn give_back(&mut self, back: &mut dyn FnMut(u32, Erased)) {
        // Most types get no outputs in a frame: an empty `drain` still costs its setup
        // and teardown, once per registered type per Sync.
        if self.inbox.is_empty() {
            return;
        }
        for (s, mut b) in self.inbox.drain(..) {
            b.clear_writes();
            back(s, Erased::from_box(b));
        }
    }

    fn capacity_bytes(&self) -> usize {
        self.inbox.capacity() * std::mem::size_of::<(u32, Box<OutBuf<C>>)>()
            + self.scratch.capacity_bytes()
    }

    fn set_show_output(&mut self, show: &dyn Any) {
        let show = show
            .downcast_ref::<DebugFn<C::Output>>()
            .expect("formatter of another type");
        self.show_output = Some(*show);
    }

    fn writes_to(&self, col: u32, row: u32, out: &mut Vec<(u32, Option<String>)>) {
        let show = self.show_output;
        for (system, src) in &self.inbox {
            for (r, values) in src.runs_with_values() {
                if r.col != col || row < r.row || row - r.row >= values.len() as u32 {
                    continue;
                }
                let v = &values[(row - r.row) as usize];
                out.push((*system, show.map(|f| Show(v, f).to_string())));
            }
        }
    }
}
