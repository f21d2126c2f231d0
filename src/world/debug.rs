//! What a world shows of itself: `Debug`, and `Debug` text of component values for write
//! provenance and desync reports ([`World::debugging`]).

use std::fmt;

use super::World;
use crate::component::Component;
use crate::storage::debug_fn;

impl fmt::Debug for World {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("World")
            .field("entities", &self.len())
            .field("component_types", &self.storage.registry.len())
            .field("tables", &self.storage.tables.len())
            .field("resources", &self.resources.len())
            .finish()
    }
}

impl World {
    /// Opts component type `C` into `Debug` text in write provenance
    /// ([`Runtime::provenance`](crate::Runtime::provenance)): the stored values before and
    /// after the merge (`C: Debug`) and each output (`C::Output: Debug`, often another type,
    /// such as a delta). Without it, provenance still lists systems and write indices, with
    /// values `None`. Returns `self` to chain. Costs nothing unless an entity is watched.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy, Debug)] struct Hp(i32);
    /// # impl Component for Hp { type Output = i32; }
    /// let mut world = World::new();
    /// world.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    /// world.debugging::<Hp>();
    /// ```
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn debugging<C: Component + fmt::Debug>(&mut self) -> &mut Self
    where
        C::Output: fmt::Debug,
    {
        let id = self.storage.registry.id::<C>();
        self.storage.typed_mut::<C>(id).enable_debug();
        self.folds[id.index()].set_show_output(&debug_fn::<C::Output>());
        self
    }
}
