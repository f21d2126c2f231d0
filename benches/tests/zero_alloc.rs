//! A warmed-up frame with a stable entity count performs zero heap allocations, on 1 and 2
//! workers, whichever write path the systems take: plain `Output::write`, a `Writer`,
//! `write_each`, `par_for_each`, several systems writing one sum-merged type, several
//! systems writing one type with a hand-written merge, scattered writes with a closure
//! merge (many: bucketed; few: keyed), and all of them at once; messages, broadcast and
//! addressed; transform propagation down a hierarchy; and a frame of three stages, each
//! writing, with spawns in one stage despawned by the next; and canonical order with rows
//! re-sorted every frame. Each path also gets a runtime
//! of its own, so that the fast path Sync takes for it alone (a single source in query
//! order, a swapped-in column, ...) is the one counted.
//!
//! The same test also checks that snapshotting into a reused snapshot and restoring into
//! a world of the same shape allocate nothing (`World::snapshot_into`, `World::restore`,
//! `Runtime::restore`), and that a frame run through an idle inspector
//! (`runsync_inspect::Inspector::frame`, no client), with and without its snapshot ring,
//! allocates nothing either.
//!
//! This file is one test run by its own `main` (`harness = false` in `Cargo.toml`) because
//! it installs a counting `#[global_allocator]` for its whole process: any other thread
//! would be counted too. That includes libtest's: its main thread allocates when a test
//! runs past 60 seconds (to warn about it), which a loaded 2-core machine reaches, and that
//! failed this test in CI's clone with "2 heap allocations" that were the harness's.
//!
//! Set `RUNSYNC_ALLOC_BACKTRACE=1` to print a backtrace for every allocation made while
//! counting, which names the allocation site when this test fails.

use std::alloc::{GlobalAlloc, Layout, System as SystemAlloc};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use runsync::prelude::*;

/// Counts allocations (not frees) while `COUNTING` is set, on every thread.
struct CountingAlloc;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static BACKTRACES: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Set while this thread prints a backtrace, whose own allocations are not counted.
    static REPORTING: Cell<bool> = const { Cell::new(false) };
}

impl CountingAlloc {
    fn record(&self) {
        if !COUNTING.load(Ordering::Relaxed) {
            return;
        }
        let reentrant = REPORTING.with(|r| r.replace(true));
        if reentrant {
            return;
        }
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        if BACKTRACES.load(Ordering::Relaxed) {
            eprintln!(
                "allocation during a steady-state frame:\n{}",
                std::backtrace::Backtrace::force_capture()
            );
        }
        REPORTING.with(|r| r.set(false));
    }
}

