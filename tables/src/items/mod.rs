//! The item operations: PutItem, GetItem, UpdateItem and DeleteItem ([`single`]),
//! BatchWriteItem and BatchGetItem ([`batch`]), TransactWriteItems and TransactGetItems
//! ([`transact`]); all of them write through `core::write`.

pub mod batch;
pub mod single;
pub mod transact;
