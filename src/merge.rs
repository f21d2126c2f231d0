//! Ready-made merge functions for [`World::register`](crate::World::register).
//!
//! A merge function folds all outputs that systems emitted for one component of one entity
//! in one frame, in a fixed order (system registration order, then emission order), into
//! the stored value. It is called once per (component type, entity) with outputs in a
//! frame, never with an empty slice.
//!
//! | merge | `Output` | result |
//! |---|---|---|
//! | [`last`] | `C` | the last emitted value (the latest-registered system wins) |
//! | [`first`] | `C` | the first emitted value |
//! | [`sum`] | any `D` with `C: AddAssign<D>` | the stored value plus every delta, in order |
//! | [`min`] / [`max`] | `C` | the smallest / largest emitted value (ties: the earliest) |
//!
//! `last`, `first`, `min` and `max` replace the stored value with one of the emitted
//! values; `sum` accumulates into it. Any closure `Fn(&mut C, &[C::Output])` works too.

use std::ops::AddAssign;

/// Replaces the value with the last output. Needs `Output = C`.
#[inline]
pub fn last<C: Clone>(value: &mut C, outputs: &[C]) {
    if let Some(v) = outputs.last() {
        value.clone_from(v);
    }
}

/// Replaces the value with the first output. Needs `Output = C`.
#[inline]
pub fn first<C: Clone>(value: &mut C, outputs: &[C]) {
    if let Some(v) = outputs.first() {
        value.clone_from(v);
    }
}

/// Adds every output to the value, in merge order (which matters for floats).
#[inline]
pub fn sum<C: AddAssign<D>, D: Clone>(value: &mut C, outputs: &[D]) {
    for d in outputs {
        *value += d.clone();
    }
}

/// Replaces the value with the smallest output (the earliest among equals; values that do
/// not compare, like NaN, never replace an earlier pick).
#[inline]
pub fn min<C: PartialOrd + Clone>(value: &mut C, outputs: &[C]) {
    if let Some(best) = pick(outputs, |a, b| a < b) {
        value.clone_from(best);
    }
}

/// Replaces the value with the largest output (the earliest among equals; values that do
/// not compare, like NaN, never replace an earlier pick).
#[inline]
pub fn max<C: PartialOrd + Clone>(value: &mut C, outputs: &[C]) {
    if let Some(best) = pick(outputs, |a, b| a > b) {
        value.clone_from(best);
    }
}

fn pick<C>(outputs: &[C], better: impl Fn(&C, &C) -> bool) -> Option<&C> {
    let (first, rest) = outputs.split_first()?;
    Some(
        rest.iter()
            .fold(first, |best, v| if better(v, best) { v } else { best }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges() {
        let mut v = 0;
        last(&mut v, &[1, 2, 3]);
        assert_eq!(v, 3);
        first(&mut v, &[7, 2]);
        assert_eq!(v, 7);
        sum(&mut v, &[1, -3]);
        assert_eq!(v, 5);
        min(&mut v, &[4, 9, 2, 8]);
        assert_eq!(v, 2);
        max(&mut v, &[4, 9, 2, 8]);
        assert_eq!(v, 9);
        let mut f = 1.0f32;
        max(&mut f, &[f32::NAN, 0.5, 3.0]);
        assert!(f.is_nan(), "first value kept when nothing compares greater");
        max(&mut f, &[0.5, f32::NAN, 3.0]);
        assert_eq!(f, 3.0);
    }
}