// SAFETY: every method forwards to the system allocator with the caller's arguments; the
// counting around it touches only atomics and a thread-local flag, never the heap.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.record();
        // SAFETY: forwarded with the caller's layout, which meets `alloc`'s contract.
        unsafe { SystemAlloc.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.record();
        // SAFETY: as for `alloc`.
        unsafe { SystemAlloc.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, which got it from `SystemAlloc`.
        unsafe { SystemAlloc.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.record();
        // SAFETY: `ptr` came from `SystemAlloc` with `layout`; the caller upholds the rest.
        unsafe { SystemAlloc.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32, f32);
impl Component for Pos {
    type Output = Pos;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Vel(f32, f32);
impl Component for Vel {
    type Output = Vel;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Heading(f32);
impl Component for Heading {
    type Output = Heading;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Health(i32);
impl Component for Health {
    type Output = i32;
}

/// A sum-merged push: systems emit deltas.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Push(f32);
impl Component for Push {
    type Output = f32;
}
impl std::ops::AddAssign<f32> for Push {
    fn add_assign(&mut self, delta: f32) {
        self.0 += delta;
    }
}

/// Entities of the one-path runtimes: more than `write_each` puts in one part (16 Ki
/// rows), so that on 2 workers it fills a table in parallel parts.
const ONE_PATH_ENTITIES: usize = 20_000;

/// A world of `ONE_PATH_ENTITIES` entities with every component.
fn one_path_world() -> World {
    let mut world = World::new();
    world.register::<Pos>(merge::last);
    world.register::<Vel>(merge::last);
    world.register::<Push>(merge::sum);
    for i in 0..ONE_PATH_ENTITIES {
        let x = i as f32;
        world.spawn((Pos(x, 0.0), Vel(1.0, 0.5), Push(0.0)));
    }
    world
}

fn query_row_writes(workers: usize) -> Runtime {
    let mut rt = Runtime::builder().workers(workers).build(one_path_world());
    // Every row of a last-wins type (a whole column, swapped in), and conditional writes
    // of a sum-merged type (runs), mixed with a plain write of it after the loop.
    rt.add_system(|_: &World, out: &mut Output| {
        for (e, (p, v, mut pos, mut push)) in out.query::<(&Pos, &Vel, Write<Pos>, Write<Push>)>() {
            pos.set(Pos(p.0 + v.0, p.1 + v.1));
            if e.index() % 3 == 0 {
                push.set(v.0);
            }
        }
        let first = out.world().query::<(&Push,)>().next().map(|(e, _)| e);
        if let Some(e) = first {
            out.write::<Push>(e, 1.0);
        }
    });
    rt
}

fn plain_write(workers: usize) -> Runtime {
    let mut rt = Runtime::builder().workers(workers).build(one_path_world());
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, (p, v)) in w.query::<(&Pos, &Vel)>() {
            out.write::<Pos>(e, Pos(p.0 + v.0, p.1 + v.1));
        }
    });
    rt
}

fn writer(workers: usize) -> Runtime {
    let mut rt = Runtime::builder().workers(workers).build(one_path_world());
    rt.add_system(|w: &World, out: &mut Output| {
        let mut pos = out.writer::<Pos>();
        for (e, (p, v)) in w.query::<(&Pos, &Vel)>() {
            pos.write(e, Pos(p.0 + v.0, p.1 + v.1));
        }
    });
    rt
}

fn write_each(workers: usize) -> Runtime {
    let mut rt = Runtime::builder().workers(workers).build(one_path_world());
    // A last-wins type written by this system alone (its columns are swapped in) and a
    // sum-merged one (its outputs merge like `write`'s).
    rt.add_system(|_: &World, out: &mut Output| {
        out.write_each::<Pos, (&Pos, &Vel)>(|_, (p, v)| Pos(p.0 + v.0, p.1 + v.1));
        out.write_each::<Push, (&Vel,)>(|_, (v,)| v.0 - v.1);
    });
    rt
}

fn par_for_each(workers: usize) -> Runtime {
    let mut rt = Runtime::builder().workers(workers).build(one_path_world());
    rt.add_system(|_: &World, out: &mut Output| {
        out.par_for_each::<(&Pos, &Vel)>(|e, (p, v), out| {
            out.write::<Pos>(e, Pos(p.0 + v.0, p.1 + v.1));
        });
    });
    rt
}

fn sum_of_several(workers: usize) -> Runtime {
    let mut rt = Runtime::builder().workers(workers).build(one_path_world());
    // Three systems add to every entity's `Push`; a fourth integrates `Pos` from it.
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, _) in w.query::<(&Push,)>() {
            out.write::<Push>(e, -0.5);
        }
    });
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, (p,)) in w.query::<(&Push,)>() {
            out.write::<Push>(e, -0.1 * p.0);
        }
    });
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, (v,)) in w.query::<(&Vel,)>() {
            out.write::<Push>(e, v.0 * 0.01);
        }
    });
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, (p, push)) in w.query::<(&Pos, &Push)>() {
            out.write::<Pos>(e, Pos(p.0 + push.0, p.1));
        }
    });
    rt
}

/// A hand-written merge over several ordered sources (the sweep path; five systems, 80k
/// outputs, so that on 2 workers it splits by row range).
fn fn_merge_of_several(workers: usize) -> Runtime {
    let mut world = one_path_world();
    world.register::<Health>(|h: &mut Health, d: &[i32]| h.0 += d.iter().sum::<i32>());
    let all: Vec<Entity> = world.query::<(&Pos,)>().map(|(e, _)| e).collect();
    for e in all {
        world.insert(e, Health(100));
    }
    let mut rt = Runtime::builder().workers(workers).build(world);
    for k in 0..5 {
        rt.add_system(move |w: &World, out: &mut Output| {
            for (e, (h,)) in w.query::<(&Health,)>() {
                if (h.0 + k).rem_euclid(5) != 0 {
                    out.write::<Health>(e, k - 1);
                }
            }
        });
    }
    rt
}

/// Scattered writes with a closure merge: each entity adds four deltas to pseudo-random
/// others (the bucket path); with `every` > 1 only every `every`-th entity writes one
/// (few outputs to many rows: the keyed path).
fn scattered(workers: usize) -> Runtime {
    scattered_every(workers, 1)
}

