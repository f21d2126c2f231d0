//! A model scenario for sharding, small enough for tests and big enough to measure:
//! agents in a box, bouncing off its walls, pushed apart by their neighbours and hurting
//! them, regenerating, breeding, dying. Every frame entities cross band boundaries
//! (migrations), write to neighbours across them (scattered float sums,
//! order-sensitive), are born and die near them (spawns, despawns).
//!
//! - [`Pos`] and [`Vel`] (two `f32`s each), [`Hp`] (`f32`); all saved (serde) and
//!   checksummed.
//! - `move`: `Pos += Vel`; an agent leaving the box gets an impulse back in (`Vel`
//!   merges by summing impulses in order: a hand-written `fn`).
//! - `crowd`: each agent looks at its neighbours within [`RANGE`] (a grid built in the
//!   system from a query, so in canonical order): it is pushed away from each (an impulse
//!   to its own `Vel`), and hurts each by [`HURT`] shared among them (a write to the
//!   *neighbour's* `Hp`, a closure merge summing in order). What an agent deals depends on
//!   how many neighbours it has, so a shard needs ghosts within `2 × RANGE` of its region.
//!   A neighbour wounded in the last frame (`is_added::<Wounded>`: change detection,
//!   on ghosts too) is dealt half.
//! - `life`: regenerates `Hp`, despawns the dead; an agent with more than [`BREED`]
//!   gives half its `Hp` to a newborn one unit beside it (a spawn); an agent below
//!   [`WEAK`] is marked [`Wounded`] (an insert, moving it to another table) until it
//!   recovers (a remove), and cries for help as it is wounded (a [`Cry`] message, read
//!   the next frame). Wounded agents deal half as much.
//! - `help`: every agent within [`RANGE`] of a cry (last frame's) gains [`SOLACE`] per
//!   cry — messages read across band boundaries, from the emitters' copies there.
//!
//! [`reference()`] runs it in one process (one world, canonical order) for comparison.
//! [`herd`] (with the world-wide value [`Herd`]) adds a system that reads the whole
//! world's centre.

use std::collections::BTreeMap;

use runsync::prelude::*;
use serde::{Deserialize, Serialize};

use crate::cluster::Cluster;
use crate::partition::Bands;
use crate::partition::Tiles;

/// Position.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, runsync::Checksum)]
pub struct Pos(pub [f32; 2]);
impl Component for Pos {
    type Output = Pos;
}

/// Velocity, per frame; systems send impulses.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, runsync::Checksum)]
pub struct Vel(pub [f32; 2]);
impl Component for Vel {
    type Output = [f32; 2];
}

/// A marker: the agent's health is below [`WEAK`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Wounded;
impl Component for Wounded {
    type Output = Wounded;
}

/// A cry for help, where an agent was wounded (a broadcast message: every shard delivers
/// the cries its owned entities and ghosts sent; readers within reach of a cry see it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cry(pub [f32; 2]);

/// Health; systems send deltas.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, runsync::Checksum)]
pub struct Hp(pub f32);
impl Component for Hp {
    type Output = f32;
}

/// How far an agent sees and reaches.
pub const RANGE: f32 = 4.0;
/// What an agent deals per frame, shared among its neighbours.
pub const HURT: f32 = 0.28;
/// Health regained per frame.
pub const REGEN: f32 = 0.25;
/// Health above which an agent breeds.
pub const BREED: f32 = 5.0;
/// Health below which an agent is [`Wounded`].
pub const WEAK: f32 = 1.0;
/// Health an agent gains per [`Cry`] within [`RANGE`] of it.
pub const SOLACE: f32 = 0.05;
/// Agents per unit of area.
const DENSITY: f32 = 0.1;

/// The box for `entities` agents: `(width, height)`, twice as wide as high.
pub fn size(entities: usize) -> (f32, f32) {
    let height = (entities as f32 / DENSITY / 2.0).sqrt();
    (2.0 * height, height)
}

/// A deterministic hash of two integers to `[0, 1)`.
fn unit(a: u64, b: u64) -> f32 {
    let mut x = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.rotate_left(29) ^ 0xD1B5_4A32_D192_ED03;
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    (x >> 40) as f32 / (1u64 << 24) as f32
}

