//! The Sync phase: fold every output into the world, then apply structural commands.
//!
//! Sync runs four named steps, in order, after [`clear_marks`] forgets the change marks
//! of the previous Sync (what `Changed<C>` / `Added<C>` report is what *this* Sync does):
//!
//! 1. [`gather`] — each system's non-empty buffers go to the [fold](crate::fold) of their
//!    type, in system order (a pointer move and one downcast per (system, type)).
//!    Then, only if an entity is watched, [`Watches::record_writes`] notes its writes and
//!    values in merge order (write [provenance](crate::Provenance)); after the fold,
//!    [`Watches::record_after`] notes the merged values.
//! 2. [`fold_all`] — one job per component type on the pool: the type's fold merges its
//!    sources into its columns (large types split further by row range). Types are
//!    independent, so they fold in parallel with plain `&mut` splitting.
//!    Then [`fold_resources`]: each resource registered with a merge folds its systems'
//!    outputs, in system order, with one merge call.
//! 3. [`return_buffers`] — every buffer goes back to its system, emptied, capacity kept.
//! 4. [`commands::apply`] — structural commands, in system registration order then
//!    emission order: despawn, remove, insert (replacing), spawn, one by one, firing the
//!    [hooks](crate::World::on_add) of hooked types as they go; then the commands hooks
//!    emitted, round by round. Values removed or replaced go to per-type graveyards,
//!    dropped once every move is complete.
//!
//! Writes were resolved to `(column, row)` in Run, and no table changes between Run and
//! step 2, so no step looks a target up again. Nothing depends on thread timing.

mod commands;
#[cfg(test)]
mod tests;

pub(crate) use commands::{Scratch as CommandScratch, settle};

use std::sync::atomic::{AtomicU64, Ordering};

use crate::component::ComponentId;
use crate::fold::FailedAt;
use crate::pool::Pool;
use crate::provenance::Watches;
use crate::stats::MergeTarget;
use crate::system::SystemSlot;
use crate::world::World;

/// What Sync keeps across frames (capacity only).
#[derive(Default)]
pub(crate) struct SyncScratch {
    commands: commands::Scratch,
}

