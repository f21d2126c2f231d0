//! runsync's frame sharded over [timely-dataflow](https://github.com/TimelyDataflow/timely-dataflow):
//! one world split into *shards*, each a runsync [`World`] and [`Runtime`] with the same
//! registrations and systems, on the threads of one process or on several processes
//! over TCP — with the same bits, frame after frame, as the whole world in one process.
//!
//! # How a frame goes
//!
//! Every shard *owns* the entities a [`Partition`] gives it (a region of space, say) and
//! holds read-only *ghosts* (mirrors) of the other shards' entities near its region. A
//! frame on each shard:
//!
//! 1. imports what the last exchange brought: entities that migrated here, and ghosts;
//! 2. runs one runsync frame (Run, then Sync) over its owned entities *and* its ghosts;
//! 3. drops its ghosts (whatever the frame did to them: their owners computed the same
//!    thing, see below), and the entities the frame spawned that another shard owns;
//! 4. agrees with every shard on the ids of the frame's spawns (one exchange round: see
//!    [Spawned ids](#spawned-ids));
//! 5. asks the partition, for every owned entity, who owns it now and which shards must
//!    mirror it; sends each entity that changed owner (all its components, id kept) to
//!    its new owner and a copy to every shard that mirrors it, through a second timely
//!    exchange (a keyed all-to-all, in lockstep rounds: timely's epochs).
//!
//! # Why the bits are the same: the owner computes
//!
//! Each shard's world is in runsync's [canonical order](World::set_canonical_order):
//! queries visit tables by their types and rows by entity id, so a shard visits the
//! entities it holds in the same relative order as one process visiting all of them.
//! Every output that reaches an owned entity — its own writes, writes from neighbours
//! (scattered writes), despawns — is computed *on its owner*, from the owner's copies of
//! the emitting entities (owned or ghosts), in the order one process would emit them,
//! and merged there in that order: float sums come out bit for bit the same. Outputs the
//! shard computes for ghosts are thrown away with the ghosts; the ghosts' owners compute
//! the same outputs for themselves. No output crosses the network, only entities.
//!
//! That holds when the ghosts cover everything an owned entity's outputs depend on: every
//! entity that may write to it (within the systems' interaction range `r`) and
//! everything *those* read (within `r` of them). So the mirror range must be at least
//! `2r` (plus how far an entity moves in a frame, for systems that look at last frame's
//! positions). `tests/same_bits.rs` shows a mirror range of `r` giving other bits.
//!
//! This differs from the first plan (route each write aimed at a ghost to its owner and
//! merge it there): merging remote writes "in the order one process would use" needs
//! each write to carry its emitter's place in that order; computing them on the owner
//! gets the order for free, moves no outputs, and costs a deeper halo and the work spent
//! on ghosts.
//!
//! Spawns follow the same rule: a spawn belongs to the shard the partition gives it
//! (evaluated on the newborn), which computes it from its copies of the emitter, so a
//! spawn must land within the interaction range of the entity that emits it. The other
//! shards that computed it (holding the emitter too) drop it.
//!
//! # Spawned ids
//!
//! runsync gives a spawn the next id of its world's allocator, in the order Sync meets
//! the spawns — an order a shard sees only part of. So in a cluster, and in
//! [`run_in_one_process`](Cluster::run_in_one_process) alike, the ids a frame's spawns
//! end up with are given after the frame by one rule that does not depend on the split:
//! every shard keeps a copy of one allocator for the whole world; the frame's deaths
//! free their slots (generation + 1), then the frame's spawns, ordered by their contents
//! (every component's saved bytes), take the lowest free slots. Shards learn each
//! other's deaths and kept spawns in one exchange round; spawns with equal contents are
//! interchangeable. What it asks of systems: the id `Output::spawn` returns (and hooks
//! see during Sync) is provisional — do not store it in a component or send outputs to
//! it in the frame that spawns it (use `spawn_deferred`, or put everything in the
//! bundle). A child spawned under a parent spawned in the same frame is refused
//! ([`ClusterError::Frame`]): its record names the parent by a provisional id, so the
//! shards share no order for them — spawn children the frame after (as the arena arms its
//! ships). Each shard's copy costs 5 bytes per slot of the whole world.
//!
//! # What a sharded world asks of its systems
//!
//! Parents and children are fine: a tree goes where its root goes (the partition is
//! asked about roots only), migrating and mirrored whole (`World::evict_tree`); a spawned
//! child is kept with its parent, and the agreed ids mend the tree (`World::renumber`).
//! Checked: a ghost must not become a child during a frame (a tree crossing regions:
//! [`ClusterError::Frame`]).
//!
//! Not checked, documented: systems must be *local* — a system's outputs to an entity,
//! and its spawns, depend only on entities within the interaction range, and a spawn
//! lands within it. Messages follow the same rule: a shard delivers the messages its own
//! entities and its ghosts sent, in one process's relative order, so a reader that acts
//! on the messages sent from within its reach (a cry heard by the agents near it) sees
//! what it would in one process, while one that counts every message in the world does
//! not (both tested). Spawned ids are provisional in their frame (above). Ghosts and
//! migrants arrive with their change marks (`Changed`, `Added`), so change detection
//! reads as in one process (tested: the model spares a neighbour wounded last frame).
//!
//! What a system needs of the whole world (a centre of mass, a population) it reads as a
//! world-wide value ([`Cluster::global`]): summed by each shard over what it owns after
//! every frame, exchanged and added up exactly, read the next frame. A system that walks
//! the whole world in an order-sensitive way (one random stream drawn along every
//! entity, a float sum over all of them, a spatial index whose cells follow its items) is
//! not local: `runsync-tools`' arena plays by local rules when sharded
//! (`arena --shards`), for exactly those three reasons.
//!
//! # When something fails
//!
//! A failed shard is never a success. Every exchange round carries each shard's status
//! (see `src/rounds.rs`): a shard whose step fails — an error, or a panic anywhere in its
//! code or the user's (systems, merges, the partition, the world builder), caught —
//! still takes part in the next round to say so, with the frame and the cause, and
//! every shard, in every process, stops at the end of that round with
//! [`ClusterError::Shard`]. A round waits at most the [peer
//! timeout](Cluster::peer_timeout) (10 s by default) and then names the shards it did
//! not hear from ([`ClusterError::PeerTimeout`]); a process that dies is noticed at
//! once ([`ClusterError::PeerLost`], naming it and its address). The checks that guard
//! the exchange's data (one status per shard per round, each record's kind, size and
//! target, one set of figures per shard) are real checks in every build.
//!
//! Processes connect themselves before timely gets the sockets (see
//! `src/handshake.rs`): each pair proves the [cluster key](Cluster::key), if any, then
//! compares a hello — process and shard counts, frames, checksums, checkpoints, a digest
//! of the world's schema and initial state, and the caller's
//! [fingerprint](Cluster::fingerprint) — so a difference is an error naming it on both
//! ([`ClusterError::Mismatch`]); a connection that is not a peer of this run (junk,
//! silence, another protocol version, no proof of the key) is refused, logged on stderr
//! and ignored, and never told the configuration; an address that never answers, or a
//! process that never comes, is named after the [connect
//! timeout](Cluster::connect_timeout) (30 s by default). How workers are started and
//! ended in bounded time is in `src/launch.rs`.
//!
//! # Example
//!
//! ```
//! use runsync_cluster::{Cluster, model};
//!
//! let shards = |n: usize| {
//!     let report = Cluster::new(model::bands(), model::world, model::systems)
//!         .frames(5)
//!         .run(runsync_cluster::timely::Config::process(n))
//!         .unwrap()
//!         .expect("this process holds shard 0");
//!     report.frames.iter().map(|f| f.checksum).collect::<Vec<u64>>()
//! };
//! // One process, the whole world:
//! let one = model::reference(5);
//! assert_eq!(shards(1), one);
//! assert_eq!(shards(3), one);
//! ```

