//! Feeds arbitrary bytes to the save-file loaders (`World::load`, `Runtime::load`): each
//! must return an error or load a world that runs, never panic, abort on a huge
//! allocation, or hang. A failed load must leave the world as it was.
//!
//! The first byte picks the way in. Bit 0 clear: the rest is the file as it is; set, the
//! rest edits a valid save of a small game (serde columns, a plain-data column, a
//! resource, free and reserved ids): every 3 bytes set the byte at a little-endian `u16`
//! offset (modulo the length) to the third; 1 or 2 bytes left over cut that many times 97
//! bytes off the end. So the fuzzer starts deep inside real saves, as well as from
//! nothing. Bit 1: the file's integrity checks (a CRC-32C per section) are made again
//! for its bytes, where its trailers still tile it — a file written on purpose, so the
//! fuzzer reaches every check behind them (clear: damage, which the checks must catch).
//! Bit 2, with bit 0: the save edited is the same one as version 2 wrote it (no checks),
//! which is still read. Bit 3: the game has two stages and a message type, so its save
//! (with bit 0, the one edited) is version 5, with each stage's change marks and
//! messages; the loads are into that game.
//!
//! ```sh
//! cargo +nightly fuzz run load -- -max_total_time=120
//! cargo +nightly fuzz run load regressions/load/*   # the inputs it found, fixed
//! ```
//!
//! `fuzz/regressions/load/spawned-last-past-the-slots` (an edit: a reservation that
//! claims billions of spawns last frame, which the next frame then reserved — an
//! out-of-memory) is `tests/persistence/save_files.rs`'s
//! `a_reservation_that_claims_more_spawns_than_slots_is_an_error`. It was found in a
//! version-2 save (no checks; its mode byte now picks that way in);
//! `spawned-last-past-the-slots-resealed` is the same edit of the version-4 save, its
//! checks made again.

#![no_main]

#[path = "../../tests/sections/mod.rs"]
mod sections;

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use runsync::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Component, Checksum, Clone, Copy, Debug, Serialize, Deserialize)]
#[component(merge = merge::last, checksum, save)]
struct Pos(f32, f32);

/// Plain data: saved as its bytes.
#[derive(Component, Checksum, Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[component(merge = merge::last, checksum, save_pod)]
#[repr(C)]
struct Vel {
    x: f32,
    y: u16,
    z: u16,
}

#[derive(Component, Checksum, Clone, Debug, Serialize, Deserialize)]
#[component(merge = merge::last, checksum, save)]
struct Name(String);

#[derive(Component, Checksum, Clone, Copy, Debug, Serialize, Deserialize)]
#[component(merge = merge::last, checksum, save)]
enum State {
    Idle,
    Busy(u8),
}

#[derive(Component, Clone, Debug, Serialize, Deserialize)]
#[component(output = u32)]
struct Log(Vec<u32>);

fn world() -> World {
    let mut w = World::new();
    w.register_default::<Pos>();
    w.register_default::<Vel>();
    w.register_default::<Name>();
    w.register_default::<State>();
    w.register_resource::<Log>(|l: &mut Log, d: &[u32]| l.0.extend_from_slice(d));
    w.saving_resource::<Log>();
    w.spawn((Pos(1.0, 2.0), State::Busy(3)));
    w
}

/// The game the loaded worlds run a frame of, and the reference save is made from.
fn game(w: World, workers: usize) -> Runtime {
    let mut rt = Runtime::builder().workers(workers).build(w);
    rt.add_system(|w: &World, out: &mut Output| {
        for (e, (p,)) in w.query::<(&Pos,)>() {
            out.write::<Pos>(e, Pos(p.1, p.0));
            if p.0 > 3.0 {
                out.despawn(e);
            } else {
                out.spawn((State::Idle, Vel { x: p.0, y: 1, z: 2 }));
            }
        }
    });
    rt
}

/// A message of the two-stage game.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Ping(u32);

/// `world()` with a message type, for the two-stage game.
fn staged_world() -> World {
    let mut w = world();
    w.register_message::<Ping>();
    w.saving_message::<Ping>();
    w
}

