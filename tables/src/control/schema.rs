//! CreateTable validation (SPEC §2.1, §2.2): turns a `CreateTableRequest` into a checked
//! [`TableSchema`] or the error DynamoDB gives for it.
//!
//! The checks run in DynamoDB's order (SPEC §7): missing required members, then every
//! member constraint of the API model (aggregated as `N validation errors detected: …`),
//! then the semantic rules, each of which stops at the first failure:
//! 1. BillingMode versus ProvisionedThroughput and OnDemandThroughput;
//! 2. duplicate AttributeDefinitions;
//! 3. the table key schema;
//! 4. the local secondary indexes (list, count, key schema, same hash key, range key,
//!    projection, unique name);
//! 5. the global secondary indexes (list, count, key schema, projection, throughput,
//!    unique name);
//! 6. the 100 NonKeyAttributes per table;
//! 7. AttributeDefinitions exactly used by the key schemas;
//! 8. the table class and the tags (`tags`).
//!
//! Enum value sets in constraint messages are listed alphabetically, as DynamoDB does
//! (`[B, N, S]`, verified).

use std::collections::{BTreeMap, BTreeSet};

use shoal_model::{ApiError, ScalarType};

use crate::api::common::validation_errors;
use crate::api::constraint::{
    enum_value_set, length_at_least, length_at_most, value_at_least, violation, NOT_NULL,
};
use crate::api::control::{
    AttributeDefinition, CreateTableRequest, KeySchemaElement, OnDemandThroughput,
    Projection as ProjectionRequest, ProvisionedThroughput,
};
use crate::core::catalog::{
    BillingMode, CapacitySettings, KeyAttribute, KeySchema, LocalIndexDef, OnDemandLimits,
    Projection, StreamViewType, TableClass, TableSettings, Throughput, KEY_HASH_ATTRIBUTES_MAX,
    KEY_RANGE_ATTRIBUTES_MAX,
};

/// Local secondary indexes per table.
pub const LOCAL_INDEXES_MAX: usize = 5;
/// Global secondary indexes per table (DynamoDB's default quota).
pub const GLOBAL_INDEXES_MAX: usize = 20;
/// `NonKeyAttributes` names per index (API model).
pub const NON_KEY_ATTRIBUTES_PER_INDEX_MAX: usize = 20;
/// `NonKeyAttributes` names across all indexes of a table (a name in two indexes counts twice).
pub const NON_KEY_ATTRIBUTES_PER_TABLE_MAX: usize = 100;
/// Longest table, index and key attribute name.
pub const NAME_BYTES_MAX: usize = crate::api::constraint::NAME_LENGTH_MAX;
/// Shortest table and index name.
pub const NAME_BYTES_MIN: usize = crate::api::constraint::NAME_LENGTH_MIN;
/// Largest provisioned capacity accepted (DynamoDB's bound on the member).
pub const CAPACITY_UNITS_MAX: i64 = 1_000_000_000_000;

const KEY_TYPES: &[&str] = &["HASH", "RANGE"];
const ATTRIBUTE_TYPES: &[&str] = &["B", "N", "S"];
const PROJECTION_TYPES: &[&str] = &["ALL", "INCLUDE", "KEYS_ONLY"];
/// The values of `BillingMode`.
pub const BILLING_MODES: &[&str] = &["PAY_PER_REQUEST", "PROVISIONED"];

const INVALID: &str = "One or more parameter values were invalid:";

/// A global secondary index as declared (its tree is assigned when the table is created).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalIndexSchema {
    pub name: String,
    pub key: KeySchema,
    pub projection: Projection,
    pub throughput: Option<Throughput>,
    pub on_demand: OnDemandLimits,
}

/// A validated CreateTable request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSchema {
    pub name: String,
    pub key: KeySchema,
    pub attribute_definitions: Vec<KeyAttribute>,
    pub billing: BillingMode,
    /// In definition order; sections 1..=5 in that order.
    pub local_indexes: Vec<LocalIndexDef>,
    pub global_indexes: Vec<GlobalIndexSchema>,
    /// The view type of the stream the table is created with, if any.
    pub stream: Option<StreamViewType>,
    /// Tags, deletion protection and table class as requested.
    pub settings: TableSettings,
}

