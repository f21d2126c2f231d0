//! The clock the pool times jobs with ([`Cost`](crate::Cost)), and runsync its systems.
//!
//! Every system's time is taken on its worker (one read per system: a worker's systems
//! chain, see runsync's `run.rs`), so with thousands of small systems the clock is a visible part of
//! the frame: the CPU's time-stamp counter through [`quanta`] reads in about half the
//! time of `Instant::now` (a vDSO `clock_gettime`). `quanta` calibrates the counter
//! against the monotonic clock once per process and falls back to that clock where the
//! counter is not invariant. Under Miri (which runs no `rdtsc` or `cpuid`) ticks are
//! nanoseconds of [`Instant`](std::time::Instant).

use std::sync::OnceLock;
use std::time::Duration;
#[cfg(miri)]
use std::time::Instant;

/// A point in time, in the clock's own ticks (compare and subtract only through
/// [`Clock`]).
pub type Tick = u64;

/// The process's system clock; see the module docs.
pub struct Clock {
    #[cfg(not(miri))]
    counter: quanta::Clock,
    #[cfg(miri)]
    epoch: Instant,
}

impl Clock {
    /// The clock (calibrated on first use).
    pub fn get() -> &'static Clock {
        static CLOCK: OnceLock<Clock> = OnceLock::new();
        CLOCK.get_or_init(|| Clock {
            #[cfg(not(miri))]
            counter: quanta::Clock::new(),
            #[cfg(miri)]
            epoch: Instant::now(),
        })
    }

    /// Now.
    #[inline]
    pub fn now(&self) -> Tick {
        #[cfg(not(miri))]
        return self.counter.raw();
        #[cfg(miri)]
        return self.epoch.elapsed().as_nanos() as Tick;
    }

    /// `ticks` of this clock as a duration.
    #[inline]
    pub fn ticks(&self, ticks: Tick) -> Duration {
        self.between(0, ticks)
    }

    /// The time from `start` to `end`; zero if `end` is not later.
    #[inline]
    pub fn between(&self, start: Tick, end: Tick) -> Duration {
        #[cfg(not(miri))]
        return self.counter.delta(start, end);
        #[cfg(miri)]
        return Duration::from_nanos(end.saturating_sub(start));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_sleep_and_never_goes_negative() {
        let clock = Clock::get();
        let start = clock.now();
        std::thread::sleep(Duration::from_millis(20));
        let end = clock.now();
        let took = clock.between(start, end);
        assert!(took >= Duration::from_millis(15), "{took:?}");
        assert!(took < Duration::from_secs(5), "{took:?}");
        assert_eq!(clock.between(end, start), Duration::ZERO);
    }
}
