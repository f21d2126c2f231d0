//! Parent/child relationships: the [`ChildOf`] and [`Children`] components, the
//! [`HierarchyError`] a rejected reparent reports, and the checks that keep users from
//! editing `Children` (which Sync keeps) by hand. What users rely on is documented on
//! [`World::register_hierarchy`](crate::World::register_hierarchy).
//!
//! The structural part — attaching on spawn and insert, detaching on remove, cascading
//! despawns — is applied with the other structural commands (`commands::tree`); the
//! queries over a hierarchy are the world's (`world::hierarchy`). This module is data.

use std::any::{TypeId, type_name};
use std::convert::Infallible;
use std::fmt;

use crate::checksum::{Checksum, Checksummer};
use crate::component::{Component, ComponentId};
use crate::entity::Entity;

/// Makes an entity a child of another: `ChildOf(parent)`.
///
/// Spawn an entity with it (`out.spawn((Turret, ChildOf(ship)))`), insert it to
/// reparent (`out.insert(e, ChildOf(new_parent))`, or
/// [`Output::set_parent`](crate::Output::set_parent)), remove it to make the entity a
/// root. Sync keeps the parent's [`Children`] in step, rejects a reparent that would make
/// a cycle, and despawns children with their parent. It is never written by merges
/// (its output type is uninhabited) and cannot be changed in place
/// ([`World::get_mut`](crate::World::get_mut) panics for it): every change goes through a
/// structural command or a world method. Register it with
/// [`World::register_hierarchy`](crate::World::register_hierarchy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChildOf(pub Entity);

impl ChildOf {
    /// The parent.
    #[inline]
    pub fn parent(&self) -> Entity {
        self.0
    }
}

impl Component for ChildOf {
    /// Nothing: a parent changes by a structural command, never by a merge.
    type Output = Infallible;
}

impl Checksum for ChildOf {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

/// The children of an entity, in the order they became its children; kept by Sync from
/// the children's [`ChildOf`]. An entity has `Children` exactly while it has at least one
/// child (so `With<Children>` / `Without<Children>` select parents and leaves).
///
/// Read it like a slice (`&children[..]`, `children.iter()`), or with
/// [`World::children`](crate::World::children). It cannot be inserted, removed or
/// changed by hand (each of those panics, saying so): change the children's `ChildOf`.
#[derive(Debug, Default, PartialEq, Eq, Hash)]
pub struct Children(pub(crate) Vec<Entity>);

// By hand for `clone_from`: a snapshot copies a column with it, and reusing the list's
// memory spares an allocation and a free per parent on every save and restore.
impl Clone for Children {
    fn clone(&self) -> Self {
        Children(self.0.clone())
    }

    fn clone_from(&mut self, source: &Self) {
        self.0.clone_from(&source.0);
    }
}

// Saved as the parent's id, and the children's ids in order. A loaded save is checked
// for a consistent hierarchy (`storage::save`) before anything changes.
impl serde::Serialize for ChildOf {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for ChildOf {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Entity::deserialize(d).map(ChildOf)
    }
}

impl serde::Serialize for Children {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Children {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<Entity>::deserialize(d).map(Children)
    }
}

impl std::ops::Deref for Children {
    type Target = [Entity];
    #[inline]
    fn deref(&self) -> &[Entity] {
        &self.0
    }
}

impl<'a> IntoIterator for &'a Children {
    type Item = &'a Entity;
    type IntoIter = std::slice::Iter<'a, Entity>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl Component for Children {
    /// Nothing: Sync keeps it.
    type Output = Infallible;
}

impl Checksum for Children {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

/// A parent change that was rejected: in a frame it is dropped, counted in
/// [`FrameStats::dropped`](crate::FrameStats::dropped) and reported in
/// [`FrameStats::first_cycle`](crate::FrameStats::first_cycle); between frames
/// [`World::set_parent`](crate::World::set_parent) returns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HierarchyError {
    /// Making `child` a child of `parent` would make a cycle: `parent` is `child` or one
    /// of its descendants.
    Cycle {
        /// The entity to reparent.
        child: Entity,
        /// The parent asked for.
        parent: Entity,
    },
    /// `parent` is dead (or `child` is).
    Dead {
        /// The entity to reparent.
        child: Entity,
        /// The parent asked for.
        parent: Entity,
    },
}

impl fmt::Display for HierarchyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HierarchyError::Cycle { child, parent } if child == parent => write!(
                f,
                "runsync: entity {child} cannot be its own parent (ChildOf({parent})); the \
                 reparent was rejected"
            ),
            HierarchyError::Cycle { child, parent } => write!(
                f,
                "runsync: making {child} a child of {parent} would make a cycle ({parent} \
                 is a descendant of {child}); the reparent was rejected. Detach {parent} \
                 first (remove its ChildOf), or reparent {child} elsewhere"
            ),
            HierarchyError::Dead { child, parent } => write!(
                f,
                "runsync: cannot make {child} a child of {parent}: one of them is dead"
            ),
        }
    }
}

impl std::error::Error for HierarchyError {}

/// The component ids of [`ChildOf`] and [`Children`] in a world that registered them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hierarchy {
    pub(crate) child_of: ComponentId,
    pub(crate) children: ComponentId,
}

/// Panics if `C` is [`Children`], which only Sync may add, remove or change. Called where
/// users insert, remove or spawn components; the comparison of two constant type ids
/// folds away for every other type.
#[inline(always)]
#[track_caller]
pub(crate) fn assert_not_children<C: 'static>() {
    if TypeId::of::<C>() == TypeId::of::<Children>() {
        children_by_hand();
    }
}

/// Panics if `C` is [`ChildOf`] or [`Children`]: neither may be changed in place
/// (`World::get_mut`, `World::query_mut`).
#[inline(always)]
#[track_caller]
pub(crate) fn assert_mutable<C: 'static>() {
    assert_not_children::<C>();
    if TypeId::of::<C>() == TypeId::of::<ChildOf>() {
        child_of_in_place();
    }
}

#[cold]
#[track_caller]
fn children_by_hand() -> ! {
    panic!(
        "runsync: `{}` is kept by Sync from the children's `ChildOf`; it cannot be \
         inserted, removed or changed by hand. Change a child's parent instead \
         (`out.insert(child, ChildOf(parent))`, `world.set_parent(child, parent)`)",
        type_name::<Children>()
    )
}

#[cold]
#[track_caller]
fn child_of_in_place() -> ! {
    panic!(
        "runsync: `{}` cannot be changed in place: the parent's `Children` must follow. \
         Reparent with `world.set_parent(child, parent)` between frames or \
         `out.insert(child, ChildOf(parent))` in a system",
        type_name::<ChildOf>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snapshot's copy of a `Children` column keeps each list's memory: cloning into a
    /// list with room writes the ids in place.
    #[test]
    fn children_clone_from_keeps_the_list_memory() {
        let id = |i: u64| Entity::from_bits(1 << 32 | i).expect("generation 1");
        let mut into = Children((0..8).map(id).collect());
        let before = into.0.as_ptr();
        let from = Children((10..13).map(id).collect());
        into.clone_from(&from);
        assert_eq!(into, from);
        assert_eq!(into.0.as_ptr(), before, "reallocated");
        assert_eq!(into.clone(), from);
    }
}
