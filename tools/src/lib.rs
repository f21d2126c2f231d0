//! Tools around the runsync runtime: the `arena` scenario (a game-like workload built from
//! [`runsync_systems`]), a digest of a whole world for determinism checks, and the
//! profiler-style report (table, JSON, SVG chart) the `arena` binary prints.

pub mod chart;
pub mod digest;
pub mod report;
pub mod scenario;
