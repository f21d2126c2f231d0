//! The [`World`]: entities, their components, and resources.
//!
//! `mod.rs` holds the world's state and what a user meets first: registering types,
//! spawning, reading, structural edits between frames, queries. The rest is split by what
//! a user asks: [`resources`], [`snapshot`] (save and restore), [`checksum`] (digests and
//! desync reports), [`save`] (save files), [`debug`] (`Debug` text), [`declare`] (types that declare their
//! merge and opt-ins). Hooks ([`World::on_add`]) live beside their
//! machinery in `hooks.rs`; queries in `query/`.

mod checksum;
mod debug;
pub(crate) mod declare;
pub(crate) mod edit;
pub(crate) mod hierarchy;
mod messages;
mod required;
mod resources;
pub(crate) mod save;
pub(crate) mod snapshot;
mod transfer;

use std::any::{Any, TypeId};

use crate::bundle::{Bundle, BundleSink};
use crate::commands::Change;
use crate::component::{Component, ComponentId, Registry, TypeIdMap};
use crate::entity::Entity;
use crate::fold::{AnyFold, Fold};
use crate::hierarchy::{ChildOf, Children, assert_mutable, assert_not_children};
use crate::hooks::Hooks;
use crate::merge::Merge;
use crate::message::Messages;
use crate::query::{QueryData, QueryFiltered, QueryIter, QueryMut, QueryMutIter};
use crate::resource::{ResourceFold, ResourceHook, ResourceSerde, ResourceSum, Resources};
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
    uid: u64,
    /// Entities, tables and columns.
    storage: Storage,
    /// One fold per component type, by id: the type's merge and its Sync state.
    folds: Vec<Box<dyn AnyFold>>,
    resources: Resources,
    /// Merges of the resources systems may write, by resource index.
    resource_folds: Vec<ResourceFold>,
    /// Resource type to index in `resource_folds`.
    resource_ids: TypeIdMap<u32>,
    /// Resource types opted into snapshots, in opt-in order.
    resource_hooks: Vec<ResourceHook>,
    /// Resource types opted into checksums, in opt-in order.
    resource_sums: Vec<ResourceSum>,
    /// Resource types opted into save files, in opt-in order.
    resource_serde: Vec<ResourceSerde>,
    /// `on_add` / `on_remove` hooks, and the commands they emitted not yet applied.
    hooks: Hooks,
    /// Message types and the messages the last Sync delivered.
    messages: Messages,
    scratch_ids: Vec<ComponentId>,
    /// Scratch: an imported entity's change marks, one per type (`import_entity`).
    scratch_marks: Vec<u8>,
}