mod error;
mod handshake;
mod ids;
mod launch;
mod loopback;
pub mod model;
mod rounds;

/// A Tracy zone until the end of the enclosing block (nothing without `tracy`).
macro_rules! zone {
    ($name:literal) => {
        #[cfg(feature = "tracy")]
        let _zone = tracy_client::span!($name);
    };
}

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ids::{Agreement, Ids};
use rounds::{Record, Rounds};
use runsync::{Entity, LoadError, Runtime, SaveError, World};

pub use error::ClusterError;
pub use loopback::loopback_addresses;
pub use timely;

/// Which shard owns an entity, and which others mirror it. Evaluated on the owner after
/// every frame (and once at the start), from the entity's state then — for roots only:
/// children (with a [hierarchy](World::register_hierarchy)) go with their root.
pub trait Partition: Send + Sync + 'static {
    /// The shard (in `0..shards`) that owns `e`.
    fn owner(&self, world: &World, e: Entity, shards: usize) -> usize;

    /// Pushes onto `out` every shard that must hold a ghost of `e`: those whose region
    /// lies within the mirror range of it. The owner may be among them (it is skipped).
    fn mirrors(&self, world: &World, e: Entity, shards: usize, out: &mut Vec<usize>);
}

/// A ready-made [`Partition`]: the x axis from `min` to `max` cut into one band per shard
/// (equal widths; the outer bands reach to infinity), entities mirrored by every band
/// within `range` of their x. An entity without an x (`x` returns `None`) belongs to
/// shard 0 and is not mirrored.
pub struct Bands<F> {
    min: f32,
    max: f32,
    range: f32,
    x: F,
}

impl<F: Fn(&World, Entity) -> Option<f32> + Send + Sync + 'static> Bands<F> {
    /// Bands over `min..max` mirroring within `range`; `x` reads an entity's x.
    ///
    /// # Panics
    /// If `min < max` does not hold or `range` is negative (or any is not finite).
    #[track_caller]
    pub fn new(min: f32, max: f32, range: f32, x: F) -> Self {
        assert!(
            min.is_finite() && max.is_finite() && min < max,
            "runsync-cluster: bands need finite min < max, got {min}..{max}"
        );
        assert!(
            range.is_finite() && range >= 0.0,
            "runsync-cluster: the mirror range must be finite and not negative, got {range}"
        );
        Bands { min, max, range, x }
    }

    /// The band of `x` among `shards`.
    fn band(&self, x: f32, shards: usize) -> usize {
        let t = (x - self.min) / (self.max - self.min) * shards as f32;
        if t.is_nan() || t < 0.0 {
            return 0;
        }
        (t as usize).min(shards - 1)
    }
}

impl<F: Fn(&World, Entity) -> Option<f32> + Send + Sync + 'static> Partition for Bands<F> {
    fn owner(&self, world: &World, e: Entity, shards: usize) -> usize {
        (self.x)(world, e).map_or(0, |x| self.band(x, shards))
    }

    fn mirrors(&self, world: &World, e: Entity, shards: usize, out: &mut Vec<usize>) {
        if let Some(x) = (self.x)(world, e) {
            let (lo, hi) = (
                self.band(x - self.range, shards),
                self.band(x + self.range, shards),
            );
            out.extend(lo..=hi);
        }
    }
}

/// A ready-made [`Partition`] over the plane: the rectangle from `min` to `max` cut into
/// `cols × rows` equal tiles (the outer ones reach to infinity), tile `row * cols + col`
/// owned by shard `tile % shards`, entities mirrored by every tile within `range` of
/// their position (its shard, when that is not the owner). Square-ish tiles keep the
/// mirrored border short: with `M` shards a shard's ghosts grow as `sqrt(N / M)`, where
/// bands ([`Bands`]) keep a whole world-height of border. An entity without a position
/// (`pos` returns `None`) belongs to shard 0 and is not mirrored.
pub struct Tiles<F> {
    min: [f32; 2],
    max: [f32; 2],
    tiles: [usize; 2],
    range: f32,
    pos: F,
}

impl<F: Fn(&World, Entity) -> Option<[f32; 2]> + Send + Sync + 'static> Tiles<F> {
    /// `cols × rows` tiles over `min..max`, mirroring within `range`; `pos` reads an
    /// entity's position.
    ///
    /// # Panics
    /// If the rectangle is empty or not finite, a tile count is 0, or `range` is negative
    /// or not finite.
    #[track_caller]
    pub fn new(min: [f32; 2], max: [f32; 2], cols: usize, rows: usize, range: f32, pos: F) -> Self {
        assert!(
            (0..2).all(|i| min[i].is_finite() && max[i].is_finite() && min[i] < max[i]),
            "runsync-cluster: tiles need a finite, non-empty rectangle, got {min:?}..{max:?}"
        );
        assert!(
            cols > 0 && rows > 0,
            "runsync-cluster: tiles need at least one column and row"
        );
        assert!(
            range.is_finite() && range >= 0.0,
            "runsync-cluster: the mirror range must be finite and not negative, got {range}"
        );
        Tiles {
            min,
            max,
            tiles: [cols, rows],
            range,
            pos,
        }
    }

    /// The column (`axis` 0) or row (1) of coordinate `v`.
    fn cut(&self, axis: usize, v: f32) -> usize {
        let t = (v - self.min[axis]) / (self.max[axis] - self.min[axis]) * self.tiles[axis] as f32;
        if t.is_nan() || t < 0.0 {
            return 0;
        }
        (t as usize).min(self.tiles[axis] - 1)
    }
}