fn scattered_sparse(workers: usize) -> Runtime {
    scattered_every(workers, 16)
}

fn scattered_every(workers: usize, every: usize) -> Runtime {
    let mut world = World::new();
    world.register::<Health>(|h: &mut Health, d: &[i32]| {
        for x in d {
            h.0 = h.0.wrapping_mul(3).wrapping_add(*x);
        }
    });
    let all: Vec<Entity> = (0..ONE_PATH_ENTITIES)
        .map(|i| world.spawn((Health(i as i32),)))
        .collect();
    let targets: Vec<Entity> = (0..4 * ONE_PATH_ENTITIES)
        .map(|i| all[(i * 7919 + i / 3) % ONE_PATH_ENTITIES])
        .collect();
    let mut rt = Runtime::builder().workers(workers).build(world);
    rt.add_system(move |w: &World, out: &mut Output| {
        let writes = if every == 1 { 4 } else { 1 };
        let rows = w
            .query::<(&Health,)>()
            .zip(targets.chunks(4))
            .step_by(every);
        for ((_, (h,)), t) in rows {
            for &t in &t[..writes] {
                out.write::<Health>(t, h.0 & 7);
            }
        }
    });
    rt
}

/// Every path at once, over two archetypes, with two sources for `Pos` and `Health`.
fn mixed(workers: usize) -> Runtime {
    let mut world = World::new();
    world.register::<Pos>(merge::last);
    world.register::<Vel>(merge::last);
    world.register::<Heading>(merge::last);
    world.register::<Health>(|h: &mut Health, d: &[i32]| h.0 += d.iter().sum::<i32>());
    for i in 0..5_000 {
        let x = i as f32;
        world.spawn((Pos(x, 0.0), Vel(1.0, 0.5), Heading(0.0), Health(100)));
        if i % 3 == 0 {
            world.spawn((Pos(x, 1.0), Health(50)));
        }
    }
    let mut rt = Runtime::builder().workers(workers).build(world);
    // Last-wins writes from one system, through a writer.
    rt.add_system(|w: &World, out: &mut Output| {
        let dt = w.resource::<Time>().dt;
        let mut pos = out.writer::<Pos>();
        for (e, (p, v)) in w.query::<(&Pos, &Vel)>() {
            pos.write(e, Pos(p.0 + v.0 * dt, p.1 + v.1 * dt));
        }
    });
    // Sum-merged deltas from two systems, one of which also writes `Pos` (two sources).
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, (h,)) in w.query::<(&Health,)>() {
            out.write::<Health>(e, if h.0 > 0 { -1 } else { 1 });
        }
    });
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, (p, _)) in w.query::<(&Pos, Without<Vel>)>() {
            out.write::<Health>(e, 1);
            out.write::<Pos>(e, Pos(p.0, p.1 + 1.0));
        }
    });
    // A parallel iteration inside one system.
    rt.add_system(|_: &World, out: &mut Output| {
        out.par_for_each::<(&Vel,)>(|e, (v,), out| out.write::<Vel>(e, Vel(v.1, v.0)));
    });
    // Whole-column writes, swapped in by Sync.
    rt.add_system(|_: &World, out: &mut Output| {
        out.write_each::<Heading, (&Heading, &Vel)>(|_, (h, v)| Heading(h.0 + v.1.atan2(v.0)));
    });
    rt
}

/// Messages: two systems broadcast (one from `par_for_each` chunks), one sends to
/// entities, and a reader writes what it read.
fn messages(workers: usize) -> Runtime {
    let mut world = one_path_world();
    world.register_message::<u32>();
    world.register_message::<f32>();
    let mut rt = Runtime::builder().workers(workers).build(world);
    rt.add_system(|w: &World, out: &mut Output| {
        let mut tx = out.sender::<u32>();
        for (e, _) in w.query::<(&Pos,)>() {
            if e.index() % 4 == 0 {
                tx.send(e.index());
            }
        }
    });
    rt.add_system(|_: &World, out: &mut Output| {
        out.par_for_each::<(&Vel,)>(|e, (v,), out| {
            if e.index() % 5 == 0 {
                out.send(e.index() + v.0 as u32);
            }
        });
    });
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, (p,)) in w.query::<(&Pos,)>() {
            if e.index() % 3 == 0 {
                out.send_to(e, p.0);
            }
        }
    });
    rt.add_system(|w: &World, out: &mut Output| {
        let n = w.messages::<u32>().len() as f32;
        for (e, _) in w.query::<(&Push,)>() {
            let hits: f32 = w.messages_for::<f32>(e).sum();
            out.write::<Push>(e, n * 1e-6 + hits * 1e-9);
        }
    });
    rt
}

