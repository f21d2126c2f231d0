//! Ready-made 2D game components and systems for [`runsync`].
//!
//! In runsync several systems may write the same component in one frame; the component's
//! registered merge folds their outputs in Sync. So every component here documents **what
//! its `Output` means and how it merges**, chosen so that independent systems compose:
//!
//! | component | `Output` | merge | written by |
//! |---|---|---|---|
//! | [`Position`] | [`Displace`]: a displacement | sum of deltas | [`Integrate`], [`Bounds`] |
//! | [`Velocity`] | [`Impulse`]: a change of velocity | sum of deltas | [`Gravity`], [`Drag`], [`Separation`], [`Bounds`], your steering |
//! | [`Lifetime`] | [`LifetimeDelta`]: seconds to add | sum of deltas | [`Expire`] |
//! | [`Health`] | `i32` heal (+) / damage (−) | sum, capped at `max` | [`Contact`] |
//! | [`Team`] | `Team` | last write wins | (set at spawn) |
//! | [`Collider`] | `Collider` | last write wins | (set at spawn) |
//! | [`Damage`] | `Damage` | last write wins | (set at spawn) |
//! | [`Projectile`] | `Projectile` | last write wins | (marker) |
//! | [`SpatialGrid`] (a resource) | `SpatialGrid` | last write wins | [`BuildGrid`] |
//! | [`Transform`] | `Transform` (local, relative to the parent) | last write wins | (set at spawn), your systems |
//! | [`GlobalTransform`] | `GlobalTransform` | last write wins | [`PropagateTransforms`] |
//!
//! An output that is a *change* has a type of its own ([`Displace`], [`Impulse`],
//! [`LifetimeDelta`]), so writing an absolute value where a delta is expected does not
//! compile: `out.write::<Position>(e, Displace(v * dt))`, never a bare `Vec2` that would
//! silently be added.
//!
//! Deltas are the natural output when several systems *contribute* to a quantity (forces
//! to a velocity, a move and a bounds correction to a position): each system computes its
//! contribution from last frame's world and the merge adds them in system registration
//! order, then emission order — so float sums are bitwise the same on any worker count.
//! Properties that are *set* rather than accumulated use last-write-wins.
//!
//! Call [`register`] once to register all of them with these merges.
//!
//! The neighbour systems, [`Separation`] and [`Contact`], each index the world in a grid of
//! their own every frame — unless a [`BuildGrid`] system builds one [`SpatialGrid`] for
//! both (call [`SpatialGrid::register`] too): it is built once per frame and read in the
//! next, so neighbours are seen as they were a frame earlier.
//!
//! ```
//! use runsync::prelude::*;
//! use runsync_systems::glam::Vec2; // the glam this crate uses, re-exported
//! use runsync_systems::*;
//!
//! let mut world = World::new();
//! runsync_systems::register(&mut world);
//! let e = world.spawn((Position(Vec2::ZERO), Velocity(Vec2::new(60.0, 0.0))));
//!
//! let mut rt = Runtime::builder().workers(1).dt(1.0 / 60.0).build(world);
//! rt.add_system(Integrate);
//! rt.add_system(Drag { per_second: 0.5 });
//! rt.frame();
//! assert_eq!(rt.world().get::<Position>(e), Some(&Position(Vec2::new(1.0, 0.0))));
//! assert!(rt.world().get::<Velocity>(e).unwrap().0.x < 60.0);
//! ```
//!
//! Parents and children ([`World::register_hierarchy`]) get world transforms from
//! [`PropagateTransforms`]: every [`GlobalTransform`] from the [`Transform`]s down each
//! tree, in parallel over the roots.
//!
//! Every system reads `dt` from the runtime's [`runsync::Time`] resource.

use std::ops::AddAssign;

use glam::Vec2;
use runsync::prelude::*;
use serde::{Deserialize, Serialize};

/// The `glam` this crate's components use, so a game need not pin a matching version.
pub use glam;

mod contact;
mod grid;
mod life;
mod motion;
mod separation;
mod spatial;
mod spawner;
mod transform;

pub use contact::Contact;
pub use grid::{Grid, GridItem, GridPart, MAX_GRID_PARTS};
pub use life::{Death, Expire};
pub use motion::{Bounds, BoundsMode, Drag, Gravity, Integrate};
pub use separation::Separation;
pub use spatial::{BuildGrid, SpatialGrid};
pub use spawner::{
    AgentTemplate, ProjectileTemplate, Spawner, SpawnerConfig, TeamTotals, TurretTemplate,
};
pub use transform::{GlobalTransform, PropagateTransforms, Transform};

