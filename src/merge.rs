//! Merge functions: how the outputs of one frame fold into a component.
//!
//! A merge folds all outputs that systems emitted for one component of one entity in one
//! frame, in a fixed order (system registration order, then emission order), into the
//! stored value. It is called once per (component type, entity) with outputs in a frame,
//! never with an empty slice.
//!
//! [`World::register`](crate::World::register) takes anything that implements [`Merge`]:
//! the ready-made merges below, or any closure or `fn` with the signature
//! `Fn(&mut C, &[C::Output])` (write the closure's parameter types:
//! `|h: &mut Health, d: &[i32]| ..`).
//!
//! | merge | `Output` | result | Sync's path |
//! |---|---|---|---|
//! | [`last`] | `C` | the last emitted value (the latest-registered system wins) | one output per row: the column is swapped in whole; several systems: applied system by system |
//! | [`first`] | `C` | the first emitted value | one output per row: column swap |
//! | [`sum`] | any `D` with `C: AddAssign<D>` | the stored value plus every delta, in order | applied system by system, column-wise |
//! | [`min`] / [`max`] | `C` | the smallest / largest emitted value (ties: the earliest) | one output per row: column swap |
//! | [`max_by_key`] / [`min_by_key`] | `C` | the output with the largest / smallest key (ties: the earliest) — *one winner among contested claims* | one output per row: column swap |
//! | [`avg`] | `C` | the mean of the outputs (summed in merge order) | one call per entity |
//! | [`count`] | any | how many outputs arrived | one call per entity |
//! | [`any`] / [`all`] | `bool` | whether any / all outputs were `true` | one call per entity |
//! | a closure | any | whatever it computes | one call per entity |
//!
//! Every merge runs only for entities that received outputs this frame: a value nobody
//! wrote keeps what it had. For a per-frame flag or count, have a system also write the
//! neutral value (`false`, `0`) when there is nothing to report, or reset it in its own
//! system.
//!
//! # Contested claims: one winner across entities
//!
//! A per-entity merge sees the outputs *for one entity*, so it cannot stop three foxes
//! from each gaining energy off one rabbit. Turn it around: the foxes write *claims* to
//! the rabbit; the rabbit's merge keeps one deterministic winner ([`max_by_key`], ties
//! broken by system then emission order, or by a key that includes the claimant); next
//! frame, each fox reads the rabbit's claim and only the named winner gains.
//!
//! ```
//! use runsync::prelude::*;
//!
//! /// Who gets to eat this prey: the strongest claim of the frame.
//! #[derive(Clone, Copy, Debug, PartialEq)]
//! struct Claim { by: Option<Entity>, strength: u32 }
//! impl Component for Claim { type Output = Claim; }
//!
//! #[derive(Clone, Copy, Debug, PartialEq)]
//! struct Energy(u32);
//! impl Component for Energy { type Output = u32; }
//! impl std::ops::AddAssign<u32> for Energy { fn add_assign(&mut self, d: u32) { self.0 += d } }
//!
//! #[derive(Clone, Copy, Debug, PartialEq)]
//! struct Prey(Entity);
//! impl Component for Prey { type Output = Prey; }
//!
//! let mut world = World::new();
//! // Strongest claim wins; equal strength: the smaller entity index (a total order, so
//! // the winner never depends on who wrote first).
//! world.register::<Claim>(merge::max_by_key(|c: &Claim| {
//!     (c.strength, std::cmp::Reverse(c.by.map(|e| e.index())))
//! }));
//! world.register::<Energy>(merge::sum);
//! world.register::<Prey>(merge::last);
//! let rabbit = world.spawn((Claim { by: None, strength: 0 },));
//! let foxes: Vec<Entity> = (0..3u32)
//!     .map(|i| world.spawn((Energy(10), Prey(rabbit))))
//!     .collect();
//!
//! let mut rt = Runtime::builder().workers(2).build(world);
//! // Frame k: every fox bites (claims) its prey.
//! rt.add_system(|w: &World, out: &mut Output| {
//!     for (fox, (prey, energy)) in w.query::<(&Prey, &Energy)>() {
//!         out.write::<Claim>(prey.0, Claim { by: Some(fox), strength: energy.0 });
//!     }
//! });
//! // Frame k + 1: only the fox the prey names gains.
//! rt.add_system(|w: &World, out: &mut Output| {
//!     for (fox, (prey,)) in w.query::<(&Prey,)>() {
//!         if w.get::<Claim>(prey.0).and_then(|c| c.by) == Some(fox) {
//!             out.write::<Energy>(fox, 5);
//!         }
//!     }
//! });
//! rt.frame();
//! rt.frame();
//! let energies: Vec<u32> = foxes.iter().map(|&f| rt.world().get::<Energy>(f).unwrap().0).collect();
//! assert_eq!(energies.iter().filter(|&&e| e > 10).count(), 1, "exactly one fox ate");
//! assert_eq!(rt.world().get::<Claim>(rabbit).unwrap().by, Some(foxes[0]));
//! ```
//!
//! The kind of a merge is its *type*, so Sync picks its path at compile time: there is no
//! name matching and no dynamic call per entity. `last`, `first`, `sum`, `min` and `max`
//! are constants of the unit types [`Last`], [`First`], [`Sum`], [`Min`], [`Max`]; name
//! them by path (`merge::last`): a glob import (`use runsync::merge::*`) would turn
//! `let sum = ..` into a pattern match against the constant.

