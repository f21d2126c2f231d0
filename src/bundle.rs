//! Bundles: tuples of components spawned together.

use std::any::type_name;

use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::output::SystemOutputs;
use crate::storage::Storage;
use crate::world::World;

/// A set of components spawned together: a tuple `(A, B, ...)` of up to 12 component
/// types (including `()` for an entity with no components). Each type may appear once.
///
/// ```
/// # use runsync::prelude::*;
/// # #[derive(Clone, Copy)] struct Pos(f32, f32);
/// # impl Component for Pos { type Output = Pos; }
/// let mut world = World::new();
/// world.register::<Pos>(merge::last);
/// let e = world.spawn((Pos(1.0, 2.0),)); // note the comma: a one-element tuple
/// # assert!(world.is_alive(e));
/// ```
pub trait Bundle: Send + 'static + sealed::Sealed {
    #[doc(hidden)]
    fn put(self, sink: &mut BundleSink<'_>);

    /// Spawns every bundle of `bundles` (see [`World::spawn_batch`]).
    #[doc(hidden)]
    fn spawn_batch(world: &mut World, bundles: impl Iterator<Item = Self>) -> Vec<Entity>
    where
        Self: Sized,
    {
        bundles.map(|b| world.spawn(b)).collect()
    }
}

/// Only the tuples of this module are bundles: a bundle's components are staged through
/// crate-internal storage calls, which is no API to promise.
mod sealed {
    pub trait Sealed {}
}

/// Where a bundle's components go (internal; used by [`Bundle`]'s implementations; not
/// nameable outside the crate).
pub struct BundleSink<'a>(pub(crate) Sink<'a>);

pub(crate) enum Sink<'a> {
    /// Stage values in the world's storage (`World::spawn`); `ids` collects the types.
    World {
        storage: &'a mut Storage,
        ids: &'a mut Vec<ComponentId>,
    },
    /// Buffer values in a system's outputs (`Output::spawn`), types from `start` on.
    Output {
        world: &'a World,
        bufs: &'a mut SystemOutputs,
        start: usize,
    },
}

impl BundleSink<'_> {
    #[doc(hidden)]
    #[track_caller]
    pub fn put<C: Component>(&mut self, value: C) {
        match &mut self.0 {
            Sink::World { storage, ids } => {
                let id = storage.registry.id::<C>();
                if ids.contains(&id) {
                    for &staged in ids.iter() {
                        storage.discard_staged(staged);
                    }
                    ids.clear();
                    duplicate::<C>();
                }
                ids.push(id);
                storage.stage(id, value);
            }
            Sink::Output { world, bufs, start } => {
                let id = world.registry().id::<C>();
                if bufs.spawn_types[*start..].contains(&id) {
                    duplicate::<C>();
                }
                bufs.spawn_types.push(id);
                bufs.typed::<C>(id).inserts.push_back(value);
            }
        }
    }
}

#[cold]
#[track_caller]
fn duplicate<C>() -> ! {
    panic!(
        "runsync: a bundle names component type `{}` twice; each type may appear once per entity",
        type_name::<C>()
    )
}

impl sealed::Sealed for () {}
impl Bundle for () {
    fn put(self, _: &mut BundleSink<'_>) {}
}

macro_rules! tuple_bundle {
    ($($name:ident $idx:tt),*) => {
        impl<$($name: Component),*> sealed::Sealed for ($($name,)*) {}
        impl<$($name: Component),*> Bundle for ($($name,)*) {
            #[allow(non_snake_case)]
            #[track_caller]
            fn put(self, sink: &mut BundleSink<'_>) {
                let ($($name,)*) = self;
                $(sink.put($name);)*
            }

            /// The components are unzipped into one `Vec` per type, which becomes (or is
            /// appended to) the table's column; then the rows get their entities.
            #[allow(non_snake_case)]
            #[track_caller]
            fn spawn_batch(world: &mut World, bundles: impl Iterator<Item = Self>) -> Vec<Entity> {
                let storage = world.storage_mut();
                let mut ids = [$(storage.registry.id::<$name>()),*];
                let table = storage.bundle_table(&mut ids);
                let (lower, _) = bundles.size_hint();
                let mut columns = ($(Vec::<$name>::with_capacity(lower),)*);
                for ($($name,)*) in bundles {
                    $(columns.$idx.push($name);)*
                }
                let n = columns.0.len();
                $(storage.append_column::<$name>(table, &mut columns.$idx);)*
                let mut out = Vec::with_capacity(n);
                storage.push_entities(table, n, &mut out);
                out
            }
        }
    };
}

tuple_bundle!(A 0);
tuple_bundle!(A 0, B 1);
tuple_bundle!(A 0, B 1, C 2);
tuple_bundle!(A 0, B 1, C 2, D 3);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
