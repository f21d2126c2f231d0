//! Tables: the set of entities that share one set of component types.

use std::collections::HashMap;

use super::mask::Mask;
use crate::component::ComponentId;
use crate::entity::Entity;
use crate::stamp::Stamp;

/// Index of a table in [`Tables`], in creation order.
pub(crate) type TableId = u32;

/// Marks "this table has no column for that type" in [`Table::columns`].
const NO_COLUMN: u32 = u32::MAX;

/// One archetype: the entities that have exactly `components`, row by row.
pub(crate) struct Table {
    /// The component types, sorted by id.
    components: Box<[ComponentId]>,
    /// The same set as a mask, for one-step membership and query tests.
    signature: Mask,
    /// Column index in each type's storage, by component id (`NO_COLUMN` if absent).
    columns: Vec<u32>,
    /// The entity in each row: changed only through `push`, `swap_remove` and
    /// `entities_mut`, which touch `stamp`.
    entities: Vec<Entity>,
    /// The [stamp](crate::stamp) of `entities`.
    stamp: Stamp,
    /// The rows may be out of entity order (canonical order re-checks them): set by
    /// [`push`](Self::push) of an index below the last, a swap-remove that moved a row,
    /// and wholesale replacement (restore, load).
    pub(super) unsorted: bool,
    /// Cached transitions: the table reached by inserting / removing one type.
    add_edges: Vec<(ComponentId, TableId)>,
    remove_edges: Vec<(ComponentId, TableId)>,
}

impl Table {
    #[inline]
    pub(crate) fn components(&self) -> &[ComponentId] {
        &self.components
    }

    #[inline]
    pub(crate) fn has(&self, id: ComponentId) -> bool {
        self.signature.contains(id)
    }

    /// The component types as a mask.
    #[inline]
    pub(crate) fn signature(&self) -> &Mask {
        &self.signature
    }

    /// The column index of `id` in its storage, if this table holds it.
    #[inline]
    pub(crate) fn column(&self, id: ComponentId) -> Option<u32> {
        match self.columns.get(id.index()) {
            Some(&c) if c != NO_COLUMN => Some(c),
            _ => None,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.entities.len()
    }

    /// The entity in each row.
    #[inline]
    pub(crate) fn entities(&self) -> &[Entity] {
        &self.entities
    }

    /// Rows the entity list has room for.
    #[inline]
    pub(crate) fn entities_capacity(&self) -> usize {
        self.entities.capacity()
    }

    /// The entity list, to change (its stamp touched): the rows' order, a restore's or
    /// load's whole new list. The caller keeps the columns row-aligned.
    #[inline]
    pub(crate) fn entities_mut(&mut self) -> &mut Vec<Entity> {
        self.stamp.touch();
        &mut self.entities
    }

    /// The [stamp](crate::stamp) of the entity list.
    #[inline]
    pub(crate) fn stamp(&self) -> &Stamp {
        &self.stamp
    }

    /// The entity list was made equal to the one named `stamp` (by a restore).
    #[inline]
    pub(crate) fn set_stamp(&mut self, stamp: u64) {
        self.stamp.set(stamp);
    }

    /// The entity list's stamp if it has one, else 0.
    #[inline]
    pub(crate) fn peek_stamp(&mut self) -> u64 {
        self.stamp.peek()
    }

    /// Appends `e` as the last row; returns its row.
    #[inline]
    pub(crate) fn push(&mut self, e: Entity) -> u32 {
        self.stamp.touch();
        let row = self.entities.len() as u32;
        if self.entities.last().is_some_and(|l| l.index() > e.index()) {
            self.unsorted = true;
        }
        self.entities.push(e);
        row
    }

    /// Removes row `row`, the last row taking its place; returns the entity moved there.
    #[inline]
    pub(crate) fn swap_remove(&mut self, row: u32) -> Option<Entity> {
        self.stamp.touch();
        self.entities.swap_remove(row as usize);
        let moved = self.entities.get(row as usize).copied();
        self.unsorted |= moved.is_some();
        moved
    }
}

/// All tables, plus a lookup from component set to table.
pub(crate) struct Tables {
    tables: Vec<Table>,
    by_components: HashMap<Box<[ComponentId]>, TableId>,
    /// The last set looked up and its table: spawning many entities of one kind (a
    /// loop of `spawn`, or a Sync full of spawns) then skips hashing the set.
    last: (Vec<ComponentId>, TableId),
    /// Counts table creations and truncations: what canonical order's lists were built
    /// for (`storage::canonical`).
    epoch: u64,
}

impl Default for Tables {
    fn default() -> Self {
        let mut t = Tables {
            tables: Vec::new(),
            by_components: HashMap::new(),
            last: (Vec::new(), 0),
            epoch: 0,
        };
        // Table 0 always exists: entities with no components.
        t.create(&[], |_, _| unreachable!("the empty table has no columns"));
        t
    }
}

impl Tables {
    #[inline]
    pub(crate) fn get(&self, id: TableId) -> &Table {
        &self.tables[id as usize]
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, id: TableId) -> &mut Table {
        &mut self.tables[id as usize]
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.tables.len()
    }

