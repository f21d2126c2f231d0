//! Transforms in a hierarchy: [`Transform`] (local), [`GlobalTransform`] (world) and
//! [`PropagateTransforms`], which computes the second from the first down every tree.

use std::borrow::Cow;
use std::cell::RefCell;

use glam::Vec2;
use runsync::prelude::*;
use serde::{Deserialize, Serialize};

use crate::Position;

/// Where an entity is relative to its parent (a root: relative to the world, after its
/// [`Position`] if it has one): a translation, then a rotation.
///
/// The rotation is a unit vector (`cos θ, sin θ`), not an angle, so that composing
/// transforms is multiplications and additions only: bit for bit the same on every
/// platform, with no `sin`/`cos` per entity. Make one with [`Vec2::from_angle`].
///
/// **Output: `Transform`; merge: last write wins** (a transform is set, not accumulated).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Transform {
    /// Offset from the parent's origin, in the parent's frame.
    pub translation: Vec2,
    /// Rotation relative to the parent, as a unit vector (`Vec2::X` for none).
    pub rotation: Vec2,
}

impl Transform {
    /// No offset, no rotation.
    pub const IDENTITY: Transform = Transform {
        translation: Vec2::ZERO,
        rotation: Vec2::X,
    };

    /// An offset, no rotation.
    pub fn from_translation(translation: Vec2) -> Transform {
        Transform {
            translation,
            ..Transform::IDENTITY
        }
    }

    /// `self` then `local`: where a child at `local` in this frame is in the outer one.
    #[inline]
    pub fn then(&self, local: &Transform) -> Transform {
        Transform {
            translation: self.translation + self.rotation.rotate(local.translation),
            rotation: self.rotation.rotate(local.rotation),
        }
    }
}

impl Default for Transform {
    fn default() -> Self {
        Transform::IDENTITY
    }
}

impl Component for Transform {
    type Output = Transform;
}

/// Where an entity is in the world: its ancestors' [`Transform`]s and its own, composed
/// root first. Written every frame by [`PropagateTransforms`] (never by hand: it would be
/// overwritten), from the world of the previous Sync. Spawn every entity that has a
/// [`Transform`] with one (e.g. `GlobalTransform::default()`).
///
/// **Output: `GlobalTransform`; merge: last write wins.**
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GlobalTransform(pub Transform);

impl GlobalTransform {
    /// The position in the world.
    #[inline]
    pub fn translation(&self) -> Vec2 {
        self.0.translation
    }

    /// The rotation in the world, as a unit vector.
    #[inline]
    pub fn rotation(&self) -> Vec2 {
        self.0.rotation
    }
}

impl Component for GlobalTransform {
    type Output = GlobalTransform;
}

/// Computes every [`GlobalTransform`] from the [`Transform`]s down each tree of the
/// hierarchy ([`World::register_hierarchy`]): a root's is its own `Transform` after its
/// [`Position`] (if any: a moving agent carries its children without rewriting its
/// `Transform`), a child's is its parent's `GlobalTransform` then its own `Transform`.
///
/// *Roots* are the entities with `Transform` and `GlobalTransform` and no [`ChildOf`];
/// every entity with both, and every descendant of one, gets exactly one write a frame. A
/// child without a `Transform` is skipped, with its subtree. Values are those of the
/// previous Sync, like everything a system reads: a change of a local `Transform` shows
/// in the `GlobalTransform`s one frame later, all of a tree at once.
///
/// Cost: each entity's global is computed once, from its own row, into its write handle.
/// The roots are one pass over their rows on the calling thread, which also keeps each
/// root's global (in visiting order, found through a position by entity index); the
/// children of roots are one pass over theirs, in parallel chunks on the worker pool
/// ([`Output::par_for_each`]), reading their parent's global from there (two indexes,
/// no entity lookup). Only below depth
/// one is a tree walked by handle, depth first from each child of a root (two entity
/// lookups and a write by handle per descendant). The outputs are the same at any worker
/// count: one write per entity, rows in iteration order, the walks' writes in chunk
/// order. The table (the system's) and the walk's stack (one per worker thread) are
/// reused: no allocation once warm.
///
/// ```
/// use glam::Vec2;
/// use runsync::prelude::*;
/// use runsync_systems::*;
/// let mut world = World::new();
/// runsync_systems::register(&mut world);
/// world.register_hierarchy();
/// let ship = world.spawn((
///     Position(Vec2::new(10.0, 0.0)),
///     Transform { translation: Vec2::ZERO, rotation: Vec2::Y }, // turned 90°
///     GlobalTransform::default(),
/// ));
/// let turret = world.spawn((
///     Transform::from_translation(Vec2::new(2.0, 0.0)),
///     GlobalTransform::default(),
///     ChildOf(ship),
/// ));
/// let mut rt = Runtime::builder().workers(2).build(world);
/// rt.add_system(PropagateTransforms::new());
/// rt.frame();
/// let g = rt.world().get::<GlobalTransform>(turret).unwrap();
/// assert_eq!(g.translation(), Vec2::new(10.0, 2.0)); // 2 ahead of the turned ship
/// assert_eq!(g.rotation(), Vec2::Y);
/// ```
#[derive(Clone, Debug, Default)]
pub struct PropagateTransforms {
    /// The running frame's root globals, for their children; kept between frames for
    /// its memory only.
    roots: RootGlobals,
}

