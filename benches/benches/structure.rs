//! What a game's structure costs: messages between systems, against bevy_ecs's
//! messages (bevy_ecs 0.20's `Messages<M>` / `MessageWriter` / `MessageReader`, what 0.16
//! called `Events`).
//!
//! - `messages_10k`: one system sends 10,000 messages a frame, another reads them all
//!   (sums a field). runsync: one frame (Run + Sync, 1 worker), the reader reading the
//!   previous frame's messages; `runsync` sends with `out.send`, `runsync_sender` with a
//!   `Sender`, `runsync_send_to` sends each to one of 1,000 entities (the reader walks
//!   `addressed_messages`). bevy_ecs: a single-threaded schedule with the writer and the
//!   reader (chained), then `Messages::update` (what bevy's `message_update_system` does each
//!   frame). The `_empty` functions run the same frame with no message sent: subtract
//!   them to get the cost per message.
//! - `despawn_tree_10k`: despawning a root with 10,000 descendants, between frames
//!   (`World::despawn`, the command path Sync takes): `runsync_wide` (10,000 children),
//!   `runsync_deep` (a chain of 10,000), against `runsync_flat` (10,000 unrelated
//!   entities despawned one by one, no hierarchy) and bevy_ecs 0.20's recursive despawn
//!   of the same wide tree (`ChildOf` relationships; `World::despawn` takes the
//!   children).
//! - `propagate_10k`: one frame (1 worker) of `runsync_systems::PropagateTransforms`
//!   over 1,000 roots with 10 children each (11,000 entities): `runsync`; and, to
//!   subtract, `runsync_roots_only` (the same roots without children).
//! - `canonical_100k`: what canonical order (`World::set_canonical_order`) costs. One
//!   frame (1 worker) over 100,000 entities of one movement system, the README's lead
//!   loop (`out.query` with a `Write<Pos>` element, last-wins merge): `steady_off` /
//!   `steady_on` with no structural change (canonical order checks each table is still
//!   sorted); `churn_off` / `churn_on` where the system also despawns one entity in a
//!   hundred and spawns as many (their reused ids arrive below the last index: the
//!   table is re-sorted every frame).
//! - `build_grid_100k`: one frame of `runsync_systems::BuildGrid` alone (the arena's
//!   shared spatial grid: its query, the counting sort, the team blocks; one thread, the
//!   part of an arena frame that does not split over workers) over 100,000 agents spread
//!   over the arena's field, in runtimes of 1 and 2 workers.

#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented pub fns"
)]

mod common;

use bevy_ecs::message::{Message, MessageReader, MessageWriter, Messages};
use bevy_ecs::resource::Resource;
use bevy_ecs::schedule::{IntoScheduleConfigs, Schedule, SingleThreadedExecutor};
use bevy_ecs::system::ResMut;
use common::quick;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use runsync::{Entity, Output, Runtime, World};

const MESSAGES: usize = 10_000;

/// An 8-byte message, the same type for both libraries.
#[derive(Clone, Copy, Debug, Message)]
struct Msg {
    id: u32,
    value: f32,
}

#[derive(Default, Resource)]
struct Sum(f64);

/// A runtime whose first system runs `send` and whose second sums what it reads with
/// `read`.
fn runsync_frame(
    send: impl FnMut(&World, &mut Output) + Send + 'static,
    read: fn(&World) -> f64,
) -> Runtime {
    let mut w = World::new();
    w.register_message::<Msg>();
    let targets: Vec<Entity> = (0..1000).map(|_| w.spawn(())).collect();
    w.insert_resource(targets);
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system(send);
    rt.add_system(move |w: &World, _: &mut Output| {
        std::hint::black_box(read(w));
    });
    rt
}

/// What a reader does with a message.
fn use_msg(m: &Msg) -> f64 {
    f64::from(m.value) + f64::from(m.id)
}

fn sum_broadcast(w: &World) -> f64 {
    w.messages::<Msg>().iter().map(use_msg).sum()
}

fn sum_addressed(w: &World) -> f64 {
    w.addressed_messages::<Msg>()
        .iter()
        .map(|(_, m)| use_msg(m))
        .sum()
}

fn msg(i: usize) -> Msg {
    Msg {
        id: i as u32,
        value: i as f32,
    }
}

