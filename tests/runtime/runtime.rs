//! The frame semantics the crate docs state ("The runtime and the frame": visibility,
//! merge order, dropped outputs, structural commands, failure), tested as a user would use
//! runsync.

use std::sync::{Arc, Mutex};

use runsync::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
impl Component for Pos {
    type Output = Pos;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Hp(i32);
impl Component for Hp {
    type Output = i32;
}

/// Records every merge call: the outputs it saw.
#[derive(Clone, Debug, PartialEq)]
struct Log(Vec<u32>);
impl Component for Log {
    type Output = u32;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Tag;
impl Component for Tag {
    type Output = ();
}

fn world() -> World {
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    w.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    w.register::<Log>(|l: &mut Log, outs: &[u32]| {
        assert!(!outs.is_empty(), "merge must never see an empty slice");
        l.0.push(u32::MAX); // marks one call
        l.0.extend_from_slice(outs);
    });
    w.register::<Tag>(|_: &mut Tag, _: &[()]| {});
    w
}

fn runtime(world: World) -> Runtime {
    Runtime::builder().workers(2).build(world)
}

#[test]
fn systems_see_last_frame_only() {
    let mut w = world();
    let e = w.spawn((Pos(0.0),));
    let mut rt = runtime(w);
    let seen = Arc::new(Mutex::new(Vec::new()));
    for _ in 0..3 {
        let seen = seen.clone();
        rt.add_system(move |world: &World, out: &mut Output| {
            for (e, (p,)) in world.query::<(&Pos,)>() {
                seen.lock().unwrap().push(p.0);
                out.write::<Pos>(e, Pos(p.0 + 1.0));
            }
        });
    }
    rt.frame();
    rt.frame();
    // Each frame all three systems saw the same value; last-wins gives +1, not +3.
    assert_eq!(*seen.lock().unwrap(), vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
    assert_eq!(rt.world().get::<Pos>(e), Some(&Pos(2.0)));
}

#[test]
fn merge_order_is_registration_then_emission() {
    let mut w = world();
    let a = w.spawn((Log(vec![]),));
    let b = w.spawn((Log(vec![]),));
    let mut rt = runtime(w);
    // System 0 writes b before a, several times; system 1 interleaves.
    let s0 = rt.add_system(move |_: &World, out: &mut Output| {
        out.write::<Log>(b, 1);
        out.write::<Log>(a, 2);
        out.write::<Log>(b, 3);
    });
    let s1 = rt.add_system(move |_: &World, out: &mut Output| {
        out.write::<Log>(a, 10);
        out.write::<Log>(b, 11);
        out.write::<Log>(a, 12);
    });
    rt.add_system(|_: &World, _: &mut Output| {}); // writes nothing
    rt.frame();
    let m = u32::MAX;
    assert_eq!(rt.world().get::<Log>(a).unwrap().0, vec![m, 2, 10, 12]);
    assert_eq!(rt.world().get::<Log>(b).unwrap().0, vec![m, 1, 3, 11]);
    assert_eq!(rt.stats().merged, 6);
    rt.set_enabled(s0, false);
    rt.set_enabled(s1, false);
    rt.frame(); // no outputs: merge not called
    assert_eq!(rt.world().get::<Log>(a).unwrap().0, vec![m, 2, 10, 12]);
}

#[test]
fn outputs_to_dead_or_lacking_entities_are_dropped_and_counted() {
    let mut w = world();
    let dead = w.spawn((Hp(5),));
    let no_hp = w.spawn((Pos(0.0),));
    w.despawn(dead);
    // Reuses the slot: a stale write to `dead` must not reach it.
    let reuse = w.spawn((Hp(100),));
    assert_eq!(reuse.index(), dead.index());
    let mut rt = runtime(w);
    rt.add_system(move |_: &World, out: &mut Output| {
        out.write::<Hp>(dead, -50);
        out.write::<Hp>(no_hp, -1);
        out.write::<Hp>(reuse, -1);
    });
    rt.frame();
    assert_eq!(rt.world().get::<Hp>(reuse), Some(&Hp(99)));
    assert_eq!(rt.stats().dropped, 2);
    assert_eq!(rt.stats().merged, 1);
}

#[test]
fn structural_commands_apply_in_system_then_emission_order() {
    let mut w = world();
    let e1 = w.spawn((Pos(1.0),));
    let e2 = w.spawn((Pos(2.0),));
    let mut rt = runtime(w);
    rt.add_system(move |_: &World, out: &mut Output| {
        out.insert(e1, Tag);
        out.remove::<Tag>(e1); // insert then remove: absent
        out.remove::<Pos>(e2);
        out.insert(e2, Pos(9.0)); // remove then insert: present, new value
    });
    rt.add_system(move |_: &World, out: &mut Output| {
        out.insert(e1, Hp(3));
        out.insert(e1, Hp(4)); // insert replaces
    });
    rt.frame();
    let w = rt.world();
    assert!(!w.has::<Tag>(e1));
    assert_eq!(w.get::<Pos>(e2), Some(&Pos(9.0)));
    assert_eq!(w.get::<Hp>(e1), Some(&Hp(4)));
    assert_eq!(
        w.get::<Pos>(e1),
        Some(&Pos(1.0)),
        "moves keep other components"
    );
}

#[test]
fn writes_merge_before_structural_commands() {
    let mut w = world();
    let e = w.spawn((Hp(10),));
    let mut rt = runtime(w);
    rt.add_system(move |_: &World, out: &mut Output| {
        out.despawn(e);
        out.insert(e, Pos(1.0)); // dead by then: dropped
    });
    rt.add_system(move |_: &World, out: &mut Output| {
        out.write::<Hp>(e, -1); // merged first, then e is despawned
        out.despawn(e); // second despawn: counted no-op
    });
    rt.frame();
    assert!(!rt.world().is_alive(e));
    assert_eq!(rt.stats().merged, 1);
    assert_eq!(rt.stats().dropped, 2);
    assert_eq!(rt.stats().despawned, 1);
}

#[test]
fn spawns_get_deterministic_ids_and_appear_next_frame() {
    let run = |workers: usize| {
        let mut rt = Runtime::builder().workers(workers).build(world());
        let counted = Arc::new(Mutex::new(Vec::new()));
        // One list per system: the two run at the same time, so one shared list would
        // interleave their ids in whatever order the threads happened to take.
        let first = Arc::new(Mutex::new(Vec::new()));
        let second = Arc::new(Mutex::new(Vec::new()));
        let (c, r) = (counted.clone(), first.clone());
        rt.add_system(move |world: &World, out: &mut Output| {
            c.lock().unwrap().push(world.query::<(&Pos,)>().count());
            let a = out.spawn((Pos(1.0),));
            let b = out.spawn((Pos(2.0), Hp(1)));
            r.lock().unwrap().push([a, b]);
        });
        let r = second.clone();
        rt.add_system(move |_: &World, out: &mut Output| {
            let t = out.spawn((Tag,));
            r.lock().unwrap().push(t);
        });
        rt.frame();
        rt.frame();
        let returned: Vec<Entity> = (first.lock().unwrap().iter())
            .zip(second.lock().unwrap().iter())
            .flat_map(|(&[a, b], &t)| [a, b, t])
            .collect();
        assert_eq!(*counted.lock().unwrap(), vec![0, 2]);
        assert_eq!(rt.stats().spawned, 3);
        assert_eq!(rt.stats().entities, 6);
        // The ids `spawn` returned are exactly the entities that appeared, with what each
        // spawn put there.
        let mut alive: Vec<Entity> = rt
            .world()
            .query::<(Option<&Pos>, Option<&Tag>)>()
            .map(|(e, _)| e)
            .collect();
        alive.sort();
        let mut sorted = returned.clone();
        sorted.sort();
        assert_eq!(alive, sorted);
        for frame in returned.chunks(3) {
            assert_eq!(rt.world().get::<Pos>(frame[0]), Some(&Pos(1.0)));
            assert_eq!(rt.world().get::<Hp>(frame[1]), Some(&Hp(1)));
            assert!(rt.world().has::<Tag>(frame[2]));
        }
        returned
    };
    let one = run(1);
    assert_eq!(run(2), one);
    assert_eq!(run(8), one);
}

#[test]
fn a_panicking_system_discards_the_frame_and_the_world_stays_usable() {
    let mut w = world();
    let e = w.spawn((Hp(10), Pos(0.0)));
    let mut rt = runtime(w);
    rt.add_system_named("damage", move |_: &World, out: &mut Output| {
        out.write::<Hp>(e, -1);
        out.spawn((Tag,));
    });
    let boom = rt.add_system_named("boom", |_: &World, _: &mut Output| panic!("kaboom"));
    let err = rt.try_frame().unwrap_err();
    match &err {
        FrameError::SystemPanicked {
            system,
            name,
            message,
            stage: StageId::FIRST,
        } => {
            assert_eq!(*system, boom);
            assert_eq!(&**name, "boom");
            assert_eq!(message, "kaboom");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("`boom`"));
    assert_eq!(rt.world().get::<Hp>(e), Some(&Hp(10)), "outputs discarded");
    assert_eq!(rt.world().len(), 1, "spawn discarded");
    assert_eq!(rt.frame_count(), 0);
    rt.set_enabled(boom, false);
    rt.frame();
    assert_eq!(rt.world().get::<Hp>(e), Some(&Hp(9)));
    assert_eq!(rt.world().len(), 2);
    assert!(!rt.stats().systems[boom.index()].ran);
}

#[test]
#[should_panic(expected = "system `boom`")]
fn frame_panics_with_the_error() {
    let mut rt = runtime(world());
    rt.add_system_named("boom", |_: &World, _: &mut Output| panic!("kaboom"));
    rt.frame();
}

#[test]
fn a_panicking_merge_is_reported_and_other_types_still_merge() {
    #[derive(Debug)]
    struct Fragile(i32);
    impl Component for Fragile {
        type Output = i32;
    }
    let mut w = world();
    w.register::<Fragile>(|f: &mut Fragile, d: &[i32]| {
        if d.contains(&13) {
            panic!("unlucky");
        }
        f.0 += d.iter().sum::<i32>();
    });
    let e = w.spawn((Fragile(0), Hp(0)));
    let mut rt = runtime(w);
    let bad = Arc::new(Mutex::new(true));
    let b = bad.clone();
    rt.add_system(move |_: &World, out: &mut Output| {
        let v = if *b.lock().unwrap() { 13 } else { 1 };
        out.write::<Fragile>(e, v);
        out.write::<Hp>(e, 1);
        out.spawn((Tag,));
    });
    let err = rt.try_frame().unwrap_err();
    assert!(
        matches!(&err, FrameError::MergePanicked { component, target, message, stage: StageId::FIRST }
            if component.ends_with("Fragile") && message == "unlucky"
                && *target == runsync::MergeTarget::Entity(e)),
        "{err:?}"
    );
    assert_eq!(rt.world().get::<Hp>(e), Some(&Hp(1)));
    assert_eq!(rt.world().len(), 2, "structural commands applied");
    *bad.lock().unwrap() = false;
    rt.frame();
    assert_eq!(rt.world().get::<Fragile>(e).unwrap().0, 1);
}

#[test]
fn writing_an_unregistered_type_fails_the_frame_with_a_clear_message() {
    struct Unknown;
    impl Component for Unknown {
        type Output = u8;
    }
    let mut w = world();
    let e = w.spawn((Pos(0.0),));
    let mut rt = runtime(w);
    rt.add_system(move |_: &World, out: &mut Output| out.write::<Unknown>(e, 1));
    let msg = rt.try_frame().unwrap_err().to_string();
    assert!(
        msg.contains("Unknown") && msg.contains("is not registered"),
        "{msg}"
    );
    assert!(msg.contains("world.register::<Unknown>"), "{msg}");
}

#[test]
fn par_for_each_equals_a_sequential_loop() {
    let mut w = world();
    for i in 0..5000 {
        if i % 3 == 0 {
            w.spawn((Pos(i as f32), Log(vec![])));
        } else {
            w.spawn((Pos(i as f32), Hp(i)));
        }
    }
    let mut rt = runtime(w);
    rt.add_system(|_: &World, out: &mut Output| {
        out.par_for_each::<(&Pos, Option<&Hp>)>(|e, (p, hp), out| {
            out.write::<Pos>(e, Pos(p.0 * 0.5 + hp.map_or(0.0, |h| h.0 as f32)));
            if let Some(h) = hp {
                out.write::<Hp>(e, -h.0 % 7);
            }
            if p.0 as u32 % 1000 == 0 {
                out.spawn_deferred((Tag,));
            }
        });
    });
    rt.frame();
    let mut expect = world();
    for i in 0..5000 {
        let p = i as f32 * 0.5;
        if i % 3 == 0 {
            expect.spawn((Pos(p), Log(vec![])));
        } else {
            expect.spawn((Pos(p + i as f32), Hp(i - i % 7)));
        }
    }
    for (e, (p, h)) in rt.world().query::<(&Pos, Option<&Hp>)>() {
        assert_eq!(expect.get::<Pos>(e), Some(p));
        assert_eq!(expect.get::<Hp>(e), h);
    }
    assert_eq!(rt.world().query::<(&Tag,)>().count(), 5);
    assert_eq!(rt.stats().systems[0].writes, 5000 + 3333);
}

#[test]
fn a_panic_inside_par_for_each_fails_the_frame() {
    let mut w = world();
    for i in 0..2000 {
        w.spawn((Pos(i as f32),));
    }
    let mut rt = runtime(w);
    rt.add_system(|_: &World, out: &mut Output| {
        out.par_for_each::<(&Pos,)>(|e, (p,), out| {
            assert!(p.0 != 1500.0, "bad row");
            out.write::<Pos>(e, Pos(-1.0));
        });
    });
    let err = rt.try_frame().unwrap_err().to_string();
    assert!(err.contains("bad row"), "{err}");
    assert!(rt.world().query::<(&Pos,)>().all(|(_, (p,))| p.0 >= 0.0));
}

#[test]
fn stats_and_time() {
    let mut w = world();
    let e = w.spawn((Pos(0.0),));
    let mut rt = Runtime::builder().workers(1).dt(0.25).build(w);
    let id = rt.add_system_named("mover", move |world: &World, out: &mut Output| {
        let t = world.resource::<Time>();
        out.write::<Pos>(e, Pos(t.dt * (t.frame + 1) as f32));
        out.spawn(());
    });
    rt.frame();
    rt.frame();
    let s = rt.stats();
    // Two frames done: the second is frame 2, as `frame_count()` and `Time::frame` say.
    assert_eq!(s.frame, 2);
    assert_eq!(rt.frame_count(), 2);
    assert_eq!(&*s.systems[id.index()].name, "mover");
    assert_eq!(s.systems[0].writes, 1);
    assert_eq!(s.systems[0].commands, 1);
    assert_eq!(s.entities, 3);
    assert_eq!(rt.world().get::<Pos>(e), Some(&Pos(0.5)));
    assert_eq!(rt.world().resource::<Time>().frame, 2);
    assert_eq!(rt.system_name(id), "mover");
    let world = rt.into_world();
    assert_eq!(world.len(), 3);
}

#[test]
fn queries_filter_and_accept_duplicate_reads() {
    let mut w = world();
    w.spawn((Pos(1.0), Tag));
    w.spawn((Pos(2.0),));
    w.spawn((Hp(3), Tag));
    let tagged: Vec<f32> = w
        .query::<(&Pos, With<Tag>)>()
        .map(|(_, (p, ()))| p.0)
        .collect();
    assert_eq!(tagged, vec![1.0]);
    let untagged: Vec<f32> = w
        .query::<(&Pos, Without<Tag>)>()
        .map(|(_, (p, ()))| p.0)
        .collect();
    assert_eq!(untagged, vec![2.0]);
    let twice: Vec<(f32, f32)> = w
        .query::<(&Pos, &Pos)>()
        .map(|(_, (a, b))| (a.0, b.0))
        .collect();
    assert_eq!(twice, vec![(1.0, 1.0), (2.0, 2.0)]);
    assert_eq!(w.query::<(Option<&Hp>,)>().count(), 3);
    assert_eq!(w.query::<(With<Tag>,)>().count(), 2);
}

#[test]
fn wide_queries() {
    macro_rules! comps {
        ($($n:ident)*) => { $(
            #[derive(Clone, Copy, Debug, PartialEq)] struct $n(u8);
            impl Component for $n { type Output = $n; }
        )* };
    }
    comps!(C0 C1 C2 C3 C4 C5 C6 C7 C8 C9 C10 C11);
    let mut w = World::new();
    w.register::<C0>(merge::last);
    w.register::<C1>(merge::last);
    w.register::<C2>(merge::last);
    w.register::<C3>(merge::last);
    w.register::<C4>(merge::last);
    w.register::<C5>(merge::last);
    w.register::<C6>(merge::last);
    w.register::<C7>(merge::last);
    w.register::<C8>(merge::last);
    w.register::<C9>(merge::last);
    w.register::<C10>(merge::last);
    w.register::<C11>(merge::last);
    let e = w.spawn((
        C0(0),
        C1(1),
        C2(2),
        C3(3),
        C4(4),
        C5(5),
        C6(6),
        C7(7),
        C8(8),
        C9(9),
        C10(10),
        C11(11),
    ));
    type Q<'a> = (
        &'a C0,
        &'a C1,
        &'a C2,
        &'a C3,
        &'a C4,
        &'a C5,
        &'a C6,
        &'a C7,
        &'a C8,
        &'a C9,
        &'a C10,
        &'a C11,
    );
    let (got, items) = w.query::<Q<'_>>().next().unwrap();
    assert_eq!(got, e);
    assert_eq!(items.11, &C11(11));
    assert_eq!(items.7, &C7(7));
}

/// Replacing a runtime's whole world between frames, even with the component types
/// registered in another order (so every id names another type), keeps systems working:
/// their buffers belong to the world they were made for and start over.
#[test]
fn replacing_the_world_with_other_ids_is_fine() {
    let mut rt = runtime(world());
    let e = rt.world_mut().spawn((Pos(1.0), Hp(5)));
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, (p, _)) in w.query::<(&Pos, &Hp)>() {
            out.write::<Pos>(e, Pos(p.0 * 2.0));
            out.write::<Hp>(e, -1);
        }
    });
    rt.frame();
    assert_eq!(rt.world().get::<Pos>(e), Some(&Pos(2.0)));

