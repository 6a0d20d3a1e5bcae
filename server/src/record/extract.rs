//! What a recorded call's request and answer say, as a [`RequestLine`]: run on the writer
//! thread, never on the request's path.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use shoal_expr::{partiql, Context, KeyAttribute, KeySchemaView};
use shoal_model::{AttributeValue, ScalarType};
use shoal_tables::capacity::metering::Returned;

use super::format::{RequestLine, Scalar, Shapes};
use crate::sigv4::hmac_sha256;

/// The expression parameters kept as sent.
const EXPRESSION_PARAMETERS: [&str; 5] = [
    "KeyConditionExpression",
    "FilterExpression",
    "ConditionExpression",
    "UpdateExpression",
    "ProjectionExpression",
];
/// The request parameters kept as sent: none holds data.
const KEPT_PARAMETERS: [&str; 5] = [
    "ConsistentRead",
    "Limit",
    "ScanIndexForward",
    "Select",
    "ReturnValues",
];
/// Most ExpressionAttributeValues recorded per request.
const VALUES_MAX: usize = 32;
/// Most parts of a batch or transaction recorded (TransactWriteItems and BatchGetItem name
/// at most 100).
const PARTS_MAX: usize = 100;
/// Most tables whose last sort key is remembered (for `sk_order`).
const SORT_KEYS_TRACKED_MAX: usize = 10_000;

/// A table's keys, from its description.
#[derive(Debug, Clone, Default)]
pub struct TableKeys {
    pub hash: Option<(String, String)>,
    pub range: Option<(String, String)>,
    /// Each index's (hash, range) attribute names.
    pub indexes: BTreeMap<String, (Option<String>, Option<String>)>,
    /// Attributes that key an index and not the table.
    pub index_attributes: BTreeSet<String>,
    /// Attribute types from AttributeDefinitions.
    pub types: BTreeMap<String, String>,
}

impl TableKeys {
    /// The keys a DescribeTable `Table` names.
    pub fn of(table: &Value) -> TableKeys {
        let types: BTreeMap<String, String> = table["AttributeDefinitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| {
                Some((
                    d["AttributeName"].as_str()?.to_string(),
                    d["AttributeType"].as_str()?.to_string(),
                ))
            })
            .collect();
        let key = |schema: &Value, kind: &str| -> Option<String> {
            schema.as_array()?.iter().find(|k| k["KeyType"] == kind)?["AttributeName"]
                .as_str()
                .map(str::to_string)
        };
        let typed = |name: Option<String>| {
            name.map(|n| {
                let t = types.get(&n).cloned().unwrap_or_else(|| "S".to_string());
                (n, t)
            })
        };
        let hash = typed(key(&table["KeySchema"], "HASH"));
        let range = typed(key(&table["KeySchema"], "RANGE"));
        let mut indexes = BTreeMap::new();
        let mut index_attributes = BTreeSet::new();
        for index in table["GlobalSecondaryIndexes"]
            .as_array()
            .into_iter()
            .chain(table["LocalSecondaryIndexes"].as_array())
            .flatten()
        {
            let Some(name) = index["IndexName"].as_str() else {
                continue;
            };
            let (h, r) = (
                key(&index["KeySchema"], "HASH"),
                key(&index["KeySchema"], "RANGE"),
            );
            for attribute in h.iter().chain(r.iter()) {
                let is_table_key = [&hash, &range]
                    .iter()
                    .any(|k| k.as_ref().is_some_and(|(n, _)| n == attribute));
                if !is_table_key {
                    index_attributes.insert(attribute.clone());
                }
            }
            indexes.insert(name.to_string(), (h, r));
        }
        TableKeys {
            hash,
            range,
            indexes,
            index_attributes,
            types,
        }
    }

    /// The key schema a Query of `index` (or of the table) runs on.
    fn view(&self, index: Option<&str>) -> Option<KeySchemaView> {
        let attribute = |name: &str| KeyAttribute {
            name: name.to_string(),
            scalar_type: match self.types.get(name).map(String::as_str) {
                Some("N") => ScalarType::N,
                Some("B") => ScalarType::B,
                _ => ScalarType::S,
            },
        };
        let (hash, range) = match index {
            None => (
                self.hash.as_ref().map(|(n, _)| n.clone()),
                self.range.as_ref().map(|(n, _)| n.clone()),
            ),
            Some(index) => self.indexes.get(index)?.clone(),
        };
        // A recording names one HASH and one RANGE attribute per index: a multi-attribute
        // GSI key's further components are not followed.
        Some(KeySchemaView::new(
            attribute(&hash?),
            range.as_deref().map(attribute),
        ))
    }
}

/// What the writer knows between calls.
pub struct Extractor {
    /// Shared, so that a call borrows its table's keys without copying them.
    pub tables: HashMap<String, Arc<TableKeys>>,
    /// The HMAC key of hashed texts; None records texts as they are.
    hash_key: Option<[u8; 32]>,
    pub keep_bodies: bool,
    /// Each table's last written sort key.
    last_sort_key: HashMap<String, AttributeValue>,
}

