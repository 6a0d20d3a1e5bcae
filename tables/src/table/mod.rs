//! DynamoDB tables on the LSM tree: the catalog, the physical key layout, the stored item
//! format and index entries.

pub mod backfill;
pub mod batch;
pub mod billing;
pub mod capacity;
pub mod catalog;
pub mod check;
pub mod collection;
pub mod control;
pub mod definition;
pub mod index;
pub mod item_codec;
pub mod items;
pub mod keys;
pub mod locks;
pub mod paging;
pub mod partiql;
pub mod partiql_compile;
pub mod query;
pub mod region;
pub mod scan;
pub mod schema;
pub mod settings;
pub mod stats;
pub mod stream;
pub mod stream_control;
pub mod streams_api;
pub mod tags;
pub mod throttle;
pub mod throttled;
pub mod transact;
pub mod transient;
pub mod ttl;
pub mod update_table;
pub mod upkeep;
pub mod write;
