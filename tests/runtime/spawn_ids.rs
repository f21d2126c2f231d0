//! Same-frame spawn ids: `Output::spawn` returns the id the entity will have, usable in
//! the frame's commands and inside component values, and the same at any worker count.

use std::sync::{Arc, Mutex};

use runsync::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
impl Component for Pos {
    type Output = Pos;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Parent(Entity);
impl Component for Parent {
    type Output = Parent;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Tag;
impl Component for Tag {
    type Output = ();
}

fn world() -> World {
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    w.register::<Parent>(merge::last);
    w.register::<Tag>(|_: &mut Tag, _: &[()]| {});
    w
}

type Ids = Arc<Mutex<Vec<Entity>>>;

/// Three spawning systems, each recording the ids it got in `ids[s]`; "burst" spawns `burst(frame)` entities (far more than its
/// reserved ids in some frames), each child naming the parent spawned just before it.
fn runtime(workers: usize, ids: &[Ids; 3]) -> Runtime {
    let mut rt = Runtime::builder().workers(workers).build(world());
    let r = ids[0].clone();
    rt.add_system_named("burst", move |w: &World, out: &mut Output| {
        let frame = w.resource::<Time>().frame;
        let n = [3, 40, 500, 2, 0, 1000, 7][frame as usize % 7];
        let mut parent = None;
        for i in 0..n {
            let e = match parent {
                Some(p) if i % 2 == 1 => out.spawn((Pos(i as f32), Parent(p))),
                _ => out.spawn((Pos(i as f32),)),
            };
            parent = Some(e);
            r.lock().unwrap().push(e);
        }
    });
    let r = ids[1].clone();
    rt.add_system_named("tagger", move |w: &World, out: &mut Output| {
        let frame = w.resource::<Time>().frame;
        for i in 0..(frame % 4) {
            let e = out.spawn(());
            out.insert(e, Tag); // a command on a same-frame spawn
            out.insert(e, Pos(-(i as f32)));
            r.lock().unwrap().push(e);
        }
    });
    let r = ids[2].clone();
    rt.add_system_named("reaper", move |w: &World, out: &mut Output| {
        // Despawns the oldest third, so freed slots come back through the free list.
        let n = w.len() / 3;
        for (e, _) in w.query::<(&Pos,)>().take(n) {
            out.despawn(e);
        }
        let e = out.spawn((Pos(0.5),));
        r.lock().unwrap().push(e);
    });
    rt
}

/// Everything in `ids`, in system order.
fn all(ids: &[Ids; 3]) -> Vec<Entity> {
    ids.iter().flat_map(|r| r.lock().unwrap().clone()).collect()
}

/// Runs 30 frames; returns the spawned ids of each frame in (system, emission) order and
/// a digest of the world after every frame.
fn run(workers: usize) -> (Vec<Vec<Entity>>, Vec<u64>) {
    let ids: [Ids; 3] = Default::default();
    let mut rt = runtime(workers, &ids);
    let (mut frames, mut sums) = (Vec::new(), Vec::new());
    for _ in 0..30 {
        for r in &ids {
            r.lock().unwrap().clear();
        }
        rt.frame();
        let w = rt.world();
        let new = all(&ids);
        // Every id handed out this frame is alive now, distinct, and carries what its
        // spawn (and the commands after it) put there.
        let mut sorted = new.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), new.len(), "an id was handed out twice");
        assert_eq!(rt.stats().spawned as usize, new.len());
        for &e in &new {
            assert!(
                w.is_alive(e),
                "{e:?} was returned by spawn but is not alive"
            );
            if let Some(Parent(p)) = w.get::<Parent>(e) {
                assert!(new.contains(p) && w.is_alive(*p));
            }
        }
        for &e in ids[1].lock().unwrap().iter() {
            assert!(w.has::<Tag>(e) && w.get::<Pos>(e).is_some());
        }
        sums.push(w.query::<(&Pos, Option<&Parent>, Option<&Tag>)>().fold(
            0u64,
            |h, (e, (p, parent, t))| {
                let x = e.to_bits()
                    ^ u64::from(p.0.to_bits()) << 7
                    ^ parent.map_or(1, |p| p.0.to_bits() << 3)
                    ^ u64::from(t.is_some());
                h.rotate_left(5) ^ x.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            },
        ));
        frames.push(new);
    }
    (frames, sums)
}

#[test]
fn ids_are_the_same_at_1_2_and_8_workers_and_name_live_entities() {
    let one = run(1);
    assert!(
        one.0.iter().map(Vec::len).sum::<usize>() > 1500,
        "the scenario spawns in bursts"
    );
    for workers in [2, 8] {
        let other = run(workers);
        assert!(other.0 == one.0, "ids differ at {workers} workers");
        assert_eq!(other.1, one.1, "worlds differ at {workers} workers");
    }
}

#[test]
fn slots_are_reused_after_bursts() {
    let ids: [Ids; 3] = Default::default();
    let mut rt = runtime(2, &ids);
    // The population settles into the 7-frame burst cycle within a few dozen frames.
    for _ in 0..70 {
        rt.frame();
    }
    let slots = rt.memory().entity_slots;
    for _ in 0..140 {
        rt.frame();
    }
    // The same burst pattern again and again needs no new slots.
    assert_eq!(rt.memory().entity_slots, slots);
}

