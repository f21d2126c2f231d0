//! What processes send each other while starting, byte for byte: a message's head (magic,
//! protocol version, length), the hello and how two hellos differ, and the verdict
//! (ready or gave up), with the wait each read is held to.

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::key::NONCE;

/// The first bytes of every connection between runsync-cluster processes.
const MAGIC: [u8; 8] = *b"RSYNCLU\0";
/// The version of what processes say to each other (the handshake and the records of a
/// frame): processes of different versions refuse each other.
pub(crate) const PROTOCOL: u32 = 2;
/// How long a connection that came in has, in all, to prove the key and say hello.
pub(crate) const HELLO_WAIT: Duration = Duration::from_secs(2);
/// The bytes of the head of a connection's first message: magic, version, body length.
pub(super) const HEAD: usize = 16;
/// The body of the connecting side's first message: whether it has a key, its nonce.
pub(super) const OPEN: usize = 1 + NONCE;
/// The body of the answer: whether that side has a key, its nonce, its proof.
pub(super) const CHALLENGE: usize = 1 + NONCE + NONCE;
/// The bytes of a hello.
pub(super) const BODY: usize = 3 * 4 + 3 * 8 + 1 + 3 * 8;
/// The longest reason a process gives for giving up.
pub(super) const MAX_REASON: usize = 4096;

/// What a process says when it connects: who it is and what it runs.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Hello {
    /// The sender's process index.
    pub(crate) process: u32,
    /// Processes in all.
    pub(crate) processes: u32,
    /// Shards (timely worker threads) per process.
    pub(crate) threads: u32,
    /// The last frame.
    pub(crate) frames: u64,
    /// The frame resumed from (0: none).
    pub(crate) resume: u64,
    /// Checkpoints every so many frames (0: none).
    pub(crate) checkpoints: u64,
    /// Whether shards compute checksums.
    pub(crate) checksums: bool,
    /// A digest of the component types, the partition's type and the world-wide values.
    pub(crate) schema: u64,
    /// A digest of the initial world.
    pub(crate) world: u64,
    /// The caller's fingerprint of the configuration.
    pub(crate) fingerprint: u64,
}

impl Hello {
    pub(super) fn encode(&self) -> [u8; BODY] {
        let mut out = [0u8; BODY];
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            out[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        for w in [self.process, self.processes, self.threads] {
            put(&w.to_le_bytes());
        }
        for w in [self.frames, self.resume, self.checkpoints] {
            put(&w.to_le_bytes());
        }
        put(&[u8::from(self.checksums)]);
        for w in [self.schema, self.world, self.fingerprint] {
            put(&w.to_le_bytes());
        }
        out
    }

    /// Reads a hello's bytes; `None` for junk (a checksums flag other than 0 or 1).
    pub(super) fn decode(body: &[u8; BODY]) -> Option<Hello> {
        let u32_at = |i: usize| u32::from_le_bytes(body[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(body[i..i + 8].try_into().expect("8 bytes"));
        let checksums = match body[36] {
            0 => false,
            1 => true,
            _ => return None,
        };
        Some(Hello {
            process: u32_at(0),
            processes: u32_at(4),
            threads: u32_at(8),
            frames: u64_at(12),
            resume: u64_at(20),
            checkpoints: u64_at(28),
            checksums,
            schema: u64_at(37),
            world: u64_at(45),
            fingerprint: u64_at(53),
        })
    }
}

/// A message's head: the magic, this protocol's version and the body's length.
pub(super) fn head(len: usize) -> [u8; HEAD] {
    let mut out = [0u8; HEAD];
    out[..8].copy_from_slice(&MAGIC);
    out[8..12].copy_from_slice(&PROTOCOL.to_le_bytes());
    out[12..].copy_from_slice(&u32::try_from(len).expect("a short body").to_le_bytes());
    out
}

/// What a connection's first 16 bytes say.
#[derive(Debug, PartialEq)]
pub(super) enum Head {
    /// Not the magic.
    Junk,
    /// The magic and another protocol version.
    Version(u32),
    /// The magic and this protocol's version, with a body of so many bytes.
    Ours(u32),
}

impl Head {
    pub(super) fn read(bytes: &[u8; HEAD]) -> Head {
        if bytes[..8] != MAGIC {
            return Head::Junk;
        }
        let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes"));
        match version {
            PROTOCOL => Head::Ours(len),
            v => Head::Version(v),
        }
    }
}

/// Fills `buf` from `s` by `until` at the latest, however slowly the bytes come.
pub(super) fn read_by(s: &mut TcpStream, buf: &mut [u8], until: Instant) -> std::io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        s.set_read_timeout(Some(left))?;
        match s.read(&mut buf[filled..]) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// What differs between two hellos, and the fix: `(what, here, there, fix)`.
pub(super) type Difference = (&'static str, String, String, &'static str);

/// The first difference between this process's hello and a peer's (the process index
/// aside), in the order a person would check them.
pub(crate) fn difference(here: &Hello, there: &Hello) -> Option<Difference> {
    let hex = |v: u64| format!("{v:#018x}");
    let checks: [(&'static str, String, String, &'static str); 9] = [
        (
            "the process count",
            here.processes.to_string(),
            there.processes.to_string(),
            "give every process the same process count (--processes) and address list",
        ),
        (
            "the shards per process",
            here.threads.to_string(),
            there.threads.to_string(),
            "give every process the same shard count (--shards)",
        ),
        (
            "the frame count",
            here.frames.to_string(),
            there.frames.to_string(),
            "give every process the same frame count (--frames)",
        ),
        (
            "the frame resumed from",
            here.resume.to_string(),
            there.resume.to_string(),
            "resume every process from the same checkpoint, or none",
        ),
        (
            "the checkpoint interval",
            here.checkpoints.to_string(),
            there.checkpoints.to_string(),
            "give every process the same checkpoint interval",
        ),
        (
            "computing checksums",
            here.checksums.to_string(),
            there.checksums.to_string(),
            "compute checksums on every process or on none (arena: --check on all or none); \
             the report's checksums are sums over every shard",
        ),
        (
            "the world's schema digest",
            hex(here.schema),
            hex(there.schema),
            "register the same component types in the same order, with the same partition \
             and world-wide values (the same build on every process)",
        ),
        (
            "the initial world's digest",
            hex(here.world),
            hex(there.world),
            "build the same initial world on every process (the same seed, entity count and \
             scenario options)",
        ),
        (
            "the configuration fingerprint",
            hex(here.fingerprint),
            hex(there.fingerprint),
            "start every process with the same options (arena: --seed, --entities; what \
             Cluster::fingerprint digests)",
        ),
    ];
    checks.into_iter().find(|(_, a, b, _)| a != b)
}

/// A verdict: ready (`None`) or gave up, with the reason.
pub(super) fn verdict(reason: Option<&str>) -> Vec<u8> {
    match reason {
        None => vec![1, 0, 0, 0, 0],
        Some(r) => {
            let r = &r.as_bytes()[..r.len().min(MAX_REASON)];
            let mut out = vec![0];
            out.extend_from_slice(&(r.len() as u32).to_le_bytes());
            out.extend_from_slice(r);
            out
        }
    }
}
