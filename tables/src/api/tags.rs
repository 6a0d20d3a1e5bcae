//! Tagging requests and responses (SPEC-2 §4): TagResource, UntagResource,
//! ListTagsOfResource, and the `Tag` CreateTable's `Tags` also holds.

use serde::{Deserialize, Serialize};

/// `Tag`: a key and its value. Both members are optional here so that a missing one is
/// refused with DynamoDB's own text (`The Tag Value provided is invalid, Value: null`)
/// rather than as a shape error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct Tag {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

impl Tag {
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Tag {
        Tag {
            key: Some(key.into()),
            value: Some(value.into()),
        }
    }
}

/// TagResource request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct TagResourceRequest {
    pub resource_arn: Option<String>,
    pub tags: Option<Vec<Tag>>,
}

/// UntagResource request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct UntagResourceRequest {
    pub resource_arn: Option<String>,
    pub tag_keys: Option<Vec<String>>,
}

/// The empty answer of TagResource and UntagResource: `{}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TagsChanged {}

/// ListTagsOfResource request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListTagsOfResourceRequest {
    pub resource_arn: Option<String>,
    pub next_token: Option<String>,
}

/// ListTagsOfResource response: `Tags` always present (possibly empty), in key order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListTagsOfResourceResponse {
    pub tags: Vec<Tag>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
}
