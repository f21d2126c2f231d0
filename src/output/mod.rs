//! Outputs: what systems emit during Run, and the handle they emit it through.
//!
//! - This file: the [`Output`] handle and the typed [`Writer`]; [`Output`] says which
//!   write path costs what.
//! - [`buffer`]: the buffers outputs are kept in until Sync folds them, as plain data. It
//!   sits on a low layer of its own (below the folds and the world; see the layer list in
//!   `lib.rs`): everything else here is above the world.
//! - `par_write`: parallel writes inside one system, [`Output::write_each`],
//!   [`Output::write_each_some`] and [`Output::par_for_each`].
//! - `par_loops`: a system's own parallel loops that write no outputs, the [`Parallel`]
//!   handle and [`Output::par_reduce`].
//! - [`send`]: messages, [`Output::send`] and the typed [`Sender`](send::Sender).

pub(crate) mod buffer;
mod par_loops;
mod par_write;
pub(crate) mod send;

use std::any::TypeId;

use crate::output::buffer::addr::BufAddr;
pub use crate::output::buffer::row_writes::RowWrite;
pub(crate) use crate::output::buffer::{CACHED_TYPES, Chunk, OutBuf, SystemOutputs};
pub use par_loops::Parallel;

use crate::bundle::Bundle;
use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::erased::Erased;
use crate::output::buffer::RowCursor;
use crate::pool::Pool;
use crate::query::{QueryOut, QueryOutIter};
use crate::world::World;

/// One remembered type: its id, where its next in-order write goes, and the system's
/// buffer for it once a plain write has found it.
#[derive(Clone, Copy)]
struct CachedType<'w> {
    ty: TypeId,
    id: ComponentId,
    /// The next in-order write's row and slot, for the value type of `ty` (a cursor's
    /// slot points into the buffer, so it goes and is forgotten with `buf`).
    cursor: RowCursor<'w, ()>,
    /// The buffer of type `ty`, or none: set by `write` from `bufs`; forgotten (by
    /// `reset_cursors`, or `writer` for its type) whenever anything else reaches the
    /// buffers, before the next plain write, so it is only ever used while it is the one
    /// way to the buffer.
    buf: BufAddr,
}

/// Where a system sends its outputs during Run.
///
/// Everything written here becomes visible only after Sync: writes are folded into
/// components by their registered merge, then structural commands (despawn, remove,
/// insert, spawn) are applied in system registration order, then emission order.
/// Every method appends to buffers only this system touches: no locks, no atomics. What
/// each write path costs: [which write path when](#which-write-path-when), below.
///
/// # Which write path when
///
/// All paths give the same world, bit for bit; they differ in what they cost. On one
/// worker `write_each` and the row writes of `query` come closest to updating in place, then
/// `writer`, then a plain `write`; `par_for_each` shares the `query` loop over the workers
/// (`docs/performance.md` measures each path against hecs and a raw loop):
///
/// | path | use it for | what one write costs |
/// |---|---|---|
/// | [`Output::query`] with [`Write<C>`](crate::Write) elements | everything an entity computes for itself: the loop to write first | two stores (value, presence flag) |
/// | [`Output::write`] in a `for` over [`World::query`] | writes to other entities, by handle | a type check against the last four types written, a handle compare, a store into room kept ahead |
/// | [`Output::writer`] | many handle writes of one type | a handle compare and a store into room kept ahead, all in registers |
/// | [`Output::write_each`] | "every entity with `C` gets `f(..)`", in parallel parts | a store into a whole column |
/// | [`Output::write_each_some`] | "each entity with `C` where `f(..)` is `Some`", in parallel parts | a store into a column; a flag too, in a part with a `None` |
/// | [`Output::par_for_each`] | the `query` loop in parallel chunks (its `out` for other writes) | a row write as in `query`, on every worker |
///
/// Row writes and `write` go into one system's outputs in emission order, but not in the
/// same loop: `out.query()` borrows `out` for as long as its loop runs, so an `out.write`
/// inside it does not compile (E0499, "cannot borrow `*out` as mutable more than once").
/// Set the visited entities' row writes in the loop, collect what others get, and `write`
/// it after the loop; or write everything from a plain `world.query` loop.
///
/// A write in a query loop goes to the next row of the table being iterated, which the
/// write path recognises by comparing the handle with that row's entity: the value joins
/// the current *run* of rows, and Sync merges runs straight into the columns (a run that
/// covers a whole column of a `last`-merged type is swapped in, not copied). Writes in any
/// other order are resolved (one entity lookup) and start runs of their own: still
/// correct, a little slower, and sorted in Sync only if the type's merge needs all of an
/// entity's outputs at once. Writes to dead entities or to entities without the component
/// are dropped and counted in Run.
pub struct Output<'w> {
    world: &'w World,
    pool: &'w Pool,
    bufs: &'w mut SystemOutputs,
    /// The system's registration index, whose reserved ids `spawn` hands out; `None`
    /// inside [`par_for_each`](Self::par_for_each), where spawns cannot be numbered in
    /// order.
    system: Option<usize>,
    cached: [CachedType<'w>; CACHED_TYPES],
    /// The cached type the next new type replaces (round robin).
    evict: usize,
    /// The message type sent last and its index (`send` looks no further for it).
    message: (TypeId, usize),
}

