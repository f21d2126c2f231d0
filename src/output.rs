//! Per-system output buffers and the [`Output`] handle systems write through.
//!
//! Each system owns one [`SystemOutputs`]: a typed buffer per component type it has written
//! (targets and values side by side), plus its structural commands in emission order.
//! Buffers are created on first use and kept, cleared, across frames, so a steady-state
//! frame allocates nothing. No other thread touches a system's buffers during Run, so
//! writes are plain `Vec::push`es.

use std::any::{Any, TypeId};
use std::collections::VecDeque;

use crate::bundle::{Bundle, BundleSink, Sink};
use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::pool::Pool;
use crate::query::QueryData;
use crate::world::World;

/// The outputs of one system for one component type.
pub(crate) struct OutputBuffer<C: Component> {
    /// Target of each write, in emission order.
    pub(crate) targets: Vec<Entity>,
    /// Value of each write (parallel to `targets`).
    pub(crate) values: Vec<C::Output>,
    /// Sync scratch: the sort key of each write.
    pub(crate) keys: Vec<u64>,
    /// Values for `insert` / `spawn` commands, in emission order.
    pub(crate) inserts: VecDeque<C>,
    /// Whole-column writes from [`Output::write_each`], in emission order.
    pub(crate) fills: Vec<Fill<C::Output>>,
    /// Emptied `Fill::values` vectors, reused by the next `write_each`.
    pub(crate) spare: Vec<Vec<C::Output>>,
    /// Sync scratch for flattening fills into `targets` / `values` (capacity kept).
    pub(crate) scratch_targets: Vec<Entity>,
    pub(crate) scratch_values: Vec<C::Output>,
}

/// One table's worth of outputs from [`Output::write_each`]: `values[row]` is the output
/// for the entity in row `row` of `table`, so no target list is stored.
pub(crate) struct Fill<O> {
    pub(crate) table: u32,
    /// Emitted after this many of the buffer's `targets` (for emission order).
    pub(crate) at: u32,
    pub(crate) values: Vec<O>,
}

impl<C: Component> Default for OutputBuffer<C> {
    fn default() -> Self {
        OutputBuffer {
            targets: Vec::new(),
            values: Vec::new(),
            keys: Vec::new(),
            inserts: VecDeque::new(),
            fills: Vec::new(),
            spare: Vec::new(),
            scratch_targets: Vec::new(),
            scratch_values: Vec::new(),
        }
    }
}

impl<C: Component> OutputBuffer<C> {
    #[inline]
    fn push(&mut self, e: Entity, v: C::Output) {
        self.targets.push(e);
        self.values.push(v);
    }

    /// Empties every fill and keeps its vector for reuse.
    pub(crate) fn recycle_fills(&mut self) {
        for mut fill in self.fills.drain(..) {
            fill.values.clear();
            self.spare.push(fill.values);
        }
    }
}

/// The type-erased face of [`OutputBuffer`].
pub(crate) trait AnyBuffer: Send + Sync {
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Number of writes (not counting insert values).
    fn writes(&self) -> usize;
    /// Clears the writes, keeping capacity.
    fn clear_writes(&mut self);
    /// Clears writes and pending inserts, keeping capacity.
    fn clear_all(&mut self);
    /// A new empty buffer of the same type.
    fn empty_like(&self) -> Box<dyn AnyBuffer>;
    /// Moves all of `other`'s writes and inserts to the end of `self`.
    fn append(&mut self, other: &mut dyn AnyBuffer);
    /// Bytes reserved by this buffer.
    fn capacity_bytes(&self) -> usize;
}

impl<C: Component> AnyBuffer for OutputBuffer<C> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn writes(&self) -> usize {
        self.targets.len() + self.fills.iter().map(|f| f.values.len()).sum::<usize>()
    }
    fn clear_writes(&mut self) {
        self.targets.clear();
        self.values.clear();
        self.keys.clear();
        self.recycle_fills();
    }
    fn clear_all(&mut self) {
        self.clear_writes();
        self.inserts.clear();
    }
    fn empty_like(&self) -> Box<dyn AnyBuffer> {
        Box::new(OutputBuffer::<C>::default())
    }
    fn append(&mut self, other: &mut dyn AnyBuffer) {
        let other = other
            .as_any_mut()
            .downcast_mut::<OutputBuffer<C>>()
            .expect("appending a buffer of another type");
        let offset = self.targets.len() as u32;
        for mut fill in other.fills.drain(..) {
            fill.at += offset;
            self.fills.push(fill);
        }
        self.targets.append(&mut other.targets);
        self.values.append(&mut other.values);
        self.inserts.append(&mut other.inserts);
    }
    fn capacity_bytes(&self) -> usize {
        use std::mem::size_of;
        self.targets.capacity() * size_of::<Entity>()
            + self.values.capacity() * size_of::<C::Output>()
            + self.keys.capacity() * size_of::<u64>()
            + self.inserts.capacity() * size_of::<C>()
    }
}

