//! Mutable queries between frames: [`World::query_mut`](crate::World::query_mut).
//!
//! During Run a system only reads (`&World`); between frames the owner holds `&mut World`
//! and may edit components in place — setup, loading, editors, tools. `query_mut` is that
//! edit as a loop, like hecs's: `for (e, (pos, vel)) in world.query_mut::<(&mut Pos, &Vel)>()`.
//!
//! Systems cannot use it — they get `&World` — so this does not compile:
//!
//! ```compile_fail
//! use runsync::prelude::*;
//! #[derive(Clone, Copy)] struct Pos(f32);
//! impl Component for Pos { type Output = Pos; }
//! let mut rt = Runtime::builder().build(World::new());
//! rt.add_system(|world: &World, _out: &mut Output| {
//!     for (_e, (p,)) in world.query_mut::<(&mut Pos,)>() { p.0 += 1.0; }
//! });
//! ```
//!
//! It is safe code: the query takes one `&mut` to each named type's columns (disjoint,
//! since a type may be named once), and visits tables in creation order, in which each
//! type's column indices only grow, so an advancing iterator over a type's columns hands
//! out each table's column exactly once.

use std::marker::PhantomData;

use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::query::{With, Without};
use crate::storage::{AnyColumns, TableId, Tables, TypedColumns};
use crate::world::World;

/// One type's columns, lent to a query element (crate-internal; not nameable outside).
pub struct ColumnsMut<'a>(&'a mut dyn AnyColumns);

/// How a query element uses its type.
#[doc(hidden)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Access {
    /// Reads or writes the column; the entity must have the type.
    Required,
    /// Reads or writes the column if the entity has the type.
    Optional,
    /// Only filters: the entity must have the type.
    With,
    /// Only filters: the entity must not have the type.
    Without,
}

/// One element of a [`QueryMut`]: `&mut C`, `&C`, `Option<&mut C>`, `Option<&C>`,
/// [`With<C>`] or [`Without<C>`].
pub trait FetchMut {
    /// What the element yields per entity.
    type Item<'w>;
    #[doc(hidden)]
    type Columns<'w>;
    #[doc(hidden)]
    type Rows<'w>;
    #[doc(hidden)]
    const ACCESS: Access;
    #[doc(hidden)]
    fn id(world: &World) -> ComponentId;
    #[doc(hidden)]
    fn columns(columns: Option<ColumnsMut<'_>>) -> Self::Columns<'_>;
    /// The rows of the table whose column of this type is `column` (`None`: it has none).
    #[doc(hidden)]
    fn rows<'w>(columns: &mut Self::Columns<'w>, column: Option<u32>) -> Self::Rows<'w>;
    #[doc(hidden)]
    fn next<'w>(rows: &mut Self::Rows<'w>) -> Self::Item<'w>;
}

/// The columns of one type, handed out table by table in increasing column order.
#[doc(hidden)]
pub struct Cursor<I> {
    iter: I,
    next: u32,
}

impl<I: Iterator> Cursor<I> {
    fn new(iter: I) -> Self {
        Cursor { iter, next: 0 }
    }

    /// Column `k` (each `k` at most once, in increasing order).
    fn take(&mut self, k: u32) -> I::Item {
        assert!(k >= self.next, "tables visited out of creation order");
        let item = self.iter.nth((k - self.next) as usize);
        self.next = k + 1;
        item.expect("a table's column exists in its type's storage")
    }
}

fn typed<C: Component>(columns: Option<ColumnsMut<'_>>) -> &mut Vec<Vec<C>> {
    &mut columns
        .expect("a column set for every element that reads or writes")
        .0
        .as_any_mut()
        .downcast_mut::<TypedColumns<C>>()
        .expect("columns of another type")
        .columns
}

