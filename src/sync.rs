//! The Sync phase: merge every output into the world, then apply structural commands.
//!
//! # Merge (per component type, types in parallel)
//!
//! Each system's buffer for a type is moved (a pointer move) into that type's storage
//! *inbox*, in system order. For every write the target's current location gives a key
//! `(column << 32) | row`: dead targets and targets without the component get a "dropped"
//! key and are counted. Keys follow storage order, so a system that iterated a query
//! emits them already sorted and needs no sort at all; otherwise its writes are sorted
//! by `(key, emission index)`, which keeps emission order within an entity.
//!
//! With one source, runs of equal keys are merged straight from the system's buffer. With
//! several, a k-way merge walks all sources from the back (largest key first), gathers each
//! entity's values from the later systems to the earlier, reverses that small group into
//! system-then-emission order, and calls the merge once. No step depends on thread timing.
//!
//! *Shadow columns.* [`Output::write_each`](crate::Output::write_each) stores one vector
//! of values per table, in row order, with no targets. When every source of a type holds
//! only such fills and the type merges with [`merge::last`](crate::merge::last), each
//! vector simply replaces its table's column, in system then emission order (a pointer
//! swap; the old column becomes next frame's buffer). Otherwise the fills are flattened
//! into ordinary writes first.
//!
//! # Structural commands (sequential)
//!
//! After all merges, each system's commands are applied one by one in system registration
//! order, then emission order. Values removed or replaced go to per-type graveyards, dropped
//! once every move is complete.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::component::{Component, ComponentId};
use crate::entity::Entities;
use crate::entity::Entity;
use crate::output::{Command, OutputBuffer};
use crate::pool::{Pool, payload_message};
use crate::runtime::SystemSlot;
use crate::storage::{TableId, Tables, TypedStorage};
use crate::world::World;

/// Key of a write whose target is dead or lacks the component.
const DROPPED: u64 = u64::MAX;

/// What a type's merge needs to read while other types merge in parallel.
pub(crate) struct MergeCtx<'a> {
    pub(crate) entities: &'a Entities,
    pub(crate) tables: &'a Tables,
    pub(crate) id: ComponentId,
}

/// Outputs folded in and dropped by one type's merge.
#[derive(Default, Clone, Copy, Debug)]
pub(crate) struct MergeCounts {
    pub(crate) merged: u64,
    pub(crate) dropped: u64,
}

/// Per-type scratch kept across frames.
pub(crate) struct MergeScratch<C: Component> {
    pairs: Vec<(u64, u32)>,
    group: Vec<C::Output>,
    /// `(first, last)` key of each source, to spot sources that cannot overlap.
    ranges: Vec<(u64, u64)>,
    /// Row runs of a single source written in query order.
    runs: Vec<Run>,
}

impl<C: Component> Default for MergeScratch<C> {
    fn default() -> Self {
        MergeScratch {
            pairs: Vec::new(),
            group: Vec::new(),
            ranges: Vec::new(),
            runs: Vec::new(),
        }
    }
}

#[inline]
fn split_key(key: u64) -> (usize, usize) {
    ((key >> 32) as usize, key as u32 as usize)
}

fn typed<C: Component>(b: &mut dyn crate::output::AnyBuffer) -> &mut OutputBuffer<C> {
    b.as_any_mut()
        .downcast_mut()
        .expect("output buffer of another type")
}

