//! Immutable queries over the world.
//!
//! A query is a tuple of *fetches*: `&C` (entities that have `C`; yields `&C`),
//! `Option<&C>` (any entity; yields `Option<&C>`), and the filters [`With<C>`] and
//! [`Without<C>`] (yield `()`), and the row filters [`Changed<C>`] and [`Added<C>`] (yield
//! `()`). Iteration visits matching tables in creation order and rows in table order, so the
//! order depends only on the world's contents and history.
//!
//! Table filters (`&C`, `With`, `Without`) decide per table; row filters (`Changed`,
//! `Added`) also test one bit per row of the tables that pass, and skip a table none of
//! whose rows is marked without visiting its rows. A query without row filters compiles
//! to the same loop as before they existed ([`QueryData::FILTERS_ROWS`] is a constant).
//!
//! Matching is cached per component type: the world keeps, for each type, the list of tables
//! that hold it, extended only when a table is created (in Sync or between frames). A query
//! walks the shortest such list among its required types and checks the rest of its
//! filter against each table's signature mask with a few word operations (see
//! `storage::mask`), so it never scans unrelated tables and never takes a lock.

use std::marker::PhantomData;

use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::storage::QueryMask;
use crate::world::World;

/// Something that can be fetched per entity by [`World::query`]: `&C`, `Option<&C>`,
/// [`With<C>`], [`Without<C>`], [`Changed<C>`], [`Added<C>`], or a tuple of up to 12 of
/// these.
///
/// Naming a type twice (`(&A, &A)`) is fine: both are shared reads.
pub trait QueryData {
    /// What the query yields per entity (besides the [`Entity`] itself).
    type Item<'w>;
    #[doc(hidden)]
    type State<'w>: Copy + Send + Sync;
    #[doc(hidden)]
    type Columns<'w>: Copy + Send + Sync;
    #[doc(hidden)]
    fn init(world: &World) -> Self::State<'_>;
    #[doc(hidden)]
    fn for_each_required(state: &Self::State<'_>, f: &mut dyn FnMut(ComponentId));
    /// Calls `f(id, true)` for each type this fetch requires, `f(id, false)` for each it
    /// excludes (the query's mask is built from these).
    #[doc(hidden)]
    fn for_each_filter(state: &Self::State<'_>, f: &mut dyn FnMut(ComponentId, bool));
    /// The same test as `mask`, one type at a time (for types beyond the mask's inline
    /// block).
    #[doc(hidden)]
    fn matches(state: &Self::State<'_>, world: &World, table: u32) -> bool;
    #[doc(hidden)]
    fn columns<'w>(state: &Self::State<'w>, world: &'w World, table: u32) -> Self::Columns<'w>;
    #[doc(hidden)]
    fn get<'w>(columns: &Self::Columns<'w>, row: usize) -> Self::Item<'w>;
    /// Columns of no table (before the first table of an iteration).
    #[doc(hidden)]
    fn no_columns<'w>() -> Self::Columns<'w>;
    /// Whether this fetch keeps only some rows of a matching table ([`Changed`],
    /// [`Added`]); when `false`, [`kept_word`](Self::kept_word) is never called.
    #[doc(hidden)]
    const FILTERS_ROWS: bool = false;
    /// Which of rows `64 * w .. 64 * w + 64` of the table of `columns` pass the row
    /// filters, one bit per row (`Lsb0`); bits past the table's end are meaningless.
    #[doc(hidden)]
    #[inline]
    fn kept_word(_columns: &Self::Columns<'_>, _w: usize) -> u64 {
        !0
    }
    /// Whether no row of the table of `columns` can pass (the table is skipped).
    #[doc(hidden)]
    #[inline]
    fn none_kept(_columns: &Self::Columns<'_>) -> bool {
        false
    }
}

impl<C: Component> QueryData for &C {
    type Item<'w> = &'w C;
    type State<'w> = (ComponentId, &'w [Vec<C>]);
    type Columns<'w> = &'w [C];

    #[inline]
    fn init(world: &World) -> Self::State<'_> {
        let id = world.registry().id::<C>();
        (id, &world.storage().typed::<C>(id).columns)
    }
    fn for_each_required(state: &Self::State<'_>, f: &mut dyn FnMut(ComponentId)) {
        f(state.0)
    }
    fn for_each_filter(state: &Self::State<'_>, f: &mut dyn FnMut(ComponentId, bool)) {
        f(state.0, true)
    }
    #[inline]
    fn matches(state: &Self::State<'_>, world: &World, table: u32) -> bool {
        world.storage().tables.get(table).has(state.0)
    }
    #[inline]
    fn columns<'w>(state: &Self::State<'w>, world: &'w World, table: u32) -> &'w [C] {
        match world.storage().tables.get(table).column(state.0) {
            Some(c) => &state.1[c as usize],
            None => &[],
        }
    }
    #[inline]
    fn get<'w>(columns: &Self::Columns<'w>, row: usize) -> Self::Item<'w> {
        &columns[row]
    }
    #[inline]
    fn no_columns<'w>() -> &'w [C] {
        &[]
    }
}