use std::ops::AddAssign;

use crate::component::Component;

/// A merge function for component type `C`: folds one frame's outputs for one entity into
/// the stored value.
///
/// Implemented by the ready-made merges of this module ([`last`], [`first`], [`sum`],
/// [`min`], [`max`]) and by every `Fn(&mut C, &[C::Output]) + Send + Sync + 'static`
/// closure or function. Implement it for your own type to give Sync more to work with
/// (the two provided items below).
///
/// # If a merge panics
///
/// A merge runs in place, on the stored value, and Sync keeps no copy of it: putting
/// the old value back would need `C: Clone` and a copy of every merged value, every
/// frame. So a panic (in the merge, or in user code it calls: an `AddAssign`, a
/// `PartialOrd`, a key function, a `Clone`, a `Drop`) fails the frame with
/// [`FrameError::MergePanicked`](crate::FrameError::MergePanicked), which names the type
/// and the entity (or resource) whose merge panicked, and leaves:
/// - that value as the panicking call left it: a merge that pushes each output into a
///   `Vec` and panics on the third leaves the first two pushed;
/// - each other value of the type merged with all of its outputs or none — or, for a
///   merge that is [`ONE_AT_A_TIME`](Self::ONE_AT_A_TIME), possibly with those of the
///   first systems only (Sync applies such merges system by system);
/// - every other type, resource and structural command of the frame applied as usual.
///
/// A merge that must not leave a half-done value can build the new value aside and
/// assign it last (`*value = new`), so that a panic leaves the old one.
///
/// ```
/// use runsync::prelude::*;
/// use runsync::merge::Merge;
///
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Score(u32);
/// impl Component for Score { type Output = u32; }
///
/// /// Adds points; adding them one at a time gives the same result.
/// struct AddPoints;
/// impl Merge<Score> for AddPoints {
///     fn merge(&self, s: &mut Score, points: &[u32]) {
///         s.0 += points.iter().sum::<u32>();
///     }
///     const ONE_AT_A_TIME: bool = true;
/// }
///
/// let mut world = World::new();
/// world.register::<Score>(AddPoints);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a merge for component `{C}`",
    label = "not a merge for `{C}`",
    note = "`merge::last`, `first`, `min` and `max` need `type Output = Self` and `Clone` \
            (`min`/`max` also `PartialOrd`); `merge::sum` needs `AddAssign<Output>` and \
            `Output: Clone`",
    note = "a closure works too; write its parameter types: \
            `|c: &mut {C}, outputs: &[<{C} as Component>::Output]| ..`"
)]
pub trait Merge<C: Component>: Send + Sync + 'static {
    /// Folds `outputs` (never empty; system order, then emission order) into `value`.
    fn merge(&self, value: &mut C, outputs: &[C::Output]);

    /// `true` if merging the outputs one at a time (`merge(v, &[a]); merge(v, &[b])`)
    /// always gives the same value, bit for bit, as merging them at once
    /// (`merge(v, &[a, b])`). Then Sync folds several systems' outputs for a type system by
    /// system, column-wise, without gathering each entity's outputs first. `last` and
    /// `sum` are; `first`, `min`, `max` and closures are not (the default, always correct).
    const ONE_AT_A_TIME: bool = false;

    /// `true` if [`replace_column`](Self::replace_column) swaps columns (set it when you
    /// implement that method). Sync then keeps whole-column outputs on one thread, where
    /// the swap costs nothing, instead of splitting their rows over the workers.
    const REPLACES_COLUMNS: bool = false;

    /// Called instead of per-entity merges when a column's every row has exactly one
    /// output: a merge for which one output simply becomes the value may
    /// [`swap`](ColumnOutputs::swap) the whole column with its outputs (a pointer swap, no
    /// copy), or write the rows itself, and return `true`. The default returns `false` and
    /// Sync merges row by row. The outputs (the old values after a swap) are dropped
    /// afterwards.
    ///
    /// The column is handed over as a [`ColumnOutputs`], which lets a merge read, write
    /// and swap the values but never change how many there are: a table keeps one value
    /// per row whatever this method does or however it panics, so no safe implementation
    /// can break the query engine's unchecked row access.
    fn replace_column(&self, column: ColumnOutputs<'_, C>) -> bool {
        let _ = column;
        false
    }
}