/// Where an entity is, in world units.
///
/// **Output: a [`Displace`]ment; merge: sum of deltas.** [`Integrate`] emits
/// `Displace(velocity * dt)`, [`Bounds`] emits the correction that brings the entity back
/// inside; both apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Position(pub Vec2);

impl Component for Position {
    type Output = Displace;
}

/// A change of [`Position`]: the output systems write for it (added up in Sync).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Displace(pub Vec2);

impl AddAssign<Displace> for Position {
    #[inline]
    fn add_assign(&mut self, d: Displace) {
        self.0 += d.0;
    }
}

/// Velocity in world units per second.
///
/// **Output: an [`Impulse`] (a change of velocity); merge: sum of deltas.** Every
/// force-like system ([`Gravity`], [`Drag`], [`Separation`], the reflection of [`Bounds`],
/// your steering) emits its own contribution computed from last frame's velocity; they
/// all add up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Velocity(pub Vec2);

impl Component for Velocity {
    type Output = Impulse;
}

/// A change of [`Velocity`]: the output systems write for it (added up in Sync).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Impulse(pub Vec2);

impl AddAssign<Impulse> for Velocity {
    #[inline]
    fn add_assign(&mut self, d: Impulse) {
        self.0 += d.0;
    }
}

/// Seconds left to live; [`Expire`] despawns the entity when it runs out.
///
/// **Output: a [`LifetimeDelta`], seconds to add (negative to age); merge: sum of
/// deltas**, so another system may extend or shorten a lifetime in the same frame as
/// [`Expire`] ages it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Lifetime(pub f32);

impl Component for Lifetime {
    type Output = LifetimeDelta;
}

/// Seconds to add to a [`Lifetime`] (negative to age): the output systems write for it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LifetimeDelta(pub f32);

impl AddAssign<LifetimeDelta> for Lifetime {
    #[inline]
    fn add_assign(&mut self, d: LifetimeDelta) {
        self.0 += d.0;
    }
}

/// Hit points. [`Death`] despawns entities at 0 or below.
///
/// **Output: `i32` change (negative = damage, positive = heal); merge: sum, then capped at
/// `max`** — every hit of the frame counts, and heals never overfill. Integer points keep
/// the sum independent of order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// Current hit points.
    pub hp: i32,
    /// Maximum hit points (heals cap here).
    pub max: i32,
}

impl Health {
    /// Full health: `hp == max`.
    pub fn full(max: i32) -> Health {
        Health { hp: max, max }
    }

    /// The merge registered by [`register`]: adds every change (saturating), caps at `max`.
    pub fn merge(h: &mut Health, changes: &[i32]) {
        let total = changes.iter().fold(h.hp, |acc, &d| acc.saturating_add(d));
        h.hp = total.min(h.max);
    }
}

impl Component for Health {
    type Output = i32;
}

/// Which side an entity is on; [`Contact`] only hurts entities of other teams.
///
/// **Output: `Team`; merge: last write wins** (a team is set, not accumulated).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Team(pub u8);

impl Component for Team {
    type Output = Team;
}

/// A circle around the position, for [`Separation`] and [`Contact`].
///
/// **Output: `Collider`; merge: last write wins.**
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Collider {
    /// Radius in world units.
    pub radius: f32,
}

impl Component for Collider {
    type Output = Collider;
}

/// Hit points this entity deals, through [`Contact`], to each overlapping enemy every frame
/// (melee) — or, for a [`Projectile`], once, to the first enemy it touches.
///
/// **Output: `Damage`; merge: last write wins.**
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Damage(pub i32);

impl Component for Damage {
    type Output = Damage;
}

/// Marker: the entity is a projectile. [`Contact`] despawns it on its first hit, and
/// [`Separation`] ignores it.
///
/// **Output: `Projectile`; merge: last write wins.**
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Projectile;

impl Component for Projectile {
    type Output = Projectile;
}