impl PropagateTransforms {
    /// The system, with an empty table (it grows to the world's entity count in the
    /// first frame).
    pub fn new() -> PropagateTransforms {
        PropagateTransforms::default()
    }
}

/// The globals of this run's roots: what the children of roots read.
///
/// The globals are kept in the order the roots are visited (`globals`, written in
/// sequence) and found by entity index through `at`, a position a slot (4 bytes each):
/// the two together stay in a core's cache at 100k entities, where one entry of 20 bytes
/// a slot, written in entity order, did not. `at[index]` may be left from an earlier run;
/// a position names this run's root only if the entry there holds that very handle (an
/// index names one live entity at a time, and a root is written once a run).
#[derive(Clone, Default)]
struct RootGlobals {
    at: Vec<u32>,
    globals: Vec<(Entity, Transform)>,
}

impl std::fmt::Debug for RootGlobals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The entries are scratch: their number says enough.
        f.debug_struct("RootGlobals")
            .field("roots", &self.globals.len())
            .field("slots", &self.at.len())
            .finish()
    }
}

impl RootGlobals {
    /// Starts a run in `world`: no root yet, and a position for every entity index in use
    /// (so `set` never grows `at`).
    fn begin(&mut self, world: &World) {
        self.globals.clear();
        let slots = world.entity_slots().len();
        if self.at.len() < slots {
            self.at.resize(slots, u32::MAX);
        }
    }

    /// Keeps `global` as root `e`'s for this run.
    ///
    /// # Panics
    /// If `e` is not an entity of the world `begin` was given.
    #[inline]
    fn set(&mut self, e: Entity, global: Transform) {
        // A position past `u32::MAX` is never found again (`get` misses it): more roots
        // than that do not fit in memory anyway.
        self.at[e.index() as usize] = u32::try_from(self.globals.len()).unwrap_or(u32::MAX);
        self.globals.push((e, global));
    }

    /// The global of `e` if it is a root of this run.
    #[inline]
    fn get(&self, e: Entity) -> Option<&Transform> {
        let at = *self.at.get(e.index() as usize)?;
        match self.globals.get(at as usize) {
            Some((root, global)) if *root == e => Some(global),
            _ => None,
        }
    }
}

thread_local! {
    /// The depth-first walk's stack: entities to visit with their parent's global.
    static STACK: RefCell<Vec<(Entity, Transform)>> = const { RefCell::new(Vec::new()) };
}

impl System for PropagateTransforms {
    fn run(&mut self, world: &World, out: &mut Output<'_>) {
        self.roots.begin(world);
        write_roots(&mut self.roots, out);
        write_children(world, &self.roots, out);
    }

    fn name(&self) -> Cow<'static, str> {
        "PropagateTransforms".into()
    }
}

/// Writes every root's global (its `Position`, then its `Transform`) and keeps it in
/// `roots`.
fn write_roots(roots: &mut RootGlobals, out: &mut Output<'_>) {
    for (e, (pos, local, mut global, ())) in out.query::<(
        Option<&Position>,
        &Transform,
        Write<GlobalTransform>,
        Without<ChildOf>,
    )>() {
        let origin = Transform::from_translation(pos.map_or(Vec2::ZERO, |p| p.0));
        let g = origin.then(local);
        global.set(GlobalTransform(g));
        roots.set(e, g);
    }
}

/// Writes the global of every child of a root (its parent's, then its `Transform`), and
/// walks the subtree below it, if any.
fn write_children(world: &World, roots: &RootGlobals, out: &mut Output<'_>) {
    out.par_for_each::<(
        &ChildOf,
        &Transform,
        Option<&Children>,
        Write<GlobalTransform>,
    )>(|_, (parent, local, children, mut global), out| {
        // Deeper entities are written by the walk from their ancestor here.
        let Some(parent) = roots.get(parent.0) else {
            return;
        };
        let g = parent.then(local);
        global.set(GlobalTransform(g));
        if let Some(children) = children {
            STACK.with_borrow_mut(|stack| walk(world, g, children, stack, out));
        }
    });
    // A child of a root with a `Transform` and no `GlobalTransform` (against the advice
    // above) gets no global, but its subtree does, as any walk from the root would.
    out.par_for_each::<(&ChildOf, &Transform, &Children, Without<GlobalTransform>)>(
        |_, (parent, local, children, ()), out| {
            if let Some(parent) = roots.get(parent.0) {
                let g = parent.then(local);
                STACK.with_borrow_mut(|stack| walk(world, g, children, stack, out));
            }
        },
    );
}

