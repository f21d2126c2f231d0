//! Snapshot, restore, checksum and desync reports of a [`World`]: what rollback netcode
//! (save frame k, run on, restore k, re-simulate with corrected inputs) and lockstep
//! desync detection need.
//!
//! # Which types take part
//!
//! [`World::register`] keeps its signature; taking part is an opt-in per type, recorded
//! as a `fn` pointer beside the type's columns:
//!
//! - [`World::snapshotting::<C>()`](World::snapshotting) (`C: Clone`) lets snapshots copy
//!   `C`. [`World::snapshot`] fails with [`SnapshotError::NotSnapshotting`], naming the
//!   first registered type (by registration order) that was not opted in — whether or not
//!   any entity has it, so the answer depends on setup, not on the game's state.
//! - [`World::checksumming::<C>()`](World::checksumming) (`C: Checksum + Debug`) makes
//!   `C`'s values count in [`World::checksum`] and lets [`World::first_difference`] print
//!   them. Types not opted in contribute only which entities have them.
//! - Resources: [`World::snapshotting_resource::<R>()`](World::snapshotting_resource)
//!   (`R: Clone`). A snapshot holds every opted-in resource (or its absence); restore puts
//!   each back (or removes it). Other resources (assets, configuration) are left as they
//!   are — except a resource registered for systems to write
//!   ([`World::register_resource`]): that one is game state, so a snapshot (and a
//!   restore) of a world where it is not opted in fails with
//!   [`SnapshotError::ResourceNotSnapshotting`] naming it, instead of leaving it out.
//!   [`World::checksumming_resource::<R>()`](World::checksumming_resource)
//!   (`R: Checksum + Debug`) adds a resource to the checksum and the desync report.
//!   [`Runtime::snapshot`](crate::Runtime::snapshot) adds the frame counter and
//!   [`Time`](crate::Time).
//!
//! # Cost
//!
//! A snapshot is one `clone` per column (a `memcpy` for `Copy` types) plus the entity
//! allocator and tables' entity lists. [`World::snapshot_into`] and [`World::restore`]
//! reuse the destination's vectors (`clone_from`): with the same shape, they allocate
//! nothing. See the module docs of the storage side (`src/storage/snapshot.rs`) for how
//! tables are restored so that later frames create tables with the same ids.
//!
//! Both are incremental: each column (a type's values in one table) and each table's
//! entity list carries a stamp that names its contents, cleared by every change. A
//! [`World::snapshot_into`] into a snapshot that already holds a column with the same
//! stamp skips it, and so does a [`World::restore`] into a world whose column has the
//! snapshot's stamp: in a rollback ring, a save copies only what changed since its entry
//! was filled, and a restore only what changed since the snapshot was taken. Static
//! parts of a world (a level's scenery, a type no system writes in a table no entity
//! enters or leaves) cost nothing after the first save. The result is the same bits as a
//! full copy.

use std::any::TypeId;
use std::fmt;

use crate::component::{Component, ComponentId};
use crate::message::SavedMessages;
use crate::resource::{AnyBox, LoadFn, ResourceHook};
use crate::storage::Storage;
use crate::storage::snapshot::{RestoreError, StorageSnapshot};
use crate::world::World;

/// A copy of a world's entities, components, opted-in resources and delivered messages,
/// made by [`World::snapshot`] and brought back by [`World::restore`].
///
/// ```
/// use runsync::prelude::*;
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Hp(i32);
/// impl Component for Hp { type Output = i32; }
///
/// let mut world = World::new();
/// world.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
/// world.snapshotting::<Hp>();
/// let e = world.spawn((Hp(10),));
/// let saved = world.snapshot().unwrap();
/// world.get_mut::<Hp>(e).unwrap().0 = 0;
/// world.despawn(e);
/// world.restore(&saved);
/// assert_eq!(world.get::<Hp>(e), Some(&Hp(10)));
/// ```
#[derive(Default)]
pub struct Snapshot {
    storage: StorageSnapshot,
    resources: Vec<SavedResource>,
    /// Each message type's delivered messages, by message index: its name, type and copy.
    messages: Vec<(&'static str, TypeId, Option<SavedMessages>)>,
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("entities", &self.len())
            .field("resources", &self.resources.len())
            .finish()
    }
}

