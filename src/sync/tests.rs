//! Sync against write loops and sequential models, through the public API.

use crate::merge;
use crate::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(f32);
impl Component for Pos {
    type Output = Pos;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Hp(i32);
impl Component for Hp {
    type Output = i32;
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Tag;
impl Component for Tag {
    type Output = Tag;
}

/// Rows per table for the `write_each` tests: enough for parallel fill parts (which
/// are tiny under Miri, where big tables would take minutes).
fn rows(n: usize) -> usize {
    if cfg!(miri) { 40 } else { n }
}

/// Entities in three tables, `n` per table; some without `Hp`.
fn world(n: usize) -> World {
    let n = rows(n);
    let mut w = World::new();
    w.register::<Pos>(merge::last);
    w.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 = h.0 * 3 + d.iter().sum::<i32>());
    w.register::<Tag>(merge::last);
    for i in 0..n {
        w.spawn((Pos(i as f32), Hp(i as i32)));
        w.spawn((Pos(-(i as f32)),));
        w.spawn((Pos(0.5), Hp(1), Tag));
    }
    w
}

fn snapshot(w: &World) -> Vec<(Entity, Pos, Option<Hp>)> {
    w.query::<(&Pos, Option<&Hp>)>()
        .map(|(e, (p, h))| (e, *p, h.copied()))
        .collect()
}

/// Runs `frames` frames of two runtimes whose systems differ only in using
/// `write_each` instead of a `write` loop, and checks they agree after every frame.
fn agree(n: usize, workers: usize, each: impl Fn(&mut Runtime), write: impl Fn(&mut Runtime)) {
    let mut a = Runtime::builder().workers(workers).build(world(n));
    let mut b = Runtime::builder().workers(1).build(world(n));
    each(&mut a);
    write(&mut b);
    for _ in 0..3 {
        a.frame();
        b.frame();
        assert_eq!(snapshot(a.world()), snapshot(b.world()));
        assert_eq!(a.stats().merged, b.stats().merged);
        assert_eq!(a.stats().dropped, b.stats().dropped);
    }
}

#[test]
fn write_each_single_writer_swaps_columns() {
    for workers in [1, 2] {
        // 40k rows per table: large enough to be filled in parallel parts.
        agree(
            40_000,
            workers,
            |rt| {
                rt.add_system(|_: &World, out: &mut Output| {
                    out.write_each::<Pos, (&Pos,)>(|_, (p,)| Pos(p.0 * 2.0 + 1.0));
                });
            },
            |rt| {
                rt.add_system(|w: &World, out: &mut Output| {
                    for (e, (p,)) in w.query::<(&Pos,)>() {
                        out.write::<Pos>(e, Pos(p.0 * 2.0 + 1.0));
                    }
                });
            },
        );
    }
}

/// Whether `write_each_some` gives row `i` (its `Pos`, its `Hp`) a value: every row of
/// some stretches (a part of a fill that writes no flag), none of others, one in three
/// between them, and gaps at both ends of a table.
fn some_row(v: f32) -> bool {
    let i = v.abs() as u32;
    match i % 50_000 {
        0..=20_000 => i % 7 != 3 || i < 2_000,
        20_001..=30_000 => false,
        _ => i % 3 == 0,
    }
}

#[test]
fn write_each_some_agrees_with_a_write_loop() {
    for workers in [1, 2, 8] {
        // 40k rows per table: filled in parallel parts, some with a value for every row,
        // some without, some with gaps.
        agree(
            40_000,
            workers,
            |rt| {
                rt.add_system(|_: &World, out: &mut Output| {
                    out.write_each_some::<Pos, (&Pos,)>(|_, (p,)| {
                        some_row(p.0).then_some(Pos(p.0 * 2.0 + 1.0))
                    });
                    out.write_each_some::<Hp, (&Pos,)>(|_, (p,)| {
                        some_row(p.0 + 1.0).then_some(p.0 as i32 % 11)
                    });
                });
            },
            |rt| {
                rt.add_system(|w: &World, out: &mut Output| {
                    for (e, (p,)) in w.query::<(&Pos,)>() {
                        if some_row(p.0) {
                            out.write::<Pos>(e, Pos(p.0 * 2.0 + 1.0));
                        }
                    }
                    for (e, (p, _)) in w.query::<(&Pos, With<Hp>)>() {
                        if some_row(p.0 + 1.0) {
                            out.write::<Hp>(e, p.0 as i32 % 11);
                        }
                    }
                });
            },
        );
    }
}

/// A panic in `write_each_some`'s closure fails the frame and leaves no output behind,
/// on one worker and in parallel parts; the next frame runs normally.
#[test]
fn write_each_some_panic_fails_the_frame_only() {
    for workers in [1, 2] {
        let mut rt = Runtime::builder().workers(workers).build(world(40_000));
        let boom = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let b = boom.clone();
        // A row in the last part of the first table.
        let at = (rows(40_000) * 3 / 4) as f32;
        rt.add_system(move |_: &World, out: &mut Output| {
            let fail = b.load(std::sync::atomic::Ordering::Relaxed);
            out.write_each_some::<Pos, (&Pos,)>(|_, (p,)| {
                assert!(!(fail && p.0 == at), "boom");
                (p.0 > 0.0).then_some(Pos(p.0 + 1.0))
            });
        });
        let before = snapshot(rt.world());
        assert!(rt.try_frame().is_err());
        assert_eq!(
            snapshot(rt.world()),
            before,
            "the failed frame changed nothing"
        );
        boom.store(false, std::sync::atomic::Ordering::Relaxed);
        rt.frame();
        let moved = snapshot(rt.world())
            .iter()
            .zip(&before)
            .filter(|(a, b)| a.1 != b.1)
            .count();
        assert_eq!(moved, before.iter().filter(|b| b.1.0 > 0.0).count());
    }
}

#[test]
fn write_each_from_several_systems_last_one_wins() {
    let each = |rt: &mut Runtime| {
        rt.add_system(|_: &World, out: &mut Output| {
            out.write_each::<Pos, (&Pos,)>(|_, (p,)| Pos(p.0 + 1.0));
        });
        rt.add_system(|_: &World, out: &mut Output| {
            out.write_each::<Pos, (&Hp,)>(|_, (h,)| Pos(h.0 as f32 * 0.5));
        });
        rt.add_system(|_: &World, out: &mut Output| {
            out.write_each::<Pos, (&Pos, Without<Hp>)>(|_, (p, ())| Pos(p.0 * 3.0));
        });
    };
    let write = |rt: &mut Runtime| {
        rt.add_system(|w: &World, out: &mut Output| {
            for (e, (p,)) in w.query::<(&Pos,)>() {
                out.write::<Pos>(e, Pos(p.0 + 1.0));
            }
        });
        rt.add_system(|w: &World, out: &mut Output| {
            for (e, (h, _)) in w.query::<(&Hp, With<Pos>)>() {
                out.write::<Pos>(e, Pos(h.0 as f32 * 0.5));
            }
        });
        rt.add_system(|w: &World, out: &mut Output| {
            for (e, (p, ())) in w.query::<(&Pos, Without<Hp>)>() {
                out.write::<Pos>(e, Pos(p.0 * 3.0));
            }
        });
    };
    for workers in [1, 2] {
        agree(100, workers, each, write);
    }
}

#[test]
fn write_each_twice_last_one_wins() {
    agree(
        50,
        1,
        |rt| {
            rt.add_system(|_: &World, out: &mut Output| {
                out.write_each::<Pos, (&Pos,)>(|_, (p,)| Pos(p.0 + 1.0));
                out.write_each::<Pos, (&Hp,)>(|_, (h,)| Pos(h.0 as f32));
            });
        },
        |rt| {
            rt.add_system(|w: &World, out: &mut Output| {
                for (e, (p,)) in w.query::<(&Pos,)>() {
                    out.write::<Pos>(e, Pos(p.0 + 1.0));
                }
                for (e, (h,)) in w.query::<(&Hp,)>() {
                    out.write::<Pos>(e, Pos(h.0 as f32));
                }
            });
        },
    );
}

#[test]
fn write_each_mixed_with_writes_and_other_systems() {
    let each = |rt: &mut Runtime| {
        rt.add_system(|w: &World, out: &mut Output| {
            for (e, _) in w.query::<(&Hp, With<Tag>)>() {
                out.write::<Hp>(e, 7);
            }
            out.write_each::<Hp, (&Pos,)>(|_, (p,)| p.0 as i32);
            for (e, _) in w.query::<(&Hp, Without<Tag>)>() {
                out.write::<Hp>(e, -1);
            }
        });
        rt.add_system(|w: &World, out: &mut Output| {
            out.write_each::<Pos, (&Pos, Without<Tag>)>(|_, (p, ())| Pos(p.0 - 1.0));
            for (e, _) in w.query::<(&Pos, With<Hp>)>() {
                out.write::<Hp>(e, 100);
                out.write::<Pos>(e, Pos(9.0));
            }
        });
    };
    let write = |rt: &mut Runtime| {
        rt.add_system(|w: &World, out: &mut Output| {
            for (e, _) in w.query::<(&Hp, With<Tag>)>() {
                out.write::<Hp>(e, 7);
            }
            for (e, (p, _)) in w.query::<(&Pos, With<Hp>)>() {
                out.write::<Hp>(e, p.0 as i32);
            }
            for (e, _) in w.query::<(&Hp, Without<Tag>)>() {
                out.write::<Hp>(e, -1);
            }
        });
        rt.add_system(|w: &World, out: &mut Output| {
            for (e, (p, _)) in w.query::<(&Pos, Without<Tag>)>() {
                out.write::<Pos>(e, Pos(p.0 - 1.0));
            }
            for (e, _) in w.query::<(&Pos, With<Hp>)>() {
                out.write::<Hp>(e, 100);
                out.write::<Pos>(e, Pos(9.0));
            }
        });
    };
    for workers in [1, 2] {
        agree(20_000, workers, each, write);
    }
}

#[test]
fn write_each_inside_par_for_each_keeps_emission_order() {
    agree(
        30,
        2,
        |rt| {
            rt.add_system(|_: &World, out: &mut Output| {
                out.par_for_each::<(&Hp,)>(|e, (h,), out| {
                    out.write::<Hp>(e, h.0);
                    if h.0 == 3 {
                        out.write_each::<Hp, (&Tag,)>(|_, _| 5);
                    }
                });
            });
        },
        |rt| {
            rt.add_system(|w: &World, out: &mut Output| {
                for (e, (h,)) in w.query::<(&Hp,)>() {
                    out.write::<Hp>(e, h.0);
                    if h.0 == 3 {
                        for (t, _) in w.query::<(&Tag, With<Hp>)>() {
                            out.write::<Hp>(t, 5);
                        }
                    }
                }
            });
        },
    );
}

/// Overlapping sources (k-way merge), disjoint sources, and one source, against a
/// model that folds each entity's writes in system then emission order.
#[test]
fn merge_order_matches_a_sequential_model() {
    let fold = |h: i32, d: &[i32]| d.iter().fold(h, |a, &x| a.wrapping_mul(31).wrapping_add(x));
    let mut w = World::new();
    w.register::<Hp>(move |h: &mut Hp, d: &[i32]| h.0 = fold(h.0, d));
    w.register::<Pos>(merge::last);
    let ents: Vec<Entity> = (0..300).map(|i| w.spawn((Hp(i),))).collect();
    let mut rt = Runtime::builder().workers(2).build(w);
    // System s writes (s + 1) * 1000 + i to every entity i with i % (s + 2) == 0, twice
    // for even i, and system 3 only the upper half (disjoint from nothing).
    for s in 0..4i32 {
        rt.add_system(move |w: &World, out: &mut Output| {
            for (e, (h,)) in w.query::<(&Hp,)>() {
                let i = e.index() as i32;
                if s == 3 && i < 150 {
                    continue;
                }
                if i % (s + 2) == 0 {
                    out.write::<Hp>(e, (s + 1) * 1000 + i);
                    if i % 2 == 0 {
                        out.write::<Hp>(e, h.0 & 0xff);
                    }
                }
            }
        });
    }
    let mut model: Vec<i32> = (0..300).collect();
    for _ in 0..3 {
        let mut next = model.clone();
        for (i, v) in next.iter_mut().enumerate() {
            let i = i as i32;
            let mut writes = Vec::new();
            for s in 0..4 {
                if (s == 3 && i < 150) || i % (s + 2) != 0 {
                    continue;
                }
                writes.push((s + 1) * 1000 + i);
                if i % 2 == 0 {
                    writes.push(model[i as usize] & 0xff);
                }
            }
            if !writes.is_empty() {
                *v = fold(*v, &writes);
            }
        }
        model = next;
        rt.frame();
        let got: Vec<i32> = ents
            .iter()
            .map(|&e| rt.world().get::<Hp>(e).unwrap().0)
            .collect();
        assert_eq!(got, model);
    }
}

/// One source in every shape: query order (row runs), repeats, reverse order, a
/// repeated pass, dead targets — against a model folding writes per entity in
/// emission order.
#[test]
fn single_source_shapes_match_a_model() {
    let fold = |h: i32, d: &[i32]| d.iter().fold(h, |a, &x| a.wrapping_mul(31).wrapping_add(x));
    for shape in 0..5 {
        let mut w = World::new();
        w.register::<Hp>(move |h: &mut Hp, d: &[i32]| h.0 = fold(h.0, d));
        w.register::<Tag>(merge::last);
        let mut ents: Vec<Entity> = (0..200)
            .map(|i| {
                if i % 3 == 0 {
                    w.spawn((Hp(i), Tag))
                } else {
                    w.spawn((Hp(i),))
                }
            })
            .collect();
        let dead = w.spawn((Hp(0),));
        w.despawn(dead);
        let order: Vec<Entity> = w.query::<(&Hp,)>().map(|(e, _)| e).collect();
        let writes: Vec<(Entity, i32)> = match shape {
            0 => order.iter().map(|&e| (e, e.index() as i32)).collect(),
            1 => order.iter().flat_map(|&e| [(e, 1), (e, 2)]).collect(),
            2 => order.iter().rev().map(|&e| (e, 5)).collect(),
            3 => order
                .iter()
                .chain(&order)
                .map(|&e| (e, e.index() as i32))
                .collect(),
            _ => order.iter().map(|&e| (e, 7)).chain([(dead, 9)]).collect(),
        };
        let emitted = writes.clone();
        let mut rt = Runtime::builder().workers(1).build(w);
        rt.add_system(move |_: &World, out: &mut Output| {
            for &(e, v) in &emitted {
                out.write::<Hp>(e, v);
            }
        });
        let mut model: Vec<i32> = ents
            .iter()
            .map(|&e| rt.world().get::<Hp>(e).unwrap().0)
            .collect();
        for (k, &e) in ents.iter().enumerate() {
            let d: Vec<i32> = writes.iter().filter(|w| w.0 == e).map(|w| w.1).collect();
            if !d.is_empty() {
                model[k] = fold(model[k], &d);
            }
        }
        rt.frame();
        let got: Vec<i32> = ents
            .iter()
            .map(|&e| rt.world().get::<Hp>(e).unwrap().0)
            .collect();
        assert_eq!(got, model, "shape {shape}");
        assert_eq!(rt.stats().dropped, u64::from(shape == 4), "shape {shape}");
        ents.clear();
    }
}

#[test]
fn a_panic_in_write_each_discards_the_frame() {
    let mut rt = Runtime::builder().workers(2).build(world(20_000));
    let before = snapshot(rt.world());
    rt.add_system(|_: &World, out: &mut Output| {
        out.write_each::<Pos, (&Pos,)>(|_, (p,)| {
            assert!(p.0 != rows(20_000) as f32 - 1.0, "boom");
            Pos(0.0)
        });
    });
    assert!(matches!(
        rt.try_frame(),
        Err(FrameError::SystemPanicked { .. })
    ));
    assert_eq!(snapshot(rt.world()), before);
}

/// Batched inserts and removes (consecutive moves between one pair of tables) leave the
/// world exactly as applying the commands one by one between frames does: same values,
/// same rows, so the same query order.
#[test]
fn batched_structural_commands_match_one_by_one() {
    let setup = || {
        let mut w = World::new();
        w.register::<Pos>(merge::last);
        w.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
        w.register::<Tag>(merge::last);
        let ents: Vec<Entity> = (0..300)
            .map(|i| match i % 5 {
                0 => w.spawn((Pos(i as f32), Tag)),
                1 => w.spawn((Pos(i as f32), Hp(i))),
                _ => w.spawn((Pos(i as f32),)),
            })
            .collect();
        let gone = ents[7];
        w.despawn(gone);
        (w, ents)
    };
    // The commands, as (kind, entity index, value): 0 = insert Hp, 1 = remove Tag,
    // 2 = insert Tag, 3 = despawn.
    let mut cmds: Vec<(u8, usize, i32)> = Vec::new();
    for i in 0..300 {
        cmds.push((0, i, i as i32 * 10)); // many moves from one table pair, replaces, a dead one
    }
    for i in (0..300).rev() {
        cmds.push((1, i, 0)); // removes, some absent
    }
    for i in (0..300).step_by(3) {
        cmds.push((2, i, 0));
        if i % 30 == 0 {
            cmds.push((3, (i + 1) % 300, 0));
        }
    }
    let dump = |w: &World| {
        w.query::<(&Pos, Option<&Hp>, Option<&Tag>)>()
            .map(|(e, (p, h, t))| (e, *p, h.copied(), t.is_some()))
            .collect::<Vec<_>>()
    };

    let (mut expect, ents) = setup();
    for &(k, i, v) in &cmds {
        let e = ents[i];
        match k {
            0 => {
                expect.insert(e, Hp(v));
            }
            1 => {
                expect.remove::<Tag>(e);
            }
            2 => {
                expect.insert(e, Tag);
            }
            _ => {
                expect.despawn(e);
            }
        }
    }

    let (w, ents) = setup();
    let mut rt = Runtime::builder().workers(2).build(w);
    let emitted = cmds.clone();
    rt.add_system(move |_: &World, out: &mut Output| {
        for &(k, i, v) in &emitted {
            let e = ents[i];
            match k {
                0 => out.insert(e, Hp(v)),
                1 => out.remove::<Tag>(e),
                2 => out.insert(e, Tag),
                _ => out.despawn(e),
            }
        }
    });
    rt.frame();
    assert_eq!(dump(rt.world()), dump(&expect));
    assert_eq!(rt.world().len(), expect.len());
}
