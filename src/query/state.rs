//! A query over one world: where its elements borrow their columns ([`Source`]), which
//! tables it may visit and the test each must pass ([`QueryState`]). Written once, for
//! the shared iterators, `query_mut` and the parallel write paths alike.
//!
//! Matching uses the storage's per-type cache: for each type, the tables that hold it, in
//! creation order, extended only when a table is created (in Sync or between frames). A
//! query walks the shortest such list among its required types (every table if it
//! requires none) and tests each table's signature against its mask with a few word
//! operations (`storage::mask`); only a query naming a type beyond the mask's inline bit
//! array also tests types one by one. So it never scans unrelated tables and never takes
//! a lock.
//!
//! # Write handles
//!
//! An element carries per-query state of its own and takes per-table data in
//! [`Fetch::columns`], with `&mut` access to its state, table by table in creation order:
//! that is how `&mut C` walks its type's columns, and how [`Write<C>`](super::Write)
//! hands out write handles. Its state points at the system's output buffer for `C`, found
//! through a third kind of [`Source`] (built by [`QueryState::with_outputs`] for
//! `Output::query`, reads shared as in `&World` queries; the buffer stays in the system's
//! outputs, which the query borrows exclusively), its `columns` opens a pending output
//! column for the table, and `get` hands out the row's write handle. Such an element is
//! not [`QueryData`] (it must not be copied: its state is a unique pointer), so it
//! iterates with the owning walk of [`QueryState::next_table`], as `query_mut` does.

use std::any::Any;
use std::ptr::NonNull;

use super::fetch::{Fetch, QueryData};
use crate::component::{Component, ComponentId, Registry};
use crate::entity::Entity;
use crate::output::buffer::{OutBuf, SystemOutputs};
use crate::storage::{
    AnyColumns, QueryMask, Storage, Table, TableId, TableOrder, Tables, TypeMarks, TypedColumns,
};

/// One table as a query element sees it: its entities and columns.
#[derive(Clone, Copy)]
pub struct TableRef<'w> {
    table: &'w Table,
}

impl<'w> TableRef<'w> {
    /// The entity in each row.
    #[inline]
    pub(crate) fn entities(self) -> &'w [Entity] {
        self.table.entities()
    }

    #[inline]
    pub(crate) fn len(self) -> usize {
        self.table.len()
    }

    /// Whether the table holds type `id`.
    #[inline]
    pub(crate) fn has(self, id: ComponentId) -> bool {
        self.table.has(id)
    }

    /// The index of type `id`'s column for this table, if the table holds the type.
    #[inline]
    pub(crate) fn column(self, id: ComponentId) -> Option<u32> {
        self.table.column(id)
    }
}

/// Where a query's elements borrow their columns, once per query.
pub struct Source<'w> {
    registry: &'w Registry,
    lend: Lend<'w>,
}

enum Lend<'w> {
    /// `&World`: every element reads (the query is [`QueryData`]).
    Shared(&'w Storage),
    /// `&World` and a system's outputs: elements read, and [`Write`](super::Write)
    /// elements point at the output buffer of their type (`Output::query`).
    Outputs(&'w Storage, &'w mut SystemOutputs, TakenWrites),
    /// `&mut World`: each type's columns lent to at most one element, by id.
    Exclusive(Vec<LentColumns<'w>>),
}

/// One type's columns in an exclusive [`Source`].
struct LentColumns<'w> {
    /// Not used by the query yet.
    whole: Option<&'w mut dyn AnyColumns>,
    /// After the first use: the column vectors (until an element takes them) and the
    /// marks, which row filters read beside them.
    split: Option<(Option<&'w mut dyn Any>, &'w TypeMarks)>,
}

impl<'w> LentColumns<'w> {
    /// These columns, split into their vectors and their marks (on first use).
    fn split<C: Component>(&mut self) -> &mut (Option<&'w mut dyn Any>, &'w TypeMarks) {
        if let Some(whole) = self.whole.take() {
            let typed: &'w mut TypedColumns<C> = whole.typed_mut();
            let (columns, marks) = typed.split_mut();
            self.split = Some((Some(columns), marks));
        }
        self.split.as_mut().expect("the columns are whole or split")
    }
}

impl<'w> Source<'w> {
    /// `C`'s id.
    ///
    /// # Panics
    /// If `C` is not registered.
    #[inline]
    #[track_caller]
    pub(crate) fn id<C: Component>(&self) -> ComponentId {
        self.registry.id::<C>()
    }