/// One call as the request path handed it over.
pub struct Call<'a> {
    pub at_us: u64,
    pub operation: &'a str,
    pub request: &'a [u8],
    /// The answer's body when the call succeeded.
    pub answer: Option<&'a [u8]>,
    pub error: Option<&'a str>,
    pub units: Option<f64>,
    /// The items a read returned with their size, as the tables layer counted them; None
    /// when the handler does not say (they are then sized from the answer).
    pub returned: Option<Returned>,
    pub latency_us: u64,
}

impl Extractor {
    pub fn new(hash_key: Option<[u8; 32]>) -> Extractor {
        Extractor {
            tables: HashMap::new(),
            keep_bodies: hash_key.is_none(),
            hash_key,
            last_sort_key: HashMap::new(),
        }
    }

    /// A value's text for the file: as is, or its keyed hash.
    fn text(&self, value: &AttributeValue) -> Option<Scalar> {
        let (kind, text) = scalar_text(value)?;
        Some(self.scalar(kind, text))
    }

    /// A scalar of type `kind` and text `text`, hashed with hashed keys.
    fn scalar(&self, kind: &str, text: String) -> Scalar {
        let value = match &self.hash_key {
            None => text,
            Some(key) => {
                let mac = hmac_sha256(key, format!("{kind}{text}").as_bytes());
                format!("h{}", hex::encode(&mac[..8]))
            }
        };
        Scalar {
            kind: kind.to_string(),
            value,
        }
    }