/// The text of a TableClass outside the enum (CreateTable and UpdateTable).
pub fn invalid_table_class_message() -> String {
    let classes: Vec<&str> = TableClass::ALL.iter().map(|c| c.as_str()).collect();
    format!(
        "Invalid table-class parameter provided. Please try again with a valid table-class value: [{}].",
        classes.join(", ")
    )
}

/// A TableClass member's class, or the error for a value outside the enum.
pub fn table_class_of(name: &str) -> Result<TableClass, ApiError> {
    TableClass::parse(name).ok_or_else(|| ApiError::validation(invalid_table_class_message()))
}

/// Checks a CreateTable request fully.
pub fn validate_create_table(request: &CreateTableRequest) -> Result<TableSchema, ApiError> {
    let (Some(name), Some(definitions), Some(key_schema)) = (
        request.table_name.as_deref(),
        request.attribute_definitions.as_deref(),
        request.key_schema.as_deref(),
    ) else {
        let missing = if request.table_name.is_none() {
            "TableName"
        } else if request.attribute_definitions.is_none() {
            "AttributeDefinitions"
        } else {
            "KeySchema"
        };
        return Err(ApiError::validation(format!(
            "The parameter '{missing}' is required but was not present in the request"
        )));
    };
    let problems = constraint_problems(request);
    if !problems.is_empty() {
        return Err(validation_errors(&problems));
    }
    if let Some(member) = unimplemented_members(request).first() {
        return Err(ApiError::validation(format!(
            "Shoal does not implement {member} on CreateTable yet"
        )));
    }
    let stream = match &request.stream_specification {
        Some(spec) => crate::streams::lifecycle::stream_on_create(spec)?,
        None => None,
    };
    let billing = billing_mode(request)?;
    let on_demand = on_demand_limits(
        request.on_demand_throughput.as_ref(),
        &billing,
        OnDemandLimits::default(),
        "table",
    )?;
    let definitions = attribute_definitions(definitions)?;
    let key = key_schema_of(key_schema, &definitions, false)?;

    let mut index_names = BTreeSet::new();
    let mut used: BTreeSet<&str> = key
        .names()
        .map(|n| definition_name(&definitions, n))
        .collect();
    let local_indexes = local_indexes(request, &key, &definitions, &mut index_names)?;
    let global_indexes = global_indexes(request, &billing, &definitions, &mut index_names)?;
    for name in local_indexes
        .iter()
        .flat_map(|i| i.key.names())
        .chain(global_indexes.iter().flat_map(|i| i.key.names()))
    {
        used.insert(definition_name(&definitions, name));
    }

    check_non_key_attribute_total(
        local_indexes
            .iter()
            .map(|i| &i.projection)
            .chain(global_indexes.iter().map(|i| &i.projection)),
    )?;

    if used.len() != definitions.len() {
        let defined: Vec<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
        let message = if local_indexes.is_empty() && global_indexes.is_empty() {
            format!("{INVALID} Number of attributes in KeySchema does not exactly match number of attributes defined in AttributeDefinitions")
        } else {
            let keys_used: Vec<&str> = defined
                .iter()
                .copied()
                .filter(|d| used.contains(d))
                .collect();
            format!(
                "{INVALID} Some AttributeDefinitions are not used. AttributeDefinitions: [{}], keys used: [{}]",
                defined.join(", "),
                keys_used.join(", ")
            )
        };
        return Err(ApiError::validation(message));
    }

    let table_class = request
        .table_class
        .as_deref()
        .map(table_class_of)
        .transpose()?;
    let tags = crate::tags::tags_on_create(request.tags.as_deref())?;
    let resource_policy = crate::policies::policy_on_create(request.resource_policy.as_deref())?;

    Ok(TableSchema {
        name: name.to_string(),
        key,
        attribute_definitions: definitions,
        billing,
        local_indexes,
        global_indexes,
        stream,
        settings: TableSettings {
            tags,
            deletion_protection: request.deletion_protection_enabled.unwrap_or(false),
            table_class,
            table_class_updated_at_millis: None,
            pay_per_request_since_millis: None,
            capacity: CapacitySettings {
                on_demand,
                ..CapacitySettings::default()
            },
            point_in_time_recovery: None,
            resource_policy,
            stream_policies: BTreeMap::new(),
            settings_replication_mode: None,
            contributor_insights: Vec::new(),
        },
    })
}

