//! Feeds arbitrary bytes to the replay reader (`Replay::read`) and plays what it accepts
//! (`Runtime::play_replay`) in a small game: each must return an error or play to a
//! report, never panic, abort on a huge allocation, or hang. Every count and length in a
//! replay is checked against the bytes left before anything is allocated by it.
//!
//! The first byte picks the way in. Bit 0 clear: the rest is the file as it is; set, the
//! rest edits a valid replay of the game (a start save, inputs, checksums, a keyframe
//! every 2 frames): every 3 bytes set the byte at a little-endian `u16` offset (modulo
//! the length) to the third; 1 or 2 bytes left over cut that many times 97 bytes off the
//! end. Bit 1: the replay's integrity checks (a CRC-32C per section) are made again for
//! its bytes, where its trailers still tile it — a file written on purpose, so the fuzzer
//! reaches the frames, the keyframes and the saves inside (whose own checks are the
//! `load` target's).
//!
//! ```sh
//! cargo +nightly fuzz run replay -- -max_total_time=120
//! cargo +nightly fuzz run replay regressions/replay/*   # the inputs kept, passing
//! ```
//!
//! `fuzz/regressions/replay/keyframe-contradicts-its-frame` (not a find: a seed) is an
//! edit of the reference's checksum of frame 2, checks made again: the keyframe after
//! frame 2 then contradicts it, which the play reports as a corrupt file
//! (`tests/replay.rs`'s `a_recording_that_contradicts_itself_is_corrupt`).

#![no_main]

#[path = "../../tests/sections/mod.rs"]
mod sections;

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use runsync::Replay;
use runsync::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Component, Checksum, Clone, Copy, Debug, Serialize, Deserialize)]
#[component(output = i32, merge = merge::sum, checksum, save, debug)]
struct Hp(i32);
impl std::ops::AddAssign<i32> for Hp {
    fn add_assign(&mut self, d: i32) {
        self.0 += d;
    }
}

#[derive(Component, Checksum, Clone, Copy, Debug, Serialize, Deserialize)]
#[component(merge = merge::last, checksum, save, debug)]
struct Pos(f32, f32);

/// The game: inputs push every entity and hurt it; a fire input spawns one; the dead are
/// despawned.
fn game() -> Runtime {
    let mut w = World::new();
    w.register_default::<Hp>();
    w.register_default::<Pos>();
    for i in 0..6 {
        w.spawn((Hp(3 + i), Pos(i as f32, 0.0)));
    }
    let mut rt = Runtime::builder().workers(2).build(w);
    rt.add_system(|w: &World, out: &mut Output| {
        let pad: u8 = *w.input::<u8>();
        for (e, (p, h)) in w.query::<(&Pos, &Hp)>() {
            out.write::<Pos>(e, Pos(p.0 + f32::from(pad & 3), p.1 + 1.0));
            if h.0 <= 0 {
                out.despawn(e);
            } else {
                out.write::<Hp>(e, -i32::from(pad >> 6));
            }
        }
        if pad & 4 == 4 {
            out.spawn((Hp(2), Pos(0.0, 0.0)));
        }
    });
    rt
}

/// A replay of 8 frames of the game, a keyframe every 2.
fn reference() -> &'static [u8] {
    static FILE: OnceLock<Vec<u8>> = OnceLock::new();
    FILE.get_or_init(|| {
        let mut rt = game();
        rt.record_replay_keyframes::<u8>(2).unwrap();
        for f in 0..8u8 {
            rt.frame_with(f.wrapping_mul(77));
        }
        let mut file = Vec::new();
        rt.finish_replay(&mut file).unwrap();
        file
    })
}

/// The reference replay with `edits` applied (see the module docs).
fn edited(edits: &[u8]) -> Vec<u8> {
    let mut f = reference().to_vec();
    let mut chunks = edits.chunks_exact(3);
    for e in &mut chunks {
        let at = usize::from(u16::from_le_bytes([e[0], e[1]])) % f.len();
        f[at] = e[2];
    }
    let cut = 97 * chunks.remainder().len();
    f.truncate(f.len().saturating_sub(cut));
    f
}

fn check(data: &[u8]) {
    let Ok(replay) = Replay::read(&mut &data[..]) else {
        return;
    };
    match game().play_replay::<u8>(&replay) {
        Ok(report) => {
            if let Some(d) = &report.divergence {
                let _ = d.to_string();
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return check(data);
    };
    let mut file = if mode & 1 == 1 {
        edited(rest)
    } else {
        rest.to_vec()
    };
    if mode & 2 == 2 && sections::sections(&file).is_some() {
        sections::reseal(&mut file);
    }
    check(&file);
});
