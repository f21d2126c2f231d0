//! The query iterators: [`QueryIter`] and [`QueryFiltered`] over `&World`, [`QueryMutIter`]
//! over `&mut World`. All three walk tables with [`QueryState::next_table`] and the rows of
//! one table with [`TableRows`], which also skips the rows a row filter drops, a word (64
//! rows) at a time.

use std::marker::PhantomData;

use super::fetch::{Fetch, QueryData, QueryMut, QueryOut};
use super::state::{Candidates, QueryState};
use crate::entity::Entity;
use crate::output::buffer::SystemOutputs;
use crate::storage::Storage;

/// Whether row `row` passes `Q`'s row filters.
#[inline]
pub(crate) fn keeps<Q: Fetch>(columns: &Q::Columns<'_>, row: usize) -> bool {
    Q::kept_word(columns, row / 64) & (1 << (row % 64)) != 0
}

/// The first row of `from..len` that passes `Q`'s row filters, or `len`: a word (64 rows)
/// at a time.
#[inline]
fn next_kept<Q: Fetch>(columns: &Q::Columns<'_>, from: usize, len: usize) -> usize {
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
fn count_kept<Q: Fetch>(columns: &Q::Columns<'_>, from: usize, len: usize) -> usize {
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

/// The rows of the table being visited: its entities, `Q`'s part of it, the next row.
struct TableRows<'w, Q: Fetch> {
    entities: &'w [Entity],
    columns: Q::Columns<'w>,
    row: usize,
}

impl<'w, Q: Fetch> TableRows<'w, Q> {
    /// No table yet.
    #[inline]
    fn none() -> Self {
        TableRows {
            entities: &[],
            columns: Q::no_columns(),
            row: 0,
        }
    }

    /// The rows of a table found by [`QueryState::next_table`].
    #[inline]
    fn new((entities, columns): (&'w [Entity], Q::Columns<'w>)) -> Self {
        TableRows {
            entities,
            columns,
            row: 0,
        }
    }

    /// The next row that passes the row filters.
    #[inline(always)]
    fn next(&mut self) -> Option<(Entity, Q::Out<'w>)> {
        let &e = self.peek()?;
        Some(self.take(e))
    }

    /// The entity of the next row that passes the row filters, if any; [`take`] then
    /// takes that row.
    ///
    /// [`take`]: Self::take
    #[inline(always)]
    fn peek(&mut self) -> Option<&'w Entity> {
        if Q::FILTERS_ROWS && self.row < self.entities.len() {
            self.row = next_kept::<Q>(&self.columns, self.row, self.entities.len());
        }
        self.entities.get(self.row)
    }

    /// The row [`peek`](Self::peek) found, whose entity is `e`.
    #[inline(always)]
    fn take(&mut self, e: Entity) -> (Entity, Q::Out<'w>) {
        // SAFETY: `peek` found `self.row` inside the table (`entities.get`), and the
        // columns are that table's.
        let item = unsafe { Q::get(&mut self.columns, self.row) };
        self.row += 1;
        e.hint_valid();
        (e, item)
    }

    /// `f` over the rows left: every row, or with a row filter only the set bits, a word
    /// (64 rows) at a time.
    #[inline(always)]
    fn fold<B>(mut self, mut acc: B, f: &mut impl FnMut(B, (Entity, Q::Out<'w>)) -> B) -> B {
        let ents = self.entities;
        if Q::FILTERS_ROWS {
            let mut row = self.row;
            while row < ents.len() {
                let w = row / 64;
                let mut bits = Q::kept_word(&self.columns, w) & (!0u64 << (row % 64));
                while bits != 0 {
                    let r = w * 64 + bits.trailing_zeros() as usize;
                    if r >= ents.len() {
                        break;
                    }
                    // SAFETY: `r < ents.len()`, checked above.
                    acc = f(acc, (ents[r], unsafe { Q::get(&mut self.columns, r) }));
                    bits &= bits - 1;
                }
                row = (w + 1) * 64;
            }
        } else {
            for (row, &e) in ents.iter().enumerate().skip(self.row) {
                // SAFETY: `row` indexes `ents`, the table's entity list.
                acc = f(acc, (e, unsafe { Q::get(&mut self.columns, row) }));
            }
        }
        acc
    }

    /// Skips up to `n` of the rows left that pass the row filters, without reading them;
    /// returns how many it skipped (fewer than `n` only at the end of the table).
    #[inline]
    fn skip(&mut self, n: usize) -> usize {
        let len = self.entities.len();
        if !Q::FILTERS_ROWS {
            let k = n.min(len.saturating_sub(self.row));
            self.row += k;
            return k;
        }
        let mut k = 0;
        while k < n && self.row < len {
            let r = next_kept::<Q>(&self.columns, self.row, len);
            if r >= len {
                self.row = len;
                break;
            }
            self.row = r + 1;
            k += 1;
        }
        k
    }

    /// The row after the `n`-th of the rows left that pass the row filters (`n` fewer
    /// than those: see [`remaining`](Self::remaining)).
    fn end_after(&self, n: usize) -> usize {
        if !Q::FILTERS_ROWS {
            return self.row + n;
        }
        let len = self.entities.len();
        (0..n).fold(self.row, |r, _| next_kept::<Q>(&self.columns, r, len) + 1)
    }

    /// How many rows are left that pass the row filters.
    fn remaining(&self) -> usize {
        if Q::FILTERS_ROWS {
            count_kept::<Q>(&self.columns, self.row, self.entities.len())
        } else {
            self.entities.len().saturating_sub(self.row)
        }
    }
}

/// Iterator over `(Entity, Q::Item)` returned by [`World::query`](crate::World::query).
pub struct QueryIter<'w, Q: QueryData> {
    state: QueryState<'w, Q>,
    tables: Candidates<'w>,
    rows: TableRows<'w, Q>,
    /// After the table being walked, how many more rows to yield ([`rows`](Self::rows));
    /// `usize::MAX`: all.
    left: usize,
}

impl<'w, Q: QueryData> QueryIter<'w, Q> {
    #[track_caller]
    pub(crate) fn new(storage: &'w Storage) -> Self {
        let (state, tables) = QueryState::shared(storage);
        QueryIter {
            state,
            tables,
            rows: TableRows::none(),
            left: usize::MAX,
        }
    }

    /// Only the rows `range` of what this iterator has left (counted from where it
    /// stands): what `skip(range.start).take(range.len())` yields, but the start is found
    /// without reading a row (as [`nth`](Iterator::nth) does), and the rows are walked with
    /// the query's own loop, table by table, not counted one by one. The way to cut a
    /// query into parts, one per job of [`Output::parallel`](crate::Output::parallel):
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy)] struct Hp(u32);
    /// # impl Component for Hp { type Output = Hp; }
    /// let mut world = World::new();
    /// world.register::<Hp>(merge::last);
    /// for i in 0..100 { world.spawn((Hp(i),)); }
    /// let part: Vec<u32> = world.query::<(&Hp,)>().rows(40..45).map(|(_, (h,))| h.0).collect();
    /// assert_eq!(part, [40, 41, 42, 43, 44]);
    /// ```
    ///
    /// On an iterator already cut, the range counts within what that cut left.
    pub fn rows(mut self, range: std::ops::Range<usize>) -> Self {
        // What an earlier cut still allows, counted from where the iterator stands.
        let allowed = match self.left {
            usize::MAX => usize::MAX,
            left => self.rows.remaining().saturating_add(left),
        };
        self.advance(range.start);
        self.left = range.end.min(allowed).saturating_sub(range.start);
        // The limit counts the rows left in the table being walked too: the clip cuts
        // that table, or takes its rows off the limit.
        self.clip();
        self
    }

    /// Calls `f` once per table with the rows left there: their entities and the query's
    /// columns for the same rows (`&[C]` for `&C`, `Option<&[C]>` for `Option<&C>`; see
    /// [`QueryData::Chunk`]). A loop over slices the compiler can keep in registers and
    /// vectorise, and what is the same for a whole table (which optional components it
    /// has) is decided once per table, not per row.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy)] struct Hp(u32);
    /// # impl Component for Hp { type Output = Hp; }
    /// # #[derive(Clone, Copy)] struct Shield(u32);
    /// # impl Component for Shield { type Output = Shield; }
    /// let mut world = World::new();
    /// world.register::<Hp>(merge::last);
    /// world.register::<Shield>(merge::last);
    /// for i in 0..10 { world.spawn((Hp(i),)); world.spawn((Hp(i), Shield(1))); }
    /// let mut total = 0;
    /// world.query::<(&Hp, Option<&Shield>)>().for_each_chunk(|entities, (hp, shield)| {
    ///     assert_eq!(entities.len(), hp.len());
    ///     let bonus = if shield.is_some() { 1 } else { 0 }; // once per table
    ///     total += hp.iter().map(|h| h.0 + bonus).sum::<u32>();
    /// });
    /// assert_eq!(total, 2 * 45 + 10);
    /// ```
    ///
    /// # Panics
    /// Does not compile (when monomorphised) for a query with a row filter
    /// ([`Changed`](crate::Changed), [`Added`](crate::Added)), which keeps some rows of a
    /// table only: loop over its rows instead.
    pub fn for_each_chunk(mut self, mut f: impl FnMut(&'w [Entity], Q::Chunk<'w>)) {
        const {
            assert!(
                !<Q as Fetch>::FILTERS_ROWS,
                "for_each_chunk hands out whole tables: not for a query with Changed or Added"
            )
        };
        loop {
            let (entities, row) = (self.rows.entities, self.rows.row);
            if row < entities.len() {
                let rows = row..entities.len();
                f(&entities[rows.clone()], Q::chunk(self.rows.columns, rows));
            }
            self.rows.row = entities.len();
            if !self.next_table() {
                return;
            }
        }
    }

    /// Skips `n` rows without reading them; returns how many it could not skip (the
    /// query ended).
    fn advance(&mut self, mut n: usize) -> usize {
        loop {
            n -= self.rows.skip(n);
            if n == 0 {
                return 0;
            }
            if !self.next_table() {
                return n;
            }
        }
    }

    /// Moves to the next matching table (clipped to [`rows`](Self::rows)' range); `false`
    /// at the end. Inlined into the row loops; the calls it makes (the table search, the
    /// clip of a limited iterator) take and return values, never a reference into the
    /// iterator (see [`next_table`](fn@next_table)).
    #[inline(always)]
    fn next_table(&mut self) -> bool {
        let (tables, _, found) = next_table::<Q>(self.tables.clone(), self.state);
        self.tables = tables;
        match found {
            Some(found) => {
                self.rows = TableRows::new(found);
                self.clip();
                true
            }
            None => false,
        }
    }

    /// Holds the table being walked to the rows still wanted: if it has more, it is cut
    /// after them and no table follows.
    #[inline(always)]
    fn clip(&mut self) {
        if self.left != usize::MAX {
            let rows = std::mem::replace(&mut self.rows, TableRows::none());
            let (rows, left) = clip_rows(rows, self.left);
            self.rows = rows;
            self.left = left;
            if left == 0 {
                self.tables = Candidates::All(0..0);
            }
        }
    }
}

