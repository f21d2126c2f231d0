//! Required components (`World::require`, `World::require_with`,
//! `#[component(requires(..))]`): added on spawn and insert — between frames and by
//! commands in Sync, in the same Sync — transitively, never overwriting what the bundle
//! gives or the entity has, with cycles, hooks firing for the added ones, at 1, 2 and 8
//! workers (and single-threaded). The differential model covers them too
//! (`tests/determinism/differential.rs`).

use std::sync::{Arc, Mutex};

use runsync::prelude::*;

const WORKERS: [usize; 3] = [1, 2, 8];

macro_rules! component {
    ($name:ident($t:ty)) => {
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        struct $name($t);
        impl Component for $name {
            type Output = $name;
        }
        impl Checksum for $name {
            fn checksum(&self, h: &mut Checksummer) {
                self.0.checksum(h);
            }
        }
    };
}

component!(Ship(u32));
component!(Hull(u32));
component!(Mass(u32));
component!(Vel(i32));
component!(Team(u8));
// In a cycle with `Team`.
component!(Flag(u8));
// Never registered in some tests.
component!(Ghost(u8));

fn world() -> World {
    let mut w = World::new();
    w.register::<Ship>(merge::last);
    w.register::<Hull>(merge::last);
    w.register::<Mass>(merge::last);
    w.register::<Vel>(merge::last);
    w.register::<Team>(merge::last);
    w.register::<Flag>(merge::last);
    w.snapshotting::<Ship>()
        .snapshotting::<Hull>()
        .snapshotting::<Mass>()
        .snapshotting::<Vel>()
        .snapshotting::<Team>()
        .snapshotting::<Flag>();
    w.checksumming::<Ship>()
        .checksumming::<Hull>()
        .checksumming::<Mass>()
        .checksumming::<Vel>()
        .checksumming::<Team>()
        .checksumming::<Flag>();
    // Ship -> Hull(100), Vel; Hull -> Mass(7); Team <-> Flag (a cycle).
    w.require_with::<Ship, Hull>(|| Hull(100))
        .require::<Ship, Vel>()
        .require_with::<Hull, Mass>(|| Mass(7))
        .require_with::<Team, Flag>(|| Flag(1))
        .require_with::<Flag, Team>(|| Team(2));
    w
}

/// What an entity has, as one comparable value.
type Has = (
    Option<Ship>,
    Option<Hull>,
    Option<Mass>,
    Option<Vel>,
    Option<Team>,
    Option<Flag>,
);

fn has(w: &World, e: Entity) -> Has {
    (
        w.get::<Ship>(e).copied(),
        w.get::<Hull>(e).copied(),
        w.get::<Mass>(e).copied(),
        w.get::<Vel>(e).copied(),
        w.get::<Team>(e).copied(),
        w.get::<Flag>(e).copied(),
    )
}

#[test]
fn spawn_and_insert_add_what_is_missing_transitively() {
    let mut w = world();
    let a = w.spawn((Ship(1),));
    assert_eq!(
        has(&w, a),
        (
            Some(Ship(1)),
            Some(Hull(100)),
            Some(Mass(7)),
            Some(Vel(0)),
            None,
            None
        )
    );
    // What the bundle gives is kept, at any depth.
    let b = w.spawn((Mass(50), Ship(2), Vel(-3)));
    assert_eq!(
        has(&w, b),
        (
            Some(Ship(2)),
            Some(Hull(100)),
            Some(Mass(50)),
            Some(Vel(-3)),
            None,
            None
        )
    );
    // A cycle: either end brings the other, once.
    let c = w.spawn((Team(5),));
    let d = w.spawn((Flag(9),));
    assert_eq!(
        (w.get::<Flag>(c), w.get::<Team>(d)),
        (Some(&Flag(1)), Some(&Team(2)))
    );
    assert_eq!(
        (w.get::<Team>(c), w.get::<Flag>(d)),
        (Some(&Team(5)), Some(&Flag(9)))
    );
    // Insert: what the entity lacks, from the inserted type only.
    let e = w.spawn((Mass(3),));
    assert!(w.insert(e, Hull(5)));
    assert_eq!(has(&w, e).1, Some(Hull(5)));
    assert_eq!(has(&w, e).2, Some(Mass(3)), "present: kept");
    assert!(w.insert(e, Ship(4)));
    assert_eq!(
        has(&w, e),
        (
            Some(Ship(4)),
            Some(Hull(5)),
            Some(Mass(3)),
            Some(Vel(0)),
            None,
            None
        )
    );
    // A required type may be removed; inserting the requirer again (a replace) adds it.
    assert_eq!(w.remove::<Vel>(e), Some(Vel(0)));
    assert!(!w.has::<Vel>(e));
    assert!(w.insert(e, Ship(8)));
    assert_eq!(w.get::<Vel>(e), Some(&Vel(0)));
    // A dead entity gets nothing.
    w.despawn(e);
    assert!(!w.insert(e, Ship(1)));
    assert_eq!(w.len(), 4);
}

