//! Datagram framing: a CRC-32C against damage, or, with a [`SessionKey`], a keyed BLAKE3
//! tag against forgery and a sequence number against replay.
//!
//! See the crate's [wire format](crate#wire-format).

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::time::{SystemTime, UNIX_EPOCH};

use ggrs::Message;

use super::MAX_PACKET;

/// The shared secret of one match: every datagram of a keyed transport carries a tag
/// only a holder of the key can make, so a datagram from anyone else (a forged source
/// address, a guessed session magic) is dropped before it is parsed.
///
/// Hand the same key to each peer when the match is made (the matchmaker makes one with
/// [`SessionKey::random`] and sends it to the players over its own secure channel, as it
/// sends them each other's addresses), and to each transport with `with_key`
/// ([`UdpTransport::with_key`](crate::UdpTransport::with_key),
/// [`MemorySocket::with_key`](crate::MemorySocket::with_key)). Use a new key per match:
/// datagrams of an earlier match under the same key would be authentic.
///
/// ```
/// use runsync_net::{SessionKey, UdpTransport};
/// let key = SessionKey::random().unwrap();
/// let text = key.to_hex();                     // what the matchmaker sends each player
/// let key = SessionKey::from_hex(&text).unwrap();
/// let socket = UdpTransport::bind("127.0.0.1:0").unwrap().with_key(key);
/// # drop(socket);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct SessionKey([u8; 32]);

/// BLAKE3's key-derivation context for [`SessionKey::derive`].
const DERIVE_CONTEXT: &str = "runsync-net 2026-12 session key from a passphrase";

impl SessionKey {
    /// 32 bytes from the operating system's random source.
    ///
    /// # Errors
    /// When the system has no random source to read.
    pub fn random() -> Result<SessionKey, getrandom::Error> {
        let mut key = [0; 32];
        getrandom::fill(&mut key)?;
        Ok(SessionKey(key))
    }

    /// The key derived from a passphrase (BLAKE3's key derivation). Only as strong as
    /// the passphrase: for tests and LAN games; a matchmaker should hand out
    /// [`random`](Self::random) keys.
    pub fn derive(passphrase: &str) -> SessionKey {
        SessionKey(blake3::derive_key(DERIVE_CONTEXT, passphrase.as_bytes()))
    }

    /// The key from its 64 hexadecimal digits ([`to_hex`](Self::to_hex)).
    ///
    /// # Errors
    /// A message saying what is wrong: a length other than 64, a character that is not a
    /// hexadecimal digit.
    pub fn from_hex(text: &str) -> Result<SessionKey, String> {
        let text = text.trim();
        if text.len() != 64 {
            return Err(format!(
                "a session key is 64 hexadecimal digits, got {} characters",
                text.len()
            ));
        }
        let mut key = [0; 32];
        for (i, pair) in text.as_bytes().chunks(2).enumerate() {
            let digits = std::str::from_utf8(pair).ok();
            key[i] = digits
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| format!("a session key is hexadecimal digits, got {text:?}"))?;
        }
        Ok(SessionKey(key))
    }

    /// The key as 64 lowercase hexadecimal digits.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Debug for SessionKey {
    /// Never the key itself: it would end up in logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionKey(..)")
    }
}

/// Why a datagram was dropped before ggrs saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dropped {
    /// Damaged, not a ggrs message, or too long.
    Garbage,
    /// No valid tag under the session key.
    Unauthenticated,
    /// A valid tag on a sequence number already seen (or too old to tell).
    Replayed,
}

/// Bytes after the message in a keyed datagram: the sequence number, then the tag.
const SEQ_LEN: usize = 8;
const TAG_LEN: usize = 32;

/// How many sequence numbers below the highest seen are still told apart (a bitmap
/// word): a keyed datagram overtaken by more than this many is dropped as a replay.
const WINDOW: u64 = 64;

/// At most this many senders' windows are kept; past it the least recently heard is
/// forgotten (a peer of the match is heard every few milliseconds).
const MAX_SENDERS: usize = 64;

