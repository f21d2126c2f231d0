//! Bundles: tuples of components spawned together.

use std::any::type_name;

use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::storage::Storage;

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
    fn put<S: BundleSink>(self, sink: &mut S);

    /// Appends every bundle of `bundles` to `storage` (see [`World::spawn_batch`]),
    /// returning the new entities in order.
    ///
    /// [`World::spawn_batch`]: crate::World::spawn_batch
    #[doc(hidden)]
    fn spawn_batch<S: BatchSink>(
        storage: &mut S,
        bundles: impl Iterator<Item = Self>,
    ) -> Vec<Entity>
    where
        Self: Sized;
}

/// Only the tuples of this module are bundles: a bundle's components are staged through
/// crate-internal storage calls, which is no API to promise.
mod sealed {
    pub trait Sealed {}
}

/// Where a bundle puts its components, one by one (crate-internal; named by [`Bundle`]'s
/// hidden method, not nameable outside the crate): a world staging a spawn, or a command
/// list. A bundle knows neither.
pub trait BundleSink {
    #[doc(hidden)]
    fn put<C: Component>(&mut self, value: C);
}

/// Where [`Bundle::spawn_batch`] appends whole columns (crate-internal, like
/// [`BundleSink`]): the world's storage.
pub trait BatchSink {
    /// The id of `C`.
    #[doc(hidden)]
    fn id<C: Component>(&self) -> ComponentId;
    /// The table of the (sorted, then checked for repeats) types `ids`.
    #[doc(hidden)]
    fn table(&mut self, ids: &mut [ComponentId]) -> u32;
    /// Appends to `ids` (a bundle's types) the types they require that the bundle lacks,
    /// and remembers how to make them for [`fill_required`](Self::fill_required).
    /// Panics if one requires a type that is not registered.
    #[doc(hidden)]
    fn required(&mut self, ids: &mut Vec<ComponentId>);
    /// Pushes `n` values of each type [`required`](Self::required) added onto its column
    /// in `table`.
    #[doc(hidden)]
    fn fill_required(&mut self, table: u32, n: usize);
    /// Appends `values` (emptied) to `C`'s column in `table`.
    #[doc(hidden)]
    fn append_column<C: Component>(&mut self, table: u32, values: &mut Vec<C>);
    /// Adds `n` entities for the rows just appended to `table`.
    #[doc(hidden)]
    fn push_entities(&mut self, table: u32, n: usize) -> Vec<Entity>;
}

impl BatchSink for Storage {
    #[track_caller]
    fn id<C: Component>(&self) -> ComponentId {
        crate::hierarchy::assert_not_children::<C>();
        self.registry().id::<C>()
    }
    #[track_caller]
    fn table(&mut self, ids: &mut [ComponentId]) -> u32 {
        self.bundle_table(ids)
    }
    #[track_caller]
    fn required(&mut self, ids: &mut Vec<ComponentId>) {
        for &id in ids.iter() {
            self.check_required(id);
        }
        self.add_required(ids);
    }
    fn fill_required(&mut self, table: u32, n: usize) {
        Storage::fill_required(self, table, n);
    }
    fn append_column<C: Component>(&mut self, table: u32, values: &mut Vec<C>) {
        Storage::append_column(self, table, values);
    }
    fn push_entities(&mut self, table: u32, n: usize) -> Vec<Entity> {
        let mut out = Vec::with_capacity(n);
        Storage::push_entities(self, table, n, &mut out);
        out
    }
}

/// Panics: a bundle names `C` twice.
#[cold]
#[track_caller]
pub(crate) fn duplicate<C>() -> ! {
    panic!(
        "runsync: a bundle names component type `{}` twice; each type may appear once per entity",
        type_name::<C>()
    )
}

impl sealed::Sealed for () {}
impl Bundle for () {
    fn put<S: BundleSink>(self, _: &mut S) {}

    fn spawn_batch<S: BatchSink>(
        storage: &mut S,
        bundles: impl Iterator<Item = Self>,
    ) -> Vec<Entity> {
        let table = storage.table(&mut []);
        let n = bundles.count();
        storage.push_entities(table, n)
    }
}

macro_rules! tuple_bundle {
    ($($name:ident $idx:tt),*) => {
        impl<$($name: Component),*> sealed::Sealed for ($($name,)*) {}
        impl<$($name: Component),*> Bundle for ($($name,)*) {
            #[allow(non_snake_case)]
            #[track_caller]
            fn put<S: BundleSink>(self, sink: &mut S) {
                let ($($name,)*) = self;
                $(sink.put($name);)*
            }

            /// The components are unzipped into one `Vec` per type, which becomes (or is
            /// appended to) the table's column; required components are made for every
            /// row; then the rows get their entities.
            #[allow(non_snake_case)]
            #[track_caller]
            fn spawn_batch<S: BatchSink>(storage: &mut S, bundles: impl Iterator<Item = Self>) -> Vec<Entity> {
                let mut ids = vec![$(storage.id::<$name>()),*];
                storage.required(&mut ids);
                let table = storage.table(&mut ids);
                let (lower, _) = bundles.size_hint();
                let mut columns = ($(Vec::<$name>::with_capacity(lower),)*);
                for ($($name,)*) in bundles {
                    $(columns.$idx.push($name);)*
                }
                let n = columns.0.len();
                $(storage.append_column::<$name>(table, &mut columns.$idx);)*
                storage.fill_required(table, n);
                storage.push_entities(table, n)
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
