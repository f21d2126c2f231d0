//! runsync's own workloads: the movement frame through every write path against hecs in
//! place and the memory-bandwidth floor, Sync throughput (outputs in query order, and
//! scattered ones: `scatter_100k`), per-system overhead, and scaling from 1 to 2 workers,
//! and change detection (`changed_query_1M`: a `Changed` query against
//! the plain one over the same table), and the cost of stages (`stages_{1,2}w`).
//!
//! A function's name says which runsync API path it measures: `runsync_query` is the
//! README's lead loop (`for (e, (.., mut next)) in out.query::<(.., Write<C>)>() {
//! next.set(..) }`); `runsync` is `out.write::<C>(e, ..)` in a `for` over
//! `world.query()`; `runsync_writer` hoists `out.writer::<C>()` out of that loop;
//! `runsync_write_each` is `Output::write_each`; `runsync_par_for_each` is
//! `Output::par_for_each` with `out.write` inside, `runsync_par_for_each_query` with a
//! write handle (`Write<Position>`) instead (`_1w`: on one worker). `empty_systems`
//! writes nothing. `hecs` updates in place with `query_mut`; `raw` is a loop over two
//! plain arrays.

#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented pub fns"
)]

mod common;

use std::ops::AddAssign;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::out8::*;
use common::*;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::Vec3;
use runsync::{Changed, Commands, Component, Entity, Output, Runtime, World, Write, merge};

const DT: f32 = 1.0 / 60.0;

fn movement_world(n: usize) -> World {
    let mut w = runsync_world();
    for i in 0..n {
        w.spawn((Position(Vec3::splat(i as f32)), Velocity(Vec3::X)));
    }
    w
}

/// The movement system as the README leads with it: row writes in the query.
fn movement_query(_: &World, out: &mut Output) {
    for (_, (p, v, mut pos)) in out.query::<(&Position, &Velocity, Write<Position>)>() {
        pos.set(Position(p.0 + v.0 * DT));
    }
}

/// The movement system with `out.write(e, ..)` in a `for` over `world.query`.
fn movement_plain(w: &World, out: &mut Output) {
    for (e, (p, v)) in w.query::<(&Position, &Velocity)>() {
        out.write::<Position>(e, Position(p.0 + v.0 * DT));
    }
}

/// The movement system with the writer fetched once, outside the loop.
fn movement_writer(w: &World, out: &mut Output) {
    let mut wr = out.writer::<Position>();
    for (e, (p, v)) in w.query::<(&Position, &Velocity)>() {
        wr.write(e, Position(p.0 + v.0 * DT));
    }
}

/// The movement system writing the whole column at once (the shadow-column path).
fn movement_each(_: &World, out: &mut Output) {
    out.write_each::<Position, (&Position, &Velocity)>(|_, (p, v)| Position(p.0 + v.0 * DT));
}

/// The movement system through `par_for_each`, `out.write` inside.
fn movement_par(_: &World, out: &mut Output) {
    out.par_for_each::<(&Position, &Velocity)>(|e, (p, v), out| {
        out.write::<Position>(e, Position(p.0 + v.0 * DT));
    });
}

/// The movement system through `par_for_each` with a write handle (the lead loop's
/// shape, in parallel chunks).
fn movement_par_query(_: &World, out: &mut Output) {
    out.par_for_each::<(&Position, &Velocity, Write<Position>)>(|_, (p, v, mut pos), _| {
        pos.set(Position(p.0 + v.0 * DT));
    });
}

/// The movement data in a hecs world.
fn hecs_movement_world(n: usize) -> hecs::World {
    let mut w = hecs::World::new();
    w.spawn_batch((0..n).map(|i| (Position(Vec3::splat(i as f32)), Velocity(Vec3::X))));
    w
}

/// The movement step in place, on one thread.
#[inline]
fn hecs_movement_step(w: &mut hecs::World) {
    for (p, v) in w.query_mut::<(&mut Position, &Velocity)>() {
        p.0 += v.0 * DT;
    }
}

fn raw_arrays(n: usize) -> (Vec<Vec3>, Vec<Vec3>) {
    (
        (0..n).map(|i| Vec3::splat(i as f32)).collect(),
        vec![Vec3::X; n],
    )
}

#[inline]
fn raw_step(pos: &mut [Vec3], vel: &[Vec3]) {
    for (p, v) in pos.iter_mut().zip(vel) {
        *p += *v * DT;
    }
}

