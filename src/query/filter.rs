//! Query filters: elements that select entities and yield `()`.
//!
//! Table filters ([`With`], [`Without`]) decide per table, from the table's signature.
//! Row filters ([`Changed`], [`Added`]) also keep one bit per row of the tables that pass:
//! their [`Columns`](Fetch::Columns) are a column's mark words, and the iterators skip
//! unmarked rows a word (64 rows) at a time (`iter.rs`). Tuples of filters are tuples of
//! elements (`fetch.rs`); a filter may sit in the query itself (`(&Pos, With<Enemy>)`) or
//! in [`World::query_filtered`](crate::World::query_filtered)'s second parameter.

use std::marker::PhantomData;

use super::fetch::{Fetch, QueryData, QueryMut, QueryOut, read_only_faces};
use super::state::{Source, TableRef};
use crate::component::{Component, ComponentId};
use crate::storage::TypeMarks;

/// Query filter: only entities that have `C` (yields `()`).
///
/// ```
/// # use runsync::prelude::*;
/// # #[derive(Clone, Copy)] struct Pos(f32); impl Component for Pos { type Output = Pos; }
/// # #[derive(Clone, Copy)] struct Enemy; impl Component for Enemy { type Output = Enemy; }
/// # let mut world = World::new();
/// # world.register::<Pos>(merge::last); world.register::<Enemy>(merge::last);
/// world.spawn((Pos(1.0), Enemy));
/// world.spawn((Pos(2.0),));
/// let enemies: f32 = world.query::<(&Pos, With<Enemy>)>().map(|(_, (p, ()))| p.0).sum();
/// assert_eq!(enemies, 1.0);
/// ```
pub struct With<C>(PhantomData<C>);

/// Query filter: only entities that do not have `C` (yields `()`).
pub struct Without<C>(PhantomData<C>);

/// `With` / `Without`: a table filter on one type (`$required`: whether tables must hold
/// it or must not).
macro_rules! table_filter {
    ($name:ident, $required:expr) => {
        impl<C: Component> Fetch for $name<C> {
            type Out<'w> = ();
            type State<'w> = ComponentId;
            type Columns<'w> = ();

            #[inline]
            #[track_caller]
            fn init<'w>(source: &mut Source<'w>) -> Self::State<'w> {
                source.id::<C>()
            }
            #[inline]
            fn filter(state: &Self::State<'_>) -> Option<(ComponentId, bool)> {
                Some((*state, $required))
            }
            #[inline]
            fn columns<'w>(_: &mut Self::State<'w>, _: TableRef<'w>) -> Self::Columns<'w> {}
            #[inline]
            fn no_columns<'w>() -> Self::Columns<'w> {}
            #[inline]
            unsafe fn get<'w>(_: &mut Self::Columns<'w>, _: usize) -> Self::Out<'w> {}
        }

        read_only_faces!($name<C> => (), (), |_, _| ());
    };
}

table_filter!(With, true);
table_filter!(Without, false);

/// Query filter: only entities whose `C` was *written by the last Sync* (yields `()`).
///
/// "Written" means any of:
/// - a merge ran on it: some system wrote `C` for the entity and the merge was called —
///   **whatever the result**: a merge that leaves the value equal (`merge::max` with a
///   smaller output, `merge::last` with the same value) still counts. Comparing would cost
///   a read and a `PartialEq` per row, and `C` need not be `PartialEq`;
/// - a command inserted `C` (a replacement, or the entity gaining `C`), or spawned the
///   entity with `C`.
///
/// **Every system sees every change exactly once**: the first time it runs after the Sync
/// that made it, whichever stage wrote it and whichever stage reads. With one stage (the
/// default) the window is one frame: a Sync forgets the previous Sync's marks as it
/// starts, so systems in frame N+1 see exactly what frame N's Sync did (a frame whose
/// Sync writes nothing clears them). With `S` [stages](crate::Runtime::add_stage) a
/// system runs once every `S` stage-Syncs, so the marks are what the last `S` Syncs did:
/// each stage's Sync forgets the marks its own previous Sync made and adds its new ones.
/// A system in stage `k` sees what stages `k..S` did last frame and what stages `0..k`
/// did this frame; between frames the marks are the whole last frame's. A stage with no
/// enabled system still forgets its last Sync's marks at its turn (a stage that never
/// has a system changes nothing); a disabled system misses the marks made and forgotten
/// while it was disabled. Between frames, [`World::spawn`], [`World::spawn_batch`] and
/// [`World::insert`] mark like the commands they mirror, and every system sees those
/// marks in the next frame (with stages they count as the last stage's Sync's);
/// [`World::get_mut`] and [`World::query_mut`] do **not** mark (`query_mut` may still
/// filter on the marks). Marks belong to the entity's component: an entity moved to
/// another table (by inserting or removing another type) keeps the marks of the types it
/// keeps; a removed or despawned `C` loses them. [`Added<C>`] is the narrower filter;
/// every added `C` is also changed.
///
/// Cost: one bit per row per column, set by Sync one word (64 rows) at a time per run of
/// writes. A query skips tables with no mark at all; internal iteration (`sum`,
/// `for_each`, `fold`) jumps from marked row to marked row a word at a time, a `for` loop
/// finds the next marked row on each step, and `len()` is a popcount per 64 rows. Marks
/// are part of snapshots (a restored world's next frame sees the marks of the moment it
/// was saved, per stage) but not of [`World::checksum`], which covers component state
/// only. With several stages a runtime's save ([`Runtime::save`], a replay's) also holds
/// which stage's Sync made each mark, and [`Runtime::load`] into a runtime with as many
/// stages puts that back: every system sees each change once, as if the game had not
/// stopped. A [`World::save`] or [`World::load`], or a load into another number of
/// stages, keeps the marks only: they count as made between frames (every system sees
/// them in the next frame). With several stages each mark is set twice (its
/// stage's layer and the union queries read), and a Sync whose stage's layer had marks
/// rebuilds the type's union: one pass over the words of every layer.
///
/// [`World::spawn`]: crate::World::spawn
/// [`Runtime::save`]: crate::Runtime::save
/// [`Runtime::load`]: crate::Runtime::load
/// [`World::save`]: crate::World::save
/// [`World::load`]: crate::World::load
/// [`World::spawn_batch`]: crate::World::spawn_batch
/// [`World::insert`]: crate::World::insert
/// [`World::get_mut`]: crate::World::get_mut
/// [`World::query_mut`]: crate::World::query_mut
/// [`World::checksum`]: crate::World::checksum
///
/// ```
/// # use runsync::prelude::*;
/// # #[derive(Clone, Copy, Debug, PartialEq)] struct Pos(f32);
/// # impl Component for Pos { type Output = Pos; }
/// let mut world = World::new();
/// world.register::<Pos>(merge::last);
/// let a = world.spawn((Pos(0.0),));
/// let b = world.spawn((Pos(0.0),));
/// let mut rt = Runtime::builder().build(world);
/// rt.add_system(move |_: &World, out: &mut Output| out.write::<Pos>(a, Pos(0.0)));
/// rt.frame();
/// // `a` was written (with the same value: still changed); `b` was not.
/// let changed: Vec<Entity> = rt
///     .world()
///     .query_filtered::<(&Pos,), Changed<Pos>>()
///     .map(|(e, _)| e)
///     .collect();
/// assert_eq!(changed, [a]);
/// assert!(rt.world().is_changed::<Pos>(a) && !rt.world().is_changed::<Pos>(b));
/// ```
pub struct Changed<C>(PhantomData<C>);

