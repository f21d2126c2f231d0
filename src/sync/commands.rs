//! Sync's last step: structural commands, in system registration order, then emission
//! order.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::SyncReport;
use crate::component::ComponentId;
use crate::output::Command;
use crate::pool::payload_message;
use crate::system::SystemSlot;
use crate::world::World;

/// Applies every system's commands one by one (despawn, remove, insert, spawn, as
/// emitted), then drops the values they removed or replaced.
pub(super) fn apply(
    world: &mut World,
    systems: &mut [SystemSlot],
    scratch_ids: &mut Vec<ComponentId>,
    report: &mut SyncReport,
) {
    let storage = &mut world.storage;
    for slot in systems.iter_mut() {
        if !slot.ran {
            continue;
        }
        let out = &mut slot.out;
        let mut next_spawn = 0;
        for &cmd in &out.commands {
            match cmd {
                Command::Despawn(e) => match storage.despawn(e) {
                    Some(_) => report.despawned += 1,
                    None => report.dropped += 1,
                },
                Command::Remove(e, id) => {
                    if !storage.remove(e, id) {
                        report.dropped += 1;
                    }
                }
                Command::Insert(e, id) => {
                    let buf = out.buffers[id.index()]
                        .as_mut()
                        .expect("insert without its buffer");
                    buf.as_dyn().stage_insert(storage.columns_of(id));
                    if !storage.insert_staged(e, id) {
                        report.dropped += 1;
                    }
                }
                Command::Spawn(n) => {
                    scratch_ids.clear();
                    let types = &out.spawn_types[next_spawn..next_spawn + n as usize];
                    next_spawn += n as usize;
                    for &id in types {
                        let buf = out.buffers[id.index()]
                            .as_mut()
                            .expect("spawn without its buffer");
                        buf.as_dyn().stage_insert(storage.columns_of(id));
                        scratch_ids.push(id);
                    }
                    storage.spawn_staged(scratch_ids);
                    report.spawned += 1;
                }
            }
        }
        out.commands.clear();
        out.spawn_types.clear();
    }

    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| storage.flush_graveyards())) {
        report.drop_panic = Some(payload_message(&*payload));
    }
}