/// The members of `request` that ask for something Shoal does not do yet. A member whose
/// value asks for what Shoal does anyway (encryption with DynamoDB's own key) is not one
/// of them.
fn unimplemented_members(request: &CreateTableRequest) -> Vec<&'static str> {
    let enabled = |value: &Option<serde_json::Value>, member: &str| {
        value
            .as_ref()
            .and_then(|v| v.get(member))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false)
    };
    let non_empty = |value: &Option<serde_json::Value>| match value {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::Array(members)) => !members.is_empty(),
        Some(serde_json::Value::Object(members)) => !members.is_empty(),
        Some(_) => true,
    };
    let mut members = Vec::new();
    if enabled(&request.sse_specification, "Enabled") {
        members.push("SSESpecification");
    }
    if non_empty(&request.warm_throughput) {
        members.push("WarmThroughput");
    }
    members
}

/// The name as stored in `definitions` (every key name has been checked to be defined).
fn definition_name<'a>(definitions: &'a [KeyAttribute], name: &str) -> &'a str {
    definitions
        .iter()
        .find(|d| d.name == name)
        .map(|d| d.name.as_str())
        .unwrap_or_default()
}

// ---- constraints (the API model's member rules) ----

/// Length and pattern rules of a table or index name.
pub(crate) fn name_problems(name: Option<&str>, path: &str, problems: &mut Vec<String>) {
    crate::api::constraint::name_violations(name, path, NAME_BYTES_MIN, problems);
}

pub(crate) fn attribute_name_problems(name: Option<&str>, path: &str, problems: &mut Vec<String>) {
    match name {
        None => problems.push(violation(None, path, NOT_NULL)),
        Some("") => problems.push(violation(Some(""), path, &length_at_least(1))),
        Some(n) if n.len() > NAME_BYTES_MAX => {
            problems.push(violation(Some(n), path, &length_at_most(NAME_BYTES_MAX)))
        }
        Some(_) => {}
    }
}

pub(crate) fn enum_problems(
    value: Option<&str>,
    path: &str,
    allowed: &[&str],
    problems: &mut Vec<String>,
) {
    match value {
        None => problems.push(violation(None, path, NOT_NULL)),
        Some(v) if !allowed.contains(&v) => {
            problems.push(violation(Some(v), path, &enum_value_set(allowed)))
        }
        Some(_) => {}
    }
}

/// How DynamoDB renders a key schema list in a constraint message.
fn render_key_schema(elements: &[KeySchemaElement]) -> String {
    let rendered: Vec<String> = elements
        .iter()
        .map(|e| {
            format!(
                "KeySchemaElement(attributeName={}, keyType={})",
                e.attribute_name.as_deref().unwrap_or("null"),
                e.key_type.as_deref().unwrap_or("null")
            )
        })
        .collect();
    format!("[{}]", rendered.join(", "))
}

/// `max_elements`: 2 for a table or LSI key; None for a GSI key, whose API member has no
/// maximum since multi-attribute keys (their counts are semantic rules, `key_schema_of`).
fn key_schema_problems(
    elements: Option<&[KeySchemaElement]>,
    path: &str,
    max_elements: Option<usize>,
    problems: &mut Vec<String>,
) {
    let Some(elements) = elements else {
        problems.push(violation(None, path, NOT_NULL));
        return;
    };
    if elements.is_empty() {
        problems.push(violation(Some("[]"), path, &length_at_least(1)));
    }
    if let Some(max) = max_elements.filter(|max| elements.len() > *max) {
        problems.push(violation(
            Some(&render_key_schema(elements)),
            path,
            &length_at_most(max),
        ));
    }
    for (position, element) in elements.iter().enumerate() {
        let member = format!("{path}.{}.member", position + 1);
        attribute_name_problems(
            element.attribute_name.as_deref(),
            &format!("{member}.attributeName"),
            problems,
        );
        enum_problems(
            element.key_type.as_deref(),
            &format!("{member}.keyType"),
            KEY_TYPES,
            problems,
        );
    }
}

