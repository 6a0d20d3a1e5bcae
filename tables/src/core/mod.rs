//! What every table has and every feature builds on; it names no feature.
//!
//! - [`catalog`]: what tables and indexes exist, how they are keyed and projected, which LSM
//!   trees hold them; [`definition`]: changing a table's stored definition.
//! - [`keys`]: the physical key layout; [`item_codec`]: the stored item format; [`index`]:
//!   index entries (sparse membership, projections, index-key checks).
//! - [`write`]: the write pipeline every item mutation shares (check, plan, commit);
//!   [`locks`]: per-collection write locks; [`collection`]: item-collection sizes and cap;
//!   [`stats`]: item counts and sizes kept with the writes; [`units`]: capacity units.
//! - [`check`]: the whole-database consistency check; [`region`]: the region in ARNs.

pub mod catalog;
pub mod check;
pub mod clock;
pub mod collection;
pub mod definition;
pub mod error;
pub mod index;
pub mod item_codec;
pub mod keys;
pub mod locks;
pub mod region;
pub mod stats;
pub mod units;
pub mod write;