/// Registers every component of this crate with its documented merge, and opts each into
/// snapshots ([`World::snapshotting`]), checksums ([`World::checksumming`]) and save
/// files ([`World::saving`]; they are `Serialize + Deserialize`, glam's vectors through
/// glam's `serde` feature), so a world of these components can be rolled back, compared,
/// saved and replayed.
///
/// ```
/// use runsync::prelude::*;
/// let mut world = World::new();
/// runsync_systems::register(&mut world);
/// world.spawn((runsync_systems::Team(1),));
/// assert!(world.snapshot().is_ok());
/// let mut file = Vec::new();
/// world.save(&mut file).unwrap();
/// ```
///
/// # Panics
/// If one of them was already registered (with any merge).
pub fn register(world: &mut World) {
    world.register::<Position>(merge::sum);
    world.register::<Velocity>(merge::sum);
    world.register::<Lifetime>(merge::sum);
    world.register::<Health>(Health::merge);
    world.register::<Team>(merge::last);
    world.register::<Collider>(merge::last);
    world.register::<Damage>(merge::last);
    world.register::<Projectile>(merge::last);
    world.register::<Transform>(merge::last);
    world.register::<GlobalTransform>(merge::last);
    macro_rules! opt_in {
        ($($t:ty),*) => {$( world.snapshotting::<$t>().checksumming::<$t>().saving::<$t>(); )*};
    }
    opt_in!(
        Position,
        Velocity,
        Lifetime,
        Health,
        Team,
        Collider,
        Damage,
        Projectile,
        Transform,
        GlobalTransform
    );
}

// Checksums: every field, floats by bits (see `runsync::Checksum`). A `Vec2` through
// runsync's `glam` feature: `x` then `y`, the words these impls wrote by hand before, so
// every checksum (and golden file) is unchanged.
impl Checksum for Position {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

impl Checksum for Velocity {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

impl Checksum for Lifetime {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

impl Checksum for Health {
    fn checksum(&self, h: &mut Checksummer) {
        (self.hp, self.max).checksum(h);
    }
}

impl Checksum for Team {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

impl Checksum for Collider {
    fn checksum(&self, h: &mut Checksummer) {
        self.radius.checksum(h);
    }
}

impl Checksum for Damage {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

impl Checksum for Projectile {
    fn checksum(&self, _: &mut Checksummer) {}
}

impl Checksum for Transform {
    fn checksum(&self, h: &mut Checksummer) {
        (self.translation, self.rotation).checksum(h);
    }
}

impl Checksum for GlobalTransform {
    fn checksum(&self, h: &mut Checksummer) {
        self.0.checksum(h);
    }
}

/// The fixed step of the running frame, from the runtime's [`Time`] resource.
#[inline]
pub(crate) fn dt(world: &World) -> f32 {
    world.resource::<Time>().dt
}

#[cfg(test)]
pub(crate) mod test_util {
    use runsync::prelude::*;

    /// A world with this crate's components registered.
    pub(crate) fn world() -> World {
        let mut w = World::new();
        super::register(&mut w);
        w
    }

    /// A single-worker runtime at `dt = 0.5` (exact in binary, so tests can compare).
    pub(crate) fn runtime(world: World) -> Runtime {
        Runtime::builder().workers(1).dt(0.5).build(world)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_merge_sums_and_caps() {
        let mut h = Health { hp: 5, max: 10 };
        Health::merge(&mut h, &[-3, 2, 20]);
        assert_eq!(h.hp, 10);
        Health::merge(&mut h, &[-4, -4]);
        assert_eq!(h.hp, 2);
    }

    #[test]
    fn register_registers_everything() {
        let w = test_util::world();
        assert!(w.is_registered::<Position>());
        assert!(w.is_registered::<Projectile>());
    }

    /// The components' checksums write glam's fields through runsync's `glam` feature:
    /// the same words as the field tuples they wrote by hand before, so no checksum, and
    /// no golden file, changes.
    #[test]
    fn glam_checksums_are_the_hand_written_ones() {
        fn sum(f: impl Fn(&mut Checksummer)) -> u64 {
            let mut h = Checksummer::new();
            f(&mut h);
            h.finish()
        }
        let (a, b) = (
            Vec2::new(1.5, -0.0),
            Vec2::new(f32::from_bits(0x7fc0_0001), 3.0),
        );
        assert_eq!(
            sum(|h| Position(a).checksum(h)),
            sum(|h| (a.x, a.y).checksum(h))
        );
        assert_eq!(
            sum(|h| Velocity(b).checksum(h)),
            sum(|h| (b.x, b.y).checksum(h))
        );
        let t = Transform {
            translation: a,
            rotation: b,
        };
        let by_hand = sum(|h| {
            (a.x, a.y).checksum(h);
            (b.x, b.y).checksum(h);
        });
        assert_eq!(sum(|h| t.checksum(h)), by_hand);
        assert_eq!(sum(|h| GlobalTransform(t).checksum(h)), by_hand);
    }
}
