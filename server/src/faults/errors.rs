//! The errors a rule injects, as DynamoDB words them (SPEC-2 §7.2, §7.3).

use super::rules::FaultCode;
use super::target::RequestTarget;
use serde_json::{json, Value};
use shoal_model::error::TRANSACTION_CONFLICT_MESSAGE;
use shoal_model::{ApiError, ErrorCode};

const PROVISIONED_THROUGHPUT_MESSAGE: &str = "You exceeded your maximum allowed provisioned \
     throughput for a table or for one or more global secondary indexes. To view performance \
     metrics for provisioned throughput vs. consumed throughput, open the Amazon CloudWatch \
     console.";

const REQUEST_LIMIT_MESSAGE: &str = "Throughput exceeds the current throughput limit for your \
     account. To request a limit increase, contact AWS Support at https://aws.amazon.com/support.";

/// No text known from DynamoDB; written by SPEC §7's wording rules.
const SERVICE_UNAVAILABLE_MESSAGE: &str = "The service is unavailable. Please try again shortly.";

/// The error `code` answers `operation` with. `message` replaces the default text.
/// A `TransactionConflict` in a transaction cancels it with the reason `TransactionConflict`
/// on each action on `table` (every action for `*`) and `None` on the others.
pub fn injected_error(
    code: FaultCode,
    message: Option<&str>,
    operation: &str,
    target: &RequestTarget,
    table: &str,
) -> ApiError {
    let error = |code: ErrorCode, default: &str| ApiError::new(code, message.unwrap_or(default));
    match code {
        FaultCode::ProvisionedThroughputExceededException => error(
            ErrorCode::ProvisionedThroughputExceededException,
            PROVISIONED_THROUGHPUT_MESSAGE,
        ),
        FaultCode::ThrottlingException => error(
            ErrorCode::ThrottlingException,
            &ApiError::throttling().message,
        ),
        FaultCode::RequestLimitExceeded => {
            error(ErrorCode::RequestLimitExceeded, REQUEST_LIMIT_MESSAGE)
        }
        FaultCode::InternalServerError => error(
            ErrorCode::InternalServerError,
            &ApiError::internal_server_error().message,
        ),
        FaultCode::ServiceUnavailable => {
            error(ErrorCode::ServiceUnavailable, SERVICE_UNAVAILABLE_MESSAGE)
        }
        FaultCode::TransactionConflict => match operation {
            "TransactWriteItems" | "TransactGetItems" | "ExecuteTransaction" => {
                let reason_message = message.unwrap_or(TRANSACTION_CONFLICT_MESSAGE);
                let reasons: Vec<Value> = target
                    .tables
                    .iter()
                    .map(|action_table| {
                        let conflicts = table == "*" || action_table.as_deref() == Some(table);
                        if conflicts {
                            json!({"Code": "TransactionConflict", "Message": reason_message})
                        } else {
                            json!({"Code": "None"})
                        }
                    })
                    .collect();
                ApiError::transaction_canceled(reasons)
            }
            _ => error(
                ErrorCode::TransactionConflictException,
                TRANSACTION_CONFLICT_MESSAGE,
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transaction_conflict_marks_the_matched_actions() {
        let target = RequestTarget::of(
            "TransactWriteItems",
            br#"{"TransactItems": [{"Put": {"TableName": "A"}}, {"Delete": {"TableName": "B"}}]}"#,
        );
        let error = injected_error(
            FaultCode::TransactionConflict,
            None,
            "TransactWriteItems",
            &target,
            "B",
        );
        assert_eq!(error.code, ErrorCode::TransactionCanceledException);
        assert_eq!(
            error.message,
            "Transaction cancelled, please refer cancellation reasons for specific reasons \
             [None, TransactionConflict]"
        );
        let reasons = &error.extra.unwrap()["CancellationReasons"];
        assert_eq!(
            reasons[1],
            json!({"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"})
        );
        let single = injected_error(
            FaultCode::TransactionConflict,
            None,
            "PutItem",
            &RequestTarget::default(),
            "*",
        );
        assert_eq!(single.code, ErrorCode::TransactionConflictException);
    }

    #[test]
    fn a_rule_message_replaces_the_default() {
        let error = injected_error(
            FaultCode::ThrottlingException,
            Some("slow down"),
            "GetItem",
            &RequestTarget::default(),
            "*",
        );
        assert_eq!(
            (error.code, error.message.as_str()),
            (ErrorCode::ThrottlingException, "slow down")
        );
    }
}
