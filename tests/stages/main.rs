//! Stages, and what each system sees of what earlier Syncs delivered: messages and change
//! marks (`Changed`, `Added`), stage by stage (the stage rule). One binary for these files,
//! each a module, so the crate and its dependencies are linked once for all of them.

mod changed;
mod messages;
mod stage_rule;
mod stages;
