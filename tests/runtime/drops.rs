//! Components and outputs that own memory are dropped exactly once, on every path:
//! despawn, remove, insert-replace, table moves, merged and dropped outputs, structural
//! commands aimed at dead entities, discarded frames, and dropping the runtime.

use std::sync::Arc;

use runsync::prelude::*;

/// Owns a clone of the test's token; `Arc::strong_count` counts the live ones.
#[derive(Clone, Debug)]
struct Owned(#[allow(dead_code)] Arc<()>);
impl Component for Owned {
    type Output = Owned; // outputs own memory too
}

#[derive(Clone, Debug)]
struct Name(String);
impl Component for Name {
    type Output = String;
}

#[derive(Clone, Copy, Debug)]
struct Other(#[allow(dead_code)] u8);
impl Component for Other {
    type Output = Other;
}

fn count(t: &Arc<()>) -> usize {
    Arc::strong_count(t) - 1
}

#[test]
fn no_leak_no_double_drop_through_sync() {
    let token = Arc::new(());
    {
        let mut w = World::new();
        w.register::<Owned>(merge::last);
        w.register::<Name>(|n: &mut Name, s: &[String]| n.0 = s.concat());
        w.register::<Other>(merge::last);
        let a = w.spawn((Owned(token.clone()), Name("a".into())));
        let b = w.spawn((Owned(token.clone()), Other(1)));
        let c = w.spawn((Other(2),));
        let dead = w.spawn((Owned(token.clone()),));
        w.despawn(dead);
        assert_eq!(count(&token), 2);

        let mut rt = Runtime::builder().workers(2).build(w);
        let t = token.clone();
        rt.add_system(move |_: &World, out: &mut Output| {
            out.write::<Owned>(a, Owned(t.clone())); // merged: replaces a's value
            out.write::<Owned>(a, Owned(t.clone())); // same frame, last wins
            out.write::<Owned>(c, Owned(t.clone())); // c lacks Owned: dropped
            out.write::<Owned>(dead, Owned(t.clone())); // dead: dropped
            out.insert(b, Owned(t.clone())); // replaces b's value
            out.insert(dead, Owned(t.clone())); // dead: dropped
            out.insert(c, Owned(t.clone())); // moves c to a new table
            out.remove::<Other>(b); // moves b, keeping its Owned
            out.write::<Name>(a, "x".repeat(100));
        });
        rt.frame();
        assert_eq!(rt.stats().dropped, 3);
        // a, b, c each hold exactly one Owned; the system's clone is the +1.
        assert_eq!(count(&token), 3 + 1);
        rt.frame();
        assert_eq!(count(&token), 3 + 1);
        assert_eq!(rt.world().get::<Name>(a).unwrap().0.len(), 100);

        // A failed frame discards buffered outputs and inserts without leaking them.
        let t = token.clone();
        rt.add_system(move |_: &World, out: &mut Output| {
            out.spawn((Owned(t.clone()),));
            panic!("fail the frame");
        });
        assert!(rt.try_frame().is_err());
        assert_eq!(count(&token), 3 + 2);

        let mut world = rt.into_world();
        world.despawn(a);
        assert_eq!(count(&token), 2);
        drop(world.remove::<Owned>(b));
        assert_eq!(count(&token), 1);
    }
    assert_eq!(count(&token), 0, "dropping the world frees everything");
}

#[test]
fn despawned_in_sync_and_respawned() {
    let token = Arc::new(());
    {
        let mut w = World::new();
        w.register::<Owned>(merge::last);
        for _ in 0..100 {
            w.spawn((Owned(token.clone()),));
        }
        let mut rt = Runtime::builder().workers(2).build(w);
        let t = token.clone();
        rt.add_system(move |world: &World, out: &mut Output| {
            for (i, (e, _)) in world.query::<(&Owned,)>().enumerate() {
                if i % 2 == 0 {
                    out.despawn(e);
                    out.spawn((Owned(t.clone()),));
                }
            }
        });
        for _ in 0..20 {
            rt.frame();
            assert_eq!(count(&token), 100 + 1);
        }
    }
    assert_eq!(count(&token), 0);
}

/// Row writes own their values from `set` on: merged, replaced by a second `set`,
/// settled among plain writes, or dropped with a system that panics mid-loop — each value
/// dropped once.
#[test]
fn row_writes_drop_once_on_every_path() {
    let token = Arc::new(());
    {
        let mut w = World::new();
        w.register::<Owned>(merge::last);
        w.register::<Name>(|n: &mut Name, s: &[String]| n.0 = s.concat());
        let es: Vec<Entity> = (0..70)
            .map(|i| w.spawn((Owned(token.clone()), Name(format!("{i}")))))
            .collect();
        let mut rt = Runtime::builder().workers(2).build(w);
        let t = token.clone();
        let first = es[0];
        rt.add_system(move |_: &World, out: &mut Output| {
            for (e, (mut owned, mut name)) in out.query::<(Write<Owned>, Write<Name>)>() {
                owned.set(Owned(t.clone()));
                if e.index() % 2 == 0 {
                    owned.set(Owned(t.clone())); // replaces: the first is dropped now
                    name.set("s".to_string());
                }
            }
            out.write::<Name>(first, "w".to_string()); // settles the row writes first
        });
        let t2 = token.clone();
        let boom = rt.add_system(move |_: &World, out: &mut Output| {
            for (i, (_, (mut owned,))) in out.query::<(Write<Owned>,)>().enumerate() {
                owned.set(Owned(t2.clone()));
                if i == 40 {
                    panic!("mid-loop");
                }
            }
        });
        rt.set_enabled(boom, false);
        rt.frame();
        // 70 stored values, plus the clone each system closure holds.
        assert_eq!(
            count(&token),
            72,
            "one stored value per entity, nothing pending"
        );
        assert_eq!(
            rt.world().get::<Name>(first).map(|n| n.0.as_str()),
            Some("sw")
        );
        rt.set_enabled(boom, true);
        assert!(
            rt.try_frame().is_err(),
            "the panicking system fails the frame"
        );
        assert_eq!(
            count(&token),
            72,
            "the failed frame's row-written values were dropped"
        );
        drop(rt);
    }
    assert_eq!(count(&token), 0);
}

/// Row writes set from `par_for_each` chunks on several threads: every value stored or
/// dropped once (under Miri, also checked for data races between the chunks).
#[test]
fn row_writes_from_parallel_chunks_drop_once() {
    let token = Arc::new(());
    {
        let mut w = World::new();
        w.register::<Owned>(merge::last);
        for _ in 0..40 {
            w.spawn((Owned(token.clone()),));
        }
        let mut rt = Runtime::builder().workers(2).build(w);
        let t = token.clone();
        rt.add_system(move |_: &World, out: &mut Output| {
            out.par_for_each::<(Write<Owned>,)>(|e, (mut owned,), out| {
                owned.set(Owned(t.clone()));
                if e.index() % 7 == 0 {
                    out.write::<Owned>(e, Owned(t.clone())); // after the row writes: wins
                }
            });
        });
        rt.frame();
        rt.frame();
        // 40 stored values, plus the closure's clone.
        assert_eq!(count(&token), 41);
    }
    assert_eq!(count(&token), 0);
}
