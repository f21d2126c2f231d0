//! Messages: typed values that systems send each other ([`Output::send`]) and each read
//! once, the next time they run ([`World::messages`]). What users rely on is documented on
//! [`World::register_message`]; this module is the machinery.
//!
//! Two buffers per message type, the double buffering of the frame itself:
//!
//! - **sent**: each system's [`MsgBuf`] (in its `SystemOutputs`, beside its component
//!   outputs), written during Run by that system alone — a `Vec::push`, no lock;
//! - **delivered**: the world's [`Inbox`], read by every system during Run through
//!   `&World`.
//!
//! Sync's last step ([`Inbox::deliver`]) drops the delivered messages and moves every
//! system's sent ones in, in system registration order then emission order (the first
//! sender's vector is swapped in, the others appended), so capacity circulates between
//! the two sides and a steady frame allocates nothing. Messages addressed to an entity
//! are kept in send order beside an index sorted by (entity, send order), so that
//! [`World::messages_for`] is a binary search.
//!
//! With several stages, a system runs once every `S` stage-Syncs, so the delivered
//! messages are what the last `S` Syncs delivered: the inbox keeps them as one vector of
//! per-Sync deliveries, oldest first, each tagged with its stage. A stage's Sync
//! ([`AnyInbox::expire`]) drains its own stage's previous delivery (wherever it lies:
//! the front, unless a stage failed or was added), then appends its new one behind the
//! others, so [`World::messages`] stays one slice. With one stage there are no deliveries
//! and the path above is unchanged.
//!
//! This module knows entities, not the world: liveness comes in as a closure.
//!
//! [`Output::send`]: crate::Output::send
//! [`World::messages`]: crate::World::messages
//! [`World::register_message`]: crate::World::register_message
//! [`World::messages_for`]: crate::World::messages_for

use std::any::{Any, TypeId, type_name};
use std::fmt;

use crate::checksum::{Checksum, Checksummer};
use crate::component::TypeIdMap;
use crate::entity::Entity;
use crate::erased::{Buffer, Erased};

/// What a message type needs: `Send + Sync + 'static` (a blanket trait: every such type
/// is a message once [registered](crate::World::register_message)).
pub trait Message: Send + Sync + 'static {}
impl<T: Send + Sync + 'static> Message for T {}

/// One system's sent messages of one type, in emission order.
pub(crate) struct MsgBuf<M> {
    pub(crate) broadcast: Vec<M>,
    pub(crate) addressed: Vec<(Entity, M)>,
}

impl<M> Default for MsgBuf<M> {
    fn default() -> Self {
        MsgBuf {
            broadcast: Vec::new(),
            addressed: Vec::new(),
        }
    }
}

/// What the output lists do with a system's sent messages without naming their type.
impl<M: Message> Buffer for MsgBuf<M> {
    /// Messages sent (broadcast and addressed).
    fn len(&self) -> usize {
        self.broadcast.len() + self.addressed.len()
    }
    fn clear(&mut self) {
        self.broadcast.clear();
        self.addressed.clear();
    }
    fn append(&mut self, other: &mut Self) {
        self.broadcast.append(&mut other.broadcast);
        self.addressed.append(&mut other.addressed);
    }
    fn capacity_bytes(&self) -> usize {
        self.broadcast.capacity() * size_of::<M>()
            + self.addressed.capacity() * size_of::<(Entity, M)>()
    }
}

/// The sort key of the addressed message at position `i`, to `e`: the slot index high,
/// the position low (one `u64`, so the index sorts as plain integers).
#[inline]
fn key(e: Entity, i: usize) -> u64 {
    (u64::from(e.index()) << 32) | i as u64
}

