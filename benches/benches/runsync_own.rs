//! runsync's own workloads: the movement frame against the memory-bandwidth floor, Sync
//! throughput, per-system overhead, and scaling from 1 to 2 workers.

#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented pub fns"
)]

mod common;

use std::time::Duration;

use common::out8::*;
use common::*;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::Vec3;
use runsync::{Component, Output, Runtime, World};

const DT: f32 = 1.0 / 60.0;

fn movement_world(n: usize) -> World {
    let mut w = runsync_world();
    for i in 0..n {
        w.spawn((Position(Vec3::splat(i as f32)), Velocity(Vec3::X)));
    }
    w
}

/// The movement system as a user writes it: one output per entity through a writer.
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

fn movement_1m(c: &mut Criterion) {
    const N: usize = 1_000_000;
    let mut g = c.benchmark_group("movement_1M");
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("runsync", |b| {
        let mut rt = Runtime::builder().workers(1).build(movement_world(N));
        rt.add_system(movement_each);
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_writer", |b| {
        let mut rt = Runtime::builder().workers(1).build(movement_world(N));
        rt.add_system(movement_writer);
        b.iter(|| rt.frame())
    });
    g.bench_function("raw", |b| {
        let (mut pos, vel) = raw_arrays(N);
        b.iter(|| raw_step(&mut pos, &vel))
    });
    g.finish();
}

fn movement_5m_2w(c: &mut Criterion) {
    const N: usize = 5_000_000;
    let mut g = c.benchmark_group("movement_5M_2w");
    g.sample_size(10).measurement_time(Duration::from_secs(4));
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("runsync", |b| {
        let mut rt = Runtime::builder().workers(2).build(movement_world(N));
        rt.add_system(movement_each);
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_par_for_each", |b| {
        let mut rt = Runtime::builder().workers(2).build(movement_world(N));
        rt.add_system(|_: &World, out: &mut Output| {
            out.par_for_each::<(&Position, &Velocity)>(|e, (p, v), out| {
                out.write::<Position>(e, Position(p.0 + v.0 * DT));
            });
        });
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

fn sync_throughput(c: &mut Criterion) {
    const OUTPUTS: usize = 1_000_000;
    let mut g = c.benchmark_group("sync_sum_1M");
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(OUTPUTS as u64));
    for systems in [1usize, 2, 4, 8] {
        // Every system adds one delta to each of OUTPUTS / systems entities, so each merge
        // folds `systems` deltas (one per system) into one entity.
        let entities = OUTPUTS / systems;
        g.bench_with_input(BenchmarkId::new("runsync", systems), &systems, |b, &k| {
            let mut w = World::new();
            w.register::<Acc>(|a: &mut Acc, d: &[f32]| d.iter().for_each(|x| a.0 += x));
            for _ in 0..entities {
                w.spawn((Acc(0.0),));
            }
            let mut rt = Runtime::builder().workers(1).build(w);
            for s in 0..k {
                rt.add_system(move |w: &World, out: &mut Output| {
                    let mut wr = out.writer::<Acc>();
                    for (e, _) in w.query::<(&Acc,)>() {
                        wr.write(e, s as f32);
                    }
                });
            }
            rt.frame();
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

fn scaling(c: &mut Criterion) {
    let mut g = c.benchmark_group("scaling_heavy_compute");
    g.sample_size(20);
    for workers in [1usize, 2] {
        g.bench_with_input(BenchmarkId::new("runsync", workers), &workers, |b, &n| {
            let mut rt = runsync_heavy(n);
            b.iter(|| rt.frame())
        });
    }
    g.finish();

    let mut g = c.benchmark_group("scaling_8_systems");
    g.sample_size(20);
    for workers in [1usize, 2] {
        g.bench_with_input(BenchmarkId::new("runsync", workers), &workers, |b, &n| {
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
        });
    }
    g.finish();
}

criterion_group! {
    name = own;
    config = quick();
    targets = movement_1m, movement_5m_2w, sync_throughput, empty_systems, scaling
}
criterion_main!(own);
