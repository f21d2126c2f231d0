//! A movement frame: one system writes `Position` from `Velocity` for every entity.
//! Prints the median Run and Sync time reported by `Runtime::stats()`.
//!
//! ```sh
//! cargo run --release --example movement -- [entities] [workers] [frames]
//! ```

use std::time::Duration;

use runsync::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Position([f32; 3]);
impl Component for Position {
    type Output = Position;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Velocity([f32; 3]);
impl Component for Velocity {
    type Output = Velocity;
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| {
        a.parse::<usize>()
            .unwrap_or_else(|_| panic!("expected a number, got {a:?}"))
    });
    let entities = args.next().unwrap_or(1_000_000);
    let workers = args.next().unwrap_or(0);
    let frames = args.next().unwrap_or(30).max(1);

    let mut world = World::new();
    world.register::<Position>(merge::last);
    world.register::<Velocity>(merge::last);
    for i in 0..entities {
        let f = i as f32;
        world.spawn((Position([f, 0.0, 0.0]), Velocity([1.0, 0.5, f * 1e-6])));
    }
    let mut rt = Runtime::builder().workers(workers).build(world);
    rt.add_system_named("movement", |world: &World, out: &mut Output| {
        let dt = world.resource::<Time>().dt;
        let mut w = out.writer::<Position>();
        for (e, (p, v)) in world.query::<(&Position, &Velocity)>() {
            w.write(
                e,
                Position([
                    p.0[0] + v.0[0] * dt,
                    p.0[1] + v.0[1] * dt,
                    p.0[2] + v.0[2] * dt,
                ]),
            );
        }
    });
    rt.frame(); // warm-up: buffers reach their steady size
    let (mut run, mut sync) = (Vec::new(), Vec::new());
    for _ in 0..frames {
        rt.frame();
        run.push(rt.stats().run);
        sync.push(rt.stats().sync);
    }
    let (r, s) = (median(run), median(sync));
    println!(
        "{entities} entities, {} worker(s), {frames} frames: Run {:.2} ms, Sync {:.2} ms, frame {:.2} ms (medians)",
        rt.workers(),
        r.as_secs_f64() * 1e3,
        s.as_secs_f64() * 1e3,
        (r + s).as_secs_f64() * 1e3,
    );
}
