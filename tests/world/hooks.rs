//! `World::on_add` / `World::on_remove`: hooks fire once per add and remove, in command
//! order, for spawn, insert, insert-replace, remove and despawn, in Sync and between
//! frames; their commands apply in the same Sync; a panicking hook fails the frame like a
//! panicking merge; nothing leaks; the order and the world are the same at any worker
//! count.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use runsync::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct A(u32);
impl Component for A {
    type Output = A;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct B(u32);
impl Component for B {
    type Output = B;
}

/// Never hooked.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Plain(u32);
impl Component for Plain {
    type Output = Plain;
}

macro_rules! checksum_field {
    ($($t:ident),*) => {$(
        impl runsync::Checksum for $t {
            fn checksum(&self, h: &mut runsync::Checksummer) {
                self.0.checksum(h);
            }
        }
    )*};
}
checksum_field!(A, B, Plain);

type Log = Arc<Mutex<Vec<String>>>;

fn world() -> World {
    let mut w = World::new();
    w.register::<A>(merge::last);
    w.register::<B>(merge::last);
    w.register::<Plain>(merge::last);
    w
}

/// Hooks on `A` and `B` that log `+A3@e` / `-B4@e` (kind, type, value, entity index).
fn log_hooks(w: &mut World) -> Log {
    let log: Log = Arc::default();
    let l = log.clone();
    w.on_add::<A>(move |_, e, a, _| l.lock().unwrap().push(format!("+A{}@{}", a.0, e.index())));
    let l = log.clone();
    w.on_remove::<A>(move |_, e, a, _| l.lock().unwrap().push(format!("-A{}@{}", a.0, e.index())));
    let l = log.clone();
    w.on_add::<B>(move |_, e, b, _| l.lock().unwrap().push(format!("+B{}@{}", b.0, e.index())));
    let l = log.clone();
    w.on_remove::<B>(move |_, e, b, _| l.lock().unwrap().push(format!("-B{}@{}", b.0, e.index())));
    log
}

fn take(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

/// Two systems emitting every kind of structural change, in an order that makes the
/// expected log easy to read; returns the log of the first frame.
fn command_order_scenario(workers: usize) -> (Vec<String>, u64, u64) {
    let mut w = world();
    w.checksumming::<A>()
        .checksumming::<B>()
        .checksumming::<Plain>();
    let e0 = w.spawn((A(0), Plain(0)));
    let e1 = w.spawn((A(1), B(1)));
    let e2 = w.spawn((Plain(2),));
    let log = log_hooks(&mut w);
    // Hook commands take part too: each B added spawns a Plain.
    w.on_add::<B>(|_: &World, _: Entity, b: &B, cmds: &mut Commands| {
        cmds.spawn((Plain(1000 + b.0),));
    });
    let mut rt = Runtime::builder().workers(workers).build(w);
    rt.add_system(move |_: &World, out: &mut Output| {
        out.insert(e2, A(20)); // +A20@2
        out.remove::<A>(e0); // -A0@0
        out.remove::<A>(e0); // nothing left to remove: no hook
        out.insert(e1, B(10)); // replace: -B1@1 +B10@1
        out.remove::<Plain>(e2); // unhooked type: no hook
        out.spawn((B(7), A(7))); // +A7@3 +B7@3 (component id order)
    });
    rt.add_system(move |_: &World, out: &mut Output| {
        out.despawn(e1); // -A1@1 -B10@1 (the replaced value)
        out.despawn(e1); // dead: no hook
        out.insert(e1, A(99)); // dead target: no hook
        out.insert(e2, A(21)); // replace of the first system's insert: -A20@2 +A21@2
    });
    rt.frame();
    let first = take(&log);
    rt.frame(); // systems emit the same commands: e0, e1 are past their changes
    let w = rt.world();
    (first, w.checksum(), w.checksum_v2())
}

#[test]
fn hooks_fire_once_per_change_in_command_order() {
    let (log, _, _) = command_order_scenario(2);
    assert_eq!(
        log,
        [
            "+A20@2", "-A0@0", "-B1@1", "+B10@1", "+A7@3", "+B7@3", "-A1@1", "-B10@1", "-A20@2",
            "+A21@2"
        ]
    );
}

#[test]
fn same_order_and_world_at_any_worker_count() {
    let one = command_order_scenario(1);
    for workers in [2, 8] {
        assert_eq!(command_order_scenario(workers), one, "{workers} workers");
    }
    // The same digest in every build (`single-threaded` included): checksums are stable,
    // and digest version 2's is what it was before version 3.
    assert_eq!(one.1, GOLDEN, "checksum {:#x}", one.1);
    assert_eq!(one.2, GOLDEN_V2, "checksum {:#x}", one.2);
}

const GOLDEN: u64 = 0x976e_3a22_00a8_fdb5;
const GOLDEN_V2: u64 = 0xfdf0_3004_d93c_0ea4;

#[test]
fn hooks_see_the_world_at_their_command() {
    let mut w = world();
    let e = w.spawn((A(1), B(2), Plain(3)));
    /// (alive, has B, its Plain), as each hook saw them.
    type Seen = Vec<(bool, bool, Option<Plain>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let s = seen.clone();
    // Before the despawn: the entity is alive with all its components.
    w.on_remove::<A>(move |w: &World, e: Entity, _: &A, _: &mut Commands| {
        s.lock()
            .unwrap()
            .push((w.is_alive(e), w.has::<B>(e), w.get::<Plain>(e).copied()));
    });
    let s = seen.clone();
    // After the insert: the new value is in place; the earlier command (Plain replaced)
    // is applied, the later one (the despawn) is not.
    w.on_add::<B>(move |w: &World, e: Entity, b: &B, _: &mut Commands| {
        assert_eq!(w.get::<B>(e), Some(b));
        s.lock()
            .unwrap()
            .push((w.is_alive(e), true, w.get::<Plain>(e).copied()));
    });
    let mut rt = Runtime::builder().workers(2).build(w);
    rt.add_system(move |_: &World, out: &mut Output| {
        out.write::<Plain>(e, Plain(4)); // merged before any command
        out.remove::<B>(e);
        out.insert(e, Plain(5));
        out.insert(e, B(6));
        out.despawn(e);
    });
    rt.frame();
    assert_eq!(
        *seen.lock().unwrap(),
        [(true, true, Some(Plain(5))), (true, true, Some(Plain(5)))]
    );
    assert!(!rt.world().is_alive(e));
}

#[test]
fn between_frames_world_methods_fire_hooks() {
    let mut w = world();
    let log = log_hooks(&mut w);
    let e = w.spawn((A(1), Plain(0)));
    assert_eq!(take(&log), ["+A1@0"]);
    let batch = w.spawn_batch([(A(2), B(2)), (A(3), B(3))]);
    assert_eq!(take(&log), ["+A2@1", "+B2@1", "+A3@2", "+B3@2"]);
    assert!(w.insert(e, B(4)));
    assert!(w.insert(e, B(5)));
    assert_eq!(take(&log), ["+B4@0", "-B4@0", "+B5@0"]);
    assert_eq!(w.remove::<B>(e), Some(B(5)));
    assert_eq!(w.remove::<B>(e), None);
    assert_eq!(take(&log), ["-B5@0"]);
    assert!(w.despawn(batch[0]));
    assert!(!w.despawn(batch[0]));
    assert!(!w.insert(batch[0], A(9)));
    assert_eq!(w.remove::<A>(batch[0]), None);
    assert_eq!(take(&log), ["-A2@1", "-B2@1"]);
    // Unhooked types and the unhooked paths still work.
    assert!(w.insert(e, Plain(7)));
    assert_eq!(w.remove::<Plain>(e), Some(Plain(7)));
    assert!(take(&log).is_empty());
    assert_eq!(w.len(), 2);
}

#[test]
fn hook_commands_apply_after_all_commands_in_the_same_sync() {
    let mut w = world();
    let e = w.spawn((Plain(0),));
    // Adding A tags the entity with B and takes its Plain away; adding B spawns a marker.
    w.on_add::<A>(|_: &World, e: Entity, a: &A, cmds: &mut Commands| {
        cmds.insert(e, B(a.0));
        cmds.remove::<Plain>(e);
    });
    w.on_add::<B>(|_: &World, _: Entity, b: &B, cmds: &mut Commands| {
        cmds.spawn((Plain(100 + b.0),));
    });
    let mut rt = Runtime::builder().workers(2).build(w);
    let once = Arc::new(Mutex::new(true));
    rt.add_system(move |_: &World, out: &mut Output| {
        if std::mem::take(&mut *once.lock().unwrap()) {
            out.insert(e, A(1));
        }
    });
    let o = Arc::new(Mutex::new(true));
    rt.add_system(move |_: &World, out: &mut Output| {
        if std::mem::take(&mut *o.lock().unwrap()) {
            // After the first system's insert, before the hook's remove: the hook wins.
            out.insert(e, Plain(1));
        }
    });
    rt.try_frame().unwrap();
    let world = rt.world();
    assert_eq!(world.get::<B>(e), Some(&B(1)));
    assert_eq!(world.get::<Plain>(e), None);
    let plains: Vec<u32> = world.query::<(&Plain,)>().map(|(_, (p,))| p.0).collect();
    assert_eq!(
        plains,
        [101],
        "the second round (B's hook) spawned in the same Sync"
    );
    assert_eq!(rt.stats().spawned, 1);
}

#[test]
fn endless_cascade_is_stopped_and_reported() {
    let mut w = world();
    w.on_add::<A>(|_: &World, _: Entity, a: &A, cmds: &mut Commands| {
        cmds.spawn((A(a.0 + 1),));
    });
    let mut rt = Runtime::builder().workers(2).build(w);
    let once = Arc::new(Mutex::new(true));
    rt.add_system(move |_: &World, out: &mut Output| {
        if std::mem::take(&mut *once.lock().unwrap()) {
            out.spawn((A(0),));
        }
    });
    match rt.try_frame() {
        Err(FrameError::HookCascade { dropped, stage }) => {
            assert_eq!(dropped, 1);
            assert_eq!(stage, StageId::FIRST);
        }
        other => panic!("expected HookCascade, got {other:?}"),
    }
    // The system's spawn, then one per round.
    let n = 1 + runsync::MAX_HOOK_ROUNDS as usize;
    assert_eq!(rt.world().len(), n);
    rt.try_frame().unwrap();
    assert_eq!(rt.world().len(), n, "nothing was left pending");

    // Between frames, the world method panics once everything is applied.
    let err = catch_unwind(AssertUnwindSafe(|| rt.world_mut().spawn((A(0),))))
        .expect_err("an endless cascade panics");
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(
        msg.contains("still emitting commands after 16 rounds"),
        "{msg}"
    );
    assert_eq!(rt.world().len(), 2 * n);
}

#[test]
fn panicking_hook_fails_the_frame_like_a_merge_and_the_next_frame_runs() {
    let mut w = world();
    let e = w.spawn((Plain(0),));
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    w.on_add::<A>(move |_: &World, e: Entity, a: &A, cmds: &mut Commands| {
        cmds.insert(e, B(a.0)); // discarded with the panic
        if a.0 == 1 {
            panic!("bad A {}", a.0);
        }
        l.lock().unwrap().push(a.0);
    });
    let l = log.clone();
    w.on_add::<A>(move |_: &World, _: Entity, a: &A, _: &mut Commands| {
        l.lock().unwrap().push(100 + a.0); // the next hook still runs
    });
    let mut rt = Runtime::builder().workers(2).build(w);
    let frame = Arc::new(Mutex::new(0u32));
    rt.add_system(move |_: &World, out: &mut Output| {
        let mut f = frame.lock().unwrap();
        *f += 1;
        out.insert(e, A(*f)); // A(1) in the first frame, A(2) in the second
        out.insert(e, Plain(*f));
    });
    let err = rt.try_frame().unwrap_err();
    match &err {
        FrameError::HookPanicked {
            component,
            hook,
            message,
            stage: StageId::FIRST,
        } => {
            assert!(component.ends_with("::A"), "{component}");
            assert_eq!(*hook, "on_add");
            assert_eq!(message, "bad A 1");
        }
        other => panic!("expected HookPanicked, got {other:?}"),
    }
    assert!(err.to_string().contains("panicked: bad A 1"), "{err}");
    assert_eq!(*log.lock().unwrap(), [101]);
    // Every command applied, the panicking hook's commands discarded, frame counted.
    assert_eq!(rt.world().get::<A>(e), Some(&A(1)));
    assert_eq!(rt.world().get::<Plain>(e), Some(&Plain(1)));
    assert_eq!(rt.world().get::<B>(e), None);
    assert_eq!(rt.frame_count(), 1);

    rt.try_frame().unwrap(); // A(2) replaces A(1): on_add fires, no panic
    assert_eq!(*log.lock().unwrap(), [101, 2, 102]);
    assert_eq!(rt.world().get::<B>(e), Some(&B(2)));
}

#[test]
fn panicking_hook_between_frames_panics_after_applying_everything() {
    let mut w = world();
    let e = w.spawn(());
    w.on_add::<A>(|_: &World, e: Entity, _: &A, cmds: &mut Commands| {
        cmds.insert(e, Plain(1));
    });
    w.on_add::<A>(|_: &World, _: Entity, _: &A, _: &mut Commands| panic!("no A here"));
    let err = catch_unwind(AssertUnwindSafe(|| w.insert(e, A(1)))).unwrap_err();
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(msg.contains("on_add hook of component"), "{msg}");
    assert!(msg.contains("no A here"), "{msg}");
    assert_eq!(w.get::<A>(e), Some(&A(1)));
    assert_eq!(
        w.get::<Plain>(e),
        Some(&Plain(1)),
        "the other hook's commands applied"
    );
    // The hooks are still registered.
    assert!(catch_unwind(AssertUnwindSafe(|| w.spawn((A(2),)))).is_err());
}

/// Owns a clone of the test's token; `Arc::strong_count` counts the live ones.
#[derive(Clone, Debug)]
struct Owned(Arc<()>);
impl Component for Owned {
    type Output = Owned;
}

fn count(t: &Arc<()>) -> usize {
    Arc::strong_count(t) - 1
}

#[test]
fn removed_values_are_dropped_once() {
    let token = Arc::new(());
    let seen = Arc::new(Mutex::new(0usize));
    {
        let mut w = world();
        w.register::<Owned>(merge::last);
        let s = seen.clone();
        w.on_remove::<Owned>(move |_: &World, _: Entity, o: &Owned, _: &mut Commands| {
            // The value is alive while the hook sees it.
            assert!(Arc::strong_count(&o.0) >= 2);
            *s.lock().unwrap() += 1;
        });
        let t = token.clone();
        w.on_add::<Owned>(
            move |_: &World, e: Entity, _: &Owned, cmds: &mut Commands| {
                cmds.insert(e, A(0));
                if e.index() == 3 {
                    cmds.insert(e, Owned(t.clone())); // discarded with the panic
                    panic!("drop my commands");
                }
            },
        );
        let es: Vec<Entity> = (0..4).map(|_| w.spawn((Plain(0),))).collect();
        let mut rt = Runtime::builder().workers(2).build(w);
        let t = token.clone();
        let frame = Arc::new(Mutex::new(0));
        let targets = es.clone();
        rt.add_system(move |_: &World, out: &mut Output| {
            let (es, mut f) = (&targets, frame.lock().unwrap());
            *f += 1;
            match *f {
                1 => {
                    for &e in es {
                        out.insert(e, Owned(t.clone()));
                    }
                }
                2 => {
                    out.insert(es[0], Owned(t.clone())); // replace
                    out.remove::<Owned>(es[1]);
                    out.despawn(es[2]);
                }
                _ => {}
            }
        });
        assert!(matches!(
            rt.try_frame(),
            Err(FrameError::HookPanicked { .. })
        ));
        assert_eq!(
            count(&token),
            4 + 2,
            "4 stored, the system's and the hook's clones"
        );
        rt.try_frame().unwrap();
        assert_eq!(count(&token), 2 + 2);
        assert_eq!(*seen.lock().unwrap(), 3);
        let mut w = rt.into_world();
        assert!(w.remove::<Owned>(es[0]).is_some());
        assert_eq!(count(&token), 1 + 1);
        assert_eq!(*seen.lock().unwrap(), 4);
    }
    assert_eq!(count(&token), 0, "dropping the world frees everything");
}

#[test]
fn restore_keeps_hooks_and_fires_none() {
    let mut w = world();
    w.snapshotting::<A>()
        .snapshotting::<B>()
        .snapshotting::<Plain>();
    let log = log_hooks(&mut w);
    let e = w.spawn((A(1),));
    let saved = w.snapshot().unwrap();
    w.despawn(e);
    w.spawn((B(2),));
    take(&log);
    w.restore(&saved);
    assert!(take(&log).is_empty(), "restoring fires no hook");
    w.insert(e, B(3));
    assert_eq!(take(&log), ["+B3@0"], "the hooks survive a restore");
}

/// Panics when dropped while armed.
struct Bomb(bool);
impl Component for Bomb {
    type Output = ();
}
impl Drop for Bomb {
    fn drop(&mut self) {
        if self.0 && !std::thread::panicking() {
            panic!("bomb dropped");
        }
    }
}

#[test]
fn panicking_drop_of_discarded_hook_commands_leaves_the_world_consistent() {
    let mut w = world();
    w.register::<Bomb>(|_: &mut Bomb, _: &[()]| {});
    let e = w.spawn((Plain(0),));
    w.on_add::<A>(|_: &World, e: Entity, _: &A, cmds: &mut Commands| {
        cmds.insert(e, Bomb(true)); // discarded with the panic: its drop panics too
        panic!("hook fails");
    });
    w.on_add::<A>(|_: &World, e: Entity, _: &A, cmds: &mut Commands| {
        cmds.insert(e, B(1)); // applied
    });
    let mut rt = Runtime::builder().workers(2).build(w);
    let once = Arc::new(Mutex::new(true));
    rt.add_system(move |_: &World, out: &mut Output| {
        if std::mem::take(&mut *once.lock().unwrap()) {
            out.insert(e, A(1));
        }
        out.insert(e, Plain(7));
    });
    // The first failure (the hook) is the one reported; the Drop panic was caught too.
    assert!(matches!(
        rt.try_frame(),
        Err(FrameError::HookPanicked { .. })
    ));
    let world = rt.world();
    assert_eq!(world.get::<A>(e), Some(&A(1)));
    assert_eq!(world.get::<B>(e), Some(&B(1)));
    assert!(!world.has::<Bomb>(e));
    rt.try_frame().unwrap();
    assert_eq!(rt.world().get::<Plain>(e), Some(&Plain(7)));
}

#[test]
fn memory_counts_the_hooks_command_buffers() {
    let output_bytes = |hooked: bool| {
        let mut w = world();
        if hooked {
            w.on_add::<B>(|_: &World, _: Entity, b: &B, cmds: &mut Commands| {
                for i in 0..50 {
                    cmds.spawn((Plain(b.0 + i),));
                }
            });
        }
        let mut rt = Runtime::builder().workers(1).build(w);
        rt.add_system(|w: &World, out: &mut Output| {
            if w.is_empty() {
                out.spawn((B(1),));
            }
        });
        rt.frame();
        assert_eq!(rt.world().len(), if hooked { 51 } else { 1 });
        rt.memory().output_bytes
    };
    let (plain, hooked) = (output_bytes(false), output_bytes(true));
    // 50 spawn commands and their staged values stay reserved in the hooks' lists.
    assert!(
        hooked >= plain + 50 * std::mem::size_of::<Plain>(),
        "{hooked} vs {plain}"
    );
}
