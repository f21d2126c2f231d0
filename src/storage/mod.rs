//! Where entities and components live. [`Storage`] is the one owner of the entity
//! allocator (`crate::entity`), the component registry, the archetype tables and every
//! type's columns; its methods make the structural changes (spawn, despawn, insert,
//! remove: entity moves between tables). Beside it, one file per mechanism:
//!
//! - `table.rs` — archetype tables: a type set, its entities, which column each type uses;
//! - `column.rs` — per-type columns ([`TypedColumns`]) and their type-erased face
//!   ([`AnyColumns`]), with the per-type opt-ins (snapshot, checksum, `Debug`);
//! - `mask.rs` — table signatures and query masks (`bitvec` words);
//! - `marks.rs` — change marks (`Changed` / `Added`), row-aligned bit sets per column;
//! - `required.rs` — required components: which types a type requires, and their
//!   constructors;
//! - `snapshot.rs` — copies of the whole storage, its checksum and desync reports;
//! - `save.rs` — the storage's part of save files: written, parsed and checked, applied;
//! - `transfer.rs` — one entity as a record, to move it to another world;
//! - `canonical.rs` — canonical order: tables visited by their types, rows sorted by
//!   entity index (`World::set_canonical_order`), with `permute.rs` reordering rows.
//!
//! Entities with the same set of component types share a table: a list of entities and,
//! for each of its component types, one column (a `Vec<C>`) in that type's
//! [`TypedColumns`]. Column `k` of a type belongs to the `k`-th table that holds the type,
//! so a type's columns own all of its data: Sync can fold different types on different
//! threads by handing out `&mut` to different [`TypedColumns`], with no unsafe code.
//! `tables_with` (per type, the tables that hold it) is the query match cache.
//!
//! Tables are only created and rows only move in Sync or between frames (never while
//! systems run), so everything here is plain `&mut` code. Storage knows nothing of
//! the `World`, outputs, merges or Sync.
//!
//! Storage's fields are private: the rest of the crate goes through its methods — one
//! entity lookup ([`Storage::locate`]), the registry and tables read-only
//! ([`registry`](Storage::registry), [`tables`](Storage::tables)), columns by type
//! ([`typed`](Storage::typed), [`columns_mut`](Storage::columns_mut), the query split
//! [`split_columns`](Storage::split_columns)), the ids reserved for spawns made in Run
//! ([`reserve_for_stage`](Storage::reserve_for_stage) ..
//! [`commit_reserved`](Storage::commit_reserved)), and the structural changes below.
//! A type's [`TypedColumns`] are closed the same way: one value by location (`get`,
//! `get_mut`), the columns and marks read-only for queries (`columns`, `marks`),
//! `split_mut` for `query_mut`, and `swap_with` to lend both to a fold and take them back.
//!
//! Imports run one way, so the folder has no import cycle: `mod.rs` imports the
//! mechanisms it is built of (`table`, `column`, `mask`, `marks`, `required`,
//! `canonical`), none of which imports it; the files that add methods to [`Storage`]
//! (`snapshot`, `save`, `transfer`) import it, and `mod.rs` imports nothing of theirs
//! (their types are reached by path: `storage::snapshot::StorageSnapshot`).

mod canonical;
mod column;
mod marks;
mod mask;
mod permute;
mod required;
pub(crate) mod save;
pub(crate) mod snapshot;

mod table;
mod transfer;

use std::any::type_name;
use std::ops::Range;

use canonical::Canonical;
pub(crate) use canonical::TableOrder;
pub(crate) use column::{AnyColumns, DebugFn, Show, TypedColumns, debug_fn};
pub(crate) use marks::{ChangedWords, TypeMarks};
pub(crate) use mask::QueryMask;
pub(crate) use required::Required;
pub(crate) use table::{Table, TableId, Tables};

use crate::component::{Component, ComponentId, Registry};
use crate::entity::{Entities, Entity, Location};
use crate::hierarchy::{ChildOf, Children, Hierarchy};