    let mut other = World::new();
    other.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    other.register::<Tag>(|_: &mut Tag, _: &[()]| {});
    other.register::<Pos>(merge::last);
    let f = other.spawn((Hp(10), Pos(3.0)));
    *rt.world_mut() = other;
    rt.frame();
    rt.frame();
    assert_eq!(rt.world().get::<Pos>(f), Some(&Pos(12.0)));
    assert_eq!(rt.world().get::<Hp>(f), Some(&Hp(8)));
}

/// The fixed-step driver with synthetic elapsed times: frames run, the overstep carries
/// over, catch-up is capped, and the same elapsed times give the same world.
#[test]
fn advance_runs_fixed_steps_from_elapsed_time() {
    use std::time::Duration;
    let ms = Duration::from_millis;
    let make = || {
        let mut w = world();
        let e = w.spawn((Hp(0),));
        let mut rt = Runtime::builder()
            .workers(2)
            .dt(0.010)
            .max_catch_up(4)
            .build(w);
        rt.add_system(|w: &World, out: &mut Output| {
            let f = w.resource::<Time>().frame as i32;
            for (e, _) in w.query::<(&Hp,)>() {
                out.write::<Hp>(e, f + 1);
            }
        });
        (rt, e)
    };
    let (mut rt, e) = make();
    let a = rt.advance(ms(25));
    assert_eq!((a.frames, a.dropped), (2, Duration::ZERO));
    assert!((a.alpha - 0.5).abs() < 1e-3, "{}", a.alpha);
    assert_eq!(rt.advance(ms(4)).frames, 0, "5 + 4 ms: not yet a step");
    assert_eq!(rt.advance(ms(2)).frames, 1, "11 ms: one step, 1 ms over");
    // A long stall: at most 4 frames, the rest dropped, never a spiral.
    let a = rt.advance(ms(1000));
    assert_eq!(a.frames, 4);
    assert_eq!(a.dropped, ms(960));
    assert_eq!(rt.frame_count(), 7);
    // Frames 0..7 each added frame + 1.
    assert_eq!(rt.world().get::<Hp>(e), Some(&Hp((1..=7).sum())));
    // The same elapsed times replayed give the same world.
    let (mut again, e2) = make();
    for t in [25, 4, 2, 1000] {
        let _ = again.advance(ms(t));
    }
    assert_eq!(again.world().get::<Hp>(e2), rt.world().get::<Hp>(e));
}

