//! The elements a query is made of, and the one engine behind them.
//!
//! [`Fetch`] is that engine, implemented once per element: `&C`, `Option<&C>`, `&mut C`,
//! `Option<&mut C>` (here), the filters (`filter.rs`), and tuples of up to 12 elements.
//! Three public traits are its faces, each naming the item the element yields: [`QueryMut`]
//! (every element: what [`World::query_mut`] takes), [`QueryData`] (the read-only ones:
//! what [`World::query`] and the parallel write paths take) and [`QueryOut`] (the
//! read-only ones and `Write<C>` elements: what `Output::query` takes). `Fetch` cannot be
//! named outside the crate, so no face can be implemented there: all three are sealed.
//!
//! An element's life in one query: [`init`](Fetch::init) borrows its columns from a
//! [`Source`] (the world shared, or for `query_mut` each type's columns lent once);
//! [`columns`](Fetch::columns) takes its part of each matching table, tables in creation
//! order; [`get`](Fetch::get) reads one row of that part, rows in increasing order. A
//! read-only element's state and columns are `Copy`: the shared iterator passes them by
//! value, and parallel chunks each take a copy.
//!
//! [`World::query`]: crate::World::query
//! [`World::query_mut`]: crate::World::query_mut

use std::ops::Range;

use super::state::{Source, TableRef};
use crate::component::{Component, ComponentId};

/// One element of a query, or a tuple of elements: the engine behind [`QueryData`] and
/// [`QueryMut`]. Crate-private (it cannot be named outside), which seals both.
pub trait Fetch {
    /// What the element yields per row: the faces' `Item`.
    type Out<'w>;
    /// The element's type ids and borrowed columns, for the whole query.
    type State<'w>;
    /// The element's part of one table (its column there, or a filter's mark words).
    type Columns<'w>;

    /// Borrows the element's columns from `source` (once per query).
    fn init<'w>(source: &mut Source<'w>) -> Self::State<'w>;
    /// The one type an element asks of a matching table: `Some((id, true))` if the table
    /// must hold it, `Some((id, false))` if it must not, `None` if any table will do
    /// (`Option<&C>`). [`for_each_filter`](Self::for_each_filter) and
    /// [`matches`](Self::matches) follow from it; a tuple, which asks for several types,
    /// overrides both instead (its `filter` is `None`).
    fn filter(state: &Self::State<'_>) -> Option<(ComponentId, bool)>;
    /// Calls `f(id, true)` for each type a matching table must hold and `f(id, false)` for
    /// each it must not (the query's mask and candidate tables are built from these).
    fn for_each_filter(state: &Self::State<'_>, f: &mut dyn FnMut(ComponentId, bool)) {
        if let Some((id, required)) = Self::filter(state) {
            f(id, required);
        }
    }
    /// The same test as the query's mask, type by type: whether `table` holds every type
    /// this element requires and none it excludes.
    #[inline]
    fn matches(state: &Self::State<'_>, table: TableRef<'_>) -> bool {
        match Self::filter(state) {
            Some((id, required)) => table.has(id) == required,
            None => true,
        }
    }
    /// The element's part of `table`, a table the query matches. A state is asked for
    /// tables in creation order, each at most once.
    fn columns<'w>(state: &mut Self::State<'w>, table: TableRef<'w>) -> Self::Columns<'w>;
    /// The part of no table (before the first table of an iteration).
    fn no_columns<'w>() -> Self::Columns<'w>;
    /// Row `row` of `columns`. One value of `columns` is asked for rows in increasing
    /// order, each at most once (a read-only element's `Columns` is `Copy`: every copy
    /// starts afresh).
    ///
    /// Reads are unchecked (no bounds check per column per row, a large share of a
    /// tight loop's work); the row loops check the row once, against the table's entity
    /// list.
    ///
    /// # Safety
    /// `row` is less than the length of the table `columns` was taken from (every column
    /// of a table has the length of its entity list).
    unsafe fn get<'w>(columns: &mut Self::Columns<'w>, row: usize) -> Self::Out<'w>;

    /// Whether this element keeps only some rows of a matching table (`Changed`,
    /// `Added`); when `false`, [`kept_word`](Self::kept_word) is never called.
    const FILTERS_ROWS: bool = false;
    /// Which of rows `64 * w .. 64 * w + 64` of the table of `columns` pass the row
    /// filters, one bit per row (`Lsb0`); bits past the table's end are meaningless.
    #[inline]
    fn kept_word(_columns: &Self::Columns<'_>, _w: usize) -> u64 {
        !0
    }
    /// Whether no row of the table of `columns` can pass (the table is skipped).
    #[inline]
    fn none_kept(_columns: &Self::Columns<'_>) -> bool {
        false
    }
}

