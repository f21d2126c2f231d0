//! What a run reports: one [`FrameReport`] per frame in a [`Report`], and
//! [`world_checksum`], the digest a sharded world and one process compare.

use std::time::Duration;

use runsync::World;

/// What one frame did, over all shards.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameReport {
    /// The frame's number (from 1, as `Runtime::frame_count`).
    pub frame: u64,
    /// [`world_checksum`] of the whole world after the frame (the wrapping sum of every
    /// shard's part): the same as one process's. 0 with
    /// [`Cluster::checksums`](crate::Cluster::checksums) off.
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

/// What a [`Cluster::run`](crate::Cluster::run) did: one [`FrameReport`] per frame.
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
