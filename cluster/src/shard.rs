//! One shard: its runtime, the records it exchanges (migrants, ghosts, figures,
//! world-wide values, spawned ids) and its steps of a frame. Its checkpoints are in
//! `shard/checkpoint.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use runsync::{Entity, Runtime, World};

use crate::error::ClusterError;
use crate::global::GlobalValue;
use crate::ids::{Agreement, Ids};
use crate::partition::{Partition, root_of};
use crate::report::{FrameReport, world_checksum};
use crate::rounds::Record;

mod checkpoint;

pub use checkpoint::checkpoint_path;

/// Builds the whole world (every shard calls it: it must give the same world each time).
pub(crate) type WorldFn = Arc<dyn Fn() -> World + Send + Sync>;
/// Adds the systems (the same on every shard).
pub(crate) type SystemsFn = Arc<dyn Fn(&mut Runtime) + Send + Sync>;

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

/// One shard's figures for a frame (what it sends shard 0).
#[derive(Default)]
pub(crate) struct ShardStats {
    checksum: u64,
    entities: u64,
    spawned: u64,
    ghosts: u64,
    migrations: u64,
    bytes: u64,
    pub(crate) time: Duration,
    run_sync: Duration,
    import: Duration,
    export: Duration,
    pub(crate) exchange: Duration,
}

/// The words of a [`ShardStats`] record.
const STATS_WORDS: usize = 9;

impl ShardStats {
    pub(crate) fn record(&self) -> Record {
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
pub(crate) struct Shard {
    index: usize,
    shards: usize,
    partition: Arc<dyn Partition>,
    rt: Runtime,
    /// The ghosts imported for the coming frame.
    ghosts: Vec<Entity>,
    /// Records received in the last exchange.
    pub(crate) received: Vec<Record>,
    /// Scratch: the mirrors of one entity.
    mirrors: Vec<usize>,
    /// The world-wide values.
    pub(crate) globals: Vec<Arc<dyn GlobalValue>>,
    /// Whether to compute the checksum after every frame.
    pub(crate) checksums: bool,
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
    pub(crate) fn new<P: Partition>(
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
    pub(crate) fn send_mirrors(
        &mut self,
        out: &mut Vec<Record>,
    ) -> Result<(u64, u64, u64), ClusterError> {
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
    pub(crate) fn send_globals(&self, out: &mut Vec<Record>) -> Result<(), ClusterError> {
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

    /// Imports the last exchange's entities, runs the frame, drops the ghosts and the
    /// spawns another shard keeps, and sends every shard (into `out`) what this one
    /// knows of the frame's deaths and spawns: the first exchange round of a frame.
    pub(crate) fn run_frame(&mut self, out: &mut Vec<Record>) -> Result<ShardStats, ClusterError> {
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
    pub(crate) fn finish_frame(
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
    pub(crate) fn gather(
        &mut self,
        frame: u64,
        own: ShardStats,
    ) -> Result<FrameReport, ClusterError> {
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