impl<F: Fn(&World, Entity) -> Option<[f32; 2]> + Send + Sync + 'static> Partition for Tiles<F> {
    fn owner(&self, world: &World, e: Entity, shards: usize) -> usize {
        (self.pos)(world, e).map_or(0, |p| {
            (self.cut(1, p[1]) * self.tiles[0] + self.cut(0, p[0])) % shards
        })
    }

    fn mirrors(&self, world: &World, e: Entity, shards: usize, out: &mut Vec<usize>) {
        if let Some(p) = (self.pos)(world, e) {
            let r = self.range;
            for row in self.cut(1, p[1] - r)..=self.cut(1, p[1] + r) {
                for col in self.cut(0, p[0] - r)..=self.cut(0, p[0] + r) {
                    out.push((row * self.tiles[0] + col) % shards);
                }
            }
        }
    }
}

/// What one frame did, over all shards.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameReport {
    /// The frame's number (from 1, as `Runtime::frame_count`).
    pub frame: u64,
    /// [`world_checksum`] of the whole world after the frame (the wrapping sum of every
    /// shard's part): the same as one process's. 0 with [`Cluster::checksums`] off.
    pub checksum: u64,
    /// Live entities after the frame.
    pub entities: usize,
    /// Entities the frame spawned (after the ids were agreed: each once, on its owner).
    pub spawned: usize,
    /// Ghost copies sent after the frame (one per entity and mirroring shard).
    pub ghosts: usize,
    /// Entities that changed owner after the frame.
    pub migrations: usize,
    /// Bytes of entity records sent between shards after the frame.
    pub bytes: usize,
    /// Shard 0's whole frame: import, Run and Sync, export, exchange (the exchange ends
    /// when every shard's records are in, so this is the frame's wall time).
    pub time: Duration,
    /// The slowest shard's Run and Sync.
    pub run_sync: Duration,
    /// The slowest shard's import of the entities the last exchange brought (ghosts and
    /// migrants), before the frame.
    pub import: Duration,
    /// The slowest shard's work after the frame: dropping ghosts, the world checksum,
    /// asking the partition about every owned entity, exporting ghosts and migrants.
    pub export: Duration,
    /// Shard 0's two exchange rounds (the spawned ids, then the entities): sending, then
    /// waiting for every shard's records (so it holds the other shards' lag behind
    /// shard 0).
    pub exchange: Duration,
}

/// What a [`Cluster::run`] did: one [`FrameReport`] per frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// The number of shards (timely workers over all processes).
    pub shards: usize,
    /// Per frame, in order.
    pub frames: Vec<FrameReport>,
}

impl Report {
    /// A table of every tenth frame (entities, spawns, ghosts, migrations, bytes sent,
    /// frame, Run + Sync and exchange times), then a line of medians over the frames
    /// after the first tenth (the warm-up): what the `shards` and `arena --shards`
    /// demos print.
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let mut out = format!(
            "{:>6} {:>8} {:>6} {:>8} {:>10} {:>10} {:>9} {:>9} {:>9}\n",
            "frame",
            "entities",
            "born",
            "ghosts",
            "migrated",
            "KiB sent",
            "frame ms",
            "run ms",
            "xchg ms"
        );
        let every = (self.frames.len() / 10).max(1);
        for f in (self.frames.iter()).filter(|f| f.frame as usize % every == 0) {
            let _ = writeln!(
                out,
                "{:>6} {:>8} {:>6} {:>8} {:>10} {:>10.1} {:>9.2} {:>9.2} {:>9.2}",
                f.frame,
                f.entities,
                f.spawned,
                f.ghosts,
                f.migrations,
                f.bytes as f64 / 1024.0,
                ms(f.time),
                ms(f.run_sync),
                ms(f.exchange)
            );
        }
        let skip = self.frames.len() / 10;
        let median = |key: &dyn Fn(&FrameReport) -> f64| {
            let mut v: Vec<f64> = self.frames[skip..].iter().map(key).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        let _ = write!(
            out,
            "median: frame {:.2} ms (import {:.2}, run+sync {:.2}, export {:.2}, exchange \
             {:.2} ms), {:.0} born, {:.0} ghosts, {:.0} migrations, {:.1} KiB sent per frame",
            median(&|f| ms(f.time)),
            median(&|f| ms(f.import)),
            median(&|f| ms(f.run_sync)),
            median(&|f| ms(f.export)),
            median(&|f| ms(f.exchange)),
            median(&|f| f.spawned as f64),
            median(&|f| f.ghosts as f64),
            median(&|f| f.migrations as f64),
            median(&|f| f.bytes as f64 / 1024.0),
        );
        out
    }
}

/// The wrapping sum of [`World::entity_checksum`] over every entity: a digest of a whole
/// world that does not depend on how it is split, so one process's world and a sharded
/// one can be compared frame by frame.
pub fn world_checksum(world: &World) -> u64 {
    world
        .query::<()>()
        .filter_map(|(e, ())| world.entity_checksum(e))
        .fold(0u64, u64::wrapping_add)
}

/// The root of `e`'s tree (`e` itself without a parent, or without a hierarchy).
fn root_of(world: &World, e: Entity) -> Entity {
    if world.has_hierarchy() {
        world.ancestors(e).last().unwrap_or(e)
    } else {
        e
    }
}

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

/// The checkpoint file of shard `shard` of `shards` after frame `frame` in `dir`.
pub fn checkpoint_path(dir: &Path, shard: usize, shards: usize, frame: u64) -> PathBuf {
    dir.join(format!("shard-{shard}-of-{shards}-frame-{frame}.runsync"))
}