/// A hierarchy: `PropagateTransforms` over 2,000 moving roots with three children each
/// (one with a child of its own).
fn hierarchy(workers: usize) -> Runtime {
    use runsync_systems::glam::Vec2;
    use runsync_systems::{Displace, GlobalTransform, Position, PropagateTransforms, Transform};
    let mut world = World::new();
    runsync_systems::register(&mut world);
    world.register_hierarchy();
    for r in 0..2_000 {
        let root = world.spawn((
            Position(Vec2::new(r as f32, 0.0)),
            Transform::IDENTITY,
            GlobalTransform::default(),
        ));
        for k in 0..3 {
            let child = world.spawn((
                Transform::from_translation(Vec2::new(k as f32, 1.0)),
                GlobalTransform::default(),
                ChildOf(root),
            ));
            if k == 0 {
                world.spawn((
                    Transform::IDENTITY,
                    GlobalTransform::default(),
                    ChildOf(child),
                ));
            }
        }
    }
    let mut rt = Runtime::builder().workers(workers).build(world);
    rt.add_system(PropagateTransforms::new());
    rt.add_system(|_: &World, out: &mut Output| {
        out.par_for_each::<(Write<Position>,)>(|_, (mut pos,), _| pos.set(Displace(Vec2::X)));
    });
    rt
}

/// Three stages, each writing: movement (a writer), then two systems reading the moved
/// positions and adding to a sum-merged type (one also spawning short-lived entities),
/// then a stage that writes again and despawns what the stage before spawned. Stable
/// entity count; every stage merges.
fn stages(workers: usize) -> Runtime {
    let mut world = World::new();
    world.register::<Pos>(merge::last);
    world.register::<Vel>(merge::last);
    world.register::<Health>(|h: &mut Health, d: &[i32]| h.0 += d.iter().sum::<i32>());
    world.register::<Heading>(merge::last);
    for i in 0..5_000 {
        world.spawn((Pos(i as f32, 0.0), Vel(1.0, 0.5), Health(100)));
    }
    let mut rt = Runtime::builder()
        .workers(workers)
        .stages(["move", "hit", "clean"])
        .build(world);
    let (hit, clean) = (rt.stage_id("hit").unwrap(), rt.stage_id("clean").unwrap());
    rt.add_system(|w: &World, out: &mut Output| {
        let dt = w.resource::<Time>().dt;
        let mut pos = out.writer::<Pos>();
        for (e, (p, v)) in w.query::<(&Pos, &Vel)>() {
            pos.write(e, Pos(p.0 + v.0 * dt, p.1 + v.1 * dt));
        }
    });
    rt.add_system_to(hit, |w: &World, out: &mut Output| {
        for (e, (p, _)) in w.query::<(&Pos, &Health)>() {
            out.write::<Health>(e, if p.0 > 100.0 { -1 } else { 1 });
        }
        for i in 0..8 {
            out.spawn((Heading(i as f32),));
        }
    });
    rt.add_system_to(hit, |_: &World, out: &mut Output| {
        out.par_for_each::<(&Health,)>(|e, (h,), out| out.write::<Health>(e, h.0 & 1));
    });
    rt.add_system_to(clean, |w: &World, out: &mut Output| {
        for (e, (h,)) in w.query::<(&Heading,)>() {
            out.write::<Heading>(e, Heading(h.0 + 1.0));
            out.despawn(e);
        }
    });
    rt
}

/// Canonical order (`World::set_canonical_order`) with rows re-sorted every frame: each
/// frame despawns one entity in fifty and spawns as many, whose reused ids arrive below
/// the table's last index; every row is written (marks to move with the rows).
fn canonical(workers: usize) -> Runtime {
    let mut world = World::new();
    world.register::<Pos>(merge::last);
    world.register::<Vel>(merge::last);
    world.register::<Health>(|h: &mut Health, d: &[i32]| h.0 += d.iter().sum::<i32>());
    world.set_canonical_order(true);
    for i in 0..5_000 {
        world.spawn((Pos(i as f32, 0.0), Vel(1.0, 0.5), Health(100)));
    }
    let mut rt = Runtime::builder().workers(workers).build(world);
    rt.add_system(|w: &World, out: &mut Output| {
        let frame = w.resource::<Time>().frame;
        for (e, (p, h)) in w.query::<(&Pos, &Health)>() {
            out.write::<Health>(e, if p.0 > 100.0 { -1 } else { 1 } + h.0 % 2);
            if u64::from(e.index()) % 50 == frame % 50 {
                out.despawn(e);
                out.spawn((Pos(p.1, p.0), Vel(0.5, 1.0), Health(h.0)));
            }
        }
    });
    rt
}

