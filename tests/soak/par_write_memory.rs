//! Output buffers of parallel writes to scattered other entities stop growing: a
//! `par_for_each` whose chunks each `out.write` to a few random entities, beside a
//! row-write column of the same type, for thousands of frames at 1, 2 and 4 workers. Its
//! chunks' value vectors and the row-write columns trade vectors every frame; the bytes
//! the runtime holds for them (`Runtime::memory().output_bytes`) must level off, not
//! creep by a column's worth every so often as vectors that once held a whole column pile
//! up in chunk buffers.

use runsync::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Heat(i64);
impl Component for Heat {
    type Output = i64;
}
impl std::ops::AddAssign<i64> for Heat {
    fn add_assign(&mut self, d: i64) {
        self.0 = self.0.wrapping_add(d);
    }
}

const ENTITIES: usize = 2_000;
const FRAMES: u64 = if cfg!(miri) { 20 } else { 6_000 };

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn output_bytes_at(workers: usize, frames: &[u64]) -> Vec<usize> {
    let mut world = World::new();
    world.register::<Heat>(merge::sum);
    let all: Vec<Entity> = (0..ENTITIES)
        .map(|i| world.spawn((Heat(i as i64),)))
        .collect();
    let mut rt = Runtime::builder().workers(workers).build(world);
    rt.add_system_named("spread", move |w: &World, out: &mut Output| {
        let frame = w.resource::<Time>().frame;
        out.par_for_each::<(&Heat, Write<Heat>)>(|e, (h, mut heat), out| {
            heat.set(1);
            let r = mix(e.to_bits() ^ frame.wrapping_mul(0x1234_5678_9abc));
            // One row in eight heats a random other entity.
            if r % 8 == 0 {
                out.write::<Heat>(all[(r >> 8) as usize % all.len()], h.0 & 0xff);
            }
        });
    });
    let mut at = Vec::new();
    for f in 1..=*frames.last().unwrap() {
        rt.frame();
        if frames.contains(&f) {
            at.push(rt.memory().output_bytes);
        }
    }
    at
}

#[test]
fn parallel_scattered_writes_hold_level_output_buffers() {
    let column = ENTITIES * std::mem::size_of::<i64>();
    let early = FRAMES / 6;
    for workers in [1, 2, 4] {
        let at = output_bytes_at(workers, &[early, FRAMES]);
        let (first, last) = (at[0], at[1]);
        println!("{workers} workers: output bytes at frames {early} and {FRAMES}: {first}, {last}");
        // The row-write column, a few spares, and each chunk's vector sized for the few
        // values it writes: a handful of columns' worth, not one a chunk. (When a write
        // that happened to target row 0 of the table gave its vector room for the whole
        // table, every chunk's vectors grew to columns over the frames: 1.1 MB at frame
        // 1,000 and 1.6 MB at 6,000 on 2 workers.)
        assert!(
            first <= 8 * column,
            "{workers} workers: {first} bytes at frame {early}"
        );
        // What is left to grow is a chunk vector meeting a frame with more writes than
        // any before: a doubling of a vector of a few hundred values, rarer and rarer.
        assert!(
            last <= first + 2 * column,
            "{workers} workers: {first} bytes at frame {early}, {last} at {FRAMES}"
        );
    }
}
