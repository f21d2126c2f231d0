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
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::error::ClusterError;

mod accepting;
mod connecting;
mod events;
mod key;
#[cfg(test)]
mod tests;
mod wire;

#[cfg(doc)]
use accepting::MAX_GREETINGS;
use accepting::accept;
use connecting::connect_to;
#[cfg(doc)]
use events::MAX_LOGGED;
use events::{Event, GaveUp, Refusals};
pub(crate) use key::Key;
pub(crate) use wire::{HELLO_WAIT, Hello, difference};
use wire::{MAX_REASON, verdict};

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
