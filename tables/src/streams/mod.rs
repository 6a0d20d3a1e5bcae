//! DynamoDB Streams: the record written with each change ([`record`]), added to each
//! write's batch through the core's feature interface (`feature.rs`), the life of a table's
//! streams and shards ([`lifecycle`]), the Streams operations and the embedded change feed
//! ([`api`]), and the check of records against items (`check.rs`).

pub mod api;
mod check;
mod feature;
pub mod lifecycle;
pub mod record;

use std::time::Duration;

/// DynamoDB Streams' settings (`Options::streams`).
#[derive(Debug, Clone)]
pub struct StreamOptions {
    /// How long stream records are kept (DynamoDB: 24 hours); tests shorten it.
    pub retention: Duration,
    /// How long a stream's shard stays open before a child shard replaces it.
    pub shard_duration: Duration,
    /// Records after which a shard rolls over (checked by the upkeep, about once a second);
    /// None rolls over by time only.
    pub shard_records_max: Option<u64>,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            retention: lifecycle::STREAM_RETENTION_DEFAULT,
            shard_duration: lifecycle::STREAM_SHARD_DURATION_DEFAULT,
            shard_records_max: None,
        }
    }
}
