//! The [`World`]: entities, their components, and resources.

use std::any::{Any, TypeId, type_name};
use std::fmt;
use std::sync::Arc;

use crate::bundle::{Bundle, BundleSink, Sink};
use crate::component::{Component, ComponentId, Registry, TypeIdMap};
use crate::entity::{Entities, Entity, Location};
use crate::query::{QueryData, QueryIter};
use crate::storage::{AnyStorage, Table, TableId, Tables, TypedStorage};

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
    entities: Entities,
    registry: Registry,
    /// One storage per component type, by id.
    storages: Vec<Box<dyn AnyStorage>>,
    tables: Tables,
    /// For each component id, the tables that hold it, in creation order (column `k` of a
    /// type lives in table `tables_with[id][k]`). This is the query match cache.
    tables_with: Vec<Vec<TableId>>,
    resources: TypeIdMap<Box<dyn Any + Send + Sync>>,
    scratch_ids: Vec<ComponentId>,
}

/// Whether `merge` is [`merge::last`](crate::merge::last) itself, with `C::Output = C`.
///
/// `register` takes any closure, so the only way to recognise `merge::last::<C>` without a
/// `C: Clone` bound is its type: a zero-sized function item named `runsync::merge::last<..>`.
/// This is only an optimisation hint (Sync may then swap a single writer's whole column in
/// instead of merging it value by value, which gives the same result); if the name ever
/// changes form, the answer is `false` and Sync merges the slow way.
fn is_merge_last<C: Component, F: 'static>(_merge: &F) -> bool {
    size_of::<F>() == 0
        && TypeId::of::<C::Output>() == TypeId::of::<C>()
        && type_name::<F>().starts_with("runsync::merge::last<")
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
            .field("component_types", &self.registry.len())
            .field("tables", &self.tables.len())
            .field("resources", &self.resources.len())
            .finish()
    }
}

impl World {
    /// An empty world.
    pub fn new() -> Self {
        World {
            entities: Entities::default(),
            registry: Registry::default(),
            storages: Vec::new(),
            tables: Tables::default(),
            tables_with: Vec::new(),
            resources: TypeIdMap::default(),
            scratch_ids: Vec::new(),
        }
    }

    /// Registers component type `C` with its merge function, which folds the outputs
    /// systems emit for one entity in one frame (in system registration order, then
    /// emission order) into the stored value. See [`merge`](crate::merge) for the common
    /// ones. Returns the type's id.
    ///
    /// # Panics
    /// If `C` is already registered: one type has one merge.
    #[track_caller]
    pub fn register<C: Component>(
        &mut self,
        merge: impl Fn(&mut C, &[C::Output]) + Send + Sync + 'static,
    ) -> ComponentId {
        match self.registry.add::<C>() {
            Ok(id) => {
                let last_wins = is_merge_last::<C, _>(&merge);
                let merge = Arc::new(merge);
                let each = Arc::clone(&merge);
                self.storages.push(Box::new(TypedStorage::<C>::new(
                    Box::new(move |value, outputs| each(value, outputs)),
                    Box::new(move |columns, plan, values| {
                        crate::sync::merge_sorted_with(&*merge, columns, plan, values)
                    }),
                    last_wins,
                )));
                self.tables_with.push(Vec::new());
                id
            }
            Err(_) => panic!(
                "runsync: component type `{}` is registered twice; register each type once, \
                 with the one merge function it uses",
                type_name::<C>()
            ),
        }
    }

    /// Whether `C` is registered.
    pub fn is_registered<C: Component>(&self) -> bool {
        self.registry.get::<C>().is_some()
    }