/// Sorts `keys`, made in position order (their low halves ascending), by their high
/// halves: a stable LSD radix sort over the bytes of the high half that vary (two passes
/// for slot indices below 65,536), using `scratch` as the second buffer. No allocation
/// once `scratch` has grown to `keys`' length; keys already in order cost one pass.
fn sort_by_index(keys: &mut Vec<u64>, scratch: &mut Vec<u64>) {
    if keys.is_sorted() {
        return;
    }
    let max = keys.iter().map(|k| k >> 32).max().unwrap_or(0);
    let bytes = (u64::BITS - max.leading_zeros()).div_ceil(8);
    for byte in 0..bytes {
        let shift = 32 + 8 * byte;
        let digit = |k: u64| ((k >> shift) & 0xff) as usize;
        let mut starts = [0usize; 256];
        for &k in keys.iter() {
            starts[digit(k)] += 1;
        }
        if starts.contains(&keys.len()) {
            continue; // one digit for all: nothing to move
        }
        let mut sum = 0;
        for s in &mut starts {
            (*s, sum) = (sum, sum + *s);
        }
        scratch.clear();
        scratch.resize(keys.len(), 0);
        for &k in keys.iter() {
            let d = digit(k);
            scratch[starts[d]] = k;
            starts[d] += 1;
        }
        std::mem::swap(keys, scratch);
    }
    debug_assert!(keys.is_sorted());
}

/// A copy of one type's delivered messages, in a snapshot.
pub(crate) type SavedMessages = Box<dyn Any + Send + Sync>;

/// What one [`deliver`](AnyInbox::deliver) call did.
#[derive(Default, Clone, Copy, Debug)]
pub(crate) struct DeliverReport {
    /// Messages now readable.
    pub(crate) delivered: u64,
    /// Addressed messages whose entity was dead once the frame's commands were applied.
    pub(crate) dropped: u64,
}

/// Copies one inbox's messages into another (`clone_from`).
type CopyFn<M> = fn(&Inbox<M>, &mut Inbox<M>);
/// Adds an inbox's messages to a checksum.
type SumFn<M> = fn(&Inbox<M>, &mut Checksummer);
/// An inbox's messages as `Debug` text.
type ShowFn<M> = fn(&Inbox<M>) -> String;
/// Appends an inbox's messages to a save file (postcard), or says why it cannot.
type EncodeFn<M> = fn(&Inbox<M>, &mut Vec<u8>) -> Result<(), String>;
/// Decodes a save file's messages of one type (all of `bytes`).
type DecodeFn<M> = fn(&[u8]) -> Result<(Vec<M>, Vec<(Entity, M)>), String>;

/// With several stages, the messages one stage's Sync delivered: the next so many of the
/// broadcast and addressed ones (an inbox keeps them in delivery order, oldest first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Delivery {
    pub(crate) stage: u32,
    pub(crate) broadcast: usize,
    pub(crate) addressed: usize,
}

/// An inbox's deliveries as a runtime save holds them (format version 5): the stage
/// count they were made with (at least 2) and the deliveries, oldest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Deliveries {
    pub(crate) stages: u32,
    pub(crate) deliveries: Vec<Delivery>,
}

/// The delivered messages of one type: what systems read during Run.
pub(crate) struct Inbox<M> {
    broadcast: Vec<M>,
    /// In send order.
    addressed: Vec<(Entity, M)>,
    /// [`key`]s of `addressed`, sorted: by entity slot index, then send order.
    order: Vec<u64>,
    /// The other buffer of the radix sort of `order` (capacity only).
    scratch: Vec<u64>,
    /// With several stages: which stage's Sync delivered which messages, oldest first
    /// (empty with one stage). Messages past the last delivery were sent between frames
    /// (or loaded): the next Sync counts them as the previous stage's.
    deliveries: Vec<Delivery>,
    /// The stage count `deliveries` were made with (0 or 1: none). A Sync of another
    /// count forgets which stage delivered what (see [`AnyInbox::expire`]).
    stages: u32,
    /// Set by `World::snapshotting_message` (`M: Clone`).
    copy: Option<CopyFn<M>>,
    /// Set by `World::checksumming_message` (`M: Checksum + Debug`): the checksum, and
    /// the messages as `Debug` text.
    sum: Option<(SumFn<M>, ShowFn<M>)>,
    /// Set by `World::saving_message` (`M: Serialize + DeserializeOwned`).
    serde: Option<(EncodeFn<M>, DecodeFn<M>)>,
}

