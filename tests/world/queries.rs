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

/// `nth` and `skip` jump rows without reading them (a query cut into parts for workers)
/// and land where a row-by-row walk lands: across tables, with `Option` elements, and
/// with a row filter.
#[test]
fn nth_and_skip_land_where_a_walk_lands() {
    // Marks on some rows of every table, for `Changed`: a frame writes every third `Pos`.
    let w0 = world();
    let changed: Vec<Entity> = w0.query::<(&Pos,)>().map(|(e, _)| e).step_by(3).collect();
    let mut rt = Runtime::builder().workers(1).build(w0);
    let targets = changed.clone();
    rt.add_system(move |_: &World, out: &mut Output| {
        for &e in &targets {
            out.write::<Pos>(e, Pos(-1.0));
        }
    });
    rt.frame();
    let w = rt.world();
    let all: Vec<(Entity, f32, bool)> = w
        .query::<(&Pos, Option<&Boss>)>()
        .map(|(e, (p, b))| (e, p.0, b.is_some()))
        .collect();
    let marked: Vec<Entity> = w
        .query_filtered::<(&Pos,), Changed<Pos>>()
        .map(|(e, _)| e)
        .collect();
    assert_eq!(marked.len(), changed.len());
    for k in 0..=all.len() + 2 {
        let skipped: Vec<(Entity, f32, bool)> = w
            .query::<(&Pos, Option<&Boss>)>()
            .skip(k)
            .map(|(e, (p, b))| (e, p.0, b.is_some()))
            .collect();
        assert_eq!(skipped, all[k.min(all.len())..], "skip({k})");
        let nth = w.query::<(&Pos, Option<&Boss>)>().nth(k).map(|(e, _)| e);
        assert_eq!(nth, all.get(k).map(|x| x.0), "nth({k})");
        let filtered: Vec<Entity> = w
            .query_filtered::<(&Pos,), Changed<Pos>>()
            .skip(k)
            .map(|(e, _)| e)
            .collect();
        assert_eq!(
            filtered,
            marked[k.min(marked.len())..],
            "filtered skip({k})"
        );
    }
    // `rows(a..b)` is `skip(a).take(b - a)`, walked row by row (`next`) or table by table
    // (`fold`), with and without a row filter, and it counts what it has left.
    for a in 0..=all.len() + 1 {
        for b in [a, a + 1, a + 7, a + 30, all.len() + 5] {
            let want = &all[a.min(all.len())..b.min(all.len()).max(a.min(all.len()))];
            let q = || w.query::<(&Pos, Option<&Boss>)>().rows(a..b);
            assert_eq!(q().len(), want.len(), "len of rows({a}..{b})");
            let by_next: Vec<Entity> = q().map(|(e, _)| e).collect();
            let mut by_fold = Vec::new();
            q().for_each(|(e, _)| by_fold.push(e));
            let want: Vec<Entity> = want.iter().map(|x| x.0).collect();
            assert_eq!(by_next, want, "rows({a}..{b})");
            assert_eq!(by_fold, want, "rows({a}..{b}) folded");
            let filtered: Vec<Entity> = w
                .query_filtered::<(&Pos,), Changed<Pos>>()
                .rows(a..b)
                .map(|(e, _)| e)
                .collect();
            let want: Vec<Entity> = marked.iter().skip(a).take(b - a).copied().collect();
            assert_eq!(filtered, want, "filtered rows({a}..{b})");
        }
    }
    // A cut of a cut counts within the first, and never reaches past it (the second
    // range may be longer than what the first left); rows skipped before a cut count
    // as gone.
    let ids: Vec<Entity> = all.iter().map(|x| x.0).collect();
    for (first, second) in [(0..5, 0..20), (3..17, 2..9), (3..17, 10..40), (9..10, 0..3)] {
        let take = |r: &std::ops::Range<usize>, v: &[Entity]| -> Vec<Entity> {
            v.iter()
                .skip(r.start)
                .take(r.end - r.start)
                .copied()
                .collect()
        };
        let want = take(&second, &take(&first, &ids));
        let cut = || w.query::<(&Pos, Option<&Boss>)>().rows(first.clone());
        let got: Vec<Entity> = cut().rows(second.clone()).map(|(e, _)| e).collect();
        assert_eq!(got, want, "rows({first:?}).rows({second:?})");
        assert_eq!(cut().rows(second.clone()).len(), want.len());
        let mut q = cut();
        let _ = q.next();
        let got: Vec<Entity> = q.rows(second.clone()).map(|(e, _)| e).collect();
        let after_one = take(&first, &ids).split_off(1.min(first.len()));
        assert_eq!(got, take(&second, &after_one), "one taken, then cut");
    }
    // Steps of several sizes, one iterator.
    for step in 1..6 {
        let mut q = w.query::<(&Pos, Option<&Boss>)>();
        let mut got = Vec::new();
        while let Some((e, _)) = q.nth(step - 1) {
            got.push(e);
        }
        let want: Vec<Entity> = all
            .iter()
            .skip(step - 1)
            .step_by(step)
            .map(|x| x.0)
            .collect();
        assert_eq!(got, want, "every {step}th");
    }
}

/// `for_each_chunk` hands out each table's rows left, as slices the length of its
/// entities, with `None` for an optional type the table lacks — the same rows and values
/// as the row loop, also for a part of a query (`rows`).
#[test]
fn chunks_are_the_rows_table_by_table() {
    let w = world();
    let rows: Vec<(Entity, f32, bool)> = w
        .query::<(&Pos, Option<&Boss>, With<Enemy>)>()
        .map(|(e, (p, b, ()))| (e, p.0, b.is_some()))
        .collect();
    for range in [0..rows.len(), 3..17, 9..10, 12..12] {
        let mut got = Vec::new();
        let mut tables = 0;
        w.query::<(&Pos, Option<&Boss>, With<Enemy>)>()
            .rows(range.clone())
            .for_each_chunk(|entities, (pos, boss, ())| {
                assert_eq!(entities.len(), pos.len());
                if let Some(b) = boss {
                    assert_eq!(b.len(), pos.len());
                }
                tables += 1;
                got.extend(
                    entities
                        .iter()
                        .zip(pos)
                        .map(|(&e, p)| (e, p.0, boss.is_some())),
                );
            });
        assert_eq!(got, rows[range.clone()], "{range:?}");
        assert!(tables <= 2, "one call per table");
    }
}
