//! What the live inspector (`runsync-inspect`) costs a game that nobody is inspecting.
//!
//! The movement frame (one system, `Pos += Vel * dt` through row writes, one worker) at
//! 10k and 100k entities, run three ways in the same run:
//!
//! - `frame`: `Runtime::frame`, no inspector;
//! - `inspector_idle`: `Inspector::frame` with the server running and no client (an
//!   empty-channel check and a timeline record per frame) — the number the inspector
//!   promises is "nothing measurable";
//! - `inspector_ring_60`: the same with a 60-frame snapshot ring (a `snapshot_into` and a
//!   `World::checksum` per frame), the opt-in cost of rewinding.

#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented pub fns"
)]

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use glam::Vec3;
use runsync::{Checksum, Checksummer, Component, Output, Runtime, World, Write, merge};
use runsync_inspect::Inspector;

const DT: f32 = 1.0 / 60.0;

#[derive(Clone, Copy, Debug)]
struct Pos(Vec3);
#[derive(Clone, Copy, Debug)]
struct Vel(Vec3);
impl Component for Pos {
    type Output = Pos;
}
impl Component for Vel {
    type Output = Vel;
}
impl Checksum for Pos {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.to_array().checksum(h)
    }
}
impl Checksum for Vel {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.to_array().checksum(h)
    }
}

fn movement(_: &World, out: &mut Output) {
    for (_, (p, v, mut pos)) in out.query::<(&Pos, &Vel, Write<Pos>)>() {
        pos.set(Pos(p.0 + v.0 * DT));
    }
}

/// The movement runtime, every type opted into snapshots, checksums and `Debug` text as a
/// game that uses the inspector would.
fn runtime(n: usize) -> Runtime {
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    w.register::<Vel>(merge::last);
    w.snapshotting::<Pos>().snapshotting::<Vel>();
    w.checksumming::<Pos>().checksumming::<Vel>();
    w.debugging::<Pos>().debugging::<Vel>();
    for i in 0..n {
        w.spawn((Pos(Vec3::splat(i as f32)), Vel(Vec3::X)));
    }
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system_named("movement", movement);
    rt
}

fn inspector_idle(c: &mut Criterion) {
    let mut g = c.benchmark_group("inspector_idle");
    for n in [10_000, 100_000] {
        let mut rt = runtime(n);
        g.bench_with_input(BenchmarkId::new("frame", n), &n, |b, _| {
            b.iter(|| rt.frame())
        });
        let mut rt = runtime(n);
        let mut inspector = Inspector::bind("127.0.0.1:0").expect("binds loopback");
        g.bench_with_input(BenchmarkId::new("inspector_idle", n), &n, |b, _| {
            b.iter(|| inspector.frame(&mut rt).expect("the frame succeeds"))
        });
        drop(inspector);
        let mut rt = runtime(n);
        let mut inspector = Inspector::builder()
            .ring(60)
            .bind("127.0.0.1:0")
            .expect("binds loopback");
        g.bench_with_input(BenchmarkId::new("inspector_ring_60", n), &n, |b, _| {
            b.iter(|| inspector.frame(&mut rt).expect("the frame succeeds"))
        });
    }
    g.finish();
}

criterion_group!(benches, inspector_idle);
criterion_main!(benches);
