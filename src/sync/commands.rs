//! Sync's last step: structural commands, in system registration order, then emission
//! order.
//!
//! The result is always that of applying the commands one by one. Consecutive inserts
//! (or removes) of one type that move entities between the same two tables — a system
//! tagging every entity of a query, say — are *batched*: each entity's bookkeeping (its
//! row, its table's entity list) is done one by one as it comes, exactly as alone, while
//! the component data of the whole batch moves in one pass per column when the batch
//! ends (before any other command touches a column). Swap-removes then happen in the
//! same order on every column, so rows end up exactly where one-by-one moves put them.
//!
//! [Hooks](crate::World::on_add) see the world at their command, so a command that fires
//! one first flushes the batch; hooked types' inserts and removes thus move one by one.
//! The commands hooks emit are applied after every system's, round by round ([`settle`]).
//!
//! A spawn made with `Output::spawn` takes the id reserved for it in Run (see the
//! `entity` module docs): overflow ids get their slots first, and after the systems'
//! commands each system's block drops the ids it used.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::SyncReport;
use crate::component::ComponentId;
use crate::entity::Entity;
use crate::hooks::{Hooks, Kind};
use crate::output::{Command, SystemOutputs};
use crate::pool::payload_message;
use crate::stats::MAX_HOOK_ROUNDS;
use crate::storage::{Plan, Storage, TableId};
use crate::system::SystemSlot;
use crate::world::World;

/// Entity moves whose column data has not moved yet: all from table `from` to table `to`,
/// by inserting (`add`) or removing type `id`.
#[derive(Default)]
pub(crate) struct Batch {
    key: Option<(ComponentId, bool, TableId, TableId)>,
    /// The row each entity left in `from`, in command order.
    rows: Vec<u32>,
}

impl Batch {
    /// Moves the batch's component data (one pass per column) and empties it.
    fn flush(&mut self, storage: &mut Storage, out: &mut SystemOutputs) {
        let Some((id, add, from, to)) = self.key.take() else {
            return;
        };
        let n = self.rows.len();
        storage.move_columns(from, to, &self.rows, |c, columns, col| {
            debug_assert!(add && c == id, "only the inserted type is new in `to`");
            let buf = out.buffers[c.index()]
                .as_mut()
                .expect("insert without its buffer");
            buf.as_dyn().push_inserts(n, columns, col);
        });
        self.rows.clear();
    }

    /// Moves `e` (already planned: from `from` to `to`) as part of the batch, flushing
    /// the batch first if it goes elsewhere.
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        storage: &mut Storage,
        out: &mut SystemOutputs,
        id: ComponentId,
        add: bool,
        e: Entity,
        from: crate::entity::Location,
        to: TableId,
    ) {
        let key = Some((id, add, from.table, to));
        if self.key != key {
            self.flush(storage, out);
            self.key = key;
        }
        storage.relocate(e, from, to);
        self.rows.push(from.row);
    }
}

/// Applies every system's commands (despawn, remove, insert, spawn, as emitted) and the
/// commands their hooks emit (see [`settle`]), then drops the values they removed or
/// replaced.
pub(super) fn apply(
    world: &mut World,
    systems: &mut [SystemSlot],
    scratch: &mut Scratch,
    report: &mut SyncReport,
) {
    // Hooks see `&World`, so they leave it while commands apply; nothing below unwinds
    // (hook calls and drops are caught), so they always go back.
    let mut hooks = std::mem::take(&mut world.hooks);
    // Overflow ids handed out in Run get their slots before any command allocates.
    world
        .storage
        .entities
        .create_overflow(|s| systems.get(s).map_or(0, |slot| slot.out.spawned as usize));
    for slot in systems.iter_mut() {
        if slot.ran && !slot.out.commands.is_empty() {
            apply_list(world, &mut hooks, &mut slot.out, scratch, report);
        }
    }
    // Every reserved id handed out is alive now: the blocks drop them (before hook
    // commands, whose spawns take free ids).
    for (s, slot) in systems.iter_mut().enumerate() {
        let spawned = if slot.ran { slot.out.spawned } else { 0 };
        world.storage.entities.commit_reserved(s, spawned as usize);
        slot.out.spawned = 0;
    }
    settle(world, &mut hooks, scratch, report);
    report.hook_panic = hooks.take_panic();
    world.hooks = hooks;

    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| {
        world.storage.flush_graveyards();
        world.hooks.flush_trash();
    })) {
        report.drop_panic = Some(payload_message(&*payload));
    }
}

