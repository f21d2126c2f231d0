//! Loads saves of the arena (`tools/src/scenario.rs`, the game itself) whose resources
//! section the fuzzer rewrote, its integrity checks made again (a file written on
//! purpose, as an attacker can): `Runtime::load` must return an error and leave the world
//! as it was, or load a world whose next frames run, never panic, abort on an allocation
//! the file did not pay for, or hang. The resource under attack is the `SpatialGrid` (the
//! grid the next frame reads: a cell side, positions, a lattice whose cells its items'
//! extent sizes) and the `ArenaSetup` beside it.
//!
//! The first byte picks the way in. Bit 0: the save is of the arena by its own rules (a
//! box grid) or by local rules (a lattice grid, its side saved negated). Bits 1-2:
//!
//! - 0: the rest is the grid's value, whole (its length set to it);
//! - 1: the rest is XORed onto the grid's value from its first byte (past its end, it
//!   extends it);
//! - 2: the grid's value, decoded and edited: the first 4 bytes of the rest are the cell
//!   side's bits, then every 9 bytes set item `b[0]` (modulo the items; an item added if
//!   there are none) to the position of the two `f32`s after it; encoded again;
//! - 3: the rest is XORed onto the whole resources section (the names, presence bytes
//!   and lengths of both resources too).
//!
//! ```sh
//! cargo +nightly fuzz run arena_grid -- -max_total_time=120
//! cargo +nightly fuzz run arena_grid regressions/arena_grid/*   # the inputs it found, fixed
//! ```
//!
//! `fuzz/regressions/arena_grid/lattice-side-2-pow-minus-57` (its first find, in about
//! 6,400 runs: the grid's side set to -2^-57, a lattice over the arena's 20 units that
//! panicked in `Grid`) and `lattice-of-17-gb` (a lattice of side 2^-10 over 64 units,
//! 65,434 x 65,434 cells: an out-of-memory) are `tools/tests/arena_grid_save.rs`'s
//! `a_negated_cell_side_over_items_far_apart_is_refused` and
//! `a_lattice_of_17_gb_of_cells_is_refused_without_allocating_them`.

#![no_main]

#[path = "../../tests/sections/mod.rs"]
mod sections;

// The arena's code as `arena` builds it, without the crate around it (its reports and
// cluster are not needed here).
#[allow(dead_code)]
#[path = "../../tools/src/scenario.rs"]
mod scenario;

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use runsync::prelude::*;
use runsync_systems::SpatialGrid;
use scenario::{ArenaConfig, Rules};
use serde::{Deserialize, Serialize};

/// A saved `SpatialGrid`, as its bytes hold it.
#[derive(Serialize, Deserialize)]
struct Saved {
    frame: u64,
    cell: f32,
    items: Vec<Item>,
}

/// One item of a [`Saved`] grid.
#[derive(Clone, Copy, Serialize, Deserialize)]
struct Item {
    entity: u64,
    pos: [f32; 2],
    radius: f32,
    tag: u32,
}

const CONFIG: ArenaConfig = ArenaConfig {
    agents: 64,
    seed: 11,
    workers: 1,
};

/// The arena by `rules`, on one worker.
fn arena(rules: Rules) -> Runtime {
    let mut rt = Runtime::builder()
        .workers(1)
        .fixed_hz(60)
        .build(scenario::world(CONFIG));
    scenario::add_systems(&mut rt, CONFIG, rules);
    rt
}

/// A valid save of the arena by some rules, split into its sections, with where its
/// grid's value lies.
struct Base {
    sections: Vec<Vec<u8>>,
    /// The resources section.
    resources: usize,
    /// The offset of the grid value's length (a `u64`, the value after it) in it.
    grid: usize,
}