impl<C: Component> QueryData for Option<&C> {
    type Item<'w> = Option<&'w C>;
    type State<'w> = (ComponentId, &'w [Vec<C>]);
    type Columns<'w> = Option<&'w [C]>;

    #[inline]
    fn init(world: &World) -> Self::State<'_> {
        <&C>::init(world)
    }
    fn for_each_required(_: &Self::State<'_>, _: &mut dyn FnMut(ComponentId)) {}
    fn for_each_filter(_: &Self::State<'_>, _: &mut dyn FnMut(ComponentId, bool)) {}
    #[inline]
    fn matches(_: &Self::State<'_>, _: &World, _: u32) -> bool {
        true
    }
    #[inline]
    fn columns<'w>(state: &Self::State<'w>, world: &'w World, table: u32) -> Option<&'w [C]> {
        let c = world.storage().tables.get(table).column(state.0)?;
        Some(&state.1[c as usize])
    }
    #[inline]
    fn get<'w>(columns: &Self::Columns<'w>, row: usize) -> Self::Item<'w> {
        columns.map(|c| &c[row])
    }
    #[inline]
    fn no_columns<'w>() -> Option<&'w [C]> {
        None
    }
}

/// Query filter: only entities that have `C` (yields `()`).
///
/// ```
/// # use runsync::prelude::*;
/// # #[derive(Clone, Copy)] struct Pos(f32); impl Component for Pos { type Output = Pos; }
/// # #[derive(Clone, Copy)] struct Enemy; impl Component for Enemy { type Output = Enemy; }
/// # let mut world = World::new();
/// # world.register::<Pos>(merge::last); world.register::<Enemy>(merge::last);
/// world.spawn((Pos(1.0), Enemy));
/// world.spawn((Pos(2.0),));
/// let enemies: f32 = world.query::<(&Pos, With<Enemy>)>().map(|(_, (p, ()))| p.0).sum();
/// assert_eq!(enemies, 1.0);
/// ```
pub struct With<C>(PhantomData<C>);

/// Query filter: only entities that do not have `C` (yields `()`).
pub struct Without<C>(PhantomData<C>);

impl<C: Component> QueryData for With<C> {
    type Item<'w> = ();
    type State<'w> = ComponentId;
    type Columns<'w> = ();

    fn init(world: &World) -> ComponentId {
        world.registry().id::<C>()
    }
    fn for_each_required(state: &ComponentId, f: &mut dyn FnMut(ComponentId)) {
        f(*state)
    }
    fn for_each_filter(state: &ComponentId, f: &mut dyn FnMut(ComponentId, bool)) {
        f(*state, true)
    }
    #[inline]
    fn matches(state: &ComponentId, world: &World, table: u32) -> bool {
        world.storage().tables.get(table).has(*state)
    }
    #[inline]
    fn columns(_: &ComponentId, _: &World, _: u32) {}
    #[inline]
    fn get<'w>(_: &Self::Columns<'w>, _: usize) -> Self::Item<'w> {}
    #[inline]
    fn no_columns<'w>() -> Self::Columns<'w> {}
}

impl<C: Component> QueryData for Without<C> {
    type Item<'w> = ();
    type State<'w> = ComponentId;
    type Columns<'w> = ();

    fn init(world: &World) -> ComponentId {
        world.registry().id::<C>()
    }
    fn for_each_required(_: &ComponentId, _: &mut dyn FnMut(ComponentId)) {}
    fn for_each_filter(state: &ComponentId, f: &mut dyn FnMut(ComponentId, bool)) {
        f(*state, false)
    }
    #[inline]
    fn matches(state: &ComponentId, world: &World, table: u32) -> bool {
        !world.storage().tables.get(table).has(*state)
    }
    #[inline]
    fn columns(_: &ComponentId, _: &World, _: u32) {}
    #[inline]
    fn get<'w>(_: &Self::Columns<'w>, _: usize) -> Self::Item<'w> {}
    #[inline]
    fn no_columns<'w>() -> Self::Columns<'w> {}
}

