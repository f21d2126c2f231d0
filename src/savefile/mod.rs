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

mod codec;
mod errors;
mod io;

pub(crate) use codec::{decode_pod, decode_serde, decode_values, encode_pod, encode_values};
pub(crate) use errors::ColumnError;
pub use errors::{LoadError, SaveError};
pub(crate) use io::{Found, Put, Reader, Sink, Source, seal};

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