/// Folds the inbox of `storage` into its columns. See the module docs.
pub(crate) fn merge_type<C: Component>(
    storage: &mut TypedStorage<C>,
    ctx: &MergeCtx<'_>,
) -> MergeCounts {
    let _zone = crate::profile::merge_zone(std::any::type_name::<C>());
    let TypedStorage {
        columns,
        merge,
        merge_sorted,
        last_wins,
        inbox,
        scratch,
        ..
    } = storage;
    let mut counts = MergeCounts::default();

    if *last_wins && swap_columns(inbox, columns, ctx, &mut counts) {
        return counts;
    }

    // One source written in query order (the common case): merge along row runs,
    // without materialising keys.
    if let [(_, only)] = inbox.as_mut_slice() {
        let buf = typed::<C>(&mut **only);
        if buf.fills.is_empty() && table_runs(&buf.targets, ctx, &mut scratch.runs) {
            counts.merged += buf.values.len() as u64;
            merge_sorted(columns, Plan::Runs(&scratch.runs), &buf.values);
            return counts;
        }
    }

    for (_, buf) in inbox.iter_mut() {
        let buf = typed::<C>(&mut **buf);
        if !buf.fills.is_empty() {
            flatten_fills(buf, ctx.tables);
        }
        key_and_sort(buf, ctx, &mut scratch.pairs, &mut counts);
    }

    if let [(_, only)] = inbox.as_mut_slice() {
        let buf = typed::<C>(&mut **only);
        counts.merged += buf.keys.len() as u64;
        merge_sorted(columns, Plan::Keys(&buf.keys), &buf.values);
        return counts;
    }

    // Several sources. If their key ranges do not overlap (systems writing different
    // tables, or different parts of one), no entity has writes from two of them: each
    // source merges on its own, in one pass.
    if sources_disjoint::<C>(inbox, &mut scratch.ranges) {
        for (_, buf) in inbox.iter_mut() {
            let buf = typed::<C>(&mut **buf);
            counts.merged += buf.keys.len() as u64;
            merge_sorted(columns, Plan::Keys(&buf.keys), &buf.values);
        }
        return counts;
    }

    // Overlapping sources: a k-way merge. Up to `MAX_SOURCES` typed handles live on the
    // stack (no allocation); more sources take a `Vec`.
    const MAX_SOURCES: usize = 16;
    let group = &mut scratch.group;
    let n = inbox.len();
    if n <= MAX_SOURCES {
        let mut bufs: [Option<&mut OutputBuffer<C>>; MAX_SOURCES] = std::array::from_fn(|_| None);
        for (slot, (_, b)) in bufs.iter_mut().zip(inbox.iter_mut()) {
            *slot = Some(typed::<C>(&mut **b));
        }
        kway_merge(&mut bufs[..n], columns, merge, group, &mut counts);
    } else {
        let mut bufs: Vec<Option<&mut OutputBuffer<C>>> = inbox
            .iter_mut()
            .map(|(_, b)| Some(typed::<C>(&mut **b)))
            .collect();
        kway_merge(&mut bufs, columns, merge, group, &mut counts);
    }
    counts
}

/// Whether the sorted sources in `inbox` cover pairwise disjoint key ranges.
fn sources_disjoint<C: Component>(
    inbox: &mut [(u32, Box<dyn crate::output::AnyBuffer>)],
    ranges: &mut Vec<(u64, u64)>,
) -> bool {
    ranges.clear();
    for (_, buf) in inbox.iter_mut() {
        let keys = &typed::<C>(&mut **buf).keys;
        if let (Some(&first), Some(&last)) = (keys.first(), keys.last()) {
            ranges.push((first, last));
        }
    }
    ranges.sort_unstable();
    ranges.windows(2).all(|w| w[0].1 < w[1].0)
}

/// Merges sorted sources (given in system order) from the back: repeatedly takes the
/// largest key, gathers its values from the later systems to the earlier, puts them back
/// in system-then-emission order, and calls the merge once.
fn kway_merge<C: Component>(
    bufs: &mut [Option<&mut OutputBuffer<C>>],
    columns: &mut [Vec<C>],
    merge: &crate::component::MergeFn<C>,
    group: &mut Vec<C::Output>,
    counts: &mut MergeCounts,
) {
    loop {
        let mut best: Option<u64> = None;
        for buf in bufs.iter().flatten() {
            if let Some(&k) = buf.keys.last() {
                best = Some(best.map_or(k, |b: u64| b.max(k)));
            }
        }
        let Some(k) = best else { break };
        group.clear();
        for buf in bufs.iter_mut().rev().flatten() {
            while buf.keys.last() == Some(&k) {
                buf.keys.pop();
                group.push(buf.values.pop().expect("keys and values out of step"));
            }
        }
        group.reverse();
        counts.merged += group.len() as u64;
        let (col, row) = split_key(k);
        merge(&mut columns[col][row], group);
    }
    group.clear();
}

/// Where a sorted source's values go.
#[derive(Clone, Copy)]
pub(crate) enum Plan<'a> {
    /// `keys[i]` is the `(column << 32) | row` of value `i`; equal keys are adjacent.
    Keys(&'a [u64]),
    /// The values fill these runs of rows, in order; no row appears twice.
    Runs(&'a [Run]),
}

/// Rows `row..row + len` of column `col`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Run {
    col: u32,
    row: u32,
    len: u32,
}