/// Builds the whole world (every shard calls it: it must give the same world each time).
type WorldFn = Arc<dyn Fn() -> World + Send + Sync>;
/// Adds the systems (the same on every shard).
type SystemsFn = Arc<dyn Fn(&mut Runtime) + Send + Sync>;

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
    /// by default; [`FrameReport::checksum`] is 0 when off). It costs some 15 ns per
    /// entity (a hash of every checksummed value): what a production run may skip.
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

    /// Runs the same world, systems and [`global`](Self::global) values in one process,
    /// one runtime in canonical order with [`shard_workers`](Self::shard_workers)
    /// workers, no partition: what a sharded [`run`](Self::run) must equal, frame by frame
    /// ([`FrameReport::checksum`]; the figures of ghosts, migrations and the exchange are
    /// zero). Not with [`resume`](Self::resume).
    ///
    /// # Errors
    /// [`ClusterError::Frame`] if a frame fails, [`ClusterError::Save`] /
    /// [`ClusterError::Load`] if a global value does not encode.
    pub fn run_in_one_process(&self) -> Result<Report, ClusterError> {
        let mut world = (self.world)();
        world.set_canonical_order(true);
        let mut ids = Ids::of(&world);
        let mut agreement = Agreement::new(world.query::<()>().map(|(e, ())| e).collect());
        let mut rt = Runtime::builder().workers(self.shard_workers).build(world);
        (self.systems)(&mut rt);
        let mut report = Report {
            shards: 1,
            frames: Vec::new(),
        };
        let mut bytes = Vec::new();
        let insert = |rt: &mut Runtime, bytes: &mut Vec<u8>| -> Result<(), ClusterError> {
            for g in &self.globals {
                bytes.clear();
                g.part(rt.world(), bytes)?;
                g.insert(&[&bytes[..]], rt.world_mut())?;
            }
            Ok(())
        };
        insert(&mut rt, &mut bytes)?;
        for frame in 1..=self.frames {
            let start = Instant::now();
            rt.try_frame().map_err(|e| ClusterError::Frame {
                shard: 0,
                message: e.to_string(),
            })?;
            let run_sync = start.elapsed();
            // The same ids as a sharded world's spawns get.
            let stats = rt.stats();
            let changed = (stats.spawned > 0, stats.despawned > 0);
            let told = agreement.collect(rt.world_mut(), 0, changed, |_, _| true)?;
            let spawned = match told {
                Some(told) => agreement.apply(&mut ids, rt.world_mut(), 0, &[&told])?,
                None => 0,
            };
            insert(&mut rt, &mut bytes)?;
            report.frames.push(FrameReport {
                frame,
                spawned,
                checksum: if self.checksums {
                    world_checksum(rt.world())
                } else {
                    0
                },
                entities: rt.world().len(),
                time: start.elapsed(),
                run_sync,
                ..FrameReport::default()
            });
        }
        Ok(report)
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

    /// Runs the frames on the timely workers `config` describes (one shard per worker:
    /// `timely::Config::process(4)` for four threads of this process, a
    /// `CommunicationConfig::Cluster` for several processes, as [`cluster_config`]
    /// makes). Returns the report in the process that holds shard 0, `None` in the
    /// others.
    ///
    /// # Failures
    /// A failure of any shard — an error, a panic (of a system, the partition, the world
    /// builder...), a lost or silent process — ends every shard, in every process,
    /// within one exchange round, and every process returns an error naming the shard,
    /// the frame and the cause (see [`ClusterError`]); no process returns a report after
    /// a failure. Several processes first agree, over their own connections, that they
    /// run the same cluster (the [`key`](Self::key), then the protocol version, process
    /// and shard counts, frames, checksums, a digest of the world's schema and initial
    /// state, the [`fingerprint`](Self::fingerprint)), within the
    /// [`connect_timeout`](Self::connect_timeout); a connection that is not a peer of
    /// this run is refused, logged on stderr, and waited past. This costs one more build
    /// of the world on each process.
    /// While a run over TCP is in progress, a panic hook (installed once, chained to the
    /// one before) keeps timely's network threads quiet: their failures come back as a
    /// [`ClusterError::PeerLost`].
    ///
    /// # Errors
    /// [`ClusterError::Shard`] for a shard's failure (the lowest shard's, if several
    /// failed in one round), [`ClusterError::PeerLost`] /
    /// [`ClusterError::PeerTimeout`] for a process lost, and the start's errors
    /// ([`ClusterError::Mismatch`], [`ClusterError::Unreachable`],
    /// [`ClusterError::NoPeer`], [`ClusterError::Key`], [`ClusterError::Refused`],
    /// [`ClusterError::Bind`], [`ClusterError::Timely`]).
    pub fn run(self, config: timely::Config) -> Result<Option<Report>, ClusterError> {
        let launch = launch::prepare(
            config,
            |process, processes, threads| self.hello(process, processes, threads),
            &self.key,
            self.connect_timeout,
        )?;
        let peer_timeout = self.peer_timeout;
        let cluster = Arc::new(self);
        let body: launch::Body<Option<Report>> = Arc::new(move |worker, peers| {
            let mut rounds = Rounds::new(worker, peers, peer_timeout);
            cluster.shard_main(&mut rounds)
        });
        let mut report = None;
        let mut errors = Vec::new();
        for result in launch::run(launch, body, peer_timeout)
            .into_iter()
            .flatten()
        {
            match result {
                Ok(Some(r)) => report = Some(r),
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        // The error that happened here rather than one told by another shard.
        match errors.iter().position(|e| !e.is_told()) {
            Some(i) => Err(errors.swap_remove(i)),
            None if !errors.is_empty() => Err(errors.swap_remove(0)),
            None => Ok(report),
        }
    }

    /// With `tracy`: ends frame `frame` on Tracy's timeline, once per process — by the
    /// first of its shards to finish the frame. (The shards' runtimes mark no frames:
    /// Tracy would see one mark per shard per frame.)
    fn mark_frame(&self, frame: u64) {
        #[cfg(feature = "tracy")]
        if self
            .marked
            .fetch_max(frame, std::sync::atomic::Ordering::SeqCst)
            < frame
        {
            runsync::__tracy::frame_mark();
        }
        #[cfg(not(feature = "tracy"))]
        let _ = frame;
    }

    /// What this process says when it connects to the others (see
    /// [`handshake`](crate::handshake)): builds the world once to digest it.
    fn hello(
        &self,
        process: usize,
        processes: usize,
        threads: usize,
    ) -> Result<handshake::Hello, ClusterError> {
        let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (self.world)()));
        let mut world = built.map_err(|payload| ClusterError::Shard {
            shard: process * threads,
            frame: 0,
            cause: Box::new(ClusterError::Panic {
                message: launch::panic_message(&*payload),
            }),
        })?;
        world.set_canonical_order(true);
        let mut schema = runsync::Checksummer::new();
        for (_, name) in world.component_types() {
            schema.write_bytes(name.as_bytes());
        }
        schema.write_u64(u64::MAX);
        for name in world.unchecksummed() {
            schema.write_bytes(name.as_bytes());
        }
        schema.write_bytes(std::any::type_name::<P>().as_bytes());
        for g in &self.globals {
            schema.write_bytes(g.type_name().as_bytes());
        }
        let mut digest = runsync::Checksummer::new();
        digest.write_u64(world.checksum());
        digest.write_u64(world.len() as u64);
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Ok(handshake::Hello {
            process: count(process),
            processes: count(processes),
            threads: count(threads),
            frames: self.frames,
            resume: self.resume.as_ref().map_or(0, |(_, f)| *f),
            checkpoints: self.checkpoints.as_ref().map_or(0, |(every, _)| *every),
            checksums: self.checksums,
            schema: schema.finish(),
            world: digest.finish(),
            fingerprint: self.fingerprint,
        })
    }

    /// One shard's run: the start, every frame, the end, each step's status exchanged
    /// in the round after it (see [`rounds`](crate::rounds)).
    fn shard_main(&self, rounds: &mut Rounds<'_>) -> Result<Option<Report>, ClusterError> {
        let (index, shards) = (rounds.me, rounds.shards);
        let mut out = Vec::new();
        let mut started = None;
        let status = rounds::attempt(0, || {
            let mut shard = Shard::new(
                index,
                shards,
                &self.partition,
                &self.world,
                &self.systems,
                self.shard_workers,
            )?;
            shard.globals.clone_from(&self.globals);
            shard.checksums = self.checksums;
            if let Some((dir, frame)) = &self.resume {
                shard.resume(dir, *frame)?;
            }
            shard.send_globals(&mut out)?;
            shard.send_mirrors(&mut out)?;
            started = Some(shard);
            Ok(())
        });
        rounds.round(&mut out, 0, status)?;
        let shard = started
            .as_mut()
            .expect("the first round passes only if every shard started");
        shard.received.append(&mut rounds.received);
        let first = self.resume.as_ref().map_or(1, |(_, frame)| *frame + 1);
        let mut report = Report {
            shards,
            frames: Vec::new(),
        };
        let mut pending = Ok(());
        for frame in first..=self.frames {
            let start = Instant::now();
            let mut stats = ShardStats::default();
            let status = pending.and_then(|()| {
                rounds::attempt(frame, || {
                    stats = shard.run_frame(&mut out)?;
                    Ok(())
                })
            });
            stats.exchange = rounds.round(&mut out, frame, status)?;
            shard.received.append(&mut rounds.received);
            let status = rounds::attempt(frame, || {
                shard.finish_frame(&mut stats, &mut out)?;
                out.push(stats.record());
                Ok(())
            });
            stats.exchange += rounds.round(&mut out, frame, status)?;
            shard.received.append(&mut rounds.received);
            self.mark_frame(frame);
            stats.time = start.elapsed();
            // Checked in the next round (the last one's in the closing round).
            pending = rounds::attempt(frame, || {
                if index == 0 {
                    let gathered = shard.gather(frame, stats)?;
                    report.frames.push(gathered);
                }
                if let Some((every, dir)) = &self.checkpoints {
                    if frame % every == 0 {
                        shard.checkpoint(dir, frame)?;
                    }
                }
                Ok(())
            });
        }
        rounds.round(&mut out, self.frames.max(first - 1), pending)?;
        Ok((index == 0).then_some(report))
    }
}

