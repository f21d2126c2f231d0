//! `#[derive(Component)]` as a user writes it.

use runsync::prelude::*;

#[derive(Component, Clone, Copy, Debug, PartialEq)]
#[component(merge = merge::last)]
struct Pos {
    x: f32,
    y: f32,
}

#[derive(Component, Clone, Copy, Debug, PartialEq, PartialOrd)]
#[component(merge = merge::max)]
struct Tag;

/// Output only: registered with an explicit merge.
#[derive(Component, Debug, PartialEq)]
#[component(output = u32)]
struct Hits(u32);

/// Generic, with the merge taken from a function.
#[derive(Component, Clone, Debug, PartialEq)]
#[component(output = T, merge = keep_largest::<T>)]
struct Best<T: PartialOrd + Clone + Send + Sync + 'static>(T);

fn keep_largest<T: PartialOrd + Clone + Send + Sync + 'static>(b: &mut Best<T>, outs: &[T]) {
    for o in outs {
        if *o > b.0 {
            b.0 = o.clone();
        }
    }
}

#[test]
fn derived_components_register_and_merge() {
    let mut w = World::new();
    w.register_default::<Pos>();
    w.register_default::<Tag>();
    w.register::<Hits>(|h: &mut Hits, d: &[u32]| h.0 += d.iter().sum::<u32>());
    w.register_default::<Best<u64>>();
    let e = w.spawn((Pos { x: 0.0, y: 0.0 }, Tag, Hits(0), Best(5u64)));
    let mut rt = Runtime::builder().workers(2).build(w);
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, _) in w.query::<(&Pos,)>() {
            out.write::<Pos>(e, Pos { x: 1.0, y: 2.0 });
            out.write::<Hits>(e, 2);
            out.write::<Best<u64>>(e, 3);
            out.write::<Best<u64>>(e, 9);
            out.write::<Tag>(e, Tag);
        }
    });
    rt.frame();
    let w = rt.world();
    assert_eq!(w.get::<Pos>(e), Some(&Pos { x: 1.0, y: 2.0 }));
    assert_eq!(w.get::<Hits>(e), Some(&Hits(2)));
    assert_eq!(w.get::<Best<u64>>(e), Some(&Best(9)));
    assert_eq!(w.get::<Tag>(e), Some(&Tag));
}

/// Flags opt the type in where it is declared.
#[derive(Component, Checksum, Clone, Copy, Debug, PartialEq)]
#[component(output = i32, merge = |h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>(), snapshot, checksum, debug)]
struct Hp(i32);

#[derive(Checksum, Clone, Debug)]
enum Order {
    Idle,
    Move(f32, f32),
    Attack { target: Entity, power: u8 },
}

#[derive(Checksum)]
struct Pair<T>(T, T);

fn sum(f: impl Fn(&mut Checksummer)) -> u64 {
    let mut h = Checksummer::new();
    f(&mut h);
    h.finish()
}

#[test]
fn derived_checksum_writes_fields_in_order() {
    assert_eq!(
        sum(|h| Hp(7).checksum(h)),
        sum(|h| 7i32.checksum(h)),
        "a newtype is its field"
    );
    assert_eq!(
        sum(|h| Pair(1.5f32, -0.0).checksum(h)),
        sum(|h| (1.5f32, -0.0f32).checksum(h))
    );
    // Floats by bits: 0.0 and -0.0 differ.
    assert_ne!(
        sum(|h| Pair(0.0f32, 0.0).checksum(h)),
        sum(|h| Pair(0.0f32, -0.0).checksum(h))
    );
    let e = Entity::from_bits(5 | 1 << 32).unwrap();
    assert_eq!(
        sum(|h| Order::Attack {
            target: e,
            power: 3
        }
        .checksum(h)),
        sum(|h| (2u64, e, 3u8).checksum(h)),
        "variant index, then the fields"
    );
    assert_eq!(sum(|h| Order::Idle.checksum(h)), sum(|h| 0u64.checksum(h)));
    assert_ne!(
        sum(|h| Order::Move(1.0, 2.0).checksum(h)),
        sum(|h| Order::Move(2.0, 1.0).checksum(h))
    );
}

/// A component with glam fields, derived: each field as its hand-written field tuple.
#[cfg(feature = "glam")]
#[derive(Component, Checksum, Clone, Copy, Debug)]
#[component(merge = merge::last, checksum)]
struct Body {
    at: glam::Vec2,
    turn: glam::Quat,
    frame: glam::Affine3A,
    cell: glam::IVec3,
}