impl<M: Message> Inbox<M> {
    fn new() -> Self {
        Inbox {
            broadcast: Vec::new(),
            addressed: Vec::new(),
            order: Vec::new(),
            scratch: Vec::new(),
            deliveries: Vec::new(),
            stages: 0,
            copy: None,
            sum: None,
            serde: None,
        }
    }

    /// The broadcast messages, in system then emission order.
    #[inline]
    pub(crate) fn broadcast(&self) -> &[M] {
        &self.broadcast
    }

    /// The addressed messages, in system then emission order.
    #[inline]
    pub(crate) fn addressed(&self) -> &[(Entity, M)] {
        &self.addressed
    }

    /// The messages addressed to `e`, in send order.
    pub(crate) fn addressed_to(&self, e: Entity) -> impl DoubleEndedIterator<Item = &M> + Clone {
        let index = u64::from(e.index());
        let start = self.order.partition_point(|&k| k >> 32 < index);
        let end = start + self.order[start..].partition_point(|&k| k >> 32 == index);
        // The same slot index may name a dead entity (sent between frames, or despawned
        // since): the whole handle decides.
        self.order[start..end].iter().filter_map(move |&k| {
            let (to, m) = &self.addressed[k as u32 as usize];
            (*to == e).then_some(m)
        })
    }

    /// Messages sent between frames: after those delivered, visible to the next Run.
    pub(crate) fn push(&mut self, to: Option<Entity>, m: M) {
        match to {
            None => self.broadcast.push(m),
            Some(e) => {
                self.addressed.push((e, m));
                self.order.push(key(e, self.addressed.len() - 1));
                self.order.sort_unstable();
            }
        }
    }

    /// Indexes the addressed messages: their keys, sorted.
    fn sort_order(&mut self) {
        self.order.clear();
        self.order.extend(
            self.addressed
                .iter()
                .enumerate()
                .map(|(i, (e, _))| key(*e, i)),
        );
        sort_by_index(&mut self.order, &mut self.scratch);
    }

    pub(crate) fn enable_copy(&mut self)
    where
        M: Clone,
    {
        self.copy = Some(|from, to| {
            to.broadcast.clone_from(&from.broadcast);
            to.addressed.clone_from(&from.addressed);
            to.order.clone_from(&from.order);
            to.deliveries.clone_from(&from.deliveries);
            to.stages = from.stages;
        });
    }

    pub(crate) fn enable_serde(&mut self)
    where
        M: serde::Serialize + serde::de::DeserializeOwned,
    {
        self.serde = Some((
            |inbox, out| {
                let both = (&inbox.broadcast[..], &inbox.addressed[..]);
                crate::savefile::encode_values(std::slice::from_ref(&both), out)
            },
            |bytes| {
                let mut v = Vec::with_capacity(1);
                crate::savefile::decode_values(bytes, 1, &mut v)?;
                Ok(v.pop().expect("one value decoded"))
            },
        ));
    }

    pub(crate) fn enable_sum(&mut self)
    where
        M: Checksum + fmt::Debug,
    {
        self.sum = Some((
            |inbox, h| {
                h.write_u64(inbox.broadcast.len() as u64);
                for m in &inbox.broadcast {
                    m.checksum(h);
                }
                h.write_u64(inbox.addressed.len() as u64);
                for (e, m) in &inbox.addressed {
                    e.checksum(h);
                    m.checksum(h);
                }
            },
            |inbox| format!("{:?} and addressed {:?}", inbox.broadcast, inbox.addressed),
        ));
    }
}

