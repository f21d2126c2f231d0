//! The start of a run over several processes, before timely gets the sockets: every pair
//! of processes connects and agrees that they run the same cluster, then every process
//! tells every other that it is ready.
//!
//! 1. **Listen and connect.** Process `i` listens on its address and connects to every
//!    process below it (as timely does: the higher index connects), retrying until the
//!    connect timeout; each connection that comes in is read on its own thread.
//! 2. **Hello.** The connecting side sends a [`Hello`]: a magic, the protocol version,
//!    its process index, the process and shard counts, the frames, checksums, resume and
//!    checkpoint settings, a digest of the world's schema (component types, partition,
//!    world-wide values), of the initial world, and the caller's fingerprint. The other
//!    side answers with its own, whatever it got (a connection that does not start with
//!    the magic within [`HELLO_WAIT`] is junk: dropped, and the wait goes on). Both sides
//!    compare the two the same way, so a difference is a [`ClusterError::Mismatch`] on
//!    both.
//! 3. **Ready.** A process that has all its connections, each agreeing, sends every peer
//!    *ready*; one that fails (a mismatch, a timeout, two processes with one index)
//!    sends every peer it reached *gave up* and why, then returns its error. A process
//!    starts the frames only when every peer said ready, so no process starts while
//!    another gave up.
//!
//! Every wait is bounded: connecting and waiting for connections by the connect timeout,
//! a hello by [`HELLO_WAIT`], the verdicts by the connect timeout again.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::ClusterError;

/// The first bytes of every connection between runsync-cluster processes.
const MAGIC: [u8; 8] = *b"RSYNCLU\0";
/// The version of what processes say to each other (the handshake and the records of a
/// frame): processes of different versions refuse each other.
pub(crate) const PROTOCOL: u32 = 1;
/// How long a connection that came in has to say hello.
pub(crate) const HELLO_WAIT: Duration = Duration::from_secs(2);
/// The bytes of a hello's body (after magic, version and length).
const BODY: usize = 3 * 4 + 3 * 8 + 1 + 3 * 8;
/// The longest reason a process gives for giving up.
const MAX_REASON: usize = 4096;

