//! The fixed-timestep driver behind [`Runtime::advance`](crate::Runtime::advance): an
//! accumulator of real time that turns into whole simulation frames.
//!
//! Time is kept in integers (units of `1/hz` ns for a rate, nanoseconds for a step in
//! seconds; see [`FixedStep`]), so the same sequence of elapsed times always runs the same
//! frames: a replay that feeds the recorded frame times gets the same simulation, bit for
//! bit. A rate is exact: `N/hz` seconds pay for `N` frames, never one less.

use std::time::Duration;

/// What one [`Runtime::advance`](crate::Runtime::advance) did.
#[derive(Clone, Copy, Debug, PartialEq)]
#[must_use = "render with `alpha` to interpolate between the last two frames"]
pub struct Advance {
    /// Frames run by this call (0 when less than one step of time has built up).
    pub frames: u32,
    /// How far real time is past the last frame, as a fraction of a step, in `[0, 1)`:
    /// render `lerp(previous, current, alpha)` for smooth motion between fixed steps.
    pub alpha: f32,
    /// Time dropped because catching up would have needed more than the catch-up cap of
    /// frames (the game runs slower than real time instead of spiralling); zero normally.
    pub dropped: Duration,
}

/// The accumulator: real time not yet simulated (the *overstep*, as bevy's `Time<Fixed>`
/// calls it), in exact integer units.
///
/// A step given as a rate ([`from_hz`](Self::from_hz)) is `1/hz` s, which is rarely a
/// whole number of nanoseconds, so time is counted in units of `1/hz` ns: one step is
/// exactly 10⁹ units and a nanosecond `hz` units. A step given in seconds
/// ([`from_dt`](Self::from_dt)) is rounded to the nanosecond once and counted in
/// nanoseconds (one unit per ns, where the rules below change nothing).
///
/// Elapsed times arrive in whole nanoseconds, rounded from the real time they measure, so
/// two rules keep a rate exact:
/// - *snap*: an elapsed time less than 1 ns from a whole number of steps counts as
///   exactly that many steps (`Duration::from_secs(1) / 60` is one 60 Hz step, not
///   0.67 ns less);
/// - *slack*: a step is due once less than 1 ns of it is missing (`credit` holds the
///   overstep plus `per_ns - 1` units); what was missing is taken from the next step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FixedStep {
    /// Units per nanosecond: `hz` for a rate, 1 for a step in seconds.
    per_ns: u128,
    /// One step, in units.
    step: u128,
    max_frames: u32,
    /// The overstep plus the slack (`per_ns - 1`), in units.
    credit: u128,
}

const NANOS_PER_SEC: u128 = 1_000_000_000;

impl FixedStep {
    /// A step of `dt` seconds, rounded to the nanosecond.
    pub(crate) fn from_dt(dt: f32, max_frames: u32) -> Self {
        FixedStep {
            per_ns: 1,
            step: Duration::from_secs_f32(dt).as_nanos(),
            max_frames,
            credit: 0,
        }
    }

    /// A step of exactly `1 / hz` seconds.
    pub(crate) fn from_hz(hz: u32, max_frames: u32) -> Self {
        let per_ns = u128::from(hz);
        FixedStep {
            per_ns,
            step: NANOS_PER_SEC,
            max_frames,
            credit: per_ns.saturating_sub(1),
        }
    }

    /// The slack: one unit less than a nanosecond.
    fn slack(&self) -> u128 {
        self.per_ns - 1
    }

    /// Adds `elapsed` and returns how many frames are due now (at most the cap; the excess
    /// is dropped and reported). Call [`ran`](Self::ran) for each frame actually run.
    ///
    /// # Panics
    /// If the step is zero: a zero fixed step cannot be accumulated.
    #[track_caller]
    pub(crate) fn add(&mut self, elapsed: Duration) -> (u32, Duration) {
        assert!(
            self.step != 0,
            "runsync: Runtime::advance needs a positive fixed step; set one with \
             `Runtime::builder().fixed_hz(60)` (or drive frames yourself with `frame()`)"
        );
        let mut units = elapsed.as_nanos().saturating_mul(self.per_ns);
        let steps = units / self.step + u128::from(units % self.step >= self.step / 2);
        let whole = steps.saturating_mul(self.step);
        if units.abs_diff(whole) < self.per_ns {
            units = whole;
        }
        self.credit = self.credit.saturating_add(units);
        let due = self.credit / self.step;
        if due > u128::from(self.max_frames) {
            let keep = self.step * u128::from(self.max_frames) + self.credit % self.step;
            let dropped = self.credit - keep;
            self.credit = keep;
            (self.max_frames, nanos(dropped / self.per_ns))
        } else {
            (due as u32, Duration::ZERO)
        }
    }

    /// One frame of time has been simulated.
    pub(crate) fn ran(&mut self) {
        self.credit = self.credit.saturating_sub(self.step);
    }

