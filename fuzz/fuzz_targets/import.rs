//! Feeds arbitrary bytes to `World::import_entity`, which reads entity records sent by
//! other shards (`runsync-cluster`): untrusted input off the network. Each call must
//! return an error, leaving the world and the input as they were, or place one entity
//! that a frame then runs over; never panic, abort on a huge allocation, or hang.
//!
//! By the first byte: even, the rest is read as records one after another; odd, the rest
//! edits a valid record of an entity with every kind of column (every 3 bytes set the byte
//! at offset `u16 % len` to the third), so the fuzzer starts inside real records too.
//!
//! ```sh
//! cargo +nightly fuzz run import -- -max_total_time=120
//! cargo +nightly fuzz run import fuzz/regressions/import/*   # the inputs it found, fixed
//! ```
//!
//! `fuzz/regressions/import/index-far-past-the-slots` (an edit setting the entity index to
//! about four billion, which made the allocator grow to that many slots: out of memory) is
//! `world::transfer`'s `a_far_out_index_needs_room_made_first`.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use runsync::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Component, Checksum, Clone, Copy, Debug, Serialize, Deserialize)]
#[component(merge = merge::last, checksum, save)]
struct Pos(f32, f32);

/// Plain data: sent as its bytes.
#[derive(Component, Checksum, Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[component(merge = merge::last, checksum, save_pod)]
#[repr(C)]
struct Vel {
    x: f32,
    y: u32,
}

#[derive(Component, Checksum, Clone, Debug, Serialize, Deserialize)]
#[component(merge = merge::last, checksum, save)]
struct Name(String);

fn world() -> World {
    let mut w = World::new();
    w.register_default::<Pos>();
    w.register_default::<Vel>();
    w.register_default::<Name>();
    // Entities alive here, some ids free: an import may collide with either.
    let es: Vec<Entity> = (0..6).map(|i| w.spawn((Pos(i as f32, 0.0),))).collect();
    w.despawn(es[2]);
    w
}

/// A record of an entity with all three types.
fn record() -> &'static [u8] {
    static RECORD: OnceLock<Vec<u8>> = OnceLock::new();
    RECORD.get_or_init(|| {
        let mut w = world();
        for _ in 0..4 {
            w.spawn((Vel { x: 1.0, y: 2 },));
        }
        let e = w.spawn((Pos(1.0, 2.0), Vel { x: 3.0, y: 4 }, Name("fuzz".into())));
        let mut out = Vec::new();
        assert!(w.export_entity(e, &mut out).unwrap());
        out
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = if mode % 2 == 0 {
        rest.to_vec()
    } else {
        let mut r = record().to_vec();
        for e in rest.chunks_exact(3) {
            let at = usize::from(u16::from_le_bytes([e[0], e[1]])) % r.len();
            r[at] = e[2];
        }
        r
    };
    let mut w = world();
    let mut src = &bytes[..];
    for _ in 0..8 {
        let (before, len, left) = (w.checksum(), w.len(), src.len());
        match w.import_entity(&mut src) {
            Ok(e) => {
                assert!(w.is_alive(e));
                assert_eq!(w.len(), len + 1);
                assert!(src.len() < left);
            }
            Err(_) => {
                assert_eq!(w.checksum(), before, "a failed import changed the world");
                assert_eq!(src.len(), left, "a failed import consumed input");
                break;
            }
        }
    }
    // What arrived runs.
    let mut rt = Runtime::builder().workers(1).build(w);
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, (p,)) in w.query::<(&Pos,)>() {
            out.write::<Pos>(e, Pos(p.1, p.0));
        }
        if w.resource::<Time>().frame == 0 {
            out.spawn((Pos(0.0, 0.0),));
        }
    });
    rt.frame();
    rt.frame();
});
