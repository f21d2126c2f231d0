//! The start of a run over several processes, before timely gets the sockets: every pair
//! of processes connects, proves it shares the cluster key, and agrees that they run the
//! same cluster; then every process tells every other that it is ready.
//!
//! 1. **Listen and connect.** Process `i` listens on its address and connects to every
//!    process below it (as timely does: the higher index connects), retrying until the
//!    connect timeout; each connection that comes in is greeted on its own thread.
//! 2. **Prove the key.** The connecting side opens with the magic, the protocol version,
//!    whether it has a key, and a nonce; the other side answers with whether it has a key,
//!    a nonce of its own and its proof: a keyed hash ([`Key`]) of both nonces. The
//!    connecting side checks that proof, then sends its own (another keyed hash of both
//!    nonces) with its [`Hello`]; the other side checks it and only then answers with its
//!    hello. So neither side says anything about its configuration to a connection that
//!    has not proved the key; the nonces are fresh from the operating system on each
//!    side, so a recorded proof proves nothing again, and the hashes are compared in
//!    constant time. Without a key the proofs are made with a key everyone knows: they
//!    only tell that both sides speak this protocol.
//! 3. **Hello.** A hello holds the process index, the process and shard counts, the
//!    frames, checksums, resume and checkpoint settings, a digest of the world's schema
//!    (component types, partition, world-wide values), of the initial world, and the
//!    caller's fingerprint. Both sides compare the two the same way, so a difference
//!    between two processes that proved the key is a [`ClusterError::Mismatch`] on both.
//! 4. **Ready.** A process that has all its connections, each agreeing, sends every peer
//!    *ready*; one that fails (a mismatch, a timeout, two processes with one index)
//!    sends every peer it reached *gave up* and why, then returns its error. A process
//!    starts the frames only when every peer said ready, so no process starts while
//!    another gave up.
//!
//! **Strangers.** A connection that comes in and is not a peer of this run — no magic,
//! another protocol version, junk, silence past [`HELLO_WAIT`], no proof of the key — is
//! refused: closed, logged on stderr (the first [`MAX_LOGGED`]; then a count), and the
//! process waits on for its real peers until the connect timeout. Only a proven peer can
//! end the start. A connection of another protocol version is answered with this
//! process's magic and version alone (no configuration), so a process of another build
//! that connects here says what differs; this process cannot tell it from a stranger and
//! waits on (the log line names the version). A greeting takes at most [`HELLO_WAIT`] in
//! all, however slowly its bytes come, on a thread with a small stack, and at most
//! [`MAX_GREETINGS`] are under way at once: a connection past that is closed at once (the
//! processes that connect retry until the connect timeout), so strangers cost bounded
//! memory and threads.
//!
//! On the connecting side, an address that answers but not as a process of this run —
//! not the magic, another protocol version, another key or none — ends the start with an
//! error naming it; a connection that closes or falls silent is tried again until the
//! connect timeout.
//!
//! Every wait is bounded: connecting and waiting for connections by the connect timeout,
//! a greeting by [`HELLO_WAIT`], the verdicts by the connect timeout again.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::ClusterError;

/// The first bytes of every connection between runsync-cluster processes.
const MAGIC: [u8; 8] = *b"RSYNCLU\0";
/// The version of what processes say to each other (the handshake and the records of a
/// frame): processes of different versions refuse each other.
pub(crate) const PROTOCOL: u32 = 2;
/// How long a connection that came in has, in all, to prove the key and say hello.
pub(crate) const HELLO_WAIT: Duration = Duration::from_secs(2);
/// Connections greeted at once; one past these is closed at once.
pub(crate) const MAX_GREETINGS: usize = 64;
/// Refused connections logged one by one (then only counted).
pub(crate) const MAX_LOGGED: usize = 16;
/// The stack of a thread that greets a connection (it reads a few fixed-size messages).
const GREETING_STACK: usize = 256 * 1024;
/// The bytes of the head of a connection's first message: magic, version, body length.
const HEAD: usize = 16;
/// The bytes of a nonce, a key and a proof.
const NONCE: usize = 32;
/// The body of the connecting side's first message: whether it has a key, its nonce.
const OPEN: usize = 1 + NONCE;
/// The body of the answer: whether that side has a key, its nonce, its proof.
const CHALLENGE: usize = 1 + NONCE + NONCE;
/// The bytes of a hello.
const BODY: usize = 3 * 4 + 3 * 8 + 1 + 3 * 8;
/// The longest reason a process gives for giving up.
const MAX_REASON: usize = 4096;
/// What the key is derived with, and what each side's proof hashes before the nonces:
/// the two proofs differ, so one side's proof is never the other's.
const KEY_CONTEXT: &str = "runsync-cluster 2 handshake: the cluster key";
const ACCEPTING: &[u8] = b"runsync-cluster 2: the accepting side's proof";
const CONNECTING: &[u8] = b"runsync-cluster 2: the connecting side's proof";

