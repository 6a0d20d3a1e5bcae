//! Shoal: a durable, embeddable DynamoDB-compatible datastore.
//!
//! This package is the facade: it re-exports the engine's public API and hosts the `shoal`
//! command-line tool and the crash-test workload.

pub mod crash;

pub use engine;