/// A deferred structural change, applied in Sync after all merges.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Command {
    Despawn(Entity),
    Remove(Entity, ComponentId),
    /// The value waits in the system's buffer for that type.
    Insert(Entity, ComponentId),
    /// The next `n` ids of `spawn_types`, values waiting in the buffers.
    Spawn(u32),
}

/// One rectangle of a parallel iteration: rows `start..end` of a table.
#[derive(Clone, Copy)]
pub(crate) struct Chunk {
    pub(crate) table: u32,
    pub(crate) start: u32,
    pub(crate) end: u32,
}

/// Everything one system (or one chunk of a parallel iteration) emitted.
#[derive(Default)]
pub(crate) struct SystemOutputs {
    /// Typed buffers by component id; `None` until the system first writes the type.
    pub(crate) buffers: Vec<Option<Box<dyn AnyBuffer>>>,
    pub(crate) commands: Vec<Command>,
    pub(crate) spawn_types: Vec<ComponentId>,
    /// The last type looked up by `Output::write`, to skip the registry lookup.
    cache: Option<(TypeId, ComponentId)>,
    /// Sub-buffers for parallel iteration, one per chunk, kept across frames.
    chunks: Vec<SystemOutputs>,
    chunk_ranges: Vec<Chunk>,
}

impl SystemOutputs {
    /// Total writes over all types.
    pub(crate) fn writes(&self) -> usize {
        self.buffers.iter().flatten().map(|b| b.writes()).sum()
    }

    /// Bytes reserved by all buffers, commands and chunk sub-buffers.
    pub(crate) fn capacity_bytes(&self) -> usize {
        use std::mem::size_of;
        self.buffers
            .iter()
            .flatten()
            .map(|b| b.capacity_bytes())
            .sum::<usize>()
            + self.buffers.capacity() * size_of::<Option<Box<dyn AnyBuffer>>>()
            + self.commands.capacity() * size_of::<Command>()
            + self.spawn_types.capacity() * size_of::<ComponentId>()
            + self.chunk_ranges.capacity() * size_of::<Chunk>()
            + self
                .chunks
                .iter()
                .map(|c| c.capacity_bytes())
                .sum::<usize>()
    }

    /// Forgets everything emitted (capacity kept).
    pub(crate) fn clear(&mut self) {
        for b in self.buffers.iter_mut().flatten() {
            b.clear_all();
        }
        self.commands.clear();
        self.spawn_types.clear();
    }

    /// Appends `other` after everything in `self`, leaving `other` empty.
    fn absorb(&mut self, other: &mut SystemOutputs) {
        if self.buffers.len() < other.buffers.len() {
            self.buffers.resize_with(other.buffers.len(), || None);
        }
        for (mine, theirs) in self.buffers.iter_mut().zip(other.buffers.iter_mut()) {
            if let Some(theirs) = theirs {
                mine.get_or_insert_with(|| theirs.empty_like())
                    .append(&mut **theirs);
            }
        }
        self.commands.append(&mut other.commands);
        self.spawn_types.append(&mut other.spawn_types);
    }

    /// The id of `C`, remembering the last type looked up.
    #[inline]
    #[track_caller]
    fn id<C: Component>(&mut self, world: &World) -> ComponentId {
        match self.cache {
            Some((t, id)) if t == TypeId::of::<C>() => id,
            _ => {
                let id = world.registry().id::<C>();
                self.cache = Some((TypeId::of::<C>(), id));
                id
            }
        }
    }

    #[inline]
    fn buffer<C: Component>(&mut self, world: &World) -> &mut OutputBuffer<C> {
        let id = self.id::<C>(world);
        self.typed_buffer::<C>(id)
    }

