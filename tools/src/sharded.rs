//! The arena split into shards (`arena --shards N`): one world over timely workers with
//! `runsync-cluster`, by the arena's local rules ([`Rules::Local`]), with the same bits
//! as the same arena in one process.

use runsync::World;
use runsync::prelude::Entity;
use runsync_cluster::{Cluster, ClusterError, Report, Tiles, timely};
use runsync_systems::{Position, TeamTotals};

use crate::scenario::{ArenaConfig, Rules, add_systems, arena_side, team_totals, world};

/// How far from its region a shard mirrors the other shards' entities: twice the arena's
/// reach (a collider's 0.5 + the largest other's 0.5; a shot's start up to 1.6 from its
/// shooter), plus a frame's flight of a shot (40 units a second at 60 Hz) — the shared
/// grid being a frame old — with room to spare.
pub const MIRROR_RANGE: f32 = 6.0;

/// The tiles for `shards` shards: as square a grid of tiles as `shards` allows, one tile
/// a shard (`cols × rows ≥ shards`, tile `k` on shard `k % shards`).
pub fn tiles_for(shards: usize) -> (usize, usize) {
    let cols = (shards.max(1) as f64).sqrt().ceil() as usize;
    (cols, shards.max(1).div_ceil(cols))
}

/// How the partition reads a position.
pub type PositionFn = fn(&World, Entity) -> Option<[f32; 2]>;

/// The position a partition reads: an agent's or a shot's.
fn position(w: &World, e: Entity) -> Option<[f32; 2]> {
    w.get::<Position>(e).map(|p| p.0.to_array())
}

/// The arena of `config` (its `workers` run inside each shard) over `shards` tiles,
/// by local rules, for `frames` frames.
pub fn cluster(config: ArenaConfig, shards: usize, frames: u64) -> Cluster<Tiles<PositionFn>> {
    let side = arena_side(config.agents);
    let (cols, rows) = tiles_for(shards);
    let partition = Tiles::new(
        [0.0, 0.0],
        [side, side],
        cols,
        rows,
        MIRROR_RANGE,
        position as PositionFn,
    );
    Cluster::new(
        partition,
        move || world(config),
        move |rt| add_systems(rt, config, Rules::Local),
    )
    .frames(frames)
    .shard_workers(config.workers.max(1))
    .global(team_totals, TeamTotals::combine)
    .fingerprint(fingerprint(config))
}

/// What processes of one sharded arena must agree on beyond the world they build (see
/// `Cluster::fingerprint`): the agents and the seed the systems play by, and the mirror
/// range. Not the workers, which change no bits.
pub fn fingerprint(config: ArenaConfig) -> u64 {
    let mut h = runsync::Checksummer::new();
    h.write_bytes(b"arena by local rules");
    h.write_u64(config.agents as u64);
    h.write_u64(config.seed);
    h.write_f32(MIRROR_RANGE);
    h.finish()
}

/// Runs the arena on `shards` threads of this process; `checksums`: whether every frame's
/// world checksum is computed (`Cluster::checksums`: a hash of every entity's values).
///
/// # Errors
/// A shard's [`ClusterError`].
pub fn run(
    config: ArenaConfig,
    shards: usize,
    frames: u64,
    checksums: bool,
) -> Result<Report, ClusterError> {
    Ok(run_on(
        config,
        shards,
        timely::Config::process(shards),
        frames,
        checksums,
    )?
    .expect("shard 0 runs in this process"))
}

/// Runs the arena on the timely workers of `timely` (`shards` of them in all, over every
/// process: see `runsync_cluster::cluster_config`), as [`run`]; the report comes back in
/// the process that holds shard 0.
///
/// # Errors
/// A shard's [`ClusterError`].
pub fn run_on(
    config: ArenaConfig,
    shards: usize,
    timely: timely::Config,
    frames: u64,
    checksums: bool,
) -> Result<Option<Report>, ClusterError> {
    cluster(config, shards, frames)
        .checksums(checksums)
        .run(timely)
}