/// An entity that now belongs to the receiving shard.
const MIGRANT: u8 = 0;
/// A read-only copy for the receiving shard's coming frame.
const GHOST: u8 = 1;
/// A shard's figures for the frame (sent to shard 0).
const STATS: u8 = 2;
/// A shard's part of the world-wide values (`u32` index of the value, then its bytes),
/// sent to every shard.
const GLOBAL: u8 = 3;
/// A shard's owned entities that died in the frame and the spawns it keeps
/// ([`Agreement::collect`]), sent to every shard.
const AGREE: u8 = 4;

/// A world-wide value's part and fold, type-erased: see [`Cluster::global`].
trait GlobalValue: Send + Sync {
    /// Appends this world's part, encoded.
    fn part(&self, world: &World, out: &mut Vec<u8>) -> Result<(), ClusterError>;
    /// Decodes the parts (in shard order), folds them and inserts the total.
    fn insert(&self, parts: &[&[u8]], world: &mut World) -> Result<(), ClusterError>;
    /// The value's type (for the schema processes compare).
    fn type_name(&self) -> &'static str;
}

struct Global<R> {
    part: fn(&World) -> R,
    combine: fn(&mut R, R),
}

impl<R> GlobalValue for Global<R>
where
    R: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    fn part(&self, world: &World, out: &mut Vec<u8>) -> Result<(), ClusterError> {
        let bytes = postcard::to_allocvec(&(self.part)(world)).map_err(|e| {
            ClusterError::Save(SaveError::Encode {
                type_name: std::any::type_name::<R>(),
                message: e.to_string(),
            })
        })?;
        out.extend_from_slice(&bytes);
        Ok(())
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<R>()
    }

    fn insert(&self, parts: &[&[u8]], world: &mut World) -> Result<(), ClusterError> {
        let mut total: Option<R> = None;
        for bytes in parts {
            let part: R = postcard::from_bytes(bytes).map_err(|e| {
                ClusterError::Load(LoadError::BadData {
                    what: format!("a part of `{}`: {e}", std::any::type_name::<R>()),
                })
            })?;
            match &mut total {
                None => total = Some(part),
                Some(t) => (self.combine)(t, part),
            }
        }
        if let Some(t) = total {
            world.insert_resource(t);
        }
        Ok(())
    }
}

/// One shard's figures for a frame (what it sends shard 0).
#[derive(Default)]
struct ShardStats {
    checksum: u64,
    entities: u64,
    spawned: u64,
    ghosts: u64,
    migrations: u64,
    bytes: u64,
    time: Duration,
    run_sync: Duration,
    import: Duration,
    export: Duration,
    exchange: Duration,
}

/// The words of a [`ShardStats`] record.
const STATS_WORDS: usize = 9;

impl ShardStats {
    fn record(&self) -> Record {
        let words: [u64; STATS_WORDS] = [
            self.checksum,
            self.entities,
            self.spawned,
            self.ghosts,
            self.migrations,
            self.bytes,
            self.run_sync.as_nanos() as u64,
            self.import.as_nanos() as u64,
            self.export.as_nanos() as u64,
        ];
        (
            0,
            STATS,
            words.iter().flat_map(|w| w.to_le_bytes()).collect(),
        )
    }

    fn read(bytes: &[u8]) -> [u64; STATS_WORDS] {
        let mut words = [0; STATS_WORDS];
        for (w, chunk) in words.iter_mut().zip(bytes.chunks_exact(8)) {
            *w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        }
        words
    }
}

