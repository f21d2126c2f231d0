//! Generational entity handles and their allocator.
//!
//! An [`Entity`] is a slot index plus a non-zero generation. Despawning bumps the slot's
//! generation, so every handle to the old occupant becomes stale. A slot whose generation
//! would overflow is *retired*: it is never handed out again, so a stale handle can never
//! alias a new entity. Freed slots are reused last-in-first-out, which keeps allocation
//! deterministic: the same sequence of spawns and despawns always yields the same ids.
//!
//! # Ids for spawns made during Run
//!
//! [`Output::spawn`](crate::Output::spawn) returns the new entity's id at once, while
//! systems run in parallel and the world is read-only. The ids come from *reservations*,
//! one per system, made before each Run (each stage's) on the frame thread, in system
//! order — the runtime's order of *places*: stage by stage, then registration order (see
//! [`Entities::reserve_for_stage`]): system `s` takes the ids of its reservation in
//! order. A system that spawns more than its reservation holds takes *overflow* ids: its
//! `k`-th overflow spawn has lane position `g = s + k * lanes` (`lanes` is the number of
//! systems) and takes the `g`-th id from the top of the free list, or past its end a
//! fresh index (Sync then takes the used ids out of the free list, creates the fresh
//! slots and frees the fresh indices no lane used). Which id a spawn gets thus depends
//! only on the system, its spawn count and the world's history — never on threads. A
//! reservation is sized from what its system spawned the last time it ran (twice that, at
//! least [`MIN_RESERVE`]), so overflow is for bursts. With several stages, each stage's
//! Run tops up the reservations of its own systems and sets its lanes (the stage before
//! changed the free list); the other stages' reservations wait for their own stage, so a
//! stage that spawns nothing moves no id.

use std::fmt;
use std::num::NonZeroU32;
use std::ops::Range;

use crate::stamp::{Stamp, same};

/// A handle to an entity: a slot index and a generation.
///
/// Handles are cheap to copy, compare and hash. A handle stays valid until its entity is
/// despawned; after that [`World::is_alive`](crate::World::is_alive) returns `false` for it
/// and every output sent to it is dropped.
// `repr(C)` and 8-byte alignment make a handle one aligned `u64` in memory, so comparing
// two (on every write, in the write path's cursor check) is one 64-bit compare.
#[derive(Clone, Copy, Eq, PartialOrd, Ord)]
#[repr(C, align(8))]
pub struct Entity {
    index: u32,
    generation: NonZeroU32,
}

impl PartialEq for Entity {
    #[inline(always)]
    fn eq(&self, other: &Self) -> bool {
        self.to_bits() == other.to_bits()
    }
}

// Consistent with `eq`: equal handles have equal bits.
impl std::hash::Hash for Entity {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.to_bits());
    }
}

impl Entity {
    /// A handle that never names a live entity, for a field that must hold *some* entity
    /// before the real one is known (as bevy's `Entity::PLACEHOLDER`): index `u32::MAX`,
    /// generation 1. The allocator never hands out index `u32::MAX` (indices stop one
    /// short of it), so [`World::is_alive`](crate::World::is_alive) is `false` for it in
    /// every world, outputs sent to it are dropped (and counted), and commands for it do
    /// nothing. `Debug` prints it as `PLACEHOLDER`.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// assert_ne!(e, Entity::PLACEHOLDER);
    /// assert!(!world.is_alive(Entity::PLACEHOLDER));
    /// assert!(!world.despawn(Entity::PLACEHOLDER));
    /// ```
    pub const PLACEHOLDER: Entity = Entity {
        index: u32::MAX,
        generation: NonZeroU32::MIN,
    };

    /// The slot index. Unique among live entities; reused after despawn.
    #[inline]
    pub fn index(self) -> u32 {
        self.index
    }

    /// The generation of the slot when this handle was created (starts at 1).
    #[inline]
    pub fn generation(self) -> u32 {
        self.generation.get()
    }

    /// States to the optimiser what the type guarantees: the generation is not zero. A
    /// query loop yields `Option<(Entity, ..)>`, whose `None` is a zero generation; an
    /// entity loaded from a table as one 64-bit word carries no such fact, so without
    /// this every row loaded its generation and tested it, even in a loop that ignores
    /// the entity.
    #[inline(always)]
    pub(crate) fn hint_valid(self) {
        // SAFETY: `generation` is a `NonZeroU32`, which is never zero.
        unsafe { std::hint::assert_unchecked(self.generation.get() != 0) }
    }

    /// Packs the handle into 64 bits (generation high, index low), e.g. for hashing a
    /// world state or saving it.
    #[inline]
    pub fn to_bits(self) -> u64 {
        (u64::from(self.generation.get()) << 32) | u64::from(self.index)
    }

    /// Unpacks [`to_bits`](Self::to_bits). Returns `None` if the generation is zero.
    pub fn from_bits(bits: u64) -> Option<Entity> {
        Some(Entity {
            index: bits as u32,
            generation: NonZeroU32::new((bits >> 32) as u32)?,
        })
    }
}

impl fmt::Debug for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Entity::PLACEHOLDER {
            return f.write_str("PLACEHOLDER");
        }
        write!(f, "{}v{}", self.index, self.generation)
    }
}

/// An entity saves as its [`to_bits`](Entity::to_bits); a zero generation does not load.
impl serde::Serialize for Entity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.to_bits())
    }
}

impl<'de> serde::Deserialize<'de> for Entity {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bits = u64::deserialize(d)?;
        Entity::from_bits(bits)
            .ok_or_else(|| serde::de::Error::custom(format!("not an entity: {bits:#x}")))
    }
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Where an entity's components live: a table and a row in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Location {
    pub(crate) table: u32,
    pub(crate) row: u32,
}

impl Location {
    /// Marks a slot that holds no live entity.
    pub(crate) const NONE: Location = Location {
        table: u32::MAX,
        row: u32::MAX,
    };
}