impl Snapshot {
    /// An empty snapshot, to be filled by [`World::snapshot_into`] (which then reuses its
    /// memory on every later call). See [`World::snapshot_into`] for an example.
    pub fn new() -> Self {
        Snapshot::default()
    }

    /// Number of live entities saved.
    pub fn len(&self) -> usize {
        self.storage.len()
    }

    /// Whether no entity is saved.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why a world could not be snapshot ([`World::snapshot`]) or restored
/// ([`World::try_restore`]). Neither changes anything when it fails: a failed snapshot
/// changes no world, a failed restore leaves the world as it was.
///
/// ```
/// # use runsync::prelude::*;
/// # use runsync::SnapshotError;
/// struct NotClone;
/// impl Component for NotClone { type Output = (); }
/// let mut world = World::new();
/// world.register::<NotClone>(|_: &mut NotClone, _: &[()]| {});
/// let err = world.snapshot().unwrap_err();
/// assert!(matches!(err, SnapshotError::NotSnapshotting { type_name } if type_name.ends_with("NotClone")));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotError {
    /// A registered component type was not opted in with [`World::snapshotting`] in the
    /// world being snapshot, or in the world being restored into; `type_name` names it
    /// (the first by registration order).
    NotSnapshotting {
        /// The type's name (`std::any::type_name`).
        type_name: &'static str,
    },
    /// A resource registered for systems to write ([`World::register_resource`]) was
    /// not opted in with [`World::snapshotting_resource`] in the world being snapshot or
    /// restored into; `type_name` names it (the first by registration order). Such a
    /// resource changes every frame, so leaving it out of a snapshot would make a
    /// rollback re-simulate from the wrong value.
    ResourceNotSnapshotting {
        /// The resource type's name (`std::any::type_name`).
        type_name: &'static str,
    },
    /// A restore into a world that registers other component types than the snapshot's
    /// world, or the same in another order.
    OtherTypes {
        /// The snapshot's component types, by registration order.
        snapshot: Vec<&'static str>,
        /// The world's component types, by registration order.
        world: Vec<&'static str>,
    },
    /// A registered message type was not opted in with
    /// [`World::snapshotting_message`] in the world being snapshot, or in the world being
    /// restored into; `type_name` names it (the first by registration order). Delivered
    /// messages are state the next frame reads, so a snapshot without them would
    /// re-simulate differently.
    MessageNotSnapshotting {
        /// The type's name (`std::any::type_name`).
        type_name: &'static str,
    },
    /// A restore into a world that registers other message types than the snapshot's
    /// world, or the same in another order.
    OtherMessageTypes {
        /// The snapshot's message types, by registration order.
        snapshot: Vec<&'static str>,
        /// The world's message types, by registration order.
        world: Vec<&'static str>,
    },
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::NotSnapshotting { type_name } => {
                let short = type_name.rsplit("::").next().unwrap_or(type_name);
                write!(
                    f,
                    "runsync: component type `{type_name}` cannot be snapshot or restored: \
                     it was not opted in; derive or implement `Clone` for it and call \
                     `world.snapshotting::<{short}>()` after registering it"
                )
            }
            SnapshotError::ResourceNotSnapshotting { type_name } => {
                let short = type_name.rsplit("::").next().unwrap_or(type_name);
                write!(
                    f,
                    "runsync: resource `{type_name}` is written by systems \
                     (`register_resource`) but not opted into snapshots, so a restore would \
                     leave it at its later value; derive or implement `Clone` for it and call \
                     `world.snapshotting_resource::<{short}>()`"
                )
            }
            SnapshotError::OtherTypes { snapshot, world } => write!(
                f,
                "runsync: restore into a world with other component types: the snapshot \
                 has [{}], the world [{}]; register the same types in the same order before \
                 restoring",
                snapshot.join(", "),
                world.join(", ")
            ),
            SnapshotError::MessageNotSnapshotting { type_name } => {
                let short = type_name.rsplit("::").next().unwrap_or(type_name);
                write!(
                    f,
                    "runsync: message type `{type_name}` cannot be snapshot or restored: it \
                     was not opted in (its delivered messages are read by the next frame); \
                     derive or implement `Clone` for it and call \
                     `world.snapshotting_message::<{short}>()` after registering it"
                )
            }
            SnapshotError::OtherMessageTypes { snapshot, world } => write!(
                f,
                "runsync: restore into a world with other message types: the snapshot has \
                 [{}], the world [{}]; register the same message types in the same order \
                 before restoring",
                snapshot.join(", "),
                world.join(", ")
            ),
        }
    }
}

