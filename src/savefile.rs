//! The save-file format's framing and errors: what [`World::save`](crate::World::save),
//! [`World::load`](crate::World::load), the runtime's saves and replays share.
//!
//! A save file is little-endian binary: an 8-byte magic (`RSYNSAVE`, or `RSYNPLAY` for a
//! replay), a `u32` version, then sections whose every count and length is checked
//! against the bytes that remain before anything is allocated for it: a file that lies
//! about a length is an error ([`LoadError::BadLength`]), never a huge allocation.
//! Component and resource values go through serde, encoded with
//! [postcard](https://docs.rs/postcard) (a stable, documented wire format), column by
//! column; the framing around them is written here by hand, so each column's bytes are
//! delimited and a value that does not decode names its type and table.

use std::fmt;

/// The first bytes of a world or runtime save.
pub(crate) const SAVE_MAGIC: [u8; 8] = *b"RSYNSAVE";
/// The format version this build writes and reads.
pub(crate) const VERSION: u32 = 1;

/// Why a save could not be written ([`World::save`](crate::World::save),
/// [`Runtime::save`](crate::Runtime::save), a replay). Nothing is written when a check
/// fails before the first byte; an I/O error may leave a partial file.
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
    /// A save of another format version.
    Version {
        /// The file's version.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// The input ended inside `what`.
    Truncated {
        /// The part being read.
        what: &'static str,
    },
    /// A count or length larger than what is left of the input could hold.
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
            LoadError::Version { found, supported } => write!(
                f,
                "format version {found}, this build reads version {supported}; load it with \
                 the runsync that wrote it"
            ),
            LoadError::Truncated { what } => {
                write!(f, "the file ends early, inside {what} (truncated?)")
            }
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
                     by a build where the type differs?)"
                )
            }
            LoadError::DuplicateEntity { entity } => {
                write!(f, "entity {entity} is listed twice (corrupt file)")
            }
            LoadError::BadEntities { what } => write!(f, "bad entity allocator: {what}"),
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

/// Reads fields from a save held in memory; every read is bounds-checked, every count
/// checked against what is left.
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { rest: bytes }
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

    /// Checks the magic and the version.
    pub(crate) fn header(&mut self, magic: &[u8; 8]) -> Result<(), LoadError> {
        let found = &self.rest[..self.rest.len().min(8)];
        if found != magic {
            return Err(LoadError::BadMagic {
                found: found.to_vec(),
            });
        }
        self.take(8, "the magic")?;
        let version = self.u32("the version")?;
        if version != VERSION {
            return Err(LoadError::Version {
                found: version,
                supported: VERSION,
            });
        }
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

/// Reads all of `r` into memory (a load parses from a slice: every check is against the
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
