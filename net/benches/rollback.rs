//! What rollback costs per frame, on runsync's arena at 10k and 20k agents and 2
//! workers (the arena of `runsync-tools`: steering, separation, contacts, projectiles,
//! deaths and respawns, every type opted into snapshots):
//!
//! - `frame`: one frame, the unit of the budget;
//! - `snapshot_into`: the save's copy into a reused ring slot;
//! - `checksum`: the digest handed to ggrs with each save;
//! - `save`: both, what every frame pays under ggrs;
//! - `restore`: a rollback's load;
//! - `checksum_parts`: the per-type digests a session adds to every
//!   `desync_interval`-th save (with a second snapshot, kept for a desync report);
//! - `rollback_8`: a rollback of 8 frames as ggrs asks for it: a restore, then 8 frames
//!   each saved first (the deepest rollback of ggrs's default window).
//!
//! Run: `cargo bench -p runsync-net --bench rollback`. A 60 Hz frame is 16.7 ms:
//! `rollback_8` plus the new frame and its save must fit in it, and `save` should be at
//! most a tenth of it.

#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented pub fns"
)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use runsync::{Runtime, RuntimeSnapshot};
use runsync_tools::scenario::{self, ArenaConfig};

const WORKERS: usize = 2;
/// Frames run before measuring: the first waves spawned, projectiles in flight.
const WARM_UP: u64 = 120;

fn arena(agents: usize) -> Runtime {
    let mut rt = scenario::build(ArenaConfig {
        agents,
        seed: 7,
        workers: WORKERS,
    });
    for _ in 0..WARM_UP {
        rt.frame();
    }
    rt
}

fn rollback(c: &mut Criterion) {
    for agents in [10_000, 20_000] {
        rollback_at(c, agents);
    }
}

fn rollback_at(c: &mut Criterion, agents: usize) {
    let mut rt = arena(agents);
    let mut g = c.benchmark_group(format!("rollback_{}k_2w", agents / 1000));
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));

    let mut at = RuntimeSnapshot::new();
    rt.snapshot_into(&mut at).unwrap();
    println!(
        "arena: {} entities after {WARM_UP} frames, {} workers",
        rt.world().len(),
        rt.workers()
    );

    g.bench_function("frame", |b| {
        b.iter(|| {
            rt.restore(&at);
            rt.frame();
        });
    });
    // The restore in `frame` is measured on its own below; report `frame` as the pair
    // minus `restore` (criterion cannot run a frame from the same state without it).

    let mut slot = RuntimeSnapshot::new();
    rt.restore(&at);
    rt.snapshot_into(&mut slot).unwrap();
    g.bench_function("snapshot_into", |b| {
        b.iter(|| rt.snapshot_into(black_box(&mut slot)).unwrap());
    });
    g.bench_function("checksum", |b| b.iter(|| black_box(rt.world().checksum())));
    g.bench_function("save", |b| {
        b.iter(|| {
            rt.snapshot_into(&mut slot).unwrap();
            black_box(rt.world().checksum())
        });
    });
    g.bench_function("restore", |b| b.iter(|| rt.restore(black_box(&at))));
    g.bench_function("checksum_parts", |b| {
        b.iter(|| black_box(rt.world().checksum_parts()))
    });

    let mut ring: Vec<RuntimeSnapshot> = (0..9).map(|_| RuntimeSnapshot::new()).collect();
    g.bench_function("rollback_8", |b| {
        b.iter(|| {
            rt.restore(&at);
            for s in ring.iter_mut().take(8) {
                rt.snapshot_into(s).unwrap();
                black_box(rt.world().checksum());
                rt.frame();
            }
        });
    });
    g.finish();
}

criterion_group!(benches, rollback);
criterion_main!(benches);
