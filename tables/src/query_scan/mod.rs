//! Query ([`query`]) and Scan ([`scan`]), and what they share ([`paging`]): the table or
//! index a request reads, its projection, ExclusiveStartKey and the page loop.

pub mod paging;
pub mod query;
pub mod scan;
