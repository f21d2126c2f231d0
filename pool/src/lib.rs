//! A persistent worker pool with chunked parallel loops: runsync's threads, in a crate
//! of its own because it knows nothing of the ECS above it (as `rayon-core` is to
//! `rayon`).
//!
//! - [`Pool`]: `threads - 1` persistent workers plus the calling thread. Work arrives as
//!   a batch of independent jobs `0..count` ([`Pool::for_each_index`]), or as loops over
//!   a slice's items or chunks ([`Pool::for_each_mut`], [`Pool::chunks_mut`]), or fills a
//!   vector in contiguous parts ([`Pool::fill`]). Dispatch is lock-free and never
//!   allocates; nested batches (a parallel loop inside a job) cannot deadlock, because a
//!   thread waiting for its batch runs other batches' jobs meanwhile.
//! - **Panic capture**: a job's panic is caught where it runs; the others still run, and
//!   the lowest-index panic is handed back to the caller ([`Panicked`]) once the whole
//!   batch has finished, so the report does not depend on timing.
//! - **Work and span** ([`Cost`]): every job is timed on the CPU's time-stamp counter
//!   ([`clock`]); [`Cost::measure`] adds up what a piece of computation and the batches
//!   it ran cost, in total (work) and along its longest serial chain (span), and
//!   [`Pool::helped`] how long a thread spent running other batches' jobs.
//! - **Tracy**, with the `tracy` feature: the jobs of a batch started inside a job zone
//!   run in chunk zones, and a job zone is ended around foreign jobs its thread helps
//!   with ([`profile`]). Without it that compiles to nothing.
//! - With the `single-threaded` feature no thread is spawned and every batch runs in index
//!   order on the calling thread.
//!
//! Why not rayon: when several jobs of a parallel loop panic, which panic it passes on
//! depends on timing, and it measures no per-job work and span nor ends a profiler zone
//! around a job a thread helps with — the panic report and the figures above are what
//! runsync's deterministic errors and its profiles are built on.
//!
//! Its protocol (tickets on the owner's stack, guided claims, the sleep handshake) is
//! described in the crate's `src/pool.rs` and model-checked with loom:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p runsync-pool --release loom_`.
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use runsync_pool::{Cost, Pool};
//!
//! let pool = Pool::new(2);
//! let mut squares = Vec::new();
//! pool.fill(&mut squares, 1000, 100, |i| (i * i) as u64).ok().unwrap();
//! let sum = AtomicU64::new(0);
//! let ((), cost) = Cost::measure(|| {
//!     pool.for_each_index(squares.len(), &|i| {
//!         sum.fetch_add(squares[i], Ordering::Relaxed);
//!     })
//!     .ok()
//!     .unwrap();
//! });
//! assert_eq!(sum.into_inner(), (0..1000u64).map(|i| i * i).sum());
//! assert!(cost.work >= cost.span);
//!
//! let err = pool.for_each_index(4, &|i| assert!(i != 2, "job {i}")).err().unwrap();
//! assert_eq!((err.index, err.message()), (2, "job 2".to_owned()));
//! ```

pub mod clock;
mod pool;
mod primitive;
pub mod profile;

pub use pool::{Cost, Panicked, Pool, payload_message};