fn bevy_world(n: usize) -> (bevy_ecs::world::World, Schedule) {
    let mut w = bevy_ecs::world::World::new();
    w.init_resource::<Messages<Msg>>();
    w.init_resource::<Sum>();
    let mut s = Schedule::default();
    s.set_executor(SingleThreadedExecutor::new());
    let write = move |mut tx: MessageWriter<Msg>| {
        for i in 0..n {
            tx.write(msg(i));
        }
    };
    let read = |mut rx: MessageReader<Msg>, mut sum: ResMut<Sum>| {
        sum.0 += rx.read().map(use_msg).sum::<f64>();
    };
    s.add_systems((write, read).chain());
    (w, s)
}

fn messages_10k(c: &mut Criterion) {
    let mut g = c.benchmark_group("messages_10k");
    g.throughput(Throughput::Elements(MESSAGES as u64));
    g.bench_function("runsync", |b| {
        let mut rt = runsync_frame(
            |_, out| {
                for i in 0..MESSAGES {
                    out.send(msg(i));
                }
            },
            sum_broadcast,
        );
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_sender", |b| {
        let mut rt = runsync_frame(
            |_, out| {
                let mut tx = out.sender::<Msg>();
                for i in 0..MESSAGES {
                    tx.send(msg(i));
                }
            },
            sum_broadcast,
        );
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_send_to", |b| {
        let mut rt = runsync_frame(
            |w, out| {
                let targets = w.resource::<Vec<Entity>>();
                let mut tx = out.sender::<Msg>();
                for i in 0..MESSAGES {
                    tx.send_to(targets[i % targets.len()], msg(i));
                }
            },
            sum_addressed,
        );
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_empty", |b| {
        let mut rt = runsync_frame(|_, _| {}, sum_broadcast);
        b.iter(|| rt.frame())
    });
    g.bench_function("bevy_ecs", |b| {
        let (mut w, mut s) = bevy_world(MESSAGES);
        b.iter(|| {
            s.run(&mut w);
            w.resource_mut::<Messages<Msg>>().update();
        })
    });
    g.bench_function("bevy_ecs_empty", |b| {
        let (mut w, mut s) = bevy_world(0);
        b.iter(|| {
            s.run(&mut w);
            w.resource_mut::<Messages<Msg>>().update();
        })
    });
    g.finish();
}

const TREE: usize = 10_000;

/// A world with the hierarchy and `n` roots, each with `kids` children (`deep`: a chain
/// of `kids` under each root instead).
fn tree_world(n: usize, kids: usize, deep: bool) -> (World, Vec<Entity>) {
    let mut w = World::new();
    w.register_hierarchy();
    let roots: Vec<Entity> = (0..n).map(|_| w.spawn(())).collect();
    for &r in &roots {
        let mut parent = r;
        for _ in 0..kids {
            let e = w.spawn((runsync::ChildOf(parent),));
            if deep {
                parent = e;
            }
        }
    }
    (w, roots)
}

