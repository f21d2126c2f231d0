//! Canonical order (`World::set_canonical_order`): queries visit tables sorted by their
//! types (the sorted component ids, compared lexicographically) instead of creation order,
//! and each table's rows sorted by entity index instead of arrival order. Iteration order
//! then depends only on which entities exist and what they hold, never on how the storage
//! got there (which archetype appeared first, which rows a despawn swapped): two worlds
//! with the same contents run the same frame bit for bit, and a world that holds a subset
//! of another visits its entities in the same relative order (what a shard needs).
//!
//! The orders are kept lazily: [`Storage::canonicalize`](super::Storage::canonicalize)
//! ([`Canonical::update`] here) runs before each stage's Run. It
//! rebuilds the per-type table lists when tables were created or dropped since (rare), and
//! re-sorts the rows of the tables whose entities are out of order (a check of O(rows)
//! per table, then, only where a despawn or a move left a hole or an arrival came in
//! below the last index, a permutation of every column of that table).
//!
//! Between frames a world may be out of its canonical order (a spawn appends, a despawn
//! swaps): queries then still see every entity, and the lists in use are only ever the
//! current ones ([`TableOrder`] falls back to creation order while its lists are stale).

use super::column::AnyColumns;
use super::permute::{apply_swaps, swaps_of};
use super::table::{Table, TableId, Tables};
use crate::entity::{Entities, Location};

/// The per-type table lists in canonical order, and what they were built for.
#[derive(Default)]
pub(crate) struct Canonical {
    /// Per type (by id), the tables that hold it, sorted by their types.
    by_type: Vec<Vec<TableId>>,
    /// Every table, sorted by its types.
    all: Vec<TableId>,
    /// The [`Tables::epoch`] the lists were built at.
    epoch: Option<u64>,
    /// Reused by the row sort: sort keys (sparse tables), rows by index (dense ones), the
    /// permutation, the rows already placed, the swaps that apply the permutation, its
    /// inverse, and change-mark words.
    keys: Vec<u64>,
    slots: Vec<u32>,
    perm: Vec<u32>,
    placed: Vec<bool>,
    swaps: Vec<(u32, u32)>,
    inv: Vec<u32>,
    bits: Vec<u64>,
}

/// The order in which queries try tables: per type, and all of them.
#[derive(Clone, Copy)]
pub(crate) struct TableOrder<'a> {
    tables_with: &'a [Vec<TableId>],
    /// The canonical lists, when canonical order is on and they are current.
    canonical: Option<&'a Canonical>,
}

impl<'a> TableOrder<'a> {
    /// Canonical order if `canonical` is current for `tables`, else creation order.
    #[inline]
    pub(crate) fn of(
        tables: &Tables,
        tables_with: &'a [Vec<TableId>],
        canonical: Option<&'a Canonical>,
    ) -> Self {
        let epoch = tables.epoch();
        TableOrder {
            tables_with,
            canonical: canonical.filter(|c| c.epoch == Some(epoch)),
        }
    }

    /// The tables holding type `id`, in the order queries visit them.
    #[inline]
    pub(crate) fn with(&self, id: crate::component::ComponentId) -> &'a [TableId] {
        match self.canonical {
            Some(c) => &c.by_type[id.index()],
            None => &self.tables_with[id.index()],
        }
    }

    /// Every table in canonical order, or `None` for creation order (`0..len`).
    #[inline]
    pub(crate) fn all(&self) -> Option<&'a [TableId]> {
        self.canonical.map(|c| &c.all[..])
    }
}

/// Whether table `a` sorts before table `b` in canonical order.
fn by_types(tables: &Tables) -> impl Fn(&TableId, &TableId) -> std::cmp::Ordering + '_ {
    |&a, &b| tables.get(a).components().cmp(tables.get(b).components())
}

impl Canonical {
    /// Brings the table lists and every table's rows into canonical order: the lists
    /// rebuilt from `tables_with` if tables were created or dropped since, the rows of
    /// each table sorted (with their columns and the entities' locations).
    pub(super) fn update(
        &mut self,
        tables: &mut Tables,
        tables_with: &[Vec<TableId>],
        columns: &mut [Box<dyn AnyColumns>],
        entities: &mut Entities,
    ) {
        let epoch = tables.epoch();
        if self.epoch != Some(epoch) {
            let order = by_types(tables);
            tables_with.clone_into(&mut self.by_type);
            for list in &mut self.by_type {
                list.sort_by(&order);
            }
            self.all.clear();
            self.all.extend(0..tables.len() as TableId);
            self.all.sort_by(&order);
            self.epoch = Some(epoch);
        }
        for t in 0..tables.len() as TableId {
            self.sort_rows(tables, t, columns, entities);
        }
    }

    /// Sorts table `t`'s rows by entity index, if they are not already.
    fn sort_rows(
        &mut self,
        tables: &mut Tables,
        t: TableId,
        columns: &mut [Box<dyn AnyColumns>],
        locations: &mut Entities,
    ) {
        let table = tables.get_mut(t);
        if !std::mem::take(&mut table.unsorted)
            || table
                .entities()
                .windows(2)
                .all(|w| w[0].index() < w[1].index())
        {
            return;
        }
        let Canonical {
            keys,
            slots,
            perm,
            placed,
            swaps,
            inv,
            bits,
            ..
        } = self;
        perm.clear();
        let entities = table.entities();
        let (lo, hi) = entities.iter().fold((u32::MAX, 0), |(lo, hi), e| {
            (lo.min(e.index()), hi.max(e.index()))
        });
        let span = (hi - lo) as usize + 1;
        if span <= 4 * entities.len() {
            // Dense indices (the usual big table): a counting pass, O(rows + span).
            slots.clear();
            slots.resize(span, u32::MAX);
            for (r, e) in entities.iter().enumerate() {
                slots[(e.index() - lo) as usize] = r as u32;
            }
            perm.extend(slots.iter().copied().filter(|&r| r != u32::MAX));
        } else {
            // Sparse: sorted as packed `index << 32 | row` words (no lookup per compare).
            keys.clear();
            keys.extend(
                (entities.iter().enumerate()).map(|(r, e)| u64::from(e.index()) << 32 | r as u64),
            );
            keys.sort_unstable();
            perm.extend(keys.iter().map(|&k| k as u32));
        }
        swaps_of(perm, placed, swaps);
        apply_swaps(table.entities_mut(), swaps);
        inv.clear();
        inv.resize(perm.len(), 0);
        for (i, &p) in perm.iter().enumerate() {
            inv[p as usize] = i as u32;
        }
        let table: &Table = tables.get(t);
        for &id in table.components() {
            let col = table.column(id).expect("a table has a column per type");
            columns[id.index()].permute_rows(col, inv, swaps, bits);
        }
        // Only the rows that moved have new locations.
        for (row, &from) in perm.iter().enumerate() {
            if from as usize != row {
                let e = table.entities()[row];
                locations.set_location(
                    e.index(),
                    Location {
                        table: t,
                        row: row as u32,
                    },
                );
            }
        }
    }
}