#[derive(Clone, Copy, Debug)]
struct EntityMeta {
    /// Generation of the current (or next) occupant.
    generation: NonZeroU32,
    /// `Location::NONE` when the slot is free or retired.
    location: Location,
}

/// Slots per [stamp](crate::stamp) of the allocator: a block a checksum digests on its
/// own, and a snapshot copies (or skips) whole.
pub(crate) const SLOT_BLOCK: usize = 4096;

/// The allocator's slots, in blocks of [`SLOT_BLOCK`] each named by a
/// [stamp](crate::stamp): every change goes through a method here that touches the
/// stamp of each block it changes, so a copy ([`clone_from`](Clone::clone_from)) skips
/// the blocks the destination already holds, and a checksum reuses the digest of a block
/// of slots no spawn, despawn or move touched.
#[derive(Debug, Default)]
struct Slots {
    metas: Vec<EntityMeta>,
    /// One per block, `ceil(metas.len() / SLOT_BLOCK)`.
    stamps: Vec<Stamp>,
}

impl Slots {
    fn from_metas(metas: Vec<EntityMeta>) -> Self {
        let mut s = Slots {
            metas,
            stamps: Vec::new(),
        };
        s.resized();
        s
    }

    #[inline]
    fn len(&self) -> usize {
        self.metas.len()
    }

    #[inline]
    fn get(&self, i: usize) -> Option<&EntityMeta> {
        self.metas.get(i)
    }

    #[inline]
    fn as_slice(&self) -> &[EntityMeta] {
        &self.metas
    }

    /// Slot `i`, to change (its block's stamp touched).
    #[inline]
    fn get_mut(&mut self, i: usize) -> &mut EntityMeta {
        self.stamps[i / SLOT_BLOCK].touch();
        &mut self.metas[i]
    }

    /// The stamp of block `b` (named now if need be).
    fn stamp(&self, b: usize) -> u64 {
        self.stamps[b].get()
    }

    /// After the length changed: one stamp per block, the last block's touched (it
    /// gained or lost slots).
    fn resized(&mut self) {
        let blocks = self.metas.len().div_ceil(SLOT_BLOCK);
        self.stamps.truncate(blocks);
        self.stamps.resize_with(blocks, Stamp::default);
        if let Some(last) = self.stamps.last_mut() {
            last.touch();
        }
    }

    fn push(&mut self, meta: EntityMeta) {
        self.metas.push(meta);
        if self.metas.len() % SLOT_BLOCK == 1 {
            self.stamps.push(Stamp::default());
        } else {
            self.stamps.last_mut().expect("a block per slot").touch();
        }
    }

    fn resize(&mut self, n: usize, meta: EntityMeta) {
        self.metas.resize(n, meta);
        self.resized();
    }

    fn truncate(&mut self, n: usize) {
        if n < self.metas.len() {
            self.metas.truncate(n);
            self.resized();
        }
    }
}

impl Clone for Slots {
    fn clone(&self) -> Self {
        let mut s = Slots::default();
        s.clone_from(self);
        s
    }

    /// Copies block by block, skipping each block whose stamp this copy already has.
    fn clone_from(&mut self, src: &Self) {
        let n = src.metas.len();
        self.metas.truncate(n);
        self.stamps.truncate(src.stamps.len());
        self.stamps.resize_with(src.stamps.len(), Stamp::default);
        for (b, (mine, theirs)) in self.stamps.iter_mut().zip(&src.stamps).enumerate() {
            let name = theirs.get();
            if same(mine.peek(), name) {
                continue;
            }
            let range = b * SLOT_BLOCK..((b + 1) * SLOT_BLOCK).min(n);
            if range.end <= self.metas.len() {
                self.metas[range.clone()].copy_from_slice(&src.metas[range]);
            } else {
                self.metas.truncate(range.start);
                self.metas.extend_from_slice(&src.metas[range]);
            }
            mine.set(name);
        }
        debug_assert_eq!(self.metas.len(), n);
    }
}

/// The largest number of entity slots: index `u32::MAX` is never handed out.
pub(crate) const MAX_SLOTS: usize = u32::MAX as usize;

#[cold]
#[track_caller]
fn out_of_slots(max: usize) -> ! {
    panic!(
        "runsync: out of entity slots: all {max} indices are in use, reserved or retired \
         (entity indices are u32 and never wrap)"
    )
}

/// How far past its last slot an arriving entity's index may be
/// ([`Entities::place`]): so that a record read off the network (a few bytes) cannot make
/// the allocator grow by gigabytes. Further out needs [`Entities::grow_to`] first.
pub(crate) const PLACE_SLACK: usize = 64;

/// The smallest reservation of ids per system for spawns made during Run.
pub(crate) const MIN_RESERVE: usize = 16;

/// One system's reserved ids (see the module docs).
#[derive(Default, Debug, PartialEq, Eq)]
struct Reservation {
    /// Free slot indices, taken from the front.
    ids: Vec<u32>,
    /// What the system spawned in the last frame that ran: sizes the next reservation.
    spawned_last: u32,
}

impl Clone for Reservation {
    fn clone(&self) -> Self {
        Reservation {
            ids: self.ids.clone(),
            spawned_last: self.spawned_last,
        }
    }

    /// Reuses `ids`' capacity: restoring a snapshot every frame allocates nothing.
    fn clone_from(&mut self, src: &Self) {
        self.ids.clone_from(&src.ids);
        self.spawned_last = src.spawned_last;
    }
}

/// The entity allocator: slot metadata plus a LIFO free list, and the ids reserved for
/// spawns during Run.
#[derive(Default)]
pub(crate) struct Entities {
    slots: Slots,
    free: Vec<u32>,
    alive: usize,
    retired: usize,
    /// Per system (registration order), its reserved ids.
    reserved: Vec<Reservation>,
    /// The first overflow index of this frame, and the stride between one system's
    /// overflow ids (the number of systems).
    lane_base: u32,
    lanes: u32,
    /// What the last [`reserve_for_stage`](Self::reserve_for_stage) changed, so that a
    /// frame whose Run failed can take it back. Not world state: never cloned, compared
    /// or checksummed.
    undo: ReserveUndo,
    /// Slots [`place`](Self::place)d (taken off no list yet): see
    /// [`unlist_placed`](Self::unlist_placed). Empty between operations: not world state.
    placed: Vec<u32>,
    /// Slot-count limit below `MAX_SLOTS`, for tests of index exhaustion.
    #[cfg(test)]
    limit: Option<usize>,
}

