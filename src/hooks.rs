//! Hooks: user code run when an entity gains a component ([`World::on_add`]) or loses one
//! ([`World::on_remove`]), and the [`Commands`] they emit. What users rely on (when hooks
//! run, what they see, panics, cost) is documented on [`World::on_add`].
//!
//! How: the [`Hooks`] of a world live in the world, by component id, with one flag byte
//! per type so that unhooked types cost one check per command. While commands apply
//! (Sync's last step, or a `World` method between frames) the hooks are taken out of the
//! world, so each hook call gets `&World` beside `&mut` hook state. A hook call emits
//! into a scratch command list, moved to the end of the pending list if the call returns
//! and discarded if it panics; `commands::apply_list` then applies the pending list
//! round by round.

use std::any::{Any, type_name};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Mutex;

use crate::bundle::Bundle;
use crate::commands::{Change, CommandList, CommandReport, CommandScratch, Host, settle};
use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::ids::StageId;
use crate::pool::payload_message;
use crate::stats::FrameError;
use crate::storage::Storage;
use crate::world::World;

/// Structural changes emitted by a hook, applied once the commands that fired it are all
/// applied; see [`World::on_add`] for when exactly.
///
/// ```
/// use runsync::prelude::*;
/// #[derive(Clone, Copy, Debug, PartialEq)] struct Hp(i32);
/// impl Component for Hp { type Output = Hp; }
/// #[derive(Clone, Copy, Debug, PartialEq)] struct Corpse;
/// impl Component for Corpse { type Output = Corpse; }
///
/// let mut world = World::new();
/// world.register::<Hp>(merge::last);
/// world.register::<Corpse>(merge::last);
/// // Whatever despawns a living thing leaves a corpse.
/// world.on_remove::<Hp>(|_: &World, _: Entity, _: &Hp, cmds: &mut Commands| {
///     cmds.spawn((Corpse,));
/// });
/// let e = world.spawn((Hp(3),));
/// world.despawn(e);
/// assert_eq!(world.query::<(&Corpse,)>().count(), 1);
/// ```
pub struct Commands<'a> {
    world: &'a World,
    list: &'a mut CommandList,
}

impl Commands<'_> {
    /// Spawns an entity with `bundle` once the commands that fired this hook are applied.
    /// Its id is assigned then, deterministically.
    ///
    /// # Panics
    /// If a component type is unregistered or named twice in the bundle (the hook's
    /// commands are then discarded, as for any panicking hook).
    #[track_caller]
    pub fn spawn<B: Bundle>(&mut self, bundle: B) {
        self.list.spawn(self.world.storage(), bundle, None);
    }

    /// Despawns `e` (a no-op, counted as dropped, if it is dead by then).
    pub fn despawn(&mut self, e: Entity) {
        self.list.despawn(e);
    }

    /// Inserts (or replaces) component `C` of `e`, with the components `C`
    /// [requires](World::require) that `e` lacks.
    ///
    /// # Panics
    /// If `C` is not registered, or requires a type that is not.
    #[track_caller]
    pub fn insert<C: Component>(&mut self, e: Entity, component: C) {
        crate::hierarchy::assert_not_children::<C>();
        let id = self.world.registry().id::<C>();
        self.world.storage().check_required(id);
        self.list.insert(id, e, component);
    }

    /// Removes component `C` from `e` (a no-op if it has none by then).
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn remove<C: Component>(&mut self, e: Entity) {
        crate::hierarchy::assert_not_children::<C>();
        let id = self.world.registry().id::<C>();
        self.list.remove(id, e);
    }
}

/// The bit of a [`Change`] in [`Hooks`]' flags, and the hook's name.
const fn bit(change: Change) -> u8 {
    match change {
        Change::Add => 1,
        Change::Remove => 2,
    }
}

const fn hook_name(change: Change) -> &'static str {
    match change {
        Change::Add => "on_add",
        Change::Remove => "on_remove",
    }
}

