//! Copies of the whole storage (snapshot and restore), its checksum, and the first
//! difference between two storages.
//!
//! A [`StorageSnapshot`] mirrors the storage: the entity allocator (each slot's generation
//! but not its location, which is its entity's table and row: a restore rebuilds it from
//! the entity lists, see [`SavedEntities`]), each table's type set and entity list (in
//! creation order), and each type's columns. Restoring first makes the
//! table list equal to the snapshot's — tables created after the snapshot are dropped
//! (with their match-cache entries and columns), missing ones are created in the
//! snapshot's order — so table ids, the match cache and query order are exactly those of
//! the moment the snapshot was taken, and later frames create tables with the same ids as
//! the original run. Then every vector is overwritten with `clone_from`, which keeps its
//! capacity: restoring into a storage of the same shape allocates nothing.
//!
//! Saves and restores skip the vectors whose contents the other side already holds:
//! each column and each table's entity list has a [stamp](crate::stamp), and the
//! snapshot keeps the stamp of every vector it copied; the entity allocator's slots have
//! one per block of 4096 (see `entity::Slots`). The change marks are copied every time
//! (two bits per row).

use std::any::{Any, TypeId};

use super::Storage;
use super::table::TableId;
use crate::checksum::{BLOCK, Checksummer, Desync, Version, digest_values, digest_words};
use crate::component::ComponentId;
use crate::entity::{Entities, Entity, SLOT_BLOCK, SavedEntities};
use crate::stamp::same;

/// A copy of a [`Storage`]; see the module docs.
#[derive(Default)]
pub(crate) struct StorageSnapshot {
    /// The registered types, by id, so a restore can check it has the same ones.
    types: Vec<(TypeId, &'static str)>,
    entities: SavedEntities,
    /// Per table, in creation order: its sorted types, its entities and their
    /// [stamp](crate::stamp).
    tables: Vec<SavedTable>,
    /// Per type, by id: a `Vec<Vec<C>>`.
    columns: Vec<Option<Box<dyn Any + Send + Sync>>>,
}

/// What a snapshot keeps of one table.
#[derive(Default)]
pub(crate) struct SavedTable {
    types: Vec<ComponentId>,
    entities: Vec<Entity>,
    /// The stamp of `entities` when they were copied.
    stamp: u64,
}

/// Why [`Storage::load`] changed nothing.
#[derive(Debug)]
pub(crate) enum RestoreError {
    /// The storage registers other types than the snapshot (names by id, each side).
    OtherTypes {
        snapshot: Vec<&'static str>,
        storage: Vec<&'static str>,
    },
    /// This type is not opted into snapshots here (or the snapshot lacks its columns).
    NotSnapshotting(ComponentId),
}

impl StorageSnapshot {
    /// Number of live entities in the snapshot.
    pub(crate) fn len(&self) -> usize {
        self.entities.len()
    }
}

impl Storage {
    /// Copies everything into `into`, reusing its vectors. Returns `Err` with the first
    /// type (by id) not opted into snapshots; `into` is then partly overwritten.
    pub(crate) fn save(&self, into: &mut StorageSnapshot) -> Result<(), ComponentId> {
        self.save_types(into);
        for (i, (c, dst)) in self.columns.iter().zip(&mut into.columns).enumerate() {
            if !c.save(dst) {
                return Err(ComponentId(i as u32));
            }
        }
        self.entities.save(&mut into.entities);
        self.save_tables(&mut into.tables);
        Ok(())
    }

    /// The registered types into `into`, and a place for each one's columns.
    fn save_types(&self, into: &mut StorageSnapshot) {
        into.columns.resize_with(self.columns.len(), || None);
        into.types.clear();
        into.types.extend((0..self.registry.len()).map(|i| {
            let info = self.registry.info(ComponentId(i as u32));
            (info.type_id, info.name)
        }));
    }