/// Describes `targets` as runs of consecutive rows, in strictly increasing
/// `(column, row)` order — the shape of a system's writes over a query — with only
/// sequential reads of the tables' entity lists after each run's first lookup. Returns
/// `false` as soon as they are not (a dead target, one without the component, a repeat
/// or anything out of order): the caller then keys and sorts them.
fn table_runs(targets: &[Entity], ctx: &MergeCtx<'_>, runs: &mut Vec<Run>) -> bool {
    runs.clear();
    let mut table = TableId::MAX;
    let mut column = 0u32;
    let mut rows: &[Entity] = &[];
    let mut next_row = 0usize;
    for &e in targets {
        if rows.get(next_row) == Some(&e) {
            if let Some(run) = runs.last_mut() {
                run.len += 1;
                next_row += 1;
                continue;
            }
        }
        let Some(loc) = ctx.entities.location(e) else {
            return false;
        };
        if loc.table != table {
            table = loc.table;
            let t = ctx.tables.get(table);
            let Some(c) = t.column(ctx.id) else {
                return false;
            };
            column = c;
            rows = &t.entities;
        }
        let key = (u64::from(column) << 32) | u64::from(loc.row);
        let after_last = runs
            .last()
            .is_none_or(|r| key > (u64::from(r.col) << 32) | u64::from(r.row + r.len - 1));
        if !after_last {
            return false;
        }
        runs.push(Run {
            col: column,
            row: loc.row,
            len: 1,
        });
        next_row = loc.row as usize + 1;
    }
    true
}

/// Folds sorted writes (`keys[i]` is the `(column, row)` of `values[i]`) into `columns`:
/// one call of `merge` per run of equal keys. Generic over the merge function, so that the
/// registered closure is inlined into this loop (built once per type by
/// [`World::register`](crate::World::register) and stored as a
/// [`SortedMergeFn`](crate::component::SortedMergeFn)).
pub(crate) fn merge_sorted_with<C: Component>(
    merge: &impl Fn(&mut C, &[C::Output]),
    columns: &mut [Vec<C>],
    plan: Plan<'_>,
    values: &[C::Output],
) {
    let keys = match plan {
        Plan::Keys(keys) => keys,
        Plan::Runs(runs) => {
            let mut values = values;
            for run in runs {
                let (now, rest) = values.split_at(run.len as usize);
                values = rest;
                let start = run.row as usize;
                let rows = &mut columns[run.col as usize][start..start + now.len()];
                for (value, output) in rows.iter_mut().zip(now) {
                    merge(value, std::slice::from_ref(output));
                }
            }
            return;
        }
    };
    let n = keys.len();
    let mut i = 0;
    while i < n {
        let k = keys[i];
        let mut j = i + 1;
        while j < n && keys[j] == k {
            j += 1;
        }
        let (col, row) = split_key(k);
        merge(&mut columns[col][row], &values[i..j]);
        i = j;
    }
}

/// The shadow-column path: if every source in `inbox` holds only whole-column writes
/// ([`Fill`]s) and the merge is last-wins, each fill's vector *becomes* its table's column
/// (a pointer swap), in system order then emission order, so the last fill of a table
/// wins, exactly as `merge::last` would decide entity by entity. The replaced values are
/// dropped here. Returns `false`, touching nothing, if the path does not apply.
///
/// [`Fill`]: crate::output::Fill
fn swap_columns<C: Component>(
    inbox: &mut [(u32, Box<dyn crate::output::AnyBuffer>)],
    columns: &mut [Vec<C>],
    ctx: &MergeCtx<'_>,
    counts: &mut MergeCounts,
) -> bool {
    let column_of = |table: u32| ctx.tables.get(table).column(ctx.id);
    for (_, buf) in inbox.iter_mut() {
        let buf = typed::<C>(&mut **buf);
        // Tables do not change between Run and the merges, so alignment always holds;
        // checked anyway, as the swap would otherwise be silently wrong.
        let aligned = buf.fills.iter().all(|f| {
            column_of(f.table).is_some_and(|c| columns[c as usize].len() == f.values.len())
        });
        if !buf.targets.is_empty() || buf.fills.is_empty() || !aligned {
            return false;
        }
    }
    for (_, buf) in inbox.iter_mut() {
        for fill in &mut typed::<C>(&mut **buf).fills {
            let col = column_of(fill.table).expect("checked above") as usize;
            // `last_wins` implies `C::Output` is `C` (checked at registration).
            let values = (&mut fill.values as &mut dyn Any)
                .downcast_mut::<Vec<C>>()
                .expect("a last-wins merge has Output = C");
            counts.merged += values.len() as u64;
            std::mem::swap(&mut columns[col], values);
            values.clear();
        }
    }
    true
}

