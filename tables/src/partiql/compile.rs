//! PartiQL statements compiled onto the operations Shoal already has (SPEC-2 §3.2).
//!
//! A statement becomes the typed input of an item operation with its conditions and actions
//! written in the expression language (`#n0` names, `:v0` values), so indexes, collections,
//! capacity, streams and every validation are those of the operation itself:
//! - SELECT whose WHERE fixes the whole primary key of the table and nothing else: GetItem.
//! - SELECT whose every OR-branch fixes the partition key (`=` or `IN`) of the table or the
//!   named index: one Query per partition value; in a single branch its sort-key condition is
//!   the key condition and its other conditions the filter, in several the whole WHERE is the
//!   filter of each partition's Query. Any other SELECT: a Scan with WHERE as its filter.
//! - INSERT: PutItem conditional on the key not existing (DuplicateItemException if it does).
//! - UPDATE: UpdateItem of the key WHERE fixes, conditional on the item existing and on the
//!   rest of WHERE. DELETE: DeleteItem of that key, conditional on the rest of WHERE.
//! - EXISTS(SELECT …) in a transaction: a ConditionCheck.

use std::collections::{BTreeMap, HashMap};

use shoal_expr::partiql::{
    Action, Delete, Insert, Node, Position, Returning, Select, TypeTest, UpdateStatement,
};
use shoal_expr::{Path, PathElement};
use shoal_model::{encode_key_value, ApiError, AttributeValue, Item};

use crate::api::items::{DeleteItemInput, GetItemInput, PutItemInput, UpdateItemInput};
use crate::api::query::{QueryRequest, ScanRequest};
use crate::core::catalog::{KeySchema, Projection as IndexProjection, TableDef};

/// `Where clause does not contain a mandatory equality on all key attributes`.
pub(crate) const MANDATORY_KEY_MESSAGE: &str =
    "Where clause does not contain a mandatory equality on all key attributes";
/// Most partition-key values one `IN` may list.
pub const PARTITION_IN_VALUES_MAX: usize = 50;

/// Expression text under construction, with the placeholder maps it uses.
pub(crate) struct Writer<'p> {
    parameters: &'p [AttributeValue],
    names: BTreeMap<String, String>,
    placeholder_of_name: HashMap<String, String>,
    values: BTreeMap<String, AttributeValue>,
}

/// The placeholder maps an operation's input takes.
pub(crate) type NameMap = Option<BTreeMap<String, String>>;
pub(crate) type ValueMap = Option<BTreeMap<String, AttributeValue>>;

