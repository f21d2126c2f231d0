//! The save-file format's framing and errors: what [`World::save`](crate::World::save),
//! [`World::load`](crate::World::load), the runtime's saves and replays share.
//!
//! A save file is little-endian binary: an 8-byte magic (`RSYNSAVE`, or `RSYNPLAY` for a
//! replay), a `u32` version, then sections of counts and length-prefixed runs. A save is
//! written through a bounded buffer ([`Sink`]), plain-data columns straight from memory,
//! and read from a `Read` a chunk at a time ([`Source`]): no copy of the whole file is
//! made. Nothing is allocated by a count or length the file claims
//! beyond a bound of what was read so far: a file that lies about a length ends early
//! ([`LoadError::Truncated`]), never in a huge allocation. Replays are read whole
//! ([`Reader`]), with every count checked against the bytes that remain
//! ([`LoadError::BadLength`]).
//! Component and resource values go through serde, encoded with
//! [postcard](https://docs.rs/postcard) (a stable, documented wire format), column by
//! column — or, for a component type opted in as plain data
//! ([`World::saving_pod`](crate::World::saving_pod)), as the column's bytes, one copy;
//! each type's [`Encoding`] is in the file. The framing around them is written here by
//! hand, so each column's bytes are delimited and a value that does not decode names its
//! type and table.
//!
//!
//! # Integrity
//!
//! The file is a run of *sections* (the header with the magic and version, the component
//! types, the entity allocator, the tables, each type's columns, the resources, the
//! messages; a replay's header, frames and each keyframe), each followed by a trailer: its
//! length in bytes (`u64`) and the [CRC-32C](https://docs.rs/crc32c) of its bytes (`u32`).
//! A CRC-32C catches every flipped bit and every burst of up to 32 flipped bits, so a file
//! damaged after it was written (a disk, a copy, an edit) is refused with
//! [`LoadError::Corrupt`] naming the section, never loaded as another world. The check of a
//! section comes when its last byte has been read: a damaged field that cannot be read at
//! all (a length past the end, a value that does not decode) may be reported as that,
//! first; every check of what the file *means* (the types against this world's, the
//! entities, the hierarchy) is still made, for a file written on purpose with good sums.
//! The trailers come after the sections, so a file can be walked from its end, section
//! by section, without parsing it.
//!
//! # Versions
//!
//! 1 had no encoding per type (every column through serde); 2 adds it; 4 adds the
//! integrity check. Version 2 is still read (without a check); 1 is refused. There is no
//! version 3: it is one flipped bit away from 2 (as 0 and 6 are from 4), so a flipped bit
//! in the version of a checked file could have made it read as an unchecked one; 4 is two
//! bits away from 2.

use std::fmt;

/// The first bytes of a world or runtime save.
pub(crate) const SAVE_MAGIC: [u8; 8] = *b"RSYNSAVE";
/// The format version this build writes (and reads).
pub(crate) const VERSION: u32 = 4;
/// The older version this build still reads: as [`VERSION`], with no integrity check.
pub(crate) const UNCHECKED_VERSION: u32 = 2;

/// How a component type's values are laid out in a save: written after its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// Each value through serde, postcard-encoded one after the other (`saving`). Byte 0.
    Serde,
    /// The values' bytes as they are in memory (`saving_pod`: a `bytemuck::Pod` type),
    /// `size` bytes each, in the byte order of the machine that saved them. Byte 1
    /// (little-endian) or 2 (big-endian), then `size` as a `u32`.
    Plain {
        /// `size_of` the type.
        size: u32,
        /// The byte order of the saving machine.
        little_endian: bool,
    },
}

impl Encoding {
    /// Plain bytes of `size` bytes a value, in this machine's byte order.
    pub(crate) fn plain(size: usize) -> Encoding {
        Encoding::Plain {
            size: u32::try_from(size).expect("a component type under 4 GiB"),
            little_endian: cfg!(target_endian = "little"),
        }
    }

    pub(crate) fn write(self, out: &mut Vec<u8>) {
        match self {
            Encoding::Serde => out.put_u8(0),
            Encoding::Plain {
                size,
                little_endian,
            } => {
                out.put_u8(if little_endian { 1 } else { 2 });
                out.put_u32(size);
            }
        }
    }

    pub(crate) fn read(r: &mut Source<'_>) -> Result<Encoding, LoadError> {
        match r.u8("a type's encoding")? {
            0 => Ok(Encoding::Serde),
            b @ (1 | 2) => Ok(Encoding::Plain {
                size: r.u32("a type's encoding")?,
                little_endian: b == 1,
            }),
            b => Err(LoadError::BadData {
                what: format!("unknown encoding {b} of a component type"),
            }),
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Encoding::Serde => write!(f, "serde values (`saving`)"),
            Encoding::Plain {
                size,
                little_endian,
            } => write!(
                f,
                "plain data of {size} bytes a value, {} (`saving_pod`)",
                if *little_endian {
                    "little-endian"
                } else {
                    "big-endian"
                }
            ),
        }
    }
}