    /// The line of one call, and the request body to write with it (the body as sent; None
    /// with hashed keys, or when the body is no JSON object).
    pub fn line<'a>(&mut self, call: &Call<'a>) -> Extracted<'a> {
        let mut line = RequestLine {
            at_us: call.at_us,
            op: call.operation.to_string(),
            units: call.units,
            latency_us: call.latency_us,
            error: call.error.map(str::to_string),
            ..RequestLine::default()
        };
        let request = match Members::of(call.request) {
            Some(request) => request,
            None => return Extracted { line, body: None },
        };
        line.table = table_of(call.operation, &request);
        self.item(call.operation, &request, &mut line);
        match call.operation {
            "ExecuteStatement" => self.statement(&request, &mut line),
            operation => line.parts = self.parts(operation, &request),
        }
        if line.table.is_none() {
            // A PartiQL batch or transaction names its tables in its statements.
            line.table = line.parts.first().and_then(|part| part.table.clone());
        }
        match (call.returned, call.answer) {
            (Some(returned), Some(_)) => {
                line.items = Some(returned.items);
                line.item_bytes = Some(returned.bytes);
            }
            (None, Some(answer)) => answer_sizes(call.operation, answer, &mut line),
            (_, None) => {}
        }
        if call.operation == "BatchWriteItem" && call.answer.is_some() {
            line.items = batch_write_count(&request);
        }
        let body = self.keep_bodies.then_some(call.request);
        Extracted { line, body }
    }

    /// What a request (or one part of a batch or transaction, `line.table` set) says of the
    /// item it names: index, shapes, expressions, kept parameters, values and keys.
    fn item(&mut self, operation: &str, request: &Members<'_>, line: &mut RequestLine) {
        line.index = member(request.index_name);
        let names: BTreeMap<String, String> =
            member(request.expression_attribute_names).unwrap_or_default();
        let values: BTreeMap<String, AttributeValue> =
            member::<BTreeMap<String, Value>>(request.expression_attribute_values)
                .unwrap_or_default()
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), AttributeValue::from_json(v).ok()?)))
                .collect();
        let expressions = request.expressions();
        line.shape = Shapes {
            key_condition: shape(&expressions[0].1, &names),
            filter: shape(&expressions[1].1, &names),
            condition: shape(&expressions[2].1, &names),
            update: shape(&expressions[3].1, &names),
            projection: shape(&expressions[4].1, &names),
            statement: None,
        };
        for (parameter, text) in &expressions {
            if let Some(text) = text {
                line.expressions
                    .insert((*parameter).to_string(), text.clone());
            }
        }
        for (parameter, value) in request.kept() {
            if let Some(value) = member::<Value>(value) {
                line.params.insert(parameter.to_string(), value);
            }
        }
        for (name, value) in values.iter().take(VALUES_MAX) {
            if let Some(scalar) = self.text(value) {
                line.values.insert(name.clone(), scalar);
            }
        }
        let keys = line
            .table
            .as_ref()
            .and_then(|t| self.tables.get(t))
            .cloned();
        if let Some(keys) = &keys {
            let condition = &expressions[0].1;
            self.keys(operation, request, keys, condition, &names, &values, line);
        }
        line.names = names;
    }

    /// The items a batch or transaction names, each as a line (at most [`PARTS_MAX`]).
    fn parts(&mut self, operation: &str, request: &Members<'_>) -> Vec<RequestLine> {
        // Each part: its kind, its table when the part does not name it, the operation
        // whose members it has, and those members.
        let mut named: Vec<(String, Option<String>, &'static str, Members<'_>)> = Vec::new();
        match operation {
            "TransactWriteItems" | "TransactGetItems" => {
                let actions: Vec<BTreeMap<String, &RawValue>> =
                    member(request.transact_items).unwrap_or_default();
                for (kind, body) in actions.into_iter().flatten().take(PARTS_MAX) {
                    let single = match kind.as_str() {
                        "Put" => "PutItem",
                        "Update" => "UpdateItem",
                        "Delete" => "DeleteItem",
                        // A condition check names its item like a get: no sort-key order.
                        "ConditionCheck" | "Get" => "GetItem",
                        _ => continue,
                    };
                    if let Some(members) = Members::of(body.get().as_bytes()) {
                        named.push((kind, None, single, members));
                    }
                }
            }
            "BatchWriteItem" => {
                let tables: BTreeMap<String, Vec<BTreeMap<String, &RawValue>>> =
                    member(request.request_items).unwrap_or_default();
                for (table, writes) in tables {
                    for (kind, body) in writes.into_iter().flatten() {
                        let (kind, single) = match kind.as_str() {
                            "PutRequest" => ("Put", "PutItem"),
                            "DeleteRequest" => ("Delete", "DeleteItem"),
                            _ => continue,
                        };
                        if let Some(members) = Members::of(body.get().as_bytes()) {
                            named.push((kind.into(), Some(table.clone()), single, members));
                        }
                    }
                }
            }
            "BatchGetItem" => {
                let tables: BTreeMap<String, &RawValue> =
                    member(request.request_items).unwrap_or_default();
                for (table, body) in tables {
                    let Some(members) = Members::of(body.get().as_bytes()) else {
                        continue;
                    };
                    let keys: Vec<&RawValue> = member(members.keys).unwrap_or_default();
                    for key in keys {
                        let members = Members {
                            key: Some(key),
                            ..members.clone()
                        };
                        named.push(("Get".into(), Some(table.clone()), "GetItem", members));
                    }
                }
            }
            "BatchExecuteStatement" | "ExecuteTransaction" => {
                let list = match operation {
                    "BatchExecuteStatement" => request.statements,
                    _ => request.transact_statements,
                };
                let statements: Vec<&RawValue> = member(list).unwrap_or_default();
                for body in statements.into_iter().take(PARTS_MAX) {
                    if let Some(members) = Members::of(body.get().as_bytes()) {
                        named.push(("Statement".into(), None, "ExecuteStatement", members));
                    }
                }
            }
            _ => {}
        }
        named
            .into_iter()
            .take(PARTS_MAX)
            .map(|(kind, table, single, members)| {
                let mut part = RequestLine {
                    op: kind,
                    table: table.or_else(|| member(members.table_name)),
                    ..RequestLine::default()
                };
                self.item(single, &members, &mut part);
                if single == "ExecuteStatement" {
                    self.statement(&members, &mut part);
                }
                part
            })
            .collect()
    }

    /// An ExecuteStatement's table, index, statement shape, values by position and keys.
    fn statement(&mut self, request: &Members<'_>, line: &mut RequestLine) {
        let Some(text) = member::<String>(request.statement) else {
            return;
        };
        let Ok(shape) = partiql::statement_shape(&text) else {
            return;
        };
        if let Ok(statement) = partiql::parse_statement(&text) {
            let (table, index) = statement.target();
            line.table = Some(table.to_string());
            line.index = index.map(str::to_string);
        }
        let parameters: Vec<Value> = member(request.parameters).unwrap_or_default();
        let values: Vec<Option<Scalar>> = shape
            .slots
            .iter()
            .map(|slot| match slot {
                partiql::Slot::Literal { kind, text } => Some(self.scalar(kind, text.clone())),
                partiql::Slot::Parameter(number) => {
                    let value = AttributeValue::from_json(parameters.get(*number)?).ok()?;
                    self.text(&value)
                }
            })
            .collect();
        let keys = line
            .table
            .as_ref()
            .and_then(|t| self.tables.get(t))
            .cloned();
        if let Some(keys) = keys {
            let (hash, range) = match &line.index {
                None => (
                    keys.hash.as_ref().map(|(n, _)| n.clone()),
                    keys.range.as_ref().map(|(n, _)| n.clone()),
                ),
                Some(index) => keys.indexes.get(index).cloned().unwrap_or_default(),
            };
            let value_of = |attribute: &Option<String>| {
                let slot = shape.equality_slot(attribute.as_deref()?)?;
                values.get(slot).cloned().flatten()
            };
            if let Some(scalar) = value_of(&hash) {
                line.pk = Some(scalar.value);
                line.pk_type = Some(scalar.kind);
            }
            if let Some(scalar) = value_of(&range) {
                line.sk = Some(scalar.value);
                line.sk_type = Some(scalar.kind);
            }
        }
        for (position, value) in values.into_iter().enumerate().take(VALUES_MAX) {
            if let Some(scalar) = value {
                line.values.insert(format!("?{}", position + 1), scalar);
            }
        }
        line.shape.statement = Some(shape.text);
    }

    /// `pk`, `sk` and the written item's attributes.
    #[allow(clippy::too_many_arguments)]
    fn keys(
        &mut self,
        operation: &str,
        request: &Members<'_>,
        keys: &TableKeys,
        key_condition: &Option<String>,
        names: &BTreeMap<String, String>,
        values: &BTreeMap<String, AttributeValue>,
        line: &mut RequestLine,
    ) {
        let item = match operation {
            "GetItem" | "DeleteItem" | "UpdateItem" => request.key,
            "PutItem" => request.item,
            "Query" => {
                let view = keys.view(line.index.as_deref());
                if let (Some(text), Some(view)) = (key_condition, view) {
                    let names = (!names.is_empty()).then_some(names);
                    let values = (!values.is_empty()).then_some(values);
                    if let Ok(mut context) = Context::new(names, values) {
                        if let Ok(condition) = context.parse_key_condition(text, &view) {
                            if let Some(scalar) = self.text(&condition.hash_value) {
                                line.pk = Some(scalar.value);
                                line.pk_type = Some(scalar.kind);
                            }
                        }
                    }
                }
                None
            }
            _ => None,
        };
        let Some(item) = item.and_then(Attributes::of) else {
            return;
        };
        if let Some(value) = keys.hash.as_ref().and_then(|(name, _)| item.get(name)) {
            if let Some(scalar) = self.text(value) {
                line.pk = Some(scalar.value);
                line.pk_type = Some(scalar.kind);
            }
        }
        if let Some(value) = keys.range.as_ref().and_then(|(name, _)| item.get(name)) {
            if let Some(scalar) = self.text(value) {
                line.sk = Some(scalar.value);
                line.sk_type = Some(scalar.kind);
            }
            let writes = matches!(operation, "PutItem" | "UpdateItem" | "DeleteItem");
            if writes {
                line.sk_time = looks_like_time(value);
                let table = line.table.as_deref().unwrap_or_default();
                // The table's slot is overwritten in place: a table already tracked costs
                // no new name, only the copy of its value.
                let tracked = self.last_sort_key.len();
                match self.last_sort_key.get_mut(table) {
                    Some(previous) => {
                        line.sk_order = Some(order(previous, value).to_string());
                        previous.clone_from(value);
                    }
                    None if tracked < SORT_KEYS_TRACKED_MAX => {
                        self.last_sort_key.insert(table.to_string(), value.clone());
                    }
                    None => {}
                }
            }
        }
        if operation == "PutItem" {
            for (name, value) in &item.decoded {
                line.attributes
                    .insert(name.clone(), type_letter(value).to_string());
                if keys.index_attributes.contains(name) {
                    if let Some(scalar) = self.text(value) {
                        line.index_keys.insert(name.clone(), scalar);
                    }
                }
            }
            line.item_bytes = item.size_bytes();
        }
    }
}