impl<'p> Writer<'p> {
    pub(crate) fn new(parameters: &'p [AttributeValue]) -> Writer<'p> {
        Writer {
            parameters,
            names: BTreeMap::new(),
            placeholder_of_name: HashMap::new(),
            values: BTreeMap::new(),
        }
    }

    pub(crate) fn into_maps(self) -> (NameMap, ValueMap) {
        let names = (!self.names.is_empty()).then_some(self.names);
        let values = (!self.values.is_empty()).then_some(self.values);
        (names, values)
    }

    fn name(&mut self, name: &str) -> String {
        if let Some(placeholder) = self.placeholder_of_name.get(name) {
            return placeholder.clone();
        }
        let placeholder = format!("#n{}", self.names.len());
        self.names.insert(placeholder.clone(), name.to_string());
        self.placeholder_of_name
            .insert(name.to_string(), placeholder.clone());
        placeholder
    }

    fn value(&mut self, value: AttributeValue) -> String {
        let placeholder = format!(":v{}", self.values.len());
        self.values.insert(placeholder.clone(), value);
        placeholder
    }

    fn path(&mut self, path: &Path) -> String {
        let mut text = String::new();
        for element in path.elements() {
            match element {
                PathElement::Attribute { name, .. } => {
                    if !text.is_empty() {
                        text.push('.');
                    }
                    text.push_str(&self.name(name));
                }
                PathElement::Index(index) => text.push_str(&format!("[{index}]")),
            }
        }
        text
    }

    /// A condition (WHERE, or part of it) as expression text.
    pub(crate) fn condition(&mut self, node: &Node) -> Result<String, ApiError> {
        Ok(match node {
            Node::And(left, right) => {
                format!(
                    "({}) AND ({})",
                    self.condition(left)?,
                    self.condition(right)?
                )
            }
            Node::Or(left, right) => {
                format!(
                    "({}) OR ({})",
                    self.condition(left)?,
                    self.condition(right)?
                )
            }
            Node::Not(inner) => format!("NOT ({})", self.condition(inner)?),
            Node::Binary {
                operator,
                left,
                right,
            } => match (
                boolean_function(left),
                boolean_function(right),
                &**left,
                &**right,
            ) {
                // `attribute_exists(x) = true` and its mirror images.
                (true, _, _, Node::Literal(AttributeValue::Bool(b)))
                | (_, true, Node::Literal(AttributeValue::Bool(b)), _)
                    if matches!(*operator, "=" | "<>") =>
                {
                    let function = if boolean_function(left) { left } else { right };
                    let text = self.condition(function)?;
                    if (*operator == "=") == *b {
                        text
                    } else {
                        format!("NOT ({text})")
                    }
                }
                _ if matches!(*operator, "=" | "<>" | "<" | "<=" | ">" | ">=") => format!(
                    "{} {operator} {}",
                    self.operand(left)?,
                    self.operand(right)?
                ),
                _ => return Err(unsupported_operator(operator)),
            },
            Node::Between {
                operand,
                low,
                high,
                negated,
            } => {
                let text = format!(
                    "{} BETWEEN {} AND {}",
                    self.operand(operand)?,
                    self.operand(low)?,
                    self.operand(high)?
                );
                negate_if(text, *negated)
            }
            Node::In {
                operand,
                values,
                negated,
            } => {
                let operand = self.operand(operand)?;
                let mut listed = Vec::with_capacity(values.len());
                for value in values {
                    listed.push(self.operand(value)?);
                }
                negate_if(format!("{operand} IN ({})", listed.join(", ")), *negated)
            }
            Node::Is {
                operand,
                test,
                negated,
            } => {
                let path = self.document_path(operand, "IS")?;
                let text = match test {
                    TypeTest::Missing => format!("attribute_not_exists({path})"),
                    TypeTest::Null => {
                        let null = self.value(AttributeValue::S("NULL".into()));
                        format!("attribute_type({path}, {null})")
                    }
                    TypeTest::Type(type_name) => {
                        let type_name = self.value(AttributeValue::S((*type_name).into()));
                        format!("attribute_type({path}, {type_name})")
                    }
                };
                negate_if(text, *negated)
            }
            Node::Call {
                name,
                arguments,
                position,
            } => match name.as_str() {
                "attribute_exists" | "attribute_not_exists" => {
                    check_arity(name, arguments, 1)?;
                    let path = self.document_path(&arguments[0], name)?;
                    format!("{name}({path})")
                }
                "begins_with" | "contains" | "attribute_type" => {
                    check_arity(name, arguments, 2)?;
                    let path = self.document_path(&arguments[0], name)?;
                    format!("{name}({path}, {})", self.operand(&arguments[1])?)
                }
                _ => return Err(unrecognized_function(name, *position)),
            },
            Node::Literal(AttributeValue::Bool(true)) => {
                // A constant condition: true of every item.
                let one = self.value(AttributeValue::N(shoal_model::Number::from_i64(1)));
                format!("{one} = {one}")
            }
            _ => {
                return Err(ApiError::validation(
                    "Unsupported operation: the WHERE clause must be a condition",
                ))
            }
        })
    }

    /// An operand of a comparison: a path, `size(path)` or a value.
    fn operand(&mut self, node: &Node) -> Result<String, ApiError> {
        match node {
            Node::Path(path) => Ok(self.path(path)),
            Node::Call {
                name,
                arguments,
                position,
            } if name == "size" => {
                check_arity(name, arguments, 1)?;
                let _ = position;
                let path = self.document_path(&arguments[0], name)?;
                Ok(format!("size({path})"))
            }
            Node::Call { name, position, .. } if !boolean_function(node) => {
                Err(unrecognized_function(name, *position))
            }
            Node::Binary { operator, .. } => Err(unsupported_operator(operator)),
            _ => {
                let value = constant(node, self.parameters)?;
                Ok(self.value(value))
            }
        }
    }

    /// The document path a function or `IS` needs as its operand.
    fn document_path(&mut self, node: &Node, function: &str) -> Result<String, ApiError> {
        match node {
            Node::Path(path) => Ok(self.path(path)),
            _ => Err(ApiError::validation(format!(
                "Operator or function requires a document path; operator or function: {function}"
            ))),
        }
    }

    /// The right side of `SET path = value` as an update expression term, with the clause it
    /// belongs in (`SET`, or `ADD`/`DELETE` for `set_add`/`set_delete`).
    fn assignment(&mut self, path: &Path, value: &Node) -> Result<(Clause, String), ApiError> {
        let target = self.path(path);
        match value {
            Node::Call {
                name,
                arguments,
                position,
            } if name == "set_add" || name == "set_delete" => {
                let upper = name.to_ascii_uppercase();
                if arguments.len() != 2 {
                    return Err(ApiError::validation(format!(
                        "{upper} must have exactly two arguments at 1:{}:{}",
                        position.column, position.length
                    )));
                }
                match &arguments[0] {
                    Node::Path(first) if first == path => {}
                    _ => {
                        return Err(ApiError::validation(format!(
                        "The first argument to {upper} must equal the assignment value at 1:{}:{}",
                        position.column, position.length
                    )))
                    }
                }
                let set = constant(&arguments[1], self.parameters)?;
                if !matches!(
                    set,
                    AttributeValue::Ss(_) | AttributeValue::Ns(_) | AttributeValue::Bs(_)
                ) {
                    return Err(ApiError::validation(format!(
                        "The second argument to {upper} must be a value with type SET at 1:{}:{}",
                        position.column, position.length
                    )));
                }
                let set = self.value(set);
                let clause = if name == "set_add" {
                    Clause::Add
                } else {
                    Clause::Delete
                };
                Ok((clause, format!("{target} {set}")))
            }
            _ => Ok((
                Clause::Set,
                format!("{target} = {}", self.set_value(value)?),
            )),
        }
    }

    /// A value SET assigns: an operand, `a + b`, `a - b`, `list_append(a, b)` or
    /// `if_not_exists(path, v)`.
    fn set_value(&mut self, node: &Node) -> Result<String, ApiError> {
        match node {
            Node::Binary {
                operator: operator @ ("+" | "-"),
                left,
                right,
            } => Ok(format!(
                "{} {operator} {}",
                self.set_term(left)?,
                self.set_term(right)?
            )),
            Node::Binary { operator, .. } => Err(unsupported_operator(operator)),
            _ => self.set_term(node),
        }
    }

    fn set_term(&mut self, node: &Node) -> Result<String, ApiError> {
        match node {
            Node::Path(path) => Ok(self.path(path)),
            Node::Call {
                name,
                arguments,
                position,
            } => match name.as_str() {
                "list_append" | "if_not_exists" => {
                    check_arity(name, arguments, 2)?;
                    Ok(format!(
                        "{name}({}, {})",
                        self.set_term(&arguments[0])?,
                        self.set_term(&arguments[1])?
                    ))
                }
                _ => Err(unrecognized_function(name, *position)),
            },
            Node::Binary { operator, .. } => Err(unsupported_operator(operator)),
            _ => {
                let value = constant(node, self.parameters)?;
                Ok(self.value(value))
            }
        }
    }
}

/// The clauses of an update expression, in the order they are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clause {
    Set,
    Add,
    Delete,
}

