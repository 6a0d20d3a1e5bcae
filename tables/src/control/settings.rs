//! Account-level answers without storage of their own (SPEC-2 §5.6): DescribeLimits and
//! DescribeEndpoints; and the check the backup operations share that a table exists.
//! (Continuous backups are `backups::pitr`.)

use std::sync::Arc;

use shoal_model::{ApiError, ErrorCode};

use crate::api::settings::{
    DescribeEndpointsRequest, DescribeEndpointsResponse, DescribeLimitsRequest,
    DescribeLimitsResponse, Endpoint,
};
use crate::core::catalog::TableDef;
use crate::database::Database;

/// DescribeLimits' answer: AWS's default quotas (SPEC-2 §5.6). Shoal enforces none of them.
pub const ACCOUNT_MAX_CAPACITY_UNITS: u64 = 80_000;
pub const TABLE_MAX_CAPACITY_UNITS: u64 = 40_000;
/// DescribeEndpoints' `CachePeriodInMinutes` (the value AWS is seen to answer).
pub const ENDPOINT_CACHE_PERIOD_MINUTES: u64 = 1440;
/// The address DescribeEndpoints gives until a server sets its own
/// ([`Database::set_endpoint_address`]): DynamoDB Local's default.
pub const ENDPOINT_ADDRESS_DEFAULT: &str = "localhost:8000";

impl Database {
    /// DescribeLimits.
    pub fn describe_limits(
        &self,
        _request: DescribeLimitsRequest,
    ) -> Result<DescribeLimitsResponse, ApiError> {
        Ok(DescribeLimitsResponse {
            account_max_read_capacity_units: ACCOUNT_MAX_CAPACITY_UNITS,
            account_max_write_capacity_units: ACCOUNT_MAX_CAPACITY_UNITS,
            table_max_read_capacity_units: TABLE_MAX_CAPACITY_UNITS,
            table_max_write_capacity_units: TABLE_MAX_CAPACITY_UNITS,
        })
    }

    /// DescribeEndpoints: one endpoint, the address clients reach this database at.
    pub fn describe_endpoints(
        &self,
        _request: DescribeEndpointsRequest,
    ) -> Result<DescribeEndpointsResponse, ApiError> {
        Ok(DescribeEndpointsResponse {
            endpoints: vec![Endpoint {
                address: self.endpoint_address(),
                cache_period_in_minutes: ENDPOINT_CACHE_PERIOD_MINUTES,
            }],
        })
    }

    /// The `host:port` (no scheme) DescribeEndpoints answers.
    pub fn endpoint_address(&self) -> String {
        self.control.endpoint_address.read().clone()
    }

    /// Sets the `host:port` DescribeEndpoints answers: a server calls this once it listens,
    /// with an address clients can send requests to.
    pub fn set_endpoint_address(&self, address: impl Into<String>) {
        *self.control.endpoint_address.write() = address.into();
    }

    /// The definition of table `name`, or TableNotFoundException: the backup, continuous
    /// backup and export operations answer that (not ResourceNotFoundException) for a table
    /// that does not exist.
    pub(crate) fn backed_up_table(&self, name: &str) -> Result<Arc<TableDef>, ApiError> {
        self.find_table(name).ok_or_else(|| {
            ApiError::new(
                ErrorCode::TableNotFoundException,
                format!("Table not found: {name}"),
            )
        })
    }
}
