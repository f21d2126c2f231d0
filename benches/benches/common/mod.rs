//! Components and world builders shared by the bench targets.
//!
//! Every component implements `runsync::Component` and derives `bevy_ecs`'s `Component`
//! (hecs takes any `Send + Sync + 'static` type), so each library runs on the same types
//! and the same data.

// Each bench target uses a different subset of these helpers.
#![allow(dead_code)]

use std::time::Duration;

use bevy_ecs::component::Component as BevyComponent;
use criterion::Criterion;
use glam::{Mat4, Vec3};
use runsync::{Output, Runtime, World, merge};

/// A 64-byte transform.
#[derive(
    Clone,
    Copy,
    Debug,
    BevyComponent,
    serde::Serialize,
    serde::Deserialize,
    bytemuck::Pod,
    bytemuck::Zeroable,
)]
#[repr(transparent)]
pub(crate) struct Transform(pub(crate) Mat4);
/// A position.
#[derive(
    Clone,
    Copy,
    Debug,
    BevyComponent,
    serde::Serialize,
    serde::Deserialize,
    bytemuck::Pod,
    bytemuck::Zeroable,
)]
#[repr(transparent)]
pub(crate) struct Position(pub(crate) Vec3);
/// A rotation.
#[derive(
    Clone,
    Copy,
    Debug,
    BevyComponent,
    serde::Serialize,
    serde::Deserialize,
    bytemuck::Pod,
    bytemuck::Zeroable,
)]
#[repr(transparent)]
pub(crate) struct Rotation(pub(crate) Vec3);
/// A velocity.
#[derive(
    Clone,
    Copy,
    Debug,
    BevyComponent,
    serde::Serialize,
    serde::Deserialize,
    bytemuck::Pod,
    bytemuck::Zeroable,
)]
#[repr(transparent)]
pub(crate) struct Velocity(pub(crate) Vec3);

impl runsync::Component for Transform {
    type Output = Transform;
}
impl runsync::Component for Position {
    type Output = Position;
}
impl runsync::Component for Rotation {
    type Output = Rotation;
}
impl runsync::Component for Velocity {
    type Output = Velocity;
}

macro_rules! f32_components {
    ($($name:ident),*) => {$(
        /// A one-`f32` component.
        #[derive(Clone, Copy, Debug, Default, PartialEq, BevyComponent)]
        pub(crate) struct $name(pub(crate) f32);
        impl runsync::Component for $name {
            type Output = $name;
        }
    )*};
}

f32_components!(
    A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z, Data
);

/// One-`f32` components written by the systems of the 8-system scaling frame.
pub(crate) mod out8 {
    use super::BevyComponent;
    f32_components!(S0, S1, S2, S3, S4, S5, S6, S7);
}

/// Components of the `contrib_100k` frame: a velocity that several systems change by
/// deltas (summed in Sync), and a position integrated from it (last write wins).
pub(crate) mod contrib {
    use std::ops::AddAssign;

    use super::BevyComponent;
    use glam::Vec3;

    /// A position, integrated from [`Vel`]; systems emit the new position.
    #[derive(Clone, Copy, Debug, BevyComponent)]
    pub(crate) struct Pos(pub(crate) Vec3);
    /// A velocity; systems emit deltas, which `merge::sum` adds up.
    #[derive(Clone, Copy, Debug, BevyComponent)]
    pub(crate) struct Vel(pub(crate) Vec3);

    impl runsync::Component for Pos {
        type Output = Pos;
    }
    impl runsync::Component for Vel {
        type Output = Vec3;
    }
    impl AddAssign<Vec3> for Vel {
        #[inline]
        fn add_assign(&mut self, delta: Vec3) {
            self.0 += delta;
        }
    }
}

/// The `simple_insert` / `simple_iter` / `heavy_compute` bundle.
#[inline]
pub(crate) fn suite_bundle() -> (Transform, Position, Rotation, Velocity) {
    (
        Transform(Mat4::from_scale(Vec3::ONE)),
        Position(Vec3::X),
        Rotation(Vec3::X),
        Velocity(Vec3::X),
    )
}

/// The `heavy_compute` bundle: an invertible transform.
#[inline]
pub(crate) fn heavy_bundle() -> (Transform, Position, Rotation, Velocity) {
    (
        Transform(Mat4::from_axis_angle(Vec3::X, 1.2)),
        Position(Vec3::X),
        Rotation(Vec3::X),
        Velocity(Vec3::X),
    )
}

/// The `heavy_compute` kernel: invert 100 times, then transform the position.
#[inline]
pub(crate) fn heavy_kernel(t: Mat4, p: Vec3) -> (Mat4, Vec3) {
    let mut m = t;
    for _ in 0..100 {
        m = m.inverse();
    }
    (m, m.transform_vector3(p))
}

/// A runsync world with every bench component registered (last-wins merges).
pub(crate) fn runsync_world() -> World {
    let mut w = World::new();
    w.register::<Transform>(merge::last);
    w.register::<Position>(merge::last);
    w.register::<Rotation>(merge::last);
    w.register::<Velocity>(merge::last);
    macro_rules! reg {
        ($($t:ty),*) => { $( w.register::<$t>(merge::last); )* };
    }
    reg!(
        A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z, Data
    );
    use out8::*;
    reg!(S0, S1, S2, S3, S4, S5, S6, S7);
    w
}

/// A runsync runtime running the heavy_compute system on `workers` threads.
pub(crate) fn runsync_heavy(workers: usize) -> Runtime {
    let mut w = runsync_world();
    for _ in 0..1000 {
        w.spawn(heavy_bundle());
    }
    let mut rt = Runtime::builder().workers(workers).build(w);
    rt.add_system(|_: &World, out: &mut Output| {
        out.par_for_each::<(&Transform, &Position)>(|e, (t, p), out| {
            let (m, p) = heavy_kernel(t.0, p.0);
            out.write::<Transform>(e, Transform(m));
            out.write::<Position>(e, Position(p));
        });
    });
    rt
}

/// Criterion settings that keep the suite to a few minutes on 2 cores.
pub(crate) fn quick() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .configure_from_args()
}