impl Base {
    fn of(rules: Rules) -> Base {
        let mut rt = arena(rules);
        for _ in 0..3 {
            rt.frame();
        }
        let mut file = Vec::new();
        rt.save(&mut file).unwrap();
        let sections = sections::split(&file);
        let name = std::any::type_name::<SpatialGrid>().as_bytes();
        let resources = sections
            .iter()
            .position(|s| s.windows(name.len()).any(|w| w == name))
            .expect("the resources section names the grid");
        let s = &sections[resources];
        // After the name: the presence byte, then the length.
        let grid = s.windows(name.len()).position(|w| w == name).unwrap() + name.len() + 1;
        Base {
            sections,
            resources,
            grid,
        }
    }

    /// The grid's value.
    fn value(&self) -> &[u8] {
        let s = &self.sections[self.resources];
        let len = u64::from_le_bytes(s[self.grid..self.grid + 8].try_into().unwrap()) as usize;
        &s[self.grid + 8..self.grid + 8 + len]
    }

    /// The save with the grid's value replaced by `value`.
    fn with_value(&self, value: &[u8]) -> Vec<u8> {
        let mut sections = self.sections.clone();
        let s = &mut sections[self.resources];
        let old = self.value().len();
        s.splice(self.grid..self.grid + 8 + old, {
            let mut v = (value.len() as u64).to_le_bytes().to_vec();
            v.extend_from_slice(value);
            v
        });
        sections::join(&sections)
    }
}

fn bases() -> &'static [Base; 2] {
    static BASES: OnceLock<[Base; 2]> = OnceLock::new();
    BASES.get_or_init(|| [Base::of(Rules::Whole), Base::of(Rules::Local)])
}

/// `bytes` XORed onto `onto` from its start, extending it past its end.
fn xor(onto: &[u8], bytes: &[u8]) -> Vec<u8> {
    let mut out = onto.to_vec();
    for (i, &b) in bytes.iter().enumerate() {
        match out.get_mut(i) {
            Some(o) => *o ^= b,
            None => out.push(b),
        }
    }
    out
}

/// The grid's value decoded, edited by `rest` (mode 2), encoded.
fn edited(value: &[u8], rest: &[u8]) -> Vec<u8> {
    let Ok(Some(mut grid)) = postcard::from_bytes::<Option<Saved>>(value) else {
        return value.to_vec();
    };
    let Some((cell, moves)) = rest.split_first_chunk::<4>() else {
        return value.to_vec();
    };
    grid.cell = f32::from_le_bytes(*cell);
    for m in moves.chunks_exact(9) {
        let f = |at: usize| f32::from_le_bytes(m[at..at + 4].try_into().unwrap());
        let pos = [f(1), f(5)];
        if grid.items.is_empty() {
            grid.items.push(Item {
                entity: 1 << 32,
                pos,
                radius: 0.5,
                tag: SpatialGrid::BODY,
            });
        } else {
            let n = grid.items.len();
            grid.items[usize::from(m[0]) % n].pos = pos;
        }
    }
    postcard::to_allocvec(&Some(grid)).unwrap()
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let rules = if mode & 1 == 0 {
        Rules::Whole
    } else {
        Rules::Local
    };
    let base = &bases()[usize::from(mode & 1)];
    let file = match (mode >> 1) & 3 {
        0 => base.with_value(rest),
        1 => base.with_value(&xor(base.value(), rest)),
        2 => base.with_value(&edited(base.value(), rest)),
        _ => {
            let mut sections = base.sections.clone();
            sections[base.resources] = xor(&sections[base.resources], rest);
            sections::join(&sections)
        }
    };
    let mut rt = arena(rules);
    let before = rt.world().checksum();
    match rt.load(&mut file.as_slice()) {
        Err(_) => assert_eq!(
            rt.world().checksum(),
            before,
            "a failed load changed the world"
        ),
        Ok(()) => {
            for _ in 0..2 {
                if let Err(e) = rt.try_frame() {
                    panic!("a loaded arena's frame failed: {e}");
                }
            }
        }
    }
});
