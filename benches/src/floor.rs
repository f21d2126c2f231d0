//! The fold's memory floor: the least time any fold of a frame's outputs could take on
//! this core, measured in the process that ran the frames.
//!
//! runsync's Sync reads every output its systems wrote in Run and folds it into its
//! component. Whatever the fold's code, it has to bring each output's value in from
//! memory once and read and write each component it changes once. [`measure`] times a
//! kernel that does only that, for a frame's [`Stream`]s (how many values each system
//! wrote into which component type, and their sizes): per type, its column's rows taken in
//! blocks that fit in L1, each source's values for the block added into it in turn, so the
//! column goes through memory once and every source once, in order, as plain `f32` adds
//! the compiler vectorises. It does less than a fold must: no entity handles (a write by
//! handle also stores the entity), no lookup of the target row (each source's value `k`
//! goes to row `k`), no merge function, and a last-wins type's column is read as well as
//! written. So the floor is below what any fold of those outputs can reach.
//!
//! It is timed twice: **warm**, the kernel's data just touched (it fits in the last-level
//! cache: a frame's outputs are written in Run shortly before Sync reads them), and
//! **cold**, after a pass over a buffer larger than the last-level cache has evicted it.

use std::hint::black_box;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// One system's values into one component type, a frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stream {
    /// The component type's index in the frame's list (streams of one type share a
    /// column, in order).
    pub column: usize,
    /// Bytes of one of the type's components.
    pub column_bytes: usize,
    /// Values written a frame.
    pub values: usize,
    /// Bytes of one value (the type's `Output`).
    pub value_bytes: usize,
}

/// The floor of one frame's fold, in milliseconds, and the bytes it moves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Floor {
    /// The kernel with its data in cache (the median of the passes after the first).
    pub warm_ms: f64,
    /// The kernel with its data evicted before each pass (the median of the passes).
    pub cold_ms: f64,
    /// The values' bytes read.
    pub value_bytes: u64,
    /// The columns' bytes read and written (each counted once).
    pub column_bytes: u64,
}

/// Rows of a column taken at once: 4096 `f32`s, 16 KiB, stay in a 32 KiB L1.
const BLOCK: usize = 4096;

/// A buffer larger than any last-level cache this is run on (64 MiB), written through
/// between cold passes.
const EVICT: usize = 64 << 20;

/// `f32` lanes of `bytes` bytes (at least one).
fn lanes(bytes: usize) -> usize {
    bytes.div_ceil(4).max(1)
}

/// The kernel's data: per type, its column and its streams' values.
struct Frame {
    types: Vec<Type>,
}

/// One component type's column (`lanes` `f32`s a row) and each of its streams' values
/// with their lanes, in stream order.
struct Type {
    column: Vec<f32>,
    lanes: usize,
    sources: Vec<(Vec<f32>, usize)>,
}

impl Frame {
    fn new(streams: &[Stream]) -> Frame {
        let count = streams.iter().map(|s| s.column + 1).max().unwrap_or(0);
        let mut types: Vec<Type> = (0..count)
            .map(|_| Type {
                column: Vec::new(),
                lanes: 1,
                sources: Vec::new(),
            })
            .collect();
        for s in streams {
            let t = &mut types[s.column];
            let w = lanes(s.value_bytes);
            t.lanes = lanes(s.column_bytes);
            t.sources
                .push(((0..s.values * w).map(|i| (i % 7) as f32).collect(), w));
        }
        for t in &mut types {
            let rows = t
                .sources
                .iter()
                .map(|(v, w)| v.len() / w)
                .max()
                .unwrap_or(0);
            t.column = vec![0.0; rows * t.lanes];
        }
        Frame { types }
    }

