//! [`SystemId`] and [`StageId`]: leaves, so that what reports systems and stages by id
//! ([`crate::stats`]) needs nothing else of the crate.

/// Identifies a system within its [`Runtime`](crate::Runtime) (registration order, from 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SystemId(pub(crate) u32);

impl SystemId {
    /// The registration index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Identifies a stage of a [`Runtime`](crate::Runtime)'s frame: its place in the frame,
/// from 0 (see [`Runtime::add_stage`](crate::Runtime::add_stage)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StageId(pub(crate) u32);

impl StageId {
    /// The first stage, which every runtime has: where
    /// [`Runtime::add_system`](crate::Runtime::add_system) puts systems.
    pub const FIRST: StageId = StageId(0);

    /// The stage's place in the frame (0 runs first).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
