//! The synchronisation primitives the pool uses, in one place so that `--cfg loom` can
//! swap in loom's model-checked versions (the crossbeam-utils `primitive` pattern).

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::thread;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
#[cfg(loom)]
pub(crate) use loom::thread;