/// One shard: its runtime and what it exchanges.
struct Shard {
    index: usize,
    shards: usize,
    partition: Arc<dyn Partition>,
    rt: Runtime,
    /// The ghosts imported for the coming frame.
    ghosts: Vec<Entity>,
    /// Records received in the last exchange.
    received: Vec<Record>,
    /// Scratch: the mirrors of one entity.
    mirrors: Vec<usize>,
    /// The world-wide values.
    globals: Vec<Arc<dyn GlobalValue>>,
    /// Whether to compute the checksum after every frame.
    checksums: bool,
    /// The whole world's entity allocator, as every shard keeps it.
    ids: Ids,
    /// The owned entities, and the ids of what a frame spawned.
    agreement: Agreement,
    /// Its Tracy plots of ghosts sent, migrations and bytes sent, named for the shard
    /// (`cluster ghosts sent [shard 1]`) so that shards' values do not alternate in one
    /// plot; made once (`runsync::__tracy::plot_name` interns them).
    #[cfg(feature = "tracy")]
    plots: [tracy_client::PlotName; 3],
}

impl Shard {
    fn new<P: Partition>(
        index: usize,
        shards: usize,
        partition: &Arc<P>,
        world: &WorldFn,
        systems: &SystemsFn,
        workers: usize,
    ) -> Result<Shard, ClusterError> {
        let mut world = world();
        world.set_canonical_order(true);
        let ids = Ids::of(&world);
        let roots: Vec<Entity> = (world.query::<()>())
            .map(|(e, ())| e)
            .filter(|&e| root_of(&world, e) == e)
            .collect();
        let mut owned = Vec::new();
        for e in roots {
            if partition.owner(&world, e, shards) == index {
                owned.extend(world.tree(e));
            } else {
                world.evict_tree(e);
            }
        }
        // In Tracy: plots per shard (`runsync entities [shard 1]`), and the frame marked once
        // per process by the cluster, not once per shard.
        let mut rt = Runtime::builder()
            .workers(workers)
            .tracy_label(format!("shard {index}"))
            .tracy_frame_marks(false)
            .build(world);
        systems(&mut rt);
        let partition: Arc<dyn Partition> = partition.clone();
        Ok(Shard {
            index,
            shards,
            partition,
            rt,
            ghosts: Vec::new(),
            received: Vec::new(),
            mirrors: Vec::new(),
            globals: Vec::new(),
            checksums: true,
            ids,
            agreement: Agreement::new(owned),
            #[cfg(feature = "tracy")]
            plots: [
                "cluster ghosts sent",
                "cluster migrations",
                "cluster bytes sent",
            ]
            .map(|name| runsync::__tracy::plot_name(&format!("{name} [shard {index}]"), false)),
        })
    }

    /// Pushes a ghost of every owned entity for each shard that mirrors it, and moves
    /// out every entity another shard owns now. Returns (ghosts, migrations, bytes).
    fn send_mirrors(&mut self, out: &mut Vec<Record>) -> Result<(u64, u64, u64), ClusterError> {
        let world = self.rt.world();
        // Roots only: a tree goes (and is mirrored) whole, where its root goes.
        let owned: Vec<Entity> = (world.query::<()>())
            .map(|(e, ())| e)
            .filter(|&e| root_of(world, e) == e)
            .collect();
        let (mut ghosts, mut bytes) = (0, 0);
        let mut leaving = Vec::new();
        let staying = &mut self.agreement.owned;
        staying.clear();
        let mut record = Vec::new();
        let mut tree = Vec::new();
        for e in owned {
            let owner = self.partition.owner(world, e, self.shards);
            tree.clear();
            if world.has_hierarchy() && !world.children(e).is_empty() {
                tree.extend(world.tree(e));
            } else {
                tree.push(e);
            }
            if owner == self.index {
                staying.extend_from_slice(&tree);
            }
            self.mirrors.clear();
            self.partition
                .mirrors(world, e, self.shards, &mut self.mirrors);
            self.mirrors.sort_unstable();
            self.mirrors.dedup();
            self.mirrors.retain(|&s| s != owner && s < self.shards);
            if self.mirrors.is_empty() && owner == self.index {
                continue;
            }
            for &member in &tree {
                record.clear();
                world
                    .export_entity(member, &mut record)
                    .map_err(ClusterError::Save)?;
                for &s in &self.mirrors {
                    ghosts += 1;
                    bytes += record.len() as u64;
                    out.push((s as u32, GHOST, record.clone()));
                }
                if owner != self.index {
                    bytes += record.len() as u64;
                    out.push((owner as u32, MIGRANT, record.clone()));
                }
            }
            if owner != self.index {
                leaving.push((e, tree.len()));
            }
        }
        let migrations = leaving.iter().map(|&(_, n)| n as u64).sum();
        for (e, _) in leaving {
            self.rt.world_mut().evict_tree(e);
        }
        Ok((ghosts, migrations, bytes))
    }

    /// Sends this shard's part of every world-wide value to every shard (its owned
    /// entities only: call it with no ghosts in the world, and before migrants leave).
    fn send_globals(&self, out: &mut Vec<Record>) -> Result<(), ClusterError> {
        for (k, g) in self.globals.iter().enumerate() {
            let mut bytes = (self.index as u32).to_le_bytes().to_vec();
            bytes.extend_from_slice(&(k as u32).to_le_bytes());
            g.part(self.rt.world(), &mut bytes)?;
            for s in 0..self.shards {
                out.push((s as u32, GLOBAL, bytes.clone()));
            }
        }
        Ok(())
    }

    /// Folds the parts of every world-wide value received (in shard order) and inserts
    /// the totals; drops those records.
    fn insert_globals(&mut self) -> Result<(), ClusterError> {
        if self.globals.is_empty() {
            return Ok(());
        }
        let mut parts: Vec<(u32, u32, &[u8])> = self
            .received
            .iter()
            .filter(|r| r.1 == GLOBAL)
            .map(|r| {
                let word = |i: usize| u32::from_le_bytes(r.2[i..i + 4].try_into().expect("4"));
                (word(4), word(0), &r.2[8..])
            })
            .collect();
        parts.sort_unstable_by_key(|&(k, shard, _)| (k, shard));
        for (k, g) in self.globals.iter().enumerate() {
            let of_k: Vec<&[u8]> = (parts.iter())
                .filter(|p| p.0 as usize == k)
                .map(|p| p.2)
                .collect();
            g.insert(&of_k, self.rt.world_mut())?;
        }
        self.received.retain(|r| r.1 != GLOBAL);
        Ok(())
    }

