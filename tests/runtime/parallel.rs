//! A system's own parallel loops (`Output::parallel`, `Output::par_reduce`): the same bits
//! at every worker count (CI runs this file with `single-threaded` too), and a panic in a
//! job fails the frame like a panic in the system.

use runsync::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Mass(f32);
impl Component for Mass {
    type Output = f32;
}
impl std::ops::AddAssign<f32> for Mass {
    fn add_assign(&mut self, d: f32) {
        self.0 += d;
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Heavy;
impl Component for Heavy {
    type Output = Heavy;
}

/// Masses whose float sum depends on the order of the additions.
fn world(n: usize) -> World {
    let mut w = World::new();
    w.register::<Mass>(merge::sum);
    w.register::<Heavy>(merge::last);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let m = Mass((x % 1_000_000) as f32 * 1e-3 + 1e-7 * i as f32);
        if i % 7 == 0 {
            w.spawn((m, Heavy));
        } else {
            w.spawn((m,));
        }
    }
    w
}

/// Per frame: the parallel sum of every mass, the same through `par_reduce` and through
/// `parallel().chunks_mut` over a gathered vector, and every entity's mass nudged by the
/// sum so that the next frame depends on it.
fn run(workers: usize) -> Vec<(u32, u64)> {
    let mut rt = Runtime::builder().workers(workers).build(world(30_000));
    rt.add_system(|w: &World, out: &mut Output| {
        let (sum, n) = out.par_reduce::<(&Mass,), (f32, u64)>(
            || (0.0, 0),
            |acc, _, (m,)| {
                acc.0 += m.0;
                acc.1 += 1;
            },
            |acc, part| {
                acc.0 += part.0;
                acc.1 += part.1;
            },
        );
        let mut masses: Vec<f32> = w.query::<(&Mass,)>().map(|(_, (m,))| m.0).collect();
        let mut sums = vec![0.0f32; masses.len().div_ceil(4096)];
        let sums_cell: Vec<std::sync::Mutex<f32>> =
            sums.iter().map(|_| std::sync::Mutex::new(0.0)).collect();
        out.parallel().chunks_mut(&mut masses, 4096, |k, chunk| {
            *sums_cell[k].lock().unwrap() = chunk.iter().sum();
        });
        for (s, c) in sums.iter_mut().zip(&sums_cell) {
            *s = *c.lock().unwrap();
        }
        let chunked: f32 = sums.iter().sum();
        let nudge = (sum + chunked) * 1e-9;
        out.par_for_each::<(&Mass,)>(|e, _, out| out.write::<Mass>(e, nudge));
        out.write::<Mass>(w.query::<(&Mass,)>().next().unwrap().0, n as f32 * 1e-6);
    });
    (0..5)
        .map(|_| {
            rt.frame();
            let total: f32 = rt.world().query::<(&Mass,)>().map(|(_, (m,))| m.0).sum();
            (total.to_bits(), rt.world().checksum())
        })
        .collect()
}

#[test]
fn par_reduce_and_parallel_loops_give_the_same_bits_at_any_worker_count() {
    let one = run(1);
    for workers in [2, 3, 8] {
        assert_eq!(run(workers), one, "{workers} workers");
    }
    // The parallel sum is not the sequential one (which is why the parts are fixed).
    let w = world(30_000);
    let sequential: f32 = w.query::<(&Mass,)>().map(|(_, (m,))| m.0).sum();
    let mut rt = Runtime::builder().workers(2).build(w);
    let got = std::sync::Arc::new(std::sync::Mutex::new(0.0f32));
    let g = got.clone();
    rt.add_system(move |_: &World, out: &mut Output| {
        *g.lock().unwrap() =
            out.par_reduce::<(&Mass,), f32>(|| 0.0, |a, _, (m,)| *a += m.0, |a, p| *a += p);
    });
    rt.frame();
    let got = *got.lock().unwrap();
    assert!(
        (got - sequential).abs() <= sequential * 1e-4,
        "{got} vs {sequential}"
    );
}

#[test]
fn par_reduce_over_nothing_is_the_identity_and_filters_apply() {
    let mut w = world(0);
    let mut rt = Runtime::builder().workers(2).build(std::mem::take(&mut w));
    rt.add_system(|_: &World, out: &mut Output| {
        let n = out.par_reduce::<(&Mass,), u32>(|| 7, |a, _, _| *a += 1, |a, p| *a += p);
        assert_eq!(n, 7);
    });
    rt.frame();
    let mut rt = Runtime::builder().workers(2).build(world(10_000));
    rt.add_system(|_: &World, out: &mut Output| {
        let heavy =
            out.par_reduce::<(&Mass, With<Heavy>), usize>(|| 0, |a, _, _| *a += 1, |a, p| *a += p);
        assert_eq!(heavy, 10_000usize.div_ceil(7));
    });
    rt.frame();
}

#[test]
fn a_panicking_job_fails_the_frame_and_the_world_stays() {
    for workers in [1, 2] {
        let mut rt = Runtime::builder().workers(workers).build(world(5_000));
        let sum = rt.world().checksum();
        rt.add_system_named("loops", |_: &World, out: &mut Output| {
            out.parallel().for_each(64, |i| {
                if i == 33 {
                    panic!("job 33 failed")
                }
            });
        });
        let err = rt.try_frame().unwrap_err();
        assert!(
            matches!(&err, FrameError::SystemPanicked { name, message, .. }
                if &**name == "loops" && message == "job 33 failed"),
            "{err:?}"
        );
        assert_eq!(rt.world().checksum(), sum);
    }
}
