//! The save format's magic and version numbers (the "Versions" section of the
//! [module docs](super) says why these numbers).

/// The first bytes of a world or runtime save.
pub(crate) const SAVE_MAGIC: [u8; 8] = *b"RSYNSAVE";
/// The format version this build writes (and reads) for a file with no stage parts,
/// and for replays.
pub(crate) const VERSION: u32 = 4;
/// The format version of a runtime save with stage parts: [`VERSION`] plus, per type,
/// its layers of change marks and, per message type, its deliveries (see "Versions").
pub(crate) const STAGED_VERSION: u32 = 5;
/// The version of a replay whose checksums are of the world checksum's digest version 2
/// ([`World::checksum_v2`]; sections as [`VERSION`]). Replays of [`VERSION`] and [`UNCHECKED_VERSION`] hold
/// checksums of digest version 1 ([`World::checksum_v1`]), and are checked with it.
///
/// [`World::checksum_v2`]: crate::World::checksum_v2
/// [`World::checksum_v1`]: crate::World::checksum_v1
pub(crate) const REPLAY_VERSION: u32 = 8;
/// The version of a replay whose frames also hold edits ([`Edit`]s made between frames
/// by [`Runtime::edit`]): [`REPLAY_VERSION`], with each frame's edits after its checksum.
/// A replay without edits is written as [`REPLAY_VERSION`], byte for byte as before.
///
/// [`Edit`]: crate::Edit
/// [`Runtime::edit`]: crate::Runtime::edit
pub(crate) const EDITS_REPLAY_VERSION: u32 = 9;
/// [`REPLAY_VERSION`] with checksums of [`World::checksum`]'s digest version 3 (two
/// 32-bit writes packed into a word): what this build writes.
///
/// [`World::checksum`]: crate::World::checksum
pub(crate) const PACKED_REPLAY_VERSION: u32 = 12;
/// [`EDITS_REPLAY_VERSION`] with checksums of digest version 3.
pub(crate) const PACKED_EDITS_REPLAY_VERSION: u32 = 13;
/// The older version this build still reads: as [`VERSION`], with no integrity check.
pub(crate) const UNCHECKED_VERSION: u32 = 2;