/// One hook, taking the entity only: the user's hook for `C`, wrapped (in
/// [`Hooks::add`]) with the lookup of the entity's `C`, so that the hooks of every type
/// are one type and need no downcast. The `Mutex` makes an `FnMut + Send` closure `Sync`
/// (so `World` stays `Sync`) without ever being locked: hooks are only called through
/// `&mut`.
type HookFn = Mutex<Box<dyn FnMut(&World, Entity, &mut Commands<'_>) + Send>>;

/// The hooks of one component type, in registration order.
struct TypeHooks {
    /// The type's name, for a hook's panic.
    name: &'static str,
    add: Vec<HookFn>,
    remove: Vec<HookFn>,
}

/// A hook that panicked: the component type, which hook, the message.
pub(crate) type HookPanic = (&'static str, &'static str, String);

/// Where hook calls put their commands and their first panic.
#[derive(Default)]
struct Sinks {
    /// Commands of the hooks run so far, not yet applied, in emission order.
    pending: CommandList,
    /// One hook call's commands, moved to `pending` if the call returns.
    scratch: CommandList,
    /// Commands discarded (a panicking hook's, or those past `MAX_HOOK_ROUNDS`): their
    /// values are dropped by `flush_trash` once the world is consistent, since a `Drop`
    /// may panic too.
    trash: CommandList,
    panic: Option<HookPanic>,
}

impl TypeHooks {
    /// Runs the `change` hooks for `e`; each hook's commands go to `sink.scratch`, then
    /// (unless it panicked) to `sink.pending`.
    fn run(&mut self, change: Change, world: &World, e: Entity, sink: &mut Sinks) {
        let hooks = match change {
            Change::Add => &mut self.add,
            Change::Remove => &mut self.remove,
        };
        for hook in hooks {
            let hook = hook.get_mut().unwrap_or_else(|p| p.into_inner());
            let mut cmds = Commands {
                world,
                list: &mut sink.scratch,
            };
            match catch_unwind(AssertUnwindSafe(|| hook(world, e, &mut cmds))) {
                Ok(()) => sink.pending.append(&mut sink.scratch),
                Err(p) => {
                    sink.trash.append(&mut sink.scratch);
                    if sink.panic.is_none() {
                        sink.panic = Some((self.name, hook_name(change), payload_message(&*p)));
                    }
                }
            }
        }
    }
}

/// Every hook of a world, by component id, with the commands they emitted and not yet
/// applied. Taken out of the world while hooks run, so that they can see `&World`.
#[derive(Default)]
pub(crate) struct Hooks {
    by_type: Vec<Option<TypeHooks>>,
    /// Per component id: `bit`s of the changes with at least one hook.
    flags: Vec<u8>,
    /// Any type has `on_add` / `on_remove` hooks.
    any: u8,
    sinks: Sinks,
    /// An emptied command list kept for its capacity.
    spare: CommandList,
}

impl Hooks {
    /// Bytes reserved by the hooks' command lists (counted in `MemoryStats::output_bytes`).
    pub(crate) fn capacity_bytes(&self) -> usize {
        let s = &self.sinks;
        [&s.pending, &s.scratch, &s.trash, &self.spare]
            .iter()
            .map(|l| l.capacity_bytes())
            .sum()
    }

    /// Adds `hook` to the `change` hooks of `C` (id `id`).
    pub(crate) fn add<C: Component>(
        &mut self,
        id: ComponentId,
        change: Change,
        hook: impl FnMut(&World, Entity, &C, &mut Commands<'_>) + Send + 'static,
    ) {
        let i = id.index();
        if self.by_type.len() <= i {
            self.by_type.resize_with(i + 1, || None);
            self.flags.resize(i + 1, 0);
        }
        let typed = self.by_type[i].get_or_insert_with(|| TypeHooks {
            name: type_name::<C>(),
            add: Vec::new(),
            remove: Vec::new(),
        });
        let mut hook = hook;
        let hook: HookFn = Mutex::new(Box::new(
            move |world: &World, e: Entity, cmds: &mut Commands<'_>| {
                let (col, row) = world
                    .storage()
                    .column_row_of(e, id)
                    .expect("a hook fires for an entity that has the component");
                let value = world.storage().typed::<C>(id).get(col, row);
                hook(world, e, value, cmds);
            },
        ));
        match change {
            Change::Add => typed.add.push(hook),
            Change::Remove => typed.remove.push(hook),
        }
        self.flags[i] |= bit(change);
        self.any |= bit(change);
    }

    /// Whether type `id` has `change` hooks.
    #[inline]
    pub(crate) fn has(&self, id: ComponentId, change: Change) -> bool {
        self.flags
            .get(id.index())
            .is_some_and(|f| f & bit(change) != 0)
    }

    /// Whether any type has `change` hooks.
    #[inline]
    pub(crate) fn any(&self, change: Change) -> bool {
        self.any & bit(change) != 0
    }

    /// Runs the `change` hooks of type `id` (if any) for `e`, which has an `id` value.
    pub(crate) fn fire(&mut self, change: Change, id: ComponentId, world: &World, e: Entity) {
        if !self.has(id, change) {
            return;
        }
        let hooks = self.by_type[id.index()]
            .as_mut()
            .expect("flagged types have hooks");
        hooks.run(change, world, e, &mut self.sinks);
    }

    /// Runs the `change` hooks of each of `e`'s types, in component id order (all of a
    /// spawned entity's, or of one about to be despawned). Nothing if `e` is dead.
    pub(crate) fn fire_all(&mut self, change: Change, world: &World, e: Entity) {
        if !self.any(change) {
            return;
        }
        let Some(loc) = world.storage().locate(e) else {
            return;
        };
        for &c in world.storage().tables().get(loc.table).components() {
            self.fire(change, c, world, e);
        }
    }

    /// The commands hooks emitted since the last call, to apply (an empty list if none).
    /// Give the list back, applied, with [`give_back`](Self::give_back).
    pub(crate) fn take_pending(&mut self) -> Option<CommandList> {
        if self.sinks.pending.is_empty() {
            return None;
        }
        let spare = std::mem::take(&mut self.spare);
        Some(std::mem::replace(&mut self.sinks.pending, spare))
    }

    /// Returns an applied command list for reuse.
    pub(crate) fn give_back(&mut self, mut applied: CommandList) {
        debug_assert!(applied.is_empty(), "applied lists are emptied");
        applied.clear();
        self.spare = applied;
    }

    /// Gives back a command list that will not be applied; its values wait in the trash.
    pub(crate) fn discard(&mut self, mut list: CommandList) {
        self.sinks.trash.append(&mut list);
        list.clear();
        self.spare = list;
    }

    /// Drops the values of discarded commands (run once the world is consistent: a
    /// `Drop` may panic).
    pub(crate) fn flush_trash(&mut self) {
        self.sinks.trash.clear();
    }

    /// Discards the commands not applied yet (after something unwound).
    pub(crate) fn discard_pending(&mut self) {
        let pending = std::mem::take(&mut self.sinks.pending);
        self.discard(pending);
    }

    /// The first hook panic since the last call.
    pub(crate) fn take_panic(&mut self) -> Option<HookPanic> {
        self.sinks.panic.take()
    }
}

/// A world whose hooks are out of it while commands apply: the [`Host`] that
/// [`commands`](crate::commands) apply to. Hooks get `&World` beside `&mut` hook state.
pub(crate) struct Applying<'w> {
    pub(crate) world: &'w mut World,
    pub(crate) hooks: &'w mut Hooks,
}