impl<'w> Output<'w> {
    pub(crate) fn new(
        world: &'w World,
        pool: &'w Pool,
        bufs: &'w mut SystemOutputs,
        system: Option<usize>,
    ) -> Self {
        // The types this system wrote last frame (their ids stay valid: ids are never
        // reassigned within a world); cursors start afresh.
        bufs.bind(world.uid());
        let cache = |(ty, id)| CachedType {
            ty,
            id,
            cursor: RowCursor::NONE,
            buf: BufAddr::NONE,
        };
        let t = bufs.types;
        let cached = [cache(t[0]), cache(t[1]), cache(t[2]), cache(t[3])];
        Output {
            world,
            pool,
            bufs,
            system,
            cached,
            evict: 0,
            message: (TypeId::of::<NoMessage>(), 0),
        }
    }

    /// The index of `C` among the cached types, remembering it if new.
    ///
    /// # Panics
    /// If `C` is not registered.
    #[inline(always)]
    #[track_caller]
    fn cache_index<C: Component>(&mut self) -> usize {
        let ty = TypeId::of::<C>();
        for (i, s) in self.cached.iter().enumerate() {
            if s.ty == ty {
                return i;
            }
        }
        self.remember::<C>()
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn remember<C: Component>(&mut self) -> usize {
        let id = self.world.registry().id::<C>();
        let i = self.evict;
        self.evict = (i + 1) % CACHED_TYPES;
        self.cached[i] = CachedType {
            ty: TypeId::of::<C>(),
            id,
            cursor: RowCursor::NONE,
            buf: BufAddr::NONE,
        };
        self.bufs.types[i] = (TypeId::of::<C>(), id);
        i
    }

    /// The id of `C`.
    #[inline]
    #[track_caller]
    fn id<C: Component>(&mut self) -> ComponentId {
        let i = self.cache_index::<C>();
        self.cached[i].id
    }

    /// Forgets every write cursor and every remembered buffer address: every other path
    /// calls it before it reaches the buffers (a cursor's slot points into its buffer's
    /// room, and the next plain write must come after what that path appends).
    fn reset_cursors(&mut self) {
        for s in &mut self.cached {
            s.cursor = RowCursor::NONE;
            s.buf = BufAddr::NONE;
        }
    }

    /// Emits `value` for component `C` of entity `e`, to be merged in Sync.
    ///
    /// Cost: in a loop over [`World::query`] that writes the entity it visits, a type check
    /// against the last four types written, a handle compare and a store into room the
    /// buffer keeps ahead (the cursor's bound covers both the table's rows and that room,
    /// so one check serves both); any other target costs one entity lookup more. See
    /// [which write path when](Output#which-write-path-when).
    ///
    /// If `e` is dead or has no `C`, the write is dropped and counted in
    /// [`FrameStats::dropped`](crate::FrameStats::dropped).
    ///
    /// # Panics
    /// If `C` is not registered (the frame then fails; see [`Runtime::try_frame`](crate::Runtime::try_frame)).
    // Inlined into the caller's loop (its rare parts are out of line): a call per write
    // cost more than the write itself.
    #[inline(always)]
    #[track_caller]
    pub fn write<C: Component>(&mut self, e: Entity, value: C::Output) {
        // The first cached type gets a copy of the write path of its own, with its fields
        // at fixed offsets: a loop writing one type compares one `TypeId` and goes
        // straight on (no cache index to compute, scale and join on).
        if self.cached[0].ty == TypeId::of::<C>() {
            self.write_cached::<C>(0, e, value);
        } else {
            let i = self.cache_index::<C>();
            self.write_cached::<C>(i, e, value);
        }
    }

    /// [`write`](Self::write) through cached type `i`, whose `ty` the caller found to be
    /// `C`'s.
    #[inline(always)]
    fn write_cached<C: Component>(&mut self, i: usize, e: Entity, value: C::Output) {
        // One way to the cached type, kept across the cold call (not `self` and an index).
        let cached = &mut self.cached[i];
        // SAFETY: the cached cursor is `C`'s (made by `resume_cached` for the cached type,
        // whose `ty` is `C`'s, and forgotten with the type).
        let cursor = unsafe { cached.cursor.cast_mut::<C::Output>() };
        if !cursor.advance(e) && !Self::resume_cached::<C>(cached, self.bufs, self.world, e) {
            return; // dropped (and counted)
        }
        // SAFETY: a cursor that lets a row through was made by `resume_cached`, which set
        // `buf` first, from `typed::<C>` for this type; the buffer's box stays in `bufs`
        // for the life of this `Output`; and every other way to the buffers forgets `buf`
        // and the cursor together before the next plain write (see `CachedType::buf`).
        unsafe {
            let buf = cached.buf.get_unchecked::<C>();
            buf.push_at(cached.cursor.cast_mut(), value);
        }
    }

    /// A plain write of `C` (cached type `i`) that its cursor did not let through: finds
    /// the buffer if this is the run's first, then resumes the cursor there (see
    /// `OutBuf::resume`). Whether the write goes on at the cursor's slot.
    #[cold]
    #[inline(never)]
    fn resume_cached<C: Component>(
        cached: &mut CachedType<'w>,
        bufs: &mut SystemOutputs,
        world: &'w World,
        e: Entity,
    ) -> bool {
        // SAFETY: `cached.buf` is only set below, from `typed::<C>` for this type, whose
        // `ty` is `C`'s (the caller compared it; `ty` and `buf` are set together in
        // `remember`, which clears `buf`); the buffer's
        // box stays in `bufs` for the life of this `Output`; and every other way to the
        // buffers forgets `buf` before the next plain write (see `CachedType::buf`).
        let buf = match unsafe { cached.buf.get::<C>() } {
            Some(buf) => buf,
            None => {
                // The first plain write of `C` in this run: every later one uses the
                // address, so this one does too (one way to the buffer, not two).
                cached.buf = BufAddr::of(bufs.typed::<C>(cached.id));
                // SAFETY: as above; the address was made just now.
                unsafe { cached.buf.get::<C>() }.expect("just set")
            }
        };
        // SAFETY: the cursor is `C`'s (see `write_cached`).
        let cursor = unsafe { cached.cursor.cast_mut::<C::Output>() };
        buf.resume_in_place(world.storage(), cached.id, cursor, e)
    }

    /// A writer for one component type, for hot loops: each [`Writer::write`] is a handle
    /// compare and a store (no type check), with the cursor and the buffer's room held in
    /// the writer (in registers, in a loop) rather than in `out`.
    ///
    /// # Panics
    /// If `C` is not registered.
    #[inline]
    #[track_caller]
    pub fn writer<C: Component>(&mut self) -> Writer<'_, 'w, C> {
        let i = self.cache_index::<C>();
        let cached = &mut self.cached[i];
        // The writer takes the cursor by value (so a hot loop keeps it in registers); the
        // cached type's own cursor then matches nothing, and the next plain `write` of
        // `C` resolves its target once. (No hand-back on drop: a `Drop` impl would keep
        // `out` borrowed to the end of the scope.)
        let cursor = std::mem::replace(&mut cached.cursor, RowCursor::NONE);
        // The writer reaches the buffer its own way.
        cached.buf = BufAddr::NONE;
        Writer {
            // SAFETY: the cursor was made for `C`'s buffer (the cached type is `C`), which
            // nothing changed since: the writer's write goes on where the plain one left.
            cursor: unsafe { cursor.cast() },
            buf: self.bufs.typed::<C>(cached.id),
            world: self.world,
            id: cached.id,
        }
    }

    /// A query whose [`Write<C>`](crate::Write) elements are this row's write handles:
    /// the loop to write first. Reads (`&C`, `Option<&C>`) and filters are those of
    /// [`World::query`]; each `Write<C>` yields a [`RowWrite`] whose
    /// [`set`](RowWrite::set) emits the row's `C` output (merged in Sync like every
    /// write).
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy, Debug, PartialEq)] struct Pos(f32);
    /// # impl Component for Pos { type Output = Pos; }
    /// # #[derive(Clone, Copy, Debug, PartialEq)] struct Vel(f32);
    /// # impl Component for Vel { type Output = Vel; }
    /// # let mut world = World::new();
    /// # world.register::<Pos>(merge::last);
    /// # world.register::<Vel>(merge::last);
    /// # let e = world.spawn((Pos(1.0), Vel(-2.0)));
    /// # let mut rt = Runtime::builder().build(world);
    /// rt.add_system(|_: &World, out: &mut Output| {
    ///     for (_e, (p, v, mut pos, mut vel)) in out.query::<(&Pos, &Vel, Write<Pos>, Write<Vel>)>() {
    ///         pos.set(Pos(p.0 + v.0));
    ///         if p.0 + v.0 < 0.0 {
    ///             vel.set(Vel(-v.0)); // a conditional write: other rows get none
    ///         }
    ///     }
    /// });
    /// rt.frame();
    /// # assert_eq!(rt.world().get::<Pos>(e), Some(&Pos(-1.0)));
    /// # assert_eq!(rt.world().get::<Vel>(e), Some(&Vel(2.0)));
    /// ```
    ///
    /// Cost: a row write's `set` is a store and a bit set, with no target check, type
    /// lookup or capacity check; a table whose every row was set becomes one whole output
    /// column, which Sync swaps in (`last`) or merges row-aligned. Writes to other
    /// entities go through [`write`](Self::write), after the loop (the loop borrows
    /// `out`, so a `write` inside it is E0499), or from a plain `world.query` loop; both
    /// kinds go into the system's outputs in emission order.
    ///
    /// ```compile_fail,E0499
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy, Debug, PartialEq)] struct Pos(f32);
    /// # impl Component for Pos { type Output = Pos; }
    /// # let mut rt = Runtime::builder().build(World::new());
    /// rt.add_system(|_: &World, out: &mut Output| {
    ///     for (e, (p, mut pos)) in out.query::<(&Pos, Write<Pos>)>() {
    ///         pos.set(Pos(p.0 + 1.0));
    ///         out.write::<Pos>(e, Pos(0.0)); // E0499: the loop borrows `out`
    ///     }
    /// });
    /// ```
    ///
    /// # Panics
    /// If a type in `Q` is unregistered, or a type is written (`Write<C>`) twice.
    #[track_caller]
    pub fn query<Q: QueryOut>(&mut self) -> QueryOutIter<'_, Q> {
        // Row writes are not where a cursor points: the next plain write of each type
        // resolves its target (and settles the row writes first).
        self.reset_cursors();
        QueryOutIter::new(self.world.storage(), self.bufs)
    }

    /// Emits `value` for resource `R`, folded in Sync by the merge registered with
    /// [`World::register_resource`] (all systems' outputs, in system then emission order)
    /// and visible from the next frame.
    ///
    /// # Panics
    /// If `R` was not registered with [`World::register_resource`].
    #[track_caller]
    pub fn write_resource<R: Component>(&mut self, value: R::Output) {
        let i = self.world.resource_index::<R>();
        let bufs = &mut self.bufs.resources;
        if bufs.len() <= i {
            bufs.resize_with(i + 1, || None);
        }
        Erased::get_or_new::<Vec<R::Output>>(&mut bufs[i]).push(value);
    }

    /// Writers for several component types at once, for a hot loop that writes each of them:
    /// `let (mut pos, mut vel) = out.writers::<(Pos, Vel)>();`.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy, Debug, PartialEq)] struct Pos(f32);
    /// # impl Component for Pos { type Output = Pos; }
    /// # #[derive(Clone, Copy, Debug, PartialEq)] struct Vel(f32);
    /// # impl Component for Vel { type Output = Vel; }
    /// # let mut world = World::new();
    /// # world.register::<Pos>(merge::last); world.register::<Vel>(merge::last);
    /// # let e = world.spawn((Pos(1.0), Vel(2.0)));
    /// # let mut rt = Runtime::builder().workers(1).build(world);
    /// rt.add_system(|w: &World, out: &mut Output| {
    ///     let (mut pos, mut vel) = out.writers::<(Pos, Vel)>();
    ///     for (e, (p, v)) in w.query::<(&Pos, &Vel)>() {
    ///         pos.write(e, Pos(p.0 + v.0));
    ///         vel.write(e, Vel(v.0 * 0.5));
    ///     }
    /// });
    /// rt.frame();
    /// # assert_eq!(rt.world().get::<Pos>(e), Some(&Pos(3.0)));
    /// # assert_eq!(rt.world().get::<Vel>(e), Some(&Vel(1.0)));
    /// ```
    ///
    /// # Panics
    /// If a type is unregistered or named twice.
    #[track_caller]
    pub fn writers<S: WriterSet>(&mut self) -> S::Writers<'_, 'w> {
        S::writers(self)
    }

    /// Spawns an entity with `bundle` (a tuple of components) in Sync, and returns its id
    /// now, so that this frame's commands and component values can name it.
    ///
    /// The entity becomes alive in Sync, at this command's place (system registration
    /// order, then emission order), and first appears in the next frame's Run. Until
    /// then the id is not alive: writes to it this frame are dropped (put the starting
    /// values in `bundle`), while commands that come after the spawn — an
    /// [`insert`](Self::insert) from this system, a child's component naming its parent —
    /// apply to it. Ids are deterministic: the same at any worker count and
    /// single-threaded (each system takes ids from a reservation made for it before Run;
    /// see the `entity` module docs in the source for the scheme).
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// #[derive(Clone, Copy, Debug, PartialEq)]
    /// struct Parent(Entity);
    /// impl Component for Parent { type Output = Parent; }
    /// #[derive(Clone, Copy, Debug, PartialEq)]
    /// struct Name(&'static str);
    /// impl Component for Name { type Output = Name; }
    ///
    /// let mut world = World::new();
    /// world.register::<Parent>(merge::last);
    /// world.register::<Name>(merge::last);
    /// let mut rt = Runtime::builder().build(world);
    /// rt.add_system(|w: &World, out: &mut Output| {
    ///     if w.is_empty() {
    ///         let ship = out.spawn((Name("ship"),));
    ///         let turret = out.spawn((Name("turret"), Parent(ship)));
    ///         out.insert(ship, Parent(turret)); // a command naming a same-frame spawn
    ///     }
    /// });
    /// rt.frame();
    /// let w = rt.world();
    /// let (turret, (parent,)) = w.query::<(&Parent,)>()
    ///     .find(|&(e, _)| w.get::<Name>(e) == Some(&Name("turret")))
    ///     .unwrap();
    /// assert_eq!(w.get::<Name>(parent.0), Some(&Name("ship")));
    /// assert_eq!(w.get::<Parent>(parent.0), Some(&Parent(turret)));
    /// ```
    ///
    /// Cost: a few instructions more than [`spawn_deferred`](Self::spawn_deferred) while
    /// the system stays within its reservation (twice what it spawned the frame before,
    /// at least 16). Past it — a level's worth of entities in one frame — ids come from
    /// lanes interleaved by system, which leave about `systems - 1` unused slot indices
    /// per extra spawn behind (free, reused by later spawns; 16 bytes each). For bursts
    /// whose ids nobody needs this frame, use `spawn_deferred`.
    ///
    /// # Panics
    /// If a component type is unregistered, named twice in the bundle or
    /// [requires](crate::World::require) a type that is not registered, or if called
    /// inside [`par_for_each`](Self::par_for_each): its parallel chunks cannot number
    /// their spawns in a deterministic order, so use
    /// [`spawn_deferred`](Self::spawn_deferred) there.
    #[track_caller]
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        let Some(system) = self.system else {
            spawn_in_parallel();
        };
        let e = self
            .world
            .storage()
            .reserved_id(system, self.bufs.spawned as usize);
        self.put_spawn(bundle, Some(e));
        self.bufs.spawned += 1;
        e
    }

    /// Spawns an entity with `bundle` in Sync, like [`spawn`](Self::spawn), without
    /// telling its id: the id is the next free one when Sync reaches this command. It is
    /// the spawn to use inside [`par_for_each`](Self::par_for_each).
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// # #[derive(Clone, Copy)] struct Pos(f32); impl Component for Pos { type Output = Pos; }
    /// # #[derive(Clone, Copy)] struct Shot; impl Component for Shot { type Output = Shot; }
    /// # let mut world = World::new();
    /// # world.register::<Pos>(merge::last); world.register::<Shot>(merge::last);
    /// # for i in 0..100 { world.spawn((Pos(i as f32),)); }
    /// # let mut rt = Runtime::builder().workers(2).build(world);
    /// rt.add_system(|_: &World, out: &mut Output| {
    ///     out.par_for_each::<(&Pos,)>(|_e, (p,), out| {
    ///         if p.0 as u32 % 10 == 0 {
    ///             out.spawn_deferred((Pos(p.0), Shot));
    ///         }
    ///     });
    /// });
    /// rt.frame();
    /// assert_eq!(rt.world().query::<(&Shot,)>().len(), 10);
    /// ```
    ///
    /// # Panics
    /// If a component type is unregistered or named twice in the bundle.
    #[track_caller]
    pub fn spawn_deferred<B: Bundle>(&mut self, bundle: B) {
        self.put_spawn(bundle, None);
    }

    #[track_caller]
    fn put_spawn<B: Bundle>(&mut self, bundle: B, e: Option<Entity>) {
        self.bufs.commands.spawn(self.world.storage(), bundle, e);
    }

    /// Despawns `e` in Sync. Despawning a dead entity (or one despawned twice) is a no-op,
    /// counted in [`FrameStats::dropped`](crate::FrameStats::dropped).
    #[inline]
    pub fn despawn(&mut self, e: Entity) {
        self.bufs.commands.despawn(e);
    }

    /// Inserts (or replaces) component `C` of `e` in Sync, with the components `C`
    /// [requires](crate::World::require) that `e` lacks.
    ///
    /// # Panics
    /// If `C` is not registered, or requires a type that is not.
    #[track_caller]
    pub fn insert<C: Component>(&mut self, e: Entity, component: C) {
        crate::hierarchy::assert_not_children::<C>();
        let id = self.id::<C>();
        self.world.storage().check_required(id);
        self.bufs.commands.insert(id, e, component);
    }

    /// Removes component `C` from `e` in Sync (a no-op if it has none).
    ///
    /// # Panics
    /// If `C` is not registered.
    #[track_caller]
    pub fn remove<C: Component>(&mut self, e: Entity) {
        crate::hierarchy::assert_not_children::<C>();
        let id = self.id::<C>();
        self.bufs.commands.remove(id, e);
    }

    /// Makes `child` a child of `parent` in Sync: the same command as
    /// `insert(child, ChildOf(parent))` (see
    /// [`World::register_hierarchy`](crate::World::register_hierarchy) for what Sync does
    /// with it: `Children` kept, cycles rejected and counted).
    ///
    /// # Panics
    /// If the hierarchy is not registered.
    #[track_caller]
    pub fn set_parent(&mut self, child: Entity, parent: Entity) {
        self.insert(child, crate::hierarchy::ChildOf(parent));
    }

    /// Makes `child` a root in Sync: the same command as `remove::<ChildOf>(child)`.
    ///
    /// # Panics
    /// If the hierarchy is not registered.
    #[track_caller]
    pub fn remove_parent(&mut self, child: Entity) {
        self.remove::<crate::hierarchy::ChildOf>(child);
    }

    /// The world this system is reading (the state the previous Sync left).
    #[inline]
    pub fn world(&self) -> &'w World {
        self.world
    }
}

