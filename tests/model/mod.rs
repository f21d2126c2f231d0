//! A small sequential model of runsync's semantics (the crate docs' "The runtime and the
//! frame" and `World::register`'s merge rules), shared by the proptest
//! differential test and the fuzz target (`fuzz/`).
//!
//! Random systems emit *batches*, each through a write API picked at random:
//!
//! - [`Batch::Ops`]: writes and structural commands on picked handles (live or stale),
//!   written with `Output::write`, or with `Output::writer` for each run of writes of one
//!   type;
//! - [`Batch::Loop`]: a loop over a query writing every visited entity, through
//!   `out.write` in a `for` loop, a `Writer`, `write_each` or `par_for_each`; forward or in
//!   reverse, once or twice, with one or several writes per entity (repeats of one type,
//!   or interleaved types), plus writes to a picked handle and despawns from inside the
//!   loop.
//!
//! Before each frame the model expands every system's batches into the outputs a plain
//! sequential `for` loop over `world.query` would emit — the reference every write path is
//! defined against; only the iteration order is taken from the world, the entity set and
//! the values come from the model — and then applies them one at a time: merges per
//! (type, entity) in system, then emission order, then structural commands in the same
//! order. The runtime must agree exactly after every frame: every component bit for bit,
//! the liveness of every handle ever issued, and `stats()` (merged, dropped, spawned,
//! despawned, per-system writes and commands). Every case runs at 1, 2 and 8 workers
//! ([`WORKERS`]), and the three runs must also agree with each other frame by frame,
//! iteration order included.
//!
//! Spawns go through `Output::spawn`, whose returned ids the model predicts (each system
//! takes ids from a reservation made before Run, then *overflow* ids: see
//! `Model::reserve`), and `Output::spawn_deferred`, whose ids are chosen in Sync. Ops may
//! insert into or write to the entity their system spawned last in the same frame, and
//! write the resource [`R`], merged by an order-sensitive fold.
//!
//! Change marks are state too: each model entity carries which of its components the last
//! Sync wrote (`changed`) or gave it (`added`), with the semantics of `Changed<C>` /
//! `Added<C>` applied one output at a time (a merge call marks changed whatever its result;
//! an insert marks changed, and added if the entity lacked the type; a spawn marks its
//! types added; a remove or despawn drops the marks; with one stage every Sync starts
//! unmarked, with several a stage's Sync forgets what that stage's last Sync marked, and
//! the marks are the union of every stage's; setup spawns and inserts mark added). The world must report exactly those marks, through
//! `is_changed` / `is_added` and through `Changed` / `Added` queries, and two of the loop
//! shapes iterate a `Changed` / `Added` query, so the filters are also exercised inside
//! Run by every write API.
//!
//! One component type per merge: custom order-sensitive folds ([`A`], [`B`]),
//! `merge::last` ([`C`], [`Padded`]), `merge::first` ([`F`]), `merge::min` ([`Lo`]),
//! `merge::max` ([`Hi`]), `merge::sum` ([`S`]), and no-op merges of zero-sized outputs
//! ([`Z`], zero-sized itself, and [`D`], which owns memory).

#![allow(dead_code, unreachable_pub)]
// `with_kind!` expands generic code once per type, including those with `Output = ()`.
#![allow(clippy::unit_arg)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::{AddAssign, Range};
use std::sync::{Arc, Mutex};

use runsync::prelude::*;
use runsync::{QueryData, QueryOut};

/// The worker counts every case runs at.
pub const WORKERS: [usize; 3] = [1, 2, 8];

// ---------------------------------------------------------------------------------------
// Component types, one per merge.

/// Order-sensitive integer fold (custom closure).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct A(pub u64);
impl Component for A {
    type Output = u64;
}
pub fn fold_a(a: &mut u64, x: u64) {
    *a = a.wrapping_mul(31).wrapping_add(x);
}

/// Float sum by a custom closure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct B(pub f32);
impl Component for B {
    type Output = f32;
}

/// `merge::last`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct C(pub i64);
impl Component for C {
    type Output = C;
}

/// `merge::last`, with padding bytes (u8, then u64, then u16).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Padded {
    pub a: u8,
    pub b: u64,
    pub c: u16,
}
impl Component for Padded {
    type Output = Padded;
}

/// `merge::first`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct F(pub i64);
impl Component for F {
    type Output = F;
}

/// `merge::min`, over floats that include NaN, -0.0 and 0.0 (equal but not the same
/// bits), so "the earliest among equals" and "NaN never replaces an earlier pick" show.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Lo(pub f32);
impl Component for Lo {
    type Output = Lo;
}

/// `merge::max`, same values as [`Lo`].
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Hi(pub f32);
impl Component for Hi {
    type Output = Hi;
}

/// `merge::sum` of float deltas that are not integers, so the order of additions shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct S(pub f32);
impl Component for S {
    type Output = f32;
}
impl AddAssign<f32> for S {
    fn add_assign(&mut self, d: f32) {
        self.0 += d;
    }
}

/// Zero-sized, with zero-sized outputs and a no-op merge.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
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

/// A resource written by systems, folded order-sensitively (like [`A`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct R(pub u64);
impl Component for R {
    type Output = u64;
}

/// Registers every component type with its merge, and the resource [`R`].
pub fn register_all(world: &mut World) {
    world.insert_resource(R(1));
    world.register_resource::<R>(|r: &mut R, xs: &[u64]| {
        xs.iter().for_each(|&x| fold_a(&mut r.0, x))
    });
    world.register::<A>(|a: &mut A, xs: &[u64]| xs.iter().for_each(|&x| fold_a(&mut a.0, x)));
    world.register::<B>(|b: &mut B, xs: &[f32]| xs.iter().for_each(|&x| b.0 += x));
    world.register::<C>(merge::last);
    world.register::<Padded>(merge::last);
    world.register::<F>(merge::first);
    world.register::<Lo>(merge::min);
    world.register::<Hi>(merge::max);
    world.register::<S>(merge::sum);
    world.register::<Z>(|_: &mut Z, _: &[()]| {});
    world.register::<D>(|_: &mut D, _: &[()]| {});
}

/// A component type, as data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    A,
    B,
    C,
    P,
    F,
    Lo,
    Hi,
    S,
    Z,
    D,
}

impl Kind {
    /// This kind's bit in [`MEnt::changed`] / [`MEnt::added`].
    pub fn bit(self) -> u16 {
        1 << self as u16
    }

    pub const ALL: [Kind; 10] = [
        Kind::A,
        Kind::B,
        Kind::C,
        Kind::P,
        Kind::F,
        Kind::Lo,
        Kind::Hi,
        Kind::S,
        Kind::Z,
        Kind::D,
    ];
}

// Every written or inserted value is a function of one `u64`, shared by runtime and model.

pub fn bval(x: u64) -> f32 {
    f32::from(x as i16)
}
pub fn sval(x: u64) -> f32 {
    f32::from(x as i16) * 0.1
}
/// A small domain, so that ties are frequent: NaN, -0.0, 0.0 and a few halves.
pub fn fval(x: u64) -> f32 {
    match x % 11 {
        0 => f32::NAN,
        1 => -0.0,
        2 => 0.0,
        k => (k as f32 - 6.0) * 0.5,
    }
}
pub fn pval(x: u64) -> (u8, u64, u16) {
    (x as u8, x >> 8, u16::from(x as u8) * 3)
}

/// A component type the model knows: how to make its outputs and values from a `u64`.
pub trait Kinded: Component + Sized {
    fn output(x: u64) -> Self::Output;
    fn make(x: u64, token: &Arc<()>) -> Self;
}
impl Kinded for A {
    fn output(x: u64) -> u64 {
        x
    }
    fn make(x: u64, _: &Arc<()>) -> Self {
        A(x)
    }
}
impl Kinded for B {
    fn output(x: u64) -> f32 {
        bval(x)
    }
    fn make(x: u64, _: &Arc<()>) -> Self {
        B(bval(x))
    }
}
impl Kinded for C {
    fn output(x: u64) -> C {
        C(x as i64)
    }
    fn make(x: u64, _: &Arc<()>) -> Self {
        C(x as i64)
    }
}
impl Kinded for Padded {
    fn output(x: u64) -> Padded {
        let (a, b, c) = pval(x);
        Padded { a, b, c }
    }
    fn make(x: u64, _: &Arc<()>) -> Self {
        Self::output(x)
    }
}
impl Kinded for F {
    fn output(x: u64) -> F {
        F(x as i64)
    }
    fn make(x: u64, _: &Arc<()>) -> Self {
        F(x as i64)
    }
}
impl Kinded for Lo {
    fn output(x: u64) -> Lo {
        Lo(fval(x))
    }
    fn make(x: u64, _: &Arc<()>) -> Self {
        Lo(fval(x))
    }
}
impl Kinded for Hi {
    fn output(x: u64) -> Hi {
        Hi(fval(x))
    }
    fn make(x: u64, _: &Arc<()>) -> Self {
        Hi(fval(x))
    }
}
impl Kinded for S {
    fn output(x: u64) -> f32 {
        sval(x)
    }
    fn make(x: u64, _: &Arc<()>) -> Self {
        S(sval(x))
    }
}
impl Kinded for Z {
    fn output(_: u64) {}
    fn make(_: u64, _: &Arc<()>) -> Self {
        Z
    }
}
impl Kinded for D {
    fn output(_: u64) {}
    fn make(_: u64, token: &Arc<()>) -> Self {
        D(token.clone())
    }
}

