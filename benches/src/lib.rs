//! Benchmarks of runsync next to hecs and bevy_ecs (see `benches/`), and the
//! `bench-report` tool that summarises their results (see [`report`]).

pub mod report;
