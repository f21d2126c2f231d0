//! The [`World`]: entities, their components, and resources.

use std::any::{Any, TypeId, type_name};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use crate::bundle::{Bundle, BundleSink, Sink};
use crate::component::{Component, ComponentId, Registry, TypeIdMap};
use crate::entity::Entity;
use crate::fold::{AnyFold, Fold};
use crate::hooks::{Commands, Hooks, Kind};
use crate::merge::Merge;
use crate::query::{QueryData, QueryFiltered, QueryIter, QueryMut, QueryMutIter};
use crate::resource::{AnyResourceFold, ResourceFold};
use crate::stats::FrameError;
use crate::storage::{Storage, registered_twice};

/// Entities, their components and global resources.
///
/// During Run, systems see the world only as `&World`: every component is immutable, so
/// systems never conflict. Between frames the owner edits it directly
/// ([`Runtime::world_mut`](crate::Runtime::world_mut)): that is where setup, loading and
/// tools live.
///
/// ```
/// use runsync::prelude::*;
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Pos(f32, f32);
/// impl Component for Pos { type Output = Pos; }
///
/// let mut world = World::new();
/// world.register::<Pos>(merge::last);
/// let e = world.spawn((Pos(0.0, 0.0),));
/// world.get_mut::<Pos>(e).unwrap().0 = 3.0;
/// assert_eq!(world.get::<Pos>(e), Some(&Pos(3.0, 0.0)));
/// assert_eq!(world.query::<(&Pos,)>().count(), 1);
/// ```
pub struct World {
    /// Unique per `World` value made by [`World::new`]: systems' output buffers are keyed
    /// by this world's component ids, and are reset if a runtime's world is replaced.
    pub(crate) uid: u64,
    /// Entities, tables and columns.
    pub(crate) storage: Storage,
    /// One fold per component type, by id: the type's merge and its Sync state.
    pub(crate) folds: Vec<Box<dyn AnyFold>>,
    pub(crate) resources: TypeIdMap<Box<dyn Any + Send + Sync>>,
    /// Merges of the resources systems may write, by resource index.
    pub(crate) resource_folds: Vec<Box<dyn AnyResourceFold>>,
    /// Resource type to index in `resource_folds`.
    resource_ids: TypeIdMap<u32>,
    /// Resource types opted into snapshots, in opt-in order.
    pub(crate) resource_hooks: Vec<crate::snapshot::ResourceHook>,
    /// Resource types opted into checksums, in opt-in order.
    pub(crate) resource_sums: Vec<crate::snapshot::ResourceSum>,
    /// `on_add` / `on_remove` hooks, and the commands they emitted not yet applied.
    pub(crate) hooks: Hooks,
    scratch_ids: Vec<ComponentId>,
}

#[cold]
#[track_caller]
fn missing_resource<R>() -> ! {
    panic!(
        "runsync: no resource of type `{}`; add it with `world.insert_resource(..)` before \
         running systems that read it",
        type_name::<R>()
    )
}

impl Default for World {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for World {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("World")
            .field("entities", &self.len())
            .field("component_types", &self.storage.registry.len())
            .field("tables", &self.storage.tables.len())
            .field("resources", &self.resources.len())
            .finish()
    }
}

impl World {
    /// An empty world.
    pub fn new() -> Self {
        static NEXT_UID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        World {
            uid: NEXT_UID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            storage: Storage::default(),
            folds: Vec::new(),
            resources: TypeIdMap::default(),
            resource_folds: Vec::new(),
            resource_ids: TypeIdMap::default(),
            resource_hooks: Vec::new(),
            resource_sums: Vec::new(),
            hooks: Hooks::default(),
            scratch_ids: Vec::new(),
        }
    }

    /// Registers component type `C` with its merge, which folds the outputs systems emit
    /// for one entity in one frame (in system registration order, then emission order)
    /// into the stored value. Returns the type's id.
    ///
    /// `merge` is one of the ready-made merges ([`merge::last`](crate::merge::last),
    /// [`sum`](crate::merge::sum), [`first`](crate::merge::first),
    /// [`min`](crate::merge::min), [`max`](crate::merge::max)), or any closure or `fn`
    /// `Fn(&mut C, &[C::Output])` — write a closure's parameter types, as in
    /// `|h: &mut Health, d: &[i32]| h.0 += d.iter().sum::<i32>()`. Its type decides Sync's
    /// path at compile time (see [`Merge`]).
    ///
    /// # Panics
    /// If `C` is already registered: one type has one merge.
    #[track_caller]
    pub fn register<C: Component>(&mut self, merge: impl Merge<C>) -> ComponentId {
        match self.storage.add_type::<C>() {
            Ok(id) => {
                self.folds.push(Box::new(Fold::<C, _>::new(merge)));
                id
            }
            Err(_) => registered_twice::<C>(),
        }
    }