#[test]
fn spawn_batch_makes_the_same_world_as_a_spawn_loop() {
    let bundles = || (0..40u32).map(|i| (Hull(i), Team(i as u8)));
    let mut a = world();
    let mut b = world();
    a.spawn((Vel(1),));
    b.spawn((Vel(1),));
    let batch = a.spawn_batch(bundles());
    let looped: Vec<Entity> = bundles().map(|x| b.spawn(x)).collect();
    assert_eq!(batch, looped);
    assert_eq!(a.checksum(), b.checksum());
    assert_eq!(a.first_difference(&b), None);
    assert_eq!(has(&a, batch[7]).2, Some(Mass(7)));
    assert_eq!(has(&a, batch[7]).5, Some(Flag(1)));
    assert!(a.is_added::<Mass>(batch[0]) && a.is_added::<Flag>(batch[39]));
}

/// A game where systems spawn and insert types with requirements; the world must be the
/// same at every worker count, and as the same changes made between frames.
fn game(workers: usize) -> (Runtime, Vec<Entity>) {
    let mut w = world();
    let es: Vec<Entity> = (0..30u32).map(|i| w.spawn((Mass(i),))).collect();
    let mut rt = Runtime::builder().workers(workers).build(w);
    rt.add_system_named("arm", |w: &World, out: &mut Output| {
        let f = w.resource::<Time>().frame as u32;
        for (e, (m,)) in w.query::<(&Mass,)>() {
            if (m.0 + f) % 5 == 0 && !w.has::<Ship>(e) {
                out.insert(e, Ship(f));
            }
            if (m.0 + f) % 7 == 0 {
                out.insert(e, Flag(m.0 as u8));
            }
        }
    });
    rt.add_system_named("launch", |w: &World, out: &mut Output| {
        let f = w.resource::<Time>().frame as u32;
        if f % 2 == 0 {
            let e = out.spawn((Ship(100 + f), Mass(1000)));
            out.write::<Mass>(e, Mass(1)); // dropped: not alive in Run
        }
        out.spawn_deferred((Team(f as u8),));
        for (e, (v,)) in w.query::<(&Vel,)>() {
            out.write::<Vel>(e, Vel(v.0 + 1));
            if v.0 > 3 {
                out.remove::<Hull>(e);
            }
        }
    });
    (rt, es)
}

#[test]
fn commands_add_requirements_in_the_same_sync_at_any_worker_count() {
    let mut sums = Vec::new();
    for workers in WORKERS {
        let (mut rt, es) = game(workers);
        let mut trace = Vec::new();
        let mut armed = 0;
        for _ in 0..12 {
            rt.frame();
            let w = rt.world();
            // A ship armed or spawned this frame got its requirements in the same Sync:
            // added with it.
            for (e, _) in w.query_filtered::<(&Ship,), Added<Ship>>() {
                assert!(w.is_added::<Vel>(e) && w.is_added::<Hull>(e), "{e:?}");
                armed += 1;
            }
            // Every Ship has a Hull unless it was removed later (Vel > 3), a Mass, a Vel;
            // every Team a Flag and every Flag a Team.
            for (e, _) in w.query::<(&Ship,)>() {
                assert!(w.has::<Vel>(e) && w.has::<Mass>(e), "{e:?}");
                assert!(w.has::<Hull>(e) || w.get::<Vel>(e).unwrap().0 > 3, "{e:?}");
            }
            for (e, _) in w.query::<(&Team,)>() {
                assert!(w.has::<Flag>(e), "{e:?}");
            }
            for (e, _) in w.query::<(&Flag,)>() {
                assert!(w.has::<Team>(e), "{e:?}");
            }
            trace.push(w.checksum());
        }
        assert_eq!(armed, 30 + 6, "every original, and the ships spawned");
        let w = rt.world();
        // Spawned ships keep the bundle's Mass.
        let spawned = w
            .query::<(&Ship, &Mass)>()
            .filter(|(_, (s, _))| s.0 >= 100)
            .count();
        assert_eq!(spawned, 6);
        assert!(
            w.query::<(&Ship, &Mass)>()
                .all(|(_, (s, m))| s.0 < 100 || m.0 == 1000)
        );
        assert!(es.iter().all(|&e| w.is_alive(e)));
        sums.push(trace);
    }
    assert!(sums.windows(2).all(|w| w[0] == w[1]));
}

