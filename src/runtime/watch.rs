//! Write provenance: which entities Sync records it for ([`Runtime::watch`]) and what it
//! recorded ([`Runtime::provenance`]).

use super::Runtime;
use crate::entity::Entity;
use crate::provenance::Provenance;

impl Runtime {
    /// Starts recording write provenance for `e` from the next frame on: which systems
    /// wrote which outputs to which of its components, in merge order, with the values
    /// before and after the merge (for types opted in with
    /// [`World::debugging`](crate::World::debugging)), and the structural commands that
    /// targeted it. Read it with [`provenance`](Self::provenance); see [`Provenance`] for
    /// an example.
    ///
    /// Watching is meant for a few entities at a time (debugging, tools): each Sync then
    /// scans, per watched entity, the outputs of the types it has, and every system's
    /// structural commands. With nothing watched, recording costs one `is_empty` check.
    /// Watching never changes the world. Watching an entity twice is a no-op; a dead
    /// entity may be watched (its records stay empty).
    pub fn watch(&mut self, e: Entity) {
        self.watches.watch(e);
    }

    /// Stops recording provenance for `e` and drops its record. Returns whether it was
    /// watched.
    pub fn unwatch(&mut self, e: Entity) -> bool {
        self.watches.unwatch(e)
    }

    /// The write provenance of `e` in the last frame that ran Sync (see [`watch`](Self::watch)),
    /// or `None` if `e` is not watched. A watched entity nothing targeted has an empty record.
    pub fn provenance(&self, e: Entity) -> Option<&Provenance> {
        self.watches.get(e)
    }
}