/// Why a save could not be written ([`World::save`](crate::World::save),
/// [`Runtime::save`](crate::Runtime::save), a replay). Nothing is written when a type or
/// resource is not opted in (checked before the first byte); an I/O error, or a value
/// whose `Serialize` fails, may leave a partial file (a save is written as it is made, a
/// chunk at a time).
#[derive(Debug)]
#[non_exhaustive]
pub enum SaveError {
    /// A registered component type is not opted in with
    /// [`World::saving`](crate::World::saving) (or the `save` flag of
    /// `#[component(..)]`); the first by registration order.
    NotSaving {
        /// The type's name.
        type_name: &'static str,
    },
    /// A resource systems write ([`World::register_resource`](crate::World::register_resource))
    /// is not opted in with [`World::saving_resource`](crate::World::saving_resource).
    ResourceNotSaving {
        /// The resource type's name.
        type_name: &'static str,
    },
    /// A registered message type is not opted in with
    /// [`World::saving_message`](crate::World::saving_message): its delivered messages
    /// are read by the next frame, so a save without them would run on differently.
    MessageNotSaving {
        /// The message type's name.
        type_name: &'static str,
    },
    /// A value's `Serialize` failed.
    Encode {
        /// The component or resource type.
        type_name: &'static str,
        /// What serde said.
        message: String,
    },
    /// [`Runtime::finish_replay`](crate::Runtime::finish_replay) with no replay being
    /// recorded.
    NotRecording,
    /// Writing failed.
    Io(std::io::Error),
}

impl fmt::Display for SaveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let short = |n: &'static str| n.rsplit("::").next().unwrap_or(n);
        match self {
            SaveError::NotSaving { type_name } => write!(
                f,
                "runsync: component type `{type_name}` cannot be saved: it is not opted in; \
                 derive `Serialize` and `Deserialize` for it and call `world.saving::<{}>()` \
                 (or add the `save` flag to its `#[component(..)]`)",
                short(type_name)
            ),
            SaveError::ResourceNotSaving { type_name } => write!(
                f,
                "runsync: resource `{type_name}` is written by systems but not opted into \
                 saves; derive `Serialize` and `Deserialize` for it and call \
                 `world.saving_resource::<{}>()`",
                short(type_name)
            ),
            SaveError::MessageNotSaving { type_name } => write!(
                f,
                "runsync: message type `{type_name}` is not opted into saves (its delivered \
                 messages are read by the next frame); derive `Serialize` and `Deserialize` \
                 for it and call `world.saving_message::<{}>()`",
                short(type_name)
            ),
            SaveError::Encode { type_name, message } => {
                write!(
                    f,
                    "runsync: a `{type_name}` could not be serialized: {message}"
                )
            }
            SaveError::NotRecording => write!(
                f,
                "runsync: no replay is being recorded; start one with `rt.record_replay::<I>()`"
            ),
            SaveError::Io(e) => write!(f, "runsync: writing the save failed: {e}"),
        }
    }
}

impl std::error::Error for SaveError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SaveError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for SaveError {
    fn from(e: std::io::Error) -> Self {
        SaveError::Io(e)
    }
}