/// A line and the request body written with it.
pub struct Extracted<'a> {
    pub line: RequestLine,
    pub body: Option<&'a [u8]>,
}

/// The request members a line is made from, each left as its JSON text: the body is
/// scanned once, no tree of it is built, and each member is decoded on its own only when
/// needed (one of the wrong type loses that member, not the line).
#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "PascalCase", default)]
struct Members<'a> {
    #[serde(borrow)]
    table_name: Option<&'a RawValue>,
    #[serde(borrow)]
    index_name: Option<&'a RawValue>,
    #[serde(borrow)]
    expression_attribute_names: Option<&'a RawValue>,
    #[serde(borrow)]
    expression_attribute_values: Option<&'a RawValue>,
    #[serde(borrow)]
    key_condition_expression: Option<&'a RawValue>,
    #[serde(borrow)]
    filter_expression: Option<&'a RawValue>,
    #[serde(borrow)]
    condition_expression: Option<&'a RawValue>,
    #[serde(borrow)]
    update_expression: Option<&'a RawValue>,
    #[serde(borrow)]
    projection_expression: Option<&'a RawValue>,
    #[serde(borrow)]
    consistent_read: Option<&'a RawValue>,
    #[serde(borrow)]
    limit: Option<&'a RawValue>,
    #[serde(borrow)]
    scan_index_forward: Option<&'a RawValue>,
    #[serde(borrow)]
    select: Option<&'a RawValue>,
    #[serde(borrow)]
    return_values: Option<&'a RawValue>,
    #[serde(borrow)]
    key: Option<&'a RawValue>,
    #[serde(borrow)]
    item: Option<&'a RawValue>,
    #[serde(borrow)]
    request_items: Option<&'a RawValue>,
    #[serde(borrow)]
    transact_items: Option<&'a RawValue>,
    /// A BatchGetItem table's keys.
    #[serde(borrow)]
    keys: Option<&'a RawValue>,
    #[serde(borrow)]
    statement: Option<&'a RawValue>,
    #[serde(borrow)]
    parameters: Option<&'a RawValue>,
    /// A BatchExecuteStatement's statements.
    #[serde(borrow)]
    statements: Option<&'a RawValue>,
    /// An ExecuteTransaction's statements.
    #[serde(borrow)]
    transact_statements: Option<&'a RawValue>,
}