/// What a process says when it connects: who it is and what it runs.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Hello {
    /// The protocol version ([`PROTOCOL`]).
    pub(crate) version: u32,
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
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + BODY);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(BODY as u32).to_le_bytes());
        for w in [self.process, self.processes, self.threads] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        for w in [self.frames, self.resume, self.checkpoints] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.push(u8::from(self.checksums));
        for w in [self.schema, self.world, self.fingerprint] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// Reads a hello; `Ok(None)` for junk (no magic, a length out of reason, a body of
    /// another size for this version).
    fn read(r: &mut impl Read) -> std::io::Result<Option<Hello>> {
        let mut head = [0u8; 16];
        r.read_exact(&mut head)?;
        if head[..8] != MAGIC {
            return Ok(None);
        }
        let version = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(head[12..16].try_into().expect("4 bytes")) as usize;
        if len > 1024 {
            return Ok(None);
        }
        let mut body = vec![0u8; len];
        r.read_exact(&mut body)?;
        if version != PROTOCOL {
            // Another version: only the version is known to mean anything.
            return Ok(Some(Hello {
                version,
                ..Hello::unknown()
            }));
        }
        if len != BODY {
            return Ok(None);
        }
        let u32_at = |i: usize| u32::from_le_bytes(body[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(body[i..i + 8].try_into().expect("8 bytes"));
        let checksums = match body[36] {
            0 => false,
            1 => true,
            _ => return Ok(None),
        };
        Ok(Some(Hello {
            version,
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
        }))
    }

    /// A hello of another version, whose fields other than the version are not known.
    fn unknown() -> Hello {
        Hello {
            version: 0,
            process: u32::MAX,
            processes: 0,
            threads: 0,
            frames: 0,
            resume: 0,
            checkpoints: 0,
            checksums: false,
            schema: 0,
            world: 0,
            fingerprint: 0,
        }
    }
}

/// What differs between two hellos, and the fix: `(what, here, there, fix)`.
type Difference = (&'static str, String, String, &'static str);

/// The first difference between this process's hello and a peer's (the process index
/// aside), in the order a person would check them.
pub(crate) fn difference(here: &Hello, there: &Hello) -> Option<Difference> {
    let hex = |v: u64| format!("{v:#018x}");
    let checks: [(&'static str, String, String, &'static str); 10] = [
        (
            "the protocol version",
            here.version.to_string(),
            there.version.to_string(),
            "run the same build of runsync-cluster on every process",
        ),
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
    /// A connection to (or from) a process, agreed.
    Peer(usize, TcpStream),
    /// A connection came in (from that address) with a process's hello: to check here
    /// (index, counts).
    Hello(Hello, TcpStream, SocketAddr),
    /// A connection came in that was not a process: dropped.
    Junk,
    /// Connecting failed.
    Failed(ClusterError, Option<TcpStream>),
}

/// Connects this process (`me`) with every other process in `addresses` and agrees with
/// each on `hello` (see the [module](self)), waiting at most `wait` for each step.
/// Returns the connections in process order (`None` for this one), blocking and with no
/// timeouts, ready for timely.
pub(crate) fn connect(
    addresses: &[String],
    me: usize,
    hello: &Hello,
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
    let (tx, rx) = mpsc::channel();
    for (j, address) in addresses.iter().enumerate().take(me) {
        let (tx, stop, address, hello) = (tx.clone(), stop.clone(), address.clone(), hello.clone());
        std::thread::Builder::new()
            .name(format!("runsync-cluster:connect-{j}"))
            .spawn(move || {
                let _ = tx.send(connect_to(j, &address, &hello, start, deadline, &stop));
            })
            .map_err(|e| ClusterError::Timely(format!("cannot start a thread: {e}")))?;
    }
    if me + 1 < n {
        let (tx, stop, hello) = (tx.clone(), stop.clone(), hello.clone());
        listener
            .set_nonblocking(true)
            .map_err(|error| ClusterError::Bind {
                address: addresses[me].clone(),
                error,
            })?;
        std::thread::Builder::new()
            .name("runsync-cluster:accept".into())
            .spawn(move || accept(&listener, &hello, deadline, &stop, &tx))
            .map_err(|e| ClusterError::Timely(format!("cannot start a thread: {e}")))?;
    }
    drop(tx);
    let mut peers: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    let result = gather(&rx, &mut peers, addresses, me, hello, start, deadline);
    stop.store(true, Ordering::Relaxed);
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

/// Step 1 and 2 on this side: gathers the connections until every process is connected
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
                let p = theirs.process as usize;
                // Another version's index means nothing here: named by where it came from.
                let known = theirs.version == PROTOCOL && p < n;
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
            Ok(Event::Junk) => {}
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

/// Connects to process `j` at `address`, retrying until `deadline`; says hello and
/// checks the answer.
fn connect_to(
    j: usize,
    address: &str,
    hello: &Hello,
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
    let mut stream = loop {
        if stop.load(Ordering::Relaxed) {
            return Event::Junk;
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
                    break s;
                }
            }
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(
            Duration::from_millis(100).min(deadline.saturating_duration_since(Instant::now())),
        );
    };
    let talk = |s: &mut TcpStream| -> std::io::Result<Option<Hello>> {
        s.set_nodelay(true)?;
        s.set_write_timeout(Some(HELLO_WAIT))?;
        s.write_all(&hello.encode())?;
        let left = deadline.saturating_duration_since(Instant::now());
        s.set_read_timeout(Some(left.max(HELLO_WAIT)))?;
        Hello::read(s)
    };
    match talk(&mut stream) {
        Ok(Some(theirs)) => {
            if let Some((what, here, there, fix)) = difference(hello, &theirs) {
                let e = ClusterError::Mismatch {
                    process: Some(j),
                    address: address.to_owned(),
                    what,
                    here,
                    there,
                    fix,
                };
                return Event::Failed(e, Some(stream));
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
                return Event::Failed(e, Some(stream));
            }
            Event::Peer(j, stream)
        }
        Ok(None) => Event::Failed(
            unreachable("it answered, but not as a runsync-cluster process".into()),
            None,
        ),
        Err(e) => Event::Failed(
            unreachable(format!(
                "it accepted the connection but did not say hello: {e}"
            )),
            None,
        ),
    }
}

/// Accepts connections until `deadline` (or `stop`), reading each one's hello on a
/// thread of its own.
fn accept(
    listener: &TcpListener,
    hello: &Hello,
    deadline: Instant,
    stop: &AtomicBool,
    tx: &mpsc::Sender<Event>,
) {
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        match listener.accept() {
            Ok((stream, from)) => {
                let (tx, hello) = (tx.clone(), hello.clone());
                let _ = std::thread::Builder::new()
                    .name("runsync-cluster:hello".into())
                    .spawn(move || {
                        let _ = tx.send(greet(stream, from, &hello));
                    });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Reads a connection's hello (within [`HELLO_WAIT`]) and answers with this process's.
fn greet(mut stream: TcpStream, from: SocketAddr, hello: &Hello) -> Event {
    let talk = |s: &mut TcpStream| -> std::io::Result<Option<Hello>> {
        s.set_nonblocking(false)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(HELLO_WAIT))?;
        s.set_write_timeout(Some(HELLO_WAIT))?;
        let theirs = Hello::read(s)?;
        if theirs.is_some() {
            s.write_all(&hello.encode())?;
        }
        Ok(theirs)
    };
    match talk(&mut stream) {
        Ok(Some(theirs)) => Event::Hello(theirs, stream, from),
        _ => Event::Junk,
    }
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

    fn hello(process: u32) -> Hello {
        Hello {
            version: PROTOCOL,
            process,
            processes: 2,
            threads: 1,
            frames: 90,
            resume: 0,
            checkpoints: 0,
            checksums: true,
            schema: 7,
            world: 11,
            fingerprint: 13,
        }
    }

    #[test]
    fn a_hello_round_trips_and_junk_is_told_apart() {
        let h = hello(1);
        let bytes = h.encode();
        assert_eq!(bytes.len(), 16 + BODY);
        assert_eq!(Hello::read(&mut &bytes[..]).unwrap(), Some(h));
        // A stray 8 bytes: not the magic.
        assert_eq!(Hello::read(&mut &[0u8; 16][..]).unwrap(), None);
        // Cut short: an error (the caller drops the connection).
        assert!(Hello::read(&mut &bytes[..20]).is_err());
        // Another version: only the version is read.
        let mut other = bytes.clone();
        other[8] = 9;
        let read = Hello::read(&mut &other[..]).unwrap().unwrap();
        assert_eq!(read.version, 9);
        assert_eq!(
            difference(&hello(0), &read).unwrap().0,
            "the protocol version"
        );
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
        b.world = 11;
        b.checksums = false;
        assert_eq!(difference(&a, &b).unwrap().0, "computing checksums");
    }
}