/// The type-erased face of an [`Inbox`].
pub(crate) trait AnyInbox: Any + Send + Sync {
    fn name(&self) -> &'static str;
    fn type_id_of(&self) -> TypeId;
    /// The start of stage `stage`'s delivery (of `stages` a frame): drops the messages
    /// that stage's previous Sync delivered — every delivered message, with one stage
    /// (a `Drop` may panic: the caller catches it).
    fn expire(&mut self, stage: usize, stages: usize);
    /// Moves `sources`' messages in (one buffer per system, in system order; emptied),
    /// behind whatever is delivered (nothing with one stage, after
    /// [`expire`](Self::expire)); with several stages, they are stage `stage`'s
    /// delivery. Addressed messages to entities `alive` says are dead are dropped and
    /// counted.
    fn deliver(
        &mut self,
        sources: &mut dyn Iterator<Item = &mut Erased>,
        alive: &dyn Fn(Entity) -> bool,
        stage: Option<u32>,
    ) -> DeliverReport;
    fn len(&self) -> usize;
    fn capacity_bytes(&self) -> usize;
    /// Whether snapshots may copy it (`World::snapshotting_message`).
    fn snapshotting(&self) -> bool;
    /// Whether the type is opted into save files.
    fn saving(&self) -> bool;
    /// Appends the delivered messages to a save file's bytes.
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), String>;
    /// Decodes a save file's messages of this type, to [`install`](Self::install) later;
    /// with how many are broadcast and how many addressed.
    fn decode(&self, bytes: &[u8]) -> Result<(Box<dyn Any + Send + Sync>, usize, usize), String>;
    /// Makes decoded messages the delivered ones; with `deliveries` (a version-5 runtime
    /// save), which stage's Sync delivered which; without, they count as sent between
    /// frames.
    fn install(&mut self, decoded: Box<dyn Any + Send + Sync>, deliveries: Option<Deliveries>);
    /// With several stages: which stage's Sync delivered which messages, for a save.
    fn deliveries(&self) -> Option<Deliveries>;
    /// An empty inbox of the same type, with the same opt-ins.
    fn empty_like(&self) -> Box<dyn AnyInbox>;
    /// Copies the delivered messages into `into` (reusing it). Only if `snapshotting`.
    fn save(&self, into: &mut Option<SavedMessages>);
    /// Puts a copy made by `save` back. Only if `snapshotting`.
    fn load(&mut self, from: &SavedMessages);
    /// Adds the delivered messages to `h`; `false` (nothing added) if not opted in.
    fn checksum(&self, h: &mut Checksummer) -> bool;
    /// The delivered messages as `Debug` text, if opted into checksums.
    fn show(&self) -> Option<String>;
}