/// The shared secret a handshake proves ([`Cluster::key`](crate::Cluster::key)): 32 bytes
/// derived from the caller's key (any length), or the key everyone knows when there is
/// none. Never printed.
#[derive(Clone)]
pub(crate) struct Key {
    /// The derived key.
    bytes: [u8; 32],
    /// Whether the caller gave a key.
    keyed: bool,
}

impl Key {
    /// No key: the proofs tell only that both sides speak this protocol.
    pub(crate) fn none() -> Key {
        Key {
            bytes: blake3::derive_key(KEY_CONTEXT, b""),
            keyed: false,
        }
    }

    /// The key `secret` (a passphrase, or random bytes).
    pub(crate) fn of(secret: &[u8]) -> Key {
        Key {
            bytes: blake3::derive_key(KEY_CONTEXT, secret),
            keyed: true,
        }
    }

    /// A side's proof (`role`: [`ACCEPTING`] or [`CONNECTING`]) over both nonces.
    fn proof(
        &self,
        role: &[u8],
        connecting: &[u8; NONCE],
        accepting: &[u8; NONCE],
    ) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(&self.bytes);
        h.update(role);
        h.update(connecting);
        h.update(accepting);
        h.finalize()
    }

    /// Why `there` (a peer's "has a key") and this key cannot agree, if they cannot.
    fn disagrees(&self, there: bool) -> Option<&'static str> {
        match (self.keyed, there) {
            (true, false) => Some("it runs without a cluster key, this process with one"),
            (false, true) => Some("it runs with a cluster key, this process without one"),
            _ => None,
        }
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.keyed { "Key(..)" } else { "Key(none)" })
    }
}