impl Host for Applying<'_> {
    #[inline]
    fn storage(&mut self) -> &mut Storage {
        self.world.storage_mut()
    }
    #[inline]
    fn hooked(&self, id: ComponentId, change: Change) -> bool {
        self.hooks.has(id, change)
    }
    fn fire(&mut self, change: Change, id: ComponentId, e: Entity) {
        self.hooks.fire(change, id, self.world, e);
    }
    fn fire_all(&mut self, change: Change, e: Entity) {
        self.hooks.fire_all(change, self.world, e);
    }
    fn take_pending(&mut self) -> Option<CommandList> {
        self.hooks.take_pending()
    }
    fn give_back(&mut self, applied: CommandList) {
        self.hooks.give_back(applied);
    }
    fn discard(&mut self, list: CommandList) {
        self.hooks.discard(list);
    }
}

/// How applying structural changes ended (see [`World::apply_changes`]).
pub(crate) struct Applied<R> {
    pub(crate) value: R,
    /// The first hook that panicked: component type, hook, message.
    pub(crate) hook_panic: Option<HookPanic>,
    /// A removed value's `Drop` panicked while the removed values were dropped.
    pub(crate) drop_panic: Option<Box<dyn Any + Send>>,
}

impl World {
    /// Makes structural changes with the hooks out of the world (they fire through
    /// `&World`): runs `change` (which applies commands to the [`Applying`] host), then
    /// the commands hooks emitted, round by round ([`settle`]); puts the hooks back; then
    /// drops the values removed or replaced, once every move is complete. Sync's last step
    /// and the world's between-frames methods both go through here.
    ///
    /// If `change` unwinds (nothing should: hook calls are caught), the hooks still go
    /// back and the unwinding goes on.
    pub(crate) fn apply_changes<R>(
        &mut self,
        scratch: &mut CommandScratch,
        report: &mut CommandReport,
        change: impl FnOnce(&mut Applying<'_>, &mut CommandScratch, &mut CommandReport) -> R,
    ) -> Applied<R> {
        let mut hooks = std::mem::take(self.hooks_mut());
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut host = Applying {
                world: self,
                hooks: &mut hooks,
            };
            let r = change(&mut host, scratch, report);
            settle(&mut host, scratch, report);
            r
        }));
        let hook_panic = hooks.take_panic();
        if result.is_err() {
            hooks.discard_pending();
        }
        *self.hooks_mut() = hooks;
        let value = result.unwrap_or_else(|p| resume_unwind(p));
        let drop_panic = catch_unwind(AssertUnwindSafe(|| {
            self.storage_mut().flush_graveyards();
            self.hooks_mut().flush_trash();
        }))
        .err();
        Applied {
            value,
            hook_panic,
            drop_panic,
        }
    }
}