    /// Writes this shard's checkpoint after `frame` (see [`Cluster::checkpoints`]): the
    /// runtime save's length and bytes, then the migrants received (count, then each
    /// record's length and bytes), then the whole world's entity allocator (length and
    /// bytes: [`Ids::encode`]), little-endian.
    fn checkpoint(&self, dir: &Path, frame: u64) -> Result<(), ClusterError> {
        let mut save = Vec::new();
        self.rt.save(&mut save).map_err(ClusterError::Save)?;
        let mut file = Vec::with_capacity(save.len() + 16);
        file.extend_from_slice(&(save.len() as u64).to_le_bytes());
        file.extend_from_slice(&save);
        let migrants: Vec<&Record> = self.received.iter().filter(|r| r.1 == MIGRANT).collect();
        file.extend_from_slice(&(migrants.len() as u64).to_le_bytes());
        for (_, _, bytes) in migrants {
            file.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            file.extend_from_slice(bytes);
        }
        let mut ids = Vec::new();
        self.ids.encode(&mut ids);
        file.extend_from_slice(&(ids.len() as u64).to_le_bytes());
        file.extend_from_slice(&ids);
        let path = checkpoint_path(dir, self.index, self.shards, frame);
        let io = |error| ClusterError::Io {
            path: path.clone(),
            error,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let tmp = path.with_extension("partial");
        std::fs::write(&tmp, &file).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)
    }