/// Runs `$body` with `$T` the component type of kind `$k`.
macro_rules! with_kind {
    ($k:expr, $T:ident => $body:expr) => {
        match $k {
            Kind::A => {
                type $T = A;
                $body
            }
            Kind::B => {
                type $T = B;
                $body
            }
            Kind::C => {
                type $T = C;
                $body
            }
            Kind::P => {
                type $T = Padded;
                $body
            }
            Kind::F => {
                type $T = F;
                $body
            }
            Kind::Lo => {
                type $T = Lo;
                $body
            }
            Kind::Hi => {
                type $T = Hi;
                $body
            }
            Kind::S => {
                type $T = S;
                $body
            }
            Kind::Z => {
                type $T = Z;
                $body
            }
            Kind::D => {
                type $T = D;
                $body
            }
        }
    };
}

fn write_dyn(out: &mut Output<'_>, k: Kind, e: Entity, x: u64) {
    with_kind!(k, T => out.write::<T>(e, T::output(x)))
}

// ---------------------------------------------------------------------------------------
// Queries the loops iterate.

/// A query shape, as data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `(&C,)`: every initial entity unless created without `C`; no spawned one.
    HasC,
    /// `(&A,)`.
    HasA,
    /// `(&A, Option<&B>)`.
    AMaybeB,
    /// `(Option<&F>, Without<Z>)`: no required component.
    NoZ,
    /// `(&A, Changed<A>)`: the entities whose `A` the last Sync wrote.
    ChangedA,
    /// `(Added<B>, Option<&C>)`: the entities that gained `B` in the last Sync.
    AddedB,
}

impl Shape {
    pub const ALL: [Shape; 6] = [
        Shape::HasC,
        Shape::HasA,
        Shape::AMaybeB,
        Shape::NoZ,
        Shape::ChangedA,
        Shape::AddedB,
    ];
}