impl Default for World {
    fn default() -> Self {
        Self::new()
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
            resources: Resources::default(),
            resource_folds: Vec::new(),
            resource_ids: TypeIdMap::default(),
            resource_hooks: Vec::new(),
            resource_sums: Vec::new(),
            resource_serde: Vec::new(),
            hooks: Hooks::default(),
            messages: Messages::default(),
            scratch_ids: Vec::new(),
            scratch_marks: Vec::new(),
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
    /// The components `C` requires (`#[component(requires(..))]`) are declared here, as
    /// by [`require_with`](Self::require_with).
    ///
    /// # Panics
    /// If `C` is already registered: one type has one merge.
    #[track_caller]
    pub fn register<C: Component>(&mut self, merge: impl Merge<C>) -> ComponentId {
        if TypeId::of::<C>() == TypeId::of::<ChildOf>()
            || TypeId::of::<C>() == TypeId::of::<Children>()
        {
            panic!(
                "runsync: `{}` is registered by `world.register_hierarchy()`, which also \
                 keeps parents and children in step; call that instead",
                std::any::type_name::<C>()
            );
        }
        self.register_unchecked(merge)
    }

    /// [`register`](Self::register) without the check that keeps the hierarchy's types
    /// for [`register_hierarchy`](Self::register_hierarchy).
    #[track_caller]
    fn register_unchecked<C: Component>(&mut self, merge: impl Merge<C>) -> ComponentId {
        match self.storage.add_type::<C>() {
            Ok(id) => {
                self.folds.push(Box::new(Fold::<C, _>::new(merge)));
                self.declare_required::<C>(id);
                id
            }
            Err(_) => registered_twice::<C>(),
        }
    }

    /// Whether `C` is registered.
    pub fn is_registered<C: Component>(&self) -> bool {
        self.storage.registry().get::<C>().is_some()
    }

    /// Spawns an entity with the components of `bundle` (a tuple; `()` for none), and
    /// the components they [require](Self::require) that the bundle lacks.
    ///
    /// # Panics
    /// If a type in the bundle is unregistered, appears twice or requires a type that is
    /// not registered, or if an [`on_add`](Self::on_add) hook it fires panics (once every
    /// change is applied).
    #[track_caller]
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        let mut ids = std::mem::take(&mut self.scratch_ids);
        ids.clear();
        bundle.put(&mut StageSink {
            storage: &mut self.storage,
            ids: &mut ids,
        });
        self.storage.stage_required(&mut ids);
        let e = self.storage.spawn_staged(&mut ids);
        let child = self
            .storage
            .hierarchy()
            .is_some_and(|h| ids.contains(&h.child_of));
        self.scratch_ids = ids;
        if child {
            self.attach_spawned(&[e]);
            return e;
        }
        if self.hooks.any(Change::Add) {
            self.with_hooks(|a| a.hooks.fire_all(Change::Add, a.world, e));
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
        let ids = B::spawn_batch(&mut self.storage, bundles.into_iter());
        let children = self.storage.hierarchy().is_some_and(|h| {
            ids.first()
                .is_some_and(|&e| self.storage.column_row_of(e, h.child_of).is_some())
        });
        if children {
            self.attach_spawned(&ids);
            return ids;
        }
        if self.hooks.any(Change::Add) {
            self.with_hooks(|a| {
                for &e in &ids {
                    a.hooks.fire_all(Change::Add, a.world, e);
                }
            });
        }
        ids
    }

    /// Despawns `e`, dropping its components. Returns `false` if it was already dead.
    /// With a [hierarchy](Self::register_hierarchy), its descendants go with it.
    ///
    /// # Panics
    /// If one of the [hooks](Self::on_remove) it fires panics (once every change is
    /// applied).
    #[track_caller]
    pub fn despawn(&mut self, e: Entity) -> bool {
        if self.storage.hierarchy().is_some() {
            return self.despawn_tree(e);
        }
        if self.hooks.any(Change::Remove) && self.is_alive(e) {
            return self.with_hooks(|a| {
                a.hooks.fire_all(Change::Remove, a.world, e);
                a.world.storage.despawn(e).is_some()
            });
        }
        let Some(loc) = self.storage.despawn(e) else {
            return false;
        };
        self.storage.flush_table_graveyards(loc.table);
        true
    }

    /// Inserts `component` into `e`, replacing (and dropping) any existing `C`, and the
    /// components `C` [requires](Self::require) that `e` lacks. Returns `false`, dropping
    /// `component`, if `e` is dead. A [`ChildOf`] reparents `e`
    /// ([`set_parent`](Self::set_parent); `false` if the parent is dead).
    ///
    /// # Panics
    /// If `C` is not registered or requires a type that is not, if `C` is [`Children`]
    /// (kept by Sync), if a `ChildOf` would make a cycle (with
    /// [`HierarchyError`](crate::HierarchyError)'s message, nothing changed), or if a
    /// [hook](Self::on_add) it fires panics (once every change is applied).
    #[track_caller]
    pub fn insert<C: Component>(&mut self, e: Entity, component: C) -> bool {
        assert_not_children::<C>();
        if let Some(&ChildOf(parent)) = (&component as &dyn Any).downcast_ref::<ChildOf>() {
            return match self.set_parent(e, parent) {
                Ok(()) => true,
                Err(crate::hierarchy::HierarchyError::Dead { .. }) => false,
                Err(error) => panic!("{error}"),
            };
        }
        let id = self.storage.registry().id::<C>();
        self.storage.check_required(id);
        let required = self.storage.requires(id);
        if self.hooks.has(id, Change::Add)
            || self.hooks.has(id, Change::Remove)
            || (required && self.hooks.any(Change::Add))
        {
            return self.with_hooks(|a| {
                if a.world.storage.column_row_of(e, id).is_some() {
                    a.hooks.fire(Change::Remove, id, a.world, e);
                }
                a.world.storage.stage(id, component);
                let ok = a.world.storage.insert_staged(e, id);
                if ok {
                    let mut added = Vec::new();
                    a.world.storage.insert_required(e, id, &mut added);
                    a.hooks.fire(Change::Add, id, a.world, e);
                    for r in added {
                        a.hooks.fire(Change::Add, r, a.world, e);
                    }
                }
                ok
            });
        }
        self.storage.stage(id, component);
        let ok = self.storage.insert_staged(e, id);
        if ok && required {
            let mut added = std::mem::take(&mut self.scratch_ids);
            self.storage.insert_required(e, id, &mut added);
            self.scratch_ids = added;
        }
        self.storage.columns_mut(id).flush_graveyard();
        ok
    }

    /// Removes `C` from `e` and returns it, or `None` if `e` is dead or has no `C`.
    /// Removing a [`ChildOf`] makes `e` a root ([`remove_parent`](Self::remove_parent)).
    ///
    /// # Panics
    /// If `C` is not registered, if `C` is [`Children`] (kept by Sync), or if a
    /// [hook](Self::on_remove) it fires panics (once every change is applied).
    #[track_caller]
    pub fn remove<C: Component>(&mut self, e: Entity) -> Option<C> {
        assert_not_children::<C>();
        if TypeId::of::<C>() == TypeId::of::<ChildOf>() {
            let old: Box<dyn Any> = Box::new(ChildOf(self.remove_parent(e)?));
            return old.downcast::<C>().ok().map(|c| *c);
        }
        let id = self.storage.registry().id::<C>();
        if self.hooks.has(id, Change::Remove) {
            return self.with_hooks(|a| {
                a.world.storage.column_row_of(e, id)?;
                a.hooks.fire(Change::Remove, id, a.world, e);
                a.world.storage.remove(e, id);
                a.world.storage.typed_mut::<C>(id).take_removed()
            });
        }
        if !self.storage.remove(e, id) {
            return None;
        }
        self.storage.typed_mut::<C>(id).take_removed()
    }

    /// `e`'s `C`, or `None` if `e` is dead or has no `C`.
    ///
    /// # Panics
    /// If `C` is not registered.
    #[inline]
    #[track_caller]
    pub fn get<C: Component>(&self, e: Entity) -> Option<&C> {
        let id = self.storage.registry().id::<C>();
        let (col, row) = self.storage.column_row_of(e, id)?;
        Some(self.storage.typed::<C>(id).get(col, row))
    }

    /// `e`'s `C`, mutably. Only possible between frames: systems get `&World`.
    ///
    /// # Panics
    /// If `C` is not registered, or is [`ChildOf`] or [`Children`] (change a parent with
    /// [`set_parent`](Self::set_parent)).
    #[track_caller]
    pub fn get_mut<C: Component>(&mut self, e: Entity) -> Option<&mut C> {
        assert_mutable::<C>();
        let id = self.storage.registry().id::<C>();
        let (col, row) = self.storage.column_row_of(e, id)?;
        Some(self.storage.typed_mut::<C>(id).get_mut(col, row))
    }

    /// Whether `e` has a `C` (false if dead).
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn has<C: Component>(&self, e: Entity) -> bool {
        let id = self.storage.registry().id::<C>();
        self.storage
            .locate(e)
            .is_some_and(|l| self.storage.tables().get(l.table).has(id))
    }

    /// Whether `e`'s `C` was written by the last frame's Sync (merged into, inserted, or spawned
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
        let id = self.storage.registry().id::<C>();
        self.storage
            .marks_of(e, id)
            .is_some_and(|(changed, _)| changed)
    }

