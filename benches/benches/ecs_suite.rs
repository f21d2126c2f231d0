//! The public ecs_bench_suite workloads, written from their definitions, plus the
//! `contrib_100k` frame (several systems adding to one sum-merged component): runsync,
//! hecs and bevy_ecs on identical data in every group. Function names are the library
//! names, so `cargo xtask bench-report` can line them up.
//!
//! A function's name says which runsync API path it measures: `runsync_query` is the
//! README's lead loop, row writes in the query (`for (e, (.., mut next)) in
//! out.query::<(.., Write<C>)>() { next.set(..) }`); `runsync` is `out.write::<C>(e, ..)`
//! in a `for` over `world.query()`;
//! `runsync_writer` hoists `out.writer::<C>()` out of that loop; `runsync_write_each` is
//! `Output::write_each`; `runsync_par_for_each` is `Output::par_for_each` with
//! `out.write` inside. Exceptions, kept from the suite's first version:
//! `simple_insert`'s `runsync` is
//! `World::spawn_batch` (`runsync_spawn` the `World::spawn` loop, `runsync_commands`
//! `Output::spawn` in a frame; `hecs_spawn`/`bevy_ecs_spawn` and `_commands` are the
//! other libraries' same paths), and `add_remove`'s
//! `runsync` emits `Output::insert` / `Output::remove`. hecs (`query_mut`) and bevy_ecs
//! update components in place.

#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented pub fns"
)]

mod common;

use bevy_ecs::schedule::{MultiThreadedExecutor, Schedule};
use bevy_ecs::system::Query;
use common::*;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use glam::Vec3;
use runsync::{Output, Runtime, Without, World, Write, merge};

const COUNT: usize = 10_000;

fn bevy_pool() {
    bevy_tasks::ComputeTaskPool::get_or_init(bevy_tasks::TaskPool::default);
}