    /// Each table's type set and entity list (the latter only where its stamp says the
    /// copy holds other rows).
    fn save_tables(&self, tables: &mut Vec<SavedTable>) {
        let n = self.tables.len();
        tables.truncate(n);
        tables.resize_with(n, SavedTable::default);
        for (t, saved) in tables.iter_mut().enumerate() {
            let table = self.tables.get(t as u32);
            let stamp = table.stamp().get();
            if saved.types != table.components() {
                saved.types.clear();
                saved.types.extend_from_slice(table.components());
            } else if same(saved.stamp, stamp) {
                continue;
            }
            saved.entities.clear();
            saved.entities.extend_from_slice(table.entities());
            saved.stamp = stamp;
        }
    }

    /// [`save`](Self::save) and the digests of the checksum's blocks to compute
    /// (`digests.todo`, written back into `digests.plan`) at once, as jobs that `run`
    /// may spread over threads: one copies the allocator, one the tables' entity lists,
    /// one per type copies its columns (the biggest copies first), and one per block
    /// digests it.
    ///
    /// # Errors
    /// `Ok(Err(c))`: type `c` (the first by id) is not opted into snapshots; `into` is
    /// then partly overwritten, and the digests are all computed all the same. `Err`: a
    /// job panicked (in a `Clone` or a `Checksum`), with its payload; the digests are not
    /// written back then.
    pub(crate) fn save_digesting(
        &self,
        into: &mut StorageSnapshot,
        digests: &mut Digests,
        run: &RunJobs<'_>,
    ) -> Result<Result<(), ComponentId>, Panic> {
        self.save_types(into);
        let Digests {
            plan, todo, jobs, ..
        } = digests;
        // The copies first, each kept from the last call (a type's or the allocator's
        // vectors travel between the snapshot and the job); then a job per block.
        jobs.retain(|j| !matches!(j, SaveJob::Digest { .. }));
        let types = self.columns.len();
        if jobs.len() != types + 2 {
            jobs.clear();
            jobs.push(SaveJob::Allocator(SavedEntities::default()));
            jobs.push(SaveJob::Tables(Vec::new()));
            jobs.extend((0..types).map(|c| SaveJob::Type {
                c: ComponentId(c as u32),
                dst: None,
                saved: false,
            }));
        }
        for j in jobs.iter_mut() {
            match j {
                SaveJob::Allocator(e) => std::mem::swap(e, &mut into.entities),
                SaveJob::Tables(t) => std::mem::swap(t, &mut into.tables),
                SaveJob::Type { c, dst, .. } => *dst = into.columns[c.index()].take(),
                SaveJob::Digest { .. } => {}
            }
        }
        let weight = |j: &SaveJob| match j {
            SaveJob::Allocator(_) => self.entities.slots() * 8,
            SaveJob::Tables(_) => self.len() * 8,
            SaveJob::Type { c, .. } => self.columns[c.index()].capacity_bytes(),
            SaveJob::Digest { .. } => 0,
        };
        jobs.sort_unstable_by_key(|j| std::cmp::Reverse(weight(j)));
        jobs.extend(todo.iter().map(|&(i, piece, _)| SaveJob::Digest {
            i,
            piece,
            digest: 0,
        }));
        let ran = run(jobs, &|job: &mut SaveJob| match job {
            SaveJob::Allocator(e) => self.entities.save(e),
            SaveJob::Tables(t) => self.save_tables(t),
            SaveJob::Type { c, dst, saved } => *saved = self.columns[c.index()].save(dst),
            SaveJob::Digest { piece, digest, .. } => {
                *digest = self.digest_piece(Version::CURRENT, *piece);
            }
        });
        // What the copies hold goes back into the snapshot, whatever happened.
        let mut unsaved: Option<ComponentId> = None;
        for j in jobs.iter_mut() {
            match j {
                SaveJob::Allocator(e) => std::mem::swap(e, &mut into.entities),
                SaveJob::Tables(t) => std::mem::swap(t, &mut into.tables),
                SaveJob::Type { c, dst, saved } => {
                    into.columns[c.index()] = dst.take();
                    if !std::mem::take(saved) {
                        unsaved = Some(unsaved.map_or(*c, |u| u.min(*c)));
                    }
                }
                &mut SaveJob::Digest { i, digest, .. } => plan[i].1 = digest,
            }
        }
        ran?;
        Ok(unsaved.map_or(Ok(()), Err))
    }

