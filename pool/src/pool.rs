//! The persistent worker pool.
//!
//! # Protocol
//!
//! Work arrives as a *batch*: `count` independent jobs `0..count` and one function that
//! runs job `i`. The thread that submits a batch (the *owner*) keeps the batch on its stack,
//! pushes up to `threads - 1` *tickets* (pointers to the batch) onto a shared bounded
//! queue (`crossbeam::queue::ArrayQueue`, allocated once, so dispatch never touches the
//! heap), then works on the batch itself. If the queue is full, the batch simply gets
//! fewer tickets: less parallelism, never a lost job. Whoever holds a ticket
//! claims job indices with one `fetch_add` each until none are left, so each job runs
//! exactly once and a batch never waits on a lock. Jobs catch their own panics; the first
//! panic (lowest job index, so the report does not depend on timing) is handed back to the
//! owner after the whole batch has finished.
//!
//! *Lifetime.* A ticket is a raw pointer to the owner's stack. The batch counts the tickets
//! it has handed out (`refs`); a holder decrements it as the very last thing it does with
//! the batch. The owner does not return — not even by unwinding, thanks to a drop guard —
//! until `refs` is zero. While it waits it *helps*: it steals tickets (its own leftovers or
//! other batches', e.g. a parallel iteration started inside a system) and runs them, so
//! nested batches cannot deadlock.
//!
//! *Sleep.* An idle worker spins, then yields, then parks on a condvar after announcing
//! itself in `sleepers`. An owner, after pushing tickets, issues a `SeqCst` fence and only
//! takes the condvar's mutex if `sleepers` is non-zero. The sleeper increments `sleepers`
//! and fences before re-checking the injector, so either the owner sees the sleeper or the
//! sleeper sees the tickets (a Dekker pair); the mutex is held from that check until the
//! wait begins, so a notify cannot fall between them. Dispatch to awake workers is
//! lock-free.
//!
//! With the `single-threaded` feature no thread is spawned and batches run in index order
//! on the calling thread.

use std::any::Any;
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use crossbeam::utils::CachePadded;

use crate::clock::Clock;

use crate::primitive::{
    AtomicBool, AtomicUsize, Backoff, Condvar, Mutex, Ordering, Queue, fence, thread,
};

/// A job's panic, carried back to the batch owner.
pub struct Panicked {
    /// The job index that panicked (the lowest one, if several did).
    pub index: usize,
    /// What the job panicked with.
    pub payload: Box<dyn Any + Send>,
}

impl Panicked {
    /// The panic message, if the payload is a string.
    pub fn message(&self) -> String {
        payload_message(&*self.payload)
    }
}

/// A panic payload's message, if it is a string (`&str` or `String`), else
/// `(non-string panic payload)`.
pub fn payload_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_owned()
    }
}

/// Each claim of a batch takes at most `1 / (threads × CLAIM_SPLIT)` of its unclaimed
/// jobs (see [`Batch::work`]), so the last claims, which decide how evenly the threads
/// finish, are small.
const CLAIM_SPLIT: usize = 4;

/// One batch of jobs, owned by the submitting thread's stack frame.
struct Batch<'f> {
    run: &'f (dyn Fn(usize) + Sync),
    count: usize,
    /// A claim takes `1/split` of the jobs not yet claimed (at least one).
    split: usize,
    next: CachePadded<AtomicUsize>,
    /// Tickets handed out and not yet released.
    refs: CachePadded<AtomicUsize>,
    panic: Mutex<Option<Panicked>>,
    /// Where each job's profiling zone goes: the chunks of a batch started inside a
    /// system or merge are named after it (nothing without `tracy`).
    zone: crate::profile::ChunkSite,
    /// The jobs' work added up, and the largest job's span, in clock ticks (see [`Cost`]).
    /// Plain `std` atomics even under loom: figures, not part of the protocol; the owner
    /// reads them after `refs` (Release/Acquire) says every job is done.
    work: std::sync::atomic::AtomicU64,
    span: std::sync::atomic::AtomicU64,
}