/// The member constraints every secondary index shares (name, key schema, projection),
/// reported under `member` (e.g. `localSecondaryIndexes.1.member`).
fn index_problems(
    name: Option<&str>,
    key_schema: Option<&[KeySchemaElement]>,
    max_key_elements: Option<usize>,
    projection: Option<&ProjectionRequest>,
    member: &str,
    problems: &mut Vec<String>,
) {
    name_problems(name, &format!("{member}.indexName"), problems);
    key_schema_problems(
        key_schema,
        &format!("{member}.keySchema"),
        max_key_elements,
        problems,
    );
    projection_problems(projection, &format!("{member}.projection"), problems);
}

fn projection_problems(
    projection: Option<&ProjectionRequest>,
    path: &str,
    problems: &mut Vec<String>,
) {
    let Some(projection) = projection else {
        problems.push(violation(None, path, NOT_NULL));
        return;
    };
    // A missing ProjectionType is a semantic error ("Unknown ProjectionType: null").
    if projection.projection_type.is_some() {
        enum_problems(
            projection.projection_type.as_deref(),
            &format!("{path}.projectionType"),
            PROJECTION_TYPES,
            problems,
        );
    }
    if let Some(names) = &projection.non_key_attributes {
        let names_path = format!("{path}.nonKeyAttributes");
        let rendered = format!("[{}]", names.join(", "));
        if names.is_empty() {
            problems.push(violation(Some(&rendered), &names_path, &length_at_least(1)));
        }
        if names.len() > NON_KEY_ATTRIBUTES_PER_INDEX_MAX {
            problems.push(violation(
                Some(&rendered),
                &names_path,
                &length_at_most(NON_KEY_ATTRIBUTES_PER_INDEX_MAX),
            ));
        }
        if names
            .iter()
            .any(|n| n.is_empty() || n.len() > NAME_BYTES_MAX)
        {
            problems.push(violation(
                Some(&rendered),
                &names_path,
                &format!(
                    "Member must satisfy constraint: [{}, {}]",
                    length_at_most(NAME_BYTES_MAX),
                    length_at_least(1)
                ),
            ));
        }
    }
}

/// The constraint problems of a ProvisionedThroughput member at `path` (CreateTable and
/// UpdateTable).
pub(crate) fn throughput_problems(
    throughput: Option<&ProvisionedThroughput>,
    path: &str,
    problems: &mut Vec<String>,
) {
    let Some(throughput) = throughput else {
        return;
    };
    for (value, member) in [
        (throughput.read_capacity_units, "readCapacityUnits"),
        (throughput.write_capacity_units, "writeCapacityUnits"),
    ] {
        let member_path = format!("{path}.{member}");
        match value {
            None => problems.push(violation(None, &member_path, NOT_NULL)),
            Some(units) if units < 1 => problems.push(violation(
                Some(&units.to_string()),
                &member_path,
                &value_at_least(1),
            )),
            Some(_) => {}
        }
    }
}

/// Every member constraint of the request, in member order.
fn constraint_problems(request: &CreateTableRequest) -> Vec<String> {
    let mut problems = Vec::new();
    name_problems(request.table_name.as_deref(), "tableName", &mut problems);
    for (position, definition) in request.attribute_definitions.iter().flatten().enumerate() {
        let member = format!("attributeDefinitions.{}.member", position + 1);
        attribute_name_problems(
            definition.attribute_name.as_deref(),
            &format!("{member}.attributeName"),
            &mut problems,
        );
        enum_problems(
            definition.attribute_type.as_deref(),
            &format!("{member}.attributeType"),
            ATTRIBUTE_TYPES,
            &mut problems,
        );
    }
    key_schema_problems(
        request.key_schema.as_deref(),
        "keySchema",
        Some(2),
        &mut problems,
    );
    if let Some(spec) = &request.stream_specification {
        crate::streams::lifecycle::specification_problems(spec, &mut problems);
    }
    for (position, index) in request.local_secondary_indexes.iter().flatten().enumerate() {
        let member = format!("localSecondaryIndexes.{}.member", position + 1);
        index_problems(
            index.index_name.as_deref(),
            index.key_schema.as_deref(),
            Some(2),
            index.projection.as_ref(),
            &member,
            &mut problems,
        );
    }
    for (position, index) in request
        .global_secondary_indexes
        .iter()
        .flatten()
        .enumerate()
    {
        let member = format!("globalSecondaryIndexes.{}.member", position + 1);
        index_problems(
            index.index_name.as_deref(),
            index.key_schema.as_deref(),
            None,
            index.projection.as_ref(),
            &member,
            &mut problems,
        );
        throughput_problems(
            index.provisioned_throughput.as_ref(),
            &format!("{member}.provisionedThroughput"),
            &mut problems,
        );
    }
    if request.billing_mode.is_some() {
        enum_problems(
            request.billing_mode.as_deref(),
            "billingMode",
            BILLING_MODES,
            &mut problems,
        );
    }
    throughput_problems(
        request.provisioned_throughput.as_ref(),
        "provisionedThroughput",
        &mut problems,
    );
    problems
}

