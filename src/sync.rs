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
//! # Structural commands (sequential)
//!
//! After all merges, each system's commands are applied one by one in system registration
//! order, then emission order. Values removed or replaced go to per-type graveyards, dropped
//! once every move is complete.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::component::{Component, ComponentId};
use crate::entity::Entities;
use crate::output::{Command, OutputBuffer};
use crate::pool::{Pool, payload_message};
use crate::runtime::SystemSlot;
use crate::storage::{Tables, TypedStorage};
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
}

impl<C: Component> Default for MergeScratch<C> {
    fn default() -> Self {
        MergeScratch {
            pairs: Vec::new(),
            group: Vec::new(),
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
        inbox,
        scratch,
        ..
    } = storage;
    let mut counts = MergeCounts::default();

    for (_, buf) in inbox.iter_mut() {
        let buf = typed::<C>(&mut **buf);
        key_and_sort(buf, ctx, &mut scratch.pairs, &mut counts);
    }

    if let [(_, only)] = inbox.as_mut_slice() {
        let buf = typed::<C>(&mut **only);
        let (keys, values) = (&buf.keys, &buf.values);
        let n = keys.len();
        counts.merged += n as u64;
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
        return counts;
    }

    let group = &mut scratch.group;
    loop {
        let mut best: Option<u64> = None;
        for (_, buf) in inbox.iter_mut() {
            if let Some(&k) = typed::<C>(&mut **buf).keys.last() {
                best = Some(best.map_or(k, |b: u64| b.max(k)));
            }
        }
        let Some(k) = best else { break };
        group.clear();
        for (_, buf) in inbox.iter_mut().rev() {
            let buf = typed::<C>(&mut **buf);
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
    counts
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
    for &e in targets.iter() {
        let key = ctx
            .entities
            .location(e)
            .and_then(|loc| {
                let col = ctx.tables.get(loc.table).column(ctx.id)?;
                Some((u64::from(col) << 32) | u64::from(loc.row))
            })
            .unwrap_or(DROPPED);
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
