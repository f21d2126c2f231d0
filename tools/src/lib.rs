//! Tools around the runsync runtime: the `arena` scenario (a game-like workload built from
//! [`runsync_systems`]), a digest of a whole world for determinism checks, and the
//! profiler-style report (table, JSON, SVG chart, a picture of the field) the `arena` binary
//! prints. (The benchmark summary and the layer check are `cargo xtask bench-report` and
//! `cargo xtask layers`, in `xtask/`.)

pub mod chart;
pub mod digest;
pub mod picture;
pub mod report;
pub mod scenario;
pub mod sharded;
pub mod trace_picture;