/// Why a save file could not be loaded ([`World::load`](crate::World::load),
/// [`Runtime::load`](crate::Runtime::load), a replay). Every check comes before the first
/// change: a load that fails leaves the world as it was.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// Reading failed (other than the input ending early: [`Truncated`](Self::Truncated)).
    Io(std::io::Error),
    /// Not a runsync save (or replay) file: the first 8 bytes are not the magic.
    BadMagic {
        /// What the file starts with (up to 8 bytes).
        found: Vec<u8>,
    },
    /// A save of a format version this build does not read (it reads the version it
    /// writes, 4, and version 2).
    Version {
        /// The file's version.
        found: u32,
        /// The version this build writes.
        supported: u32,
    },
    /// A section of the file does not match its integrity check: its CRC-32C, or its
    /// length, is not the one written after it. The file was damaged after it was
    /// written (a disk or transfer error, an edit); nothing of it is loaded.
    Corrupt {
        /// The section, as the file's layout names it: `the entity allocator`, `the
        /// columns of `game::Pos``, `keyframe 2 of 5`, ...
        section: String,
        /// What does not match: the CRC-32C or the length, written and found.
        what: String,
    },
    /// The input ended inside `what`.
    Truncated {
        /// The part being read.
        what: &'static str,
    },
    /// A count or length larger than what is left of the input could hold (in a replay,
    /// which is read whole: a save is read as a stream, where such a length is an input
    /// that ends early, [`Truncated`](Self::Truncated), allocated for only as its bytes
    /// arrive).
    BadLength {
        /// The part being read.
        what: &'static str,
        /// The count or length the file gives.
        length: u64,
        /// Bytes left in the input.
        remaining: usize,
    },
    /// Bytes that are not UTF-8 where a type name belongs, or another malformed field.
    BadData {
        /// What is wrong.
        what: String,
    },
    /// The file holds a component type this world does not register.
    UnknownType {
        /// The type name in the file.
        name: String,
    },
    /// This world registers a component type the file does not hold.
    MissingType {
        /// The world's type.
        type_name: &'static str,
    },
    /// The file and the world register the same component types in another order (ids
    /// are registration order, and decide table order, so they must agree).
    TypeOrder {
        /// The file's types, by id.
        file: Vec<String>,
        /// The world's types, by id.
        world: Vec<&'static str>,
    },
    /// A component type is saved in another [encoding](crate::World::saving_pod) than
    /// this world opts it in with (serde values vs plain data), or as plain data of
    /// another size or byte order.
    Encoding {
        /// The type's name.
        type_name: &'static str,
        /// How the file holds it.
        file: String,
        /// How this world opts it in.
        world: String,
    },
    /// A component type of this world is not opted into saves, so it cannot be decoded.
    NotSaving {
        /// The type's name.
        type_name: &'static str,
    },
    /// The file holds a resource this world does not opt into saves.
    UnknownResource {
        /// The resource name in the file.
        name: String,
    },
    /// This world opts a resource into saves that the file does not hold.
    MissingResource {
        /// The world's resource type.
        type_name: &'static str,
    },
    /// A resource systems write is not opted into saves here.
    ResourceNotSaving {
        /// The resource type's name.
        type_name: &'static str,
    },
    /// A registered message type is not opted into saves here.
    MessageNotSaving {
        /// The message type's name.
        type_name: &'static str,
    },
    /// The file's message types are not this world's (the same types, registered in the
    /// same order, are needed).
    MessageTypes {
        /// The file's, in order.
        file: Vec<String>,
        /// This world's, by registration order.
        world: Vec<&'static str>,
    },
    /// Values that do not decode as this world's type of that name (another type under
    /// the same name, or corrupt bytes), or leave bytes over.
    Decode {
        /// The component or resource type.
        type_name: &'static str,
        /// The table (for a component column), in creation order.
        table: Option<u32>,
        /// What postcard said.
        message: String,
    },
    /// An entity listed in two rows (or twice in the allocator).
    DuplicateEntity {
        /// The entity.
        entity: crate::entity::Entity,
    },
    /// The parents and children in the file do not agree (a `ChildOf` naming a dead
    /// entity or one whose `Children` leave the child out, a child listed twice or by a
    /// parent it does not name, an empty `Children`, or a cycle); `what` says where.
    BadHierarchy {
        /// What is wrong.
        what: String,
    },
    /// The entity allocator or the tables do not hold together (a row's entity that is
    /// not allocated, a live slot in no table, a free slot listed twice, ...).
    BadEntities {
        /// What is wrong.
        what: String,
    },
    /// A table that cannot be (types out of order or unregistered, the same set twice,
    /// table 0 not the empty set).
    BadTable {
        /// The table, in creation order.
        table: u32,
        /// What is wrong.
        what: String,
    },
    /// Bytes after the end of the save.
    TrailingBytes {
        /// How many.
        count: usize,
    },
    /// [`Runtime::load`](crate::Runtime::load) of a save made by [`World::save`](crate::World::save),
    /// which holds no frame counter or `Time`.
    NotARuntimeSave,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "runsync: cannot load the save: ")?;
        match self {
            LoadError::Io(e) => write!(f, "reading failed: {e}"),
            LoadError::BadMagic { found } => write!(
                f,
                "not a runsync save (it starts with {found:02x?}, not `RSYNSAVE`/`RSYNPLAY`)"
            ),
            LoadError::Version { found, supported } if found > supported => write!(
                f,
                "format version {found}, written by a newer runsync; this build reads \
                 versions {UNCHECKED_VERSION} and {supported}: load it with a runsync as new \
                 as the one that wrote it"
            ),
            LoadError::Version {
                found: 1,
                supported,
            } => write!(
                f,
                "format version 1, which this build no longer reads (it reads versions \
                 {UNCHECKED_VERSION} and {supported}): only a runsync from before version \
                 {UNCHECKED_VERSION} can load it"
            ),
            LoadError::Version { found, supported } => write!(
                f,
                "format version {found}, which no runsync writes (this build reads versions \
                 {UNCHECKED_VERSION} and {supported}): a damaged file?"
            ),
            LoadError::Corrupt { section, what } => write!(
                f,
                "the file is corrupt: {section} fails its integrity check ({what}); it was \
                 damaged after it was written (a disk or copy error, or an edit), so nothing \
                 of it is loaded"
            ),
            LoadError::Truncated { what } => write!(
                f,
                "the file ends early, inside {what} (cut short, or a length in it damaged?)"
            ),
            LoadError::BadLength {
                what,
                length,
                remaining,
            } => write!(
                f,
                "{what} claims {length} entries or bytes, more than the {remaining} bytes left \
                 could hold (corrupt file)"
            ),
            LoadError::BadData { what } => write!(f, "{what}"),
            LoadError::UnknownType { name } => write!(
                f,
                "the file holds component type {name:?}, which this world does not register; \
                 register the same types as the world that saved it"
            ),
            LoadError::MissingType { type_name } => write!(
                f,
                "this world registers component type `{type_name}`, which the file does not \
                 hold; register the same types as the world that saved it"
            ),
            LoadError::TypeOrder { file, world } => write!(
                f,
                "the file registers [{}], this world [{}]: register them in the same order",
                file.join(", "),
                world.join(", ")
            ),
            LoadError::Encoding {
                type_name,
                file,
                world,
            } => write!(
                f,
                "component type `{type_name}` is saved as {file}, and opted in here as \
                 {world}: opt it in as the world that saved it did (a type whose size \
                 changed cannot load plain data saved before)"
            ),
            LoadError::NotSaving { type_name } => write!(
                f,
                "component type `{type_name}` is not opted into saves here; call \
                 `world.saving::<..>()` for it (or add the `save` flag) before loading"
            ),
            LoadError::UnknownResource { name } => write!(
                f,
                "the file holds resource {name:?}, which this world does not opt into saves; \
                 call `world.saving_resource::<..>()` for it before loading"
            ),
            LoadError::MissingResource { type_name } => write!(
                f,
                "this world opts resource `{type_name}` into saves, but the file does not \
                 hold it"
            ),
            LoadError::ResourceNotSaving { type_name } => write!(
                f,
                "resource `{type_name}` is written by systems but not opted into saves here; \
                 call `world.saving_resource::<..>()` for it before loading"
            ),
            LoadError::MessageNotSaving { type_name } => write!(
                f,
                "message type `{type_name}` is not opted into saves here; call \
                 `world.saving_message::<..>()` for it before loading"
            ),
            LoadError::MessageTypes { file, world } => write!(
                f,
                "the file's message types are [{}], this world's [{}]; register the same \
                 message types in the same order before loading",
                file.join(", "),
                world.join(", ")
            ),
            LoadError::Decode {
                type_name,
                table,
                message,
            } => {
                write!(f, "values of `{type_name}`")?;
                if let Some(t) = table {
                    write!(f, " in table {t}")?;
                }
                write!(
                    f,
                    " do not decode as this build's type of that name: {message} (was it saved \
                     by a build where the type differs, or is the file damaged?)"
                )
            }
            LoadError::DuplicateEntity { entity } => {
                write!(f, "entity {entity} is listed twice (corrupt file)")
            }
            LoadError::BadEntities { what } => write!(f, "bad entity allocator: {what}"),
            LoadError::BadHierarchy { what } => write!(f, "bad parents and children: {what}"),
            LoadError::BadTable { table, what } => write!(f, "bad table {table}: {what}"),
            LoadError::TrailingBytes { count } => {
                write!(f, "{count} bytes after the end of the save (corrupt file)")
            }
            LoadError::NotARuntimeSave => write!(
                f,
                "it is a world save (`World::save`), with no frame counter or `Time`; load it \
                 with `World::load`, or save with `Runtime::save`"
            ),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Appends little-endian fields to a buffer.
pub(crate) trait Put {
    fn put_u8(&mut self, v: u8);
    fn put_u32(&mut self, v: u32);
    fn put_u64(&mut self, v: u64);
    /// A `u64` length, then the bytes.
    fn put_bytes(&mut self, b: &[u8]);
}

impl Put for Vec<u8> {
    #[inline]
    fn put_u8(&mut self, v: u8) {
        self.push(v);
    }
    #[inline]
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    #[inline]
    fn put_u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_bytes(&mut self, b: &[u8]) {
        self.put_u64(b.len() as u64);
        self.extend_from_slice(b);
    }
}

/// Ends the section written to `out` since `from`: appends its trailer (length and
/// CRC-32C; see the module docs).
pub(crate) fn seal(out: &mut Vec<u8>, from: usize) {
    let crc = crc32c::crc32c(&out[from..]);
    let len = (out.len() - from) as u64;
    out.put_u64(len);
    out.put_u32(crc);
}

/// Compares a section as read (`len` bytes whose CRC-32C is `crc`) with its trailer.
fn check_section(
    len: u64,
    crc: u32,
    trailer: (u64, u32),
    section: impl FnOnce() -> String,
) -> Result<(), LoadError> {
    let what = if trailer.0 != len {
        format!("{len} bytes read, {} written", trailer.0)
    } else if trailer.1 != crc {
        format!("CRC-32C {crc:08x}, {:08x} written", trailer.1)
    } else {
        return Ok(());
    };
    Err(LoadError::Corrupt {
        section: section(),
        what,
    })
}

/// The first problem found in what a section means (an entity that is not allocated, a
/// name that is not UTF-8, ...), kept while the section is read on to its end: a damaged
/// section is then reported as damaged ([`LoadError::Corrupt`], by its check), a sound
/// one by its first problem. Problems that leave the rest unreadable (a length, an
/// unknown encoding) cannot wait: they are returned at once.
#[derive(Default)]
pub(crate) struct Found(Option<LoadError>);

impl Found {
    /// Keeps `e` if it is the first problem.
    pub(crate) fn keep(&mut self, e: LoadError) {
        self.0.get_or_insert(e);
    }

    /// The value, or `None` with its error kept.
    pub(crate) fn ok<T>(&mut self, r: Result<T, LoadError>) -> Option<T> {
        r.map_err(|e| self.keep(e)).ok()
    }

    /// The first problem, if any: after the section's check.
    pub(crate) fn check(self) -> Result<(), LoadError> {
        self.0.map_or(Ok(()), Err)
    }
}

/// Reads fields from a save held in memory; every read is bounds-checked, every count
/// checked against what is left.
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
    /// The current section, from its start (to the end of the input).
    section: &'a [u8],
    /// Whether the input's sections carry trailers (a version read by
    /// [`header`](Self::header) that has them).
    checked: bool,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader {
            rest: bytes,
            section: bytes,
            checked: false,
        }
    }

    /// Ends a section: reads its trailer and checks it against the bytes read since the
    /// last one (or the start). Nothing for an input of a version without trailers.
    pub(crate) fn end_section(
        &mut self,
        section: impl FnOnce() -> String,
    ) -> Result<(), LoadError> {
        if !self.checked {
            return Ok(());
        }
        let len = self.section.len() - self.rest.len();
        let crc = crc32c::crc32c(&self.section[..len]);
        let trailer = (
            self.u64("a section's check")?,
            self.u32("a section's check")?,
        );
        self.section = self.rest;
        check_section(len as u64, crc, trailer, section)
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], LoadError> {
        if self.rest.len() < n {
            return Err(LoadError::Truncated { what });
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, LoadError> {
        Ok(self.take(1, what)?[0])
    }

    /// What is left to read.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.rest
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, LoadError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, LoadError> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// A `u64` count of entries of at least `min_size` bytes each, checked against what
    /// is left (so a count that lies cannot size an allocation).
    pub(crate) fn count(
        &mut self,
        min_size: usize,
        what: &'static str,
    ) -> Result<usize, LoadError> {
        let n = self.u64(what)?;
        let fits = usize::try_from(n)
            .ok()
            .filter(|&n| n.saturating_mul(min_size.max(1)) <= self.rest.len());
        fits.ok_or(LoadError::BadLength {
            what,
            length: n,
            remaining: self.rest.len(),
        })
    }

    /// A `u64` length, then that many bytes.
    pub(crate) fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], LoadError> {
        let n = self.count(1, what)?;
        self.take(n, what)
    }

    /// A length-prefixed UTF-8 name.
    pub(crate) fn name(&mut self, what: &'static str) -> Result<&'a str, LoadError> {
        let b = self.bytes(what)?;
        std::str::from_utf8(b).map_err(|_| LoadError::BadData {
            what: format!("{what} is not UTF-8"),
        })
    }

    /// Checks the magic and the version (which says whether sections end in trailers):
    /// the start of the first section.
    pub(crate) fn header(&mut self, magic: &[u8; 8]) -> Result<(), LoadError> {
        let found = &self.rest[..self.rest.len().min(8)];
        if found != magic {
            return Err(LoadError::BadMagic {
                found: found.to_vec(),
            });
        }
        self.take(8, "the magic")?;
        self.checked = check_version(self.u32("the version")?)?;
        Ok(())
    }

    /// The input must end here.
    pub(crate) fn finish(&self) -> Result<(), LoadError> {
        match self.rest.len() {
            0 => Ok(()),
            count => Err(LoadError::TrailingBytes { count }),
        }
    }
}

/// How many bytes a [`Sink`] gathers before it writes them out, and a [`Source`] reads
/// ahead; also the most a [`Source`] allocates ahead of the bytes it has read.
const CHUNK: usize = 64 * 1024;

/// Writes a save to a `Write` through a bounded buffer: fields are gathered in `buf` and
/// written out a chunk at a time, big slices (plain-data columns) straight through, so a
/// save never holds a copy of the whole file. The first I/O error is kept (nothing more
/// is written after it) and returned by [`finish`](Self::finish).
///
/// It keeps the CRC-32C and length of the current section as its bytes go out, and
/// [`end_section`](Self::end_section) writes them (see the module docs).
pub(crate) struct Sink<'w> {
    w: &'w mut dyn std::io::Write,
    /// Bytes not written yet. A field may be patched here until the next `put_*`, which
    /// may write them out (see [`placeholder`](Self::placeholder)).
    pub(crate) buf: Vec<u8>,
    error: Option<std::io::Error>,
    /// `buf[..summed]` are in `crc` and `len` (or a trailer); the rest may still be
    /// patched.
    summed: usize,
    /// The current section's CRC-32C and length, so far.
    crc: u32,
    len: u64,
}