    /// Whether `e` gained `C` in the last frame's Sync (or between frames since): spawned with it,
    /// or given it when it had none. `false` if `e` is dead or has no `C`. Exact semantics
    /// on [`Added`](crate::Added); see [`is_changed`](Self::is_changed).
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn is_added<C: Component>(&self, e: Entity) -> bool {
        let id = self.storage.registry().id::<C>();
        self.storage.marks_of(e, id).is_some_and(|(_, added)| added)
    }

    /// Whether `e` is alive (spawned and not despawned).
    #[inline]
    pub fn is_alive(&self, e: Entity) -> bool {
        self.storage.locate(e).is_some()
    }

    /// Number of live entities.
    #[inline]
    pub fn len(&self) -> usize {
        self.storage.len()
    }

    /// Whether there are no live entities.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Turns *canonical order* on or off (off by default).
    ///
    /// Normally queries visit tables in the order they were created and each table's
    /// rows in the order entities arrived, so iteration order depends on the world's
    /// history as well as its contents (the frame is still deterministic: the same
    /// history gives the same order). In canonical order, queries visit tables sorted by
    /// their component types, and rows sorted by entity index, from the start of every
    /// Run on ([`Runtime`](crate::Runtime) re-sorts before each stage's Run and after the
    /// frame's last Sync). Then:
    ///
    /// - two worlds with the same contents (the same entities, ids included, the same
    ///   components and values, the same allocator state) run the same frames bit for
    ///   bit, however they were built: a system's emission order, and so the order its
    ///   outputs reach a merge, no longer depends on which archetype appeared first or
    ///   which rows a despawn swapped;
    /// - a world holding a subset of another's entities visits them in the same relative
    ///   order: what a shard of a larger world needs to merge as the whole world would;
    /// - [`checksum`](Self::checksum) between frames depends on contents only.
    ///
    /// The cost is a sort of the rows of each table that a despawn, a component move or
    /// an arrival below the last index left out of order, once per stage (the README's
    /// Performance section has the figures), and nothing for tables still in order
    /// beyond one pass over their entity ids. Between frames, structural changes
    /// (`spawn`, `despawn`, ...) may leave the world out of order until the next Run;
    /// queries then still see every entity.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Debug, Clone, Copy, PartialEq)] struct Hp(u32);
    /// # impl Component for Hp { type Output = Hp; }
    /// let mut world = World::new();
    /// world.register::<Hp>(merge::last);
    /// world.set_canonical_order(true);
    /// let a = world.spawn((Hp(1),));
    /// let b = world.spawn((Hp(2),));
    /// let c = world.spawn((Hp(3),));
    /// world.despawn(a); // `c` moves into `a`'s row
    /// let mut rt = Runtime::builder().build(world);
    /// rt.frame();
    /// // Rows are in entity order again.
    /// let order: Vec<Entity> = rt.world().query::<&Hp>().map(|(e, _)| e).collect();
    /// assert_eq!(order, [b, c]);
    /// ```
    pub fn set_canonical_order(&mut self, on: bool) {
        self.storage.set_canonical(on);
        self.storage.canonicalize();
    }

