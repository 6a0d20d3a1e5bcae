//! Tags (SPEC-2 §4): TagResource, UntagResource, ListTagsOfResource, and the checks
//! CreateTable's `Tags` shares with TagResource.
//!
//! A table's tags live in its catalog definition (`TableSettings::tags`), so they are as
//! durable as the table and go away with it. Each TagResource or UntagResource is ONE
//! durable catalog change made under `Database::catalog_change`; tags apply synchronously
//! (AWS applies them a moment later).
//!
//! Resources are named by ARN: a table's (`arn:aws:dynamodb:ddblocal:000000000000:table/T`)
//! or one of its streams' (`…:table/T/stream/<label>`, which tags the table). Shoal serves
//! one database to every region, so an ARN of any region names the same table (the ARNs it
//! reports name the request's region); it is one account, that of the ARNs it reports:
//! another account is refused with AccessDeniedException (docs/COMPATIBILITY.md).
//!
//! Checks, in order: member constraints (`N validation errors detected`), the ARN (prefix,
//! service, resource type, partition, account), the tags or keys of the request, the table's
//! existence, then (TagResource) the 50-tag limit on the result.

use std::collections::BTreeMap;

use shoal_model::{ApiError, ErrorCode};

use crate::api::constraint::{
    length_at_least, length_at_most, validation_errors, violation, NOT_NULL,
};
use crate::api::tags::{
    ListTagsOfResourceRequest, ListTagsOfResourceResponse, Tag, TagResourceRequest, TagsChanged,
    UntagResourceRequest,
};
use crate::core::catalog::TableDef;
use crate::core::region::ARN_ACCOUNT;
use crate::database::Database;

/// User tags per table.
pub const TAGS_MAX: usize = 50;
/// Longest tag key, in Unicode characters.
pub const TAG_KEY_CHARS_MAX: usize = 128;
/// Longest tag value, in Unicode characters.
pub const TAG_VALUE_CHARS_MAX: usize = 256;
/// Longest ResourceArn (API model).
pub const RESOURCE_ARN_LENGTH_MAX: usize = 1283;
/// Tags per ListTagsOfResource page: the limit, so every table's tags come in one page.
pub const LIST_TAGS_PAGE_SIZE: usize = TAGS_MAX;

/// The text of a TagResource or CreateTable that would leave more than [`TAGS_MAX`] tags.
pub const TAG_LIMIT_MESSAGE: &str =
    "Number of Tags exceed the current limit for the provided ResourceArn";
/// The text of a TagResource with an empty `Tags`.
pub const NO_TAGS_MESSAGE: &str = "Atleast one Tag needs to be provided as Input.";
/// The text of an UntagResource with an empty `TagKeys`.
pub const NO_TAG_KEYS_MESSAGE: &str = "Atleast one Tag Key needs to be provided as Input.";

const INVALID: &str = "One or more parameter values were invalid:";
/// Reserved for AWS's own tags (compared without regard to case).
const RESERVED_PREFIX: &str = "aws:";

/// What a well-formed ARN names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resource<'a> {
    Table(&'a str),
    Stream { table: &'a str, label: &'a str },
}

impl Resource<'_> {
    pub(crate) fn table_name(&self) -> &str {
        match self {
            Resource::Table(table) | Resource::Stream { table, .. } => table,
        }
    }
}

impl Database {
    /// TagResource: adds `Tags` to the table (a key already there gets the new value).
    pub fn tag_resource(&self, request: TagResourceRequest) -> Result<TagsChanged, ApiError> {
        let mut problems = Vec::new();
        arn_problems(request.resource_arn.as_deref(), &mut problems);
        if request.tags.is_none() {
            problems.push(not_null("tags"));
        }
        if !problems.is_empty() {
            return Err(validation_errors(&problems));
        }
        let arn = request.resource_arn.as_deref().unwrap_or_default();
        let resource = resource_of(arn, "TagResource")?;
        let tags = request.tags.as_deref().unwrap_or_default();
        if tags.is_empty() {
            return Err(ApiError::validation(NO_TAGS_MESSAGE));
        }
        let tags = checked_tags(tags)?;

        let _change = self.catalog_change.lock();
        let table = self.tagged_table(arn, resource)?;
        let mut changed = table.clone();
        changed.settings.tags.extend(tags);
        if changed.settings.tags.len() > TAGS_MAX {
            return Err(ApiError::validation(TAG_LIMIT_MESSAGE));
        }
        if changed.settings.tags != table.settings.tags {
            self.store_definition(&changed)?;
        }
        Ok(TagsChanged {})
    }