/// No message type: what [`Output`] remembers before its first send.
enum NoMessage {}

#[cold]
#[track_caller]
fn spawn_in_parallel() -> ! {
    panic!(
        "runsync: `spawn` inside `par_for_each` cannot return a deterministic id (the chunks \
         run in parallel); use `out.spawn_deferred(..)` there, or spawn from a plain loop"
    )
}

/// Sets of component types [`Output::writers`] hands writers for: tuples of 2 to 4
/// distinct component types. Sealed: implemented for those tuples only.
pub trait WriterSet: sealed::Sealed {
    /// The writers, one per type, in the tuple's order.
    type Writers<'o, 'w: 'o>;
    #[doc(hidden)]
    fn writers<'o, 'w: 'o>(out: &'o mut Output<'w>) -> Self::Writers<'o, 'w>;
}

/// Seals [`WriterSet`]: a public trait in a private module, so no other crate can
/// implement it (the hidden method alone would not stop an impl).
mod sealed {
    pub trait Sealed {}
}

/// `N` distinct entries of `bufs`, mutably at once.
fn pick_disjoint<const N: usize>(
    bufs: &mut [Option<Erased>],
    ids: [ComponentId; N],
) -> [&mut Erased; N] {
    let mut picked: [Option<&mut Erased>; N] = std::array::from_fn(|_| None);
    for (i, b) in bufs.iter_mut().enumerate() {
        if let Some(k) = ids.iter().position(|id| id.index() == i) {
            picked[k] = b.as_mut();
        }
    }
    picked.map(|b| b.expect("every writer's buffer was created"))
}

