//! The write-ahead log's integration tests, as one test binary: the crate and its
//! dependencies are linked once, not once per file. Each module is one concern (its docs say
//! which); `common` is shared.

mod common;

mod concurrency;
mod corruption;
mod durability;
mod lose_unsynced;
mod no_space;
mod poison;
mod power_loss;
mod replay;