    /// Changes whenever a table is created or dropped.
    #[inline]
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The table for exactly `sorted` (sorted, no duplicates), created if needed;
    /// `add_column(id, table)` must create a column for type `id` and return its index.
    pub(crate) fn find_or_create(
        &mut self,
        sorted: &[ComponentId],
        add_column: impl FnMut(ComponentId, TableId) -> u32,
    ) -> TableId {
        debug_assert!(sorted.windows(2).all(|w| w[0] < w[1]));
        if self.last.0 == sorted {
            return self.last.1;
        }
        let t = match self.by_components.get(sorted) {
            Some(&t) => t,
            None => self.create(sorted, add_column),
        };
        self.last.0.clear();
        self.last.0.extend_from_slice(sorted);
        self.last.1 = t;
        t
    }

    fn create(
        &mut self,
        sorted: &[ComponentId],
        mut add_column: impl FnMut(ComponentId, TableId) -> u32,
    ) -> TableId {
        let id = self.tables.len() as TableId;
        self.epoch += 1;
        let width = sorted.last().map_or(0, |c| c.index() + 1);
        let mut signature = Mask::default();
        let mut columns = vec![NO_COLUMN; width];
        for &c in sorted {
            signature.insert(c);
            columns[c.index()] = add_column(c, id);
        }
        debug_assert_eq!(signature.len(), sorted.len());
        debug_assert!(signature.iter().eq(sorted.iter().copied()));
        self.tables.push(Table {
            components: sorted.into(),
            signature,
            columns,
            entities: Vec::new(),
            stamp: Stamp::default(),
            unsorted: false,
            add_edges: Vec::new(),
            remove_edges: Vec::new(),
        });
        self.by_components.insert(sorted.into(), id);
        id
    }

    /// Drops tables `n..` (the empty table 0 always stays), with their lookup entries and
    /// every cached edge to them. The caller drops their columns.
    pub(crate) fn truncate(&mut self, n: usize) {
        let n = n.max(1);
        if n >= self.tables.len() {
            return;
        }
        self.epoch += 1;
        for t in self.tables.drain(n..) {
            self.by_components.remove(&t.components);
        }
        let keep = |&(_, to): &(ComponentId, TableId)| (to as usize) < n;
        for t in &mut self.tables {
            t.add_edges.retain(keep);
            t.remove_edges.retain(keep);
        }
        // Table 0 holds exactly the empty set, so this cache entry is always right.
        self.last.0.clear();
        self.last.1 = 0;
    }

    /// The table reached from `from` by adding (`add = true`) or removing type `id`.
    pub(crate) fn neighbour(
        &mut self,
        from: TableId,
        id: ComponentId,
        add: bool,
        add_column: impl FnMut(ComponentId, TableId) -> u32,
    ) -> TableId {
        let table = &self.tables[from as usize];
        let edges = if add {
            &table.add_edges
        } else {
            &table.remove_edges
        };
        if let Some(&(_, to)) = edges.iter().find(|(c, _)| *c == id) {
            return to;
        }
        let mut set: Vec<ComponentId> = table.components.to_vec();
        match (set.binary_search(&id), add) {
            (Err(pos), true) => set.insert(pos, id),
            (Ok(pos), false) => {
                set.remove(pos);
            }
            _ => return from,
        }
        let to = self.find_or_create(&set, add_column);
        let table = &mut self.tables[from as usize];
        if add {
            table.add_edges.push((id, to));
        } else {
            table.remove_edges.push((id, to));
        }
        to
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_create_and_edges() {
        let mut t = Tables::default();
        let mut next_col = 0;
        let mut add = |_, _| {
            next_col += 1;
            next_col - 1
        };
        let a = ComponentId(0);
        let b = ComponentId(3);
        let ab = t.find_or_create(&[a, b], &mut add);
        assert_eq!(ab, 1);
        assert!(t.get(ab).has(a) && t.get(ab).has(b) && !t.get(ab).has(ComponentId(1)));
        assert_eq!(t.get(ab).column(b), Some(1));
        assert_eq!(t.get(ab).column(ComponentId(9)), None);
        assert_eq!(t.get(ab).signature().iter().collect::<Vec<_>>(), [a, b]);
        let only_a = t.neighbour(ab, b, false, &mut add);
        assert_eq!(t.get(only_a).components(), &[a]);
        assert_eq!(t.neighbour(only_a, b, true, &mut add), ab);
        assert_eq!(t.neighbour(ab, b, false, &mut add), only_a, "edge cached");
        assert_eq!(
            t.neighbour(ab, a, true, &mut add),
            ab,
            "adding a present type"
        );
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn truncate_forgets_tables_their_lookups_and_edges() {
        let mut t = Tables::default();
        let mut add = |_, _| 0;
        let (a, b, c) = (ComponentId(0), ComponentId(1), ComponentId(2));
        let ta = t.find_or_create(&[a], &mut add);
        let tab = t.neighbour(ta, b, true, &mut add);
        let tac = t.neighbour(ta, c, true, &mut add);
        assert_eq!((ta, tab, tac), (1, 2, 3));
        t.truncate(2);
        assert_eq!(t.len(), 2);
        // The edge from {a} to the dropped {a, b} is gone: the table is made again, with
        // the id a fresh history would give it.
        assert_eq!(t.neighbour(ta, c, true, &mut add), 2);
        assert_eq!(t.get(2).components(), &[a, c]);
        assert_eq!(t.find_or_create(&[a, b], &mut add), 3);
        assert_eq!(t.find_or_create(&[], &mut add), 0, "the empty table stays");
        t.truncate(0);
        assert_eq!(t.len(), 1);
    }
}
