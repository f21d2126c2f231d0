//! The [`Cluster`] and its configuration: the builder's settings, the timely
//! configuration for processes ([`cluster_config`]) and the default timeouts. Running it
//! is in `cluster/run.rs`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use runsync::{Runtime, World};

#[cfg(doc)]
use crate::{
    error::ClusterError,
    report::{FrameReport, world_checksum},
    shard::checkpoint_path,
};

use crate::global::{Global, GlobalValue};
use crate::handshake;
use crate::partition::Partition;
use crate::shard::{SystemsFn, WorldFn};

mod run;

/// The timely configuration for `threads` shards in each of `processes` processes, this
/// one being `process` (from 0): one process's threads when `processes` is 1, else TCP
/// between `addresses` (one per process, in process order; empty: `127.0.0.1:7700`,
/// `:7701`, ... — loopback).
///
/// # Errors
/// A message for 0 threads or processes, `process` out of range, or an address count
/// other than `processes`.
pub fn cluster_config(
    threads: usize,
    processes: usize,
    process: usize,
    addresses: &[String],
) -> Result<timely::Config, String> {
    if threads == 0 || processes == 0 || process >= processes {
        return Err(format!(
            "need at least one shard and one process, and a process index below the \
             process count (got {threads} shards, {processes} processes, process {process})"
        ));
    }
    if processes == 1 {
        return Ok(timely::Config::process(threads));
    }
    let addresses = if addresses.is_empty() {
        (0..processes)
            .map(|p| format!("127.0.0.1:{}", 7700 + p))
            .collect()
    } else if addresses.len() == processes {
        addresses.to_vec()
    } else {
        return Err(format!(
            "{} addresses for {processes} processes",
            addresses.len()
        ));
    };
    Ok(timely::Config {
        communication: timely::CommunicationConfig::Cluster {
            threads,
            process,
            addresses,
            report: false,
            zerocopy: false,
            log_fn: Arc::new(|_| None),
        },
        worker: timely::WorkerConfig::default(),
    })
}

/// A world sharded over timely workers: see the [crate docs](crate).
pub struct Cluster<P> {
    partition: Arc<P>,
    world: WorldFn,
    systems: SystemsFn,
    frames: u64,
    shard_workers: usize,
    /// Whether shards compute [`world_checksum`] after every frame.
    checksums: bool,
    /// Write a checkpoint every so many frames, into this folder.
    checkpoints: Option<(u64, PathBuf)>,
    /// Start from the checkpoint of this frame in this folder.
    resume: Option<(PathBuf, u64)>,
    /// World-wide values, recomputed after every frame.
    globals: Vec<Arc<dyn GlobalValue>>,
    /// How long a process waits for the others while starting.
    connect_timeout: Duration,
    /// How long a shard waits for the others in one exchange round.
    peer_timeout: Duration,
    /// The caller's digest of the configuration, compared between processes.
    fingerprint: u64,
    /// The secret processes prove to each other while starting.
    key: handshake::Key,
    /// The last frame this process marked on Tracy's timeline (see [`Shard::mark_frame`]).
    #[cfg(feature = "tracy")]
    marked: std::sync::atomic::AtomicU64,
}

/// [`Cluster::connect_timeout`] by default.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// [`Cluster::peer_timeout`] by default.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(10);

