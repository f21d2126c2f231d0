//! Parents and children (`World::register_hierarchy`): reparenting, cascading despawn,
//! cycles, against a sequential reference model at 1, 2 and 8 workers (and
//! single-threaded, when the suite runs with that feature); deep and wide trees; hooks;
//! rollback.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use runsync::prelude::*;
use runsync::{Checksummer, HierarchyError};

/// A unique label, so the model can name entities without knowing their ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tag(u64);
impl Component for Tag {
    type Output = Tag;
}
impl Checksum for Tag {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// One structural operation, on tags.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    SetParent(u64, u64),
    RemoveParent(u64),
    Despawn(u64),
    /// A new entity with this tag, under this parent (or a root).
    Spawn(u64, Option<u64>),
}

/// The operations system `s` emits in frame `frame`, given the live tags (sorted).
fn ops(frame: u64, s: u64, alive: &[u64]) -> Vec<Op> {
    let mut out = Vec::new();
    if alive.is_empty() {
        return out;
    }
    let pick = |r: u64| alive[(r % alive.len() as u64) as usize];
    for n in 0..12u64 {
        let r = mix(frame * 1_000_003 + s * 1009 + n);
        let (a, b) = (pick(r >> 8), pick(r >> 24));
        out.push(match r % 10 {
            0..=4 => Op::SetParent(a, b), // many: cycles happen
            5 => Op::RemoveParent(a),
            6 => Op::Despawn(a),
            7 | 8 => Op::Spawn(1_000_000 + frame * 1000 + s * 100 + n, Some(a)),
            _ => Op::Spawn(1_000_000 + frame * 1000 + s * 100 + n, None),
        });
    }
    out
}

fn apply(out: &mut Output, ids: &BTreeMap<u64, Entity>, op: Op) {
    match op {
        Op::SetParent(a, b) => out.set_parent(ids[&a], ids[&b]),
        Op::RemoveParent(a) => out.remove_parent(ids[&a]),
        Op::Despawn(a) => out.despawn(ids[&a]),
        Op::Spawn(t, Some(p)) => {
            out.spawn((Tag(t), ChildOf(ids[&p])));
        }
        Op::Spawn(t, None) => {
            out.spawn((Tag(t),));
        }
    }
}

const SYSTEMS: u64 = 3;
const START: u64 = 80;

fn start_world() -> World {
    let mut w = World::new();
    w.register::<Tag>(merge::last);
    w.snapshotting::<Tag>().checksumming::<Tag>();
    w.register_hierarchy();
    let es: Vec<Entity> = (0..START).map(|t| w.spawn((Tag(t),))).collect();
    for t in 1..START {
        if t % 4 != 0 {
            w.set_parent(es[t as usize], es[(mix(t) % t) as usize])
                .unwrap();
        }
    }
    w
}

/// Parent and children of every live entity, by tag.
type Shape = BTreeMap<u64, (Option<u64>, Vec<u64>)>;

fn shape(w: &World) -> Shape {
    let tag = |e: Entity| w.get::<Tag>(e).unwrap().0;
    w.query::<(&Tag,)>()
        .map(|(e, (t,))| {
            let kids = w.children(e).iter().map(|&c| tag(c)).collect();
            (t.0, (w.parent(e).map(tag), kids))
        })
        .collect()
}

fn run(workers: usize, frames: u64) -> (Vec<(Shape, u64, u64)>, Vec<u64>) {
    let mut rt = Runtime::builder().workers(workers).build(start_world());
    for s in 0..SYSTEMS {
        rt.add_system(move |w: &World, out: &mut Output| {
            let ids: BTreeMap<u64, Entity> =
                w.query::<(&Tag,)>().map(|(e, (t,))| (t.0, e)).collect();
            let alive: Vec<u64> = ids.keys().copied().collect();
            let frame = w.resource::<Time>().frame;
            for op in ops(frame, s, &alive) {
                apply(out, &ids, op);
            }
        });
    }
    // Commands from parallel chunks too (they commute: roots made of the odd tags whose
    // hash says so).
    rt.add_system(|w: &World, out: &mut Output| {
        let frame = w.resource::<Time>().frame;
        out.par_for_each::<(&Tag, With<ChildOf>)>(|e, (t, ()), out| {
            if mix(t.0 ^ frame << 32) % 13 == 0 {
                out.remove_parent(e);
            }
        });
    });
    let mut frames_out = Vec::new();
    let mut sums = Vec::new();
    for _ in 0..frames {
        rt.frame();
        let st = rt.stats();
        frames_out.push((shape(rt.world()), st.cycles, st.despawned));
        sums.push(rt.world().checksum());
    }
    (frames_out, sums)
}

