//! Transports: ggrs's [`NonBlockingSocket`](ggrs::NonBlockingSocket) over UDP
//! ([`UdpTransport`]) and in process with simulated latency, jitter, loss and corruption
//! ([`MemoryNetwork`]). Both count what they send, receive and throw away
//! ([`TransportProbe`]).
//!
//! See the crate's [wire format](crate#wire-format).
//!
//! A datagram that fails its check or does not decode as a ggrs message (garbage, a
//! truncated or corrupted datagram, one over [`MAX_PACKET`] bytes) is dropped and
//! counted, never handed to ggrs; with a [`SessionKey`], so is one without a valid tag
//! (a stranger's, a forged source address) or seen before (a replay). What decodes then
//! meets the session's checks of ggrs's message content (see
//! [`NetStats::rejected`](crate::NetStats::rejected)); a message from an address that
//! is not a peer is dropped there too.

mod memory;
mod seal;
mod sim;
mod udp;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub use memory::{LinkConfig, MemoryNetwork, MemorySocket, PeerId};
pub use seal::SessionKey;
pub use sim::{NetSim, NetSimConfig, NetSimProbe, NetSimSpecError, NetSimStats};
pub use udp::UdpTransport;

pub(crate) use seal::{Codec, Dropped};

/// The largest datagram a transport receives whole (as ggrs's UDP socket): bigger ones
/// are cut and then fail to decode. ggrs's own packets are far smaller (it warns above
/// 508 bytes).
pub const MAX_PACKET: usize = 4096;

/// What a transport sent, received and threw away, readable while a session owns the
/// transport (take it with `probe()` before handing the transport to the session).
/// Counters only grow.
#[derive(Clone, Debug, Default)]
pub struct TransportProbe(Arc<Counters>);

#[derive(Debug, Default)]
struct Counters {
    sent: AtomicU64,
    bytes_sent: AtomicU64,
    received: AtomicU64,
    garbage: AtomicU64,
    unauthenticated: AtomicU64,
    replayed: AtomicU64,
    lost: AtomicU64,
    corrupted: AtomicU64,
}

/// A reading of a [`TransportProbe`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransportStats {
    /// Packets sent.
    pub sent: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Packets received that decoded as ggrs messages (handed to ggrs).
    pub received: u64,
    /// Packets received that did not decode (dropped, never handed to ggrs).
    pub garbage: u64,
    /// Keyed transports: packets received without a valid tag under the session key
    /// (dropped before parsing).
    pub unauthenticated: u64,
    /// Keyed transports: packets received with a valid tag whose sequence number was
    /// seen before, or fell more than 64 behind the newest (dropped).
    pub replayed: u64,
    /// [`MemoryNetwork`] only: packets this end sent that the link dropped.
    pub lost: u64,
    /// [`MemoryNetwork`] only: packets this end sent that the link corrupted (one bit
    /// flipped).
    pub corrupted: u64,
}

impl TransportProbe {
    /// The counters now.
    pub fn stats(&self) -> TransportStats {
        let c = &self.0;
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TransportStats {
            sent: r(&c.sent),
            bytes_sent: r(&c.bytes_sent),
            received: r(&c.received),
            garbage: r(&c.garbage),
            unauthenticated: r(&c.unauthenticated),
            replayed: r(&c.replayed),
            lost: r(&c.lost),
            corrupted: r(&c.corrupted),
        }
    }

    fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn sent(&self, bytes: usize) {
        Self::add(&self.0.sent, 1);
        Self::add(&self.0.bytes_sent, bytes as u64);
    }

    pub(crate) fn received(&self) {
        Self::add(&self.0.received, 1);
    }

    /// Counts a datagram dropped for `why`.
    pub(crate) fn dropped(&self, why: Dropped) {
        let c = &self.0;
        Self::add(
            match why {
                Dropped::Garbage => &c.garbage,
                Dropped::Unauthenticated => &c.unauthenticated,
                Dropped::Replayed => &c.replayed,
            },
            1,
        );
    }

    pub(crate) fn lost(&self) {
        Self::add(&self.0.lost, 1);
    }

    pub(crate) fn corrupted(&self) {
        Self::add(&self.0.corrupted, 1);
    }
}
