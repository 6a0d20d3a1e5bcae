//! DynamoDB tables on the LSM tree: the catalog, the physical key layout, the stored item
//! format and index entries.

pub mod capacity;
pub mod catalog;
pub mod index;
pub mod item_codec;
pub mod keys;
pub mod locks;
