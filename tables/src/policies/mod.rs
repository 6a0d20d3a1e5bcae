//! Resource-based policies (SPEC-3 §5): PutResourcePolicy, GetResourcePolicy,
//! DeleteResourcePolicy, and CreateTable's `ResourcePolicy`.
//!
//! A policy is attached to a table or to one of its streams; each is a slot of its own with
//! its own revision ids, stored in the table's catalog definition
//! (`TableSettings::resource_policy`, `stream_policies`), so it is as durable as the table
//! and goes away with it. Each change is one durable catalog change made under
//! `catalog_change`, applied at once (AWS applies policies a second or so later and refuses
//! a second change within 15 s: Shoal does neither, docs/COMPATIBILITY.md).
//!
//! Policies are checked (JSON, statements, principals, actions, size) and stored minified,
//! never enforced: Shoal has no IAM, so every caller may do everything a policy would deny.
//!
//! Checks, in order: member constraints (`N validation errors detected`), the ARN, the
//! document, the table's (and stream's) existence, then `ExpectedRevisionId`.

use std::collections::BTreeSet;

use serde_json::Value;
use shoal_model::{ApiError, ErrorCode};

use crate::api::constraint::{
    length_at_least, length_at_most, validation_errors, violation, NOT_NULL,
};
use crate::api::policies::{
    DeleteResourcePolicyRequest, DeleteResourcePolicyResponse, GetResourcePolicyRequest,
    GetResourcePolicyResponse, PutResourcePolicyRequest, PutResourcePolicyResponse,
};
use crate::core::catalog::{StoredPolicy, TableDef};
use crate::core::clock::now_millis;
use crate::database::Database;
use crate::tags::{arn_problems, resource_in, Resource};

/// Largest policy document, in bytes, whitespace included.
pub const POLICY_BYTES_MAX: usize = 20_480;
/// Longest `ExpectedRevisionId` (API model).
pub const REVISION_ID_LENGTH_MAX: usize = 255;
/// The `ExpectedRevisionId` that means "only if there is no policy yet".
pub const NO_POLICY: &str = "NO_POLICY";

const INVALID: &str = "One or more parameter values were invalid:";
const NOT_FOUND: &str = "Resource-based policy not found for the provided ResourceArn:";

impl Database {
    /// PutResourcePolicy: attaches `Policy` to a table or stream, replacing what was there.
    pub fn put_resource_policy(
        &self,
        request: PutResourcePolicyRequest,
    ) -> Result<PutResourcePolicyResponse, ApiError> {
        let mut problems = Vec::new();
        arn_problems(request.resource_arn.as_deref(), &mut problems);
        match request.policy.as_deref() {
            None => problems.push(violation(None, "policy", NOT_NULL)),
            Some("") => problems.push(violation(Some(""), "policy", &length_at_least(1))),
            Some(_) => {}
        }
        expected_revision_problems(request.expected_revision_id.as_deref(), &mut problems);
        if !problems.is_empty() {
            return Err(validation_errors(&problems));
        }
        let arn = request.resource_arn.as_deref().unwrap_or_default();
        let resource = policy_resource(arn, "PutResourcePolicy")?;
        let document = checked_document(request.policy.as_deref().unwrap_or_default())?;

        let _change = self.catalog_change.lock();
        let table = self.policy_table(arn, resource)?;
        let current = current_policy(&table, resource);
        check_expected(
            &table,
            current,
            request.expected_revision_id.as_deref(),
            arn,
        )?;
        // An equivalent document is no change: the revision stays (SPEC-3 §5).
        if let Some(current) = current {
            if current.document == document {
                return Ok(PutResourcePolicyResponse {
                    revision_id: current.revision_id.clone(),
                });
            }
        }
        let stored = StoredPolicy {
            document,
            revision_id: next_revision(current),
        };
        let mut changed = table.clone();
        set_policy(&mut changed, resource, Some(stored.clone()));
        self.store_definition(&changed)?;
        Ok(PutResourcePolicyResponse {
            revision_id: stored.revision_id,
        })
    }

    /// GetResourcePolicy: the policy attached to a table or stream.
    pub fn get_resource_policy(
        &self,
        request: GetResourcePolicyRequest,
    ) -> Result<GetResourcePolicyResponse, ApiError> {
        let mut problems = Vec::new();
        arn_problems(request.resource_arn.as_deref(), &mut problems);
        if !problems.is_empty() {
            return Err(validation_errors(&problems));
        }
        let arn = request.resource_arn.as_deref().unwrap_or_default();
        let resource = policy_resource(arn, "GetResourcePolicy")?;
        let table = self.policy_table(arn, resource)?;
        match current_policy(&table, resource) {
            Some(policy) => Ok(GetResourcePolicyResponse {
                policy: policy.document.clone(),
                revision_id: policy.revision_id.clone(),
            }),
            None => Err(ApiError::new(
                ErrorCode::PolicyNotFoundException,
                format!("{NOT_FOUND} {arn}"),
            )),
        }
    }

