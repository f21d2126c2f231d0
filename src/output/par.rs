//! Parallel writes inside one system: [`Output::write_each`] and
//! [`Output::par_for_each`].

use super::{Chunk, Output, SystemOutputs};
use crate::component::Component;
use crate::entity::Entity;
use crate::query::{QueryData, QueryState, With, keeps};

/// Rows per part below which [`Output::write_each`] does not split a table over workers.
// Under Miri, tiny parts so that tests with a few dozen rows still take the parallel path.
const FILL_PART: usize = if cfg!(miri) { 8 } else { 16 * 1024 };

/// Rows below which [`Output::par_for_each`] does not make a chunk of its own.
const MIN_CHUNK: usize = if cfg!(miri) { 4 } else { 64 };

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
        let world = self.world;
        if Q::FILTERS_ROWS {
            // `Changed` / `Added` keep some rows only: no whole column of values to fill,
            // so the plain write loop (same outputs, same order).
            for (e, (item, ())) in world.query::<(Q, With<C>)>() {
                let v = f(e, item);
                self.write::<C>(e, v);
            }
            return;
        }
        let pool = self.pool;
        let (state, tables) = QueryState::<(Q, With<C>)>::shared(world.storage());
        let id = state.elements.1;
        let buf = self.bufs.typed::<C>(id);
        for table in state.matching_tables(tables) {
            let (cols, ()) = state.shared_columns(table);
            let entities = table.entities();
            let col = table.column(id).expect("the query requires C");
            let mut values = buf.spare.pop().unwrap_or_default();
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
        self.reset_cursors();
    }

    /// Runs `f` for every entity matching `Q`, in parallel chunks on the worker pool.
    ///
    /// Each chunk writes into its own sub-buffer with the plain write path; the
    /// sub-buffers' value vectors are then moved (not copied) behind this system's, in
    /// iteration order, so the result is exactly that of a sequential `for` loop over
    /// `world.query::<Q>()`, whatever the worker count. With one worker it *is* that loop.
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
    ///     out.par_for_each::<(&Pos,)>(|e, (p,), out| out.write::<Pos>(e, Pos(p.0 * 2.0)));
    /// });
    /// rt.frame();
    /// # assert_eq!(rt.world().query::<(&Pos,)>().map(|(_, (p,))| p.0).sum::<f32>(), 999_000.0);
    /// ```
    ///
    /// # Panics
    /// If a type in `Q` is unregistered; a panic in `f` fails the frame like a panic in the
    /// system itself.
    #[track_caller]
    pub fn par_for_each<Q: QueryData>(
        &mut self,
        f: impl Fn(Entity, Q::Item<'w>, &mut Output<'_>) + Sync,
    ) {
        let world = self.world;
        let (state, tables) = QueryState::<Q>::shared(world.storage());
        if self.pool.threads() == 1 {
            // Nobody to share with: a plain loop gives the same outputs without chunks.
            // `spawn` is refused as in chunks, so that a system behaves the same at any
            // worker count (the guard restores it, also if `f` panics).
            struct Restore<'a, 'w>(&'a mut Output<'w>, Option<usize>);
            impl Drop for Restore<'_, '_> {
                fn drop(&mut self) {
                    self.0.system = self.1;
                }
            }
            let system = self.system.take();
            let out = Restore(self, system);
            for table in state.matching_tables(tables) {
                let mut cols = state.shared_columns(table);
                for (row, &e) in table.entities().iter().enumerate() {
                    if !Q::FILTERS_ROWS || keeps::<Q>(&cols, row) {
                        // SAFETY: `row` indexes the table's entity list.
                        f(e, unsafe { Q::get(&mut cols, row) }, &mut *out.0);
                    }
                }
            }
            return;
        }
        let mut ranges = std::mem::take(&mut self.bufs.chunk_ranges);
        ranges.clear();
        let total: usize = state.matching_tables(tables.clone()).map(|t| t.len()).sum();
        let target = (self.pool.threads() * 4).max(1);
        let chunk = total.div_ceil(target).max(MIN_CHUNK);
        for table in state.matching_tables(tables) {
            let len = table.len() as u32;
            let mut start = 0;
            while start < len {
                let end = (start + chunk as u32).min(len);
                ranges.push(Chunk {
                    table: table.id(),
                    start,
                    end,
                });
                start = end;
            }
        }
        let n = ranges.len();
        let mut subs = std::mem::take(&mut self.bufs.chunks);
        if subs.len() < n {
            subs.resize_with(n, SystemOutputs::default);
        }
        let pool = self.pool;
        let run_chunk = |i: usize, sub: &mut SystemOutputs| {
            let c = ranges[i];
            let table = state.table(c.table);
            let mut cols = state.shared_columns(table);
            let entities = table.entities();
            let mut out = Output::new(world, pool, sub, None);
            let (start, end) = (c.start as usize, c.end as usize);
            for (row, &e) in entities[start..end].iter().enumerate() {
                if !Q::FILTERS_ROWS || keeps::<Q>(&cols, start + row) {
                    // SAFETY: `start + row < end <= table.len()` (a chunk's rows).
                    f(e, unsafe { Q::get(&mut cols, start + row) }, &mut out);
                }
            }
        };
        let result = pool.for_each_mut(&mut subs[..n], &run_chunk);
        for sub in &mut subs[..n] {
            if result.is_ok() {
                self.bufs.absorb(sub);
            } else {
                sub.clear();
            }
        }
        self.bufs.chunks = subs;
        self.bufs.chunk_ranges = ranges;
        self.reset_cursors();
        if let Err(p) = result {
            std::panic::resume_unwind(p.payload);
        }
    }
}
