//! The Sync phase: fold every output of a stage into the world, then apply structural
//! commands. A frame has one Sync per [stage](crate::Runtime::add_stage), after that
//! stage's Run, over that stage's systems only.
//!
//! Sync runs seven named steps, in order, each a function of this module (and a Tracy zone,
//! a `tracing` span at `DEBUG` and, in a traced frame, a trace file's event of the same
//! name, but for the first):
//!
//! 0. [`begin_marks`] — forgets the change marks this stage's previous Sync made: with
//!    one stage, every mark (what `Changed<C>` / `Added<C>` report is what the last Sync
//!    did); with `S` stages, that stage's layer of marks, so that the marks readers see
//!    are what the last `S` Syncs did — everything since any system last ran (see
//!    `storage::marks`).
//! 1. [`gather`] — each system's non-empty buffers go to the [fold](crate::fold) of their
//!    type, in system order (a pointer move and one downcast per (system, type)).
//!    Then, only if an entity is watched, [`Watches::record_writes`] notes its writes and
//!    values in merge order (write [provenance](crate::Provenance)); after the fold,
//!    [`Watches::record_after`] notes the merged values.
//! 2. [`fold_all`] — one job per component type on the pool: the type's fold merges its
//!    sources into its columns (large types split further by row range). Types are
//!    independent, so they fold in parallel with plain `&mut` splitting.
//! 3. [`fold_resources`] — each resource registered with a merge folds its systems'
//!    outputs, in system order, with one merge call.
//! 4. [`return_buffers`] — every buffer goes back to its system, emptied, capacity kept.
//! 5. [`apply_commands`] — structural commands, in system registration order then
//!    emission order: despawn, remove, insert (replacing), spawn, one by one, firing the
//!    [hooks](crate::World::on_add) of hooked types as they go; then the commands hooks
//!    emitted, round by round (the [`commands`](crate::commands) module, shared with the
//!    world's between-frames methods). Values removed or replaced go to per-type
//!    graveyards, dropped once every move is complete.
//! 6. [`deliver_messages`] — for every registered message type, the messages the next
//!    Runs read: those this stage's previous Sync delivered are dropped (with one stage,
//!    all of them), then every system's sent messages move in behind the others', in
//!    system registration order then emission order (see the `message` module);
//!    addressed messages to entities dead by now are dropped and counted. So a reader in
//!    any stage sees each message once: what the last `S` Syncs delivered.
//!
//! A stage with no enabled system has no Run and no Sync, but takes its turn:
//! [`sync_nothing`] forgets its marks and messages as steps 0 and 6 would.
//!
//! Writes were resolved to `(column, row)` in Run, and no table changes between Run and
//! step 2, so no step looks a target up again. Nothing depends on thread timing.

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicU64, Ordering};

use crate::commands::{CommandReport, CommandScratch, apply_list};
use crate::component::ComponentId;
use crate::fold::FailedAt;
use crate::pool::Pool;
use crate::provenance::Watches;
use crate::stats::{FrameError, MergeTarget, SyncFigures};
use crate::system::{StageId, SystemEntry};
use crate::trace::Timeline;
use crate::world::{SyncParts, World};

/// What Sync keeps across frames (capacity only).
#[derive(Default)]
pub(crate) struct SyncScratch {
    commands: CommandScratch,
}

/// What one Sync did.
#[derive(Default, Debug)]
pub(crate) struct SyncReport {
    pub(crate) merged: u64,
    /// Outputs dropped by the folds (commands that had nothing to act on are counted in
    /// `commands`).
    pub(crate) dropped: u64,
    /// What applying structural commands did.
    pub(crate) commands: CommandReport,
    /// The first component type (by id), else the first resource, whose merge panicked:
    /// its name, what it was merging into, the message.
    pub(crate) merge_panic: Option<(&'static str, MergeTarget, String)>,
    /// A component's `Drop` panicked while removed values were released.
    pub(crate) drop_panic: Option<String>,
    /// The first hook that panicked: component type, hook kind, message.
    pub(crate) hook_panic: Option<crate::hooks::HookPanic>,
    /// Messages delivered (readable in the next Run).
    pub(crate) messages: u64,
}

impl SyncReport {
    /// The report as the runtime takes it: the stage's figures (for `FrameStats`), and
    /// `Ok` or the frame's error for stage `stage` — the first of a merge that panicked,
    /// a hook that panicked, hooks that kept emitting commands, a `Drop` that panicked.
    pub(crate) fn into_result(self, stage: StageId) -> (SyncFigures, Result<(), FrameError>) {
        let figures = SyncFigures {
            merged: self.merged,
            dropped: self.dropped + self.commands.dropped,
            spawned: self.commands.spawned,
            despawned: self.commands.despawned,
            messages: self.messages,
            cycles: self.commands.cycles,
            first_cycle: self.commands.first_cycle,
        };
        let result = if let Some((component, target, message)) = self.merge_panic {
            Err(FrameError::MergePanicked {
                component,
                target,
                message,
                stage,
            })
        } else if let Some((component, hook, message)) = self.hook_panic {
            Err(FrameError::HookPanicked {
                component,
                hook,
                message,
                stage,
            })
        } else if let Some(dropped) = self.commands.hook_cascade {
            Err(FrameError::HookCascade { dropped, stage })
        } else if let Some(message) = self.drop_panic {
            Err(FrameError::DropPanicked { message, stage })
        } else {
            Ok(())
        };
        (figures, result)
    }
}

/// Which stage a Sync is for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StageSync {
    /// The stage.
    pub(crate) stage: StageId,
    /// Where its systems sit among the runtime's (their place numbers their reserved
    /// spawn ids; see `Entities::reserve_for_stage`).
    pub(crate) base: usize,
    /// Whether it is the frame's first stage to sync: its Sync forgets the previous
    /// frame's provenance records.
    pub(crate) first: bool,
    /// How many stages a frame has (marks and messages are kept per stage).
    pub(crate) stages: usize,
}

