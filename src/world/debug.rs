//! What a world shows of itself: `Debug`, `Debug` text of component values for write
//! provenance and desync reports ([`World::debugging`]), and the listing a tool (an
//! inspector, an editor) browses: registered types, live entities with their types, one
//! value's text.

use std::fmt;

use super::World;
use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::storage::debug_fn;

impl fmt::Debug for World {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("World")
            .field("entities", &self.len())
            .field("component_types", &self.storage.registry().len())
            .field("tables", &self.storage.tables().len())
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
        let id = self.storage.registry().id::<C>();
        self.storage.typed_mut::<C>(id).enable_debug();
        self.folds[id.index()].set_show_output(&debug_fn::<C::Output>());
        self
    }

    /// The registered component types, in id order: each one's [`ComponentId`] and type
    /// name ([`std::any::type_name`]). For tools that list or filter by type.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Debug)] struct Hp(i32);
    /// # impl Component for Hp { type Output = i32; }
    /// let mut world = World::new();
    /// let id = world.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    /// let types: Vec<_> = world.component_types().collect();
    /// assert_eq!(types, [(id, std::any::type_name::<Hp>())]);
    /// ```
    pub fn component_types(
        &self,
    ) -> impl ExactSizeIterator<Item = (ComponentId, &'static str)> + '_ {
        let registry = self.storage.registry();
        (0..registry.len()).map(|i| {
            let id = ComponentId(i as u32);
            (id, registry.info(id).name)
        })
    }

    /// Every live entity with the component types it has (sorted by id), in storage
    /// order: tables in creation order, rows in order — the order of queries and
    /// [`checksum`](Self::checksum). For tools that browse the world; a game's own code
    /// wants [`query`](Self::query).
    ///
    /// Cost: nothing up front; a step per entity, no allocation (the slice is the
    /// entity's table's type list).
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Debug)] struct Hp(i32);
    /// # impl Component for Hp { type Output = i32; }
    /// let mut world = World::new();
    /// let hp = world.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    /// let a = world.spawn(());
    /// let b = world.spawn((Hp(3),));
    /// let listed: Vec<_> = world.entities().collect();
    /// assert_eq!(listed, [(a, &[][..]), (b, &[hp][..])]);
    /// ```
    pub fn entities(&self) -> impl Iterator<Item = (Entity, &[ComponentId])> + '_ {
        let tables = self.storage.tables();
        (0..tables.len()).flat_map(move |t| {
            let table = tables.get(t as u32);
            let types = table.components();
            table.entities().iter().map(move |&e| (e, types))
        })
    }

    /// The component types `e` has (sorted by id), or `None` if `e` is dead.
    pub fn component_ids(&self, e: Entity) -> Option<&[ComponentId]> {
        let loc = self.storage.locate(e)?;
        Some(self.storage.tables().get(loc.table).components())
    }

    /// `Debug` text of `e`'s component of type `id`, for types opted in with
    /// [`debugging`](Self::debugging); `None` if `e` is dead, lacks that component, or
    /// the type is not opted in (tell them apart with [`component_ids`](Self::component_ids)).
    /// A type-erased [`get`](Self::get) for tools.
    ///
    /// Cost: a lookup and a `format!` of the value.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Debug)] struct Hp(i32);
    /// # impl Component for Hp { type Output = i32; }
    /// let mut world = World::new();
    /// let hp = world.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
    /// let e = world.spawn((Hp(3),));
    /// assert_eq!(world.debug_value(e, hp), None); // not opted in
    /// world.debugging::<Hp>();
    /// assert_eq!(world.debug_value(e, hp).as_deref(), Some("Hp(3)"));
    /// ```
    pub fn debug_value(&self, e: Entity, id: ComponentId) -> Option<String> {
        if id.index() >= self.storage.registry().len() {
            return None;
        }
        let (col, row) = self.storage.column_row_of(e, id)?;
        self.storage.columns(id).debug_value(col, row)
    }
}

#[cfg(test)]
mod tests {
    use crate::component::ComponentId;
    use crate::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct A(u8);
    impl Component for A {
        type Output = A;
    }
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct B(u8);
    impl Component for B {
        type Output = B;
    }

    #[test]
    fn lists_entities_types_and_values_as_tools_see_them() {
        let mut w = World::new();
        let a = w.register::<A>(merge::last);
        let b = w.register::<B>(merge::last);
        w.debugging::<A>();
        let e0 = w.spawn((A(1),));
        let e1 = w.spawn((A(2), B(7)));
        let e2 = w.spawn((B(9),));
        w.despawn(e0);
        let names: Vec<_> = w.component_types().map(|(_, n)| n).collect();
        assert_eq!(
            names,
            [std::any::type_name::<A>(), std::any::type_name::<B>()]
        );
        let listed: Vec<_> = w.entities().map(|(e, t)| (e, t.to_vec())).collect();
        assert_eq!(listed.len(), w.len());
        assert!(listed.contains(&(e1, vec![a, b])));
        assert!(listed.contains(&(e2, vec![b])));
        // Storage order, the order of queries.
        let by_query: Vec<_> = w.query::<(&B,)>().map(|(e, _)| e).collect();
        let by_list: Vec<_> = listed
            .iter()
            .filter(|(_, t)| t.contains(&b))
            .map(|p| p.0)
            .collect();
        assert_eq!(by_query, by_list);
        assert_eq!(w.component_ids(e1), Some(&[a, b][..]));
        assert_eq!(w.component_ids(e0), None);
        assert_eq!(w.debug_value(e1, a).as_deref(), Some("A(2)"));
        assert_eq!(w.debug_value(e1, b), None, "B is not opted in");
        assert_eq!(w.debug_value(e2, a), None, "e2 has no A");
        assert_eq!(w.debug_value(e0, a), None, "e0 is dead");
        let foreign = ComponentId(99);
        assert_eq!(w.debug_value(e1, foreign), None, "not a type of this world");
    }
}
