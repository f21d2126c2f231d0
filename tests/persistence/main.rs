//! State kept and brought back: snapshots and checksums, rollback, save files, and the
//! edits and entities of replays. One binary for these files, each a module, so the crate
//! and its dependencies are linked once for all of them.
//!
//! `tests/replay.rs` stays a binary of its own: the replay it reads from `tests/data/` was
//! recorded with the input type `replay::Pad`, and a replay plays only with the input type
//! of the same name (`std::any::type_name`), which a module would make
//! `persistence::replay::Pad`.

// Save and replay files' sections, for the tests that edit a file on purpose (shared
// with `tests/replay.rs`, the fuzz targets and runsync-tools' tests).
#[path = "../sections/mod.rs"]
mod sections;

mod replay_edits;
mod replay_entities;
mod rollback;
mod save_files;
mod snapshot;