fn simple_insert(c: &mut Criterion) {
    let mut g = c.benchmark_group("simple_insert");
    g.bench_function("runsync", |b| {
        b.iter(|| {
            let mut w = runsync_world();
            w.spawn_batch((0..COUNT).map(|_| suite_bundle()));
            w
        })
    });
    g.bench_function("runsync_spawn", |b| {
        b.iter(|| {
            let mut w = runsync_world();
            for _ in 0..COUNT {
                w.spawn(suite_bundle());
            }
            w
        })
    });
    g.bench_function("hecs", |b| {
        b.iter(|| {
            let mut w = hecs::World::new();
            w.spawn_batch((0..COUNT).map(|_| suite_bundle()));
            w
        })
    });
    g.bench_function("bevy_ecs", |b| {
        b.iter(|| {
            let mut w = bevy_ecs::world::World::new();
            w.spawn_batch((0..COUNT).map(|_| suite_bundle()));
            w
        })
    });
    g.bench_function("hecs_spawn", |b| {
        b.iter(|| {
            let mut w = hecs::World::new();
            for _ in 0..COUNT {
                w.spawn(suite_bundle());
            }
            w
        })
    });
    g.bench_function("bevy_ecs_spawn", |b| {
        b.iter(|| {
            let mut w = bevy_ecs::world::World::new();
            for _ in 0..COUNT {
                w.spawn(suite_bundle());
            }
            w
        })
    });
    // Spawning as a game does during play: deferred, from inside the frame. runsync: one
    // frame (1 worker) whose system calls `Output::spawn` for each bundle, the spawns
    // applied in its Sync; hecs: a `CommandBuffer` filled and run on the world; bevy_ecs:
    // `Commands::spawn`, then the world's flush. A fresh world each time (not timed).
    g.bench_function("runsync_commands", |b| {
        b.iter_batched(
            || {
                let mut rt = Runtime::builder().workers(1).build(runsync_world());
                let mut first = true;
                rt.add_system(move |_: &World, out: &mut Output| {
                    if std::mem::take(&mut first) {
                        for _ in 0..COUNT {
                            out.spawn(suite_bundle());
                        }
                    }
                });
                rt
            },
            |mut rt| {
                rt.frame();
                rt
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("hecs_commands", |b| {
        b.iter_batched(
            hecs::World::new,
            |mut w| {
                let mut cb = hecs::CommandBuffer::new();
                for _ in 0..COUNT {
                    cb.spawn(suite_bundle());
                }
                cb.run_on(&mut w);
                w
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("bevy_ecs_commands", |b| {
        b.iter_batched(
            bevy_ecs::world::World::new,
            |mut w| {
                let mut commands = w.commands();
                for _ in 0..COUNT {
                    commands.spawn(suite_bundle());
                }
                w.flush();
                w
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn simple_iter(c: &mut Criterion) {
    let mut g = c.benchmark_group("simple_iter");
    g.bench_function("runsync", |b| {
        let mut w = runsync_world();
        for _ in 0..COUNT {
            w.spawn(suite_bundle());
        }
        let mut rt = Runtime::builder().workers(1).build(w);
        rt.add_system(|w: &World, out: &mut Output| {
            for (e, (p, v)) in w.query::<(&Position, &Velocity)>() {
                out.write::<Position>(e, Position(p.0 + v.0));
            }
        });
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_query", |b| {
        let mut w = runsync_world();
        for _ in 0..COUNT {
            w.spawn(suite_bundle());
        }
        let mut rt = Runtime::builder().workers(1).build(w);
        rt.add_system(|_: &World, out: &mut Output| {
            for (_, (p, v, mut pos)) in out.query::<(&Position, &Velocity, Write<Position>)>() {
                pos.set(Position(p.0 + v.0));
            }
        });
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_writer", |b| {
        let mut w = runsync_world();
        for _ in 0..COUNT {
            w.spawn(suite_bundle());
        }
        let mut rt = Runtime::builder().workers(1).build(w);
        rt.add_system(|w: &World, out: &mut Output| {
            let mut wr = out.writer::<Position>();
            for (e, (p, v)) in w.query::<(&Position, &Velocity)>() {
                wr.write(e, Position(p.0 + v.0));
            }
        });
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_write_each", |b| {
        let mut w = runsync_world();
        for _ in 0..COUNT {
            w.spawn(suite_bundle());
        }
        let mut rt = Runtime::builder().workers(1).build(w);
        rt.add_system(|_: &World, out: &mut Output| {
            out.write_each::<Position, (&Position, &Velocity)>(|_, (p, v)| Position(p.0 + v.0));
        });
        b.iter(|| rt.frame())
    });
    g.bench_function("hecs", |b| {
        let mut w = hecs::World::new();
        w.spawn_batch((0..COUNT).map(|_| suite_bundle()));
        b.iter(|| {
            for (p, v) in w.query_mut::<(&mut Position, &Velocity)>() {
                p.0 += v.0;
            }
        })
    });
    g.bench_function("bevy_ecs", |b| {
        let mut w = bevy_ecs::world::World::new();
        w.spawn_batch((0..COUNT).map(|_| suite_bundle()));
        let mut q = w.query::<(&mut Position, &Velocity)>();
        b.iter(|| {
            for (mut p, v) in q.iter_mut(&mut w) {
                p.0 += v.0;
            }
        })
    });
    g.finish();
}

macro_rules! spawn_fragmented {
    ($w:expr, $($t:ident),*) => {$(
        for _ in 0..20 {
            $w.spawn(($t(0.0), Data(1.0)));
        }
    )*};
}

fn fragmented_iter(c: &mut Criterion) {
    let mut g = c.benchmark_group("fragmented_iter");
    g.bench_function("runsync", |b| {
        let mut w = runsync_world();
        spawn_fragmented!(
            w, A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z
        );
        let mut rt = Runtime::builder().workers(1).build(w);
        rt.add_system(|w: &World, out: &mut Output| {
            for (e, (d,)) in w.query::<(&Data,)>() {
                out.write::<Data>(e, Data(d.0 * 2.0));
            }
        });
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_query", |b| {
        let mut w = runsync_world();
        spawn_fragmented!(
            w, A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z
        );
        let mut rt = Runtime::builder().workers(1).build(w);
        rt.add_system(|_: &World, out: &mut Output| {
            for (_, (d, mut data)) in out.query::<(&Data, Write<Data>)>() {
                data.set(Data(d.0 * 2.0));
            }
        });
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_writer", |b| {
        let mut w = runsync_world();
        spawn_fragmented!(
            w, A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z
        );
        let mut rt = Runtime::builder().workers(1).build(w);
        rt.add_system(|w: &World, out: &mut Output| {
            let mut wr = out.writer::<Data>();
            for (e, (d,)) in w.query::<(&Data,)>() {
                wr.write(e, Data(d.0 * 2.0));
            }
        });
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_write_each", |b| {
        let mut w = runsync_world();
        spawn_fragmented!(
            w, A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z
        );
        let mut rt = Runtime::builder().workers(1).build(w);
        rt.add_system(|_: &World, out: &mut Output| {
            out.write_each::<Data, (&Data,)>(|_, (d,)| Data(d.0 * 2.0));
        });
        b.iter(|| rt.frame())
    });
    g.bench_function("hecs", |b| {
        let mut w = hecs::World::new();
        spawn_fragmented!(
            w, A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z
        );
        b.iter(|| {
            for d in w.query_mut::<&mut Data>() {
                d.0 *= 2.0;
            }
        })
    });
    g.bench_function("bevy_ecs", |b| {
        let mut w = bevy_ecs::world::World::new();
        spawn_fragmented!(
            w, A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z
        );
        let mut q = w.query::<&mut Data>();
        b.iter(|| {
            for mut d in q.iter_mut(&mut w) {
                d.0 *= 2.0;
            }
        })
    });
    g.finish();
}

fn heavy_compute(c: &mut Criterion) {
    let mut g = c.benchmark_group("heavy_compute");
    g.sample_size(20);
    g.bench_function("runsync_par_for_each", |b| {
        let mut rt = runsync_heavy(2);
        b.iter(|| rt.frame())
    });
    g.bench_function("hecs", |b| {
        // hecs has no parallel iteration of its own: split its batches over 2 threads.
        let mut w = hecs::World::new();
        w.spawn_batch((0..1000).map(|_| heavy_bundle()));
        b.iter(|| {
            let mut q = w.query::<(&mut Position, &mut Transform)>();
            let batches: Vec<_> = q.iter_batched(64).collect();
            let mid = batches.len() / 2;
            let mut batches = batches.into_iter();
            let first: Vec<_> = batches.by_ref().take(mid).collect();
            let run = |bs: Vec<hecs::Batch<'_, (&mut Position, &mut Transform)>>| {
                for batch in bs {
                    for (p, t) in batch {
                        let (m, np) = heavy_kernel(t.0, p.0);
                        t.0 = m;
                        p.0 = np;
                    }
                }
            };
            std::thread::scope(|s| {
                s.spawn(|| run(first));
                run(batches.collect());
            });
        })
    });
    g.bench_function("bevy_ecs", |b| {
        bevy_pool();
        let mut w = bevy_ecs::world::World::new();
        w.spawn_batch((0..1000).map(|_| heavy_bundle()));
        let mut q = w.query::<(&mut Position, &mut Transform)>();
        b.iter(|| {
            q.par_iter_mut(&mut w).for_each(|(mut p, mut t)| {
                let (m, np) = heavy_kernel(t.0, p.0);
                t.0 = m;
                p.0 = np;
            })
        })
    });
    g.finish();
}

fn add_remove(c: &mut Criterion) {
    let mut g = c.benchmark_group("add_remove");
    g.bench_function("runsync", |b| {
        let mut w = runsync_world();
        for _ in 0..COUNT {
            w.spawn((A(0.0),));
        }
        let mut rt = Runtime::builder().workers(1).build(w);
        let mut insert = true;
        rt.add_system(move |w: &World, out: &mut Output| {
            if insert {
                for (e, _) in w.query::<(&A, Without<B>)>() {
                    out.insert(e, B(0.0));
                }
            } else {
                for (e, _) in w.query::<(&A, &B)>() {
                    out.remove::<B>(e);
                }
            }
            insert = !insert;
        });
        b.iter(|| {
            rt.frame();
            rt.frame();
        })
    });
    g.bench_function("hecs", |b| {
        let mut w = hecs::World::new();
        let ents: Vec<_> = (0..COUNT).map(|_| w.spawn((A(0.0),))).collect();
        b.iter(|| {
            for &e in &ents {
                w.insert_one(e, B(0.0)).unwrap();
            }
            for &e in &ents {
                w.remove_one::<B>(e).unwrap();
            }
        })
    });
    g.bench_function("bevy_ecs", |b| {
        let mut w = bevy_ecs::world::World::new();
        let ents: Vec<_> = (0..COUNT).map(|_| w.spawn(A(0.0)).id()).collect();
        b.iter(|| {
            for &e in &ents {
                w.entity_mut(e).insert(B(0.0));
            }
            for &e in &ents {
                w.entity_mut(e).remove::<B>();
            }
        })
    });
    g.finish();
}

macro_rules! spawn_schedule {
    ($w:expr, $spawn:ident) => {
        for _ in 0..COUNT {
            $w.$spawn((A(0.0), B(1.0)));
            $w.$spawn((A(0.0), B(1.0), C(2.0)));
            $w.$spawn((A(0.0), B(1.0), C(2.0), D(3.0)));
            $w.$spawn((A(0.0), B(1.0), C(2.0), E(4.0)));
        }
    };
}

fn bevy_ab(mut q: Query<(&mut A, &mut B)>) {
    for (mut a, mut b) in &mut q {
        std::mem::swap(&mut a.0, &mut b.0);
    }
}
fn bevy_cd(mut q: Query<(&mut C, &mut D)>) {
    for (mut c, mut d) in &mut q {
        std::mem::swap(&mut c.0, &mut d.0);
    }
}
fn bevy_ce(mut q: Query<(&mut C, &mut E)>) {
    for (mut c, mut e) in &mut q {
        std::mem::swap(&mut c.0, &mut e.0);
    }
}

fn schedule(c: &mut Criterion) {
    let mut g = c.benchmark_group("schedule");
    g.bench_function("runsync", |b| {
        let mut w = runsync_world();
        spawn_schedule!(w, spawn);
        let mut rt = Runtime::builder().workers(2).build(w);
        rt.add_system(|w: &World, out: &mut Output| {
            for (e, (a, b)) in w.query::<(&A, &B)>() {
                out.write::<A>(e, A(b.0));
                out.write::<B>(e, B(a.0));
            }
        });
        rt.add_system(|w: &World, out: &mut Output| {
            for (e, (c, d)) in w.query::<(&C, &D)>() {
                out.write::<C>(e, C(d.0));
                out.write::<D>(e, D(c.0));
            }
        });
        rt.add_system(|w: &World, out: &mut Output| {
            for (e, (c, x)) in w.query::<(&C, &E)>() {
                out.write::<C>(e, C(x.0));
                out.write::<E>(e, E(c.0));
            }
        });
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_query", |b| {
        let mut w = runsync_world();
        spawn_schedule!(w, spawn);
        let mut rt = Runtime::builder().workers(2).build(w);
        rt.add_system(|_: &World, out: &mut Output| {
            for (_, (a, b, mut sa, mut sb)) in out.query::<(&A, &B, Write<A>, Write<B>)>() {
                sa.set(A(b.0));
                sb.set(B(a.0));
            }
        });
        rt.add_system(|_: &World, out: &mut Output| {
            for (_, (c, d, mut sc, mut sd)) in out.query::<(&C, &D, Write<C>, Write<D>)>() {
                sc.set(C(d.0));
                sd.set(D(c.0));
            }
        });
        rt.add_system(|_: &World, out: &mut Output| {
            for (_, (c, x, mut sc, mut se)) in out.query::<(&C, &E, Write<C>, Write<E>)>() {
                sc.set(C(x.0));
                se.set(E(c.0));
            }
        });
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_write_each", |b| {
        let mut w = runsync_world();
        spawn_schedule!(w, spawn);
        let mut rt = Runtime::builder().workers(2).build(w);
        rt.add_system(|_: &World, out: &mut Output| {
            out.write_each::<A, (&B,)>(|_, (b,)| A(b.0));
            out.write_each::<B, (&A,)>(|_, (a,)| B(a.0));
        });
        rt.add_system(|_: &World, out: &mut Output| {
            out.write_each::<C, (&D,)>(|_, (d,)| C(d.0));
            out.write_each::<D, (&C,)>(|_, (c,)| D(c.0));
        });
        rt.add_system(|_: &World, out: &mut Output| {
            out.write_each::<C, (&E,)>(|_, (x,)| C(x.0));
            out.write_each::<E, (&C,)>(|_, (c,)| E(c.0));
        });
        b.iter(|| rt.frame())
    });
    g.bench_function("hecs", |b| {
        let mut w = hecs::World::new();
        spawn_schedule!(w, spawn);
        b.iter(|| {
            for (a, b) in w.query_mut::<(&mut A, &mut B)>() {
                std::mem::swap(&mut a.0, &mut b.0);
            }
            for (c, d) in w.query_mut::<(&mut C, &mut D)>() {
                std::mem::swap(&mut c.0, &mut d.0);
            }
            for (c, e) in w.query_mut::<(&mut C, &mut E)>() {
                std::mem::swap(&mut c.0, &mut e.0);
            }
        })
    });
    g.bench_function("bevy_ecs", |b| {
        bevy_pool();
        let mut w = bevy_ecs::world::World::new();
        spawn_schedule!(w, spawn);
        let mut s = Schedule::default();
        s.set_executor(MultiThreadedExecutor::new());
        s.add_systems((bevy_ab, bevy_cd, bevy_ce));
        s.run(&mut w);
        b.iter(|| s.run(&mut w))
    });
    g.finish();
}

/// Entities in the `contrib_100k` frame.
const CONTRIB: usize = 100_000;
/// The `contrib_100k` frame's fixed step, and what its three velocity systems add.
const DT: f32 = 1.0 / 60.0;
const GRAVITY: Vec3 = Vec3::new(0.0, -9.81, 0.0);
const DRAG: f32 = 0.1;
const WIND: Vec3 = Vec3::new(0.5, 0.0, 0.25);

fn contrib_bundle(i: usize) -> (contrib::Pos, contrib::Vel) {
    let x = i as f32;
    (
        contrib::Pos(Vec3::new(x, 0.0, -x)),
        contrib::Vel(Vec3::new(1.0, x * 1e-5, 0.0)),
    )
}

/// Three systems emit velocity deltas (gravity, drag, wind) that `Vel`'s sum merge adds
/// up in Sync, and a fourth integrates `Pos` from last frame's `Vel`; every system takes
/// the plain `out.write` path.
fn runsync_contrib(workers: usize) -> Runtime {
    runsync_contrib_with(workers, |w| {
        w.register::<contrib::Vel>(merge::sum);
    })
}

/// A hand-written merge for `Vel`, as a user writes one: adds up the frame's deltas.
fn add_deltas(v: &mut contrib::Vel, deltas: &[glam::Vec3]) {
    for d in deltas {
        v.0 += *d;
    }
}

/// [`runsync_contrib`] with `Vel` merged by [`add_deltas`], a plain `fn`.
fn runsync_contrib_fn(workers: usize) -> Runtime {
    runsync_contrib_with(workers, |w| {
        w.register::<contrib::Vel>(add_deltas);
    })
}

/// The same four systems written with row writes (`Output::query`), `Vel` merged by
/// [`add_deltas`] (or `merge::sum` when `sum`).
fn runsync_contrib_query(workers: usize, sum: bool) -> Runtime {
    use contrib::{Pos, Vel};
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    if sum {
        w.register::<Vel>(merge::sum);
    } else {
        w.register::<Vel>(add_deltas);
    }
    for i in 0..CONTRIB {
        w.spawn(contrib_bundle(i));
    }
    let mut rt = Runtime::builder().workers(workers).build(w);
    rt.add_system(|_: &World, out: &mut Output| {
        for (_, (mut dv,)) in out.query::<(Write<Vel>,)>() {
            dv.set(GRAVITY * DT);
        }
    });
    rt.add_system(|_: &World, out: &mut Output| {
        for (_, (v, mut dv)) in out.query::<(&Vel, Write<Vel>)>() {
            dv.set(v.0 * (-DRAG * DT));
        }
    });
    rt.add_system(|_: &World, out: &mut Output| {
        for (_, (mut dv,)) in out.query::<(Write<Vel>,)>() {
            dv.set(WIND * DT);
        }
    });
    rt.add_system(|_: &World, out: &mut Output| {
        for (_, (p, v, mut pos)) in out.query::<(&Pos, &Vel, Write<Pos>)>() {
            pos.set(Pos(p.0 + v.0 * DT));
        }
    });
    rt
}

fn runsync_contrib_with(workers: usize, register_vel: impl FnOnce(&mut World)) -> Runtime {
    use contrib::{Pos, Vel};
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    register_vel(&mut w);
    for i in 0..CONTRIB {
        w.spawn(contrib_bundle(i));
    }
    let mut rt = Runtime::builder().workers(workers).build(w);
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, (_,)) in w.query::<(&Vel,)>() {
            out.write::<Vel>(e, GRAVITY * DT);
        }
    });
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, (v,)) in w.query::<(&Vel,)>() {
            out.write::<Vel>(e, v.0 * (-DRAG * DT));
        }
    });
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, (_,)) in w.query::<(&Vel,)>() {
            out.write::<Vel>(e, WIND * DT);
        }
    });
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, (p, v)) in w.query::<(&Pos, &Vel)>() {
            out.write::<Pos>(e, Pos(p.0 + v.0 * DT));
        }
    });
    rt
}