/// The one owner of entities, tables and columns.
#[derive(Default)]
pub(crate) struct Storage {
    entities: Entities,
    registry: Registry,
    /// One set of columns per component type, by id.
    columns: Vec<Box<dyn AnyColumns>>,
    tables: Tables,
    /// For each component id, the tables that hold it, in creation order (column `k` of a
    /// type lives in table `tables_with[id][k]`). This is the query match cache.
    tables_with: Vec<Vec<TableId>>,
    /// The ids of `ChildOf` and `Children`, once `World::register_hierarchy` registered
    /// them: structural changes then keep parents and children in step.
    hierarchy: Option<Hierarchy>,
    /// Which types each type requires (required components).
    required: Required,
    /// Canonical order's table lists, when it is on (`World::set_canonical_order`).
    canonical: Option<Box<Canonical>>,
}

/// What a new table needs of the types' columns (`Tables::find_or_create`'s
/// `add_column`): a column of type `c` for table `t`, and `t` in `c`'s table list.
fn add_column<'a>(
    columns: &'a mut [Box<dyn AnyColumns>],
    tables_with: &'a mut [Vec<TableId>],
) -> impl FnMut(ComponentId, TableId) -> u32 + 'a {
    |c, t| {
        tables_with[c.index()].push(t);
        columns[c.index()].add_column()
    }
}

impl Storage {
    /// An empty storage with the same registered types and opt-ins (no entities, and no
    /// required components: it is filled by loading a save, never by spawns).
    pub(crate) fn empty_like(&self) -> Storage {
        Storage {
            entities: Entities::default(),
            registry: self.registry.clone(),
            columns: self.columns.iter().map(|c| c.empty_like()).collect(),
            tables: Tables::default(),
            tables_with: vec![Vec::new(); self.columns.len()],
            hierarchy: self.hierarchy,
            required: Required::default(),
            canonical: self.canonical.as_ref().map(|_| Box::default()),
        }
    }

    /// Registers `C`, returning its new id, or `Err` with the existing id.
    pub(crate) fn add_type<C: Component>(&mut self) -> Result<ComponentId, ComponentId> {
        let id = self.registry.add::<C>()?;
        self.columns.push(Box::new(TypedColumns::<C>::default()));
        self.tables_with.push(Vec::new());
        self.required.resolve(std::any::TypeId::of::<C>(), id);
        Ok(id)
    }

    #[inline]
    pub(crate) fn typed<C: Component>(&self, id: ComponentId) -> &TypedColumns<C> {
        self.columns[id.index()].typed()
    }

    #[inline]
    pub(crate) fn typed_mut<C: Component>(&mut self, id: ComponentId) -> &mut TypedColumns<C> {
        self.columns[id.index()].typed_mut()
    }

    #[inline]
    pub(crate) fn columns(&self, id: ComponentId) -> &dyn AnyColumns {
        &*self.columns[id.index()]
    }

    #[inline]
    pub(crate) fn columns_mut(&mut self, id: ComponentId) -> &mut dyn AnyColumns {
        &mut *self.columns[id.index()]
    }

