//! Save files of a [`World`]: [`World::save`] and [`World::load`], and which types take
//! part ([`World::saving`], [`World::saving_resource`]). The format is described in
//! `src/savefile/` (framing) and `src/storage/save.rs` (entities, tables, columns).
//!
//! # What a file holds
//!
//! Magic `RSYNSAVE`, version, a kind byte (world, or runtime: then the frame counter and
//! `Time` follow), the registered component types by name (registration order), the
//! entity allocator, every table (types, entities) in creation order, each type's columns
//! with their change marks, then every resource opted into saves (present or absent), then
//! the delivered messages. Each of these is a section with its own integrity check (a
//! CRC-32C; see `src/savefile/`), and each type's columns are one. A runtime's save of
//! a frame with several stages (format version 5) adds, after each type's columns, its
//! change marks per stage, and after each message type's messages, which stage's Sync
//! delivered which (see the "Versions" of `crate::savefile`); [`World::load`] reads and
//! checks them, and only `Runtime::load` puts them back.
//! Values are serde-encoded with postcard, or copied as bytes for plain-data types
//! ([`World::saving_pod`]); a world with a type or written resource not opted in cannot be
//! saved (an error naming it, never a file that leaves it out).

use std::any::TypeId;
use std::io::{Read, Write};

use super::World;
use crate::component::Component;
use crate::message::{Deliveries, Delivery};
use crate::resource::{AnyBox, ResourceSerde};
use crate::savefile::{
    Found, LoadError, Put, SAVE_MAGIC, STAGED_VERSION, SaveError, SaveSource, Sink, VERSION,
};
use crate::storage::save::ParsedStorage;

/// A checked, decoded save, ready to apply; with the runtime's part, if the save has one.
pub(crate) struct ParsedSave {
    storage: ParsedStorage,
    /// Per message type, by registration order: its decoded messages, and (a version-5
    /// save) which stage's Sync delivered which.
    messages: Vec<SavedInbox>,
    /// Per resource opted in here (by opt-in order): its saved value, or `None` if the
    /// save holds it absent.
    resources: Vec<Option<AnyBox>>,
    /// The runtime's bytes, for a runtime save.
    pub(crate) runtime: Option<Vec<u8>>,
}

/// One message type's part of a save: its decoded messages (`(Vec<M>, Vec<(Entity, M)>)`)
/// and, from a version-5 save, which stage's Sync delivered which.
type SavedInbox = (Box<dyn std::any::Any + Send + Sync>, Option<Deliveries>);

impl ParsedSave {
    /// Forgets which stage's Sync made each mark and message (a version-5 save's stage
    /// parts): the load falls back to version 4's meaning, the marks' union and the
    /// messages counted as sent between frames.
    pub(crate) fn drop_stages(&mut self) {
        self.storage.drop_layers();
        for (_, deliveries) in &mut self.messages {
            *deliveries = None;
        }
    }
}

/// A message type's deliveries, after its messages in a version-5 save: the stage count
/// (0: none), then for several the deliveries, each its stage and its counts.
fn write_deliveries(out: &mut Sink<'_>, deliveries: Option<Deliveries>) {
    let Some(s) = deliveries else {
        out.put_u32(0);
        return;
    };
    out.put_u32(s.stages);
    out.put_u64(s.deliveries.len() as u64);
    for g in &s.deliveries {
        out.put_u32(g.stage);
        out.put_u64(g.broadcast as u64);
        out.put_u64(g.addressed as u64);
    }
}

/// What [`write_deliveries`] wrote, unchecked (see [`check_deliveries`]). The list grows
/// as its 20-byte entries are read, never by the count the file gives.
fn read_deliveries(r: &mut SaveSource<'_>) -> Result<Option<Deliveries>, LoadError> {
    let stages = r.u32("a message type's stage count")?;
    if stages == 0 {
        return Ok(None);
    }
    let n = r.count("a message type's deliveries")?;
    let mut deliveries = Vec::with_capacity(r.capacity(n, 20));
    for _ in 0..n {
        let stage = r.u32("a message delivery")?;
        let mut count = || -> Result<usize, LoadError> {
            let c = r.u64("a message delivery")?;
            usize::try_from(c).map_err(|_| LoadError::BadData {
                what: format!("a message delivery of {c} messages"),
            })
        };
        let broadcast = count()?;
        let addressed = count()?;
        deliveries.push(Delivery {
            stage,
            broadcast,
            addressed,
        });
    }
    Ok(Some(Deliveries { stages, deliveries }))
}