/// One column of a component type and the outputs for it, one per row (`outputs[row]`
/// for `values[row]`), as [`Merge::replace_column`] gets them: both may be read and
/// written row by row, and swapped whole, but neither can grow or shrink — the column
/// belongs to a table whose every column has a value per row.
///
/// ```
/// use runsync::merge::{ColumnOutputs, Merge};
/// use runsync::prelude::*;
///
/// #[derive(Clone, Copy)]
/// struct Heat(f32);
/// impl Component for Heat { type Output = Heat; }
///
/// /// The hottest output wins; alone, an output simply becomes the value.
/// struct Hottest;
/// impl Merge<Heat> for Hottest {
///     fn merge(&self, v: &mut Heat, outs: &[Heat]) {
///         *v = outs.iter().copied().fold(outs[0], |a, b| if b.0 > a.0 { b } else { a });
///     }
///     const REPLACES_COLUMNS: bool = true;
///     fn replace_column(&self, mut column: ColumnOutputs<'_, Heat>) -> bool {
///         column.swap();
///         true
///     }
/// }
/// World::new().register::<Heat>(Hottest);
/// ```
///
/// Nothing a merge does can change a length (the rows are slices):
///
/// ```compile_fail
/// # use runsync::merge::{ColumnOutputs, Merge};
/// # use runsync::prelude::*;
/// # struct Heat(f32);
/// # impl Component for Heat { type Output = Heat; }
/// struct Clear;
/// impl Merge<Heat> for Clear {
///     fn merge(&self, _: &mut Heat, _: &[Heat]) {}
///     fn replace_column(&self, mut column: ColumnOutputs<'_, Heat>) -> bool {
///         column.rows().0.clear(); // error: no `clear` on `&mut [Heat]`
///         true
///     }
/// }
/// ```
pub struct ColumnOutputs<'a, C: Component> {
    values: &'a mut Vec<C>,
    outputs: &'a mut Vec<C::Output>,
}

impl<'a, C: Component> ColumnOutputs<'a, C> {
    /// The pair; `values.len() == outputs.len()`, checked by the caller (Sync).
    #[inline]
    pub(crate) fn new(values: &'a mut Vec<C>, outputs: &'a mut Vec<C::Output>) -> Self {
        debug_assert_eq!(values.len(), outputs.len());
        ColumnOutputs { values, outputs }
    }