/// The registrations (the same in every shard).
pub fn register(w: &mut World) {
    w.register::<Pos>(merge::last);
    w.register::<Vel>(add_impulses);
    w.register::<Hp>(|h: &mut Hp, deltas: &[f32]| {
        for d in deltas {
            h.0 += d;
        }
    });
    w.register::<Wounded>(merge::last);
    w.register_message::<Cry>().saving_message::<Cry>();
    w.saving::<Pos>()
        .saving::<Vel>()
        .saving::<Hp>()
        .saving::<Wounded>();
    w.checksumming::<Pos>()
        .checksumming::<Vel>()
        .checksumming::<Hp>();
}

/// `Vel`'s merge: impulses added in order.
fn add_impulses(v: &mut Vel, impulses: &[[f32; 2]]) {
    for i in impulses {
        v.0[0] += i[0];
        v.0[1] += i[1];
    }
}

/// The model world with `entities` agents.
pub fn world_of(entities: usize) -> World {
    let mut w = World::new();
    register(&mut w);
    let (width, height) = size(entities);
    for i in 0..entities as u64 {
        let p = [unit(i, 1) * width, unit(i, 2) * height];
        let v = [unit(i, 3) - 0.5, unit(i, 4) - 0.5];
        w.spawn((Pos(p), Vel(v), Hp(1.0 + 5.0 * unit(i, 5))));
    }
    w
}

/// The model world with 2,000 agents.
pub fn world() -> World {
    world_of(2_000)
}

/// A [`Bands`] partition along x for `entities` agents, mirroring within `range`.
pub fn bands_of(
    entities: usize,
    range: f32,
) -> Bands<impl Fn(&World, Entity) -> Option<f32> + Send + Sync + 'static> {
    let (width, _) = size(entities);
    Bands::new(0.0, width, range, |w: &World, e| {
        w.get::<Pos>(e).map(|p| p.0[0])
    })
}

/// A [`Tiles`] partition for `entities` agents: `cols × rows` tiles, mirroring within
/// `range`.
pub fn tiles_of(
    entities: usize,
    cols: usize,
    rows: usize,
    range: f32,
) -> Tiles<impl Fn(&World, Entity) -> Option<[f32; 2]> + Send + Sync + 'static> {
    let (width, height) = size(entities);
    Tiles::new(
        [0.0, 0.0],
        [width, height],
        cols,
        rows,
        range,
        |w: &World, e| w.get::<Pos>(e).map(|p| p.0),
    )
}

/// [`bands_of`] for [`world`], mirroring within `2 × RANGE` (what the systems need).
pub fn bands() -> Bands<impl Fn(&World, Entity) -> Option<f32> + Send + Sync + 'static> {
    bands_of(2_000, 2.0 * RANGE)
}

/// Adds the model's systems for [`world`].
pub fn systems(rt: &mut Runtime) {
    systems_of(2_000)(rt);
}

/// The model's systems for a world of `entities` agents.
pub fn systems_of(entities: usize) -> impl Fn(&mut Runtime) + Send + Sync + 'static {
    let (width, height) = size(entities);
    move |rt: &mut Runtime| {
        rt.add_system_named("move", move |w: &World, out: &mut Output| {
            for (e, (p, v)) in w.query::<(&Pos, &Vel)>() {
                let next = [p.0[0] + v.0[0], p.0[1] + v.0[1]];
                out.write::<Pos>(e, Pos(next));
                let back = |x: f32, max: f32, v: f32| {
                    if (x < 0.0 && v < 0.0) || (x > max && v > 0.0) {
                        -2.0 * v
                    } else {
                        0.0
                    }
                };
                let kick = [back(next[0], width, v.0[0]), back(next[1], height, v.0[1])];
                if kick != [0.0, 0.0] {
                    out.write::<Vel>(e, kick);
                }
            }
        });
        rt.add_system_named("crowd", crowd);
        rt.add_system_named("life", life);
        rt.add_system_named("help", help);
    }
}