fn despawn_tree_10k(c: &mut Criterion) {
    use criterion::BatchSize;
    let mut g = c.benchmark_group("despawn_tree_10k");
    g.throughput(Throughput::Elements(TREE as u64 + 1));
    for (name, deep) in [("runsync_wide", false), ("runsync_deep", true)] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || tree_world(1, TREE, deep),
                |(mut w, roots)| {
                    w.despawn(roots[0]);
                    w
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.bench_function("runsync_flat", |b| {
        b.iter_batched(
            || {
                let mut w = World::new();
                let es: Vec<Entity> = (0..=TREE).map(|_| w.spawn(())).collect();
                (w, es)
            },
            |(mut w, es)| {
                for e in es {
                    w.despawn(e);
                }
                w
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("bevy_ecs", |b| {
        use bevy_ecs::hierarchy::ChildOf;
        b.iter_batched(
            || {
                let mut w = bevy_ecs::world::World::new();
                let root = w.spawn_empty().id();
                for _ in 0..TREE {
                    w.spawn(ChildOf(root));
                }
                (w, root)
            },
            |(mut w, root)| {
                w.despawn(root);
                w
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn propagate_10k(c: &mut Criterion) {
    use runsync_systems::glam::Vec2;
    use runsync_systems::{GlobalTransform, Position, PropagateTransforms, Transform};
    let build = |kids: usize| {
        let mut w = World::new();
        runsync_systems::register(&mut w);
        w.register_hierarchy();
        for r in 0..1000 {
            let root = w.spawn((
                Position(Vec2::new(r as f32, 0.0)),
                Transform::IDENTITY,
                GlobalTransform::default(),
            ));
            for k in 0..kids {
                w.spawn((
                    Transform::from_translation(Vec2::new(k as f32, 1.0)),
                    GlobalTransform::default(),
                    runsync::ChildOf(root),
                ));
            }
        }
        let mut rt = Runtime::builder().workers(1).build(w);
        rt.add_system(PropagateTransforms::new());
        rt
    };
    let mut g = c.benchmark_group("propagate_10k");
    g.throughput(Throughput::Elements(11_000));
    g.bench_function("runsync", |b| {
        let mut rt = build(10);
        b.iter(|| rt.frame())
    });
    g.bench_function("runsync_roots_only", |b| {
        let mut rt = build(0);
        b.iter(|| rt.frame())
    });
    g.finish();
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32, f32);
impl runsync::Component for Pos {
    type Output = Pos;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Vel(f32, f32);
impl runsync::Component for Vel {
    type Output = Vel;
}

/// 100,000 moving entities, canonical order `on` or off; with `churn`, one in a hundred
/// is despawned and replaced each frame.
fn canonical_runtime(on: bool, churn: bool) -> Runtime {
    let mut w = World::new();
    w.register::<Pos>(runsync::merge::last);
    w.register::<Vel>(runsync::merge::last);
    w.set_canonical_order(on);
    for i in 0..100_000 {
        w.spawn((Pos(i as f32, 0.0), Vel(1.0, 0.5)));
    }
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system(move |w: &World, out: &mut Output| {
        let frame = w.resource::<runsync::Time>().frame;
        for (_, (p, v, mut pos)) in out.query::<(&Pos, &Vel, runsync::Write<Pos>)>() {
            pos.set(Pos(p.0 + v.0 * 0.01, p.1 + v.1 * 0.01));
        }
        if churn {
            let gone = w
                .query::<&Pos>()
                .filter(|(e, _)| u64::from(e.index()) % 100 == frame % 100);
            let gone: Vec<Entity> = gone.map(|(e, _)| e).collect();
            for e in gone {
                out.despawn(e);
                out.spawn((Pos(0.0, 0.0), Vel(1.0, 0.5)));
            }
        }
    });
    rt
}

fn canonical_100k(c: &mut Criterion) {
    let mut g = c.benchmark_group("canonical_100k");
    g.throughput(Throughput::Elements(100_000));
    for (name, on, churn) in [
        ("steady_off", false, false),
        ("steady_on", true, false),
        ("churn_off", false, true),
        ("churn_on", true, true),
    ] {
        let mut rt = canonical_runtime(on, churn);
        for _ in 0..10 {
            rt.frame();
        }
        g.bench_function(name, |b| b.iter(|| rt.frame()));
    }
    g.finish();
}

/// 100,000 agents of four teams, uniformly over a 775 x 775 field (the arena's), and a
/// runtime on `workers` workers with `BuildGrid` as its only system.
fn build_grid_runtime(workers: usize) -> Runtime {
    use runsync_systems::glam::Vec2;
    use runsync_systems::{BuildGrid, Collider, Health, Position, SpatialGrid, Team, Velocity};
    let mut w = World::new();
    runsync_systems::register(&mut w);
    SpatialGrid::register(&mut w);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32
    };
    for i in 0..100_000u32 {
        w.spawn((
            Position(Vec2::new(next() * 775.0, next() * 775.0)),
            Velocity(Vec2::ZERO),
            Collider { radius: 0.5 },
            Team((i % 4) as u8),
            Health::full(10),
        ));
    }
    let mut rt = Runtime::builder().workers(workers).build(w);
    rt.add_system(BuildGrid::default());
    rt
}

fn build_grid_100k(c: &mut Criterion) {
    let mut g = c.benchmark_group("build_grid_100k");
    g.throughput(Throughput::Elements(100_000));
    for workers in [1, 2] {
        let mut rt = build_grid_runtime(workers);
        for _ in 0..3 {
            rt.frame();
        }
        g.bench_function(criterion::BenchmarkId::new("runsync", workers), |b| {
            b.iter(|| rt.frame())
        });
    }
    g.finish();
}

criterion_group! {
    name = structure;
    config = quick();
    targets = messages_10k, despawn_tree_10k, propagate_10k, canonical_100k, build_grid_100k
}
criterion_main!(structure);