/// The framing of one transport: how it seals what it sends and opens what it receives.
#[derive(Debug)]
pub(crate) struct Codec<A> {
    key: Option<SessionKey>,
    /// The next sequence number to send: nanoseconds since the Unix epoch when the
    /// transport was made, then one more per datagram, so a peer that restarts with the
    /// same key starts above everything it sent before.
    next_seq: u64,
    /// Per sender: the highest sequence number accepted, and which of the `WINDOW`
    /// below it were, and when it was last heard (a counter of datagrams accepted).
    windows: HashMap<A, Window>,
    heard: u64,
}

#[derive(Clone, Copy, Debug)]
struct Window {
    top: u64,
    seen: u64,
    heard: u64,
}

impl<A: Clone + Eq + Hash> Codec<A> {
    /// Unkeyed: a CRC-32C after each message.
    pub(crate) fn new() -> Self {
        Codec {
            key: None,
            next_seq: 0,
            windows: HashMap::new(),
            heard: 0,
        }
    }

    /// Keyed: a sequence number and a keyed BLAKE3 tag after each message.
    pub(crate) fn keyed(key: SessionKey) -> Self {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX / 2));
        Codec {
            key: Some(key),
            next_seq: now,
            ..Codec::new()
        }
    }

    /// `msg` as a datagram.
    pub(crate) fn seal(&mut self, msg: &Message) -> Vec<u8> {
        // A message is plain fields and vectors: serializing it into a `Vec` cannot fail.
        let mut bytes = bincode::serialize(msg).unwrap_or_default();
        match &self.key {
            None => {
                let crc = crc32c::crc32c(&bytes);
                bytes.extend_from_slice(&crc.to_le_bytes());
            }
            Some(key) => {
                let seq = self.next_seq;
                self.next_seq = self.next_seq.wrapping_add(1);
                bytes.extend_from_slice(&seq.to_le_bytes());
                let tag = tag(key, &bytes);
                bytes.extend_from_slice(tag.as_bytes());
            }
        }
        bytes
    }

    /// The message in a datagram from `from`, or why it was dropped. Checks the tag
    /// before parsing anything, and the sequence number only once the tag is good.
    pub(crate) fn open(&mut self, from: &A, packet: &[u8]) -> Result<Message, Dropped> {
        let body = match &self.key {
            None => {
                let (body, crc) = packet.split_last_chunk::<4>().ok_or(Dropped::Garbage)?;
                if crc32c::crc32c(body) != u32::from_le_bytes(*crc) {
                    return Err(Dropped::Garbage);
                }
                body
            }
            Some(key) => {
                let (signed, theirs) = packet
                    .split_last_chunk::<TAG_LEN>()
                    .ok_or(Dropped::Unauthenticated)?;
                // `blake3::Hash`'s equality is constant-time.
                if tag(key, signed) != blake3::Hash::from_bytes(*theirs) {
                    return Err(Dropped::Unauthenticated);
                }
                let (body, seq) = signed
                    .split_last_chunk::<SEQ_LEN>()
                    .ok_or(Dropped::Unauthenticated)?;
                self.fresh(from, u64::from_le_bytes(*seq))?;
                body
            }
        };
        parse(body).ok_or(Dropped::Garbage)
    }

    /// Accepts `seq` from `from` once: above the highest seen, or within the window
    /// below it and not seen yet.
    fn fresh(&mut self, from: &A, seq: u64) -> Result<(), Dropped> {
        self.heard += 1;
        let heard = self.heard;
        if !self.windows.contains_key(from) && self.windows.len() >= MAX_SENDERS {
            let oldest = self
                .windows
                .iter()
                .min_by_key(|(_, w)| w.heard)
                .map(|(a, _)| a.clone());
            if let Some(a) = oldest {
                self.windows.remove(&a);
            }
        }
        let w = self.windows.entry(from.clone()).or_insert(Window {
            top: seq,
            seen: 0,
            heard,
        });
        if seq > w.top {
            let shift = seq - w.top;
            w.seen = if shift >= WINDOW { 0 } else { w.seen << shift };
            w.seen |= 1;
            w.top = seq;
        } else {
            let back = w.top - seq;
            if back >= WINDOW || w.seen & (1 << back) != 0 {
                return Err(Dropped::Replayed);
            }
            w.seen |= 1 << back;
        }
        w.heard = heard;
        Ok(())
    }
}

/// The keyed BLAKE3 hash of `bytes` under `key`.
fn tag(key: &SessionKey, bytes: &[u8]) -> blake3::Hash {
    blake3::keyed_hash(&key.0, bytes)
}

