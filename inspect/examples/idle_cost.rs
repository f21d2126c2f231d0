//! Runs the movement frame (10k entities, one worker) N times — bare (`bare`), through an
//! idle inspector (`idle`), with a 60-frame snapshot ring (`ring`), or bare plus a
//! hand-made ring of `snapshot_into` calls (`snapshot`: the reference for the ring's
//! cost) — for counting instructions per frame under callgrind, which a shared, noisy
//! machine cannot disturb (the criterion group `inspector_idle` times the same frames):
//!
//! ```sh
//! cargo build --release -p runsync-inspect --example idle_cost
//! for mode in bare idle ring snapshot; do for n in 200 1200; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/idle_cost $mode $n 2>&1 | grep refs
//! done; done
//! ```
//!
//! (instructions at 1200 frames − at 200) ÷ 1000 = instructions per frame.

use runsync::{Checksum, Checksummer, Component, Output, Runtime, World, Write, merge};
use runsync_inspect::Inspector;

#[derive(Clone, Copy, Debug)]
struct Pos([f32; 3]);
#[derive(Clone, Copy, Debug)]
struct Vel([f32; 3]);
impl Component for Pos {
    type Output = Pos;
}
impl Component for Vel {
    type Output = Vel;
}
impl Checksum for Pos {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h)
    }
}
impl Checksum for Vel {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h)
    }
}

fn movement(_: &World, out: &mut Output) {
    for (_, (p, v, mut pos)) in out.query::<(&Pos, &Vel, Write<Pos>)>() {
        let dt = 1.0 / 60.0;
        pos.set(Pos([
            p.0[0] + v.0[0] * dt,
            p.0[1] + v.0[1] * dt,
            p.0[2] + v.0[2] * dt,
        ]));
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "idle".into());
    let frames: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    w.register::<Vel>(merge::last);
    w.snapshotting::<Pos>().snapshotting::<Vel>();
    w.checksumming::<Pos>().checksumming::<Vel>();
    w.debugging::<Pos>().debugging::<Vel>();
    for i in 0..10_000 {
        w.spawn((Pos([i as f32; 3]), Vel([1.0, 0.0, 0.0])));
    }
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system_named("movement", movement);
    let mut inspector = match mode.as_str() {
        "bare" | "snapshot" => None,
        "idle" => Some(Inspector::bind("127.0.0.1:0").expect("binds loopback")),
        "ring" => Some(
            Inspector::builder()
                .ring(60)
                .bind("127.0.0.1:0")
                .expect("binds loopback"),
        ),
        other => panic!("mode is bare, idle or ring, not {other}"),
    };
    let mut ring: Vec<runsync::RuntimeSnapshot> =
        (0..60).map(|_| runsync::RuntimeSnapshot::new()).collect();
    for f in 0..frames {
        if mode == "snapshot" {
            // What the ring does, by hand: the reference for its cost.
            rt.snapshot_into(&mut ring[f as usize % 60])
                .expect("opted in");
        }
        match &mut inspector {
            Some(i) => i.frame(&mut rt).expect("the frame succeeds"),
            None => rt.frame(),
        }
    }
    assert_eq!(rt.frame_count(), frames);
}