/// Runs the whole Sync phase for the systems of one stage (`systems`), those that ran;
/// each step's event goes to `timeline`.
pub(crate) fn sync<T: Timeline>(
    world: &mut World,
    systems: &mut [SystemEntry],
    at: StageSync,
    pool: &Pool,
    scratch: &mut SyncScratch,
    watches: &mut Watches,
    timeline: &mut T,
) -> SyncReport {
    let mut report = SyncReport::default();
    begin_marks(world, at.stage, at.stages);
    {
        let _zone = crate::profile::zone!(DEBUG, "gather");
        let _step = timeline.step("gather");
        gather(world, systems);
    }
    if !watches.is_empty() {
        watches.record_writes(world, systems, at.stage, at.first);
    }
    {
        let _zone = crate::profile::zone!(DEBUG, "fold_all");
        let _step = timeline.step("fold_all");
        fold_all(world, pool, &mut report);
    }
    if !watches.is_empty() {
        watches.record_after(world, at.stage);
    }
    {
        let _zone = crate::profile::zone!(DEBUG, "fold_resources");
        let _step = timeline.step("fold_resources");
        fold_resources(world, systems, &mut report);
    }
    {
        let _zone = crate::profile::zone!(DEBUG, "return_buffers");
        let _step = timeline.step("return_buffers");
        return_buffers(world, systems);
    }
    {
        let _zone = crate::profile::zone!(DEBUG, "commands");
        let _step = timeline.step("commands");
        apply_commands(world, systems, at.base, &mut scratch.commands, &mut report);
    }
    if world.sync_parts().messages.len() > 0 {
        let _zone = crate::profile::zone!(DEBUG, "deliver_messages");
        let _step = timeline.step("deliver_messages");
        deliver_messages(world, systems, at.stage, at.stages, &mut report);
    }
    report
}

/// Step 0: unmarks every row this stage's previous Sync marked changed or added (with one
/// stage: every mark, those made between frames too). Cost: O(types), plus O(columns) for
/// each type that had a mark (times words and stages with several stages).
fn begin_marks(world: &mut World, stage: StageId, stages: usize) {
    world
        .sync_parts()
        .storage
        .begin_marks(stage.index(), stages);
}

/// Step 1: moves each system's non-empty buffers to the fold of their type.
fn gather(world: &mut World, systems: &mut [SystemEntry]) {
    let folds = world.sync_parts().folds;
    for (s, entry) in systems.iter_mut().enumerate() {
        if !entry.ran {
            continue;
        }
        let out = &mut entry.out;
        for &id in &out.used {
            let b = &mut out.buffers[id as usize];
            if b.as_ref().is_some_and(|b| b.len() > 0) {
                let b = b.take().expect("checked above");
                folds[id as usize].accept(s as u32, b);
            }
        }
    }
}

