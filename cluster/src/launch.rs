//! Starting timely's workers for a run and ending them, whatever happens, in bounded
//! time.
//!
//! timely's own `execute` would connect processes by retrying forever, trust the first 8
//! bytes of any connection, panic when a peer goes away, and, after the workers' code
//! returns, step until every dataflow completes (forever, with a dead peer), then join
//! its network threads (forever, with a hung one). So a run here:
//!
//! 1. **connects** processes itself ([`handshake`](crate::handshake)) and hands the
//!    agreed sockets to timely (`initialize_networking_from_sockets`), keeping a handle
//!    on each to see later which one closed;
//! 2. **runs** each worker on a thread of its own, the worker's code and the worker's
//!    drop under `catch_unwind` (a broken connection surfaces in a worker as a panic:
//!    timely's receive thread dies and poisons the worker's queues); results come back
//!    on a channel, and once one shard failed the others get the peer timeout to end
//!    before the run returns without them;
//! 3. **ends** the network: timely's send and receive threads are joined on a helper
//!    thread for at most the peer timeout; past it the sockets are shut down, and the
//!    threads left behind are not waited for.
//!
//! While a run over TCP is in progress, a panic hook (installed once, chained to the
//! one before it) keeps quiet about panics in timely's network threads and in a worker
//! while it steps timely: they are how timely reports a lost peer, and the run returns
//! them as a [`ClusterError`] naming the process, its address and the frame.

use std::any::Any;
use std::cell::Cell;
use std::net::{Shutdown, TcpStream};
use std::ops::DerefMut;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once, mpsc};
use std::time::{Duration, Instant};

use timely::communication::allocator::zero_copy::allocator_process::ProcessBuilder;
use timely::communication::allocator::zero_copy::bytes_slab::BytesRefill;
use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::{AllocateBuilder, GenericBuilder, Process};
use timely::communication::{Allocator, Config as Communication};
use timely::worker::Worker;

use crate::error::ClusterError;
use crate::handshake::{self, Hello, Key};

/// Who the shards are: this process, the shards per process, and the other processes'
/// addresses and connections (none for threads of one process).
pub(crate) struct Peers {
    /// This process's index.
    pub(crate) process: usize,
    /// Shards per process.
    pub(crate) threads: usize,
    /// Every process's address (empty for one process).
    pub(crate) addresses: Vec<String>,
    /// Our handle on the connection to each process (`None` for this one).
    sockets: Vec<Option<TcpStream>>,
}

impl Peers {
    /// The process holding `shard`.
    pub(crate) fn process_of(&self, shard: usize) -> usize {
        shard / self.threads.max(1)
    }

    /// The shards of process `p`.
    pub(crate) fn shards_of(&self, p: usize) -> std::ops::Range<usize> {
        p * self.threads..(p + 1) * self.threads
    }

    /// A process whose connection is closed or broken, and how; `None` if every one
    /// looks open. Makes the connections non-blocking: only for a run that has failed.
    pub(crate) fn closed(&self) -> Option<(usize, String)> {
        for (p, s) in self.sockets.iter().enumerate() {
            let Some(s) = s else { continue };
            if s.set_nonblocking(true).is_err() {
                continue;
            }
            match s.peek(&mut [0u8; 1]) {
                Ok(0) => return Some((p, "its connection closed".into())),
                Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => {
                    return Some((p, format!("its connection broke ({e})")));
                }
                _ => {}
            }
        }
        None
    }

