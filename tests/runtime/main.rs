//! The frame as a user meets it: what systems see and write, merges and dropped outputs,
//! structural commands and same-frame spawn ids, resources, per-frame inputs, a system's
//! own parallel loops, failures and panics that keep their promises, and values dropped
//! exactly once. One binary for these files, each a module, so the crate and its
//! dependencies are linked once for all of them.

mod bad_input;
mod claims;
mod drops;
mod failures;
mod inputs;
mod panic_safety;
mod parallel;
mod resources;
mod runtime;
mod soundness;
mod spawn_ids;
mod write_paths;
