//! Spawned ids agreed across shards.
//!
//! runsync hands a spawned entity the next id of *its* world's allocator, in the order
//! Sync meets the spawns. A shard meets only some of them, so its ids would not be one
//! process's. Instead every world — each shard, and the one-process reference — keeps
//! the same copy of one allocator for the whole world ([`Ids`]) and, after every frame,
//! renumbers the frame's spawns by one rule that does not depend on how the world is
//! split:
//!
//! 1. the frame's deaths free their slots (the generation moves on);
//! 2. the frame's spawns, ordered by their contents (the entity record without its id:
//!    every component's saved bytes), take the lowest free slots in that order (new
//!    slots past the end when none is free).
//!
//! Spawns with equal contents are interchangeable: whichever takes which id, the world
//! is the same. A shard learns the others' deaths and spawns in one exchange round after
//! the frame ([`Agreement`]): each sends every shard its owned entities that died and the
//! records of the spawns it keeps (those the partition gives it).

use std::collections::BTreeSet;

use runsync::{Entity, World};

use crate::error::ClusterError;

/// One allocator for the whole world, the same on every shard: per slot, the generation
/// of its entity (alive) or of its next one (free).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Ids {
    /// Per slot: the generation; 0 for a retired slot (its generations used up).
    gens: Vec<u32>,
    /// Per slot: whether its entity is alive (somewhere in the cluster).
    alive: Vec<bool>,
    /// The free slots.
    free: BTreeSet<u32>,
}

impl Ids {
    /// The allocator of `world` (a whole world: nothing evicted).
    pub(crate) fn of(world: &World) -> Ids {
        let mut ids = Ids::default();
        for (i, slot) in world.entity_slots().enumerate() {
            let (generation, alive) =
                slot.map_or((0, false), |e| (e.generation(), world.is_alive(e)));
            ids.gens.push(generation);
            ids.alive.push(alive);
            if generation != 0 && !alive {
                ids.free.insert(i as u32);
            }
        }
        ids
    }

    /// The number of slots.
    pub(crate) fn len(&self) -> usize {
        self.gens.len()
    }

    /// Whether `e` is alive by this allocator.
    pub(crate) fn is_alive(&self, e: Entity) -> bool {
        let i = e.index() as usize;
        self.gens.get(i) == Some(&e.generation()) && self.alive[i]
    }

    /// Frees `e`'s slot (nothing if `e` is not alive).
    fn die(&mut self, e: Entity) {
        if !self.is_alive(e) {
            return;
        }
        let i = e.index() as usize;
        self.alive[i] = false;
        match self.gens[i].checked_add(1) {
            Some(next) => {
                self.gens[i] = next;
                self.free.insert(e.index());
            }
            None => self.gens[i] = 0,
        }
    }

    /// The lowest free id, now alive.
    fn take(&mut self) -> Entity {
        let i = match self.free.pop_first() {
            Some(i) => i,
            None => {
                let i = u32::try_from(self.gens.len())
                    .ok()
                    .filter(|&i| i < u32::MAX)
                    .expect("runsync-cluster: more than u32::MAX - 1 entity slots");
                self.gens.push(1);
                self.alive.push(false);
                i
            }
        };
        self.alive[i as usize] = true;
        Entity::from_bits((u64::from(self.gens[i as usize]) << 32) | u64::from(i))
            .expect("a free slot's generation is not 0")
    }

    /// Appends the allocator (slot count, then per slot the generation and whether it is
    /// alive, little-endian) to `out`.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.gens.len() as u64).to_le_bytes());
        for (g, a) in self.gens.iter().zip(&self.alive) {
            out.extend_from_slice(&g.to_le_bytes());
            out.push(u8::from(*a));
        }
    }

    /// Reads [`encode`](Self::encode)'s bytes, all of them; `None` if they are not that.
    pub(crate) fn decode(bytes: &[u8]) -> Option<Ids> {
        let (len, rest) = bytes.split_first_chunk::<8>()?;
        let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
        if rest.len() != len.checked_mul(5)? {
            return None;
        }
        let mut ids = Ids::default();
        for (i, slot) in rest.chunks_exact(5).enumerate() {
            let generation = u32::from_le_bytes(slot[..4].try_into().expect("4 bytes"));
            let alive = match slot[4] {
                0 => false,
                1 if generation != 0 => true,
                _ => return None,
            };
            ids.gens.push(generation);
            ids.alive.push(alive);
            if generation != 0 && !alive {
                ids.free.insert(i as u32);
            }
        }
        Some(ids)
    }
}

