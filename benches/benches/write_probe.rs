//! A fixed number of frames through one write path, for instruction counts:
//! `valgrind --tool=callgrind --toggle-collect='*write_probe::sys_*' <binary> PATH FRAMES`
//! counts the system's own code (the Run side of each write); without `--toggle-collect`
//! the whole frame (Sync's fold included). `PATH` is one of `plain`, `writer`, `each`,
//! `query` (the 10k movement frame of `runsync_own`'s `movement_10k`; `hecs` its
//! hecs row, in place), `contrib_fn`,
//! `contrib_sum` (the 100k frame of `ecs_suite`'s `contrib_100k_1w`, plain `out.write`,
//! `Vel` merged by a `fn` or by `merge::sum`), `scatter` (100k entities, each writing
//! `Pos` of a pseudo-random other one: every write resolves its target, as in
//! `runsync_own`'s `scatter_100k`). One worker.

#![allow(missing_docs, reason = "a bench binary")]

mod common;

use common::*;
use glam::Vec3;
use runsync::{Output, Runtime, World, Write, merge};

const DT: f32 = 1.0 / 60.0;
const GRAVITY: Vec3 = Vec3::new(0.0, -9.81, 0.0);
const DRAG: f32 = 0.1;
const WIND: Vec3 = Vec3::new(0.5, 0.0, 0.25);

#[inline(never)]
fn sys_plain(w: &World, out: &mut Output) {
    for (e, (p, v)) in w.query::<(&Position, &Velocity)>() {
        out.write::<Position>(e, Position(p.0 + v.0 * DT));
    }
}

#[inline(never)]
fn sys_writer(w: &World, out: &mut Output) {
    let mut wr = out.writer::<Position>();
    for (e, (p, v)) in w.query::<(&Position, &Velocity)>() {
        wr.write(e, Position(p.0 + v.0 * DT));
    }
}

#[inline(never)]
fn sys_each(_: &World, out: &mut Output) {
    out.write_each::<Position, (&Position, &Velocity)>(|_, (p, v)| Position(p.0 + v.0 * DT));
}

#[inline(never)]
fn sys_query(_: &World, out: &mut Output) {
    for (_, (p, v, mut pos)) in out.query::<(&Position, &Velocity, Write<Position>)>() {
        pos.set(Position(p.0 + v.0 * DT));
    }
}

#[inline(never)]
fn sys_gravity(w: &World, out: &mut Output) {
    for (e, (_,)) in w.query::<(&contrib::Vel,)>() {
        out.write::<contrib::Vel>(e, GRAVITY * DT);
    }
}

#[inline(never)]
fn sys_drag(w: &World, out: &mut Output) {
    for (e, (v,)) in w.query::<(&contrib::Vel,)>() {
        out.write::<contrib::Vel>(e, v.0 * (-DRAG * DT));
    }
}

#[inline(never)]
fn sys_wind(w: &World, out: &mut Output) {
    for (e, (_,)) in w.query::<(&contrib::Vel,)>() {
        out.write::<contrib::Vel>(e, WIND * DT);
    }
}

#[inline(never)]
fn sys_integrate(w: &World, out: &mut Output) {
    for (e, (p, v)) in w.query::<(&contrib::Pos, &contrib::Vel)>() {
        out.write::<contrib::Pos>(e, contrib::Pos(p.0 + v.0 * DT));
    }
}

/// The targets of `sys_scatter`: entity `i` writes to `SCATTER[i]`.
static SCATTER: std::sync::OnceLock<Vec<runsync::Entity>> = std::sync::OnceLock::new();

#[inline(never)]
fn sys_scatter(w: &World, out: &mut Output) {
    let targets = SCATTER.get().expect("set by scatter()");
    for ((_, (p,)), &t) in w.query::<(&contrib::Pos,)>().zip(targets) {
        out.write::<contrib::Pos>(t, contrib::Pos(p.0 * 1e-3));
    }
}

/// 100k entities, each writing to a pseudo-random other (splitmix64's finaliser of its
/// index), `Pos` merged by `merge::last`.
fn scatter() -> Runtime {
    const N: usize = 100_000;
    let mut w = World::new();
    w.register::<contrib::Pos>(merge::last);
    let es: Vec<runsync::Entity> = (0..N)
        .map(|i| w.spawn((contrib::Pos(Vec3::splat(i as f32)),)))
        .collect();
    let target = |i: usize| {
        let mut x = (i as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((x ^ (x >> 31)) % N as u64) as usize
    };
    SCATTER.get_or_init(|| (0..N).map(|i| es[target(i)]).collect());
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system(sys_scatter);
    rt
}

fn add_deltas(v: &mut contrib::Vel, deltas: &[Vec3]) {
    for d in deltas {
        v.0 += *d;
    }
}

fn contrib(sum: bool) -> Runtime {
    let mut w = World::new();
    w.register::<contrib::Pos>(merge::last);
    if sum {
        w.register::<contrib::Vel>(merge::sum);
    } else {
        w.register::<contrib::Vel>(add_deltas);
    }
    for i in 0..100_000 {
        let x = i as f32;
        w.spawn((
            contrib::Pos(Vec3::new(x, 0.0, -x)),
            contrib::Vel(Vec3::new(1.0, x * 1e-5, 0.0)),
        ));
    }
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system(sys_gravity);
    rt.add_system(sys_drag);
    rt.add_system(sys_wind);
    rt.add_system(sys_integrate);
    rt
}

fn movement(system: fn(&World, &mut Output)) -> Runtime {
    let mut w = runsync_world();
    for i in 0..10_000 {
        w.spawn((Position(Vec3::splat(i as f32)), Velocity(Vec3::X)));
    }
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system(system);
    rt
}

/// hecs updating the movement data in place (the criterion rows' reference).
#[inline(never)]
fn sys_hecs(w: &mut hecs::World) {
    for (p, v) in w.query_mut::<(&mut Position, &Velocity)>() {
        p.0 += v.0 * DT;
    }
}

fn hecs_movement(frames: usize) {
    let mut w = hecs::World::new();
    w.spawn_batch((0..10_000).map(|i| (Position(Vec3::splat(i as f32)), Velocity(Vec3::X))));
    let t = std::time::Instant::now();
    for _ in 0..frames {
        sys_hecs(&mut w);
    }
    let per = t.elapsed() / frames as u32;
    println!("hecs: {frames} frames, {per:?} a frame");
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let path = args.next().unwrap_or_else(|| "plain".into());
    let frames: usize = args.next().map_or(100, |f| f.parse().expect("FRAMES"));
    if path == "hecs" {
        return hecs_movement(frames);
    }
    let mut rt = match path.as_str() {
        "plain" => movement(sys_plain),
        "writer" => movement(sys_writer),
        "each" => movement(sys_each),
        "query" => movement(sys_query),
        "contrib_fn" => contrib(false),
        "contrib_sum" => contrib(true),
        "scatter" => scatter(),
        _ => panic!("PATH: plain, writer, each, query, hecs, contrib_fn, contrib_sum or scatter"),
    };
    let t = std::time::Instant::now();
    for _ in 0..frames {
        rt.frame();
    }
    let per = t.elapsed() / frames as u32;
    println!("{path}: {frames} frames, {per:?} a frame");
}