    pub(crate) fn typed_buffer<C: Component>(&mut self, id: ComponentId) -> &mut OutputBuffer<C> {
        if self.buffers.len() <= id.index() {
            self.buffers.resize_with(id.index() + 1, || None);
        }
        self.buffers[id.index()]
            .get_or_insert_with(|| Box::new(OutputBuffer::<C>::default()))
            .as_any_mut()
            .downcast_mut()
            .expect("component id maps to another type")
    }
}

/// Where a system sends its outputs during Run.
///
/// Everything written here becomes visible only after Sync: writes are folded into
/// components by their registered merge, then structural commands (despawn, remove,
/// insert, spawn) are applied in system registration order, then emission order.
/// Every method is a push onto a buffer only this system touches: no locks, no atomics.
pub struct Output<'a> {
    world: &'a World,
    pool: &'a Pool,
    bufs: &'a mut SystemOutputs,
}

impl<'a> Output<'a> {
    pub(crate) fn new(world: &'a World, pool: &'a Pool, bufs: &'a mut SystemOutputs) -> Self {
        Output { world, pool, bufs }
    }

    /// Emits `value` for component `C` of entity `e`, to be merged in Sync.
    ///
    /// Cost: a type check against the last type written, then two `Vec` pushes. In a hot
    /// loop over one type, [`writer`](Self::writer) skips the type check.
    ///
    /// If `e` is dead or has no `C` by Sync, the write is dropped and counted in
    /// [`FrameStats::dropped`](crate::FrameStats::dropped).
    ///
    /// # Panics
    /// If `C` is not registered (the frame then fails; see [`Runtime::try_frame`](crate::Runtime::try_frame)).
    #[inline]
    pub fn write<C: Component>(&mut self, e: Entity, value: C::Output) {
        self.bufs.buffer::<C>(self.world).push(e, value);
    }