    /// The number of rows (of values, and of outputs).
    #[inline]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the column has no rows (never, when Sync calls `replace_column`).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The stored values, by row, and the outputs for them, by row.
    #[inline]
    pub fn rows(&mut self) -> (&mut [C], &mut [C::Output]) {
        (self.values, self.outputs)
    }
}

impl<C: Component<Output = C>> ColumnOutputs<'_, C> {
    /// Makes every row's output its value, by swapping the two vectors (no copy, O(1));
    /// the outputs then hold the old values, which Sync drops.
    #[inline]
    pub fn swap(&mut self) {
        std::mem::swap(self.values, self.outputs);
    }
}

impl<C: Component, F> Merge<C> for F
where
    F: Fn(&mut C, &[C::Output]) + Send + Sync + 'static,
{
    #[inline]
    fn merge(&self, value: &mut C, outputs: &[C::Output]) {
        self(value, outputs)
    }
}

/// The [`Merge`] items of a merge for which one output becomes the value: with one output
/// per row, Sync swaps `outputs` in as the whole column.
macro_rules! replaces_columns {
    () => {
        const REPLACES_COLUMNS: bool = true;
        #[inline]
        fn replace_column(&self, mut column: ColumnOutputs<'_, C>) -> bool {
            column.swap();
            true
        }
    };
}

/// The [`last`] merge: the last output replaces the value. Needs `Output = C`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Last;

/// The [`first`] merge: the first output replaces the value. Needs `Output = C`.
#[derive(Clone, Copy, Debug, Default)]
pub struct First;

/// The [`sum`] merge: every output is added to the value, in merge order.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sum;

/// The [`min`] merge: the smallest output replaces the value. Needs `Output = C`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Min;

/// The [`max`] merge: the largest output replaces the value. Needs `Output = C`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Max;

/// Replaces the value with the last output (the latest-registered system wins). Needs
/// `Output = C` and `C: Clone`.
///
/// ```
/// # use runsync::prelude::*;
/// # #[derive(Clone, Copy, Debug, PartialEq)] struct Pos(f32);
/// # impl Component for Pos { type Output = Pos; }
/// let mut world = World::new();
/// world.register::<Pos>(merge::last);
/// ```
#[allow(non_upper_case_globals)]
pub const last: Last = Last;

/// Replaces the value with the first output. Needs `Output = C` and `C: Clone`.
#[allow(non_upper_case_globals)]
pub const first: First = First;

/// Adds every output to the value, in merge order (which matters for floats). Needs
/// `C: AddAssign<C::Output>` and `C::Output: Clone`.
///
/// ```
/// # use runsync::prelude::*;
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Gold(u32);
/// impl Component for Gold { type Output = u32; }
/// impl std::ops::AddAssign<u32> for Gold { fn add_assign(&mut self, d: u32) { self.0 += d } }
/// let mut world = World::new();
/// world.register::<Gold>(merge::sum);
/// ```
#[allow(non_upper_case_globals)]
pub const sum: Sum = Sum;

/// Replaces the value with the smallest output (the earliest among equals; values that do
/// not compare, like NaN, never replace an earlier pick). Needs `Output = C`,
/// `C: PartialOrd + Clone`.
#[allow(non_upper_case_globals)]
pub const min: Min = Min;

/// Replaces the value with the largest output (the earliest among equals; values that do
/// not compare, like NaN, never replace an earlier pick). Needs `Output = C`,
/// `C: PartialOrd + Clone`.
#[allow(non_upper_case_globals)]
pub const max: Max = Max;

/// The [`max_by_key`] merge. Needs `Output = C`.
#[derive(Clone, Copy, Debug)]
pub struct MaxByKey<F>(F);

