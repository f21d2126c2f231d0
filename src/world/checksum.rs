//! Checksums and desync reports of a [`World`]: [`World::checksum`] digests the state in
//! a fixed, documented way; [`World::first_difference`] says where two worlds part.

use std::any::TypeId;
use std::fmt;

use super::World;
use crate::checksum::{Checksum, Checksummer, Desync, Version};
use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::resource::ResourceSum;
use crate::storage::snapshot::{Inline, Pieces};

impl World {
    /// Opts component type `C` into [`checksum`](Self::checksum) (its values count, in
    /// the world's order) and [`first_difference`](Self::first_difference) (which prints
    /// differing values with `Debug`). Returns `self` to chain.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy, Debug)] struct Pos(f32);
    /// # impl Component for Pos { type Output = Pos; }
    /// # impl runsync::Checksum for Pos {
    /// #     fn checksum(&self, h: &mut runsync::Checksummer) { self.0.checksum(h) }
    /// # }
    /// let mut world = World::new();
    /// world.register::<Pos>(merge::last);
    /// world.checksumming::<Pos>();
    /// let e = world.spawn((Pos(1.0),));
    /// let before = world.checksum();
    /// world.get_mut::<Pos>(e).unwrap().0 = 2.0;
    /// assert_ne!(world.checksum(), before);
    /// ```
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn checksumming<C: Component + Checksum + fmt::Debug>(&mut self) -> &mut Self {
        let id = self.storage.registry().id::<C>();
        self.storage.typed_mut::<C>(id).enable_checksum();
        self
    }