    /// Loads this shard's checkpoint after `frame` and imports its migrants.
    fn resume(&mut self, dir: &Path, frame: u64) -> Result<(), ClusterError> {
        let path = checkpoint_path(dir, self.index, self.shards, frame);
        let file = std::fs::read(&path).map_err(|error| ClusterError::Io {
            path: path.clone(),
            error,
        })?;
        let bad = |what: &str| ClusterError::Io {
            path: path.clone(),
            error: std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned()),
        };
        let mut src = &file[..];
        let mut take = |n: usize, what: &str| -> Result<&[u8], ClusterError> {
            if src.len() < n {
                return Err(bad(what));
            }
            let (head, rest) = src.split_at(n);
            src = rest;
            Ok(head)
        };
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize;
        let len = word(take(8, "a truncated checkpoint")?);
        let save = take(len, "a truncated checkpoint")?;
        self.rt.load(&mut &save[..]).map_err(ClusterError::Load)?;
        let world = self.rt.world_mut();
        self.agreement = Agreement::new(world.query::<()>().map(|(e, ())| e).collect());
        let n = word(take(8, "a truncated checkpoint")?);
        for _ in 0..n {
            let len = word(take(8, "a truncated checkpoint")?);
            let record = take(len, "a truncated checkpoint")?;
            let e = world
                .import_entity(&mut &record[..])
                .map_err(ClusterError::Load)?;
            self.agreement.placed(e);
            self.agreement.owned.push(e);
        }
        let len = word(take(8, "a truncated checkpoint")?);
        self.ids = Ids::decode(take(len, "a truncated checkpoint")?)
            .ok_or_else(|| bad("a bad entity allocator"))?;
        if !src.is_empty() {
            return Err(bad("bytes after the checkpoint's end"));
        }
        Ok(())
    }

    /// Imports the last exchange's entities, runs the frame, drops the ghosts and the
    /// spawns another shard keeps, and sends every shard (into `out`) what this one
    /// knows of the frame's deaths and spawns: the first exchange round of a frame.
    fn run_frame(&mut self, out: &mut Vec<Record>) -> Result<ShardStats, ClusterError> {
        // Records from several shards arrive in any order: imported in a fixed one (the
        // frame itself does not depend on it, in canonical order; the allocator's free
        // list does).
        if let Some(r) = (self.received.iter())
            .find(|r| r.2.len() < 8 || !matches!(r.1, MIGRANT | GHOST | GLOBAL | STATS))
        {
            return Err(ClusterError::Protocol {
                message: format!(
                    "a record of kind {} and {} bytes among a frame's entities",
                    r.1,
                    r.2.len()
                ),
            });
        }
        self.insert_globals()?;
        let mut received = std::mem::take(&mut self.received);
        received.retain(|r| r.1 != STATS);
        received.sort_unstable_by(|a, b| (a.1, &a.2[..8]).cmp(&(b.1, &b.2[..8])));
        let imported = Instant::now();
        {
            zone!("cluster: import");
            let world = self.rt.world_mut();
            world.reserve_entity_slots(self.ids.len());
            // One batch: the allocator's free list is walked once, not once per record.
            let mut arrived = Vec::with_capacity(received.len());
            world
                .import_entities(received.iter().map(|r| &r.2[..]), &mut arrived)
                .map_err(ClusterError::Load)?;
            for ((_, kind, _), &e) in received.iter().zip(&arrived) {
                self.agreement.placed(e);
                match *kind {
                    // A ghost tree leaves with its root.
                    GHOST if root_of(world, e) == e => self.ghosts.push(e),
                    GHOST => {}
                    _ => self.agreement.owned.push(e),
                }
            }
        }
        let import = imported.elapsed();
        let start = Instant::now();
        self.rt.try_frame().map_err(|e| ClusterError::Frame {
            shard: self.index,
            message: e.to_string(),
        })?;
        let run_sync = start.elapsed();
        let exported = Instant::now();
        zone!("cluster: spawns and deaths");
        let stats = self.rt.stats();
        let changed = (stats.spawned > 0, stats.despawned > 0);
        let world = self.rt.world_mut();
        for g in self.ghosts.drain(..) {
            if root_of(world, g) != g {
                return Err(ClusterError::Frame {
                    shard: self.index,
                    message: format!(
                        "ghost {g} became a child of {} (parents and children must stay \
                         on one shard: a tree moves whole, with its root)",
                        root_of(world, g)
                    ),
                });
            }
            world.evict_tree(g);
        }
        let (partition, me, shards) = (&self.partition, self.index, self.shards);
        let told = self.agreement.collect(world, me as u32, changed, |w, e| {
            partition.owner(w, e, shards) == me
        })?;
        if let Some(told) = told {
            for s in 1..shards {
                out.push((s as u32, AGREE, told.clone()));
            }
            out.push((0, AGREE, told));
        }
        Ok(ShardStats {
            run_sync,
            import,
            export: exported.elapsed(),
            ..ShardStats::default()
        })
    }

    /// After the first round: gives the frame's spawns their agreed ids, then checksums
    /// and sends the world-wide values, migrants and mirrors (into `out`) for the
    /// second.
    fn finish_frame(
        &mut self,
        stats: &mut ShardStats,
        out: &mut Vec<Record>,
    ) -> Result<(), ClusterError> {
        let exported = Instant::now();
        zone!("cluster: export");
        let received = std::mem::take(&mut self.received);
        if let Some(r) = received.iter().find(|r| r.1 != AGREE) {
            return Err(ClusterError::Protocol {
                message: format!(
                    "a record of kind {} in a frame's first round, which carries the spawned \
                     ids only",
                    r.1
                ),
            });
        }
        let parts: Vec<&[u8]> = received.iter().map(|r| &r.2[..]).collect();
        let world = self.rt.world_mut();
        stats.spawned =
            (self.agreement).apply(&mut self.ids, world, self.index as u32, &parts)? as u64;
        let world = self.rt.world();
        stats.checksum = if self.checksums {
            world_checksum(world)
        } else {
            0
        };
        stats.entities = world.len() as u64;
        // The world-wide values over the owned entities, before any leaves.
        self.send_globals(out)?;
        let (ghosts, migrations, bytes) = self.send_mirrors(out)?;
        #[cfg(feature = "tracy")]
        if let Some(client) = tracy_client::Client::running() {
            let [g, m, b] = self.plots;
            client.plot(g, ghosts as f64);
            client.plot(m, migrations as f64);
            client.plot(b, bytes as f64);
        }
        (stats.ghosts, stats.migrations, stats.bytes) = (ghosts, migrations, bytes);
        stats.export += exported.elapsed();
        Ok(())
    }

    /// Shard 0: the frame's figures over all shards, from their records (one from each
    /// shard, or an error).
    fn gather(&mut self, frame: u64, own: ShardStats) -> Result<FrameReport, ClusterError> {
        let mut report = FrameReport {
            frame,
            time: own.time,
            exchange: own.exchange,
            ..FrameReport::default()
        };
        let mut add = |w: [u64; STATS_WORDS]| {
            report.checksum = report.checksum.wrapping_add(w[0]);
            report.entities += w[1] as usize;
            // Every shard counted every spawn (the agreement is all-to-all).
            report.spawned = w[2] as usize;
            report.ghosts += w[3] as usize;
            report.migrations += w[4] as usize;
            report.bytes += w[5] as usize;
            report.run_sync = report.run_sync.max(Duration::from_nanos(w[6]));
            report.import = report.import.max(Duration::from_nanos(w[7]));
            report.export = report.export.max(Duration::from_nanos(w[8]));
        };
        let mut others = 0;
        for (_, kind, bytes) in &self.received {
            if *kind == STATS {
                if bytes.len() != 8 * STATS_WORDS {
                    return Err(ClusterError::Protocol {
                        message: format!("a frame's figures of {} bytes", bytes.len()),
                    });
                }
                add(ShardStats::read(bytes));
                others += 1;
            }
        }
        self.received.retain(|r| r.1 != STATS);
        if others != self.shards {
            return Err(ClusterError::Protocol {
                message: format!(
                    "shard 0 got the figures of {others} shards for frame {frame}, not {}",
                    self.shards
                ),
            });
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x_of(w: &World, e: Entity) -> Option<f32> {
        w.get::<model::Pos>(e).map(|p| p.0[0])
    }

    fn pos_of(w: &World, e: Entity) -> Option<[f32; 2]> {
        w.get::<model::Pos>(e).map(|p| p.0)
    }

    /// A world with one agent at each of `at`.
    fn agents(at: &[[f32; 2]]) -> (World, Vec<Entity>) {
        let mut w = World::new();
        model::register(&mut w);
        let es = at
            .iter()
            .map(|&p| w.spawn((model::Pos(p), model::Vel([0.0; 2]), model::Hp(1.0))))
            .collect();
        (w, es)
    }

    fn mirrors(p: &impl Partition, w: &World, e: Entity, shards: usize) -> Vec<usize> {
        let mut out = Vec::new();
        p.mirrors(w, e, shards, &mut out);
        out.sort_unstable();
        out.dedup();
        out
    }

    #[test]
    fn bands_own_by_x_and_mirror_within_range() {
        let bands = Bands::new(0.0, 100.0, 5.0, x_of);
        let (w, es) = agents(&[
            [-10.0, 0.0],
            [24.0, 0.0],
            [26.0, 0.0],
            [50.0, 0.0],
            [1e9, 0.0],
        ]);
        let owners: Vec<usize> = es.iter().map(|&e| bands.owner(&w, e, 4)).collect();
        assert_eq!(owners, [0, 0, 1, 2, 3], "outer bands reach to infinity");
        assert_eq!(mirrors(&bands, &w, es[1], 4), [0, 1]);
        assert_eq!(mirrors(&bands, &w, es[3], 4), [1, 2]); // 45..55 touches band 1 at 45
        assert_eq!(mirrors(&bands, &w, es[0], 4), [0]);
        // One shard: everything on it.
        assert!(es.iter().all(|&e| bands.owner(&w, e, 1) == 0));
        // No position: shard 0, no mirrors.
        let mut w2 = World::new();
        model::register(&mut w2);
        let bare = w2.spawn((model::Hp(1.0),));
        assert_eq!(bands.owner(&w2, bare, 4), 0);
        assert!(mirrors(&bands, &w2, bare, 4).is_empty());
    }

    #[test]
    fn tiles_own_by_tile_and_mirror_the_tiles_around() {
        // 2 × 2 tiles of 50 × 50.
        let tiles = Tiles::new([0.0, 0.0], [100.0, 100.0], 2, 2, 3.0, pos_of);
        let (w, es) = agents(&[[10.0, 10.0], [60.0, 10.0], [10.0, 60.0], [49.0, 49.0]]);
        let owners: Vec<usize> = es.iter().map(|&e| tiles.owner(&w, e, 4)).collect();
        assert_eq!(owners, [0, 1, 2, 0]);
        // The corner agent is within range of all four tiles.
        assert_eq!(mirrors(&tiles, &w, es[3], 4), [0, 1, 2, 3]);
        assert_eq!(mirrors(&tiles, &w, es[0], 4), [0]);
        // Three shards: tile 3 goes to shard 0.
        assert_eq!(mirrors(&tiles, &w, es[3], 3), [0, 1, 2]);
    }

    #[test]
    #[should_panic(expected = "bands need finite min < max")]
    fn empty_bands_are_refused() {
        let _ = Bands::new(1.0, 1.0, 0.0, x_of);
    }

    #[test]
    #[should_panic(expected = "mirror range must be finite and not negative")]
    fn a_negative_range_is_refused() {
        let _ = Tiles::new([0.0; 2], [1.0; 2], 1, 1, -1.0, pos_of);
    }

    #[test]
    fn stats_records_round_trip() {
        let stats = ShardStats {
            checksum: u64::MAX - 3,
            entities: 7,
            spawned: 5,
            ghosts: 11,
            migrations: 13,
            bytes: 17,
            run_sync: Duration::from_nanos(19),
            import: Duration::from_nanos(23),
            export: Duration::from_nanos(29),
            ..ShardStats::default()
        };
        let (to, kind, bytes) = stats.record();
        assert_eq!((to, kind), (0, STATS));
        assert_eq!(
            ShardStats::read(&bytes),
            [u64::MAX - 3, 7, 5, 11, 13, 17, 19, 23, 29]
        );
    }
}
