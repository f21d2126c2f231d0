//! Builds and runs frames with the `tracy` feature (zones, plots and frame marks are
//! emitted; no profiler needs to be connected). Run with
//! `cargo test -p runsync --features tracy --test diagnostics`.
#![cfg(feature = "tracy")]

use runsync::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
impl Component for Pos {
    type Output = f32;
}

#[test]
fn frames_run_with_tracy_zones() {
    let mut world = World::new();
    world.register::<Pos>(|p: &mut Pos, d: &[f32]| p.0 += d.iter().sum::<f32>());
    for i in 0..1000 {
        world.spawn((Pos(i as f32),));
    }
    let mut rt = Runtime::builder().workers(2).build(world);
    rt.add_system_named("Move", |world: &World, out: &mut Output| {
        for (e, (_,)) in world.query::<(&Pos,)>() {
            out.write::<Pos>(e, 1.0);
        }
    });
    rt.add_system_named("Spawn", |_: &World, out: &mut Output| {
        out.spawn((Pos(0.0),));
    });
    let mut calls = 0;
    rt.add_system_named("Boom", move |_: &World, _: &mut Output| {
        calls += 1;
        if calls == 4 {
            panic!("boom");
        }
    });
    for _ in 0..3 {
        rt.frame();
    }
    // A failed frame still ends its zones cleanly and marks the frame.
    assert!(rt.try_frame().is_err());
    for _ in 0..2 {
        rt.frame();
    }
    assert_eq!(rt.world().len(), 1005);
    assert_eq!(rt.stats().merged, 1004);
}

/// An unnamed thread that runs frames is named for its role (`runsync-frame`); Tracy sets
/// the OS name too, which is what this reads back.
#[cfg(target_os = "linux")]
#[test]
fn an_unnamed_frame_thread_is_named_for_its_role() {
    let comm = std::thread::spawn(|| {
        let mut world = World::new();
        world.register::<Pos>(|p: &mut Pos, d: &[f32]| p.0 += d.iter().sum::<f32>());
        let mut rt = Runtime::builder().workers(2).build(world);
        rt.frame();
        std::fs::read_to_string("/proc/thread-self/comm").unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(comm.trim_end(), "runsync-frame");
}

/// The parallel paths run their parts in chunk zones named after the system (on the
/// worker and the calling thread), with the same results as without the feature.
#[test]
fn parallel_parts_run_in_chunk_zones() {
    let mut world = World::new();
    world.register::<Pos>(|p: &mut Pos, d: &[f32]| p.0 += d.iter().sum::<f32>());
    for i in 0..5000 {
        world.spawn((Pos(i as f32),));
    }
    let mut rt = Runtime::builder().workers(2).build(world);
    rt.add_system_named("Each", |_: &World, out: &mut Output| {
        out.write_each::<Pos, (&Pos,)>(|_, _| 1.0);
    });
    rt.add_system_named("Chunks", |_: &World, out: &mut Output| {
        out.par_for_each::<(&Pos,)>(|e, (_,), out| out.write::<Pos>(e, 2.0));
    });
    for _ in 0..3 {
        rt.frame();
    }
    let sum: f32 = rt.world().query::<(&Pos,)>().map(|(_, (p,))| p.0).sum();
    assert_eq!(sum, (0..5000).map(|i| i as f32 + 9.0).sum::<f32>());
}

/// With `tracy-memory`, every allocation goes through Tracy's allocator wrapper.
#[cfg(feature = "tracy-memory")]
#[test]
fn allocations_are_tracked_and_work() {
    let v: Vec<u64> = (0..10_000).collect();
    assert_eq!(v.iter().sum::<u64>(), 49_995_000);
    drop(v);
    frames_run_with_tracy_zones();
}

/// With several stages, each stage runs in a zone named by the stage (a failed later
/// stage ends its zone cleanly too).
#[test]
fn stages_run_in_zones_named_by_stage() {
    let mut world = World::new();
    world.register::<Pos>(|p: &mut Pos, d: &[f32]| p.0 += d.iter().sum::<f32>());
    let e = world.spawn((Pos(0.0),));
    let mut rt = Runtime::builder()
        .workers(2)
        .stages(["input", "physics"])
        .build(world);
    let physics = rt.stage_id("physics").unwrap();
    rt.add_system_named("Read", move |_: &World, out: &mut Output| {
        out.write::<Pos>(e, 1.0)
    });
    let mut calls = 0;
    rt.add_system_named_to(physics, "Step", move |w: &World, out: &mut Output| {
        calls += 1;
        if calls == 2 {
            panic!("step");
        }
        out.write::<Pos>(e, w.get::<Pos>(e).unwrap().0);
    });
    rt.frame();
    assert!(rt.try_frame().is_err());
    rt.frame();
    assert_eq!(rt.frame_count(), 3);
    // Frames 1 and 3 double after adding 1; frame 2 only adds (its physics failed).
    assert_eq!(rt.world().get::<Pos>(e), Some(&Pos(8.0)));
}

/// Tracy's "go to source" opens the game, not runsync: each system's zone (and its
/// chunks') points at the line that added the system, each merge's zone at the line that
/// registered the type.
#[test]
fn zones_point_at_where_the_user_added_the_system_and_registered_the_merge() {
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Mass(f32);
    impl Component for Mass {
        type Output = f32;
    }
    let mut world = World::new();
    let registered = line!() + 1;
    world.register::<Mass>(|m: &mut Mass, d: &[f32]| m.0 += d.iter().sum::<f32>());
    for i in 0..5000 {
        world.spawn((Mass(i as f32),));
    }
    let mut rt = Runtime::builder().workers(2).build(world);
    let added_named = line!() + 1;
    rt.add_system_named("GoToSourceNamed", |w: &World, out: &mut Output| {
        for (e, _) in w.query::<(&Mass,)>() {
            out.write::<Mass>(e, 1.0);
        }
    });
    let added = line!() + 1;
    rt.add_system(|_: &World, out: &mut Output| {
        out.par_for_each::<(&Mass,)>(|e, _, out| out.write::<Mass>(e, 1.0));
    });
    rt.frame();
    rt.frame();
    let unnamed = rt.stats().systems[1].name.to_string();
    let mass = std::any::type_name::<Mass>().to_owned();
    let sites = runsync::__tracy::zone_sites();
    let ours: Vec<_> = sites
        .iter()
        .filter(|s| s.0 == "GoToSourceNamed" || s.0 == unnamed || s.0 == mass)
        .cloned()
        .collect();
    let here = file!().to_owned();
    assert_eq!(
        ours,
        {
            let mut want = vec![
                ("GoToSourceNamed".to_owned(), here.clone(), added_named),
                (unnamed.clone(), here.clone(), added),
                (mass.clone(), here.clone(), registered),
            ];
            want.sort();
            want
        },
        "every zone of this test's systems and merge points here: {sites:?}"
    );
}

/// A labelled runtime plots under its own names (`runsync entities [label]`): several
/// runtimes in one program (shards) do not mix their values in one plot.
#[test]
fn a_labelled_runtime_plots_under_its_own_names() {
    let mut rt = Runtime::builder()
        .workers(1)
        .tracy_label("left shard")
        .tracy_frame_marks(false)
        .build(World::new());
    rt.frame();
    let plots = runsync::__tracy::plot_names();
    for name in [
        "runsync entities",
        "runsync dropped",
        "runsync output bytes",
    ] {
        let want = format!("{name} [left shard]");
        assert!(plots.contains(&want), "no plot {want:?} in {plots:?}");
    }
}
