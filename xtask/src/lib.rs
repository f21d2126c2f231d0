//! The workspace's own tasks, run as `cargo xtask <task>` (an alias in
//! `.cargo/config.toml`):
//!
//! - `cargo xtask layers [--src DIR] [--max-cycle N] [--edges]`: [`layers`], the module
//!   import graph of runsync's `src/`, its import cycles, the check against the layer
//!   list in `src/lib.rs`, and the paths that go through the crate root's re-exports
//!   instead of naming the defining module (its test, `xtask/tests/layers.rs`, runs on
//!   every `cargo test`, the last check over every crate of the workspace).
//! - `cargo xtask bench-report [CRITERION_DIR] [SVG_PATH]`: [`bench_report`], the summary
//!   of the criterion benchmarks of `runsync-benches` (a markdown table, the
//!   performance targets, an SVG chart).

pub mod bench_report;
pub mod layers;