    /// Makes this storage equal to `from` (see the module docs), or, if it cannot, says
    /// why and changes nothing: every check comes before the first change.
    pub(crate) fn load(&mut self, from: &StorageSnapshot) -> Result<(), RestoreError> {
        let same_types = from.types.len() == self.registry.len()
            && from
                .types
                .iter()
                .enumerate()
                .all(|(i, &(t, _))| self.registry.info(ComponentId(i as u32)).type_id == t);
        if !same_types {
            return Err(RestoreError::OtherTypes {
                snapshot: from.types.iter().map(|t| t.1).collect(),
                storage: (0..self.registry.len())
                    .map(|i| self.registry.info(ComponentId(i as u32)).name)
                    .collect(),
            });
        }
        let saved = |i: usize| from.columns.get(i).is_some_and(Option::is_some);
        if let Some(i) = (0..self.columns.len()).find(|&i| !self.columns[i].can_load() || !saved(i))
        {
            return Err(RestoreError::NotSnapshotting(ComponentId(i as u32)));
        }
        self.restore_tables(from);
        // The clones below run user code (`Clone`, and `Drop` for the values replaced): if
        // one panics, the tables would hold the snapshot's entities beside columns cloned
        // only in part (a query reads rows unchecked). The guard empties the world then.
        let guard = EmptyOnUnwind(self);
        let this = &mut *guard.0;
        for (t, saved) in from.tables.iter().enumerate() {
            let table = this.tables.get_mut(t as u32);
            if !same(saved.stamp, table.peek_stamp()) {
                let entities = table.entities_mut();
                entities.clear();
                entities.extend_from_slice(&saved.entities);
                table.set_stamp(saved.stamp);
                table.unsorted = true;
            }
        }
        let tables = &this.tables;
        this.entities.load(
            &from.entities,
            (0..tables.len() as TableId).map(|t| (t, tables.get(t).entities())),
        );
        for (c, saved) in this.columns.iter_mut().zip(&from.columns) {
            c.flush_graveyard();
            c.load(&**saved.as_ref().expect("checked above"));
        }
        guard.disarm();
        Ok(())
    }

    /// Frees every entity and cuts every column to nothing (the values to the
    /// graveyards): what a restore that unwound part-way leaves, the one state it can
    /// promise is whole. Freed ids get new generations, so handles into the world before
    /// stay stale.
    fn empty_all_tables(&mut self) {
        for t in 0..self.tables.len() as TableId {
            let table = self.tables.get_mut(t);
            for e in table.entities_mut().drain(..) {
                self.entities.free(e);
            }
            let table = self.tables.get(t);
            for &c in table.components() {
                let col = table.column(c).expect("table lacks its own column");
                self.columns[c.index()].truncate_rows(col, 0);
            }
        }
    }

    /// Makes the table list (and the match cache, and each type's column count) equal to
    /// the snapshot's: keeps the common prefix, drops the rest, creates what is missing.
    fn restore_tables(&mut self, from: &StorageSnapshot) {
        let common = (0..self.tables.len().min(from.tables.len()))
            .take_while(|&t| self.tables.get(t as u32).components() == from.tables[t].types)
            .count();
        if common < self.tables.len() {
            self.tables.truncate(common);
            for (with, columns) in self.tables_with.iter_mut().zip(&mut self.columns) {
                let keep = with.partition_point(|&t| (t as usize) < common);
                with.truncate(keep);
                columns.truncate_columns(keep);
            }
        }
        for (t, saved) in from.tables.iter().enumerate().skip(common) {
            let id = self.table_for(&saved.types);
            assert_eq!(id as usize, t, "tables are recreated in order");
        }
    }