#[cfg(feature = "glam")]
#[test]
fn derived_checksum_of_glam_fields_is_the_hand_written_one() {
    use glam::{Affine3A, IVec3, Quat, Vec2, Vec3};
    let b = Body {
        at: Vec2::new(1.5, -0.0),
        turn: Quat::from_xyzw(0.0, 0.6, 0.0, 0.8),
        frame: Affine3A::from_scale_rotation_translation(
            Vec3::new(1.0, 2.0, 3.0),
            Quat::IDENTITY,
            Vec3::new(-4.0, 5.0, 6.5),
        ),
        cell: IVec3::new(-1, 0, 7),
    };
    let m = b.frame.matrix3;
    let t = b.frame.translation;
    let by_hand = sum(|h| {
        (b.at.x, b.at.y).checksum(h);
        (b.turn.x, b.turn.y, b.turn.z, b.turn.w).checksum(h);
        (m.x_axis.x, m.x_axis.y, m.x_axis.z).checksum(h);
        (m.y_axis.x, m.y_axis.y, m.y_axis.z).checksum(h);
        (m.z_axis.x, m.z_axis.y, m.z_axis.z).checksum(h);
        (t.x, t.y, t.z).checksum(h);
        (b.cell.x, b.cell.y, b.cell.z).checksum(h);
    });
    assert_eq!(sum(|h| b.checksum(h)), by_hand);
    // `-0.0` is not `0.0`.
    let zero = Body {
        at: Vec2::new(1.5, 0.0),
        ..b
    };
    assert_ne!(sum(|h| zero.checksum(h)), by_hand);
    // And the world's checksum takes it: two worlds that differ only in a sign bit differ.
    let (mut w1, mut w2) = (World::new(), World::new());
    w1.register_default::<Body>();
    w2.register_default::<Body>();
    assert!(
        w1.unchecksummed().is_empty(),
        "the `checksum` flag opts Body in"
    );
    w1.spawn((b,));
    w2.spawn((zero,));
    assert_ne!(w1.checksum(), w2.checksum());
}

#[test]
fn component_flags_opt_in_through_register_default() {
    let mut w = World::new();
    w.register_default::<Hp>();
    w.register_default::<Pos>();
    assert_eq!(w.unchecksummed(), [std::any::type_name::<Pos>()]);
    // `Pos` has no `snapshot` flag: the snapshot names it instead of leaving it out.
    let err = w.snapshot().unwrap_err().to_string();
    assert!(
        err.contains("Pos") && err.contains("snapshotting::<Pos>"),
        "{err}"
    );
    w.snapshotting::<Pos>();
    let e = w.spawn((Hp(10), Pos { x: 0.0, y: 0.0 }));
    let saved = w.snapshot().unwrap();
    let before = w.checksum();
    w.get_mut::<Hp>(e).unwrap().0 = 9;
    assert_ne!(w.checksum(), before, "Hp counts in the checksum");
    // `debug`: provenance shows Hp's values and outputs.
    w.restore(&saved);
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system_named("hit", move |_: &World, out: &mut Output| {
        out.write::<Hp>(e, -2)
    });
    rt.watch(e);
    rt.frame();
    let p = rt.provenance(e).unwrap().components()[0].clone();
    assert_eq!(
        (p.before.as_deref(), p.after.as_deref()),
        (Some("Hp(10)"), Some("Hp(8)"))
    );
    assert_eq!(p.writes[0].value.as_deref(), Some("-2"));
}

#[derive(Component, Clone, Copy, Debug, Default, PartialEq)]
#[component(merge = merge::last)]
struct Vel(f32);

#[derive(Component, Clone, Copy, Debug, PartialEq)]
#[component(merge = merge::last)]
struct Mass(f32);

/// Requires `Vel` (its `Default`) and `Mass` (made by the expression); registered before
/// them: the requirements wait for their types.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq)]
#[component(merge = merge::last, requires(Vel, Mass = Mass(2.5)))]
struct Ship;

/// `requires` with `output`, and a requirement of its own: `Ship`, so transitively `Vel`
/// and `Mass`.
#[derive(Component, Debug, PartialEq)]
#[component(output = u32, requires(Ship))]
struct Flagship(u32);

#[test]
fn derived_requirements_are_declared_at_registration() {
    let mut w = World::new();
    w.register_default::<Ship>();
    w.register::<Flagship>(|f: &mut Flagship, d: &[u32]| f.0 += d.iter().sum::<u32>());
    w.register_default::<Vel>();
    w.register_default::<Mass>();
    let a = w.spawn((Ship,));
    let b = w.spawn((Flagship(1), Mass(9.0)));
    assert_eq!(
        (w.get::<Vel>(a), w.get::<Mass>(a)),
        (Some(&Vel(0.0)), Some(&Mass(2.5)))
    );
    assert_eq!(w.get::<Ship>(b), Some(&Ship));
    assert_eq!(w.get::<Mass>(b), Some(&Mass(9.0)), "the bundle's is kept");
    assert_eq!(w.get::<Vel>(b), Some(&Vel(0.0)));
}