/// Deliveries that hold together: several stages, each delivery's stage one of them, and
/// no more messages in them than there are (`broadcast`, `addressed`; those after the
/// last delivery were sent between frames).
fn check_deliveries(s: &Deliveries, broadcast: usize, addressed: usize) -> Result<(), String> {
    if s.stages < 2 {
        return Err(format!("deliveries of {} stage", s.stages));
    }
    if let Some(g) = s.deliveries.iter().find(|g| g.stage >= s.stages) {
        return Err(format!(
            "a delivery of stage {}, of {} stages",
            g.stage, s.stages
        ));
    }
    let (mut b, mut a) = (0usize, 0usize);
    for g in &s.deliveries {
        b = b.saturating_add(g.broadcast);
        a = a.saturating_add(g.addressed);
    }
    if b > broadcast || a > addressed {
        return Err(format!(
            "deliveries of {b} broadcast and {a} addressed messages, of {broadcast} and \
             {addressed} delivered"
        ));
    }
    Ok(())
}

const KIND_WORLD: u8 = 0;
const KIND_RUNTIME: u8 = 1;

impl World {
    /// Opts component type `C` into save files ([`save`](Self::save),
    /// [`load`](Self::load)), through serde. Every registered type must be opted in to
    /// save (or load) a world. The `save` flag of `#[component(..)]` does the same in
    /// [`register_default`](Self::register_default). Replaces a
    /// [`saving_pod`](Self::saving_pod) opt-in. Returns `self` to chain.
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn saving<C>(&mut self) -> &mut Self
    where
        C: Component + serde::Serialize + serde::de::DeserializeOwned,
    {
        let id = self.storage.registry().id::<C>();
        self.storage.typed_mut::<C>(id).enable_serde();
        self
    }

    /// Opts component type `C` into save files as plain data: its columns are saved as
    /// their bytes, handed to the writer as they are, and loaded by copying them back
    /// through a cache-sized buffer, where [`saving`](Self::saving) encodes and decodes
    /// every value through serde. `C` must be
    /// [`bytemuck::Pod`] (`#[derive(Pod, Zeroable)]` with `#[repr(C)]` or
    /// `#[repr(transparent)]`: numbers and arrays of them, no padding, no pointers), so
    /// any bytes a file holds are a valid `C`: a load checks only their length. The
    /// `save_pod` flag of `#[component(..)]` does the same in
    /// [`register_default`](Self::register_default). Replaces a `saving` opt-in (and the
    /// other way round); a save records which one each type used, and loads only into a
    /// world that opted it in the same way.
    ///
    /// The bytes are those of `C` in memory: a save loads into a build where `C` has the
    /// same layout (a changed size is a [`LoadError::Encoding`]; a change that keeps the
    /// size, such as swapped fields, is not seen, as with serde), on a machine of the
    /// same byte order (another is a [`LoadError::Encoding`]).
    ///
    /// ```
    /// use runsync::prelude::*;
    /// #[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
    /// #[component(merge = merge::last, save_pod, checksum)]
    /// #[repr(C)]
    /// struct Pos { x: f32, y: f32 }
    ///
    /// let make = || { let mut w = World::new(); w.register_default::<Pos>(); w };
    /// let mut world = make();
    /// let e = world.spawn((Pos { x: 1.0, y: 2.0 },));
    /// let mut file = Vec::new();
    /// world.save(&mut file).unwrap();
    /// let mut loaded = make();
    /// loaded.load(&mut file.as_slice()).unwrap();
    /// assert_eq!(loaded.get::<Pos>(e), Some(&Pos { x: 1.0, y: 2.0 }));
    /// ```
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn saving_pod<C>(&mut self) -> &mut Self
    where
        C: Component + bytemuck::Pod,
    {
        let id = self.storage.registry().id::<C>();
        self.storage.typed_mut::<C>(id).enable_pod();
        self
    }

    /// Opts resource type `R` into save files: a save holds it (or its absence), a load
    /// puts it back (or removes it). A resource systems write
    /// ([`register_resource`](Self::register_resource)) must be opted in to save; others
    /// (assets, configuration) are left alone unless opted in. Opting in twice is a no-op.
    pub fn saving_resource<R>(&mut self) -> &mut Self
    where
        R: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    {
        let type_id = TypeId::of::<R>();
        if !self.resource_serde.iter().any(|r| r.type_id == type_id) {
            self.resource_serde.push(ResourceSerde::of::<R>());
        }
        self
    }