/// The id of an entity record (its first 8 bytes, as `World::export_entity` writes it).
fn record_id(record: &[u8]) -> Option<Entity> {
    Entity::from_bits(u64::from_le_bytes(*record.first_chunk::<8>()?))
}

/// A malformed agreement record (from a shard of another build).
fn bad(what: &str) -> ClusterError {
    ClusterError::Load(runsync::LoadError::BadData {
        what: format!("an id agreement record: {what}"),
    })
}

/// One world's side of the id agreement after a frame: see the [module](self).
///
/// A spawn is an entity alive after the frame that this world did not put there: per
/// slot it notes the generation of the last entity it put in (at the start, by an
/// import, as an agreed spawn). Not the shared allocator: a slot freed in the cluster
/// may be handed out here by runsync's own allocator (to a spawn) under the id the
/// cluster just agreed for another shard's spawn.
#[derive(Default)]
pub(crate) struct Agreement {
    /// This world's entities alive before the frame that it owns (kept up to date by
    /// the caller between frames; [`collect`](Self::collect) drops the dead).
    pub(crate) owned: Vec<Entity>,
    /// Per slot: the generation of the entity this world last put there (0: none).
    placed: Vec<u32>,
    /// Scratch: spawns to drop.
    dropped: Vec<Entity>,
}

impl Agreement {
    /// An agreement for a world owning `owned` (and holding nothing else).
    pub(crate) fn new(owned: Vec<Entity>) -> Agreement {
        let mut a = Agreement {
            owned: Vec::new(),
            placed: Vec::new(),
            dropped: Vec::new(),
        };
        for &e in &owned {
            a.placed(e);
        }
        a.owned = owned;
        a
    }

    /// Notes that this world put `e` here (imported it): it is not a spawn.
    pub(crate) fn placed(&mut self, e: Entity) {
        let i = e.index() as usize;
        if i >= self.placed.len() {
            self.placed.resize(i + 1, 0);
        }
        self.placed[i] = e.generation();
    }

    /// Whether `e`, alive here, was spawned by the frame.
    fn spawned(&self, e: Entity) -> bool {
        self.placed.get(e.index() as usize) != Some(&e.generation())
    }