impl<'w> Sink<'w> {
    pub(crate) fn new(w: &'w mut dyn std::io::Write) -> Self {
        Sink {
            w,
            buf: Vec::with_capacity(CHUNK),
            error: None,
            summed: 0,
            crc: 0,
            len: 0,
        }
    }

    /// Adds the gathered bytes not summed yet to the section's CRC and length.
    fn sum(&mut self) {
        let new = &self.buf[self.summed..];
        self.crc = crc32c::crc32c_append(self.crc, new);
        self.len += new.len() as u64;
        self.summed = self.buf.len();
    }

    /// Writes out the gathered bytes.
    fn flush(&mut self) {
        self.sum();
        if self.error.is_none() && !self.buf.is_empty() {
            if let Err(e) = self.w.write_all(&self.buf) {
                self.error = Some(e);
            }
        }
        self.buf.clear();
        self.summed = 0;
    }

    /// Ends a section: writes its trailer (its length and CRC-32C) after it. Every
    /// placeholder in it must have been patched.
    pub(crate) fn end_section(&mut self) {
        self.spill();
        self.sum();
        self.buf.extend_from_slice(&self.len.to_le_bytes());
        self.buf.extend_from_slice(&self.crc.to_le_bytes());
        self.summed = self.buf.len();
        (self.crc, self.len) = (0, 0);
    }

