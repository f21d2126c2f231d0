//! Drives the public API with arbitrary frames of writes (through `write`, `Writer`,
//! `write_each` and `par_for_each`) and structural commands from several systems, checking
//! the world against the sequential model after every frame, at 1, 2 and 8 workers.
//!
//! ```sh
//! cargo +nightly fuzz run frames -- -max_total_time=60
//! ```

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/model/mod.rs"]
mod model;

use model::{Api, Batch, Initial, Kind, Loop, Shape, Spec};

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
    fn kind(&mut self) -> Kind {
        Kind::ALL[usize::from(self.u8()) % Kind::ALL.len()]
    }
    fn shape(&mut self) -> Shape {
        Shape::ALL[usize::from(self.u8()) % Shape::ALL.len()]
    }
}

fn spec(b: &mut Bytes<'_>) -> Spec {
    let op = b.u8() % 11;
    match op {
        0..=3 => Spec::Write(b.kind(), b.u16(), b.u64()),
        4 => Spec::Insert(b.kind(), b.u16(), b.u64()),
        5 => Spec::Remove(b.kind(), b.u16()),
        6 => Spec::Despawn(b.u16()),
        7 => Spec::InsertSpawned(b.kind(), b.u64()),
        8 => Spec::WriteSpawned(b.kind(), b.u64()),
        9 => Spec::WriteRes(b.u64()),
        _ => {
            let flags = b.u8();
            let a = (flags & 1 != 0).then(|| b.u64());
            let bv = (flags & 2 != 0).then(|| b.u16() as i16);
            Spec::Spawn(a, bv, flags & 4 != 0)
        }
    }
}

/// A batch; loops' illegal combinations (a `Writer` of two types, a reverse
/// `par_for_each`, ...) are made legal by the model.
fn batch(b: &mut Bytes<'_>) -> Batch {
    let head = b.u8();
    if head & 1 == 0 {
        let specs = (0..b.u8() % 8).map(|_| spec(b)).collect();
        return Batch::Ops {
            writer: head & 2 != 0,
            specs,
        };
    }
    let api =
        [Api::Write, Api::Writer, Api::WriteEach, Api::ParForEach][usize::from(head >> 1) % 4];
    let flags = b.u8();
    let shape = b.shape();
    let writes = (0..1 + b.u8() % 3).map(|_| (b.kind(), b.u64())).collect();
    let extra = (flags & 4 != 0).then(|| (b.kind(), b.u16()));
    Batch::Loop(Loop {
        api,
        shape,
        reverse: flags & 1 != 0,
        passes: 1 + (flags >> 1 & 1),
        writes,
        extra,
        despawn: flags & 8 != 0,
    })
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let systems = 1 + usize::from(b.u8() % 4);
    let n = b.u8();
    // Mostly small worlds; sometimes enough rows for `par_for_each` to split into chunks.
    let n = if n & 0x80 != 0 {
        64 + usize::from(n & 0x7f)
    } else {
        usize::from(n % 24)
    };
    let initial: Vec<Initial> = (0..n)
        .map(|_| {
            let flags = b.u8();
            let seed = b.u64();
            let a = (flags & 1 != 0).then_some(seed.rotate_left(13));
            let bv = (flags & 2 != 0).then_some(seed as i16);
            Initial {
                a,
                b: bv,
                flags: b.u8(),
                seed,
            }
        })
        .collect();
    let mut frames = Vec::new();
    while !b.is_empty() && frames.len() < 8 {
        let frame: Vec<Vec<Batch>> = (0..systems)
            .map(|_| (0..b.u8() % 4).map(|_| batch(&mut b)).collect())
            .collect();
        frames.push(frame);
    }
    if let Err(e) = model::run_case(systems, &frames, &initial) {
        panic!("runtime and model disagree: {e}");
    }
});
