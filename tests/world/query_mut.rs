//! `World::query_mut` between frames, as a user writes it.

use runsync::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
impl Component for Pos {
    type Output = Pos;
}
#[derive(Clone, Copy, Debug, PartialEq)]
struct Vel(f32);
impl Component for Vel {
    type Output = Vel;
}
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tag;
impl Component for Tag {
    type Output = Tag;
}
#[derive(Clone, Debug, PartialEq)]
struct Name(String);
impl Component for Name {
    type Output = Name;
}

fn world() -> (World, Vec<Entity>) {
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    w.register::<Vel>(merge::last);
    w.register::<Tag>(merge::last);
    w.register::<Name>(merge::last);
    let mut ents = Vec::new();
    for i in 0..50 {
        let e = match i % 4 {
            0 => w.spawn((Pos(i as f32), Vel(1.0))),
            1 => w.spawn((Pos(i as f32), Vel(2.0), Tag)),
            2 => w.spawn((Pos(i as f32),)),
            _ => w.spawn((Vel(3.0), Name(format!("n{i}")))),
        };
        ents.push(e);
    }
    // Holes and moves, so rows are not spawn order.
    w.despawn(ents[5]);
    w.insert(ents[6], Tag);
    w.remove::<Vel>(ents[8]);
    (w, ents)
}

#[test]
fn writes_like_get_mut_in_query_order() {
    let (mut a, ents) = world();
    let (mut b, _) = world();
    let order: Vec<Entity> = a
        .query_mut::<(&mut Pos, &Vel)>()
        .map(|(e, (p, v))| {
            p.0 += v.0;
            e
        })
        .collect();
    let expect: Vec<Entity> = b.query::<(&Pos, &Vel)>().map(|(e, _)| e).collect();
    assert_eq!(order, expect, "same order as query");
    for e in expect {
        let v = b.get::<Vel>(e).unwrap().0;
        b.get_mut::<Pos>(e).unwrap().0 += v;
    }
    for &e in &ents {
        assert_eq!(a.get::<Pos>(e), b.get::<Pos>(e));
    }
}

#[test]
fn optionals_and_filters() {
    let (mut w, _) = world();
    let mut tagged = 0;
    for (_, (p, v, ())) in w.query_mut::<(&mut Pos, Option<&mut Vel>, With<Tag>)>() {
        tagged += 1;
        p.0 = -1.0;
        if let Some(v) = v {
            v.0 = 9.0;
        }
    }
    assert_eq!(tagged, w.query::<(&Pos, With<Tag>)>().count());
    assert!(
        w.query::<(&Pos, With<Tag>)>()
            .all(|(_, (p, ()))| p.0 == -1.0)
    );
    for (_, (n, ())) in w.query_mut::<(&mut Name, Without<Pos>)>() {
        n.0.push('!');
    }
    assert!(w.query::<(&Name,)>().all(|(_, (n,))| n.0.ends_with('!')));
    // A repeated filter is fine.
    let n = w.query_mut::<(&Pos, With<Pos>, Without<Name>)>().count();
    assert_eq!(n, w.query::<(&Pos,)>().count());
}

#[test]
#[should_panic(expected = "names component type")]
fn a_type_written_twice_is_an_error() {
    let (mut w, _) = world();
    let _ = w.query_mut::<(&mut Pos, &Pos)>();
}
