//! The synchronisation primitives the pool uses, in one place (the crossbeam-utils
//! `primitive` pattern), so that they can be swapped per build:
//!
//! | build | atomics, threads | mutex / condvar | ticket queue |
//! |---|---|---|---|
//! | normal | `std` | `parking_lot` | `crossbeam::queue::ArrayQueue` |
//! | `cfg(miri)` | `std` | `std::sync` (parking_lot_core is not strict-provenance clean) | `crossbeam` |
//! | `cfg(loom)` | `loom` | `loom::sync` | a `loom` mutex around a bounded `VecDeque` |
//!
//! Under loom every primitive the pool's protocol relies on is model-checked; the real
//! `ArrayQueue` is replaced by a simple bounded queue with the same interface, since
//! crossbeam's internals are not loom-aware (and are tested by crossbeam itself).

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::thread;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
#[cfg(loom)]
pub(crate) use loom::thread;

// ----- Mutex and Condvar, with parking_lot's shape: `lock()` cannot fail -----

#[cfg(not(any(loom, miri)))]
mod lock {
    pub(crate) type Mutex<T> = parking_lot::Mutex<T>;
    pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

    #[derive(Default)]
    pub(crate) struct Condvar(parking_lot::Condvar);

    impl Condvar {
        pub(crate) fn wait<'a, T>(&self, mut guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(&mut guard);
            guard
        }
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}

#[cfg(any(loom, miri))]
mod lock {
    #[cfg(loom)]
    use loom::sync as imp;
    #[cfg(not(loom))]
    use std::sync as imp;

    pub(crate) type MutexGuard<'a, T> = imp::MutexGuard<'a, T>;

    /// A mutex that ignores poisoning (jobs never panic while holding it).
    pub(crate) struct Mutex<T>(imp::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(imp::Mutex::new(value))
        }
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }
        pub(crate) fn into_inner(self) -> T {
            self.0.into_inner().unwrap_or_else(|e| e.into_inner())
        }
    }

    #[derive(Default)]
    pub(crate) struct Condvar(imp::Condvar);

    impl Condvar {
        pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(guard).unwrap_or_else(|e| e.into_inner())
        }
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}

pub(crate) use lock::{Condvar, Mutex};

// ----- The ticket queue: bounded, allocated once -----

#[cfg(not(loom))]
pub(crate) struct Queue<T>(crossbeam::queue::ArrayQueue<T>);

#[cfg(not(loom))]
impl<T> Queue<T> {
    pub(crate) fn new(capacity: usize) -> Self {
        Queue(crossbeam::queue::ArrayQueue::new(capacity))
    }
    /// Adds a value, or hands it back if the queue is full.
    pub(crate) fn push(&self, value: T) -> Result<(), T> {
        self.0.push(value)
    }
    pub(crate) fn pop(&self) -> Option<T> {
        self.0.pop()
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(loom)]
pub(crate) struct Queue<T> {
    items: loom::sync::Mutex<std::collections::VecDeque<T>>,
    capacity: usize,
}

#[cfg(loom)]
impl<T> Queue<T> {
    pub(crate) fn new(capacity: usize) -> Self {
        Queue {
            items: loom::sync::Mutex::new(std::collections::VecDeque::new()),
            capacity,
        }
    }
    pub(crate) fn push(&self, value: T) -> Result<(), T> {
        let mut q = self.items.lock().unwrap();
        if q.len() == self.capacity {
            return Err(value);
        }
        q.push_back(value);
        Ok(())
    }
    pub(crate) fn pop(&self) -> Option<T> {
        self.items.lock().unwrap().pop_front()
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.items.lock().unwrap().is_empty()
    }
}

// ----- Waiting -----

/// Spin, then yield: crossbeam's `Backoff`; under loom every wait is a plain yield so the
/// model checker can schedule other threads.
pub(crate) struct Backoff {
    #[cfg(not(loom))]
    inner: crossbeam::utils::Backoff,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff {
            #[cfg(not(loom))]
            inner: crossbeam::utils::Backoff::new(),
        }
    }
    pub(crate) fn reset(&self) {
        #[cfg(not(loom))]
        self.inner.reset();
    }
    pub(crate) fn snooze(&self) {
        #[cfg(not(loom))]
        self.inner.snooze();
        #[cfg(loom)]
        loom::thread::yield_now();
    }
    /// Whether spinning has stopped paying off and the thread should yield or park.
    pub(crate) fn is_completed(&self) -> bool {
        #[cfg(not(loom))]
        return self.inner.is_completed();
        #[cfg(loom)]
        return true;
    }
}