/// Query filter: only entities whose `C` was *written by the last Sync* (yields `()`).
///
/// "Written" means any of:
/// - a merge ran on it: some system wrote `C` for the entity and the merge was called —
///   **whatever the result**: a merge that leaves the value equal (`merge::max` with a
///   smaller output, `merge::last` with the same value) still counts. Comparing would cost
///   a read and a `PartialEq` per row, and `C` need not be `PartialEq`;
/// - a command inserted `C` (a replacement, or the entity gaining `C`), or spawned the
///   entity with `C`.
///
/// The window is one Sync: Sync forgets the previous marks as it starts, so systems in
/// frame N+1 see exactly what frame N's Sync did (a frame whose Sync writes nothing clears
/// them). Between frames, [`World::spawn`], [`World::spawn_batch`] and [`World::insert`]
/// mark like the commands they mirror, and stay marked until the next Sync starts;
/// [`World::get_mut`] and [`World::query_mut`] do **not** mark. Marks belong to the entity's
/// component: an entity moved to another table (by inserting or removing another type)
/// keeps the marks of the types it keeps; a removed or despawned `C` loses them.
/// [`Added<C>`] is the narrower filter; every added `C` is also changed.
///
/// Cost: one bit per row per column, set by Sync one word (64 rows) at a time per run of
/// writes. A query skips tables with no mark at all; internal iteration (`sum`,
/// `for_each`, `fold`) jumps from marked row to marked row a word at a time, a `for` loop
/// finds the next marked row on each step, and `len()` is a popcount per 64 rows. Marks are part of snapshots (a restored world's next frame sees the
/// marks of the moment it was saved) but not of [`World::checksum`], which covers
/// component state only.
///
/// ```
/// # use runsync::prelude::*;
/// # #[derive(Clone, Copy, Debug, PartialEq)] struct Pos(f32);
/// # impl Component for Pos { type Output = Pos; }
/// let mut world = World::new();
/// world.register::<Pos>(merge::last);
/// let a = world.spawn((Pos(0.0),));
/// let b = world.spawn((Pos(0.0),));
/// let mut rt = Runtime::builder().build(world);
/// rt.add_system(move |_: &World, out: &mut Output| out.write::<Pos>(a, Pos(0.0)));
/// rt.frame();
/// // `a` was written (with the same value: still changed); `b` was not.
/// let changed: Vec<Entity> = rt
///     .world()
///     .query_filtered::<(&Pos,), Changed<Pos>>()
///     .map(|(e, _)| e)
///     .collect();
/// assert_eq!(changed, [a]);
/// assert!(rt.world().is_changed::<Pos>(a) && !rt.world().is_changed::<Pos>(b));
/// ```
pub struct Changed<C>(PhantomData<C>);

/// Query filter: only entities that *gained* `C` in the last Sync (yields `()`): spawned
/// with it, or given it by an insert when they had none. Replacing an existing `C` is
/// [`Changed<C>`], not `Added<C>`. Same window, marks and costs as [`Changed<C>`].
///
/// ```
/// # use runsync::prelude::*;
/// # #[derive(Clone, Copy, Debug, PartialEq)] struct Hp(i32);
/// # impl Component for Hp { type Output = i32; }
/// let mut world = World::new();
/// world.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
/// let old = world.spawn((Hp(1),));
/// let mut rt = Runtime::builder().build(world);
/// rt.frame(); // forgets the marks of the spawn above
/// let mut once = true;
/// rt.add_system(move |_: &World, out: &mut Output| {
///     if std::mem::take(&mut once) {
///         out.spawn((Hp(5),));
///         out.insert(old, Hp(2)); // a replacement: changed, not added
///     }
/// });
/// rt.frame();
/// let added: Vec<i32> = rt.world().query::<(&Hp, Added<Hp>)>().map(|(_, (h, ()))| h.0).collect();
/// assert_eq!(added, [5]);
/// assert!(rt.world().is_changed::<Hp>(old) && !rt.world().is_added::<Hp>(old));
/// ```
pub struct Added<C>(PhantomData<C>);

