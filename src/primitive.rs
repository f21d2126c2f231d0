//! The synchronisation primitives the pool uses, in one place (the crossbeam-utils
//! `primitive` pattern), so that they can be swapped per build:
//!
//! | build | atomics, threads | mutex / condvar | ticket queue |
//! |---|---|---|---|
//! | normal | `std` | `parking_lot` | `crossbeam::deque::Injector` |
//! | `cfg(miri)` | `std` | `std::sync` (parking_lot_core is not strict-provenance clean) | `crossbeam` |
//! | `cfg(loom)` | `loom` | `loom::sync` | a `loom` mutex around a `VecDeque` |
//!
//! Under loom every primitive the pool's protocol relies on is model-checked; the real
//! `Injector` is replaced by a simple queue with the same interface, since crossbeam-deque's
//! internals are not loom-aware (and are tested by crossbeam itself).

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

// ----- The ticket queue -----

#[cfg(not(loom))]
pub(crate) struct Injector<T>(crossbeam::deque::Injector<T>);

#[cfg(not(loom))]
impl<T> Injector<T> {
    pub(crate) fn new() -> Self {
        Injector(crossbeam::deque::Injector::new())
    }
    pub(crate) fn push(&self, value: T) {
        self.0.push(value);
    }
    /// Takes one value, retrying while another thread races for the same one.
    pub(crate) fn steal(&self) -> Option<T> {
        loop {
            match self.0.steal() {
                crossbeam::deque::Steal::Success(v) => return Some(v),
                crossbeam::deque::Steal::Retry => continue,
                crossbeam::deque::Steal::Empty => return None,
            }
        }
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(loom)]
pub(crate) struct Injector<T>(loom::sync::Mutex<std::collections::VecDeque<T>>);

#[cfg(loom)]
impl<T> Injector<T> {
    pub(crate) fn new() -> Self {
        Injector(loom::sync::Mutex::new(std::collections::VecDeque::new()))
    }
    pub(crate) fn push(&self, value: T) {
        self.0.lock().unwrap().push_back(value);
    }
    pub(crate) fn steal(&self) -> Option<T> {
        self.0.lock().unwrap().pop_front()
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.0.lock().unwrap().is_empty()
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