/// A movement system, as a plain function.
type MovementSystem = fn(&World, &mut Output);

/// `movement_{label}`: `Position += Velocity * dt` over `n` entities through each write
/// path (1 worker), hecs in place, and the raw loop.
fn movement(c: &mut Criterion, label: &str, n: usize) {
    let mut g = c.benchmark_group(format!("movement_{label}"));
    if n >= 1_000_000 {
        g.sample_size(20).measurement_time(Duration::from_secs(3));
    }
    g.throughput(Throughput::Elements(n as u64));
    let paths: [(&str, MovementSystem); 4] = [
        ("runsync_query", movement_query),
        ("runsync", movement_plain),
        ("runsync_writer", movement_writer),
        ("runsync_write_each", movement_each),
    ];
    for (name, system) in paths {
        g.bench_function(name, |b| {
            let mut rt = Runtime::builder().workers(1).build(movement_world(n));
            rt.add_system(system);
            b.iter(|| rt.frame())
        });
    }
    g.bench_function("hecs", |b| {
        let mut w = hecs_movement_world(n);
        b.iter(|| hecs_movement_step(&mut w))
    });
    g.bench_function("raw", |b| {
        let (mut pos, vel) = raw_arrays(n);
        b.iter(|| raw_step(&mut pos, &vel))
    });
    g.finish();
}

fn movement_10k(c: &mut Criterion) {
    movement(c, "10k", 10_000);
}

fn movement_1m(c: &mut Criterion) {
    movement(c, "1M", 1_000_000);
}

/// `movement_1M_par`: the movement system through `par_for_each` on 2 workers and on 1,
/// against hecs in place on one thread.
fn movement_1m_par(c: &mut Criterion) {
    const N: usize = 1_000_000;
    let mut g = c.benchmark_group("movement_1M_par");
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(N as u64));
    let rows: [(&str, usize, MovementSystem); 4] = [
        ("runsync_par_for_each_query", 2, movement_par_query),
        ("runsync_par_for_each_query_1w", 1, movement_par_query),
        ("runsync_par_for_each", 2, movement_par),
        ("runsync_par_for_each_1w", 1, movement_par),
    ];
    for (name, workers, system) in rows {
        g.bench_function(name, |b| {
            let mut rt = Runtime::builder().workers(workers).build(movement_world(N));
            rt.add_system(system);
            b.iter(|| rt.frame())
        });
    }
    g.bench_function("hecs", |b| {
        let mut w = hecs_movement_world(N);
        b.iter(|| hecs_movement_step(&mut w))
    });
    g.finish();
}

fn movement_5m_2w(c: &mut Criterion) {
    const N: usize = 5_000_000;
    let mut g = c.benchmark_group("movement_5M_2w");
    g.sample_size(10).measurement_time(Duration::from_secs(4));
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("runsync_write_each", |b| {
        let mut rt = Runtime::builder().workers(2).build(movement_world(N));
        rt.add_system(movement_each);
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_par_for_each_query", |b| {
        let mut rt = Runtime::builder().workers(2).build(movement_world(N));
        rt.add_system(movement_par_query);
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_query_1w", |b| {
        let mut rt = Runtime::builder().workers(1).build(movement_world(N));
        rt.add_system(movement_query);
        b.iter(|| rt.frame())
    });
    g.bench_function("hecs_1w", |b| {
        let mut w = hecs_movement_world(N);
        b.iter(|| hecs_movement_step(&mut w))
    });
    g.bench_function("runsync_par_for_each", |b| {
        let mut rt = Runtime::builder().workers(2).build(movement_world(N));
        rt.add_system(movement_par);
        b.iter(|| rt.frame())
    });
    g.bench_function("raw", |b| {
        let (mut pos, vel) = raw_arrays(N);
        b.iter(|| {
            let (p0, p1) = pos.split_at_mut(N / 2);
            let (v0, v1) = vel.split_at(N / 2);
            std::thread::scope(|s| {
                s.spawn(|| raw_step(p0, v0));
                raw_step(p1, v1);
            });
        })
    });
    g.finish();
}

/// A sum-merged accumulator for the Sync throughput bench.
#[derive(Clone, Copy, Debug)]
struct Acc(f32);
impl Component for Acc {
    type Output = f32;
}
impl AddAssign<f32> for Acc {
    #[inline]
    fn add_assign(&mut self, delta: f32) {
        self.0 += delta;
    }
}

fn sync_throughput(c: &mut Criterion) {
    sync_group(c, "sync_sum_1M", |w| {
        w.register::<Acc>(merge::sum);
    });
}

