//! Required components: [`World::require`] and [`World::require_with`], and the sink
//! through which `#[component(requires(..))]` declares them at registration. The
//! machinery (which types an entity gets, their constructors) is the storage's
//! (`storage/required.rs`).

use crate::component::{Component, ComponentId, RequireSink};
use crate::storage::Storage;
use crate::world::World;

/// Declares the requirements of one type as it is registered
/// ([`Component::register_required`]).
struct Declare<'w> {
    storage: &'w mut Storage,
    of: ComponentId,
}

impl RequireSink for Declare<'_> {
    #[track_caller]
    fn require<R: Component>(&mut self, make: fn() -> R) {
        self.storage.add_requirement(self.of, make);
    }
}

impl World {
    /// Declares the requirements `C` states ([`Component::register_required`]: the
    /// derive's `requires(..)`); `id` is `C`'s, just registered.
    #[track_caller]
    pub(super) fn declare_required<C: Component>(&mut self, id: ComponentId) {
        C::register_required(&mut Declare {
            storage: self.storage_mut(),
            of: id,
        });
    }

    /// Makes component `A` require `B`: whenever an entity gains `A` — spawned with it,
    /// or `A` inserted (or replaced) — and lacks `B`, it gets `B::default()` in the same
    /// change. See [`require_with`](Self::require_with) for a constructor other than
    /// `Default`, and for exactly what holds; `#[derive(Component)]` declares the same with
    /// `#[component(requires(B))]`.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// #[derive(Clone, Copy, Debug, PartialEq)] struct Ship;
    /// impl Component for Ship { type Output = Ship; }
    /// #[derive(Clone, Copy, Debug, Default, PartialEq)] struct Vel(f32);
    /// impl Component for Vel { type Output = Vel; }
    ///
    /// let mut world = World::new();
    /// world.register::<Ship>(merge::last);
    /// world.register::<Vel>(merge::last);
    /// world.require::<Ship, Vel>();
    /// let a = world.spawn((Ship,));
    /// let b = world.spawn((Ship, Vel(3.0))); // the bundle's Vel is kept
    /// assert_eq!(world.get::<Vel>(a), Some(&Vel(0.0)));
    /// assert_eq!(world.get::<Vel>(b), Some(&Vel(3.0)));
    /// ```
    ///
    /// # Panics
    /// If `A` is not registered, or `B` is `A`.
    #[track_caller]
    pub fn require<A: Component, B: Component + Default>(&mut self) -> &mut Self {
        self.require_with::<A, B>(B::default)
    }

    /// Makes component `A` require `B`, made by `make` when an entity that gains `A` lacks
    /// it. Declared once, between frames (setup); it applies to every later spawn and
    /// insert, whatever makes it: [`World::spawn`], [`World::spawn_batch`],
    /// [`World::insert`], and systems' and hooks' commands in Sync
    /// ([`Output::spawn`](crate::Output::spawn), [`Output::insert`](crate::Output::insert),
    /// [`Commands`](crate::Commands)), in the same Sync as the command.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// #[derive(Clone, Copy, Debug, PartialEq)] struct Ship;
    /// impl Component for Ship { type Output = Ship; }
    /// #[derive(Clone, Copy, Debug, PartialEq)] struct Hull(u32);
    /// impl Component for Hull { type Output = Hull; }
    /// #[derive(Clone, Copy, Debug, Default, PartialEq)] struct Mass(f32);
    /// impl Component for Mass { type Output = Mass; }
    ///
    /// let mut world = World::new();
    /// world.register::<Ship>(merge::last);
    /// world.register::<Hull>(merge::last);
    /// world.register::<Mass>(merge::last);
    /// world.require_with::<Ship, Hull>(|| Hull(100)).require::<Hull, Mass>();
    /// let e = world.spawn(());
    /// let mut rt = Runtime::builder().workers(2).build(world);
    /// rt.add_system(move |_: &World, out: &mut Output| out.insert(e, Ship));
    /// rt.frame(); // Ship, then Hull(100) (Ship requires it), then Mass (Hull does)
    /// assert_eq!(rt.world().get::<Hull>(e), Some(&Hull(100)));
    /// assert_eq!(rt.world().get::<Mass>(e), Some(&Mass(0.0)));
    /// assert!(rt.world().is_added::<Mass>(e));
    /// ```
    ///
    /// What holds:
    /// - **Transitive**: `B`'s own requirements follow, and theirs. Which types an entity
    ///   gets is a breadth-first walk from the types given (a bundle's, in bundle order;
    ///   or the one inserted): each type's requirements in the order they were declared,
    ///   then theirs.
    /// - **Never overwrites**: a type the bundle provides, or the entity already has, is
    ///   left as it is; only missing types are made. A type required along two paths is
    ///   made by the nearest requirement (fewest steps; ties: the earlier given type, then
    ///   the earlier declaration).
    /// - **Cycles** are fine: `A` requiring `B` requiring `A` gives an entity spawned with
    ///   either both, and the walk stops at types already there.
    /// - **Hooks**: [`on_add`](Self::on_add) hooks fire for the required types too. A spawn
    ///   fires all its types' hooks once the entity is complete, in component id order (as
    ///   always); an insert fires `A`'s `on_add`, then the added types' in the order they
    ///   were added, all once every one of them is in.
    /// - **Removing** a required type later is allowed (it is not put back until `A` is
    ///   inserted again). Inserting `A` again (a replace) adds whatever is missing then.
    /// - **Change marks**: the required types are *added* (and changed), as any type an
    ///   entity gains.
    /// - `B` need not be registered yet: the requirement waits for it. Spawning or
    ///   inserting `A` (or a type requiring it) before `B` is registered panics, naming
    ///   both — in a system, failing the frame ([`FrameError::SystemPanicked`](crate::FrameError::SystemPanicked)).
    /// - Declaring `A` → `B` again replaces the constructor. Requirements are behaviour,
    ///   like hooks: snapshots do not hold them, and [`World::restore`] keeps this world's.
    ///
    /// Cost: with no requirement declared, a spawn or insert pays one flag check. A type
    /// with requirements is inserted one by one (not batched with other inserts of its
    /// type), and each required type it adds moves the entity once more; a spawn finds
    /// the entity's table once, required types included.
    ///
    /// # Panics
    /// If `A` is not registered, or `B` is `A`.
    #[track_caller]
    pub fn require_with<A: Component, B: Component>(
        &mut self,
        make: impl Fn() -> B + Send + Sync + 'static,
    ) -> &mut Self {
        let of = self.registry().id::<A>();
        self.storage_mut().add_requirement(of, make);
        self
    }
}