impl<M: Message> AnyInbox for Inbox<M> {
    fn name(&self) -> &'static str {
        type_name::<M>()
    }
    fn type_id_of(&self) -> TypeId {
        TypeId::of::<M>()
    }
    fn expire(&mut self, stage: usize, stages: usize) {
        if stages <= 1 {
            self.deliveries.clear();
            self.stages = 0;
            self.order.clear();
            self.broadcast.clear();
            self.addressed.clear();
            return;
        }
        // Deliveries of another stage count than now (the count changed, or a save of
        // another runtime was loaded): all one, the previous stage's.
        if self.stages as usize != stages {
            self.deliveries.clear();
            self.stages = stages as u32;
        }
        // Messages no delivery holds (sent between frames, loaded, or delivered with one
        // stage): made after the previous stage's Sync, so they are its.
        let (b, a) = self
            .deliveries
            .iter()
            .fold((0, 0), |(b, a), g| (b + g.broadcast, a + g.addressed));
        if b < self.broadcast.len() || a < self.addressed.len() {
            self.deliveries.push(Delivery {
                stage: ((stage + stages - 1) % stages) as u32,
                broadcast: self.broadcast.len() - b,
                addressed: self.addressed.len() - a,
            });
        }
        let (mut b, mut a, mut i) = (0, 0, 0);
        let mut reindex = false;
        while let Some(&g) = self.deliveries.get(i) {
            if g.stage as usize != stage {
                (b, a, i) = (b + g.broadcast, a + g.addressed, i + 1);
                continue;
            }
            self.deliveries.remove(i);
            if g.addressed > 0 {
                self.order.clear();
                reindex = true;
                self.addressed.drain(a..a + g.addressed);
            }
            self.broadcast.drain(b..b + g.broadcast);
        }
        if reindex {
            self.sort_order();
        }
    }
    fn deliver(
        &mut self,
        sources: &mut dyn Iterator<Item = &mut Erased>,
        alive: &dyn Fn(Entity) -> bool,
        stage: Option<u32>,
    ) -> DeliverReport {
        let mut counts = DeliverReport::default();
        let before = self.addressed.len();
        let before_broadcast = self.broadcast.len();
        for buf in sources {
            let buf = buf.typed_mut::<MsgBuf<M>>();
            // The first sender's vector is swapped in (its capacity comes back to it
            // with the next swap): no copy for one sender, no allocation once warm.
            if buf.broadcast.is_empty() {
                // Nothing sent: its vector (and capacity) stays where it is.
            } else if self.broadcast.is_empty() {
                std::mem::swap(&mut self.broadcast, &mut buf.broadcast);
            } else {
                self.broadcast.append(&mut buf.broadcast);
            }
            self.addressed.append(&mut buf.addressed);
        }
        if self.addressed.len() > before {
            let kept_before = self.addressed.len();
            let mut i = 0;
            self.addressed.retain(|(e, _)| {
                i += 1;
                i <= before || alive(*e)
            });
            counts.dropped = (kept_before - self.addressed.len()) as u64;
            self.sort_order();
        }
        match stage {
            None => counts.delivered = self.len() as u64,
            Some(stage) => {
                let g = Delivery {
                    stage,
                    broadcast: self.broadcast.len() - before_broadcast,
                    addressed: self.addressed.len() - before,
                };
                counts.delivered = (g.broadcast + g.addressed) as u64;
                self.deliveries.push(g);
            }
        }
        counts
    }
    fn len(&self) -> usize {
        self.broadcast.len() + self.addressed.len()
    }
    fn capacity_bytes(&self) -> usize {
        self.broadcast.capacity() * size_of::<M>()
            + self.addressed.capacity() * size_of::<(Entity, M)>()
            + (self.order.capacity() + self.scratch.capacity()) * size_of::<u64>()
    }
    fn snapshotting(&self) -> bool {
        self.copy.is_some()
    }
    fn saving(&self) -> bool {
        self.serde.is_some()
    }
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), String> {
        let (encode, _) = self.serde.expect("saving a message type not opted in");
        encode(self, out)
    }
    fn decode(&self, bytes: &[u8]) -> Result<(Box<dyn Any + Send + Sync>, usize, usize), String> {
        let (_, decode) = self.serde.expect("loading a message type not opted in");
        let decoded = decode(bytes)?;
        let (b, a) = (decoded.0.len(), decoded.1.len());
        Ok((Box::new(decoded), b, a))
    }
    fn install(&mut self, decoded: Box<dyn Any + Send + Sync>, deliveries: Option<Deliveries>) {
        let (broadcast, addressed) = *decoded
            .downcast::<(Vec<M>, Vec<(Entity, M)>)>()
            .expect("decoded messages of another type");
        self.broadcast = broadcast;
        self.addressed = addressed;
        match deliveries {
            Some(s) => {
                debug_assert!(s.stages > 1);
                self.deliveries = s.deliveries;
                self.stages = s.stages;
            }
            None => {
                self.deliveries.clear();
                self.stages = 0;
            }
        }
        self.sort_order();
    }
    fn deliveries(&self) -> Option<Deliveries> {
        (self.stages > 1).then(|| Deliveries {
            stages: self.stages,
            deliveries: self.deliveries.clone(),
        })
    }
    fn empty_like(&self) -> Box<dyn AnyInbox> {
        Box::new(Inbox::<M> {
            copy: self.copy,
            sum: self.sum,
            serde: self.serde,
            ..Inbox::new()
        })
    }
    fn save(&self, into: &mut Option<SavedMessages>) {
        let copy = self.copy.expect("saving a message type not opted in");
        if !into.as_ref().is_some_and(|b| b.is::<Inbox<M>>()) {
            *into = Some(Box::new(Inbox::<M>::new()));
        }
        let saved = into
            .as_mut()
            .and_then(|b| b.downcast_mut::<Inbox<M>>())
            .expect("just made");
        copy(self, saved);
    }
    fn load(&mut self, from: &SavedMessages) {
        let copy = self.copy.expect("loading a message type not opted in");
        let saved = from
            .downcast_ref::<Inbox<M>>()
            .expect("saved messages of another type");
        copy(saved, self);
    }
    fn checksum(&self, h: &mut Checksummer) -> bool {
        match self.sum {
            Some((sum, _)) => {
                sum(self, h);
                true
            }
            None => false,
        }
    }
    fn show(&self) -> Option<String> {
        self.sum.map(|(_, show)| show(self))
    }
}