    /// Writes out the gathered bytes if they are a chunk or more.
    #[inline]
    fn spill(&mut self) {
        if self.buf.len() >= CHUNK {
            self.flush();
        }
    }

    /// Appends `n` zero bytes to be patched in `buf[at..at + n]` (`at` returned) before
    /// the next `put_*` or [`raw`](Self::raw).
    pub(crate) fn placeholder(&mut self, n: usize) -> usize {
        self.spill();
        let at = self.buf.len();
        self.buf.resize(at + n, 0);
        at
    }

    /// Appends bytes; a chunk or more are written straight through, not copied.
    pub(crate) fn raw(&mut self, bytes: &[u8]) {
        if bytes.len() < CHUNK {
            self.spill();
            self.buf.extend_from_slice(bytes);
        } else {
            self.flush();
            self.crc = crc32c::crc32c_append(self.crc, bytes);
            self.len += bytes.len() as u64;
            if self.error.is_none() {
                if let Err(e) = self.w.write_all(bytes) {
                    self.error = Some(e);
                }
            }
        }
    }

    /// Writes out the rest; the first I/O error, if there was one. The last section
    /// must have been ended.
    pub(crate) fn finish(mut self) -> Result<(), SaveError> {
        debug_assert!(
            self.summed == self.buf.len() && self.len == 0,
            "bytes after the last section"
        );
        self.flush();
        match self.error.take() {
            Some(e) => Err(SaveError::Io(e)),
            None => Ok(()),
        }
    }
}

