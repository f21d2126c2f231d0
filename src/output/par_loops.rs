//! A system's own parallel loops: the [`Parallel`] handle ([`Output::parallel`]) and
//! [`Output::par_reduce`].

use super::Output;
use crate::entity::Entity;
use crate::pool::{Panicked, Pool};
use crate::query::QueryData;

/// The most parts [`Output::par_reduce`] cuts a query into.
const REDUCE_PARTS: usize = 64;

/// Rows per part below which [`Output::par_reduce`] makes no more parts.
const REDUCE_MIN_PART: usize = if cfg!(miri) { 4 } else { 1024 };

/// The runtime's worker pool, for a system's own parallel loops over data that is not a
/// query of the world (a grid, a scratch vector): from [`Output::parallel`]. Every loop
/// runs its jobs on the workers that run systems (no second thread pool competing for the
/// cores), returns once all of them finished, and re-raises the panic of the lowest job
/// that panicked — a panic fails the frame like one in the system itself. With the
/// `single-threaded` feature, and on one worker, the jobs run in index order on the
/// calling thread.
///
/// Which job runs where depends on timing, so a loop gives the same result at every
/// worker count only if its jobs are independent (each writes its own data, as the
/// methods' `&mut` items make sure) and their results are combined in index order.
///
/// ```
/// use runsync::prelude::*;
/// # let mut rt = Runtime::builder().workers(2).build(World::new());
/// rt.add_system(|_: &World, out: &mut Output| {
///     let mut squares = vec![0u64; 10_000];
///     out.parallel().chunks_mut(&mut squares, 1024, |k, chunk| {
///         for (i, s) in chunk.iter_mut().enumerate() {
///             let x = (k * 1024 + i) as u64;
///             *s = x * x;
///         }
///     });
///     assert_eq!(squares[9_999], 9_999 * 9_999);
/// });
/// rt.frame();
/// ```
#[derive(Clone, Copy)]
pub struct Parallel<'a> {
    pool: &'a Pool,
}

impl std::fmt::Debug for Parallel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parallel")
            .field("threads", &self.threads())
            .finish()
    }
}

/// Re-raises a job's panic on the calling thread.
fn rethrow(result: Result<(), Panicked>) {
    if let Err(p) = result {
        std::panic::resume_unwind(p.payload);
    }
}

impl Parallel<'_> {
    /// The threads the jobs may run on, counting the calling one.
    pub fn threads(&self) -> usize {
        self.pool.threads()
    }

    /// Runs `f(i)` for every `i` in `0..n`, spread over the workers.
    ///
    /// Cost: an atomic claim per few jobs; a job should be worth a few microseconds.
    pub fn for_each(&self, n: usize, f: impl Fn(usize) + Sync) {
        rethrow(self.pool.for_each_index(n, &f));
    }

    /// Runs `f(i, &mut items[i])` for every item, spread over the workers.
    pub fn for_each_mut<T: Send>(&self, items: &mut [T], f: impl Fn(usize, &mut T) + Sync) {
        rethrow(self.pool.for_each_mut(items, &f));
    }

    /// Runs `f(k, chunk)` for consecutive chunks of `slice`, `chunk` elements each (the
    /// last one may be shorter; `chunk` 0 counts as 1), spread over the workers.
    pub fn chunks_mut<T: Send>(
        &self,
        slice: &mut [T],
        chunk: usize,
        f: impl Fn(usize, &mut [T]) + Sync,
    ) {
        rethrow(self.pool.chunks_mut(slice, chunk, &f));
    }
}