/// What command application keeps across calls (capacity only).
#[derive(Default)]
pub(crate) struct Scratch {
    ids: Vec<ComponentId>,
    batch: Batch,
}

/// Applies the commands hooks emitted, round after round (the commands of the hooks that
/// round `k` fires form round `k + 1`), at most [`MAX_HOOK_ROUNDS`] rounds; what is left
/// then is dropped and counted in `report.hook_cascade`.
pub(crate) fn settle(
    world: &mut World,
    hooks: &mut Hooks,
    scratch: &mut Scratch,
    report: &mut SyncReport,
) {
    let mut rounds = 0;
    while let Some(mut list) = hooks.take_pending() {
        if rounds == MAX_HOOK_ROUNDS {
            report.hook_cascade = Some(list.commands.len());
            hooks.discard(list);
            return;
        }
        rounds += 1;
        apply_list(world, hooks, &mut list, scratch, report);
        hooks.give_back(list);
    }
}

/// Applies one command list (a system's, or a round of hook commands) in order, firing
/// the hooks of hooked types as it goes. Removed values stay in the graveyards.
fn apply_list(
    world: &mut World,
    hooks: &mut Hooks,
    out: &mut SystemOutputs,
    scratch: &mut Scratch,
    report: &mut SyncReport,
) {
    let Scratch { ids, batch } = scratch;
    let commands = std::mem::take(&mut out.commands);
    let mut next_spawn = 0;
    for &cmd in &commands {
        let storage = &mut world.storage;
        match cmd {
            Command::Insert(e, id) => match storage.plan(e, id, true) {
                Plan::Move { from, to } => {
                    batch.push(storage, out, id, true, e, from, to);
                    if hooks.has(id, Kind::Add) {
                        batch.flush(storage, out);
                        hooks.fire(Kind::Add, id, world, e);
                    }
                }
                plan => {
                    // A dead target or a replacement: one by one, on settled columns.
                    batch.flush(storage, out);
                    let replaces = matches!(plan, Plan::Stays(_));
                    if replaces {
                        hooks.fire(Kind::Remove, id, world, e);
                    }
                    let storage = &mut world.storage;
                    let buf = out.buffers[id.index()]
                        .as_mut()
                        .expect("insert without its buffer");
                    buf.as_dyn().stage_insert(storage.columns_of(id));
                    if !storage.insert_staged(e, id) {
                        report.dropped += 1;
                    }
                    if replaces {
                        hooks.fire(Kind::Add, id, world, e);
                    }
                }
            },
            Command::Remove(e, id) => match storage.plan(e, id, false) {
                Plan::Move { from, to } => {
                    if hooks.has(id, Kind::Remove) {
                        // The hook sees the entity with its value: before the move.
                        batch.flush(storage, out);
                        hooks.fire(Kind::Remove, id, world, e);
                    }
                    batch.push(&mut world.storage, out, id, false, e, from, to);
                }
                // Nothing to remove: no column is touched, the batch may go on.
                Plan::Dead | Plan::Stays(_) => report.dropped += 1,
            },
            Command::Despawn(e) => {
                batch.flush(storage, out);
                hooks.fire_all(Kind::Remove, world, e);
                match world.storage.despawn(e) {
                    Some(_) => report.despawned += 1,
                    None => report.dropped += 1,
                }
            }
            Command::Spawn(n, reserved) => {
                batch.flush(storage, out);
                ids.clear();
                let types = &out.spawn_types[next_spawn..next_spawn + n as usize];
                next_spawn += n as usize;
                for &id in types {
                    let buf = out.buffers[id.index()]
                        .as_mut()
                        .expect("spawn without its buffer");
                    buf.as_dyn().stage_insert(storage.columns_of(id));
                    ids.push(id);
                }
                let e = match reserved {
                    Some(e) => {
                        storage.spawn_staged_as(e, ids);
                        e
                    }
                    None => storage.spawn_staged(ids),
                };
                report.spawned += 1;
                hooks.fire_all(Kind::Add, world, e);
            }
        }
    }
    batch.flush(&mut world.storage, out);
    out.commands = commands;
    out.commands.clear();
    out.spawn_types.clear();
}