/// A hand-written merge for [`Acc`], as a user writes one.
fn add_up(a: &mut Acc, deltas: &[f32]) {
    for d in deltas {
        a.0 += d;
    }
}

/// `sync_sum_1M` with `Acc` merged by a hand-written `fn` ([`add_up`]).
fn sync_fn_throughput(c: &mut Criterion) {
    sync_group(c, "sync_fn_1M", |w| {
        w.register::<Acc>(add_up);
    });
}

/// The Sync phase alone, for 1M outputs from 1, 2, 4 or 8 systems on 1 worker, with
/// `Acc` registered by `register`.
fn sync_group(c: &mut Criterion, name: &str, register: fn(&mut World)) {
    const OUTPUTS: usize = 1_000_000;
    let mut g = c.benchmark_group(name);
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(OUTPUTS as u64));
    for systems in [1usize, 2, 4, 8] {
        // Every system adds one delta to each of OUTPUTS / systems entities (the plain
        // `out.write` path), so each merge folds `systems` overlapping deltas (one per
        // system) into one entity: OUTPUTS outputs in all, whatever the system count.
        let entities = OUTPUTS / systems;
        g.bench_with_input(BenchmarkId::new("runsync", systems), &systems, |b, &k| {
            let mut w = World::new();
            register(&mut w);
            for _ in 0..entities {
                w.spawn((Acc(0.0),));
            }
            let mut rt = Runtime::builder().workers(1).build(w);
            for s in 0..k {
                rt.add_system(move |w: &World, out: &mut Output| {
                    for (e, _) in w.query::<(&Acc,)>() {
                        out.write::<Acc>(e, s as f32);
                    }
                });
            }
            rt.frame();
            assert_eq!(
                rt.stats().merged,
                (entities * k) as u64,
                "every output merges"
            );
            // Time the Sync phase only, as the runtime measures it.
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    rt.frame();
                    total += rt.stats().sync;
                }
                total
            })
        });
    }
    g.finish();
}

/// `scatter_100k`'s pseudo-random target for entity `i` of `n`: a fixed permutation-free
/// hash (splitmix64's finaliser), so some entities get several deltas and some none.
fn scatter_target(i: usize, n: usize) -> usize {
    let mut x = (i as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((x ^ (x >> 31)) % n as u64) as usize
}

/// `scatter_100k`: 100k entities, one system; each entity writes a delta (plain
/// `out.write`) to a pseudo-random other entity, and `Acc` is merged by a closure that
/// sums the deltas. The writes are scattered (targets in no order), so Sync keys and sorts
/// them. `runsync_closure_merge_frame` times the whole frame, `runsync_closure_merge_sync`
/// the Sync phase alone (`FrameStats::sync`); `/1` and `/2` are the worker counts.
fn scatter_100k(c: &mut Criterion) {
    const N: usize = 100_000;
    let mut g = c.benchmark_group("scatter_100k");
    g.throughput(Throughput::Elements(N as u64));
    let runtime = |workers: usize| {
        let mut w = World::new();
        w.register::<Acc>(|a: &mut Acc, deltas: &[f32]| {
            for d in deltas {
                a.0 += d;
            }
        });
        let entities: Vec<Entity> = (0..N).map(|i| w.spawn((Acc(i as f32),))).collect();
        let targets: Vec<Entity> = (0..N).map(|i| entities[scatter_target(i, N)]).collect();
        let mut rt = Runtime::builder().workers(workers).build(w);
        rt.add_system(move |w: &World, out: &mut Output| {
            for ((_, (a,)), &t) in w.query::<(&Acc,)>().zip(&targets) {
                out.write::<Acc>(t, a.0 * 1e-3 + 1.0);
            }
        });
        rt.frame();
        assert_eq!(rt.stats().merged, N as u64, "every output merges");
        rt
    };
    for workers in [1usize, 2] {
        g.bench_with_input(
            BenchmarkId::new("runsync_closure_merge_frame", workers),
            &workers,
            |b, &n| {
                let mut rt = runtime(n);
                b.iter(|| rt.frame())
            },
        );
        g.bench_with_input(
            BenchmarkId::new("runsync_closure_merge_sync", workers),
            &workers,
            |b, &n| {
                let mut rt = runtime(n);
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        rt.frame();
                        total += rt.stats().sync;
                    }
                    total
                })
            },
        );
    }
    g.finish();
}