fn negate_if(text: String, negated: bool) -> String {
    if negated {
        format!("NOT ({text})")
    } else {
        text
    }
}

/// Functions that are conditions by themselves.
fn boolean_function(node: &Node) -> bool {
    matches!(node, Node::Call { name, .. } if matches!(name.as_str(),
        "attribute_exists" | "attribute_not_exists" | "begins_with" | "contains" | "attribute_type"))
}

fn check_arity(name: &str, arguments: &[Node], count: usize) -> Result<(), ApiError> {
    if arguments.len() == count {
        Ok(())
    } else {
        Err(ApiError::validation(format!(
            "Incorrect number of operands for operator or function; operator or function: {name}, number of operands: {}",
            arguments.len()
        )))
    }
}

fn unrecognized_function(name: &str, position: Position) -> ApiError {
    // PartiQL's aggregates are words DynamoDB's parser knows but never runs: it refuses them
    // as tokens rather than as unknown functions (DynamoDB Local's answer; SPEC-2 gives none).
    if matches!(name, "count" | "sum" | "avg" | "min" | "max") {
        return ApiError::validation(format!(
            "Unsupported token in expression: {name} at 1:{}:{}",
            position.column, position.length
        ));
    }
    ApiError::validation(format!(
        "Unrecognized function: {name} at 1:{}:{}",
        position.column, position.length
    ))
}

fn unsupported_operator(operator: &str) -> ApiError {
    ApiError::validation(format!("Unsupported operator: {operator}"))
}

/// The value of a node that holds no path: a literal, a parameter, or a list, map or set
/// of them.
pub(crate) fn constant(
    node: &Node,
    parameters: &[AttributeValue],
) -> Result<AttributeValue, ApiError> {
    match node {
        Node::Literal(value) => Ok(value.clone()),
        Node::Parameter(index) => parameters
            .get(*index)
            .cloned()
            .ok_or_else(|| ApiError::validation(PARAMETER_COUNT_MESSAGE)),
        Node::List(elements) => Ok(AttributeValue::L(
            elements
                .iter()
                .map(|e| constant(e, parameters))
                .collect::<Result<_, _>>()?,
        )),
        Node::Map(entries) => {
            let mut map = BTreeMap::new();
            for (key, value) in entries {
                map.insert(key.clone(), constant(value, parameters)?);
            }
            Ok(AttributeValue::M(map))
        }
        Node::Bag(members, _) => bag(members, parameters),
        Node::Call { name, position, .. } => Err(ApiError::validation(format!(
            "Unsupported data type: {name} under key root at 1:{}:{}",
            position.column, position.length
        ))),
        _ => Err(ApiError::validation(
            "Unsupported operation: a value must be a literal or a parameter",
        )),
    }
}

/// `<<…>>`: a string, number or binary set.
fn bag(members: &[Node], parameters: &[AttributeValue]) -> Result<AttributeValue, ApiError> {
    if members.is_empty() {
        return Err(ApiError::validation("Empty bags are not supported"));
    }
    let values: Vec<AttributeValue> = members
        .iter()
        .map(|m| constant(m, parameters))
        .collect::<Result<_, _>>()?;
    let duplicates = |texts: Vec<String>| -> Result<(), ApiError> {
        let mut sorted = texts.clone();
        sorted.sort();
        sorted.dedup();
        if sorted.len() == texts.len() {
            Ok(())
        } else {
            Err(ApiError::validation(format!(
                "One or more parameter values were invalid: Input collection [{}] contains duplicates.",
                texts.join(", ")
            )))
        }
    };
    let mixed = || {
        ApiError::validation("Unsupported operation: the members of a set must all be strings, all numbers or all binaries")
    };
    match &values[0] {
        AttributeValue::S(_) => {
            let mut set = Vec::with_capacity(values.len());
            for value in values {
                match value {
                    AttributeValue::S(text) => set.push(text),
                    _ => return Err(mixed()),
                }
            }
            duplicates(set.clone())?;
            Ok(AttributeValue::Ss(set))
        }
        AttributeValue::N(_) => {
            let mut set = Vec::with_capacity(values.len());
            for value in values {
                match value {
                    AttributeValue::N(number) => set.push(number),
                    _ => return Err(mixed()),
                }
            }
            duplicates(set.iter().map(ToString::to_string).collect())?;
            Ok(AttributeValue::Ns(set))
        }
        AttributeValue::B(_) => {
            let mut set = Vec::with_capacity(values.len());
            for value in values {
                match value {
                    AttributeValue::B(bytes) => set.push(bytes),
                    _ => return Err(mixed()),
                }
            }
            duplicates(set.iter().map(|b| format!("{b:?}")).collect())?;
            Ok(AttributeValue::Bs(set))
        }
        _ => Err(mixed()),
    }
}

/// `Number of parameters in request and statement doesn't match.`
pub(crate) const PARAMETER_COUNT_MESSAGE: &str =
    "Number of parameters in request and statement doesn't match.";

/// The AND-ed parts of a condition.
fn conjuncts(node: &Node) -> Vec<&Node> {
    match node {
        Node::And(left, right) => {
            let mut parts = conjuncts(left);
            parts.extend(conjuncts(right));
            parts
        }
        other => vec![other],
    }
}

/// The OR-ed parts of a condition.
fn branches(node: &Node) -> Vec<&Node> {
    match node {
        Node::Or(left, right) => {
            let mut parts = branches(left);
            parts.extend(branches(right));
            parts
        }
        other => vec![other],
    }
}