fn bevy_gravity(mut q: Query<&mut contrib::Vel>) {
    for mut v in &mut q {
        v.0 += GRAVITY * DT;
    }
}
fn bevy_drag(mut q: Query<&mut contrib::Vel>) {
    for mut v in &mut q {
        let d = v.0 * (-DRAG * DT);
        v.0 += d;
    }
}
fn bevy_wind(mut q: Query<&mut contrib::Vel>) {
    for mut v in &mut q {
        v.0 += WIND * DT;
    }
}
fn bevy_integrate(mut q: Query<(&mut contrib::Pos, &contrib::Vel)>) {
    for (mut p, v) in &mut q {
        p.0 += v.0 * DT;
    }
}

/// `contrib_100k_{workers}w`: several systems contributing to one component. runsync runs
/// four systems at once on `workers` threads: `runsync_query_fn_merge` writes through
/// row writes with `Vel` merged by a hand-written `fn` ([`add_deltas`]),
/// `runsync_query` the same with `merge::sum`; `runsync` and `runsync_fn_merge` are the
/// same pair on the `out.write` path ([`runsync_contrib`]); hecs makes the
/// same four passes one after another in place; bevy_ecs (2 workers only) runs the same
/// four systems in a multi-threaded `Schedule`, which serialises them because they all
/// touch `Vel`.
fn contrib_100k(c: &mut Criterion, workers: usize) {
    let mut g = c.benchmark_group(format!("contrib_100k_{workers}w"));
    g.throughput(Throughput::Elements(CONTRIB as u64));
    g.bench_function("runsync_query_fn_merge", |b| {
        let mut rt = runsync_contrib_query(workers, false);
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_query", |b| {
        let mut rt = runsync_contrib_query(workers, true);
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync", |b| {
        let mut rt = runsync_contrib(workers);
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_fn_merge", |b| {
        let mut rt = runsync_contrib_fn(workers);
        b.iter(|| rt.frame())
    });
    g.bench_function("hecs", |b| {
        use contrib::{Pos, Vel};
        let mut w = hecs::World::new();
        w.spawn_batch((0..CONTRIB).map(contrib_bundle));
        b.iter(|| {
            for v in w.query_mut::<&mut Vel>() {
                v.0 += GRAVITY * DT;
            }
            for v in w.query_mut::<&mut Vel>() {
                v.0 += v.0 * (-DRAG * DT);
            }
            for v in w.query_mut::<&mut Vel>() {
                v.0 += WIND * DT;
            }
            for (p, v) in w.query_mut::<(&mut Pos, &Vel)>() {
                p.0 += v.0 * DT;
            }
        })
    });
    if workers > 1 {
        g.bench_function("bevy_ecs", |b| {
            bevy_pool();
            let mut w = bevy_ecs::world::World::new();
            w.spawn_batch((0..CONTRIB).map(contrib_bundle));
            let mut s = Schedule::default();
            s.set_executor(MultiThreadedExecutor::new());
            s.add_systems((bevy_gravity, bevy_drag, bevy_wind, bevy_integrate));
            s.run(&mut w);
            b.iter(|| s.run(&mut w))
        });
    }
    g.finish();
}

fn contrib_100k_2w(c: &mut Criterion) {
    contrib_100k(c, 2);
}

fn contrib_100k_1w(c: &mut Criterion) {
    contrib_100k(c, 1);
}

criterion_group! {
    name = suite;
    config = quick();
    targets = simple_insert, simple_iter, fragmented_iter, heavy_compute, add_remove, schedule,
        contrib_100k_2w, contrib_100k_1w
}
criterion_main!(suite);