macro_rules! writer_set {
    ($($name:ident $var:ident),*) => {
        impl<$($name: Component),*> sealed::Sealed for ($($name,)*) {}
        impl<$($name: Component),*> WriterSet for ($($name,)*) {
            type Writers<'o, 'w: 'o> = ($(Writer<'o, 'w, $name>,)*);
            #[track_caller]
            fn writers<'o, 'w: 'o>(out: &'o mut Output<'w>) -> Self::Writers<'o, 'w> {
                let ids = [$(out.id::<$name>()),*];
                for (i, id) in ids.iter().enumerate() {
                    if ids[..i].contains(id) {
                        panic!(
                            "runsync: `writers` names component type `{}` twice; one writer \
                             per type",
                            out.world.registry().info(*id).name
                        );
                    }
                }
                let mut k = 0;
                $(
                    let _ = out.bufs.typed::<$name>(ids[k]);
                    k += 1;
                )*
                let _ = k;
                // The writers append runs of their own: no remembered cursor stays valid.
                out.reset_cursors();
                let world = out.world;
                let [$($var),*] = pick_disjoint(&mut out.bufs.buffers, ids);
                k = 0;
                ($({
                    let w = Writer {
                        buf: $var.typed_mut::<OutBuf<$name>>(),
                        cursor: RowCursor::NONE,
                        world,
                        id: ids[k],
                    };
                    k += 1;
                    let _ = k;
                    w
                },)*)
            }
        }
    };
}

writer_set!(A a, B b);
writer_set!(A a, B b, C c);
writer_set!(A a, B b, C c, D d);

/// A typed writer for one component type; see [`Output::writer`].
pub struct Writer<'o, 'w, C: Component> {
    buf: &'o mut OutBuf<C>,
    cursor: RowCursor<'w, C::Output>,
    world: &'w World,
    id: ComponentId,
}

impl<C: Component> Writer<'_, '_, C> {
    /// Emits `value` for `e`; see [`Output::write`].
    #[inline(always)]
    pub fn write(&mut self, e: Entity, value: C::Output) {
        self.buf
            .write(self.world.storage(), self.id, &mut self.cursor, e, value);
    }
}