/// A read-only query: what [`World::query`](crate::World::query),
/// [`World::query_filtered`](crate::World::query_filtered),
/// [`Output::write_each`](crate::Output::write_each) and
/// [`Output::par_for_each`](crate::Output::par_for_each) take. `&C`, `Option<&C>`,
/// [`With<C>`](crate::With), [`Without<C>`](crate::Without),
/// [`Changed<C>`](crate::Changed), [`Added<C>`](crate::Added), or a tuple of up to 12 of
/// these.
///
/// Naming a type twice (`(&A, &A)`) is fine: both are shared reads.
///
/// Sealed: the element types above are all there is. Every one of them is also a
/// [`QueryMut`], with the same item.
///
/// A query that writes does not compile here — during Run a system writes through its
/// [`Output`](crate::Output), and `&mut C` is for
/// [`World::query_mut`](crate::World::query_mut) between frames:
///
/// ```compile_fail
/// use runsync::prelude::*;
/// #[derive(Clone, Copy)] struct Pos(f32);
/// impl Component for Pos { type Output = Pos; }
/// let mut world = World::new();
/// world.register::<Pos>(merge::last);
/// for (_e, (p,)) in world.query::<(&mut Pos,)>() { p.0 += 1.0; }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a read-only query",
    label = "`World::query` and `Output`'s parallel loops only read components",
    note = "during Run, write through `Output` (`out.write::<C>(e, value)`); between frames, \
            `World::query_mut` takes `&mut C`"
)]
pub trait QueryData:
    for<'w> Fetch<
        Out<'w> = <Self as QueryData>::Item<'w>,
        State<'w>: Copy + Send + Sync,
        Columns<'w>: Copy + Send + Sync,
    >
{
    /// What the query yields per entity (besides the [`Entity`](crate::Entity) itself).
    type Item<'w>;

    /// What [`QueryIter::for_each_chunk`](crate::QueryIter::for_each_chunk) hands out per
    /// table, for the same rows as its entities: `&[C]` for `&C`, `Option<&[C]>` for
    /// `Option<&C>` (`None` where the table has no `C`), `()` for a filter; a tuple of
    /// those for a tuple.
    type Chunk<'w>;

    /// Rows `rows` of a table's columns, as a chunk.
    #[doc(hidden)]
    fn chunk<'w>(columns: <Self as Fetch>::Columns<'w>, rows: Range<usize>) -> Self::Chunk<'w>;
}

/// What [`Output::query`](crate::Output::query) takes: a tuple of up to 12 of `&C`,
/// `Option<&C>`, [`Write<C>`](crate::Write), [`With<C>`](crate::With),
/// [`Without<C>`](crate::Without), [`Changed<C>`](crate::Changed) and
/// [`Added<C>`](crate::Added). A type may be written (`Write<C>`) once per query; reading
/// it too is fine (the read sees this frame's state, the write is merged in Sync).
///
/// Every [`QueryData`] element type is one too, with the same item. Sealed, like
/// `QueryData`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a query `Output::query` can run",
    label = "`Output::query` takes reads (`&C`, `Option<&C>`), filters and `Write<C>` elements",
    note = "`&mut C` is for `World::query_mut` between frames; during Run, write a row \
            through a `Write<C>` element"
)]
pub trait QueryOut:
    for<'w> Fetch<Out<'w> = <Self as QueryOut>::Item<'w>, Columns<'w>: Copy + Send + Sync>
{
    /// What the query yields per entity (besides the [`Entity`](crate::Entity) itself).
    type Item<'w>;
}

