//! What rollback costs per frame, on runsync's arena at 10k, 20k and 100k agents and 2
//! workers (the arena of `runsync-tools`: steering, separation, contacts, projectiles,
//! deaths and respawns, every type opted into snapshots):
//!
//! - `frame`: one frame, the unit of the budget (from the same state each time: a
//!   restore, then the frame, minus `restore` below);
//! - `frames_8`: a restore, then the 8 frames after it, unsaved: the floor of a rollback
//!   of 8 (the frames after the warm-up cost a little more than the first one);
//! - `snapshot_into`: the save's copy into the ring entry it overwrites, which holds the
//!   state 9 frames back (saves copy only the columns and entity lists changed since the
//!   entry was filled);
//! - `snapshot_cold`: the same copy into an entry filled from another world, so that
//!   nothing can be skipped: every column copied, as each save did before;
//! - `checksum`: the digest handed to ggrs with each save (`Runtime::checksum`: blocks
//!   on the workers, those unchanged since its digests of 9 frames back reused);
//! - `checksum_1t`: the same digest on one thread (`World::checksum`, digest version 3:
//!   two 32-bit writes a word);
//! - `checksum_v2`: digest version 2 on one thread (a word per 32-bit write);
//! - `checksum_v1`: digest version 1, one multiply chain;
//! - `save`: snapshot and checksum (`Runtime::save_into`: the allocator's, the entity
//!   lists' and each type's copies, biggest first, then the blocks' digests, as jobs on
//!   the workers), what every frame pays under ggrs (into the entry 9 frames back, the
//!   checksum's digests of 9 frames back kept: blocks unchanged since are not digested
//!   again);
//! - `restore`: a rollback's load, 9 frames back;
//! - `checksum_parts`: the per-type digests a session adds to every
//!   `desync_interval`-th save;
//! - `rollback_8`: a rollback of 8 frames as ggrs asks for it: a restore, then 8 frames
//!   each saved first (the deepest rollback of ggrs's default window).
//!
//! A fourth group, `rollback_10k_scenery90k_2w`, adds 90k entities of static scenery (a
//! type no system reads or writes, in a table of its own) to the 10k arena: a level's
//! geometry, which the incremental save, restore and checksum skip.
//!
//! After each group, the ratios of one run of its own (medians of alternating rounds), in
//! frames as a rollback re-runs them (`frames_8 / 8`, its restore taken out):
//! `rollback_8`, its restore included (the floor is 8.0; the budget 9.0), and `save` (the
//! budget 0.10).
//!
//! Run: `cargo bench -p runsync-net --bench rollback`. A 60 Hz frame is 16.7 ms:
//! `rollback_8` plus the new frame and its save must fit in it.

#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented pub fns"
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Bencher, Criterion, criterion_group, criterion_main};
use runsync::prelude::*;
use runsync::{Runtime, RuntimeSnapshot};
use runsync_tools::scenario::{self, ArenaConfig, Rules};

const WORKERS: usize = 2;
/// Frames run before measuring: the first waves spawned, projectiles in flight.
const WARM_UP: u64 = 120;

/// A piece of a level: placed once, never read or written by a system.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Scenery {
    at: [f32; 2],
    kind: u32,
}
impl Component for Scenery {
    type Output = Scenery;
}
impl Checksum for Scenery {
    fn checksum(&self, h: &mut Checksummer) {
        self.at.checksum(h);
        self.kind.checksum(h);
    }
}

/// The arena with `agents` agents and `scenery` pieces of static scenery, warmed up.
fn arena(agents: usize, scenery: u32) -> Runtime {
    let config = ArenaConfig {
        agents,
        seed: 7,
        workers: WORKERS,
    };
    let mut world = scenario::world(config);
    world.register::<Scenery>(merge::last);
    world.snapshotting::<Scenery>().checksumming::<Scenery>();
    world.spawn_batch((0..scenery).map(|i| {
        (Scenery {
            at: [(i % 300) as f32, (i / 300) as f32],
            kind: i % 7,
        },)
    }));
    let mut rt = Runtime::builder()
        .workers(WORKERS)
        .fixed_hz(60)
        .build(world);
    scenario::add_systems(&mut rt, config, Rules::Whole);
    for _ in 0..WARM_UP {
        rt.frame();
    }
    rt
}

fn rollback(c: &mut Criterion) {
    for agents in [10_000, 20_000, 100_000] {
        rollback_at(c, agents, 0);
    }
    rollback_at(c, 10_000, 90_000);
}

/// Times `routine` alone, each run after an untimed `setup` on the same state (what
/// criterion's `iter_batched` does, for a setup and a routine that both need the runtime).
fn prepared<S>(b: &mut Bencher, s: &mut S, setup: impl Fn(&mut S), routine: impl Fn(&mut S)) {
    b.iter_custom(|iters| {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            setup(s);
            let t = Instant::now();
            routine(s);
            total += t.elapsed();
        }
        total
    });
}

/// Makes `entry` hold `old` as a ring entry does (saved from the world), and leaves the
/// world at `now`, its checksum's digests those of `old`: the state in which each frame's
/// save finds the entry it overwrites.
fn ring_entry_holding(
    rt: &mut Runtime,
    old: &RuntimeSnapshot,
    now: &RuntimeSnapshot,
    entry: &mut RuntimeSnapshot,
) {
    rt.restore(old);
    rt.snapshot_into(entry).unwrap();
    black_box(rt.checksum());
    rt.restore(now);
}

