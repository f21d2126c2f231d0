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
//! | a closure | any | whatever it computes | one call per entity |
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
    /// output, `outputs[row]`: a merge for which one output simply becomes the value may
    /// swap the whole column with `outputs` (a pointer swap, no copy) and return `true`.
    /// The default returns `false` and Sync merges row by row. `outputs` (holding the old
    /// values after a swap) is cleared afterwards.
    fn replace_column(&self, column: &mut Vec<C>, outputs: &mut Vec<C::Output>) -> bool {
        let _ = (column, outputs);
        false
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

/// Swaps `outputs` in as the column (one output per row, each becoming the value).
#[inline]
fn swap_in<C>(column: &mut Vec<C>, outputs: &mut Vec<C>) -> bool {
    std::mem::swap(column, outputs);
    true
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

impl<C: Component<Output = C> + Clone> Merge<C> for Last {
    #[inline]
    fn merge(&self, value: &mut C, outputs: &[C]) {
        if let Some(v) = outputs.last() {
            value.clone_from(v);
        }
    }
    const ONE_AT_A_TIME: bool = true;
    const REPLACES_COLUMNS: bool = true;
    #[inline]
    fn replace_column(&self, column: &mut Vec<C>, outputs: &mut Vec<C>) -> bool {
        swap_in(column, outputs)
    }
}

impl<C: Component<Output = C> + Clone> Merge<C> for First {
    #[inline]
    fn merge(&self, value: &mut C, outputs: &[C]) {
        if let Some(v) = outputs.first() {
            value.clone_from(v);
        }
    }
    const REPLACES_COLUMNS: bool = true;
    #[inline]
    fn replace_column(&self, column: &mut Vec<C>, outputs: &mut Vec<C>) -> bool {
        swap_in(column, outputs)
    }
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
        if let Some(best) = pick(outputs, |a, b| a < b) {
            value.clone_from(best);
        }
    }
    const REPLACES_COLUMNS: bool = true;
    #[inline]
    fn replace_column(&self, column: &mut Vec<C>, outputs: &mut Vec<C>) -> bool {
        swap_in(column, outputs)
    }
}

impl<C: Component<Output = C> + PartialOrd + Clone> Merge<C> for Max {
    #[inline]
    fn merge(&self, value: &mut C, outputs: &[C]) {
        if let Some(best) = pick(outputs, |a, b| a > b) {
            value.clone_from(best);
        }
    }
    const REPLACES_COLUMNS: bool = true;
    #[inline]
    fn replace_column(&self, column: &mut Vec<C>, outputs: &mut Vec<C>) -> bool {
        swap_in(column, outputs)
    }
}

fn pick<C>(outputs: &[C], better: impl Fn(&C, &C) -> bool) -> Option<&C> {
    let (head, rest) = outputs.split_first()?;
    Some(
        rest.iter()
            .fold(head, |best, v| if better(v, best) { v } else { best }),
    )
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
    fn replace_column_swaps_for_replacing_merges() {
        let mut col = vec![I(1), I(2)];
        let mut outs = vec![I(7), I(8)];
        assert!(Merge::<I>::replace_column(&last, &mut col, &mut outs));
        assert_eq!((col[0], outs[0]), (I(7), I(1)));
        assert!(!Merge::<I>::replace_column(&sum, &mut col, &mut outs));
    }
}