/// `Changed` / `Added`: a row filter over one of a column's mark sets.
macro_rules! mark_filter {
    ($name:ident, $bits:ident) => {
        impl<C: Component> QueryData for $name<C> {
            type Item<'w> = ();
            type State<'w> = ComponentId;
            /// The column's mark words (empty: no row marked).
            type Columns<'w> = &'w [u64];

            // Tables: those `With<C>` matches; rows: the marked ones.
            fn init(world: &World) -> ComponentId {
                With::<C>::init(world)
            }
            fn for_each_required(state: &ComponentId, f: &mut dyn FnMut(ComponentId)) {
                With::<C>::for_each_required(state, f)
            }
            fn for_each_filter(state: &ComponentId, f: &mut dyn FnMut(ComponentId, bool)) {
                With::<C>::for_each_filter(state, f)
            }
            #[inline]
            fn matches(state: &ComponentId, world: &World, table: u32) -> bool {
                With::<C>::matches(state, world, table)
            }
            #[inline]
            fn columns<'w>(state: &ComponentId, world: &'w World, table: u32) -> &'w [u64] {
                match world.storage().tables.get(table).column(*state) {
                    Some(c) => world.storage().typed::<C>(*state).marks.columns[c as usize]
                        .$bits
                        .words(),
                    None => &[],
                }
            }
            #[inline]
            fn get<'w>(_: &Self::Columns<'w>, _: usize) -> Self::Item<'w> {}
            #[inline]
            fn no_columns<'w>() -> &'w [u64] {
                &[]
            }
            const FILTERS_ROWS: bool = true;
            #[inline]
            fn kept_word(words: &&[u64], w: usize) -> u64 {
                words.get(w).copied().unwrap_or(0)
            }
            #[inline]
            fn none_kept(words: &&[u64]) -> bool {
                words.is_empty()
            }
        }
    };
}

mark_filter!(Changed, changed);
mark_filter!(Added, added);

macro_rules! tuple_query {
    ($($name:ident $idx:tt),*) => {
        impl<$($name: QueryData),*> QueryData for ($($name,)*) {
            type Item<'w> = ($($name::Item<'w>,)*);
            type State<'w> = ($($name::State<'w>,)*);
            type Columns<'w> = ($($name::Columns<'w>,)*);

            #[inline]
            fn init(world: &World) -> Self::State<'_> {
                ($($name::init(world),)*)
            }
            fn for_each_required(state: &Self::State<'_>, f: &mut dyn FnMut(ComponentId)) {
                $($name::for_each_required(&state.$idx, f);)*
            }
            fn for_each_filter(state: &Self::State<'_>, f: &mut dyn FnMut(ComponentId, bool)) {
                $($name::for_each_filter(&state.$idx, f);)*
            }
            #[inline]
            fn matches(state: &Self::State<'_>, world: &World, table: u32) -> bool {
                $($name::matches(&state.$idx, world, table) &&)* true
            }
            #[inline]
            fn columns<'w>(state: &Self::State<'w>, world: &'w World, table: u32)
                -> Self::Columns<'w>
            {
                ($($name::columns(&state.$idx, world, table),)*)
            }
            #[inline]
            fn get<'w>(columns: &Self::Columns<'w>, row: usize) -> Self::Item<'w> {
                ($($name::get(&columns.$idx, row),)*)
            }
            #[inline]
            fn no_columns<'w>() -> Self::Columns<'w> {
                ($($name::no_columns(),)*)
            }
            const FILTERS_ROWS: bool = $($name::FILTERS_ROWS ||)* false;
            #[inline]
            fn kept_word(columns: &Self::Columns<'_>, w: usize) -> u64 {
                $($name::kept_word(&columns.$idx, w) &)* !0
            }
            #[inline]
            fn none_kept(columns: &Self::Columns<'_>) -> bool {
                $($name::none_kept(&columns.$idx) ||)* false
            }
        }
    };
}

tuple_query!(A 0);
tuple_query!(A 0, B 1);
tuple_query!(A 0, B 1, C 2);
tuple_query!(A 0, B 1, C 2, D 3);
tuple_query!(A 0, B 1, C 2, D 3, E 4);
tuple_query!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_query!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_query!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_query!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_query!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_query!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_query!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

/// Whether row `row` passes `Q`'s row filters.
#[inline]
pub(crate) fn keeps<Q: QueryData>(columns: &Q::Columns<'_>, row: usize) -> bool {
    Q::kept_word(columns, row / 64) & (1 << (row % 64)) != 0
}

