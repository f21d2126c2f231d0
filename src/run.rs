//! The Run phase: every enabled system at once, on the pool, reading `&World`.

use std::time::Instant;

use crate::output::Output;
use crate::pool::{Panicked, Pool};
use crate::runtime::SystemSlot;
use crate::world::World;

/// Runs every enabled system once. Each system writes only into its own buffers, so the
/// only shared state is the immutable world. Returns the lowest-index system's panic, if
/// any system panicked (all others still ran to completion).
pub(crate) fn run(world: &World, systems: &mut [SystemSlot], pool: &Pool) -> Result<(), Panicked> {
    pool.for_each_mut(systems, &|_, slot| {
        slot.ran = slot.enabled;
        if !slot.enabled {
            return;
        }
        let _zone = crate::profile::system_zone(&slot.name);
        let start = Instant::now();
        let mut out = Output::new(world, pool, &mut slot.out);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            slot.system.run(world, &mut out)
        }));
        slot.time = start.elapsed();
        if let Err(payload) = result {
            std::panic::resume_unwind(payload);
        }
    })
}