    /// DeleteResourcePolicy: removes the policy; with none there, a success naming no
    /// revision (the call is idempotent).
    pub fn delete_resource_policy(
        &self,
        request: DeleteResourcePolicyRequest,
    ) -> Result<DeleteResourcePolicyResponse, ApiError> {
        let mut problems = Vec::new();
        arn_problems(request.resource_arn.as_deref(), &mut problems);
        expected_revision_problems(request.expected_revision_id.as_deref(), &mut problems);
        if !problems.is_empty() {
            return Err(validation_errors(&problems));
        }
        let arn = request.resource_arn.as_deref().unwrap_or_default();
        let resource = policy_resource(arn, "DeleteResourcePolicy")?;

        let _change = self.catalog_change.lock();
        let table = self.policy_table(arn, resource)?;
        let Some(current) = current_policy(&table, resource) else {
            return Ok(DeleteResourcePolicyResponse { revision_id: None });
        };
        check_expected(
            &table,
            Some(current),
            request.expected_revision_id.as_deref(),
            arn,
        )?;
        let revision_id = current.revision_id.clone();
        let mut changed = table.clone();
        set_policy(&mut changed, resource, None);
        self.store_definition(&changed)?;
        Ok(DeleteResourcePolicyResponse {
            revision_id: Some(revision_id),
        })
    }

    /// The table `resource` names, or ResourceNotFoundException; a stream must be one of
    /// the table's streams still within retention.
    fn policy_table(&self, arn: &str, resource: Resource<'_>) -> Result<TableDef, ApiError> {
        let Some(table) = self.find_table(resource.table_name()) else {
            return Err(ApiError::new(
                ErrorCode::ResourceNotFoundException,
                format!(
                    "Requested resource not found: Table: {} not found",
                    resource.table_name()
                ),
            ));
        };
        if let Resource::Stream { label, .. } = resource {
            if !table.streams.iter().any(|stream| stream.label == label) {
                return Err(ApiError::new(
                    ErrorCode::ResourceNotFoundException,
                    format!("Requested resource not found: Stream: {arn} not found"),
                ));
            }
        }
        Ok(TableDef::clone(&table))
    }
}

/// CreateTable's `ResourcePolicy`: checked as PutResourcePolicy checks it, stored with the
/// table as its first revision.
pub(crate) fn policy_on_create(policy: Option<&str>) -> Result<Option<StoredPolicy>, ApiError> {
    policy
        .map(|policy| {
            Ok(StoredPolicy {
                document: checked_document(policy)?,
                revision_id: next_revision(None),
            })
        })
        .transpose()
}

/// What a policy ARN names: a table or a stream (an index's ARN is refused); an ARN of any
/// region names the same table, as for tags, and another partition or no region gets the
/// policy operations' own text.
fn policy_resource<'a>(arn: &'a str, operation: &str) -> Result<Resource<'a>, ApiError> {
    resource_in(arn, operation, |arn| {
        ApiError::validation(format!("{INVALID} Invalid resource Arn: {arn}"))
    })
}

fn expected_revision_problems(expected: Option<&str>, problems: &mut Vec<String>) {
    match expected {
        Some("") => problems.push(violation(
            Some(""),
            "expectedRevisionId",
            &length_at_least(1),
        )),
        Some(id) if id.chars().count() > REVISION_ID_LENGTH_MAX => problems.push(violation(
            Some(id),
            "expectedRevisionId",
            &length_at_most(REVISION_ID_LENGTH_MAX),
        )),
        _ => {}
    }
}

fn current_policy<'t>(table: &'t TableDef, resource: Resource<'_>) -> Option<&'t StoredPolicy> {
    match resource {
        Resource::Table(_) => table.settings.resource_policy.as_ref(),
        Resource::Stream { label, .. } => table.settings.stream_policies.get(label),
    }
}

fn set_policy(table: &mut TableDef, resource: Resource<'_>, policy: Option<StoredPolicy>) {
    match (resource, policy) {
        (Resource::Table(_), policy) => table.settings.resource_policy = policy,
        (Resource::Stream { label, .. }, Some(policy)) => {
            table
                .settings
                .stream_policies
                .insert(label.to_string(), policy);
        }
        (Resource::Stream { label, .. }, None) => {
            table.settings.stream_policies.remove(label);
        }
    }
}