/// Rewrites the fills of `buf` as ordinary writes (targets from the tables' entity lists),
/// in emission order, so the general merge can handle them.
fn flatten_fills<C: Component>(buf: &mut OutputBuffer<C>, tables: &Tables) {
    let OutputBuffer {
        targets,
        values,
        fills,
        spare,
        scratch_targets,
        scratch_values,
        ..
    } = buf;
    scratch_targets.clear();
    scratch_values.clear();
    let mut old_targets = targets.drain(..);
    let mut old_values = values.drain(..);
    let mut done = 0;
    for mut fill in fills.drain(..) {
        let before = fill.at as usize - done;
        scratch_targets.extend(old_targets.by_ref().take(before));
        scratch_values.extend(old_values.by_ref().take(before));
        done = fill.at as usize;
        scratch_targets.extend_from_slice(&tables.get(fill.table).entities);
        scratch_values.append(&mut fill.values);
        spare.push(fill.values);
    }
    scratch_targets.extend(old_targets);
    scratch_values.extend(old_values);
    std::mem::swap(targets, scratch_targets);
    std::mem::swap(values, scratch_values);
}

/// Computes the key of every write in `buf`, removes dropped writes (counting them), and
/// sorts the rest by `(key, emission index)` unless they already are sorted.
fn key_and_sort<C: Component>(
    buf: &mut OutputBuffer<C>,
    ctx: &MergeCtx<'_>,
    pairs: &mut Vec<(u64, u32)>,
    counts: &mut MergeCounts,
) {
    let OutputBuffer {
        targets,
        values,
        keys,
        ..
    } = buf;
    keys.clear();
    keys.reserve(targets.len());
    let mut sorted = true;
    let mut dropped = 0usize;
    let mut prev = 0u64;
    // The table of the previous lookup, its column of this type, and its entities (empty
    // if it has no such column). A system that iterated a query emits its targets in
    // table order, so the next target is usually the entity in the next row: comparing
    // handles (generation included) proves it alive and there, without a lookup.
    let mut table = TableId::MAX;
    let mut column = 0u64;
    let mut rows: &[Entity] = &[];
    let mut next_row = 0usize;
    for &e in targets.iter() {
        let key = if rows.get(next_row) == Some(&e) {
            next_row += 1;
            (column << 32) | (next_row - 1) as u64
        } else {
            match ctx.entities.location(e) {
                Some(loc) => {
                    if loc.table != table {
                        table = loc.table;
                        let t = ctx.tables.get(table);
                        match t.column(ctx.id) {
                            Some(c) => {
                                column = u64::from(c);
                                rows = &t.entities;
                            }
                            None => rows = &[],
                        }
                    }
                    if rows.is_empty() {
                        DROPPED
                    } else {
                        next_row = loc.row as usize + 1;
                        (column << 32) | u64::from(loc.row)
                    }
                }
                None => DROPPED,
            }
        };
        if key == DROPPED {
            dropped += 1;
        } else {
            sorted &= key >= prev;
            prev = key;
        }
        keys.push(key);
    }
    if dropped > 0 {
        counts.dropped += dropped as u64;
        // Stable in-place compaction of the surviving writes.
        let mut w = 0;
        for r in 0..keys.len() {
            if keys[r] != DROPPED {
                keys.swap(w, r);
                values.swap(w, r);
                w += 1;
            }
        }
        keys.truncate(w);
        values.truncate(w);
    }
    if sorted {
        return;
    }
    pairs.clear();
    pairs.extend(keys.iter().enumerate().map(|(i, &k)| (k, i as u32)));
    pairs.sort_unstable();
    // Apply the permutation in place: position i takes the element at pairs[i].1.
    for i in 0..pairs.len() {
        if pairs[i].1 as usize == i {
            continue;
        }
        let mut cur = i;
        loop {
            let next = pairs[cur].1 as usize;
            pairs[cur].1 = cur as u32;
            if next == i {
                break;
            }
            keys.swap(cur, next);
            values.swap(cur, next);
            cur = next;
        }
    }
}