/// A rollback of 8 as ggrs asks for it: the restore, then each frame saved (snapshot and
/// checksum) before it runs.
fn rollback_8(rt: &mut Runtime, at: &RuntimeSnapshot, ring: &mut [RuntimeSnapshot]) {
    rt.restore(at);
    for s in ring.iter_mut().take(8) {
        black_box(rt.save_into(s).unwrap());
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

fn rollback_at(c: &mut Criterion, agents: usize, scenery: u32) {
    let mut rt = arena(agents, scenery);
    let name = match scenery {
        0 => format!("rollback_{}k_2w", agents / 1000),
        _ => format!("rollback_{}k_scenery{}k_2w", agents / 1000, scenery / 1000),
    };
    let mut g = c.benchmark_group(name);
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));

    // Saved as a session saves its ring (`save_into`: copy and checksum at once), so a
    // rollback to it starts from the digests that save made.
    let mut at = RuntimeSnapshot::new();
    rt.save_into(&mut at).unwrap();
    // The state 9 frames on: what a ring entry holding `at` is overwritten with.
    let mut later = RuntimeSnapshot::new();
    for _ in 0..9 {
        rt.frame();
    }
    rt.snapshot_into(&mut later).unwrap();
    rt.restore(&at);
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

    let mut entry = RuntimeSnapshot::new();
    g.bench_function("snapshot_into", |b| {
        prepared(
            b,
            &mut (&mut rt, &mut entry),
            |(rt, entry)| ring_entry_holding(rt, &at, &later, entry),
            |(rt, entry)| rt.snapshot_into(black_box(entry)).unwrap(),
        );
    });
    // An entry filled from another world: none of its stamps is this world's.
    let mut other = arena(agents, scenery);
    let mut cold = RuntimeSnapshot::new();
    rt.restore(&later);
    g.bench_function("snapshot_cold", |b| {
        prepared(
            b,
            &mut (&mut rt, &mut other, &mut cold),
            |(_, other, cold)| other.snapshot_into(cold).unwrap(),
            |(rt, _, cold)| rt.snapshot_into(black_box(cold)).unwrap(),
        );
    });
    drop(other);
    // The digests kept are those of 9 frames back, as in a ring.
    let digest_at = |rt: &mut Runtime| {
        rt.restore(&at);
        black_box(rt.checksum());
        rt.restore(&later);
    };
    g.bench_function("checksum", |b| {
        prepared(
            b,
            &mut rt,
            |rt| digest_at(rt),
            |rt| {
                black_box(rt.checksum());
            },
        );
    });
    g.bench_function("checksum_1t", |b| {
        b.iter(|| black_box(rt.world().checksum()))
    });
    g.bench_function("checksum_v2", |b| {
        b.iter(|| black_box(rt.world().checksum_v2()))
    });
    g.bench_function("checksum_v1", |b| {
        b.iter(|| black_box(rt.world().checksum_v1()))
    });
    g.bench_function("save", |b| {
        prepared(
            b,
            &mut (&mut rt, &mut entry),
            |(rt, entry)| ring_entry_holding(rt, &at, &later, entry),
            |(rt, entry)| {
                black_box(rt.save_into(entry).unwrap());
            },
        );
    });
    g.bench_function("restore", |b| {
        prepared(
            b,
            &mut rt,
            |rt| rt.restore(&later),
            |rt| rt.restore(black_box(&at)),
        );
    });
    g.bench_function("checksum_parts", |b| {
        prepared(
            b,
            &mut rt,
            |rt| digest_at(rt),
            |rt| {
                black_box(rt.checksum_parts());
            },
        );
    });

    let mut ring: Vec<RuntimeSnapshot> = (0..9).map(|_| RuntimeSnapshot::new()).collect();
    g.bench_function("rollback_8", |b| {
        b.iter(|| rollback_8(&mut rt, &at, &mut ring));
    });
    g.finish();
    ratios(&mut rt, &at, &later, &mut ring, &mut entry);
}

/// The budget's ratios, from one run of their own: rounds alternating the three
/// measurements, so that the machine's load weighs on all alike; medians. The unit is a
/// frame as a rollback re-runs it: an eighth of `frames_8` (a restore, then the 8 frames
/// after it, minus the restore), so the floor of `rollback_8` is 8.0 by construction. (A
/// single frame timed right after a restore varies too much from round to round to be
/// the unit.)
fn ratios(
    rt: &mut Runtime,
    at: &RuntimeSnapshot,
    later: &RuntimeSnapshot,
    ring: &mut [RuntimeSnapshot],
    entry: &mut RuntimeSnapshot,
) {
    const ROUNDS: usize = 15;
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64()
    };
    let (mut eight, mut rollback, mut save) = (vec![], vec![], vec![]);
    for _ in 0..ROUNDS {
        rt.restore(at);
        let restore = time(&mut || rt.restore(at));
        eight.push(time(&mut || frames_8(rt, at)) - restore);
        rollback.push(time(&mut || rollback_8(rt, at, ring)));
        ring_entry_holding(rt, at, later, entry);
        save.push(time(&mut || {
            black_box(rt.save_into(entry).unwrap());
        }));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (eight, rollback, save) = (median(&mut eight), median(&mut rollback), median(&mut save));
    let frame = eight / 8.0;
    println!(
        "ratios ({ROUNDS} rounds, medians): frame (frames_8 / 8) {:.0} µs, \
         rollback_8 {:.2} frames (floor 8.0, budget 9.0), save {:.3} frames (budget 0.10)",
        frame * 1e6,
        rollback / frame,
        save / frame
    );
}

criterion_group!(benches, rollback);
criterion_main!(benches);
