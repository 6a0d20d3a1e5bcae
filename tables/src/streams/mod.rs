//! DynamoDB Streams: the record written with each change ([`record`]), the life of a
//! table's streams and shards ([`lifecycle`]), and the Streams operations and the embedded
//! change feed ([`api`]).

pub mod api;
pub mod lifecycle;
pub mod record;