impl<P: Partition> Cluster<P> {
    /// A cluster of the world `world` builds, split by `partition`, each shard running
    /// the systems `systems` adds. Every shard calls `world` and keeps the entities it
    /// owns, so `world` must build the same world every time (ids included).
    pub fn new(
        partition: P,
        world: impl Fn() -> World + Send + Sync + 'static,
        systems: impl Fn(&mut Runtime) + Send + Sync + 'static,
    ) -> Self {
        Cluster {
            partition: Arc::new(partition),
            world: Arc::new(world),
            systems: Arc::new(systems),
            frames: 1,
            shard_workers: 1,
            checksums: true,
            checkpoints: None,
            resume: None,
            globals: Vec::new(),
            connect_timeout: CONNECT_TIMEOUT,
            peer_timeout: PEER_TIMEOUT,
            fingerprint: 0,
            key: handshake::Key::none(),
            #[cfg(feature = "tracy")]
            marked: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// How many frames [`run`](Self::run) runs (1 by default).
    pub fn frames(mut self, frames: u64) -> Self {
        self.frames = frames;
        self
    }

    /// runsync workers inside each shard (1 by default: timely's workers are the
    /// parallelism).
    pub fn shard_workers(mut self, workers: usize) -> Self {
        self.shard_workers = workers.max(1);
        self
    }

    /// Whether every shard computes its part of [`world_checksum`] after every frame (on
    /// by default; [`FrameReport::checksum`] is 0 when off). It costs a hash of every
    /// checksummed value of every entity: what a production run may skip.
    pub fn checksums(mut self, on: bool) -> Self {
        self.checksums = on;
        self
    }

    /// A world-wide value `R` for systems to read as a resource: before the first frame
    /// and after every frame, each shard computes `part` over the entities it owns (not
    /// its ghosts), the parts are exchanged, and every shard folds them with `combine`
    /// in shard order, starting from shard 0's, and inserts the result.
    /// [`run_in_one_process`](Self::run_in_one_process) inserts `part` of the whole
    /// world instead.
    ///
    /// For the same bits on any number of shards, `combine` must be *exact*: integer
    /// sums, counts, min and max, fixed-point positions — not float sums, whose rounding
    /// depends on how the world was split. This is how a system that needs the whole
    /// world (a team's centre of mass, a population count) stays local: it reads last
    /// frame's total instead of summing every entity itself.
    pub fn global<R>(mut self, part: fn(&World) -> R, combine: fn(&mut R, R)) -> Self
    where
        R: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    {
        self.globals.push(Arc::new(Global { part, combine }));
        self
    }

    /// Every `every` frames (after frame `every`, `2 × every`, ...), each shard writes its
    /// part of the world into the folder `dir` (created if needed): a runtime save of the
    /// entities it owns (`Runtime::save`: every component type must be opted into saves)
    /// and the entities on their way to it. The file is
    /// [`checkpoint_path`]`(dir, shard, shards, frame)`, written whole and then renamed.
    ///
    /// Frames are deterministic, so checkpoints are how a cluster recovers: when a shard
    /// dies, every shard goes back to the last checkpoint ([`resume`](Self::resume)) and
    /// the frames since come out the same, bit for bit (ghosts are not saved: the first
    /// exchange after a resume mirrors again).
    pub fn checkpoints(mut self, every: u64, dir: impl Into<PathBuf>) -> Self {
        self.checkpoints = (every > 0).then(|| (every, dir.into()));
        self
    }

    /// Starts from the checkpoints written after frame `frame` into `dir` (by as many
    /// shards as run now) instead of the world [`new`](Self::new) builds (which still
    /// gives the registrations); runs on to frame [`frames`](Self::frames).
    pub fn resume(mut self, dir: impl Into<PathBuf>, frame: u64) -> Self {
        self.resume = Some((dir.into(), frame));
        self
    }

    /// How long a process waits, while starting, for the others: to connect to each
    /// (retrying), for each to connect, for each to say it is ready (30 s by default).
    /// Past it, the run fails with [`ClusterError::Unreachable`] or
    /// [`ClusterError::NoPeer`] naming the process and the address.
    pub fn connect_timeout(mut self, wait: Duration) -> Self {
        self.connect_timeout = wait;
        self
    }

    /// How long a shard waits for the others in one exchange round (10 s by default):
    /// the longest a frame may take on the slowest shard, and the longest a hung or cut
    /// off process goes unnoticed. Past it, the run fails with
    /// [`ClusterError::PeerTimeout`] naming the shards not heard from. A process that
    /// dies is noticed at once ([`ClusterError::PeerLost`]).
    pub fn peer_timeout(mut self, wait: Duration) -> Self {
        self.peer_timeout = wait;
        self
    }

    /// A digest of whatever shapes the run that the world does not show (the options of
    /// the systems, say): processes connecting with different fingerprints refuse each
    /// other ([`ClusterError::Mismatch`]). The world itself (its schema and initial
    /// state), the frames and the checksums setting are compared anyway. 0 by default.
    pub fn fingerprint(mut self, fingerprint: u64) -> Self {
        self.fingerprint = fingerprint;
        self
    }

    /// The cluster key: a secret every process of the run is given (a passphrase, or
    /// better random bytes — 32 from the operating system, in hex, say). While starting,
    /// each pair of processes proves it to each other before either says anything about
    /// its configuration: a challenge and response with a fresh nonce from each side and
    /// a keyed BLAKE3 hash, compared in constant time; the key itself never travels.
    ///
    /// A connection that does not prove it — a stranger, a process without the key or
    /// with another — is refused and logged on stderr, and this process waits on for its
    /// real peers until the [connect timeout](Self::connect_timeout); it learns nothing
    /// of the run's configuration. A process that connects to an address whose process
    /// does not prove the key returns [`ClusterError::Key`]. Processes that prove it and
    /// then differ in configuration still refuse each other with
    /// [`ClusterError::Mismatch`] on both.
    ///
    /// **Without a key** (the default) the handshake works as before on loopback or a
    /// trusted network, and a connection that is not this protocol — junk, silence,
    /// another protocol version — is still refused and logged without ending the start.
    /// But anyone who can reach a waiting process's address and speaks this protocol can
    /// read its configuration digests (schema, world, [fingerprint](Self::fingerprint),
    /// counts and frames), end its start with a [`ClusterError::Mismatch`], or take a
    /// process's place in the run.
    ///
    /// The key guards the start only: the exchange of frames that follows is neither
    /// encrypted nor authenticated, so processes on a network others can reach or
    /// tamper with belong behind a VPN or a tunnel all the same.
    pub fn key(mut self, key: impl AsRef<[u8]>) -> Self {
        self.key = handshake::Key::of(key.as_ref());
        self
    }
}
