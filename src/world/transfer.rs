//! Moving single entities between worlds (see `storage::transfer` for the record).

use super::World;
use crate::entity::Entity;
use crate::savefile::{LoadError, SaveError};

impl World {
    /// Appends entity `e` — its id and all its components — to `out` as one record, which
    /// [`import_entity`](Self::import_entity) reads into another world that registers the
    /// same component types in the same order. Every component type of `e` must be
    /// opted into saves ([`saving`](Self::saving) or [`saving_pod`](Self::saving_pod));
    /// values go in that encoding. Returns `Ok(false)`, writing nothing, if `e` is dead.
    ///
    /// This is how an entity moves to another world (a shard of a world split over
    /// threads or machines): export it, [`evict`](Self::evict) it here, import it there.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # use serde::{Deserialize, Serialize};
    /// #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
    /// struct Pos(f32, f32);
    /// impl Component for Pos { type Output = Pos; }
    ///
    /// let registered = || {
    ///     let mut w = World::new();
    ///     w.register::<Pos>(merge::last);
    ///     w.saving::<Pos>();
    ///     w
    /// };
    /// let (mut here, mut there) = (registered(), registered());
    /// let e = here.spawn((Pos(1.0, 2.0),));
    /// let mut record = Vec::new();
    /// assert!(here.export_entity(e, &mut record).unwrap());
    /// assert!(here.evict(e));
    /// assert_eq!(there.import_entity(&mut &record[..]).unwrap(), e); // the same id
    /// assert_eq!(there.get::<Pos>(e), Some(&Pos(1.0, 2.0)));
    /// assert!(!here.is_alive(e));
    /// ```
    ///
    /// # Errors
    /// [`SaveError::NotSaving`] naming the first of `e`'s types not opted into saves,
    /// [`SaveError::Encode`] if a value's `Serialize` fails; `out` is then as it was.
    pub fn export_entity(&self, e: Entity, out: &mut Vec<u8>) -> Result<bool, SaveError> {
        self.storage.export_entity(e, out)
    }

    /// Reads one record written by [`export_entity`](Self::export_entity) off the front
    /// of `src` (advancing it past the record, so records can be read one after another
    /// from one buffer) and inserts its entity under the same id, with its components.
    /// The id must not be alive here; the slot it needs is taken from wherever this
    /// world's allocator keeps it (free, reserved for a coming spawn, never used — at
    /// most 64 slots past the last: see
    /// [`reserve_entity_slots`](Self::reserve_entity_slots)), so later spawns here never
    /// reuse it while it lives. No hooks fire and required
    /// components are not added: the entity arrives whole, it is not spawned — with its
    /// change marks too (`Changed`, `Added` and [`is_added`](Self::is_added) answer until
    /// the next Sync as they did where it was exported).
    ///
    /// # Errors
    /// [`LoadError::DuplicateEntity`] if an entity lives in the id's slot here;
    /// [`LoadError::BadData`] for an index too far out;
    /// [`LoadError::Truncated`], [`LoadError::BadData`] or [`LoadError::Decode`] for a
    /// record that is cut short, names types this world does not register (or not in
    /// order) or does not decode; [`LoadError::NotSaving`] for a type not opted into
    /// saves here. On an error nothing changed, `src` included.
    pub fn import_entity(&mut self, src: &mut &[u8]) -> Result<Entity, LoadError> {
        let mut rest = *src;
        let result = self.import_one(&mut rest);
        self.storage.unlist_placed();
        if result.is_ok() {
            *src = rest;
        }
        result
    }