/// What one Sync did.
#[derive(Default, Debug)]
pub(crate) struct SyncReport {
    pub(crate) merged: u64,
    pub(crate) dropped: u64,
    pub(crate) spawned: u64,
    pub(crate) despawned: u64,
    /// The first component type (by id), else the first resource, whose merge panicked:
    /// its name, what it was merging into, the message.
    pub(crate) merge_panic: Option<(&'static str, MergeTarget, String)>,
    /// A component's `Drop` panicked while removed values were released.
    pub(crate) drop_panic: Option<String>,
    /// The first hook that panicked: component type, hook kind, message.
    pub(crate) hook_panic: Option<crate::hooks::HookPanic>,
    /// Hook commands dropped after `MAX_HOOK_ROUNDS` rounds (hooks that keep firing).
    pub(crate) hook_cascade: Option<usize>,
}

/// Runs the whole Sync phase for the systems that ran this frame.
pub(crate) fn sync(
    world: &mut World,
    systems: &mut [SystemSlot],
    pool: &Pool,
    scratch: &mut SyncScratch,
    watches: &mut Watches,
) -> SyncReport {
    let mut report = SyncReport::default();
    clear_marks(world);
    {
        let _zone = crate::profile::zone!("gather");
        gather(world, systems);
    }
    if !watches.is_empty() {
        watches.record_writes(world, systems);
    }
    {
        let _zone = crate::profile::zone!("fold_all");
        fold_all(world, pool, &mut report);
    }
    if !watches.is_empty() {
        watches.record_after(world);
    }
    {
        let _zone = crate::profile::zone!("fold_resources");
        fold_resources(world, systems, &mut report);
    }
    {
        let _zone = crate::profile::zone!("return_buffers");
        return_buffers(world, systems);
    }
    {
        let _zone = crate::profile::zone!("commands");
        commands::apply(world, systems, &mut scratch.commands, &mut report);
    }
    report
}

/// Step 0: unmarks every row marked changed or added by the previous Sync (or between
/// frames). Cost: O(types), plus O(columns) for each type that had a mark.
fn clear_marks(world: &mut World) {
    world.storage.clear_marks();
}

/// Step 1: moves each system's non-empty buffers to the fold of their type.
fn gather(world: &mut World, systems: &mut [SystemSlot]) {
    for (s, slot) in systems.iter_mut().enumerate() {
        if !slot.ran {
            continue;
        }
        let out = &mut slot.out;
        for &id in &out.used {
            let b = &mut out.buffers[id as usize];
            if b.as_ref().is_some_and(|b| b.as_dyn_ref().writes() > 0) {
                let b = b.take().expect("checked above");
                world.folds[id as usize].accept(s as u32, b);
            }
        }
    }
}

/// Step 2: every type with sources folds them into its columns, one job per type.
///
/// Each fold borrows its type's columns for the step (a swap of one `Vec` header with the
/// storage, there and back), so the jobs own disjoint data and need no unsafe code.
fn fold_all(world: &mut World, pool: &Pool, report: &mut SyncReport) {
    let World { storage, folds, .. } = world;
    for (id, fold) in folds.iter_mut().enumerate() {
        if fold.has_sources() {
            fold.swap_columns(storage.columns_of(ComponentId(id as u32)));
        }
    }
    let merged = AtomicU64::new(0);
    let dropped = AtomicU64::new(0);
    let result = pool.for_each_mut(folds, &|_, fold| {
        if fold.has_sources() {
            let c = fold.fold(pool);
            merged.fetch_add(c.merged, Ordering::Relaxed);
            dropped.fetch_add(c.dropped, Ordering::Relaxed);
        }
    });
    for (id, fold) in folds.iter_mut().enumerate() {
        if fold.has_sources() {
            fold.swap_columns(storage.columns_of(ComponentId(id as u32)));
        }
    }
    report.merged = merged.into_inner();
    report.dropped = dropped.into_inner();
    if let Err(p) = result {
        let id = ComponentId(p.index as u32);
        // Where the merge was, as an entity (the columns are back in the storage, and no
        // table changed since Run).
        let target = match folds[p.index].failed_at() {
            Some(FailedAt::Row { col, row }) => {
                storage.entity_at(id, col, row).map(MergeTarget::Entity)
            }
            Some(FailedAt::Column(col)) => storage
                .entity_at(id, col, 0)
                .map(|first| MergeTarget::Column { first }),
            None => None,
        };
        let target = target.expect("a merge that panicked was merging into a stored value");
        report.merge_panic = Some((storage.type_name(id), target, p.message()));
    }
}

/// Step 2b: every written resource folds its systems' outputs (in system order) with one
/// merge call. Resources are few and small: one thread.
fn fold_resources(world: &mut World, systems: &mut [SystemSlot], report: &mut SyncReport) {
    let World {
        resources,
        resource_folds,
        ..
    } = world;
    for (i, fold) in resource_folds.iter_mut().enumerate() {
        let mut sources = systems
            .iter_mut()
            .filter(|s| s.ran)
            .filter_map(|s| s.out.resources.get_mut(i)?.as_deref_mut());
        let c = fold.fold(resources, &mut sources);
        report.merged += c.merged;
        report.dropped += c.dropped;
        if report.merge_panic.is_none() {
            report.merge_panic = c
                .panic
                .map(|(name, msg)| (name, MergeTarget::Resource, msg));
        }
    }
}

/// Step 3: hands every buffer back to its system, emptied.
fn return_buffers(world: &mut World, systems: &mut [SystemSlot]) {
    for (id, fold) in world.folds.iter_mut().enumerate() {
        fold.give_back(&mut |s, b| systems[s as usize].out.buffers[id] = Some(b));
    }
}

/// Discards everything the systems emitted this frame (after a failed Run).
pub(crate) fn discard(systems: &mut [SystemSlot]) {
    for slot in systems {
        slot.out.clear();
    }
}
