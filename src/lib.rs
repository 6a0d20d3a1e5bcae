//! Shoal: a durable, embeddable DynamoDB-compatible datastore.
//!
//! This package is the facade: it re-exports the engine's public API and hosts the `shoal`
//! command-line tool, the crash-test workload and the load generator.

pub mod crash;
pub mod loadgen;

pub use engine;