    /// Writes the world to `w` as a save file: every entity (ids, generations, free
    /// list), table (in creation order), component and opted-in resource. A world with
    /// the same registrations [`load`](Self::load)s it into exactly this state: the same
    /// checksum, and the same frames after it.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// #[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    /// #[component(merge = merge::last, save, checksum)]
    /// struct Pos(f32, f32);
    ///
    /// let make = || { let mut w = World::new(); w.register_default::<Pos>(); w };
    /// let mut world = make();
    /// let e = world.spawn((Pos(1.0, 2.0),));
    /// let mut file = Vec::new();
    /// world.save(&mut file).unwrap();
    ///
    /// let mut loaded = make();
    /// loaded.load(&mut file.as_slice()).unwrap();
    /// assert_eq!(loaded.get::<Pos>(e), Some(&Pos(1.0, 2.0)));
    /// assert_eq!(loaded.checksum(), world.checksum());
    /// ```
    ///
    /// Cost: one pass over every column, encoding each value through serde — or, for a
    /// type opted in with [`saving_pod`](Self::saving_pod), handing the column's bytes to
    /// `w` as they are (see the README for both against a `memcpy`). The rest is gathered
    /// and written a 64 KiB chunk at a time (a serde column whole, to prefix its length):
    /// no copy of the whole file is made.
    ///
    /// # Errors
    /// [`SaveError::NotSaving`] / [`SaveError::ResourceNotSaving`] naming the first type
    /// or written resource not opted in (nothing written); [`SaveError::Encode`] if a
    /// value's `Serialize` fails; [`SaveError::Io`].
    pub fn save(&self, w: &mut impl Write) -> Result<(), SaveError> {
        let mut out = Sink::new(w);
        self.write_save(&mut out, None)?;
        out.finish()
    }

    /// Replaces this world's state by a save file's ([`save`](Self::save)). This world
    /// must register the same component types in the same order, opt every one into
    /// saves (each the same way: [`saving`](Self::saving) or
    /// [`saving_pod`](Self::saving_pod)), and opt the same resources into saves, as the
    /// world that saved it; hooks, merges and the opt-ins are this world's own. The file
    /// is read to its end, a 64 KiB chunk at a time: a load never holds a copy of the
    /// whole file.
    ///
    /// A world loads a runtime's save too (its frame counter and `Time` left out). Of a
    /// save of a runtime with several [stages](crate::Runtime::add_stage) (format version
    /// 5), it keeps the change marks and messages but not which stage's Sync made each,
    /// as a world's own save holds them: the first frame after counts them as made
    /// between frames (see [`saving_message`](Self::saving_message)). Only
    /// [`Runtime::load`](crate::Runtime::load) puts the stages back.
    ///
    /// Every bad file is an error that says what is wrong, checked before anything
    /// changes: on an error the world is as it was.
    ///
    /// # Errors
    /// Every [`LoadError`]: a truncated file (and lengths larger than the file: a load
    /// allocates only as the bytes arrive, so they are found out when it ends early),
    /// another magic or version, an unknown or missing type or resource, a type saved
    /// another way, values that do not decode as the type, duplicate entities, an
    /// allocator or tables that do not hold together, bytes after the end.
    pub fn load(&mut self, r: &mut impl Read) -> Result<(), LoadError> {
        let mut src = SaveSource::new(r);
        let mut parsed = self.parse_save_from(&mut src)?;
        src.finish()?;
        parsed.drop_stages();
        self.apply_save(parsed);
        Ok(())
    }

