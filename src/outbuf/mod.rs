//! What Run hands to Sync: each system's output buffers, as plain data.
//!
//! - [`buffer`]: a system's writes to one component type ([`OutBuf`](buffer::OutBuf)), as
//!   row-aligned runs of values keyed in Run, and the per-system set of them
//!   ([`SystemOutputs`](buffer::SystemOutputs)).
//! - [`erased`]: where the plain write path remembers a typed buffer
//!   ([`BufAddr`](erased::BufAddr)). A buffer travels from a system to its type's fold
//!   type-erased, as an [`Erased`](crate::erased::Erased).
//! - [`row_writes`]: the write handles of `Output::query`'s `Write<C>` elements, pending
//!   until settled into runs.
//!
//! The folder sits below `fold/` (which consumes the buffers) and knows no `World`; the
//! handle systems write through, `Output`, is `output/`, above the world.

pub(crate) mod buffer;
pub(crate) mod erased;
pub(crate) mod row_writes;