impl Batch<'_> {
    /// Claims and runs jobs until none are left. `helping`: this thread runs them while
    /// waiting for a batch of its own, so its profiling zone is ended around them — only
    /// once a job is claimed, so that a ticket with nothing left does not split it.
    ///
    /// A claim takes a share of what is left (guided self-scheduling): one job at a time
    /// when jobs are few (a frame's handful of systems, `par_for_each`'s chunks), long
    /// runs of consecutive jobs when they are many. With 6,000 one-write systems on 2
    /// workers, claiming one at a time bounced `next`'s cache line between the cores on
    /// every system, and neighbouring systems' entries with it.
    fn work(&self, helping: bool) {
        let mut suspended = None;
        loop {
            let seen = self.next.load(Ordering::Relaxed);
            if seen >= self.count {
                return; // reopens the zone (drops `suspended`) after the last job
            }
            let want = ((self.count - seen) / self.split).max(1);
            let first = self.next.fetch_add(want, Ordering::Relaxed);
            if first >= self.count {
                return;
            }
            if helping && suspended.is_none() {
                suspended = Some(crate::profile::suspend());
            }
            for i in first..(first + want).min(self.count) {
                let zone = crate::profile::chunk(self.zone);
                let (result, cost) =
                    Cost::measure_as(|| catch_unwind(AssertUnwindSafe(|| (self.run)(i))), false);
                self.work.fetch_add(cost.work, Relaxed);
                self.span.fetch_max(cost.span, Relaxed);
                if let Err(payload) = result {
                    let mut lowest = self.panic.lock();
                    if lowest.as_ref().is_none_or(|p| i < p.index) {
                        *lowest = Some(Panicked { index: i, payload });
                    }
                }
                zone.end(format_args!("chunk={i}"));
            }
        }
    }
}