/// What one Sync did.
#[derive(Default, Debug)]
pub(crate) struct SyncReport {
    pub(crate) merged: u64,
    pub(crate) dropped: u64,
    pub(crate) spawned: u64,
    pub(crate) despawned: u64,
    /// The first component type (by id) whose merge panicked, with the message.
    pub(crate) merge_panic: Option<(&'static str, String)>,
    /// A component's `Drop` panicked while removed values were released.
    pub(crate) drop_panic: Option<String>,
}

/// Runs the whole Sync phase for the systems that ran this frame.
pub(crate) fn sync(
    world: &mut World,
    systems: &mut [SystemSlot],
    pool: &Pool,
    scratch_ids: &mut Vec<ComponentId>,
) -> SyncReport {
    let mut report = SyncReport::default();

    // Gather: move each system's non-empty buffers into the inbox of their type.
    {
        let storages = world.storages_mut();
        for (s, slot) in systems.iter_mut().enumerate() {
            if !slot.ran {
                continue;
            }
            for (id, b) in slot.out.buffers.iter_mut().enumerate() {
                if b.as_ref().is_some_and(|b| b.writes() > 0) {
                    let b = b.take().expect("checked above");
                    storages[id].inbox().push((s as u32, b));
                }
            }
        }
    }

    // Merge: one job per component type.
    {
        let merged = AtomicU64::new(0);
        let dropped = AtomicU64::new(0);
        let (storages, entities, tables) = world.split_for_merge();
        let result = pool.for_each_mut(storages, &|id, storage| {
            if storage.inbox().is_empty() {
                return;
            }
            let ctx = MergeCtx {
                entities,
                tables,
                id: ComponentId(id as u32),
            };
            let c = storage.merge(&ctx);
            merged.fetch_add(c.merged, Ordering::Relaxed);
            dropped.fetch_add(c.dropped, Ordering::Relaxed);
        });
        report.merged = merged.into_inner();
        report.dropped = dropped.into_inner();
        if let Err(p) = result {
            let name = world.registry().info(ComponentId(p.index as u32)).name;
            report.merge_panic = Some((name, p.message()));
        }
    }

    // Return the buffers to their systems, cleared.
    for (id, storage) in world.storages_mut().iter_mut().enumerate() {
        for (s, mut b) in storage.inbox().drain(..) {
            b.clear_writes();
            systems[s as usize].out.buffers[id] = Some(b);
        }
    }

    // Structural commands, in system order then emission order.
    for slot in systems.iter_mut() {
        if !slot.ran {
            continue;
        }
        let out = &mut slot.out;
        let mut next_spawn = 0;
        for &cmd in &out.commands {
            match cmd {
                Command::Despawn(e) => match world.despawn_entity(e) {
                    Some(_) => report.despawned += 1,
                    None => report.dropped += 1,
                },
                Command::Remove(e, id) => {
                    if !world.remove_id(e, id) {
                        report.dropped += 1;
                    }
                }
                Command::Insert(e, id) => {
                    let buf = out.buffers[id.index()]
                        .as_deref_mut()
                        .expect("insert without its buffer");
                    world.storages_mut()[id.index()].stage_from(buf);
                    if !world.insert_staged(e, id) {
                        report.dropped += 1;
                    }
                }
                Command::Spawn(n) => {
                    scratch_ids.clear();
                    let types = &out.spawn_types[next_spawn..next_spawn + n as usize];
                    next_spawn += n as usize;
                    for &id in types {
                        let buf = out.buffers[id.index()]
                            .as_deref_mut()
                            .expect("spawn without its buffer");
                        world.storages_mut()[id.index()].stage_from(buf);
                        scratch_ids.push(id);
                    }
                    world.spawn_staged(scratch_ids);
                    report.spawned += 1;
                }
            }
        }
        out.commands.clear();
        out.spawn_types.clear();
    }

    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| world.flush_graveyards())) {
        report.drop_panic = Some(payload_message(&*payload));
    }
    report
}

/// Discards everything the systems emitted this frame (after a failed Run).
pub(crate) fn discard(systems: &mut [SystemSlot]) {
    for slot in systems {
        slot.out.clear();
    }
}

#[cfg(test)]
mod tests {
    use crate::merge;
    use crate::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Pos(f32);
    impl Component for Pos {
        type Output = Pos;
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Hp(i32);
    impl Component for Hp {
        type Output = i32;
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Tag;
    impl Component for Tag {
        type Output = Tag;
    }