/// The reference: a map of parents and ordered children lists, the operations applied
/// one by one as documented.
#[derive(Default)]
struct Model {
    parent: BTreeMap<u64, Option<u64>>,
    children: BTreeMap<u64, Vec<u64>>,
    cycles: u64,
    despawned: u64,
}

impl Model {
    fn alive(&self, t: u64) -> bool {
        self.parent.contains_key(&t)
    }
    fn detach(&mut self, c: u64) {
        if let Some(Some(p)) = self.parent.get(&c).copied() {
            let list = self.children.get_mut(&p).unwrap();
            list.retain(|&x| x != c);
        }
    }
    fn subtree(&self, t: u64, out: &mut Vec<u64>) {
        out.push(t);
        for &c in &self.children[&t] {
            self.subtree(c, out);
        }
    }
    fn apply(&mut self, op: Op) {
        match op {
            Op::SetParent(c, p) => {
                if !self.alive(c) || !self.alive(p) {
                    return;
                }
                let mut up = Some(p);
                while let Some(x) = up {
                    if x == c {
                        self.cycles += 1;
                        return;
                    }
                    up = self.parent[&x];
                }
                if self.parent[&c] != Some(p) {
                    self.detach(c);
                    self.children.get_mut(&p).unwrap().push(c);
                    self.parent.insert(c, Some(p));
                }
            }
            Op::RemoveParent(c) => {
                if self.alive(c) {
                    self.detach(c);
                    self.parent.insert(c, None);
                }
            }
            Op::Despawn(c) => {
                if !self.alive(c) {
                    return;
                }
                self.detach(c);
                let mut all = Vec::new();
                self.subtree(c, &mut all);
                for t in all {
                    self.parent.remove(&t);
                    self.children.remove(&t);
                    self.despawned += 1;
                }
            }
            Op::Spawn(t, p) => {
                if p.is_some_and(|p| !self.alive(p)) {
                    return;
                }
                self.parent.insert(t, p);
                self.children.insert(t, Vec::new());
                if let Some(p) = p {
                    self.children.get_mut(&p).unwrap().push(t);
                }
            }
        }
    }
    fn shape(&self) -> Shape {
        self.parent
            .iter()
            .map(|(&t, &p)| (t, (p, self.children[&t].clone())))
            .collect()
    }
}

fn reference(frames: u64) -> Vec<(Shape, u64, u64)> {
    let w = start_world();
    let mut m = Model::default();
    for (t, (p, kids)) in shape(&w) {
        m.parent.insert(t, p);
        m.children.insert(t, kids);
    }
    let mut out = Vec::new();
    for frame in 0..frames {
        let alive: Vec<u64> = m.parent.keys().copied().collect();
        let mut all: Vec<Op> = (0..SYSTEMS).flat_map(|s| ops(frame, s, &alive)).collect();
        let with_parent: BTreeSet<u64> = alive
            .iter()
            .copied()
            .filter(|t| m.parent[t].is_some())
            .collect();
        all.extend(
            with_parent
                .into_iter()
                .filter(|t| mix(t ^ frame << 32) % 13 == 0)
                .map(Op::RemoveParent),
        );
        m.cycles = 0;
        m.despawned = 0;
        for op in all {
            m.apply(op);
        }
        out.push((m.shape(), m.cycles, m.despawned));
    }
    out
}

#[test]
fn same_hierarchy_as_a_sequential_model_at_any_worker_count() {
    let want = reference(25);
    assert!(
        want.iter().map(|f| f.1).sum::<u64>() > 0,
        "cycles were tried"
    );
    assert!(
        want.iter().map(|f| f.2).sum::<u64>() > 20,
        "subtrees despawned"
    );
    let (one, sums) = run(1, 25);
    for (f, (got, want)) in one.iter().zip(&want).enumerate() {
        assert_eq!(got, want, "frame {f}");
    }
    for workers in [2, 8] {
        let (got, s) = run(workers, 25);
        assert_eq!(got, one, "{workers} workers");
        assert_eq!(s, sums, "{workers} workers: checksums");
    }
}

/// A world with a `Tag` type, the hierarchy, and hooks that log every `Tag` removed.
fn logged() -> (World, Arc<Mutex<Vec<u64>>>) {
    let mut w = World::new();
    w.register::<Tag>(merge::last);
    w.register_hierarchy();
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    w.on_remove::<Tag>(move |w: &World, e: Entity, t: &Tag, _: &mut Commands| {
        // Hooks of a cascade see the whole subtree alive, parents included.
        if let Some(p) = w.parent(e) {
            assert!(w.is_alive(p), "the parent is still alive");
        }
        l.lock().unwrap().push(t.0);
    });
    (w, log)
}