/// The world's message types, by registration index, with their delivered messages.
#[derive(Default)]
pub(crate) struct Messages {
    ids: TypeIdMap<u32>,
    inboxes: Vec<Box<dyn AnyInbox>>,
}

impl Messages {
    /// Registers `M` (a no-op if it is registered); returns its index.
    pub(crate) fn register<M: Message>(&mut self) -> usize {
        let next = self.inboxes.len() as u32;
        let i = *self.ids.entry(TypeId::of::<M>()).or_insert(next);
        if i == next {
            self.inboxes.push(Box::new(Inbox::<M>::new()));
        }
        i as usize
    }

    /// Whether `M` is registered.
    pub(crate) fn is_registered<M: Message>(&self) -> bool {
        self.ids.contains_key(&TypeId::of::<M>())
    }

    /// The index of `M`.
    ///
    /// # Panics
    /// If `M` is not registered, saying how to register it.
    #[inline]
    #[track_caller]
    pub(crate) fn index<M: Message>(&self) -> usize {
        match self.ids.get(&TypeId::of::<M>()) {
            Some(&i) => i as usize,
            None => unregistered::<M>(),
        }
    }

    /// The delivered messages of `M`.
    ///
    /// # Panics
    /// If `M` is not registered.
    #[inline]
    #[track_caller]
    pub(crate) fn inbox<M: Message>(&self) -> &Inbox<M> {
        let i = self.index::<M>();
        let inbox: &dyn Any = &*self.inboxes[i];
        inbox
            .downcast_ref()
            .expect("message index maps to another type")
    }

    /// The delivered messages of `M`, mutably.
    ///
    /// # Panics
    /// If `M` is not registered.
    #[track_caller]
    pub(crate) fn inbox_mut<M: Message>(&mut self) -> &mut Inbox<M> {
        let i = self.index::<M>();
        let inbox: &mut dyn Any = &mut *self.inboxes[i];
        inbox
            .downcast_mut()
            .expect("message index maps to another type")
    }

    /// The same message types with the same opt-ins, and no messages.
    pub(crate) fn empty_like(&self) -> Messages {
        Messages {
            ids: self.ids.clone(),
            inboxes: self.inboxes.iter().map(|i| i.empty_like()).collect(),
        }
    }

    /// Every type's inbox, by index.
    #[inline]
    pub(crate) fn inboxes(&self) -> &[Box<dyn AnyInbox>] {
        &self.inboxes
    }

    /// Every type's inbox, by index, mutably.
    #[inline]
    pub(crate) fn inboxes_mut(&mut self) -> &mut [Box<dyn AnyInbox>] {
        &mut self.inboxes
    }

    pub(crate) fn len(&self) -> usize {
        self.inboxes.len()
    }

    pub(crate) fn capacity_bytes(&self) -> usize {
        self.inboxes.iter().map(|i| i.capacity_bytes()).sum()
    }
}

