//! The world as a user builds and reads it: queries, `#[derive(Component)]`, required
//! components, add and remove hooks, parents and children, and entities moved between
//! worlds. One binary for these files, each a module, so the crate and its dependencies are
//! linked once for all of them.

mod derive;
mod hierarchy;
mod hooks;
mod queries;
mod query_mut;
mod required;
mod transfer;
