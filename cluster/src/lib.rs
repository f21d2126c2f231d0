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
//! # In the source
//!
//! One file per concept: `cluster.rs` (the [`Cluster`] and its settings) and
//! `cluster/run.rs` (running it); `shard.rs` (one shard's steps of a frame) and
//! `shard/checkpoint.rs`; `partition.rs` (who owns and mirrors what); `ids.rs` (spawned
//! ids); `global.rs` (world-wide values); `report.rs` (what a run reports, and
//! [`world_checksum`]); `rounds.rs` (the exchange rounds and their statuses); `launch.rs`
//! and `handshake.rs` with `handshake/` (starting processes); `error.rs`;
//! `loopback.rs`; `model.rs` (the model scenario of the tests and demos).
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

/// A Tracy zone until the end of the enclosing block (nothing without `tracy`).
macro_rules! zone {
    ($name:literal) => {
        #[cfg(feature = "tracy")]
        let _zone = tracy_client::span!($name);
    };
}

mod cluster;
mod error;
mod global;
mod handshake;
mod ids;
mod launch;
mod loopback;
pub mod model;
mod partition;
mod report;
mod rounds;
mod shard;

// The crate docs link to these.
#[cfg(doc)]
use runsync::{Runtime, World};

pub use cluster::{CONNECT_TIMEOUT, Cluster, PEER_TIMEOUT, cluster_config};
pub use error::ClusterError;
pub use loopback::loopback_addresses;
pub use partition::{Bands, Partition, Tiles};
pub use report::{FrameReport, Report, world_checksum};
pub use shard::checkpoint_path;
pub use timely;