// ---- semantic rules ----

fn invalid(message: impl std::fmt::Display) -> ApiError {
    ApiError::validation(format!("{INVALID} {message}"))
}

/// Throughput after the constraint pass (both members present and ≥ 1): refused when
/// absurdly large (CreateTable and UpdateTable).
pub(crate) fn throughput_of(throughput: &ProvisionedThroughput) -> Result<Throughput, ApiError> {
    let mut units = [0u64; 2];
    for (slot, (value, member)) in units.iter_mut().zip([
        (throughput.read_capacity_units, "ReadCapacityUnits"),
        (throughput.write_capacity_units, "WriteCapacityUnits"),
    ]) {
        let value = value.unwrap_or_default();
        if value > CAPACITY_UNITS_MAX {
            return Err(invalid(format!(
                "Given value {value} for {member} is out of bounds"
            )));
        }
        *slot = u64::try_from(value).unwrap_or_default();
    }
    Ok(Throughput {
        read_capacity_units: units[0],
        write_capacity_units: units[1],
    })
}

/// The text of ProvisionedThroughput given for a PAY_PER_REQUEST table (CreateTable and
/// UpdateTable).
pub(crate) fn throughput_with_pay_per_request() -> ApiError {
    invalid("Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST")
}

/// The text of ProvisionedThroughput given for a GSI of a PAY_PER_REQUEST table.
pub(crate) fn index_throughput_with_pay_per_request(index_name: &str) -> ApiError {
    invalid(format!(
        "ProvisionedThroughput should not be specified for index: {index_name} when BillingMode is PAY_PER_REQUEST"
    ))
}

/// The text of a GSI of a PROVISIONED table without ProvisionedThroughput.
pub(crate) fn index_throughput_missing(index_name: &str) -> ApiError {
    invalid(format!(
        "ProvisionedThroughput must be specified for index: {index_name}"
    ))
}

/// The on-demand caps `requested` sets on a table or GSI (`owner`: "table" or "index")
/// whose caps are `current` and whose billing mode is (or becomes) `billing`: each member
/// given replaces its cap, `-1` removes it; only PAY_PER_REQUEST tables have caps
/// (SPEC-2 §5.5). CreateTable and UpdateTable.
pub(crate) fn on_demand_limits(
    requested: Option<&OnDemandThroughput>,
    billing: &BillingMode,
    current: OnDemandLimits,
    owner: &str,
) -> Result<OnDemandLimits, ApiError> {
    let Some(requested) = requested.filter(|r| r.asks()) else {
        return Ok(current);
    };
    let members = [
        (requested.max_read_request_units, "MaxReadRequestUnits"),
        (requested.max_write_request_units, "MaxWriteRequestUnits"),
    ];
    if matches!(billing, BillingMode::Provisioned(_)) {
        let member = members
            .iter()
            .find(|(value, _)| value.is_some())
            .map_or("MaxReadRequestUnits", |(_, member)| member);
        return Err(invalid(format!(
            "{member} for OnDemandThroughput cannot be specified when the table BillingMode is PROVISIONED"
        )));
    }
    let mut limits = current;
    for ((value, member), slot) in members.into_iter().zip([
        &mut limits.max_read_request_units,
        &mut limits.max_write_request_units,
    ]) {
        match value {
            None => {}
            Some(-1) => *slot = None,
            Some(units) if units >= 1 => *slot = Some(units as u64),
            Some(_) => {
                return Err(invalid(format!(
                "Requested {member} for OnDemandThroughput for {owner} is outside of valid range"
            )))
            }
        }
    }
    Ok(limits)
}

