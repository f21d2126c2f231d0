#![doc = include_str!("../README.md")]
//!
//! # Design goals, in order
//!
//! 1. **Correct rollback or a clear error.** What ggrs asks is done exactly (a save is
//!    the state of that frame, a load brings it back bit for bit, an advance runs the
//!    frame with that frame's inputs); what cannot roll back is named when the session
//!    starts ([`NetError::Snapshot`], [`NetError::Unchecksummed`]), not at the first
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
//! - [`NetSession`]: a P2P session around it (events, confirmed-frame checksums).
//! - [`sync_test`](fn@sync_test) / [`SyncTest`]: the rollback check for a game's tests.
//! - [`UdpTransport`], [`MemoryNetwork`]: transports (UDP; in process with latency,
//!   jitter, loss, corruption).
//! - [`guide`]: making a game rollback-ready.
//! - The `duel` binary (`src/bin/duel`): a two-player game over UDP, playable in a
//!   terminal or headless.
//!
//! # Wire format
//!
//! A packet is ggrs's message `bincode::serialize`d (as ggrs's `UdpNonBlockingSocket`
//! sends it) followed by the CRC-32C of those bytes, 4 bytes little-endian. ggrs acts on
//! whatever decodes, so without the check a flipped bit in an input would be a wrong
//! input, and a desync; with it, a corrupted packet is garbage, dropped, and ggrs sends
//! its content again. (So these transports talk to each other, not to ggrs's own UDP
//! socket.)
//!

mod config;
mod error;
mod input;
mod rollback;
mod session;
mod sync_test;
mod transport;

pub mod guide;

pub use config::{Address, NetConfig};
pub use error::NetError;
pub use input::{NetInput, PlayerInputs, PodInput};
pub use rollback::{Handled, Rollback, RollbackStats};
pub use session::{ConfirmedFrame, NetEvent, NetSession, NetSessionBuilder, NetStats, Tick};
pub use sync_test::{SyncTest, SyncTestReport, sync_test};
pub use transport::{
    LinkConfig, MAX_PACKET, MemoryNetwork, MemorySocket, PeerId, TransportProbe, TransportStats,
    UdpTransport,
};

/// ggrs, as this crate uses it (0.13), for what the wrappers do not cover.
pub use ggrs;