/// The runtime's commands against the same changes made one by one with the world's
/// methods (the sequential reference): the same components on every original entity.
#[test]
fn commands_match_the_world_methods() {
    let (mut rt, es) = game(2);
    let mut reference = world();
    let refs: Vec<Entity> = (0..30u32).map(|i| reference.spawn((Mass(i),))).collect();
    for f in 0..6u32 {
        // "arm", against the reference's state before the frame, as Run sees it.
        let mut cmds = Vec::new();
        for (i, &e) in refs.iter().enumerate() {
            let m = reference.get::<Mass>(e).unwrap().0;
            if (m + f) % 5 == 0 && !reference.has::<Ship>(e) {
                cmds.push((i, true, m));
            }
            if (m + f) % 7 == 0 {
                cmds.push((i, false, m));
            }
        }
        // "launch" writes Vel first (merges run before commands) and removes Hulls.
        let vels: Vec<(Entity, i32)> = reference
            .query::<(&Vel,)>()
            .map(|(e, (v,))| (e, v.0))
            .collect();
        for &(e, v) in &vels {
            reference.get_mut::<Vel>(e).unwrap().0 = v + 1;
        }
        for (i, ship, m) in cmds {
            if ship {
                reference.insert(refs[i], Ship(f));
            } else {
                reference.insert(refs[i], Flag(m as u8));
            }
        }
        for &(e, v) in &vels {
            if v > 3 {
                reference.remove::<Hull>(e);
            }
        }
        rt.frame();
        for (i, &e) in es.iter().enumerate() {
            assert_eq!(
                has(rt.world(), e),
                has(&reference, refs[i]),
                "frame {}: entity {i}",
                f + 1
            );
        }
    }
}

#[test]
fn hooks_fire_for_the_added_components() {
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut w = world();
    macro_rules! hook {
        ($t:ident) => {
            let l = log.clone();
            w.on_add::<$t>(move |_: &World, _: Entity, v: &$t, _: &mut Commands| {
                l.lock()
                    .unwrap()
                    .push(format!("+{}{}", stringify!($t), v.0));
            });
        };
    }
    hook!(Ship);
    hook!(Hull);
    hook!(Mass);
    hook!(Vel);
    let l = log.clone();
    w.on_remove::<Ship>(move |_: &World, _: Entity, v: &Ship, _: &mut Commands| {
        l.lock().unwrap().push(format!("-Ship{}", v.0));
    });
    let take = |log: &Arc<Mutex<Vec<String>>>| std::mem::take(&mut *log.lock().unwrap());
    // A spawn: every type's hook once the entity is complete, in component id order.
    let e = w.spawn((Ship(1),));
    assert_eq!(take(&log), ["+Ship1", "+Hull100", "+Mass7", "+Vel0"]);
    // An insert: the inserted type's, then the added ones' in the order added.
    let f = w.spawn((Vel(4),));
    take(&log);
    w.insert(f, Ship(2));
    assert_eq!(take(&log), ["+Ship2", "+Hull100", "+Mass7"]);
    // A replace: on_remove, on_add, and nothing is missing.
    w.insert(f, Ship(3));
    assert_eq!(take(&log), ["-Ship2", "+Ship3"]);
    // In Sync, the same.
    let mut rt = Runtime::builder().workers(2).build(w);
    rt.add_system(move |_: &World, out: &mut Output| {
        out.remove::<Hull>(e);
        out.insert(e, Ship(9));
        out.spawn((Mass(5), Ship(6)));
    });
    rt.frame();
    assert_eq!(
        take(&log),
        [
            "-Ship1", "+Ship9", "+Hull100", "+Ship6", "+Hull100", "+Mass5", "+Vel0"
        ]
    );
    assert_eq!(rt.world().get::<Mass>(e), Some(&Mass(7)), "kept");
}

#[test]
fn a_hook_command_gets_requirements_too() {
    let mut w = world();
    w.on_add::<Vel>(|_: &World, e: Entity, _: &Vel, cmds: &mut Commands| {
        cmds.insert(e, Team(4));
    });
    let e = w.spawn((Vel(1),));
    assert_eq!(w.get::<Team>(e), Some(&Team(4)));
    assert_eq!(w.get::<Flag>(e), Some(&Flag(1)));
}