/// The `life` system: regenerate, die, breed.
fn life(w: &World, out: &mut Output) {
    for (e, (p, v, h, wounded)) in w.query::<(&Pos, &Vel, &Hp, Option<&Wounded>)>() {
        if h.0 <= 0.0 {
            out.despawn(e);
            continue;
        }
        out.write::<Hp>(e, REGEN);
        match (h.0 < WEAK, wounded.is_some()) {
            (true, false) => {
                out.insert(e, Wounded);
                out.send(Cry(p.0));
            }
            (false, true) => out.remove::<Wounded>(e),
            _ => {}
        }
        if h.0 > BREED {
            // The newborn: one unit to the parent's left, drifting the other way.
            let speed = (v.0[0] * v.0[0] + v.0[1] * v.0[1]).sqrt().max(0.1);
            let side = [-v.0[1] / speed, v.0[0] / speed];
            out.write::<Hp>(e, -h.0 / 2.0);
            out.spawn_deferred((
                Pos([p.0[0] + side[0], p.0[1] + side[1]]),
                Vel([-v.0[0], -v.0[1]]),
                Hp(h.0 / 2.0),
            ));
        }
    }
}

/// The `help` system: solace from last frame's cries within reach.
fn help(w: &World, out: &mut Output) {
    let cries = w.messages::<Cry>();
    if cries.is_empty() {
        return;
    }
    let mut grid: BTreeMap<Cell, Vec<[f32; 2]>> = BTreeMap::new();
    for c in cries {
        grid.entry(cell(c.0)).or_default().push(c.0);
    }
    for (e, (p, _)) in w.query::<(&Pos, &Hp)>() {
        let (cx, cy) = cell(p.0);
        let mut heard = 0;
        for dx in -1..=1 {
            for dy in -1..=1 {
                for q in grid.get(&(cx + dx, cy + dy)).into_iter().flatten() {
                    let d = [p.0[0] - q[0], p.0[1] - q[1]];
                    if d[0] * d[0] + d[1] * d[1] < RANGE * RANGE {
                        heard += 1;
                    }
                }
            }
        }
        if heard > 0 {
            out.write::<Hp>(e, SOLACE * heard as f32);
        }
    }
}

/// A cell of the crowd grid (`RANGE` wide).
type Cell = (i32, i32);

/// Cell of a position in the crowd grid.
fn cell(p: [f32; 2]) -> Cell {
    ((p[0] / RANGE).floor() as i32, (p[1] / RANGE).floor() as i32)
}

/// The `crowd` system: push and hurt the neighbours within [`RANGE`].
fn crowd(w: &World, out: &mut Output) {
    // Cells in a sorted map, each listing its agents in query order: the same relative
    // order in a shard as in one process (canonical order).
    // With each agent, whether it was wounded in the last frame (change marks travel
    // with ghosts), which spares it half of what it is dealt.
    let mut grid: BTreeMap<Cell, Vec<(Entity, [f32; 2], f32)>> = BTreeMap::new();
    for (e, (p, wounded)) in w.query::<(&Pos, Option<&Wounded>)>() {
        let fresh = wounded.is_some() && w.is_added::<Wounded>(e);
        let spared = if fresh { 0.5 } else { 1.0 };
        grid.entry(cell(p.0)).or_default().push((e, p.0, spared));
    }
    let mut near = Vec::new();
    for (e, (p, _, wounded)) in w.query::<(&Pos, &Hp, Option<&Wounded>)>() {
        near.clear();
        let (cx, cy) = cell(p.0);
        for dx in -1..=1 {
            for dy in -1..=1 {
                for &(n, q, spared) in grid.get(&(cx + dx, cy + dy)).into_iter().flatten() {
                    let d = [p.0[0] - q[0], p.0[1] - q[1]];
                    let d2 = d[0] * d[0] + d[1] * d[1];
                    if n != e && d2 < RANGE * RANGE {
                        near.push((n, d, d2, spared));
                    }
                }
            }
        }
        if near.is_empty() {
            continue;
        }
        let deals = if wounded.is_some() { HURT / 2.0 } else { HURT };
        let share = -deals / near.len() as f32;
        let mut push = [0.0f32; 2];
        for &(n, d, d2, spared) in &near {
            let k = 0.05 / d2.max(0.25);
            push[0] += d[0] * k;
            push[1] += d[1] * k;
            out.write::<Hp>(n, share * spared);
        }
        out.write::<Vel>(e, push);
    }
}