    /// The first checksum's walk (digest version 1, kept to check replays recorded with
    /// it): the whole storage into one chain `h` in the world's deterministic order — the
    /// entity allocator, then each non-empty table in order: its types, its entities,
    /// then for each checksummed type (by id) its values in row order. Types not opted in
    /// contribute only which entities have them.
    pub(crate) fn checksum_v1(&self, h: &mut Checksummer) {
        checksum_entities(&self.entities, h);
        for t in self.tables_in_order() {
            let table = self.tables.get(t);
            if table.len() == 0 {
                continue;
            }
            write_table_types(table.components(), table.len(), h);
            for e in table.entities() {
                h.write_u64(e.to_bits());
            }
            for &c in table.components() {
                let col = table.column(c).expect("table lacks its own column");
                self.columns[c.index()].checksum_column(col, h);
            }
        }
    }

    /// The tables in the checksum's order: canonical order when that is on and current,
    /// so that two worlds with the same contents have the same checksum; else creation
    /// order.
    fn tables_in_order(&self) -> impl Iterator<Item = u32> + '_ {
        let all = self.table_order().all();
        (0..all.map_or(self.tables.len(), <[_]>::len)).map(move |i| all.map_or(i as u32, |a| a[i]))
    }

    /// The checksum's walk (digest version 2), the one definition of what it covers and
    /// in which order. It hands `part` the parts in order — the layout (`None`), then each
    /// checksummed type by id (`Some`) — each a [`Checksummer`] digest of:
    ///
    /// - the layout: the allocator's live, retired and slot counts; the digest of each
    ///   block of [`BLOCK`] slots (generation and liveness); the free list's length and
    ///   digest; the spawn reservations; then each non-empty table in order: its type
    ///   count, its type ids, its length and the digest of each block of its entities;
    /// - a type: the digest of each block of each of its non-empty columns, in table order.
    ///
    /// A block's digest is [`digest_values`] of its rows: on its own, so `pieces` may
    /// compute them on any thread beforehand ([`Plan`], then [`Digested`]) or as the walk
    /// reaches them ([`Inline`]); the result is the same.
    pub(crate) fn digest_walk(
        &self,
        v: Version,
        pieces: &mut impl Pieces,
        mut part: impl FnMut(Option<ComponentId>, u64),
    ) {
        let mut layout = v.checksummer();
        let e = &self.entities;
        layout.write_u64(e.len() as u64);
        layout.write_u64(e.retired() as u64);
        layout.write_u64(e.slots() as u64);
        for start in (0..e.slots()).step_by(BLOCK) {
            let end = (start + BLOCK).min(e.slots());
            layout.write_u64(pieces.digest(self, Piece::Slots { start, end }));
        }
        layout.write_u64(e.free_list().len() as u64);
        layout.write_u64(digest_values(v, e.free_list(), |&f, h| h.write_u32(f)));
        write_reservations(e, &mut layout);
        for table in self.tables_in_order() {
            let t = self.tables.get(table);
            if t.len() == 0 {
                continue;
            }
            write_table_types(t.components(), t.len(), &mut layout);
            for start in (0..t.len()).step_by(BLOCK) {
                let end = (start + BLOCK).min(t.len());
                layout.write_u64(pieces.digest(self, Piece::Rows { table, start, end }));
            }
        }
        part(None, layout.finish());
        for i in 0..self.registry().len() {
            let c = ComponentId(i as u32);
            if !self.columns[c.index()].is_checksummed() {
                continue;
            }
            let mut h = v.checksummer();
            for table in self.tables_in_order() {
                let t = self.tables.get(table);
                let Some(col) = t.column(c).filter(|_| t.len() > 0) else {
                    continue;
                };
                for start in (0..t.len()).step_by(BLOCK) {
                    let end = (start + BLOCK).min(t.len());
                    h.write_u64(pieces.digest(self, Piece::Values { c, col, start, end }));
                }
            }
            part(Some(c), h.finish());
        }
    }