/// A pointer to a batch on its owner's stack, with the lifetime erased.
#[derive(Clone, Copy)]
struct Ticket(*const Batch<'static>);

// SAFETY: a ticket is only dereferenced while its owner is blocked in `for_each_index`
// (see the module docs), and `Batch` is `Sync` (atomics, a `Sync` function, a mutex).
unsafe impl Send for Ticket {}

impl Ticket {
    /// Runs the ticket's batch (see [`Batch::work`] for `helping`), then releases it.
    ///
    /// # Safety
    /// The batch must still be alive: its owner waits for `refs == 0`, and this ticket was
    /// counted in `refs` and has not been released yet.
    unsafe fn execute(self, helping: bool) {
        // SAFETY: the caller guarantees the batch is alive; this ticket's count in `refs`
        // keeps the owner from returning until the `fetch_sub` below.
        let batch = unsafe { &*self.0 };
        batch.work(helping);
        // Last touch: after this the owner may free the batch.
        batch.refs.fetch_sub(1, Ordering::Release);
    }
}

struct Shared {
    /// Tickets waiting for a thread. Bounded, so that pushing never allocates (an
    /// unbounded `Injector` allocates a block every 63 pushes, i.e. every few frames).
    injector: Queue<Ticket>,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
    shutdown: AtomicBool,
}

impl Shared {
    /// Runs one ticket from the queue, if there is one.
    fn help_once(&self) -> bool {
        match self.injector.pop() {
            Some(t) => {
                // SAFETY: every ticket in the queue was counted in its batch's `refs`
                // when pushed, and is released by exactly this one `execute`.
                unsafe { t.execute(false) };
                true
            }
            None => false,
        }
    }
}

/// The worker pool: `threads() - 1` persistent threads plus the calling thread.
pub struct Pool {
    shared: Arc<Shared>,
    handles: Vec<thread::JoinHandle<()>>,
}

impl Pool {
    /// A pool of `workers` threads in all, counting the caller (so `workers - 1` are
    /// spawned); `0` means one per available core. With `single-threaded`, none.
    pub fn new(workers: usize) -> Pool {
        let workers = if workers == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            workers
        };
        let spawned = if cfg!(feature = "single-threaded") {
            0
        } else {
            workers - 1
        };
        let shared = Arc::new(Shared {
            injector: Queue::new(queue_capacity(workers)),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::default(),
            shutdown: AtomicBool::new(false),
        });
        let handles = (0..spawned)
            .map(|i| {
                let shared = Arc::clone(&shared);
                thread::Builder::new()
                    .name(worker_name(i))
                    .spawn(move || worker_main(&shared, i))
                    .expect("runsync: failed to spawn a worker thread")
            })
            .collect();
        Pool { shared, handles }
    }

    /// Threads that run jobs, counting the caller.
    pub fn threads(&self) -> usize {
        self.handles.len() + 1
    }

    /// The calling thread's place in its pool: `i + 1` on worker `runsync-w{i}`, 0 on any
    /// other thread (the one that starts batches, which runs jobs too). A thread-local
    /// read; what trace files number their threads by.
    #[inline]
    pub fn worker_index() -> usize {
        WORKER.with(Cell::get)
    }

    /// Runs `f(i)` for every `i in 0..count`, spread over the pool; returns when all have
    /// finished. A panicking job does not stop the others; the lowest-index panic is
    /// returned.
    pub fn for_each_index(&self, count: usize, f: &(dyn Fn(usize) + Sync)) -> Result<(), Panicked> {
        let start = Clock::get().now();
        let batch = Batch {
            run: f,
            count,
            split: self.threads() * CLAIM_SPLIT,
            next: CachePadded::new(AtomicUsize::new(0)),
            refs: CachePadded::new(AtomicUsize::new(0)),
            panic: Mutex::new(None),
            zone: crate::profile::chunk_site(),
            work: std::sync::atomic::AtomicU64::new(0),
            span: std::sync::atomic::AtomicU64::new(0),
        };
        let tickets = count.saturating_sub(1).min(self.handles.len());
        if tickets > 0 {
            // From here on, workers may hold pointers to `batch`: the guard makes sure we
            // do not leave this frame, even by unwinding, before they have let go.
            let guard = WaitGuard {
                batch: &batch,
                shared: &self.shared,
            };
            batch.refs.store(tickets, Ordering::Relaxed);
            let ticket = Ticket((&raw const batch).cast::<Batch<'static>>());
            for pushed in 0..tickets {
                if self.shared.injector.push(ticket).is_err() {
                    // Queue full: take back the tickets that were never handed out.
                    batch.refs.fetch_sub(tickets - pushed, Ordering::Release);
                    break;
                }
            }
            fence(Ordering::SeqCst);
            if self.shared.sleepers.load(Ordering::SeqCst) > 0 {
                let _g = self.shared.lock.lock();
                self.shared.wake.notify_all();
            }
            batch.work(false);
            drop(guard);
        } else {
            batch.work(false);
        }
        // The whole batch is parallel work of whatever job (or `Cost::measure`) runs this
        // call: its wall time here is not that job's own, its jobs' work and longest span
        // are.
        let wall = Clock::get().now().saturating_sub(start);
        NESTED.with(|n| {
            let mut v = n.get();
            v.wall += wall;
            v.work += batch.work.load(Relaxed);
            v.span += batch.span.load(Relaxed);
            n.set(v);
        });
        match batch.panic.into_inner() {
            Some(p) => Err(p),
            None => Ok(()),
        }
    }

    /// Runs `f(i, &mut items[i])` for every item, spread over the pool; see
    /// [`for_each_index`](Self::for_each_index).
    pub fn for_each_mut<T: Send>(
        &self,
        items: &mut [T],
        f: &(dyn Fn(usize, &mut T) + Sync),
    ) -> Result<(), Panicked> {
        let base = SendPtr(items.as_mut_ptr());
        let len = items.len();
        self.for_each_index(len, &|i| {
            assert!(i < len);
            // SAFETY: `for_each_index` runs each index in `0..len` exactly once, so this is
            // the only reference to `items[i]`; `items` is mutably borrowed (and unused) for
            // the whole call, which returns only after every job has finished.
            let item = unsafe { &mut *base.get().add(i) };
            f(i, item)
        })
    }
}

impl Pool {
    /// Most parts a [`fill`](Self::fill) is split into (the parts live in a stack array).
    pub const MAX_FILL_PARTS: usize = 64;
    /// Runs `f(k, chunk)` for consecutive chunks of `slice`, `chunk` elements each (the
    /// last may be shorter), spread over the pool; see
    /// [`for_each_index`](Self::for_each_index).
    pub fn chunks_mut<T: Send>(
        &self,
        slice: &mut [T],
        chunk: usize,
        f: &(dyn Fn(usize, &mut [T]) + Sync),
    ) -> Result<(), Panicked> {
        let chunk = chunk.max(1);
        let base = SendPtr(slice.as_mut_ptr());
        let len = slice.len();
        self.for_each_index(len.div_ceil(chunk), &|k| {
            let start = k * chunk;
            assert!(start < len);
            let n = chunk.min(len - start);
            // SAFETY: `for_each_index` runs each `k` once, and chunk `k` is elements
            // `k * chunk..k * chunk + n` of `slice`, inside it (checked) and disjoint from
            // every other chunk's, so this is the only reference to them; `slice` is
            // mutably borrowed (and unused) for the whole call, which returns only after
            // every job has finished.
            let part = unsafe { std::slice::from_raw_parts_mut(base.get().add(start), n) };
            f(k, part)
        })
    }

    /// How many contiguous parts [`fill`](Self::fill) cuts `len` elements into: as many
    /// as hold at least `min_part` each, at most four a thread and
    /// [`MAX_FILL_PARTS`](Self::MAX_FILL_PARTS); 1 (one part, on the calling thread) with
    /// one thread or a short `len`. For a caller that splits its own work the same way.
    pub fn fill_parts(&self, len: usize, min_part: usize) -> usize {
        if self.threads() == 1 {
            return 1;
        }
        (len / min_part.max(1))
            .min(self.threads() * 4)
            .clamp(1, Self::MAX_FILL_PARTS)
    }

    /// Replaces the contents of `out` with `f(0), f(1), .., f(len - 1)`, computing
    /// contiguous parts of at least `min_part` elements on different workers. With one
    /// thread (or a short `len`) this is a plain `extend`, so `f` inlines into one loop.
    ///
    /// If some `f` panics, the lowest part's panic is returned and `out` is left empty; the
    /// values other parts already computed are leaked, not dropped (never unsound).
    pub fn fill<T: Send, F: Fn(usize) -> T + Sync>(
        &self,
        out: &mut Vec<T>,
        len: usize,
        min_part: usize,
        f: F,
    ) -> Result<(), Panicked> {
        out.clear();
        let parts = self.fill_parts(len, min_part);
        if parts == 1 {
            out.extend((0..len).map(f));
            return Ok(());
        }
        out.reserve(len);
        let part = len.div_ceil(parts);
        let mut slices: [&mut [MaybeUninit<T>]; Self::MAX_FILL_PARTS] =
            std::array::from_fn(|_| -> &mut [MaybeUninit<T>] { &mut [] });
        let mut n = 0;
        for (k, s) in out.spare_capacity_mut()[..len].chunks_mut(part).enumerate() {
            slices[k] = s;
            n = k + 1;
        }
        self.for_each_mut(&mut slices[..n], &|k, spare| fill_part(spare, k * part, &f))?;
        // SAFETY: `set_len` needs `len <= capacity` (reserved above) and elements `0..len`
        // initialised: the parts cover `0..len` exactly (`chunks_mut` of that prefix), and
        // `for_each_mut` returned `Ok`, so every part ran to completion and wrote each of
        // its elements once.
        unsafe { out.set_len(len) };
        Ok(())
    }
}

/// Worker `i`'s thread name, `runsync-w{i}`: Linux keeps 15 bytes of a thread name (the
/// name profilers such as Tracy show), which this fits for any realistic pool, index
/// included (`runsync-worker-{i}` lost the index).
fn worker_name(i: usize) -> String {
    format!("runsync-w{i}")
}

/// Room in the ticket queue: each batch queues at most `threads - 1` tickets, and batches
/// nest (a system's parallel iteration inside Run), so allow plenty of nesting.
fn queue_capacity(threads: usize) -> usize {
    (threads * threads * 16).max(64)
}

/// Writes `f(base + j)` into `spare[j]`. A function of its own so that `spare` is a
/// `noalias` argument: the optimiser then knows the stores cannot touch `f`'s captures
/// and keeps them in registers (inlined into the job closure, it reloaded them per value).
#[inline(never)]
fn fill_part<T, F: Fn(usize) -> T>(spare: &mut [MaybeUninit<T>], base: usize, f: &F) {
    for (j, element) in spare.iter_mut().enumerate() {
        element.write(f(base + j));
    }
}

thread_local! {
    /// Time this thread spent running other batches' jobs while it waited for its own
    /// (see [`Pool::helped`]).
    static HELPED: Cell<Duration> = const { Cell::new(Duration::ZERO) };
    /// What the batches started by the code being measured on this thread added up (see
    /// [`Cost::measure`]).
    static NESTED: Cell<Nested> = const { Cell::new(Nested::ZERO) };
    /// This thread's [`Pool::worker_index`].
    static WORKER: Cell<usize> = const { Cell::new(0) };
}

/// The work and the span of a piece of computation, in clock ticks (`clock.rs`;
/// [`Cost::work_time`] and [`Cost::span_time`] convert): its *work* is the time all its
/// pieces took, added up, whichever threads ran them; its *span* the longest chain of
/// pieces that must run one after the other however many threads there are — its own
/// time outside the pool's batches (serial), plus, for each batch it ran, its longest job
/// (the jobs of a batch are independent). With `p` threads it cannot finish faster than
/// `max(work / p, span)`: `work / span` bounds its speed-up on any number of threads.
///
/// Every job of every batch is measured (two clock reads), so the figures nest: a system
/// is a job of Run's batch, its `par_for_each` chunks jobs of its own batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cost {
    /// The time all its pieces took, added up, in clock ticks.
    pub work: u64,
    /// Its longest chain of pieces that must run one after the other, in clock ticks.
    pub span: u64,
}