    /// Whether canonical order is on: see [`set_canonical_order`](Self::set_canonical_order).
    pub fn canonical_order(&self) -> bool {
        self.storage.is_canonical()
    }

    /// Iterates over the entities matching `Q`, yielding `(Entity, Q::Item)`.
    ///
    /// `Q` is a tuple of `&C`, `Option<&C>`, [`With<C>`](crate::With) and
    /// [`Without<C>`](crate::Without); `()` visits every entity. Order: tables in creation
    /// order, rows in table order — the same for the same world history, whatever the
    /// thread count ([canonical order](Self::set_canonical_order) makes it depend on the
    /// contents only).
    ///
    /// # Panics
    /// If a type in `Q` is not registered.
    #[track_caller]
    pub fn query<Q: QueryData>(&self) -> QueryIter<'_, Q> {
        QueryIter::new(&self.storage)
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
        QueryFiltered::new(&self.storage)
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
        QueryMutIter::new(&mut self.storage)
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
            + self.hooks.capacity_bytes()
            + self.messages.capacity_bytes();
        (tables, slots, columns, folds)
    }

    // ----- crate-internal access -----

    #[inline]
    pub(crate) fn registry(&self) -> &Registry {
        self.storage.registry()
    }

    /// The resources.
    #[inline]
    pub(crate) fn resources(&self) -> &Resources {
        &self.resources
    }

    /// Entities, tables and columns.
    #[inline]
    pub(crate) fn storage(&self) -> &Storage {
        &self.storage
    }

    /// Entities, tables and columns, mutably.
    #[inline]
    pub(crate) fn storage_mut(&mut self) -> &mut Storage {
        &mut self.storage
    }

    /// The hooks (and the commands they emitted, not yet applied).
    #[inline]
    pub(crate) fn hooks_mut(&mut self) -> &mut Hooks {
        &mut self.hooks
    }

    /// Unique per `World` value: what systems' output buffers are bound to.
    #[inline]
    pub(crate) fn uid(&self) -> u64 {
        self.uid
    }

    /// The fold of every component type, by id.
    #[inline]
    pub(crate) fn folds(&self) -> &[Box<dyn AnyFold>] {
        &self.folds
    }

    /// The parts of the world Sync's steps work on, borrowed apart (see [`SyncParts`]).
    #[inline]
    pub(crate) fn sync_parts(&mut self) -> SyncParts<'_> {
        SyncParts {
            storage: &mut self.storage,
            folds: &mut self.folds,
            resources: &mut self.resources,
            resource_folds: &mut self.resource_folds,
            messages: &mut self.messages,
        }
    }
}

