//! What a runtime tells about its frames: write provenance, trace files, the figures of
//! `advance`, and Tracy zones (the `tracy` module is empty without the `tracy` feature).
//! One binary for these files, each a module, so the crate and its dependencies are linked
//! once for all of them.

mod advance_stats;
mod provenance;
mod trace_file;
mod tracy;
