#![doc = include_str!("../README.md")]
//!
//! # Design goals, in order
//!
//! 1. **Correct rollback or a clear error.** What ggrs asks is done exactly (a save is
//!    the state of that frame, a load brings it back bit for bit, an advance runs the
//!    frame with that frame's inputs); what cannot roll back is named when the session
//!    starts ([`NetError::NotRollbackReady`], [`NetError::Unchecksummed`]), not at the first
//!    rollback; a peer's trouble is an event, never a panic.
//! 2. **Any runsync game, unchanged.** Systems read every player's input as
//!    [`PlayerInputs`] through runsync's [`Input`](runsync::Input) resource; no separate
//!    schedule, no per-component registration beyond runsync's own snapshot opt-ins.
//! 3. **Cheap steady frames.** Snapshots go into a ring of reused
//!    [`RuntimeSnapshot`](runsync::RuntimeSnapshot)s (`snapshot_into`: no allocation once
//!    the world's shape is steady); inputs are written in place.
//!
//! # Map
//!
//! - [`Rollback`]: a runtime driven by ggrs's requests (save, load, advance).
//! - [`NetSession`]: a P2P session around it (events, confirmed-frame checksums), for
//!   two or more players; a peer set up for another game is named
//!   ([`NetError::PeerSetup`], [`SetupMismatch`]).
//! - [`NetSpectator`]: watches a game through a host player, every frame final.
//! - [`sync_test`](fn@sync_test) / [`SyncTest`]: the rollback check for a game's tests.
//! - [`UdpTransport`], [`MemoryNetwork`]: transports (UDP; in process with latency,
//!   jitter, loss, corruption).
//! - [`guide`]: making a game rollback-ready.
//! - The `duel` binary (`src/bin/duel`): a game of two to four players over UDP,
//!   playable in a terminal or headless.
//!
//! # Wire format
//!
//! A datagram is ggrs's message `bincode::serialize`d (as ggrs's `UdpNonBlockingSocket`
//! sends it) followed by
//! - without a key: the CRC-32C of those bytes, 4 bytes little-endian. ggrs acts on
//!   whatever decodes, so without the check a flipped bit in an input would be a wrong
//!   input, and a desync; with it, a corrupted datagram is garbage, dropped, and ggrs
//!   sends its content again.
//! - with a [`SessionKey`] (`with_key` on the transports): a sequence number (8 bytes)
//!   and the keyed BLAKE3 hash of the message and the sequence number (32 bytes). A
//!   datagram without a valid tag is dropped before anything in it is parsed; one whose
//!   sequence number was seen before (or is more than 64 behind the newest from that
//!   address) is dropped as a replay.
//!
//! (So these transports talk to each other, not to ggrs's own UDP socket.)
//!
//! # What a peer can send
//!
//! ggrs trusts the content of its messages: a cut-short varint in an input, a
//! run-length header claiming 2^40 bytes, inputs beyond its 128-frame queue, a frame
//! near `i32::MAX` or a disconnect before the rollback window each crash it (a panic, or
//! for the allocation an abort). So every message the session receives is first read in
//! ggrs's layout and held to what ggrs can take: complete encodings, at most 129 inputs
//! of exactly the peer's input size, every frame within `120 - max_prediction` frames
//! ahead of this peer's (an honest peer stays within `2 × input_delay + max_prediction
//! + 1`), no disconnect ggrs could not roll back to. What fails is dropped and counted
//! ([`NetStats::rejected`]); so is a message from an address that is no peer
//! ([`NetStats::strangers`]), and an input that shows its sender set up for another game
//! (another player count or input size, other players than it plays here), which soon
//! stops the session with [`NetError::PeerSetup`]. Should anything still make ggrs
//! panic, the session ends with [`NetError::PeerPanic`] naming the peer, and the process
//! and the game's state go on.
//!
//! **Without a key**, the checks keep a hostile datagram from crashing a peer, but not
//! from being read: anyone who can send a datagram with the peer's source address (on
//! the path, or spoofing it: UDP does not verify sources) and the session's 16-bit magic
//! (2^16 guesses) can feed it inputs the checks admit, acknowledge or disconnect it.
//! Fine on a LAN among friends; on the internet give every peer the match's key.
//!
mod config;
mod error;
mod forensics;
mod guard;
mod input;
mod rollback;
mod session;
mod setup;
mod spectator;
mod sync_test;
mod transport;

pub mod guide;

pub use config::{Address, NetConfig};
pub use error::NetError;
pub use input::{NetInput, PlayerInputs, PodInput};
pub use rollback::{Handled, Rollback, RollbackStats};
pub use session::{
    ConfirmedFrame, NetEvent, NetSession, NetSessionBuilder, NetStats, PINNED_DESYNCS, Tick,
};
pub use setup::SetupMismatch;
pub use spectator::{NetSpectator, NetSpectatorBuilder, SpectatorStats, SpectatorTick};
pub use sync_test::{SyncTest, SyncTestReport, sync_test};
pub use transport::{
    LinkConfig, MAX_PACKET, MemoryNetwork, MemorySocket, NetSim, NetSimConfig, NetSimProbe,
    NetSimSpecError, NetSimStats, PeerId, SessionKey, TransportProbe, TransportStats, UdpTransport,
};

/// ggrs, as this crate uses it (0.13), for what the wrappers do not cover.
pub use ggrs;