    /// Shuts every connection down (to free timely's threads blocked on one).
    fn shut_down(&self) {
        for s in self.sockets.iter().flatten() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// timely's workers for a run, not yet started.
pub(crate) struct Launch {
    builders: Vec<GenericBuilder>,
    worker: timely::WorkerConfig,
    /// timely's send and receive threads (a `CommsGuard`, which joins them on drop).
    network: Option<Box<dyn Any + Send>>,
    pub(crate) peers: Arc<Peers>,
}

/// Prepares the workers `config` describes; over TCP, after the handshake with every
/// other process: `hello(process, processes, threads)` is what this process says, to
/// peers that prove `key`.
pub(crate) fn prepare(
    config: timely::Config,
    hello: impl FnOnce(usize, usize, usize) -> Result<Hello, ClusterError>,
    key: &Key,
    connect_timeout: Duration,
) -> Result<Launch, ClusterError> {
    let worker = config.worker;
    match config.communication {
        Communication::Cluster {
            threads,
            process,
            addresses,
            zerocopy,
            log_fn,
            report: _,
        } => {
            let processes = addresses.len();
            if threads == 0 || process >= processes {
                return Err(ClusterError::Timely(format!(
                    "need at least one shard per process and a process index below the \
                     process count (got {threads} shards, process {process} of {processes})"
                )));
            }
            let hello = hello(process, processes, threads)?;
            let sockets = handshake::connect(&addresses, process, &hello, key, connect_timeout)?;
            let ours = (sockets.iter())
                .map(|s| s.as_ref().map(TcpStream::try_clone).transpose())
                .collect::<std::io::Result<Vec<_>>>()
                .map_err(|e| ClusterError::Timely(format!("cannot set up a connection: {e}")))?;
            let refill = BytesRefill {
                logic: Arc::new(|size| {
                    Box::new(vec![0_u8; size]) as Box<dyn DerefMut<Target = [u8]>>
                }),
                limit: None,
            };
            let started = if zerocopy {
                initialize_networking_from_sockets::<_, ProcessBuilder>(
                    sockets, process, threads, refill, log_fn,
                )
                .map(|(b, guard)| {
                    let b = b.into_iter().map(GenericBuilder::ZeroCopyBinary).collect();
                    (b, Box::new(guard) as Box<dyn Any + Send>)
                })
            } else {
                initialize_networking_from_sockets::<_, Process>(
                    sockets, process, threads, refill, log_fn,
                )
                .map(|(b, guard)| {
                    let b = b.into_iter().map(GenericBuilder::ZeroCopy).collect();
                    (b, Box::new(guard) as Box<dyn Any + Send>)
                })
            };
            let (builders, guard) = started
                .map_err(|e| ClusterError::Timely(format!("cannot start the network: {e}")))?;
            Ok(Launch {
                builders,
                worker,
                network: Some(guard),
                peers: Arc::new(Peers {
                    process,
                    threads,
                    addresses,
                    sockets: ours,
                }),
            })
        }
        communication => {
            let (builders, _) = communication.try_build().map_err(ClusterError::Timely)?;
            let threads = builders.len();
            Ok(Launch {
                builders,
                worker,
                network: None,
                peers: Arc::new(Peers {
                    process: 0,
                    threads,
                    addresses: Vec::new(),
                    sockets: Vec::new(),
                }),
            })
        }
    }
}

/// What a worker runs: given its timely worker and who the shards are.
pub(crate) type Body<T> =
    Arc<dyn Fn(&mut Worker<Allocator>, &Peers) -> Result<T, ClusterError> + Send + Sync>;

/// Runs `body` on every worker of `launch` and returns what each returned, in worker
/// order — `None` for a worker still running the peer timeout after another failed (left
/// behind). Ends the network, time-boxed by `peer_timeout`.
pub(crate) fn run<T: Send + 'static>(
    launch: Launch,
    body: Body<T>,
    peer_timeout: Duration,
) -> Vec<Option<Result<T, ClusterError>>> {
    let _quiet = launch.network.is_some().then(QuietNetwork::new);
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::new();
    let n = launch.builders.len();
    for (i, builder) in launch.builders.into_iter().enumerate() {
        let (told, body, peers, config) = (
            tx.clone(),
            body.clone(),
            launch.peers.clone(),
            launch.worker.clone(),
        );
        let spawned = std::thread::Builder::new()
            .name(format!("runsync-cluster:shard-{i}"))
            .spawn(move || {
                let result = catch_unwind(AssertUnwindSafe(|| {
                    let mut worker = Worker::new(config, builder.build(), Some(Instant::now()));
                    let result = body(&mut worker, &peers);
                    // A worker whose peer died panics on drop (its queues are poisoned).
                    let _ = quietly(|| drop(worker));
                    result
                }));
                let result = result.unwrap_or_else(|payload| {
                    Err(ClusterError::Exchange {
                        shard: peers.process * peers.threads + i,
                        frame: 0,
                        message: panic_message(&*payload),
                    })
                });
                let _ = told.send((i, result));
            });
        match spawned {
            Ok(h) => handles.push(Some(h)),
            Err(e) => {
                let _ = tx.send((
                    i,
                    Err(ClusterError::Timely(format!("cannot start a thread: {e}"))),
                ));
                handles.push(None);
            }
        }
    }
    drop(tx);
    let mut results: Vec<Option<Result<T, ClusterError>>> = (0..n).map(|_| None).collect();
    let mut left_by: Option<Instant> = None;
    let mut got = 0;
    while got < n {
        let received = match left_by {
            None => rx.recv().map_err(|_| ()),
            Some(by) => rx
                .recv_timeout(by.saturating_duration_since(Instant::now()))
                .map_err(|_| ()),
        };
        let Ok((i, result)) = received else { break };
        if result.is_err() && left_by.is_none() {
            left_by = Some(Instant::now() + peer_timeout);
        }
        results[i] = Some(result);
        got += 1;
    }
    for (h, r) in handles.into_iter().zip(&results) {
        if let (Some(h), Some(_)) = (h, r) {
            let _ = h.join();
        }
    }
    if let Some(network) = launch.network {
        // A peer lost or silent: no use waiting for it to close its side.
        let lost = results.iter().flatten().any(|r| {
            matches!(
                r,
                Err(ClusterError::PeerLost { .. }
                    | ClusterError::PeerTimeout { .. }
                    | ClusterError::Exchange { .. })
            )
        });
        end_network(network, &launch.peers, peer_timeout, lost || got < n);
    }
    results
}

/// Joins timely's network threads (dropping their guard) on a helper thread, for at
/// most `wait`; then shuts the connections down and gives them a moment more. Straight
/// to the shutdown when a peer is lost (`hurry`).
fn end_network(network: Box<dyn Any + Send>, peers: &Peers, wait: Duration, hurry: bool) {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("runsync-cluster:network-end".into())
        .spawn(move || {
            let _ = quietly(|| drop(network));
            let _ = tx.send(());
        });
    if spawned.is_err() {
        return;
    }
    if hurry || rx.recv_timeout(wait).is_err() {
        peers.shut_down();
        let _ = rx.recv_timeout(Duration::from_secs(1));
    }
}

/// The text of a panic's payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

thread_local! {
    /// Whether this thread's panics are expected echoes of a network failure.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs over TCP in progress in this process.
static NETWORK_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` catching its panic, with this thread's panics kept quiet; the panic's
/// message if it panicked.
pub(crate) fn quietly<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    let before = QUIET.with(|q| q.replace(true));
    let result = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(before));
    result.map_err(|payload| panic_message(&*payload))
}

/// While alive: a run over TCP is in progress, and timely's network threads are quiet.
struct QuietNetwork;

impl QuietNetwork {
    fn new() -> QuietNetwork {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            let before = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                let network_thread = std::thread::current().name().is_some_and(|n| {
                    n.starts_with("timely:send-") || n.starts_with("timely:recv-")
                });
                let quiet = QUIET.with(Cell::get)
                    || (network_thread && NETWORK_RUNS.load(Ordering::Relaxed) > 0);
                if !quiet {
                    before(info);
                }
            }));
        });
        NETWORK_RUNS.fetch_add(1, Ordering::Relaxed);
        QuietNetwork
    }
}

impl Drop for QuietNetwork {
    fn drop(&mut self) {
        NETWORK_RUNS.fetch_sub(1, Ordering::Relaxed);
    }
}