    /// Every type's columns mutably, with the registry, the tables and the match cache
    /// shared (for `World::query_mut`).
    pub(crate) fn split_columns(&mut self) -> SplitColumns<'_> {
        SplitColumns {
            columns: &mut self.columns,
            registry: &self.registry,
            tables: &self.tables,
            order: TableOrder::of(&self.tables, &self.tables_with, self.canonical.as_deref()),
        }
    }

    /// Turns canonical order on or off (see `canonical.rs`).
    pub(crate) fn set_canonical(&mut self, on: bool) {
        self.canonical = on.then(Box::default);
    }

    /// Whether canonical order is on.
    pub(crate) fn is_canonical(&self) -> bool {
        self.canonical.is_some()
    }

    /// The order in which queries try tables now.
    #[inline]
    pub(crate) fn table_order(&self) -> TableOrder<'_> {
        TableOrder::of(&self.tables, &self.tables_with, self.canonical.as_deref())
    }

    /// Brings the table lists and every table's rows into canonical order (a no-op when
    /// canonical order is off). Called before each stage's Run.
    pub(crate) fn canonicalize(&mut self) {
        if let Some(c) = &mut self.canonical {
            let (tables, with) = (&mut self.tables, &self.tables_with);
            c.update(tables, with, &mut self.columns, &mut self.entities);
        }
    }

    #[inline]
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    #[inline]
    pub(crate) fn tables(&self) -> &Tables {
        &self.tables
    }

    // ----- entities: lookup and reserved ids -----

    /// Where the live entity `e` is (its table and row), or `None` if the handle is
    /// stale: the one entity lookup.
    #[inline]
    pub(crate) fn locate(&self, e: Entity) -> Option<Location> {
        self.entities.location(e)
    }

    /// Number of live entities.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.entities.len()
    }

    /// Every slot's current id, `None` for a retired one (`World::entity_slots`).
    pub(crate) fn slot_ids(&self) -> impl ExactSizeIterator<Item = Option<Entity>> + '_ {
        self.entities.slot_ids()
    }

    /// Makes room for entities with indices below `n` (`World::reserve_entity_slots`).
    pub(crate) fn grow_to(&mut self, n: usize) {
        self.entities.grow_to(n);
    }

    /// Takes the slots that imports placed entities in off the allocator's lists (after
    /// `import_entity`; see `Entities::unlist_placed`).
    pub(crate) fn unlist_placed(&mut self) {
        self.entities.unlist_placed();
    }

    /// Reserves the ids a stage's systems (at `places` of `systems`) may hand out with
    /// `Output::spawn` in Run (see `Entities::reserve_for_stage`).
    #[inline]
    pub(crate) fn reserve_for_stage(&mut self, systems: usize, places: Range<usize>) {
        self.entities.reserve_for_stage(systems, places);
    }

    /// Takes back every id reserved for this frame's spawns (after a Run that failed).
    pub(crate) fn unreserve_frame(&mut self) {
        self.entities.unreserve_frame();
    }

    /// The id of system `system`'s `k`-th spawn in this Run (see
    /// `Entities::reserved_id`).
    #[inline]
    pub(crate) fn reserved_id(&self, system: usize, k: usize) -> Entity {
        self.entities.reserved_id(system, k)
    }

    /// Creates the slots of the overflow ids handed out in Run, `spawned(s)` the spawns
    /// of the system at place `s` (see `Entities::create_overflow`).
    #[inline]
    pub(crate) fn create_overflow(&mut self, spawned: impl Fn(usize) -> usize) {
        self.entities.create_overflow(spawned);
    }

    /// System `system`'s reservation drops the `spawned` ids it used (see
    /// `Entities::commit_reserved`).
    #[inline]
    pub(crate) fn commit_reserved(&mut self, system: usize, spawned: usize) {
        self.entities.commit_reserved(system, spawned);
    }

    // ----- hierarchy and required components -----

    /// The ids of `ChildOf` and `Children`, once `World::register_hierarchy` registered
    /// them.
    #[inline]
    pub(crate) fn hierarchy(&self) -> Option<Hierarchy> {
        self.hierarchy
    }

    /// Keeps parents and children in step from now on (`World::register_hierarchy`).
    pub(crate) fn set_hierarchy(&mut self, h: Hierarchy) {
        self.hierarchy = Some(h);
    }

    /// Whether type `id` requires other types (its inserts go through
    /// [`insert_required`](Self::insert_required)).
    #[inline]
    pub(crate) fn requires(&self, id: ComponentId) -> bool {
        self.required.has(id)
    }

    /// Makes type `of` require `R`, made by `make` (see `required.rs`).
    ///
    /// # Panics
    /// If `R` is `of`.
    #[track_caller]
    pub(crate) fn add_requirement<R: Component>(
        &mut self,
        of: ComponentId,
        make: impl Fn() -> R + Send + Sync + 'static,
    ) {
        let id = self.registry.get::<R>();
        let name = self.type_name(of);
        self.required.add::<R>(of, name, id, make);
    }

    /// `(tables, entity slots, bytes reserved by columns and entity lists)`.
    pub(crate) fn memory(&self) -> (usize, usize, usize) {
        let columns = self
            .columns
            .iter()
            .map(|s| s.capacity_bytes())
            .sum::<usize>()
            + (0..self.tables.len())
                .map(|t| self.tables.get(t as TableId).entities_capacity())
                .sum::<usize>()
                * std::mem::size_of::<Entity>();
        (self.tables.len(), self.entities.slots(), columns)
    }

    /// The entity whose `id` value is at row `row` of column `col`, if there is one.
    pub(crate) fn entity_at(&self, id: ComponentId, col: u32, row: u32) -> Option<Entity> {
        let table = *self.tables_with[id.index()].get(col as usize)?;
        self.tables.get(table).entities().get(row as usize).copied()
    }

    /// Where `e`'s `id` value is: `(column, row)`, if `e` is alive and has one.
    #[inline]
    pub(crate) fn column_row_of(&self, e: Entity, id: ComponentId) -> Option<(u32, u32)> {
        let loc = self.entities.location(e)?;
        let col = self.tables.get(loc.table).column(id)?;
        Some((col, loc.row))
    }

    // ----- structural changes (between frames and in Sync) -----

    /// Stages `value` for a spawn or insert of type `C` (id `id`).
    #[inline]
    pub(crate) fn stage<C: Component>(&mut self, id: ComponentId, value: C) {
        self.typed_mut::<C>(id).stage(value);
    }

    /// Drops a staged value and the graveyard of type `id` (an aborted spawn).
    pub(crate) fn discard_staged(&mut self, id: ComponentId) {
        let c = &mut self.columns[id.index()];
        c.discard_staged();
        c.flush_graveyard();
    }

    /// Why type `id` cannot be spawned or inserted yet (a requirement of it names a type
    /// not registered), if so: the message.
    #[inline]
    pub(crate) fn missing_required(&self, id: ComponentId) -> Option<String> {
        self.required.missing(id, |c| self.registry.info(c).name)
    }

    /// Panics with [`missing_required`](Self::missing_required)'s message, if any.
    #[inline]
    #[track_caller]
    pub(crate) fn check_required(&self, id: ComponentId) {
        if let Some(message) = self.missing_required(id) {
            panic!("{message}");
        }
    }

    /// Adds to `ids` (a bundle's types, their values staged) every type they require that
    /// the bundle lacks, transitively, staging a value of each (see `required.rs`).
    /// Nothing without requirements.
    #[inline]
    pub(crate) fn stage_required(&mut self, ids: &mut Vec<ComponentId>) {
        if !self.required.any() {
            return;
        }
        let (required, columns) = (&self.required, &mut self.columns);
        required.closure(ids, 0, |r| r.make().stage(&mut *columns[r.id().index()]));
    }

    /// After `e` gained or replaced its `id` value: inserts every type `id` requires,
    /// transitively, that `e` lacks, each made by its constructor, and puts their ids in
    /// `added` (in the order inserted). Nothing if `id` has no requirement or `e` is dead.
    pub(crate) fn insert_required(
        &mut self,
        e: Entity,
        id: ComponentId,
        added: &mut Vec<ComponentId>,
    ) {
        added.clear();
        if !self.required.has(id) {
            return;
        }
        let Some(loc) = self.entities.location(e) else {
            return;
        };
        added.extend(
            self.tables
                .get(loc.table)
                .components()
                .iter()
                .filter(|&&c| c != id),
        );
        let present = added.len();
        added.push(id);
        let mut plan = std::mem::take(self.required.plan_mut());
        plan.clear();
        self.required
            .closure(added, present, |r| plan.push(r.clone()));
        for r in &plan {
            let c = r.id();
            r.make().stage(&mut *self.columns[c.index()]);
            let inserted = self.insert_staged(e, c);
            debug_assert!(inserted, "the entity is alive");
        }
        added.drain(..=present);
        plan.clear();
        *self.required.plan_mut() = plan;
    }

    /// For a batch spawn of `ids` (a bundle's types): appends to `ids` the types they
    /// require that the bundle lacks (see [`stage_required`](Self::stage_required)) and
    /// keeps how to make them for [`fill_required`](Self::fill_required).
    pub(crate) fn add_required(&mut self, ids: &mut Vec<ComponentId>) {
        let mut plan = std::mem::take(self.required.plan_mut());
        plan.clear();
        if self.required.any() {
            self.required.closure(ids, 0, |r| plan.push(r.clone()));
        }
        *self.required.plan_mut() = plan;
    }

    /// Pushes `n` values of every type [`add_required`](Self::add_required) added onto
    /// its column in `table`, marked added; then forgets them.
    ///
    /// The constructors are user code: if one panics, the batch is cut back whole (every
    /// column of `table` to its entity count, see [`cut_back`](Self::cut_back)) before
    /// the panic goes on, so no row is left without its entity.
    pub(crate) fn fill_required(&mut self, table: TableId, n: usize) {
        let plan = std::mem::take(self.required.plan_mut());
        let guard = CutBackOnUnwind {
            storage: self,
            table,
        };
        for r in &plan {
            let c = r.id();
            let storage = &mut *guard.storage;
            let col = storage
                .tables
                .get(table)
                .column(c)
                .expect("the batch's table has its required types");
            let columns = &mut *storage.columns[c.index()];
            let before = columns.column_len(col);
            r.make().push(columns, col, n);
            columns.mark_added(col, before..before + n);
        }
        guard.disarm();
        let mut plan = plan;
        plan.clear();
        *self.required.plan_mut() = plan;
    }

    /// Cuts every column of `table` back to the table's entity count (the values past it
    /// to the graveyards): what a batch spawn that unwound appended before its entities.
    fn cut_back(&mut self, table: TableId) {
        let t = self.tables.get(table);
        let rows = t.entities().len();
        for &c in t.components() {
            let col = t.column(c).expect("table lacks its own column");
            self.columns[c.index()].truncate_rows(col, rows);
        }
    }

    /// Spawns an entity from values staged in the columns of `ids` (bundle order).
    pub(crate) fn spawn_staged(&mut self, ids: &mut [ComponentId]) -> Entity {
        let e = self.entities.alloc();
        self.place_staged(e, ids);
        e
    }

    /// [`spawn_staged`](Self::spawn_staged) as the reserved id `e` (a spawn made in Run:
    /// see `Entities::reserved_id`).
    pub(crate) fn spawn_staged_as(&mut self, e: Entity, ids: &mut [ComponentId]) {
        self.entities.claim(e);
        self.place_staged(e, ids);
    }

    /// [`place_marked`](Self::place_marked)'s mark for a type the entity just gained
    /// (changed too).
    const MARK_ADDED: u8 = 0b11;

    /// Puts the just-allocated `e` in the table of `ids`, with its staged values, marked
    /// added.
    fn place_staged(&mut self, e: Entity, ids: &mut [ComponentId]) {
        ids.sort_unstable();
        self.place_marked(e, ids, |_| Self::MARK_ADDED);
    }

    /// Puts `e` in the table of `sorted` (its types, sorted) with its staged values, the
    /// `k`-th type's row marked as `mark(k)` says (bit 0 changed, bit 1 added: an entity
    /// record's marks). Generic, so that a spawn's constant marks cost nothing per type.
    #[inline]
    pub(crate) fn place_marked(
        &mut self,
        e: Entity,
        sorted: &[ComponentId],
        mark: impl Fn(usize) -> u8,
    ) {
        let t = self.table_for(sorted);
        let table = self.tables.get_mut(t);
        let row = table.entities().len() as u32;
        for (k, &c) in table.components().iter().enumerate() {
            let col = table.column(c).expect("table lacks its own column");
            self.columns[c.index()].push_staged_marked(col, mark(k));
        }
        table.push(e);
        self.entities
            .set_location(e.index(), Location { table: t, row });
    }

    /// The table for exactly the types `sorted` (sorted, distinct), created if needed.
    fn table_for(&mut self, sorted: &[ComponentId]) -> TableId {
        let add = add_column(&mut self.columns, &mut self.tables_with);
        self.tables.find_or_create(sorted, add)
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
        self.typed_mut::<C>(id).append_added(col, values);
    }

    /// Allocates `n` entities for rows already appended to every column of `table`, and
    /// pushes their ids onto `out`.
    pub(crate) fn push_entities(&mut self, table: TableId, n: usize, out: &mut Vec<Entity>) {
        let t = self.tables.get_mut(table);
        t.entities_mut().reserve(n);
        for _ in 0..n {
            let e = self.entities.alloc();
            let row = t.push(e);
            self.entities
                .set_location(e.index(), Location { table, row });
            out.push(e);
        }
    }

    /// Despawns `e`; its components go to the graveyards. Returns where it was.
    pub(crate) fn despawn(&mut self, e: Entity) -> Option<Location> {
        let loc = self.entities.free(e)?;
        self.remove_row_at(loc);
        Some(loc)
    }

    /// Removes the row at `loc` (its entity's slot already released): its components to
    /// the graveyards, the last row into its place.
    fn remove_row_at(&mut self, loc: Location) {
        let table = self.tables.get(loc.table);
        for &c in table.components() {
            let col = table.column(c).expect("table lacks its own column");
            self.columns[c.index()].remove_row(col, loc.row);
        }
        self.swap_remove_entity(loc);
    }

    /// Drops the graveyards of the types of `table` (after a despawn between frames).
    pub(crate) fn flush_table_graveyards(&mut self, table: TableId) {
        for &c in self.tables.get(table).components() {
            self.columns[c.index()].flush_graveyard();
        }
    }

    /// What inserting (`add`) or removing type `id` would do to `e`; creates the
    /// destination table if needed. Touches no entity and no column.
    pub(crate) fn plan(&mut self, e: Entity, id: ComponentId, add: bool) -> Plan {
        let Some(loc) = self.entities.location(e) else {
            return Plan::Dead;
        };
        let has = self.tables.get(loc.table).has(id);
        if has == add {
            return Plan::Stays(loc);
        }
        Plan::Move {
            from: loc,
            to: self.neighbour(loc.table, id, add),
        }
    }

    /// The entity half of moving `e` from `from` to the end of table `to`: entity lists
    /// and locations. The columns follow with [`move_columns`](Self::move_columns), for
    /// one entity or a batch, before anything else touches them.
    pub(crate) fn relocate(&mut self, e: Entity, from: Location, to: TableId) {
        self.swap_remove_entity(from);
        let row = self.tables.get_mut(to).push(e);
        self.entities
            .set_location(e.index(), Location { table: to, row });
    }

    /// The column half of moving entities from table `from` to table `to`, which left
    /// `from` at `rows` (in order; see [`relocate`](Self::relocate)): shared types move,
    /// types only in `from` go to the graveyard, and `fill(columns, col)` must push one
    /// value per row onto column `col` of each type only in `to`; those rows are marked
    /// added. Marks of shared types move with their rows. One pass per column, with
    /// exactly the result of moving the entities one by one.
    pub(crate) fn move_columns(
        &mut self,
        from: TableId,
        to: TableId,
        rows: &[u32],
        mut fill: impl FnMut(ComponentId, &mut dyn AnyColumns, u32),
    ) {
        let (src, dst) = (self.tables.get(from), self.tables.get(to));
        for &c in src.components() {
            let sc = src.column(c).expect("table lacks its own column");
            match dst.column(c) {
                Some(dc) => self.columns[c.index()].move_rows(sc, rows, dc),
                None => self.columns[c.index()].remove_rows(sc, rows),
            }
        }
        for &c in dst.components() {
            if !src.has(c) {
                let dc = dst.column(c).expect("table lacks its own column");
                let columns = &mut *self.columns[c.index()];
                let before = columns.column_len(dc);
                fill(c, columns, dc);
                let after = columns.column_len(dc);
                columns.mark_added(dc, before..after);
            }
        }
    }

    /// Inserts the value staged in columns `id` into `e`. Returns `false` (value sent to
    /// the graveyard) if `e` is dead.
    pub(crate) fn insert_staged(&mut self, e: Entity, id: ComponentId) -> bool {
        let Some(loc) = self.entities.location(e) else {
            self.columns[id.index()].discard_staged();
            return false;
        };
        if let Some(col) = self.tables.get(loc.table).column(id) {
            self.columns[id.index()].replace_staged(col, loc.row);
            return true;
        }
        let dst = self.neighbour(loc.table, id, true);
        self.move_entity(e, loc, dst);
        true
    }

    /// Removes type `id` from `e` (value to the graveyard). Returns `false` if `e` is dead
    /// or has no such component.
    pub(crate) fn remove(&mut self, e: Entity, id: ComponentId) -> bool {
        let Some(loc) = self.entities.location(e) else {
            return false;
        };
        if !self.tables.get(loc.table).has(id) {
            return false;
        }
        let dst = self.neighbour(loc.table, id, false);
        self.move_entity(e, loc, dst);
        true
    }

    fn neighbour(&mut self, from: TableId, id: ComponentId, add: bool) -> TableId {
        let new_column = add_column(&mut self.columns, &mut self.tables_with);
        self.tables.neighbour(from, id, add, new_column)
    }

    /// Moves `e` from `src` to the end of table `dst`: shared types move, types only in
    /// `src` go to the graveyard, types only in `dst` take their staged value.
    fn move_entity(&mut self, e: Entity, src: Location, dst: TableId) {
        self.relocate(e, src, dst);
        self.move_columns(src.table, dst, &[src.row], |_, c, col| c.push_staged(col));
    }

    /// Removes row `loc.row` from its table's entity list (columns already swap-removed)
    /// and fixes the location of the entity that moved into the hole.
    fn swap_remove_entity(&mut self, loc: Location) {
        if let Some(moved) = self.tables.get_mut(loc.table).swap_remove(loc.row) {
            self.entities.set_location(moved.index(), loc);
        }
    }

    /// The start of stage `stage`'s Sync, of `stages` a frame (Sync's first step): with
    /// one stage, unmarks every row of every type; with several, forgets what that
    /// stage's previous Sync marked (see `marks::TypeMarks::begin_stage`). O(1) per type
    /// that has no mark to forget, O(columns) (times words and stages with several) per
    /// type that has some.
    pub(crate) fn begin_marks(&mut self, stage: usize, stages: usize) {
        for s in &mut self.columns {
            s.begin_marks(stage, stages);
        }
    }

    /// `(changed, added)` of `e`'s `id`; `None` if `e` is dead or has no such component.
    pub(crate) fn marks_of(&self, e: Entity, id: ComponentId) -> Option<(bool, bool)> {
        let (col, row) = self.column_row_of(e, id)?;
        Some(self.columns[id.index()].marks_of(col, row))
    }

    /// Drops every value removed by structural changes.
    pub(crate) fn flush_graveyards(&mut self) {
        for s in &mut self.columns {
            s.flush_graveyard();
        }
    }

    /// `e`'s parent: the entity its `ChildOf` names (alive, if the hierarchy is kept).
    #[inline]
    pub(crate) fn parent_of(&self, h: Hierarchy, e: Entity) -> Option<Entity> {
        let (col, row) = self.column_row_of(e, h.child_of)?;
        Some(self.typed::<ChildOf>(h.child_of).get(col, row).0)
    }

    /// `e`'s children, in order (empty if none, or `e` is dead).
    #[inline]
    pub(crate) fn children_of(&self, h: Hierarchy, e: Entity) -> &[Entity] {
        match self.column_row_of(e, h.children) {
            Some((col, row)) => &self.typed::<Children>(h.children).get(col, row).0,
            None => &[],
        }
    }

    /// The name of a registered type, for messages.
    pub(crate) fn type_name(&self, id: ComponentId) -> &'static str {
        self.registry.info(id).name
    }
}