impl World {
    /// Runs `hook` each time an entity gains a `C`: spawned with one, `C` inserted where
    /// there was none, or `C` replaced — by a system's commands in Sync or by this world's
    /// methods between frames. The hook gets the world right after the change, the
    /// entity, its new `C`, and [`Commands`] for the structural changes it wants.
    /// [`on_remove`](Self::on_remove) is its counterpart.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use runsync::prelude::*;
    /// #[derive(Clone, Copy, Debug, PartialEq)] struct Enemy(u32);
    /// impl Component for Enemy { type Output = Enemy; }
    ///
    /// let mut world = World::new();
    /// world.register::<Enemy>(merge::last);
    /// let log = Arc::new(Mutex::new(Vec::new()));
    /// let l = log.clone();
    /// world.on_add::<Enemy>(move |_: &World, _: Entity, en: &Enemy, _: &mut Commands| {
    ///     l.lock().unwrap().push(format!("+{}", en.0));
    /// });
    /// let l = log.clone();
    /// world.on_remove::<Enemy>(move |_: &World, _: Entity, en: &Enemy, _: &mut Commands| {
    ///     l.lock().unwrap().push(format!("-{}", en.0));
    /// });
    /// world.spawn((Enemy(1),)); // between frames: fires at once
    /// let mut rt = Runtime::builder().workers(2).build(world);
    /// rt.add_system(|w: &World, out: &mut Output| {
    ///     for (e, (en,)) in w.query::<(&Enemy,)>() {
    ///         out.insert(e, Enemy(en.0 + 1)); // a replace: on_remove, then on_add
    ///         out.despawn(e);
    ///     }
    /// });
    /// rt.frame(); // in Sync, in command order
    /// assert_eq!(*log.lock().unwrap(), ["+1", "-1", "+2", "-2"]);
    /// ```
    ///
    /// # When hooks run, and what they see
    ///
    /// Hooks fire for every structural change, whatever its origin: the commands systems
    /// emit (applied in Sync's last step) and the world's own [`spawn`](World::spawn),
    /// [`spawn_batch`](World::spawn_batch), [`insert`](World::insert),
    /// [`remove`](World::remove) and [`despawn`](World::despawn) between frames.
    ///
    /// - `on_add::<C>` fires when an entity gains `C` (spawned with it, or `C` inserted
    ///   where there was none), right *after* the change: the hook gets the new value.
    /// - `on_remove::<C>` fires when an entity loses `C` (`C` removed, or the entity
    ///   despawned), right *before* the change: the entity still has all its components
    ///   and the hook gets the value about to go.
    /// - Inserting `C` onto an entity that already has one (a replace) fires `on_remove`
    ///   with the old value, then `on_add` with the new one.
    /// - One change with several hooked types (a spawn or a despawn) fires them in
    ///   component id order (registration order of the types); several hooks of one type
    ///   run in the order they were registered. Across changes: command order (systems in
    ///   registration order, then emission order). So hooks run in the same order at any
    ///   worker count.
    ///
    /// Hooks get `&World`: the world as it is at that command — every merge of the frame
    /// folded, the earlier commands applied, the later ones not yet. They run on the frame
    /// thread, one at a time.
    ///
    /// # What hooks may do
    ///
    /// A hook cannot change the world directly: it emits structural changes into its
    /// [`Commands`] (spawn, despawn, insert, remove, with [`Output`](crate::Output)'s
    /// semantics). They are applied in the same Sync (or the same between-frames call),
    /// once the commands that fired the hook are all applied, in the order the hooks
    /// emitted them; they fire hooks in turn, whose commands form the next round. After
    /// [`MAX_HOOK_ROUNDS`](crate::MAX_HOOK_ROUNDS) rounds the rest is dropped and the frame
    /// fails with [`FrameError::HookCascade`]. So when a
    /// frame ends, nothing is pending: a snapshot between frames holds the whole state.
    ///
    /// Hooks do not write component values (merge outputs): Sync's fold is over when they
    /// run, and a write kept for the next frame would be resolved against rows that the
    /// next frame's commands move. A hook that needs to set a value inserts it (a replace).
    ///
    /// # Panics in hooks
    ///
    /// Each hook call is caught. The panicking hook's commands are discarded, the other
    /// hooks and commands go on, so the world is consistent and the same at any worker
    /// count. In a frame, the first panic (in hook order) fails it with
    /// [`FrameError::HookPanicked`]; the frame counts as
    /// done and the next one may run. Between frames, the world method that fired the hook
    /// panics with that error's message once everything is applied.
    ///
    /// # Cost
    ///
    /// Types without hooks pay one flag check per structural command. A hooked type's
    /// inserts and removes are applied one by one instead of in batches; each hook call is
    /// a dynamic call, a `catch_unwind`, and a short walk over the types its commands used.
    ///
    /// # Snapshots
    ///
    /// Hooks are behaviour, not state: [`World::restore`] keeps the hooks registered on the
    /// world it restores, and snapshots do not hold them. Restoring fires no hook, and
    /// neither does dropping the world.
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn on_add<C: Component>(
        &mut self,
        hook: impl FnMut(&World, Entity, &C, &mut Commands<'_>) + Send + 'static,
    ) {
        let id = self.registry().id::<C>();
        self.hooks_mut().add::<C>(id, Change::Add, hook);
    }

    /// Runs `hook` each time an entity loses a `C`: `C` removed, the entity despawned, or
    /// `C` replaced by an insert (then `on_add` hooks follow) — by a system's commands in
    /// Sync or by this world's methods between frames. The hook gets the world right
    /// *before* the change (the entity still has all its components), the entity, the `C`
    /// about to go, and [`Commands`]. See [`on_add`](Self::on_add) for an example and for
    /// when hooks run, what they see and what a panicking one does.
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn on_remove<C: Component>(
        &mut self,
        hook: impl FnMut(&World, Entity, &C, &mut Commands<'_>) + Send + 'static,
    ) {
        let id = self.registry().id::<C>();
        self.hooks_mut().add::<C>(id, Change::Remove, hook);
    }

    /// Makes a change between frames with the hooks out of the world (they fire through
    /// `&World`), then applies the commands they emitted and drops the removed values
    /// (see [`apply_changes`](Self::apply_changes)).
    ///
    /// # Panics
    /// Once all that is done, if a hook panicked, hooks did not settle, or a removed
    /// value's `Drop` panicked (that panic goes on).
    #[track_caller]
    pub(crate) fn with_hooks<R>(&mut self, change: impl FnOnce(&mut Applying<'_>) -> R) -> R {
        let mut report = CommandReport::default();
        let applied = self.apply_changes(&mut CommandScratch::default(), &mut report, |a, _, _| {
            change(a)
        });
        if let Some(p) = applied.drop_panic {
            resume_unwind(p);
        }
        if let Some((component, hook, message)) = applied.hook_panic {
            // Between frames there is no stage; the first stage's message has no mention
            // of one.
            let error = FrameError::HookPanicked {
                component,
                hook,
                message,
                stage: StageId::FIRST,
            };
            panic!("runsync: {error}");
        }
        if let Some(dropped) = report.hook_cascade {
            let error = FrameError::HookCascade {
                dropped,
                stage: StageId::FIRST,
            };
            panic!("runsync: {error}");
        }
        applied.value
    }
}