/// A limited iterator's table cut to the `left` rows still wanted, and how many are
/// wanted after it (0: it was cut, no table follows). Out of line and by value, as
/// [`next_table`](fn@next_table) is: a reference into the iterator passed to any call
/// keeps the whole iterator in memory, so that the row loop of every query, limited or
/// not, stores its row and reloads its columns on each row.
#[cold]
#[inline(never)]
fn clip_rows<Q: Fetch>(mut rows: TableRows<'_, Q>, left: usize) -> (TableRows<'_, Q>, usize) {
    let here = rows.remaining();
    if here < left {
        return (rows, left - here);
    }
    let end = rows.end_after(left);
    rows.entities = &rows.entities[..end];
    (rows, 0)
}

/// A table found by [`QueryState::next_table`]: its entities and `Q`'s part of it.
type Found<'w, Q> = Option<(&'w [Entity], <Q as Fetch>::Columns<'w>)>;

/// The next matching table after `tables`' position, the cursor after it, and the state
/// back. Out of line and borrowing nothing of the iterator (everything by value), so that
/// `next` inlines into the user's loop with its row state in registers: a pointer into
/// the iterator passed to a call would keep the whole iterator in memory, and the loop
/// would store its row to it and reload its columns every row.
#[inline(never)]
fn next_table<'w, Q: Fetch>(
    mut tables: Candidates<'w>,
    mut state: QueryState<'w, Q>,
) -> (Candidates<'w>, QueryState<'w, Q>, Found<'w, Q>) {
    let found = state.next_table(&mut tables);
    (tables, state, found)
}