fn empty_systems(c: &mut Criterion) {
    for workers in [1usize, 2] {
        let mut g = c.benchmark_group(format!("empty_systems_{workers}w"));
        for n in [1usize, 10, 100] {
            g.bench_with_input(BenchmarkId::new("runsync", n), &n, |b, &n| {
                let mut rt = Runtime::builder().workers(workers).build(World::new());
                for _ in 0..n {
                    rt.add_system(|_: &World, _: &mut Output| {});
                }
                b.iter(|| rt.frame())
            });
        }
        g.finish();
    }
}

/// `stages_{1,2}w`: the fixed cost of a stage. `empty/N`: N stages of one empty system
/// each (the slope is the cost of one more stage: a Run and a Sync with nothing to do).
/// `movement_10k/N`: the 10k movement frame (row writes, `Position` from `Velocity`) plus
/// a second system that reads the positions and writes `Data` for 1k of the entities, in
/// one stage (N = 1: the second reads last frame's positions) or in a second stage (N =
/// 2: this frame's).
fn stages(c: &mut Criterion) {
    for workers in [1usize, 2] {
        let mut g = c.benchmark_group(format!("stages_{workers}w"));
        for n in [1usize, 2, 4, 8] {
            g.bench_with_input(BenchmarkId::new("empty", n), &n, |b, &n| {
                let names: Vec<String> = (0..n).map(|k| format!("s{k}")).collect();
                let mut rt = Runtime::builder()
                    .workers(workers)
                    .stages(names.clone())
                    .build(World::new());
                for name in &names {
                    let stage = rt.stage_id(name).unwrap();
                    rt.add_system_to(stage, |_: &World, _: &mut Output| {});
                }
                b.iter(|| rt.frame())
            });
        }
        for n in [1usize, 2] {
            g.bench_with_input(BenchmarkId::new("movement_10k", n), &n, |b, &n| {
                let mut w = movement_world(10_000);
                let data: Vec<Entity> = w
                    .query::<(&Position,)>()
                    .map(|(e, _)| e)
                    .step_by(10)
                    .collect();
                for &e in &data {
                    w.insert(e, Data(0.0));
                }
                let names: Vec<String> = (0..n).map(|k| format!("s{k}")).collect();
                let mut rt = Runtime::builder()
                    .workers(workers)
                    .stages(names.clone())
                    .build(w);
                rt.add_system(movement_query);
                let last = rt.stage_id(&names[n - 1]).unwrap();
                rt.add_system_to(last, |_: &World, out: &mut Output| {
                    for (_, (p, mut d)) in out.query::<(&Position, Write<Data>)>() {
                        d.set(Data(p.0.x));
                    }
                });
                b.iter(|| rt.frame())
            });
        }
        g.finish();
    }
}

/// `many_systems_2w`: 6,000 systems on 2 workers, each reading one entity and emitting one
/// plain `out.write` for it per frame: the per-system cost of Run and Sync with real work.
fn many_systems(c: &mut Criterion) {
    const SYSTEMS: usize = 6_000;
    let mut g = c.benchmark_group("many_systems_2w");
    g.throughput(Throughput::Elements(SYSTEMS as u64));
    g.bench_function("runsync", |b| {
        let mut w = runsync_world();
        let entities: Vec<_> = (0..SYSTEMS).map(|i| w.spawn((Data(i as f32),))).collect();
        let mut rt = Runtime::builder().workers(2).build(w);
        for e in entities {
            rt.add_system(move |w: &World, out: &mut Output| {
                let d = w.get::<Data>(e).map_or(0.0, |d| d.0);
                out.write::<Data>(e, Data(d + 1.0));
            });
        }
        b.iter(|| rt.frame())
    });
    g.finish();
}

