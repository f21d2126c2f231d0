//! Component types and their registry.
//!
//! Every component type is registered once with the [merge function](crate::merge) that
//! folds the outputs systems emit for it. Registration assigns a dense [`ComponentId`];
//! ids index per-type storage, per-system output buffers and table signatures.

use std::any::{TypeId, type_name};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Data attached to an entity.
///
/// `Output` is what systems emit for this component during Run; the merge function
/// registered with [`World::register`](crate::World::register) folds all outputs of a frame
/// for one entity into the stored value during Sync. Use `type Output = Self` for
/// whole-value writes (with [`merge::last`](crate::merge::last)) or a delta type for
/// accumulation (with [`merge::sum`](crate::merge::sum)).
///
/// ```
/// use runsync::prelude::*;
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Health(i32);
/// impl Component for Health { type Output = i32; } // systems emit damage/heal deltas
/// ```
pub trait Component: Send + Sync + 'static {
    /// The value systems emit for this component; folded by the registered merge.
    type Output: Send + Sync + 'static;

    /// Declares the components this one requires (`#[component(requires(..))]` writes
    /// it): [`World::register`](crate::World::register) calls it, and each
    /// `sink.require(make)` becomes a [`World::require_with`](crate::World::require_with).
    #[doc(hidden)]
    fn register_required<S: RequireSink>(sink: &mut S) {
        let _ = sink;
    }
}

/// Where [`Component::register_required`] declares requirements (crate-internal in all
/// but name: the derive names it in the code it writes).
#[doc(hidden)]
pub trait RequireSink {
    /// The component being registered requires `R`, made by `make` when an entity lacks
    /// it.
    fn require<R: Component>(&mut self, make: fn() -> R);
}

/// Dense id of a registered component type, in registration order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ComponentId(pub(crate) u32);

impl ComponentId {
    /// The id as an index (registration order, from 0).
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// `TypeId` is already a high-quality hash; don't hash it again.
#[derive(Default)]
pub(crate) struct TypeIdHasher(u64);

impl Hasher for TypeIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // TypeId hashes itself as one or two u64 writes; fold whatever arrives.
        for chunk in bytes.chunks(8) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(buf);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = self.0.rotate_left(5) ^ n;
    }
}

pub(crate) type TypeIdMap<V> = HashMap<TypeId, V, BuildHasherDefault<TypeIdHasher>>;

/// Static facts about one registered component type.
#[derive(Clone, Debug)]
pub(crate) struct ComponentInfo {
    pub(crate) name: &'static str,
    pub(crate) type_id: TypeId,
}

/// Maps component types to dense ids.
#[derive(Clone, Default)]
pub(crate) struct Registry {
    by_type: TypeIdMap<ComponentId>,
    infos: Vec<ComponentInfo>,
}

impl Registry {
    /// Registers `C`, returning its new id, or `Err` with the existing id if `C` is already
    /// registered.
    pub(crate) fn add<C: Component>(&mut self) -> Result<ComponentId, ComponentId> {
        let next = ComponentId(self.infos.len() as u32);
        match self.by_type.entry(TypeId::of::<C>()) {
            std::collections::hash_map::Entry::Occupied(o) => Err(*o.get()),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(next);
                self.infos.push(ComponentInfo {
                    name: type_name::<C>(),
                    type_id: TypeId::of::<C>(),
                });
                Ok(next)
            }
        }
    }

    /// The id of `C`, if registered.
    #[inline]
    pub(crate) fn get<C: 'static>(&self) -> Option<ComponentId> {
        self.by_type.get(&TypeId::of::<C>()).copied()
    }

    /// The id of `C`.
    ///
    /// # Panics
    /// If `C` is not registered, with a message that names it and says how to register it.
    #[inline]
    #[track_caller]
    pub(crate) fn id<C: 'static>(&self) -> ComponentId {
        match self.get::<C>() {
            Some(id) => id,
            None => unregistered::<C>(),
        }
    }

    pub(crate) fn info(&self, id: ComponentId) -> &ComponentInfo {
        &self.infos[id.index()]
    }

    pub(crate) fn len(&self) -> usize {
        self.infos.len()
    }
}

#[cold]
#[track_caller]
pub(crate) fn unregistered<C: 'static>() -> ! {
    let name = type_name::<C>();
    let short = name.rsplit("::").next().unwrap_or(name);
    // (An error message, not a path: the hierarchy's types are defined above this module.)
    if name.starts_with("runsync::hierarchy::") {
        panic!(
            "runsync: component type `{name}` is not registered; parents and children need \
             `world.register_hierarchy()` once, before use"
        )
    }
    panic!(
        "runsync: component type `{name}` is not registered; register it once before use, \
         e.g. `world.register::<{short}>(runsync::merge::last)` (choose the merge that fits: \
         last, first, sum, min, max, or a closure `|c: &mut {short}, outs: &[_]| ...`)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    struct A;
    impl Component for A {
        type Output = ();
    }
    struct B;
    impl Component for B {
        type Output = ();
    }

    #[test]
    fn ids_are_dense_in_registration_order() {
        let mut r = Registry::default();
        assert_eq!(r.add::<B>(), Ok(ComponentId(0)));
        assert_eq!(r.add::<A>(), Ok(ComponentId(1)));
        assert_eq!(r.add::<B>(), Err(ComponentId(0)));
        assert_eq!(r.id::<A>(), ComponentId(1));
        assert_eq!(r.len(), 2);
        assert!(r.info(ComponentId(0)).name.ends_with("B"));
    }

    #[test]
    #[should_panic(expected = "is not registered")]
    fn unregistered_panics_with_name() {
        let r = Registry::default();
        r.id::<A>();
    }
}