impl<'w, Q: QueryData> Iterator for QueryIter<'w, Q> {
    type Item = (Entity, Q::Item<'w>);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.rows.next() {
                return Some(item);
            }
            if !self.next_table() {
                return None;
            }
        }
    }

    /// Skips `n` rows without reading them: O(tables passed), not O(`n`) (with a row
    /// filter, O(rows kept passed)). So `skip(k)` and `nth(k)` are cheap; see also
    /// [`rows`](QueryIter::rows).
    fn nth(&mut self, n: usize) -> Option<Self::Item> {
        if self.advance(n) > 0 {
            return None;
        }
        self.next()
    }

    /// Exact: the rows left in the current table plus those of the matching tables still
    /// ahead (a walk over the remaining candidate tables, no rows visited).
    fn size_hint(&self) -> (usize, Option<usize>) {
        let here = self.rows.remaining();
        if self.left == 0 {
            return (here, Some(here));
        }
        let ahead: usize = self
            .tables
            .clone()
            .map(|t| self.state.table(t))
            .filter(|&t| self.state.matches_each(t))
            .map(|t| {
                if Q::FILTERS_ROWS {
                    count_kept::<Q>(&self.state.shared_columns(t), 0, t.len())
                } else {
                    t.len()
                }
            })
            .sum::<usize>()
            .min(self.left);
        (here + ahead, Some(here + ahead))
    }

    fn fold<B, F>(mut self, init: B, mut f: F) -> B
    where
        F: FnMut(B, Self::Item) -> B,
    {
        let mut acc = init;
        loop {
            let rows = std::mem::replace(&mut self.rows, TableRows::none());
            acc = rows.fold(acc, &mut f);
            if !self.next_table() {
                return acc;
            }
        }
    }
}