    /// After a frame, with the ghosts gone: drops the spawns `keep` refuses (another
    /// shard keeps them) and returns what this world tells every world — `None` if it
    /// has nothing to tell: `sender`, the number of owned entities that died and their
    /// ids, then each kept spawn's record (length, bytes; provisional id). `spawned` and
    /// `despawned`: whether the frame spawned or despawned anything here (a pass over the
    /// world or over the owned entities is skipped when not).
    pub(crate) fn collect(
        &mut self,
        world: &mut World,
        sender: u32,
        (spawned, despawned): (bool, bool),
        keep: impl Fn(&World, Entity) -> bool,
    ) -> Result<Option<Vec<u8>>, ClusterError> {
        let mut deaths = Vec::new();
        if despawned {
            self.owned.retain(|&e| {
                let alive = world.is_alive(e);
                if !alive {
                    deaths.push(e);
                }
                alive
            });
        }
        let mut records = Vec::new();
        let mut kept = 0u32;
        if spawned {
            let mut record = Vec::new();
            for (e, ()) in world.query::<()>() {
                if !self.spawned(e) {
                    continue;
                }
                // A tree goes with its root: a spawned child of an entity this world
                // holds is kept (the ghosts' trees left already).
                let root = crate::partition::root_of(world, e);
                if root != e && self.spawned(root) {
                    // Its record would name its parent by a provisional id, which the
                    // shards do not share: no agreed order.
                    return Err(ClusterError::Frame {
                        shard: sender as usize,
                        message: format!(
                            "{e} was spawned as a child of {root}, spawned in the same frame: \
                             a sharded world cannot agree on the ids of a tree spawned in one \
                             frame (spawn the children the frame after, as the arena arms its \
                             ships)"
                        ),
                    });
                }
                if root == e && !keep(world, e) {
                    if let Some(&held) = world.tree(e).iter().find(|&&m| !self.spawned(m)) {
                        return Err(ClusterError::Frame {
                            shard: sender as usize,
                            message: format!(
                                "{held} became a child of {e}, spawned in this frame in \
                                 another shard's region (a tree crossing regions)"
                            ),
                        });
                    }
                    self.dropped.push(e);
                    continue;
                }
                record.clear();
                world
                    .export_entity(e, &mut record)
                    .map_err(ClusterError::Save)?;
                records.extend_from_slice(&(record.len() as u32).to_le_bytes());
                records.extend_from_slice(&record);
                kept += 1;
            }
            for e in self.dropped.drain(..) {
                world.discard_tree(e);
            }
        }
        if deaths.is_empty() && kept == 0 {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(12 + 8 * deaths.len() + records.len());
        out.extend_from_slice(&sender.to_le_bytes());
        out.extend_from_slice(&(deaths.len() as u32).to_le_bytes());
        for e in &deaths {
            out.extend_from_slice(&e.to_bits().to_le_bytes());
        }
        out.extend_from_slice(&kept.to_le_bytes());
        out.extend_from_slice(&records);
        Ok(Some(out))
    }

    /// Applies every world's [`collect`](Self::collect)ed bytes (in any order) to `ids`
    /// and renumbers this world's kept spawns (`me`: its sender number) to their agreed
    /// ids, which join the owned entities. Returns the number of spawns in all worlds.
    pub(crate) fn apply(
        &mut self,
        ids: &mut Ids,
        world: &mut World,
        me: u32,
        parts: &[&[u8]],
    ) -> Result<usize, ClusterError> {
        // (contents, sender, provisional id)
        let mut spawns: Vec<(&[u8], u32, Entity)> = Vec::new();
        for part in parts {
            let mut src = *part;
            let mut take = |n: usize| -> Result<&[u8], ClusterError> {
                if src.len() < n {
                    return Err(bad("cut short"));
                }
                let (head, rest) = src.split_at(n);
                src = rest;
                Ok(head)
            };
            let word = |b: &[u8]| u32::from_le_bytes(b.try_into().expect("4 bytes"));
            let sender = word(take(4)?);
            let deaths = word(take(4)?) as usize;
            for _ in 0..deaths {
                let bits = u64::from_le_bytes(take(8)?.try_into().expect("8 bytes"));
                ids.die(Entity::from_bits(bits).ok_or_else(|| bad("a zero generation"))?);
            }
            let kept = word(take(4)?);
            for _ in 0..kept {
                let len = word(take(4)?) as usize;
                let record = take(len)?;
                let id = record_id(record).ok_or_else(|| bad("a record without an id"))?;
                spawns.push((&record[8..], sender, id));
            }
            if !src.is_empty() {
                return Err(bad("bytes past its end"));
            }
        }
        // Every world sorts the same list the same way; equal contents are
        // interchangeable, so the tie-break (sender, provisional id) changes no bits.
        spawns.sort_unstable_by(|a, b| (a.0, a.1, a.2.to_bits()).cmp(&(b.0, b.1, b.2.to_bits())));
        let mut moves = Vec::new();
        for &(_, sender, provisional) in &spawns {
            let id = ids.take();
            if sender == me {
                moves.push((provisional, id));
            }
        }
        // All at once (one may take another's provisional slot); parents and children
        // follow.
        world.renumber(&moves);
        for (_, id) in moves {
            self.placed(id);
            self.owned.push(id);
        }
        Ok(spawns.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{self, Hp, Pos, Vel};

    fn agent(w: &mut World, x: f32) -> Entity {
        w.spawn((Pos([x, 0.0]), Vel([0.0; 2]), Hp(1.0)))
    }

    #[test]
    fn deaths_free_their_slots_and_spawns_take_the_lowest() {
        let mut w = World::new();
        model::register(&mut w);
        let es: Vec<Entity> = (0..4).map(|i| agent(&mut w, i as f32)).collect();
        let mut ids = Ids::of(&w);
        assert_eq!(ids.len(), 4);
        assert!(es.iter().all(|&e| ids.is_alive(e)));
        ids.die(es[2]);
        ids.die(es[0]);
        ids.die(es[0]); // dead already: nothing
        assert!(!ids.is_alive(es[0]));
        let a = ids.take();
        assert_eq!((a.index(), a.generation()), (0, es[0].generation() + 1));
        assert_eq!(ids.take().index(), 2);
        let new = ids.take();
        assert_eq!((new.index(), new.generation()), (4, 1));
        assert_eq!(ids.len(), 5);
        let mut bytes = Vec::new();
        ids.encode(&mut bytes);
        assert_eq!(Ids::decode(&bytes), Some(ids.clone()));
        assert_eq!(Ids::decode(&bytes[..bytes.len() - 1]), None);
        // A free slot of the starting world keeps its generation.
        w.despawn(es[1]);
        let fresh = Ids::of(&w);
        assert!(!fresh.is_alive(es[1]));
        assert_eq!(fresh.clone().take(), w.spawn(()));
    }

    /// Two worlds that spawned the same three agents under other ids, in another
    /// order, agree on their ids; the spawn one keeps goes where the other expects it.
    #[test]
    fn spawns_are_renumbered_by_their_contents() {
        let base = || {
            let mut w = World::new();
            model::register(&mut w);
            for i in 0..6 {
                agent(&mut w, i as f32);
            }
            w
        };
        let (mut one, mut other) = (base(), base());
        let ids0 = Ids::of(&one);
        let dead = one.query::<()>().map(|(e, ())| e).nth(1).unwrap();
        // One world: a death and three spawns in one order.
        let mut a = Agreement::new(one.query::<()>().map(|(e, ())| e).collect());
        one.despawn(dead);
        for x in [30.0, 10.0, 20.0] {
            agent(&mut one, x);
        }
        let mut ids_a = ids0.clone();
        let told = a
            .collect(&mut one, 0, (true, true), |_, _| true)
            .unwrap()
            .unwrap();
        let n = a.apply(&mut ids_a, &mut one, 0, &[&told]).unwrap();
        assert_eq!(n, 3);
        assert_eq!(a.owned.len(), 8);
        // The other: the same death, the spawns in another order, split over two
        // "shards" (sender 0 keeps x < 15 here, sender 1 the rest, elsewhere).
        other.despawn(dead);
        for x in [20.0, 30.0, 10.0] {
            agent(&mut other, x);
        }
        let mut ids_b = ids0.clone();
        let mut b = Agreement::new(base().query::<()>().map(|(e, ())| e).collect());
        let mine = b
            .collect(&mut other, 0, (true, false), |w, e| {
                w.get::<Pos>(e).unwrap().0[0] < 15.0
            })
            .unwrap()
            .unwrap();
        assert_eq!(other.len(), 6, "two spawns dropped, one kept");
        let theirs = {
            let mut w = base();
            let mut c = Agreement::new(w.query::<()>().map(|(e, ())| e).collect());
            for x in [30.0, 20.0] {
                agent(&mut w, x);
            }
            w.despawn(dead);
            c.collect(&mut w, 1, (true, true), |w, e| {
                w.get::<Pos>(e).unwrap().0[0] >= 15.0
            })
            .unwrap()
            .unwrap()
        };
        assert_eq!(
            b.apply(&mut ids_b, &mut other, 0, &[&theirs, &mine])
                .unwrap(),
            3
        );
        assert_eq!(ids_a, ids_b, "the same allocator");
        // The spawn kept at x = 10 has the same id in both worlds.
        let at = |w: &World, x: f32| {
            w.query::<(&Pos,)>()
                .find(|(_, (p,))| p.0[0] == x)
                .map(|(e, _)| e)
        };
        assert_eq!(at(&one, 10.0), at(&other, 10.0));
        assert!(at(&other, 10.0).is_some_and(|e| ids_b.is_alive(e)));
        // Ordered by contents: x = 10 took the dead one's slot (the lowest free).
        assert_eq!(at(&one, 10.0).unwrap().index(), dead.index());
    }

    #[test]
    fn nothing_to_tell_sends_nothing() {
        let mut w = model::world_of(10);
        let ids = Ids::of(&w);
        let mut a = Agreement::new(w.query::<()>().map(|(e, ())| e).collect());
        assert!(
            a.collect(&mut w, 0, (true, true), |_, _| true)
                .unwrap()
                .is_none()
        );
        let mut ids2 = ids.clone();
        assert_eq!(a.apply(&mut ids2, &mut w, 0, &[]).unwrap(), 0);
        assert_eq!(ids2, ids);
        assert!(matches!(
            a.apply(&mut ids2, &mut w, 0, &[&[1, 0, 0]]),
            Err(ClusterError::Load(_))
        ));
    }
}