/// Writes the `GlobalTransform` of every descendant under `children` (of a parent whose
/// global is `parent`), depth first, children in order.
fn walk(
    world: &World,
    parent: Transform,
    children: &[Entity],
    stack: &mut Vec<(Entity, Transform)>,
    out: &mut Output<'_>,
) {
    stack.clear();
    stack.extend(children.iter().rev().map(|&c| (c, parent)));
    while let Some((e, parent)) = stack.pop() {
        let Some(local) = world.get::<Transform>(e) else {
            continue;
        };
        let global = parent.then(local);
        out.write::<GlobalTransform>(e, GlobalTransform(global));
        let grandchildren = world.children(e);
        stack.extend(grandchildren.iter().rev().map(|&c| (c, global)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::world;

    /// A forest: `roots` roots with `Position`, each with a chain of `depth` entities and
    /// `width` children at each link; rotations and offsets vary.
    fn forest(roots: usize, depth: usize, width: usize) -> World {
        let mut w = world();
        w.register_hierarchy();
        for r in 0..roots {
            let rot = Vec2::from_angle(r as f32 * 0.3);
            let mut parent = w.spawn((
                Position(Vec2::new(r as f32, -(r as f32))),
                Transform {
                    translation: Vec2::new(0.5, 0.0),
                    rotation: rot,
                },
                GlobalTransform::default(),
            ));
            for d in 0..depth {
                let t = Transform {
                    translation: Vec2::new(1.0 + d as f32, 0.25),
                    rotation: Vec2::from_angle(0.1 * d as f32),
                };
                for k in 0..width {
                    let leaf = Transform::from_translation(Vec2::new(0.0, k as f32));
                    w.spawn((leaf, GlobalTransform::default(), ChildOf(parent)));
                }
                parent = w.spawn((t, GlobalTransform::default(), ChildOf(parent)));
            }
        }
        w
    }

    /// The reference: each entity's global from its ancestors, one entity at a time.
    fn reference(w: &World) -> Vec<(Entity, GlobalTransform)> {
        w.query::<(&Transform, With<GlobalTransform>)>()
            .map(|(e, (local, ()))| {
                let mut chain = vec![*local];
                let mut top = e;
                for a in w.ancestors(e) {
                    chain.push(*w.get::<Transform>(a).unwrap());
                    top = a;
                }
                let pos = w.get::<Position>(top).map_or(Vec2::ZERO, |p| p.0);
                let mut g = Transform::from_translation(pos);
                for t in chain.iter().rev() {
                    g = g.then(t);
                }
                (e, GlobalTransform(g))
            })
            .collect()
    }

    fn globals(w: &World) -> Vec<(Entity, GlobalTransform)> {
        w.query::<(&GlobalTransform,)>()
            .map(|(e, (g,))| (e, *g))
            .collect()
    }

    #[test]
    fn globals_match_a_sequential_reference_at_any_worker_count() {
        let want = reference(&forest(40, 6, 3));
        for workers in [1, 2, 8] {
            let mut rt = Runtime::builder().workers(workers).build(forest(40, 6, 3));
            rt.add_system(PropagateTransforms::new());
            rt.frame();
            assert_eq!(globals(rt.world()), want, "{workers} workers");
            assert_eq!(rt.stats().dropped, 0);
        }
    }

    #[test]
    fn a_child_without_a_global_still_carries_its_subtree() {
        let build = || {
            let mut w = world();
            w.register_hierarchy();
            let root = w.spawn((
                Position(Vec2::new(5.0, 0.0)),
                Transform::IDENTITY,
                GlobalTransform::default(),
            ));
            let bare = w.spawn((
                Transform::from_translation(Vec2::new(1.0, 0.0)),
                ChildOf(root),
            ));
            let leaf = w.spawn((
                Transform::from_translation(Vec2::new(0.0, 2.0)),
                GlobalTransform::default(),
                ChildOf(bare),
            ));
            (w, leaf)
        };
        for workers in [1, 2] {
            let (w, leaf) = build();
            let mut rt = Runtime::builder().workers(workers).build(w);
            rt.add_system(PropagateTransforms::new());
            rt.frame();
            let g = rt.world().get::<GlobalTransform>(leaf).unwrap();
            assert_eq!(g.translation(), Vec2::new(6.0, 2.0), "{workers} workers");
        }
    }

    #[test]
    fn a_moved_root_carries_its_tree_the_next_frame() {
        let mut rt = Runtime::builder().workers(2).build(forest(3, 2, 1));
        rt.add_system(PropagateTransforms::new());
        rt.frame();
        let root = rt
            .world()
            .query::<(&Position,)>()
            .next()
            .map(|(e, _)| e)
            .unwrap();
        rt.world_mut().get_mut::<Position>(root).unwrap().0 += Vec2::new(100.0, 0.0);
        rt.frame();
        assert_eq!(globals(rt.world()), reference(rt.world()));
        let child = rt.world().children(root)[0];
        assert!(
            rt.world()
                .get::<GlobalTransform>(child)
                .unwrap()
                .translation()
                .x
                > 100.0
        );
    }
}
