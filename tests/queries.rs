//! `query(..).len()` and `query_filtered`, as a user writes them.

use runsync::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
impl Component for Pos {
    type Output = Pos;
}
#[derive(Clone, Copy, Debug, PartialEq)]
struct Enemy;
impl Component for Enemy {
    type Output = Enemy;
}
#[derive(Clone, Copy, Debug, PartialEq)]
struct Boss;
impl Component for Boss {
    type Output = Boss;
}

fn world() -> World {
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    w.register::<Enemy>(merge::last);
    w.register::<Boss>(merge::last);
    for i in 0..40 {
        match i % 4 {
            0 => w.spawn((Pos(i as f32), Enemy)),
            1 => w.spawn((Pos(i as f32), Enemy, Boss)),
            2 => w.spawn((Pos(i as f32),)),
            _ => w.spawn((Enemy,)),
        };
    }
    w
}

#[test]
fn len_is_exact_and_counts_what_is_left() {
    let w = world();
    let mut q = w.query::<(&Pos,)>();
    assert_eq!(q.len(), 30);
    assert_eq!(
        q.len(),
        w.query::<(&Pos,)>().count(),
        "len agrees with walking"
    );
    for _ in 0..7 {
        q.next();
    }
    assert_eq!(q.len(), 23);
    assert_eq!(w.query::<(&Pos, Without<Enemy>)>().len(), 10);
    assert_eq!(w.query::<(Option<&Pos>,)>().len(), 40);
}

#[test]
fn filtered_queries_yield_only_the_data() {
    let w = world();
    let enemies = w.query_filtered::<(&Pos,), With<Enemy>>();
    assert_eq!(enemies.len(), 20);
    let xs: Vec<f32> = enemies.map(|(_, (p,))| p.0).collect();
    let expect: Vec<f32> = w
        .query::<(&Pos, With<Enemy>)>()
        .map(|(_, (p, ()))| p.0)
        .collect();
    assert_eq!(xs, expect);
    let mut minions = w.query_filtered::<(&Pos,), (With<Enemy>, Without<Boss>)>();
    assert_eq!(minions.len(), 10);
    assert!(minions.all(|(e, _)| !w.has::<Boss>(e)));
}

#[test]
fn the_empty_query_visits_every_entity() {
    let mut w = world();
    let bare = w.spawn(());
    let all: Vec<Entity> = w.query::<()>().map(|(e, ())| e).collect();
    assert_eq!(all.len(), w.len());
    assert_eq!(w.query::<()>().len(), w.len());
    assert!(all.contains(&bare));
    let mut sorted = all.clone();
    sorted.sort_unstable_by_key(|e| e.to_bits());
    sorted.dedup();
    assert_eq!(sorted.len(), all.len(), "each entity once");
}
