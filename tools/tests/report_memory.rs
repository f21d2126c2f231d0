//! The arena report's statistics stop growing: after 1,000 frames and after 50,000 they
//! hold the same live heap bytes, and the frames in between allocate nothing. Counted by a
//! global allocator of live bytes, so this test has a process of its own (and is the only
//! test in it: another test running beside it would be counted too).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use runsync_tools::report::RunStats;
use runsync_tools::scenario::{ArenaConfig, build};

struct Counting;

/// Bytes allocated and not yet freed, by every thread.
static LIVE: AtomicI64 = AtomicI64::new(0);
/// Calls to `alloc` and `realloc`.
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to `System`, which upholds `GlobalAlloc`'s
// contract; the counters have no effect on the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: the caller's `layout` contract is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: as `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation goes
        // through the methods above).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        // SAFETY: as `dealloc` and `alloc`: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn the_report_s_memory_after_50k_frames_is_what_it_was_after_1k() {
    // The stats of a real arena frame (its systems and their names, on one worker: no
    // pool thread allocates meanwhile), then varied frame by frame as a run's are.
    let mut rt = build(ArenaConfig {
        agents: 64,
        seed: 3,
        workers: 1,
    });
    rt.frame();
    let mut frame = rt.stats().clone();
    assert!(frame.systems.len() >= 10, "the arena's systems");
    drop(rt);

    let before = LIVE.load(Ordering::Relaxed);
    let mut stats = RunStats::new(RunStats::DEFAULT_RECENT);
    let (mut after_1k, mut heap_1k, mut allocs_1k) = (0, 0, 0);
    for f in 1..=50_000u64 {
        // Times over many histogram buckets: 1 µs to some 30 ms, and a long frame now and
        // then.
        let x = f.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 44;
        let long = if f % 997 == 0 { 200_000 } else { 0 };
        frame.frame = f;
        frame.run = Duration::from_micros(x % 30_000 + 1 + long);
        frame.sync = Duration::from_nanos(x % 900_000 + 1);
        frame.work = frame.run * 2;
        frame.span = frame.run / 3;
        frame.entities = (x % 5000) as usize;
        frame.spawned = x % 7;
        for (i, s) in frame.systems.iter_mut().enumerate() {
            s.time = Duration::from_nanos(x % (1000 * (i as u64 + 1)));
            s.writes = (x % 100) as usize;
        }
        stats.record(&frame, frame.run + frame.sync);
        if f == RunStats::DEFAULT_RECENT as u64 {
            after_1k = LIVE.load(Ordering::Relaxed) - before;
            heap_1k = stats.heap_bytes();
            allocs_1k = ALLOCS.load(Ordering::Relaxed);
        }
    }
    let after_50k = LIVE.load(Ordering::Relaxed) - before;
    let allocs = ALLOCS.load(Ordering::Relaxed) - allocs_1k;
    assert_eq!(
        after_50k, after_1k,
        "live bytes after 50,000 frames ({after_50k}) and after 1,000 ({after_1k})"
    );
    assert_eq!(stats.heap_bytes(), heap_1k, "buffers' capacities");
    assert_eq!(allocs, 0, "allocations in frames 1,001 to 50,000");
    // What it holds is what its accounting says (the histograms are a fixed 1 MiB or so;
    // the ring some 1.2 KB a frame), give or take what libtest's own thread allocates
    // while this test starts (900 bytes in some runs, none in most).
    assert!(
        (after_50k - heap_1k as i64).abs() <= 4 << 10,
        "live bytes {after_50k}, `heap_bytes` {heap_1k}"
    );
    assert!(after_50k < 4 << 20, "{after_50k} bytes");

    // And it still reports the whole run.
    let summary = stats.summary(1, 0, 0, None);
    assert_eq!(summary.frames, 50_000);
    assert_eq!(stats.recent().count(), RunStats::DEFAULT_RECENT);
    assert_eq!(stats.recent().next().unwrap().frame, 49_001);
    assert!(summary.run.max_ms > 200.0 && summary.run.p50_ms < 20.0);
}