#[test]
fn an_unregistered_requirement_is_a_clear_error_where_it_is_used() {
    let mut w = world();
    w.require::<Mass, Ghost>();
    let message = |r: std::thread::Result<Entity>| -> String {
        let p = r.unwrap_err();
        p.downcast_ref::<String>().cloned().unwrap_or_default()
    };
    // Between frames: a spawn of a type that requires it, directly or not.
    let before = w.len();
    let m = message(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
        || w.spawn((Ship(1),)),
    )));
    assert!(
        m.contains(
            "`world::required::Mass` requires `world::required::Ghost`, which is not registered"
        ) && m.contains("before spawning or inserting `world::required::Ship`")
            && m.contains("world.register::<Ghost>"),
        "{m}"
    );
    assert_eq!(w.len(), before, "nothing spawned");
    let e = w.spawn((Vel(1),));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.insert(e, Hull(1))));
    assert!(r.is_err());
    assert!(!w.has::<Hull>(e), "nothing inserted");
    // In a system: the frame fails cleanly.
    let mut rt = Runtime::builder().workers(2).build(w);
    rt.add_system_named("builder", move |_: &World, out: &mut Output| {
        out.insert(e, Mass(1));
    });
    let err = rt.try_frame().unwrap_err();
    assert!(
        matches!(&err, FrameError::SystemPanicked { name, message, .. }
            if &**name == "builder" && message.contains("requires `world::required::Ghost`")),
        "{err}"
    );
    // Once registered, it resolves.
    rt.world_mut().register::<Ghost>(merge::last);
    rt.frame();
    assert_eq!(rt.world().get::<Ghost>(e), Some(&Ghost(0)));
}

#[test]
#[should_panic(expected = "cannot require itself")]
fn a_type_cannot_require_itself() {
    world().require::<Ship, Ship>();
}

#[test]
#[should_panic(expected = "is not registered")]
fn the_requiring_type_must_be_registered() {
    World::new().require::<Ghost, Mass>();
}

#[test]
fn declaring_a_requirement_again_replaces_its_constructor() {
    let mut w = world();
    w.require_with::<Ship, Hull>(|| Hull(5));
    let e = w.spawn((Ship(0),));
    assert_eq!(w.get::<Hull>(e), Some(&Hull(5)));
    assert_eq!(w.get::<Vel>(e), Some(&Vel(0)), "the others stay");
}

#[test]
fn the_nearest_requirement_makes_a_type() {
    let mut w = world();
    // Mass is two steps from Ship (through Hull, made Mass(7)) and one from Vel: for a
    // bundle of both, Vel's requirement makes it.
    w.require_with::<Vel, Mass>(|| Mass(40));
    let e = w.spawn((Ship(0), Vel(1)));
    assert_eq!(w.get::<Mass>(e), Some(&Mass(40)));
    let f = w.spawn((Ship(0),));
    assert_eq!(w.get::<Mass>(f), Some(&Mass(7)), "only through Hull");
}

#[test]
fn rollback_with_required_components_is_bit_identical() {
    for workers in WORKERS {
        let (mut rt, _) = game(workers);
        let mut sums = Vec::new();
        let mut saved = None;
        for f in 0..14 {
            if f == 5 {
                saved = Some(rt.snapshot().unwrap());
            }
            rt.frame();
            sums.push(rt.world().checksum());
        }
        rt.restore(saved.as_ref().unwrap());
        for (f, &want) in sums.iter().enumerate().skip(5) {
            rt.frame();
            assert_eq!(rt.world().checksum(), want, "frame {}", f + 1);
        }
    }
}

#[test]
fn requirements_apply_in_every_stage() {
    let mut w = world();
    let e = w.spawn((Vel(0),));
    let mut rt = Runtime::builder()
        .workers(2)
        .stages(["arm", "check"])
        .build(w);
    let check = rt.stage_id("check").unwrap();
    rt.add_system(move |_: &World, out: &mut Output| out.insert(e, Ship(1)));
    let seen: Arc<Mutex<Option<Has>>> = Arc::default();
    let s = seen.clone();
    rt.add_system_to(check, move |w: &World, _: &mut Output| {
        *s.lock().unwrap() = Some(has(w, e));
    });
    rt.frame();
    let got = seen.lock().unwrap().unwrap();
    assert_eq!(
        got,
        (
            Some(Ship(1)),
            Some(Hull(100)),
            Some(Mass(7)),
            Some(Vel(0)),
            None,
            None
        )
    );
}