    /// A writer for one component type, for hot loops: each
    /// [`Writer::write`] is two `Vec` pushes.
    ///
    /// # Panics
    /// If `C` is not registered.
    #[inline]
    pub fn writer<C: Component>(&mut self) -> Writer<'_, C> {
        Writer {
            buf: self.bufs.buffer::<C>(self.world),
        }
    }

    /// Emits `f(entity, item)` as the `C` output of every entity matching `Q` that has a
    /// `C`: the same outputs, in the same order, as
    /// `for (e, (item, _)) in world.query::<(Q, With<C>)>() { out.write::<C>(e, f(e, item)) }`.
    ///
    /// Cost: the values go straight into one buffer per table, in row order, with no
    /// target list; a large table is computed in parallel parts on the worker pool (so `f`
    /// must be `Sync`). In Sync, when this system is the only one that wrote `C` this
    /// frame, wrote it only through `write_each`, and `C` merges with
    /// [`merge::last`](crate::merge::last), each buffer is swapped in for the stored column
    /// whole: no per-entity merge and no copy. Otherwise the outputs merge like `write`'s.
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
    pub fn write_each<C: Component, Q: QueryData>(
        &mut self,
        f: impl Fn(Entity, Q::Item<'a>) -> C::Output + Sync,
    ) {
        let world = self.world;
        let pool = self.pool;
        let state = <(Q, crate::query::With<C>)>::init(world);
        let buf = self.bufs.typed_buffer::<C>(state.1);
        for t in crate::query::matching_tables::<(Q, crate::query::With<C>)>(world, &state) {
            let cols = Q::columns(&state.0, world, t);
            let entities = world.table_entities(t);
            let mut values = buf.spare.pop().unwrap_or_default();
            // `move`: the closure holds copies of the column and entity slices, not
            // references to them, so the fill loop can keep them in registers.
            let f = &f;
            let filled = pool.fill(&mut values, entities.len(), FILL_PART, move |row| {
                f(entities[row], Q::get(&cols, row))
            });
            if let Err(p) = filled {
                values.clear();
                buf.spare.push(values);
                std::panic::resume_unwind(p.payload);
            }
            buf.fills.push(Fill {
                table: t,
                at: buf.targets.len() as u32,
                values,
            });
        }
    }

    /// Spawns an entity with `bundle` (a tuple of components) in Sync. Its id is assigned
    /// in Sync, deterministically; it first appears in the next frame's Run.
    ///
    /// # Panics
    /// If a component type is unregistered or named twice in the bundle.
    pub fn spawn<B: Bundle>(&mut self, bundle: B) {
        let start = self.bufs.spawn_types.len();
        bundle.put(&mut BundleSink(Sink::Output {
            world: self.world,
            bufs: self.bufs,
            start,
        }));
        let n = self.bufs.spawn_types.len() - start;
        self.bufs.commands.push(Command::Spawn(n as u32));
    }

    /// Despawns `e` in Sync. Despawning a dead entity (or one despawned twice) is a no-op,
    /// counted in [`FrameStats::dropped`](crate::FrameStats::dropped).
    #[inline]
    pub fn despawn(&mut self, e: Entity) {
        self.bufs.commands.push(Command::Despawn(e));
    }

    /// Inserts (or replaces) component `C` of `e` in Sync.
    ///
    /// # Panics
    /// If `C` is not registered.
    pub fn insert<C: Component>(&mut self, e: Entity, component: C) {
        let id = self.bufs.id::<C>(self.world);
        self.bufs.typed_buffer::<C>(id).inserts.push_back(component);
        self.bufs.commands.push(Command::Insert(e, id));
    }

    /// Removes component `C` from `e` in Sync (a no-op if it has none).
    ///
    /// # Panics
    /// If `C` is not registered.
    pub fn remove<C: Component>(&mut self, e: Entity) {
        let id = self.bufs.id::<C>(self.world);
        self.bufs.commands.push(Command::Remove(e, id));
    }

    /// The world this system is reading (the state the previous Sync left).
    #[inline]
    pub fn world(&self) -> &'a World {
        self.world
    }

    /// Runs `f` for every entity matching `Q`, in parallel chunks on the worker pool.
    ///
    /// Each chunk writes into its own sub-buffer; the sub-buffers are appended to this
    /// system's buffer in iteration order, so the result is exactly that of a sequential
    /// `for` loop over `world.query::<Q>()`, whatever the worker count.
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
    pub fn par_for_each<Q: QueryData>(
        &mut self,
        f: impl Fn(Entity, Q::Item<'a>, &mut Output<'_>) + Sync,
    ) {
        let world = self.world;
        let state = Q::init(world);
        if self.pool.threads() == 1 {
            // Nobody to share with: a plain loop gives the same outputs without chunk copies.
            for t in crate::query::matching_tables::<Q>(world, &state) {
                let cols = Q::columns(&state, world, t);
                for (row, &e) in world.table_entities(t).iter().enumerate() {
                    f(e, Q::get(&cols, row), self);
                }
            }
            return;
        }
        let mut ranges = std::mem::take(&mut self.bufs.chunk_ranges);
        ranges.clear();
        let total: usize = crate::query::matching_tables::<Q>(world, &state)
            .map(|t| world.table_len(t))
            .sum();
        let target = (self.pool.threads() * 4).max(1);
        let chunk = total.div_ceil(target).max(64);
        for t in crate::query::matching_tables::<Q>(world, &state) {
            let len = world.table_len(t) as u32;
            let mut start = 0;
            while start < len {
                let end = (start + chunk as u32).min(len);
                ranges.push(Chunk {
                    table: t,
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
            let cols = Q::columns(&state, world, c.table);
            let entities = world.table_entities(c.table);
            let mut out = Output::new(world, pool, sub);
            let (start, end) = (c.start as usize, c.end as usize);
            for (row, &e) in entities[start..end].iter().enumerate() {
                f(e, Q::get(&cols, start + row), &mut out);
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
        if let Err(p) = result {
            std::panic::resume_unwind(p.payload);
        }
    }
}

/// Rows per part below which [`Output::write_each`] does not split a table over workers.
// Under Miri, tiny parts so that tests with a few dozen rows still take the parallel path.
const FILL_PART: usize = if cfg!(miri) { 8 } else { 16 * 1024 };

/// A typed writer for one component type; see [`Output::writer`].
pub struct Writer<'o, C: Component> {
    buf: &'o mut OutputBuffer<C>,
}

impl<C: Component> Writer<'_, C> {
    /// Emits `value` for `e`; see [`Output::write`].
    #[inline]
    pub fn write(&mut self, e: Entity, value: C::Output) {
        self.buf.push(e, value);
    }

    /// Reserves room for `additional` more writes.
    pub fn reserve(&mut self, additional: usize) {
        self.buf.targets.reserve(additional);
        self.buf.values.reserve(additional);
    }
}