    /// UntagResource: removes the keys named (a key the table does not have is fine).
    pub fn untag_resource(&self, request: UntagResourceRequest) -> Result<TagsChanged, ApiError> {
        let mut problems = Vec::new();
        arn_problems(request.resource_arn.as_deref(), &mut problems);
        if request.tag_keys.is_none() {
            problems.push(not_null("tagKeys"));
        }
        if !problems.is_empty() {
            return Err(validation_errors(&problems));
        }
        let arn = request.resource_arn.as_deref().unwrap_or_default();
        let resource = resource_of(arn, "UntagResource")?;
        let keys = request.tag_keys.as_deref().unwrap_or_default();
        if keys.is_empty() {
            return Err(ApiError::validation(NO_TAG_KEYS_MESSAGE));
        }
        for key in keys {
            check_key(Some(key))?;
        }

        let _change = self.catalog_change.lock();
        let table = self.tagged_table(arn, resource)?;
        let mut changed = table.clone();
        for key in keys {
            changed.settings.tags.remove(key);
        }
        if changed.settings.tags != table.settings.tags {
            self.store_definition(&changed)?;
        }
        Ok(TagsChanged {})
    }

    /// ListTagsOfResource: the table's tags in key order, [`LIST_TAGS_PAGE_SIZE`] at a
    /// time; `NextToken` is the last key of the previous page.
    pub fn list_tags_of_resource(
        &self,
        request: ListTagsOfResourceRequest,
    ) -> Result<ListTagsOfResourceResponse, ApiError> {
        let mut problems = Vec::new();
        arn_problems(request.resource_arn.as_deref(), &mut problems);
        if !problems.is_empty() {
            return Err(validation_errors(&problems));
        }
        let arn = request.resource_arn.as_deref().unwrap_or_default();
        let resource = resource_of(arn, "ListTagsOfResource")?;
        let table = self.tagged_table(arn, resource)?;
        let lower = match request.next_token.as_deref() {
            Some(after) => std::ops::Bound::Excluded(after),
            None => std::ops::Bound::Unbounded,
        };
        let mut remaining = table
            .settings
            .tags
            .range::<str, _>((lower, std::ops::Bound::Unbounded));
        let tags: Vec<Tag> = remaining
            .by_ref()
            .take(LIST_TAGS_PAGE_SIZE)
            .map(|(key, value)| Tag::new(key, value))
            .collect();
        let next_token = match remaining.next() {
            Some(_) => tags.last().and_then(|tag| tag.key.clone()),
            None => None,
        };
        Ok(ListTagsOfResourceResponse { tags, next_token })
    }

    /// The table `resource` names (a copy of its definition), or DynamoDB's not-found error
    /// quoting the ARN. A stream ARN must name one of the table's streams.
    fn tagged_table(&self, arn: &str, resource: Resource<'_>) -> Result<TableDef, ApiError> {
        let not_found = || {
            ApiError::new(
                ErrorCode::ResourceNotFoundException,
                format!("Requested resource not found: ResourcArn: {arn} not found"),
            )
        };
        let table = self
            .find_table(resource.table_name())
            .ok_or_else(not_found)?;
        if let Resource::Stream { label, .. } = resource {
            if !table.streams.iter().any(|stream| stream.label == label) {
                return Err(not_found());
            }
        }
        Ok(TableDef::clone(&table))
    }
}

fn not_null(member: &str) -> String {
    violation(None, member, NOT_NULL)
}