/// The first row of `from..len` that passes `Q`'s row filters, or `len`: a word (64 rows)
/// at a time.
#[inline]
fn next_kept<Q: QueryData>(columns: &Q::Columns<'_>, from: usize, len: usize) -> usize {
    let mut w = from / 64;
    let mut bits = Q::kept_word(columns, w) & (!0u64 << (from % 64));
    loop {
        if bits != 0 {
            return (w * 64 + bits.trailing_zeros() as usize).min(len);
        }
        w += 1;
        if w * 64 >= len {
            return len;
        }
        bits = Q::kept_word(columns, w);
    }
}

/// How many of rows `from..len` pass `Q`'s row filters: a popcount per word.
fn count_kept<Q: QueryData>(columns: &Q::Columns<'_>, from: usize, len: usize) -> usize {
    if from >= len {
        return 0;
    }
    let (wa, wb) = (from / 64, (len - 1) / 64);
    (wa..=wb)
        .map(|w| {
            let mut bits = Q::kept_word(columns, w);
            if w == wa {
                bits &= !0u64 << (from % 64);
            }
            if w == wb {
                bits &= !0u64 >> (63 - (len - 1) % 64);
            }
            bits.count_ones() as usize
        })
        .sum()
}

/// `len()` counts the matching entities without visiting them: cost O(matching tables);
/// with a row filter ([`Changed`], [`Added`]) it also counts the marked rows of those
/// tables (a popcount per 64 rows).
impl<Q: QueryData> ExactSizeIterator for QueryIter<'_, Q> {}

/// Iterator returned by [`World::query_filtered`]: the entities matching `Q` and filter
/// `F`, yielding only `Q`'s items.
pub struct QueryFiltered<'w, Q: QueryData, F: QueryData> {
    inner: QueryIter<'w, (Q, F)>,
}

impl<'w, Q: QueryData, F: QueryData> QueryFiltered<'w, Q, F> {
    pub(crate) fn new(world: &'w World) -> Self {
        QueryFiltered {
            inner: QueryIter::new(world),
        }
    }
}

impl<'w, Q: QueryData, F: QueryData> Iterator for QueryFiltered<'w, Q, F> {
    type Item = (Entity, Q::Item<'w>);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(|(e, (q, _))| (e, q))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }

    /// The inner query's table-by-table loop (`sum`, `for_each`, `fold`, ...).
    #[inline]
    fn fold<B, G>(self, init: B, mut g: G) -> B
    where
        G: FnMut(B, Self::Item) -> B,
    {
        self.inner
            .fold(init, move |acc, (e, (q, _))| g(acc, (e, q)))
    }
}

impl<Q: QueryData, F: QueryData> ExactSizeIterator for QueryFiltered<'_, Q, F> {}

/// The tables a query visits, in creation order.
#[derive(Clone)]
enum TableCursor<'w> {
    /// The table list of the query's rarest required type.
    List(std::slice::Iter<'w, u32>),
    /// No required type: every table.
    All(std::ops::Range<u32>),
}

impl Iterator for TableCursor<'_> {
    type Item = u32;
    #[inline]
    fn next(&mut self) -> Option<u32> {
        match self {
            TableCursor::List(it) => it.next().copied(),
            TableCursor::All(r) => r.next(),
        }
    }
}

fn cursor<'w, Q: QueryData>(world: &'w World, state: &Q::State<'w>) -> TableCursor<'w> {
    let mut best: Option<&'w [u32]> = None;
    Q::for_each_required(state, &mut |id| {
        let list = world.storage().tables_with(id);
        if best.is_none_or(|b| list.len() < b.len()) {
            best = Some(list);
        }
    });
    match best {
        Some(list) => TableCursor::List(list.iter()),
        None => TableCursor::All(0..world.storage().tables.len() as u32),
    }
}

/// `Q`'s filter as a mask.
fn query_mask<Q: QueryData>(state: &Q::State<'_>) -> QueryMask {
    let mut mask = QueryMask::default();
    Q::for_each_filter(state, &mut |id, required| {
        if required {
            mask.require(id)
        } else {
            mask.exclude(id)
        }
    });
    mask
}

/// Whether table `t` matches: its signature against the query's mask, then, only for a
/// query naming a type beyond the mask's inline block, type by type.
#[inline]
fn table_matches<Q: QueryData>(
    world: &World,
    state: &Q::State<'_>,
    mask: &QueryMask,
    t: u32,
) -> bool {
    world.storage().tables.get(t).signature().passes(mask)
        && (!mask.wide || Q::matches(state, world, t))
}