#[test]
fn a_write_to_a_same_frame_spawn_is_dropped_and_counted() {
    let mut rt = Runtime::builder().workers(2).build(world());
    rt.add_system(|_: &World, out: &mut Output| {
        let e = out.spawn((Pos(1.0),));
        out.write::<Pos>(e, Pos(9.0)); // not alive until Sync
    });
    rt.frame();
    assert_eq!(rt.stats().dropped, 1);
    let (_, (p,)) = rt.world().query::<(&Pos,)>().next().unwrap();
    assert_eq!(*p, Pos(1.0));
}

#[test]
fn a_later_system_may_command_an_entity_it_learns_about_in_the_same_frame() {
    // System 0 spawns and passes the id on (through its own state here, a channel in a
    // game); system 1 cannot see it during Run, but commands on it in later frames work.
    let shared: Ids = Arc::default();
    let mut rt = Runtime::builder().workers(2).build(world());
    let s = shared.clone();
    rt.add_system(move |w: &World, out: &mut Output| {
        if w.is_empty() {
            s.lock().unwrap().push(out.spawn((Pos(1.0),)));
        }
    });
    let s = shared.clone();
    rt.add_system(move |w: &World, out: &mut Output| {
        if let Some(&e) = s.lock().unwrap().first() {
            if w.is_alive(e) {
                out.insert(e, Tag);
            }
        }
    });
    rt.frame();
    rt.frame();
    let e = shared.lock().unwrap()[0];
    assert!(rt.world().has::<Tag>(e));
}

#[test]
fn world_spawns_between_frames_never_take_a_reserved_id() {
    let ids: [Ids; 3] = Default::default();
    let mut rt = runtime(2, &ids);
    let mut between = Vec::new();
    for f in 0..20 {
        rt.frame();
        for i in 0..(f % 3) * 50 {
            between.push(rt.world_mut().spawn((Pos(i as f32),)));
        }
    }
    let mut all = all(&ids);
    all.extend(&between);
    let n = all.len();
    all.sort();
    all.dedup();
    assert_eq!(
        all.len(),
        n,
        "a world spawn and a system spawn got the same id"
    );
}

#[test]
fn a_failed_frame_hands_out_the_same_ids_again() {
    let ids: Ids = Arc::default();
    let fail = Arc::new(Mutex::new(true));
    let mut rt = Runtime::builder().workers(2).build(world());
    let r = ids.clone();
    rt.add_system(move |_: &World, out: &mut Output| {
        let e = out.spawn((Pos(1.0),));
        r.lock().unwrap().push(e);
    });
    let f = fail.clone();
    rt.add_system(move |_: &World, _: &mut Output| {
        if std::mem::replace(&mut *f.lock().unwrap(), false) {
            panic!("boom");
        }
    });
    assert!(rt.try_frame().is_err());
    assert_eq!(rt.world().len(), 0);
    rt.frame();
    let ids = ids.lock().unwrap();
    assert_eq!(
        ids[0], ids[1],
        "the discarded frame's id is the next frame's"
    );
    assert!(rt.world().is_alive(ids[1]));
}

#[test]
fn restoring_a_snapshot_restores_the_next_ids() {
    let ids: [Ids; 3] = Default::default();
    let mut rt = runtime(2, &ids);
    rt.world_mut()
        .snapshotting::<Pos>()
        .snapshotting::<Parent>()
        .snapshotting::<Tag>();
    for _ in 0..4 {
        rt.frame();
    }
    let snap = rt.snapshot().unwrap();
    let start = ids.each_ref().map(|r| r.lock().unwrap().len());
    for _ in 0..5 {
        rt.frame();
    }
    let first: Vec<Vec<Entity>> = (0..3)
        .map(|s| ids[s].lock().unwrap()[start[s]..].to_vec())
        .collect();
    let sum = rt.world().checksum();
    rt.restore(&snap);
    let again = ids.each_ref().map(|r| r.lock().unwrap().len());
    for _ in 0..5 {
        rt.frame();
    }
    for s in 0..3 {
        assert_eq!(ids[s].lock().unwrap()[again[s]..], first[s][..]);
    }
    assert_eq!(rt.world().checksum(), sum);
}

#[test]
fn spawn_inside_par_for_each_is_refused_at_any_worker_count() {
    for workers in [1, 2] {
        let mut w = world();
        for i in 0..300 {
            w.spawn((Pos(i as f32),));
        }
        let mut rt = Runtime::builder().workers(workers).build(w);
        rt.add_system(|_: &World, out: &mut Output| {
            out.par_for_each::<(&Pos,)>(|_, (p,), out| {
                if p.0 == 7.0 {
                    out.spawn((Tag,));
                }
            });
        });
        let err = rt.try_frame().unwrap_err().to_string();
        assert!(err.contains("spawn_deferred"), "{err}");
        assert_eq!(rt.world().len(), 300, "the frame was discarded");
    }
}

#[test]
fn spawn_deferred_works_inside_par_for_each_in_iteration_order() {
    let run = |workers: usize| {
        let mut w = world();
        for i in 0..3000 {
            w.spawn((Pos(i as f32),));
        }
        let mut rt = Runtime::builder().workers(workers).build(w);
        rt.add_system(|_: &World, out: &mut Output| {
            out.par_for_each::<(&Pos,)>(|e, (p,), out| {
                if p.0 as u32 % 100 == 0 {
                    out.spawn_deferred((Parent(e), Tag));
                }
            });
        });
        rt.frame();
        rt.world()
            .query::<(&Parent,)>()
            .map(|(e, (p,))| (e, p.0))
            .collect::<Vec<_>>()
    };
    let one = run(1);
    assert_eq!(one.len(), 30);
    assert_eq!(run(2), one);
    assert_eq!(run(8), one);
}