/// What the batches a measured piece ran added up, as they finished: their wall time on
/// this thread (its waits), their jobs' work and their longest jobs' spans.
#[derive(Clone, Copy)]
struct Nested {
    wall: u64,
    work: u64,
    span: u64,
}

impl Nested {
    const ZERO: Nested = Nested {
        wall: 0,
        work: 0,
        span: 0,
    };
}

impl Cost {
    /// Runs `f` on this thread and measures its cost: its time outside the batches it runs
    /// through the pool counts as serial (work and span alike); each batch adds its jobs'
    /// work and its longest job's span. An observer: whatever measures the code around
    /// this call sees `f`'s batches too.
    pub fn measure<R>(f: impl FnOnce() -> R) -> (R, Cost) {
        Self::measure_as(f, true)
    }

    /// [`measure`](Self::measure), `transparent` or not: a job of a batch is measured on
    /// its own (its batches are its cost, which its batch adds up), not seen by the code
    /// its thread was running when it picked the job up.
    fn measure_as<R>(f: impl FnOnce() -> R, transparent: bool) -> (R, Cost) {
        /// Puts the enclosing measurement's figures back (plus `f`'s, if transparent),
        /// also on unwinding.
        struct Restore(Nested, bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                let (outer, transparent) = (self.0, self.1);
                NESTED.with(|n| {
                    let inner = n.get();
                    n.set(if transparent {
                        Nested {
                            wall: outer.wall + inner.wall,
                            work: outer.work + inner.work,
                            span: outer.span + inner.span,
                        }
                    } else {
                        outer
                    });
                });
            }
        }
        let clock = Clock::get();
        let restore = Restore(NESTED.with(|n| n.replace(Nested::ZERO)), transparent);
        let start = clock.now();
        let r = f();
        let wall = clock.now().saturating_sub(start);
        let nested = NESTED.with(Cell::get);
        drop(restore);
        let serial = wall.saturating_sub(nested.wall);
        let cost = Cost {
            work: serial + nested.work,
            span: serial + nested.span,
        };
        (r, cost)
    }

    /// The work as a duration.
    pub fn work_time(self) -> Duration {
        Clock::get().ticks(self.work)
    }

    /// The span as a duration.
    pub fn span_time(self) -> Duration {
        Clock::get().ticks(self.span)
    }
}