/// The ids of the non-empty tables matching `Q`, in creation order.
pub(crate) fn matching_tables<'a, 'w: 'a, Q: QueryData>(
    world: &'w World,
    state: &'a Q::State<'w>,
) -> impl Iterator<Item = u32> + 'a {
    let mask = query_mask::<Q>(state);
    cursor::<Q>(world, state)
        .filter(move |&t| world.table_len(t) > 0 && table_matches::<Q>(world, state, &mask, t))
}

/// Iterator over `(Entity, Q::Item)` returned by [`World::query`].
pub struct QueryIter<'w, Q: QueryData> {
    world: &'w World,
    state: Q::State<'w>,
    mask: QueryMask,
    tables: TableCursor<'w>,
    entities: &'w [Entity],
    columns: Q::Columns<'w>,
    row: usize,
}

impl<'w, Q: QueryData> QueryIter<'w, Q> {
    pub(crate) fn new(world: &'w World) -> Self {
        let state = Q::init(world);
        QueryIter {
            world,
            tables: cursor::<Q>(world, &state),
            mask: query_mask::<Q>(&state),
            state,
            entities: &[],
            columns: Q::no_columns(),
            row: 0,
        }
    }
}

/// A table found by [`next_table`]: its entities and the query's columns in it.
type Found<'w, Q> = Option<(&'w [Entity], <Q as QueryData>::Columns<'w>)>;

/// The next matching non-empty table after `tables`' position: its entities and columns,
/// and the cursor after it. Out of line and borrowing nothing of the iterator (everything
/// by value), so that `QueryIter::next` inlines into the user's loop with its row state in
/// registers.
#[inline(never)]
fn next_table<'w, Q: QueryData>(
    mut tables: TableCursor<'w>,
    world: &'w World,
    state: Q::State<'w>,
    mask: QueryMask,
) -> (TableCursor<'w>, Found<'w, Q>) {
    for t in tables.by_ref() {
        let entities = world.table_entities(t);
        if !entities.is_empty() && table_matches::<Q>(world, &state, &mask, t) {
            let columns = Q::columns(&state, world, t);
            if Q::FILTERS_ROWS && Q::none_kept(&columns) {
                continue;
            }
            return (tables, Some((entities, columns)));
        }
    }
    (tables, None)
}