    /// Spawns an entity with the components of `bundle` (a tuple; `()` for none).
    ///
    /// # Panics
    /// If a type in the bundle is unregistered or appears twice.
    #[track_caller]
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        let mut ids = std::mem::take(&mut self.scratch_ids);
        ids.clear();
        bundle.put(&mut BundleSink(Sink::World {
            storages: &mut self.storages,
            registry: &self.registry,
            ids: &mut ids,
        }));
        let e = self.spawn_staged(&mut ids);
        self.scratch_ids = ids;
        e
    }

    /// Spawns one entity per bundle, all of one kind, and returns their ids in order —
    /// the same ids and the same world as calling [`spawn`](Self::spawn) for each.
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
    /// spawned).
    #[track_caller]
    pub fn spawn_batch<B: Bundle>(&mut self, bundles: impl IntoIterator<Item = B>) -> Vec<Entity> {
        B::spawn_batch(self, bundles.into_iter())
    }

    /// Despawns `e`, dropping its components. Returns `false` if it was already dead.
    pub fn despawn(&mut self, e: Entity) -> bool {
        let Some(loc) = self.despawn_entity(e) else {
            return false;
        };
        for &c in self.tables.get(loc.table).components() {
            self.storages[c.index()].flush_graveyard();
        }
        true
    }

    /// Inserts `component` into `e`, replacing (and dropping) any existing `C`.
    /// Returns `false`, dropping `component`, if `e` is dead.
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn insert<C: Component>(&mut self, e: Entity, component: C) -> bool {
        let id = self.registry.id::<C>();
        self.typed_storage_mut::<C>(id).stage(component);
        let ok = self.insert_staged(e, id);
        self.storages[id.index()].flush_graveyard();
        ok
    }

    /// Removes `C` from `e` and returns it, or `None` if `e` is dead or has no `C`.
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn remove<C: Component>(&mut self, e: Entity) -> Option<C> {
        let id = self.registry.id::<C>();
        if !self.remove_id(e, id) {
            return None;
        }
        self.typed_storage_mut::<C>(id).take_removed()
    }

    /// `e`'s `C`, or `None` if `e` is dead or has no `C`.
    ///
    /// # Panics
    /// If `C` is not registered.
    #[inline]
    #[track_caller]
    pub fn get<C: Component>(&self, e: Entity) -> Option<&C> {
        let id = self.registry.id::<C>();
        let loc = self.entities.location(e)?;
        let col = self.tables.get(loc.table).column(id)?;
        Some(&self.storage::<C>(id).columns[col as usize][loc.row as usize])
    }

    /// `e`'s `C`, mutably. Only possible between frames: systems get `&World`.
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn get_mut<C: Component>(&mut self, e: Entity) -> Option<&mut C> {
        let id = self.registry.id::<C>();
        let loc = self.entities.location(e)?;
        let col = self.tables.get(loc.table).column(id)?;
        Some(&mut self.typed_storage_mut::<C>(id).columns[col as usize][loc.row as usize])
    }

    /// Whether `e` has a `C` (false if dead).
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn has<C: Component>(&self, e: Entity) -> bool {
        let id = self.registry.id::<C>();
        self.entities
            .location(e)
            .is_some_and(|l| self.tables.get(l.table).has(id))
    }

    /// Whether `e` is alive (spawned and not despawned).
    #[inline]
    pub fn is_alive(&self, e: Entity) -> bool {
        self.entities.location(e).is_some()
    }

    /// Number of live entities.
    #[inline]
    pub fn len(&self) -> usize {
        self.entities.len()
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
            None => panic!(
                "runsync: no resource of type `{}`; add it with `world.insert_resource(..)` \
                 before running systems that read it",
                type_name::<R>()
            ),
        }
    }

    /// The resource of type `R`, if any.
    pub fn get_resource<R: Send + Sync + 'static>(&self) -> Option<&R> {
        self.resources.get(&TypeId::of::<R>())?.downcast_ref()
    }

    /// The resource of type `R`, mutably (between frames).
    pub fn resource_mut<R: Send + Sync + 'static>(&mut self) -> Option<&mut R> {
        self.resources.get_mut(&TypeId::of::<R>())?.downcast_mut()
    }

    /// Removes and returns the resource of type `R`.
    pub fn remove_resource<R: Send + Sync + 'static>(&mut self) -> Option<R> {
        let b = self.resources.remove(&TypeId::of::<R>())?;
        b.downcast().ok().map(|b| *b)
    }

    /// What the world has reserved; see [`MemoryStats`](crate::MemoryStats).
    pub(crate) fn memory(&self) -> (usize, usize, usize) {
        let columns = self
            .storages
            .iter()
            .map(|s| s.capacity_bytes())
            .sum::<usize>()
            + (0..self.tables.len())
                .map(|t| self.tables.get(t as TableId).entities.capacity())
                .sum::<usize>()
                * std::mem::size_of::<Entity>();
        (self.tables.len(), self.entities.slots(), columns)
    }

    // ----- crate-internal access -----

    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    #[inline]
    pub(crate) fn storage<C: Component>(&self, id: ComponentId) -> &TypedStorage<C> {
        self.storages[id.index()]
            .as_any()
            .downcast_ref()
            .expect("component id maps to another type")
    }

    fn typed_storage_mut<C: Component>(&mut self, id: ComponentId) -> &mut TypedStorage<C> {
        self.storages[id.index()]
            .as_any_mut()
            .downcast_mut()
            .expect("component id maps to another type")
    }

    pub(crate) fn storages_mut(&mut self) -> &mut [Box<dyn AnyStorage>] {
        &mut self.storages
    }

    /// The parts Sync's merge needs at once: storages mutably, the rest shared.
    pub(crate) fn split_for_merge(&mut self) -> (&mut [Box<dyn AnyStorage>], &Entities, &Tables) {
        (&mut self.storages, &self.entities, &self.tables)
    }

    #[inline]
    pub(crate) fn table(&self, t: TableId) -> &Table {
        self.tables.get(t)
    }

    #[inline]
    pub(crate) fn table_len(&self, t: TableId) -> usize {
        self.tables.get(t).len()
    }

    #[inline]
    pub(crate) fn table_entities(&self, t: TableId) -> &[Entity] {
        &self.tables.get(t).entities
    }

    #[inline]
    pub(crate) fn table_count(&self) -> usize {
        self.tables.len()
    }

    #[inline]
    pub(crate) fn tables_with(&self, id: ComponentId) -> &[TableId] {
        &self.tables_with[id.index()]
    }

    // ----- structural changes (between frames and in Sync) -----

    /// Spawns an entity from values staged in the storages of `ids` (bundle order).
    pub(crate) fn spawn_staged(&mut self, ids: &mut [ComponentId]) -> Entity {
        ids.sort_unstable();
        let t = self.table_for(ids);
        let e = self.entities.alloc();
        let table = self.tables.get_mut(t);
        for &c in table.components() {
            let col = table.column(c).expect("table lacks its own column");
            self.storages[c.index()].push_staged(col);
        }
        let row = table.entities.len() as u32;
        table.entities.push(e);
        self.entities
            .set_location(e.index(), Location { table: t, row });
        e
    }

    /// The table for exactly the types `sorted` (sorted, distinct), created if needed.
    fn table_for(&mut self, sorted: &[ComponentId]) -> TableId {
        let (storages, tables_with) = (&mut self.storages, &mut self.tables_with);
        self.tables.find_or_create(sorted, |c, t| {
            tables_with[c.index()].push(t);
            storages[c.index()].add_column()
        })
    }

    /// The table for a bundle's types `ids` (sorted here).
    ///
    /// # Panics
    /// If a type appears twice.
    #[track_caller]
    pub(crate) fn bundle_table(&mut self, ids: &mut [ComponentId]) -> TableId {
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            panic!(
                "runsync: a bundle names component type `{}` twice; each type may appear \
                 once per entity",
                self.registry.info(w[0]).name
            );
        }
        self.table_for(ids)
    }

    /// Appends `values` (emptied) to `C`'s column in `table`; [`push_entities`] must then
    /// add as many rows.
    ///
    /// [`push_entities`]: Self::push_entities
    pub(crate) fn append_column<C: Component>(&mut self, table: TableId, values: &mut Vec<C>) {
        let id = self.registry.id::<C>();
        let col = self
            .tables
            .get(table)
            .column(id)
            .expect("the bundle's table has C");
        let column = &mut self.typed_storage_mut::<C>(id).columns[col as usize];
        if column.is_empty() {
            // An empty column takes the buffer as it is: no copy.
            std::mem::swap(column, values);
        } else {
            column.append(values);
        }
    }

    /// Allocates `n` entities for rows already appended to every column of `table`, and
    /// pushes their ids onto `out`.
    pub(crate) fn push_entities(&mut self, table: TableId, n: usize, out: &mut Vec<Entity>) {
        let t = self.tables.get_mut(table);
        t.entities.reserve(n);
        for _ in 0..n {
            let e = self.entities.alloc();
            let row = t.entities.len() as u32;
            t.entities.push(e);
            self.entities
                .set_location(e.index(), Location { table, row });
            out.push(e);
        }
    }

    /// Despawns `e`; its components go to the graveyards. Returns where it was.
    pub(crate) fn despawn_entity(&mut self, e: Entity) -> Option<Location> {
        let loc = self.entities.free(e)?;
        let table = self.tables.get(loc.table);
        for &c in table.components() {
            let col = table.column(c).expect("table lacks its own column");
            self.storages[c.index()].remove_row(col, loc.row);
        }
        self.swap_remove_entity(loc);
        Some(loc)
    }

    /// Inserts the value staged in storage `id` into `e`. Returns `false` (value sent to
    /// the graveyard) if `e` is dead.
    pub(crate) fn insert_staged(&mut self, e: Entity, id: ComponentId) -> bool {
        let Some(loc) = self.entities.location(e) else {
            self.storages[id.index()].discard_staged();
            return false;
        };
        if let Some(col) = self.tables.get(loc.table).column(id) {
            self.storages[id.index()].replace_staged(col, loc.row);
            return true;
        }
        let (storages, tables_with) = (&mut self.storages, &mut self.tables_with);
        let dst = self.tables.neighbour(loc.table, id, true, |c, t| {
            tables_with[c.index()].push(t);
            storages[c.index()].add_column()
        });
        self.move_entity(e, loc, dst);
        true
    }

    /// Removes type `id` from `e` (value to the graveyard). Returns `false` if `e` is dead
    /// or has no such component.
    pub(crate) fn remove_id(&mut self, e: Entity, id: ComponentId) -> bool {
        let Some(loc) = self.entities.location(e) else {
            return false;
        };
        if !self.tables.get(loc.table).has(id) {
            return false;
        }
        let (storages, tables_with) = (&mut self.storages, &mut self.tables_with);
        let dst = self.tables.neighbour(loc.table, id, false, |c, t| {
            tables_with[c.index()].push(t);
            storages[c.index()].add_column()
        });
        self.move_entity(e, loc, dst);
        true
    }

    /// Moves `e` from `src` to the end of table `dst`: shared types move, types only in
    /// `src` go to the graveyard, types only in `dst` take their staged value.
    fn move_entity(&mut self, e: Entity, src: Location, dst: TableId) {
        let from = self.tables.get(src.table);
        let to = self.tables.get(dst);
        for &c in from.components() {
            let sc = from.column(c).expect("table lacks its own column");
            match to.column(c) {
                Some(dc) => self.storages[c.index()].move_row(sc, src.row, dc),
                None => self.storages[c.index()].remove_row(sc, src.row),
            }
        }
        for &c in to.components() {
            if !from.has(c) {
                let dc = to.column(c).expect("table lacks its own column");
                self.storages[c.index()].push_staged(dc);
            }
        }
        self.swap_remove_entity(src);
        let to = self.tables.get_mut(dst);
        let row = to.entities.len() as u32;
        to.entities.push(e);
        self.entities
            .set_location(e.index(), Location { table: dst, row });
    }

    /// Removes row `loc.row` from its table's entity list (columns already swap-removed)
    /// and fixes the location of the entity that moved into the hole.
    fn swap_remove_entity(&mut self, loc: Location) {
        let table = self.tables.get_mut(loc.table);
        table.entities.swap_remove(loc.row as usize);
        if let Some(&moved) = table.entities.get(loc.row as usize) {
            self.entities.set_location(moved.index(), loc);
        }
    }

    /// Drops every value removed by structural changes.
    pub(crate) fn flush_graveyards(&mut self) {
        for s in &mut self.storages {
            s.flush_graveyard();
        }
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
        w.register::<Zst>(|_, _| {});
        w.register::<Counted>(|_, _| {});
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
    fn recognises_merge_last() {
        #[derive(Clone, Copy)]
        struct P(f32);
        impl Component for P {
            type Output = P;
        }
        #[derive(Clone, Copy)]
        struct Q(f32);
        impl Component for Q {
            type Output = f32;
        }
        assert!(is_merge_last::<P, _>(&merge::last::<P>));
        assert!(!is_merge_last::<P, _>(&merge::first::<P>));
        assert!(!is_merge_last::<P, _>(&|p: &mut P, o: &[P]| p.0 = o[0].0));
        assert!(!is_merge_last::<Q, _>(&|q: &mut Q, o: &[f32]| q.0 = o[0]));
    }

    #[test]
    fn resources() {
        let mut w = World::new();
        assert!(w.get_resource::<u32>().is_none());
        w.insert_resource(5u32);
        *w.resource_mut::<u32>().unwrap() += 1;
        assert_eq!(*w.resource::<u32>(), 6);
        assert_eq!(w.remove_resource::<u32>(), Some(6));
    }

    #[test]
    #[should_panic(expected = "no resource of type `u64`")]
    fn missing_resource_panics() {
        World::new().resource::<u64>();
    }
}
