//! Account-level answers and table settings without storage of their own (SPEC-2 §5.6,
//! §6.2): DescribeLimits, DescribeEndpoints, DescribeContinuousBackups and
//! UpdateContinuousBackups.
//!
//! Shoal has no backups yet, so continuous backups and point-in-time recovery are reported
//! DISABLED for every table (SPEC-2 §6.2: ENABLED only where restore really works);
//! UpdateContinuousBackups accepts turning point-in-time recovery off, which changes
//! nothing, and refuses turning it on.

use shoal_model::{ApiError, ErrorCode};

use crate::api::common::{table_name_of, validation_errors};
use crate::api::constraint::{value_at_least, value_at_most, violation, NOT_NULL};
use crate::api::settings::{
    ContinuousBackupsDescription, ContinuousBackupsResponse, DescribeContinuousBackupsRequest,
    DescribeEndpointsRequest, DescribeEndpointsResponse, DescribeLimitsRequest,
    DescribeLimitsResponse, Endpoint, PointInTimeRecoveryDescription,
    UpdateContinuousBackupsRequest,
};
use crate::database::Database;

/// DescribeLimits' answer: AWS's default quotas (SPEC-2 §5.6). Shoal enforces none of them.
pub const ACCOUNT_MAX_CAPACITY_UNITS: u64 = 80_000;
pub const TABLE_MAX_CAPACITY_UNITS: u64 = 40_000;
/// DescribeEndpoints' `CachePeriodInMinutes` (the value AWS is seen to answer).
pub const ENDPOINT_CACHE_PERIOD_MINUTES: u64 = 1440;
/// The address DescribeEndpoints gives until a server sets its own
/// ([`Database::set_endpoint_address`]): DynamoDB Local's default.
pub const ENDPOINT_ADDRESS_DEFAULT: &str = "localhost:8000";
/// The status of continuous backups and of point-in-time recovery for every table.
pub const CONTINUOUS_BACKUPS_STATUS: &str = "DISABLED";
/// Longest point-in-time recovery period (API model).
pub const RECOVERY_PERIOD_DAYS_MAX: i64 = 35;

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
        self.endpoint_address.read().clone()
    }

    /// Sets the `host:port` DescribeEndpoints answers: a server calls this once it listens,
    /// with an address clients can send requests to.
    pub fn set_endpoint_address(&self, address: impl Into<String>) {
        *self.endpoint_address.write() = address.into();
    }

    /// DescribeContinuousBackups: DISABLED for every table.
    pub fn describe_continuous_backups(
        &self,
        request: DescribeContinuousBackupsRequest,
    ) -> Result<ContinuousBackupsResponse, ApiError> {
        let name = table_name_of(request.table_name.as_deref())?;
        self.backed_up_table(name)?;
        Ok(continuous_backups())
    }

    /// UpdateContinuousBackups: turning point-in-time recovery off is accepted (it is off);
    /// turning it on is refused until Shoal has backups.
    pub fn update_continuous_backups(
        &self,
        request: UpdateContinuousBackupsRequest,
    ) -> Result<ContinuousBackupsResponse, ApiError> {
        let name = table_name_of(request.table_name.as_deref())?;
        let member = "pointInTimeRecoverySpecification";
        let mut problems = Vec::new();
        match &request.point_in_time_recovery_specification {
            None => problems.push(violation(None, member, NOT_NULL)),
            Some(spec) => {
                if spec.point_in_time_recovery_enabled.is_none() {
                    problems.push(violation(
                        None,
                        &format!("{member}.pointInTimeRecoveryEnabled"),
                        NOT_NULL,
                    ));
                }
                match spec.recovery_period_in_days {
                    Some(days) if days < 1 => problems.push(violation(
                        Some(&days.to_string()),
                        &format!("{member}.recoveryPeriodInDays"),
                        &value_at_least(1),
                    )),
                    Some(days) if days > RECOVERY_PERIOD_DAYS_MAX => problems.push(violation(
                        Some(&days.to_string()),
                        &format!("{member}.recoveryPeriodInDays"),
                        &value_at_most(RECOVERY_PERIOD_DAYS_MAX),
                    )),
                    _ => {}
                }
            }
        }
        if !problems.is_empty() {
            return Err(validation_errors(&problems));
        }
        self.backed_up_table(name)?;
        let spec = request
            .point_in_time_recovery_specification
            .unwrap_or_default();
        if spec.point_in_time_recovery_enabled == Some(true) {
            return Err(ApiError::validation(
                "Shoal does not implement point-in-time recovery yet (no backups): PointInTimeRecoveryEnabled must be false",
            ));
        }
        if spec.recovery_period_in_days.is_some() {
            return Err(ApiError::validation(
                "Invalid Request: Cannot specify RecoveryPeriodInDays when disabling point-in-time recovery.",
            ));
        }
        Ok(continuous_backups())
    }

    /// Checks that table `name` exists: the backup operations answer TableNotFoundException
    /// (not ResourceNotFoundException) for one that does not.
    pub(crate) fn backed_up_table(&self, name: &str) -> Result<(), ApiError> {
        if self.catalog.read().contains_key(name) {
            Ok(())
        } else {
            Err(ApiError::new(
                ErrorCode::TableNotFoundException,
                format!("Table not found: {name}"),
            ))
        }
    }
}

fn continuous_backups() -> ContinuousBackupsResponse {
    ContinuousBackupsResponse {
        continuous_backups_description: ContinuousBackupsDescription {
            continuous_backups_status: CONTINUOUS_BACKUPS_STATUS.to_string(),
            point_in_time_recovery_description: PointInTimeRecoveryDescription {
                point_in_time_recovery_status: CONTINUOUS_BACKUPS_STATUS.to_string(),
            },
        },
    }
}