    /// [`import_entity`](Self::import_entity) for every record in `buffers` (each
    /// holding one or more records, read one after another to its end), pushing their
    /// ids onto `out`: what a world receiving many entities at once (a shard, after an
    /// exchange) calls, since the allocator's free list is then walked once for the
    /// batch, not once per entity.
    ///
    /// # Errors
    /// As [`import_entity`](Self::import_entity), for the first record that fails; the
    /// records before it are imported (and in `out`), it and those after it are not.
    pub fn import_entities<'a>(
        &mut self,
        buffers: impl IntoIterator<Item = &'a [u8]>,
        out: &mut Vec<Entity>,
    ) -> Result<(), LoadError> {
        let mut result = Ok(());
        'buffers: for mut src in buffers {
            while !src.is_empty() {
                match self.import_one(&mut src) {
                    Ok(e) => out.push(e),
                    Err(error) => {
                        result = Err(error);
                        break 'buffers;
                    }
                }
            }
        }
        self.storage.unlist_placed();
        result
    }

    /// One record off `src` into this world, its slot not yet off the allocator's lists.
    fn import_one(&mut self, src: &mut &[u8]) -> Result<Entity, LoadError> {
        let mut ids = std::mem::take(&mut self.scratch_ids);
        let mut marks = std::mem::take(&mut self.scratch_marks);
        let result = self.storage.import_entity(src, &mut ids, &mut marks);
        self.scratch_ids = ids;
        self.scratch_marks = marks;
        result
    }

    /// Makes room in this world's allocator for entities with indices below `n` to
    /// arrive ([`import_entity`](Self::import_entity) takes an index at most 64 slots
    /// past the last one, so that a record read off the network cannot make it allocate
    /// gigabytes). The new slots are free: spawns here may take them, and an arriving
    /// entity then finds its slot taken.
    pub fn reserve_entity_slots(&mut self, n: usize) {
        self.storage.grow_to(n);
    }

    /// Takes `e` and its components out of this world *without despawning it*: no hooks
    /// fire, and its id is neither freed nor reused here (the entity lives on in another
    /// world: see [`export_entity`](Self::export_entity)); saves keep its slot held.
    /// Returns `false` if `e` is dead.
    ///
    /// # Panics
    /// If `e` has a parent or children ([`register_hierarchy`](Self::register_hierarchy)):
    /// moving part of a hierarchy to another world is not supported.
    #[track_caller]
    pub fn evict(&mut self, e: Entity) -> bool {
        self.assert_outside_hierarchy(e, "evict");
        self.storage.evict(e).is_some()
    }

    /// Takes `e` and its components out of this world and frees its id here, as
    /// [`despawn`](Self::despawn) does, but firing no hooks: for a copy of an entity
    /// that belongs to another world — a shard drops so a spawn it computed for a region
    /// another shard owns. Returns `false` if `e` is dead.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy)] struct Pos(f32); impl Component for Pos { type Output = Pos; }
    /// let mut world = World::new();
    /// world.register::<Pos>(merge::last);
    /// world.on_remove::<Pos>(|_: &World, _: Entity, _: &Pos, _: &mut Commands| panic!("not fired"));
    /// let e = world.spawn((Pos(1.0),));
    /// assert!(world.discard(e));
    /// assert!(!world.is_alive(e) && world.is_empty());
    /// assert_eq!(world.spawn((Pos(2.0),)).index(), e.index()); // its slot is free again
    /// ```
    ///
    /// # Panics
    /// If `e` has a parent or children, as [`evict`](Self::evict).
    #[track_caller]
    pub fn discard(&mut self, e: Entity) -> bool {
        self.assert_outside_hierarchy(e, "discard");
        let Some(loc) = self.storage.despawn(e) else {
            return false;
        };
        self.storage.flush_table_graveyards(loc.table);
        true
    }

    /// This world's entity allocator slot by slot, in index order: `Some(id)` with the id
    /// a slot's entity has (alive, or [evicted](Self::evict)) or its next entity gets (a
    /// free slot), `None` for a retired slot (its generations used up: never handed out
    /// again). For tools that keep an allocator of their own in step with a world's
    /// (`runsync-cluster` agrees spawned ids across shards so).
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.despawn(a);
    /// let slots: Vec<Option<Entity>> = world.entity_slots().collect();
    /// assert_eq!(slots.len(), 2);
    /// assert_eq!(slots[1], Some(b));
    /// let next = slots[0].unwrap();
    /// assert_eq!((next.index(), next.generation()), (a.index(), a.generation() + 1));
    /// assert_eq!(world.spawn(()), next);
    /// ```
    pub fn entity_slots(&self) -> impl ExactSizeIterator<Item = Option<Entity>> + '_ {
        self.storage.slot_ids()
    }

    /// Takes `root` and all its descendants out of this world without despawning them,
    /// as [`evict`](Self::evict) does one entity: a whole tree moving to another world
    /// (export each of [`tree`](Self::tree) first). Returns how many entities left (0 if
    /// `root` is dead).
    ///
    /// # Panics
    /// If `root` has a parent (part of a tree cannot leave).
    #[track_caller]
    pub fn evict_tree(&mut self, root: Entity) -> usize {
        self.take_tree(root, "evict_tree", false)
    }

    /// Takes `root` and all its descendants out of this world and frees their ids, firing
    /// no hooks, as [`discard`](Self::discard) does one entity. Returns how many entities
    /// went (0 if `root` is dead).
    ///
    /// # Panics
    /// If `root` has a parent.
    #[track_caller]
    pub fn discard_tree(&mut self, root: Entity) -> usize {
        self.take_tree(root, "discard_tree", true)
    }

    /// `e` and its descendants (parents before children; just `e` without a
    /// [hierarchy](Self::register_hierarchy)); empty if `e` is dead.
    pub fn tree(&self, e: Entity) -> Vec<Entity> {
        if !self.is_alive(e) {
            return Vec::new();
        }
        self.storage.tree_of(e)
    }

    /// [`evict_tree`](Self::evict_tree) (`free`: false) or
    /// [`discard_tree`](Self::discard_tree).
    #[track_caller]
    fn take_tree(&mut self, root: Entity, what: &str, free: bool) -> usize {
        if let Some(parent) = self
            .storage
            .hierarchy()
            .and_then(|h| self.storage.parent_of(h, root))
        {
            panic!("runsync: cannot {what} {root}: it is a child of {parent}, not a root");
        }
        let tree = self.tree(root);
        for &e in &tree {
            let loc = if free {
                self.storage.despawn(e)
            } else {
                self.storage.evict(e)
            };
            if let Some(loc) = loc {
                self.storage.flush_table_graveyards(loc.table);
            }
        }
        tree.len()
    }

    /// Gives each `old` entity of `moves` the id `new`, keeping its components, row and
    /// change marks: its old id is freed (and dead from now on), the new one taken from
    /// wherever this world's allocator keeps it (as
    /// [`import_entity`](Self::import_entity) does; the slots may be each other's: the
    /// moves happen together). Parents and children follow: a moved entity's parent
    /// lists it under its new id, its children name it. No hooks fire. Other components
    /// that hold an old id (a target, say) keep it: that is the caller's to mend.
    ///
    /// `runsync-cluster` renumbers a frame's spawns so, to the ids every shard agreed on.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// let mut world = World::new();
    /// world.register_hierarchy();
    /// let ship = world.spawn(());
    /// let turret = world.spawn(());
    /// world.set_parent(turret, ship).unwrap();
    /// let id = |index: u64| Entity::from_bits((1 << 32) | index).unwrap(); // generation 1
    /// let (a, b) = (id(7), id(3));
    /// world.renumber(&[(ship, a), (turret, b)]);
    /// assert!(!world.is_alive(ship) && world.is_alive(a));
    /// assert_eq!(world.children(a), [b]);
    /// assert_eq!(world.parent(b), Some(a));
    /// ```
    ///
    /// # Panics
    /// If an `old` is dead or named twice, a `new` is named twice, a `new`'s slot holds
    /// a live entity that is not moving, or an index is past the allocator's limit;
    /// nothing changed then.
    #[track_caller]
    pub fn renumber(&mut self, moves: &[(Entity, Entity)]) {
        if let Err(why) = self.storage.renumber(moves) {
            panic!("runsync: cannot renumber: {why}");
        }
    }

    /// Panics if `e` has a parent or children (`what`: the refused operation).
    #[track_caller]
    fn assert_outside_hierarchy(&self, e: Entity, what: &str) {
        if let Some(h) = self.storage.hierarchy() {
            assert!(
                self.storage.column_row_of(e, h.child_of).is_none()
                    && self.storage.column_row_of(e, h.children).is_none(),
                "runsync: cannot {what} {e}: it has a parent or children (move whole trees: \
                 `evict_tree`, `discard_tree`)"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use crate::prelude::*;
    use crate::savefile::{LoadError, SaveError};

    #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
    struct Pos(f32, f32);
    impl Component for Pos {
        type Output = Pos;
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Name(String);
    impl Component for Name {
        type Output = Name;
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Secret(u8);
    impl Component for Secret {
        type Output = Secret;
    }

    fn world() -> World {
        let mut w = World::new();
        w.register::<Pos>(merge::last);
        w.register::<Name>(merge::last);
        w.register::<Secret>(merge::last);
        w.saving::<Pos>().saving::<Name>();
        w
    }

    #[test]
    fn records_round_trip_one_after_another() {
        let (mut a, mut b) = (world(), world());
        let x = a.spawn((Pos(1.0, 2.0), Name("x".into())));
        let y = a.spawn((Pos(3.0, 4.0),));
        let mut buf = Vec::new();
        assert!(a.export_entity(x, &mut buf).unwrap());
        assert!(a.export_entity(y, &mut buf).unwrap());
        let mut src = &buf[..];
        assert_eq!(b.import_entity(&mut src).unwrap(), x);
        assert_eq!(b.import_entity(&mut src).unwrap(), y);
        assert!(src.is_empty());
        assert_eq!(b.get::<Name>(x), Some(&Name("x".into())));
        assert_eq!(b.get::<Pos>(y), Some(&Pos(3.0, 4.0)));
        assert!(!b.has::<Name>(y));
        assert_eq!(b.len(), 2);
        // A dead entity writes nothing.
        a.despawn(y);
        let n = buf.len();
        assert!(!a.export_entity(y, &mut buf).unwrap());
        assert_eq!(buf.len(), n);
    }

    #[test]
    fn a_world_with_evicted_ids_saves_and_loads() {
        // Saves need every type opted in: a world without `Secret`.
        let world = || {
            let mut w = World::new();
            w.register::<Pos>(merge::last);
            w.saving::<Pos>();
            w
        };
        let mut a = world();
        let x = a.spawn((Pos(1.0, 2.0),));
        let y = a.spawn((Pos(3.0, 4.0),));
        a.evict(x);
        let mut file = Vec::new();
        a.save(&mut file).unwrap();
        let mut b = world();
        b.load(&mut &file[..]).unwrap();
        assert_eq!(b.get::<Pos>(y), Some(&Pos(3.0, 4.0)));
        assert!(!b.is_alive(x));
        // The evicted id's slot is still held: `x` can come back under its id.
        let mut record = Vec::new();
        let mut c = world();
        let x2 = c.spawn((Pos(5.0, 6.0),));
        assert_eq!(x2, x);
        c.export_entity(x2, &mut record).unwrap();
        assert_eq!(b.import_entity(&mut &record[..]).unwrap(), x);
        assert_eq!(b.get::<Pos>(x), Some(&Pos(5.0, 6.0)));
    }

    #[test]
    fn a_far_out_index_needs_room_made_first() {
        // A record naming index 10,000 (a few bytes off the network must not make the
        // allocator grow freely; the fuzzer's first find was a few billion).
        let mut a = world();
        let x = a.spawn((Pos(1.0, 1.0),));
        let mut record = Vec::new();
        a.export_entity(x, &mut record).unwrap();
        let e = Entity::from_bits((1 << 32) | 10_000).unwrap();
        record[..8].copy_from_slice(&e.to_bits().to_le_bytes());
        let mut b = world();
        let err = b.import_entity(&mut &record[..]).unwrap_err();
        assert!(
            matches!(&err, LoadError::BadData { what } if what.contains("reserve_entity_slots")),
            "{err}"
        );
        assert_eq!(b.len(), 0);
        b.reserve_entity_slots(10_001);
        assert_eq!(b.import_entity(&mut &record[..]).unwrap(), e);
    }

    #[test]
    fn bad_records_change_nothing() {
        let (mut a, mut b) = (world(), world());
        let x = a.spawn((Pos(1.0, 2.0), Name("hello".into())));
        let mut buf = Vec::new();
        a.export_entity(x, &mut buf).unwrap();
        for cut in 0..buf.len() {
            let err = b.import_entity(&mut &buf[..cut]).unwrap_err();
            assert!(
                matches!(err, LoadError::Truncated { .. } | LoadError::Decode { .. }),
                "cut at {cut}: {err:?}"
            );
            assert_eq!(b.len(), 0);
        }
        // Alive already.
        b.import_entity(&mut &buf[..]).unwrap();
        assert!(matches!(
            b.import_entity(&mut &buf[..]),
            Err(LoadError::DuplicateEntity { entity }) if entity == x
        ));
        // Nothing left staged by the failures: spawning still works.
        let z = b.spawn((Pos(0.0, 0.0), Name("z".into())));
        assert_eq!(b.get::<Name>(z), Some(&Name("z".into())));
        // A type not opted in, on either side.
        let s = a.spawn((Secret(1),));
        assert!(matches!(
            a.export_entity(s, &mut Vec::new()),
            Err(SaveError::NotSaving { .. })
        ));
    }

    #[test]
    fn a_batch_import_leaves_the_allocator_as_one_by_one_imports_do() {
        // `a` sends 120 entities; `b` has freed slots in a scattered order, so arrivals
        // land on free slots, on fresh ones past the end, and between.
        let mut a = world();
        let sent: Vec<Entity> = (0..120).map(|i| a.spawn((Pos(i as f32, 0.0),))).collect();
        let receiver = || {
            let mut b = world();
            let es: Vec<Entity> = (0..100).map(|_| b.spawn(())).collect();
            for i in [7, 93, 3, 50, 51, 11, 99, 0, 64, 12] {
                b.despawn(es[i]);
            }
            for e in &es[20..40] {
                b.despawn(*e);
            }
            b
        };
        let records: Vec<Vec<u8>> = (sent.iter())
            .map(|&e| {
                let mut r = Vec::new();
                a.export_entity(e, &mut r).unwrap();
                r
            })
            .collect();
        // Only ids whose slots are not alive in `b` can arrive.
        let probe = receiver();
        let fits: Vec<&Vec<u8>> = (records.iter())
            .filter(|r| {
                let e = Entity::from_bits(u64::from_le_bytes(r[..8].try_into().unwrap()));
                !probe
                    .entity_slots()
                    .nth(e.unwrap().index() as usize)
                    .flatten()
                    .is_some_and(|s| probe.is_alive(s))
            })
            .collect();
        assert_eq!(fits.len(), 50, "30 freed slots and 20 past the end");
        let mut one_by_one = receiver();
        for r in &fits {
            one_by_one.import_entity(&mut &r[..]).unwrap();
        }
        let mut batch = receiver();
        let mut got = Vec::new();
        batch
            .import_entities(fits.iter().map(|r| &r[..]), &mut got)
            .unwrap();
        assert_eq!(got.len(), fits.len());
        let slots = |w: &World| w.entity_slots().collect::<Vec<_>>();
        assert_eq!(slots(&batch), slots(&one_by_one));
        // The free lists agree, order included: the next spawns get the same ids.
        let next = |w: &mut World| (0..60).map(|_| w.spawn(())).collect::<Vec<_>>();
        assert_eq!(next(&mut batch), next(&mut one_by_one));
        // A failure stops the batch after the records before it.
        let mut c = receiver();
        let mut got = Vec::new();
        let bad: &[u8] = &[1, 2, 3];
        let err = c
            .import_entities([&fits[0][..], bad, &fits[1][..]], &mut got)
            .unwrap_err();
        assert!(matches!(err, LoadError::Truncated { .. }), "{err}");
        assert_eq!(got.len(), 1);
        assert!(!c.is_alive(
            Entity::from_bits(u64::from_le_bytes(fits[1][..8].try_into().unwrap())).unwrap()
        ));
    }

    #[test]
    fn change_marks_travel_with_the_record() {
        // After a frame: `x` had its `Pos` written and gained a `Name`; `y` was untouched.
        let mut rt = Runtime::builder().workers(1).build(world());
        let x = rt.world_mut().spawn((Pos(1.0, 0.0),));
        let y = rt.world_mut().spawn((Pos(2.0, 0.0),));
        rt.frame(); // the spawns' marks are cleared by this Sync
        rt.add_system(move |_: &World, out: &mut Output| {
            out.write::<Pos>(x, Pos(1.5, 0.0));
            out.insert(x, Name("x".into()));
        });
        rt.frame();
        let a = rt.world();
        assert!(a.is_changed::<Pos>(x) && !a.is_added::<Pos>(x) && a.is_added::<Name>(x));
        assert!(!a.is_changed::<Pos>(y));
        let mut b = world();
        for e in [x, y] {
            let mut record = Vec::new();
            a.export_entity(e, &mut record).unwrap();
            b.import_entity(&mut &record[..]).unwrap();
        }
        let marks = |w: &World, e| {
            (
                w.is_changed::<Pos>(e),
                w.is_added::<Pos>(e),
                w.is_added::<Name>(e),
            )
        };
        assert_eq!(marks(&b, x), marks(a, x));
        assert_eq!(
            marks(&b, y),
            (false, false, false),
            "not seen as just added"
        );
        // A record whose marks byte is not marks is refused.
        let mut record = Vec::new();
        a.export_entity(y, &mut record).unwrap();
        record[16] = 7; // after the id (8), the count (4) and the first type's id (4)
        let err = world().import_entity(&mut &record[..]).unwrap_err();
        assert!(
            matches!(&err, LoadError::BadData { what } if what.contains("marks")),
            "{err}"
        );
    }

    #[test]
    fn renumbering_swaps_ids_keeps_values_and_mends_the_hierarchy() {
        let mut w = world();
        w.register_hierarchy();
        let ship = w.spawn((Pos(1.0, 0.0),));
        let turrets = [w.spawn((Pos(2.0, 0.0),)), w.spawn((Pos(3.0, 0.0),))];
        for t in turrets {
            w.set_parent(t, ship).unwrap();
        }
        let other = w.spawn((Pos(9.0, 0.0),));
        // The ship and the other swap slots; the first turret moves to a new one.
        let (s2, o2) = (
            Entity::from_bits((7 << 32) | u64::from(other.index())).unwrap(),
            Entity::from_bits((5 << 32) | u64::from(ship.index())).unwrap(),
        );
        let t2 = Entity::from_bits((1 << 32) | 40).unwrap();
        w.renumber(&[(ship, s2), (other, o2), (turrets[0], t2)]);
        for dead in [ship, other, turrets[0]] {
            assert!(!w.is_alive(dead), "{dead}");
        }
        assert_eq!(w.get::<Pos>(s2), Some(&Pos(1.0, 0.0)));
        assert_eq!(w.get::<Pos>(o2), Some(&Pos(9.0, 0.0)));
        assert_eq!(w.get::<Pos>(t2), Some(&Pos(2.0, 0.0)));
        assert_eq!(w.children(s2), [t2, turrets[1]], "order kept");
        assert_eq!(w.parent(t2), Some(s2));
        assert_eq!(w.parent(turrets[1]), Some(s2));
        assert_eq!(w.len(), 4);
        // The freed slots are free: spawns take them, not the new ids'.
        let fresh: Vec<Entity> = (0..3).map(|_| w.spawn(())).collect();
        assert!(fresh.iter().all(|e| ![s2, o2, t2].contains(e)));
    }

    #[test]
    fn renumbered_rows_are_re_sorted_in_canonical_order() {
        let mut w = world();
        let es: Vec<Entity> = (0..3).map(|i| w.spawn((Pos(i as f32, 0.0),))).collect();
        let id = |generation: u64, of: Entity| {
            Entity::from_bits((generation << 32) | u64::from(of.index()))
        };
        // The first and the last swap slots: rows now run 2, 1, 0 by index.
        let (first, last) = (id(3, es[2]).unwrap(), id(4, es[0]).unwrap());
        w.renumber(&[(es[0], first), (es[2], last)]);
        w.set_canonical_order(true);
        let mut rt = Runtime::builder().workers(1).build(w);
        rt.frame();
        let order: Vec<(u32, f32)> = (rt.world().query::<(&Pos,)>())
            .map(|(e, (p,))| (e.index(), p.0))
            .collect();
        assert_eq!(order, [(0, 2.0), (1, 1.0), (2, 0.0)]);
    }

    #[test]
    fn a_bad_renumbering_changes_nothing() {
        type Moves = Vec<(Entity, Entity)>;
        let refused = |moves: &dyn Fn(&[Entity]) -> Moves| {
            let mut w = world();
            let es: Vec<Entity> = (0..2).map(|i| w.spawn((Pos(i as f32, 0.0),))).collect();
            let moves = moves(&es);
            let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                w.renumber(&moves);
            }))
            .unwrap_err();
            assert!(es.iter().all(|&e| w.is_alive(e)) && w.len() == 2);
            assert!((moves.iter()).all(|&(_, new)| es.contains(&new) || !w.is_alive(new)));
            err.downcast_ref::<String>().cloned().unwrap_or_default()
        };
        let free = Entity::from_bits((1 << 32) | 9).unwrap();
        let msg = refused(&|es| vec![(es[0], es[1])]);
        assert!(msg.contains("holds a live entity"), "{msg}");
        let msg = refused(&|es| vec![(es[0], free), (es[0], es[1])]);
        assert!(msg.contains("named twice"), "{msg}");
        let msg = refused(&|es| vec![(es[0], free), (es[1], free)]);
        assert!(msg.contains("named twice"), "{msg}");
        let dead = Entity::from_bits((5 << 32) | 1).unwrap();
        let msg = refused(&|_| vec![(dead, free)]);
        assert!(msg.contains("not alive"), "{msg}");
    }

    #[test]
    fn trees_leave_whole() {
        let mut w = world();
        w.register_hierarchy();
        let root = w.spawn((Pos(0.0, 0.0),));
        let kid = w.spawn((Pos(1.0, 0.0),));
        let grandkid = w.spawn((Pos(2.0, 0.0),));
        w.set_parent(kid, root).unwrap();
        w.set_parent(grandkid, kid).unwrap();
        assert_eq!(w.tree(root), [root, kid, grandkid]);
        let mut records = Vec::new();
        for e in w.tree(root) {
            w.export_entity(e, &mut records).unwrap();
        }
        assert_eq!(w.evict_tree(root), 3);
        assert!(w.is_empty());
        // Evicted ids stay held here; in another world the tree arrives whole.
        let mut there = world();
        there.register_hierarchy();
        let mut src = &records[..];
        while !src.is_empty() {
            there.import_entity(&mut src).unwrap();
        }
        assert_eq!(there.children(root), [kid]);
        assert_eq!(there.parent(grandkid), Some(kid));
        assert_eq!(there.discard_tree(root), 3);
        assert!(there.is_empty());
        assert_eq!(there.spawn(()).index(), grandkid.index(), "freed: reused");
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut w = world();
            w.register_hierarchy();
            let (a, b) = (w.spawn(()), w.spawn(()));
            w.set_parent(b, a).unwrap();
            w.evict_tree(b);
        }))
        .unwrap_err();
        assert!(err.downcast_ref::<String>().unwrap().contains("not a root"));
        // Without a hierarchy a tree is one entity.
        let mut flat = world();
        let e = flat.spawn((Pos(0.0, 0.0),));
        assert_eq!(flat.tree(e), [e]);
        assert_eq!(flat.discard_tree(e), 1);
        assert_eq!(flat.evict_tree(e), 0, "dead");
    }

    #[test]
    fn an_imported_id_is_never_handed_out_again() {
        let mut a = world();
        let far: Vec<Entity> = (0..40).map(|i| a.spawn((Pos(i as f32, 0.0),))).collect();
        // `b` has run a frame: its allocator holds ids reserved for spawns, and ids
        // freed by despawns.
        let mut b = world();
        let local: Vec<Entity> = (0..8).map(|_| b.spawn((Pos(0.0, 0.0),))).collect();
        for &e in &local[..4] {
            b.despawn(e);
        }
        let mut rt = Runtime::builder().workers(1).build(b);
        rt.add_system(|w: &World, out: &mut Output| {
            if w.resource::<Time>().frame % 2 == 1 {
                for i in 0..30 {
                    out.spawn((Pos(-1.0, i as f32),));
                }
            }
        });
        rt.frame();
        let mut arrived = Vec::new();
        for &e in &far[..] {
            let mut record = Vec::new();
            a.export_entity(e, &mut record).unwrap();
            a.evict(e);
            match rt.world_mut().import_entity(&mut &record[..]) {
                Ok(got) => arrived.push(got),
                // Ids alive in both worlds: this test's two worlds overlap by design.
                Err(LoadError::DuplicateEntity { .. }) => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert!(
            arrived.len() > 20,
            "most ids were free, reserved or new here"
        );
        for _ in 0..3 {
            rt.frame();
        }
        // Every arrival kept its values; no spawn took an arrival's slot.
        for &e in &arrived {
            assert_eq!(rt.world().get::<Pos>(e).map(|p| p.1), Some(0.0), "{e}");
        }
        let mut indices: Vec<u32> = rt.world().query::<&Pos>().map(|(e, _)| e.index()).collect();
        let n = indices.len();
        indices.sort_unstable();
        indices.dedup();
        assert_eq!(indices.len(), n, "one entity per slot");
        assert!(!a.is_alive(far[0]) && a.is_empty());
    }
}
