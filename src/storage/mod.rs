//! Archetype tables and per-type column storage.
//!
//! Entities with the same set of component types share a [`Table`]: a list of entities and,
//! for each of its component types, one column (a `Vec<C>`) in that type's
//! [`TypedStorage`]. Column `k` of a type belongs to the `k`-th table that holds the type,
//! so a type's storage owns all of its data: Sync can merge different types on different
//! threads by handing out `&mut` to different storages, with no unsafe code.
//!
//! Tables are only created and rows only move in Sync or between frames (never while systems
//! run), so everything here is plain `&mut` code.

mod column;
mod table;

pub(crate) use column::{AnyStorage, TypedStorage};
pub(crate) use table::{Table, TableId, Tables};