/// The [`min_by_key`] merge. Needs `Output = C`.
#[derive(Clone, Copy, Debug)]
pub struct MinByKey<F>(F);

/// The [`avg`] merge: the value becomes the mean of the outputs. Needs `Output = C`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Avg;

/// The [`count`] merge: the value becomes the number of outputs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Count;

/// The [`any`] merge: the value becomes whether any output is `true`.
#[derive(Clone, Copy, Debug, Default)]
pub struct AnyTrue;

/// The [`all`] merge: the value becomes whether every output is `true`.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllTrue;

/// Replaces the value with the output whose `key` is largest (the earliest among equal
/// keys, in system then emission order; keys that do not compare, like NaN, never replace
/// an earlier pick). Needs `Output = C` and `C: Clone`. The tool for *contested claims*:
/// see the [module docs](self#contested-claims-one-winner-across-entities).
///
/// ```
/// # use runsync::prelude::*;
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Target { id: u32, priority: f32 }
/// impl Component for Target { type Output = Target; }
/// let mut world = World::new();
/// world.register::<Target>(merge::max_by_key(|t: &Target| t.priority));
/// ```
pub fn max_by_key<O, K: PartialOrd, F: Fn(&O) -> K>(key: F) -> MaxByKey<F> {
    MaxByKey(key)
}

/// Replaces the value with the output whose `key` is smallest (the earliest among equal
/// keys; keys that do not compare never replace an earlier pick). Needs `Output = C` and
/// `C: Clone`.
pub fn min_by_key<O, K: PartialOrd, F: Fn(&O) -> K>(key: F) -> MinByKey<F> {
    MinByKey(key)
}

/// Replaces the value with the mean of the outputs: their sum, added in merge order
/// starting from the first output, divided by their count. Needs `Output = C` and
/// `C: Clone + Add<Output = C> + Div<f32, Output = C>` (glam vectors, or your own float
/// newtypes).
#[allow(non_upper_case_globals)]
pub const avg: Avg = Avg;

/// Replaces the value with the number of outputs that arrived this frame. Needs
/// `C: From<u32>`; the outputs may be of any type (e.g. `()` hits).
#[allow(non_upper_case_globals)]
pub const count: Count = Count;

/// Replaces the value with whether any output was `true`. Needs `Output = bool` and
/// `C: From<bool>`.
#[allow(non_upper_case_globals)]
pub const any: AnyTrue = AnyTrue;

/// Replaces the value with whether every output was `true`. Needs `Output = bool` and
/// `C: From<bool>`.
#[allow(non_upper_case_globals)]
pub const all: AllTrue = AllTrue;

impl<C, K, F> Merge<C> for MaxByKey<F>
where
    C: Component<Output = C> + Clone,
    K: PartialOrd,
    F: Fn(&C) -> K + Send + Sync + 'static,
{
    #[inline]
    fn merge(&self, value: &mut C, outputs: &[C]) {
        if let Some(best) = pick_by_key(outputs, &self.0, |a, b| a > b) {
            value.clone_from(best);
        }
    }
    replaces_columns!();
}

impl<C, K, F> Merge<C> for MinByKey<F>
where
    C: Component<Output = C> + Clone,
    K: PartialOrd,
    F: Fn(&C) -> K + Send + Sync + 'static,
{
    #[inline]
    fn merge(&self, value: &mut C, outputs: &[C]) {
        if let Some(best) = pick_by_key(outputs, &self.0, |a, b| a < b) {
            value.clone_from(best);
        }
    }
    replaces_columns!();
}

impl<C> Merge<C> for Avg
where
    C: Component<Output = C> + Clone + std::ops::Add<Output = C> + std::ops::Div<f32, Output = C>,
{
    #[inline]
    fn merge(&self, value: &mut C, outputs: &[C]) {
        if let Some((head, rest)) = outputs.split_first() {
            let total = rest.iter().fold(head.clone(), |acc, o| acc + o.clone());
            *value = total / outputs.len() as f32;
        }
    }
}

