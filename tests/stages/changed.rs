//! `Changed<C>` / `Added<C>` as a user sees them: what the last Sync wrote is what the next
//! frame's queries find.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use runsync::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(i32);
impl Component for Pos {
    type Output = Pos;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Hp(i32);
impl Component for Hp {
    type Output = i32;
}
impl std::ops::AddAssign<i32> for Hp {
    fn add_assign(&mut self, d: i32) {
        self.0 += d;
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Tag;
impl Component for Tag {
    type Output = ();
}

fn world(n: i32) -> (World, Vec<Entity>) {
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    w.register::<Hp>(merge::sum);
    w.register::<Tag>(|_: &mut Tag, _: &[()]| {});
    w.snapshotting::<Pos>();
    w.snapshotting::<Hp>();
    w.snapshotting::<Tag>();
    let es = (0..n).map(|i| w.spawn((Pos(i), Hp(10)))).collect();
    (w, es)
}

fn changed<C: Component>(w: &World) -> BTreeSet<Entity> {
    w.query_filtered::<(&C,), Changed<C>>()
        .map(|(e, _)| e)
        .collect()
}

fn added<C: Component>(w: &World) -> BTreeSet<Entity> {
    w.query::<(Added<C>,)>().map(|(e, _)| e).collect()
}

fn set(es: impl IntoIterator<Item = Entity>) -> BTreeSet<Entity> {
    es.into_iter().collect()
}

#[test]
fn next_frame_sees_exactly_what_a_system_wrote() {
    for workers in [1, 2, 8] {
        let (w, es) = world(100);
        let mut rt = Runtime::builder().workers(workers).build(w);
        let every_third: Vec<Entity> = es.iter().copied().step_by(3).collect();
        let targets = every_third.clone();
        rt.add_system(move |world: &World, out: &mut Output| {
            if world.resource::<Time>().frame == 0 {
                for &e in &targets {
                    // The value it already has: a write counts, whatever the value.
                    out.write::<Pos>(e, *world.get::<Pos>(e).unwrap());
                }
            }
        });
        // What frame 1's systems see, through a query inside Run.
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        rt.add_system(move |world: &World, _: &mut Output| {
            if world.resource::<Time>().frame == 1 {
                let c: Vec<Entity> = world
                    .query_filtered::<(&Pos,), Changed<Pos>>()
                    .map(|(e, _)| e)
                    .collect();
                seen2.lock().unwrap().extend(c);
            }
        });
        rt.frame();
        let w = rt.world();
        assert_eq!(changed::<Pos>(w), set(every_third.clone()), "{workers}");
        assert!(changed::<Hp>(w).is_empty());
        assert!(added::<Pos>(w).is_empty(), "a write is not an add");
        for &e in &es {
            assert_eq!(w.is_changed::<Pos>(e), every_third.contains(&e));
        }
        let q = w.query_filtered::<(&Pos,), Changed<Pos>>();
        assert_eq!(q.len(), every_third.len(), "exact len with a row filter");
        rt.frame();
        assert_eq!(
            set(seen.lock().unwrap().clone()),
            set(every_third),
            "in Run"
        );
        assert!(changed::<Pos>(rt.world()).is_empty(), "no writes: cleared");
    }
}

#[test]
fn a_merge_that_keeps_the_value_still_counts() {
    let (w, es) = world(3);
    let mut rt = Runtime::builder().build(w);
    let e = es[1];
    rt.add_system(move |_: &World, out: &mut Output| out.write::<Hp>(e, 0));
    rt.frame();
    assert_eq!(rt.world().get::<Hp>(e), Some(&Hp(10)));
    assert_eq!(changed::<Hp>(rt.world()), set([e]));
}

#[test]
fn added_after_spawn_and_insert_not_after_replace() {
    let (w, es) = world(4);
    let mut rt = Runtime::builder().workers(2).build(w);
    let spawned = Arc::new(Mutex::new(0));
    let s2 = spawned.clone();
    let (a, b) = (es[0], es[1]);
    rt.add_system(move |world: &World, out: &mut Output| {
        if world.resource::<Time>().frame == 1 {
            out.spawn((Pos(100), Tag));
            out.insert(a, Tag); // a gains Tag (moves table)
            out.insert(b, Pos(-1)); // b's Pos replaced
            *s2.lock().unwrap() += 1;
        }
    });
    // Between frames: spawn and insert mark too, until the next Sync starts.
    assert_eq!(added::<Pos>(rt.world()), set(es.clone()));
    rt.frame();
    assert!(
        added::<Pos>(rt.world()).is_empty(),
        "the first frame wrote nothing"
    );
    rt.frame();
    assert_eq!(*spawned.lock().unwrap(), 1);
    let w = rt.world();
    let new = w
        .query::<(&Pos,)>()
        .find(|(_, (p,))| p.0 == 100)
        .map(|(e, _)| e)
        .unwrap();
    assert_eq!(added::<Tag>(w), set([a, new]));
    assert_eq!(changed::<Tag>(w), set([a, new]));
    assert_eq!(added::<Pos>(w), set([new]), "a replace is not an add");
    assert_eq!(changed::<Pos>(w), set([b, new]));
    assert!(w.is_changed::<Pos>(b) && !w.is_added::<Pos>(b));
    assert!(!w.is_changed::<Hp>(new), "new has no Hp");
    // `a` moved to another table and kept no Pos mark (it had none).
    assert!(!w.is_changed::<Pos>(a));
}

#[test]
fn moved_entities_keep_their_marks_and_despawned_ones_are_gone() {
    let (w, es) = world(10);
    let mut rt = Runtime::builder().workers(2).build(w);
    let es2 = es.clone();
    rt.add_system(move |world: &World, out: &mut Output| {
        if world.resource::<Time>().frame == 1 {
            for &e in &es2[..6] {
                out.write::<Pos>(e, Pos(7));
            }
            out.insert(es2[1], Tag); // moves to (Pos, Hp, Tag), keeps its Pos mark
            out.remove::<Hp>(es2[2]); // moves to (Pos), keeps its Pos mark
            out.despawn(es2[3]); // gone
            out.remove::<Pos>(es2[4]); // loses Pos and its mark
            out.despawn(es2[7]); // an unmarked row swap-removed: the last row fills it
        }
    });
    rt.frame();
    rt.frame();
    let w = rt.world();
    assert_eq!(changed::<Pos>(w), set([es[0], es[1], es[2], es[5]]));
    assert!(w.is_changed::<Pos>(es[1]) && w.is_changed::<Pos>(es[2]));
    assert!(!w.is_changed::<Pos>(es[3]) && !w.is_alive(es[3]));
    assert!(!w.is_changed::<Pos>(es[9]), "moved into a hole, unmarked");
    assert!(!w.is_changed::<Hp>(es[1]), "its Hp was not written");
    assert_eq!(added::<Tag>(w), set([es[1]]));
    assert!(added::<Pos>(w).is_empty());
}

#[test]
fn between_frames_spawn_and_insert_mark_get_mut_does_not() {
    let (mut w, es) = world(3);
    w.insert(es[0], Tag);
    assert!(
        w.is_added::<Tag>(es[0]) && w.is_added::<Pos>(es[0]),
        "moved, kept"
    );
    let mut rt = Runtime::builder().build(w);
    rt.frame();
    let w = rt.world_mut();
    assert!(changed::<Pos>(w).is_empty());
    w.get_mut::<Pos>(es[1]).unwrap().0 = 9;
    for (_, (p,)) in w.query_mut::<(&mut Pos,)>() {
        p.0 += 1;
    }
    assert!(changed::<Pos>(w).is_empty(), "in-place edits do not mark");
    w.insert(es[2], Pos(0));
    assert_eq!(changed::<Pos>(w), set([es[2]]));
    assert!(added::<Pos>(w).is_empty(), "a replace between frames");
    let e = w.spawn((Pos(1),));
    assert_eq!(added::<Pos>(w), set([e]));
    let batch = w.spawn_batch((0..3).map(|i| (Pos(i),)));
    assert_eq!(added::<Pos>(w), set(batch.iter().copied().chain([e])));
}

#[test]
fn par_for_each_and_write_each_respect_the_filter() {
    let (w, es) = world(300);
    let mut rt = Runtime::builder().workers(2).build(w);
    let marked: Vec<Entity> = es.iter().copied().filter(|e| e.index() % 7 == 0).collect();
    let m2 = marked.clone();
    rt.add_system(move |world: &World, out: &mut Output| {
        let frame = world.resource::<Time>().frame;
        if frame == 0 {
            for &e in &m2 {
                out.write::<Hp>(e, 1);
            }
        } else if frame == 1 {
            // Only the entities whose Hp changed: +100 each, two ways.
            out.par_for_each::<(Changed<Hp>,)>(|e, _, out| out.write::<Hp>(e, 100));
            out.write_each::<Hp, (Changed<Hp>,)>(|_, _| 1000);
        }
    });
    rt.frame();
    rt.frame();
    let w = rt.world();
    for &e in &es {
        let want = if marked.contains(&e) {
            10 + 1 + 1100
        } else {
            10
        };
        assert_eq!(w.get::<Hp>(e), Some(&Hp(want)), "{e:?}");
    }
}

#[test]
fn snapshots_keep_marks_so_a_rerun_sees_the_same() {
    let (w, es) = world(20);
    let mut rt = Runtime::builder().workers(2).build(w);
    let es2 = es.clone();
    // Frame k writes Pos of a frame-dependent subset; every frame counts Changed<Pos> into
    // Hp of entity 0, so the marks a frame sees become state.
    rt.add_system(move |world: &World, out: &mut Output| {
        let f = world.resource::<Time>().frame as usize;
        for &e in es2.iter().skip(f % 3).step_by(2 + f % 4) {
            out.write::<Pos>(e, Pos(f as i32));
        }
        let n = world.query::<(Changed<Pos>,)>().len() as i32;
        out.write::<Hp>(es2[0], n);
    });
    for _ in 0..3 {
        rt.frame();
    }
    let snap = rt.snapshot().unwrap();
    let marks_then = changed::<Pos>(rt.world());
    assert!(!marks_then.is_empty());
    let mut trace = Vec::new();
    for _ in 0..4 {
        rt.frame();
        trace.push((rt.world().checksum(), changed::<Pos>(rt.world())));
    }
    rt.restore(&snap);
    assert_eq!(changed::<Pos>(rt.world()), marks_then, "restored marks");
    for (f, want) in trace.iter().enumerate() {
        rt.frame();
        let got = (rt.world().checksum(), changed::<Pos>(rt.world()));
        assert_eq!(&got, want, "re-run frame {f}");
    }
}

/// `next()`, `fold()` (internal iteration, a word of marks at a time), a mix of both, and
/// `len()` agree with `is_changed` / `is_added`, across word boundaries and with two row
/// filters at once.
#[test]
fn next_fold_and_len_agree_across_words_and_filters() {
    let (w, es) = world(700);
    let mut rt = Runtime::builder().workers(2).build(w);
    let es2 = es.clone();
    rt.add_system(move |world: &World, out: &mut Output| {
        if world.resource::<Time>().frame == 1 {
            for (i, &e) in es2.iter().enumerate() {
                if i % 3 == 0 || (130..260).contains(&i) {
                    out.write::<Pos>(e, Pos(0));
                }
                if i % 5 == 0 {
                    out.insert(e, Tag);
                }
            }
        }
    });
    rt.frame();
    rt.frame();
    let w = rt.world();
    let all: Vec<Entity> = w.query::<(&Pos,)>().map(|(e, _)| e).collect();
    let want_c: Vec<Entity> = all
        .iter()
        .copied()
        .filter(|&e| w.is_changed::<Pos>(e))
        .collect();
    let want_ca: Vec<Entity> = want_c
        .iter()
        .copied()
        .filter(|&e| w.is_added::<Tag>(e))
        .collect();
    assert!(want_c.len() > 300 && !want_ca.is_empty());
    // Iteration order may differ from `all` (tagged entities moved table): compare sets.
    let check = |got: Vec<Entity>, want: &[Entity], what: &str| {
        assert_eq!(set(got.clone()), set(want.to_vec()), "{what}");
        assert_eq!(got.len(), want.len(), "{what}: each once");
    };
    let mut by_next = Vec::new();
    // A `for` loop calls `next()`, row by row.
    for (e, _) in w.query::<(Changed<Pos>,)>() {
        by_next.push(e);
    }
    check(by_next.clone(), &want_c, "next");
    let by_fold = w
        .query::<(Changed<Pos>,)>()
        .fold(Vec::new(), |mut v, (e, _)| {
            v.push(e);
            v
        });
    assert_eq!(by_fold, by_next, "fold visits what next visits, in order");
    for k in [0, 1, 63, 64, 65, 200] {
        let mut it = w.query::<(Changed<Pos>,)>();
        let mut mixed: Vec<Entity> = it.by_ref().take(k).map(|(e, _)| e).collect();
        assert_eq!(it.len(), want_c.len() - mixed.len(), "len after {k}");
        mixed.extend(it.fold(Vec::new(), |mut v, (e, _)| {
            v.push(e);
            v
        }));
        assert_eq!(mixed, by_next, "{k} by next, then fold");
    }
    let q = w.query_filtered::<(&Pos,), (Changed<Pos>, Added<Tag>)>();
    assert_eq!(q.len(), want_ca.len());
    check(q.map(|(e, _)| e).collect(), &want_ca, "two filters");
    let sum: i32 = w
        .query_filtered::<(&Pos,), (Changed<Pos>, Added<Tag>)>()
        .map(|(_, (p,))| p.0)
        .sum();
    assert_eq!(sum, 0, "written entities hold Pos(0)");
}
