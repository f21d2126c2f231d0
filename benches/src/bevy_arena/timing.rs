//! Per-system time in the bevy port, in runsync's two measures (`SystemStats::time` and
//! `SystemStats::work`; bevy_ecs 0.20 has no per-system timing of its own without its
//! `trace` feature and a tracing subscriber):
//!
//! - *wall*: the length of the system's body ([`SystemTimes::start`]'s guard). In bevy
//!   this includes whatever else the system's thread runs while it waits for its
//!   `par_iter` batches (the task pool hands it other systems' tasks), so beside
//!   concurrent systems it says little about the system itself;
//! - *work*: its serial part plus every `par_iter` batch's time, wherever it ran
//!   ([`Timed::parallel`] and [`SystemTimes::chunk`]): the time one thread would need.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bevy_ecs::resource::Resource;

/// The arena's systems, in runsync's registration order, by runsync's names (so the two
/// engines' rows line up by name).
pub const SYSTEM_NAMES: [&str; 11] = [
    "BuildGrid",
    "Spawner",
    "Steer",
    "Drag",
    "Separation",
    "Integrate",
    "PropagateTransforms",
    "Bounds",
    "Contact",
    "Expire",
    "Death",
];

/// Index of each system in [`SYSTEM_NAMES`].
pub(crate) mod id {
    pub(crate) const BUILD_GRID: usize = 0;
    pub(crate) const SPAWNER: usize = 1;
    pub(crate) const STEER: usize = 2;
    pub(crate) const DRAG: usize = 3;
    pub(crate) const SEPARATION: usize = 4;
    pub(crate) const INTEGRATE: usize = 5;
    pub(crate) const PROPAGATE: usize = 6;
    pub(crate) const BOUNDS: usize = 7;
    pub(crate) const CONTACT: usize = 8;
    pub(crate) const EXPIRE: usize = 9;
    pub(crate) const DEATH: usize = 10;
}

/// Nanoseconds each system spent in the running frame, wall and work (see the module
/// docs). A read-only resource to the systems (they add with relaxed atomics), so it
/// orders nothing in the schedule.
#[derive(Resource, Debug, Default)]
pub struct SystemTimes {
    wall: [AtomicU64; SYSTEM_NAMES.len()],
    work: [AtomicU64; SYSTEM_NAMES.len()],
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl SystemTimes {
    /// Starts timing system `id`'s body until the guard drops.
    #[inline]
    pub(crate) fn start(&self, id: usize) -> Timed<'_> {
        Timed {
            times: self,
            id,
            parallel: Cell::new(Duration::ZERO),
            start: Instant::now(),
        }
    }

    /// Times one batch of system `id`'s parallel loop until the guard drops (made by the
    /// loop's `for_each_init`, dropped at the end of the batch).
    #[inline]
    pub(crate) fn chunk(&self, id: usize) -> Chunk<'_> {
        Chunk {
            work: &self.work[id],
            start: Instant::now(),
        }
    }

    /// Each system's wall time and work since the last call, in [`SYSTEM_NAMES`] order;
    /// resets them.
    pub fn take(&self) -> [(Duration, Duration); SYSTEM_NAMES.len()] {
        let take = |a: &AtomicU64| Duration::from_nanos(a.swap(0, Ordering::Relaxed));
        std::array::from_fn(|i| (take(&self.wall[i]), take(&self.work[i])))
    }
}

/// A system's body being timed: its wall time, and as work the part of it spent outside
/// its parallel loops.
pub(crate) struct Timed<'a> {
    times: &'a SystemTimes,
    id: usize,
    /// Time spent in `parallel` calls (their batches count as work on their own).
    parallel: Cell<Duration>,
    start: Instant,
}

impl<'a> Timed<'a> {
    /// Where a batch of this system's parallel loops adds its time
    /// ([`SystemTimes::chunk`]'s arguments), for loops that make their own batches.
    #[inline]
    pub(crate) fn chunk_of(&self) -> (&'a SystemTimes, usize) {
        (self.times, self.id)
    }

    /// Runs the system's parallel loop `f`, whose batches time themselves
    /// ([`SystemTimes::chunk`]), leaving its wall time out of the serial work.
    #[inline]
    pub(crate) fn parallel<R>(&self, f: impl FnOnce() -> R) -> R {
        let start = Instant::now();
        let r = f();
        self.parallel.set(self.parallel.get() + start.elapsed());
        r
    }
}

impl Drop for Timed<'_> {
    fn drop(&mut self) {
        let wall = self.start.elapsed();
        let serial = wall.saturating_sub(self.parallel.get());
        self.times.wall[self.id].fetch_add(nanos(wall), Ordering::Relaxed);
        self.times.work[self.id].fetch_add(nanos(serial), Ordering::Relaxed);
    }
}

/// One batch of a parallel loop being timed.
pub(crate) struct Chunk<'a> {
    work: &'a AtomicU64,
    start: Instant,
}

impl Drop for Chunk<'_> {
    fn drop(&mut self) {
        self.work
            .fetch_add(nanos(self.start.elapsed()), Ordering::Relaxed);
    }
}