impl<C: Component + From<u32>> Merge<C> for Count {
    #[inline]
    fn merge(&self, value: &mut C, outputs: &[C::Output]) {
        *value = C::from(outputs.len() as u32);
    }
}

impl<C: Component<Output = bool> + From<bool>> Merge<C> for AnyTrue {
    #[inline]
    fn merge(&self, value: &mut C, outputs: &[bool]) {
        *value = C::from(outputs.iter().any(|&b| b));
    }
}

impl<C: Component<Output = bool> + From<bool>> Merge<C> for AllTrue {
    #[inline]
    fn merge(&self, value: &mut C, outputs: &[bool]) {
        *value = C::from(outputs.iter().all(|&b| b));
    }
}

/// The output with the best key (the earliest among equals); `min`/`max` use the output
/// itself as the key.
fn pick_by_key<'a, O, K: PartialOrd>(
    outputs: &'a [O],
    key: impl Fn(&'a O) -> K,
    better: impl Fn(&K, &K) -> bool,
) -> Option<&'a O> {
    let (head, rest) = outputs.split_first()?;
    let mut best = (head, key(head));
    for o in rest {
        let k = key(o);
        if better(&k, &best.1) {
            best = (o, k);
        }
    }
    Some(best.0)
}

impl<C: Component<Output = C> + Clone> Merge<C> for Last {
    #[inline]
    fn merge(&self, value: &mut C, outputs: &[C]) {
        if let Some(v) = outputs.last() {
            value.clone_from(v);
        }
    }
    const ONE_AT_A_TIME: bool = true;
    replaces_columns!();
}

impl<C: Component<Output = C> + Clone> Merge<C> for First {
    #[inline]
    fn merge(&self, value: &mut C, outputs: &[C]) {
        if let Some(v) = outputs.first() {
            value.clone_from(v);
        }
    }
    replaces_columns!();
}

impl<C> Merge<C> for Sum
where
    C: Component + AddAssign<C::Output>,
    C::Output: Clone,
{
    #[inline]
    fn merge(&self, value: &mut C, outputs: &[C::Output]) {
        for d in outputs {
            *value += d.clone();
        }
    }
    const ONE_AT_A_TIME: bool = true;
}

impl<C: Component<Output = C> + PartialOrd + Clone> Merge<C> for Min {
    #[inline]
    fn merge(&self, value: &mut C, outputs: &[C]) {
        if let Some(best) = pick_by_key(outputs, |o| o, |a, b| a < b) {
            value.clone_from(best);
        }
    }
    replaces_columns!();
}

impl<C: Component<Output = C> + PartialOrd + Clone> Merge<C> for Max {
    #[inline]
    fn merge(&self, value: &mut C, outputs: &[C]) {
        if let Some(best) = pick_by_key(outputs, |o| o, |a, b| a > b) {
            value.clone_from(best);
        }
    }
    replaces_columns!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
    struct I(i32);
    impl Component for I {
        type Output = I;
    }
    impl AddAssign<I> for I {
        fn add_assign(&mut self, d: I) {
            self.0 += d.0;
        }
    }
    #[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
    struct F(f32);
    impl Component for F {
        type Output = F;
    }

    fn run<M: Merge<I>>(m: &M, v: i32, outs: &[i32]) -> i32 {
        let mut x = I(v);
        let outs: Vec<I> = outs.iter().map(|&o| I(o)).collect();
        m.merge(&mut x, &outs);
        x.0
    }

    #[test]
    fn merges() {
        assert_eq!(run(&last, 0, &[1, 2, 3]), 3);
        assert_eq!(run(&first, 3, &[7, 2]), 7);
        assert_eq!(run(&sum, 7, &[1, -3]), 5);
        assert_eq!(run(&min, 5, &[4, 9, 2, 8]), 2);
        assert_eq!(run(&max, 2, &[4, 9, 2, 8]), 9);
        assert_eq!(
            run(&|i: &mut I, o: &[I]| i.0 = o.len() as i32, 0, &[5, 5]),
            2
        );
        let mut f = F(1.0);
        max.merge(&mut f, &[F(f32::NAN), F(0.5), F(3.0)]);
        assert!(
            f.0.is_nan(),
            "first value kept when nothing compares greater"
        );
        max.merge(&mut f, &[F(0.5), F(f32::NAN), F(3.0)]);
        assert_eq!(f, F(3.0));
    }

