//! A small sequential model of runsync's semantics (DESIGN.md), shared by the proptest
//! differential test and the fuzz target (`fuzz/`): random systems emit writes and
//! structural commands; the model applies them one at a time in system, then emission
//! order, and the runtime must agree exactly after every frame.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use runsync::prelude::*;

/// Order-sensitive integer fold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct A(pub u64);
impl Component for A {
    type Output = u64;
}
pub fn fold_a(a: &mut u64, x: u64) {
    *a = a.wrapping_mul(31).wrapping_add(x);
}

/// Float sum (order-sensitive in floating point).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct B(pub f32);
impl Component for B {
    type Output = f32;
}

/// Last write wins.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct C(pub i64);
impl Component for C {
    type Output = C;
}

/// Has padding bytes (u8, then u64, then u16).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Padded {
    pub a: u8,
    pub b: u64,
    pub c: u16,
}
impl Component for Padded {
    type Output = Padded;
}

/// Zero-sized.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Z;
impl Component for Z {
    type Output = ();
}

/// Owns memory; every live copy is counted by the shared `Arc`.
#[derive(Clone, Debug)]
pub struct D(#[allow(dead_code)] pub Arc<()>);
impl Component for D {
    type Output = ();
}

#[derive(Clone, Copy, Debug)]
pub enum Spec {
    WriteP(u16, u8, u64),
    InsertP(u16, u16),
    WriteA(u16, u64),
    WriteB(u16, i16),
    WriteC(u16, i64),
    Despawn(u16),
    InsertA(u16, u64),
    InsertC(u16, i64),
    InsertZ(u16),
    InsertD(u16),
    RemoveA(u16),
    RemoveB(u16),
    RemoveZ(u16),
    RemoveD(u16),
    Spawn(Option<u64>, Option<i16>),
}

/// A spec with its pick resolved to a handle (live or stale).
#[derive(Clone, Copy, Debug)]
pub struct Op(pub Spec, pub Option<Entity>);

#[derive(Clone, Debug, Default, PartialEq)]
pub struct MEnt {
    pub a: Option<u64>,
    pub b: Option<f32>,
    pub c: Option<i64>,
    pub p: Option<(u8, u64, u16)>,
    pub z: bool,
    pub d: bool,
}

/// The sequential model: an allocator with a LIFO free list and a map of live entities.
#[derive(Default)]
pub struct Model {
    generations: Vec<u32>,
    free: Vec<u32>,
    live: BTreeMap<Entity, MEnt>,
    /// Every handle ever handed out, so that stale ones get picked too.
    known: Vec<Entity>,
}

impl Model {
    fn spawn(&mut self, m: MEnt) -> Entity {
        let index = self.free.pop().unwrap_or_else(|| {
            self.generations.push(1);
            self.generations.len() as u32 - 1
        });
        let e = Entity::from_bits(
            (u64::from(self.generations[index as usize]) << 32) | u64::from(index),
        )
        .unwrap();
        self.live.insert(e, m);
        self.known.push(e);
        e
    }

    fn despawn(&mut self, e: Entity) -> bool {
        if self.live.remove(&e).is_none() {
            return false;
        }
        self.generations[e.index() as usize] += 1;
        self.free.push(e.index());
        true
    }

    fn pick(&self, p: u16) -> Option<Entity> {
        (!self.known.is_empty()).then(|| self.known[p as usize % self.known.len()])
    }

    /// Applies one frame's ops (per system, in registration order); returns
    /// (merged, dropped, spawned).
    fn frame(&mut self, plan: &[Vec<Op>]) -> (u64, u64, u64) {
        let (mut merged, mut dropped, mut spawned) = (0, 0, 0);
        // Merges: one output at a time in system, then emission order — the same as
        // grouping per entity, for left folds.
        for ops in plan {
            for &Op(s, e) in ops {
                // No handle to pick (nothing ever spawned): the system emits nothing.
                let Some(e) = e else { continue };
                let target = self.live.get_mut(&e);
                let applied = match (s, target) {
                    (Spec::WriteA(_, v), Some(m)) => m.a.as_mut().map(|a| fold_a(a, v)).is_some(),
                    (Spec::WriteB(_, v), Some(m)) => {
                        m.b.as_mut().map(|b| *b += f32::from(v)).is_some()
                    }
                    (Spec::WriteC(_, v), Some(m)) => m.c.as_mut().map(|c| *c = v).is_some(),
                    (Spec::WriteP(_, a, b), Some(m)) => {
                        m.p.as_mut()
                            .map(|p| *p = (a, b, u16::from(a) * 3))
                            .is_some()
                    }
                    (
                        Spec::WriteA(..) | Spec::WriteB(..) | Spec::WriteC(..) | Spec::WriteP(..),
                        None,
                    ) => false,
                    _ => continue,
                };
                if applied {
                    merged += 1;
                } else {
                    dropped += 1;
                }
            }
        }
        // Structural commands.
        for ops in plan {
            for &Op(s, e) in ops {
                if e.is_none() && !matches!(s, Spec::Spawn(..)) {
                    continue;
                }
                let ok = match s {
                    Spec::WriteA(..) | Spec::WriteB(..) | Spec::WriteC(..) | Spec::WriteP(..) => {
                        continue;
                    }
                    Spec::Spawn(a, b) => {
                        self.spawn(MEnt {
                            a,
                            b: b.map(f32::from),
                            ..MEnt::default()
                        });
                        spawned += 1;
                        true
                    }
                    Spec::Despawn(_) => e.is_some_and(|e| self.despawn(e)),
                    _ => match e.and_then(|e| self.live.get_mut(&e)) {
                        None => false,
                        Some(m) => match s {
                            Spec::InsertA(_, v) => {
                                m.a = Some(v);
                                true
                            }
                            Spec::InsertC(_, v) => {
                                m.c = Some(v);
                                true
                            }
                            Spec::InsertP(_, c) => {
                                m.p = Some((1, 2, c));
                                true
                            }
                            Spec::InsertZ(_) => {
                                m.z = true;
                                true
                            }
                            Spec::InsertD(_) => {
                                m.d = true;
                                true
                            }
                            Spec::RemoveA(_) => m.a.take().is_some(),
                            Spec::RemoveB(_) => m.b.take().is_some(),
                            Spec::RemoveZ(_) => std::mem::take(&mut m.z),
                            Spec::RemoveD(_) => std::mem::take(&mut m.d),
                            _ => unreachable!(),
                        },
                    },
                };
                if !ok {
                    dropped += 1;
                }
            }
        }
        (merged, dropped, spawned)
    }
}

pub fn emit(out: &mut Output<'_>, op: Op, token: &Arc<()>) {
    let Op(s, e) = op;
    if let Spec::Spawn(a, b) = s {
        // Bundles of different shapes, as a user would write them.
        match (a, b) {
            (Some(a), Some(b)) => out.spawn((A(a), B(f32::from(b)))),
            (Some(a), None) => out.spawn((A(a),)),
            (None, Some(b)) => out.spawn((B(f32::from(b)),)),
            (None, None) => out.spawn(()),
        }
        return;
    }
    let Some(e) = e else { return };
    match s {
        Spec::WriteA(_, v) => out.write::<A>(e, v),
        Spec::WriteB(_, v) => out.write::<B>(e, f32::from(v)),
        Spec::WriteC(_, v) => out.write::<C>(e, C(v)),
        Spec::WriteP(_, a, b) => out.write::<Padded>(
            e,
            Padded {
                a,
                b,
                c: u16::from(a) * 3,
            },
        ),
        Spec::InsertP(_, c) => out.insert(e, Padded { a: 1, b: 2, c }),
        Spec::Despawn(_) => out.despawn(e),
        Spec::InsertA(_, v) => out.insert(e, A(v)),
        Spec::InsertC(_, v) => out.insert(e, C(v)),
        Spec::InsertZ(_) => out.insert(e, Z),
        Spec::InsertD(_) => out.insert(e, D(token.clone())),
        Spec::RemoveA(_) => out.remove::<A>(e),
        Spec::RemoveB(_) => out.remove::<B>(e),
        Spec::RemoveZ(_) => out.remove::<Z>(e),
        Spec::RemoveD(_) => out.remove::<D>(e),
        Spec::Spawn(..) => unreachable!(),
    }
}

fn ensure(cond: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if cond { Ok(()) } else { Err(what()) }
}

/// Compares every live entity and every handle ever issued with the model.
pub fn check(world: &World, model: &Model) -> Result<(), String> {
    ensure(world.len() == model.live.len(), || {
        format!(
            "world has {} entities, model {}",
            world.len(),
            model.live.len()
        )
    })?;
    for &e in &model.known {
        ensure(world.is_alive(e) == model.live.contains_key(&e), || {
            format!("liveness of {e:?} differs")
        })?;
    }
    for (e, (a, b, c, p, (z, d))) in world.query::<(
        Option<&A>,
        Option<&B>,
        Option<&C>,
        Option<&Padded>,
        (Option<&Z>, Option<&D>),
    )>() {
        let m = model
            .live
            .get(&e)
            .ok_or_else(|| format!("world has {e:?}, model does not"))?;
        let got = MEnt {
            a: a.map(|a| a.0),
            b: b.map(|b| b.0),
            c: c.map(|c| c.0),
            p: p.map(|p| (p.a, p.b, p.c)),
            z: z.is_some(),
            d: d.is_some(),
        };
        ensure(got.b.map(f32::to_bits) == m.b.map(f32::to_bits), || {
            format!("{e:?}: B bits {:?} != {:?}", got.b, m.b)
        })?;
        ensure(&got == m, || format!("{e:?}: world {got:?} != model {m:?}"))?;
    }
    Ok(())
}

/// The initial entities: `(A, B, has Z, has D)`; every one also has `C(0)`.
pub type Initial = (Option<u64>, Option<i16>, bool, bool);

/// Builds a world from `initial`, runs `frames` (per frame, per system, the ops) with
/// `systems` systems on `workers` workers, and checks the world against the model after
/// every frame and for leaks at the end.
pub fn run_case(
    workers: usize,
    systems: usize,
    frames: Vec<Vec<Vec<Spec>>>,
    initial: Vec<Initial>,
) -> Result<(), String> {
    let token = Arc::new(());
    {
        let mut world = World::new();
        world.register::<A>(|a: &mut A, xs: &[u64]| xs.iter().for_each(|&x| fold_a(&mut a.0, x)));
        world.register::<B>(|b: &mut B, xs: &[f32]| xs.iter().for_each(|&x| b.0 += x));
        world.register::<C>(merge::last);
        world.register::<Padded>(merge::last);
        world.register::<Z>(|_: &mut Z, _: &[()]| {});
        world.register::<D>(|_: &mut D, _: &[()]| {});
        let mut model = Model::default();
        let mk = |(a, b, z, d): Initial| MEnt {
            a,
            b: b.map(f32::from),
            c: Some(0),
            p: None,
            z,
            d,
        };
        for spec in initial {
            let m = mk(spec);
            let e = match (m.z, m.d) {
                (true, true) => world.spawn((C(0), Z, D(token.clone()))),
                (true, false) => world.spawn((C(0), Z)),
                (false, true) => world.spawn((C(0), D(token.clone()))),
                (false, false) => world.spawn((C(0),)),
            };
            if let Some(a) = m.a {
                world.insert(e, A(a));
            }
            if let Some(b) = m.b {
                world.insert(e, B(b));
            }
            let expect = model.spawn(m);
            ensure(e == expect, || format!("spawned {e:?}, model {expect:?}"))?;
        }

        let plan: Arc<Mutex<Vec<Vec<Op>>>> = Arc::new(Mutex::new(vec![Vec::new(); systems]));
        let mut rt = Runtime::builder().workers(workers).build(world);
        for s in 0..systems {
            let plan = plan.clone();
            let token = token.clone();
            rt.add_system(move |_: &World, out: &mut Output| {
                let ops = plan.lock().unwrap()[s].clone();
                for op in ops {
                    emit(out, op, &token);
                }
            });
        }
        for frame in frames {
            let mut resolved: Vec<Vec<Op>> = vec![Vec::new(); systems];
            for (s, specs) in frame.into_iter().enumerate().take(systems) {
                for spec in specs {
                    let pick = match spec {
                        Spec::WriteA(p, _) | Spec::WriteB(p, _) | Spec::WriteC(p, _) => p,
                        Spec::WriteP(p, ..) | Spec::InsertP(p, _) => p,
                        Spec::Despawn(p) | Spec::InsertA(p, _) | Spec::InsertC(p, _) => p,
                        Spec::InsertZ(p) | Spec::InsertD(p) | Spec::RemoveA(p) => p,
                        Spec::RemoveB(p) | Spec::RemoveZ(p) | Spec::RemoveD(p) => p,
                        Spec::Spawn(..) => 0,
                    };
                    resolved[s].push(Op(spec, model.pick(pick)));
                }
            }
            *plan.lock().unwrap() = resolved.clone();
            rt.frame();
            let (merged, dropped, spawned) = model.frame(&resolved);
            check(rt.world(), &model)?;
            let st = rt.stats();
            let got = (st.merged, st.dropped, st.spawned);
            let want = (merged, dropped, spawned);
            ensure(got == want, || {
                format!("stats (merged, dropped, spawned) {got:?} != model {want:?}")
            })?;
        }
        // Live D components are exactly the model's.
        let live_d = model.live.values().filter(|m| m.d).count();
        // token + one per live D + the systems' clones.
        let n = Arc::strong_count(&token);
        ensure(n == 1 + live_d + systems, || {
            format!("{n} D tokens alive, expected {}", 1 + live_d + systems)
        })?;
    }
    ensure(Arc::strong_count(&token) == 1, || {
        "a D component leaked".to_string()
    })?;
    Ok(())
}