fn billing_mode(request: &CreateTableRequest) -> Result<BillingMode, ApiError> {
    let pay_per_request = request.billing_mode.as_deref() == Some("PAY_PER_REQUEST");
    match (&request.provisioned_throughput, pay_per_request) {
        (Some(_), true) => Err(throughput_with_pay_per_request()),
        (None, true) => Ok(BillingMode::PayPerRequest),
        (None, false) => Err(invalid(
            "ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED",
        )),
        (Some(throughput), false) => Ok(BillingMode::Provisioned(throughput_of(throughput)?)),
    }
}

/// The definitions, each name once (the constraint pass checked names and types).
fn attribute_definitions(
    definitions: &[AttributeDefinition],
) -> Result<Vec<KeyAttribute>, ApiError> {
    let mut out: Vec<KeyAttribute> = Vec::with_capacity(definitions.len());
    for definition in definitions {
        let name = definition.attribute_name.clone().unwrap_or_default();
        let ty = definition
            .attribute_type
            .as_deref()
            .and_then(ScalarType::parse)
            .ok_or_else(|| invalid(format!("Unknown AttributeType for attribute {name}")))?;
        if out.iter().any(|d| d.name == name) {
            return Err(invalid(format!(
                "Duplicate AttributeName in AttributeDefinitions: {name}"
            )));
        }
        out.push(KeyAttribute::new(name, ty));
    }
    Ok(out)
}

/// Checks a key schema against the definitions (table, LSI and GSI rules alike). A GSI
/// key (`global`) beyond one HASH and one RANGE attribute follows the multi-attribute
/// rules of [`multi_attribute_key_schema`]; every other key, the classic ones.
fn key_schema_of(
    elements: &[KeySchemaElement],
    definitions: &[KeyAttribute],
    global: bool,
) -> Result<KeySchema, ApiError> {
    let names: Vec<&str> = elements
        .iter()
        .map(|e| e.attribute_name.as_deref().unwrap_or_default())
        .collect();
    let hash_count = elements
        .iter()
        .filter(|e| e.key_type.as_deref() == Some("HASH"))
        .count();
    if global && (elements.len() > 2 || hash_count > 1) {
        return multi_attribute_key_schema(elements, &names, definitions);
    }
    if names.len() == 2 && names[0] == names[1] {
        return Err(ApiError::validation(
            "Invalid KeySchema: Some index key attribute have no definition",
        ));
    }
    let definition = |name: &str| definitions.iter().find(|d| d.name == name);
    if names.iter().any(|n| definition(n).is_none()) {
        let defined: Vec<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
        return Err(invalid(format!(
            "Some index key attributes are not defined in AttributeDefinitions. Keys: [{}], AttributeDefinitions: [{}]",
            names.join(", "),
            defined.join(", ")
        )));
    }
    if elements.first().and_then(|e| e.key_type.as_deref()) != Some("HASH") {
        return Err(ApiError::validation(
            "Invalid KeySchema: The first KeySchemaElement is not a HASH key type",
        ));
    }
    if elements.len() == 2 && elements[1].key_type.as_deref() != Some("RANGE") {
        return Err(ApiError::validation(
            "Invalid KeySchema: The second KeySchemaElement is not a RANGE key type",
        ));
    }
    let attribute = |name: &str| {
        definition(name)
            .cloned()
            .ok_or_else(|| invalid("Invalid KeySchema"))
    };
    let Some(hash) = names.first() else {
        // The constraint pass rejects an empty key schema before this point.
        return Err(ApiError::validation(
            "Invalid KeySchema: The KeySchema is empty",
        ));
    };
    Ok(KeySchema::new(
        attribute(hash)?,
        match names.get(1) {
            Some(name) => Some(attribute(name)?),
            None => None,
        },
    ))
}