fn scaling(c: &mut Criterion) {
    let mut g = c.benchmark_group("scaling_heavy_compute");
    g.sample_size(20);
    for workers in [1usize, 2] {
        g.bench_with_input(
            BenchmarkId::new("runsync_par_for_each", workers),
            &workers,
            |b, &n| {
                let mut rt = runsync_heavy(n);
                b.iter(|| rt.frame())
            },
        );
    }
    g.finish();

    let mut g = c.benchmark_group("scaling_8_systems");
    g.sample_size(20);
    for workers in [1usize, 2] {
        g.bench_with_input(
            BenchmarkId::new("runsync_writer", workers),
            &workers,
            |b, &n| {
                let mut w = runsync_world();
                for i in 0..100_000 {
                    let x = i as f32;
                    w.spawn((
                        Position(Vec3::splat(x)),
                        Velocity(Vec3::X),
                        S0(x),
                        S1(x),
                        S2(x),
                        S3(x),
                        S4(x),
                        S5(x),
                        S6(x),
                        S7(x),
                    ));
                }
                let mut rt = Runtime::builder().workers(n).build(w);
                macro_rules! system {
                ($($s:ident),*) => {$(
                    rt.add_system(|w: &World, out: &mut Output| {
                        let mut wr = out.writer::<$s>();
                        for (e, (p, v, s)) in w.query::<(&Position, &Velocity, &$s)>() {
                            wr.write(e, $s((p.0.dot(v.0) + s.0).sin()));
                        }
                    });
                )*};
            }
                system!(S0, S1, S2, S3, S4, S5, S6, S7);
                b.iter(|| rt.frame())
            },
        );
    }
    g.finish();
}

/// A world of 100k entities with the suite's four `Copy` components (100 bytes each),
/// every type opted into snapshots.
fn snapshot_world(n: usize) -> World {
    let mut w = World::new();
    w.register::<Transform>(merge::last);
    w.register::<Position>(merge::last);
    w.register::<Rotation>(merge::last);
    w.register::<Velocity>(merge::last);
    w.snapshotting::<Transform>()
        .snapshotting::<Position>()
        .snapshotting::<Rotation>()
        .snapshotting::<Velocity>();
    for _ in 0..n {
        w.spawn(suite_bundle());
    }
    w
}

/// Snapshot and restore of 100k entities against a plain `memcpy` of the same bytes:
/// the four columns plus one 8-byte entity handle per row in the table's entity list.
/// `runsync_snapshot` is `World::snapshot_into` a reused snapshot (what a rollback ring
/// does: no allocation); `runsync_restore` is `World::restore` into the same world. Both
/// also copy the entity allocator (12 bytes per slot), which the `memcpy` leaves out.
fn snapshot_100k(c: &mut Criterion) {
    const N: usize = 100_000;
    let mut g = c.benchmark_group("snapshot_100k");
    let bytes = N
        * (size_of::<Transform>()
            + size_of::<Position>()
            + size_of::<Rotation>()
            + size_of::<Velocity>()
            + size_of::<runsync::Entity>());
    g.throughput(Throughput::Bytes(bytes as u64));
    let mut world = snapshot_world(N);
    let mut snap = runsync::Snapshot::new();
    world.snapshot_into(&mut snap).expect("all types opted in");
    g.bench_function("runsync_snapshot", |b| {
        b.iter(|| world.snapshot_into(&mut snap).expect("all types opted in"))
    });
    g.bench_function("runsync_restore", |b| b.iter(|| world.restore(&snap)));
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    g.bench_function("memcpy", |b| {
        b.iter(|| dst.copy_from_slice(std::hint::black_box(&src)))
    });
    g.finish();
}

/// Save files of the same 100k entities × 4 `Copy` components (target: ≤ 4× a
/// `memcpy` of the same bytes): `World::save` into a reused `Vec<u8>` (cleared each
/// time), `World::load` of that file into the same world, and the `memcpy` of
/// `snapshot_100k` (the four columns plus the entity list). `runsync_save` / `_load`:
/// the types opted in through serde (`saving`); `runsync_save_pod` / `_load_pod`: as
/// plain data (`saving_pod`).
fn save_100k(c: &mut Criterion) {
    const N: usize = 100_000;
    let mut g = c.benchmark_group("save_100k");
    let bytes = N
        * (size_of::<Transform>()
            + size_of::<Position>()
            + size_of::<Rotation>()
            + size_of::<Velocity>()
            + size_of::<runsync::Entity>());
    g.throughput(Throughput::Bytes(bytes as u64));
    let mut world = snapshot_world(N);
    world
        .saving::<Transform>()
        .saving::<Position>()
        .saving::<Rotation>()
        .saving::<Velocity>();
    let mut file = Vec::new();
    world.save(&mut file).expect("all types opted in");
    g.bench_function("runsync_save", |b| {
        b.iter(|| {
            file.clear();
            world.save(&mut file).expect("all types opted in")
        })
    });
    g.bench_function("runsync_load", |b| {
        b.iter(|| world.load(&mut file.as_slice()).expect("a valid save"))
    });
    world
        .saving_pod::<Transform>()
        .saving_pod::<Position>()
        .saving_pod::<Rotation>()
        .saving_pod::<Velocity>();
    file.clear();
    world.save(&mut file).expect("all types opted in");
    g.bench_function("runsync_save_pod", |b| {
        b.iter(|| {
            file.clear();
            world.save(&mut file).expect("all types opted in")
        })
    });
    g.bench_function("runsync_load_pod", |b| {
        b.iter(|| world.load(&mut file.as_slice()).expect("a valid save"))
    });
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    g.bench_function("memcpy", |b| {
        b.iter(|| dst.copy_from_slice(std::hint::black_box(&src)))
    });
    g.finish();
}