    /// The overstep past the last whole step as a fraction of a step (0 while a step was
    /// paid with less than 1 ns missing).
    pub(crate) fn alpha(&self) -> f32 {
        let past = (self.credit % self.step).saturating_sub(self.slack());
        (past as f64 / self.step as f64) as f32
    }
}

/// `n` nanoseconds as a `Duration` (saturating).
fn nanos(n: u128) -> Duration {
    let secs = u64::try_from(n / NANOS_PER_SEC).unwrap_or(u64::MAX);
    Duration::new(secs, (n % NANOS_PER_SEC) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn accumulates_and_carries_the_overstep() {
        let mut c = FixedStep::from_dt(0.010, 5);
        assert_eq!(c.add(MS * 25), (2, Duration::ZERO));
        c.ran();
        c.ran();
        assert!((c.alpha() - 0.5).abs() < 1e-6);
        assert_eq!(c.add(MS * 6), (1, Duration::ZERO)); // 5 + 6 = 11 ms
        c.ran();
        assert!((c.alpha() - 0.1).abs() < 1e-4);
        assert_eq!(c.add(MS), (0, Duration::ZERO));
    }

    #[test]
    fn caps_catch_up_and_reports_the_dropped_time() {
        let mut c = FixedStep::from_dt(0.010, 3);
        let (frames, dropped) = c.add(MS * 1005);
        assert_eq!(frames, 3);
        assert_eq!(dropped, MS * 970, "keeps 3 steps and the 5 ms remainder");
        for _ in 0..frames {
            c.ran();
        }
        assert!((c.alpha() - 0.5).abs() < 1e-6);
    }

    /// `n` calls of `d` at `hz`: the frames they pay for, and the last alpha.
    fn feed(hz: u32, d: Duration, n: u32) -> (u32, f32) {
        let mut c = FixedStep::from_hz(hz, u32::MAX);
        let mut frames = 0;
        for _ in 0..n {
            let (due, dropped) = c.add(d);
            assert_eq!(dropped, Duration::ZERO);
            for _ in 0..due {
                c.ran();
            }
            frames += due;
        }
        (frames, c.alpha())
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "arithmetic only, no unsafe code: 2.7 minutes of CI's Miri step"
    )]
    fn a_rate_pays_exactly_n_frames_for_n_steps() {
        let sec = Duration::from_secs(1);
        // Whole steps rounded to the nanosecond either way, added up: no drift.
        assert_eq!(feed(60, sec / 60, 600), (600, 0.0));
        assert_eq!(
            feed(60, sec / 60 + Duration::from_nanos(1), 6000),
            (6000, 0.0)
        );
        assert_eq!(
            feed(60, Duration::from_secs_f64(1.0 / 60.0), 60_000),
            (60_000, 0.0)
        );
        assert_eq!(feed(60, sec / 30, 1), (2, 0.0));
        assert_eq!(feed(144, sec / 144, 1440), (1440, 0.0));
        // N/hz s in one call, rounded down or up: N frames, for every N.
        for hz in [30, 60, 120, 144, 1000] {
            for n in 0..=400u64 {
                let floor = 1_000_000_000 * n / u64::from(hz);
                for ns in [floor, floor + 1] {
                    let (frames, _) = feed(hz, Duration::from_nanos(ns), 1);
                    assert_eq!(frames as u64, n, "{hz} Hz, {ns} ns");
                }
            }
        }
        // Cut anyhow: 10 ms + 23,333,333 ns is 2/60 s rounded down (the slack).
        let mut c = FixedStep::from_hz(60, 5);
        assert_eq!(c.add(MS * 10).0, 0);
        assert_eq!(c.add(Duration::from_nanos(23_333_333)).0, 2);
        c.ran();
        c.ran();
        assert_eq!(c.alpha(), 0.0);
        // ... and the third frame still needs its whole step.
        assert_eq!(c.add(Duration::from_nanos(16_666_666)).0, 1);
        // Half a step is half a step.
        let mut c = FixedStep::from_hz(60, 5);
        assert_eq!(c.add(Duration::from_micros(8_333)).0, 0);
        assert!((c.alpha() - 0.49998).abs() < 1e-5, "{}", c.alpha());
    }

    #[test]
    fn a_rate_caps_catch_up_in_nanoseconds() {
        let mut c = FixedStep::from_hz(60, 3);
        let (frames, dropped) = c.add(Duration::from_secs(1));
        assert_eq!(frames, 3);
        // 60 steps in, 3 kept: 57 steps of 1/60 s dropped, 950 ms exactly.
        assert_eq!(dropped, MS * 950);
        for _ in 0..frames {
            c.ran();
        }
        assert_eq!(c.alpha(), 0.0);
    }

    #[test]
    #[should_panic(expected = "needs a positive fixed step")]
    fn zero_step_is_a_clear_error() {
        FixedStep::from_dt(0.0, 3).add(MS);
    }
}