#[test]
fn cascading_despawn_of_a_deep_chain_of_10k() {
    let (mut w, log) = logged();
    let root = w.spawn((Tag(0),));
    let mut last = root;
    for t in 1..=10_000 {
        last = w.spawn((Tag(t), ChildOf(last)));
    }
    let other = w.spawn((Tag(99_999),));
    assert_eq!(w.ancestors(last).count(), 10_000);
    let mut rt = Runtime::builder().workers(2).build(w);
    rt.add_system(move |_: &World, out: &mut Output| out.despawn(root));
    rt.frame();
    assert_eq!(rt.stats().despawned, 10_001);
    assert_eq!(rt.world().len(), 1);
    assert!(rt.world().is_alive(other));
    assert_eq!(
        *log.lock().unwrap(),
        (0..=10_000).collect::<Vec<_>>(),
        "pre-order"
    );
}

#[test]
fn cascading_despawn_of_a_wide_tree_of_10k() {
    let (mut w, log) = logged();
    let root = w.spawn((Tag(0),));
    let kids = w.spawn_batch((1..=100).map(|t| (Tag(t), ChildOf(root))));
    for (k, &kid) in kids.iter().enumerate() {
        let base = 1000 + 100 * k as u64;
        w.spawn_batch((0..99).map(|i| (Tag(base + i), ChildOf(kid))));
    }
    assert_eq!(w.children(root).len(), 100);
    assert_eq!(w.descendants(root).count(), 100 + 100 * 99);
    let mut rt = Runtime::builder().workers(8).build(w);
    rt.add_system(move |_: &World, out: &mut Output| out.despawn(root));
    rt.frame();
    assert_eq!(rt.stats().despawned, 10_001);
    assert!(rt.world().is_empty());
    let mut want = vec![0];
    for k in 0..100u64 {
        want.push(k + 1);
        want.extend((0..99).map(|i| 1000 + 100 * k + i));
    }
    assert_eq!(*log.lock().unwrap(), want, "pre-order, children in order");
}

#[test]
fn despawning_a_child_detaches_it_and_the_last_child_takes_children_away() {
    let mut w = World::new();
    w.register_hierarchy();
    let p = w.spawn(());
    let a = w.spawn((ChildOf(p),));
    let b = w.spawn((ChildOf(p),));
    let c = w.spawn((ChildOf(p),));
    assert_eq!(w.children(p), [a, b, c]);
    w.despawn(b);
    assert_eq!(w.children(p), [a, c]);
    w.remove_parent(a);
    w.despawn(c);
    assert!(w.children(p).is_empty());
    assert!(!w.has::<Children>(p), "no child, no Children");
    assert_eq!(w.query::<(Without<ChildOf>,)>().count(), 2);
}

#[test]
fn cycles_are_rejected_counted_and_explained() {
    let mut w = World::new();
    w.register_hierarchy();
    let a = w.spawn(());
    let b = w.spawn((ChildOf(a),));
    let c = w.spawn((ChildOf(b),));
    // Between frames: an error, nothing changed.
    let err = w.set_parent(a, c).unwrap_err();
    assert_eq!(
        err,
        HierarchyError::Cycle {
            child: a,
            parent: c
        }
    );
    assert!(err.to_string().contains("would make a cycle"), "{err}");
    assert_eq!(
        w.set_parent(a, a),
        Err(HierarchyError::Cycle {
            child: a,
            parent: a
        })
    );
    assert_eq!(w.parent(a), None);
    // In a frame: two systems that each saw a valid world; the first applied wins.
    let mut rt = Runtime::builder().workers(2).build(w);
    rt.add_system(move |_: &World, out: &mut Output| out.set_parent(a, c));
    rt.add_system(move |_: &World, out: &mut Output| out.remove_parent(b));
    rt.frame();
    let st = rt.stats();
    assert_eq!((st.cycles, st.dropped), (1, 1));
    assert_eq!(
        st.first_cycle,
        Some(HierarchyError::Cycle {
            child: a,
            parent: c
        })
    );
    let w = rt.world();
    assert_eq!(
        (w.parent(a), w.parent(b), w.parent(c)),
        (None, None, Some(b))
    );
}

#[test]
#[should_panic(expected = "would make a cycle")]
fn inserting_a_cyclic_child_of_between_frames_panics_with_the_error() {
    let mut w = World::new();
    w.register_hierarchy();
    let a = w.spawn(());
    let b = w.spawn((ChildOf(a),));
    w.insert(a, ChildOf(b));
}