/// The member constraints of `ResourceArn` (required, 1..=1283 characters).
pub(crate) fn arn_problems(arn: Option<&str>, problems: &mut Vec<String>) {
    match arn {
        None => problems.push(not_null("resourceArn")),
        Some("") => problems.push(violation(Some(""), "resourceArn", &length_at_least(1))),
        Some(arn) if arn.chars().count() > RESOURCE_ARN_LENGTH_MAX => problems.push(violation(
            Some(arn),
            "resourceArn",
            &length_at_most(RESOURCE_ARN_LENGTH_MAX),
        )),
        Some(_) => {}
    }
}

/// What `arn` names, or why it names nothing Shoal can tag. `operation` is quoted by the
/// AccessDeniedException of another account's ARN.
pub(crate) fn resource_of<'a>(arn: &'a str, operation: &str) -> Result<Resource<'a>, ApiError> {
    resource_in(arn, operation, |arn| {
        ApiError::validation(format!(
            "Invalid TableArn: Invalid ResourceArn provided as input {arn}"
        ))
    })
}

/// [`resource_of`], with `elsewhere` the refusal of an ARN of another partition or of no
/// region (its text differs between the operations that take ARNs).
pub(crate) fn resource_in<'a>(
    arn: &'a str,
    operation: &str,
    elsewhere: impl FnOnce(&str) -> ApiError,
) -> Result<Resource<'a>, ApiError> {
    let Some(rest) = arn.strip_prefix("arn:") else {
        return Err(ApiError::validation(format!(
            "{INVALID} ARNs must start with 'arn:': {arn}"
        )));
    };
    // partition:service:region:account:resource (a stream label holds ':' itself).
    let parts: Vec<&str> = rest.splitn(5, ':').collect();
    let [partition, service, region, account, resource] = parts[..] else {
        return Err(not_dynamodb(arn));
    };
    if service != "dynamodb" {
        return Err(not_dynamodb(arn));
    }
    let only_table_or_stream = || {
        ApiError::validation(format!(
            "{INVALID} Invalid resource arn provided, only table or stream is accepted. Provided resource arn: {arn}"
        ))
    };
    let Some(path) = resource.strip_prefix("table/") else {
        return Err(only_table_or_stream());
    };
    let named = match path.split_once('/') {
        None => Resource::Table(path),
        Some((table, rest)) => match rest.split_once('/') {
            Some(("stream", label)) if !label.is_empty() => Resource::Stream { table, label },
            _ => return Err(only_table_or_stream()),
        },
    };
    if named.table_name().is_empty() {
        return Err(only_table_or_stream());
    }
    if partition != "aws" || region.is_empty() {
        return Err(elsewhere(arn));
    }
    if account != ARN_ACCOUNT {
        return Err(ApiError::new(
            ErrorCode::AccessDeniedException,
            format!(
                "User: arn:aws:iam::{ARN_ACCOUNT}:root is not authorized to perform: dynamodb:{operation} on resource: {arn} because no resource-based policy allows the dynamodb:{operation} action"
            ),
        ));
    }
    Ok(named)
}

fn not_dynamodb(arn: &str) -> ApiError {
    ApiError::validation(format!(
        "{INVALID} Provided Arn is not a DynamoDB resource arn: {arn}"
    ))
}

/// Letters, digits, whitespace and `+ - = . _ : /`, in any script.
fn allowed_tag_text(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_alphanumeric() || c.is_whitespace() || "+-=._:/".contains(c))
}

/// A tag key's rules: 1..=128 allowed characters, not starting with `aws:`.
fn check_key(key: Option<&str>) -> Result<&str, ApiError> {
    let Some(key) = key else {
        return Err(ApiError::validation(
            "The Tag Key provided is invalid, Key: null",
        ));
    };
    let length = key.chars().count();
    if !(1..=TAG_KEY_CHARS_MAX).contains(&length) || !allowed_tag_text(key) {
        return Err(ApiError::validation(format!(
            "The Tag Key provided is invalid, Key: {key}"
        )));
    }
    let reserved = key
        .get(..RESERVED_PREFIX.len())
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case(RESERVED_PREFIX));
    if reserved {
        return Err(ApiError::validation(format!(
            "Tag Key cannot be prefixed with aws:, Key: {key}"
        )));
    }
    Ok(key)
}