    /// The digest of one piece of the [walk](Self::digest_walk).
    pub(crate) fn digest_piece(&self, v: Version, piece: Piece) -> u64 {
        match piece {
            Piece::Slots { start, end } => digest_words(v, self.entities.slot_words(start..end)),
            Piece::Rows { table, start, end } => {
                let entities = &self.tables.get(table).entities()[start..end];
                digest_values(v, entities, |e, h| h.write_u64(e.to_bits()))
            }
            Piece::Values { c, col, start, end } => self.columns[c.index()]
                .digest_rows(v, col, start..end)
                .unwrap_or(0),
        }
    }

    /// The [stamp](crate::stamp) of what `piece` covers: its rows' digest may be reused
    /// while it is the same.
    pub(crate) fn piece_stamp(&self, piece: Piece) -> u64 {
        // A block of slots is one block of the allocator's stamps.
        const _: () = assert!(BLOCK == SLOT_BLOCK);
        match piece {
            Piece::Slots { start, .. } => self.entities.slot_block_stamp(start / SLOT_BLOCK),
            Piece::Rows { table, .. } => self.tables.get(table).stamp().get(),
            Piece::Values { c, col, .. } => self.columns[c.index()].stamp(col),
        }
    }

    /// The first difference between two storages with the same registered types, or
    /// `None` if they hold the same state (see [`differences`](Self::differences)).
    pub(crate) fn first_difference(&self, other: &Storage) -> Option<Desync> {
        self.differences(other, 1).pop()
    }

    /// Up to `limit` differences between two storages with the same registered types,
    /// none if they hold the same state. Live entities are compared in `self`'s order
    /// (tables in creation order, rows in order): presence, component types, then values
    /// of checksummed types (one difference per entity for presence or types, one per
    /// differing value); then entities only `other` has, the allocator, and last the
    /// storage order.
    pub(crate) fn differences(&self, other: &Storage, limit: usize) -> Vec<Desync> {
        let mut found = Vec::new();
        if limit == 0 {
            return found;
        }
        let diff = |entity, component, left, right, what: String| Desync {
            entity,
            component,
            left,
            right,
            what,
        };
        // Records a difference; `true` once `limit` are found.
        let add = |found: &mut Vec<Desync>, d: Desync| {
            found.push(d);
            found.len() >= limit
        };
        for t in 0..self.tables.len() {
            let table = self.tables.get(t as u32);
            'entities: for (row, &e) in table.entities().iter().enumerate() {
                let Some(loc) = other.entities.location(e) else {
                    if add(
                        &mut found,
                        diff(
                            Some(e),
                            None,
                            None,
                            None,
                            format!("entity {e:?} is alive only on the left"),
                        ),
                    ) {
                        return found;
                    }
                    continue;
                };
                let theirs = other.tables.get(loc.table);
                if let Some(&c) = table
                    .components()
                    .iter()
                    .chain(theirs.components())
                    .find(|&&c| table.has(c) != theirs.has(c))
                {
                    let side = if table.has(c) { "left" } else { "right" };
                    if add(
                        &mut found,
                        diff(
                            Some(e),
                            Some(self.type_name(c)),
                            None,
                            None,
                            format!(
                                "entity {e:?} has `{}` only on the {side}",
                                self.type_name(c)
                            ),
                        ),
                    ) {
                        return found;
                    }
                    continue 'entities;
                }
                for &c in table.components() {
                    let (a, b) = (&self.columns[c.index()], &other.columns[c.index()]);
                    let (ca, cb) = (
                        table.column(c).expect("own column"),
                        theirs.column(c).expect("checked above"),
                    );
                    let row = row as u32;
                    if a.checksum_value(ca, row) != b.checksum_value(cb, loc.row) {
                        let (l, r) = (a.debug_value(ca, row), b.debug_value(cb, loc.row));
                        if add(
                            &mut found,
                            diff(
                                Some(e),
                                Some(self.type_name(c)),
                                l.clone(),
                                r.clone(),
                                format!(
                                    "entity {e:?}, component `{}`: {} vs {}",
                                    self.type_name(c),
                                    l.unwrap_or_default(),
                                    r.unwrap_or_default()
                                ),
                            ),
                        ) {
                            return found;
                        }
                    }
                }
            }
        }
        for t in 0..other.tables.len() {
            for &e in other.tables.get(t as u32).entities() {
                if self.entities.location(e).is_none()
                    && add(
                        &mut found,
                        diff(
                            Some(e),
                            None,
                            None,
                            None,
                            format!("entity {e:?} is alive only on the right"),
                        ),
                    )
                {
                    return found;
                }
            }
        }
        if let Some((what, entity)) = entities_difference(&self.entities, &other.entities)
            && add(&mut found, diff(entity, None, None, None, what))
        {
            return found;
        }
        for t in 0..self.tables.len().max(other.tables.len()) {
            let (a, b) = (
                (t < self.tables.len()).then(|| self.tables.get(t as u32)),
                (t < other.tables.len()).then(|| other.tables.get(t as u32)),
            );
            let (ea, eb) = (
                a.map_or(&[][..], |x| x.entities()),
                b.map_or(&[][..], |x| x.entities()),
            );
            let (ta, tb) = (a.map(|x| x.components()), b.map(|x| x.components()));
            if ea != eb || (ta != tb && !ea.is_empty()) {
                // Only where nothing else differs: it follows from any other difference.
                if found.is_empty() {
                    add(
                        &mut found,
                        diff(
                            None,
                            None,
                            None,
                            None,
                            format!(
                                "same entities and values, but table {t} differs in storage order"
                            ),
                        ),
                    );
                }
                return found;
            }
        }
        found
    }
}

