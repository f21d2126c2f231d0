//! Immutable queries over the world.
//!
//! A query is a tuple of *fetches*: `&C` (entities that have `C`; yields `&C`),
//! `Option<&C>` (any entity; yields `Option<&C>`), and the filters [`With<C>`] and
//! [`Without<C>`] (yield `()`). Iteration visits matching tables in creation order and rows
//! in table order, so the order depends only on the world's contents and history.
//!
//! Matching is cached per component type: the world keeps, for each type, the list of tables
//! that hold it, extended only when a table is created (in Sync or between frames). A query
//! walks the shortest such list among its required types and checks the rest of its
//! signature with one bit test per table, so it never scans unrelated tables and never
//! takes a lock.

use std::marker::PhantomData;

use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::world::World;

/// Something that can be fetched per entity by [`World::query`]: `&C`, `Option<&C>`,
/// [`With<C>`], [`Without<C>`], or a tuple of up to 12 of these.
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
    #[doc(hidden)]
    fn matches(state: &Self::State<'_>, world: &World, table: u32) -> bool;
    #[doc(hidden)]
    fn columns<'w>(state: &Self::State<'w>, world: &'w World, table: u32) -> Self::Columns<'w>;
    #[doc(hidden)]
    fn get<'w>(columns: &Self::Columns<'w>, row: usize) -> Self::Item<'w>;
    /// Columns of no table (before the first table of an iteration).
    #[doc(hidden)]
    fn no_columns<'w>() -> Self::Columns<'w>;
}

impl<C: Component> QueryData for &C {
    type Item<'w> = &'w C;
    type State<'w> = (ComponentId, &'w [Vec<C>]);
    type Columns<'w> = &'w [C];

    #[inline]
    fn init(world: &World) -> Self::State<'_> {
        let id = world.registry().id::<C>();
        (id, &world.storage.typed::<C>(id).columns)
    }
    fn for_each_required(state: &Self::State<'_>, f: &mut dyn FnMut(ComponentId)) {
        f(state.0)
    }
    #[inline]
    fn matches(state: &Self::State<'_>, world: &World, table: u32) -> bool {
        world.storage.tables.get(table).has(state.0)
    }
    #[inline]
    fn columns<'w>(state: &Self::State<'w>, world: &'w World, table: u32) -> &'w [C] {
        match world.storage.tables.get(table).column(state.0) {
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
    #[inline]
    fn matches(_: &Self::State<'_>, _: &World, _: u32) -> bool {
        true
    }
    #[inline]
    fn columns<'w>(state: &Self::State<'w>, world: &'w World, table: u32) -> Option<&'w [C]> {
        let c = world.storage.tables.get(table).column(state.0)?;
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
    #[inline]
    fn matches(state: &ComponentId, world: &World, table: u32) -> bool {
        world.storage.tables.get(table).has(*state)
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
    #[inline]
    fn matches(state: &ComponentId, world: &World, table: u32) -> bool {
        !world.storage.tables.get(table).has(*state)
    }
    #[inline]
    fn columns(_: &ComponentId, _: &World, _: u32) {}
    #[inline]
    fn get<'w>(_: &Self::Columns<'w>, _: usize) -> Self::Item<'w> {}
    #[inline]
    fn no_columns<'w>() -> Self::Columns<'w> {}
}

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

/// `len()` counts the matching entities without visiting them: cost O(matching tables).
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
        let list = world.storage.tables_with(id);
        if best.is_none_or(|b| list.len() < b.len()) {
            best = Some(list);
        }
    });
    match best {
        Some(list) => TableCursor::List(list.iter()),
        None => TableCursor::All(0..world.storage.tables.len() as u32),
    }
}

/// The ids of the non-empty tables matching `Q`, in creation order.
pub(crate) fn matching_tables<'a, 'w: 'a, Q: QueryData>(
    world: &'w World,
    state: &'a Q::State<'w>,
) -> impl Iterator<Item = u32> + 'a {
    cursor::<Q>(world, state)
        .filter(move |&t| world.table_len(t) > 0 && Q::matches(state, world, t))
}

/// Iterator over `(Entity, Q::Item)` returned by [`World::query`].
pub struct QueryIter<'w, Q: QueryData> {
    world: &'w World,
    state: Q::State<'w>,
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
) -> (TableCursor<'w>, Found<'w, Q>) {
    for t in tables.by_ref() {
        let entities = world.table_entities(t);
        if !entities.is_empty() && Q::matches(&state, world, t) {
            return (tables, Some((entities, Q::columns(&state, world, t))));
        }
    }
    (tables, None)
}

impl<'w, Q: QueryData> Iterator for QueryIter<'w, Q> {
    type Item = (Entity, Q::Item<'w>);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(&e) = self.entities.get(self.row) {
                let item = Q::get(&self.columns, self.row);
                self.row += 1;
                return Some((e, item));
            }
            let (tables, found) = next_table::<Q>(self.tables.clone(), self.world, self.state);
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
            for (row, &e) in ents.iter().enumerate().skip(self.row) {
                acc = f(acc, (e, Q::get(&self.columns, row)));
            }
            let (tables, found) = next_table::<Q>(self.tables.clone(), self.world, self.state);
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