impl<'a> Members<'a> {
    /// The members of a request body; None when it is no JSON object.
    fn of(body: &'a [u8]) -> Option<Members<'a>> {
        let text = std::str::from_utf8(body).ok()?;
        // A struct also deserialises from an array: only an object is a request.
        if !text.trim_start().starts_with('{') {
            return None;
        }
        serde_json::from_str(text).ok()
    }

    /// The expression parameters, in [`EXPRESSION_PARAMETERS`]' order, with their texts.
    fn expressions(&self) -> [(&'static str, Option<String>); 5] {
        let members = [
            self.key_condition_expression,
            self.filter_expression,
            self.condition_expression,
            self.update_expression,
            self.projection_expression,
        ];
        std::array::from_fn(|i| (EXPRESSION_PARAMETERS[i], member(members[i])))
    }

    /// The parameters kept as sent, in [`KEPT_PARAMETERS`]' order.
    fn kept(&self) -> [(&'static str, Option<&'a RawValue>); 5] {
        let members = [
            self.consistent_read,
            self.limit,
            self.scan_index_forward,
            self.select,
            self.return_values,
        ];
        std::array::from_fn(|i| (KEPT_PARAMETERS[i], members[i]))
    }
}

/// A member decoded as `T`; None when absent, null or of another type.
fn member<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>) -> Option<T> {
    serde_json::from_str(raw?.get()).ok()
}

/// An item's (or a key's) attributes, each decoded once.
struct Attributes {
    decoded: BTreeMap<String, AttributeValue>,
    /// Whether every attribute decoded (an item's size counts them all).
    whole: bool,
}

impl Attributes {
    fn of(raw: &RawValue) -> Option<Attributes> {
        // Nearly every item decodes whole: one pass, and the attribute-by-attribute pass
        // only for one that does not.
        if let Ok(decoded) = serde_json::from_str(raw.get()) {
            return Some(Attributes {
                decoded,
                whole: true,
            });
        }
        let members: BTreeMap<String, &RawValue> = serde_json::from_str(raw.get()).ok()?;
        let count = members.len();
        let decoded: BTreeMap<String, AttributeValue> = members
            .into_iter()
            .filter_map(|(name, raw)| Some((name, serde_json::from_str(raw.get()).ok()?)))
            .collect();
        Some(Attributes {
            whole: decoded.len() == count,
            decoded,
        })
    }

    fn get(&self, name: &str) -> Option<&AttributeValue> {
        self.decoded.get(name)
    }

    /// DynamoDB's size of the item; None when an attribute did not decode.
    fn size_bytes(&self) -> Option<u64> {
        self.whole.then(|| {
            shoal_model::attributes_size_bytes(self.decoded.iter().map(|(n, v)| (n.as_str(), v)))
                as u64
        })
    }
}

/// The table a request names: its `TableName`, or a batch's or transaction's first.
fn table_of(operation: &str, request: &Members<'_>) -> Option<String> {
    if let Some(name) = member(request.table_name) {
        return Some(name);
    }
    match operation {
        "BatchWriteItem" | "BatchGetItem" => {
            member::<BTreeMap<String, &RawValue>>(request.request_items)?
                .into_keys()
                .next()
        }
        "TransactWriteItems" | "TransactGetItems" => {
            member::<Vec<Map<String, Value>>>(request.transact_items)?
                .first()?
                .values()
                .next()?
                .get("TableName")?
                .as_str()
                .map(str::to_string)
        }
        _ => None,
    }
}

/// An expression's shape.
fn shape(text: &Option<String>, names: &BTreeMap<String, String>) -> Option<String> {
    text.as_deref()
        .map(|text| shoal_expr::shape(text, |name| names.get(name).cloned()))
}

/// What a successful call's answer holds: its items, each left as its JSON text.
#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase", default)]
struct Answer<'a> {
    #[serde(borrow)]
    item: Option<&'a RawValue>,
    #[serde(borrow)]
    items: Option<Vec<&'a RawValue>>,
    #[serde(borrow)]
    responses: Option<BTreeMap<String, Vec<&'a RawValue>>>,
}

/// Whether a call's line sizes its returned items from its answer: a read whose handler
/// did not count them. Only then is the answer kept for the writer.
pub fn sizes_from_answer(operation: &str, returned: Option<Returned>) -> bool {
    returned.is_none() && returns_items(operation)
}

/// Whether `operation`'s answer carries the items it read.
fn returns_items(operation: &str) -> bool {
    matches!(operation, "GetItem" | "Query" | "Scan" | "BatchGetItem")
}

/// Sizes of what a successful call returned, read off its answer (for a handler that does
/// not count them).
fn answer_sizes(operation: &str, answer: &[u8], line: &mut RequestLine) {
    if !returns_items(operation) {
        return;
    }
    let Ok(answer) = serde_json::from_slice::<Answer<'_>>(answer) else {
        return;
    };
    let items: Vec<&RawValue> = match operation {
        "GetItem" => answer.item.into_iter().collect(),
        "BatchGetItem" => answer
            .responses
            .into_iter()
            .flatten()
            .flat_map(|(_, items)| items)
            .collect(),
        _ => answer.items.into_iter().flatten().collect(),
    };
    line.items = Some(items.len() as u64);
    line.item_bytes = Some(
        items
            .into_iter()
            .filter_map(|item| Attributes::of(item)?.size_bytes())
            .sum(),
    );
}

/// Items a BatchWriteItem sent.
fn batch_write_count(request: &Members<'_>) -> Option<u64> {
    let count = member::<BTreeMap<String, Vec<&RawValue>>>(request.request_items)?
        .values()
        .map(Vec::len)
        .sum::<usize>();
    Some(count as u64)
}

fn type_letter(value: &AttributeValue) -> &'static str {
    match value {
        AttributeValue::S(_) => "S",
        AttributeValue::N(_) => "N",
        AttributeValue::B(_) => "B",
        AttributeValue::Bool(_) => "BOOL",
        AttributeValue::Null => "NULL",
        AttributeValue::Ss(_) => "SS",
        AttributeValue::Ns(_) => "NS",
        AttributeValue::Bs(_) => "BS",
        AttributeValue::L(_) => "L",
        AttributeValue::M(_) => "M",
    }
}