    /// Rows per table for the `write_each` tests: enough for parallel fill parts (which
    /// are tiny under Miri, where big tables would take minutes).
    fn rows(n: usize) -> usize {
        if cfg!(miri) { 40 } else { n }
    }

    /// Entities in three tables, `n` per table; some without `Hp`.
    fn world(n: usize) -> World {
        let n = rows(n);
        let mut w = World::new();
        w.register::<Pos>(merge::last);
        w.register::<Hp>(|h: &mut Hp, d: &[i32]| h.0 = h.0 * 3 + d.iter().sum::<i32>());
        w.register::<Tag>(merge::last);
        for i in 0..n {
            w.spawn((Pos(i as f32), Hp(i as i32)));
            w.spawn((Pos(-(i as f32)),));
            w.spawn((Pos(0.5), Hp(1), Tag));
        }
        w
    }

    fn snapshot(w: &World) -> Vec<(Entity, Pos, Option<Hp>)> {
        w.query::<(&Pos, Option<&Hp>)>()
            .map(|(e, (p, h))| (e, *p, h.copied()))
            .collect()
    }

    /// Runs `frames` frames of two runtimes whose systems differ only in using
    /// `write_each` instead of a `write` loop, and checks they agree after every frame.
    fn agree(n: usize, workers: usize, each: impl Fn(&mut Runtime), write: impl Fn(&mut Runtime)) {
        let mut a = Runtime::builder().workers(workers).build(world(n));
        let mut b = Runtime::builder().workers(1).build(world(n));
        each(&mut a);
        write(&mut b);
        for _ in 0..3 {
            a.frame();
            b.frame();
            assert_eq!(snapshot(a.world()), snapshot(b.world()));
            assert_eq!(a.stats().merged, b.stats().merged);
            assert_eq!(a.stats().dropped, b.stats().dropped);
        }
    }

    #[test]
    fn write_each_single_writer_swaps_columns() {
        for workers in [1, 2] {
            // 40k rows per table: large enough to be filled in parallel parts.
            agree(
                40_000,
                workers,
                |rt| {
                    rt.add_system(|_: &World, out: &mut Output| {
                        out.write_each::<Pos, (&Pos,)>(|_, (p,)| Pos(p.0 * 2.0 + 1.0));
                    });
                },
                |rt| {
                    rt.add_system(|w: &World, out: &mut Output| {
                        for (e, (p,)) in w.query::<(&Pos,)>() {
                            out.write::<Pos>(e, Pos(p.0 * 2.0 + 1.0));
                        }
                    });
                },
            );
        }
    }

    #[test]
    fn write_each_from_several_systems_last_one_wins() {
        let each = |rt: &mut Runtime| {
            rt.add_system(|_: &World, out: &mut Output| {
                out.write_each::<Pos, (&Pos,)>(|_, (p,)| Pos(p.0 + 1.0));
            });
            rt.add_system(|_: &World, out: &mut Output| {
                out.write_each::<Pos, (&Hp,)>(|_, (h,)| Pos(h.0 as f32 * 0.5));
            });
            rt.add_system(|_: &World, out: &mut Output| {
                out.write_each::<Pos, (&Pos, Without<Hp>)>(|_, (p, ())| Pos(p.0 * 3.0));
            });
        };
        let write = |rt: &mut Runtime| {
            rt.add_system(|w: &World, out: &mut Output| {
                for (e, (p,)) in w.query::<(&Pos,)>() {
                    out.write::<Pos>(e, Pos(p.0 + 1.0));
                }
            });
            rt.add_system(|w: &World, out: &mut Output| {
                for (e, (h, _)) in w.query::<(&Hp, With<Pos>)>() {
                    out.write::<Pos>(e, Pos(h.0 as f32 * 0.5));
                }
            });
            rt.add_system(|w: &World, out: &mut Output| {
                for (e, (p, ())) in w.query::<(&Pos, Without<Hp>)>() {
                    out.write::<Pos>(e, Pos(p.0 * 3.0));
                }
            });
        };
        for workers in [1, 2] {
            agree(100, workers, each, write);
        }
    }