fn is_attribute(node: &Node, name: &str) -> bool {
    matches!(node, Node::Path(path) if path.elements().len() == 1 && path.top_level_name() == name)
}

fn is_constant(node: &Node) -> bool {
    matches!(
        node,
        Node::Literal(_) | Node::Parameter(_) | Node::List(_) | Node::Map(_) | Node::Bag(..)
    )
}

/// `name = v` or `v = name`: the value.
fn equality_on<'n>(node: &'n Node, name: &str) -> Option<&'n Node> {
    match node {
        Node::Binary {
            operator: "=",
            left,
            right,
        } => {
            if is_attribute(left, name) && is_constant(right) {
                Some(right)
            } else if is_attribute(right, name) && is_constant(left) {
                Some(left)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// A condition on the sort key that a key condition can express: a comparison, BETWEEN or
/// begins_with with the key on one side and values on the other.
fn sort_key_condition(node: &Node, name: &str) -> bool {
    match node {
        Node::Binary {
            operator,
            left,
            right,
        } if matches!(*operator, "=" | "<" | "<=" | ">" | ">=") => {
            (is_attribute(left, name) && is_constant(right))
                || (is_attribute(right, name) && is_constant(left))
        }
        Node::Between {
            operand,
            low,
            high,
            negated: false,
        } => is_attribute(operand, name) && is_constant(low) && is_constant(high),
        Node::Call {
            name: function,
            arguments,
            ..
        } if function == "begins_with" => {
            arguments.len() == 2 && is_attribute(&arguments[0], name) && is_constant(&arguments[1])
        }
        _ => false,
    }
}

/// Whether `node` mentions the top-level attribute `name` anywhere.
fn mentions(node: &Node, name: &str) -> bool {
    match node {
        Node::Path(path) => path.top_level_name() == name,
        Node::And(a, b) | Node::Or(a, b) => mentions(a, name) || mentions(b, name),
        Node::Binary { left, right, .. } => mentions(left, name) || mentions(right, name),
        Node::Not(inner) => mentions(inner, name),
        Node::Between {
            operand, low, high, ..
        } => mentions(operand, name) || mentions(low, name) || mentions(high, name),
        Node::In {
            operand, values, ..
        } => mentions(operand, name) || values.iter().any(|v| mentions(v, name)),
        Node::Is { operand, .. } => mentions(operand, name),
        Node::Call { arguments, .. } => arguments.iter().any(|a| mentions(a, name)),
        Node::List(elements) | Node::Bag(elements, _) => elements.iter().any(|e| mentions(e, name)),
        Node::Map(entries) => entries.iter().any(|(_, v)| mentions(v, name)),
        Node::Literal(_) | Node::Parameter(_) => false,
    }
}

/// One OR-branch of a SELECT's WHERE that fixes the partition key.
struct Branch<'n> {
    partition_values: Vec<&'n Node>,
    sort: Option<&'n Node>,
    rest: Vec<&'n Node>,
    /// The branch says something of the sort key without a key condition (`NOT sk = 1`).
    sort_mentioned_otherwise: bool,
}

/// Splits a branch into partition value(s), sort-key condition and the rest; None if the
/// branch does not fix the partition key.
fn analyse_branch<'n>(branch: &'n Node, key: &KeySchema) -> Option<Branch<'n>> {
    let mut partition_values = None;
    let mut sort = None;
    let mut rest = Vec::new();
    for part in conjuncts(branch) {
        if partition_values.is_none() {
            if let Some(value) = equality_on(part, &key.hash.name) {
                partition_values = Some(vec![value]);
                continue;
            }
            if let Node::In {
                operand,
                values,
                negated: false,
            } = part
            {
                if is_attribute(operand, &key.hash.name) && values.iter().all(is_constant) {
                    partition_values = Some(values.iter().collect());
                    continue;
                }
            }
        }
        if let Some(range) = &key.range {
            if sort.is_none() && sort_key_condition(part, &range.name) {
                sort = Some(part);
                continue;
            }
        }
        rest.push(part);
    }
    let sort_mentioned_otherwise = key
        .range
        .as_ref()
        .is_some_and(|range| rest.iter().any(|part| mentions(part, &range.name)));
    Some(Branch {
        partition_values: partition_values?,
        sort,
        rest,
        sort_mentioned_otherwise,
    })
}

/// What a compiled SELECT runs.
pub(crate) enum SelectPlan {
    Get(GetItemInput),
    /// Queries in the order their results are returned.
    Queries(Vec<QueryUnit>),
    Scan(Box<ScanRequest>),
}

/// A SELECT's plan and what to do with the items it returns.
pub(crate) struct CompiledSelect {
    pub plan: SelectPlan,
    /// The projected paths (None for `*`); each is returned under its last name.
    pub projection: Option<Vec<Path>>,
}

/// PartiQL reads no index with a multi-attribute key (SPEC-3 §1.5): refused after the
/// statement parsed and before any rule of its WHERE clause, and before a function in its
/// projection (`COUNT(*)`), which is refused next.
pub(crate) fn refuse_unreadable_select(select: &Select, table: &TableDef) -> Result<(), ApiError> {
    let multi = select
        .target
        .index
        .as_deref()
        .and_then(|name| table.global_index(name))
        .is_some_and(|gsi| gsi.key.is_multi_attribute());
    if multi {
        return Err(ApiError::validation(
            "PartiQL statements cannot be executed on tables with multi-attribute HASH keys or multi-attribute RANGE keys.",
        ));
    }
    select.refuse_function_in_projection()
}