/// Builds a scenario's runtime on the given number of workers.
/// Marker types that split the world into many small tables.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tag<const N: u8>;
impl<const N: u8> Component for Tag<N> {
    type Output = Tag<N>;
}

/// Row writes over a fragmented world: 31 tables of 5 to 35 rows (every non-empty
/// combination of five marker types), written partly, over several blocks of small
/// tables, and a big table beside them.
fn fragmented_row_writes(workers: usize) -> Runtime {
    let mut world = World::new();
    world.register::<Pos>(merge::last);
    world.register::<Tag<0>>(merge::last);
    world.register::<Tag<1>>(merge::last);
    world.register::<Tag<2>>(merge::last);
    world.register::<Tag<3>>(merge::last);
    world.register::<Tag<4>>(merge::last);
    for combo in 1u8..32 {
        for i in 0..5 + usize::from(combo) {
            let e = world.spawn((Pos(i as f32, f32::from(combo)),));
            let has = |bit: u8| combo & (1 << bit) != 0;
            // (Inserted one by one: a bundle's types are fixed at compile time.)
            has(0).then(|| world.insert(e, Tag::<0>));
            has(1).then(|| world.insert(e, Tag::<1>));
            has(2).then(|| world.insert(e, Tag::<2>));
            has(3).then(|| world.insert(e, Tag::<3>));
            has(4).then(|| world.insert(e, Tag::<4>));
        }
    }
    for i in 0..500 {
        world.spawn((Pos(i as f32, -1.0),));
    }
    let mut rt = Runtime::builder().workers(workers).build(world);
    rt.add_system(|_: &World, out: &mut Output| {
        for (e, (p, mut pos)) in out.query::<(&Pos, Write<Pos>)>() {
            if e.index() % 4 != 1 {
                pos.set(Pos(p.0 + 1.0, p.1));
            }
        }
    });
    rt
}

type BuildRuntime = fn(usize) -> Runtime;

fn main() {
    steady_state_frame_does_not_allocate();
    println!("zero_alloc: every steady-state frame allocated nothing");
}

fn steady_state_frame_does_not_allocate() {
    BACKTRACES.store(
        std::env::var_os("RUNSYNC_ALLOC_BACKTRACE").is_some(),
        Ordering::Relaxed,
    );
    let scenarios: [(&str, BuildRuntime, usize); 15] = [
        ("row writes (Output::query)", query_row_writes, 100),
        (
            "row writes over many small tables",
            fragmented_row_writes,
            100,
        ),
        ("plain write", plain_write, 100),
        ("writer", writer, 100),
        ("write_each", write_each, 100),
        ("par_for_each", par_for_each, 100),
        (
            "several systems writing one sum-merged type",
            sum_of_several,
            100,
        ),
        (
            "a hand-written merge over several systems (swept)",
            fn_merge_of_several,
            100,
        ),
        (
            "scattered writes with a closure merge (bucketed)",
            scattered,
            100,
        ),
        (
            "few scattered writes with a closure merge (keyed)",
            scattered_sparse,
            100,
        ),
        ("every path mixed", mixed, 300),
        (
            "messages (broadcast, par_for_each, addressed)",
            messages,
            100,
        ),
        ("hierarchy: PropagateTransforms", hierarchy, 100),
        (
            "three stages, each writing, with spawns and despawns",
            stages,
            100,
        ),
        (
            "canonical order, rows re-sorted every frame",
            canonical,
            100,
        ),
    ];
    for (scenario, build, frames) in scenarios {
        for workers in [1, 2] {
            steady_state(scenario, build(workers), workers, frames);
        }
    }
    snapshot_and_restore_reuse_memory();
    inspector_frames_do_not_allocate();
}

