//! Resources as merge targets (`World::register_resource`, `Output::write_resource`).

use runsync::prelude::*;

/// Records every merge call as a list of its outputs.
#[derive(Clone, Debug, Default, PartialEq)]
struct Log(Vec<Vec<u32>>);
impl Component for Log {
    type Output = u32;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
impl Component for Pos {
    type Output = Pos;
}

/// A derived structure built once per frame by one system, read by others next frame.
#[derive(Clone, Debug, Default, PartialEq)]
struct Grid(Vec<Entity>);
impl Component for Grid {
    type Output = Grid;
}

fn world() -> World {
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    w.register_resource::<Log>(|l: &mut Log, outs: &[u32]| l.0.push(outs.to_vec()));
    w.register_resource::<Grid>(merge::last);
    w.insert_resource(Log::default());
    w.insert_resource(Grid::default());
    for i in 0..300 {
        w.spawn((Pos(i as f32),));
    }
    w
}

fn run(workers: usize) -> (Log, Grid, FrameStats) {
    let mut rt = Runtime::builder().workers(workers).build(world());
    for s in 0..3u32 {
        rt.add_system(move |w: &World, out: &mut Output| {
            let frame = w.resource::<Time>().frame as u32;
            out.write_resource::<Log>(100 * s + frame);
            if s == 1 {
                // Several outputs from one system, also from parallel chunks.
                out.par_for_each::<(&Pos,)>(|e, _, out| {
                    if e.index() % 100 == 0 {
                        out.write_resource::<Log>(10_000 + e.index());
                    }
                });
            }
            out.write_resource::<Log>(1000 * s + frame);
        });
    }
    // The grid builder: everything at odd x, by entity order.
    rt.add_system(|w: &World, out: &mut Output| {
        let cells = w
            .query::<(&Pos,)>()
            .filter(|(_, (p,))| p.0 as u32 % 2 == 1)
            .map(|(e, _)| e)
            .collect();
        out.write_resource::<Grid>(Grid(cells));
    });
    // A reader: sees last frame's grid.
    rt.add_system(|w: &World, out: &mut Output| {
        let grid = w.resource::<Grid>();
        let frame = w.resource::<Time>().frame;
        assert_eq!(
            grid.0.is_empty(),
            frame == 0,
            "the grid appears one frame later"
        );
        let _ = out;
    });
    rt.frame();
    rt.frame();
    let stats = rt.stats().clone();
    let w = rt.into_world();
    (
        w.resource::<Log>().clone(),
        w.resource::<Grid>().clone(),
        stats,
    )
}

#[test]
fn merged_in_system_then_emission_order_once_per_frame() {
    let (log, grid, stats) = run(2);
    let frame = |f: u32| {
        vec![
            f,
            f,
            100 + f,
            10_000,
            10_100,
            10_200,
            1000 + f,
            200 + f,
            2000 + f,
        ]
    };
    assert_eq!(log.0, vec![frame(0), frame(1)], "one merge call per frame");
    assert_eq!(grid.0.len(), 150);
    // 9 log outputs + 1 grid output per frame, counted as merged.
    assert!(stats.merged >= 10);
}

#[test]
fn same_result_at_any_worker_count() {
    let one = run(1);
    assert_eq!(run(2).0, one.0);
    assert_eq!(run(8).0, one.0);
    assert_eq!(run(8).1, one.1);
}

#[test]
fn unregistered_resource_is_a_clear_error() {
    let mut rt = Runtime::builder().workers(1).build(World::new());
    rt.add_system(|_: &World, out: &mut Output| out.write_resource::<Pos>(Pos(1.0)));
    let err = rt.try_frame().unwrap_err().to_string();
    assert!(err.contains("world.register_resource::<Pos>"), "{err}");
}

#[test]
fn outputs_for_an_absent_resource_are_dropped_and_counted() {
    let mut w = World::new();
    w.register_resource::<Pos>(merge::last);
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system(|_: &World, out: &mut Output| out.write_resource::<Pos>(Pos(1.0)));
    rt.frame();
    assert_eq!(rt.stats().dropped, 1);
    rt.world_mut().insert_resource(Pos(0.0));
    rt.frame();
    assert_eq!(rt.world().resource::<Pos>(), &Pos(1.0));
}

#[test]
fn a_panicking_resource_merge_is_reported() {
    #[derive(Debug)]
    struct Bad;
    impl Component for Bad {
        type Output = ();
    }
    let mut w = World::new();
    w.register_resource::<Bad>(|_: &mut Bad, _: &[()]| panic!("resource merge failed"));
    w.insert_resource(Bad);
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system(|_: &World, out: &mut Output| out.write_resource::<Bad>(()));
    match rt.try_frame() {
        Err(FrameError::MergePanicked {
            component,
            target,
            message,
            stage: StageId::FIRST,
        }) => {
            assert!(component.ends_with("Bad"), "{component}");
            assert_eq!(target, runsync::MergeTarget::Resource);
            assert_eq!(message, "resource merge failed");
        }
        other => panic!("expected a merge panic, got {other:?}"),
    }
    // The world stays usable.
    rt.world_mut().remove_resource::<Bad>();
    rt.frame();
}