/// `len()` counts the matching entities without visiting them: cost O(matching tables);
/// with a row filter ([`Changed`](crate::Changed), [`Added`](crate::Added)) it also counts
/// the marked rows of those tables (a popcount per 64 rows).
impl<Q: QueryData> ExactSizeIterator for QueryIter<'_, Q> {}

/// Iterator returned by [`World::query_filtered`](crate::World::query_filtered): the entities matching `Q` and filter
/// `F`, yielding only `Q`'s items.
pub struct QueryFiltered<'w, Q: QueryData, F: QueryData> {
    inner: QueryIter<'w, (Q, F)>,
}

impl<'w, Q: QueryData, F: QueryData> QueryFiltered<'w, Q, F> {
    #[track_caller]
    pub(crate) fn new(storage: &'w Storage) -> Self {
        QueryFiltered {
            inner: QueryIter::new(storage),
        }
    }

    /// Only the rows `range` of what this iterator has left: see [`QueryIter::rows`].
    pub fn rows(self, range: std::ops::Range<usize>) -> Self {
        QueryFiltered {
            inner: self.inner.rows(range),
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

    /// The inner query's skip ([`QueryIter`]'s `nth`: no row read).
    fn nth(&mut self, n: usize) -> Option<Self::Item> {
        self.inner.nth(n).map(|(e, (q, _))| (e, q))
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

/// Iterator over `(Entity, Q::Item)` returned by [`World::query_mut`](crate::World::query_mut): the order is
/// [`World::query`](crate::World::query)'s.
pub struct QueryMutIter<'w, Q: QueryMut> {
    walk: OwnedWalk<'w, Q>,
}

impl<'w, Q: QueryMut> QueryMutIter<'w, Q> {
    /// # Panics
    /// If a type in `Q` is not registered, or one that is read or written appears twice.
    #[track_caller]
    pub(crate) fn new(storage: &'w mut Storage) -> Self {
        let (state, tables) = QueryState::exclusive(storage);
        QueryMutIter {
            walk: OwnedWalk::new(state, tables),
        }
    }
}

impl<'w, Q: QueryMut> Iterator for QueryMutIter<'w, Q> {
    type Item = (Entity, Q::Item<'w>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.walk.next()
    }

    fn fold<B, F>(self, init: B, f: F) -> B
    where
        F: FnMut(B, Self::Item) -> B,
    {
        self.walk.fold(init, f)
    }
}

/// The walk of a query iterator whose state is not `Copy` (`QueryMutIter`,
/// `QueryOutIter`): the state moves out to the out-of-line [`next_table`] and back, so
/// nothing of the walk is borrowed by a call (see there). `None` only while that call
/// runs, or after it panicked.
struct OwnedWalk<'w, Q: Fetch> {
    state: Option<QueryState<'w, Q>>,
    tables: Candidates<'w>,
    rows: TableRows<'w, Q>,
}

impl<'w, Q: Fetch> OwnedWalk<'w, Q> {
    fn new(state: QueryState<'w, Q>, tables: Candidates<'w>) -> Self {
        OwnedWalk {
            state: Some(state),
            tables,
            rows: TableRows::none(),
        }
    }

    /// The next table that has a row, or `false` at the end.
    #[inline(always)]
    fn advance(&mut self) -> bool {
        let Some(state) = self.state.take() else {
            return false;
        };
        let (tables, state, found) = next_table::<Q>(self.tables.clone(), state);
        self.tables = tables;
        self.state = Some(state);
        match found {
            Some(found) => {
                self.rows = TableRows::new(found);
                true
            }
            None => false,
        }
    }

    /// The current table's next row, else the first row of the next table that has one.
    ///
    /// `peek` and `take` rather than `rows.next()` (which `QueryIter` uses): each is the
    /// shorter loop for its iterator, measured with callgrind.
    #[inline(always)]
    fn next(&mut self) -> Option<(Entity, Q::Out<'w>)> {
        loop {
            if let Some(&e) = self.rows.peek() {
                return Some(self.rows.take(e));
            }
            if !self.advance() {
                return None;
            }
        }
    }

    /// [`next`](Self::next)'s walk as a fold: table by table, each table's rows in one
    /// loop.
    fn fold<B>(mut self, mut acc: B, mut f: impl FnMut(B, (Entity, Q::Out<'w>)) -> B) -> B {
        loop {
            acc = std::mem::replace(&mut self.rows, TableRows::none()).fold(acc, &mut f);
            if !self.advance() {
                return acc;
            }
        }
    }
}

/// Iterator over `(Entity, Q::Item)` returned by [`Output::query`](crate::Output::query):
/// the order is [`World::query`](crate::World::query)'s; [`Write<C>`](crate::Write) elements yield the row's
/// write handle.
pub struct QueryOutIter<'o, Q: QueryOut> {
    walk: OwnedWalk<'o, Q>,
    /// The `Write` elements' buffers are the system's, borrowed for `'o`.
    _outputs: PhantomData<&'o mut SystemOutputs>,
}

impl<'o, Q: QueryOut> QueryOutIter<'o, Q> {
    /// # Panics
    /// If a type in `Q` is not registered, or is written twice.
    #[track_caller]
    pub(crate) fn new(storage: &'o Storage, outputs: &'o mut SystemOutputs) -> Self {
        let (state, tables) = QueryState::with_outputs(storage, outputs);
        QueryOutIter {
            walk: OwnedWalk::new(state, tables),
            _outputs: PhantomData,
        }
    }
}

impl<'o, Q: QueryOut> Iterator for QueryOutIter<'o, Q> {
    type Item = (Entity, Q::Item<'o>);

    // Always inlined: a small query's loop is otherwise left out of line, and a call per
    // row is a large part of a cheap system's frame.
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        self.walk.next()
    }

    fn fold<B, F>(self, init: B, f: F) -> B
    where
        F: FnMut(B, Self::Item) -> B,
    {
        self.walk.fold(init, f)
    }
}
