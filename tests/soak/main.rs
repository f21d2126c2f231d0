//! Long runs whose memory must level off, as the sizes the runtime reports
//! (`Runtime::memory`): churn for tens of thousands of frames, and parallel writes to
//! scattered entities. (`tests/soak_memory.rs` counts every allocation instead: its
//! counting global allocator needs a process of its own.) One binary for these files, each
//! a module, so the crate and its dependencies are linked once for all of them.

mod par_write_memory;
mod soak;