/// The model in one process ([`Cluster::run_in_one_process`]: one world of `entities`
/// agents in canonical order, one worker); [`world_checksum`](crate::world_checksum)
/// after each of `frames` frames.
pub fn reference_of(entities: usize, frames: u64) -> Vec<u64> {
    let one = Cluster::new(
        bands_of(entities, 2.0 * RANGE),
        move || world_of(entities),
        systems_of(entities),
    )
    .frames(frames)
    .run_in_one_process()
    .expect("the model runs");
    one.frames.iter().map(|f| f.checksum).collect()
}

/// [`reference_of`] for [`world`].
pub fn reference(frames: u64) -> Vec<u64> {
    reference_of(2_000, frames)
}

/// The herd's centre, a world-wide value ([`Cluster::global`]) summed exactly: positions
/// in 1/1024 units as integers, and a count. What the `herd` system steers by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Herd {
    /// Sum of the positions, in 1/1024 units.
    pub sum: [i64; 2],
    /// Agents counted.
    pub count: u64,
}

impl Herd {
    /// The part of the agents in `world`.
    pub fn part(world: &World) -> Herd {
        let mut h = Herd::default();
        for (_, (p,)) in world.query::<(&Pos,)>() {
            h.sum[0] += (p.0[0] * 1024.0).round() as i64;
            h.sum[1] += (p.0[1] * 1024.0).round() as i64;
            h.count += 1;
        }
        h
    }

    /// Adds `other`'s agents: exact, so the total does not depend on how the world was
    /// split.
    pub fn combine(total: &mut Herd, other: Herd) {
        total.sum[0] += other.sum[0];
        total.sum[1] += other.sum[1];
        total.count += other.count;
    }

    /// The centre, if any agent was counted.
    pub fn centre(&self) -> Option<[f32; 2]> {
        (self.count > 0).then(|| {
            let n = self.count as f64 * 1024.0;
            [
                (self.sum[0] as f64 / n) as f32,
                (self.sum[1] as f64 / n) as f32,
            ]
        })
    }
}

/// The same centre summed in `f32`: its rounding depends on how the world was split, so
/// a sharded world steered by it drifts from one process (the test's control).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FloatHerd {
    /// Sum of the positions.
    pub sum: [f32; 2],
    /// Agents counted.
    pub count: u64,
}

impl FloatHerd {
    /// The part of the agents in `world`.
    pub fn part(world: &World) -> FloatHerd {
        let mut h = FloatHerd::default();
        for (_, (p,)) in world.query::<(&Pos,)>() {
            h.sum[0] += p.0[0];
            h.sum[1] += p.0[1];
            h.count += 1;
        }
        h
    }

    /// Adds `other`'s agents (float sums: not exact).
    pub fn combine(total: &mut FloatHerd, other: FloatHerd) {
        total.sum[0] += other.sum[0];
        total.sum[1] += other.sum[1];
        total.count += other.count;
    }
}

/// The `herd` system: every agent gets a small impulse toward the herd's centre as last
/// counted ([`Herd`], or [`FloatHerd`] if that is the resource there is).
pub fn herd(w: &World, out: &mut Output) {
    let centre = match (w.get_resource::<Herd>(), w.get_resource::<FloatHerd>()) {
        (Some(h), _) => h.centre(),
        (None, Some(f)) => (f.count > 0).then(|| {
            let n = f.count as f32;
            [f.sum[0] / n, f.sum[1] / n]
        }),
        (None, None) => None,
    };
    let Some(c) = centre else {
        return;
    };
    for (e, (p,)) in w.query::<(&Pos,)>() {
        out.write::<Vel>(e, [(c[0] - p.0[0]) * 1e-4, (c[1] - p.0[1]) * 1e-4]);
    }
}