impl Pool {
    /// Total time this thread has spent, so far, running *other* batches' jobs while it
    /// waited for one of its own to finish. The Run phase subtracts the increase over a
    /// system's run from that system's time, so per-system times count only the system's
    /// own work, not the systems its thread picked up while its parallel parts finished.
    pub fn helped() -> Duration {
        HELPED.with(Cell::get)
    }
}

/// Waits, helping, until every ticket of `batch` has been released.
struct WaitGuard<'a> {
    batch: &'a Batch<'a>,
    shared: &'a Shared,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        let backoff = Backoff::new();
        let own = (&raw const *self.batch).cast::<Batch<'static>>();
        while self.batch.refs.load(Ordering::Acquire) != 0 {
            let Some(ticket) = self.shared.injector.pop() else {
                backoff.snooze();
                continue;
            };
            if ticket.0 == own {
                // One of our own tickets: all our jobs are claimed by now (the owner ran
                // `work` to the end before waiting), so this only releases it.
                // SAFETY: popped from the queue, where it was counted in `refs` when
                // pushed; released by exactly this one `execute`.
                unsafe { ticket.execute(false) };
            } else {
                // Another batch's job. Its time is not ours: count it as helping, and
                // (`helping`) end this thread's profiling zone around its jobs so that
                // Tracy shows them beside, not inside, the job we are waiting in.
                let before = Pool::helped();
                let start = Instant::now();
                // SAFETY: as above.
                unsafe { ticket.execute(true) };
                // Count the whole job once: it may itself have helped (raising `HELPED`),
                // which its elapsed time already includes.
                HELPED.with(|h| h.set(before + start.elapsed()));
            }
            backoff.reset();
        }
    }
}

struct SendPtr<T>(*mut T);

impl<T> SendPtr<T> {
    fn get(&self) -> *mut T {
        self.0
    }
}