impl Put for Sink<'_> {
    #[inline]
    fn put_u8(&mut self, v: u8) {
        self.spill();
        self.buf.push(v);
    }
    #[inline]
    fn put_u32(&mut self, v: u32) {
        self.spill();
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    #[inline]
    fn put_u64(&mut self, v: u64) {
        self.spill();
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    fn put_bytes(&mut self, b: &[u8]) {
        self.put_u64(b.len() as u64);
        self.raw(b);
    }
}

/// Why a column did not load: the input (truncated, unreadable), or its bytes (named
/// with the type and table by the caller).
pub(crate) enum ColumnError {
    Load(LoadError),
    Decode(String),
}

impl From<LoadError> for ColumnError {
    fn from(e: LoadError) -> Self {
        ColumnError::Load(e)
    }
}

/// Reads a save from a `Read` a chunk at a time: fields from a read-ahead buffer, big
/// runs of bytes straight into their destination (plain-data values through a buffer
/// aligned for them). It never allocates by a length the input claims beyond its
/// [`allowance`](Self::allowance), 16 times the bytes read so far, so a length that lies
/// ends in [`LoadError::Truncated`], not in a huge allocation.
///
/// Once [`header`](Self::header) has read a version with integrity checks, it keeps the
/// CRC-32C and length of the bytes consumed in the current section, and
/// [`end_section`](Self::end_section) checks them against the section's trailer. Bytes
/// are summed a buffer at a time, as it is refilled, not field by field.
pub(crate) struct Source<'r> {
    r: &'r mut dyn std::io::Read,
    /// Read ahead: `buf[pos..end]` are the next bytes.
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    /// `buf[summed..pos]` are consumed but not yet in `crc` and `len`.
    summed: usize,
    /// The current section's CRC-32C and length, so far (when `checked`).
    crc: u32,
    len: u64,
    /// Whether the input's sections end in trailers.
    checked: bool,
    /// A serde column's bytes, reused from column to column.
    scratch: Vec<u8>,
    /// Plain-data values on their way to a column, aligned for them.
    aligned: Vec<u128>,
    /// Bytes read from the input so far.
    consumed: usize,
}

impl<'r> Source<'r> {
    pub(crate) fn new(r: &'r mut dyn std::io::Read) -> Self {
        Self::with_chunk(r, CHUNK)
    }

    /// A source over an input of at most `len` bytes (one value of an entity record):
    /// its buffers are as small as that allows, not a chunk (64 KiB zeroed per value
    /// was most of the time of importing an entity).
    pub(crate) fn sized(r: &'r mut dyn std::io::Read, len: usize) -> Self {
        Self::with_chunk(r, len.clamp(16, CHUNK).next_multiple_of(16))
    }

    /// A source whose read-ahead buffer is `chunk` bytes (a multiple of 16, at most
    /// [`CHUNK`]).
    fn with_chunk(r: &'r mut dyn std::io::Read, chunk: usize) -> Self {
        Source {
            r,
            buf: vec![0; chunk].into_boxed_slice(),
            pos: 0,
            end: 0,
            summed: 0,
            crc: 0,
            len: 0,
            checked: false,
            scratch: Vec::new(),
            aligned: Vec::new(),
            consumed: 0,
        }
    }