#[cold]
#[track_caller]
fn unregistered<M>() -> ! {
    let name = type_name::<M>();
    let short = name.rsplit("::").next().unwrap_or(name);
    panic!(
        "runsync: message type `{name}` is not registered; register it once before systems \
         send or read it, e.g. `world.register_message::<{short}>()`"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(index: u32) -> Entity {
        Entity::from_bits(u64::from(index) | (1 << 32)).expect("a valid handle")
    }

    #[test]
    fn delivery_keeps_system_then_emission_order_and_indexes_addressed() {
        let mut inbox = Inbox::<u32>::new();
        let mut a = MsgBuf::<u32>::default();
        let mut b = MsgBuf::<u32>::default();
        a.broadcast.extend([1, 2]);
        a.addressed.extend([(e(5), 10), (e(3), 11)]);
        b.broadcast.push(3);
        b.addressed.extend([(e(5), 12), (e(9), 13), (e(3), 14)]);
        let (mut a, mut b) = (Erased::new(a), Erased::new(b));
        let d = {
            let mut sources = [&mut a, &mut b].into_iter();
            inbox.deliver(&mut sources, &|x| x != e(9), None)
        };
        assert_eq!((d.delivered, d.dropped), (7, 1));
        assert_eq!(inbox.broadcast(), [1, 2, 3]);
        assert_eq!(
            inbox.addressed_to(e(5)).copied().collect::<Vec<_>>(),
            [10, 12]
        );
        assert_eq!(
            inbox.addressed_to(e(3)).copied().collect::<Vec<_>>(),
            [11, 14]
        );
        assert_eq!(inbox.addressed_to(e(9)).count(), 0);
        assert_eq!(inbox.addressed_to(e(4)).count(), 0);
        assert!(a.len() == 0 && b.len() == 0);
        // The next delivery replaces everything.
        inbox.expire(0, 1);
        b.typed_mut::<MsgBuf<u32>>().broadcast.push(4);
        let d = {
            let mut sources = [&mut a, &mut b].into_iter();
            inbox.deliver(&mut sources, &|_| true, None)
        };
        assert_eq!((d.delivered, d.dropped), (1, 0));
        assert_eq!(inbox.broadcast(), [4]);
        assert_eq!(inbox.addressed_to(e(5)).count(), 0);
        // Between frames: behind what was delivered.
        inbox.push(None, 5);
        inbox.push(Some(e(2)), 6);
        inbox.push(Some(e(1)), 7);
        inbox.push(Some(e(2)), 8);
        assert_eq!(inbox.broadcast(), [4, 5]);
        assert_eq!(
            inbox.addressed_to(e(2)).copied().collect::<Vec<_>>(),
            [6, 8]
        );
        assert_eq!(inbox.addressed_to(e(1)).copied().collect::<Vec<_>>(), [7]);
    }

    #[test]
    fn the_index_sorts_by_slot_then_position() {
        let mut keys: Vec<u64> = (0..5000u64)
            .map(|i| (((i * 7919) % 70_001) << 32) | i)
            .collect();
        let mut want = keys.clone();
        want.sort_unstable();
        let mut scratch = Vec::new();
        sort_by_index(&mut keys, &mut scratch);
        assert_eq!(keys, want);
        let mut same: Vec<u64> = (0..300u64).map(|i| (9 << 32) | i).collect();
        let want = same.clone();
        sort_by_index(&mut same, &mut scratch);
        assert_eq!(same, want);
    }

    #[test]
    #[should_panic(expected = "register_message::<u64>()")]
    fn unregistered_types_say_how_to_register() {
        Messages::default().index::<u64>();
    }

    #[test]
    fn registering_twice_is_a_no_op() {
        let mut m = Messages::default();
        assert_eq!(m.register::<u32>(), 0);
        assert_eq!(m.register::<u64>(), 1);
        assert_eq!(m.register::<u32>(), 0);
        assert_eq!(m.len(), 2);
    }
}