/// A scalar's type letter and text (binary in base64); None for other values.
fn scalar_text(value: &AttributeValue) -> Option<(&'static str, String)> {
    match value {
        AttributeValue::S(text) => Some(("S", text.clone())),
        AttributeValue::N(number) => Some(("N", number.to_string())),
        AttributeValue::B(bytes) => Some(("B", shoal_model::json::encode_base64(bytes))),
        AttributeValue::Bool(flag) => Some(("BOOL", flag.to_string())),
        _ => None,
    }
}

/// How `value` compares with `previous` in DynamoDB's sort-key order (the expression
/// language's: strings and binary by bytes, numbers as numbers).
fn order(previous: &AttributeValue, value: &AttributeValue) -> &'static str {
    match shoal_expr::compare_scalars(previous, value) {
        Some(std::cmp::Ordering::Less) => "up",
        Some(std::cmp::Ordering::Greater) => "down",
        _ => "same",
    }
}

/// A number of seconds or milliseconds within ten years of now, or text that begins with a
/// `YYYY-MM-DD` date.
fn looks_like_time(value: &AttributeValue) -> bool {
    const TEN_YEARS_SECONDS: f64 = 10.0 * 365.25 * 86_400.0;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    match value {
        AttributeValue::N(number) => number.to_string().parse::<f64>().is_ok_and(|n| {
            (n - now).abs() < TEN_YEARS_SECONDS || (n / 1000.0 - now).abs() < TEN_YEARS_SECONDS
        }),
        AttributeValue::S(text) => {
            let bytes = text.as_bytes();
            bytes.len() >= 10
                && bytes[..4].iter().all(u8::is_ascii_digit)
                && bytes[4] == b'-'
                && bytes[5..7].iter().all(u8::is_ascii_digit)
                && bytes[7] == b'-'
                && bytes[8..10].iter().all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn orders() -> Value {
        json!({
            "TableName": "Orders",
            "AttributeDefinitions": [
                {"AttributeName": "customer", "AttributeType": "S"},
                {"AttributeName": "placed", "AttributeType": "N"},
                {"AttributeName": "status", "AttributeType": "S"}
            ],
            "KeySchema": [
                {"AttributeName": "customer", "KeyType": "HASH"},
                {"AttributeName": "placed", "KeyType": "RANGE"}
            ],
            "GlobalSecondaryIndexes": [{
                "IndexName": "ByStatus",
                "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"}
            }]
        })
    }

    /// An extractor that knows the Orders table.
    fn extractor_of_orders(hash_key: Option<[u8; 32]>) -> Extractor {
        let mut extractor = Extractor::new(hash_key);
        extractor
            .tables
            .insert("Orders".into(), Arc::new(TableKeys::of(&orders())));
        extractor
    }

    fn call<'a>(operation: &'a str, request: &'a [u8], answer: Option<&'a [u8]>) -> Call<'a> {
        Call {
            at_us: 7,
            operation,
            request,
            answer,
            error: None,
            units: Some(1.0),
            returned: None,
            latency_us: 30,
        }
    }

    #[test]
    fn a_put_gives_its_keys_index_keys_size_and_sort_order() {
        let mut extractor = extractor_of_orders(None);
        let put = |placed: u64| {
            json!({"TableName": "Orders", "Item": {
                "customer": {"S": "c#1"}, "placed": {"N": placed.to_string()},
                "status": {"S": "PENDING"}, "note": {"S": "hello"}}})
            .to_string()
        };
        let first = put(10);
        let extracted = extractor.line(&call("PutItem", first.as_bytes(), Some(b"{}")));
        assert_eq!(extracted.body, Some(first.as_bytes()));
        let line = extracted.line;
        assert_eq!(line.table.as_deref(), Some("Orders"));
        assert_eq!(line.pk.as_deref(), Some("c#1"));
        assert_eq!(line.sk.as_deref(), Some("10"));
        assert_eq!(line.sk_type.as_deref(), Some("N"));
        assert_eq!(line.sk_order, None);
        assert_eq!(line.index_keys["status"].value, "PENDING");
        assert_eq!(line.attributes["note"], "S");
        // The model crate's own size of the item.
        let expected = shoal_model::item_size_bytes(
            &shoal_model::item_from_json(&serde_json::from_str::<Value>(&first).unwrap()["Item"])
                .unwrap(),
        );
        assert_eq!(line.item_bytes, Some(expected as u64));
        let second = put(9);
        let line = extractor
            .line(&call("PutItem", second.as_bytes(), None))
            .line;
        assert_eq!(line.sk_order.as_deref(), Some("down"));
        let third = put(11);
        let line = extractor
            .line(&call("PutItem", third.as_bytes(), None))
            .line;
        assert_eq!(line.sk_order.as_deref(), Some("up"));
    }

    #[test]
    fn a_query_gives_its_partition_key_shape_and_returned_sizes() {
        let mut extractor = extractor_of_orders(None);
        let query = json!({"TableName": "Orders", "IndexName": "ByStatus",
            "KeyConditionExpression": "#s = :st",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {":st": {"S": "PENDING"}}})
        .to_string();
        let answer =
            json!({"Items": [{"customer": {"S": "c#1"}}, {"customer": {"S": "c#22"}}], "Count": 2})
                .to_string();
        let line = extractor
            .line(&call("Query", query.as_bytes(), Some(answer.as_bytes())))
            .line;
        assert_eq!(line.index.as_deref(), Some("ByStatus"));
        assert_eq!(line.shape.key_condition.as_deref(), Some("status = ?"));
        assert_eq!(line.pk.as_deref(), Some("PENDING"));
        assert_eq!(line.items, Some(2));
        assert_eq!(line.item_bytes, Some(8 + 3 + 8 + 4));
        assert_eq!(line.values[":st"].value, "PENDING");
    }

    #[test]
    fn hashed_keys_hide_every_value_and_the_body() {
        let mut extractor = extractor_of_orders(Some([7; 32]));
        let get =
            json!({"TableName": "Orders", "Key": {"customer": {"S": "c#1"}, "placed": {"N": "5"}}})
                .to_string();
        let extracted = extractor.line(&call("GetItem", get.as_bytes(), None));
        assert_eq!(extracted.body, None);
        let line = extracted.line;
        let pk = line.pk.clone().unwrap();
        assert!(pk.starts_with('h') && pk.len() == 17, "{pk}");
        assert!(!pk.contains("c#1"));
        let text = serde_json::to_string(&line).unwrap();
        assert!(!text.contains("c#1"), "{text}");
        // The same value hashes the same; another value does not.
        let again = extractor.line(&call("GetItem", get.as_bytes(), None)).line;
        assert_eq!(again.pk, line.pk);
        let other = get.replace("c#1", "c#2");
        assert_ne!(
            extractor
                .line(&call("GetItem", other.as_bytes(), None))
                .line
                .pk,
            line.pk
        );
        // Another recording's key hashes the value differently.
        let mut elsewhere = Extractor::new(Some([8; 32]));
        elsewhere.tables = extractor.tables.clone();
        assert_ne!(
            elsewhere
                .line(&call("GetItem", get.as_bytes(), None))
                .line
                .pk,
            line.pk
        );
    }

    #[test]
    fn a_batch_and_a_transaction_give_each_part_its_keys_shapes_and_sizes() {
        let mut extractor = extractor_of_orders(None);
        let item = |placed: u32| {
            json!({"customer": {"S": "c#1"}, "placed": {"N": placed.to_string()},
                "status": {"S": "NEW"}})
        };
        let transaction = json!({"TransactItems": [
            {"Put": {"TableName": "Orders", "Item": item(1),
                "ConditionExpression": "attribute_not_exists(#c)",
                "ExpressionAttributeNames": {"#c": "customer"}}},
            {"Update": {"TableName": "Orders",
                "Key": {"customer": {"S": "c#2"}, "placed": {"N": "9"}},
                "UpdateExpression": "SET #s = :s", "ExpressionAttributeNames": {"#s": "status"},
                "ExpressionAttributeValues": {":s": {"S": "PAID"}}}},
            {"ConditionCheck": {"TableName": "Orders",
                "Key": {"customer": {"S": "c#3"}, "placed": {"N": "4"}},
                "ConditionExpression": "attribute_exists(placed)"}}
        ]})
        .to_string();
        let line = extractor
            .line(&call(
                "TransactWriteItems",
                transaction.as_bytes(),
                Some(b"{}"),
            ))
            .line;
        let kinds: Vec<&str> = line.parts.iter().map(|p| p.op.as_str()).collect();
        assert_eq!(kinds, ["Put", "Update", "ConditionCheck"]);
        let put = &line.parts[0];
        assert_eq!(put.pk.as_deref(), Some("c#1"));
        assert_eq!(
            put.shape.condition.as_deref(),
            Some("attribute_not_exists(customer)")
        );
        assert_eq!(put.index_keys["status"].value, "NEW");
        assert_eq!(
            put.item_bytes,
            // A one-digit number takes 2 bytes (SPEC §5).
            Some(8 + 3 + 6 + 2 + 6 + 3),
            "the part's own item"
        );
        let update = &line.parts[1];
        assert_eq!(
            (update.pk.as_deref(), update.sk.as_deref()),
            (Some("c#2"), Some("9"))
        );
        assert_eq!(update.shape.update.as_deref(), Some("SET status = ?"));
        assert_eq!(update.values[":s"].value, "PAID");
        // The update went down from the put's sort key; a condition check moves no order.
        assert_eq!(update.sk_order.as_deref(), Some("up"));
        assert_eq!(line.parts[2].sk_order, None);
        // A part line carries no call members: it parses back as written.
        let text = serde_json::to_string(&line).unwrap();
        assert!(!text.contains("\"parts\":[{\"at_us\""), "{text}");

        let batch = json!({"RequestItems": {"Orders": {"Keys": [
            {"customer": {"S": "c#1"}, "placed": {"N": "1"}},
            {"customer": {"S": "c#5"}, "placed": {"N": "2"}}
        ], "ProjectionExpression": "#s", "ExpressionAttributeNames": {"#s": "status"},
            "ConsistentRead": true}}})
        .to_string();
        let line = extractor
            .line(&call("BatchGetItem", batch.as_bytes(), None))
            .line;
        let keys: Vec<_> = line.parts.iter().map(|p| p.pk.as_deref()).collect();
        assert_eq!(keys, [Some("c#1"), Some("c#5")]);
        assert!(line
            .parts
            .iter()
            .all(|p| p.op == "Get" && p.shape.projection.as_deref() == Some("status")));
        assert_eq!(line.parts[0].params["ConsistentRead"], json!(true));
        // The neighbour: a single-item call has no parts.
        let get =
            json!({"TableName": "Orders", "Key": {"customer": {"S": "c#1"}, "placed": {"N": "1"}}})
                .to_string();
        assert!(extractor
            .line(&call("GetItem", get.as_bytes(), None))
            .line
            .parts
            .is_empty());
    }

    #[test]
    fn a_partiql_batch_and_transaction_give_each_statement_as_a_part() {
        let mut extractor = extractor_of_orders(None);
        let batch = json!({"Statements": [
            {"Statement": "SELECT * FROM \"Orders\" WHERE customer = ? AND placed = 3",
             "Parameters": [{"S": "c#1"}], "ConsistentRead": true},
            {"Statement": "SELECT * FROM \"Orders\" WHERE customer = 'c#2' AND placed = ?",
             "Parameters": [{"N": "4"}]}
        ]})
        .to_string();
        let line = extractor
            .line(&call("BatchExecuteStatement", batch.as_bytes(), None))
            .line;
        assert_eq!(line.table.as_deref(), Some("Orders"));
        let shape = "SELECT * FROM \"Orders\" WHERE customer = ? AND placed = ?";
        assert!(line
            .parts
            .iter()
            .all(|p| p.op == "Statement" && p.shape.statement.as_deref() == Some(shape)));
        let keys: Vec<_> = line
            .parts
            .iter()
            .map(|p| (p.pk.as_deref(), p.sk.as_deref()))
            .collect();
        assert_eq!(keys, [(Some("c#1"), Some("3")), (Some("c#2"), Some("4"))]);
        assert_eq!(line.parts[0].params["ConsistentRead"], json!(true));
        assert_eq!(line.parts[1].values["?1"].value, "c#2");
        let transaction = json!({"TransactStatements": [
            {"Statement": "UPDATE \"Orders\" SET status = ? WHERE customer = ? AND placed = ?",
             "Parameters": [{"S": "PAID"}, {"S": "c#9"}, {"N": "1"}]}
        ]})
        .to_string();
        let line = extractor
            .line(&call("ExecuteTransaction", transaction.as_bytes(), None))
            .line;
        assert_eq!(line.parts.len(), 1);
        assert_eq!(line.parts[0].pk.as_deref(), Some("c#9"));
        assert_eq!(line.parts[0].values["?1"].value, "PAID");
        // The neighbour: a single statement is the call itself, with no parts.
        let single = json!({"Statement": "SELECT * FROM \"Orders\" WHERE customer = ?",
            "Parameters": [{"S": "c#1"}]})
        .to_string();
        let line = extractor
            .line(&call("ExecuteStatement", single.as_bytes(), None))
            .line;
        assert!(line.parts.is_empty());
        assert_eq!(line.pk.as_deref(), Some("c#1"));
    }

    #[test]
    fn a_statement_is_grouped_by_its_shape_with_its_values_by_position() {
        let mut extractor = extractor_of_orders(None);
        let with_literal = json!({"Statement":
            "SELECT * FROM \"Orders\" WHERE customer = 'c#7' AND placed = ?",
            "Parameters": [{"N": "12"}]})
        .to_string();
        let line = extractor
            .line(&call("ExecuteStatement", with_literal.as_bytes(), None))
            .line;
        assert_eq!(line.table.as_deref(), Some("Orders"));
        assert_eq!(
            line.shape.statement.as_deref(),
            Some("SELECT * FROM \"Orders\" WHERE customer = ? AND placed = ?")
        );
        assert_eq!(line.values["?1"].value, "c#7");
        assert_eq!(line.values["?2"].value, "12");
        assert_eq!(
            (line.pk.as_deref(), line.sk.as_deref()),
            (Some("c#7"), Some("12"))
        );
        // Hashed, the literal is hidden like any value.
        let mut hashed = Extractor::new(Some([1; 32]));
        hashed.tables = extractor.tables.clone();
        let line = hashed
            .line(&call("ExecuteStatement", with_literal.as_bytes(), None))
            .line;
        let text = serde_json::to_string(&line).unwrap();
        assert!(!text.contains("c#7"), "{text}");
        assert_eq!(line.pk, Some(line.values["?1"].value.clone()));
    }

    #[test]
    fn sort_keys_order_strings_by_bytes_and_numbers_as_numbers() {
        let s = |text: &str| AttributeValue::S(text.into());
        let n = |text: &str| AttributeValue::N(text.parse().unwrap());
        assert_eq!(order(&s("a9"), &s("a10")), "down", "strings by bytes");
        assert_eq!(order(&s("a"), &s("ab")), "up");
        assert_eq!(order(&s("x"), &s("x")), "same");
        // The neighbour: numbers are not compared as their texts.
        assert_eq!(order(&n("9"), &n("10")), "up");
        assert_eq!(order(&n("10"), &n("9")), "down");
        // Binary by its bytes, not by its base64 text ("/w==" sorts before "AA==").
        let b = |bytes: &[u8]| AttributeValue::B(bytes.to_vec());
        assert_eq!(order(&b(&[0x00]), &b(&[0xff])), "up");
    }
}