/// What [`World::query_mut`](crate::World::query_mut) takes: a tuple of up to 12 of
/// `&mut C`, `&C`, `Option<&mut C>`, `Option<&C>`, [`With<C>`](crate::With),
/// [`Without<C>`](crate::Without), [`Changed<C>`](crate::Changed) and
/// [`Added<C>`](crate::Added). A type that is read or written may appear once (filters may
/// repeat it).
///
/// Every [`QueryData`] element type is one too, with the same item; in generic code, bound
/// on `QueryMut` to call `query_mut`. Sealed, like `QueryData`.
pub trait QueryMut: for<'w> Fetch<Out<'w> = <Self as QueryMut>::Item<'w>> {
    /// What the query yields per entity (besides the [`Entity`](crate::Entity) itself).
    type Item<'w>;
}

// ----- shared reads: `&C`, `Option<&C>` -----

impl<C: Component> Fetch for &C {
    type Out<'w> = &'w C;
    type State<'w> = (ComponentId, &'w [Vec<C>]);
    type Columns<'w> = &'w [C];

    #[inline]
    #[track_caller]
    fn init<'w>(source: &mut Source<'w>) -> Self::State<'w> {
        let id = source.id::<C>();
        (id, source.read::<C>(id))
    }
    #[inline]
    fn filter(state: &Self::State<'_>) -> Option<(ComponentId, bool)> {
        Some((state.0, true))
    }
    #[inline]
    fn columns<'w>(state: &mut Self::State<'w>, table: TableRef<'w>) -> Self::Columns<'w> {
        match table.column(state.0) {
            Some(c) => &state.1[c as usize],
            None => &[],
        }
    }
    #[inline]
    fn no_columns<'w>() -> Self::Columns<'w> {
        &[]
    }
    #[inline]
    unsafe fn get<'w>(columns: &mut Self::Columns<'w>, row: usize) -> Self::Out<'w> {
        let column: &'w [C] = columns;
        debug_assert!(row < column.len(), "row {row} of {}", column.len());
        // SAFETY: `columns` is the table's column of `C` (the table holds `C`: it matched
        // the query), as long as the table, and `row` is less than that (the caller's
        // contract).
        unsafe { column.get_unchecked(row) }
    }
}

impl<C: Component> Fetch for Option<&C> {
    type Out<'w> = Option<&'w C>;
    type State<'w> = (ComponentId, &'w [Vec<C>]);
    type Columns<'w> = Option<&'w [C]>;

    #[inline]
    #[track_caller]
    fn init<'w>(source: &mut Source<'w>) -> Self::State<'w> {
        <&C>::init(source)
    }
    #[inline]
    fn filter(_: &Self::State<'_>) -> Option<(ComponentId, bool)> {
        None
    }
    #[inline]
    fn columns<'w>(state: &mut Self::State<'w>, table: TableRef<'w>) -> Self::Columns<'w> {
        let c = table.column(state.0)?;
        Some(&state.1[c as usize])
    }
    #[inline]
    fn no_columns<'w>() -> Self::Columns<'w> {
        None
    }
    #[inline]
    unsafe fn get<'w>(columns: &mut Self::Columns<'w>, row: usize) -> Self::Out<'w> {
        // SAFETY: a present column is the table's column of `C`, as long as the table;
        // `row` is less than that (the caller's contract).
        columns.map(|c| unsafe { c.get_unchecked(row) })
    }
}

// ----- exclusive writes: `&mut C`, `Option<&mut C>` (`World::query_mut` only) -----

