//! Structural commands — spawn, despawn, insert, remove — as one list type, and its one
//! apply.
//!
//! A [`CommandList`] is what a system emits through [`Output`](crate::Output) and what a
//! hook emits through [`Commands`](crate::Commands): commands in emission order, with the
//! values of inserts and spawns kept per component type. [`apply_list`] applies one list
//! to a [`Host`] (the world, with its hooks) with the effect of applying the commands one
//! by one, and [`settle`] applies the commands hooks emitted, round by round. Sync's last
//! step and the world's own between-frames methods both go through them.
//!
//! Consecutive inserts (or removes) of one type that move entities between the same two
//! tables — a system tagging every entity of a query, say — are *batched*: each entity's
//! bookkeeping (its row, its table's entity list) is done one by one as it comes, exactly
//! as alone, while the component data of the whole batch moves in one pass per column when
//! the batch ends (before any other command touches a column). Swap-removes then happen in
//! the same order on every column, so rows end up exactly where one-by-one moves put them.
//! A command that fires a hook first flushes the batch (hooks see the world at their
//! command), so hooked types' inserts and removes move one by one. So do inserts of a type
//! with [required components](crate::World::require), each followed by the inserts of
//! what it requires; a spawn stages its bundle's required components beside the bundle
//! (`Storage::stage_required`), so the entity is placed once.
//!
//! With a hierarchy registered ([`World::register_hierarchy`](crate::World::register_hierarchy)),
//! commands on `ChildOf` and despawns go through [`tree`]: parents' `Children` follow, a
//! reparent that would make a cycle is rejected, and a despawn takes the subtree.
//!
//! This module knows storage, not the [`World`](crate::World): hooks fire through the
//! [`Host`] the world implements.

pub(crate) mod tree;

use std::collections::VecDeque;

use crate::bundle::{Bundle, BundleSink};
use crate::component::{Component, ComponentId};
use crate::entity::{Entity, Location};
use crate::erased::Erased;
use crate::hierarchy::HierarchyError;
use crate::stats::MAX_HOOK_ROUNDS;
use crate::storage::{Plan, Storage, TableId};

/// A deferred structural change.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Command {
    Despawn(Entity),
    Remove(Entity, ComponentId),
    /// The value waits in the list's values of that type.
    Insert(Entity, ComponentId),
    /// The next `n` types of the list's spawn types, values waiting in the list; the id
    /// reserved in Run (`Output::spawn`), or `None` for one chosen when it applies.
    Spawn(u32, Option<Entity>),
}

/// Which change a hook is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// An entity gains a component (`on_add`).
    Add,
    /// An entity loses a component (`on_remove`).
    Remove,
}

/// Commands in emission order, with the values they carry.
#[derive(Default)]
pub(crate) struct CommandList {
    commands: Vec<Command>,
    /// The component types of each spawn's bundle, spawn after spawn.
    spawn_types: Vec<ComponentId>,
    /// Values of inserts and spawns (a `VecDeque<C>` each), by component id, in emission
    /// order.
    values: Vec<Option<Erased>>,
    /// The ids that have values, in creation order.
    used: Vec<ComponentId>,
}

impl CommandList {
    /// The commands, in emission order.
    #[inline]
    pub(crate) fn commands(&self) -> &[Command] {
        &self.commands
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.commands.len()
    }

    /// Despawns `e`.
    #[inline]
    pub(crate) fn despawn(&mut self, e: Entity) {
        self.commands.push(Command::Despawn(e));
    }

    /// Inserts (or replaces) `e`'s `C` (id `id`).
    #[inline]
    pub(crate) fn insert<C: Component>(&mut self, id: ComponentId, e: Entity, value: C) {
        self.values_mut::<C>(id).push_back(value);
        self.commands.push(Command::Insert(e, id));
    }

    /// Removes `e`'s component `id`.
    #[inline]
    pub(crate) fn remove(&mut self, id: ComponentId, e: Entity) {
        self.commands.push(Command::Remove(e, id));
    }

    /// Spawns an entity with `bundle`, as `e` (an id reserved for it) or with the next
    /// free id when the command applies.
    ///
    /// # Panics
    /// If a type of the bundle is unregistered or named twice, or requires a type that is
    /// not registered.
    #[track_caller]
    pub(crate) fn spawn<B: Bundle>(&mut self, storage: &Storage, bundle: B, e: Option<Entity>) {
        let start = self.spawn_types.len();
        bundle.put(&mut ListSink {
            storage,
            list: self,
            start,
        });
        let n = self.spawn_types.len() - start;
        self.commands.push(Command::Spawn(n as u32, e));
    }