/// `&mut C` / `&C` (`$iter`: `iter_mut` / `iter`), required or optional.
macro_rules! column_fetch {
    ($item:ty => $yields:ty, $iter_ty:ident, $iter:ident) => {
        impl<C: Component> FetchMut for $item {
            type Item<'w> = $yields;
            type Columns<'w> = Cursor<std::slice::$iter_ty<'w, Vec<C>>>;
            type Rows<'w> = std::slice::$iter_ty<'w, C>;
            const ACCESS: Access = Access::Required;
            fn id(world: &World) -> ComponentId {
                world.registry().id::<C>()
            }
            fn columns(columns: Option<ColumnsMut<'_>>) -> Self::Columns<'_> {
                Cursor::new(typed::<C>(columns).$iter())
            }
            fn rows<'w>(columns: &mut Self::Columns<'w>, column: Option<u32>) -> Self::Rows<'w> {
                columns.take(column.expect("required")).$iter()
            }
            #[inline]
            fn next<'w>(rows: &mut Self::Rows<'w>) -> Self::Item<'w> {
                rows.next().expect("one row per entity")
            }
        }

        impl<C: Component> FetchMut for Option<$item> {
            type Item<'w> = Option<$yields>;
            type Columns<'w> = Cursor<std::slice::$iter_ty<'w, Vec<C>>>;
            type Rows<'w> = Option<std::slice::$iter_ty<'w, C>>;
            const ACCESS: Access = Access::Optional;
            fn id(world: &World) -> ComponentId {
                world.registry().id::<C>()
            }
            fn columns(columns: Option<ColumnsMut<'_>>) -> Self::Columns<'_> {
                Cursor::new(typed::<C>(columns).$iter())
            }
            fn rows<'w>(columns: &mut Self::Columns<'w>, column: Option<u32>) -> Self::Rows<'w> {
                column.map(|k| columns.take(k).$iter())
            }
            #[inline]
            fn next<'w>(rows: &mut Self::Rows<'w>) -> Self::Item<'w> {
                rows.as_mut().map(|r| r.next().expect("one row per entity"))
            }
        }
    };
}

column_fetch!(&mut C => &'w mut C, IterMut, iter_mut);
column_fetch!(&C => &'w C, Iter, iter);

macro_rules! filter_fetch {
    ($name:ident, $access:expr) => {
        impl<C: Component> FetchMut for $name<C> {
            type Item<'w> = ();
            type Columns<'w> = ();
            type Rows<'w> = ();
            const ACCESS: Access = $access;
            fn id(world: &World) -> ComponentId {
                world.registry().id::<C>()
            }
            fn columns(_: Option<ColumnsMut<'_>>) {}
            fn rows<'w>(_: &mut Self::Columns<'w>, _: Option<u32>) -> Self::Rows<'w> {}
            #[inline]
            fn next<'w>(_: &mut Self::Rows<'w>) -> Self::Item<'w> {}
        }
    };
}

filter_fetch!(With, Access::With);
filter_fetch!(Without, Access::Without);

/// What [`World::query_mut`](crate::World::query_mut) takes: a tuple of up to 12 of
/// `&mut C`, `&C`, `Option<&mut C>`, `Option<&C>`, [`With<C>`], [`Without<C>`]. A type
/// that is read or written may appear once (filters may repeat it).
pub trait QueryMut {
    /// What the query yields per entity (besides the [`Entity`]).
    type Item<'w>;
    #[doc(hidden)]
    type Columns<'w>;
    #[doc(hidden)]
    type Rows<'w>;
    #[doc(hidden)]
    fn plan(world: &World, out: &mut Vec<(ComponentId, Access)>);
    #[doc(hidden)]
    fn columns<'w>(columns: &mut [Option<ColumnsMut<'w>>]) -> Self::Columns<'w>;
    #[doc(hidden)]
    fn rows<'w>(
        columns: &mut Self::Columns<'w>,
        column: &mut dyn FnMut(usize) -> Option<u32>,
    ) -> Self::Rows<'w>;
    #[doc(hidden)]
    fn next<'w>(rows: &mut Self::Rows<'w>) -> Self::Item<'w>;
}

macro_rules! tuple_query_mut {
    ($($name:ident $idx:tt),*) => {
        impl<$($name: FetchMut),*> QueryMut for ($($name,)*) {
            type Item<'w> = ($($name::Item<'w>,)*);
            type Columns<'w> = ($($name::Columns<'w>,)*);
            type Rows<'w> = ($($name::Rows<'w>,)*);
            fn plan(world: &World, out: &mut Vec<(ComponentId, Access)>) {
                $(out.push(($name::id(world), $name::ACCESS));)*
            }
            fn columns<'w>(columns: &mut [Option<ColumnsMut<'w>>]) -> Self::Columns<'w> {
                ($($name::columns(columns[$idx].take()),)*)
            }
            fn rows<'w>(
                columns: &mut Self::Columns<'w>,
                column: &mut dyn FnMut(usize) -> Option<u32>,
            ) -> Self::Rows<'w> {
                ($($name::rows(&mut columns.$idx, column($idx)),)*)
            }
            #[inline]
            fn next<'w>(rows: &mut Self::Rows<'w>) -> Self::Item<'w> {
                ($($name::next(&mut rows.$idx),)*)
            }
        }
    };
}

