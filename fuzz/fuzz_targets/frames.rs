//! Drives the public API with arbitrary frames of writes and structural commands from
//! several systems, checking the world against the sequential model after every frame.
//!
//! ```sh
//! cargo +nightly fuzz run frames -- -max_total_time=60
//! ```

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/model/mod.rs"]
mod model;

use model::{Initial, Spec};

/// Reads fixed-width numbers from the input, with zeros once it runs out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn u64(&mut self) -> u64 {
        (0..8).fold(0, |acc, i| acc | (u64::from(self.u8()) << (8 * i)))
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn spec(b: &mut Bytes<'_>) -> Spec {
    let kind = b.u8() % 16;
    let pick = b.u16();
    match kind {
        0 => Spec::WriteA(pick, b.u64()),
        1 => Spec::WriteB(pick, b.u16() as i16),
        2 => Spec::WriteC(pick, b.u64() as i64),
        3 => Spec::WriteP(pick, b.u8(), b.u64()),
        4 => Spec::Despawn(pick),
        5 => Spec::InsertA(pick, b.u64()),
        6 => Spec::InsertC(pick, b.u64() as i64),
        7 => Spec::InsertP(pick, b.u16()),
        8 => Spec::InsertZ(pick),
        9 => Spec::InsertD(pick),
        10 => Spec::RemoveA(pick),
        11 => Spec::RemoveB(pick),
        12 => Spec::RemoveZ(pick),
        13 => Spec::RemoveD(pick),
        _ => {
            let flags = b.u8();
            let a = (flags & 1 != 0).then(|| b.u64());
            let bv = (flags & 2 != 0).then(|| b.u16() as i16);
            Spec::Spawn(a, bv)
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let workers = 1 + usize::from(b.u8() % 3);
    let systems = 1 + usize::from(b.u8() % 4);
    let initial: Vec<Initial> = (0..b.u8() % 16)
        .map(|_| {
            let flags = b.u8();
            let a = (flags & 1 != 0).then(|| b.u64());
            let bv = (flags & 2 != 0).then(|| b.u16() as i16);
            (a, bv, flags & 4 != 0, flags & 8 != 0)
        })
        .collect();
    let mut frames = Vec::new();
    while !b.is_empty() && frames.len() < 8 {
        let frame: Vec<Vec<Spec>> = (0..systems)
            .map(|_| (0..b.u8() % 16).map(|_| spec(&mut b)).collect())
            .collect();
        frames.push(frame);
    }
    if let Err(e) = model::run_case(workers, systems, frames, initial) {
        panic!("runtime and model disagree: {e}");
    }
});