    /// Forgets every command and drops their values (capacity kept).
    pub(crate) fn clear(&mut self) {
        self.commands.clear();
        self.spawn_types.clear();
        for &id in &self.used {
            if let Some(v) = &mut self.values[id.index()] {
                v.clear();
            }
        }
    }

    /// Appends `other`'s commands and values after `self`'s, leaving `other` empty.
    pub(crate) fn append(&mut self, other: &mut CommandList) {
        self.commands.append(&mut other.commands);
        self.spawn_types.append(&mut other.spawn_types);
        for &id in &other.used {
            let Some(theirs) = &mut other.values[id.index()] else {
                continue;
            };
            let mine = self.entry(id);
            mine.get_or_insert_with(|| theirs.empty_like())
                .append(theirs);
        }
    }

    /// Bytes reserved by the commands and their values.
    pub(crate) fn capacity_bytes(&self) -> usize {
        use std::mem::size_of;
        self.commands.capacity() * size_of::<Command>()
            + self.spawn_types.capacity() * size_of::<ComponentId>()
            + self.values.capacity() * size_of::<Option<Erased>>()
            + self.used.capacity() * size_of::<ComponentId>()
            + self
                .values
                .iter()
                .flatten()
                .map(|v| v.capacity_bytes())
                .sum::<usize>()
    }

    /// The entry of type `id`, remembered as used once it holds values.
    fn entry(&mut self, id: ComponentId) -> &mut Option<Erased> {
        if self.values.len() <= id.index() {
            self.values.resize_with(id.index() + 1, || None);
        }
        if self.values[id.index()].is_none() {
            self.used.push(id);
        }
        &mut self.values[id.index()]
    }

    /// The waiting values of `C` (id `id`), created on first use.
    fn values_mut<C: Component>(&mut self, id: ComponentId) -> &mut VecDeque<C> {
        Erased::get_or_new(self.entry(id))
    }

    /// The next waiting value of `C` (id `id`), taken out of the list.
    fn pop_value<C: Component>(&mut self, id: ComponentId) -> C {
        self.values_mut::<C>(id)
            .pop_front()
            .expect("a structural command without its value")
    }

    /// The waiting values of type `id`, which a command says are there.
    fn values_of(&mut self, id: ComponentId) -> &mut Erased {
        match self.values.get_mut(id.index()) {
            Some(Some(v)) => v,
            _ => unreachable!("a structural command without its value"),
        }
    }
}

/// Puts a bundle's values into a [`CommandList`], types from `start` on.
struct ListSink<'a> {
    storage: &'a Storage,
    list: &'a mut CommandList,
    start: usize,
}

impl BundleSink for ListSink<'_> {
    #[track_caller]
    fn put<C: Component>(&mut self, value: C) {
        crate::hierarchy::assert_not_children::<C>();
        let id = self.storage.registry().id::<C>();
        self.storage.check_required(id);
        if self.list.spawn_types[self.start..].contains(&id) {
            crate::bundle::duplicate::<C>();
        }
        self.list.spawn_types.push(id);
        self.list.values_mut::<C>(id).push_back(value);
    }
}

/// What commands apply to: the storage, with hooks that fire at the commands of hooked
/// types (the world implements it; hooks see `&World`, which this module does not know).
pub(crate) trait Host {
    fn storage(&mut self) -> &mut Storage;
    /// Whether type `id` has hooks for `change`.
    fn hooked(&self, id: ComponentId, change: Change) -> bool;
    /// Runs the `change` hooks of type `id` for `e` (which has an `id` value).
    fn fire(&mut self, change: Change, id: ComponentId, e: Entity);
    /// Runs the `change` hooks of each of `e`'s types, in component id order.
    fn fire_all(&mut self, change: Change, e: Entity);
    /// The commands hooks emitted and not yet applied, if any.
    fn take_pending(&mut self) -> Option<CommandList>;
    /// Returns an applied list for reuse.
    fn give_back(&mut self, applied: CommandList);
    /// Drops a list that will not be applied (its values once the world is consistent).
    fn discard(&mut self, list: CommandList);
}