/// Step 2: every type with sources folds them into its columns, one job per type.
///
/// Each fold borrows its type's columns for the step (a swap of one `Vec` header with the
/// storage, there and back), so the jobs own disjoint data and need no unsafe code.
fn fold_all(world: &mut World, pool: &Pool, report: &mut SyncReport) {
    let SyncParts { folds, storage, .. } = world.sync_parts();
    for (id, fold) in folds.iter_mut().enumerate() {
        if fold.has_sources() {
            fold.swap_columns(storage.columns_mut(ComponentId(id as u32)));
        }
    }
    let merged = AtomicU64::new(0);
    let dropped = AtomicU64::new(0);
    // The folds' spans hang from this step's (with `tracing`), on whichever thread.
    let parent = crate::profile::current();
    let result = pool.for_each_mut(folds, &|_, fold| {
        if fold.has_sources() {
            let c = fold.fold(pool, &parent);
            merged.fetch_add(c.merged, Ordering::Relaxed);
            dropped.fetch_add(c.dropped, Ordering::Relaxed);
        }
    });
    for (id, fold) in folds.iter_mut().enumerate() {
        if fold.has_sources() {
            fold.swap_columns(storage.columns_mut(ComponentId(id as u32)));
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

/// Step 3: every written resource folds its systems' outputs (in system order) with one
/// merge call. Resources are few and small: one thread.
fn fold_resources(world: &mut World, systems: &mut [SystemEntry], report: &mut SyncReport) {
    let SyncParts {
        resource_folds,
        resources,
        ..
    } = world.sync_parts();
    for (i, fold) in resource_folds.iter_mut().enumerate() {
        let mut sources = systems
            .iter_mut()
            .filter(|s| s.ran)
            .filter_map(|s| s.out.resources.get_mut(i)?.as_mut());
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

/// Step 4: hands every buffer back to its system, emptied.
fn return_buffers(world: &mut World, systems: &mut [SystemEntry]) {
    for (id, fold) in world.sync_parts().folds.iter_mut().enumerate() {
        fold.give_back(&mut |s, b| systems[s as usize].out.buffers[id] = Some(b));
    }
}

/// Step 5: structural commands — every system's, in registration order, then emission
/// order — then the commands their hooks emit, round by round; values removed or replaced
/// are dropped once every move is complete (see [`World::apply_changes`]).
///
/// A spawn made with `Output::spawn` takes the id reserved for it in Run (see the
/// `entity` module docs): overflow ids get their slots first, and after the systems'
/// commands each system's block drops the ids it used. The stage's systems sit at
/// `base..` among the runtime's: their reservations and overflow lanes are numbered so.
fn apply_commands(
    world: &mut World,
    systems: &mut [SystemEntry],
    base: usize,
    scratch: &mut CommandScratch,
    report: &mut SyncReport,
) {
    let applied = world.apply_changes(scratch, &mut report.commands, |host, scratch, rep| {
        // Overflow ids handed out in Run get their slots before any command allocates.
        // Lanes of other stages' systems spawned nothing.
        host.world.sync_parts().storage.create_overflow(|s| {
            s.checked_sub(base)
                .and_then(|i| systems.get(i))
                .map_or(0, |entry| entry.out.spawned as usize)
        });
        for entry in systems.iter_mut() {
            if entry.ran && !entry.out.commands.is_empty() {
                apply_list(host, &mut entry.out.commands, scratch, rep);
            }
        }
        // Every reserved id handed out is alive now: the reservations drop them (before
        // hook commands, whose spawns take free ids).
        for (s, entry) in systems.iter_mut().enumerate() {
            let spawned = if entry.ran { entry.out.spawned } else { 0 };
            let storage = host.world.sync_parts().storage;
            storage.commit_reserved(base + s, spawned as usize);
            entry.out.spawned = 0;
        }
    });
    report.hook_panic = applied.hook_panic;
    report.drop_panic = applied
        .drop_panic
        .map(|p| crate::pool::payload_message(&*p));
}

/// Step 6: every message type drops what this stage's previous Sync delivered (with one
/// stage: everything) and takes what the systems that ran sent, in system order (a swap
/// or an append per system and type). Addressed messages go to entities alive now, after
/// the commands; the others are dropped and counted. A message's `Drop` that panics
/// (dropping old ones) is reported like a component's, and delivery goes on.
fn deliver_messages(
    world: &mut World,
    systems: &mut [SystemEntry],
    stage: StageId,
    stages: usize,
    report: &mut SyncReport,
) {
    let SyncParts {
        messages, storage, ..
    } = world.sync_parts();
    let alive = |e| storage.locate(e).is_some();
    let k = stage.index();
    let by_stage = (stages > 1).then_some(k as u32);
    for (i, inbox) in messages.inboxes_mut().iter_mut().enumerate() {
        let expire = std::panic::AssertUnwindSafe(|| inbox.expire(k, stages));
        if let Err(p) = std::panic::catch_unwind(expire) {
            report
                .drop_panic
                .get_or_insert_with(|| crate::pool::payload_message(&*p));
        }
        let mut sources = systems
            .iter_mut()
            .filter(|s| s.ran)
            .filter_map(|s| s.out.messages.get_mut(i)?.as_mut());
        let d = inbox.deliver(&mut sources, &alive, by_stage);
        report.messages += d.delivered;
        report.dropped += d.dropped;
    }
}

/// The turn of a stage with no enabled system, so no Run and no Sync: what its Sync would
/// have done with no system — forget the change marks and messages its previous Sync made
/// (with one stage: the last frame's; a message lives until every system has run once
/// after its delivery, read or not). Returns the drop panic, if a message's `Drop`
/// panicked. A stage that never has a system has nothing to forget: adding it changes
/// nothing any system, checksum or save sees.
pub(crate) fn sync_nothing(world: &mut World, stage: StageId, stages: usize) -> Option<String> {
    begin_marks(world, stage, stages);
    let mut report = SyncReport::default();
    if world.sync_parts().messages.len() > 0 {
        deliver_messages(world, &mut [], stage, stages, &mut report);
    }
    report.drop_panic
}

/// Discards everything the systems emitted this frame (after a failed Run).
pub(crate) fn discard(systems: &mut [SystemEntry]) {
    for entry in systems {
        entry.out.clear();
    }
}