/// `ExpectedRevisionId` against the current revision: equal, or `NO_POLICY` with none.
fn check_expected(
    table: &TableDef,
    current: Option<&StoredPolicy>,
    expected: Option<&str>,
    arn: &str,
) -> Result<(), ApiError> {
    let Some(expected) = expected else {
        return Ok(());
    };
    let refusal = |text: String| ApiError::new(ErrorCode::PolicyNotFoundException, text);
    match (expected, current) {
        (NO_POLICY, None) => Ok(()),
        (NO_POLICY, Some(current)) => Err(refusal(format!(
            "{NOT_FOUND} Requested policy update expecting none to be present for table {}, but a policy exists with revision id {}.",
            table.name, current.revision_id
        ))),
        (_, None) => Err(refusal(format!("{NOT_FOUND} {arn}"))),
        (expected, Some(current)) if expected != current.revision_id => Err(refusal(format!(
            "{NOT_FOUND} Requested update for policy with revision id {expected}, but the policy associated to target table {} has revision id {}.",
            table.name, current.revision_id
        ))),
        _ => Ok(()),
    }
}

/// The revision id of a new document: the time now in epoch milliseconds, and always
/// larger than the revision it replaces.
fn next_revision(current: Option<&StoredPolicy>) -> String {
    let previous = current
        .and_then(|policy| policy.revision_id.parse::<u64>().ok())
        .unwrap_or(0);
    now_millis().max(previous + 1).to_string()
}

/// Checks a policy document and returns it minified (members in name order, so equivalent
/// documents store the same text): size, JSON, then each statement
/// (its `Resource`, `Principal`, actions, unique `Sid`s, and no Allow to everyone).
fn checked_document(policy: &str) -> Result<String, ApiError> {
    if policy.len() > POLICY_BYTES_MAX {
        return Err(ApiError::validation(format!(
            "{INVALID} Maximum policy size of {POLICY_BYTES_MAX} bytes exceeded"
        )));
    }
    let invalid =
        |detail: &str| ApiError::validation(format!("{INVALID} Invalid policy document: {detail}"));
    let document: Value =
        serde_json::from_str(policy).map_err(|_| invalid("This policy contains invalid Json"))?;
    let Some(members) = document.as_object() else {
        return Err(invalid("This policy contains invalid Json"));
    };
    let statements = match members.get("Statement") {
        Some(Value::Array(statements)) => statements.iter().collect::<Vec<_>>(),
        Some(statement @ Value::Object(_)) => vec![statement],
        _ => return Err(invalid("Missing required field Statement")),
    };
    let mut sids = BTreeSet::new();
    for statement in statements {
        let Some(statement) = statement.as_object() else {
            return Err(invalid("This policy contains invalid Json"));
        };
        if let Some(sid) = statement.get("Sid").and_then(Value::as_str) {
            if !sids.insert(sid) {
                return Err(invalid("The Statement Ids in the policy are not unique"));
            }
        }
        match statement.get("Effect").and_then(Value::as_str) {
            Some("Allow" | "Deny") => {}
            Some(_) => return Err(invalid("Invalid effect")),
            None => return Err(invalid("Missing required field Effect")),
        }
        if !statement.contains_key("Resource") {
            return Err(invalid("Missing required field Resource"));
        }
        let Some(principal) = statement.get("Principal") else {
            return Err(invalid("Missing required field Principal"));
        };
        if !principal_is_valid(principal) {
            return Err(ApiError::validation(
                "Invalid principal in policy document.",
            ));
        }
        let actions = strings_of(statement.get("Action"));
        let invalid_actions: Vec<&str> = actions
            .iter()
            .copied()
            .filter(|action| {
                let (service, name) = action.split_once(':').unwrap_or(("", ""));
                !service.eq_ignore_ascii_case("dynamodb") || name.is_empty()
            })
            .collect();
        if !invalid_actions.is_empty() {
            return Err(invalid(&format!(
                "The following action names are invalid: {}",
                invalid_actions.join(", ")
            )));
        }
        let allows_everyone = statement.get("Effect").and_then(Value::as_str) == Some("Allow")
            && is_everyone(principal)
            && !statement.contains_key("Condition");
        if allows_everyone {
            return Err(ApiError::validation(
                "Resource-based policy grants unbounded access in one or more elements. Please revise the policy to ensure least-privilege form of access",
            ));
        }
    }
    serde_json::to_string(&document).map_err(|_| invalid("This policy contains invalid Json"))
}