    /// Reads into `into`; `Ok(0)` at the end of the input.
    fn read_some(&mut self, into: &mut [u8]) -> Result<usize, LoadError> {
        loop {
            match self.r.read(into) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(LoadError::Io(e)),
                Ok(n) => {
                    self.consumed += n;
                    return Ok(n);
                }
            }
        }
    }

    /// Adds the consumed bytes of the buffer not summed yet to the section's CRC and
    /// length.
    fn sum(&mut self) {
        if self.checked {
            let new = &self.buf[self.summed..self.pos];
            self.crc = crc32c::crc32c_append(self.crc, new);
            self.len += new.len() as u64;
        }
        self.summed = self.pos;
    }

    /// Ends a section: reads its trailer and checks it against the bytes consumed since
    /// the last one (or the start). Nothing for an input of a version without trailers.
    pub(crate) fn end_section(
        &mut self,
        section: impl FnOnce() -> String,
    ) -> Result<(), LoadError> {
        if !self.checked {
            return Ok(());
        }
        self.sum();
        let (crc, len) = (self.crc, self.len);
        let trailer = (
            self.u64("a section's check")?,
            self.u32("a section's check")?,
        );
        // The trailer is no section's.
        self.summed = self.pos;
        (self.crc, self.len) = (0, 0);
        check_section(len, crc, trailer, section)
    }

    /// How many bytes may be reserved ahead of reading them: 16 times what was read so
    /// far (a column is a few times its rows' entity ids), at least a few chunks. A file
    /// that lies about a length gets no more than that before it runs out.
    fn allowance(&self) -> usize {
        self.consumed.saturating_mul(16).max(4 * CHUNK)
    }

    /// Fills `into` exactly, from the read-ahead buffer first, then the input.
    fn read_exact(&mut self, into: &mut [u8], what: &'static str) -> Result<(), LoadError> {
        let buffered = (self.end - self.pos).min(into.len());
        into[..buffered].copy_from_slice(&self.buf[self.pos..self.pos + buffered]);
        self.pos += buffered;
        let mut done = buffered;
        if done < into.len() {
            // The buffer is used up: sum it before reading past it.
            self.sum();
        }
        while done < into.len() {
            // Small reads refill the buffer (one `read` for many fields); big ones go
            // straight to their destination.
            if into.len() - done < self.buf.len() / 4 {
                self.fill(into.len() - done, what)?;
                let n = into.len() - done;
                into[done..].copy_from_slice(&self.buf[self.pos..self.pos + n]);
                self.pos += n;
                return Ok(());
            }
            match self.read_some(&mut into[done..])? {
                0 => return Err(LoadError::Truncated { what }),
                n => {
                    if self.checked {
                        self.crc = crc32c::crc32c_append(self.crc, &into[done..done + n]);
                        self.len += n as u64;
                    }
                    done += n;
                }
            }
        }
        Ok(())
    }

    /// Makes at least `n` (at most a chunk) bytes buffered.
    fn fill(&mut self, n: usize, what: &'static str) -> Result<(), LoadError> {
        debug_assert!(n <= self.buf.len());
        if self.end - self.pos >= n {
            return Ok(());
        }
        self.sum();
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        self.summed = 0;
        while self.end < n {
            let mut buf = std::mem::take(&mut self.buf);
            let read = self.read_some(&mut buf[self.end..]);
            self.buf = buf;
            match read? {
                0 => return Err(LoadError::Truncated { what }),
                k => self.end += k,
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], LoadError> {
        if self.end - self.pos < N {
            self.fill_cold(N, what)?;
        }
        let b: [u8; N] = self.buf[self.pos..self.pos + N]
            .try_into()
            .expect("N bytes");
        self.pos += N;
        Ok(b)
    }

    #[cold]
    #[inline(never)]
    fn fill_cold(&mut self, n: usize, what: &'static str) -> Result<(), LoadError> {
        self.fill(n, what)
    }

    /// The bytes of the next entries of `size` bytes (at most `n` of them, at least one,
    /// at most a chunk): for a list read in runs rather than field by field. Consumed.
    pub(crate) fn entries(
        &mut self,
        n: usize,
        size: usize,
        what: &'static str,
    ) -> Result<&[u8], LoadError> {
        debug_assert!(n > 0 && size > 0 && size <= self.buf.len());
        if self.end - self.pos < size {
            self.fill(size, what)?;
        }
        let k = ((self.end - self.pos) / size).min(n);
        let run = &self.buf[self.pos..self.pos + k * size];
        self.pos += k * size;
        Ok(run)
    }

    #[inline]
    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, LoadError> {
        Ok(self.array::<1>(what)?[0])
    }

    #[inline]
    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, LoadError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    #[inline]
    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, LoadError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A `u64` count. Nothing is allocated by it: callers reserve at most
    /// [`capacity`](Self::capacity) entries up front and grow as entries are read.
    pub(crate) fn count(&mut self, what: &'static str) -> Result<usize, LoadError> {
        let n = self.u64(what)?;
        usize::try_from(n).map_err(|_| LoadError::BadData {
            what: format!("{what}: {n} entries, more than this machine can address"),
        })
    }

    /// What to reserve up front for `n` entries of `size` bytes claimed by the input:
    /// no more than [`allowance`](Self::allowance) allows.
    pub(crate) fn capacity(&self, n: usize, size: usize) -> usize {
        n.min(self.allowance() / size.max(1))
    }

    /// `n` bytes into `out` (replacing what it held), grown a chunk at a time as they
    /// are read.
    fn read_vec(&mut self, n: u64, what: &'static str, out: &mut Vec<u8>) -> Result<(), LoadError> {
        out.clear();
        let n = usize::try_from(n).map_err(|_| LoadError::Truncated { what })?;
        out.reserve(n.min(self.allowance()));
        while out.len() < n {
            let at = out.len();
            out.resize(at + (n - at).min(4 * CHUNK), 0);
            self.read_exact(&mut out[at..], what)?;
        }
        Ok(())
    }

    /// A `u64` length, then that many bytes.
    pub(crate) fn bytes(&mut self, what: &'static str) -> Result<Vec<u8>, LoadError> {
        let n = self.u64(what)?;
        let mut out = Vec::new();
        self.read_vec(n, what, &mut out)?;
        Ok(out)
    }

    /// `n` bytes into the scratch buffer (reused), borrowed until the next read.
    pub(crate) fn scratch(&mut self, n: u64, what: &'static str) -> Result<&[u8], LoadError> {
        let mut scratch = std::mem::take(&mut self.scratch);
        let read = self.read_vec(n, what, &mut scratch);
        self.scratch = scratch;
        read?;
        Ok(&self.scratch)
    }

    /// `n` plain-data values onto `out`, their bytes read straight into it, a chunk of
    /// values at a time.
    pub(crate) fn pod<T: bytemuck::Pod>(
        &mut self,
        n: usize,
        what: &'static str,
        out: &mut Vec<T>,
    ) -> Result<(), LoadError> {
        let size = std::mem::size_of::<T>().max(1);
        out.reserve(n.min(self.allowance() / size));
        let mut left = n;
        let chunk = self.buf.len();
        if std::mem::align_of::<T>() <= std::mem::align_of::<u128>() && size <= chunk {
            // A chunk of values at a time, read into a buffer aligned for `T` (it stays in
            // cache), then copied onto `out` with one `memcpy`.
            let mut aligned = std::mem::take(&mut self.aligned);
            aligned.resize(chunk / 16, 0);
            let per_chunk = chunk / size;
            let read = loop {
                if left == 0 {
                    break Ok(());
                }
                let step = left.min(per_chunk);
                let bytes = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut aligned)[..step * size];
                if let Err(e) = self.read_exact(bytes, what) {
                    break Err(e);
                }
                out.extend_from_slice(bytemuck::cast_slice(bytes));
                left -= step;
            };
            self.aligned = aligned;
            return read;
        }
        // Over-aligned or huge values: zeroed a chunk at a time (safe Rust cannot read
        // into uninitialised memory), then read over while still in cache.
        let per_chunk = (4 * CHUNK / size).max(1);
        while left > 0 {
            let at = out.len();
            let step = left.min(per_chunk);
            out.resize(at + step, T::zeroed());
            self.read_exact(bytemuck::cast_slice_mut(&mut out[at..]), what)?;
            left -= step;
        }
        Ok(())
    }

    /// Checks the magic and the version (which says whether sections end in trailers):
    /// the start of the first section.
    pub(crate) fn header(&mut self, magic: &[u8; 8]) -> Result<(), LoadError> {
        let mut found = Vec::with_capacity(8);
        while found.len() < 8 {
            match self.u8("the magic") {
                Ok(b) => found.push(b),
                Err(LoadError::Truncated { .. }) => break,
                Err(e) => return Err(e),
            }
            if !magic.starts_with(&found) {
                break;
            }
        }
        if found != magic {
            return Err(LoadError::BadMagic { found });
        }
        let version = self.u32("the version")?;
        self.checked = check_version(version)?;
        // The magic and the version open the first section.
        self.summed = self.pos;
        self.crc = crc32c::crc32c_append(crc32c::crc32c(magic), &version.to_le_bytes());
        self.len = 12;
        Ok(())
    }

    /// The input must end here: reads it to its end, counting.
    pub(crate) fn finish(&mut self) -> Result<(), LoadError> {
        let mut count = self.end - self.pos;
        self.pos = self.end;
        let mut buf = std::mem::take(&mut self.buf);
        let read = loop {
            match self.read_some(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => count += n,
                Err(e) => break Err(e),
            }
        };
        self.buf = buf;
        read?;
        match count {
            0 => Ok(()),
            count => Err(LoadError::TrailingBytes { count }),
        }
    }
}

