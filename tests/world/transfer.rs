//! Moving entities and trees between worlds, and renumbering them, on random forests:
//! values, parents and children (in order) survive; ids are never shared.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;
use runsync::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Val(u32);
impl Component for Val {
    type Output = Val;
}

fn world() -> World {
    let mut w = World::new();
    w.register_hierarchy();
    w.register::<Val>(merge::last);
    w.saving::<Val>();
    w
}

/// A forest: entity `i` has value `i` and, if `parents[i]` names an earlier entity
/// (`Some(j)` with `j < i`), that parent.
fn forest(parents: &[Option<usize>]) -> (World, Vec<Entity>) {
    let mut w = world();
    let es: Vec<Entity> = (0..parents.len())
        .map(|i| w.spawn((Val(i as u32),)))
        .collect();
    for (i, p) in parents.iter().enumerate() {
        if let Some(j) = p.filter(|&j| j < i) {
            w.set_parent(es[i], es[j]).unwrap();
        }
    }
    (w, es)
}

/// Every live entity's value, its parent's value and its children's values, by value.
type Shape = HashMap<u32, (Option<u32>, Vec<u32>)>;

fn shape(w: &World) -> Shape {
    let val = |e: Entity| w.get::<Val>(e).expect("alive, with a value").0;
    w.query::<(&Val,)>()
        .map(|(e, (v,))| {
            let kids = w.children(e).iter().map(|&c| val(c)).collect();
            (v.0, (w.parent(e).map(val), kids))
        })
        .collect()
}

fn parents() -> impl Strategy<Value = Vec<Option<usize>>> {
    prop::collection::vec(prop::option::weighted(0.6, 0usize..40), 1..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any set of entities moved to any free (or each other's) ids: the same forest by
    /// value, the old ids dead, spawns after it take none of the new ones.
    #[test]
    fn renumbering_keeps_the_forest(
        parents in parents(),
        picks in prop::collection::vec((any::<prop::sample::Index>(), 0u32..90, 1u32..6), 0..30),
    ) {
        let (mut w, es) = forest(&parents);
        let before = shape(&w);
        let mut moves = Vec::new();
        let (mut olds, mut news) = (HashSet::new(), HashSet::new());
        for (pick, index, generation) in picks {
            let old = es[pick.index(es.len())];
            let new = Entity::from_bits((u64::from(generation) << 32) | u64::from(index)).unwrap();
            if olds.insert(old) && news.insert(index) {
                moves.push((old, new));
            }
        }
        // A new id's slot must be free or its entity moving too (they move together):
        // drop moves onto a staying entity until none is left.
        loop {
            let moving: HashSet<u32> = moves.iter().map(|(o, _)| o.index()).collect();
            let n = moves.len();
            moves.retain(|(_, new)| {
                (new.index() as usize) >= es.len() || moving.contains(&new.index())
            });
            if moves.len() == n {
                break;
            }
        }
        w.renumber(&moves);
        prop_assert_eq!(shape(&w), before);
        prop_assert_eq!(w.len(), es.len());
        for &(old, new) in &moves {
            prop_assert!(w.is_alive(new));
            // Dead, unless another moved entity took its very id.
            let retaken = moves.iter().any(|&(_, n)| n == old);
            prop_assert!(old == new || retaken || !w.is_alive(old));
        }
        let fresh: Vec<Entity> = (0..10).map(|_| w.spawn(())).collect();
        for e in fresh {
            prop_assert!(moves.iter().all(|&(_, n)| n.index() != e.index()), "{e} reused");
        }
    }

    /// Random roots' trees exported, evicted and imported into another world: the two
    /// worlds together hold the forest; evicted ids are never handed out by the first.
    #[test]
    fn trees_move_whole(parents in parents(), movers in prop::collection::vec(any::<prop::sample::Index>(), 0..10)) {
        let (mut here, es) = forest(&parents);
        let before = shape(&here);
        let mut there = world();
        let mut moved = HashSet::new();
        for pick in movers {
            let root = here.ancestors(es[pick.index(es.len())]).last().unwrap_or(es[pick.index(es.len())]);
            if !moved.insert(root) || !here.is_alive(root) {
                continue;
            }
            let tree = here.tree(root);
            let mut records = Vec::new();
            for &e in &tree {
                here.export_entity(e, &mut records).unwrap();
            }
            prop_assert_eq!(here.evict_tree(root), tree.len());
            let mut src = &records[..];
            while !src.is_empty() {
                there.import_entity(&mut src).unwrap();
            }
        }
        let mut both = shape(&here);
        let theirs = shape(&there);
        prop_assert!(both.keys().all(|k| !theirs.contains_key(k)), "an entity in both");
        both.extend(theirs);
        prop_assert_eq!(both, before);
        let gone: HashSet<u32> = es.iter().filter(|&&e| !here.is_alive(e)).map(|e| e.index()).collect();
        for _ in 0..es.len() {
            let e = here.spawn(());
            prop_assert!(!gone.contains(&e.index()), "{e} took an evicted slot");
        }
    }
}