// SAFETY: the pointer is only used to hand out `&mut T` to distinct elements on other
// threads, which is sound when `T: Send`.
unsafe impl<T: Send> Sync for SendPtr<T> {}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        {
            let _g = self.shared.lock.lock();
            self.shared.wake.notify_all();
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// Spins, then yields, for this many rounds with nothing to do before parking (none under
/// loom, where every round is a state to explore, nor under Miri, where every round is
/// interpreted: idle workers of the tests' pools spun through most of CI's Miri time).
const IDLE_ROUNDS: u32 = if cfg!(loom) || cfg!(miri) { 0 } else { 64 };

/// Worker `i`'s loop.
fn worker_main(shared: &Shared, i: usize) {
    crate::profile::name_worker();
    WORKER.with(|w| w.set(i + 1));
    let backoff = Backoff::new();
    let mut idle = 0;
    loop {
        if shared.help_once() {
            backoff.reset();
            idle = 0;
            continue;
        }
        if shared.shutdown.load(Ordering::Acquire) {
            return;
        }
        if !backoff.is_completed() {
            backoff.snooze();
            continue;
        }
        if idle < IDLE_ROUNDS {
            idle += 1;
            thread::yield_now();
            continue;
        }
        let mut g = shared.lock.lock();
        shared.sleepers.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if shared.injector.is_empty() && !shared.shutdown.load(Ordering::SeqCst) {
            g = shared.wake.wait(g);
        }
        shared.sleepers.fetch_sub(1, Ordering::SeqCst);
        drop(g);
        backoff.reset();
        idle = 0;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    /// Enough jobs for claims of many at once.
    const MANY: usize = if cfg!(miri) { 2_000 } else { 10_000 };

    /// Work and span add up the way the docs of `Cost` say, at 1 and 3 threads: 20 ms
    /// serial, then a batch of four 10 ms jobs (one of which runs a batch of three 5 ms
    /// jobs of its own), then 5 ms serial. Work: 25 + 40 + 15 = 80 ms whatever the
    /// threads; span: 25 + the longest job (10 + 5 = 15) = 40 ms.
    #[test]
    #[cfg_attr(miri, ignore = "timing: sleeps")]
    fn work_and_span_add_up_over_nested_batches() {
        let ms = |n| Duration::from_millis(n);
        for threads in [1, 3] {
            let pool = Pool::new(threads);
            let ((), cost) = Cost::measure(|| {
                std::thread::sleep(ms(20));
                pool.for_each_index(4, &|i| {
                    std::thread::sleep(ms(10));
                    if i == 2 {
                        pool.for_each_index(3, &|_| std::thread::sleep(ms(5)))
                            .ok()
                            .unwrap();
                    }
                })
                .ok()
                .unwrap();
                std::thread::sleep(ms(5));
            });
            let (work, span) = (cost.work_time(), cost.span_time());
            // Sleeps last at least as asked, and a loaded machine may stretch them: each
            // stretch adds to the work, and to the span if the sleep is on it, so the work
            // outgrows the span by the 40 ms of jobs off the longest chain, at least.
            assert!(work >= ms(80), "{threads} threads: work {work:?}");
            assert!(span >= ms(40), "{threads} threads: span {span:?}");
            assert!(
                work >= span + ms(38),
                "{threads} threads: {work:?}, {span:?}"
            );
        }
    }

    /// `measure` is an observer: an outer measurement still sees the batches an inner one
    /// measured (the Run phase measures each system inside the frame's measurement).
    #[test]
    #[cfg_attr(miri, ignore = "timing: sleeps")]
    fn an_inner_measurement_hides_nothing_from_an_outer_one() {
        let pool = Pool::new(2);
        let ms = |n| Duration::from_millis(n);
        let ((_, inner), outer) = Cost::measure(|| {
            Cost::measure(|| {
                pool.for_each_index(2, &|_| std::thread::sleep(ms(10)))
                    .ok()
                    .unwrap();
            })
        });
        // Two 10 ms jobs: work 20 ms, span 10 ms (plus stretches, more of them in the
        // work), seen alike from inside and outside.
        for (what, c) in [("inner", inner), ("outer", outer)] {
            let (work, span) = (c.work_time(), c.span_time());
            assert!(
                work >= ms(20) && work >= span + ms(9),
                "{what}: {work:?}, {span:?}"
            );
        }
    }

    #[test]
    fn runs_every_job_once() {
        for workers in [1, 2, 4] {
            let pool = Pool::new(workers);
            // The last: claims of many jobs at once (guided shares).
            for count in [0, 1, 2, 7, 100, MANY] {
                let hits: Vec<AtomicU64> = (0..count).map(|_| AtomicU64::new(0)).collect();
                pool.for_each_index(count, &|i| {
                    hits[i].fetch_add(1, Ordering::Relaxed);
                })
                .ok()
                .unwrap();
                assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
            }
        }
    }

    #[test]
    fn for_each_mut_gives_exclusive_items() {
        let pool = Pool::new(3);
        let mut v: Vec<u64> = (0..1000).collect();
        pool.for_each_mut(&mut v, &|i, x| *x += i as u64)
            .ok()
            .unwrap();
        assert!(v.iter().enumerate().all(|(i, &x)| x == 2 * i as u64));
    }

    #[test]
    fn nested_batches_complete() {
        let pool = Pool::new(2);
        let total = AtomicU64::new(0);
        pool.for_each_index(4, &|_| {
            pool.for_each_index(8, &|j| {
                total.fetch_add(j as u64, Ordering::Relaxed);
            })
            .ok()
            .unwrap();
        })
        .ok()
        .unwrap();
        assert_eq!(total.load(Ordering::Relaxed), 4 * 28);
    }

    #[test]
    fn panic_is_caught_and_lowest_index_reported() {
        let pool = Pool::new(2);
        let ran = AtomicU64::new(0);
        let err = pool
            .for_each_index(10, &|i| {
                ran.fetch_add(1, Ordering::Relaxed);
                if i == 3 || i == 7 {
                    panic!("job {i} failed");
                }
            })
            .err()
            .unwrap();
        assert_eq!(err.index, 3);
        assert_eq!(err.message(), "job 3 failed");
        assert_eq!(ran.load(Ordering::Relaxed), 10, "other jobs still ran");
        // Jobs claimed in one share with a panicking one still run, and the lowest
        // panic wins however the shares fell.
        ran.store(0, Ordering::Relaxed);
        let err = pool
            .for_each_index(MANY, &|i| {
                ran.fetch_add(1, Ordering::Relaxed);
                if i % 1000 == 999 {
                    panic!("job {i} failed");
                }
            })
            .err()
            .unwrap();
        assert_eq!(err.index, 999);
        assert_eq!(ran.load(Ordering::Relaxed), MANY as u64);
        // The pool survives.
        pool.for_each_index(5, &|_| {}).ok().unwrap();
    }

    #[test]
    fn workers_zero_means_all_cores() {
        let pool = Pool::new(0);
        let expect = if cfg!(feature = "single-threaded") {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        };
        assert_eq!(pool.threads(), expect);
    }

    /// `fill`'s uninitialised parts, checked here (and so under both of Miri's aliasing
    /// models) without the fold paths around it.
    #[test]
    fn fill_writes_every_element_once_or_reports_the_lowest_panic() {
        let (len, part) = if cfg!(miri) { (40, 4) } else { (10_000, 64) };
        let pool = Pool::new(3);
        let mut out = vec![String::from("old")];
        pool.fill(&mut out, len, part, |i| i.to_string())
            .ok()
            .unwrap();
        assert_eq!(out.len(), len);
        assert!(out.iter().enumerate().all(|(i, s)| *s == i.to_string()));
        if pool.threads() == 1 {
            return; // `single-threaded`: a plain `extend`, whose panic is the caller's
        }
        // Values other parts computed before a panic are leaked (documented), so the panic
        // case uses a type without heap memory, which Miri would report as a leak.
        let mut out = vec![7_u64];
        let err = pool
            .fill(&mut out, len, part, |i| {
                assert!(i != len / 2, "part at {i} failed");
                i as u64
            })
            .err()
            .unwrap();
        assert!(err.message().contains("failed"));
        assert!(out.is_empty(), "left empty after a panic");
    }

    /// Linux (and so Tracy, perf, htop) keeps 15 bytes of a thread name: each worker's
    /// index must survive that cut.
    #[test]
    fn worker_names_keep_their_index_in_15_bytes() {
        for i in [0, 9, 10, 999, 99_999] {
            let name = worker_name(i);
            assert!(name.len() <= 15, "{name}");
            assert!(name.ends_with(&i.to_string()));
        }
        // Miri does not model thread names being read back through the OS; the names as
        // the threads see them are checked natively.
        if cfg!(any(miri, feature = "single-threaded")) {
            return;
        }
        let pool = Pool::new(3);
        let seen = Mutex::new(std::collections::BTreeSet::new());
        let go = AtomicUsize::new(0);
        // Jobs wait for each other, so every thread of the pool runs one.
        pool.for_each_index(3, &|_| {
            go.fetch_add(1, Ordering::SeqCst);
            while go.load(Ordering::SeqCst) < 3 {
                std::hint::spin_loop();
            }
            let name = std::thread::current().name().map(str::to_owned);
            seen.lock().insert(name.unwrap_or_default());
        })
        .ok()
        .unwrap();
        let seen = seen.into_inner();
        assert!(
            seen.contains("runsync-w0") && seen.contains("runsync-w1"),
            "{seen:?}"
        );
    }

    /// Worker `runsync-w{i}` is `i + 1`; the thread that starts the batch, 0.
    #[test]
    fn worker_indices_follow_the_names() {
        let threads = if cfg!(feature = "single-threaded") {
            1
        } else {
            3
        };
        let pool = Pool::new(3);
        let seen = Mutex::new(std::collections::BTreeSet::new());
        let go = AtomicUsize::new(0);
        pool.for_each_index(threads, &|_| {
            go.fetch_add(1, Ordering::SeqCst);
            while go.load(Ordering::SeqCst) < threads {
                std::hint::spin_loop();
            }
            let name = std::thread::current().name().map(str::to_owned);
            let name = name.filter(|n| n.starts_with("runsync-w"));
            seen.lock().insert((Pool::worker_index(), name));
        })
        .ok()
        .unwrap();
        let mut want = vec![(0, None)];
        if threads == 3 {
            want.push((1, Some("runsync-w0".to_owned())));
            want.push((2, Some("runsync-w1".to_owned())));
        }
        assert_eq!(seen.into_inner().into_iter().collect::<Vec<_>>(), want);
        assert_eq!(Pool::worker_index(), 0);
    }
}

/// Model-checked tests of the protocol above. Run with:
/// `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p runsync-pool --release loom_`
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::atomic::AtomicUsize as LoomUsize;

    /// Cells shared with the jobs; loom itself checks that no two accesses race.
    struct Cells([UnsafeCell<u32>; 2]);

    // SAFETY: every access goes through loom's `UnsafeCell`, which reports any pair of
    // accesses that are not ordered by happens-before — exactly what the test checks.
    unsafe impl Sync for Cells {}

    impl Cells {
        // A method, so closures capture `&Cells` (which is `Sync`), not the inner array.
        fn get(&self, i: usize) -> &UnsafeCell<u32> {
            &self.0[i]
        }
    }

    /// Every job runs exactly once, the worker is woken or finds the tickets, and the pool
    /// shuts down (loom reports a deadlock if a wake-up can be lost).
    #[test]
    fn loom_dispatch_and_sleep_wake() {
        loom::model(|| {
            let pool = Pool::new(2);
            let hits = [LoomUsize::new(0), LoomUsize::new(0), LoomUsize::new(0)];
            pool.for_each_index(3, &|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            })
            .ok()
            .unwrap();
            for h in &hits {
                assert_eq!(h.load(Ordering::Relaxed), 1);
            }
            drop(pool);
        });
    }

