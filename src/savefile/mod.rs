//! The save-file format's framing and errors: what [`World::save`](crate::World::save),
//! [`World::load`](crate::World::load), the runtime's saves and replays share.
//!
//! A save file is little-endian binary: an 8-byte magic (`RSYNSAVE`, or `RSYNPLAY` for a
//! replay), a `u32` version, then sections of counts and length-prefixed runs. A save is
//! written through a bounded buffer ([`Sink`]), plain-data columns straight from memory,
//! and read from a `Read` a chunk at a time ([`SaveSource`]): no copy of the whole file is
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
//! integrity check; 5 adds, in a runtime's save of a frame with several
//! [stages](crate::Runtime::add_stage), which stage's Sync made each change mark and
//! delivered each message (below). Versions 2 (without a check), 4 and 5 are read; 1 is
//! refused. There is no version 3: it is one flipped bit away from 2 (as 0 and 6 are from
//! 4), so a flipped bit in the version of a checked file could have made it read as an
//! unchecked one; 4 is two bits away from 2. 5 (`101`) is one bit from 4 (`100`), 1
//! (`001`), 7 (`111`) and 13, 21, 37, ... (refused or never written), and three bits from
//! 2 (`010`): a flipped bit cannot make a checked file an unchecked one. A 4 flipped to 5
//! (or back) is a checked version still, and the header's own check refuses it.
//!
//! Replays have more: 8 (`1000`) is version 4's layout with checksums of the world
//! checksum's digest version 2 ([`World::checksum_v2`]), where a replay of version 4 (or
//! 2) holds those of version 1 ([`World::checksum_v1`]), and is checked with it; 9 is 8
//! with each frame's edits. 12 (`1100`) and 13 (`1101`) are 8 and 9 with checksums of
//! [`World::checksum`]'s digest version 3, what this build writes. 8 is two bits from 2
//! and from 4, three from 5; 12 three bits from 2, 13 four; one flipped bit of a checked
//! replay's version makes another checked one (which the header's own check refuses) or
//! one that is refused (0, 10, 24, 14, 28, 15, 29, ...), never the unchecked 2.
//!
//! A file is written as version 4 unless it holds the stage parts: a [`World`]'s save,
//! and a runtime's save with one stage (or before its first frame), are exactly the
//! version-4 bytes. Version 5 is version 4 with two additions, inside the sections they
//! extend (so under their checks):
//!
//! - after each component type's columns: a `u32` stage count `S` (0: no layers), and
//!   for `S >= 2` the `u32` stage whose layer new marks go to, then per stage its layer:
//!   its stage (`u32`, `0..S` in order: a check), then per column its changed and added
//!   words, as many as the union's just before (zero-padded; a layer has no counts of its
//!   own). The union must be what the layers add up to (see `TypeMarks::with_layers`);
//! - after each message type's messages: a `u32` stage count `S` (0: none), and for
//!   `S >= 2` a `u64` delivery count, then per delivery (oldest first) its stage (`u32`) and
//!   how many broadcast and addressed messages it holds (`u64` each), at most the
//!   messages there are (see `message::Delivery`).
//!
//! Nothing is allocated by these counts beyond what [`SaveSource::capacity`] allows: each
//! layer read is at least 4 bytes of the file, each delivery 20.
//!
//! [`World`]: crate::World
//! [`World::checksum`]: crate::World::checksum
//! [`World::checksum_v1`]: crate::World::checksum_v1
//! [`World::checksum_v2`]: crate::World::checksum_v2

use std::fmt;

mod codec;
mod errors;
mod io;
mod version;

pub(crate) use codec::{decode_pod, decode_serde, decode_values, encode_pod, encode_values};
pub(crate) use errors::ColumnError;
pub use errors::{LoadError, SaveError};
pub(crate) use io::{Found, Put, Reader, SaveSource, Sink, seal};
pub(crate) use version::{
    EDITS_REPLAY_VERSION, PACKED_EDITS_REPLAY_VERSION, PACKED_REPLAY_VERSION, REPLAY_VERSION,
    SAVE_MAGIC, STAGED_VERSION, VERSION,
};

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

    pub(crate) fn read(r: &mut SaveSource<'_>) -> Result<Encoding, LoadError> {
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

/// Reads all of `r` into memory (a replay parses from a slice: every check is against the
/// bytes that exist). Grows with the input, never by a length the input claims.
pub(crate) fn read_all(r: &mut impl std::io::Read) -> Result<Vec<u8>, LoadError> {
    let mut bytes = Vec::new();
    r.read_to_end(&mut bytes).map_err(LoadError::Io)?;
    Ok(bytes)
}
