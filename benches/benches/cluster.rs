//! What sharding costs and gives: `runsync-cluster`'s model scenario
//! (`runsync_cluster::model`: agents pushing and hurting their neighbours, a hand-written
//! `fn` merge for velocity impulses, a closure merge for scattered health writes), 20,000
//! agents, bands along x mirroring within twice the interaction range, no per-frame
//! checksum.
//!
//! - `cluster_20k/one_process`: `Cluster::run_in_one_process`, one runtime in canonical
//!   order (the reference), 10 frames.
//! - `cluster_20k/shards_N`: `Cluster::run` on `N` timely worker threads, 10 frames:
//!   each iteration also starts the workers and has every shard build the world and keep
//!   its part (the same setup `one_process` does once), so read the difference between
//!   rows as what the shards save or cost per 10 frames, setup included. On this 2-core
//!   machine 2 shards is the parallel case; 4 shows the cost of more borders on
//!   oversubscribed cores.

#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented pub fns"
)]

mod common;

use common::quick;
use criterion::{Criterion, criterion_group, criterion_main};
use runsync_cluster::{Cluster, model, timely};

const AGENTS: usize = 20_000;
const FRAMES: u64 = 10;

fn model_cluster() -> Cluster<impl runsync_cluster::Partition> {
    Cluster::new(
        model::bands_of(AGENTS, 2.0 * model::RANGE),
        || model::world_of(AGENTS),
        model::systems_of(AGENTS),
    )
    .frames(FRAMES)
    .checksums(false)
}

fn cluster_20k(c: &mut Criterion) {
    let mut g = c.benchmark_group("cluster_20k");
    g.sample_size(10);
    g.bench_function("one_process", |b| {
        b.iter(|| model_cluster().run_in_one_process().unwrap());
    });
    for shards in [1, 2, 4] {
        g.bench_function(format!("shards_{shards}"), |b| {
            b.iter(|| {
                model_cluster()
                    .run(timely::Config::process(shards))
                    .unwrap()
                    .unwrap()
            });
        });
    }
    g.finish();
}

criterion_group! {
    name = cluster;
    config = quick();
    targets = cluster_20k
}
criterion_main!(cluster);