    /// What jobs write in one batch (Run) is visible to the owner afterwards and to any
    /// thread in the next batch (Sync): loom flags the cell accesses if a happens-before
    /// edge is missing.
    #[test]
    fn loom_run_to_sync_handoff() {
        loom::model(|| {
            let pool = Pool::new(2);
            let cells = Cells([UnsafeCell::new(0u32), UnsafeCell::new(0u32)]);
            pool.for_each_index(2, &|i| {
                // SAFETY: each index runs once, so each cell has one writer in this batch.
                cells.get(i).with_mut(|p| unsafe { *p = i as u32 + 1 });
            })
            .ok()
            .unwrap();
            let sums = [LoomUsize::new(0), LoomUsize::new(0)];
            pool.for_each_index(2, &|i| {
                // SAFETY: the previous batch has finished; this batch only reads.
                let v = cells.get(1 - i).with(|p| unsafe { *p });
                sums[i].store(v as usize, Ordering::Relaxed);
            })
            .ok()
            .unwrap();
            assert_eq!(sums[0].load(Ordering::Relaxed), 2);
            assert_eq!(sums[1].load(Ordering::Relaxed), 1);
            // SAFETY: both batches have finished.
            assert_eq!(cells.get(0).with(|p| unsafe { *p }), 1);
        });
    }

    /// A panicking job is caught wherever it runs, reported to the owner after the batch,
    /// and the pool keeps working.
    #[test]
    fn loom_panic_propagation() {
        loom::model(|| {
            let pool = Pool::new(2);
            let err = pool
                .for_each_index(2, &|i| {
                    if i == 1 {
                        std::panic::panic_any("job 1");
                    }
                })
                .err()
                .expect("the panic must be reported");
            assert_eq!(err.index, 1);
            assert_eq!(err.message(), "job 1");
            let ran = LoomUsize::new(0);
            pool.for_each_index(2, &|_| {
                ran.fetch_add(1, Ordering::Relaxed);
            })
            .ok()
            .unwrap();
            assert_eq!(ran.load(Ordering::Relaxed), 2);
        });
    }
}
