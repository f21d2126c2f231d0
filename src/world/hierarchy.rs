//! Parents and children: [`World::register_hierarchy`], the queries over a hierarchy
//! ([`World::parent`], [`World::children`], [`World::ancestors`], [`World::descendants`])
//! and the between-frames edits ([`World::set_parent`], [`World::remove_parent`]).

use super::World;
use crate::commands::{CommandList, CommandReport, CommandScratch, apply_list, tree};
use crate::entity::Entity;
use crate::hierarchy::{ChildOf, Children, Hierarchy, HierarchyError};

impl World {
    /// Registers the parent/child relationship: the components [`ChildOf`] (on a child,
    /// naming its parent) and [`Children`] (on a parent, kept by Sync), opted into
    /// snapshots, checksums, save files and `Debug` output. Registering twice is a no-op.
    /// Returns `self` to chain. A save file that loads into such a world must hold a
    /// consistent hierarchy (each `ChildOf` names a live parent listing the child once,
    /// each `Children` lists live children naming it, no cycle), else
    /// [`LoadError::BadHierarchy`](crate::LoadError::BadHierarchy).
    ///
    /// ```
    /// use runsync::prelude::*;
    /// #[derive(Clone, Copy, Debug, PartialEq)]
    /// struct Name(&'static str);
    /// impl Component for Name { type Output = Name; }
    ///
    /// let mut world = World::new();
    /// world.register::<Name>(merge::last);
    /// world.register_hierarchy();
    /// let ship = world.spawn((Name("ship"),));
    /// let mut rt = Runtime::builder().workers(2).build(world);
    /// rt.add_system(move |w: &World, out: &mut Output| {
    ///     if w.children(ship).is_empty() {
    ///         let left = out.spawn((Name("left turret"), ChildOf(ship)));
    ///         out.spawn((Name("right turret"), ChildOf(ship)));
    ///         out.spawn((Name("barrel"), ChildOf(left))); // a grandchild
    ///     }
    /// });
    /// rt.frame();
    /// let w = rt.world();
    /// let names = |es: Vec<Entity>| es.iter().map(|&e| w.get::<Name>(e).unwrap().0).collect::<Vec<_>>();
    /// assert_eq!(names(w.children(ship).to_vec()), ["left turret", "right turret"]);
    /// assert_eq!(names(w.descendants(ship).collect()), ["left turret", "barrel", "right turret"]);
    ///
    /// rt.world_mut().despawn(ship); // the turrets and the barrel go with it
    /// assert!(rt.world().is_empty());
    /// ```
    ///
    /// # Parents and children
    ///
    /// - **A child** has `ChildOf(parent)`: spawn it with one (`out.spawn((.., ChildOf(p)))`),
    ///   insert one to reparent (`out.insert(e, ChildOf(q))`, or
    ///   [`Output::set_parent`](crate::Output::set_parent)), remove it to make the
    ///   entity a root ([`Output::remove_parent`](crate::Output::remove_parent)). These
    ///   are structural commands, applied in Sync in system registration order then
    ///   emission order, like any other.
    /// - **A parent** has [`Children`], kept by Sync (and by the world's methods between
    ///   frames): its children in the order they became its children. It exists exactly
    ///   while there is at least one child, so `Without<ChildOf>` selects roots and
    ///   `Without<Children>` leaves. Neither component can be changed in place, and
    ///   `Children` cannot be inserted or removed by hand (each panics, saying so).
    /// - **Reparenting** moves the child to the end of its new parent's `Children`.
    ///   A child spawned or reparented onto a parent that is dead by then is dropped
    ///   (a spawned one dies at once, firing no hook: a child dies with its parent,
    ///   whichever command came first), counted in
    ///   [`FrameStats::dropped`](crate::FrameStats::dropped).
    ///
    /// # Cycles
    ///
    /// A reparent that would make a cycle (an entity made its own parent, or a child of
    /// one of its descendants) is **rejected and counted, and the frame goes on**: the
    /// command is dropped (the entity keeps its parent), counted in
    /// [`FrameStats::dropped`](crate::FrameStats::dropped) and in
    /// [`FrameStats::cycles`](crate::FrameStats::cycles), and the first of the frame is
    /// described by [`FrameStats::first_cycle`](crate::FrameStats::first_cycle) (a
    /// [`HierarchyError::Cycle`] whose message names both entities). In a frame such a
    /// command is usually a race, not a bug: two systems that each saw a valid hierarchy
    /// (`a` under `b`, `b` under `a`); the one applied first wins, as for any two
    /// commands. Between frames, [`set_parent`](Self::set_parent) returns the error, and
    /// [`insert`](Self::insert) of a `ChildOf` panics with its message.
    ///
    /// # Cascading despawn
    ///
    /// Despawning an entity despawns its descendants. The order is the subtree in
    /// pre-order: the entity, then each child's subtree in `Children` order. First the
    /// `on_remove` [hooks](Self::on_remove) of every entity of the subtree fire, in that
    /// order, while the whole subtree is still alive (a turret's hook can read its
    /// ship); then the entity leaves its parent's `Children`; then the subtree is
    /// despawned in that order. [`FrameStats::despawned`](crate::FrameStats::despawned)
    /// counts them all. To keep a child, reparent it (or remove its `ChildOf`) by a
    /// command that comes *before* the despawn: commands apply in order, so a reparent
    /// applied after its old parent's despawn finds the child dead and is dropped.
    ///
    /// # Cost
    ///
    /// A world without the hierarchy pays nothing. With it: a despawn looks up the
    /// entity's children and parent (a cascade visits each descendant once); a reparent
    /// walks the new parent's ancestors (the cycle check) and touches two `Children`
    /// lists (removing from a list is linear in its length); inserts of `ChildOf` are not
    /// batched. A parent's first child allocates its list.
    #[track_caller]
    pub fn register_hierarchy(&mut self) -> &mut Self {
        if self.storage.hierarchy().is_some() {
            return self;
        }
        let child_of = self.register_unchecked::<ChildOf>(|_: &mut ChildOf, _: &[_]| {});
        let children = self.register_unchecked::<Children>(|_: &mut Children, _: &[_]| {});
        self.storage.set_hierarchy(Hierarchy { child_of, children });
        self.snapshotting::<ChildOf>()
            .checksumming::<ChildOf>()
            .debugging::<ChildOf>()
            .saving::<ChildOf>();
        self.snapshotting::<Children>()
            .checksumming::<Children>()
            .debugging::<Children>()
            .saving::<Children>()
    }

