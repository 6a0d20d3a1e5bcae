//! Capacity: what requests consumed ([`metering`]), a table's billing mode and throughput
//! ([`billing`]), and DynamoDB's throttling when emulated ([`throttle`], [`throttled`]).

pub mod billing;
pub mod metering;
pub mod throttle;
pub mod throttled;
