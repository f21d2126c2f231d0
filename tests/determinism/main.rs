//! The same bits at any worker count: a golden scenario (`tests/golden/determinism.txt`),
//! canonical order, and random systems checked against a sequential model. One binary for
//! these files, each a module, so the crate and its dependencies are linked once for all of
//! them.

// The sequential model `differential` checks the runtime against (also used by the
// `frames` fuzz target).
#[path = "../model/mod.rs"]
mod model;

mod canonical;
mod determinism;
mod differential;
