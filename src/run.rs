//! The Run phase: every enabled system of a stage at once, on the pool, reading `&World`.

use std::cell::Cell;

use crate::pool::clock::{Clock, Tick};

use crate::output::Output;
use crate::pool::{Cost, Panicked, Pool};
use crate::system::SystemEntry;
use crate::trace::{Interval, Timeline};
use crate::world::World;

/// Runs every enabled system of one stage once: `systems`, which sit at `base..` among the
/// runtime's systems (their place there numbers their reserved spawn ids). Each system
/// writes only into its own buffers, so the only shared state is the immutable world.
/// Returns the lowest-index system's panic (an index into `systems`), if any system
/// panicked (all others still ran to completion).
///
/// A system's time is its own: work its thread did for *other* systems while waiting for
/// its own parallel parts (see [`Pool::helped`]) is subtracted.
///
/// In a traced frame (`T::ON`), each entry keeps where and when its system ran
/// (`SystemEntry::traced`). With `tracing`, each system runs in a span `system` whose
/// parent is the caller's current span (the frame's Run), whichever thread runs it.
pub(crate) fn run<T: Timeline>(
    world: &World,
    systems: &mut [SystemEntry],
    base: usize,
    pool: &Pool,
) -> Result<(), Panicked> {
    // Each worker chains its systems' clocks: a system starts when the one before it on
    // the same thread, in this Run, ended (one clock read per system instead of two; with
    // thousands of small systems the clock was a fifth of the frame).
    let clock = Clock::get();
    let run = clock.now();
    let parent = crate::profile::current();
    pool.for_each_mut(systems, &|s, entry| {
        entry.ran = entry.enabled;
        if !entry.enabled {
            return;
        }
        let zone = crate::profile::enter!(
            INFO, &mut entry.zone, entry.name, "system", system, parent: &parent;
            writes, own_us
        );
        let helped_before = Pool::helped();
        // `take`: a system this thread runs while the current one waits (helping) finds no
        // end to chain from and reads the clock; chaining it from the system before the
        // current one would count the current one's time so far as its own.
        let start = LAST_END
            .with(Cell::take)
            .filter(|&t| t >= run)
            .unwrap_or_else(|| clock.now());
        let mut out = Output::new(world, pool, &mut entry.out, Some(base + s));
        let (result, cost) = Cost::measure(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                entry.system.run(world, &mut out)
            }))
        });
        entry.cost = cost;
        // Row writes a loop left pending become runs (counted, then seen by Sync).
        entry.writes = entry.out.seal();
        let helped = Pool::helped().saturating_sub(helped_before);
        let end = clock.now();
        LAST_END.with(|c| c.set(Some(end)));
        entry.time = clock.between(start, end).saturating_sub(helped);
        if T::ON {
            let thread = Pool::worker_index() as u32;
            entry.traced = Interval { start, end, thread };
        }
        if let Err(payload) = result {
            std::panic::resume_unwind(payload);
        }
        // On the zone's last piece, what a reader needs per run (Tracy counts pieces):
        // outputs written, rows visited, and the run's own time, helping excluded.
        let visited = zone.visited();
        crate::profile::record!(
            zone.span,
            writes = entry.writes,
            own_us = entry.time.as_micros() as u64,
        );
        zone.end(format_args!(
            "writes={} entities={} own_us={}",
            entry.writes,
            visited,
            entry.time.as_micros()
        ));
    })
}

thread_local! {
    /// When the last system this thread ran ended.
    static LAST_END: Cell<Option<Tick>> = const { Cell::new(None) };
}
