//! Hostile packets, written byte by byte from ggrs 0.13's wire format (its `Message`
//! `bincode::serialize`d: fixed-width little-endian integers, `u32` variant indices,
//! `u64` vector lengths), then runsync-net's CRC-32C: what an attacker sends.

#![allow(dead_code)]

/// The `Input` variant's index in ggrs's `MessageBody`.
const INPUT: u32 = 2;
/// The `QualityReply` variant's index.
const QUALITY_REPLY: u32 = 5;
/// The `ChecksumReport` variant's index.
const CHECKSUM_REPORT: u32 = 6;

/// An `Input` message body: every player's connection status `(disconnected,
/// last_frame)`, the disconnect flag, the first frame the input bytes hold, the frame
/// acknowledged, and the input bytes (ggrs's delta-then-run-length encoding).
pub(crate) struct Input<'a> {
    pub(crate) statuses: &'a [(bool, i32)],
    pub(crate) disconnect: bool,
    pub(crate) start_frame: i32,
    pub(crate) ack_frame: i32,
    pub(crate) bytes: &'a [u8],
}

impl Input<'_> {
    /// Two players, both connected with no input yet, nothing acknowledged.
    pub(crate) fn two_players(start_frame: i32, bytes: &[u8]) -> Input<'_> {
        Input {
            statuses: &[(false, -1), (false, -1)],
            disconnect: false,
            start_frame,
            ack_frame: -1,
            bytes,
        }
    }

    /// The message's bincode bytes, without the CRC.
    pub(crate) fn message(&self, magic: u16) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&magic.to_le_bytes());
        m.extend_from_slice(&INPUT.to_le_bytes());
        m.extend_from_slice(&(self.statuses.len() as u64).to_le_bytes());
        for &(disconnected, last_frame) in self.statuses {
            m.push(u8::from(disconnected));
            m.extend_from_slice(&last_frame.to_le_bytes());
        }
        m.push(u8::from(self.disconnect));
        m.extend_from_slice(&self.start_frame.to_le_bytes());
        m.extend_from_slice(&self.ack_frame.to_le_bytes());
        m.extend_from_slice(&(self.bytes.len() as u64).to_le_bytes());
        m.extend_from_slice(self.bytes);
        m
    }

    /// The packet as an unkeyed transport sends it: the message, then its CRC-32C.
    pub(crate) fn packet(&self, magic: u16) -> Vec<u8> {
        with_crc(self.message(magic))
    }
}

/// A `ChecksumReport` for `frame`, without the CRC.
pub(crate) fn checksum_report(magic: u16, frame: i32) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&magic.to_le_bytes());
    m.extend_from_slice(&CHECKSUM_REPORT.to_le_bytes());
    m.extend_from_slice(&0u128.to_le_bytes());
    m.extend_from_slice(&frame.to_le_bytes());
    m
}

/// A `QualityReply` echoing `pong` (the clock, in ms since the epoch, of the report it
/// answers), without the CRC.
pub(crate) fn quality_reply(magic: u16, pong: u128) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&magic.to_le_bytes());
    m.extend_from_slice(&QUALITY_REPLY.to_le_bytes());
    m.extend_from_slice(&pong.to_le_bytes());
    m
}

/// `message` followed by its CRC-32C, as runsync-net's unkeyed transports frame it.
pub(crate) fn with_crc(mut message: Vec<u8>) -> Vec<u8> {
    let crc = crc32c::crc32c(&message);
    message.extend_from_slice(&crc.to_le_bytes());
    message
}

/// `v` as a LEB128 varint, as bitfield-rle writes its run headers.
pub(crate) fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v > 127 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

/// Run-length encoded bytes that decode to `n` zero bytes (one "contiguous zeros" run).
pub(crate) fn zeros(n: u64) -> Vec<u8> {
    varint((n << 2) | 1)
}

/// Run-length encoded bytes that decode to `raw` (one literal run).
pub(crate) fn literal(raw: &[u8]) -> Vec<u8> {
    let mut out = varint((raw.len() as u64) << 1);
    out.extend_from_slice(raw);
    out
}

/// The input bytes of `frames` consecutive inputs of `size` bytes each (ggrs's delta
/// encoding: a `u16` length, then the input XOR the previous one; all zero here), run
/// length encoded.
pub(crate) fn inputs(frames: usize, size: usize) -> Vec<u8> {
    let mut raw = Vec::new();
    for _ in 0..frames {
        raw.extend_from_slice(&(size as u16).to_le_bytes());
        raw.extend(std::iter::repeat_n(0u8, size));
    }
    literal(&raw)
}

/// The session magic of a real packet (its first two bytes).
pub(crate) fn magic_of(packet: &[u8]) -> u16 {
    u16::from_le_bytes([packet[0], packet[1]])
}