/// A GSI key of several HASH or RANGE attributes (SPEC-3 §1.1), checked in the order
/// DynamoDB reports: the first element, the count of each kind, HASH before RANGE,
/// duplicate names, then the definitions. The list order is the component order.
fn multi_attribute_key_schema(
    elements: &[KeySchemaElement],
    names: &[&str],
    definitions: &[KeyAttribute],
) -> Result<KeySchema, ApiError> {
    let is_hash = |e: &KeySchemaElement| e.key_type.as_deref() == Some("HASH");
    if !elements.first().is_some_and(is_hash) {
        return Err(ApiError::validation(
            "Invalid KeySchema: The first KeySchemaElement is not a HASH key type",
        ));
    }
    let hash_count = elements.iter().filter(|e| is_hash(e)).count();
    let range_count = elements.len() - hash_count;
    for (count, max, kind) in [
        (hash_count, KEY_HASH_ATTRIBUTES_MAX, "HASH"),
        (range_count, KEY_RANGE_ATTRIBUTES_MAX, "RANGE"),
    ] {
        if count > max {
            return Err(invalid(format!(
                "The KeySchema exceeds the maximum allowed number of {kind} key attributes"
            )));
        }
    }
    if elements[hash_count..].iter().any(is_hash) {
        return Err(invalid(
            "All HASH key attributes must precede RANGE key attributes in the KeySchema",
        ));
    }
    let mut seen = BTreeSet::new();
    if !names.iter().all(|name| seen.insert(*name)) {
        return Err(ApiError::validation(
            "The KeySchema contains multiple key attributes with the same name",
        ));
    }
    let definition = |name: &str| definitions.iter().find(|d| d.name == name).cloned();
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| definition(n).is_none())
        .collect();
    if !missing.is_empty() {
        let defined: Vec<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
        return Err(invalid(format!(
            "Some index key attributes are not defined in AttributeDefinitions. Keys: [{}], AttributeDefinitions: [{}]",
            missing.join(", "),
            defined.join(", ")
        )));
    }
    let mut attributes = names.iter().filter_map(|name| definition(name));
    let (Some(hash), more_hash) = (
        attributes.next(),
        attributes.by_ref().take(hash_count - 1).collect(),
    ) else {
        return Err(ApiError::validation(
            "Invalid KeySchema: The KeySchema is empty",
        ));
    };
    let range = attributes.next();
    Ok(KeySchema {
        hash,
        range,
        more_hash,
        more_range: attributes.collect(),
    })
}

fn projection_of(
    projection: Option<&ProjectionRequest>,
    index_name: &str,
) -> Result<Projection, ApiError> {
    let projection = projection.cloned().unwrap_or_default();
    let non_key = projection.non_key_attributes;
    match projection.projection_type.as_deref() {
        None => Err(invalid("Unknown ProjectionType: null")),
        Some(kind @ ("ALL" | "KEYS_ONLY")) => {
            if non_key.is_some() {
                return Err(invalid(format!(
                    "ProjectionType is {kind}, but NonKeyAttributes is specified"
                )));
            }
            Ok(if kind == "ALL" {
                Projection::All
            } else {
                Projection::KeysOnly
            })
        }
        Some("INCLUDE") => {
            let Some(names) = non_key else {
                return Err(invalid(format!(
                    "NonKeyAttributes must be specified when ProjectionType is INCLUDE for index: {index_name}"
                )));
            };
            let mut seen = BTreeSet::new();
            for name in &names {
                if !seen.insert(name.as_str()) {
                    return Err(invalid(format!(
                        "Duplicate NonKeyAttributes name {name} for index: {index_name}"
                    )));
                }
            }
            Ok(Projection::Include(names))
        }
        Some(other) => Err(invalid(format!("Unknown ProjectionType: {other}"))),
    }
}

fn claim_index_name(name: &str, index_names: &mut BTreeSet<String>) -> Result<(), ApiError> {
    if !index_names.insert(name.to_string()) {
        return Err(invalid(format!("Duplicate index name: {name}")));
    }
    Ok(())
}

