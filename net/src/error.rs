//! Why a session could not start or go on ([`NetError`]).

use std::fmt;
use std::sync::Arc;

use runsync::{Desync, FrameError, SaveError, SnapshotError};

use crate::setup::SetupMismatch;

/// Why a [`NetSession`](crate::NetSession), a [`Rollback`](crate::Rollback) or a
/// [`sync_test`](crate::sync_test()) could not start or go on. Network trouble (a lost
/// peer, garbage packets, a desync between peers) is not an error: it is reported as a
/// [`NetEvent`](crate::NetEvent) and the local game goes on.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum NetError {
    /// The game's world cannot be snapshot: a component type, a resource systems write or
    /// a message type is not opted in (the error names it). Found when the session
    /// starts, by taking the first snapshot, not at the first rollback.
    Snapshot(SnapshotError),
    /// Registered types whose values a checksum does not see
    /// ([`World::unchecksummed`](runsync::World::unchecksummed)): a desync in them would
    /// go unseen by peers and by a sync test. Opt each in (a component with
    /// `world.checksumming::<C>()` or `#[component(checksum)]`, a resource with
    /// `world.checksumming_resource::<R>()`), or accept them with the builder's
    /// `allow_unchecksummed`.
    Unchecksummed {
        /// The types' names, as `unchecksummed` lists them.
        types: Vec<&'static str>,
    },
    /// The game cannot roll back: every registered type a snapshot would refuse
    /// ([`World::unsnapshotted`](runsync::World::unsnapshotted)), and with them every type
    /// the checksum does not see (unless `allow_unchecksummed`), so that one error names
    /// everything to opt in. Found when a session or spectator starts.
    NotRollbackReady {
        /// Types not opted into snapshots, as `unsnapshotted` lists them.
        unsnapshotted: Vec<&'static str>,
        /// Types not opted into the checksum, as `unchecksummed` lists them (empty with
        /// `allow_unchecksummed`).
        unchecksummed: Vec<&'static str>,
    },
    /// A frame failed (a system, a merge or a hook panicked): the session cannot go on,
    /// since the other peers ran that frame. The world is as the
    /// [`FrameError`] describes.
    Frame(FrameError),
    /// The online replay ([`record_replay`](crate::NetSessionBuilder::record_replay)):
    /// the game cannot be saved (the type is named), or the replay could not be
    /// written.
    Save(Arc<SaveError>),
    /// ggrs panicked while handling packets: something in them got past the checks in
    /// front of it (see the crate's [wire format](crate#wire-format)). The session
    /// stops; the process and the game's state do not (the runtime is as it was before
    /// the tick: [`NetSession::into_runtime`](crate::NetSession::into_runtime)).
    PeerPanic {
        /// The peers whose packets ggrs was handling (`Debug` form of their addresses;
        /// empty if it was handling none).
        peers: Vec<String>,
        /// The panic's message.
        message: String,
    },
    /// A peer is set up for another game than this session: another number of players,
    /// other players than this session has it playing (two peers claiming one player),
    /// another input size. Its inputs are refused (and counted in
    /// [`NetStats::rejected`](crate::NetStats::rejected)); once 8 messages have shown it,
    /// and this session has run 2 s (so that its own inputs show the peer the same), the
    /// session stops with this: the two could only stall or desync. Every peer that
    /// receives the other's inputs stops so, about 2 s after the handshakes. Give every
    /// peer the same player count and each player at exactly one peer.
    PeerSetup {
        /// The peer (`Debug` form of its address).
        peer: String,
        /// How its set-up differs.
        mismatch: SetupMismatch,
    },
    /// ggrs refused a call: a bad player handle, a missing local input, a bad setting.
    Ggrs(ggrs::GgrsError),
    /// ggrs asked for a frame the runtime is not at: its frame counter was moved outside
    /// the session (a `frame()` or `restore` of the runtime by hand between ticks).
    FrameMismatch {
        /// What was asked: "save", "load" or "advance".
        request: &'static str,
        /// The runtime's frame count ggrs's request implies.
        expected: u64,
        /// The runtime's (or the snapshot's) frame count.
        actual: u64,
    },
    /// A sync test (or a desync report, running a kept frame again) found a frame whose
    /// re-run ends in another state than its first run: the game is not rollback-safe. `difference` says where the two states part, when
    /// the test could build a second runtime to compare them.
    SyncTestMismatch {
        /// The frame (runsync's numbering: the state after that many frames) whose
        /// checksums differ.
        frame: u64,
        /// The checksum of the first run.
        first: u64,
        /// The checksum of the re-run.
        again: u64,
        /// The first difference between the two states (first run on the left).
        difference: Option<Desync>,
    },
    /// An earlier error stopped the session; every later call reports it again.
    Stopped(Box<NetError>),
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetError::Snapshot(e) => write!(f, "runsync-net: the game cannot roll back: {e}"),
            NetError::Unchecksummed { types } => write!(
                f,
                "runsync-net: the checksum peers compare does not see the values of [{}]; \
                 opt each in: a component with `world.checksumming::<T>()` (or \
                 `#[component(checksum)]`), a resource with \
                 `world.checksumming_resource::<T>()`; or accept them with \
                 `allow_unchecksummed()`",
                types.join(", ")
            ),
            NetError::NotRollbackReady {
                unsnapshotted,
                unchecksummed,
            } => {
                write!(
                    f,
                    "runsync-net: the game cannot roll back: snapshots do not take [{}]; opt \
                     each in: a component with `world.snapshotting::<T>()` (or \
                     `#[component(snapshot)]`), a resource with \
                     `world.snapshotting_resource::<T>()`, a message type with \
                     `world.snapshotting_message::<T>()`",
                    unsnapshotted.join(", ")
                )?;
                if !unchecksummed.is_empty() {
                    write!(
                        f,
                        "; and the checksum peers compare does not see [{}]: a component \
                         with `world.checksumming::<T>()` (or `#[component(checksum)]`), a \
                         resource with `world.checksumming_resource::<T>()`, or accept them \
                         with `allow_unchecksummed()`",
                        unchecksummed.join(", ")
                    )?;
                }
                Ok(())
            }
            NetError::Frame(e) => write!(f, "runsync-net: a frame failed: {e}"),
            NetError::Save(e) => write!(f, "runsync-net: the online replay: {e}"),
            NetError::PeerPanic { peers, message } => write!(
                f,
                "runsync-net: ggrs panicked handling packets from [{}]: {message}; the \
                 session stopped, the game's state is kept",
                peers.join(", ")
            ),
            NetError::PeerSetup { peer, mismatch } => write!(
                f,
                "runsync-net: peer {peer} is set up for another game: {mismatch}; the session \
                 stopped (give every peer the same number of players, each player at one \
                 peer)"
            ),
            NetError::Ggrs(e) => write!(f, "runsync-net: ggrs: {e}"),
            NetError::FrameMismatch {
                request,
                expected,
                actual,
            } => write!(
                f,
                "runsync-net: ggrs's {request} request is for frame {expected} but the \
                 runtime is at frame {actual}; run frames only through the session"
            ),
            NetError::SyncTestMismatch {
                frame,
                first,
                again,
                difference,
            } => {
                write!(
                    f,
                    "runsync-net: sync test: frame {frame} re-run after a rollback ends with \
                     checksum {again:#018x}, its first run with {first:#018x}: the game is not \
                     rollback-safe"
                )?;
                match difference {
                    Some(d) => write!(f, "; first difference: {d}"),
                    None => Ok(()),
                }
            }
            NetError::Stopped(e) => write!(f, "runsync-net: the session stopped earlier: {e}"),
        }
    }
}

impl std::error::Error for NetError {}

impl From<SnapshotError> for NetError {
    fn from(e: SnapshotError) -> Self {
        NetError::Snapshot(e)
    }
}

impl From<FrameError> for NetError {
    fn from(e: FrameError) -> Self {
        NetError::Frame(e)
    }
}

impl From<ggrs::GgrsError> for NetError {
    fn from(e: ggrs::GgrsError) -> Self {
        NetError::Ggrs(e)
    }
}