    /// One fold: per column, block by block, every source of it added in.
    fn fold(&mut self) {
        for t in &mut self.types {
            let cw = t.lanes;
            let rows = t.column.len() / cw;
            for start in (0..rows).step_by(BLOCK) {
                let end = (start + BLOCK).min(rows);
                let block = &mut t.column[start * cw..end * cw];
                for (values, vw) in &t.sources {
                    let n = values.len() / vw;
                    if start >= n {
                        continue;
                    }
                    let take = end.min(n) - start;
                    add(
                        &mut block[..take * cw],
                        cw,
                        &values[start * vw..(start + take) * vw],
                        *vw,
                    );
                }
            }
        }
        black_box(&mut self.types);
    }

    fn bytes(&self) -> (u64, u64) {
        let values = self.types.iter().flat_map(|t| &t.sources);
        let values = values.map(|(v, _)| v.len() * 4).sum::<usize>();
        let columns = self.types.iter().map(|t| t.column.len() * 4).sum::<usize>();
        (values as u64, columns as u64)
    }
}

/// `block[r] += values[r]` row by row, over the lanes the two rows share.
#[inline]
fn add(block: &mut [f32], cw: usize, values: &[f32], vw: usize) {
    if cw == vw {
        for (c, v) in block.iter_mut().zip(values) {
            *c += v;
        }
    } else {
        let w = cw.min(vw);
        for (c, v) in block.chunks_exact_mut(cw).zip(values.chunks_exact(vw)) {
            for (c, v) in c[..w].iter_mut().zip(&v[..w]) {
                *c += v;
            }
        }
    }
}

/// Times the floor of a frame of `streams`, `passes` times each way (at least 3).
pub fn measure(streams: &[Stream], passes: usize) -> Floor {
    let passes = passes.max(3);
    let mut frame = Frame::new(streams);
    let (value_bytes, column_bytes) = frame.bytes();
    let mut evict = vec![0u8; EVICT];
    let mut warm = Vec::with_capacity(passes);
    let mut cold = Vec::with_capacity(passes);
    frame.fold();
    for i in 0..passes {
        let t = Instant::now();
        frame.fold();
        warm.push(t.elapsed().as_secs_f64() * 1e3);
        for b in evict.iter_mut().step_by(64) {
            *b = b.wrapping_add(i as u8 | 1);
        }
        black_box(&mut evict);
        let t = Instant::now();
        frame.fold();
        cold.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Floor {
        warm_ms: crate::compare::median(warm),
        cold_ms: crate::compare::median(cold),
        value_bytes,
        column_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_value_lands_in_its_row() {
        let streams = [
            Stream {
                column: 0,
                column_bytes: 8,
                values: 5000,
                value_bytes: 8,
            },
            Stream {
                column: 0,
                column_bytes: 8,
                values: 3,
                value_bytes: 8,
            },
            Stream {
                column: 1,
                column_bytes: 16,
                values: 4100,
                value_bytes: 4,
            },
        ];
        let mut frame = Frame::new(&streams);
        frame.fold();
        // Value lane i is (i % 7): row 1's lanes 2 and 3 get 2 + 3 from the first stream
        // and the same from the second.
        assert_eq!(&frame.types[0].column[2..4], &[4.0, 6.0]);
        assert_eq!(frame.types[0].column[4 * 2], 1.0 + 0.0);
        // A value of one lane lands in lane 0 of its 4-lane row; the others stay 0.
        assert_eq!(
            &frame.types[1].column[4 * 4099..4 * 4100],
            &[(4099 % 7) as f32, 0.0, 0.0, 0.0]
        );
        assert_eq!(
            frame.bytes(),
            ((5003 * 8 + 4100 * 4) as u64, (5000 * 8 + 4100 * 16) as u64)
        );
    }

    #[test]
    fn a_floor_is_timed_both_ways() {
        let streams = [Stream {
            column: 0,
            column_bytes: 8,
            values: 20_000,
            value_bytes: 8,
        }];
        let f = measure(&streams, 3);
        assert!(f.warm_ms > 0.0 && f.cold_ms > 0.0, "{f:?}");
        assert_eq!((f.value_bytes, f.column_bytes), (160_000, 160_000));
    }
}
