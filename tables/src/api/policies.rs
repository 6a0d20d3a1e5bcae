//! Resource-based policy requests and responses (SPEC-3 §5): PutResourcePolicy,
//! GetResourcePolicy, DeleteResourcePolicy.

use serde::{Deserialize, Serialize};

/// PutResourcePolicy request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct PutResourcePolicyRequest {
    pub resource_arn: Option<String>,
    pub policy: Option<String>,
    pub expected_revision_id: Option<String>,
    /// Only meaningful where policies are enforced; Shoal enforces none, so it changes
    /// nothing (docs/COMPATIBILITY.md).
    pub confirm_remove_self_resource_access: Option<bool>,
}

/// PutResourcePolicy response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct PutResourcePolicyResponse {
    pub revision_id: String,
}

/// GetResourcePolicy request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct GetResourcePolicyRequest {
    pub resource_arn: Option<String>,
}

/// GetResourcePolicy response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct GetResourcePolicyResponse {
    pub policy: String,
    pub revision_id: String,
}

/// DeleteResourcePolicy request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteResourcePolicyRequest {
    pub resource_arn: Option<String>,
    pub expected_revision_id: Option<String>,
}

/// DeleteResourcePolicy response: the deleted revision, absent when there was none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteResourcePolicyResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision_id: Option<String>,
}