/// The parts of a [`World`] that Sync's steps (`crate::sync`) borrow, each mutably and
/// apart from the others: a step takes the fields it needs, say the folds beside the
/// storage they fold into.
pub(crate) struct SyncParts<'w> {
    /// Entities, tables and columns.
    pub(crate) storage: &'w mut Storage,
    /// The fold of every component type, by id.
    pub(crate) folds: &'w mut [Box<dyn AnyFold>],
    /// The resources.
    pub(crate) resources: &'w mut Resources,
    /// The merges of the resources systems may write, by resource index.
    pub(crate) resource_folds: &'w mut [ResourceFold],
    /// The message types and their delivered messages.
    pub(crate) messages: &'w mut Messages,
}

/// Stages a bundle's values in the storage for [`World::spawn`]; `ids` collects the types.
struct StageSink<'a> {
    storage: &'a mut Storage,
    ids: &'a mut Vec<ComponentId>,
}

impl BundleSink for StageSink<'_> {
    #[track_caller]
    fn put<C: Component>(&mut self, value: C) {
        assert_not_children::<C>();
        let id = self.storage.registry().id::<C>();
        let missing = self.storage.missing_required(id);
        if self.ids.contains(&id) || missing.is_some() {
            for &staged in self.ids.iter() {
                self.storage.discard_staged(staged);
            }
            self.ids.clear();
            match missing {
                Some(message) => panic!("{message}"),
                None => crate::bundle::duplicate::<C>(),
            }
        }
        self.ids.push(id);
        self.storage.stage(id, value);
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