/// Closures are named by their call site; named systems and `fn`s keep their names.
#[test]
fn closure_systems_are_named_by_call_site() {
    struct Named;
    impl System for Named {
        fn run(&mut self, _: &World, _: &mut Output<'_>) {}
        fn name(&self) -> std::borrow::Cow<'static, str> {
            "Named".into()
        }
    }
    fn plain(_: &World, _: &mut Output<'_>) {}
    let mut rt = runtime(world());
    let line = line!() + 1;
    let c = rt.add_system(|_: &World, _: &mut Output| {});
    let n = rt.add_system(Named);
    let f = rt.add_system(plain);
    assert_eq!(rt.system_name(c), format!("runtime.rs:{line}"));
    assert_eq!(rt.system_name(n), "Named");
    assert!(
        rt.system_name(f).ends_with("plain"),
        "{}",
        rt.system_name(f)
    );
}

/// `writers::<(A, B)>()` gives the same world as plain writes, and plain writes after it
/// still land where they should.
#[test]
fn several_writers_at_once_match_plain_writes() {
    let make = || {
        let mut w = world();
        for i in 0..200 {
            if i % 3 == 0 {
                w.spawn((Pos(i as f32), Hp(i), Tag));
            } else {
                w.spawn((Pos(i as f32), Hp(i)));
            }
        }
        runtime(w)
    };
    let mut a = make();
    a.add_system(|w: &World, out: &mut Output| {
        let (mut pos, mut hp) = out.writers::<(Pos, Hp)>();
        for (e, (p, h)) in w.query::<(&Pos, &Hp)>() {
            pos.write(e, Pos(p.0 + 1.0));
            hp.write(e, h.0 % 7);
        }
        for (e, (p,)) in w.query::<(&Pos,)>().step_by(5) {
            out.write::<Pos>(e, Pos(p.0 * 2.0));
        }
    });
    let mut b = make();
    b.add_system(|w: &World, out: &mut Output| {
        for (e, (p, h)) in w.query::<(&Pos, &Hp)>() {
            out.write::<Pos>(e, Pos(p.0 + 1.0));
            out.write::<Hp>(e, h.0 % 7);
        }
        for (e, (p,)) in w.query::<(&Pos,)>().step_by(5) {
            out.write::<Pos>(e, Pos(p.0 * 2.0));
        }
    });
    for _ in 0..3 {
        a.frame();
        b.frame();
    }
    let dump = |rt: &Runtime| {
        rt.world()
            .query::<(&Pos, &Hp)>()
            .map(|(e, (p, h))| (e, *p, *h))
            .collect::<Vec<_>>()
    };
    assert_eq!(dump(&a), dump(&b));
}

#[test]
fn writers_naming_a_type_twice_is_an_error() {
    let mut rt = runtime(world());
    rt.add_system(|_: &World, out: &mut Output| {
        let _ = out.writers::<(Pos, Pos)>();
    });
    let err = rt.try_frame().unwrap_err().to_string();
    assert!(err.contains("names component type"), "{err}");
}

#[test]
fn frame_numbers_agree() {
    let mut rt = runtime(world());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let fail = Arc::new(Mutex::new(false));
    let f = fail.clone();
    rt.add_system_named("clock", move |w: &World, _: &mut Output| {
        s.lock().unwrap().push(w.resource::<Time>().frame);
        if *f.lock().unwrap() {
            panic!("fails on purpose");
        }
    });
    let counters = |rt: &Runtime| {
        (
            rt.frame_count(),
            rt.world().resource::<Time>().frame,
            rt.stats().frame,
        )
    };
    assert_eq!(counters(&rt), (0, 0, 0), "before any frame");
    rt.frame();
    assert_eq!(counters(&rt), (1, 1, 1), "after the first frame");
    rt.frame();
    assert_eq!(counters(&rt), (2, 2, 2));
    // Inside frame N, systems read the N - 1 frames completed.
    assert_eq!(*seen.lock().unwrap(), [0, 1]);
    // A frame whose Run fails does not count: the stats describe frame 3, which failed.
    *fail.lock().unwrap() = true;
    assert!(rt.try_frame().is_err());
    assert_eq!(counters(&rt), (2, 2, 3));
    *fail.lock().unwrap() = false;
    rt.frame(); // frame 3 again
    assert_eq!(counters(&rt), (3, 3, 3));
    assert_eq!(*seen.lock().unwrap(), [0, 1, 2, 2]);
}

#[test]
fn systems_are_found_by_name_and_listed() {
    let mut rt = runtime(world());
    let a = rt.add_system_named("a", |_: &World, _: &mut Output| {});
    let b = rt.add_system_named("b", |_: &World, _: &mut Output| {});
    let a2 = rt.add_system_named("a", |_: &World, _: &mut Output| {});
    let closure = rt.add_system(|_: &World, _: &mut Output| {});
    assert_eq!(rt.system_id("a"), Some(a), "the first of that name");
    assert_eq!(rt.system_id("b"), Some(b));
    assert_eq!(rt.system_id("nope"), None);
    // A closure is named by its call site.
    let site = rt.system_name(closure).to_owned();
    assert!(site.starts_with("runtime.rs:"), "{site}");
    assert_eq!(rt.system_id(&site), Some(closure));
    rt.set_enabled(b, false);
    let listed: Vec<(SystemId, String, bool)> = rt
        .systems()
        .map(|s| (s.id, s.name.to_owned(), s.enabled))
        .collect();
    assert_eq!(
        listed,
        [
            (a, "a".to_owned(), true),
            (b, "b".to_owned(), false),
            (a2, "a".to_owned(), true),
            (closure, site, true),
        ]
    );
    assert_eq!(rt.systems().len(), rt.system_count());
}

#[test]
#[should_panic(expected = "is not a system of this runtime")]
fn a_foreign_system_id_is_a_clear_error() {
    let mut other = runtime(world());
    other.add_system(|_: &World, _: &mut Output| {});
    let id = other.add_system(|_: &World, _: &mut Output| {});
    let rt = runtime(world());
    rt.system_name(id);
}

#[test]
fn the_placeholder_is_never_alive() {
    for workers in [1, 2, 8] {
        let mut w = world();
        let e = w.spawn((Hp(1), Pos(0.0)));
        assert!(!w.is_alive(Entity::PLACEHOLDER));
        assert_eq!(w.get::<Hp>(Entity::PLACEHOLDER), None);
        assert!(!w.insert(Entity::PLACEHOLDER, Tag));
        assert_eq!(format!("{:?}", Entity::PLACEHOLDER), "PLACEHOLDER");
        let mut rt = Runtime::builder().workers(workers).build(w);
        rt.add_system(move |_: &World, out: &mut Output| {
            out.write::<Hp>(Entity::PLACEHOLDER, -1);
            out.write::<Hp>(e, -1);
            out.insert(Entity::PLACEHOLDER, Tag);
            out.remove::<Pos>(Entity::PLACEHOLDER);
            out.despawn(Entity::PLACEHOLDER);
        });
        rt.frame();
        assert_eq!(rt.world().get::<Hp>(e), Some(&Hp(0)));
        assert_eq!(rt.stats().merged, 1);
        assert_eq!(rt.stats().dropped, 4, "one write, three commands");
        assert_eq!(rt.world().len(), 1);
        assert!(!rt.world().is_alive(Entity::PLACEHOLDER));
    }
}

/// Work and span: two systems of 10 ms each beside each other, and one whose
/// parallel loop has chunks of 4 ms. The frame's work adds every piece up; its span is the
/// longest system's chain (10 ms: the two run at once), so the frame could speed up about
/// twofold on any number of workers, and never more than the workers.
#[test]
fn frame_stats_give_work_span_and_the_speedup_they_bound() {
    let sleep = |ms| std::thread::sleep(std::time::Duration::from_millis(ms));
    let mut w = world();
    for i in 0..40 {
        w.spawn((Pos(i as f32),));
    }
    let mut rt = Runtime::builder().workers(2).build(w);
    let a = rt.add_system(move |_: &World, _: &mut Output| sleep(10));
    rt.add_system(move |_: &World, _: &mut Output| sleep(10));
    let par = rt.add_system(move |_: &World, out: &mut Output| {
        // 40 rows on 2 workers: chunks of 64 rows at least, so one chunk, on this thread.
        out.par_for_each::<(&Pos,)>(|e, _, _| {
            if e.index() == 0 {
                sleep(4)
            }
        });
    });
    rt.frame();
    let st = rt.stats();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    assert!(ms(st.work) >= 24.0, "work {:?}", st.work);
    assert!(
        ms(st.span) >= 10.0 && st.span < st.work,
        "span {:?}",
        st.span
    );
    let sys = &st.systems[a.index()];
    assert!(
        ms(sys.work) >= 10.0 && sys.span == sys.work,
        "a serial system: {sys:?}"
    );
    assert!(ms(st.systems[par.index()].span) >= 4.0);
    // The span is the longest piece plus Sync's serial steps, so it leaves out at least
    // one of the 10 ms systems and the 4 ms row: work exceeds it by 14 ms or more. (Only
    // lower bounds on time: a loaded machine lengthens sleeps, it never shortens them.)
    assert!(
        ms(st.work) - ms(st.span) >= 13.0,
        "work {:?}, span {:?}: the span holds pieces that ran side by side",
        st.work,
        st.span
    );
    let bound = st.speedup_bound(64);
    let ratio = st.work.as_secs_f64() / st.span.as_secs_f64();
    assert!(
        bound > 1.0 && (bound - ratio.min(64.0)).abs() < 1e-9,
        "bound {bound}: {st:?}"
    );
    assert_eq!(st.speedup_bound(1), 1.0);
}
