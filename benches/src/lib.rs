//! Side-by-side runs of runsync and other ECS crates on the same work: the criterion
//! benchmarks (`benches/`), and the arena (`runsync_tools::scenario`) ported to bevy_ecs
//! 0.20 ([`bevy_arena`]) with the `arena-vs-bevy` command that runs both
//! ([`compare`]).

pub mod bevy_arena;
pub mod compare;
pub mod floor;