    /// Opts resource type `R` into [`checksum`](Self::checksum) (after the entities,
    /// in opt-in order; an absent resource counts as absent) and
    /// [`first_difference`](Self::first_difference). Returns `self` to chain; opting in
    /// twice is a no-op.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// #[derive(Debug)]
    /// struct Seed(u64);
    /// impl runsync::Checksum for Seed {
    ///     fn checksum(&self, h: &mut runsync::Checksummer) { self.0.checksum(h) }
    /// }
    /// let mut world = World::new();
    /// world.checksumming_resource::<Seed>();
    /// world.insert_resource(Seed(1));
    /// let before = world.checksum();
    /// world.insert_resource(Seed(2));
    /// assert_ne!(world.checksum(), before);
    /// ```
    pub fn checksumming_resource<R: Checksum + fmt::Debug + Send + Sync + 'static>(
        &mut self,
    ) -> &mut Self {
        let type_id = TypeId::of::<R>();
        if !self.resource_sums.iter().any(|h| h.type_id == type_id) {
            self.resource_sums.push(ResourceSum::of::<R>());
        }
        self
    }

    /// The registered types whose values do not count in [`checksum`](Self::checksum):
    /// every component type not opted in with [`checksumming`](Self::checksumming) (by
    /// registration order), then every resource systems write
    /// ([`register_resource`](Self::register_resource)) not opted in with
    /// [`checksumming_resource`](Self::checksumming_resource). A difference in their
    /// values goes unseen by a checksum (a component type still counts through which
    /// entities have it), so a lockstep or replay check should start with
    /// `assert!(world.unchecksummed().is_empty())` — or accept each name it lists.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// #[derive(Component, Checksum, Clone, Copy, Debug)]
    /// #[component(merge = merge::last, checksum)]
    /// struct Pos(f32);
    /// #[derive(Component, Clone, Copy, Debug)]
    /// #[component(merge = merge::last)]
    /// struct Cooldown(u32);
    ///
    /// let mut world = World::new();
    /// world.register_default::<Pos>(); // opted in by its `checksum` flag
    /// world.register_default::<Cooldown>();
    /// assert_eq!(world.unchecksummed(), [std::any::type_name::<Cooldown>()]);
    /// ```
    ///
    /// Cost: a walk over the registered types; for setup checks and tools.
    pub fn unchecksummed(&self) -> Vec<&'static str> {
        let s = &self.storage;
        let components = (0..s.registry().len())
            .map(|i| ComponentId(i as u32))
            .filter(|&id| !s.columns(id).is_checksummed())
            .map(|id| s.type_name(id));
        let resources = self
            .resource_folds
            .iter()
            .filter(|f| !self.resource_sums.iter().any(|r| r.type_id == f.type_id()))
            .map(|f| f.type_name());
        components.chain(resources).collect()
    }

    /// A stable 64-bit digest of the world's state: the entity allocator (live entities,
    /// every slot's generation, the free list), then each non-empty table in creation
    /// order ([canonical order](Self::set_canonical_order) when that is on) with its
    /// component type ids and entities, then, for each type opted in with
    /// [`checksumming`](Self::checksumming), its values in row order; last, the resources
    /// opted in with [`checksumming_resource`](Self::checksumming_resource), in opt-in
    /// order, and the message types opted in. Types not opted in count only through which
    /// entities have them; other resources do not count. Change marks
    /// ([`Changed`](crate::Changed)) do not count either: the checksum is of component
    /// state, so a world loaded by spawning (all marked added) and the same world after a
    /// frame (marks cleared) agree. A difference in marks alone (one run wrote a value
    /// equal to the old one, the other did not) shows only once it changes a value.
    ///
    /// The hash is built from [`Checksummer`] (fixed, documented), so the digest is the
    /// same for the same state at any worker count, with or without `single-threaded`,
    /// and across runs and builds. Equal worlds have equal checksums; worlds that differ
    /// in one value of a checksummed type almost surely do not — use
    /// [`first_difference`](Self::first_difference) to find where.
    ///
    /// How (digest version 3): the state is cut into parts — the layout (allocator and
    /// tables), each checksummed type, each resource, each message type: exactly the
    /// [`checksum_parts`](Self::checksum_parts) — and the checksum is a [`Checksummer`]
    /// over the version (3), then each part's digest in that order. The big parts are
    /// cut again into blocks of 4096 rows (slots, a table's entities, a column's values),
    /// each digested on four independent [`Checksummer`] chains (row `i` into chain
    /// `i % 4`; the block's digest mixes its row count and the four results), so that a
    /// core overlaps the chains' multiplies and blocks can go to different workers
    /// ([`Runtime::checksum`](crate::Runtime::checksum) does). A [`Checksummer`] makes
    /// two 32-bit writes in a row one word, so a value of two `f32`s costs one multiply.
    /// Version 2 ([`checksum_v2`](Self::checksum_v2)) took every such write as a word of
    /// its own; version 1 ([`checksum_v1`](Self::checksum_v1)) was one chain over every
    /// word.
    ///
    /// Cost: one pass over the slots and every checksummed value, about half a
    /// nanosecond per 64-bit word on one core for plain fields.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// let mut a = World::new();
    /// let mut b = World::new();
    /// a.spawn(());
    /// b.spawn(());
    /// assert_eq!(a.checksum(), b.checksum());
    /// b.spawn(());
    /// assert_ne!(a.checksum(), b.checksum());
    /// ```
    pub fn checksum(&self) -> u64 {
        self.digest_with(Version::CURRENT, &mut Inline(Version::CURRENT))
    }

    /// [`checksum`](Self::checksum) with the storage's blocks digested by `pieces` (on
    /// the calling thread, or beforehand on a pool: see `Runtime::checksum`).
    pub(crate) fn digest_with(&self, v: Version, pieces: &mut impl Pieces) -> u64 {
        let mut h = v.checksummer();
        h.write_u64(v.number());
        self.storage
            .digest_walk(v, pieces, |_, digest| h.write_u64(digest));
        self.value_parts(v, |_, digest| h.write_u64(digest));
        h.finish()
    }

    /// The parts after the storage's, in order: each resource opted in with
    /// [`checksumming_resource`](Self::checksumming_resource), then each message type
    /// opted in, each digested on its own.
    fn value_parts(&self, v: Version, mut part: impl FnMut(&'static str, u64)) {
        for r in &self.resource_sums {
            let mut h = v.checksummer();
            (r.sum)(&self.resources, &mut h);
            part(r.name, h.finish());
        }
        for inbox in self.messages.inboxes() {
            let mut h = v.checksummer();
            if inbox.checksum(&mut h) {
                part(inbox.name(), h.finish());
            }
        }
    }

    /// The world's checksum as runsync computed it before digest version 2 (one
    /// multiply chain over every word, in the order [`checksum`](Self::checksum)
    /// documents; several times slower): what replays recorded with it hold, and what
    /// [`Runtime::play_replay`](crate::Runtime::play_replay) compares them with. A new
    /// recording never needs it.
    pub fn checksum_v1(&self) -> u64 {
        let mut h = Checksummer::unpacked();
        self.storage.checksum_v1(&mut h);
        for r in &self.resource_sums {
            (r.sum)(&self.resources, &mut h);
        }
        for inbox in self.messages.inboxes() {
            inbox.checksum(&mut h);
        }
        h.finish()
    }

    /// The world's checksum as runsync computed it with digest version 2, before two
    /// 32-bit writes in a row were packed into one word (the same walk and blocks as
    /// [`checksum`](Self::checksum), a word per `f32`, integer of 32 bits or less, `bool`
    /// or `char`): what replays recorded with it hold, and what
    /// [`Runtime::play_replay`](crate::Runtime::play_replay) compares them with. A new
    /// recording never needs it.
    pub fn checksum_v2(&self) -> u64 {
        self.digest_with(Version::V2, &mut Inline(Version::V2))
    }

    /// [`checksum`](Self::checksum) split into parts, each `(name, digest)`: `"entities"`
    /// (the allocator and which entities each table holds), then each component type
    /// opted in with [`checksumming`](Self::checksumming) (its values, in the world's
    /// order), each resource opted in with
    /// [`checksumming_resource`](Self::checksumming_resource), each message type opted in
    /// with [`checksumming_message`](Self::checksumming_message), by their type names.
    /// Two worlds of the same game whose `"entities"` parts agree differ exactly in the
    /// values of the parts that differ: a peer that knows another's parts knows which
    /// types a desync is in without the other's state (what `runsync-net` sends with
    /// its checksums).
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// #[derive(Component, Checksum, Clone, Copy, Debug)]
    /// #[component(merge = merge::last, checksum)]
    /// struct Hp(i32);
    /// #[derive(Component, Checksum, Clone, Copy, Debug)]
    /// #[component(merge = merge::last, checksum)]
    /// struct Ammo(u8);
    /// let make = || {
    ///     let mut w = World::new();
    ///     w.register_default::<Hp>();
    ///     w.register_default::<Ammo>();
    ///     w.spawn((Hp(3), Ammo(9)));
    ///     w
    /// };
    /// let (a, mut b) = (make(), make());
    /// let e = b.query::<(&Hp,)>().next().unwrap().0;
    /// b.get_mut::<Hp>(e).unwrap().0 = 4;
    /// let differ: Vec<&str> = a.checksum_parts().iter().zip(b.checksum_parts())
    ///     .filter(|(x, y)| x.1 != y.1)
    ///     .map(|(x, _)| x.0)
    ///     .collect();
    /// assert_eq!(differ, [std::any::type_name::<Hp>()]);
    /// ```
    ///
    /// Cost: one pass like [`checksum`](Self::checksum)'s.
    pub fn checksum_parts(&self) -> Vec<(&'static str, u64)> {
        self.parts_with(&mut Inline(Version::CURRENT))
    }

    /// The checksum that `parts` make, as [`checksum_parts`](Self::checksum_parts) lists
    /// them: `World::checksum_of_parts(&w.checksum_parts()) == w.checksum()`, so a caller
    /// that needs both digests the world once.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// let mut w = World::new();
    /// w.spawn(());
    /// assert_eq!(World::checksum_of_parts(&w.checksum_parts()), w.checksum());
    /// ```
    pub fn checksum_of_parts(parts: &[(&'static str, u64)]) -> u64 {
        let mut h = Version::CURRENT.checksummer();
        h.write_u64(Version::CURRENT.number());
        for &(_, digest) in parts {
            h.write_u64(digest);
        }
        h.finish()
    }

    /// [`checksum_parts`](Self::checksum_parts) with the storage's blocks digested by
    /// `pieces` (see [`digest_with`](Self::digest_with)).
    pub(crate) fn parts_with(&self, pieces: &mut impl Pieces) -> Vec<(&'static str, u64)> {
        let mut parts = Vec::new();
        let v = Version::CURRENT;
        self.storage.digest_walk(v, pieces, |c, digest| {
            parts.push((c.map_or("entities", |c| self.storage.type_name(c)), digest));
        });
        self.value_parts(v, |name, digest| parts.push((name, digest)));
        parts
    }

    /// Up to `limit` places where this world and `other` differ, in the order
    /// [`first_difference`](Self::first_difference) looks (its first is this list's
    /// first): entities alive on one side only, components present on one side only,
    /// every checksummed value that differs (both `Debug`-printed), then the allocator,
    /// the resources and the messages opted into checksums. Empty if they hold the same
    /// state. The diff of two saves: load each into a world of the game
    /// ([`World::load`], or [`Runtime::load`](crate::Runtime::load)) and compare.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// #[derive(Component, Checksum, Clone, Copy, Debug)]
    /// #[component(merge = merge::last, checksum)]
    /// struct Hp(i32);
    /// let make = || {
    ///     let mut w = World::new();
    ///     w.register_default::<Hp>();
    ///     w.spawn_batch((0..5).map(|i| (Hp(i),)));
    ///     w
    /// };
    /// let (a, mut b) = (make(), make());
    /// for (_, (hp,)) in b.query_mut::<(&mut Hp,)>().filter(|(_, (hp,))| hp.0 % 2 == 1) {
    ///     hp.0 = -1;
    /// }
    /// let d = a.differences(&b, 10);
    /// assert_eq!(d.len(), 2);
    /// assert_eq!(d[1].values(), Some(("Hp(3)", "Hp(-1)")));
    /// assert_eq!(a.differences(&b, 1), [a.first_difference(&b).unwrap()]);
    /// ```
    ///
    /// Cost: as [`first_difference`](Self::first_difference), up to the `limit`-th.
    pub fn differences(&self, other: &World, limit: usize) -> Vec<Desync> {
        if limit == 0 {
            return Vec::new();
        }
        if let Some(d) = self.registry_difference(other) {
            return vec![d];
        }
        let mut found = self.storage.differences(&other.storage, limit);
        if found.len() < limit {
            found.extend(self.resources_difference(other));
        }
        if found.len() < limit {
            found.extend(self.messages_difference(other));
        }
        found.truncate(limit);
        found
    }

    /// A stable 64-bit digest of one entity: its id, then for each of its component types
    /// (by id) the type's id and, for a type opted in with
    /// [`checksumming`](Self::checksumming), the value. `None` if `e` is dead.
    ///
    /// It depends on that entity alone, not on where it is stored: a world split into
    /// parts (shards) sums its entities' digests into one that does not depend on how it
    /// was split (a wrapping sum, which is what `runsync-cluster` compares).
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Debug, Clone, Copy, PartialEq, runsync::Checksum)] struct Hp(u32);
    /// # impl Component for Hp { type Output = Hp; }
    /// let mut world = World::new();
    /// world.register::<Hp>(merge::last);
    /// world.checksumming::<Hp>();
    /// let e = world.spawn((Hp(3),));
    /// let before = world.entity_checksum(e).unwrap();
    /// world.get_mut::<Hp>(e).unwrap().0 = 4;
    /// assert_ne!(world.entity_checksum(e), Some(before));
    /// world.despawn(e);
    /// assert_eq!(world.entity_checksum(e), None);
    /// ```
    pub fn entity_checksum(&self, e: Entity) -> Option<u64> {
        self.storage.entity_checksum(e)
    }

    /// Where this world and `other`, which should be equal, first differ, or `None` if
    /// they hold the same state: an entity alive on one side only, a component present on
    /// one side only, or a checksummed component's differing values (both printed). Then
    /// the entity allocator, then storage order, then the resources opted in on this
    /// side with [`checksumming_resource`](Self::checksumming_resource). Entities are visited in this world's
    /// order (tables in creation order, rows in order), so the first difference found is
    /// deterministic. Last, the delivered messages of the types opted in with
    /// [`checksumming_message`](Self::checksumming_message).
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy, Debug, PartialEq)] struct Hp(i32);
    /// # impl Component for Hp { type Output = i32; }
    /// # impl runsync::Checksum for Hp {
    /// #     fn checksum(&self, h: &mut runsync::Checksummer) { self.0.checksum(h) }
    /// # }
    /// let make = || {
    ///     let mut w = World::new();
    ///     w.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    ///     w.snapshotting::<Hp>().checksumming::<Hp>();
    ///     w.spawn((Hp(1),));
    ///     w
    /// };
    /// let (a, mut b) = (make(), make());
    /// assert!(a.first_difference(&b).is_none());
    /// let e = b.query::<(&Hp,)>().next().unwrap().0;
    /// b.get_mut::<Hp>(e).unwrap().0 = 7;
    /// let d = a.first_difference(&b).unwrap();
    /// assert_eq!(d.entity(), Some(e));
    /// assert_eq!(d.values(), Some(("Hp(1)", "Hp(7)")));
    /// ```
    ///
    /// Cost: a lookup and a checksum per value of each side; for diagnostics.
    pub fn first_difference(&self, other: &World) -> Option<Desync> {
        if let Some(d) = self.registry_difference(other) {
            return Some(d);
        }
        if let Some(d) = self.storage.first_difference(&other.storage) {
            return Some(d);
        }
        self.resources_difference(other)
            .or_else(|| self.messages_difference(other))
    }

    /// A difference in the registered component types, which makes the rest moot.
    fn registry_difference(&self, other: &World) -> Option<Desync> {
        let (a, b) = (&self.storage.registry(), &other.storage.registry());
        let types = |r: &crate::component::Registry| {
            (0..r.len())
                .map(|i| r.info(ComponentId(i as u32)).type_id)
                .collect::<Vec<_>>()
        };
        (types(a) != types(b)).then(|| Desync {
            entity: None,
            component: None,
            left: None,
            right: None,
            what: format!(
                "the worlds register different component types ({} vs {})",
                a.len(),
                b.len()
            ),
        })
    }

    /// The first resource opted into checksums (on this side) whose values differ.
    fn resources_difference(&self, other: &World) -> Option<Desync> {
        self.resource_sums.iter().find_map(|r| {
            let sum = |w: &World| {
                let mut h = Checksummer::new();
                (r.sum)(&w.resources, &mut h);
                h.finish()
            };
            if sum(self) == sum(other) {
                return None;
            }
            let show = |w: &World| (r.show)(&w.resources).unwrap_or_else(|| "absent".into());
            let (left, right) = (show(self), show(other));
            Some(Desync {
                entity: None,
                component: None,
                what: format!("resource `{}`: {left} vs {right}", r.name),
                left: Some(left),
                right: Some(right),
            })
        })
    }

    /// The first message type opted into checksums whose delivered messages differ.
    fn messages_difference(&self, other: &World) -> Option<Desync> {
        let theirs = other.messages.inboxes();
        self.messages
            .inboxes()
            .iter()
            .enumerate()
            .find_map(|(i, mine)| {
                let sum = |inbox: &dyn crate::message::AnyInbox| {
                    let mut h = Checksummer::new();
                    inbox.checksum(&mut h).then(|| h.finish())
                };
                let other = theirs
                    .get(i)
                    .filter(|t| t.type_id_of() == mine.type_id_of());
                let (left, right) = match other {
                    Some(t) if sum(&**mine)? == sum(&**t)? => return None,
                    Some(t) => (mine.show()?, t.show()?),
                    None => (mine.show()?, "not registered".to_string()),
                };
                Some(Desync {
                    entity: None,
                    component: None,
                    what: format!("messages `{}`: {left} vs {right}", mine.name()),
                    left: Some(left),
                    right: Some(right),
                })
            })
    }
}