/// A ggrs message from its bincode bytes: the whole of them, no vector length beyond the
/// packet (nothing larger than [`MAX_PACKET`] is allocated for one), a known variant.
fn parse(bytes: &[u8]) -> Option<Message> {
    use bincode::Options;
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .reject_trailing_bytes()
        .with_limit(MAX_PACKET as u64)
        .deserialize(bytes)
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keep_alive() -> Message {
        // magic 7, variant 7 (KeepAlive).
        bincode::deserialize(&[7, 0, 7, 0, 0, 0]).unwrap()
    }

    #[test]
    fn garbage_does_not_open_and_nothing_huge_is_allocated() {
        let mut c = Codec::<u8>::new();
        assert_eq!(c.open(&0, &[]).unwrap_err(), Dropped::Garbage);
        assert_eq!(c.open(&0, &[0xff; 64]).unwrap_err(), Dropped::Garbage);
        // A header, the `Input` variant, then a vector length of 2^60, with a good CRC:
        // rejected by the limit before any allocation of that size.
        let mut evil = vec![0x12, 0x34, 2, 0, 0, 0];
        evil.extend_from_slice(&(1u64 << 60).to_le_bytes());
        evil.extend_from_slice(&[0; 32]);
        let crc = crc32c::crc32c(&evil);
        evil.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(c.open(&0, &evil).unwrap_err(), Dropped::Garbage);
    }

    #[test]
    fn a_keyed_datagram_opens_once_under_its_key_only() {
        let key = SessionKey::derive("k");
        let (mut a, mut b) = (Codec::<u8>::keyed(key.clone()), Codec::<u8>::keyed(key));
        let packet = a.seal(&keep_alive());
        assert_eq!(b.open(&1, &packet).unwrap(), keep_alive());
        assert_eq!(b.open(&1, &packet).unwrap_err(), Dropped::Replayed);
        // Under another key, or unkeyed, or with any bit flipped: not authentic.
        let mut other = Codec::<u8>::keyed(SessionKey::derive("other"));
        assert_eq!(
            other.open(&1, &packet).unwrap_err(),
            Dropped::Unauthenticated
        );
        assert_eq!(
            Codec::<u8>::new().open(&1, &packet).unwrap_err(),
            Dropped::Garbage
        );
        for bit in 0..packet.len() * 8 {
            let mut p = packet.clone();
            p[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(
                b.open(&1, &p).unwrap_err(),
                Dropped::Unauthenticated,
                "bit {bit}"
            );
        }
        // An unkeyed datagram to a keyed codec.
        let plain = Codec::<u8>::new().seal(&keep_alive());
        assert_eq!(b.open(&1, &plain).unwrap_err(), Dropped::Unauthenticated);
    }

    #[test]
    fn reordered_datagrams_open_within_the_window_and_replays_never() {
        let key = SessionKey::derive("k");
        let (mut a, mut b) = (Codec::<u8>::keyed(key.clone()), Codec::<u8>::keyed(key));
        let packets: Vec<_> = (0..100).map(|_| a.seal(&keep_alive())).collect();
        // The last first, then the others newest to oldest: those within 64 open.
        assert!(b.open(&1, &packets[99]).is_ok());
        for (i, p) in packets[..99].iter().enumerate().rev() {
            let r = b.open(&1, p);
            if 99 - i < WINDOW as usize {
                assert!(r.is_ok(), "{i}");
            } else {
                assert_eq!(r.unwrap_err(), Dropped::Replayed, "{i}");
            }
        }
        // Each sender has its own window.
        assert!(b.open(&2, &packets[0]).is_ok());
    }

    #[test]
    fn keys_round_trip_through_hex_and_never_print() {
        let key = SessionKey::random().unwrap();
        assert_eq!(SessionKey::from_hex(&key.to_hex()).unwrap(), key);
        assert_eq!(format!("{key:?}"), "SessionKey(..)");
        assert!(SessionKey::from_hex("abc").unwrap_err().contains("64"));
        assert!(SessionKey::from_hex(&"zz".repeat(32)).is_err());
        assert!(SessionKey::from_hex(&"é".repeat(32)).is_err());
        assert_ne!(SessionKey::derive("a"), SessionKey::derive("b"));
    }
}
