//! Tools around the runsync runtime: the `arena` scenario (a game-like workload built from
//! [`runsync_systems`]), a digest of a whole world for determinism checks, and the
//! profiler-style report (table, JSON, SVG chart, a picture of the field) the `arena` binary
//! prints; and the
//! [`bench_report`] behind the `bench-report` binary, which summarises the criterion
//! benchmarks of `runsync-benches`; and [`layers`], behind the `layers` binary: the module
//! import graph of `src/`, its cycles, and the check against the layer list in `lib.rs`.

pub mod bench_report;
pub mod chart;
pub mod digest;
pub mod layers;
pub mod picture;
pub mod report;
pub mod scenario;
pub mod sharded;