/// What applying commands did.
#[derive(Default, Debug)]
pub(crate) struct CommandReport {
    /// Commands that had nothing to act on.
    pub(crate) dropped: u64,
    pub(crate) spawned: u64,
    pub(crate) despawned: u64,
    /// Hook commands dropped after [`MAX_HOOK_ROUNDS`] rounds (hooks that keep firing).
    pub(crate) hook_cascade: Option<usize>,
    /// Reparents rejected because they would have made a cycle (counted in `dropped`
    /// too), and the first of them.
    pub(crate) cycles: u64,
    pub(crate) first_cycle: Option<HierarchyError>,
}

/// What applying commands keeps across calls (capacity only).
#[derive(Default)]
pub(crate) struct CommandScratch {
    ids: Vec<ComponentId>,
    /// The required types an insert added (see `Storage::insert_required`).
    added: Vec<ComponentId>,
    batch: MoveBatch,
    /// A subtree being despawned, and the walk's stack.
    tree: tree::TreeScratch,
}

/// Applies the commands hooks emitted, round after round (the commands of the hooks that
/// round `k` fires form round `k + 1`), at most [`MAX_HOOK_ROUNDS`] rounds; what is left
/// then is dropped and counted in `report.hook_cascade`.
pub(crate) fn settle(
    host: &mut dyn Host,
    scratch: &mut CommandScratch,
    report: &mut CommandReport,
) {
    let mut rounds = 0;
    while let Some(mut list) = host.take_pending() {
        if rounds == MAX_HOOK_ROUNDS {
            report.hook_cascade = Some(list.len());
            host.discard(list);
            return;
        }
        rounds += 1;
        apply_list(host, &mut list, scratch, report);
        host.give_back(list);
    }
}

/// Inserts the list's next value of type `id` into `e` on its own, on settled columns
/// (`replaces`: `e` has an `id` already, whose `on_remove` hooks fire first). Returns
/// whether `e` was alive; a dead target's value is dropped and counted.
fn insert_one(
    host: &mut dyn Host,
    list: &mut CommandList,
    id: ComponentId,
    e: Entity,
    replaces: bool,
    report: &mut CommandReport,
) -> bool {
    if replaces {
        host.fire(Change::Remove, id, e);
    }
    let storage = host.storage();
    storage.columns_mut(id).stage_next(list.values_of(id));
    let alive = storage.insert_staged(e, id);
    if !alive {
        report.dropped += 1;
    }
    alive
}