/// The key schema a SELECT reads by: the table's, or its named index's (with the index's
/// projection).
fn read_schema<'t>(
    table: &'t TableDef,
    index: Option<&str>,
) -> Result<(&'t KeySchema, Option<&'t IndexProjection>, bool), ApiError> {
    let Some(index) = index else {
        return Ok((&table.key, None, false));
    };
    if let Some(lsi) = table.local_indexes.iter().find(|i| i.name == index) {
        return Ok((&lsi.key, Some(&lsi.projection), false));
    }
    if let Some(gsi) = table.global_indexes.iter().find(|i| i.name == index) {
        return Ok((&gsi.key, Some(&gsi.projection), true));
    }
    Err(crate::query_scan::paging::no_such_index(index))
}

/// Compiles a SELECT against `table`.
pub(crate) fn compile_select(
    select: &Select,
    table: &TableDef,
    parameters: &[AttributeValue],
    consistent_read: Option<bool>,
) -> Result<CompiledSelect, ApiError> {
    refuse_unreadable_select(select, table)?;
    let index = select.target.index.as_deref();
    let (key, index_projection, global) = read_schema(table, index)?;
    if let (true, Some(projection), Some(paths)) = (global, index_projection, &select.projection) {
        check_global_projection(index.unwrap_or_default(), table, key, projection, paths)?;
    }
    let mut order_descending = None;
    for term in &select.order_by {
        let sort_name = key.range.as_ref().map(|r| r.name.as_str());
        if Some(term.path.top_level_name()) != sort_name || term.path.elements().len() != 1 {
            return Err(ApiError::validation(format!(
                "ORDER BY is only supported on the sort key of the table or index; {} is not its sort key",
                term.path.top_level_name()
            )));
        }
        order_descending = Some(term.descending);
    }
    let analysed: Option<Vec<Branch>> = select.condition.as_ref().and_then(|condition| {
        branches(condition)
            .into_iter()
            .map(|b| analyse_branch(b, key))
            .collect()
    });
    let projection_text =
        |writer: &mut Writer| top_level_projection(writer, select.projection.as_deref());
    let Some(analysed) = analysed else {
        // No branch list that fixes the partition key: a Scan.
        if !select.order_by.is_empty() {
            return Err(ApiError::validation(
                "ORDER BY is only supported when the WHERE clause fixes the partition key",
            ));
        }
        let mut writer = Writer::new(parameters);
        let filter = select
            .condition
            .as_ref()
            .map(|c| writer.condition(c))
            .transpose()?;
        let projection_expression = projection_text(&mut writer);
        let (names, values) = writer.into_maps();
        return Ok(CompiledSelect {
            plan: SelectPlan::Scan(Box::new(ScanRequest {
                table_name: Some(table.name.clone()),
                index_name: select.target.index.clone(),
                consistent_read,
                filter_expression: filter,
                projection_expression,
                expression_attribute_names: names,
                expression_attribute_values: values,
                ..ScanRequest::default()
            })),
            projection: select.projection.clone(),
        });
    };
    check_overlap(&analysed, key, parameters)?;
    // A whole-key lookup of the table with nothing else to check: GetItem.
    if let [branch] = analysed.as_slice() {
        let whole_key = branch.partition_values.len() == 1
            && branch.rest.is_empty()
            && index.is_none()
            && match (&key.range, branch.sort) {
                (None, None) => true,
                (Some(range), Some(sort)) => equality_on(sort, &range.name).is_some(),
                _ => false,
            };
        if whole_key {
            let mut item_key = Item::new();
            item_key.insert(
                key.hash.name.clone(),
                constant(branch.partition_values[0], parameters)?,
            );
            if let (Some(range), Some(sort)) = (&key.range, branch.sort) {
                if let Some(value) = equality_on(sort, &range.name) {
                    item_key.insert(range.name.clone(), constant(value, parameters)?);
                }
            }
            let mut writer = Writer::new(parameters);
            let projection_expression = projection_text(&mut writer);
            let (names, _) = writer.into_maps();
            return Ok(CompiledSelect {
                plan: SelectPlan::Get(GetItemInput {
                    table_name: Some(table.name.clone()),
                    key: Some(item_key),
                    consistent_read,
                    projection_expression,
                    expression_attribute_names: names,
                    ..GetItemInput::default()
                }),
                projection: select.projection.clone(),
            });
        }
    }
    let whole_filter = select.condition.as_ref();
    let mut partitions: Vec<(AttributeValue, usize, &Branch)> = Vec::new();
    for branch in &analysed {
        if branch.partition_values.len() > PARTITION_IN_VALUES_MAX {
            return Err(ApiError::validation(format!(
                "IN operator on a partition key supports at most {PARTITION_IN_VALUES_MAX} values"
            )));
        }
        for value in &branch.partition_values {
            let value = constant(value, parameters)?;
            match partitions.iter_mut().find(|(v, _, _)| *v == value) {
                Some(entry) => entry.1 += 1,
                None => partitions.push((value, 1, branch)),
            }
        }
    }
    let single_branch = analysed.len() == 1;
    let local = index.is_some() && !global;
    let mut queries = Vec::with_capacity(partitions.len());
    for (value, uses, branch) in partitions {
        let mut writer = Writer::new(parameters);
        let hash = writer.name(&key.hash.name);
        let hash_value = writer.value(value);
        let mut key_condition = format!("{hash} = {hash_value}");
        // One branch for this partition: its own sort-key condition and filter. Several:
        // the whole WHERE filters the partition (the overlap check above makes that exact).
        let own = single_branch || uses == 1;
        let filter_parts: Vec<&Node> = if own {
            if let (Some(sort), Some(range)) = (branch.sort, &key.range) {
                key_condition.push_str(" AND ");
                key_condition.push_str(&writer.sort_condition(sort, &range.name)?);
            }
            branch.rest.clone()
        } else {
            whole_filter.into_iter().collect()
        };
        // A Query's filter may not read the key it queries by (`sk <> 'a'`, a whole WHERE
        // with the partition key): such a filter is applied to the Query's items instead,
        // which keeps the items, their order and the capacity the same.
        let reads_key = filter_parts
            .iter()
            .any(|part| key.names().any(|name| mentions(part, name)));
        let mut post_filter = None;
        let mut filter = None;
        if reads_key {
            let mut filter_writer = Writer::new(parameters);
            let text = and_all(&mut filter_writer, &filter_parts, None)?.unwrap_or_default();
            let (names, values) = filter_writer.into_maps();
            post_filter = Some(PostFilter {
                text,
                names,
                values,
            });
        } else {
            filter = and_all(&mut writer, &filter_parts, None)?;
        }
        // A filter applied here reads whole items; so does a projection through an LSI,
        // which fetches from the table what the index does not hold.
        let select_all = local && (post_filter.is_some() || select.projection.is_some());
        let projection_expression = match post_filter {
            None if !select_all => top_level_projection(&mut writer, select.projection.as_deref()),
            _ => None,
        };
        let (names, values) = writer.into_maps();
        queries.push(QueryUnit {
            request: QueryRequest {
                table_name: Some(table.name.clone()),
                index_name: select.target.index.clone(),
                consistent_read,
                scan_index_forward: order_descending.map(|descending| !descending),
                key_condition_expression: Some(key_condition),
                filter_expression: filter,
                projection_expression,
                select: select_all.then(|| "ALL_ATTRIBUTES".to_string()),
                expression_attribute_names: names,
                expression_attribute_values: values,
                ..QueryRequest::default()
            },
            post_filter,
        });
    }
    Ok(CompiledSelect {
        plan: SelectPlan::Queries(queries),
        projection: select.projection.clone(),
    })
}

