//! Types that declare how they are registered: [`DefaultMerge`] (a merge, and the
//! opt-ins of `#[component(..)]`'s flags), for [`World::register_default`].

use super::World;
use crate::component::{Component, ComponentId};
use crate::merge::Merge;

/// A component that declares its own merge, so that
/// [`World::register_default`](crate::World::register_default) registers it in one short
/// call. `#[derive(Component)]` with `#[component(merge = ..)]` implements it.
///
/// ```
/// use runsync::prelude::*;
///
/// #[derive(Component, Clone, Copy, Debug, PartialEq)]
/// #[component(merge = merge::last)] // Output = Self
/// struct Pos(f32, f32);
///
/// #[derive(Component, Debug, PartialEq)]
/// #[component(output = i32, merge = |h: &mut Health, d: &[i32]| h.0 += d.iter().sum::<i32>())]
/// struct Health(i32);
///
/// let mut world = World::new();
/// world.register_default::<Pos>();
/// world.register_default::<Health>();
/// let e = world.spawn((Pos(0.0, 0.0), Health(10)));
/// let mut rt = Runtime::builder().workers(1).build(world);
/// rt.add_system(|w: &World, out: &mut Output| {
///     for (e, _) in w.query::<(&Health,)>() {
///         out.write::<Health>(e, -3);
///         out.write::<Pos>(e, Pos(1.0, 2.0));
///     }
/// });
/// rt.frame();
/// assert_eq!(rt.world().get::<Health>(e), Some(&Health(7)));
/// assert_eq!(rt.world().get::<Pos>(e), Some(&Pos(1.0, 2.0)));
/// ```
///
/// Flags beside the merge opt the type in where it is declared, so one attribute says
/// everything the world needs to know about it (each flag needs the trait its call
/// needs: `snapshot` `Clone`, `checksum` [`Checksum`](crate::Checksum) and `Debug`,
/// `debug` `Debug` on the type and its output, `save` serde's `Serialize` and
/// `Deserialize`):
///
/// ```
/// use runsync::prelude::*;
///
/// #[derive(Component, Checksum, Clone, Copy, Debug, PartialEq)]
/// #[component(merge = merge::last, snapshot, checksum)]
/// struct Pos(f32, f32);
///
/// let mut world = World::new();
/// world.register_default::<Pos>();
/// assert!(world.snapshot().is_ok());
/// assert!(world.unchecksummed().is_empty());
/// ```
///
/// Flags without a merge are a compile error (`register_default` applies them):
///
/// ```compile_fail
/// use runsync::prelude::*;
/// #[derive(Component, Clone)]
/// #[component(snapshot)]
/// struct Pos(f32);
/// ```
///
/// A misspelt attribute key is a compile error that lists the accepted ones:
///
/// ```compile_fail
/// use runsync::prelude::*;
/// #[derive(Component)]
/// #[component(merg = merge::last)]
/// struct Pos(f32);
/// ```
pub trait DefaultMerge: Component + Sized {
    /// The merge this type is registered with.
    fn default_merge() -> impl Merge<Self>;

    /// What the type opts into, run by [`World::register_default`] right after
    /// registering it: `#[component(..)]`'s flags `snapshot`
    /// ([`World::snapshotting`]), `checksum` ([`World::checksumming`]), `debug`
    /// ([`World::debugging`]) and `save` ([`World::saving`]) each add that call. Nothing
    /// by default.
    fn opt_in(world: &mut World) {
        let _ = world;
    }
}

impl World {
    /// Registers `C` with the merge it declares ([`DefaultMerge`], which
    /// `#[derive(Component)]` implements for `#[component(merge = ..)]`), then opts it
    /// into what its flags name (`snapshot`, `checksum`, `debug`, `save`:
    /// [`DefaultMerge::opt_in`]). Returns the type's id.
    ///
    /// # Panics
    /// If `C` is already registered.
    #[track_caller]
    pub fn register_default<C: DefaultMerge>(&mut self) -> ComponentId {
        let id = self.register::<C>(C::default_merge());
        C::opt_in(self);
        id
    }
}