/// Every type's columns (mutable) beside the rest of the storage (shared):
/// [`Storage::split_columns`].
pub(crate) struct SplitColumns<'a> {
    /// One set of columns per component type, by id.
    pub(crate) columns: &'a mut [Box<dyn AnyColumns>],
    pub(crate) registry: &'a Registry,
    pub(crate) tables: &'a Tables,
    /// The order queries try tables in (the match cache, or canonical order).
    pub(crate) order: TableOrder<'a>,
}

/// What an insert or remove of one type would do to an entity; see [`Storage::plan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// The entity is dead.
    Dead,
    /// It stays where it is: it already has the type (insert) or lacks it (remove).
    Stays(Location),
    /// It moves from `from` to the end of table `to`.
    Move { from: Location, to: TableId },
}

/// The message for a type registered twice.
#[cold]
#[track_caller]
pub(crate) fn registered_twice<C>() -> ! {
    panic!(
        "runsync: component type `{}` is registered twice; register each type once, with the \
         one merge function it uses",
        type_name::<C>()
    )
}

/// While armed, a batch spawn's guard: dropped by an unwinding constructor, it cuts the
/// batch's table back to its entities ([`Storage::cut_back`]).
struct CutBackOnUnwind<'a> {
    storage: &'a mut Storage,
    table: TableId,
}

impl CutBackOnUnwind<'_> {
    /// The batch is whole: nothing to cut.
    fn disarm(self) {
        std::mem::forget(self);
    }
}

impl Drop for CutBackOnUnwind<'_> {
    fn drop(&mut self) {
        self.storage.cut_back(self.table);
    }
}