tuple_query_mut!(A 0);
tuple_query_mut!(A 0, B 1);
tuple_query_mut!(A 0, B 1, C 2);
tuple_query_mut!(A 0, B 1, C 2, D 3);
tuple_query_mut!(A 0, B 1, C 2, D 3, E 4);
tuple_query_mut!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_query_mut!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_query_mut!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_query_mut!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_query_mut!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_query_mut!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_query_mut!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

/// Whether an element reads or writes its type's columns.
fn accessed(a: Access) -> bool {
    matches!(a, Access::Required | Access::Optional)
}

/// Iterator over `(Entity, Q::Item)` returned by
/// [`World::query_mut`](crate::World::query_mut).
pub struct QueryMutIter<'w, Q: QueryMut> {
    tables: &'w Tables,
    /// The tables to visit, in creation order (matching or not).
    candidates: std::vec::IntoIter<TableId>,
    plan: Vec<(ComponentId, Access)>,
    columns: Q::Columns<'w>,
    entities: std::slice::Iter<'w, Entity>,
    rows: Option<Q::Rows<'w>>,
    _q: PhantomData<Q>,
}

impl<'w, Q: QueryMut> QueryMutIter<'w, Q> {
    /// The query's plan over `world`: each element's type and access.
    ///
    /// # Panics
    /// If a type that is read or written appears twice.
    #[track_caller]
    pub(crate) fn plan(world: &World) -> Vec<(ComponentId, Access)> {
        let mut plan = Vec::new();
        Q::plan(world, &mut plan);
        for (i, &(id, a)) in plan.iter().enumerate() {
            if accessed(a) && plan[..i].iter().any(|&(o, b)| o == id && accessed(b)) {
                panic!(
                    "runsync: query_mut names component type `{}` twice; a type may be read \
                     or written once per query",
                    world.registry().info(id).name
                );
            }
        }
        plan
    }

    /// Builds the query over `all` (every type's columns, by id) and `tables`.
    pub(crate) fn new(
        plan: Vec<(ComponentId, Access)>,
        all: &'w mut [Box<dyn AnyColumns>],
        tables: &'w Tables,
        tables_with: &[Vec<TableId>],
    ) -> Self {
        // One `&mut` per accessed type, in query order, from one pass over all columns.
        let mut picked: Vec<Option<ColumnsMut<'w>>> = plan.iter().map(|_| None).collect();
        for (c, cols) in all.iter_mut().enumerate() {
            if let Some(i) = plan
                .iter()
                .position(|&(id, a)| id.index() == c && accessed(a))
            {
                picked[i] = Some(ColumnsMut(&mut **cols));
            }
        }
        let columns = Q::columns(&mut picked);
        // Candidate tables: those holding the rarest required type, or all.
        let rarest = plan
            .iter()
            .filter(|(_, a)| matches!(a, Access::Required | Access::With))
            .map(|&(id, _)| &tables_with[id.index()])
            .min_by_key(|l| l.len());
        let candidates: Vec<TableId> = match rarest {
            Some(list) => list.clone(),
            None => (0..tables.len() as TableId).collect(),
        };
        QueryMutIter {
            tables,
            candidates: candidates.into_iter(),
            plan,
            columns,
            entities: [].iter(),
            rows: None,
            _q: PhantomData,
        }
    }

    fn next_table(&mut self) -> bool {
        for t in self.candidates.by_ref() {
            let table = self.tables.get(t);
            let matches = self.plan.iter().all(|&(id, a)| match a {
                Access::Required | Access::With => table.has(id),
                Access::Without => !table.has(id),
                Access::Optional => true,
            });
            if !matches || table.entities.is_empty() {
                continue;
            }
            let plan = &self.plan;
            self.rows = Some(Q::rows(&mut self.columns, &mut |i| table.column(plan[i].0)));
            self.entities = table.entities.iter();
            return true;
        }
        false
    }
}

impl<'w, Q: QueryMut> Iterator for QueryMutIter<'w, Q> {
    type Item = (Entity, Q::Item<'w>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(&e) = self.entities.next() {
                let rows = self.rows.as_mut().expect("rows for the current table");
                return Some((e, Q::next(rows)));
            }
            if !self.next_table() {
                return None;
            }
        }
    }
}
