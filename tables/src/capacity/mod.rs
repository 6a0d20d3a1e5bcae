//! Capacity: what requests consumed ([`metering`]), a table's billing mode and throughput
//! ([`billing`]), and DynamoDB's throttling when emulated ([`throttle`], [`throttled`]).

pub mod billing;
pub mod metering;
pub mod throttle;
pub mod throttled;
use crate::core::clock::Clock;

/// Capacity's state in a [`Database`](crate::Database).
pub(crate) struct CapacityState {
    /// Consumed capacity per table, for monitoring ([`metering`]).
    pub(crate) meter: metering::CapacityMeter,
    /// Throttling's buckets ([`throttle`]), enforced only when
    /// `EmulationOptions::capacity` says so.
    pub(crate) throttle: throttle::Throttle,
    /// Contributor Insights' counters, fed by the same charges (`insights`).
    pub(crate) contributors: crate::insights::contributors::Contributors,
}

impl CapacityState {
    pub(crate) fn new(mode: throttle::CapacityMode, clock: Clock) -> CapacityState {
        CapacityState {
            meter: Default::default(),
            throttle: throttle::Throttle::new(mode, clock.clone()),
            contributors: crate::insights::contributors::Contributors::new(clock),
        }
    }
}