    /// Registers `C` with the merge it declares ([`DefaultMerge`](crate::DefaultMerge),
    /// which `#[derive(Component)]` implements for `#[component(merge = ..)]`).
    ///
    /// # Panics
    /// If `C` is already registered.
    #[track_caller]
    pub fn register_default<C: crate::DefaultMerge>(&mut self) -> ComponentId {
        self.register::<C>(C::default_merge())
    }

    /// Whether `C` is registered.
    pub fn is_registered<C: Component>(&self) -> bool {
        self.storage.registry.get::<C>().is_some()
    }

    /// Spawns an entity with the components of `bundle` (a tuple; `()` for none).
    ///
    /// # Panics
    /// If a type in the bundle is unregistered or appears twice, or if an
    /// [`on_add`](Self::on_add) hook it fires panics (once every change is applied).
    #[track_caller]
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        let mut ids = std::mem::take(&mut self.scratch_ids);
        ids.clear();
        bundle.put(&mut BundleSink(Sink::World {
            storage: &mut self.storage,
            ids: &mut ids,
        }));
        let e = self.storage.spawn_staged(&mut ids);
        self.scratch_ids = ids;
        if self.hooks.any(Kind::Add) {
            self.with_hooks(|w, hooks| hooks.fire_all(Kind::Add, w, e));
        }
        e
    }

    /// Spawns one entity per bundle, all of one kind, and returns their ids in order —
    /// the same ids and the same world as calling [`spawn`](Self::spawn) for each.
    /// `on_add` [hooks](Self::on_add) fire once the whole batch is spawned, entity by
    /// entity in order.
    ///
    /// Cost: the table is found once; the components are gathered into one `Vec` per
    /// type (sized from the iterator's `size_hint`) and appended to the columns whole,
    /// so there is no per-entity staging or column growth. One more allocation holds the
    /// returned ids.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy, Debug, PartialEq)] struct Pos(f32);
    /// # impl Component for Pos { type Output = Pos; }
    /// let mut world = World::new();
    /// world.register::<Pos>(merge::last);
    /// let ids = world.spawn_batch((0..3).map(|i| (Pos(i as f32),)));
    /// assert_eq!(world.get::<Pos>(ids[2]), Some(&Pos(2.0)));
    /// ```
    ///
    /// # Panics
    /// If a type in the bundle is unregistered or appears twice (before anything is
    /// spawned), or if an [`on_add`](Self::on_add) hook it fires panics (once every
    /// change is applied).
    #[track_caller]
    pub fn spawn_batch<B: Bundle>(&mut self, bundles: impl IntoIterator<Item = B>) -> Vec<Entity> {
        let ids = B::spawn_batch(self, bundles.into_iter());
        if self.hooks.any(Kind::Add) {
            self.with_hooks(|w, hooks| {
                for &e in &ids {
                    hooks.fire_all(Kind::Add, w, e);
                }
            });
        }
        ids
    }

    /// Despawns `e`, dropping its components. Returns `false` if it was already dead.
    ///
    /// # Panics
    /// If one of the [hooks](Self::on_remove) it fires panics (once every change is
    /// applied).
    #[track_caller]
    pub fn despawn(&mut self, e: Entity) -> bool {
        if self.hooks.any(Kind::Remove) && self.is_alive(e) {
            return self.with_hooks(|w, hooks| {
                hooks.fire_all(Kind::Remove, w, e);
                w.storage.despawn(e).is_some()
            });
        }
        let Some(loc) = self.storage.despawn(e) else {
            return false;
        };
        self.storage.flush_table_graveyards(loc.table);
        true
    }

    /// Inserts `component` into `e`, replacing (and dropping) any existing `C`.
    /// Returns `false`, dropping `component`, if `e` is dead.
    ///
    /// # Panics
    /// If `C` is not registered, or if a [hook](Self::on_add) it fires panics (once every
    /// change is applied).
    #[track_caller]
    pub fn insert<C: Component>(&mut self, e: Entity, component: C) -> bool {
        let id = self.storage.registry.id::<C>();
        if self.hooks.has(id, Kind::Add) || self.hooks.has(id, Kind::Remove) {
            return self.with_hooks(|w, hooks| {
                if w.storage.slot_of(e, id).is_some() {
                    hooks.fire(Kind::Remove, id, w, e);
                }
                w.storage.stage(id, component);
                let ok = w.storage.insert_staged(e, id);
                if ok {
                    hooks.fire(Kind::Add, id, w, e);
                }
                ok
            });
        }
        self.storage.stage(id, component);
        let ok = self.storage.insert_staged(e, id);
        self.storage.columns_of(id).flush_graveyard();
        ok
    }

    /// Removes `C` from `e` and returns it, or `None` if `e` is dead or has no `C`.
    ///
    /// # Panics
    /// If `C` is not registered, or if a [hook](Self::on_remove) it fires panics (once
    /// every change is applied).
    #[track_caller]
    pub fn remove<C: Component>(&mut self, e: Entity) -> Option<C> {
        let id = self.storage.registry.id::<C>();
        if self.hooks.has(id, Kind::Remove) {
            return self.with_hooks(|w, hooks| {
                w.storage.slot_of(e, id)?;
                hooks.fire(Kind::Remove, id, w, e);
                w.storage.remove(e, id);
                w.storage.typed_mut::<C>(id).take_removed()
            });
        }
        if !self.storage.remove(e, id) {
            return None;
        }
        self.storage.typed_mut::<C>(id).take_removed()
    }

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
    /// fails with [`FrameError::HookCascade`](crate::FrameError::HookCascade). So when a
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
    /// [`FrameError::HookPanicked`](crate::FrameError::HookPanicked); the frame counts as
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
        let id = self.storage.registry.id::<C>();
        self.hooks.add::<C>(id, Kind::Add, hook);
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
        let id = self.storage.registry.id::<C>();
        self.hooks.add::<C>(id, Kind::Remove, hook);
    }

    /// Makes a change between frames with the hooks out of the world (they fire through
    /// `&World`), then applies the commands they emitted and drops the removed values.
    ///
    /// # Panics
    /// Once all that is done, if a hook panicked or hooks did not settle.
    #[track_caller]
    fn with_hooks<R>(&mut self, change: impl FnOnce(&mut World, &mut Hooks) -> R) -> R {
        let mut hooks = std::mem::take(&mut self.hooks);
        let mut report = crate::sync::SyncReport::default();
        // Nothing here should unwind (hook calls are caught); if something does, the
        // hooks still go back into the world.
        let result = catch_unwind(AssertUnwindSafe(|| {
            let r = change(self, &mut hooks);
            let mut scratch = crate::sync::CommandScratch::default();
            crate::sync::settle(self, &mut hooks, &mut scratch, &mut report);
            r
        }));
        let panicked = hooks.take_panic();
        if result.is_err() {
            hooks.discard_pending();
        }
        self.hooks = hooks;
        let r = result.unwrap_or_else(|p| resume_unwind(p));
        self.storage.flush_graveyards();
        self.hooks.flush_trash();
        if let Some((component, hook, message)) = panicked {
            let error = FrameError::HookPanicked {
                component,
                hook,
                message,
            };
            panic!("runsync: {error}");
        }
        if let Some(dropped) = report.hook_cascade {
            panic!("runsync: {}", FrameError::HookCascade { dropped });
        }
        r
    }

    /// `e`'s `C`, or `None` if `e` is dead or has no `C`.
    ///
    /// # Panics
    /// If `C` is not registered.
    #[inline]
    #[track_caller]
    pub fn get<C: Component>(&self, e: Entity) -> Option<&C> {
        let id = self.storage.registry.id::<C>();
        let (col, row) = self.storage.slot_of(e, id)?;
        Some(&self.storage.typed::<C>(id).columns[col as usize][row as usize])
    }

    /// `e`'s `C`, mutably. Only possible between frames: systems get `&World`.
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn get_mut<C: Component>(&mut self, e: Entity) -> Option<&mut C> {
        let id = self.storage.registry.id::<C>();
        let (col, row) = self.storage.slot_of(e, id)?;
        Some(&mut self.storage.typed_mut::<C>(id).columns[col as usize][row as usize])
    }

    /// Whether `e` has a `C` (false if dead).
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn has<C: Component>(&self, e: Entity) -> bool {
        let id = self.storage.registry.id::<C>();
        self.storage
            .entities
            .location(e)
            .is_some_and(|l| self.storage.tables.get(l.table).has(id))
    }

    /// Whether `e`'s `C` was written by the last Sync (merged into, inserted, or spawned
    /// with), or inserted or spawned between frames since; `false` if `e` is dead or has no
    /// `C`. Exact semantics on [`Changed`](crate::Changed). Cost: one lookup and one bit.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy)] struct Hp(i32);
    /// # impl Component for Hp { type Output = i32; }
    /// let mut world = World::new();
    /// world.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    /// let e = world.spawn((Hp(3),));
    /// assert!(world.is_changed::<Hp>(e) && world.is_added::<Hp>(e));
    /// let mut rt = Runtime::builder().build(world);
    /// rt.frame(); // a Sync that writes nothing forgets the marks
    /// assert!(!rt.world().is_changed::<Hp>(e));
    /// rt.world_mut().get_mut::<Hp>(e).unwrap().0 = 4; // edits in place do not mark
    /// assert!(!rt.world().is_changed::<Hp>(e));
    /// ```
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn is_changed<C: Component>(&self, e: Entity) -> bool {
        let id = self.storage.registry.id::<C>();
        self.storage
            .marks_of(e, id)
            .is_some_and(|(changed, _)| changed)
    }

    /// Whether `e` gained `C` in the last Sync (or between frames since): spawned with it,
    /// or given it when it had none. `false` if `e` is dead or has no `C`. Exact semantics
    /// on [`Added`](crate::Added); see [`is_changed`](Self::is_changed).
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn is_added<C: Component>(&self, e: Entity) -> bool {
        let id = self.storage.registry.id::<C>();
        self.storage.marks_of(e, id).is_some_and(|(_, added)| added)
    }

    /// Whether `e` is alive (spawned and not despawned).
    #[inline]
    pub fn is_alive(&self, e: Entity) -> bool {
        self.storage.entities.location(e).is_some()
    }

    /// Number of live entities.
    #[inline]
    pub fn len(&self) -> usize {
        self.storage.entities.len()
    }

    /// Whether there are no live entities.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Iterates over the entities matching `Q`, yielding `(Entity, Q::Item)`.
    ///
    /// `Q` is a tuple of `&C`, `Option<&C>`, [`With<C>`](crate::With) and
    /// [`Without<C>`](crate::Without). Order: tables in creation order, rows in table order
    /// — the same for the same world history, whatever the thread count.
    ///
    /// # Panics
    /// If a type in `Q` is not registered.
    #[track_caller]
    pub fn query<Q: QueryData>(&self) -> QueryIter<'_, Q> {
        QueryIter::new(self)
    }

    /// [`query`](Self::query) with a filter `F` (e.g. [`With<Enemy>`](crate::With), or a
    /// tuple of filters) that selects entities without adding to the items: yields
    /// `(Entity, Q::Item)`. `.len()` counts without visiting rows.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy)] struct Pos(f32); impl Component for Pos { type Output = Pos; }
    /// # #[derive(Clone, Copy)] struct Enemy; impl Component for Enemy { type Output = Enemy; }
    /// # let mut world = World::new();
    /// # world.register::<Pos>(merge::last); world.register::<Enemy>(merge::last);
    /// world.spawn((Pos(1.0), Enemy));
    /// world.spawn((Pos(2.0),));
    /// let enemies = world.query_filtered::<(&Pos,), With<Enemy>>();
    /// assert_eq!(enemies.len(), 1);
    /// for (_e, (p,)) in enemies {
    ///     assert_eq!(p.0, 1.0);
    /// }
    /// ```
    ///
    /// # Panics
    /// If a type in `Q` or `F` is not registered.
    #[track_caller]
    pub fn query_filtered<Q: QueryData, F: QueryData>(&self) -> QueryFiltered<'_, Q, F> {
        QueryFiltered::new(self)
    }

    /// Iterates mutably over the entities matching `Q`, between frames: setup, loading,
    /// editors, tools. `Q` is a tuple of `&mut C`, `&C`, `Option<&mut C>`, `Option<&C>`,
    /// [`With<C>`](crate::With) and [`Without<C>`](crate::Without); the order is
    /// [`query`](Self::query)'s. (Systems cannot call it: they get `&World`.)
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy, Debug, PartialEq)] struct Pos(f32);
    /// # impl Component for Pos { type Output = Pos; }
    /// # #[derive(Clone, Copy, Debug, PartialEq)] struct Vel(f32);
    /// # impl Component for Vel { type Output = Vel; }
    /// let mut world = World::new();
    /// world.register::<Pos>(merge::last);
    /// world.register::<Vel>(merge::last);
    /// let e = world.spawn((Pos(1.0), Vel(2.0)));
    /// for (_e, (p, v)) in world.query_mut::<(&mut Pos, &Vel)>() {
    ///     p.0 += v.0;
    /// }
    /// assert_eq!(world.get::<Pos>(e), Some(&Pos(3.0)));
    /// ```
    ///
    /// # Panics
    /// If a type in `Q` is not registered, or a type that is read or written appears twice.
    #[track_caller]
    pub fn query_mut<Q: QueryMut>(&mut self) -> QueryMutIter<'_, Q> {
        QueryMutIter::new(self)
    }

    /// Lets systems write resource `R` with [`Output::write_resource`], folded in Sync by
    /// `merge` like a component's outputs: every system's, in registration order then
    /// emission order, in one merge call, visible from the next frame. `R` declares its
    /// output type through [`Component`] (e.g. `type Output = Self` for a value replaced
    /// by `merge::last`, or a delta for `merge::sum`). The value itself comes from
    /// [`insert_resource`](Self::insert_resource), before or after; outputs for a
    /// resource that is absent in Sync are dropped and counted.
    ///
    /// Derived data several systems need (a spatial grid, a path field) is built once per
    /// frame by one system and written to such a resource (with `merge::last`); the others
    /// read it in the next frame — one frame old, like everything in Run, and built once
    /// instead of by every reader.
    ///
    /// ```
    /// use runsync::prelude::*;
    ///
    /// #[derive(Clone, Copy, Debug, PartialEq)]
    /// struct Score(u32);
    /// impl Component for Score { type Output = u32; } // points to add
    /// impl std::ops::AddAssign<u32> for Score { fn add_assign(&mut self, d: u32) { self.0 += d } }
    ///
    /// let mut world = World::new();
    /// world.register_resource::<Score>(merge::sum);
    /// world.insert_resource(Score(0));
    /// let mut rt = Runtime::builder().workers(2).build(world);
    /// rt.add_system(|_: &World, out: &mut Output| out.write_resource::<Score>(3));
    /// rt.add_system(|_: &World, out: &mut Output| out.write_resource::<Score>(4));
    /// rt.frame();
    /// assert_eq!(rt.world().resource::<Score>(), &Score(7));
    /// ```
    ///
    /// # Panics
    /// If `R` is already registered as a written resource.
    ///
    /// [`Output::write_resource`]: crate::Output::write_resource
    #[track_caller]
    pub fn register_resource<R: Component>(&mut self, merge: impl Merge<R>) {
        let next = self.resource_folds.len() as u32;
        if self.resource_ids.insert(TypeId::of::<R>(), next).is_some() {
            panic!(
                "runsync: resource type `{}` is registered twice; register each written \
                 resource once, with the one merge it uses",
                type_name::<R>()
            );
        }
        self.resource_folds
            .push(Box::new(ResourceFold::<R, _>::new(merge)));
    }

    /// The index of written resource `R`.
    ///
    /// # Panics
    /// If `R` was not registered with [`register_resource`](Self::register_resource).
    #[track_caller]
    pub(crate) fn resource_index<R: 'static>(&self) -> usize {
        match self.resource_ids.get(&TypeId::of::<R>()) {
            Some(&i) => i as usize,
            None => {
                let name = type_name::<R>();
                let short = name.rsplit("::").next().unwrap_or(name);
                panic!(
                    "runsync: resource type `{name}` cannot be written by systems: register \
                     it once with its merge, e.g. `world.register_resource::<{short}>(runsync::merge::last)`"
                )
            }
        }
    }

    /// Inserts (or replaces) a resource: a global value systems read with
    /// [`resource`](Self::resource).
    pub fn insert_resource<R: Send + Sync + 'static>(&mut self, resource: R) {
        self.resources.insert(TypeId::of::<R>(), Box::new(resource));
    }

    /// The resource of type `R`.
    ///
    /// # Panics
    /// If there is none; use [`get_resource`](Self::get_resource) to check.
    #[track_caller]
    pub fn resource<R: Send + Sync + 'static>(&self) -> &R {
        match self.get_resource::<R>() {
            Some(r) => r,
            None => missing_resource::<R>(),
        }
    }

    /// The resource of type `R`, if any.
    pub fn get_resource<R: Send + Sync + 'static>(&self) -> Option<&R> {
        self.resources.get(&TypeId::of::<R>())?.downcast_ref()
    }

    /// The resource of type `R`, mutably (between frames).
    ///
    /// # Panics
    /// If there is none; use [`get_resource_mut`](Self::get_resource_mut) to check.
    #[track_caller]
    pub fn resource_mut<R: Send + Sync + 'static>(&mut self) -> &mut R {
        match self.get_resource_mut::<R>() {
            Some(r) => r,
            None => missing_resource::<R>(),
        }
    }

    /// The resource of type `R`, mutably (between frames), if any.
    pub fn get_resource_mut<R: Send + Sync + 'static>(&mut self) -> Option<&mut R> {
        self.resources.get_mut(&TypeId::of::<R>())?.downcast_mut()
    }

    /// Removes and returns the resource of type `R`.
    pub fn remove_resource<R: Send + Sync + 'static>(&mut self) -> Option<R> {
        let b = self.resources.remove(&TypeId::of::<R>())?;
        b.downcast().ok().map(|b| *b)
    }

    /// What the world has reserved: `(tables, entity slots, column bytes, fold bytes)`;
    /// see [`MemoryStats`](crate::MemoryStats).
    pub(crate) fn memory(&self) -> (usize, usize, usize, usize) {
        let (tables, slots, columns) = self.storage.memory();
        let folds = self.folds.iter().map(|f| f.capacity_bytes()).sum::<usize>()
            + self
                .resource_folds
                .iter()
                .map(|f| f.capacity_bytes())
                .sum::<usize>()
            + self.hooks.capacity_bytes();
        (tables, slots, columns, folds)
    }

    // ----- crate-internal access -----

    #[inline]
    pub(crate) fn registry(&self) -> &Registry {
        &self.storage.registry
    }

    #[inline]
    pub(crate) fn storage(&self) -> &Storage {
        &self.storage
    }

    /// Spawns `n` entities for rows already appended (see [`Bundle::spawn_batch`]).
    pub(crate) fn storage_mut(&mut self) -> &mut Storage {
        &mut self.storage
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge;
    use std::sync::Arc;

    #[derive(Clone, Debug, PartialEq)]
    struct A(u32);
    impl Component for A {
        type Output = A;
    }
    #[derive(Clone, Debug, PartialEq)]
    struct B(String);
    impl Component for B {
        type Output = B;
    }
    #[derive(Clone, Debug, PartialEq)]
    struct Zst;
    impl Component for Zst {
        type Output = ();
    }
    #[derive(Clone)]
    struct Counted(#[allow(dead_code)] Arc<()>);
    impl Component for Counted {
        type Output = ();
    }

    fn world() -> World {
        let mut w = World::new();
        w.register::<A>(merge::last);
        w.register::<B>(merge::last);
        w.register::<Zst>(|_: &mut Zst, _: &[()]| {});
        w.register::<Counted>(|_: &mut Counted, _: &[()]| {});
        w
    }

    #[test]
    fn spawn_batch_matches_a_spawn_loop() {
        let setup = || {
            let mut w = world();
            let olds: Vec<Entity> = (0..5).map(|i| w.spawn((A(i),))).collect();
            w.despawn(olds[1]);
            w.despawn(olds[3]);
            w.spawn((B("other".into()), A(9)));
            w
        };
        let bundles = || {
            (0..40u32)
                .filter(|i| i % 3 != 0)
                .map(|i| (A(i), B(i.to_string())))
        };
        let mut a = setup();
        let batch = a.spawn_batch(bundles());
        let mut b = setup();
        let looped: Vec<Entity> = bundles().map(|x| b.spawn(x)).collect();
        assert_eq!(batch, looped);
        let dump = |w: &World| {
            w.query::<(&A, Option<&B>)>()
                .map(|(e, (a, b))| (e, a.0, b.map(|b| b.0.clone())))
                .collect::<Vec<_>>()
        };
        assert_eq!(dump(&a), dump(&b));
        assert_eq!(a.len(), b.len());
        for &e in &batch {
            assert_eq!(a.get::<A>(e), b.get::<A>(e));
        }
        assert!(a.spawn_batch(std::iter::empty::<(A,)>()).is_empty());
    }

    #[test]
    #[should_panic(expected = "names component type")]
    fn spawn_batch_rejects_duplicates() {
        world().spawn_batch([(A(1), A(2))]);
    }

    #[test]
    fn spawn_get_move_despawn() {
        let mut w = world();
        let e1 = w.spawn((A(1), B("x".into())));
        let e2 = w.spawn((A(2), B("y".into())));
        let e3 = w.spawn((A(3),));
        assert_eq!(w.len(), 3);
        assert_eq!(w.get::<B>(e2), Some(&B("y".into())));
        assert!(w.insert(e3, Zst));
        assert!(w.has::<Zst>(e3));
        assert_eq!(w.remove::<B>(e1), Some(B("x".into())));
        assert_eq!(w.remove::<B>(e1), None);
        // e2 moved into e1's old row; its data must follow it.
        assert_eq!(w.get::<B>(e2), Some(&B("y".into())));
        assert_eq!(w.get::<A>(e1), Some(&A(1)));
        assert!(w.despawn(e2));
        assert!(!w.despawn(e2));
        assert!(!w.is_alive(e2));
        assert_eq!(w.get::<A>(e2), None);
        assert!(!w.insert(e2, A(9)), "insert into dead entity");
        let e4 = w.spawn(());
        assert_eq!(e4.index(), e2.index());
        assert_ne!(e4, e2);
        assert_eq!(w.len(), 3);
        let mut seen: Vec<u32> = w.query::<(&A,)>().map(|(_, (a,))| a.0).collect();
        seen.sort();
        assert_eq!(seen, vec![1, 3]);
    }

    #[test]
    fn drops_exactly_once() {
        let rc = Arc::new(());
        {
            let mut w = world();
            let a = w.spawn((Counted(rc.clone()), A(0)));
            let b = w.spawn((Counted(rc.clone()),));
            let c = w.spawn((A(1),));
            assert_eq!(Arc::strong_count(&rc), 3);
            w.insert(a, Counted(rc.clone())); // replace drops the old one
            assert_eq!(Arc::strong_count(&rc), 3);
            w.insert(c, Counted(rc.clone()));
            assert_eq!(Arc::strong_count(&rc), 4);
            w.insert(c, B("move".into())); // moves the Counted of c between tables
            assert_eq!(Arc::strong_count(&rc), 4);
            drop(w.remove::<Counted>(b));
            assert_eq!(Arc::strong_count(&rc), 3);
            w.despawn(a);
            assert_eq!(Arc::strong_count(&rc), 2);
        }
        assert_eq!(Arc::strong_count(&rc), 1, "world drop frees the rest");
    }

    #[test]
    #[should_panic(expected = "names component type")]
    fn duplicate_bundle_type_panics() {
        let mut w = world();
        w.spawn((A(1), A(2)));
    }

    #[test]
    fn duplicate_bundle_does_not_leak_or_poison() {
        let rc = Arc::new(());
        let mut w = world();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            w.spawn((Counted(rc.clone()), A(1), Counted(rc.clone())));
        }));
        assert!(r.is_err());
        assert_eq!(Arc::strong_count(&rc), 1);
        let e = w.spawn((Counted(rc.clone()),));
        assert!(w.has::<Counted>(e));
        assert_eq!(w.len(), 1);
    }

    #[test]
    #[should_panic(expected = "registered twice")]
    fn register_twice_panics() {
        let mut w = world();
        w.register::<A>(merge::first);
    }

    #[test]
    fn resources() {
        let mut w = World::new();
        assert!(w.get_resource::<u32>().is_none());
        w.insert_resource(5u32);
        *w.resource_mut::<u32>() += 1;
        *w.get_resource_mut::<u32>().unwrap() += 1;
        assert!(w.get_resource_mut::<u64>().is_none());
        assert_eq!(*w.resource::<u32>(), 7);
        assert_eq!(w.remove_resource::<u32>(), Some(7));
    }

    #[test]
    #[should_panic(expected = "no resource of type `u64`")]
    fn missing_resource_panics() {
        World::new().resource::<u64>();
    }
}
