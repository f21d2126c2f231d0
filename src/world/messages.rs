//! Messages: registering message types ([`World::register_message`]) and reading what
//! the last Sync delivered ([`World::messages`], [`World::messages_for`]).

use std::fmt;

use super::World;
use crate::checksum::Checksum;
use crate::entity::Entity;
use crate::message::Message;

impl World {
    /// Registers message type `M`: systems send values of it with
    /// [`Output::send`](crate::Output::send) (or [`send_to`](crate::Output::send_to) an
    /// entity) during Run, and every system reads each of them exactly once, the next time
    /// it runs, with [`messages`](Self::messages) (or [`messages_for`](Self::messages_for)
    /// an entity).
    /// Registering a type twice is a no-op. Returns `self` to chain.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// #[derive(Clone, Copy, Debug, PartialEq)]
    /// struct Hp(i32);
    /// impl Component for Hp { type Output = i32; }
    /// #[derive(Clone, Copy, Debug, PartialEq)]
    /// struct Died(Entity);
    ///
    /// let mut world = World::new();
    /// world.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    /// world.register_message::<Died>();
    /// let e = world.spawn((Hp(1),));
    /// let mut rt = Runtime::builder().workers(2).build(world);
    /// rt.add_system(|w: &World, out: &mut Output| {
    ///     for (e, (hp,)) in w.query::<(&Hp,)>() {
    ///         if hp.0 <= 0 {
    ///             out.send(Died(e));
    ///             out.despawn(e);
    ///         } else {
    ///             out.write::<Hp>(e, -1);
    ///         }
    ///     }
    /// });
    /// let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    /// let l = log.clone();
    /// rt.add_system(move |w: &World, _: &mut Output| {
    ///     l.lock().unwrap().extend(w.messages::<Died>().iter().copied());
    /// });
    /// rt.frame(); // Hp 1 -> 0
    /// rt.frame(); // sends Died(e), despawns e
    /// assert_eq!(rt.world().messages::<Died>(), [Died(e)]);
    /// rt.frame(); // the reader sees it
    /// assert_eq!(*log.lock().unwrap(), [Died(e)]);
    /// assert!(rt.world().messages::<Died>().is_empty(), "one frame's lifetime");
    /// ```
    ///
    /// # What readers see
    ///
    /// - **Every message exactly once, the next time each system runs.** Messages sent in
    ///   a Run are delivered by that stage's Sync (its last step, after the structural
    ///   commands) and read by every system the first time it runs after that Sync — like
    ///   component writes, and never in the Run that sent them. With one stage (the
    ///   default) that is the next frame. With [stages](crate::Runtime::add_stage),
    ///   whichever stage sent it: systems of later stages read it in the same frame, those
    ///   of its own stage and earlier ones in the next frame.
    /// - **Kept until every system has run once since, read or not.** A system runs once
    ///   every `S` stage-Syncs (`S` the number of stages), so [`messages`](Self::messages)
    ///   holds what the last `S` Syncs delivered: each Sync drops what its own stage's
    ///   previous Sync delivered and adds its new ones behind the others. With one stage,
    ///   each Sync replaces them all: a message lives one frame. There is no "unless
    ///   read": a system that wants one longer keeps it (in a component, a resource or its
    ///   own state). bevy keeps messages for two updates and gives each reader a cursor;
    ///   here the window is exact, so every system sees each message once with no cursor
    ///   and no reader depends on another's reading.
    /// - **Oldest Sync first, then system registration order, then emission order**,
    ///   whatever the worker count; a system's
    ///   [`par_for_each`](crate::Output::par_for_each) chunks send in iteration order, as
    ///   a sequential loop would. (With one stage: system then emission order.)
    /// - **A stage with no enabled system** still takes its turn (drops what its last Sync
    ///   delivered); a stage that never has a system changes nothing. **A disabled
    ///   system** misses the messages delivered and dropped while it was disabled.
    /// - **A frame that fails in Run** (a system panicked) discards its messages with its
    ///   other outputs: the delivered messages stay, so the retried frame sees them again.
    ///   (With stages: the stages after a failed one do not take their turn that frame, so
    ///   the exactly-once count holds again from the next complete frame.)
    /// - **Addressed messages** ([`Output::send_to`](crate::Output::send_to)) whose entity
    ///   is dead once the frame's commands are applied (despawned in that Sync or earlier)
    ///   are dropped and counted in [`FrameStats::dropped`](crate::FrameStats::dropped); a
    ///   message to an entity spawned in the same frame ([`Output::spawn`](crate::Output::spawn))
    ///   is delivered.
    /// - **Between frames** the owner may add messages ([`send_message`](Self::send_message)),
    ///   read by every system in the next frame after those of the last Sync: input,
    ///   network events. (With stages they count as the last stage's Sync's.)
    ///
    /// # Snapshots and checksums
    ///
    /// Delivered messages are world state: the next frame reads them. A snapshot of a
    /// world with a message type not opted in with
    /// [`snapshotting_message`](Self::snapshotting_message) fails
    /// ([`SnapshotError::MessageNotSnapshotting`](crate::SnapshotError::MessageNotSnapshotting)),
    /// so a rollback never silently re-simulates without them; restore puts them back.
    /// [`checksumming_message`](Self::checksumming_message) adds them to
    /// [`checksum`](Self::checksum).
    ///
    /// # Cost
    ///
    /// A send is a `Vec::push` into the system's own buffer (after a type lookup, or none
    /// with a [`sender`](crate::Output::sender)). Sync moves each type's vectors: the first
    /// sender's is swapped in, the others appended; addressed messages also get an index
    /// sorted by entity. Capacity is kept on both sides, so a steady frame allocates
    /// nothing. A world without message types pays nothing. With several stages, a Sync
    /// first drops its stage's previous messages (a `drain` of that range: the later
    /// ones move down) and the addressed index is rebuilt over all kept messages.
    pub fn register_message<M: Message>(&mut self) -> &mut Self {
        self.messages.register::<M>();
        self
    }