/// Applies one command list (a system's, or a round of hook commands) in order, firing
/// the hooks of hooked types as it goes, and leaves it empty. Removed values stay in the
/// storage's graveyards.
pub(crate) fn apply_list(
    host: &mut dyn Host,
    list: &mut CommandList,
    scratch: &mut CommandScratch,
    report: &mut CommandReport,
) {
    let CommandScratch {
        ids,
        added,
        batch,
        tree,
    } = scratch;
    let commands = std::mem::take(&mut list.commands);
    let hierarchy = host.storage().hierarchy();
    let mut next_spawn = 0;
    for &cmd in &commands {
        match cmd {
            Command::Insert(e, id) if hierarchy.is_some_and(|h| h.child_of == id) => {
                batch.flush(host.storage(), list);
                let parent = list.pop_value::<crate::hierarchy::ChildOf>(id).0;
                let h = hierarchy.expect("matched above");
                if let Err(error) = tree::set_parent(host, h, e, parent) {
                    report.dropped += 1;
                    if let HierarchyError::Cycle { .. } = error {
                        report.cycles += 1;
                        report.first_cycle.get_or_insert(error);
                    }
                }
            }
            Command::Insert(e, id) if host.storage().requires(id) => {
                // A type with required components: one by one, then what it requires.
                batch.flush(host.storage(), list);
                let replaces = host.storage().column_row_of(e, id).is_some();
                if !insert_one(host, list, id, e, replaces, report) {
                    continue;
                }
                host.storage().insert_required(e, id, added);
                host.fire(Change::Add, id, e);
                for &r in added.iter() {
                    host.fire(Change::Add, r, e);
                }
            }
            Command::Insert(e, id) => match host.storage().plan(e, id, true) {
                Plan::Move { from, to } => {
                    batch.push(host.storage(), list, (id, true), e, (from, to));
                    if host.hooked(id, Change::Add) {
                        batch.flush(host.storage(), list);
                        host.fire(Change::Add, id, e);
                    }
                }
                plan => {
                    // A dead target or a replacement: one by one, on settled columns.
                    batch.flush(host.storage(), list);
                    let replaces = matches!(plan, Plan::Stays(_));
                    insert_one(host, list, id, e, replaces, report);
                    if replaces {
                        host.fire(Change::Add, id, e);
                    }
                }
            },
            Command::Remove(e, id) if hierarchy.is_some_and(|h| h.child_of == id) => {
                batch.flush(host.storage(), list);
                let h = hierarchy.expect("matched above");
                if !tree::remove_parent(host, h, e) {
                    report.dropped += 1;
                }
            }
            Command::Remove(e, id) => match host.storage().plan(e, id, false) {
                Plan::Move { from, to } => {
                    if host.hooked(id, Change::Remove) {
                        // The hook sees the entity with its value: before the move.
                        batch.flush(host.storage(), list);
                        host.fire(Change::Remove, id, e);
                    }
                    batch.push(host.storage(), list, (id, false), e, (from, to));
                }
                // Nothing to remove: no column is touched, the batch may go on.
                Plan::Dead | Plan::Stays(_) => report.dropped += 1,
            },
            Command::Despawn(e) => {
                batch.flush(host.storage(), list);
                match hierarchy {
                    Some(h) => tree::despawn(host, h, e, tree, report),
                    None => {
                        host.fire_all(Change::Remove, e);
                        match host.storage().despawn(e) {
                            Some(_) => report.despawned += 1,
                            None => report.dropped += 1,
                        }
                    }
                }
            }
            Command::Spawn(n, reserved) => {
                let storage = host.storage();
                batch.flush(storage, list);
                ids.clear();
                for k in next_spawn..next_spawn + n as usize {
                    let id = list.spawn_types[k];
                    storage.columns_mut(id).stage_next(list.values_of(id));
                    ids.push(id);
                }
                next_spawn += n as usize;
                storage.stage_required(ids);
                let e = match reserved {
                    Some(e) => {
                        storage.spawn_staged_as(e, ids);
                        e
                    }
                    None => storage.spawn_staged(ids),
                };
                let child = hierarchy.filter(|h| ids.contains(&h.child_of));
                if let Some(h) = child {
                    if tree::attach_spawned(host, h, e).is_err() {
                        // Its parent is dead: it dies with it (no hook saw it alive).
                        report.dropped += 1;
                        continue;
                    }
                }
                report.spawned += 1;
                host.fire_all(Change::Add, e);
            }
        }
    }
    batch.flush(host.storage(), list);
    list.commands = commands;
    list.clear();
}

/// What a batch of entity moves shares: type `id` inserted (`add`) or removed, moving
/// each entity from table `from` to table `to`.
#[derive(Clone, Copy, PartialEq, Eq)]
struct MoveKey {
    id: ComponentId,
    add: bool,
    from: TableId,
    to: TableId,
}

/// Entity moves whose column data has not moved yet, all with one [`MoveKey`].
#[derive(Default)]
struct MoveBatch {
    key: Option<MoveKey>,
    /// The row each entity left in `from`, in command order.
    rows: Vec<u32>,
}

impl MoveBatch {
    /// Moves the batch's component data (one pass per column) and empties it.
    fn flush(&mut self, storage: &mut Storage, list: &mut CommandList) {
        let Some(MoveKey { id, add, from, to }) = self.key.take() else {
            return;
        };
        let n = self.rows.len();
        storage.move_columns(from, to, &self.rows, |c, columns, col| {
            debug_assert!(add && c == id, "only the inserted type is new in `to`");
            columns.push_next(list.values_of(c), n, col);
        });
        self.rows.clear();
    }

    /// Moves `e` (already planned: from `from` to table `to`, inserting or removing
    /// `id` as `add` says) as part of the batch, flushing the batch first if it goes
    /// elsewhere.
    fn push(
        &mut self,
        storage: &mut Storage,
        list: &mut CommandList,
        (id, add): (ComponentId, bool),
        e: Entity,
        (from, to): (Location, TableId),
    ) {
        let key = Some(MoveKey {
            id,
            add,
            from: from.table,
            to,
        });
        if self.key != key {
            self.flush(storage, list);
            self.key = key;
        }
        storage.relocate(e, from, to);
        self.rows.push(from.row);
    }
}