fn local_indexes(
    request: &CreateTableRequest,
    table_key: &KeySchema,
    definitions: &[KeyAttribute],
    index_names: &mut BTreeSet<String>,
) -> Result<Vec<LocalIndexDef>, ApiError> {
    let Some(indexes) = &request.local_secondary_indexes else {
        return Ok(Vec::new());
    };
    if indexes.is_empty() {
        return Err(invalid("List of LocalSecondaryIndexes is empty"));
    }
    if table_key.range.is_none() {
        return Err(invalid(
            "Table KeySchema does not have a range key, which is required when specifying a LocalSecondaryIndex",
        ));
    }
    if indexes.len() > LOCAL_INDEXES_MAX {
        return Err(invalid(format!(
            "Number of LocalSecondaryIndexes exceeds per-table limit of {LOCAL_INDEXES_MAX}"
        )));
    }
    let mut out = Vec::with_capacity(indexes.len());
    for (position, index) in indexes.iter().enumerate() {
        let name = index.index_name.clone().unwrap_or_default();
        let key = key_schema_of(
            index.key_schema.as_deref().unwrap_or_default(),
            definitions,
            false,
        )?;
        if key.range.is_none() {
            return Err(invalid(format!(
                "Index KeySchema does not have a range key for index: {name}"
            )));
        }
        if key.hash.name != table_key.hash.name {
            return Err(invalid(format!(
                "Index KeySchema does not have the same leading hash key as table KeySchema for index: {name}. index hash key: {}, table hash key: {}",
                key.hash.name, table_key.hash.name
            )));
        }
        let projection = projection_of(index.projection.as_ref(), &name)?;
        claim_index_name(&name, index_names)?;
        out.push(LocalIndexDef {
            name,
            key,
            projection,
            // position < LOCAL_INDEXES_MAX (5), so the section is 1..=5.
            section: (position + 1) as u8,
        });
    }
    Ok(out)
}

fn global_indexes(
    request: &CreateTableRequest,
    billing: &BillingMode,
    definitions: &[KeyAttribute],
    index_names: &mut BTreeSet<String>,
) -> Result<Vec<GlobalIndexSchema>, ApiError> {
    let Some(indexes) = &request.global_secondary_indexes else {
        return Ok(Vec::new());
    };
    if indexes.is_empty() {
        return Err(invalid("List of GlobalSecondaryIndexes is empty"));
    }
    if indexes.len() > GLOBAL_INDEXES_MAX {
        return Err(invalid(format!(
            "GlobalSecondaryIndex count exceeds the per-table limit of {GLOBAL_INDEXES_MAX}"
        )));
    }
    let mut out = Vec::with_capacity(indexes.len());
    for index in indexes {
        let name = index.index_name.clone().unwrap_or_default();
        let key = key_schema_of(
            index.key_schema.as_deref().unwrap_or_default(),
            definitions,
            true,
        )?;
        let projection = projection_of(index.projection.as_ref(), &name)?;
        let throughput = match (billing, &index.provisioned_throughput) {
            (BillingMode::PayPerRequest, Some(_)) => {
                return Err(index_throughput_with_pay_per_request(&name));
            }
            (BillingMode::PayPerRequest, None) => None,
            (BillingMode::Provisioned(_), None) => {
                return Err(index_throughput_missing(&name));
            }
            (BillingMode::Provisioned(_), Some(throughput)) => Some(throughput_of(throughput)?),
        };
        let on_demand = on_demand_limits(
            index.on_demand_throughput.as_ref(),
            billing,
            OnDemandLimits::default(),
            "index",
        )?;
        claim_index_name(&name, index_names)?;
        out.push(GlobalIndexSchema {
            name,
            key,
            projection,
            throughput,
            on_demand,
        });
    }
    Ok(out)
}

/// The limit on `NonKeyAttributes` summed over every INCLUDE projection of a table's indexes
/// (CreateTable, and UpdateTable adding a GSI).
pub(crate) fn check_non_key_attribute_total<'a>(
    projections: impl Iterator<Item = &'a Projection>,
) -> Result<(), ApiError> {
    let non_key_total: usize = projections
        .map(|p| match p {
            Projection::Include(names) => names.len(),
            _ => 0,
        })
        .sum();
    if non_key_total > NON_KEY_ATTRIBUTES_PER_TABLE_MAX {
        return Err(ApiError::validation(format!(
            "{INVALID} The number of NonKeyAttributes across all secondary indexes of the table ({non_key_total}) exceeds the limit of {NON_KEY_ATTRIBUTES_PER_TABLE_MAX}"
        )));
    }
    Ok(())
}