    #[test]
    fn write_each_twice_last_one_wins() {
        agree(
            50,
            1,
            |rt| {
                rt.add_system(|_: &World, out: &mut Output| {
                    out.write_each::<Pos, (&Pos,)>(|_, (p,)| Pos(p.0 + 1.0));
                    out.write_each::<Pos, (&Hp,)>(|_, (h,)| Pos(h.0 as f32));
                });
            },
            |rt| {
                rt.add_system(|w: &World, out: &mut Output| {
                    for (e, (p,)) in w.query::<(&Pos,)>() {
                        out.write::<Pos>(e, Pos(p.0 + 1.0));
                    }
                    for (e, (h,)) in w.query::<(&Hp,)>() {
                        out.write::<Pos>(e, Pos(h.0 as f32));
                    }
                });
            },
        );
    }

    #[test]
    fn write_each_mixed_with_writes_and_other_systems() {
        let each = |rt: &mut Runtime| {
            rt.add_system(|w: &World, out: &mut Output| {
                for (e, _) in w.query::<(&Hp, With<Tag>)>() {
                    out.write::<Hp>(e, 7);
                }
                out.write_each::<Hp, (&Pos,)>(|_, (p,)| p.0 as i32);
                for (e, _) in w.query::<(&Hp, Without<Tag>)>() {
                    out.write::<Hp>(e, -1);
                }
            });
            rt.add_system(|w: &World, out: &mut Output| {
                out.write_each::<Pos, (&Pos, Without<Tag>)>(|_, (p, ())| Pos(p.0 - 1.0));
                for (e, _) in w.query::<(&Pos, With<Hp>)>() {
                    out.write::<Hp>(e, 100);
                    out.write::<Pos>(e, Pos(9.0));
                }
            });
        };
        let write = |rt: &mut Runtime| {
            rt.add_system(|w: &World, out: &mut Output| {
                for (e, _) in w.query::<(&Hp, With<Tag>)>() {
                    out.write::<Hp>(e, 7);
                }
                for (e, (p, _)) in w.query::<(&Pos, With<Hp>)>() {
                    out.write::<Hp>(e, p.0 as i32);
                }
                for (e, _) in w.query::<(&Hp, Without<Tag>)>() {
                    out.write::<Hp>(e, -1);
                }
            });
            rt.add_system(|w: &World, out: &mut Output| {
                for (e, (p, _)) in w.query::<(&Pos, Without<Tag>)>() {
                    out.write::<Pos>(e, Pos(p.0 - 1.0));
                }
                for (e, _) in w.query::<(&Pos, With<Hp>)>() {
                    out.write::<Hp>(e, 100);
                    out.write::<Pos>(e, Pos(9.0));
                }
            });
        };
        for workers in [1, 2] {
            agree(20_000, workers, each, write);
        }
    }

    #[test]
    fn write_each_inside_par_for_each_keeps_emission_order() {
        agree(
            30,
            2,
            |rt| {
                rt.add_system(|_: &World, out: &mut Output| {
                    out.par_for_each::<(&Hp,)>(|e, (h,), out| {
                        out.write::<Hp>(e, h.0);
                        if h.0 == 3 {
                            out.write_each::<Hp, (&Tag,)>(|_, _| 5);
                        }
                    });
                });
            },
            |rt| {
                rt.add_system(|w: &World, out: &mut Output| {
                    for (e, (h,)) in w.query::<(&Hp,)>() {
                        out.write::<Hp>(e, h.0);
                        if h.0 == 3 {
                            for (t, _) in w.query::<(&Tag, With<Hp>)>() {
                                out.write::<Hp>(t, 5);
                            }
                        }
                    }
                });
            },
        );
    }

