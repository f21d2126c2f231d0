//! The fixed-timestep driver behind [`Runtime::advance`](crate::Runtime::advance): an
//! accumulator of real time that turns into whole simulation frames.
//!
//! Time is kept in integer nanoseconds ([`Duration`]), so the same sequence of elapsed
//! times always runs the same frames: a replay that feeds the recorded frame times gets the
//! same simulation, bit for bit.

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
/// calls it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FixedStep {
    step: Duration,
    max_frames: u32,
    overstep: Duration,
}

impl FixedStep {
    pub(crate) fn new(dt: f32, max_frames: u32) -> Self {
        FixedStep {
            step: Duration::from_secs_f32(dt),
            max_frames,
            overstep: Duration::ZERO,
        }
    }

    /// Adds `elapsed` and returns how many frames are due now (at most the cap; the excess
    /// is dropped and reported). Call [`ran`](Self::ran) for each frame actually run.
    ///
    /// # Panics
    /// If the step is zero: a zero fixed step cannot be accumulated.
    #[track_caller]
    pub(crate) fn add(&mut self, elapsed: Duration) -> (u32, Duration) {
        assert!(
            !self.step.is_zero(),
            "runsync: Runtime::advance needs a positive fixed step; set one with \
             `Runtime::builder().dt(1.0 / 60.0)` (or drive frames yourself with `frame()`)"
        );
        self.overstep = self.overstep.saturating_add(elapsed);
        let due = self.overstep.as_nanos() / self.step.as_nanos();
        if due > u128::from(self.max_frames) {
            let keep = self.step * self.max_frames + self.remainder();
            let dropped = self.overstep - keep;
            self.overstep = keep;
            (self.max_frames, dropped)
        } else {
            (due as u32, Duration::ZERO)
        }
    }

    /// One frame of time has been simulated.
    pub(crate) fn ran(&mut self) {
        self.overstep = self.overstep.saturating_sub(self.step);
    }

    /// The time past the last whole step.
    fn remainder(&self) -> Duration {
        let r = self.overstep.as_nanos() % self.step.as_nanos();
        Duration::from_nanos(r as u64)
    }

    /// The overstep as a fraction of a step.
    pub(crate) fn alpha(&self) -> f32 {
        (self.remainder().as_secs_f64() / self.step.as_secs_f64()) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn accumulates_and_carries_the_overstep() {
        let mut c = FixedStep::new(0.010, 5);
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
        let mut c = FixedStep::new(0.010, 3);
        let (frames, dropped) = c.add(MS * 1005);
        assert_eq!(frames, 3);
        assert_eq!(dropped, MS * 970, "keeps 3 steps and the 5 ms remainder");
        for _ in 0..frames {
            c.ran();
        }
        assert!((c.alpha() - 0.5).abs() < 1e-6);
    }

    #[test]
    #[should_panic(expected = "needs a positive fixed step")]
    fn zero_step_is_a_clear_error() {
        FixedStep::new(0.0, 3).add(MS);
    }
}