    /// Whether [`register_hierarchy`](Self::register_hierarchy) was called.
    pub fn has_hierarchy(&self) -> bool {
        self.storage.hierarchy().is_some()
    }

    /// `e`'s parent, or `None` if `e` is a root (or dead).
    ///
    /// # Panics
    /// If the hierarchy is not registered.
    #[inline]
    #[track_caller]
    pub fn parent(&self, e: Entity) -> Option<Entity> {
        self.storage.parent_of(self.hierarchy(), e)
    }

    /// `e`'s children, in the order they became its children; empty if it has none (or
    /// is dead).
    ///
    /// # Panics
    /// If the hierarchy is not registered.
    #[inline]
    #[track_caller]
    pub fn children(&self, e: Entity) -> &[Entity] {
        self.storage.children_of(self.hierarchy(), e)
    }

    /// `e`'s parent, its parent, and so on up to the root (`e` excluded). Allocates
    /// nothing.
    ///
    /// # Panics
    /// If the hierarchy is not registered.
    #[track_caller]
    pub fn ancestors(&self, e: Entity) -> Ancestors<'_> {
        let h = self.hierarchy();
        Ancestors {
            world: self,
            h,
            next: self.storage.parent_of(h, e),
        }
    }

    /// `e`'s descendants (`e` excluded) in pre-order: each child, then that child's
    /// subtree, children in order — the order of a cascading despawn. The iterator keeps
    /// a stack (one allocation, of the tree's depth times the children per level).
    ///
    /// # Panics
    /// If the hierarchy is not registered.
    #[track_caller]
    pub fn descendants(&self, e: Entity) -> Descendants<'_> {
        let h = self.hierarchy();
        Descendants {
            world: self,
            h,
            stack: self
                .storage
                .children_of(h, e)
                .iter()
                .rev()
                .copied()
                .collect(),
        }
    }

    /// Makes `child` a child of `parent` between frames, as a command in Sync would (see
    /// [`register_hierarchy`](Self::register_hierarchy)); firing hooks, applying their
    /// commands.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # use runsync::HierarchyError;
    /// let mut world = World::new();
    /// world.register_hierarchy();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.set_parent(b, a).unwrap();
    /// assert_eq!(world.children(a), [b]);
    /// assert_eq!(world.set_parent(a, b), Err(HierarchyError::Cycle { child: a, parent: b }));
    /// assert_eq!(world.parent(a), None, "rejected: nothing changed");
    /// ```
    ///
    /// # Errors
    /// [`HierarchyError::Cycle`] if `parent` is `child` or one of its descendants,
    /// [`HierarchyError::Dead`] if either is dead; nothing changes then.
    ///
    /// # Panics
    /// If the hierarchy is not registered, or as [`insert`](Self::insert) for a hook.
    #[track_caller]
    pub fn set_parent(&mut self, child: Entity, parent: Entity) -> Result<(), HierarchyError> {
        let h = self.hierarchy();
        self.with_hooks(|a| tree::set_parent(a, h, child, parent))
    }

    /// Makes `child` a root between frames (removes its [`ChildOf`]) and returns its old
    /// parent, or `None` if it had none (or is dead).
    ///
    /// # Panics
    /// If the hierarchy is not registered, or as [`remove`](Self::remove) for a hook.
    #[track_caller]
    pub fn remove_parent(&mut self, child: Entity) -> Option<Entity> {
        let h = self.hierarchy();
        let parent = self.storage.parent_of(h, child)?;
        self.with_hooks(|a| tree::remove_parent(a, h, child));
        Some(parent)
    }

    /// The hierarchy's component ids.
    ///
    /// # Panics
    /// If it is not registered, saying how to.
    #[inline]
    #[track_caller]
    pub(crate) fn hierarchy(&self) -> Hierarchy {
        match self.storage.hierarchy() {
            Some(h) => h,
            None => no_hierarchy(),
        }
    }

    /// Despawns `e` and its subtree between frames (see `register_hierarchy`).
    #[track_caller]
    pub(crate) fn despawn_tree(&mut self, e: Entity) -> bool {
        let mut list = CommandList::default();
        list.despawn(e);
        let report = self.with_hooks(|a| {
            let mut report = CommandReport::default();
            apply_list(a, &mut list, &mut CommandScratch::default(), &mut report);
            report
        });
        report.despawned > 0
    }

    /// Adds the just-spawned `spawned` (each with a `ChildOf`) to their parents'
    /// `Children`, then fires their `on_add` hooks, in order.
    ///
    /// # Panics
    /// Once everything is applied, if a parent was dead (the child was despawned at
    /// once), or as [`spawn`](Self::spawn) for a hook.
    #[track_caller]
    pub(crate) fn attach_spawned(&mut self, spawned: &[Entity]) {
        let h = self.hierarchy();
        let dead = self.with_hooks(|a| {
            let mut dead = None;
            for &e in spawned {
                match tree::attach_spawned(a, h, e) {
                    Ok(()) => a.hooks.fire_all(crate::commands::Change::Add, a.world, e),
                    Err(error) => {
                        dead.get_or_insert(error);
                    }
                }
            }
            dead
        });
        if let Some(HierarchyError::Dead { child, parent }) = dead {
            panic!(
                "runsync: spawned {child} as a child of {parent}, which is dead; the child \
                 was despawned at once (a child dies with its parent)"
            );
        }
    }
}

#[cold]
#[track_caller]
fn no_hierarchy() -> ! {
    panic!(
        "runsync: this world has no hierarchy; call `world.register_hierarchy()` once, before \
         using parents and children"
    )
}

/// The ancestors of an entity, nearest first: [`World::ancestors`].
#[derive(Clone)]
pub struct Ancestors<'w> {
    world: &'w World,
    h: Hierarchy,
    next: Option<Entity>,
}

impl Iterator for Ancestors<'_> {
    type Item = Entity;
    fn next(&mut self) -> Option<Entity> {
        let e = self.next?;
        self.next = self.world.storage.parent_of(self.h, e);
        Some(e)
    }
}

/// The descendants of an entity, in pre-order: [`World::descendants`].
#[derive(Clone)]
pub struct Descendants<'w> {
    world: &'w World,
    h: Hierarchy,
    stack: Vec<Entity>,
}

impl Iterator for Descendants<'_> {
    type Item = Entity;
    fn next(&mut self) -> Option<Entity> {
        let e = self.stack.pop()?;
        let children = self.world.storage.children_of(self.h, e);
        self.stack.extend(children.iter().rev());
        Some(e)
    }
}
