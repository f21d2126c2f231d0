//! [`SystemId`]: a leaf, so that what reports systems by id ([`crate::stats`]) needs
//! nothing else of the crate.

/// Identifies a system within its [`Runtime`](crate::Runtime) (registration order, from 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SystemId(pub(crate) u32);

impl SystemId {
    /// The registration index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
