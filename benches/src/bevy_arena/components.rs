//! The arena's components and resources as bevy_ecs types: the same fields as
//! `runsync_systems`' (whose math they reuse: [`Transform`] wraps runsync's), written in
//! place instead of through outputs and merges.

use bevy_ecs::component::Component;
use bevy_ecs::resource::Resource;
use runsync_systems::SpawnerConfig;
use runsync_systems::glam::Vec2;

use super::grid::Built;

/// Where an entity is, in world units.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq)]
pub struct Position(pub Vec2);

/// Velocity in world units per second.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq)]
pub struct Velocity(pub Vec2);

/// Seconds left to live; Expire despawns the entity when it runs out.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq)]
pub struct Lifetime(pub f32);

/// Hit points; Death despawns entities at 0 or below.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Health {
    /// Current hit points.
    pub hp: i32,
    /// Maximum hit points.
    pub max: i32,
}

impl Health {
    /// Full health.
    pub fn full(max: i32) -> Health {
        Health { hp: max, max }
    }

    /// Applies one change as runsync's `Health::merge` does (saturating, capped at `max`).
    #[inline]
    pub fn apply(&mut self, change: i32) {
        self.hp = self.hp.saturating_add(change).min(self.max);
    }
}

/// Which side an entity is on.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Team(pub u8);

/// A circle around the position.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Collider {
    /// Radius in world units.
    pub radius: f32,
}

/// Hit points this entity deals on contact (a projectile: once).
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Damage(pub i32);

/// Marker: the entity is a projectile.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Projectile;

/// Where an entity is relative to its parent (runsync_systems' `Transform`: a translation
/// then a rotation as a unit vector).
#[derive(Component, Clone, Copy, Debug, Default, PartialEq)]
pub struct Transform(pub runsync_systems::Transform);

/// Where an entity is in the world: its ancestors' [`Transform`]s and its own.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq)]
pub struct GlobalTransform(pub runsync_systems::Transform);

/// The arena's constants (runsync's arena passes them to its systems' constructors).
#[derive(Resource, Clone, Copy, Debug, PartialEq)]
pub struct ArenaRules {
    /// The spawner's waves, agents, projectiles and turrets.
    pub spawner: SpawnerConfig,
    /// Steer's acceleration towards the enemies, in units per second squared.
    pub steer: f32,
    /// Drag's decay rate per second.
    pub drag: f32,
    /// Separation's push strength.
    pub separation: f32,
    /// The field's lower corner (Bounds).
    pub min: Vec2,
    /// The field's upper corner (Bounds).
    pub max: Vec2,
}

/// The fixed step and the frames completed (runsync's `Time`: during frame `n` (from 1),
/// `frame` is `n - 1`).
#[derive(Resource, Clone, Copy, Debug, PartialEq)]
pub struct ArenaTime {
    /// Seconds per frame.
    pub dt: f32,
    /// Frames completed before the running one.
    pub frame: u64,
}

/// The grid built in the previous frame, which Separation and Contact read (runsync's
/// `SpatialGrid` resource: one frame older than the world they see).
#[derive(Resource, Debug, Default)]
pub struct SharedGrid(pub Built);

/// The grid BuildGrid builds in this frame; swapped with [`SharedGrid`] between frames.
#[derive(Resource, Debug, Default)]
pub struct NextGrid(pub Built);

/// Agents despawned by Death so far (Death's despawns, as runsync counts Death's commands).
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deaths(pub u64);
