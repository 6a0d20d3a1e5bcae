//! Sending a request again, as the AWS SDKs do: which errors are worth it, and how long to
//! wait before each attempt (exponential back-off with "full jitter", so clients throttled
//! together do not come back together).

use std::time::Duration;

use rand::Rng;

use crate::client::target::CallError;

/// First back-off after a throttled or failed attempt; it doubles per attempt.
const BACKOFF_FIRST: Duration = Duration::from_millis(50);
/// Longest single back-off.
pub const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// The errors DynamoDB gives when a request was refused for capacity, not for what it asks.
pub fn throttled(error: &CallError) -> bool {
    matches!(
        error.code.as_str(),
        "ProvisionedThroughputExceededException" | "ThrottlingException" | "RequestLimitExceeded"
    )
}

/// Errors worth sending the same request again for: the endpoint is busy or was unreachable
/// for a moment, not the request wrong.
pub fn retryable(error: &CallError) -> bool {
    throttled(error)
        || matches!(
            error.code.as_str(),
            "InternalServerError"
                | "InternalFailure"
                | "ServiceUnavailable"
                | "HTTP500"
                | "HTTP503"
                | "ConnectionError"
        )
}

/// The wait before attempt `attempt + 1`: a random wait between half and all of a cap that
/// doubles per attempt from 50 ms, at most 5 s.
pub fn backoff(attempt: u32) -> Duration {
    let cap = BACKOFF_FIRST
        .saturating_mul(1u32 << attempt.min(16))
        .min(BACKOFF_MAX);
    cap.mul_f64(rand::rng().random_range(0.5..=1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(code: &str) -> CallError {
        CallError {
            code: code.to_string(),
            ..CallError::default()
        }
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        assert!(backoff(1) <= Duration::from_millis(100));
        assert!(backoff(1) >= Duration::from_millis(50));
        assert!(backoff(30) <= BACKOFF_MAX);
        assert!(backoff(30) >= BACKOFF_MAX / 2);
    }

    #[test]
    fn throttling_is_retried_and_a_wrong_request_is_not() {
        assert!(throttled(&error("ThrottlingException")));
        assert!(retryable(&error("ProvisionedThroughputExceededException")));
        assert!(retryable(&error("ConnectionError")) && !throttled(&error("ConnectionError")));
        for code in [
            "ValidationException",
            "ResourceNotFoundException",
            "ConditionalCheckFailedException",
        ] {
            assert!(!retryable(&error(code)), "{code}");
        }
    }
}