/// Writes the allocator state into `h`: counts, every slot's generation and liveness, the
/// free list (which decides the next ids), and the ids reserved for the next spawns.
fn checksum_entities(entities: &Entities, h: &mut Checksummer) {
    h.write_u64(entities.len() as u64);
    h.write_u64(entities.retired() as u64);
    h.write_u64(entities.slots() as u64);
    for (generation, live) in entities.slot_states() {
        h.write_u64(u64::from(generation.get()) << 1 | u64::from(live));
    }
    h.write_u64(entities.free_list().len() as u64);
    for &f in entities.free_list() {
        h.write_u32(f);
    }
    write_reservations(entities, h);
}

/// The spawn reservations, into a checksum (both versions).
fn write_reservations(entities: &Entities, h: &mut Checksummer) {
    h.write_u64(entities.reservations().len() as u64);
    for (ids, spawned_last) in entities.reservations() {
        h.write_u64(ids.len() as u64);
        for &i in ids {
            h.write_u32(i);
        }
        h.write_u32(spawned_last);
    }
}

/// A table's type count, type ids and length, into a checksum (both versions).
fn write_table_types(types: &[ComponentId], len: usize, h: &mut Checksummer) {
    h.write_u64(types.len() as u64);
    for c in types {
        h.write_u32(c.0);
    }
    h.write_u64(len as u64);
}

/// One piece of the checksum's [walk](Storage::digest_walk): a block of rows, digested on
/// its own (on any thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Piece {
    /// Slots `start..end` of the allocator.
    Slots { start: usize, end: usize },
    /// Rows `start..end` of table `table`'s entity list.
    Rows {
        table: u32,
        start: usize,
        end: usize,
    },
    /// Rows `start..end` of column `col` of type `c`.
    Values {
        c: ComponentId,
        col: u32,
        start: usize,
        end: usize,
    },
}

impl Piece {
    /// How many rows it covers.
    pub(crate) fn rows(&self) -> usize {
        match *self {
            Piece::Slots { start, end }
            | Piece::Rows { start, end, .. }
            | Piece::Values { start, end, .. } => end - start,
        }
    }
}

/// Where the [walk](Storage::digest_walk) gets each piece's digest.
pub(crate) trait Pieces {
    /// The digest of `piece` of `storage`.
    fn digest(&mut self, storage: &Storage, piece: Piece) -> u64;
}

/// Digests each piece as the walk reaches it, by the digest version it holds.
pub(crate) struct Inline(pub(crate) Version);

impl Pieces for Inline {
    fn digest(&mut self, storage: &Storage, piece: Piece) -> u64 {
        storage.digest_piece(self.0, piece)
    }
}