/// Query filter: only entities that *gained* `C` in the last Sync (yields `()`): spawned
/// with it, or given it by an insert when they had none. Replacing an existing `C` is
/// [`Changed<C>`], not `Added<C>`. Same window, marks and costs as [`Changed<C>`].
///
/// ```
/// # use runsync::prelude::*;
/// # #[derive(Clone, Copy, Debug, PartialEq)] struct Hp(i32);
/// # impl Component for Hp { type Output = i32; }
/// let mut world = World::new();
/// world.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 += d.iter().sum::<i32>());
/// let old = world.spawn((Hp(1),));
/// let mut rt = Runtime::builder().build(world);
/// rt.frame(); // forgets the marks of the spawn above
/// let mut once = true;
/// rt.add_system(move |_: &World, out: &mut Output| {
///     if std::mem::take(&mut once) {
///         out.spawn((Hp(5),));
///         out.insert(old, Hp(2)); // a replacement: changed, not added
///     }
/// });
/// rt.frame();
/// let added: Vec<i32> = rt.world().query::<(&Hp, Added<Hp>)>().map(|(_, (h, ()))| h.0).collect();
/// assert_eq!(added, [5]);
/// assert!(rt.world().is_changed::<Hp>(old) && !rt.world().is_added::<Hp>(old));
/// ```
pub struct Added<C>(PhantomData<C>);

/// A row filter's state: its type and that type's marks, borrowed shared (also in
/// `query_mut`, beside a `&mut C` of the same type: the marks are not the values).
#[derive(Clone, Copy)]
pub struct MarksOf<'w> {
    id: ComponentId,
    marks: &'w TypeMarks,
}

/// `Changed` / `Added`: a row filter over one of a column's mark sets.
macro_rules! mark_filter {
    ($name:ident, $bits:ident) => {
        impl<C: Component> Fetch for $name<C> {
            type Out<'w> = ();
            type State<'w> = MarksOf<'w>;
            /// The column's mark words (empty: no row marked).
            type Columns<'w> = &'w [u64];

            // Tables: those `With<C>` matches; rows: the marked ones.
            #[inline]
            #[track_caller]
            fn init<'w>(source: &mut Source<'w>) -> Self::State<'w> {
                let id = source.id::<C>();
                MarksOf {
                    id,
                    marks: source.marks::<C>(id),
                }
            }
            #[inline]
            fn filter(state: &Self::State<'_>) -> Option<(ComponentId, bool)> {
                Some((state.id, true))
            }
            #[inline]
            fn columns<'w>(state: &mut Self::State<'w>, table: TableRef<'w>) -> Self::Columns<'w> {
                match table.column(state.id) {
                    Some(c) => state.marks.column(c as usize).$bits.words(),
                    None => &[],
                }
            }
            #[inline]
            fn no_columns<'w>() -> Self::Columns<'w> {
                &[]
            }
            #[inline]
            unsafe fn get<'w>(_: &mut Self::Columns<'w>, _: usize) -> Self::Out<'w> {}
            const FILTERS_ROWS: bool = true;
            #[inline]
            fn kept_word(words: &Self::Columns<'_>, w: usize) -> u64 {
                words.get(w).copied().unwrap_or(0)
            }
            #[inline]
            fn none_kept(words: &Self::Columns<'_>) -> bool {
                words.is_empty()
            }
        }

        read_only_faces!($name<C> => (), (), |_, _| ());
    };
}

mark_filter!(Changed, changed);
mark_filter!(Added, added);