    /// Overlapping sources (k-way merge), disjoint sources, and one source, against a
    /// model that folds each entity's writes in system then emission order.
    #[test]
    fn merge_order_matches_a_sequential_model() {
        let fold = |h: i32, d: &[i32]| d.iter().fold(h, |a, &x| a.wrapping_mul(31).wrapping_add(x));
        let mut w = World::new();
        w.register::<Hp>(move |h: &mut Hp, d: &[i32]| h.0 = fold(h.0, d));
        w.register::<Pos>(merge::last);
        let ents: Vec<Entity> = (0..300).map(|i| w.spawn((Hp(i),))).collect();
        let mut rt = Runtime::builder().workers(2).build(w);
        // System s writes (s + 1) * 1000 + i to every entity i with i % (s + 2) == 0, twice
        // for even i, and system 3 only the upper half (disjoint from nothing).
        for s in 0..4i32 {
            rt.add_system(move |w: &World, out: &mut Output| {
                for (e, (h,)) in w.query::<(&Hp,)>() {
                    let i = e.index() as i32;
                    if s == 3 && i < 150 {
                        continue;
                    }
                    if i % (s + 2) == 0 {
                        out.write::<Hp>(e, (s + 1) * 1000 + i);
                        if i % 2 == 0 {
                            out.write::<Hp>(e, h.0 & 0xff);
                        }
                    }
                }
            });
        }
        let mut model: Vec<i32> = (0..300).collect();
        for _ in 0..3 {
            let mut next = model.clone();
            for (i, v) in next.iter_mut().enumerate() {
                let i = i as i32;
                let mut writes = Vec::new();
                for s in 0..4 {
                    if (s == 3 && i < 150) || i % (s + 2) != 0 {
                        continue;
                    }
                    writes.push((s + 1) * 1000 + i);
                    if i % 2 == 0 {
                        writes.push(model[i as usize] & 0xff);
                    }
                }
                if !writes.is_empty() {
                    *v = fold(*v, &writes);
                }
            }
            model = next;
            rt.frame();
            let got: Vec<i32> = ents
                .iter()
                .map(|&e| rt.world().get::<Hp>(e).unwrap().0)
                .collect();
            assert_eq!(got, model);
        }
    }

    /// One source in every shape: query order (row runs), repeats, reverse order, a
    /// repeated pass, dead targets — against a model folding writes per entity in
    /// emission order.
    #[test]
    fn single_source_shapes_match_a_model() {
        let fold = |h: i32, d: &[i32]| d.iter().fold(h, |a, &x| a.wrapping_mul(31).wrapping_add(x));
        for shape in 0..5 {
            let mut w = World::new();
            w.register::<Hp>(move |h: &mut Hp, d: &[i32]| h.0 = fold(h.0, d));
            w.register::<Tag>(merge::last);
            let mut ents: Vec<Entity> = (0..200)
                .map(|i| {
                    if i % 3 == 0 {
                        w.spawn((Hp(i), Tag))
                    } else {
                        w.spawn((Hp(i),))
                    }
                })
                .collect();
            let dead = w.spawn((Hp(0),));
            w.despawn(dead);
            let order: Vec<Entity> = w.query::<(&Hp,)>().map(|(e, _)| e).collect();
            let writes: Vec<(Entity, i32)> = match shape {
                0 => order.iter().map(|&e| (e, e.index() as i32)).collect(),
                1 => order.iter().flat_map(|&e| [(e, 1), (e, 2)]).collect(),
                2 => order.iter().rev().map(|&e| (e, 5)).collect(),
                3 => order
                    .iter()
                    .chain(&order)
                    .map(|&e| (e, e.index() as i32))
                    .collect(),
                _ => order.iter().map(|&e| (e, 7)).chain([(dead, 9)]).collect(),
            };
            let emitted = writes.clone();
            let mut rt = Runtime::builder().workers(1).build(w);
            rt.add_system(move |_: &World, out: &mut Output| {
                for &(e, v) in &emitted {
                    out.write::<Hp>(e, v);
                }
            });
            let mut model: Vec<i32> = ents
                .iter()
                .map(|&e| rt.world().get::<Hp>(e).unwrap().0)
                .collect();
            for (k, &e) in ents.iter().enumerate() {
                let d: Vec<i32> = writes.iter().filter(|w| w.0 == e).map(|w| w.1).collect();
                if !d.is_empty() {
                    model[k] = fold(model[k], &d);
                }
            }
            rt.frame();
            let got: Vec<i32> = ents
                .iter()
                .map(|&e| rt.world().get::<Hp>(e).unwrap().0)
                .collect();
            assert_eq!(got, model, "shape {shape}");
            assert_eq!(rt.stats().dropped, u64::from(shape == 4), "shape {shape}");
            ents.clear();
        }
    }

    #[test]
    fn a_panic_in_write_each_discards_the_frame() {
        let mut rt = Runtime::builder().workers(2).build(world(20_000));
        let before = snapshot(rt.world());
        rt.add_system(|_: &World, out: &mut Output| {
            out.write_each::<Pos, (&Pos,)>(|_, (p,)| {
                assert!(p.0 != rows(20_000) as f32 - 1.0, "boom");
                Pos(0.0)
            });
        });
        assert!(matches!(
            rt.try_frame(),
            Err(FrameError::SystemPanicked { .. })
        ));
        assert_eq!(snapshot(rt.world()), before);
    }
}