/// The top-level attributes a SELECT's paths start at, as a ProjectionExpression: the
/// operation fetches them (and charges as it always does), the SELECT then picks its paths.
fn top_level_projection(writer: &mut Writer, paths: Option<&[Path]>) -> Option<String> {
    let paths = paths?;
    let mut names: Vec<&str> = Vec::with_capacity(paths.len());
    for path in paths {
        if !names.contains(&path.top_level_name()) {
            names.push(path.top_level_name());
        }
    }
    Some(
        names
            .into_iter()
            .map(|name| writer.name(name))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// A filter the Query cannot take, applied to its items: expression text with its maps.
pub(crate) struct PostFilter {
    pub text: String,
    pub names: NameMap,
    pub values: ValueMap,
}

/// One Query of a SELECT.
pub(crate) struct QueryUnit {
    pub request: QueryRequest,
    pub post_filter: Option<PostFilter>,
}

impl Writer<'_> {
    /// A sort-key condition as key-condition text, the key on the left.
    fn sort_condition(&mut self, node: &Node, name: &str) -> Result<String, ApiError> {
        match node {
            Node::Binary {
                operator,
                left,
                right,
            } if is_attribute(right, name) && !is_attribute(left, name) => {
                let flipped = mirrored(operator);
                Ok(format!(
                    "{} {flipped} {}",
                    self.operand(right)?,
                    self.operand(left)?
                ))
            }
            _ => self.condition(node),
        }
    }
}

/// A comparison with its operands swapped: `5 < sk` is `sk > 5`.
fn mirrored(operator: &'static str) -> &'static str {
    match operator {
        "<" => ">",
        "<=" => ">=",
        ">" => "<",
        ">=" => "<=",
        other => other,
    }
}

/// OR-branches that read overlapping sort-key ranges of one partition (SPEC-2 §3.2).
fn check_overlap(
    branches: &[Branch],
    key: &KeySchema,
    parameters: &[AttributeValue],
) -> Result<(), ApiError> {
    let Some(range) = &key.range else {
        return Ok(());
    };
    if branches.len() < 2 {
        return Ok(());
    }
    let mut ranges: Vec<(AttributeValue, Option<SortRange>, bool)> = Vec::new();
    for branch in branches {
        let sort_range = branch
            .sort
            .map(|sort| sort_range(sort, &range.name, parameters))
            .transpose()?;
        for value in &branch.partition_values {
            let value = constant(value, parameters)?;
            for (other_value, other_range, other_mentioned) in &ranges {
                if *other_value != value {
                    continue;
                }
                let overlap = match (&sort_range, other_range) {
                    (Some(a), Some(b)) => a.overlaps(b),
                    // A branch with no word on the sort key reads the whole partition, which
                    // overlaps any range; one whose sort-key conditions are all negated reads
                    // it too, and DynamoDB returns the union.
                    (Some(_), None) => !other_mentioned,
                    (None, Some(_)) => !branch.sort_mentioned_otherwise,
                    (None, None) => false,
                };
                if overlap {
                    return Err(ApiError::validation(
                        "Overlapping conditions with range keys are not supported in where clause",
                    ));
                }
            }
            ranges.push((value, sort_range.clone(), branch.sort_mentioned_otherwise));
        }
    }
    Ok(())
}

/// The sort-key interval a key condition reads, as order-preserving key bytes; None bounds
/// are open ends.
#[derive(Debug, Clone)]
struct SortRange {
    low: Option<(Vec<u8>, bool)>,
    high: Option<(Vec<u8>, bool)>,
}

impl SortRange {
    fn overlaps(&self, other: &SortRange) -> bool {
        let below =
            |high: &Option<(Vec<u8>, bool)>, low: &Option<(Vec<u8>, bool)>| match (high, low) {
                (Some((h, h_in)), Some((l, l_in))) => h < l || (h == l && !(*h_in && *l_in)),
                _ => false,
            };
        !(below(&self.high, &other.low) || below(&other.high, &self.low))
    }
}

fn key_bytes(node: &Node, parameters: &[AttributeValue]) -> Result<Vec<u8>, ApiError> {
    let value = constant(node, parameters)?;
    let mut bytes = Vec::new();
    // A value that is not S, N or B cannot be a key: the Query refuses it with its own text.
    let _ = encode_key_value(&value, &mut bytes);
    Ok(bytes)
}

fn sort_range(
    node: &Node,
    name: &str,
    parameters: &[AttributeValue],
) -> Result<SortRange, ApiError> {
    Ok(match node {
        Node::Binary {
            operator,
            left,
            right,
        } => {
            let (operator, value) = if is_attribute(left, name) {
                (*operator, right)
            } else {
                let flipped = mirrored(operator);
                (flipped, left)
            };
            let bytes = key_bytes(value, parameters)?;
            match operator {
                "=" => SortRange {
                    low: Some((bytes.clone(), true)),
                    high: Some((bytes, true)),
                },
                "<" | "<=" => SortRange {
                    low: None,
                    high: Some((bytes, operator == "<=")),
                },
                _ => SortRange {
                    low: Some((bytes, operator == ">=")),
                    high: None,
                },
            }
        }
        Node::Between { low, high, .. } => SortRange {
            low: Some((key_bytes(low, parameters)?, true)),
            high: Some((key_bytes(high, parameters)?, true)),
        },
        Node::Call { arguments, .. } => {
            // begins_with(sk, p): from p up to the first value past every p-prefixed one.
            let prefix = constant(&arguments[1], parameters)?;
            let mut low = Vec::new();
            let _ = encode_key_value(&prefix, &mut low);
            let high = successor(&prefix).map(|next| {
                let mut bytes = Vec::new();
                let _ = encode_key_value(&next, &mut bytes);
                (bytes, false)
            });
            SortRange {
                low: Some((low, true)),
                high,
            }
        }
        _ => SortRange {
            low: None,
            high: None,
        },
    })
}

/// The least string (or binary) greater than every one starting with `prefix`.
fn successor(prefix: &AttributeValue) -> Option<AttributeValue> {
    match prefix {
        AttributeValue::S(text) => {
            let mut chars: Vec<char> = text.chars().collect();
            while let Some(last) = chars.pop() {
                let next = (u32::from(last) + 1..=0x10FFFF).find_map(char::from_u32);
                if let Some(next) = next {
                    chars.push(next);
                    return Some(AttributeValue::S(chars.into_iter().collect()));
                }
            }
            None
        }
        AttributeValue::B(bytes) => {
            let mut bytes = bytes.clone();
            while let Some(last) = bytes.pop() {
                if last < u8::MAX {
                    bytes.push(last + 1);
                    return Some(AttributeValue::B(bytes));
                }
            }
            None
        }
        _ => None,
    }
}

/// A GSI SELECT naming attributes the index does not hold (SPEC-2 §3.1).
fn check_global_projection(
    index: &str,
    table: &TableDef,
    index_key: &KeySchema,
    projection: &IndexProjection,
    paths: &[Path],
) -> Result<(), ApiError> {
    let held = |name: &str| {
        index_key.names().any(|n| n == name)
            || table.key.names().any(|n| n == name)
            || match projection {
                IndexProjection::All => true,
                IndexProjection::KeysOnly => false,
                IndexProjection::Include(names) => names.iter().any(|n| n == name),
            }
    };
    let mut missing: Vec<&str> = Vec::new();
    for path in paths {
        let name = path.top_level_name();
        if !held(name) && !missing.contains(&name) {
            missing.push(name);
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(ApiError::validation(format!(
            "One or more parameter values were invalid: Global secondary index {index} does not project [{}]",
            missing.join(", ")
        )))
    }
}

/// The primary key an UPDATE, DELETE or EXISTS fixes with equalities, and the rest of its
/// WHERE as a condition (None when nothing is left).
pub(crate) fn key_and_condition<'n>(
    condition: Option<&'n Node>,
    table: &TableDef,
    parameters: &[AttributeValue],
) -> Result<(Item, Vec<&'n Node>), ApiError> {
    let condition = condition.ok_or_else(|| ApiError::validation(MANDATORY_KEY_MESSAGE))?;
    if matches!(condition, Node::Or(..)) {
        return Err(ApiError::validation(MANDATORY_KEY_MESSAGE));
    }
    let mut key = Item::new();
    let mut rest = Vec::new();
    for part in conjuncts(condition) {
        let fixed = table
            .key
            .names()
            .find(|name| !key.contains_key(*name) && equality_on(part, name).is_some());
        match fixed {
            Some(name) => {
                let value = equality_on(part, name).map(|v| constant(v, parameters));
                if let Some(value) = value {
                    key.insert(name.to_string(), value?);
                }
            }
            None => rest.push(part),
        }
    }
    if table.key.names().any(|name| !key.contains_key(name)) {
        return Err(ApiError::validation(MANDATORY_KEY_MESSAGE));
    }
    Ok((key, rest))
}

/// Conditions AND-ed as one expression (None when there are none).
fn and_all(
    writer: &mut Writer,
    parts: &[&Node],
    also: Option<String>,
) -> Result<Option<String>, ApiError> {
    let mut texts = Vec::with_capacity(parts.len() + 1);
    if let Some(also) = also {
        texts.push(also);
    }
    for part in parts {
        texts.push(format!("({})", writer.condition(part)?));
    }
    Ok((!texts.is_empty()).then(|| texts.join(" AND ")))
}

/// INSERT: a PutItem that refuses an existing key.
pub(crate) fn compile_insert(
    insert: &Insert,
    table: &TableDef,
    parameters: &[AttributeValue],
) -> Result<PutItemInput, ApiError> {
    let AttributeValue::M(item) = constant(&insert.item, parameters)? else {
        return Err(ApiError::validation(
            "Unsupported operation: INSERT needs a map of attribute values after VALUE",
        ));
    };
    let mut writer = Writer::new(parameters);
    let hash = writer.name(&table.key.hash.name);
    let condition = format!("attribute_not_exists({hash})");
    let (names, values) = writer.into_maps();
    Ok(PutItemInput {
        table_name: Some(table.name.clone()),
        item: Some(item),
        condition_expression: Some(condition),
        expression_attribute_names: names,
        expression_attribute_values: values,
        ..PutItemInput::default()
    })
}

/// UPDATE: an UpdateItem of an existing item.
pub(crate) fn compile_update(
    update: &UpdateStatement,
    table: &TableDef,
    parameters: &[AttributeValue],
) -> Result<UpdateItemInput, ApiError> {
    let (key, rest) = key_and_condition(update.condition.as_ref(), table, parameters)?;
    let mut writer = Writer::new(parameters);
    let mut clauses: Vec<(Clause, Vec<String>)> = Vec::new();
    let mut removes = Vec::new();
    for action in &update.actions {
        match action {
            Action::Set(path, value) => {
                let (clause, text) = writer.assignment(path, value)?;
                match clauses.iter_mut().find(|(c, _)| *c == clause) {
                    Some((_, texts)) => texts.push(text),
                    None => clauses.push((clause, vec![text])),
                }
            }
            Action::Remove(path) => removes.push(writer.path(path)),
        }
    }
    let mut expression = Vec::new();
    for (clause, texts) in clauses {
        let keyword = match clause {
            Clause::Set => "SET",
            Clause::Add => "ADD",
            Clause::Delete => "DELETE",
        };
        expression.push(format!("{keyword} {}", texts.join(", ")));
    }
    if !removes.is_empty() {
        expression.push(format!("REMOVE {}", removes.join(", ")));
    }
    let hash = writer.name(&table.key.hash.name);
    // No upsert: an UPDATE of a missing item fails its condition (SPEC-2 §3.2).
    let condition = and_all(
        &mut writer,
        &rest,
        Some(format!("attribute_exists({hash})")),
    )?;
    let (names, values) = writer.into_maps();
    Ok(UpdateItemInput {
        table_name: Some(table.name.clone()),
        key: Some(key),
        update_expression: Some(expression.join(" ")),
        condition_expression: condition,
        expression_attribute_names: names,
        expression_attribute_values: values,
        return_values: update.returning.map(|r| returning_name(r).to_string()),
        ..UpdateItemInput::default()
    })
}

/// DELETE: a DeleteItem (a missing item is no error).
pub(crate) fn compile_delete(
    delete: &Delete,
    table: &TableDef,
    parameters: &[AttributeValue],
) -> Result<DeleteItemInput, ApiError> {
    let (key, rest) = key_and_condition(delete.condition.as_ref(), table, parameters)?;
    let return_values = match delete.returning {
        None => None,
        Some(Returning::AllOld) => Some("ALL_OLD".to_string()),
        Some(_) => {
            return Err(ApiError::validation(
                "DELETE supports only RETURNING ALL OLD *",
            ))
        }
    };
    let mut writer = Writer::new(parameters);
    let condition = and_all(&mut writer, &rest, None)?;
    let (names, values) = writer.into_maps();
    Ok(DeleteItemInput {
        table_name: Some(table.name.clone()),
        key: Some(key),
        condition_expression: condition,
        expression_attribute_names: names,
        expression_attribute_values: values,
        return_values,
        ..DeleteItemInput::default()
    })
}

/// EXISTS(SELECT …): the key and a condition the item must exist and meet.
pub(crate) fn compile_exists(
    select: &Select,
    table: &TableDef,
    parameters: &[AttributeValue],
) -> Result<(Item, String, NameMap, ValueMap), ApiError> {
    select.refuse_function_in_projection()?;
    let (key, rest) = key_and_condition(select.condition.as_ref(), table, parameters)?;
    if rest.is_empty() || select.target.index.is_some() {
        return Err(ApiError::validation(
            "EXISTS() must contain a single item read with additional condition",
        ));
    }
    let mut writer = Writer::new(parameters);
    let hash = writer.name(&table.key.hash.name);
    let condition = and_all(
        &mut writer,
        &rest,
        Some(format!("attribute_exists({hash})")),
    )?
    .unwrap_or_default();
    let (names, values) = writer.into_maps();
    Ok((key, condition, names, values))
}

fn returning_name(returning: Returning) -> &'static str {
    match returning {
        Returning::AllOld => "ALL_OLD",
        Returning::ModifiedOld => "UPDATED_OLD",
        Returning::AllNew => "ALL_NEW",
        Returning::ModifiedNew => "UPDATED_NEW",
    }
}

/// An item as a SELECT with a projection returns it: each projected path's value under the
/// path's last name (`SELECT m.nested` gives `{"nested": …}`, SPEC-2 §3.1).
pub(crate) fn project(item: Item, projection: Option<&[Path]>) -> Item {
    let Some(paths) = projection else {
        return item;
    };
    let mut projected = Item::new();
    for path in paths {
        if let Some(value) = shoal_expr::resolve(&item, path) {
            let name = path
                .elements()
                .iter()
                .rev()
                .find_map(|e| match e {
                    PathElement::Attribute { name, .. } => Some(name.clone()),
                    PathElement::Index(_) => None,
                })
                .unwrap_or_default();
            projected.insert(name, value.clone());
        }
    }
    projected
}
