//! The compaction policy's integration tests, as one test binary: the crate and its
//! dependencies are linked once, not once per file. Each module is one concern (its docs say
//! which).

mod gc_model;
mod merge_model;
mod policy_model;
mod space_amp;