/// The game in two stages: `game`'s system in the first, which also sends, and one that
/// reads the messages and the changed `Pos` and writes `State` in the second.
fn staged_game(w: World, workers: usize) -> Runtime {
    let mut rt = Runtime::builder()
        .workers(workers)
        .stages(["a", "b"])
        .build(w);
    let (a, b) = (rt.stage_id("a").unwrap(), rt.stage_id("b").unwrap());
    rt.add_system_to(a, |w: &World, out: &mut Output| {
        for (e, (p,)) in w.query::<(&Pos,)>() {
            out.write::<Pos>(e, Pos(p.1, p.0));
            out.send_to(e, Ping(e.index()));
            if p.0 > 3.0 {
                out.despawn(e);
            } else {
                out.spawn((State::Idle, Vel { x: p.0, y: 1, z: 2 }));
            }
        }
        out.send(Ping(7));
    });
    rt.add_system_to(b, |w: &World, out: &mut Output| {
        let heard = w.messages::<Ping>().len() as u8;
        for (e, _) in w.query_filtered::<(&Pos,), Changed<Pos>>() {
            out.write::<State>(e, State::Busy(heard));
        }
    });
    rt
}

/// A runtime save of a few frames of the game (`staged`: the two-stage one, a version-5
/// save): entities in several tables, free and reserved ids, every kind of column, the
/// resource.
fn reference(staged: bool) -> &'static [u8] {
    static SAVE: [OnceLock<Vec<u8>>; 2] = [OnceLock::new(), OnceLock::new()];
    SAVE[usize::from(staged)].get_or_init(|| {
        let mut w = if staged { staged_world() } else { world() };
        w.insert_resource(Log(vec![7, 8]));
        for i in 0..6u16 {
            let v = Vel {
                x: f32::from(i),
                y: i,
                z: 9,
            };
            match i % 3 {
                0 => w.spawn((Pos(f32::from(i), 0.5), v, Name(format!("n{i}")))),
                1 => w.spawn((v, State::Busy(i as u8))),
                _ => w.spawn((Pos(0.0, f32::from(i)),)),
            };
        }
        let mut rt = if staged {
            staged_game(w, 1)
        } else {
            game(w, 1)
        };
        for _ in 0..3 {
            rt.frame();
        }
        let mut file = Vec::new();
        rt.save(&mut file).unwrap();
        assert_eq!(file[8], if staged { 5 } else { 4 }, "the format version");
        file
    })
}

/// The reference save with `edits` applied (see the module docs), as version 2 wrote it
/// if `v2`.
fn edited(edits: &[u8], v2: bool, staged: bool) -> Vec<u8> {
    let mut f = if v2 {
        sections::version_2(reference(staged))
    } else {
        reference(staged).to_vec()
    };
    let mut chunks = edits.chunks_exact(3);
    for e in &mut chunks {
        let at = usize::from(u16::from_le_bytes([e[0], e[1]])) % f.len();
        f[at] = e[2];
    }
    let cut = 97 * chunks.remainder().len();
    f.truncate(f.len().saturating_sub(cut));
    f
}

fn check(data: &[u8], staged: bool) {
    let (make, run): (fn() -> World, fn(World, usize) -> Runtime) = if staged {
        (staged_world, staged_game)
    } else {
        (world, game)
    };
    let mut w = make();
    let before = w.checksum();
    match w.load(&mut &data[..]) {
        Ok(()) => {
            let mut rt = run(w, 2);
            rt.frame();
            let _ = rt.world().checksum();
        }
        Err(e) => {
            assert_eq!(w.checksum(), before, "a failed load changed the world");
            let _ = e.to_string();
        }
    }
    let mut rt = run(make(), 1);
    if rt.load(&mut &data[..]).is_ok() {
        rt.frame();
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return check(data, false);
    };
    let staged = mode & 8 == 8;
    let mut file = if mode & 1 == 1 {
        edited(rest, mode & 4 == 4, staged)
    } else {
        rest.to_vec()
    };
    if mode & 2 == 2 && sections::sections(&file).is_some() {
        sections::reseal(&mut file);
    }
    check(&file, staged);
});