/// A string or a list of strings; anything else holds none.
fn strings_of(value: Option<&Value>) -> Vec<&str> {
    match value {
        Some(Value::String(text)) => vec![text.as_str()],
        Some(Value::Array(values)) => values.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// `"*"`, or an object of `AWS`, `Service`, `Federated` or `CanonicalUser` members each
/// naming one or more principals.
fn principal_is_valid(principal: &Value) -> bool {
    match principal {
        Value::String(text) => text == "*",
        Value::Object(members) => {
            !members.is_empty()
                && members.iter().all(|(kind, named)| {
                    matches!(
                        kind.as_str(),
                        "AWS" | "Service" | "Federated" | "CanonicalUser"
                    ) && !strings_of(Some(named)).is_empty()
                        && strings_of(Some(named)).iter().all(|name| !name.is_empty())
                })
        }
        _ => false,
    }
}

/// Whether a principal names everyone: `"*"` or `{"AWS": "*"}`.
fn is_everyone(principal: &Value) -> bool {
    match principal {
        Value::String(text) => text == "*",
        Value::Object(members) => members
            .get("AWS")
            .is_some_and(|aws| strings_of(Some(aws)).contains(&"*")),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACCOUNT_ROOT: &str = "arn:aws:iam::111122223333:root";

    fn statement(extra: &str) -> String {
        format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Sid":"a","Effect":"Allow","Principal":{{"AWS":"{ACCOUNT_ROOT}"}},"Action":"dynamodb:GetItem","Resource":"*"{extra}}}]}}"#
        )
    }

    #[test]
    fn documents_are_minified_and_checked_statement_by_statement() {
        let spaced = statement("").replace(',', ", ");
        let minified = checked_document(&spaced).unwrap();
        assert!(!minified.contains(' '), "{minified}");
        assert_eq!(
            serde_json::from_str::<Value>(&minified).unwrap(),
            serde_json::from_str::<Value>(&statement("")).unwrap()
        );
        let message = |policy: &str| checked_document(policy).unwrap_err().message;
        assert!(
            message("{").ends_with("Invalid policy document: This policy contains invalid Json")
        );
        assert!(message(&statement("").replace(r#","Resource":"*""#, ""))
            .ends_with("Missing required field Resource"));
        assert!(
            message(&statement("").replace("dynamodb:GetItem", "s3:GetObject"))
                .ends_with("The following action names are invalid: s3:GetObject")
        );
        assert_eq!(
            message(&statement("").replace(&format!(r#"{{"AWS":"{ACCOUNT_ROOT}"}}"#), "\"*\"")),
            "Resource-based policy grants unbounded access in one or more elements. Please revise the policy to ensure least-privilege form of access"
        );
        // The neighbour that must stay valid: everyone, but under a condition.
        let conditioned =
            statement(r#","Condition":{"StringEquals":{"aws:PrincipalAccount":"111122223333"}}"#)
                .replace(&format!(r#"{{"AWS":"{ACCOUNT_ROOT}"}}"#), "\"*\"");
        assert!(checked_document(&conditioned).is_ok());
        assert_eq!(
            message(&statement("").replace(
                &format!(r#"{{"AWS":"{ACCOUNT_ROOT}"}}"#),
                r#"{"Nobody":"x"}"#
            )),
            "Invalid principal in policy document."
        );
        let twice = format!(
            r#"{{"Statement":[{0},{0}]}}"#,
            r#"{"Sid":"s","Effect":"Deny","Principal":"*","Action":"dynamodb:*","Resource":"*"}"#
        );
        assert!(message(&twice).ends_with("The Statement Ids in the policy are not unique"));
    }

    #[test]
    fn the_size_limit_counts_whitespace_and_stops_at_20480_bytes() {
        let base = statement("");
        let padded = |total: usize| format!("{base}{}", " ".repeat(total - base.len()));
        assert!(checked_document(&padded(POLICY_BYTES_MAX)).is_ok());
        assert_eq!(
            checked_document(&padded(POLICY_BYTES_MAX + 1)).unwrap_err().message,
            "One or more parameter values were invalid: Maximum policy size of 20480 bytes exceeded"
        );
    }

    #[test]
    fn revisions_only_grow() {
        let far_future = StoredPolicy {
            document: String::new(),
            revision_id: (u64::MAX / 2).to_string(),
        };
        assert_eq!(
            next_revision(Some(&far_future)),
            (u64::MAX / 2 + 1).to_string()
        );
        assert!(next_revision(None).parse::<u64>().unwrap() > 1_700_000_000_000);
    }
}