    /// Whether message type `M` is registered.
    pub fn is_message_registered<M: Message>(&self) -> bool {
        self.messages.is_registered::<M>()
    }

    /// The messages of type `M` the last Sync delivered (plus any sent between frames
    /// since), in system registration order then emission order — with several
    /// [stages](crate::Runtime::add_stage), what the last `S` Syncs delivered, oldest
    /// first (see [`register_message`](Self::register_message)). Messages sent to an
    /// entity are not among them: see [`messages_for`](Self::messages_for).
    ///
    /// Cost: a type lookup.
    ///
    /// # Panics
    /// If `M` is not registered with [`register_message`](Self::register_message).
    #[inline]
    #[track_caller]
    pub fn messages<M: Message>(&self) -> &[M] {
        self.messages.inbox::<M>().broadcast()
    }

    /// The messages of type `M` sent to `e` ([`Output::send_to`](crate::Output::send_to))
    /// that the last Sync delivered (the last `S` Syncs with `S` stages, oldest first), in
    /// system then emission order; empty if there are none (or `e` is dead).
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// #[derive(Debug, PartialEq)]
    /// struct Hit(u32);
    /// let mut world = World::new();
    /// world.register_message::<Hit>();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// let mut rt = Runtime::builder().build(world);
    /// rt.add_system(move |_: &World, out: &mut Output| {
    ///     out.send_to(b, Hit(1));
    ///     out.send_to(a, Hit(2));
    ///     out.send_to(b, Hit(3));
    /// });
    /// rt.frame();
    /// let w = rt.world();
    /// assert!(w.messages_for::<Hit>(b).eq([&Hit(1), &Hit(3)]));
    /// assert!(w.messages_for::<Hit>(a).eq([&Hit(2)]));
    /// assert!(w.messages::<Hit>().is_empty(), "addressed messages are not broadcast");
    /// ```
    ///
    /// Cost: a type lookup and a binary search over the addressed messages' index (sorted
    /// by entity in Sync).
    ///
    /// # Panics
    /// If `M` is not registered.
    #[inline]
    #[track_caller]
    pub fn messages_for<M: Message>(
        &self,
        e: Entity,
    ) -> impl DoubleEndedIterator<Item = &M> + Clone + '_ {
        self.messages.inbox::<M>().addressed_to(e)
    }

    /// Every message of type `M` sent to an entity that the last Sync delivered (the last
    /// `S` Syncs with `S` stages, oldest first), with its addressee, in system then
    /// emission order.
    ///
    /// # Panics
    /// If `M` is not registered.
    #[inline]
    #[track_caller]
    pub fn addressed_messages<M: Message>(&self) -> &[(Entity, M)] {
        self.messages.inbox::<M>().addressed()
    }

    /// Sends `m` between frames: the next Run reads it with
    /// [`messages`](Self::messages), after the messages the last Sync delivered. For what
    /// comes from outside the simulation (input, the network).
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// #[derive(Debug, PartialEq)]
    /// enum Input { Jump }
    /// let mut world = World::new();
    /// world.register_message::<Input>();
    /// let mut rt = Runtime::builder().build(world);
    /// rt.add_system(|w: &World, _: &mut Output| assert_eq!(w.messages::<Input>(), [Input::Jump]));
    /// rt.world_mut().send_message(Input::Jump);
    /// rt.frame();
    /// assert!(rt.world().messages::<Input>().is_empty());
    /// ```
    ///
    /// # Panics
    /// If `M` is not registered.
    #[track_caller]
    pub fn send_message<M: Message>(&mut self, m: M) {
        self.messages.inbox_mut::<M>().push(None, m);
    }

    /// Sends `m` to `to` between frames: the next Run reads it with
    /// [`messages_for`](Self::messages_for). A dead `to` is taken as it is (no one reads
    /// it).
    ///
    /// # Panics
    /// If `M` is not registered.
    #[track_caller]
    pub fn send_message_to<M: Message>(&mut self, to: Entity, m: M) {
        self.messages.inbox_mut::<M>().push(Some(to), m);
    }

    /// Opts message type `M` into snapshots: [`snapshot`](Self::snapshot) copies its
    /// delivered messages (`clone_from`, reusing memory) and [`restore`](Self::restore)
    /// puts them back, so that the frame after a restore reads what it read the first
    /// time. Every registered message type must be opted in before a snapshot. Returns
    /// `self` to chain.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// #[derive(Clone, Debug, PartialEq)]
    /// struct Note(u8);
    /// let mut world = World::new();
    /// world.register_message::<Note>().snapshotting_message::<Note>();
    /// world.send_message(Note(1));
    /// let saved = world.snapshot().unwrap();
    /// let mut rt = Runtime::builder().build(world);
    /// rt.frame(); // delivers nothing: the note is gone
    /// assert!(rt.world().messages::<Note>().is_empty());
    /// rt.world_mut().restore(&saved);
    /// assert_eq!(rt.world().messages::<Note>(), [Note(1)]);
    /// ```
    ///
    /// # Panics
    /// If `M` is not registered.
    #[track_caller]
    pub fn snapshotting_message<M: Message + Clone>(&mut self) -> &mut Self {
        self.messages.inbox_mut::<M>().enable_copy();
        self
    }

    /// Opts message type `M` into save files ([`save`](Self::save),
    /// [`load`](Self::load), replays): a save holds the delivered messages (they are read
    /// by the next frame), a load puts them back. With several stages a runtime's save
    /// ([`Runtime::save`](crate::Runtime::save), a replay's) also holds which stage's Sync
    /// delivered each, and [`Runtime::load`](crate::Runtime::load) into a runtime with as
    /// many stages puts that back too: every system reads each message exactly once, as
    /// if the game had not stopped. A [`World::save`](Self::save), a
    /// [`World::load`](Self::load), or a load into another number of stages keeps only
    /// the messages: they count as sent between frames, so every system reads all of them
    /// in the next frame (a reader that had already seen some sees those again). A world
    /// that registers a message type must opt it in to save. Returns `self` to chain.
    ///
    /// # Panics
    /// If `M` is not registered.
    #[track_caller]
    pub fn saving_message<M>(&mut self) -> &mut Self
    where
        M: Message + serde::Serialize + serde::de::DeserializeOwned,
    {
        self.messages.inbox_mut::<M>().enable_serde();
        self
    }

    /// Opts message type `M` into [`checksum`](Self::checksum): after the resources, for
    /// each opted-in type in registration order, the number of delivered messages and
    /// each of them, then the addressed ones with their entities. Returns `self` to chain.
    ///
    /// # Panics
    /// If `M` is not registered.
    #[track_caller]
    pub fn checksumming_message<M: Message + Checksum + fmt::Debug>(&mut self) -> &mut Self {
        self.messages.inbox_mut::<M>().enable_sum();
        self
    }

    /// The index of message type `M`.
    ///
    /// # Panics
    /// If `M` is not registered.
    #[inline]
    #[track_caller]
    pub(crate) fn message_index<M: Message>(&self) -> usize {
        self.messages.index::<M>()
    }
}