/// One type's columns lent mutably to a `&mut C` element, handed out table by table.
///
/// Safe code: the query holds the only `&mut` to the type's column vector and visits
/// tables in creation order, in which a type's column indices only grow (column `k`
/// belongs to the `k`-th table holding the type), so an advancing iterator over the
/// columns reaches each table's column exactly once.
pub struct ColumnWalk<'w, C> {
    id: ComponentId,
    columns: std::slice::IterMut<'w, Vec<C>>,
    /// The index of the column `columns` yields next.
    next: u32,
}

impl<'w, C> ColumnWalk<'w, C> {
    /// Column `k`: each `k` at most once, in increasing order.
    fn take(&mut self, k: u32) -> &'w mut Vec<C> {
        assert!(k >= self.next, "tables visited out of creation order");
        let column = self.columns.nth((k - self.next) as usize);
        self.next = k + 1;
        column.expect("a table's column exists in its type's storage")
    }
}

/// One table's column lent to a `&mut C` element, row by row in increasing order.
pub struct RowsMut<'w, C> {
    /// The rows from `next` on.
    rows: std::slice::IterMut<'w, C>,
    next: usize,
}

impl<'w, C> RowsMut<'w, C> {
    fn new(column: &'w mut [C]) -> Self {
        RowsMut {
            rows: column.iter_mut(),
            next: 0,
        }
    }

    /// Row `row` (after every row asked before).
    #[inline]
    fn get(&mut self, row: usize) -> &'w mut C {
        if row != self.next {
            // Rows a row filter dropped.
            self.rows.nth(row - self.next - 1);
        }
        self.next = row + 1;
        self.rows.next().expect("a row of the table")
    }
}

impl<C: Component> Fetch for &mut C {
    type Out<'w> = &'w mut C;
    type State<'w> = ColumnWalk<'w, C>;
    type Columns<'w> = RowsMut<'w, C>;

    #[inline]
    #[track_caller]
    fn init<'w>(source: &mut Source<'w>) -> Self::State<'w> {
        crate::hierarchy::assert_mutable::<C>();
        let id = source.id::<C>();
        ColumnWalk {
            id,
            columns: source.write::<C>(id).iter_mut(),
            next: 0,
        }
    }
    #[inline]
    fn filter(state: &Self::State<'_>) -> Option<(ComponentId, bool)> {
        Some((state.id, true))
    }
    #[inline]
    fn columns<'w>(state: &mut Self::State<'w>, table: TableRef<'w>) -> Self::Columns<'w> {
        let k = table
            .column(state.id)
            .expect("a matching table holds every required type");
        RowsMut::new(state.take(k))
    }
    #[inline]
    fn no_columns<'w>() -> Self::Columns<'w> {
        RowsMut::new(&mut [])
    }
    #[inline]
    unsafe fn get<'w>(columns: &mut Self::Columns<'w>, row: usize) -> Self::Out<'w> {
        columns.get(row)
    }
}

impl<C: Component> Fetch for Option<&mut C> {
    type Out<'w> = Option<&'w mut C>;
    type State<'w> = ColumnWalk<'w, C>;
    type Columns<'w> = Option<RowsMut<'w, C>>;

    #[inline]
    #[track_caller]
    fn init<'w>(source: &mut Source<'w>) -> Self::State<'w> {
        <&mut C>::init(source)
    }
    #[inline]
    fn filter(_: &Self::State<'_>) -> Option<(ComponentId, bool)> {
        None
    }
    #[inline]
    fn columns<'w>(state: &mut Self::State<'w>, table: TableRef<'w>) -> Self::Columns<'w> {
        let k = table.column(state.id)?;
        Some(RowsMut::new(state.take(k)))
    }
    #[inline]
    fn no_columns<'w>() -> Self::Columns<'w> {
        None
    }
    #[inline]
    unsafe fn get<'w>(columns: &mut Self::Columns<'w>, row: usize) -> Self::Out<'w> {
        columns.as_mut().map(|c| c.get(row))
    }
}

// ----- the faces -----

