//! Parallel writes inside one system: [`Output::write_each`],
//! [`Output::write_each_some`] and [`Output::par_for_each`].

use super::{Chunk, Output, SystemOutputs};
use crate::component::Component;
use crate::entity::Entity;
use crate::output::buffer::row_writes::FillPart;
use crate::pool::Pool;
use crate::query::{QueryData, QueryOut, QueryState, With, keeps};

/// Rows per part below which [`Output::write_each`] does not split a table over workers.
// Under Miri, tiny parts so that tests with a few dozen rows still take the parallel path.
const FILL_PART: usize = if cfg!(miri) { 8 } else { 16 * 1024 };

/// Rows below which [`Output::par_for_each`] does not make a chunk of its own.
const MIN_CHUNK: usize = if cfg!(miri) { 4 } else { 64 };

/// The fewest chunks [`Output::par_for_each`] cuts its rows into on more than one worker.
const MIN_CHUNKS: usize = 32;

impl<'w> Output<'w> {
    /// Emits `f(entity, item)` as the `C` output of every entity matching `Q` that has a
    /// `C`: the same outputs, in the same order, as
    /// `for (e, (item, _)) in world.query::<(Q, With<C>)>() { out.write::<C>(e, f(e, item)) }`.
    ///
    /// Cost: the values go straight into one vector per table, in row order, with no
    /// target check; a large table is computed in parallel parts on the worker pool (so `f`
    /// must be `Sync`). In Sync each vector is a whole column: with a merge that lets one
    /// output become the value (`last`, and `first`/`min`/`max` when this is the only
    /// output) it is swapped in, no copy. A `Q` with a row filter ([`Changed`], [`Added`])
    /// takes the plain write loop above instead.
    ///
    /// [`Changed`]: crate::Changed
    /// [`Added`]: crate::Added
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy, PartialEq, Debug)] struct Pos(f32);
    /// # impl Component for Pos { type Output = Pos; }
    /// # #[derive(Clone, Copy, PartialEq, Debug)] struct Vel(f32);
    /// # impl Component for Vel { type Output = Vel; }
    /// let mut world = World::new();
    /// world.register::<Pos>(merge::last);
    /// world.register::<Vel>(merge::last);
    /// let e = world.spawn((Pos(1.0), Vel(2.0)));
    /// let mut rt = Runtime::builder().build(world);
    /// rt.add_system(|_: &World, out: &mut Output| {
    ///     out.write_each::<Pos, (&Pos, &Vel)>(|_e, (p, v)| Pos(p.0 + v.0));
    /// });
    /// rt.frame();
    /// assert_eq!(rt.world().get::<Pos>(e), Some(&Pos(3.0)));
    /// ```
    ///
    /// # Panics
    /// If `C` or a type in `Q` is unregistered; a panic in `f` fails the frame like a panic
    /// in the system itself.
    #[track_caller]
    pub fn write_each<C: Component, Q: QueryData>(
        &mut self,
        f: impl Fn(Entity, Q::Item<'w>) -> C::Output + Sync,
    ) {
        // This path changes the buffers its own way: the plain path's cursors and
        // remembered addresses are forgotten first, so none is left pointing into a buffer
        // changed since (even if a panic in `f` is caught inside the system).
        self.reset_cursors();
        let world = self.world;
        if Q::FILTERS_ROWS {
            // `Changed` / `Added` keep some rows only: no whole column of values to fill.
            self.write_each_by_handle::<C, Q>(|e, item| Some(f(e, item)));
            return;
        }
        let pool = self.pool;
        let (state, tables) = QueryState::<(Q, With<C>)>::shared(world.storage());
        let id = state.elements.1;
        let buf = self.bufs.typed::<C>(id);
        for table in state.matching_tables(tables) {
            let (cols, ()) = state.shared_columns(table);
            let entities = table.entities();
            crate::profile::visited(entities.len());
            let col = table.column(id).expect("the query requires C");
            let mut values = buf.take_spare(entities.len());
            // `move`: the closure holds copies of the column and entity slices, not
            // references to them, so the fill loop can keep them in registers.
            let f = &f;
            let filled = pool.fill(&mut values, entities.len(), FILL_PART, move |row| {
                let mut cols = cols;
                // SAFETY: `fill` asks for rows `< entities.len()`, the table's length.
                f(entities[row], unsafe { Q::get(&mut cols, row) })
            });
            if let Err(p) = filled {
                values.clear();
                buf.spare.push(values);
                std::panic::resume_unwind(p.payload);
            }
            buf.push_column(col, values);
        }
    }

    /// Emits `f(entity, item)`, where it is `Some`, as the `C` output of every entity
    /// matching `Q` that has a `C`: the same outputs, in the same order, as
    /// `for (e, (item, _)) in world.query::<(Q, With<C>)>() { if let Some(v) = f(e, item) { out.write::<C>(e, v) } }`,
    /// or as a [`par_for_each`](Self::par_for_each) that sets a `Write<C>` where `f`
    /// gives a value.
    ///
    /// Cost: one store a value, into one vector per table in row order, like
    /// [`write_each`](Self::write_each) (a large table computed in parallel parts on the
    /// worker pool): no presence flag is written or read while every row of a part gets a
    /// value, so a table where every entity writes costs what `write_each` costs, and
    /// Sync can swap its vector in. From a part's first `None` on, each of its rows
    /// stores a flag, as a row write does. A `Q` with a row filter ([`Changed`],
    /// [`Added`]) takes the plain write loop above instead.
    ///
    /// [`Changed`]: crate::Changed
    /// [`Added`]: crate::Added
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy, PartialEq, Debug)] struct Pos(f32);
    /// # impl Component for Pos { type Output = Pos; }
    /// # #[derive(Clone, Copy, PartialEq, Debug)] struct Vel(f32);
    /// # impl Component for Vel { type Output = Vel; }
    /// let mut world = World::new();
    /// world.register::<Pos>(merge::last);
    /// world.register::<Vel>(merge::last);
    /// let moving = world.spawn((Pos(1.0), Vel(2.0)));
    /// let resting = world.spawn((Pos(5.0), Vel(0.0)));
    /// let mut rt = Runtime::builder().build(world);
    /// rt.add_system(|_: &World, out: &mut Output| {
    ///     out.write_each_some::<Pos, (&Pos, &Vel)>(|_e, (p, v)| {
    ///         (v.0 != 0.0).then(|| Pos(p.0 + v.0))
    ///     });
    /// });
    /// rt.frame();
    /// assert_eq!(rt.world().get::<Pos>(moving), Some(&Pos(3.0)));
    /// assert_eq!(rt.world().get::<Pos>(resting), Some(&Pos(5.0)));
    /// assert_eq!(rt.stats().systems[0].writes, 1);
    /// ```
    ///
    /// # Panics
    /// If `C` or a type in `Q` is unregistered; a panic in `f` fails the frame like a panic
    /// in the system itself.
    #[track_caller]
    pub fn write_each_some<C: Component, Q: QueryData>(
        &mut self,
        f: impl Fn(Entity, Q::Item<'w>) -> Option<C::Output> + Sync,
    ) {
        // This path changes the buffers its own way: the plain path's cursors and
        // remembered addresses are forgotten first, so none is left pointing into a buffer
        // changed since (even if a panic in `f` is caught inside the system).
        self.reset_cursors();
        let world = self.world;
        if Q::FILTERS_ROWS {
            // `Changed` / `Added` keep some rows only: no whole column to fill.
            self.write_each_by_handle::<C, Q>(f);
            return;
        }
        let pool = self.pool;
        let (state, tables) = QueryState::<(Q, With<C>)>::shared(world.storage());
        let id = state.elements.1;
        let buf = self.bufs.typed::<C>(id);
        for table in state.matching_tables(tables) {
            let (cols, ()) = state.shared_columns(table);
            let entities = table.entities();
            let rows = entities.len();
            crate::profile::visited(rows);
            if rows == 0 {
                continue;
            }
            let col = table.column(id).expect("the query requires C");
            let base = buf.fill_rows(col, rows);
            // Split as `Pool::fill` splits `write_each`'s tables.
            let n = pool.fill_parts(rows, FILL_PART);
            let size = rows.div_ceil(n);
            let mut parts: [FillPart; Pool::MAX_FILL_PARTS] = std::array::from_fn(|k| {
                FillPart::new((k * size).min(rows)..((k + 1) * size).min(rows))
            });
            let f = &f;
            let fill = move |part: &mut FillPart| {
                let mut cols = cols;
                base.fill(part, entities, |e, row| {
                    // SAFETY: `fill` asks for the rows of its part, `< rows`, the table's
                    // length, each once.
                    f(e, unsafe { Q::get(&mut cols, row) })
                });
            };
            let result = if n == 1 {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fill(&mut parts[0])))
            } else {
                pool.for_each_mut(&mut parts[..n], &|_, part| fill(part))
                    .map_err(|p| p.payload)
            };
            buf.filled(&parts[..n]);
            if let Err(payload) = result {
                std::panic::resume_unwind(payload);
            }
        }
    }

    /// The plain write loop that [`write_each`](Self::write_each) and
    /// [`write_each_some`](Self::write_each_some) stand for (the same outputs, in the
    /// same order), which they take for a `Q` with a row filter.
    fn write_each_by_handle<C: Component, Q: QueryData>(
        &mut self,
        f: impl Fn(Entity, Q::Item<'w>) -> Option<C::Output>,
    ) {
        for (e, (item, ())) in self.world.query::<(Q, With<C>)>() {
            if let Some(v) = f(e, item) {
                self.write::<C>(e, v);
            }
        }
    }

    /// Runs `f` for every entity matching `Q`, in parallel chunks on the worker pool.
    ///
    /// `Q` is what [`Output::query`] takes, [`Write<C>`](crate::Write) elements included:
    /// `f` sets a row's write handles (each chunk writes its own rows of the table's
    /// output column: no copy, no merge of chunks) and may emit any other write or
    /// command through the `out` it is handed (a chunk's own buffer). The result is that
    /// of a sequential loop over the query, at any worker count: the `out` writes of every
    /// chunk are moved behind this system's in iteration order. Of one component type, the
    /// row writes come before the `out` writes of the same `par_for_each`.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy, PartialEq, Debug)] struct Pos(f32);
    /// # impl Component for Pos { type Output = Pos; }
    /// # let mut world = World::new();
    /// # world.register::<Pos>(merge::last);
    /// # for i in 0..1000 { world.spawn((Pos(i as f32),)); }
    /// # let mut rt = Runtime::builder().workers(2).build(world);
    /// rt.add_system(|_world: &World, out: &mut Output| {
    ///     out.par_for_each::<(&Pos, Write<Pos>)>(|_e, (p, mut pos), _out| pos.set(Pos(p.0 * 2.0)));
    /// });
    /// rt.frame();
    /// # assert_eq!(rt.world().query::<(&Pos,)>().map(|(_, (p,))| p.0).sum::<f32>(), 999_000.0);
    /// ```
    ///
    /// Cost: a row write costs what it costs in [`Output::query`]; the chunks of one
    /// table run together (tables smaller than a chunk run on this thread).
    ///
    /// # Panics
    /// If a type in `Q` is unregistered, or written twice; a panic in `f` fails the frame
    /// like a panic in the system itself.
    #[track_caller]
    pub fn par_for_each<Q: QueryOut>(
        &mut self,
        f: impl Fn(Entity, Q::Item<'_>, &mut Output<'_>) + Sync,
    ) {
        // This path changes the buffers its own way: the plain path's cursors and
        // remembered addresses are forgotten first, so none is left pointing into a buffer
        // changed since (even if a panic in `f` is caught inside the system).
        self.reset_cursors();
        let world = self.world;
        let pool = self.pool;
        let threads = pool.threads();
        let mut subs = std::mem::take(&mut self.bufs.chunks);
        let mut ranges = std::mem::take(&mut self.bufs.chunk_ranges);
        let (mut state, mut tables) =
            QueryState::<Q>::with_outputs(world.storage(), &mut *self.bufs);
        // On one worker, one chunk a table: the same outputs (chunks are absorbed in
        // order), without the chunks' bookkeeping. On more, at least `MIN_CHUNKS` chunks
        // (four a worker past 8): enough that an idle worker always finds one, and that
        // the longest chunk — the system's span — stays a small part of its work whatever
        // the worker count the frame is measured at.
        let chunk = if threads == 1 {
            usize::MAX
        } else {
            let total: usize = state.matching_tables(tables.clone()).map(|t| t.len()).sum();
            total.div_ceil((threads * 4).max(MIN_CHUNKS)).max(MIN_CHUNK)
        };
        // Sub-buffers used so far: chunk `k`'s `out` writes go to `subs[k]`, absorbed in
        // this order at the end.
        let mut used = 0;
        let mut result = Ok(());
        while let Some((entities, columns)) = state.next_table(&mut tables) {
            ranges.clear();
            let mut start = 0;
            while start < entities.len() {
                let end = start + chunk.min(entities.len() - start);
                ranges.push(Chunk {
                    start: start as u32,
                    end: end as u32,
                });
                start = end;
            }
            if subs.len() < used + ranges.len() {
                subs.resize_with(used + ranges.len(), SystemOutputs::default);
            }
            let run_chunk = |i: usize, sub: &mut SystemOutputs| {
                let c = ranges[i];
                let mut cols = columns;
                let mut out = Output::new(world, pool, sub, None);
                let (start, end) = (c.start as usize, c.end as usize);
                for (&e, row) in entities[start..end].iter().zip(start..end) {
                    if !Q::FILTERS_ROWS || keeps::<Q>(&cols, row) {
                        // SAFETY: `row < entities.len()`, the table's length; the chunks
                        // of a table cover disjoint rows, so each row's write handle is
                        // made once.
                        let item = unsafe { Q::get(&mut cols, row) };
                        f(e, item, &mut out);
                    }
                }
            };
            let mine = &mut subs[used..used + ranges.len()];
            result = if threads == 1 || mine.len() == 1 {
                // Nobody to share with, or one chunk: on this thread.
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    for (i, sub) in mine.iter_mut().enumerate() {
                        run_chunk(i, sub);
                    }
                }))
            } else {
                pool.for_each_mut(mine, &run_chunk).map_err(|p| p.payload)
            };
            used += ranges.len();
            if result.is_err() {
                break;
            }
        }
        // The row writes' columns are in this system's buffers already; the chunks'
        // writes follow them, in iteration order.
        drop(state);
        for sub in &mut subs[..used] {
            if result.is_ok() {
                self.bufs.absorb(sub);
            } else {
                sub.clear();
            }
        }
        self.bufs.chunks = subs;
        self.bufs.chunk_ranges = ranges;
        if let Err(payload) = result {
            std::panic::resume_unwind(payload);
        }
    }
}