    /// Writes a whole save (header, `runtime`'s bytes if given, body) to `out`.
    pub(crate) fn write_save(
        &self,
        out: &mut Sink<'_>,
        runtime: Option<&[u8]>,
    ) -> Result<(), SaveError> {
        if let Some(type_name) = self.written_resource_not_saving() {
            return Err(SaveError::ResourceNotSaving { type_name });
        }
        if let Some(type_name) = self.message_not_saving() {
            return Err(SaveError::MessageNotSaving { type_name });
        }
        // A runtime's save of a multi-stage frame says which stage's Sync made each mark
        // and message (version 5); any other save is version 4, byte for byte.
        let staged = runtime.is_some()
            && (self.storage.has_stage_layers()
                || self
                    .messages
                    .inboxes()
                    .iter()
                    .any(|i| i.deliveries().is_some()));
        out.raw(&SAVE_MAGIC);
        out.put_u32(if staged { STAGED_VERSION } else { VERSION });
        match runtime {
            None => out.put_u8(KIND_WORLD),
            Some(b) => {
                out.put_u8(KIND_RUNTIME);
                out.put_bytes(b);
            }
        }
        out.end_section();
        self.storage.save_to(out, staged)?;
        out.put_u64(self.resource_serde.len() as u64);
        for r in &self.resource_serde {
            out.put_bytes(r.name.as_bytes());
            // Presence and length, patched once the value is encoded in place.
            let at = out.placeholder(9);
            let present =
                (r.encode)(&self.resources, &mut out.buf).map_err(|message| SaveError::Encode {
                    type_name: r.name,
                    message,
                })?;
            out.buf[at] = u8::from(present);
            let len = (out.buf.len() - at - 9) as u64;
            out.buf[at + 1..at + 9].copy_from_slice(&len.to_le_bytes());
        }
        out.end_section();
        // The delivered messages, type by type in registration order.
        let inboxes = self.messages.inboxes();
        out.put_u64(inboxes.len() as u64);
        for inbox in inboxes {
            out.put_bytes(inbox.name().as_bytes());
            let at = out.placeholder(8);
            inbox
                .encode(&mut out.buf)
                .map_err(|message| SaveError::Encode {
                    type_name: inbox.name(),
                    message,
                })?;
            let len = (out.buf.len() - at - 8) as u64;
            out.buf[at..at + 8].copy_from_slice(&len.to_le_bytes());
            if staged {
                write_deliveries(out, inbox.deliveries());
            }
        }
        out.end_section();
        Ok(())
    }

    /// Reads and checks a whole save from `r` (which may go on after it); changes
    /// nothing.
    pub(crate) fn parse_save_from(&self, r: &mut SaveSource<'_>) -> Result<ParsedSave, LoadError> {
        r.header(&SAVE_MAGIC)?;
        let runtime = match r.u8("the kind")? {
            KIND_WORLD => None,
            KIND_RUNTIME => Some(r.bytes("the runtime's part")?),
            k => {
                return Err(LoadError::BadData {
                    what: format!("unknown kind of save {k}"),
                });
            }
        };
        r.end_section(|| "the header".into())?;
        if let Some(type_name) = self.written_resource_not_saving() {
            return Err(LoadError::ResourceNotSaving { type_name });
        }
        if let Some(type_name) = self.message_not_saving() {
            return Err(LoadError::MessageNotSaving { type_name });
        }
        let storage = self.storage.parse_save(r)?;
        // (Problems are kept until the section's check: see `Found`.)
        let mut found = Found::default();
        let n = r.count("the resource list")?;
        let mut resources: Vec<Option<Option<AnyBox>>> =
            (0..self.resource_serde.len()).map(|_| None).collect();
        for _ in 0..n {
            let name = String::from_utf8(r.bytes("a resource name")?).unwrap_or_else(|e| {
                found.keep(LoadError::BadData {
                    what: "a resource name is not UTF-8".into(),
                });
                String::from_utf8_lossy(e.as_bytes()).into_owned()
            });
            let present = r.u8("a resource")?;
            let len = r.u64("a resource")?;
            let value = r.scratch(len, "a resource")?;
            let Some(i) = self.resource_serde.iter().position(|s| s.name == name) else {
                found.keep(LoadError::UnknownResource { name });
                continue;
            };
            let s = &self.resource_serde[i];
            let decoded = match present {
                0 if value.is_empty() => None,
                1 => {
                    let value = (s.decode)(value).map_err(|message| LoadError::Decode {
                        type_name: s.name,
                        table: None,
                        message,
                    });
                    match found.ok(value) {
                        Some(v) => Some(v),
                        None => continue,
                    }
                }
                _ => {
                    found.keep(LoadError::BadData {
                        what: format!("resource `{name}`: bad presence byte {present}"),
                    });
                    continue;
                }
            };
            if resources[i].replace(decoded).is_some() {
                found.keep(LoadError::BadData {
                    what: format!("resource `{name}` is saved twice"),
                });
            }
        }
        r.end_section(|| "the resources".into())?;
        found.check()?;
        let resources = resources
            .into_iter()
            .zip(&self.resource_serde)
            .map(|(v, s)| v.ok_or(LoadError::MissingResource { type_name: s.name }))
            .collect::<Result<_, _>>()?;
        let messages = self.parse_messages(r)?;
        Ok(ParsedSave {
            storage,
            messages,
            resources,
            runtime,
        })
    }

