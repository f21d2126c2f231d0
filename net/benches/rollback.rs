//! What rollback costs per frame, on runsync's arena at 10k, 20k and 100k agents and 2
//! workers (the arena of `runsync-tools`: steering, separation, contacts, projectiles,
//! deaths and respawns, every type opted into snapshots):
//!
//! - `frame`: one frame, the unit of the budget (from the same state each time: a
//!   restore, then the frame, minus `restore` below);
//! - `frames_8`: a restore, then the 8 frames after it, unsaved: the floor of a rollback
//!   of 8 (the frames after the warm-up cost a little more than the first one);
//! - `snapshot_into`: the save's copy into a reused ring slot;
//! - `checksum`: the digest handed to ggrs with each save (`Runtime::checksum`: blocks
//!   on the workers);
//! - `checksum_1t`: the same digest on one thread (`World::checksum`);
//! - `checksum_v1`: digest version 1, one multiply chain (what every save paid before);
//! - `save`: snapshot and checksum, what every frame pays under ggrs;
//! - `restore`: a rollback's load;
//! - `checksum_parts`: the per-type digests a session adds to every
//!   `desync_interval`-th save;
//! - `rollback_8`: a rollback of 8 frames as ggrs asks for it: a restore, then 8 frames
//!   each saved first (the deepest rollback of ggrs's default window).
//!
//! After each size, the ratios of one run of its own (medians of alternating rounds):
//! `rollback_8 / frame` (the floor is 8.0; the budget 9.0), `rollback_8 / frames_8` and
//! `save / frame` (the budget 0.10).
//!
//! Run: `cargo bench -p runsync-net --bench rollback`. A 60 Hz frame is 16.7 ms:
//! `rollback_8` plus the new frame and its save must fit in it.

#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented pub fns"
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

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
    for agents in [10_000, 20_000, 100_000] {
        rollback_at(c, agents);
    }
}

/// A rollback of 8 as ggrs asks for it: the restore, then each frame saved (snapshot and
/// checksum) before it runs.
fn rollback_8(rt: &mut Runtime, at: &RuntimeSnapshot, ring: &mut [RuntimeSnapshot]) {
    rt.restore(at);
    for s in ring.iter_mut().take(8) {
        rt.snapshot_into(s).unwrap();
        black_box(rt.checksum());
        rt.frame();
    }
}

/// The same 8 frames, nothing saved.
fn frames_8(rt: &mut Runtime, at: &RuntimeSnapshot) {
    rt.restore(at);
    for _ in 0..8 {
        rt.frame();
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
    g.bench_function("frames_8", |b| b.iter(|| frames_8(&mut rt, &at)));

    let mut slot = RuntimeSnapshot::new();
    rt.restore(&at);
    rt.snapshot_into(&mut slot).unwrap();
    g.bench_function("snapshot_into", |b| {
        b.iter(|| rt.snapshot_into(black_box(&mut slot)).unwrap());
    });
    g.bench_function("checksum", |b| b.iter(|| black_box(rt.checksum())));
    g.bench_function("checksum_1t", |b| {
        b.iter(|| black_box(rt.world().checksum()))
    });
    g.bench_function("checksum_v1", |b| {
        b.iter(|| black_box(rt.world().checksum_v1()))
    });
    g.bench_function("save", |b| {
        b.iter(|| {
            rt.snapshot_into(&mut slot).unwrap();
            black_box(rt.checksum())
        });
    });
    g.bench_function("restore", |b| b.iter(|| rt.restore(black_box(&at))));
    g.bench_function("checksum_parts", |b| {
        b.iter(|| black_box(rt.checksum_parts()))
    });

    let mut ring: Vec<RuntimeSnapshot> = (0..9).map(|_| RuntimeSnapshot::new()).collect();
    g.bench_function("rollback_8", |b| {
        b.iter(|| rollback_8(&mut rt, &at, &mut ring));
    });
    g.finish();
    ratios(&mut rt, &at, &mut ring, &mut slot);
}

/// The budget's ratios, from one run of their own: rounds alternating the four
/// measurements, so that the machine's load weighs on all alike; medians.
fn ratios(
    rt: &mut Runtime,
    at: &RuntimeSnapshot,
    ring: &mut [RuntimeSnapshot],
    slot: &mut RuntimeSnapshot,
) {
    const ROUNDS: usize = 15;
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64()
    };
    let (mut frame, mut eight, mut rollback, mut save) = (vec![], vec![], vec![], vec![]);
    for _ in 0..ROUNDS {
        rt.restore(at);
        let restore = time(&mut || rt.restore(at));
        frame.push(time(&mut || rt.frame()));
        eight.push(time(&mut || frames_8(rt, at)) - restore);
        rollback.push(time(&mut || rollback_8(rt, at, ring)));
        rt.restore(at);
        save.push(time(&mut || {
            rt.snapshot_into(slot).unwrap();
            black_box(rt.checksum());
        }));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (frame, eight, rollback, save) = (
        median(&mut frame),
        median(&mut eight),
        median(&mut rollback),
        median(&mut save),
    );
    println!(
        "ratios ({ROUNDS} rounds, medians): frame {:.0} µs, frames_8 {:.2} frames, \
         rollback_8 {:.2} frames (floor 8.0, budget 9.0), rollback_8 / frames_8 {:.3}, \
         save {:.3} frames (budget 0.10)",
        frame * 1e6,
        eight / frame,
        rollback / frame,
        rollback / eight,
        save / frame
    );
}

criterion_group!(benches, rollback);
criterion_main!(benches);