/// What one [`Entities::reserve_for_stage`] changed, in the order it changed it: enough to
/// undo it exactly ([`Entities::unreserve_frame`]). Kept across frames for its capacity.
#[derive(Default)]
struct ReserveUndo {
    /// The slot count, reservation count and lanes before.
    slots: usize,
    reserved: usize,
    lane_base: u32,
    lanes: u32,
    /// The place of the first reservation sized (the stage's first system).
    first: usize,
    /// Per reservation sized (the stage's, from `first`): ids it took (positive: from the
    /// top of the free list, else fresh slots) or gave back to the free list (negative).
    deltas: Vec<isize>,
    /// The reservations of systems that no longer exist, whose ids went to the free list
    /// first (empty unless the system count shrank, e.g. after a restore).
    dropped: Vec<Reservation>,
}

impl Clone for Entities {
    fn clone(&self) -> Self {
        let mut e = Entities::default();
        e.clone_from(self);
        e
    }

    /// Copies the whole allocator state (generations, locations, free list, retired
    /// count) reusing this one's vectors: no allocation when they are large enough.
    fn clone_from(&mut self, src: &Self) {
        self.slots.clone_from(&src.slots);
        self.free.clone_from(&src.free);
        self.alive = src.alive;
        self.retired = src.retired;
        self.reserved.clone_from(&src.reserved);
        self.lane_base = src.lane_base;
        self.lanes = src.lanes;
        self.undo.deltas.clear();
        self.undo.dropped.clear();
        #[cfg(test)]
        {
            self.limit = src.limit;
        }
    }
}

/// What a snapshot keeps of the [`Entities`] allocator: each slot's generation, not its
/// location. A live entity's location is its table and row, which the snapshot's tables
/// keep already, so [`Entities::load`] rebuilds locations from them, and a save copies a
/// third of the bytes. Blocks are skipped by stamp as [`Slots`] copies do.
#[derive(Default)]
pub(crate) struct SavedEntities {
    generations: Vec<NonZeroU32>,
    /// The stamp of each block of `generations` when it was copied (0: none).
    stamps: Vec<u64>,
    free: Vec<u32>,
    alive: usize,
    retired: usize,
    reserved: Vec<Reservation>,
    lane_base: u32,
    lanes: u32,
    #[cfg(test)]
    limit: Option<usize>,
}

impl SavedEntities {
    /// Number of live entities.
    pub(crate) fn len(&self) -> usize {
        self.alive
    }
}

impl Entities {
    /// Copies the allocator's state into `to`, skipping each block of slots whose stamp
    /// `to` already holds: no allocation when `to`'s vectors are large enough.
    pub(crate) fn save(&self, to: &mut SavedEntities) {
        let metas = self.slots.as_slice();
        let n = metas.len();
        to.generations.truncate(n);
        to.stamps.truncate(self.slots.stamps.len());
        to.stamps.resize(self.slots.stamps.len(), 0);
        for (b, saved) in to.stamps.iter_mut().enumerate() {
            let name = self.slots.stamp(b);
            if same(*saved, name) {
                continue;
            }
            let range = b * SLOT_BLOCK..((b + 1) * SLOT_BLOCK).min(n);
            let common = range.end.min(to.generations.len());
            for (g, m) in to.generations[range.start..common]
                .iter_mut()
                .zip(&metas[range.start..common])
            {
                *g = m.generation;
            }
            to.generations.extend(
                metas[common.max(range.start)..range.end]
                    .iter()
                    .map(|m| m.generation),
            );
            *saved = name;
        }
        debug_assert_eq!(to.generations.len(), n);
        to.free.clone_from(&self.free);
        to.alive = self.alive;
        to.retired = self.retired;
        to.reserved.clone_from(&self.reserved);
        to.lane_base = self.lane_base;
        to.lanes = self.lanes;
        #[cfg(test)]
        {
            to.limit = self.limit;
        }
    }

    /// Makes the allocator what `from` was saved from, given the tables' entity lists
    /// as restored (`(table, entities)`, rows in order): each block of slots whose stamp
    /// differs from `from`'s gets its generations back, and its live slots their
    /// locations from the tables.
    pub(crate) fn load<'t>(
        &mut self,
        from: &SavedEntities,
        tables: impl Iterator<Item = (u32, &'t [Entity])>,
    ) {
        let n = from.generations.len();
        let slots = &mut self.slots;
        slots.metas.truncate(n);
        slots.stamps.truncate(from.stamps.len());
        slots.stamps.resize_with(from.stamps.len(), Stamp::default);
        let mut any = false;
        for (b, (mine, &theirs)) in slots.stamps.iter_mut().zip(&from.stamps).enumerate() {
            if same(mine.peek(), theirs) {
                continue;
            }
            let range = b * SLOT_BLOCK..((b + 1) * SLOT_BLOCK).min(n);
            let meta = |g: &NonZeroU32| EntityMeta {
                generation: *g,
                location: Location::NONE,
            };
            let common = range.end.min(slots.metas.len());
            for (m, g) in slots.metas[range.start..common]
                .iter_mut()
                .zip(&from.generations[range.start..common])
            {
                *m = meta(g);
            }
            slots.metas.extend(
                from.generations[common.max(range.start)..range.end]
                    .iter()
                    .map(meta),
            );
            mine.set(theirs);
            any = true;
        }
        debug_assert_eq!(slots.metas.len(), n);
        // A live entity of a block copied just now has no location yet; one of a block
        // skipped has the one it had when saved, its place in the tables now.
        if any {
            for (table, entities) in tables {
                for (row, e) in entities.iter().enumerate() {
                    let meta = &mut slots.metas[e.index as usize];
                    if meta.location == Location::NONE {
                        meta.location = Location {
                            table,
                            row: row as u32,
                        };
                    }
                }
            }
        }
        self.free.clone_from(&from.free);
        self.alive = from.alive;
        self.retired = from.retired;
        self.reserved.clone_from(&from.reserved);
        self.lane_base = from.lane_base;
        self.lanes = from.lanes;
        self.undo.deltas.clear();
        self.undo.dropped.clear();
        #[cfg(test)]
        {
            self.limit = from.limit;
        }
    }
}