/// A query and the `u64` key a loop derives from each item: from the world's item in the
/// runtime, from the model's entity in the model (`None`: the entity does not match).
pub trait QueryShape {
    type Q: QueryData;
    /// The same query, for `Output::query` (generic code cannot bound one type by both
    /// faces: their items are different projections).
    type O: QueryOut;
    fn key(item: <Self::Q as QueryData>::Item<'_>) -> u64;
    /// [`key`](Self::key) of the same item, as `Output::query` yields it.
    fn key_out(item: <Self::O as QueryOut>::Item<'_>) -> u64;
    fn model_key(m: &MEnt) -> Option<u64>;
}

pub struct QHasC;
impl QueryShape for QHasC {
    type Q = (&'static C,);
    type O = (&'static C,);
    fn key((c,): <Self::Q as QueryData>::Item<'_>) -> u64 {
        c.0 as u64
    }
    fn key_out(item: <Self::O as QueryOut>::Item<'_>) -> u64 {
        Self::key(item)
    }
    fn model_key(m: &MEnt) -> Option<u64> {
        m.c.map(|c| c as u64)
    }
}

pub struct QHasA;
impl QueryShape for QHasA {
    type Q = (&'static A,);
    type O = (&'static A,);
    fn key((a,): <Self::Q as QueryData>::Item<'_>) -> u64 {
        a.0
    }
    fn key_out(item: <Self::O as QueryOut>::Item<'_>) -> u64 {
        Self::key(item)
    }
    fn model_key(m: &MEnt) -> Option<u64> {
        m.a
    }
}

fn ab_key(a: u64, b: Option<f32>) -> u64 {
    a.rotate_left(7) ^ u64::from(b.map_or(u32::MAX, f32::to_bits))
}
pub struct QAMaybeB;
impl QueryShape for QAMaybeB {
    type Q = (&'static A, Option<&'static B>);
    type O = (&'static A, Option<&'static B>);
    fn key((a, b): <Self::Q as QueryData>::Item<'_>) -> u64 {
        ab_key(a.0, b.map(|b| b.0))
    }
    fn key_out(item: <Self::O as QueryOut>::Item<'_>) -> u64 {
        Self::key(item)
    }
    fn model_key(m: &MEnt) -> Option<u64> {
        m.a.map(|a| ab_key(a, m.b.map(|b| b.0)))
    }
}

fn f_key(f: Option<i64>) -> u64 {
    f.map_or(0x5eed, |f| f as u64)
}
pub struct QNoZ;
impl QueryShape for QNoZ {
    type Q = (Option<&'static F>, Without<Z>);
    type O = (Option<&'static F>, Without<Z>);
    fn key((f, ()): <Self::Q as QueryData>::Item<'_>) -> u64 {
        f_key(f.map(|f| f.0))
    }
    fn key_out(item: <Self::O as QueryOut>::Item<'_>) -> u64 {
        Self::key(item)
    }
    fn model_key(m: &MEnt) -> Option<u64> {
        (!m.z).then(|| f_key(m.f))
    }
}

pub struct QChangedA;
impl QueryShape for QChangedA {
    type Q = (&'static A, Changed<A>);
    type O = (&'static A, Changed<A>);
    fn key((a, ()): <Self::Q as QueryData>::Item<'_>) -> u64 {
        a.0 ^ 0xc4a9
    }
    fn key_out(item: <Self::O as QueryOut>::Item<'_>) -> u64 {
        Self::key(item)
    }
    fn model_key(m: &MEnt) -> Option<u64> {
        m.a.filter(|_| m.changed & Kind::A.bit() != 0)
            .map(|a| a ^ 0xc4a9)
    }
}

pub struct QAddedB;
impl QueryShape for QAddedB {
    type Q = (Added<B>, Option<&'static C>);
    type O = (Added<B>, Option<&'static C>);
    fn key(((), c): <Self::Q as QueryData>::Item<'_>) -> u64 {
        c.map_or(0xadd, |c| c.0 as u64)
    }
    fn key_out(item: <Self::O as QueryOut>::Item<'_>) -> u64 {
        Self::key(item)
    }
    fn model_key(m: &MEnt) -> Option<u64> {
        (m.b.is_some() && m.added & Kind::B.bit() != 0).then(|| m.c.map_or(0xadd, |c| c as u64))
    }
}

/// Runs `$body` with `$Q` the [`QueryShape`] of shape `$s`.
macro_rules! with_shape {
    ($s:expr, $Q:ident => $body:expr) => {
        match $s {
            Shape::HasC => {
                type $Q = QHasC;
                $body
            }
            Shape::HasA => {
                type $Q = QHasA;
                $body
            }
            Shape::AMaybeB => {
                type $Q = QAMaybeB;
                $body
            }
            Shape::NoZ => {
                type $Q = QNoZ;
                $body
            }
            Shape::ChangedA => {
                type $Q = QChangedA;
                $body
            }
            Shape::AddedB => {
                type $Q = QAddedB;
                $body
            }
        }
    };
}

// ---------------------------------------------------------------------------------------
// What systems emit.

/// A single write or structural command; `u16`s pick a handle among all ever issued.
#[derive(Clone, Copy, Debug)]
pub enum Spec {
    Write(Kind, u16, u64),
    Insert(Kind, u16, u64),
    Remove(Kind, u16),
    Despawn(u16),
    /// `Output::spawn` (returning the id) or, with `true`, `Output::spawn_deferred`.
    Spawn(Option<u64>, Option<i16>, bool),
    /// An insert into the entity this system spawned last this frame (if any).
    InsertSpawned(Kind, u64),
    /// A write to the entity this system spawned last this frame: dropped (not alive yet).
    WriteSpawned(Kind, u64),
    /// `Output::write_resource::<R>`.
    WriteRes(u64),
}

/// The write API a loop goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `for (e, item) in world.query::<Q>() { out.write::<K>(e, ..) }`.
    Write,
    /// The same loop through one `out.writer::<K>()` (one type per loop).
    Writer,
    /// `out.write_each::<K, Q>(..)` per write, per pass (forward only; only entities that
    /// have `K`).
    WriteEach,
    /// `out.par_for_each::<Q>(|e, item, out| ..)` per pass (forward only).
    ParForEach,
    /// `for (e, (item, mut next)) in out.query::<(Q, Write<K>)>()` per pass (forward
    /// only, one type): each write sets the row's handle if its value passes a test
    /// (conditional writes; a later set replaces an earlier one); the `extra` writes
    /// follow the loop through `out.write`, in visiting order.
    RowWrites,
    /// The same writes through `out.par_for_each::<(Q, Write<K>)>(|e, (item, next), out|
    /// ..)`: row writes set in the chunks, the `extra` writes through each chunk's `out`
    /// (of one type, row writes come first: the same outputs as `RowWrites`).
    ParRowWrites,
}

/// A loop over a query: per pass, per visited entity: every write of `writes` in order
/// (`(type, seed)`), then maybe a write to the `extra` handle, then maybe a despawn of the
/// entity.
#[derive(Clone, Debug)]
pub struct Loop {
    pub api: Api,
    pub shape: Shape,
    pub reverse: bool,
    pub passes: u8,
    pub writes: Vec<(Kind, u64)>,
    /// A type and a picked handle (possibly stale, possibly not having it), written for
    /// about a third of the visited entities.
    pub extra: Option<(Kind, u16)>,
    /// Despawns about a fifth of the visited entities.
    pub despawn: bool,
}

impl Loop {
    /// What the API allows: a `Writer` writes one type and holds `out`; `write_each`
    /// computes values only; `write_each` and `par_for_each` go forward.
    pub fn legal(mut self) -> Self {
        if self.writes.is_empty() {
            self.writes.push((Kind::C, 0));
        }
        self.passes = self.passes.clamp(1, 2);
        match self.api {
            Api::Write => {}
            Api::Writer => {
                let k = self.writes[0].0;
                self.writes.iter_mut().for_each(|w| w.0 = k);
                if let Some(x) = &mut self.extra {
                    x.0 = k;
                }
                self.despawn = false;
            }
            Api::WriteEach => {
                self.reverse = false;
                self.extra = None;
                self.despawn = false;
            }
            Api::ParForEach => self.reverse = false,
            Api::RowWrites | Api::ParRowWrites => {
                let k = self.writes[0].0;
                self.writes.iter_mut().for_each(|w| w.0 = k);
                self.reverse = false;
                self.despawn = false;
            }
        }
        self
    }
}

#[derive(Clone, Debug)]
pub enum Batch {
    /// Single ops; with `writer`, each run of writes of one type goes through a `Writer`.
    Ops {
        writer: bool,
        specs: Vec<Spec>,
    },
    Loop(Loop),
}

/// A spec with its pick resolved to a handle (live or stale; `None`: none issued yet).
#[derive(Clone, Copy, Debug)]
pub struct Op(pub Spec, pub Option<Entity>);

/// A legal loop with its extra handle resolved.
#[derive(Clone, Debug)]
pub struct RLoop {
    pub l: Loop,
    pub extra: Option<(Kind, Entity)>,
}

#[derive(Clone, Debug)]
pub enum RBatch {
    Ops { writer: bool, ops: Vec<Op> },
    Loop(RLoop),
}

/// One output, as the model sees it.
#[derive(Clone, Copy, Debug)]
pub enum Emit {
    Write(Kind, Entity, u64),
    Insert(Kind, Entity, u64),
    Remove(Kind, Entity),
    Despawn(Entity),
    /// A spawn; the id the model predicts `Output::spawn` returns, `None` if deferred.
    Spawn(Option<u64>, Option<i16>, Option<Entity>),
    WriteRes(u64),
}

/// The ids `Output::spawn` returns for a system's `emits`, in order (deferred spawns
/// have none).
fn spawn_ids(emits: &[Emit]) -> Vec<Entity> {
    emits
        .iter()
        .filter_map(|e| match e {
            Emit::Spawn(_, _, id) => *id,
            _ => None,
        })
        .collect()
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The value a loop writes: a function of the write's seed, the pass, the entity and the
/// key of its item.
pub fn mix(seed: u64, pass: u8, e: Entity, key: u64) -> u64 {
    splitmix(seed ^ splitmix(e.to_bits() ^ splitmix(key ^ (u64::from(pass) << 56))))
}

/// Where a loop body sends its outputs: the runtime's `Output`, or the model's list.
trait Sink {
    fn write(&mut self, k: Kind, e: Entity, x: u64);
    fn despawn(&mut self, e: Entity);
}
impl Sink for Output<'_> {
    fn write(&mut self, k: Kind, e: Entity, x: u64) {
        write_dyn(self, k, e, x);
    }
    fn despawn(&mut self, e: Entity) {
        Output::despawn(self, e);
    }
}
impl Sink for Vec<Emit> {
    fn write(&mut self, k: Kind, e: Entity, x: u64) {
        self.push(Emit::Write(k, e, x));
    }
    fn despawn(&mut self, e: Entity) {
        self.push(Emit::Despawn(e));
    }
}

/// The extra write a loop makes when visiting `e`, if any.
fn extra_write(l: &RLoop, pass: u8, e: Entity, key: u64) -> Option<(Kind, Entity, u64)> {
    let (k, x) = l.extra?;
    let h = mix(0xe7_7a, pass, e, key);
    (h % 3 == 0).then_some((k, x, h))
}

fn despawns(l: &RLoop, pass: u8, e: Entity, key: u64) -> bool {
    l.l.despawn && mix(0xde_ad, pass, e, key) % 5 == 1
}

/// The body of a `Write` or `par_for_each` loop for one visited entity.
fn visit(sink: &mut impl Sink, l: &RLoop, pass: u8, e: Entity, key: u64) {
    for &(k, seed) in &l.l.writes {
        sink.write(k, e, mix(seed, pass, e, key));
    }
    if let Some((k, x, h)) = extra_write(l, pass, e, key) {
        sink.write(k, x, h);
    }
    if despawns(l, pass, e, key) {
        sink.despawn(e);
    }
}

// ---------------------------------------------------------------------------------------
// The runtime side: systems run their batches through the real API.

/// Emits one op through `Output::write` / the command methods. `spawned` lists the ids
/// `Output::spawn` returned so far this frame.
pub fn emit(out: &mut Output<'_>, op: Op, token: &Arc<()>, spawned: &mut Vec<Entity>) {
    let Op(s, e) = op;
    match s {
        Spec::Spawn(a, b, false) => {
            // Bundles of different shapes, as a user would write them.
            let id = match (a, b) {
                (Some(a), Some(b)) => out.spawn((A(a), B(f32::from(b)))),
                (Some(a), None) => out.spawn((A(a),)),
                (None, Some(b)) => out.spawn((B(f32::from(b)),)),
                (None, None) => out.spawn(()),
            };
            spawned.push(id);
            return;
        }
        Spec::Spawn(a, b, true) => {
            match (a, b) {
                (Some(a), Some(b)) => out.spawn_deferred((A(a), B(f32::from(b)))),
                (Some(a), None) => out.spawn_deferred((A(a),)),
                (None, Some(b)) => out.spawn_deferred((B(f32::from(b)),)),
                (None, None) => out.spawn_deferred(()),
            }
            return;
        }
        Spec::InsertSpawned(k, x) => {
            if let Some(&e) = spawned.last() {
                with_kind!(k, T => out.insert(e, T::make(x, token)));
            }
            return;
        }
        Spec::WriteSpawned(k, x) => {
            if let Some(&e) = spawned.last() {
                write_dyn(out, k, e, x);
            }
            return;
        }
        Spec::WriteRes(x) => {
            out.write_resource::<R>(x);
            return;
        }
        _ => {}
    }
    let Some(e) = e else { return };
    match s {
        Spec::Write(k, _, x) => write_dyn(out, k, e, x),
        Spec::Insert(k, _, x) => with_kind!(k, T => out.insert(e, T::make(x, token))),
        Spec::Remove(k, _) => with_kind!(k, T => out.remove::<T>(e)),
        Spec::Despawn(_) => out.despawn(e),
        _ => unreachable!("handled above"),
    }
}

fn run_ops(
    out: &mut Output<'_>,
    ops: &[Op],
    writer: bool,
    token: &Arc<()>,
    spawned: &mut Vec<Entity>,
) {
    let mut i = 0;
    while i < ops.len() {
        match ops[i] {
            Op(Spec::Write(k, ..), Some(_)) if writer => {
                let run = ops[i..]
                    .iter()
                    .take_while(|op| matches!(op, Op(Spec::Write(k2, ..), Some(_)) if *k2 == k))
                    .count();
                with_kind!(k, T => {
                    let mut w = out.writer::<T>();
                    for op in &ops[i..i + run] {
                        if let Op(Spec::Write(_, _, x), Some(e)) = *op {
                            w.write(e, T::output(x));
                        }
                    }
                });
                i += run;
            }
            op => {
                emit(out, op, token, spawned);
                i += 1;
            }
        }
    }
}

fn run_loop<Sh: QueryShape>(world: &World, out: &mut Output<'_>, l: &RLoop) {
    let items = || -> Vec<(Entity, u64)> {
        world
            .query::<Sh::Q>()
            .map(|(e, item)| (e, Sh::key(item)))
            .collect()
    };
    match l.l.api {
        Api::Write => {
            for pass in 0..l.l.passes {
                if l.l.reverse {
                    for (e, key) in items().into_iter().rev() {
                        visit(out, l, pass, e, key);
                    }
                } else {
                    for (e, item) in world.query::<Sh::Q>() {
                        visit(out, l, pass, e, Sh::key(item));
                    }
                }
            }
        }
        Api::Writer => with_kind!(l.l.writes[0].0, T => {
            // One writer for every pass.
            let mut w = out.writer::<T>();
            for pass in 0..l.l.passes {
                let mut body = |e: Entity, key: u64| {
                    for &(_, seed) in &l.l.writes {
                        w.write(e, T::output(mix(seed, pass, e, key)));
                    }
                    if let Some((_, x, h)) = extra_write(l, pass, e, key) {
                        w.write(x, T::output(h));
                    }
                };
                if l.l.reverse {
                    items().into_iter().rev().for_each(|(e, key)| body(e, key));
                } else {
                    for (e, item) in world.query::<Sh::Q>() {
                        body(e, Sh::key(item));
                    }
                }
            }
        }),
        Api::WriteEach => {
            for pass in 0..l.l.passes {
                for &(k, seed) in &l.l.writes {
                    with_kind!(k, T => out.write_each::<T, Sh::Q>(|e, item| {
                        T::output(mix(seed, pass, e, Sh::key(item)))
                    }));
                }
            }
        }
        Api::ParForEach => {
            for pass in 0..l.l.passes {
                out.par_for_each::<Sh::O>(|e, item, out| visit(out, l, pass, e, Sh::key_out(item)));
            }
        }
        Api::ParRowWrites => with_kind!(l.l.writes[0].0, T => {
            for pass in 0..l.l.passes {
                out.par_for_each::<(Sh::O, Write<T>)>(|e, (item, mut next), out| {
                    let key = Sh::key_out(item);
                    for &(_, seed) in &l.l.writes {
                        if let Some(x) = row_write_value(seed, pass, e, key) {
                            next.set(T::output(x));
                        }
                    }
                    if let Some((k, x, h)) = extra_write(l, pass, e, key) {
                        write_dyn(out, k, x, h);
                    }
                });
            }
        }),
        Api::RowWrites => with_kind!(l.l.writes[0].0, T => {
            for pass in 0..l.l.passes {
                let mut visited = Vec::new();
                for (e, (item, mut next)) in out.query::<(Sh::O, Write<T>)>() {
                    let key = Sh::key_out(item);
                    for &(_, seed) in &l.l.writes {
                        if let Some(x) = row_write_value(seed, pass, e, key) {
                            next.set(T::output(x));
                        }
                    }
                    visited.push((e, key));
                }
                for (e, key) in visited {
                    if let Some((k, x, h)) = extra_write(l, pass, e, key) {
                        write_dyn(out, k, x, h);
                    }
                }
            }
        }),
    }
}

/// What a `RowWrites` loop sets a row to for one of its writes, if anything (three writes
/// in four).
fn row_write_value(seed: u64, pass: u8, e: Entity, key: u64) -> Option<u64> {
    let x = mix(seed, pass, e, key);
    (x % 4 != 0).then_some(x)
}

/// Runs one system's batches, in order; returns the ids `Output::spawn` returned.
pub fn run_batches(
    world: &World,
    out: &mut Output<'_>,
    batches: &[RBatch],
    token: &Arc<()>,
) -> Vec<Entity> {
    let mut spawned = Vec::new();
    for b in batches {
        match b {
            RBatch::Ops { writer, ops } => run_ops(out, ops, *writer, token, &mut spawned),
            RBatch::Loop(l) => with_shape!(l.l.shape, Q => run_loop::<Q>(world, out, l)),
        }
    }
    spawned
}

// ---------------------------------------------------------------------------------------
// The model.

/// An `f32` compared by its bits (so NaN equals itself and -0.0 differs from 0.0).
#[derive(Clone, Copy, Default)]
pub struct Bits(pub f32);
impl PartialEq for Bits {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}
impl Eq for Bits {}
impl fmt::Debug for Bits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// One entity's components.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MEnt {
    pub a: Option<u64>,
    pub b: Option<Bits>,
    pub c: Option<i64>,
    pub p: Option<(u8, u64, u16)>,
    pub f: Option<i64>,
    pub lo: Option<Bits>,
    pub hi: Option<Bits>,
    pub s: Option<Bits>,
    pub z: bool,
    pub d: bool,
    /// The kinds (by [`Kind::bit`]) the last Sync wrote: `Changed<C>`.
    pub changed: u16,
    /// The kinds the entity gained in the last Sync: `Added<C>` (a subset of `changed`).
    pub added: u16,
}

/// The smallest (`less`) or largest value, the earliest among equals; a value that does
/// not compare never replaces an earlier pick (the docs of `merge::min` / `merge::max`).
fn pick(xs: &[u64], better: fn(f32, f32) -> bool) -> f32 {
    let mut best = fval(xs[0]);
    for &x in &xs[1..] {
        if better(fval(x), best) {
            best = fval(x);
        }
    }
    best
}

impl MEnt {
    pub fn has(&self, k: Kind) -> bool {
        match k {
            Kind::A => self.a.is_some(),
            Kind::B => self.b.is_some(),
            Kind::C => self.c.is_some(),
            Kind::P => self.p.is_some(),
            Kind::F => self.f.is_some(),
            Kind::Lo => self.lo.is_some(),
            Kind::Hi => self.hi.is_some(),
            Kind::S => self.s.is_some(),
            Kind::Z => self.z,
            Kind::D => self.d,
        }
    }

    /// The kinds it has, as bits.
    pub fn kinds(&self) -> u16 {
        Kind::ALL
            .iter()
            .filter(|&&k| self.has(k))
            .fold(0, |b, k| b | k.bit())
    }

    /// Marks every component it has as added (a spawn).
    pub fn mark_all_added(&mut self) {
        self.added = self.kinds();
        self.changed = self.added;
    }

    /// Inserts (or replaces) the value made from `x`: changed, and added if it was absent.
    pub fn set(&mut self, k: Kind, x: u64) {
        if !self.has(k) {
            self.added |= k.bit();
        }
        self.changed |= k.bit();
        match k {
            Kind::A => self.a = Some(x),
            Kind::B => self.b = Some(Bits(bval(x))),
            Kind::C => self.c = Some(x as i64),
            Kind::P => self.p = Some(pval(x)),
            Kind::F => self.f = Some(x as i64),
            Kind::Lo => self.lo = Some(Bits(fval(x))),
            Kind::Hi => self.hi = Some(Bits(fval(x))),
            Kind::S => self.s = Some(Bits(sval(x))),
            Kind::Z => self.z = true,
            Kind::D => self.d = true,
        }
    }

    /// Gives the entity, breadth first from `given` (the kinds just spawned with or
    /// inserted), every kind they require ([`REQUIRES`]) that it lacks, made by
    /// [`required_value`] and marked added: what the runtime does with the requirements
    /// [`declare_required`] declares.
    pub fn add_required(&mut self, given: &[Kind]) {
        let mut queue = given.to_vec();
        let mut i = 0;
        while i < queue.len() {
            for &(of, r) in &REQUIRES {
                if of == queue[i] && !self.has(r) {
                    required_value(self, r);
                    self.added |= r.bit();
                    self.changed |= r.bit();
                    queue.push(r);
                }
            }
            i += 1;
        }
    }

    /// Removes the component (and its marks); whether there was one.
    pub fn clear(&mut self, k: Kind) -> bool {
        let had = self.has(k);
        self.changed &= !k.bit();
        self.added &= !k.bit();
        match k {
            Kind::A => self.a = None,
            Kind::B => self.b = None,
            Kind::C => self.c = None,
            Kind::P => self.p = None,
            Kind::F => self.f = None,
            Kind::Lo => self.lo = None,
            Kind::Hi => self.hi = None,
            Kind::S => self.s = None,
            Kind::Z => self.z = false,
            Kind::D => self.d = false,
        }
        had
    }

    /// One merge call: all of a frame's outputs for this component, in order (never
    /// empty); the component is present.
    fn merge(&mut self, k: Kind, xs: &[u64]) {
        self.changed |= k.bit();
        let last = *xs.last().unwrap();
        match k {
            Kind::A => xs.iter().for_each(|&x| fold_a(self.a.as_mut().unwrap(), x)),
            Kind::B => xs
                .iter()
                .for_each(|&x| self.b.as_mut().unwrap().0 += bval(x)),
            Kind::C => self.c = Some(last as i64),
            Kind::P => self.p = Some(pval(last)),
            Kind::F => self.f = Some(xs[0] as i64),
            Kind::Lo => self.lo = Some(Bits(pick(xs, |v, best| v < best))),
            Kind::Hi => self.hi = Some(Bits(pick(xs, |v, best| v > best))),
            Kind::S => xs
                .iter()
                .for_each(|&x| self.s.as_mut().unwrap().0 += sval(x)),
            Kind::Z | Kind::D => {}
        }
    }
}

/// Required components, when a case turns them on: `(of, required)` in declaration order.
/// `A` → `F`, `Z`; `F` → `Lo`; `Lo` → `A` (a cycle); `B` → `S`. Each kind is required by
/// one kind only, so its constructor is never in question.
pub const REQUIRES: [(Kind, Kind); 5] = [
    (Kind::A, Kind::F),
    (Kind::A, Kind::Z),
    (Kind::F, Kind::Lo),
    (Kind::Lo, Kind::A),
    (Kind::B, Kind::S),
];

/// The value a required kind is made with.
fn required_value(m: &mut MEnt, k: Kind) {
    match k {
        Kind::A => m.a = Some(3),
        Kind::F => m.f = Some(7),
        Kind::Lo => m.lo = Some(Bits(1.5)),
        Kind::S => m.s = Some(Bits(2.0)),
        Kind::Z => m.z = true,
        _ => unreachable!("{k:?} is required by no kind"),
    }
}

/// Declares [`REQUIRES`] in `world`, with [`required_value`]'s constructors.
pub fn declare_required(world: &mut World) {
    world
        .require_with::<A, F>(|| F(7))
        .require::<A, Z>()
        .require_with::<F, Lo>(|| Lo(1.5))
        .require_with::<Lo, A>(|| A(3))
        .require_with::<B, S>(|| S(2.0));
}

/// What `stats()` must say about a frame.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub merged: u64,
    pub dropped: u64,
    pub spawned: u64,
    pub despawned: u64,
    /// Per system: (writes, commands) emitted.
    pub systems: Vec<(usize, usize)>,
}

/// The sequential model: an allocator with a LIFO free list, the ids reserved for each
/// system's spawns, a map of live entities and the resource.
#[derive(Default)]
pub struct Model {
    generations: Vec<u32>,
    free: Vec<u32>,
    /// Per system: the ids its `Output::spawn` calls take first, and what it spawned
    /// (through `spawn`) in the last frame.
    reserved: Vec<(Vec<u32>, usize)>,
    /// This frame's first fresh overflow index and number of lanes (systems).
    lane_base: usize,
    lanes: usize,
    live: BTreeMap<Entity, MEnt>,
    /// Every handle ever handed out, so that stale ones get picked too.
    known: Vec<Entity>,
    /// The resource `R`.
    res: u64,
    /// Whether [`REQUIRES`] is declared.
    requires: bool,
    /// The runtime's stages (0 or 1: one).
    stages: usize,
    /// With several stages, per entity: the marks (changed, added) each stage's last
    /// Sync made; an entity's `changed` / `added` are their union.
    layers: BTreeMap<Entity, Vec<(u16, u16)>>,
}

/// The smallest reservation of ids (`MIN_RESERVE` in the runtime).
const MIN_RESERVE: usize = 16;

impl Model {
    fn handle(&self, index: u32) -> Entity {
        Entity::from_bits((u64::from(self.generations[index as usize]) << 32) | u64::from(index))
            .unwrap()
    }

    fn alloc_index(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            self.generations.push(1);
            self.generations.len() as u32 - 1
        })
    }

    fn spawn(&mut self, m: MEnt) -> Entity {
        let index = self.alloc_index();
        let e = self.handle(index);
        self.live.insert(e, m);
        self.known.push(e);
        e
    }

    /// Before a stage's Run: each block of the stage's systems (at `places`, of `systems`)
    /// holds twice what its system spawned the last time it ran, at least `MIN_RESERVE`:
    /// extra ids go back to the free list (last first), missing ones are taken from it (or
    /// fresh), system by system. The other stages' blocks wait for their stage.
    fn reserve(&mut self, systems: usize, places: Range<usize>) {
        self.reserved.resize_with(systems, Default::default);
        for s in places {
            let target = (2 * self.reserved[s].1).max(MIN_RESERVE);
            while self.reserved[s].0.len() > target {
                let id = self.reserved[s].0.pop().unwrap();
                self.free.push(id);
            }
            while self.reserved[s].0.len() < target {
                let id = self.alloc_index();
                self.reserved[s].0.push(id);
            }
        }
        self.lane_base = self.generations.len();
        self.lanes = systems;
    }

    /// The id of system `s`'s `k`-th `spawn` this frame: its reservation's `k`-th id,
    /// else the overflow id at lane position `g = s + (k - reserved) * lanes`: the `g`-th
    /// free id from the top of the free list, or past it the fresh index
    /// `lane_base + g - free`.
    fn reserved_id(&self, s: usize, k: usize) -> Entity {
        let reserved = &self.reserved[s].0;
        if k < reserved.len() {
            return self.handle(reserved[k]);
        }
        let g = s + (k - reserved.len()) * self.lanes;
        if g < self.free.len() {
            return self.handle(self.free[self.free.len() - 1 - g]);
        }
        let index = (self.lane_base + g - self.free.len()) as u64;
        Entity::from_bits((1 << 32) | index).unwrap()
    }

    /// Before the commands: the overflow ids of every system (`spawned[s]` spawns) leave
    /// the free list; fresh ones get slots, and the fresh indices no lane took are freed.
    fn take_overflow(&mut self, spawned: &[usize]) {
        let over: Vec<usize> = (0..self.lanes)
            .map(|s| spawned[s].saturating_sub(self.reserved[s].0.len()))
            .collect();
        let used = |g: usize| g / self.lanes < over[g % self.lanes];
        let Some(last) = (0..self.lanes * over.iter().max().copied().unwrap_or(0))
            .filter(|&g| used(g))
            .max()
        else {
            return;
        };
        let free = self.free.len();
        let kept: Vec<u32> = (0..free)
            .filter(|&p| !used(free - 1 - p))
            .map(|p| self.free[p])
            .collect();
        self.free = kept;
        if last >= free {
            self.generations.resize(self.lane_base + last - free + 1, 1);
            for g in (free..=last).rev() {
                if !used(g) {
                    self.free.push((self.lane_base + g - free) as u32);
                }
            }
        }
    }

    /// After the commands: each block of the stage's systems (at `places`) drops the ids
    /// its system's spawns took.
    fn commit(&mut self, spawned: &[usize], places: Range<usize>) {
        for s in places {
            let n = spawned[s];
            let (ids, last) = &mut self.reserved[s];
            ids.drain(..n.min(ids.len()));
            *last = n;
        }
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

    fn resolve(&self, b: &Batch) -> RBatch {
        match b {
            Batch::Ops { writer, specs } => RBatch::Ops {
                writer: *writer,
                ops: specs
                    .iter()
                    .map(|&s| {
                        let pick = match s {
                            Spec::Write(_, p, _) | Spec::Insert(_, p, _) => p,
                            Spec::Remove(_, p) | Spec::Despawn(p) => p,
                            Spec::Spawn(..)
                            | Spec::InsertSpawned(..)
                            | Spec::WriteSpawned(..)
                            | Spec::WriteRes(_) => 0,
                        };
                        Op(s, self.pick(pick))
                    })
                    .collect(),
            },
            Batch::Loop(l) => {
                let l = l.clone().legal();
                let extra = l.extra.and_then(|(k, p)| self.pick(p).map(|e| (k, e)));
                RBatch::Loop(RLoop { l, extra })
            }
        }
    }

    /// The entities `S` (and `With<with>`) visits, in the world's iteration order, with the
    /// model's key for each; checks that the world visits exactly the entities the model
    /// says match, each once.
    fn order<Sh: QueryShape>(
        &self,
        world: &World,
        with: Option<Kind>,
    ) -> Result<Vec<(Entity, u64)>, String> {
        let visited: Vec<Entity> = match with {
            None => world.query::<Sh::Q>().map(|(e, _)| e).collect(),
            Some(k) => with_kind!(k, T => world
                .query::<(Sh::Q, With<T>)>()
                .map(|(e, _)| e)
                .collect()),
        };
        let matches = |m: &MEnt| Sh::model_key(m).filter(|_| with.is_none_or(|k| m.has(k)));
        let what = || format!("{} with {with:?}", std::any::type_name::<Sh::Q>());
        let mut seen = BTreeSet::new();
        let mut order = Vec::with_capacity(visited.len());
        for e in visited {
            let key = self
                .live
                .get(&e)
                .and_then(matches)
                .ok_or_else(|| format!("query {} visits {e:?}, not in the model", what()))?;
            ensure(seen.insert(e), || {
                format!("query {} visits {e:?} twice", what())
            })?;
            order.push((e, key));
        }
        let want = self.live.values().filter(|m| matches(m).is_some()).count();
        ensure(order.len() == want, || {
            format!(
                "query {} visits {} entities, model {want}",
                what(),
                order.len()
            )
        })?;
        Ok(order)
    }

    /// The outputs of one batch, as a sequential loop would emit them.
    fn expand(
        &self,
        world: &World,
        system: usize,
        b: &RBatch,
        emits: &mut Vec<Emit>,
    ) -> Result<(), String> {
        match b {
            RBatch::Ops { ops, .. } => {
                for &Op(s, e) in ops {
                    let ids = spawn_ids(emits);
                    let last = ids.last().copied();
                    let emit = match (s, e) {
                        (Spec::Spawn(a, b, true), _) => Emit::Spawn(a, b, None),
                        (Spec::Spawn(a, b, false), _) => {
                            Emit::Spawn(a, b, Some(self.reserved_id(system, ids.len())))
                        }
                        (Spec::InsertSpawned(k, x), _) => match last {
                            Some(e) => Emit::Insert(k, e, x),
                            None => continue,
                        },
                        (Spec::WriteSpawned(k, x), _) => match last {
                            Some(e) => Emit::Write(k, e, x),
                            None => continue,
                        },
                        (Spec::WriteRes(x), _) => Emit::WriteRes(x),
                        (_, None) => continue,
                        (Spec::Write(k, _, x), Some(e)) => Emit::Write(k, e, x),
                        (Spec::Insert(k, _, x), Some(e)) => Emit::Insert(k, e, x),
                        (Spec::Remove(k, _), Some(e)) => Emit::Remove(k, e),
                        (Spec::Despawn(_), Some(e)) => Emit::Despawn(e),
                    };
                    emits.push(emit);
                }
            }
            RBatch::Loop(l) => with_shape!(l.l.shape, Q => {
                if matches!(l.l.api, Api::RowWrites | Api::ParRowWrites) {
                    let k = l.l.writes[0].0;
                    let order = self.order::<Q>(world, Some(k))?;
                    for pass in 0..l.l.passes {
                        for &(e, key) in &order {
                            let last = l
                                .l
                                .writes
                                .iter()
                                .rev()
                                .find_map(|&(_, seed)| row_write_value(seed, pass, e, key));
                            if let Some(x) = last {
                                emits.push(Emit::Write(k, e, x));
                            }
                        }
                        for &(e, key) in &order {
                            if let Some((k, x, h)) = extra_write(l, pass, e, key) {
                                emits.push(Emit::Write(k, x, h));
                            }
                        }
                    }
                } else if l.l.api == Api::WriteEach {
                    for pass in 0..l.l.passes {
                        for &(k, seed) in &l.l.writes {
                            for (e, key) in self.order::<Q>(world, Some(k))? {
                                emits.push(Emit::Write(k, e, mix(seed, pass, e, key)));
                            }
                        }
                    }
                } else {
                    // `Writer` loops are legal: one type, no despawn, so `visit` fits.
                    let mut order = self.order::<Q>(world, None)?;
                    if l.l.reverse {
                        order.reverse();
                    }
                    for pass in 0..l.l.passes {
                        for &(e, key) in &order {
                            visit(emits, l, pass, e, key);
                        }
                    }
                }
            }),
        }
        Ok(())
    }

    /// The start of stage `k`'s turn: with one stage, every mark is forgotten; with
    /// several, the marks stage `k`'s last Sync made, and the Sync starts from none (its
    /// own marks are told apart at [`end_turn`](Self::end_turn)). Marks made outside any
    /// Sync (setup) count as the previous stage's.
    fn begin_turn(&mut self, k: usize) {
        let stages = self.stages.max(1);
        for (e, m) in &mut self.live {
            if stages > 1 {
                let l = self.layers.entry(*e).or_insert_with(|| {
                    let mut l = vec![(0, 0); stages];
                    l[(k + stages - 1) % stages] = (m.changed, m.added);
                    l
                });
                l[k] = (0, 0);
            }
            m.changed = 0;
            m.added = 0;
        }
    }

    /// The end of stage `k`'s turn (several stages): what the Sync marked is stage `k`'s
    /// layer; a component removed (or removed and given back) loses the other layers'
    /// marks; the entity's marks are the union again.
    fn end_turn(&mut self, k: usize) {
        let stages = self.stages.max(1);
        if stages == 1 {
            return;
        }
        self.layers.retain(|e, _| self.live.contains_key(e));
        for (e, m) in &mut self.live {
            let l = self
                .layers
                .entry(*e)
                .or_insert_with(|| vec![(0, 0); stages]);
            let keep = m.kinds() & !m.added;
            for (j, layer) in l.iter_mut().enumerate() {
                if j == k {
                    *layer = (m.changed, m.added);
                } else {
                    *layer = (layer.0 & keep, layer.1 & keep);
                }
            }
            m.changed = l.iter().fold(0, |u, x| u | x.0);
            m.added = l.iter().fold(0, |u, x| u | x.1);
        }
    }

    /// A stage with no enabled system takes its turn: it forgets its last Sync's marks.
    fn skip_turn(&mut self, k: usize) {
        self.begin_turn(k);
        self.end_turn(k);
    }

    /// Applies stage `k`'s outputs (per system, by place: stage by stage, registration
    /// order within; the stage's systems are at `places`, the others emitted nothing).
    /// It starts by forgetting the marks stage `k`'s last Sync made (with one stage:
    /// every mark).
    fn sync(&mut self, emits: &[Vec<Emit>], places: Range<usize>, k: usize) -> Counts {
        let mut n = Counts {
            systems: emits
                .iter()
                .map(|es| {
                    let writes = es
                        .iter()
                        .filter(|e| matches!(e, Emit::Write(..) | Emit::WriteRes(_)))
                        .count();
                    (writes, es.len() - writes)
                })
                .collect(),
            ..Counts::default()
        };
        self.begin_turn(k);
        // Merges: one call per (type, entity) with its outputs in system, then emission
        // order.
        let mut groups: BTreeMap<(Kind, Entity), Vec<u64>> = BTreeMap::new();
        for &emit in emits.iter().flatten() {
            if let Emit::Write(k, e, x) = emit {
                groups.entry((k, e)).or_default().push(x);
            }
        }
        for ((k, e), xs) in groups {
            match self.live.get_mut(&e) {
                Some(m) if m.has(k) => {
                    m.merge(k, &xs);
                    n.merged += xs.len() as u64;
                }
                _ => n.dropped += xs.len() as u64,
            }
        }
        // The resource: one fold of every output, in system then emission order.
        for &emit in emits.iter().flatten() {
            if let Emit::WriteRes(x) = emit {
                fold_a(&mut self.res, x);
                n.merged += 1;
            }
        }
        // Structural commands, one at a time, after the overflow ids left the free list.
        let spawned: Vec<usize> = emits.iter().map(|es| spawn_ids(es).len()).collect();
        self.take_overflow(&spawned);
        for &emit in emits.iter().flatten() {
            let ok = match emit {
                Emit::Write(..) | Emit::WriteRes(_) => continue,
                Emit::Spawn(a, b, id) => {
                    let mut m = MEnt {
                        a,
                        b: b.map(|b| Bits(f32::from(b))),
                        ..MEnt::default()
                    };
                    if self.requires {
                        let given: Vec<Kind> = [(Kind::A, a.is_some()), (Kind::B, b.is_some())]
                            .iter()
                            .filter(|g| g.1)
                            .map(|g| g.0)
                            .collect();
                        m.add_required(&given);
                    }
                    m.mark_all_added();
                    match id {
                        Some(e) => {
                            assert_eq!(self.handle(e.index()), e, "a reserved id is stale");
                            assert!(!self.live.contains_key(&e), "a reserved id is alive");
                            self.live.insert(e, m);
                            self.known.push(e);
                        }
                        None => {
                            self.spawn(m);
                        }
                    }
                    n.spawned += 1;
                    true
                }
                Emit::Despawn(e) => {
                    let ok = self.despawn(e);
                    n.despawned += u64::from(ok);
                    ok
                }
                Emit::Insert(k, e, x) => match self.live.get_mut(&e) {
                    Some(m) => {
                        m.set(k, x);
                        if self.requires {
                            m.add_required(&[k]);
                        }
                        true
                    }
                    None => false,
                },
                Emit::Remove(k, e) => self.live.get_mut(&e).is_some_and(|m| m.clear(k)),
            };
            if !ok {
                n.dropped += 1;
            }
        }
        self.commit(&spawned, places);
        self.end_turn(k);
        n
    }
}

fn ensure(cond: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if cond { Ok(()) } else { Err(what()) }
}

/// Every live entity with its components, in the world's iteration order.
pub fn snapshot(world: &World) -> Vec<(Entity, MEnt)> {
    world
        .query::<(
            (Option<&A>, Option<&B>, Option<&C>, Option<&Padded>),
            (Option<&F>, Option<&Lo>, Option<&Hi>, Option<&S>),
            (Option<&Z>, Option<&D>),
        )>()
        .map(|(e, ((a, b, c, p), (f, lo, hi, s), (z, d)))| {
            let mut m = MEnt {
                a: a.map(|a| a.0),
                b: b.map(|b| Bits(b.0)),
                c: c.map(|c| c.0),
                p: p.map(|p| (p.a, p.b, p.c)),
                f: f.map(|f| f.0),
                lo: lo.map(|v| Bits(v.0)),
                hi: hi.map(|v| Bits(v.0)),
                s: s.map(|s| Bits(s.0)),
                z: z.is_some(),
                d: d.is_some(),
                changed: 0,
                added: 0,
            };
            for k in Kind::ALL {
                with_kind!(k, T => {
                    if world.is_changed::<T>(e) {
                        m.changed |= k.bit();
                    }
                    if world.is_added::<T>(e) {
                        m.added |= k.bit();
                    }
                });
            }
            (e, m)
        })
        .collect()
}

/// Compares the world with the model: every live entity (given as `snapshot(world)`) and
/// every handle ever issued.
pub fn check(world: &World, snap: &[(Entity, MEnt)], model: &Model) -> Result<(), String> {
    ensure(
        world.len() == model.live.len() && snap.len() == model.live.len(),
        || {
            format!(
                "world has {} entities ({} visited), model {}",
                world.len(),
                snap.len(),
                model.live.len()
            )
        },
    )?;
    for &e in &model.known {
        ensure(world.is_alive(e) == model.live.contains_key(&e), || {
            format!("liveness of {e:?} differs")
        })?;
    }
    // The filters agree with `is_changed` / `is_added` (checked against the model below),
    // and their `len()` is exact.
    for k in Kind::ALL {
        let marked = |bits: fn(&MEnt) -> u16| -> Vec<Entity> {
            snap.iter()
                .filter(|(_, m)| bits(m) & k.bit() != 0)
                .map(|(e, _)| *e)
                .collect()
        };
        let (changed, added): (Vec<Entity>, Vec<Entity>) = with_kind!(k, T => {
            let q = world.query::<(Changed<T>,)>();
            let n = q.len();
            let c: Vec<Entity> = q.map(|(e, _)| e).collect();
            ensure(n == c.len(), || format!("Changed<{k:?}> len {n}, visits {}", c.len()))?;
            let a: Vec<Entity> = world
                .query_filtered::<(&T,), Added<T>>()
                .map(|(e, _)| e)
                .collect();
            (c, a)
        });
        ensure(changed == marked(|m| m.changed), || {
            format!("Changed<{k:?}> visits {changed:?}, is_changed says otherwise")
        })?;
        ensure(added == marked(|m| m.added), || {
            format!("Added<{k:?}> visits {added:?}, is_added says otherwise")
        })?;
    }
    for (e, got) in snap {
        let m = model
            .live
            .get(e)
            .ok_or_else(|| format!("world has {e:?}, model does not"))?;
        ensure(got == m, || format!("{e:?}: world {got:?} != model {m:?}"))?;
    }
    Ok(())
}

/// An initial entity: `C(0)` unless [`Initial::NO_C`], `A` and `B` if given, and the types
/// whose flag is set, with values made from `seed`.
#[derive(Clone, Copy, Debug)]
pub struct Initial {
    pub a: Option<u64>,
    pub b: Option<i16>,
    pub flags: u8,
    pub seed: u64,
}

impl Initial {
    pub const Z: u8 = 1;
    pub const D: u8 = 2;
    pub const F: u8 = 4;
    pub const LO: u8 = 8;
    pub const HI: u8 = 16;
    pub const S: u8 = 32;
    pub const P: u8 = 64;
    pub const NO_C: u8 = 128;

    /// The entity, marked added: setup spawns and inserts mark until the first Sync.
    fn ent(self) -> MEnt {
        let has = |flag: u8| self.flags & flag != 0;
        let x = self.seed;
        let mut m = MEnt {
            a: self.a,
            b: self.b.map(|b| Bits(f32::from(b))),
            c: (!has(Self::NO_C)).then_some(0),
            p: has(Self::P).then(|| pval(x >> 24)),
            f: has(Self::F).then_some(x as i64),
            lo: has(Self::LO).then(|| Bits(fval(x))),
            hi: has(Self::HI).then(|| Bits(fval(x >> 8))),
            s: has(Self::S).then(|| Bits(sval(x >> 16))),
            z: has(Self::Z),
            d: has(Self::D),
            ..MEnt::default()
        };
        m.mark_all_added();
        m
    }
}

/// Per frame: the world in iteration order, and the stats.
type Trace = Vec<(Vec<(Entity, MEnt)>, Counts)>;

/// Builds a world from `initial`, runs `frames` (per frame, per system, the batches) with
/// `systems` systems on `workers` workers, and checks the world and the stats against the
/// model after every frame, and for leaks at the end.
pub fn run_on(
    workers: usize,
    systems: usize,
    frames: &[Vec<Vec<Batch>>],
    initial: &[Initial],
) -> Result<Trace, String> {
    run_staged_on(workers, &vec![0; systems], 1, false, frames, initial)
}

/// Who sits at a place of the runtime (stage by stage, registration order within).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Who {
    /// User system `s`.
    System(usize),
    /// The probe of a stage past the first: it snapshots the world its stage's Run sees,
    /// so that the model can take that stage's iteration orders from it after the frame.
    Probe(usize),
}

/// [`run_on`] with `stages` stages: user system `s` runs in stage `stage_of[s]`. The model
/// applies each stage in turn, expanding a stage's batches against the world that stage's
/// Run saw (the world before the frame for the first stage; for a later one, a copy its
/// probe system took during its Run) and checking that world against the model first.
/// With one stage there is no probe, and this is the single-Sync model. With `requires`,
/// the world declares [`REQUIRES`] after the setup spawns, and the model follows.
pub fn run_staged_on(
    workers: usize,
    stage_of: &[usize],
    stages: usize,
    requires: bool,
    frames: &[Vec<Vec<Batch>>],
    initial: &[Initial],
) -> Result<Trace, String> {
    let systems = stage_of.len();
    assert!(stage_of.iter().all(|&k| k < stages));
    // Places: each stage's systems in registration order (user systems first, then its
    // probe, registered after them), stage after stage.
    let mut places: Vec<Who> = Vec::new();
    let mut ranges: Vec<Range<usize>> = Vec::new();
    for k in 0..stages {
        let start = places.len();
        places.extend((0..systems).filter(|&s| stage_of[s] == k).map(Who::System));
        if k > 0 {
            places.push(Who::Probe(k));
        }
        ranges.push(start..places.len());
    }
    let total = places.len();
    let place_of = |s: usize| places.iter().position(|&w| w == Who::System(s)).unwrap();

    let token = Arc::new(());
    let mut trace = Trace::new();
    {
        let mut world = World::new();
        register_all(&mut world);
        if stages > 1 {
            snapshotting_all(&mut world);
        }
        let mut model = Model {
            stages,
            ..Model::default()
        };
        for init in initial {
            let m = init.ent();
            let e = if m.c.is_some() {
                world.spawn((C(0),))
            } else {
                world.spawn(())
            };
            if let Some(a) = m.a {
                world.insert(e, A(a));
            }
            if let Some(b) = m.b {
                world.insert(e, B(b.0));
            }
            if let Some((a, b, c)) = m.p {
                world.insert(e, Padded { a, b, c });
            }
            if let Some(f) = m.f {
                world.insert(e, F(f));
            }
            if let Some(v) = m.lo {
                world.insert(e, Lo(v.0));
            }
            if let Some(v) = m.hi {
                world.insert(e, Hi(v.0));
            }
            if let Some(v) = m.s {
                world.insert(e, S(v.0));
            }
            if m.z {
                world.insert(e, Z);
            }
            if m.d {
                world.insert(e, D(token.clone()));
            }
            let expect = model.spawn(m);
            ensure(e == expect, || format!("spawned {e:?}, model {expect:?}"))?;
        }
        check(&world, &snapshot(&world), &model)?;
        if requires {
            declare_required(&mut world);
            model.requires = true;
        }

        model.res = world.resource::<R>().0;
        let plan: Arc<Mutex<Vec<Vec<RBatch>>>> = Arc::new(Mutex::new(vec![Vec::new(); systems]));
        let returned: Arc<Mutex<Vec<Vec<Entity>>>> =
            Arc::new(Mutex::new(vec![Vec::new(); systems]));
        let seen: Arc<Mutex<Vec<Option<Snapshot>>>> =
            Arc::new(Mutex::new((0..stages).map(|_| None).collect()));
        let mut rt = Runtime::builder()
            .workers(workers)
            .stages((0..stages).map(|k| format!("stage{k}")))
            .build(world);
        let stage_ids: Vec<StageId> = (0..stages)
            .map(|k| rt.stage_id(&format!("stage{k}")).unwrap())
            .collect();
        for s in 0..systems {
            let plan = plan.clone();
            let returned = returned.clone();
            let token = token.clone();
            rt.add_system_to(
                stage_ids[stage_of[s]],
                move |world: &World, out: &mut Output| {
                    let batches = plan.lock().unwrap()[s].clone();
                    let ids = run_batches(world, out, &batches, &token);
                    returned.lock().unwrap()[s] = ids;
                },
            );
        }
        for (k, &stage) in stage_ids.iter().enumerate().skip(1) {
            let seen = seen.clone();
            rt.add_system_named_to(
                stage,
                format!("probe{k}"),
                move |world: &World, _: &mut Output| {
                    seen.lock().unwrap()[k] = Some(world.snapshot().expect("every type snapshots"));
                },
            );
        }
        for (i, frame) in frames.iter().enumerate() {
            let at = |e: String| format!("frame {i}: {e}");
            let mut resolved: Vec<Vec<RBatch>> = vec![Vec::new(); systems];
            for (s, batches) in frame.iter().enumerate().take(systems) {
                resolved[s] = batches.iter().map(|b| model.resolve(b)).collect();
            }
            // The first stage's outputs, against the world before the frame.
            let mut emits: Vec<Vec<Emit>> = vec![Vec::new(); total];
            // A stage with no system has no Run and no Sync but takes its turn (forgets
            // its marks); only the first can be empty here (the later ones have probes).
            let skip_first = ranges[0].is_empty();
            if !skip_first {
                model.reserve(total, ranges[0].clone());
            }
            for p in ranges[0].clone() {
                if let Who::System(s) = places[p] {
                    for r in &resolved[s] {
                        model.expand(rt.world(), p, r, &mut emits[p]).map_err(at)?;
                    }
                }
            }
            *plan.lock().unwrap() = resolved.clone();
            rt.frame();
            let mut stage_counts = vec![if skip_first {
                model.skip_turn(0);
                Counts::default()
            } else {
                model.sync(&emits, ranges[0].clone(), 0)
            }];
            for (k, range) in ranges.iter().enumerate().skip(1) {
                let at = |e: String| format!("frame {i}, stage {k}: {e}");
                let copy = seen.lock().unwrap()[k]
                    .take()
                    .ok_or_else(|| at("the probe did not run".into()))?;
                let mut w = World::new();
                register_all(&mut w);
                snapshotting_all(&mut w);
                w.restore(&copy);
                drop(copy);
                // The stage's Run saw what the model says the stages before it left.
                check(&w, &snapshot(&w), &model).map_err(at)?;
                let mut stage_emits: Vec<Vec<Emit>> = vec![Vec::new(); total];
                model.reserve(total, range.clone());
                for p in range.clone() {
                    if let Who::System(s) = places[p] {
                        for r in &resolved[s] {
                            model.expand(&w, p, r, &mut stage_emits[p]).map_err(at)?;
                        }
                    }
                }
                drop(w);
                stage_counts.push(model.sync(&stage_emits, range.clone(), k));
                for p in range.clone() {
                    emits[p] = std::mem::take(&mut stage_emits[p]);
                }
            }
            // `Output::spawn` returned exactly the ids the model predicts.
            for s in 0..systems {
                let want = spawn_ids(&emits[place_of(s)]);
                let got = std::mem::take(&mut returned.lock().unwrap()[s]);
                ensure(got == want, || {
                    at(format!("system {s} spawned {got:?}, model {want:?}"))
                })?;
            }
            // The frame's figures: every stage's added up; per system by id (the probes,
            // registered last, emit nothing).
            let mut want = Counts {
                systems: vec![(0, 0); total],
                ..Counts::default()
            };
            for (k, c) in stage_counts.iter().enumerate() {
                want.merged += c.merged;
                want.dropped += c.dropped;
                want.spawned += c.spawned;
                want.despawned += c.despawned;
                for (s, _) in stage_of.iter().enumerate().filter(|&(_, &sk)| sk == k) {
                    want.systems[s] = c.systems[place_of(s)];
                }
            }
            let snap = snapshot(rt.world());
            check(rt.world(), &snap, &model).map_err(at)?;
            let res = rt.world().resource::<R>().0;
            ensure(res == model.res, || {
                at(format!("resource R is {res}, model {}", model.res))
            })?;
            let st = rt.stats();
            let got = Counts {
                merged: st.merged,
                dropped: st.dropped,
                spawned: st.spawned,
                despawned: st.despawned,
                systems: st.systems.iter().map(|s| (s.writes, s.commands)).collect(),
            };
            ensure(got == want, || {
                at(format!("stats {got:?} != model {want:?}"))
            })?;
            for (k, c) in stage_counts.iter().enumerate() {
                let g = &st.stages[k];
                let got = (g.merged, g.dropped, g.spawned, g.despawned);
                let want = (c.merged, c.dropped, c.spawned, c.despawned);
                ensure(got == want, || {
                    at(format!("stage {k} stats {got:?} != model {want:?}"))
                })?;
            }
            trace.push((snap, got));
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
    Ok(trace)
}

/// Opts every component type, and the written resource [`R`], into snapshots (for the
/// probes of [`run_staged_on`]).
fn snapshotting_all(world: &mut World) {
    world
        .snapshotting_resource::<R>()
        .snapshotting::<A>()
        .snapshotting::<B>()
        .snapshotting::<C>()
        .snapshotting::<Padded>()
        .snapshotting::<F>()
        .snapshotting::<Lo>()
        .snapshotting::<Hi>()
        .snapshotting::<S>()
        .snapshotting::<Z>()
        .snapshotting::<D>();
}

/// [`run_on`] at every worker count of [`WORKERS`]; the runs must also agree with each
/// other after every frame, iteration order included.
pub fn run_case(
    systems: usize,
    frames: &[Vec<Vec<Batch>>],
    initial: &[Initial],
) -> Result<(), String> {
    run_staged_case(&vec![0; systems], 1, false, frames, initial)
}

/// [`run_staged_on`] at every worker count of [`WORKERS`]; the runs must also agree with
/// each other after every frame, iteration order included.
pub fn run_staged_case(
    stage_of: &[usize],
    stages: usize,
    requires: bool,
    frames: &[Vec<Vec<Batch>>],
    initial: &[Initial],
) -> Result<(), String> {
    let mut first: Option<Trace> = None;
    for workers in WORKERS {
        let trace = run_staged_on(workers, stage_of, stages, requires, frames, initial)
            .map_err(|e| format!("{workers} workers: {e}"))?;
        match &first {
            None => first = Some(trace),
            Some(t) => {
                if let Some(i) = (0..t.len()).find(|&i| t[i] != trace[i]) {
                    return Err(format!(
                        "frame {i}: {} and {workers} workers disagree: {:?} vs {:?}",
                        WORKERS[0], t[i], trace[i]
                    ));
                }
            }
        }
    }
    Ok(())
}