/// Frames through an idle inspector (no client connected): its timeline records and ring
/// snapshots reuse their memory once they have wrapped around.
fn inspector_frames_do_not_allocate() {
    for ring in [0, 8] {
        let mut rt = query_row_writes(2);
        rt.world_mut()
            .snapshotting::<Pos>()
            .snapshotting::<Vel>()
            .snapshotting::<Push>();
        let mut inspector = runsync_inspect::Inspector::builder()
            .ring(ring)
            .timeline(16)
            .bind("127.0.0.1:0")
            .expect("binds loopback");
        for _ in 0..40 {
            inspector.frame(&mut rt).unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        for _ in 0..20 {
            inspector.frame(&mut rt).unwrap();
        }
        let n = count(|| {
            for _ in 0..100 {
                inspector.frame(&mut rt).unwrap();
            }
        });
        assert_eq!(
            n, 0,
            "{n} allocations in 100 frames through an idle inspector (ring {ring}); rerun \
             with RUNSYNC_ALLOC_BACKTRACE=1 to see where"
        );
    }
}

/// Counts the allocations of `f`.
fn count(f: impl FnOnce()) -> usize {
    ALLOCATIONS.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::SeqCst);
    f();
    COUNTING.store(false, Ordering::SeqCst);
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Snapshot into a reused snapshot, and restore into a world of the snapshot's shape
/// (same tables; column capacity for the rows), allocate nothing: both `clone_from`.
fn snapshot_and_restore_reuse_memory() {
    let mut world = one_path_world();
    world.register::<Heading>(merge::last);
    world
        .snapshotting::<Pos>()
        .snapshotting::<Vel>()
        .snapshotting::<Push>()
        .snapshotting::<Heading>();
    let some: Vec<Entity> = world
        .query::<(&Pos,)>()
        .map(|(e, _)| e)
        .step_by(7)
        .collect();
    for &e in &some[..100] {
        world.insert(e, Heading(1.0));
    }
    let mut snap = Snapshot::new();
    world.snapshot_into(&mut snap).unwrap();
    let n = count(|| world.snapshot_into(&mut snap).unwrap());
    assert_eq!(n, 0, "{n} allocations in a snapshot_into a reused snapshot");
    // Change values, move and despawn entities: the same tables, fewer rows.
    for &e in &some[100..] {
        world.get_mut::<Pos>(e).unwrap().0 = -1.0;
    }
    for &e in &some[200..400] {
        world.despawn(e);
    }
    let n = count(|| world.restore(&snap));
    assert_eq!(n, 0, "{n} allocations in a same-shape restore");
    assert_eq!(world.len(), ONE_PATH_ENTITIES);

    // The runtime: frames in between, then restore; and again.
    let mut rt = sum_of_several(2);
    rt.world_mut()
        .snapshotting::<Pos>()
        .snapshotting::<Vel>()
        .snapshotting::<Push>();
    let mut saved = runsync::RuntimeSnapshot::new();
    // One frame first: the ids reserved for each system's spawns (world state) appear
    // at the first frame, so a snapshot taken before it has another shape.
    rt.frame();
    rt.snapshot_into(&mut saved).unwrap();
    for _ in 0..5 {
        rt.frame();
    }
    rt.restore(&saved);
    for _ in 0..5 {
        rt.frame();
    }
    let n = count(|| {
        rt.snapshot_into(&mut saved).unwrap();
        rt.restore(&saved);
    });
    assert_eq!(n, 0, "{n} allocations in a runtime snapshot_into + restore");
}

/// Warms `rt` up, then counts the allocations of `frames` frames: there must be none.
fn steady_state(scenario: &str, mut rt: Runtime, workers: usize, frames: usize) {
    // Warm up: buffers, scratch and the pool reach their steady-state capacity. The
    // pause lets idle workers park once: parking_lot sets up its per-thread data (a
    // one-time allocation) on a thread's first park.
    for _ in 0..20 {
        rt.frame();
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    for _ in 0..20 {
        rt.frame();
    }
    let entities = rt.world().len();
    ALLOCATIONS.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::SeqCst);
    for _ in 0..frames {
        rt.frame();
    }
    COUNTING.store(false, Ordering::SeqCst);
    let allocations = ALLOCATIONS.load(Ordering::Relaxed);
    assert_eq!(
        rt.world().len(),
        entities,
        "the entity count must be stable"
    );
    assert!(
        rt.stats().merged > 0,
        "{scenario}: the frames must merge outputs"
    );
    assert_eq!(
        allocations, 0,
        "{scenario}: {allocations} heap allocations in {frames} steady-state frames \
         with {workers} worker(s); rerun with RUNSYNC_ALLOC_BACKTRACE=1 to see where"
    );
}
