//! Structural changes of a hierarchy: reparenting ([`set_parent`], [`remove_parent`]),
//! children spawned with a `ChildOf` ([`attach_spawned`]) and cascading despawns
//! ([`despawn`]). Each keeps the invariant that Sync and the world's methods rely on:
//!
//! - an entity with `ChildOf(p)` has a live `p`, and appears once in `p`'s `Children`;
//! - an entity has `Children` exactly while it has a child, and lists only live
//!   entities whose `ChildOf` names it, in the order they became its children;
//! - following `ChildOf` from any entity ends at a root (no cycle).
//!
//! Hooks fire as for any structural change: those of `ChildOf` for the child, those of
//! `Children` for a parent gaining its first child or losing its last one.

use super::{Change, Host};
use crate::entity::Entity;
use crate::hierarchy::{ChildOf, Children, Hierarchy, HierarchyError};
use crate::storage::Storage;

/// The reused buffers of a cascading despawn (capacity only).
#[derive(Default)]
pub(crate) struct TreeScratch {
    /// The subtree, in pre-order.
    order: Vec<Entity>,
    /// The walk's stack.
    stack: Vec<Entity>,
}

#[inline]
fn alive(storage: &Storage, e: Entity) -> bool {
    storage.locate(e).is_some()
}

/// Whether `ancestor` is `e` or one of `e`'s ancestors. Terminates: there is no cycle.
fn is_self_or_ancestor(storage: &Storage, h: Hierarchy, ancestor: Entity, mut e: Entity) -> bool {
    loop {
        if e == ancestor {
            return true;
        }
        match storage.parent_of(h, e) {
            Some(p) => e = p,
            None => return false,
        }
    }
}

/// Makes `child` a child of `parent` (both alive; not a cycle): `ChildOf(parent)` is
/// inserted or replaced, `child` leaves its old parent's `Children` and joins the end of
/// `parent`'s. Setting the parent it has is a replace of the same value (hooks fire as
/// for any replace) and keeps its place among its siblings.
///
/// # Errors
/// [`HierarchyError::Dead`] if either is dead, [`HierarchyError::Cycle`] if `parent` is
/// `child` or one of its descendants; nothing changes then.
pub(crate) fn set_parent(
    host: &mut dyn Host,
    h: Hierarchy,
    child: Entity,
    parent: Entity,
) -> Result<(), HierarchyError> {
    let storage = host.storage();
    if !alive(storage, child) || !alive(storage, parent) {
        return Err(HierarchyError::Dead { child, parent });
    }
    if is_self_or_ancestor(storage, h, child, parent) {
        return Err(HierarchyError::Cycle { child, parent });
    }
    let old = storage.parent_of(h, child);
    if old.is_some() {
        host.fire(Change::Remove, h.child_of, child);
    }
    if let Some(o) = old.filter(|&o| o != parent) {
        remove_child(host, h, o, child);
    }
    let storage = host.storage();
    storage.stage(h.child_of, ChildOf(parent));
    storage.insert_staged(child, h.child_of);
    if old != Some(parent) {
        add_child(host, h, parent, child);
    }
    host.fire(Change::Add, h.child_of, child);
    Ok(())
}

/// Makes `child` a root: removes its `ChildOf` and takes it out of its parent's
/// `Children`. Returns `false` (nothing to do) if it is dead or has no parent.
pub(crate) fn remove_parent(host: &mut dyn Host, h: Hierarchy, child: Entity) -> bool {
    let Some(parent) = host.storage().parent_of(h, child) else {
        return false;
    };
    // The hook sees the child with its parent, as for any remove.
    host.fire(Change::Remove, h.child_of, child);
    host.storage().remove(child, h.child_of);
    remove_child(host, h, parent, child);
    true
}

/// Adds `e`, just spawned with a `ChildOf`, to its parent's `Children` (before its
/// `on_add` hooks fire, so they see it in place).
///
/// # Errors
/// If the parent is dead (despawned earlier in the same Sync): `e` is despawned at once,
/// firing no hook — a child dies with its parent, whichever command came first.
pub(crate) fn attach_spawned(
    host: &mut dyn Host,
    h: Hierarchy,
    e: Entity,
) -> Result<(), HierarchyError> {
    let storage = host.storage();
    let parent = storage
        .parent_of(h, e)
        .expect("attach_spawned is called for a spawn with ChildOf");
    if !alive(storage, parent) {
        storage.despawn(e);
        return Err(HierarchyError::Dead { child: e, parent });
    }
    add_child(host, h, parent, e);
    Ok(())
}

/// Despawns `root` and all its descendants. Order: the subtree in pre-order (an entity,
/// then each child's subtree in `Children` order). First every `on_remove` hook of the
/// subtree fires, in that order, while the whole subtree is still alive (a turret's hook
/// can read its ship); then `root` leaves its parent's `Children`; then the entities are
/// despawned in that order. Counts each in `report.despawned`; a dead `root` is a
/// counted no-op.
pub(crate) fn despawn(
    host: &mut dyn Host,
    h: Hierarchy,
    root: Entity,
    scratch: &mut TreeScratch,
    report: &mut super::CommandReport,
) {
    let storage = host.storage();
    if !alive(storage, root) {
        report.dropped += 1;
        return;
    }
    let TreeScratch { order, stack } = scratch;
    order.clear();
    stack.clear();
    stack.push(root);
    while let Some(e) = stack.pop() {
        order.push(e);
        stack.extend(storage.children_of(h, e).iter().rev());
    }
    for &e in order.iter() {
        host.fire_all(Change::Remove, e);
    }
    if let Some(parent) = host.storage().parent_of(h, root) {
        remove_child(host, h, parent, root);
    }
    let storage = host.storage();
    for &e in order.iter() {
        storage.despawn(e);
    }
    report.despawned += order.len() as u64;
}

/// Appends `child` to `parent`'s `Children`, creating it (an insert, firing its `on_add`
/// hooks) for a first child. The list is marked changed.
fn add_child(host: &mut dyn Host, h: Hierarchy, parent: Entity, child: Entity) {
    let storage = host.storage();
    match storage.column_row_of(parent, h.children) {
        Some((col, row)) => {
            storage
                .typed_mut::<Children>(h.children)
                .get_mut(col, row)
                .0
                .push(child);
            storage
                .columns_mut(h.children)
                .mark_changed(col, row as usize);
        }
        None => {
            storage.stage(h.children, Children(vec![child]));
            storage.insert_staged(parent, h.children);
            host.fire(Change::Add, h.children, parent);
        }
    }
}

/// Takes `child` out of `parent`'s `Children`, removing the component (firing its
/// `on_remove` hooks first, with the last child still listed) when it was the last one.
/// The list is marked changed.
fn remove_child(host: &mut dyn Host, h: Hierarchy, parent: Entity, child: Entity) {
    let storage = host.storage();
    let Some((col, row)) = storage.column_row_of(parent, h.children) else {
        debug_assert!(false, "{child:?}'s parent {parent:?} has no Children");
        return;
    };
    let list = &storage.typed::<Children>(h.children).get(col, row).0;
    if list.len() == 1 {
        debug_assert_eq!(list[0], child);
        host.fire(Change::Remove, h.children, parent);
        host.storage().remove(parent, h.children);
        return;
    }
    let list = &mut storage
        .typed_mut::<Children>(h.children)
        .get_mut(col, row)
        .0;
    if let Some(i) = list.iter().position(|&c| c == child) {
        list.remove(i);
    }
    storage
        .columns_mut(h.children)
        .mark_changed(col, row as usize);
}