impl std::error::Error for SnapshotError {}

/// One resource in a snapshot: its copy, or its absence (`present == false`).
struct SavedResource {
    type_id: TypeId,
    present: bool,
    value: Option<AnyBox>,
    load: LoadFn,
}

impl World {
    /// The first resource registered for systems to write, by registration order, that
    /// is not opted into snapshots.
    /// Every registered type a [`snapshot`](Self::snapshot) would refuse, not only the
    /// first: the component types not opted in with [`snapshotting`](Self::snapshotting)
    /// (by registration order), then the resources systems write not opted in with
    /// [`snapshotting_resource`](Self::snapshotting_resource), then the message types not
    /// opted in with [`snapshotting_message`](Self::snapshotting_message). Empty when a
    /// snapshot can be taken. For a setup check that names everything to fix at once.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// #[derive(Component, Clone, Copy, Debug)]
    /// #[component(merge = merge::last, snapshot)]
    /// struct Pos(f32);
    /// #[derive(Component, Clone, Copy, Debug)]
    /// #[component(merge = merge::last)]
    /// struct Cooldown(u32);
    /// #[derive(Component, Clone, Copy, Debug)]
    /// #[component(merge = merge::last)]
    /// struct Ammo(u8);
    /// let mut world = World::new();
    /// world.register_default::<Pos>();
    /// world.register_default::<Cooldown>();
    /// world.register_default::<Ammo>();
    /// assert_eq!(
    ///     world.unsnapshotted(),
    ///     [std::any::type_name::<Cooldown>(), std::any::type_name::<Ammo>()]
    /// );
    /// ```
    pub fn unsnapshotted(&self) -> Vec<&'static str> {
        let s = &self.storage;
        let components = (0..s.registry().len())
            .map(|i| crate::component::ComponentId(i as u32))
            .filter(|&id| !s.columns(id).is_snapshotting())
            .map(|id| s.type_name(id));
        let resources = self
            .resource_folds
            .iter()
            .filter(|f| !self.resource_hooks.iter().any(|h| h.type_id == f.type_id()))
            .map(|f| f.type_name());
        let messages = self
            .messages
            .inboxes()
            .iter()
            .filter(|i| !i.snapshotting())
            .map(|i| i.name());
        components.chain(resources).chain(messages).collect()
    }

    fn written_resource_not_snapshotting(&self) -> Option<&'static str> {
        self.resource_folds
            .iter()
            .find(|f| !self.resource_hooks.iter().any(|h| h.type_id == f.type_id()))
            .map(|f| f.type_name())
    }

    /// Opts component type `C` into snapshots: [`snapshot`](Self::snapshot) clones its
    /// columns, [`restore`](Self::restore) clones them back (`clone_from`, reusing memory).
    /// Every registered type must be opted in before a snapshot. Returns `self` to chain.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy, Debug)] struct Pos(f32);
    /// # impl Component for Pos { type Output = Pos; }
    /// let mut world = World::new();
    /// world.register::<Pos>(merge::last);
    /// world.snapshotting::<Pos>();
    /// assert!(world.snapshot().is_ok());
    /// ```
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn snapshotting<C: Component + Clone>(&mut self) -> &mut Self {
        let id = self.storage.registry().id::<C>();
        self.storage.typed_mut::<C>(id).enable_clone();
        self
    }

    /// Opts resource type `R` into snapshots: a snapshot saves a clone of it (or notes
    /// that there is none), and restore puts it back (or removes it). Resources not opted
    /// in are left alone by restore. Returns `self` to chain; opting in twice is a no-op.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// #[derive(Clone, Debug, PartialEq)]
    /// struct Score(u32);
    /// let mut world = World::new();
    /// world.snapshotting_resource::<Score>();
    /// world.insert_resource(Score(1));
    /// let saved = world.snapshot().unwrap();
    /// world.insert_resource(Score(5));
    /// world.restore(&saved);
    /// assert_eq!(world.resource::<Score>(), &Score(1));
    /// ```
    pub fn snapshotting_resource<R: Clone + Send + Sync + 'static>(&mut self) -> &mut Self {
        let type_id = TypeId::of::<R>();
        if !self.resource_hooks.iter().any(|h| h.type_id == type_id) {
            self.resource_hooks.push(ResourceHook::of::<R>());
        }
        self
    }

    /// A copy of every entity (ids, generations, free list, retired slots), every
    /// component, its change marks ([`Changed`](crate::Changed), [`Added`](crate::Added)),
    /// every opted-in resource and the delivered [messages](Self::register_message);
    /// [`restore`](Self::restore) brings it back,
    /// after which the world runs exactly as it did from that point (see [`Snapshot`]).
    ///
    /// Cost: a `clone` of every column (a `memcpy` for `Copy` types), the entity
    /// allocator and tables' entity lists, plus allocating the copy; use
    /// [`snapshot_into`](Self::snapshot_into) to reuse one.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy, Debug, PartialEq)] struct Pos(f32);
    /// # impl Component for Pos { type Output = Pos; }
    /// let mut world = World::new();
    /// world.register::<Pos>(merge::last);
    /// world.snapshotting::<Pos>();
    /// world.spawn((Pos(1.0),));
    /// let saved = world.snapshot().unwrap();
    /// assert_eq!(saved.len(), 1);
    /// ```
    ///
    /// # Errors
    /// [`SnapshotError::NotSnapshotting`] naming the first registered type not opted in
    /// with [`snapshotting`](Self::snapshotting);
    /// [`SnapshotError::ResourceNotSnapshotting`] naming the first resource registered
    /// with [`register_resource`](Self::register_resource) and not opted in with
    /// [`snapshotting_resource`](Self::snapshotting_resource);
    /// [`SnapshotError::MessageNotSnapshotting`] naming the first message type not opted
    /// in with [`snapshotting_message`](Self::snapshotting_message). Nothing is ever left
    /// out silently.
    pub fn snapshot(&self) -> Result<Snapshot, SnapshotError> {
        let mut s = Snapshot::new();
        self.snapshot_into(&mut s)?;
        Ok(s)
    }

    /// [`snapshot`](Self::snapshot) into an existing snapshot, reusing its memory: with a
    /// snapshot of a world of the same shape, no allocation (a ring of these is what a
    /// rollback loop keeps).
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy, Debug, PartialEq)] struct Hp(i32);
    /// # impl Component for Hp { type Output = i32; }
    /// let mut world = World::new();
    /// world.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    /// world.snapshotting::<Hp>();
    /// let mut ring = vec![Snapshot::new(), Snapshot::new()];
    /// world.spawn((Hp(1),));
    /// world.snapshot_into(&mut ring[0]).unwrap();
    /// world.spawn((Hp(2),));
    /// world.snapshot_into(&mut ring[1]).unwrap();
    /// world.restore(&ring[0]);
    /// assert_eq!(world.len(), 1);
    /// ```
    ///
    /// # Errors
    /// As [`snapshot`](Self::snapshot); `into` is then left unusable for restore until a
    /// later call succeeds.
    pub fn snapshot_into(&self, into: &mut Snapshot) -> Result<(), SnapshotError> {
        self.snapshot_into_with(into, |storage, into| storage.save(into))
    }

    /// [`snapshot_into`](Self::snapshot_into), the storage's part copied by `save` (which
    /// returns the first type not opted into snapshots): the runtime's saves copy it on
    /// its workers. `save` is not called if a written resource is not opted in.
    pub(crate) fn snapshot_into_with(
        &self,
        into: &mut Snapshot,
        save: impl FnOnce(&Storage, &mut StorageSnapshot) -> Result<(), ComponentId>,
    ) -> Result<(), SnapshotError> {
        let saved = match self.written_resource_not_snapshotting() {
            Some(type_name) => Err(SnapshotError::ResourceNotSnapshotting { type_name }),
            None => save(&self.storage, &mut into.storage).map_err(|id| {
                SnapshotError::NotSnapshotting {
                    type_name: self.storage.type_name(id),
                }
            }),
        };
        let saved = saved.and_then(|()| self.save_messages(into));
        if let Err(e) = saved {
            into.resources.clear();
            into.messages.clear();
            into.storage = StorageSnapshot::default();
            return Err(e);
        }
        into.resources.truncate(self.resource_hooks.len());
        for (i, hook) in self.resource_hooks.iter().enumerate() {
            if i == into.resources.len() || into.resources[i].type_id != hook.type_id {
                into.resources.truncate(i);
                into.resources.push(SavedResource {
                    type_id: hook.type_id,
                    present: false,
                    value: None,
                    load: hook.load,
                });
            }
            let saved = &mut into.resources[i];
            saved.present = (hook.save)(&self.resources, &mut saved.value);
        }
        Ok(())
    }

    /// Makes this world what it was when `snapshot` was taken: the same entities (so old
    /// handles are valid again and handles made since are stale or re-issued exactly as
    /// before), components, tables (tables made since are dropped, so later frames create
    /// them with the same ids as the original run) and opted-in resources.
    ///
    /// The snapshot may come from this world or from another with the same component
    /// types registered in the same order. Call it between frames; systems' output
    /// buffers are empty then and need nothing. Systems' own state (`self` of a
    /// [`System`](crate::System)) is not part of the world: keep what must roll back in
    /// components or resources.
    ///
    /// Cost: a `clone_from` of every saved vector into this world's that differs from it,
    /// and the entities' locations rebuilt from the tables where the allocator changed: no
    /// allocation when the world has the snapshot's shape (same tables, capacity for the
    /// rows); values replaced are dropped.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy, Debug, PartialEq)] struct Pos(f32);
    /// # impl Component for Pos { type Output = Pos; }
    /// let mut world = World::new();
    /// world.register::<Pos>(merge::last);
    /// world.snapshotting::<Pos>();
    /// let a = world.spawn((Pos(1.0),));
    /// let saved = world.snapshot().unwrap();
    /// world.despawn(a);
    /// let b = world.spawn((Pos(2.0),)); // reuses a's slot, next generation
    /// world.restore(&saved);
    /// assert!(world.is_alive(a) && !world.is_alive(b));
    /// world.despawn(a);
    /// assert_eq!(world.spawn((Pos(3.0),)), b, "the same history, the same ids");
    /// ```
    ///
    /// # Panics
    /// If [`try_restore`](Self::try_restore) fails, with its error's message: this
    /// world's registered component types differ from the snapshot's, or one is not opted
    /// in with [`snapshotting`](Self::snapshotting). The world is then left as it was.
    #[track_caller]
    pub fn restore(&mut self, snapshot: &Snapshot) {
        if let Err(e) = self.try_restore(snapshot) {
            panic!("{e}");
        }
    }

    /// [`restore`](Self::restore), reporting a snapshot that cannot be restored here
    /// instead of panicking.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # use runsync::SnapshotError;
    /// # #[derive(Clone, Copy, Debug, PartialEq)] struct Pos(f32);
    /// # impl Component for Pos { type Output = Pos; }
    /// let mut a = World::new();
    /// a.register::<Pos>(merge::last);
    /// a.snapshotting::<Pos>();
    /// a.spawn((Pos(1.0),));
    /// let saved = a.snapshot().unwrap();
    ///
    /// let mut b = World::new();
    /// b.register::<Pos>(merge::last); // not opted into snapshots
    /// let e = b.spawn((Pos(2.0),));
    /// let err = b.try_restore(&saved).unwrap_err();
    /// assert!(matches!(err, SnapshotError::NotSnapshotting { .. }));
    /// assert_eq!(b.get::<Pos>(e), Some(&Pos(2.0)), "untouched");
    /// ```
    ///
    /// # Errors
    /// Checked before anything changes, so on an error the world is exactly as it was:
    /// - [`SnapshotError::OtherTypes`]: this world registers other component types than
    ///   the snapshot's (the same types, in the same order, are needed);
    /// - [`SnapshotError::OtherMessageTypes`], [`SnapshotError::MessageNotSnapshotting`]:
    ///   the same for message types (registered alike, all opted in);
    /// - [`SnapshotError::NotSnapshotting`]: a component type of this world is not opted
    ///   in with [`snapshotting`](Self::snapshotting) (restoring clones its columns);
    /// - [`SnapshotError::ResourceNotSnapshotting`]: a resource systems write here is not
    ///   opted in with [`snapshotting_resource`](Self::snapshotting_resource).
    pub fn try_restore(&mut self, snapshot: &Snapshot) -> Result<(), SnapshotError> {
        if let Some(type_name) = self.written_resource_not_snapshotting() {
            return Err(SnapshotError::ResourceNotSnapshotting { type_name });
        }
        self.check_messages(snapshot)?;
        self.storage.load(&snapshot.storage).map_err(|e| match e {
            RestoreError::OtherTypes { snapshot, storage } => SnapshotError::OtherTypes {
                snapshot,
                world: storage,
            },
            RestoreError::NotSnapshotting(id) => SnapshotError::NotSnapshotting {
                type_name: self.storage.type_name(id),
            },
        })?;
        for saved in &snapshot.resources {
            let value = if saved.present {
                saved.value.as_deref()
            } else {
                None
            };
            (saved.load)(&mut self.resources, value);
        }
        for (inbox, (_, _, saved)) in self
            .messages
            .inboxes_mut()
            .iter_mut()
            .zip(&snapshot.messages)
        {
            inbox.load(
                saved
                    .as_ref()
                    .expect("a snapshot that was taken holds every type"),
            );
        }
        Ok(())
    }

    /// Copies every message type's delivered messages into `into` (reusing its copies).
    fn save_messages(&self, into: &mut Snapshot) -> Result<(), SnapshotError> {
        let inboxes = self.messages.inboxes();
        if let Some(i) = inboxes.iter().find(|i| !i.snapshotting()) {
            return Err(SnapshotError::MessageNotSnapshotting {
                type_name: i.name(),
            });
        }
        into.messages.truncate(inboxes.len());
        for (k, inbox) in inboxes.iter().enumerate() {
            if into
                .messages
                .get(k)
                .is_none_or(|m| m.1 != inbox.type_id_of())
            {
                into.messages.truncate(k);
                into.messages.push((inbox.name(), inbox.type_id_of(), None));
            }
            inbox.save(&mut into.messages[k].2);
        }
        Ok(())
    }

    /// Whether `snapshot`'s messages can be restored here: the same message types, in
    /// the same order, all opted in.
    fn check_messages(&self, snapshot: &Snapshot) -> Result<(), SnapshotError> {
        let inboxes = self.messages.inboxes();
        let same = inboxes.len() == snapshot.messages.len()
            && inboxes
                .iter()
                .zip(&snapshot.messages)
                .all(|(i, m)| i.type_id_of() == m.1);
        if !same {
            return Err(SnapshotError::OtherMessageTypes {
                snapshot: snapshot.messages.iter().map(|m| m.0).collect(),
                world: inboxes.iter().map(|i| i.name()).collect(),
            });
        }
        match inboxes.iter().find(|i| !i.snapshotting()) {
            Some(i) => Err(SnapshotError::MessageNotSnapshotting {
                type_name: i.name(),
            }),
            None => Ok(()),
        }
    }
}
