//! DynamoDB Streams: the record written with each change ([`record`]), added to each
//! write's batch through the core's feature interface (`feature.rs`), the life of a table's
//! streams and shards ([`lifecycle`]), the Streams operations and the embedded change feed
//! ([`api`]), and the check of records against items (`check.rs`).

pub mod api;
mod check;
mod feature;
pub mod lifecycle;
pub mod record;