/// The three faces of a read-only element `$ty` (generic over `C: Component`), each with
/// the item `$item`: [`QueryData`] (whose chunk is `$chunk`, made by `$make` from the
/// element's columns `$columns` and the rows `$rows`), [`QueryMut`] and [`QueryOut`].
macro_rules! read_only_faces {
    ($ty:ty => $item:ty, $chunk:ty, |$columns:pat_param, $rows:pat_param| $make:expr) => {
        impl<C: Component> QueryData for $ty {
            type Item<'w> = $item;
            type Chunk<'w> = $chunk;
            #[inline]
            fn chunk<'w>(
                $columns: Self::Columns<'w>,
                $rows: std::ops::Range<usize>,
            ) -> Self::Chunk<'w> {
                $make
            }
        }
        impl<C: Component> QueryMut for $ty {
            type Item<'w> = $item;
        }
        impl<C: Component> QueryOut for $ty {
            type Item<'w> = $item;
        }
    };
}
pub(super) use read_only_faces;

read_only_faces!(&C => &'w C, &'w [C], |columns, rows| &columns[rows]);
read_only_faces!(Option<&C> => Option<&'w C>, Option<&'w [C]>, |columns, rows| {
    columns.map(|c| &c[rows])
});

impl<C: Component> QueryMut for &mut C {
    type Item<'w> = &'w mut C;
}
impl<C: Component> QueryMut for Option<&mut C> {
    type Item<'w> = Option<&'w mut C>;
}

// ----- tuples -----

macro_rules! tuple_query {
    ($($name:ident $idx:tt),*) => {
        // `()` (no element: every entity) leaves the arguments unused and its row read
        // empty.
        #[allow(unused_variables, unused_unsafe, clippy::unused_unit)]
        impl<$($name: Fetch),*> Fetch for ($($name,)*) {
            type Out<'w> = ($($name::Out<'w>,)*);
            type State<'w> = ($($name::State<'w>,)*);
            type Columns<'w> = ($($name::Columns<'w>,)*);

            #[inline]
            #[track_caller]
            fn init<'w>(source: &mut Source<'w>) -> Self::State<'w> {
                ($($name::init(source),)*)
            }
            /// Several types: see `for_each_filter` and `matches`.
            fn filter(_: &Self::State<'_>) -> Option<(ComponentId, bool)> {
                None
            }
            fn for_each_filter(state: &Self::State<'_>, f: &mut dyn FnMut(ComponentId, bool)) {
                $($name::for_each_filter(&state.$idx, f);)*
            }
            #[inline]
            fn matches(state: &Self::State<'_>, table: TableRef<'_>) -> bool {
                $($name::matches(&state.$idx, table) &&)* true
            }
            #[inline]
            fn columns<'w>(state: &mut Self::State<'w>, table: TableRef<'w>)
                -> Self::Columns<'w>
            {
                ($($name::columns(&mut state.$idx, table),)*)
            }
            #[inline]
            fn no_columns<'w>() -> Self::Columns<'w> {
                ($($name::no_columns(),)*)
            }
            #[inline]
            unsafe fn get<'w>(columns: &mut Self::Columns<'w>, row: usize) -> Self::Out<'w> {
                // SAFETY: the caller's contract, the same for every element.
                unsafe { ($($name::get(&mut columns.$idx, row),)*) }
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

        #[allow(unused_variables, clippy::unused_unit)]
        impl<$($name: QueryData),*> QueryData for ($($name,)*) {
            type Item<'w> = ($($name::Item<'w>,)*);
            type Chunk<'w> = ($($name::Chunk<'w>,)*);
            #[inline]
            fn chunk<'w>(columns: Self::Columns<'w>, rows: Range<usize>) -> Self::Chunk<'w> {
                ($($name::chunk(columns.$idx, rows.clone()),)*)
            }
        }

        impl<$($name: QueryMut),*> QueryMut for ($($name,)*) {
            type Item<'w> = ($($name::Item<'w>,)*);
        }

        impl<$($name: QueryOut),*> QueryOut for ($($name,)*) {
            type Item<'w> = ($($name::Item<'w>,)*);
        }
    };
}

tuple_query!();
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