impl<'w, Q: QueryData> Iterator for QueryIter<'w, Q> {
    type Item = (Entity, Q::Item<'w>);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if Q::FILTERS_ROWS && self.row < self.entities.len() {
                self.row = next_kept::<Q>(&self.columns, self.row, self.entities.len());
            }
            if let Some(&e) = self.entities.get(self.row) {
                let item = Q::get(&self.columns, self.row);
                self.row += 1;
                return Some((e, item));
            }
            let (tables, found) =
                next_table::<Q>(self.tables.clone(), self.world, self.state, self.mask);
            self.tables = tables;
            let (entities, columns) = found?;
            self.entities = entities;
            self.columns = columns;
            self.row = 0;
        }
    }

    /// Exact: the rows left in the current table plus those of the matching tables still
    /// ahead (a walk over the remaining candidate tables, no rows visited).
    fn size_hint(&self) -> (usize, Option<usize>) {
        if Q::FILTERS_ROWS {
            let here = count_kept::<Q>(&self.columns, self.row, self.entities.len());
            let ahead: usize = self
                .tables
                .clone()
                .filter(|&t| Q::matches(&self.state, self.world, t))
                .map(|t| {
                    let cols = Q::columns(&self.state, self.world, t);
                    count_kept::<Q>(&cols, 0, self.world.table_len(t))
                })
                .sum();
            return (here + ahead, Some(here + ahead));
        }
        let here = self.entities.len().saturating_sub(self.row);
        let ahead: usize = self
            .tables
            .clone()
            .filter(|&t| Q::matches(&self.state, self.world, t))
            .map(|t| self.world.table_len(t))
            .sum();
        (here + ahead, Some(here + ahead))
    }

    fn fold<B, F>(mut self, init: B, mut f: F) -> B
    where
        F: FnMut(B, Self::Item) -> B,
    {
        let mut acc = init;
        loop {
            let ents = self.entities;
            if Q::FILTERS_ROWS {
                // Set bits only, a word (64 rows) at a time.
                let mut row = self.row;
                while row < ents.len() {
                    let w = row / 64;
                    let mut bits = Q::kept_word(&self.columns, w) & (!0u64 << (row % 64));
                    while bits != 0 {
                        let r = w * 64 + bits.trailing_zeros() as usize;
                        if r >= ents.len() {
                            break;
                        }
                        acc = f(acc, (ents[r], Q::get(&self.columns, r)));
                        bits &= bits - 1;
                    }
                    row = (w + 1) * 64;
                }
            } else {
                for (row, &e) in ents.iter().enumerate().skip(self.row) {
                    acc = f(acc, (e, Q::get(&self.columns, row)));
                }
            }
            let (tables, found) =
                next_table::<Q>(self.tables.clone(), self.world, self.state, self.mask);
            self.tables = tables;
            match found {
                Some((entities, columns)) => {
                    self.entities = entities;
                    self.columns = columns;
                    self.row = 0;
                }
                None => return acc,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Many<const N: usize>(u32);
    impl<const N: usize> Component for Many<N> {
        type Output = Many<N>;
    }

    /// Types with ids beyond a mask's inline block (128) spill in table signatures and make
    /// a query "wide": matching must still be exact on both sides of the boundary.
    #[test]
    fn queries_over_more_types_than_the_inline_mask() {
        let mut w = World::new();
        w.register::<Many<0>>(merge::last);
        w.register::<Many<1>>(merge::last);
        w.register::<Many<2>>(merge::last);
        w.register::<Many<3>>(merge::last);
        w.register::<Many<4>>(merge::last);
        w.register::<Many<5>>(merge::last);
        w.register::<Many<6>>(merge::last);
        w.register::<Many<7>>(merge::last);
        w.register::<Many<8>>(merge::last);
        w.register::<Many<9>>(merge::last);
        w.register::<Many<10>>(merge::last);
        w.register::<Many<11>>(merge::last);
        w.register::<Many<12>>(merge::last);
        w.register::<Many<13>>(merge::last);
        w.register::<Many<14>>(merge::last);
        w.register::<Many<15>>(merge::last);
        w.register::<Many<16>>(merge::last);
        w.register::<Many<17>>(merge::last);
        w.register::<Many<18>>(merge::last);
        w.register::<Many<19>>(merge::last);
        w.register::<Many<20>>(merge::last);
        w.register::<Many<21>>(merge::last);
        w.register::<Many<22>>(merge::last);
        w.register::<Many<23>>(merge::last);
        w.register::<Many<24>>(merge::last);
        w.register::<Many<25>>(merge::last);
        w.register::<Many<26>>(merge::last);
        w.register::<Many<27>>(merge::last);
        w.register::<Many<28>>(merge::last);
        w.register::<Many<29>>(merge::last);
        w.register::<Many<30>>(merge::last);
        w.register::<Many<31>>(merge::last);
        w.register::<Many<32>>(merge::last);
        w.register::<Many<33>>(merge::last);
        w.register::<Many<34>>(merge::last);
        w.register::<Many<35>>(merge::last);
        w.register::<Many<36>>(merge::last);
        w.register::<Many<37>>(merge::last);
        w.register::<Many<38>>(merge::last);
        w.register::<Many<39>>(merge::last);
        w.register::<Many<40>>(merge::last);
        w.register::<Many<41>>(merge::last);
        w.register::<Many<42>>(merge::last);
        w.register::<Many<43>>(merge::last);
        w.register::<Many<44>>(merge::last);
        w.register::<Many<45>>(merge::last);
        w.register::<Many<46>>(merge::last);
        w.register::<Many<47>>(merge::last);
        w.register::<Many<48>>(merge::last);
        w.register::<Many<49>>(merge::last);
        w.register::<Many<50>>(merge::last);
        w.register::<Many<51>>(merge::last);
        w.register::<Many<52>>(merge::last);
        w.register::<Many<53>>(merge::last);
        w.register::<Many<54>>(merge::last);
        w.register::<Many<55>>(merge::last);
        w.register::<Many<56>>(merge::last);
        w.register::<Many<57>>(merge::last);
        w.register::<Many<58>>(merge::last);
        w.register::<Many<59>>(merge::last);
        w.register::<Many<60>>(merge::last);
        w.register::<Many<61>>(merge::last);
        w.register::<Many<62>>(merge::last);
        w.register::<Many<63>>(merge::last);
        w.register::<Many<64>>(merge::last);
        w.register::<Many<65>>(merge::last);
        w.register::<Many<66>>(merge::last);
        w.register::<Many<67>>(merge::last);
        w.register::<Many<68>>(merge::last);
        w.register::<Many<69>>(merge::last);
        w.register::<Many<70>>(merge::last);
        w.register::<Many<71>>(merge::last);
        w.register::<Many<72>>(merge::last);
        w.register::<Many<73>>(merge::last);
        w.register::<Many<74>>(merge::last);
        w.register::<Many<75>>(merge::last);
        w.register::<Many<76>>(merge::last);
        w.register::<Many<77>>(merge::last);
        w.register::<Many<78>>(merge::last);
        w.register::<Many<79>>(merge::last);
        w.register::<Many<80>>(merge::last);
        w.register::<Many<81>>(merge::last);
        w.register::<Many<82>>(merge::last);
        w.register::<Many<83>>(merge::last);
        w.register::<Many<84>>(merge::last);
        w.register::<Many<85>>(merge::last);
        w.register::<Many<86>>(merge::last);
        w.register::<Many<87>>(merge::last);
        w.register::<Many<88>>(merge::last);
        w.register::<Many<89>>(merge::last);
        w.register::<Many<90>>(merge::last);
        w.register::<Many<91>>(merge::last);
        w.register::<Many<92>>(merge::last);
        w.register::<Many<93>>(merge::last);
        w.register::<Many<94>>(merge::last);
        w.register::<Many<95>>(merge::last);
        w.register::<Many<96>>(merge::last);
        w.register::<Many<97>>(merge::last);
        w.register::<Many<98>>(merge::last);
        w.register::<Many<99>>(merge::last);
        w.register::<Many<100>>(merge::last);
        w.register::<Many<101>>(merge::last);
        w.register::<Many<102>>(merge::last);
        w.register::<Many<103>>(merge::last);
        w.register::<Many<104>>(merge::last);
        w.register::<Many<105>>(merge::last);
        w.register::<Many<106>>(merge::last);
        w.register::<Many<107>>(merge::last);
        w.register::<Many<108>>(merge::last);
        w.register::<Many<109>>(merge::last);
        w.register::<Many<110>>(merge::last);
        w.register::<Many<111>>(merge::last);
        w.register::<Many<112>>(merge::last);
        w.register::<Many<113>>(merge::last);
        w.register::<Many<114>>(merge::last);
        w.register::<Many<115>>(merge::last);
        w.register::<Many<116>>(merge::last);
        w.register::<Many<117>>(merge::last);
        w.register::<Many<118>>(merge::last);
        w.register::<Many<119>>(merge::last);
        w.register::<Many<120>>(merge::last);
        w.register::<Many<121>>(merge::last);
        w.register::<Many<122>>(merge::last);
        w.register::<Many<123>>(merge::last);
        w.register::<Many<124>>(merge::last);
        w.register::<Many<125>>(merge::last);
        w.register::<Many<126>>(merge::last);
        w.register::<Many<127>>(merge::last);
        w.register::<Many<128>>(merge::last);
        w.register::<Many<129>>(merge::last);
        let a = w.spawn((Many::<0>(1), Many::<128>(2)));
        let b = w.spawn((Many::<0>(3), Many::<129>(4)));
        let c = w.spawn((Many::<127>(5), Many::<129>(6)));
        let q: Vec<Entity> = w
            .query::<(&Many<0>, &Many<128>)>()
            .map(|(e, _)| e)
            .collect();
        assert_eq!(q, [a]);
        let q: Vec<Entity> = w
            .query::<(&Many<129>, Without<Many<0>>)>()
            .map(|(e, _)| e)
            .collect();
        assert_eq!(q, [c]);
        let q: Vec<Entity> = w
            .query::<(&Many<0>, Without<Many<128>>)>()
            .map(|(e, _)| e)
            .collect();
        assert_eq!(q, [b]);
        let q: Vec<Entity> = w
            .query::<(&Many<129>, With<Many<127>>)>()
            .map(|(e, _)| e)
            .collect();
        assert_eq!(q, [c]);
        let q: Vec<Entity> = w
            .query::<(Option<&Many<128>>, With<Many<0>>)>()
            .map(|(e, _)| e)
            .collect();
        assert_eq!(q, [a, b]);
        assert_eq!(w.get::<Many<129>>(b), Some(&Many(4)));
    }
}
