//! Why a save could not be written or read: the public errors, and a column's.

use std::fmt;

use super::version::{
    EDITS_REPLAY_VERSION, PACKED_EDITS_REPLAY_VERSION, PACKED_REPLAY_VERSION, REPLAY_VERSION,
    UNCHECKED_VERSION, VERSION,
};

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
    /// A save of a format version this build does not read (it reads the versions it
    /// writes, 4 and 5 — 5 only for a save, not a replay's own header — and version 2).
    Version {
        /// The file's version.
        found: u32,
        /// The newest version this build reads there: 5 for a save, 4 for a replay.
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
        /// Which value, and why: the message of the type's own `Deserialize` when it
        /// refused the value (a check of what it holds), else what postcard said.
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
                 versions {}: load it with a runsync as new as the one that wrote it",
                readable(*supported)
            ),
            LoadError::Version {
                found: 1,
                supported,
            } => write!(
                f,
                "format version 1, which this build no longer reads (it reads versions \
                 {}): only a runsync from before version {UNCHECKED_VERSION} can load it",
                readable(*supported)
            ),
            LoadError::Version { found, supported } => write!(
                f,
                "format version {found}, which no runsync writes (this build reads versions \
                 {}): a damaged file?",
                readable(*supported)
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

/// The versions a reader whose newest is `supported` reads, as text: "2, 4 and 8" (a
/// replay), "2, 4 and 5" (a save).
fn readable(supported: u32) -> String {
    if supported == PACKED_EDITS_REPLAY_VERSION {
        // A replay: the save versions, and each replay version since checksums changed.
        format!(
            "{UNCHECKED_VERSION}, {VERSION}, {REPLAY_VERSION}, {EDITS_REPLAY_VERSION}, \
             {PACKED_REPLAY_VERSION} and {supported}"
        )
    } else if supported > VERSION {
        format!("{UNCHECKED_VERSION}, {VERSION} and {supported}")
    } else {
        format!("{UNCHECKED_VERSION} and {supported}")
    }
}