/// Lists the pieces, in the walk's order, with digests left at 0: to be digested
/// anywhere, then handed back by [`Digested`].
pub(crate) struct Plan<'a>(pub(crate) &'a mut Vec<(Piece, u64)>);

impl Pieces for Plan<'_> {
    fn digest(&mut self, _: &Storage, piece: Piece) -> u64 {
        self.0.push((piece, 0));
        0
    }
}

/// What `Runtime::checksum` keeps between calls: the blocks of the last walk, and the
/// digest of each block whose rows had a [stamp](crate::stamp) then, reused while the
/// rows have the same one (the same contents: a column no frame wrote since, a table
/// nothing moved in or out of).
#[derive(Default)]
pub(crate) struct Digests {
    /// The walk's blocks, in order, with their digests.
    pub(crate) plan: Vec<(Piece, u64)>,
    /// The stamp of each block's rows, by index in `plan` (0: none).
    pub(crate) stamps: Vec<u64>,
    /// The blocks to digest this time: index in `plan`, the block, its digest.
    pub(crate) todo: Vec<(usize, Piece, u64)>,
    /// The last call's digests of stamped blocks: block → (stamp, digest).
    pub(crate) known: std::collections::HashMap<Piece, (u64, u64)>,
    /// The jobs of [`Storage::save_digesting`], kept for their lists' memory.
    jobs: Vec<SaveJob>,
}

/// What a job panicked with.
pub(crate) type Panic = Box<dyn Any + Send>;

/// Runs a job on each of [`SaveJob`]s, in any order, on any threads; `Err` with the
/// payload if one panicked (after all have run or been dropped).
pub(crate) type RunJobs<'a> =
    dyn Fn(&mut [SaveJob], &(dyn Fn(&mut SaveJob) + Sync)) -> Result<(), Panic> + 'a;

/// One job of [`Storage::save_digesting`].
pub(crate) enum SaveJob {
    /// Copy the allocator into the snapshot's, moved here for the copy.
    Allocator(SavedEntities),
    /// Copy the tables' entity lists into the snapshot's, moved here for the copy.
    Tables(Vec<SavedTable>),
    /// Copy type `c`'s columns into the snapshot's (`dst`, moved here for the copy);
    /// `saved`: whether it could (`false`: not opted into snapshots).
    Type {
        c: ComponentId,
        dst: Option<Box<dyn Any + Send + Sync>>,
        saved: bool,
    },
    /// Digest block `piece`, number `i` of the plan.
    Digest { i: usize, piece: Piece, digest: u64 },
}

/// Hands out the digests of a [`Plan`]'s pieces, in order (the same walk over the same
/// storage asks for the same pieces).
pub(crate) struct Digested<'a>(pub(crate) std::slice::Iter<'a, (Piece, u64)>);

impl Pieces for Digested<'_> {
    fn digest(&mut self, storage: &Storage, piece: Piece) -> u64 {
        match self.0.next() {
            Some(&(_, digest)) => digest,
            None => storage.digest_piece(Version::CURRENT, piece),
        }
    }
}

/// What one side's allocator says of slot `index`: the entity that holds it or held it
/// last, and how.
enum Occupant {
    /// No such slot (the allocator has `slots`).
    Absent { slots: usize },
    /// Created (an id reserved for a spawn) but never spawned into.
    Unused,
    /// This entity is alive in it.
    Alive(Entity),
    /// This entity was spawned in it and despawned since (it was the slot's last).
    Despawned(Entity),
}

impl Occupant {
    fn of(entities: &Entities, states: &[(std::num::NonZeroU32, bool)], index: usize) -> Self {
        let handle = |generation: u32| {
            Entity::from_bits((u64::from(generation) << 32) | index as u64)
                .expect("a generation is never zero")
        };
        match states.get(index) {
            None => Occupant::Absent {
                slots: entities.slots(),
            },
            Some(&(g, true)) => Occupant::Alive(handle(g.get())),
            // A despawn moves a slot to its next generation; a retired slot keeps its last.
            Some(&(g, false)) if g.get() == u32::MAX => Occupant::Despawned(handle(g.get())),
            Some(&(g, false)) if g.get() > 1 => Occupant::Despawned(handle(g.get() - 1)),
            Some(_) => Occupant::Unused,
        }
    }

