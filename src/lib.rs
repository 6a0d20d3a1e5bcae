//! Shoal: a durable, embeddable DynamoDB-compatible datastore.
//!
//! This package hosts the `shoal` command-line tool, the crash-test workload and the load
//! generator, and re-exports the layers below it: [`tables`] (DynamoDB's tables, the embedded
//! API) and [`engine`] (the storage engine on its own).

pub mod client;
pub mod crash;
pub mod crash_test;
pub mod loadgen;
pub mod model_bench;
pub mod transfer;

pub use shoal_engine as engine;
pub use shoal_tables as tables;