#[test]
fn reparenting_during_a_despawn_of_the_old_parent_follows_command_order() {
    let make = |reparent_first: bool| {
        let mut w = World::new();
        w.register_hierarchy();
        let old = w.spawn(());
        let new = w.spawn(());
        let kid = w.spawn((ChildOf(old),));
        let grandkid = w.spawn((ChildOf(kid),));
        let mut rt = Runtime::builder().workers(2).build(w);
        let despawn = move |_: &World, out: &mut Output| out.despawn(old);
        let reparent = move |_: &World, out: &mut Output| out.set_parent(kid, new);
        if reparent_first {
            rt.add_system(reparent);
            rt.add_system(despawn);
        } else {
            rt.add_system(despawn);
            rt.add_system(reparent);
        }
        rt.frame();
        (rt, old, new, kid, grandkid)
    };
    // The despawn first: the child goes with its parent; the reparent finds it dead.
    let (rt, old, new, kid, grandkid) = make(false);
    let w = rt.world();
    assert!(!w.is_alive(old) && !w.is_alive(kid) && !w.is_alive(grandkid));
    assert!(w.children(new).is_empty());
    assert_eq!((rt.stats().despawned, rt.stats().dropped), (3, 1));
    // The reparent first: the child (and its own child) survive under the new parent.
    let (rt, old, new, kid, grandkid) = make(true);
    let w = rt.world();
    assert!(!w.is_alive(old));
    assert_eq!(w.children(new), [kid]);
    assert_eq!(w.children(kid), [grandkid]);
    assert_eq!((rt.stats().despawned, rt.stats().dropped), (1, 0));
}

#[test]
fn a_child_spawned_under_a_parent_despawned_first_is_dropped() {
    let mut w = World::new();
    w.register::<Tag>(merge::last);
    w.register_hierarchy();
    let ship = w.spawn((Tag(1),));
    let mut rt = Runtime::builder().workers(2).build(w);
    rt.add_system(move |_: &World, out: &mut Output| out.despawn(ship));
    rt.add_system(move |_: &World, out: &mut Output| {
        out.spawn((Tag(2), ChildOf(ship)));
    });
    rt.frame();
    assert!(rt.world().is_empty(), "no orphan turret");
    assert_eq!((rt.stats().spawned, rt.stats().dropped), (0, 1));
}

#[test]
fn rollback_across_a_hierarchy_replays_the_same_frames() {
    let mut rt = Runtime::builder().workers(2).build(start_world());
    for s in 0..SYSTEMS {
        rt.add_system(move |w: &World, out: &mut Output| {
            let ids: BTreeMap<u64, Entity> =
                w.query::<(&Tag,)>().map(|(e, (t,))| (t.0, e)).collect();
            let alive: Vec<u64> = ids.keys().copied().collect();
            for op in ops(w.resource::<Time>().frame, s, &alive) {
                apply(out, &ids, op);
            }
        });
    }
    for _ in 0..5 {
        rt.frame();
    }
    let saved = rt
        .snapshot()
        .expect("the hierarchy is opted into snapshots");
    let sums = |rt: &mut Runtime| {
        (0..8)
            .map(|_| {
                rt.frame();
                (rt.world().checksum(), shape(rt.world()))
            })
            .collect::<Vec<_>>()
    };
    let first = sums(&mut rt);
    rt.restore(&saved);
    assert_eq!(sums(&mut rt), first);
}

#[test]
#[should_panic(expected = "kept by Sync")]
fn children_cannot_be_inserted_by_hand() {
    let mut w = World::new();
    w.register_hierarchy();
    let e = w.spawn(());
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system(move |_: &World, out: &mut Output| out.insert(e, Children::default()));
    rt.frame();
}

#[test]
#[should_panic(expected = "cannot be changed in place")]
fn child_of_cannot_be_changed_in_place() {
    let mut w = World::new();
    w.register_hierarchy();
    let a = w.spawn(());
    let b = w.spawn((ChildOf(a),));
    w.get_mut::<ChildOf>(b);
}

#[test]
#[should_panic(expected = "world.register_hierarchy()")]
fn child_of_without_the_hierarchy_says_how_to_register_it() {
    let mut w = World::new();
    let a = w.spawn(());
    w.spawn((ChildOf(a),));
}

#[test]
fn hooks_see_a_reparent_as_a_replace() {
    let mut w = World::new();
    w.register_hierarchy();
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    w.on_add::<ChildOf>(move |w: &World, e: Entity, c: &ChildOf, _: &mut Commands| {
        assert!(w.children(c.0).contains(&e), "the parent lists it already");
        l.lock().unwrap().push(format!("+{}", c.0.index()));
    });
    let l = log.clone();
    w.on_remove::<ChildOf>(move |w: &World, e: Entity, c: &ChildOf, _: &mut Commands| {
        assert!(w.children(c.0).contains(&e), "the parent still lists it");
        l.lock().unwrap().push(format!("-{}", c.0.index()));
    });
    let (a, b) = (w.spawn(()), w.spawn(()));
    let c = w.spawn((ChildOf(a),));
    w.set_parent(c, b).unwrap();
    w.remove_parent(c);
    assert_eq!(*log.lock().unwrap(), ["+0", "-0", "+1", "-1"]);
}