    /// The entity, if the slot ever held one.
    fn entity(&self) -> Option<Entity> {
        match *self {
            Occupant::Alive(e) | Occupant::Despawned(e) => Some(e),
            Occupant::Absent { .. } | Occupant::Unused => None,
        }
    }
}

impl std::fmt::Display for Occupant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Occupant::Absent { slots } => write!(f, "no such slot ({slots} slots)"),
            Occupant::Unused => write!(f, "never spawned into (an id reserved for a spawn)"),
            Occupant::Alive(e) => write!(f, "{e:?} alive"),
            Occupant::Despawned(e) => write!(f, "{e:?} spawned, then despawned"),
        }
    }
}

/// The first difference between two allocator states, described, with the entity it is
/// about if there is one: first the lowest slot whose occupant differs (an entity spawned,
/// or despawned, on one side only — also one that came and went between two compared
/// states, which leaves no live entity behind), then the slot count (slots reserved for
/// spawns and never used), the free list, the retired slots and the reservations.
fn entities_difference(a: &Entities, b: &Entities) -> Option<(String, Option<Entity>)> {
    let (sa, sb): (Vec<_>, Vec<_>) = (a.slot_states().collect(), b.slot_states().collect());
    for i in 0..sa.len().max(sb.len()) {
        if sa.get(i) == sb.get(i) {
            continue;
        }
        let (left, right) = (Occupant::of(a, &sa, i), Occupant::of(b, &sb, i));
        // The replayed side's entity first: the side a provenance can be recorded on.
        let Some(e) = right.entity().or(left.entity()) else {
            // Only reserved on one side, never used: not an entity; see the slot count.
            continue;
        };
        return Some((
            format!("entity {e:?} (the first entity slot that differs, {i}): {left} vs {right}"),
            Some(e),
        ));
    }
    if a.slots() != b.slots() {
        return Some((
            format!(
                "entity slot count: {} vs {} (the extra slots were reserved for spawns and \
                 never used)",
                a.slots(),
                b.slots()
            ),
            None,
        ));
    }
    if a.free_list() != b.free_list() {
        let next = |e: &Entities| {
            e.free_list()
                .iter()
                .rev()
                .take(8)
                .copied()
                .collect::<Vec<_>>()
        };
        return Some((
            format!(
                "entity free list (next ids): {:?} vs {:?}",
                next(a),
                next(b)
            ),
            None,
        ));
    }
    if a.retired() != b.retired() {
        return Some((
            format!("retired slots: {} vs {}", a.retired(), b.retired()),
            None,
        ));
    }
    let (ra, rb): (Vec<_>, Vec<_>) = (a.reservations().collect(), b.reservations().collect());
    if ra != rb {
        let s = (0..ra.len().max(rb.len()))
            .find(|&s| ra.get(s) != rb.get(s))
            .expect("the reservations differ somewhere");
        let head = |r: &[(&[u32], u32)]| r.get(s).map(|(ids, _)| ids[..ids.len().min(8)].to_vec());
        return Some((
            format!(
                "ids reserved for system {s}'s spawns (next ids): {:?} vs {:?}",
                head(&ra),
                head(&rb),
            ),
            None,
        ));
    }
    None
}

/// While armed, a restore's guard: dropped by an unwinding `Clone` or `Drop`, it empties
/// the world's tables ([`Storage::empty_all_tables`]).
struct EmptyOnUnwind<'a>(&'a mut Storage);

impl EmptyOnUnwind<'_> {
    /// The restore is whole: nothing to empty.
    fn disarm(self) {
        std::mem::forget(self);
    }
}

impl Drop for EmptyOnUnwind<'_> {
    fn drop(&mut self) {
        self.0.empty_all_tables();
    }
}
