//! Transports: ggrs's [`NonBlockingSocket`](ggrs::NonBlockingSocket) over UDP
//! ([`UdpTransport`]) and in process with simulated latency, jitter, loss and corruption
//! ([`MemoryNetwork`]). Both count what they send, receive and throw away
//! ([`TransportProbe`]).
//!
//! See the crate's [wire format](crate#wire-format).
//!
//! A packet that fails the check or does not decode as a ggrs message (garbage, a
//! truncated or corrupted datagram, a packet over [`MAX_PACKET`] bytes) is dropped and
//! counted, never handed to ggrs; one that decodes but comes from an address that is not
//! a peer is dropped by ggrs; one from a peer whose session magic does not match (another
//! session, a forged header) is dropped by ggrs's protocol.

mod memory;
mod udp;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub use memory::{LinkConfig, MemoryNetwork, MemorySocket, PeerId};
pub use udp::UdpTransport;

/// The largest datagram a transport receives whole (as ggrs's UDP socket): bigger ones
/// are cut and then fail to decode. ggrs's own packets are far smaller (it warns above
/// 508 bytes).
pub const MAX_PACKET: usize = 4096;

/// ggrs's message as a packet: its `bincode::serialize` bytes, then their CRC-32C (see
/// the crate's [wire format](crate#wire-format)).
pub(crate) fn encode(msg: &ggrs::Message) -> Vec<u8> {
    // A message is plain fields and vectors: serializing it into a `Vec` cannot fail.
    let mut bytes = bincode::serialize(msg).unwrap_or_default();
    let crc = crc32c::crc32c(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    bytes
}

/// The message in a packet, or `None` for anything else: a failed CRC, bytes left over, a
/// length beyond the packet (no allocation larger than [`MAX_PACKET`] is attempted for
/// it), an unknown variant.
pub(crate) fn decode(packet: &[u8]) -> Option<ggrs::Message> {
    use bincode::Options;
    let (bytes, crc) = packet.split_last_chunk::<4>()?;
    if crc32c::crc32c(bytes) != u32::from_le_bytes(*crc) {
        return None;
    }
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .reject_trailing_bytes()
        .with_limit(MAX_PACKET as u64)
        .deserialize(bytes)
        .ok()
}

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

    pub(crate) fn garbage(&self) {
        Self::add(&self.0.garbage, 1);
    }

    pub(crate) fn lost(&self) {
        Self::add(&self.0.lost, 1);
    }

    pub(crate) fn corrupted(&self) {
        Self::add(&self.0.corrupted, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_does_not_decode_and_nothing_huge_is_allocated() {
        assert!(decode(&[]).is_none());
        assert!(decode(&[0xff; 64]).is_none());
        // A header, the `Input` variant, then a vector length of 2^60, with a good CRC:
        // rejected by the limit before any allocation of that size.
        let mut evil = vec![0x12, 0x34, 2, 0, 0, 0];
        evil.extend_from_slice(&(1u64 << 60).to_le_bytes());
        evil.extend_from_slice(&[0; 32]);
        let crc = crc32c::crc32c(&evil);
        evil.extend_from_slice(&crc.to_le_bytes());
        assert!(decode(&evil).is_none());
    }
}