impl Entities {
    /// Slots `range`, each as one word of the checksum: `generation << 1 | live`.
    pub(crate) fn slot_words(
        &self,
        range: std::ops::Range<usize>,
    ) -> impl ExactSizeIterator<Item = u64> + '_ {
        self.slots.as_slice()[range]
            .iter()
            .map(|s| u64::from(s.generation.get()) << 1 | u64::from(s.location != Location::NONE))
    }

    /// The [stamp](crate::stamp) of the slots of block `b` (slots `b * SLOT_BLOCK ..`).
    pub(crate) fn slot_block_stamp(&self, b: usize) -> u64 {
        self.slots.stamp(b)
    }

    /// Every slot's generation and whether it holds a live entity, by index (for
    /// checksums and desync reports).
    pub(crate) fn slot_states(&self) -> impl ExactSizeIterator<Item = (NonZeroU32, bool)> + '_ {
        self.slots
            .as_slice()
            .iter()
            .map(|s| (s.generation, s.location != Location::NONE))
    }

    /// The free list: the next ids are taken from its end.
    pub(crate) fn free_list(&self) -> &[u32] {
        &self.free
    }

    /// Slots whose generations are exhausted (never reused).
    pub(crate) fn retired(&self) -> usize {
        self.retired
    }

    /// Per system (registration order): the ids reserved for its next spawns, and what
    /// it spawned in the last frame that ran (which sizes its next reservation).
    pub(crate) fn reservations(&self) -> impl ExactSizeIterator<Item = (&[u32], u32)> + '_ {
        self.reserved.iter().map(|r| (&r.ids[..], r.spawned_last))
    }

    /// Allocates a handle. The caller must set its location before anyone looks it up.
    ///
    /// # Panics
    /// When all `u32::MAX` slot indices are in use or retired.
    pub(crate) fn alloc(&mut self) -> Entity {
        let index = self.alloc_index();
        self.alive += 1;
        self.handle(index)
    }

    /// The handle of the current (or next) occupant of slot `index`.
    #[inline]
    fn handle(&self, index: u32) -> Entity {
        Entity {
            index,
            generation: self.slots.as_slice()[index as usize].generation,
        }
    }

    /// The largest number of slots.
    pub(crate) fn max_slots(&self) -> usize {
        #[cfg(test)]
        return self.limit.unwrap_or(MAX_SLOTS);
        #[cfg(not(test))]
        MAX_SLOTS
    }

    /// A free slot index (from the free list, else a fresh slot), not yet alive.
    ///
    /// # Panics
    /// When all `u32::MAX` slot indices are in use, reserved or retired.
    fn alloc_index(&mut self) -> u32 {
        if let Some(index) = self.free.pop() {
            return index;
        }
        let max = self.max_slots();
        if self.slots.len() >= max {
            out_of_slots(max);
        }
        self.slots.push(EntityMeta {
            generation: NonZeroU32::MIN,
            location: Location::NONE,
        });
        self.slots.len() as u32 - 1
    }

    /// Sizes the reservations of the systems at `places` (of `systems`, in place order:
    /// stage by stage, then registration order) for the stage about to run, and sets its
    /// overflow lanes. Deterministic: it depends only on the allocator state. A
    /// reservation holds twice what its system spawned the last time it ran, at least
    /// [`MIN_RESERVE`]; ids beyond that go back to the free list, as do the reservations
    /// of systems that no longer exist. Only the stage's own reservations are touched, so
    /// a stage changes the free list only through what its systems do: a stage with no
    /// system (or one whose systems never spawn) leaves every id where one stage fewer
    /// would.
    ///
    /// # Panics
    /// When the slot indices run out.
    ///
    /// [`unreserve_frame`](Self::unreserve_frame) takes it back.
    pub(crate) fn reserve_for_stage(&mut self, systems: usize, places: Range<usize>) {
        let mut reserved = std::mem::take(&mut self.reserved);
        let mut undo = std::mem::take(&mut self.undo);
        undo.slots = self.slots.len();
        undo.reserved = reserved.len();
        undo.lane_base = self.lane_base;
        undo.lanes = self.lanes;
        undo.deltas.clear();
        undo.dropped.clear();
        if reserved.len() > systems {
            // Rare (fewer systems than the reservations were made for): one allocation.
            undo.dropped = reserved.split_off(systems);
            for r in &undo.dropped {
                self.free.extend(r.ids.iter().rev());
            }
        }
        reserved.resize_with(systems, Reservation::default);
        undo.first = places.start;
        for r in &mut reserved[places] {
            let target = (2 * r.spawned_last as usize).max(MIN_RESERVE);
            undo.deltas.push(target as isize - r.ids.len() as isize);
            while r.ids.len() > target {
                let id = r.ids.pop().expect("longer than target");
                self.free.push(id);
            }
            while r.ids.len() < target {
                let id = self.alloc_index();
                r.ids.push(id);
            }
        }
        self.reserved = reserved;
        self.undo = undo;
        self.lane_base = self.slots.len() as u32;
        self.lanes = systems as u32;
    }

    /// Undoes the last [`reserve_for_stage`](Self::reserve_for_stage), when nothing else
    /// changed the allocator since (a frame whose Run failed: Run only reads the world):
    /// every step in reverse, so slots, free list (order included), reservations and
    /// lanes are exactly as before. Cost: O(ids moved), like the reservation itself.
    pub(crate) fn unreserve_frame(&mut self) {
        let undo = &mut self.undo;
        let stage = &mut self.reserved[undo.first..];
        for (r, &delta) in stage.iter_mut().zip(&undo.deltas).rev() {
            if delta > 0 {
                // Taken from the top of the free list, or fresh slots (dropped below).
                for _ in 0..delta {
                    let id = r.ids.pop().expect("the ids this reservation took");
                    if (id as usize) < undo.slots {
                        self.free.push(id);
                    }
                }
            } else {
                for _ in 0..-delta {
                    let id = self.free.pop().expect("the ids this reservation gave back");
                    r.ids.push(id);
                }
            }
        }
        undo.deltas.clear();
        self.reserved.truncate(undo.reserved);
        let back: usize = undo.dropped.iter().map(|r| r.ids.len()).sum();
        self.free.truncate(self.free.len() - back);
        self.reserved.append(&mut undo.dropped);
        self.slots.truncate(undo.slots);
        self.lane_base = undo.lane_base;
        self.lanes = undo.lanes;
    }

    /// The id of system `system`'s `k`-th spawn this frame (from 0): from its
    /// reservation, or an overflow id (see the module docs). Not alive until Sync spawns
    /// it.
    ///
    /// # Panics
    /// If the overflow index would pass the last slot index, or if `system` has no
    /// reservation (the runtime reserves for every system before Run).
    #[inline]
    pub(crate) fn reserved_id(&self, system: usize, k: usize) -> Entity {
        let r = &self.reserved[system];
        if let Some(&index) = r.ids.get(k) {
            return self.handle(index);
        }
        self.overflow_id(system, k - r.ids.len())
    }

    /// The id of system `system`'s `k`-th overflow spawn: its *lane position*
    /// `g = system + k * lanes` picks the `g`-th id from the top of the free list, or,
    /// past its end, the fresh index `lane_base + g - free.len()`.
    #[cold]
    fn overflow_id(&self, system: usize, k: usize) -> Entity {
        let g = system as u64 + k as u64 * u64::from(self.lanes);
        let free = self.free.len() as u64;
        if g < free {
            return self.handle(self.free[(free - 1 - g) as usize]);
        }
        let index = u64::from(self.lane_base) + g - free;
        let max = self.max_slots();
        if index >= max as u64 {
            out_of_slots(max);
        }
        Entity {
            index: index as u32,
            generation: NonZeroU32::MIN,
        }
    }

    /// Before Sync's commands: takes this frame's overflow ids (given what each system
    /// spawned, `spawned[s]`) out of the free list, creates the slots of fresh ones, and
    /// frees the fresh indices between them.
    pub(crate) fn create_overflow(&mut self, spawned: impl Fn(usize) -> usize) {
        let lanes = self.lanes as usize;
        let reserved = &self.reserved;
        let overflow = |s: usize| spawned(s).saturating_sub(reserved[s].ids.len());
        let Some(last) = (0..lanes)
            .filter(|&s| overflow(s) > 0)
            .map(|s| s + (overflow(s) - 1) * lanes)
            .max()
        else {
            return;
        };
        // Rare (a burst): one small allocation.
        let counts: Vec<usize> = (0..lanes).map(overflow).collect();
        let used = |g: usize| g / lanes < counts[g % lanes];
        let free = self.free.len();
        // Lane positions below `free` are free-list entries, counted from the top.
        let mut p = 0;
        self.free.retain(|_| {
            p += 1;
            !used(free - p)
        });
        if last >= free {
            debug_assert_eq!(
                self.slots.len(),
                self.lane_base as usize,
                "nothing allocated since"
            );
            let fresh = last - free + 1;
            self.slots.resize(
                self.slots.len() + fresh,
                EntityMeta {
                    generation: NonZeroU32::MIN,
                    location: Location::NONE,
                },
            );
            // Unused fresh indices go to the free list highest first, so the lowest is
            // reused first.
            for g in (free..=last).rev() {
                if !used(g) {
                    self.free.push(self.lane_base + (g - free) as u32);
                }
            }
        }
    }

    /// After Sync's commands: system `system` spawned `spawned` entities this frame (all
    /// now alive); its reservation drops the ids it used.
    pub(crate) fn commit_reserved(&mut self, system: usize, spawned: usize) {
        let Some(r) = self.reserved.get_mut(system) else {
            return;
        };
        let used = spawned.min(r.ids.len());
        r.ids.drain(..used);
        r.spawned_last = spawned as u32;
    }

    /// Makes the reserved (or overflow) id `e` alive; the caller sets its location.
    pub(crate) fn claim(&mut self, e: Entity) {
        debug_assert!(
            self.slots.as_slice()[e.index as usize].generation == e.generation
                && self.slots.as_slice()[e.index as usize].location == Location::NONE,
            "claimed {e:?}, which is not a reserved id"
        );
        self.alive += 1;
    }

    /// Makes room for indices below `n` (new slots join the free list), up to the slot
    /// limit: what [`place`](Self::place) needs for indices further out than
    /// [`PLACE_SLACK`].
    pub(crate) fn grow_to(&mut self, n: usize) {
        let n = n.min(self.max_slots());
        if n > self.slots.len() {
            let from = self.slots.len() as u32;
            self.slots.resize(
                n,
                EntityMeta {
                    generation: NonZeroU32::MIN,
                    location: Location::NONE,
                },
            );
            self.free.extend((from..n as u32).rev());
        }
    }

    /// Makes `e` alive under its own id (index and generation) in a world that did not
    /// allocate it (an entity arriving from another world): a slot past the end, by at
    /// most [`PLACE_SLACK`] (the slots between join the free list), a free or reserved
    /// slot, one left by [`evict`](Self::evict), or a retired one (still counted as
    /// retired). The caller sets its location, and calls
    /// [`unlist_placed`](Self::unlist_placed) before anything else reads the free list
    /// or the reservations: a batch of places takes its slots off their lists in one
    /// pass. Returns `false`, changing nothing, if the slot holds a live entity or the
    /// index is past the limit or the slack.
    pub(crate) fn place(&mut self, e: Entity) -> bool {
        let i = e.index as usize;
        if i >= self.max_slots()
            || i >= self.slots.len() + PLACE_SLACK
            || self
                .slots
                .get(i)
                .is_some_and(|s| s.location != Location::NONE)
        {
            return false;
        }
        if i >= self.slots.len() {
            let from = self.slots.len() as u32;
            self.slots.resize(
                i + 1,
                EntityMeta {
                    generation: NonZeroU32::MIN,
                    location: Location::NONE,
                },
            );
            self.free.extend((from..e.index).rev());
        } else {
            self.placed.push(e.index);
        }
        self.slots.get_mut(i).generation = e.generation;
        self.alive += 1;
        true
    }

    /// Takes the slots [`place`](Self::place)d since the last call off the free list or
    /// the reservation that held them (a slot is on at most one), keeping every list's
    /// order: one walk of each list for the whole batch (a search each for a few).
    pub(crate) fn unlist_placed(&mut self) {
        match self.placed.len() {
            0 => {}
            1..=4 => {
                for &index in &self.placed {
                    if let Some(k) = self.free.iter().rposition(|&f| f == index) {
                        self.free.remove(k);
                    } else if let Some((r, k)) = (self.reserved.iter().enumerate())
                        .find_map(|(r, res)| Some((r, res.ids.iter().position(|&f| f == index)?)))
                    {
                        self.reserved[r].ids.remove(k);
                    }
                }
            }
            _ => {
                self.placed.sort_unstable();
                let placed = &self.placed;
                let off = |f: &u32| placed.binary_search(f).is_err();
                self.free.retain(off);
                for r in &mut self.reserved {
                    r.ids.retain(off);
                }
            }
        }
        self.placed.clear();
    }

    /// Every slot's id (its entity's, or its next one's), `None` for a retired slot: see
    /// `World::entity_slots`. A free slot at the last generation counts as retired (its
    /// one remaining use is given up: a slot, for an iterator that needs no free-list
    /// lookup).
    pub(crate) fn slot_ids(&self) -> impl ExactSizeIterator<Item = Option<Entity>> + '_ {
        self.slots.as_slice().iter().enumerate().map(|(i, s)| {
            (s.location != Location::NONE || s.generation.get() != u32::MAX).then_some(Entity {
                index: i as u32,
                generation: s.generation,
            })
        })
    }

    /// Whether slot `index` holds a live entity (of any generation).
    pub(crate) fn index_alive(&self, index: u32) -> bool {
        self.slots
            .get(index as usize)
            .is_some_and(|s| s.location != Location::NONE)
    }

    /// Takes a live entity out of this world without freeing its id (it lives on
    /// elsewhere: see [`place`](Self::place)) and returns where it was; `None` for a
    /// stale handle.
    pub(crate) fn evict(&mut self, e: Entity) -> Option<Location> {
        let loc = self.location(e)?;
        self.slots.get_mut(e.index as usize).location = Location::NONE;
        self.alive -= 1;
        Some(loc)
    }

    /// Frees a live entity's slot and returns where it was. Returns `None` (and changes
    /// nothing) for a stale or never-allocated handle.
    pub(crate) fn free(&mut self, e: Entity) -> Option<Location> {
        let loc = self.location(e)?;
        let slot = self.slots.get_mut(e.index as usize);
        slot.location = Location::NONE;
        self.alive -= 1;
        match slot.generation.checked_add(1) {
            Some(next) => {
                slot.generation = next;
                self.free.push(e.index);
            }
            // Generation exhausted: retire the slot. It keeps generation u32::MAX with no
            // location, so the old handle is dead and the index is never reused.
            None => self.retired += 1,
        }
        Some(loc)
    }

    /// The overflow lanes of the last frame: `(lane_base, lanes)` (for save files).
    pub(crate) fn lanes(&self) -> (u32, u32) {
        (self.lane_base, self.lanes)
    }

    /// An allocator from saved parts, already checked by the loader: every slot's
    /// generation and location (`Location::NONE` if not alive), the free list, the
    /// retired count, the reservations `(ids, spawned_last)` and the lanes.
    pub(crate) fn from_parts(
        slots: Vec<(NonZeroU32, Location)>,
        free: Vec<u32>,
        retired: usize,
        reserved: Vec<(Vec<u32>, u32)>,
        (lane_base, lanes): (u32, u32),
    ) -> Entities {
        let alive = slots.iter().filter(|s| s.1 != Location::NONE).count();
        Entities {
            slots: Slots::from_metas(
                slots
                    .into_iter()
                    .map(|(generation, location)| EntityMeta {
                        generation,
                        location,
                    })
                    .collect(),
            ),
            free,
            alive,
            retired,
            reserved: reserved
                .into_iter()
                .map(|(ids, spawned_last)| Reservation { ids, spawned_last })
                .collect(),
            lane_base,
            lanes,
            undo: ReserveUndo::default(),
            placed: Vec::new(),
            #[cfg(test)]
            limit: None,
        }
    }

    /// The location of a live entity, or `None` if the handle is stale.
    #[inline]
    pub(crate) fn location(&self, e: Entity) -> Option<Location> {
        let slot = self.slots.get(e.index as usize)?;
        (slot.generation == e.generation && slot.location != Location::NONE)
            .then_some(slot.location)
    }

    /// Sets the location of a live (or just allocated) entity.
    #[inline]
    pub(crate) fn set_location(&mut self, index: u32, location: Location) {
        self.slots.get_mut(index as usize).location = location;
    }

    /// Number of live entities.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.alive
    }

    /// Number of slots ever created (live, free or retired).
    pub(crate) fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Test hook: makes the next fresh slot start at `generation`, so exhaustion can be
    /// reached without 4 billion despawns.
    #[cfg(test)]
    pub(crate) fn push_slot_with_generation_for_test(&mut self, generation: u32) {
        self.slots.push(EntityMeta {
            generation: NonZeroU32::new(generation).unwrap(),
            location: Location::NONE,
        });
        self.free.push(self.slots.len() as u32 - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every slot's generation and location, to compare allocators whole.
    fn metas(e: &Entities) -> Vec<(u32, Location)> {
        e.slots
            .as_slice()
            .iter()
            .map(|m| (m.generation.get(), m.location))
            .collect()
    }

    #[test]
    fn copies_skip_only_blocks_the_destination_holds_and_equal_full_copies() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let mut a = Entities::default();
        let mut live: Vec<Entity> = (0..3 * SLOT_BLOCK as u32 + 100)
            .map(|_| alive(&mut a))
            .collect();
        // Copies of `a` at several points, each refreshed by an incremental copy.
        let mut ring: Vec<Entities> = (0..3).map(|_| Entities::default()).collect();
        let mut full: Vec<Vec<(u32, Location)>> = vec![Vec::new(); 3];
        for round in 0..40 {
            for _ in 0..next(50) {
                match next(4) {
                    0 if !live.is_empty() => {
                        let e = live.swap_remove(next(live.len() as u64) as usize);
                        a.free(e).unwrap();
                    }
                    1 if !live.is_empty() => {
                        let e = live[next(live.len() as u64) as usize];
                        a.set_location(
                            e.index(),
                            Location {
                                table: 1,
                                row: round,
                            },
                        );
                    }
                    _ => live.push(alive(&mut a)),
                }
            }
            if round % 7 == 6 {
                // Fewer slots than before: the copies shrink.
                let mut small = Entities::default();
                live = (0..next(SLOT_BLOCK as u64 * 2) as u32)
                    .map(|_| alive(&mut small))
                    .collect();
                a.clone_from(&small);
                assert_eq!(metas(&a), metas(&small));
            }
            let k = round as usize % 3;
            ring[k].clone_from(&a);
            full[k] = metas(&a);
            for (copy, want) in ring.iter().zip(&full) {
                assert_eq!(&metas(copy), want, "round {round}");
            }
            // Back from an older copy, as a restore: `a` becomes it.
            if round % 5 == 4 {
                let j = (k + 1) % 3;
                if !full[j].is_empty() {
                    a.clone_from(&ring[j]);
                    assert_eq!(&metas(&a), &full[j]);
                    live = a
                        .slot_ids()
                        .flatten()
                        .filter(|&e| a.location(e).is_some())
                        .collect();
                }
            }
        }
    }

    fn alive(e: &mut Entities) -> Entity {
        let h = e.alloc();
        e.set_location(
            h.index(),
            Location {
                table: 0,
                row: h.index(),
            },
        );
        h
    }

    #[test]
    fn alloc_free_reuse_bumps_generation() {
        let mut ents = Entities::default();
        let a = alive(&mut ents);
        let b = alive(&mut ents);
        assert_eq!((a.index(), a.generation()), (0, 1));
        assert_eq!((b.index(), b.generation()), (1, 1));
        assert!(ents.free(a).is_some());
        assert!(ents.location(a).is_none(), "stale handle must be dead");
        assert!(ents.free(a).is_none(), "double free is a no-op");
        let c = alive(&mut ents);
        assert_eq!((c.index(), c.generation()), (0, 2));
        assert!(
            ents.location(a).is_none(),
            "old handle must not alias new entity"
        );
        assert_eq!(ents.len(), 2);
    }

    #[test]
    fn exhausted_generation_retires_slot() {
        let mut ents = Entities::default();
        ents.push_slot_with_generation_for_test(u32::MAX - 1);
        let a = alive(&mut ents);
        assert_eq!((a.index(), a.generation()), (0, u32::MAX - 1));
        ents.free(a);
        let b = alive(&mut ents);
        assert_eq!((b.index(), b.generation()), (0, u32::MAX));
        ents.free(b);
        assert_eq!(ents.retired(), 1);
        assert!(ents.location(b).is_none());
        assert!(ents.location(a).is_none());
        // The retired slot is never handed out again.
        let c = alive(&mut ents);
        assert_eq!(c.index(), 1);
        assert_eq!(c.generation(), 1);
    }

    #[test]
    fn running_out_of_indices_is_a_clear_error_not_a_wrap() {
        let mut ents = Entities {
            limit: Some(2),
            ..Entities::default()
        };
        let a = alive(&mut ents);
        let _b = alive(&mut ents);
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| alive(&mut ents)));
        let msg = err.unwrap_err();
        assert!(
            msg.downcast_ref::<String>()
                .unwrap()
                .contains("out of entity slots")
        );
        assert_eq!(ents.len(), 2, "the failed allocation left no trace");
        // Freeing one makes room again, through the free list.
        ents.free(a);
        let c = alive(&mut ents);
        assert_eq!((c.index(), c.generation()), (0, 2));
    }

    /// Spawns `n` reserved ids of `system` (as Sync does) and returns them.
    fn spawn_reserved(ents: &mut Entities, system: usize, n: usize) -> Vec<Entity> {
        (0..n).map(|k| ents.reserved_id(system, k)).collect()
    }

    fn settle(ents: &mut Entities, spawned: &[Vec<Entity>]) {
        ents.create_overflow(|s| spawned[s].len());
        for (s, ids) in spawned.iter().enumerate() {
            for (i, &e) in ids.iter().enumerate() {
                ents.claim(e);
                ents.set_location(
                    e.index(),
                    Location {
                        table: 0,
                        row: i as u32,
                    },
                );
            }
            ents.commit_reserved(s, ids.len());
        }
    }

    #[test]
    fn reservations_overflow_into_lanes_and_are_reused() {
        let mut ents = Entities::default();
        ents.reserve_for_stage(2, 0..2);
        assert_eq!(
            ents.slots(),
            2 * MIN_RESERVE,
            "two reservations of fresh ids"
        );
        // System 0 stays in its reservation; system 1 overflows by 3: lane positions 1,
        // 3, 5 past an empty free list are fresh indices 33, 35, 37.
        let a = spawn_reserved(&mut ents, 0, 2);
        let b = spawn_reserved(&mut ents, 1, MIN_RESERVE + 3);
        assert_eq!(a.iter().map(|e| e.index()).collect::<Vec<_>>(), [0, 1]);
        let over: Vec<u32> = b[MIN_RESERVE..].iter().map(|e| e.index()).collect();
        assert_eq!(over, [33, 35, 37]);
        settle(&mut ents, &[a.clone(), b.clone()]);
        assert_eq!(ents.len(), 2 + MIN_RESERVE + 3);
        for e in a.iter().chain(&b) {
            assert!(ents.location(*e).is_some(), "{e:?} is alive");
        }
        // The fresh indices no lane took (32, 34, 36) are free, lowest first.
        assert_eq!(ents.alloc_index(), 32);
        ents.free.push(32);
        // Next frame: system 1's reservation holds twice what it spawned.
        ents.reserve_for_stage(2, 0..2);
        assert_eq!(ents.reserved[0].ids.len(), MIN_RESERVE);
        assert_eq!(ents.reserved[1].ids.len(), 2 * (MIN_RESERVE + 3));
        // A world spawn never takes a reserved id.
        let reserved: Vec<u32> = ents.reserved.iter().flat_map(|r| r.ids.clone()).collect();
        let w = ents.alloc();
        assert!(!reserved.contains(&w.index()));
        // Fewer systems: the dropped system's reservation goes back to the free list.
        let free = ents.free.len();
        ents.reserve_for_stage(1, 0..1);
        assert_eq!(ents.free.len(), free + 2 * (MIN_RESERVE + 3));
    }

    #[test]
    fn overflow_takes_free_ids_from_the_top_by_lane() {
        let mut ents = Entities::default();
        let live: Vec<Entity> = (0..10).map(|_| alive(&mut ents)).collect();
        for &e in &live {
            ents.free(e);
        }
        // Free list (top last): 0..9 freed in order, so 9 is on top. Reserving 2 x 16
        // ids takes all 10 and 22 fresh ones.
        ents.reserve_for_stage(2, 0..2);
        assert!(ents.free.is_empty());
        // Now free 5 more so that overflow draws from the free list.
        let more: Vec<Entity> = (0..5).map(|_| alive(&mut ents)).collect();
        for &e in &more {
            ents.free(e);
        }
        ents.lane_base = ents.slots.len() as u32;
        let top: Vec<u32> = ents.free.iter().rev().copied().collect();
        let b = spawn_reserved(&mut ents, 1, MIN_RESERVE + 2);
        // System 1 (of 2 lanes): lane positions 1 and 3 from the top.
        assert_eq!(b[MIN_RESERVE].index(), top[1]);
        assert_eq!(b[MIN_RESERVE + 1].index(), top[3]);
        settle(&mut ents, &[Vec::new(), b.clone()]);
        let left: Vec<u32> = ents.free.iter().rev().copied().collect();
        assert_eq!(left, [top[0], top[2], top[4]], "order kept, used ids gone");
        assert!(ents.location(b[MIN_RESERVE + 1]).is_some());
    }

    /// The whole allocator state, for comparing two (the undo log is not state).
    fn state(e: &Entities) -> String {
        format!(
            "{:?} {} {} {:?} {:?} {} {} {}",
            e.slot_states().collect::<Vec<_>>(),
            e.len(),
            e.retired,
            e.free,
            e.reserved,
            e.slots.len(),
            e.lane_base,
            e.lanes
        )
    }

    #[test]
    fn unreserve_takes_a_reservation_back_exactly() {
        let mut ents = Entities::default();
        let live: Vec<Entity> = (0..40).map(|_| alive(&mut ents)).collect();
        for &e in live.iter().step_by(3) {
            ents.free(e);
        }
        // Frames with 3, then 5 systems (reservations added), bursts (reservations
        // grown), then 2 systems (reservations dropped), and idle frames (reservations
        // shrunk): each reservation, undone, leaves the allocator as it was.
        let plan: [(usize, &[usize]); 6] = [
            (3, &[0, 2, 20]),
            (5, &[1, 0, 40, 3, 17]),
            (5, &[0, 0, 0, 0, 0]),
            (2, &[5, 1]),
            (4, &[0, 0, 0, 0]),
            (1, &[0]),
        ];
        for (systems, spawns) in plan {
            let before = state(&ents);
            ents.reserve_for_stage(systems, 0..systems);
            assert_ne!(state(&ents), before, "{systems} systems reserved something");
            ents.unreserve_frame();
            assert_eq!(state(&ents), before, "{systems} systems");
            // Then the frame runs for real.
            ents.reserve_for_stage(systems, 0..systems);
            let spawned: Vec<Vec<Entity>> = spawns
                .iter()
                .enumerate()
                .map(|(s, &n)| spawn_reserved(&mut ents, s, n))
                .collect();
            settle(&mut ents, &spawned);
        }
    }

    #[test]
    fn the_placeholder_index_is_never_handed_out() {
        // Indices run 0..MAX_SLOTS, so the placeholder's is past the last one.
        assert!(Entity::PLACEHOLDER.index() as usize >= MAX_SLOTS);
        let mut ents = Entities::default();
        let e = alive(&mut ents);
        assert_eq!(ents.location(Entity::PLACEHOLDER), None);
        assert_eq!(ents.free(Entity::PLACEHOLDER), None);
        assert_ne!(e, Entity::PLACEHOLDER);
        assert_eq!(
            Entity::from_bits(Entity::PLACEHOLDER.to_bits()),
            Some(Entity::PLACEHOLDER)
        );
    }

    #[test]
    fn bits_roundtrip() {
        let mut ents = Entities::default();
        let a = alive(&mut ents);
        assert_eq!(Entity::from_bits(a.to_bits()), Some(a));
        assert_eq!(Entity::from_bits(7), None);
        assert_eq!(format!("{a:?}"), "0v1");
    }
}