/// A tag value's rules: 0..=256 allowed characters.
fn check_value(value: Option<&str>) -> Result<&str, ApiError> {
    let Some(value) = value else {
        return Err(ApiError::validation(
            "The Tag Value provided is invalid, Value: null",
        ));
    };
    if value.chars().count() > TAG_VALUE_CHARS_MAX || !allowed_tag_text(value) {
        return Err(ApiError::validation(format!(
            "The Tag Value provided is invalid, Value: {value}"
        )));
    }
    Ok(value)
}

/// Checks the tags of a TagResource or CreateTable request, in request order (each key,
/// then its value, then whether an earlier tag had its key), and returns them by key.
pub(crate) fn checked_tags(tags: &[Tag]) -> Result<BTreeMap<String, String>, ApiError> {
    let mut checked = BTreeMap::new();
    for tag in tags {
        let key = check_key(tag.key.as_deref())?;
        let value = check_value(tag.value.as_deref())?;
        if checked.insert(key.to_string(), value.to_string()).is_some() {
            return Err(ApiError::validation(format!(
                "Duplicate Tag Keys provided as input: Duplicate Tag Key found {key}"
            )));
        }
    }
    Ok(checked)
}

/// CreateTable's `Tags`: the same rules as TagResource's, but an empty list is fine, and
/// more than [`TAGS_MAX`] is refused before anything is created.
pub(crate) fn tags_on_create(tags: Option<&[Tag]>) -> Result<BTreeMap<String, String>, ApiError> {
    let checked = checked_tags(tags.unwrap_or_default())?;
    if checked.len() > TAGS_MAX {
        return Err(ApiError::validation(TAG_LIMIT_MESSAGE));
    }
    Ok(checked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arns_name_tables_and_streams_of_any_region_in_shoals_account() {
        let table = "arn:aws:dynamodb:ddblocal:000000000000:table/T";
        assert_eq!(resource_of(table, "TagResource"), Ok(Resource::Table("T")));
        let stream = format!("{table}/stream/2024-01-02T03:04:05.678");
        assert_eq!(
            resource_of(&stream, "TagResource"),
            Ok(Resource::Stream {
                table: "T",
                label: "2024-01-02T03:04:05.678"
            })
        );
        let message = |arn: &str| resource_of(arn, "TagResource").unwrap_err().message;
        assert!(message("table/T").contains("ARNs must start with 'arn:'"));
        assert!(message("arn:aws:s3:::bucket").contains("not a DynamoDB resource arn"));
        assert!(message("arn:aws:dynamodb").contains("not a DynamoDB resource arn"));
        assert!(message(&format!("{table}/index/I")).contains("only table or stream"));
        assert!(message("arn:aws:dynamodb:ddblocal:000000000000:backup/B")
            .contains("only table or stream"));
        assert_eq!(
            resource_of(
                "arn:aws:dynamodb:eu-west-1:000000000000:table/T",
                "TagResource"
            ),
            Ok(Resource::Table("T")),
            "an ARN of any region names the table"
        );
        assert!(
            message("arn:aws-cn:dynamodb:cn-north-1:000000000000:table/T")
                .starts_with("Invalid TableArn")
        );
        assert!(message("arn:aws:dynamodb::000000000000:table/T").starts_with("Invalid TableArn"));
        let other_account = resource_of(
            "arn:aws:dynamodb:ddblocal:123456789012:table/T",
            "TagResource",
        )
        .unwrap_err();
        assert_eq!(other_account.code, ErrorCode::AccessDeniedException);
    }

    #[test]
    fn tag_text_counts_characters_not_bytes() {
        let key = "é".repeat(TAG_KEY_CHARS_MAX);
        assert!(check_key(Some(&key)).is_ok());
        assert!(check_key(Some(&format!("{key}é"))).is_err());
        assert!(check_value(Some(&"日".repeat(TAG_VALUE_CHARS_MAX))).is_ok());
        assert!(check_value(Some("")).is_ok());
        assert!(check_key(Some("")).is_err());
        assert!(check_key(Some("a b+c-d=e.f_g:h/i")).is_ok());
        assert!(check_key(Some("a*b")).is_err());
        assert!(check_key(Some("AWS:x")).is_err());
    }
}