/// Whether a version this build reads has integrity checks, or the error.
fn check_version(version: u32) -> Result<bool, LoadError> {
    match version {
        VERSION => Ok(true),
        UNCHECKED_VERSION => Ok(false),
        found => Err(LoadError::Version {
            found,
            supported: VERSION,
        }),
    }
}

/// Reads all of `r` into memory (a replay parses from a slice: every check is against the
/// bytes that exist). Grows with the input, never by a length the input claims.
pub(crate) fn read_all(r: &mut impl std::io::Read) -> Result<Vec<u8>, LoadError> {
    let mut bytes = Vec::new();
    r.read_to_end(&mut bytes).map_err(LoadError::Io)?;
    Ok(bytes)
}

/// A postcard output that appends to a `Vec<u8>` (one serializer for a whole column).
pub(crate) struct VecOut<'a>(pub(crate) &'a mut Vec<u8>);

impl postcard::ser_flavors::Flavor for VecOut<'_> {
    type Output = ();
    #[inline(always)]
    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.0.push(data);
        Ok(())
    }
    #[inline(always)]
    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        self.0.extend_from_slice(data);
        Ok(())
    }
    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}

/// Appends `values`, postcard-encoded one after the other, to `out`.
pub(crate) fn encode_values<T: serde::Serialize>(
    values: &[T],
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let mut ser = postcard::Serializer {
        output: VecOut(out),
    };
    for v in values {
        v.serialize(&mut ser).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Appends the bytes of `values` to `out`: the plain-data encoding, one copy.
pub(crate) fn encode_pod<T: bytemuck::Pod>(values: &[T], out: &mut Vec<u8>) -> Result<(), String> {
    out.extend_from_slice(bytemuck::cast_slice(values));
    Ok(())
}

/// Reads a plain-data column of `len` bytes holding `n` values onto `out`: any bytes are a
/// valid `Pod` value, so only the length is checked (before anything is read), and the
/// bytes are read straight into `out`, grown as they arrive (a zero-sized type reads and
/// allocates nothing).
pub(crate) fn decode_pod<T: bytemuck::Pod>(
    src: &mut Source<'_>,
    len: u64,
    n: usize,
    out: &mut Vec<T>,
) -> Result<(), ColumnError> {
    let size = std::mem::size_of::<T>();
    if (n as u64).checked_mul(size as u64) != Some(len) {
        return Err(ColumnError::Decode(format!(
            "{len} bytes for {n} values of {size} bytes"
        )));
    }
    if size == 0 {
        out.resize(n, T::zeroed());
        return Ok(());
    }
    src.pod(n, "a column", out)?;
    Ok(())
}

/// Reads a serde column of `len` bytes holding `n` postcard-encoded values onto `out`.
pub(crate) fn decode_serde<T: serde::de::DeserializeOwned>(
    src: &mut Source<'_>,
    len: u64,
    n: usize,
    out: &mut Vec<T>,
) -> Result<(), ColumnError> {
    let bytes = src.scratch(len, "a column")?;
    decode_values(bytes, n, out).map_err(ColumnError::Decode)
}

/// Decodes exactly `n` values from `bytes` (all of them) onto `out`. Reserves at most one
/// value per byte of input (a value may be zero-sized), so a count that lies cannot size
/// an allocation.
pub(crate) fn decode_values<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    n: usize,
    out: &mut Vec<T>,
) -> Result<(), String> {
    out.reserve(n.min(bytes.len().max(1)));
    let mut de = postcard::Deserializer::from_bytes(bytes);
    for i in 0..n {
        let v = T::deserialize(&mut de).map_err(|e| format!("value {i} of {n}: {e}"))?;
        out.push(v);
    }
    let left = de.finalize().map_err(|e| e.to_string())?;
    if !left.is_empty() {
        return Err(format!("{} bytes left over after {n} values", left.len()));
    }
    Ok(())
}