    /// The messages section of a save: the same message types as this world's, in
    /// order, each decoded.
    fn parse_messages(&self, r: &mut SaveSource<'_>) -> Result<Vec<SavedInbox>, LoadError> {
        let inboxes = self.messages.inboxes();
        let world = || inboxes.iter().map(|i| i.name()).collect::<Vec<_>>();
        // (Problems are kept until the section's check: see `Found`.)
        let mut found = Found::default();
        let n = r.count("the message type list")?;
        let mut names = Vec::with_capacity(r.capacity(n, 9));
        let mut decoded = Vec::with_capacity(inboxes.len());
        for k in 0..n {
            let name = String::from_utf8(r.bytes("a message type name")?).unwrap_or_else(|e| {
                found.keep(LoadError::BadData {
                    what: "a message type name is not UTF-8".into(),
                });
                String::from_utf8_lossy(e.as_bytes()).into_owned()
            });
            let len = r.u64("a message type's messages")?;
            let bytes = r.scratch(len, "a message type's messages")?;
            names.push(name);
            let messages = inboxes
                .get(k)
                .filter(|i| i.name() == names[k])
                .map(|inbox| {
                    inbox.decode(bytes).map_err(|message| LoadError::Decode {
                        type_name: inbox.name(),
                        table: None,
                        message,
                    })
                });
            // (Read before a wrong name is reported, below, with every name.)
            let deliveries = if r.staged() {
                read_deliveries(r)?
            } else {
                None
            };
            if let Some(messages) = messages {
                decoded.extend(found.ok(messages).map(|m| (m, deliveries)));
            }
        }
        r.end_section(|| "the messages".into())?;
        found.check()?;
        if decoded.len() != inboxes.len() || n != inboxes.len() {
            return Err(LoadError::MessageTypes {
                file: names,
                world: world(),
            });
        }
        decoded
            .into_iter()
            .zip(inboxes)
            .map(|(((m, broadcast, addressed), deliveries), inbox)| {
                if let Some(s) = &deliveries {
                    check_deliveries(s, broadcast, addressed).map_err(|e| LoadError::BadData {
                        what: format!("message type `{}`: {e}", inbox.name()),
                    })?;
                }
                Ok((m, deliveries))
            })
            .collect()
    }

    /// The first message type (by registration order) not opted into saves.
    fn message_not_saving(&self) -> Option<&'static str> {
        let inboxes = self.messages.inboxes();
        inboxes.iter().find(|i| !i.saving()).map(|i| i.name())
    }

    /// Makes this world the parsed save's (the runtime's part is the caller's), with
    /// the stage parts of a version-5 save unless [`ParsedSave::drop_stages`] dropped
    /// them.
    pub(crate) fn apply_save(&mut self, parsed: ParsedSave) {
        self.storage.apply_save(parsed.storage);
        for (inbox, (decoded, deliveries)) in
            self.messages.inboxes_mut().iter_mut().zip(parsed.messages)
        {
            inbox.install(decoded, deliveries);
        }
        for (s, value) in self.resource_serde.iter().zip(parsed.resources) {
            (s.put)(&mut self.resources, value);
        }
    }

    /// A world with this one's component types and save, checksum and `Debug` opt-ins,
    /// but no entities, merges, hooks or resources: somewhere to load a save beside
    /// this world and compare the two ([`first_difference`](Self::first_difference)).
    pub(crate) fn shadow(&self) -> World {
        let mut w = World::new();
        w.storage = self.storage.empty_like();
        w.messages = self.messages.empty_like();
        w.resource_sums = self.resource_sums.clone();
        w.resource_serde = self.resource_serde.clone();
        w
    }

    /// The first resource systems write (by registration order) not opted into saves.
    fn written_resource_not_saving(&self) -> Option<&'static str> {
        self.resource_folds
            .iter()
            .find(|f| !self.resource_serde.iter().any(|s| s.type_id == f.type_id()))
            .map(|f| f.type_name())
    }
}