    /// The `ONE_AT_A_TIME` claims hold: merging outputs one by one equals merging at once.
    #[test]
    fn one_at_a_time_claims_hold() {
        fn check<M: Merge<I>>(m: M) {
            let outs = [4, -9, 2, 8, 2];
            let mut one = 10;
            for &o in &outs {
                one = run(&m, one, &[o]);
            }
            assert_eq!(one, run(&m, 10, &outs));
        }
        check(last);
        check(sum);
        const {
            assert!(<Last as Merge<I>>::ONE_AT_A_TIME && <Sum as Merge<I>>::ONE_AT_A_TIME);
            assert!(!<First as Merge<I>>::ONE_AT_A_TIME && !<Max as Merge<I>>::ONE_AT_A_TIME);
        }
    }

    #[test]
    fn combinators() {
        #[derive(Clone, Copy, Debug, PartialEq)]
        struct P(f32, u32);
        impl Component for P {
            type Output = P;
        }
        let mut v = P(0.0, 0);
        let outs = [P(1.0, 1), P(3.0, 2), P(3.0, 3), P(-1.0, 4), P(f32::NAN, 5)];
        max_by_key(|p: &P| p.0).merge(&mut v, &outs);
        assert_eq!(
            v,
            P(3.0, 2),
            "largest key, earliest among equals, NaN never wins"
        );
        min_by_key(|p: &P| p.0).merge(&mut v, &outs);
        assert_eq!(v, P(-1.0, 4));

        #[derive(Clone, Copy, Debug, PartialEq)]
        struct A(f32);
        impl Component for A {
            type Output = A;
        }
        impl std::ops::Add for A {
            type Output = A;
            fn add(self, o: A) -> A {
                A(self.0 + o.0)
            }
        }
        impl std::ops::Div<f32> for A {
            type Output = A;
            fn div(self, d: f32) -> A {
                A(self.0 / d)
            }
        }
        let mut a = A(100.0);
        avg.merge(&mut a, &[A(1.0), A(2.0), A(6.0)]);
        assert_eq!(a, A(3.0));

        #[derive(Debug, PartialEq)]
        struct Hits(u32);
        impl Component for Hits {
            type Output = ();
        }
        impl From<u32> for Hits {
            fn from(n: u32) -> Self {
                Hits(n)
            }
        }
        let mut h = Hits(9);
        count.merge(&mut h, &[(), (), ()]);
        assert_eq!(h, Hits(3));

        #[derive(Debug, PartialEq)]
        struct Flag(bool);
        impl Component for Flag {
            type Output = bool;
        }
        impl From<bool> for Flag {
            fn from(b: bool) -> Self {
                Flag(b)
            }
        }
        let mut f = Flag(false);
        any.merge(&mut f, &[false, true, false]);
        assert_eq!(f, Flag(true));
        all.merge(&mut f, &[true, false]);
        assert_eq!(f, Flag(false));
        all.merge(&mut f, &[true, true]);
        assert_eq!(f, Flag(true));
    }

    #[test]
    fn replace_column_swaps_for_replacing_merges() {
        let mut col = vec![I(1), I(2)];
        let mut outs = vec![I(7), I(8)];
        assert!(Merge::<I>::replace_column(
            &last,
            ColumnOutputs::new(&mut col, &mut outs)
        ));
        assert_eq!((col[0], outs[0]), (I(7), I(1)));
        assert!(!Merge::<I>::replace_column(
            &sum,
            ColumnOutputs::new(&mut col, &mut outs)
        ));
        assert_eq!((col.len(), outs.len()), (2, 2));
    }
}