impl<'w> Output<'w> {
    /// The worker pool, for this system's own parallel loops ([`Parallel`]).
    pub fn parallel(&self) -> Parallel<'w> {
        Parallel { pool: self.pool }
    }

    /// Folds every entity matching `Q` into one value, in parallel parts: each part of the
    /// query (consecutive rows, in iteration order) is folded by `fold` into its own
    /// `identity()`, then the parts are combined in iteration order with `combine` —
    /// `((p0 · p1) · p2) · ...`. The parts are cut by row count only, never by the worker
    /// count, so the result is the same bits at every worker count and single-threaded,
    /// floating-point sums included (which differ from one sequential sum's last bits).
    ///
    /// ```
    /// use runsync::prelude::*;
    /// #[derive(Clone, Copy)] struct Mass(f32);
    /// impl Component for Mass { type Output = Mass; }
    /// let mut world = World::new();
    /// world.register::<Mass>(merge::last);
    /// for i in 0..5000 { world.spawn((Mass(i as f32),)); }
    /// let mut rt = Runtime::builder().workers(2).build(world);
    /// rt.add_system(|_: &World, out: &mut Output| {
    ///     let (total, n) = out.par_reduce::<(&Mass,), (f64, usize)>(
    ///         || (0.0, 0),
    ///         |acc, _e, (m,)| { acc.0 += f64::from(m.0); acc.1 += 1 },
    ///         |acc, part| { acc.0 += part.0; acc.1 += part.1 },
    ///     );
    ///     assert_eq!((total, n), (12_497_500.0, 5000));
    /// });
    /// rt.frame();
    /// ```
    ///
    /// Cost: at most 64 parts of at least 1,024 rows; a part starts with a skip to its
    /// first row (no rows read, see [`QueryIter::rows`](crate::QueryIter::rows)), and the parts' values wait on the stack until combined,
    /// so keep `A` small (a sum, a few counters, a fixed array).
    ///
    /// # Panics
    /// If a type in `Q` is not registered; a panic in a closure fails the frame like a
    /// panic in the system itself.
    #[track_caller]
    pub fn par_reduce<Q: QueryData, A: Send>(
        &self,
        identity: impl Fn() -> A + Sync,
        fold: impl Fn(&mut A, Entity, Q::Item<'w>) + Sync,
        mut combine: impl FnMut(&mut A, A),
    ) -> A {
        let world = self.world;
        let (part, parts) = query_parts(world.query::<Q>().len());
        let mut accs: [Option<A>; REDUCE_PARTS] = std::array::from_fn(|_| None);
        self.parallel()
            .for_each_mut(&mut accs[..parts], |k, part_acc| {
                let mut acc = identity();
                world
                    .query::<Q>()
                    .rows(k * part..(k + 1) * part)
                    .for_each(|(e, item)| fold(&mut acc, e, item));
                *part_acc = Some(acc);
            });
        let mut values = accs
            .into_iter()
            .take(parts)
            .map(|a| a.expect("every part ran"));
        let mut acc = values.next().expect("at least one part");
        for v in values {
            combine(&mut acc, v);
        }
        acc
    }

    /// [`par_reduce`](Self::par_reduce) into accumulators the caller keeps: the query's
    /// parts (cut as `par_reduce` cuts them) are folded into `parts[0]`, `parts[1]`, ...,
    /// each first `reset`, and `parts` is left holding exactly one per part, in iteration
    /// order, for the caller to combine. Accumulators that own buffers (a vector per
    /// part) keep them from frame to frame: a steady frame allocates nothing.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// #[derive(Clone, Copy)] struct Team(u8);
    /// impl Component for Team { type Output = Team; }
    /// let mut world = World::new();
    /// world.register::<Team>(merge::last);
    /// for i in 0..3000 { world.spawn((Team((i % 3) as u8),)); }
    /// let mut rt = Runtime::builder().workers(2).build(world);
    /// let mut parts: Vec<Vec<u32>> = Vec::new(); // a count per team, per part
    /// rt.add_system(move |_: &World, out: &mut Output| {
    ///     out.par_fold::<(&Team,), _>(
    ///         &mut parts,
    ///         |counts| { counts.clear(); counts.resize(3, 0) },
    ///         |counts, _e, (t,)| counts[usize::from(t.0)] += 1,
    ///     );
    ///     let blue: u32 = parts.iter().map(|c| c[2]).sum();
    ///     assert_eq!(blue, 1000);
    /// });
    /// rt.frame();
    /// ```
    ///
    /// # Panics
    /// As [`par_reduce`](Self::par_reduce).
    #[track_caller]
    pub fn par_fold<Q: QueryData, A: Default + Send>(
        &self,
        parts: &mut Vec<A>,
        reset: impl Fn(&mut A) + Sync,
        fold: impl Fn(&mut A, Entity, Q::Item<'w>) + Sync,
    ) {
        let world = self.world;
        let (part, n) = query_parts(world.query::<Q>().len());
        parts.truncate(n);
        parts.resize_with(n, A::default);
        self.parallel().for_each_mut(parts, |k, acc| {
            reset(acc);
            world
                .query::<Q>()
                .rows(k * part..(k + 1) * part)
                .for_each(|(e, item)| fold(acc, e, item));
        });
    }
}

/// How [`Output::par_reduce`] and [`Output::par_fold`] cut a query of `rows` rows: the
/// rows per part and the number of parts (at least one) — by row count only.
fn query_parts(rows: usize) -> (usize, usize) {
    let part = rows
        .div_ceil(REDUCE_PARTS)
        .max(REDUCE_MIN_PART)
        .min(rows.max(1));
    (part, rows.div_ceil(part).max(1))
}