/// A fresh nonce from the operating system.
fn nonce() -> std::io::Result<[u8; NONCE]> {
    let mut n = [0u8; NONCE];
    getrandom::fill(&mut n).map_err(|e| std::io::Error::other(format!("no random source: {e}")))?;
    Ok(n)
}

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
    fn encode(&self) -> [u8; BODY] {
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
    fn decode(body: &[u8; BODY]) -> Option<Hello> {
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
fn head(len: usize) -> [u8; HEAD] {
    let mut out = [0u8; HEAD];
    out[..8].copy_from_slice(&MAGIC);
    out[8..12].copy_from_slice(&PROTOCOL.to_le_bytes());
    out[12..].copy_from_slice(&u32::try_from(len).expect("a short body").to_le_bytes());
    out
}

/// What a connection's first 16 bytes say.
#[derive(Debug, PartialEq)]
enum Head {
    /// Not the magic.
    Junk,
    /// The magic and another protocol version.
    Version(u32),
    /// The magic and this protocol's version, with a body of so many bytes.
    Ours(u32),
}

impl Head {
    fn read(bytes: &[u8; HEAD]) -> Head {
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
fn read_by(s: &mut TcpStream, buf: &mut [u8], until: Instant) -> std::io::Result<()> {
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
type Difference = (&'static str, String, String, &'static str);

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

/// A start that failed: why, and the connection it is about, if any (to tell it too).
type GaveUp = Box<(ClusterError, Option<TcpStream>)>;

/// What happened on one connection, for the thread that gathers them.
enum Event {
    /// A connection to a process, proven and agreed.
    Peer(usize, TcpStream),
    /// A connection came in (from that address) that proved the key and said hello: to
    /// check here (configuration, index).
    Hello(Hello, TcpStream, SocketAddr),
    /// A connection came in that was not a peer of this run: refused (and logged).
    Refused,
    /// Connecting failed.
    Failed(ClusterError, Option<TcpStream>),
}

/// The refused connections of one start: logged on stderr, the first [`MAX_LOGGED`] one
/// by one, then counted.
struct Refusals {
    /// This process's index.
    me: usize,
    /// Its address.
    listening: String,
    /// Refused so far.
    count: AtomicUsize,
}

impl Refusals {
    /// Logs a refused connection from `from`, and why.
    fn refuse(&self, from: SocketAddr, why: &str) {
        let n = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        if n <= MAX_LOGGED {
            eprintln!(
                "runsync-cluster: process {} ({}) refused a connection from {from}: {why}; \
                 it waits on for its peers",
                self.me, self.listening
            );
        }
        if n == MAX_LOGGED {
            eprintln!(
                "runsync-cluster: process {} ({}) logs no more refused connections one by \
                 one while starting (it counts them)",
                self.me, self.listening
            );
        }
    }

    /// Logs the count, once the start is over, if some went unlogged.
    fn summary(&self) {
        let n = self.count.load(Ordering::Relaxed);
        if n > MAX_LOGGED {
            eprintln!(
                "runsync-cluster: process {} ({}) refused {n} connections in all while \
                 starting",
                self.me, self.listening
            );
        }
    }
}

/// Connects this process (`me`) with every other process in `addresses`, proving `key`
/// and agreeing with each on `hello` (see the [module](self)), waiting at most `wait` for
/// each step. Returns the connections in process order (`None` for this one), blocking
/// and with no timeouts, ready for timely.
pub(crate) fn connect(
    addresses: &[String],
    me: usize,
    hello: &Hello,
    key: &Key,
    wait: Duration,
) -> Result<Vec<Option<TcpStream>>, ClusterError> {
    let n = addresses.len();
    let start = Instant::now();
    let deadline = start + wait;
    let listener = TcpListener::bind(&addresses[me]).map_err(|error| ClusterError::Bind {
        address: addresses[me].clone(),
        error,
    })?;
    let stop = Arc::new(AtomicBool::new(false));
    let refusals = Arc::new(Refusals {
        me,
        listening: addresses[me].clone(),
        count: AtomicUsize::new(0),
    });
    let (tx, rx) = mpsc::channel();
    for (j, address) in addresses.iter().enumerate().take(me) {
        let (tx, stop, address, hello, key) = (
            tx.clone(),
            stop.clone(),
            address.clone(),
            hello.clone(),
            key.clone(),
        );
        std::thread::Builder::new()
            .name(format!("runsync-cluster:connect-{j}"))
            .spawn(move || {
                let _ = tx.send(connect_to(
                    j, &address, &hello, &key, start, deadline, &stop,
                ));
            })
            .map_err(|e| ClusterError::Timely(format!("cannot start a thread: {e}")))?;
    }
    if me + 1 < n {
        let (tx, stop, refusals) = (tx.clone(), stop.clone(), refusals.clone());
        let (hello, key) = (hello.clone(), key.clone());
        listener
            .set_nonblocking(true)
            .map_err(|error| ClusterError::Bind {
                address: addresses[me].clone(),
                error,
            })?;
        std::thread::Builder::new()
            .name("runsync-cluster:accept".into())
            .spawn(move || accept(&listener, &hello, &key, deadline, &stop, &refusals, &tx))
            .map_err(|e| ClusterError::Timely(format!("cannot start a thread: {e}")))?;
    }
    drop(tx);
    let mut peers: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    let result = gather(&rx, &mut peers, addresses, me, hello, start, deadline);
    stop.store(true, Ordering::Relaxed);
    refusals.summary();
    if let Err(gave_up) = result {
        let (e, mut stream) = *gave_up;
        // Tell every process reached (and the one this is about) why this one gave up.
        let reason = e.bare();
        for s in peers.iter_mut().flatten().chain(stream.as_mut()) {
            let _ = s.set_write_timeout(Some(HELLO_WAIT));
            let _ = s.write_all(&verdict(Some(&reason)));
        }
        return Err(e);
    }
    ready(&mut peers, addresses, wait)?;
    for s in peers.iter().flatten() {
        let set = s
            .set_read_timeout(None)
            .and_then(|()| s.set_write_timeout(None))
            .and_then(|()| s.set_nonblocking(false))
            .and_then(|()| s.set_nodelay(true));
        set.map_err(|e| ClusterError::Timely(format!("cannot set up a connection: {e}")))?;
    }
    Ok(peers)
}

/// Step 1 to 3 on this side: gathers the connections until every process is connected
/// and agreed. On an error, the connection it is about, if any.
fn gather(
    rx: &mpsc::Receiver<Event>,
    peers: &mut [Option<TcpStream>],
    addresses: &[String],
    me: usize,
    hello: &Hello,
    start: Instant,
    deadline: Instant,
) -> Result<(), GaveUp> {
    let n = addresses.len();
    // The threads that connect out report their own timeouts (with the last error, a
    // hello's wait after the deadline at most); this one reports the processes that
    // never connected in.
    let grace = deadline + HELLO_WAIT + Duration::from_millis(500);
    while peers
        .iter()
        .enumerate()
        .any(|(p, s)| p != me && s.is_none())
    {
        let now = Instant::now();
        if now >= grace {
            return Err(Box::new((missing(peers, addresses, me, start), None)));
        }
        match rx.recv_timeout(grace - now) {
            Ok(Event::Peer(p, s)) => peers[p] = Some(s),
            Ok(Event::Hello(theirs, s, from)) => {
                // It proved the key: a process of this run, whose differences end the start.
                let p = theirs.process as usize;
                let known = p < n;
                let address = || match known {
                    true => addresses[p].clone(),
                    false => from.to_string(),
                };
                if let Some((what, here, there, fix)) = difference(hello, &theirs) {
                    let e = ClusterError::Mismatch {
                        process: known.then_some(p),
                        address: address(),
                        what,
                        here,
                        there,
                        fix,
                    };
                    return Err(Box::new((e, Some(s))));
                }
                if p <= me || p >= n || peers[p].is_some() {
                    let e = ClusterError::Mismatch {
                        process: known.then_some(p),
                        address: address(),
                        what: "the process index",
                        here: format!("{me} (expecting processes {} to {})", me + 1, n - 1),
                        there: format!(
                            "{p}{}",
                            if p < n && peers[p].is_some() {
                                ", a second time"
                            } else {
                                ""
                            }
                        ),
                        fix: "give each process its own index (0 to the process count - 1) \
                              and the same address list, in process order",
                    };
                    return Err(Box::new((e, Some(s))));
                }
                peers[p] = Some(s);
            }
            Ok(Event::Refused) => {}
            Ok(Event::Failed(e, s)) => return Err(Box::new((e, s))),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // Every thread is gone but some process is missing: the accept thread
                // stopped at the deadline.
                return Err(Box::new((missing(peers, addresses, me, start), None)));
            }
        }
    }
    Ok(())
}

/// The error for the first process not connected when the wait is over.
fn missing(
    peers: &[Option<TcpStream>],
    addresses: &[String],
    me: usize,
    start: Instant,
) -> ClusterError {
    let p = (0..peers.len())
        .find(|&p| p != me && peers[p].is_none())
        .unwrap_or(me);
    if p < me {
        ClusterError::Unreachable {
            process: p,
            address: addresses[p].clone(),
            waited: start.elapsed(),
            error: "no answer to this process's hello".into(),
        }
    } else {
        ClusterError::NoPeer {
            process: p,
            address: addresses[p].clone(),
            listening: addresses[me].clone(),
            waited: start.elapsed(),
        }
    }
}

/// How one attempt to connect to a process ended, short of success.
enum Attempt {
    /// The address answered, but not as a process of this run: the start ends.
    Refuse(ClusterError, Option<TcpStream>),
    /// The connection closed, broke or fell silent: try again (the reason, for the
    /// timeout's error).
    Again(String),
}

/// Connects to process `j` at `address`, retrying until `deadline`; proves the key, says
/// hello and checks the answer.
fn connect_to(
    j: usize,
    address: &str,
    hello: &Hello,
    key: &Key,
    start: Instant,
    deadline: Instant,
    stop: &AtomicBool,
) -> Event {
    let unreachable = |error: String| ClusterError::Unreachable {
        process: j,
        address: address.to_owned(),
        waited: start.elapsed(),
        error,
    };
    let mut last = String::from("no attempt");
    loop {
        if stop.load(Ordering::Relaxed) {
            return Event::Refused;
        }
        let now = Instant::now();
        if now >= deadline {
            return Event::Failed(unreachable(last), None);
        }
        let attempt = (deadline - now).min(Duration::from_secs(1));
        match address.to_socket_addrs() {
            Ok(addrs) => {
                let addrs: Vec<SocketAddr> = addrs.collect();
                if addrs.is_empty() {
                    last = "the name resolves to no address".into();
                }
                let mut connected = None;
                for a in addrs {
                    match TcpStream::connect_timeout(&a, attempt) {
                        Ok(s) => {
                            connected = Some(s);
                            break;
                        }
                        Err(e) => last = e.to_string(),
                    }
                }
                if let Some(s) = connected {
                    match talk_to(j, address, s, hello, key, start, deadline) {
                        Ok(event) => return event,
                        Err(Attempt::Refuse(e, s)) => return Event::Failed(e, s),
                        Err(Attempt::Again(why)) => last = why,
                    }
                }
            }
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(
            Duration::from_millis(100).min(deadline.saturating_duration_since(Instant::now())),
        );
    }
}

/// The connecting side of steps 2 and 3 on a new connection to process `j`.
fn talk_to(
    j: usize,
    address: &str,
    mut s: TcpStream,
    hello: &Hello,
    key: &Key,
    start: Instant,
    deadline: Instant,
) -> Result<Event, Attempt> {
    let refuse = |e: ClusterError| Attempt::Refuse(e, None);
    let not_ours = |what: &str| {
        refuse(ClusterError::Unreachable {
            process: j,
            address: address.to_owned(),
            waited: start.elapsed(),
            error: format!("it answered, but not as a runsync-cluster process ({what})"),
        })
    };
    let key_refused = |reason: &str| {
        refuse(ClusterError::Key {
            process: j,
            address: address.to_owned(),
            reason: reason.to_owned(),
        })
    };
    let again = |what: &str, e: std::io::Error| Attempt::Again(format!("{what}: {e}"));
    // Each read waits for the other side until the deadline (a hello's wait at least).
    let until = || deadline.max(Instant::now() + HELLO_WAIT);
    let mine = nonce().map_err(|e| {
        refuse(ClusterError::Timely(format!(
            "cannot start the handshake: {e}"
        )))
    })?;
    let mut open = head(OPEN).to_vec();
    open.push(u8::from(key.keyed));
    open.extend_from_slice(&mine);
    s.set_nodelay(true)
        .and_then(|()| s.set_write_timeout(Some(HELLO_WAIT)))
        .and_then(|()| s.write_all(&open))
        .map_err(|e| again("it accepted the connection, then broke it", e))?;
    let mut first = [0u8; HEAD];
    read_by(&mut s, &mut first, until())
        .map_err(|e| again("it accepted the connection but did not answer", e))?;
    match Head::read(&first) {
        Head::Junk => return Err(not_ours("no magic")),
        Head::Version(v) => {
            return Err(refuse(ClusterError::Mismatch {
                process: Some(j),
                address: address.to_owned(),
                what: "the protocol version",
                here: PROTOCOL.to_string(),
                there: v.to_string(),
                fix: "run the same build of runsync-cluster on every process",
            }));
        }
        Head::Ours(len) if len as usize != CHALLENGE => {
            return Err(not_ours("an answer of another size"));
        }
        Head::Ours(_) => {}
    }
    let mut challenge = [0u8; CHALLENGE];
    read_by(&mut s, &mut challenge, until()).map_err(|e| again("it broke off the handshake", e))?;
    let keyed = match challenge[0] {
        0 => false,
        1 => true,
        _ => return Err(not_ours("a key flag other than 0 or 1")),
    };
    if let Some(why) = key.disagrees(keyed) {
        return Err(key_refused(why));
    }
    let nonce_there: [u8; NONCE] = challenge[1..1 + NONCE].try_into().expect("32 bytes");
    let proof: [u8; NONCE] = challenge[1 + NONCE..].try_into().expect("32 bytes");
    // blake3's `Hash` compares in constant time.
    if key.proof(ACCEPTING, &mine, &nonce_there) != blake3::Hash::from_bytes(proof) {
        return Err(key_refused(
            "its proof is of another key (or it is not a process of this run)",
        ));
    }
    let mut said = key
        .proof(CONNECTING, &mine, &nonce_there)
        .as_bytes()
        .to_vec();
    said.extend_from_slice(&hello.encode());
    s.write_all(&said)
        .map_err(|e| again("it broke off the handshake", e))?;
    let mut answer = [0u8; BODY];
    read_by(&mut s, &mut answer, until())
        .map_err(|e| again("it proved the key but did not say hello", e))?;
    let Some(theirs) = Hello::decode(&answer) else {
        return Err(not_ours("a malformed hello"));
    };
    if let Some((what, here, there, fix)) = difference(hello, &theirs) {
        let e = ClusterError::Mismatch {
            process: Some(j),
            address: address.to_owned(),
            what,
            here,
            there,
            fix,
        };
        return Err(Attempt::Refuse(e, Some(s)));
    }
    if theirs.process as usize != j {
        let e = ClusterError::Mismatch {
            process: Some(j),
            address: address.to_owned(),
            what: "the process index at this address",
            here: j.to_string(),
            there: theirs.process.to_string(),
            fix: "give every process the same address list, in process order",
        };
        return Err(Attempt::Refuse(e, Some(s)));
    }
    Ok(Event::Peer(j, s))
}

/// Counts a greeting under way while alive.
struct Greeting(Arc<AtomicUsize>);

impl Drop for Greeting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Accepts connections until `deadline` (or `stop`), greeting each one on a thread of its
/// own, [`MAX_GREETINGS`] at most at once.
fn accept(
    listener: &TcpListener,
    hello: &Hello,
    key: &Key,
    deadline: Instant,
    stop: &AtomicBool,
    refusals: &Arc<Refusals>,
    tx: &mpsc::Sender<Event>,
) {
    let greetings = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        match listener.accept() {
            Ok((stream, from)) => {
                if greetings.load(Ordering::Relaxed) >= MAX_GREETINGS {
                    refusals.refuse(
                        from,
                        &format!("{MAX_GREETINGS} connections are saying hello already"),
                    );
                    drop(stream);
                    continue;
                }
                greetings.fetch_add(1, Ordering::Relaxed);
                let counted = Greeting(greetings.clone());
                let (tx, hello, key, refusals) =
                    (tx.clone(), hello.clone(), key.clone(), refusals.clone());
                // A thread that cannot start drops its closure: the count goes down and
                // the connection closes.
                let _ = std::thread::Builder::new()
                    .name("runsync-cluster:hello".into())
                    .stack_size(GREETING_STACK)
                    .spawn(move || {
                        let event = match greet(stream, &hello, &key) {
                            Ok((theirs, stream)) => Event::Hello(theirs, stream, from),
                            Err(why) => {
                                refusals.refuse(from, &why);
                                Event::Refused
                            }
                        };
                        drop(counted);
                        let _ = tx.send(event);
                    });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// The accepting side of steps 2 and 3 on a connection that came in, within
/// [`HELLO_WAIT`] in all: its hello once it proved the key, else why it is refused.
fn greet(mut s: TcpStream, hello: &Hello, key: &Key) -> Result<(Hello, TcpStream), String> {
    let until = Instant::now() + HELLO_WAIT;
    let wait = HELLO_WAIT.as_secs_f64();
    // What was missing (`what`), and how the connection ended.
    let said = |what: &str, e: std::io::Error| match e.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
            format!("{what} within {wait:.1} s")
        }
        std::io::ErrorKind::UnexpectedEof => format!("{what}: it closed the connection"),
        _ => format!("{what}: {e}"),
    };
    s.set_nonblocking(false)
        .and_then(|()| s.set_nodelay(true))
        .and_then(|()| s.set_write_timeout(Some(HELLO_WAIT)))
        .map_err(|e| format!("cannot set up the connection: {e}"))?;
    let mut first = [0u8; HEAD];
    read_by(&mut s, &mut first, until).map_err(|e| said("no opening of the handshake", e))?;
    match Head::read(&first) {
        Head::Junk => return Err("it does not speak the runsync-cluster protocol".into()),
        Head::Version(v) => {
            // Only the magic and this version: a process of another build says what
            // differs; a stranger learns nothing of this run.
            let _ = s.write_all(&head(0));
            return Err(format!(
                "it speaks protocol version {v}, this process {PROTOCOL} (not a process \
                 of this run, or one of another build: run the same build everywhere)"
            ));
        }
        Head::Ours(len) if len as usize != OPEN => {
            return Err(format!("an opening of {len} bytes, not {OPEN}"));
        }
        Head::Ours(_) => {}
    }
    let mut open = [0u8; OPEN];
    read_by(&mut s, &mut open, until).map_err(|e| said("no opening of the handshake", e))?;
    let keyed = match open[0] {
        0 => false,
        1 => true,
        _ => return Err("a key flag other than 0 or 1".into()),
    };
    let nonce_there: [u8; NONCE] = open[1..].try_into().expect("32 bytes");
    let mine = nonce().map_err(|e| format!("cannot answer: {e}"))?;
    let mut challenge = head(CHALLENGE).to_vec();
    challenge.push(u8::from(key.keyed));
    challenge.extend_from_slice(&mine);
    challenge.extend_from_slice(key.proof(ACCEPTING, &nonce_there, &mine).as_bytes());
    s.write_all(&challenge)
        .map_err(|e| said("it did not take the answer", e))?;
    let mut proof = [0u8; NONCE];
    let mut body = [0u8; BODY];
    let unproven = |e| match key.disagrees(keyed) {
        Some(why) => format!("{why}; {}", said("no proof of the cluster key", e)),
        None => said("no proof of the cluster key", e),
    };
    read_by(&mut s, &mut proof, until).map_err(unproven)?;
    // blake3's `Hash` compares in constant time.
    if key.proof(CONNECTING, &nonce_there, &mine) != blake3::Hash::from_bytes(proof) {
        return Err(match key.disagrees(keyed) {
            Some(why) => why.to_owned(),
            None => "a wrong proof of the cluster key (another key, or none)".to_owned(),
        });
    }
    read_by(&mut s, &mut body, until)
        .map_err(|e| said("it proved the key but said no hello", e))?;
    let theirs = Hello::decode(&body).ok_or("it proved the key but its hello is malformed")?;
    s.write_all(&hello.encode())
        .map_err(|e| said("it did not take this process's hello", e))?;
    Ok((theirs, s))
}

/// A verdict: ready (`None`) or gave up, with the reason.
fn verdict(reason: Option<&str>) -> Vec<u8> {
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

/// Step 3: tells every peer this process is ready and waits (at most `wait`) until each
/// says the same.
fn ready(
    peers: &mut [Option<TcpStream>],
    addresses: &[String],
    wait: Duration,
) -> Result<(), ClusterError> {
    let refused = |p: usize, reason: String| ClusterError::Refused {
        process: p,
        address: addresses[p].clone(),
        reason,
    };
    for (p, s) in peers.iter_mut().enumerate() {
        if let Some(s) = s {
            s.set_write_timeout(Some(HELLO_WAIT))
                .and_then(|()| s.write_all(&verdict(None)))
                .map_err(|e| refused(p, format!("closed the connection before the start: {e}")))?;
        }
    }
    let deadline = Instant::now() + wait;
    for (p, s) in peers.iter_mut().enumerate() {
        let Some(s) = s else { continue };
        let left = deadline.saturating_duration_since(Instant::now());
        let read = |s: &mut TcpStream| -> std::io::Result<Option<String>> {
            s.set_read_timeout(Some(left.max(Duration::from_millis(10))))?;
            let mut head = [0u8; 5];
            s.read_exact(&mut head)?;
            let len = u32::from_le_bytes(head[1..5].try_into().expect("4 bytes")) as usize;
            if head[0] == 1 && len == 0 {
                return Ok(None);
            }
            let mut reason = vec![0u8; len.min(MAX_REASON)];
            s.read_exact(&mut reason)?;
            Ok(Some(String::from_utf8_lossy(&reason).into_owned()))
        };
        match read(s) {
            Ok(None) => {}
            Ok(Some(reason)) => return Err(refused(p, reason)),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(refused(
                    p,
                    format!(
                        "it did not say it was ready within {:.1} s",
                        wait.as_secs_f64()
                    ),
                ));
            }
            Err(e) => {
                return Err(refused(
                    p,
                    format!("it closed the connection before the start ({e}): see its error"),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Digests a stranger must never see.
    const SCHEMA: u64 = 0x5C4E_3A00_0000_0007;
    const WORLD: u64 = 0x3012_1D00_0000_0011;
    const FINGERPRINT: u64 = 0xF1E6_E200_0000_0013;

    fn hello(process: u32) -> Hello {
        Hello {
            process,
            processes: 2,
            threads: 1,
            frames: 90,
            resume: 0,
            checkpoints: 0,
            checksums: true,
            schema: SCHEMA,
            world: WORLD,
            fingerprint: FINGERPRINT,
        }
    }

    /// Runs process `me`'s side of the handshake on a thread.
    fn start(
        addresses: &[String],
        me: usize,
        hello: Hello,
        key: Key,
        wait: Duration,
    ) -> std::thread::JoinHandle<Result<Vec<Option<TcpStream>>, ClusterError>> {
        let addresses = addresses.to_vec();
        std::thread::spawn(move || connect(&addresses, me, &hello, &key, wait))
    }

    /// Connects to `address`, retrying for 10 s (the process may not listen yet).
    fn dial(address: &str) -> TcpStream {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            match TcpStream::connect(address) {
                Ok(s) => return s,
                Err(_) if Instant::now() < until => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => panic!("{address}: {e}"),
            }
        }
    }

    /// Whether `bytes` hold any digest of [`hello`] (either byte order).
    fn holds_a_digest(bytes: &[u8]) -> bool {
        [SCHEMA, WORLD, FINGERPRINT].iter().any(|d| {
            [d.to_le_bytes(), d.to_be_bytes()]
                .iter()
                .any(|d| bytes.windows(8).any(|w| w == d))
        })
    }

    #[test]
    fn a_hello_round_trips_and_junk_is_told_apart() {
        let h = hello(1);
        assert_eq!(Hello::decode(&h.encode()), Some(h.clone()));
        let mut bad = h.encode();
        bad[36] = 2;
        assert_eq!(Hello::decode(&bad), None, "a checksums flag of 2");
        assert_eq!(Head::read(&head(OPEN)), Head::Ours(OPEN as u32));
        assert_eq!(Head::read(&[0u8; HEAD]), Head::Junk);
        let mut other = head(0);
        other[8] = 9;
        assert_eq!(Head::read(&other), Head::Version(9));
    }

    #[test]
    fn differences_are_named_in_order() {
        let (a, mut b) = (hello(0), hello(1));
        assert_eq!(difference(&a, &b), None, "the index is not compared here");
        b.world = 12;
        b.threads = 2;
        let (what, here, there, _) = difference(&a, &b).unwrap();
        assert_eq!(
            (what, &here[..], &there[..]),
            ("the shards per process", "1", "2")
        );
        b.threads = 1;
        assert_eq!(difference(&a, &b).unwrap().0, "the initial world's digest");
        b.world = WORLD;
        b.checksums = false;
        assert_eq!(difference(&a, &b).unwrap().0, "computing checksums");
    }

    #[test]
    fn proofs_differ_by_key_side_and_nonce() {
        let (a, b) = (Key::of(b"one"), Key::of(b"two"));
        let (n, m) = ([1u8; NONCE], [2u8; NONCE]);
        assert_eq!(
            a.proof(ACCEPTING, &n, &m),
            Key::of(b"one").proof(ACCEPTING, &n, &m)
        );
        assert_ne!(a.proof(ACCEPTING, &n, &m), b.proof(ACCEPTING, &n, &m));
        assert_ne!(a.proof(ACCEPTING, &n, &m), a.proof(CONNECTING, &n, &m));
        assert_ne!(a.proof(ACCEPTING, &n, &m), a.proof(ACCEPTING, &m, &n));
        assert_ne!(
            a.proof(ACCEPTING, &n, &m),
            Key::none().proof(ACCEPTING, &n, &m)
        );
        assert_ne!(nonce().unwrap(), nonce().unwrap());
        assert_eq!(format!("{a:?}"), "Key(..)", "a key is never printed");
    }

    #[test]
    fn peers_with_one_key_meet_and_so_do_peers_without_one() {
        for key in [Key::of(b"the cluster key"), Key::none()] {
            let addresses = crate::loopback_addresses(2).unwrap();
            let wait = Duration::from_secs(10);
            let p0 = start(&addresses, 0, hello(0), key.clone(), wait);
            let p1 = start(&addresses, 1, hello(1), key.clone(), wait);
            let (s0, s1) = (p0.join().unwrap().unwrap(), p1.join().unwrap().unwrap());
            assert!(s0[0].is_none() && s0[1].is_some(), "{key:?}");
            assert!(s1[0].is_some() && s1[1].is_none(), "{key:?}");
        }
    }

    #[test]
    fn peers_that_prove_the_key_and_differ_are_a_mismatch_on_both() {
        let addresses = crate::loopback_addresses(2).unwrap();
        let key = Key::of(b"the cluster key");
        let wait = Duration::from_secs(10);
        let p0 = start(&addresses, 0, hello(0), key.clone(), wait);
        let other = Hello {
            world: 12,
            ..hello(1)
        };
        let p1 = start(&addresses, 1, other, key, wait);
        for (i, result) in [p0.join().unwrap(), p1.join().unwrap()]
            .into_iter()
            .enumerate()
        {
            match result {
                Err(ClusterError::Mismatch { what, .. }) => {
                    assert_eq!(what, "the initial world's digest", "process {i}");
                }
                other => panic!("process {i}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_stranger_of_this_version_without_the_key_learns_no_digest_and_the_peers_meet() {
        let addresses = crate::loopback_addresses(2).unwrap();
        let key = Key::of(b"the cluster key");
        let p0 = start(
            &addresses,
            0,
            hello(0),
            key.clone(),
            Duration::from_secs(10),
        );
        // Strangers that speak the protocol: one says it has a key (and guesses a proof),
        // one says it has none (and proves the key everyone knows). Each says hello.
        for (keyed, guess) in [(1u8, Key::of(b"a guess")), (0, Key::none())] {
            let mut s = dial(&addresses[0]);
            let mine = nonce().unwrap();
            let mut open = head(OPEN).to_vec();
            open.push(keyed);
            open.extend_from_slice(&mine);
            s.write_all(&open).unwrap();
            let mut answer = [0u8; HEAD + CHALLENGE];
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s.read_exact(&mut answer).unwrap();
            assert_eq!(
                Head::read(answer[..HEAD].try_into().unwrap()),
                Head::Ours(CHALLENGE as u32)
            );
            assert_eq!(answer[HEAD], 1, "it says it has a key");
            let theirs: [u8; NONCE] = answer[HEAD + 1..HEAD + 1 + NONCE].try_into().unwrap();
            let mut said = guess.proof(CONNECTING, &mine, &theirs).as_bytes().to_vec();
            said.extend_from_slice(&hello(1).encode());
            s.write_all(&said).unwrap();
            // Nothing more: the connection closes.
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest);
            assert!(rest.is_empty(), "a stranger got {rest:02x?}");
            assert!(!holds_a_digest(&answer), "a stranger got {answer:02x?}");
        }
        // Process 0 waited on: the real process 1 comes.
        let p1 = start(&addresses, 1, hello(1), key, Duration::from_secs(10));
        assert!(p1.join().unwrap().is_ok());
        assert!(p0.join().unwrap().is_ok());
    }

    #[test]
    fn a_wrong_key_or_none_is_refused_by_the_connecting_side_and_ignored_by_the_other() {
        let cases = [
            (
                Key::of(b"one"),
                Key::of(b"two"),
                "its proof is of another key",
            ),
            (
                Key::of(b"one"),
                Key::none(),
                "with a cluster key, this process without",
            ),
            (
                Key::none(),
                Key::of(b"two"),
                "without a cluster key, this process with one",
            ),
        ];
        for (k0, k1, why) in cases {
            let addresses = crate::loopback_addresses(2).unwrap();
            let p0 = start(&addresses, 0, hello(0), k0.clone(), Duration::from_secs(2));
            let started = Instant::now();
            let p1 = start(&addresses, 1, hello(1), k1.clone(), Duration::from_secs(10));
            match p1.join().unwrap() {
                Err(e @ ClusterError::Key { .. }) => {
                    assert!(e.to_string().contains(why), "{k0:?} {k1:?}: {e}");
                    assert!(started.elapsed() < Duration::from_secs(5), "{k0:?} {k1:?}");
                }
                other => panic!("{k0:?} {k1:?}: {other:?}"),
            }
            // Process 0 took it for a stranger: it waited for process 1 to the end.
            match p0.join().unwrap() {
                Err(ClusterError::NoPeer { process: 1, .. }) => {}
                other => panic!("{k0:?} {k1:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn silent_slow_and_many_strangers_do_not_keep_the_peers_apart() {
        let addresses = crate::loopback_addresses(2).unwrap();
        let key = Key::none();
        let p0 = start(
            &addresses,
            0,
            hello(0),
            key.clone(),
            Duration::from_secs(20),
        );
        // One that sends a byte every 300 ms: dropped after a hello's wait, however long
        // it would go on.
        let mut slow = dial(&addresses[0]);
        let dripping = std::thread::spawn(move || {
            let start = Instant::now();
            for b in head(OPEN) {
                if slow.write_all(&[b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(300));
            }
            start.elapsed()
        });
        // Many that say nothing, more than are greeted at once; all kept open.
        let silent: Vec<TcpStream> = (0..2 * MAX_GREETINGS)
            .filter_map(|_| {
                let a = addresses[0].parse().unwrap();
                TcpStream::connect_timeout(&a, Duration::from_secs(1)).ok()
            })
            .collect();
        assert!(silent.len() > MAX_GREETINGS, "{}", silent.len());
        let started = Instant::now();
        let p1 = start(&addresses, 1, hello(1), key, Duration::from_secs(20));
        assert!(p1.join().unwrap().is_ok());
        assert!(p0.join().unwrap().is_ok());
        // The peers met once the strangers' greetings ran out, not at the connect timeout.
        let took = started.elapsed();
        assert!(took < HELLO_WAIT * 3, "{took:?}");
        // The slow one was cut off before it sent its 16 bytes (16 × 300 ms).
        assert!(dripping.join().unwrap() < Duration::from_millis(4_500));
        drop(silent);
    }
}
