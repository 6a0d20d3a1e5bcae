//! What every table has and every feature builds on; it names no feature.
//!
//! - [`store`]: [`store::Core`], the state every operation works on; [`feature`]: the one
//!   interface features ride on (their mutations in a write's batch, commits, catalog
//!   changes, checks).
//! - [`catalog`]: what tables and indexes exist, how they are keyed and projected, which LSM
//!   trees hold them; [`definition`]: changing a table's stored definition.
//! - [`keys`]: the physical key layout; [`item_codec`]: the stored item format; [`index`]:
//!   index entries (sparse membership, projections, index-key checks).
//! - [`write`]: the write pipeline every item mutation shares (check, plan, commit), of
//!   plans made of [`plan`]'s parts;
//!   [`locks`]: per-collection write locks; [`collection`]: item-collection sizes and cap;
//!   [`stats`]: item counts and sizes kept with the writes; [`units`]: capacity units.
//! - [`check`]: the whole-database consistency check, with the tools of [`checker`]; [`region`]: the region in ARNs.

pub mod catalog;
pub mod check;
pub mod checker;
pub mod clock;
pub mod collection;
pub mod corruption;
pub mod definition;
pub mod error;
pub mod feature;
pub mod health;
pub mod index;
pub mod item_codec;
pub mod keys;
pub mod locks;
pub mod plan;
pub mod region;
pub mod stats;
pub mod store;
pub mod units;
pub mod write;