    /// Type `id`'s columns, shared (an element that reads `C`).
    #[inline]
    #[track_caller]
    pub(crate) fn read<C: Component>(&mut self, id: ComponentId) -> &'w [Vec<C>] {
        match &mut self.lend {
            Lend::Shared(storage) | Lend::Outputs(storage, ..) => {
                let storage: &'w Storage = storage;
                storage.typed::<C>(id).columns()
            }
            Lend::Exclusive(_) => self.take::<C>(id),
        }
    }

    /// Type `id`'s columns, mutably (an element that writes `C`; only `query_mut` has
    /// one).
    #[track_caller]
    pub(crate) fn write<C: Component>(&mut self, id: ComponentId) -> &'w mut Vec<Vec<C>> {
        match self.lend {
            Lend::Shared(_) | Lend::Outputs(..) => {
                unreachable!("a read-only query lends nothing mutably")
            }
            Lend::Exclusive(_) => self.take::<C>(id),
        }
    }

    /// Type `id`'s change marks (a row filter).
    #[inline]
    pub(crate) fn marks<C: Component>(&mut self, id: ComponentId) -> &'w TypeMarks {
        match &mut self.lend {
            Lend::Shared(storage) | Lend::Outputs(storage, ..) => {
                let storage: &'w Storage = storage;
                storage.typed::<C>(id).marks()
            }
            Lend::Exclusive(lent) => lent[id.index()].split::<C>().1,
        }
    }

    /// Where the system's output buffer for type `id` is (a [`Write`](super::Write)
    /// element), sealed: what the system wrote before comes first. The buffer stays in
    /// the system's outputs, which the query borrows exclusively for `'w`; the pointer is
    /// unique to the element (each type is written by one element) and the buffer neither
    /// moves nor is freed during `'w` (its box stays in the outputs' list).
    ///
    /// # Panics
    /// If another element of the query writes `id` too.
    #[track_caller]
    pub(crate) fn out_buf<C: Component>(&mut self, id: ComponentId) -> NonNull<OutBuf<C>> {
        let Lend::Outputs(_, outputs, taken) = &mut self.lend else {
            unreachable!("only `Output::query` has write elements")
        };
        if taken.ids[..taken.len].contains(&id) {
            written_twice(self.registry.info(id).name);
        }
        taken.ids[taken.len] = id;
        taken.len += 1;
        let buf = outputs.typed::<C>(id);
        buf.seal();
        NonNull::from(buf)
    }

    /// Takes type `id`'s column vectors out of an exclusive source.
    ///
    /// # Panics
    /// If an element took them already.
    #[track_caller]
    fn take<C: Component>(&mut self, id: ComponentId) -> &'w mut Vec<Vec<C>> {
        let Lend::Exclusive(lent) = &mut self.lend else {
            unreachable!("only an exclusive source lends columns one by one")
        };
        match lent[id.index()].split::<C>().0.take() {
            Some(columns) => columns.downcast_mut().expect("columns of another type"),
            None => named_twice(self.registry.info(id).name),
        }
    }
}

#[cold]
#[track_caller]
fn named_twice(name: &str) -> ! {
    panic!(
        "runsync: query_mut names component type `{name}` twice; a type may be read or \
         written once per query"
    )
}

/// The types a query's `Write` elements took (a query has at most 12 elements).
struct TakenWrites {
    ids: [ComponentId; 12],
    len: usize,
}

#[cold]
#[track_caller]
fn written_twice(name: &str) -> ! {
    panic!(
        "runsync: `Output::query` names `Write<{name}>` twice; a type may be written once \
         per query"
    )
}

/// The tables a query visits, in creation order (or canonical order, when that is on).
#[derive(Clone)]
pub(crate) enum Candidates<'w> {
    /// The table list of the query's rarest required type.
    List(std::slice::Iter<'w, TableId>),
    /// No required type: every table.
    All(std::ops::Range<TableId>),
}

impl Iterator for Candidates<'_> {
    type Item = TableId;
    #[inline]
    fn next(&mut self) -> Option<TableId> {
        match self {
            Candidates::List(it) => it.next().copied(),
            Candidates::All(r) => r.next(),
        }
    }
}

/// A query `Q` over one world: its elements' state and the test a table must pass. Made
/// together with the query's [`Candidates`], the tables to try.
///
/// For a [`QueryData`] query it is `Copy`, which the shared iterator uses to pass it by
/// value to its out-of-line table step, and the parallel write paths to share it between
/// workers. It holds only what that step needs: every word of it stays live across the
/// user's row loop.
pub(crate) struct QueryState<'w, Q: Fetch> {
    /// Each element's ids and borrowed columns.
    pub(crate) elements: Q::State<'w>,
    /// The required and excluded types of the mask's inline bit array, and whether the
    /// query names types beyond it.
    mask: QueryMask,
    tables: &'w Tables,
}

impl<'w, Q: QueryData> Clone for QueryState<'w, Q> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<'w, Q: QueryData> Copy for QueryState<'w, Q> {}

impl<'w, Q: QueryData> QueryState<'w, Q> {
    /// `Q` over `storage`, shared, and the tables to try.
    ///
    /// # Panics
    /// If a type in `Q` is not registered.
    #[inline]
    #[track_caller]
    pub(crate) fn shared(storage: &'w Storage) -> (Self, Candidates<'w>) {
        let mut source = Source {
            registry: storage.registry(),
            lend: Lend::Shared(storage),
        };
        let elements = Q::init(&mut source);
        Self::new(elements, storage.tables(), storage.table_order())
    }

