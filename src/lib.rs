//! Shoal: a durable, embeddable DynamoDB-compatible datastore.
//!
//! This package hosts the `shoal` command-line tool, the crash-test workload and the load
//! generator, and re-exports the layers below it: [`tables`] (DynamoDB's tables, the embedded
//! API) and [`engine`] (the storage engine on its own).
//!
//! One module per command of the binary whose code the integration tests use, or that such
//! a command uses: [`bench`](mod@bench), [`check`], [`crash_test`] and [`transfer`]; [`client`] is the
//! HTTP DynamoDB client they share, and [`progress`] the progress display of the long ones. The binary (`src/main.rs`) holds the other commands:
//! `serve`, `health` and `streams`.

pub mod bench;
pub mod check;
pub mod client;
pub mod crash_test;
pub mod progress;
pub mod transfer;

use std::time::Duration;

pub use shoal_engine as engine;
pub use shoal_tables as tables;

use shoal_tables::Durability;

/// Parses `sync`, `none` or `interval:MS`: the `--durability` of `serve`, `crash-test`,
/// `crash-test-child` and `crash-writer`.
pub fn parse_durability(text: &str) -> Result<Durability, String> {
    match text {
        "sync" => Ok(Durability::Sync),
        "none" => Ok(Durability::None),
        other => match other.strip_prefix("interval:").map(str::parse::<u64>) {
            Some(Ok(ms)) if ms > 0 => Ok(Durability::Interval(Duration::from_millis(ms))),
            _ => Err(format!(
                "durability must be sync, none or interval:MS, not {other:?}"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durability_flags_parse() {
        assert_eq!(parse_durability("sync"), Ok(Durability::Sync));
        assert_eq!(
            parse_durability("interval:5"),
            Ok(Durability::Interval(Duration::from_millis(5)))
        );
        assert!(parse_durability("interval:0").is_err());
        assert!(parse_durability("fast").is_err());
    }
}
