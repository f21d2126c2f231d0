//! A steady frame's save and restore allocate nothing: the ring's
//! snapshots are reused (`snapshot_into`), the inputs are written in place. Counted by a
//! global allocator, so this test has its own process.

#[allow(dead_code)]
#[path = "../src/bin/duel/game.rs"]
mod game;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use ggrs::InputStatus;
use runsync_net::Rollback;

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to `System`, which upholds `GlobalAlloc`'s
// contract; the counter has no effect on the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's `layout` contract is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation goes
        // through `alloc` above).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as `dealloc` and `alloc`: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations(f: impl FnOnce()) -> u64 {
    let before = ALLOCS.load(Ordering::Relaxed);
    f();
    ALLOCS.load(Ordering::Relaxed) - before
}

#[test]
fn saves_loads_and_input_writes_of_a_steady_game_allocate_nothing() {
    // One worker: no pool thread allocates beside the measured calls.
    let mut rb = Rollback::<game::Pad>::new(game::build(1), 2, 8).unwrap();
    let idle = [(game::Pad::default(), InputStatus::Confirmed); 2];
    // Warm up: every ring entry saved once, a few rollbacks.
    for g in 0..40 {
        rb.save(g).unwrap();
        rb.advance(&idle).unwrap();
    }
    for g in 40..40 + 8 * 9 {
        let saves = allocations(|| {
            rb.save(g).unwrap();
        });
        assert_eq!(saves, 0, "save of frame {g}");
        rb.advance(&idle).unwrap();
        if g % 9 == 0 {
            // Roll back 4 frames and run them again.
            let loads = allocations(|| rb.load(g - 3).unwrap());
            assert_eq!(loads, 0, "load of frame {}", g - 3);
            for h in g - 3..g {
                rb.advance(&idle).unwrap();
                rb.save(h + 1).unwrap();
            }
            rb.advance(&idle).unwrap();
        }
    }
    assert!(rb.stats().rollbacks >= 8);
}