    /// `Q`'s part of `table` (a copy of the state takes it).
    #[inline]
    pub(crate) fn shared_columns(&self, table: TableRef<'w>) -> Q::Columns<'w> {
        let mut elements = self.elements;
        Q::columns(&mut elements, table)
    }
}

impl<'w, Q: Fetch> QueryState<'w, Q> {
    /// `Q` over `storage`, its [`Write`](super::Write) elements pointing at their types'
    /// buffers in `outputs`, and the tables to try.
    ///
    /// # Panics
    /// If a type in `Q` is not registered, or is written twice.
    #[track_caller]
    pub(crate) fn with_outputs(
        storage: &'w Storage,
        outputs: &'w mut SystemOutputs,
    ) -> (Self, Candidates<'w>) {
        let mut source = Source {
            registry: storage.registry(),
            lend: Lend::Outputs(
                storage,
                outputs,
                TakenWrites {
                    ids: [ComponentId(u32::MAX); 12],
                    len: 0,
                },
            ),
        };
        let elements = Q::init(&mut source);
        Self::new(elements, storage.tables(), storage.table_order())
    }

    /// `Q` over `storage`, each type's columns lent to at most one element, and the tables
    /// to try.
    ///
    /// # Panics
    /// If a type in `Q` is not registered, or one that is read or written appears twice.
    #[track_caller]
    pub(crate) fn exclusive(storage: &'w mut Storage) -> (Self, Candidates<'w>) {
        let split = storage.split_columns();
        let lent = split
            .columns
            .iter_mut()
            .map(|c| LentColumns {
                whole: Some(&mut **c),
                split: None,
            })
            .collect();
        let mut source = Source {
            registry: split.registry,
            lend: Lend::Exclusive(lent),
        };
        let elements = Q::init(&mut source);
        Self::new(elements, split.tables, split.order)
    }

    /// The mask and candidate tables of `elements`, from one walk over their filter: the
    /// table list of the rarest required type, or every table.
    #[inline]
    fn new(
        elements: Q::State<'w>,
        tables: &'w Tables,
        order: TableOrder<'w>,
    ) -> (Self, Candidates<'w>) {
        let mut mask = QueryMask::default();
        let mut rarest: Option<&'w [TableId]> = None;
        Q::for_each_filter(&elements, &mut |id, required| {
            if required {
                mask.require(id);
                let list = order.with(id);
                if rarest.is_none_or(|r| list.len() < r.len()) {
                    rarest = Some(list);
                }
            } else {
                mask.exclude(id);
            }
        });
        let candidates = match rarest {
            Some(list) => Candidates::List(list.iter()),
            None => match order.all() {
                Some(all) => Candidates::List(all.iter()),
                None => Candidates::All(0..tables.len() as TableId),
            },
        };
        let state = QueryState {
            elements,
            mask,
            tables,
        };
        (state, candidates)
    }

    #[inline]
    pub(crate) fn table(&self, id: TableId) -> TableRef<'w> {
        TableRef {
            table: self.tables.get(id),
        }
    }

    /// Whether `table` matches: its signature against the mask (a few word operations,
    /// whatever the number of types), then, only for a query naming a type beyond the
    /// mask's inline bit array, type by type.
    #[inline]
    pub(crate) fn matches(&self, table: TableRef<'_>) -> bool {
        table.table.signature().passes(&self.mask) && (!self.mask.wide || self.matches_each(table))
    }

    /// The same answer as [`matches`](Self::matches), type by type: cheaper for a query
    /// of one or two types (`len()` tests every table ahead this way).
    #[inline]
    pub(crate) fn matches_each(&self, table: TableRef<'_>) -> bool {
        Q::matches(&self.elements, table)
    }

    /// The next non-empty matching table in `tables` with a row that may pass the row
    /// filters: its entities and `Q`'s part of it.
    #[inline]
    pub(crate) fn next_table(
        &mut self,
        tables: &mut Candidates<'w>,
    ) -> Option<(&'w [Entity], Q::Columns<'w>)> {
        for t in tables {
            let table = self.table(t);
            if table.len() > 0 && self.matches(table) {
                let columns = Q::columns(&mut self.elements, table);
                if Q::FILTERS_ROWS && Q::none_kept(&columns) {
                    continue;
                }
                crate::profile::visited(table.len());
                return Some((table.entities(), columns));
            }
        }
        None
    }

    /// The non-empty tables among `candidates` that match, in creation order.
    pub(crate) fn matching_tables(
        &self,
        candidates: Candidates<'w>,
    ) -> impl Iterator<Item = TableRef<'w>> + '_ {
        candidates
            .map(|t| self.table(t))
            .filter(|&t| t.len() > 0 && self.matches(t))
    }
}
