//! Running a [`Cluster`]: on timely workers ([`Cluster::run`]: the start, then one shard
//! per worker, frame by frame, each step's status exchanged) or as one process
//! ([`Cluster::run_in_one_process`], what a sharded run must equal).

use std::sync::Arc;
use std::time::Instant;

use runsync::Runtime;

use super::Cluster;
#[cfg(doc)]
use crate::cluster::cluster_config;
use crate::error::ClusterError;
use crate::ids::{Agreement, Ids};
use crate::partition::Partition;
use crate::report::{FrameReport, Report, world_checksum};
use crate::rounds::{self, Rounds};
use crate::shard::{Shard, ShardStats};
use crate::{handshake, launch};

impl<P: Partition> Cluster<P> {
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