/// A hook that counts its calls.
fn counting<T: Component>(
    n: &Arc<AtomicU64>,
) -> impl FnMut(&World, Entity, &T, &mut Commands) + Send + 'static {
    let n = n.clone();
    move |_, _, _, _| {
        n.fetch_add(1, Ordering::Relaxed);
    }
}

/// `hooks_add_remove_10k`: 10,000 entities gain `B` in one frame and lose it in the next
/// (structural commands, Sync's batched path), timing Sync. `none`: no hooks; `other_type`:
/// hooks on a type the commands never touch (the flag check every command pays);
/// `hooked`: an `on_add` and an `on_remove` hook on `B` (one by one, a hook call each).
fn hooks_add_remove(c: &mut Criterion) {
    const N: usize = 10_000;
    let mut g = c.benchmark_group("hooks_add_remove_10k");
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(2 * N as u64));
    for case in ["none", "other_type", "hooked"] {
        g.bench_function(case, |b| {
            let mut w = runsync_world();
            for _ in 0..N {
                w.spawn((A(0.0),));
            }
            let counter = Arc::new(AtomicU64::new(0));
            match case {
                "other_type" => {
                    w.on_add::<C>(counting(&counter));
                    w.on_remove::<C>(counting(&counter));
                }
                "hooked" => {
                    w.on_add::<B>(counting(&counter));
                    w.on_remove::<B>(counting(&counter));
                }
                _ => {}
            }
            let mut rt = Runtime::builder().workers(1).build(w);
            let mut insert = true;
            rt.add_system(move |w: &World, out: &mut Output| {
                if insert {
                    for (e, _) in w.query::<(&A,)>() {
                        out.insert(e, B(0.0));
                    }
                } else {
                    for (e, _) in w.query::<(&A,)>() {
                        out.remove::<B>(e);
                    }
                }
                insert = !insert;
            });
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    rt.frame();
                    total += rt.stats().sync;
                    rt.frame();
                    total += rt.stats().sync;
                }
                total
            });
            let fired = counter.load(Ordering::Relaxed);
            assert_eq!(
                fired > 0,
                case == "hooked",
                "hooks fire only where registered"
            );
        });
    }
    g.finish();
}

/// Iterating a million entities of which 1% or all were written by the last Sync: the
/// plain query, and the same query with `Changed<Position>` (one bit tested per row).
fn changed_query(c: &mut Criterion) {
    const N: usize = 1_000_000;
    let mut g = c.benchmark_group("changed_query_1M");
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(N as u64));
    for every in [100usize, 1] {
        let mut rt = Runtime::builder().workers(1).build(movement_world(N));
        rt.add_system(move |w: &World, out: &mut Output| {
            for (e, (p,)) in w.query::<(&Position,)>().step_by(every) {
                out.write::<Position>(e, *p);
            }
        });
        rt.frame();
        let w = rt.world();
        assert_eq!(
            w.query_filtered::<(&Position,), Changed<Position>>().len(),
            N.div_ceil(every)
        );
        let pct = 100 / every;
        g.bench_function(format!("changed_{pct}pct"), |b| {
            b.iter(|| {
                w.query_filtered::<(&Position,), Changed<Position>>()
                    .fold(0.0f32, |a, (_, (p,))| a + p.0.x)
            })
        });
        if every == 1 {
            g.bench_function("plain", |b| {
                b.iter(|| {
                    w.query::<(&Position,)>()
                        .fold(0.0f32, |a, (_, (p,))| a + p.0.x)
                })
            });
        }
    }
    g.finish();
}

criterion_group! {
    name = own;
    config = quick();
    targets = movement_10k, movement_1m, movement_1m_par, movement_5m_2w, sync_throughput,
        sync_fn_throughput, scatter_100k,
        empty_systems, many_systems, scaling, snapshot_100k, save_100k, hooks_add_remove,
        changed_query, stages
}
criterion_main!(own);
