//! The parsed form of every expression kind, with placeholders already resolved.
//!
//! Each node keeps the placeholder text it was written with (`#n`, `:v`) next to the resolved
//! name or value, so `Display` prints an expression that parses back to the same tree with the
//! same `ExpressionAttributeNames` / `ExpressionAttributeValues`.

use std::fmt;

use shoal_model::AttributeValue;

/// Deepest document path DynamoDB accepts, counting the top-level attribute.
pub const PATH_DEPTH_MAX: usize = 32;

/// Longest attribute name DynamoDB accepts, in bytes.
pub const ATTRIBUTE_NAME_BYTES_MAX: usize = 65_535;

/// What is wrong with an attribute name (an empty or over-long one), if anything.
pub(crate) fn attribute_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("Empty attribute name")
    } else if name.len() > ATTRIBUTE_NAME_BYTES_MAX {
        Some("Attribute name is too large, must be less than 65536 bytes")
    } else {
        None
    }
}

/// One step of a document path.
#[derive(Debug, Clone, PartialEq)]
pub enum PathElement {
    /// A map key (or, as the first element, a top-level attribute name).
    Attribute {
        name: String,
        /// The `#placeholder` it was written as, if any.
        placeholder: Option<String>,
    },
    /// A list position, `[n]`.
    Index(u32),
}

impl PathElement {
    /// A bare attribute step (no placeholder).
    pub fn attribute(name: impl Into<String>) -> PathElement {
        PathElement::Attribute {
            name: name.into(),
            placeholder: None,
        }
    }

    /// Whether two steps address the same place (placeholders ignored).
    pub fn same_location(&self, other: &PathElement) -> bool {
        match (self, other) {
            (PathElement::Attribute { name: a, .. }, PathElement::Attribute { name: b, .. }) => {
                a == b
            }
            (PathElement::Index(a), PathElement::Index(b)) => a == b,
            _ => false,
        }
    }
}

/// A document path such as `a.b[2].c`. Always starts with an attribute name.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    elements: Vec<PathElement>,
}

impl Path {
    /// A path from its steps; `None` if it is empty or does not start with an attribute.
    pub fn new(elements: Vec<PathElement>) -> Option<Path> {
        match elements.first() {
            Some(PathElement::Attribute { .. }) => Some(Path { elements }),
            _ => None,
        }
    }

    /// A one-step path naming a top-level attribute.
    pub fn top_level(name: impl Into<String>) -> Path {
        Path {
            elements: vec![PathElement::attribute(name)],
        }
    }

    pub fn elements(&self) -> &[PathElement] {
        &self.elements
    }

    /// The top-level attribute the path starts at.
    pub fn top_level_name(&self) -> &str {
        match self.elements.first() {
            Some(PathElement::Attribute { name, .. }) => name,
            // `Path::new` guarantees the first element is an attribute.
            _ => "",
        }
    }

    /// Whether the path goes below the top-level attribute (`a.b`, `a[0]`).
    pub fn is_nested(&self) -> bool {
        self.elements.len() > 1
    }

    /// Whether both paths address the same place (placeholders ignored).
    pub fn same_location(&self, other: &Path) -> bool {
        self.elements.len() == other.elements.len()
            && self
                .elements
                .iter()
                .zip(&other.elements)
                .all(|(a, b)| a.same_location(b))
    }

    /// The path as DynamoDB prints it in messages: `[a, b, [2]]`.
    pub fn to_message_form(&self) -> String {
        let steps: Vec<String> = self
            .elements
            .iter()
            .map(|element| match element {
                PathElement::Attribute { name, .. } => name.clone(),
                PathElement::Index(index) => format!("[{index}]"),
            })
            .collect();
        format!("[{}]", steps.join(", "))
    }

    pub(crate) fn push(&mut self, element: PathElement) {
        self.elements.push(element);
    }

    /// The same path with its last list index replaced (used when `SET a[9]` appends at a
    /// lower position).
    pub(crate) fn with_last_index(&self, index: u32) -> Path {
        let mut elements = self.elements.clone();
        if let Some(last @ PathElement::Index(_)) = elements.last_mut() {
            *last = PathElement::Index(index);
        }
        Path { elements }
    }
}

/// A resolved `:value` placeholder.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueRef {
    pub placeholder: String,
    pub value: AttributeValue,
}

/// An operand of a condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Path(Path),
    Value(ValueRef),
    /// `size(path)` or `size(:value)`: the boxed operand is a path or a value.
    Size(Box<Operand>),
}

/// The six comparators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparator {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Comparator {
    pub fn symbol(self) -> &'static str {
        match self {
            Comparator::Eq => "=",
            Comparator::Ne => "<>",
            Comparator::Lt => "<",
            Comparator::Le => "<=",
            Comparator::Gt => ">",
            Comparator::Ge => ">=",
        }
    }

    /// The comparator with its operands swapped (`:v < a` is `a > :v`).
    pub fn mirrored(self) -> Comparator {
        match self {
            Comparator::Lt => Comparator::Gt,
            Comparator::Le => Comparator::Ge,
            Comparator::Gt => Comparator::Lt,
            Comparator::Ge => Comparator::Le,
            same => same,
        }
    }
}

/// A ConditionExpression / FilterExpression (and, before key-schema checks, a
/// KeyConditionExpression).
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    Compare {
        left: Operand,
        comparator: Comparator,
        right: Operand,
    },
    Between {
        value: Operand,
        low: Operand,
        high: Operand,
    },
    In {
        value: Operand,
        candidates: Vec<Operand>,
    },
    AttributeExists(Path),
    AttributeNotExists(Path),
    /// `attribute_type(path, :t)`; `value` may also be a `:value` (never `size`).
    AttributeType {
        value: Operand,
        type_name: ValueRef,
    },
    BeginsWith {
        value: Operand,
        prefix: Operand,
    },
    Contains {
        container: Operand,
        member: Operand,
    },
    And(Box<Condition>, Box<Condition>),
    Or(Box<Condition>, Box<Condition>),
    Not(Box<Condition>),
}

/// An operand on the right of `SET path =`.
#[derive(Debug, Clone, PartialEq)]
pub enum UpdateOperand {
    Path(Path),
    Value(ValueRef),
    IfNotExists(Path, Box<UpdateOperand>),
    ListAppend(Box<UpdateOperand>, Box<UpdateOperand>),
}

/// The value of one `SET` action.
#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    Operand(UpdateOperand),
    Plus(UpdateOperand, UpdateOperand),
    Minus(UpdateOperand, UpdateOperand),
}

/// One action of an UpdateExpression (or of legacy `AttributeUpdates`).
#[derive(Debug, Clone, PartialEq)]
pub enum UpdateAction {
    Set {
        path: Path,
        value: SetValue,
    },
    Remove {
        path: Path,
    },
    /// `ADD path :v`. `lists_allowed` is only set for legacy `AttributeUpdates`, whose ADD
    /// also appends to lists.
    Add {
        path: Path,
        value: ValueRef,
        lists_allowed: bool,
    },
    /// `DELETE path :set`. `value: None` only comes from legacy `AttributeUpdates` DELETE
    /// without a value, which removes the attribute.
    Delete {
        path: Path,
        value: Option<ValueRef>,
    },
}

impl UpdateAction {
    pub fn path(&self) -> &Path {
        match self {
            UpdateAction::Set { path, .. }
            | UpdateAction::Remove { path }
            | UpdateAction::Add { path, .. }
            | UpdateAction::Delete { path, .. } => path,
        }
    }

    /// The section keyword this action is written under.
    pub fn section(&self) -> &'static str {
        match self {
            UpdateAction::Set { .. } => "SET",
            UpdateAction::Remove { .. } => "REMOVE",
            UpdateAction::Add { .. } => "ADD",
            UpdateAction::Delete { .. } => "DELETE",
        }
    }
}

impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Attribute {
                placeholder: Some(placeholder),
                ..
            } => f.write_str(placeholder),
            PathElement::Attribute { name, .. } => f.write_str(name),
            PathElement::Index(index) => write!(f, "[{index}]"),
        }
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (position, element) in self.elements.iter().enumerate() {
            if position > 0 && matches!(element, PathElement::Attribute { .. }) {
                f.write_str(".")?;
            }
            write!(f, "{element}")?;
        }
        Ok(())
    }
}

impl fmt::Display for ValueRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.placeholder)
    }
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Path(path) => write!(f, "{path}"),
            Operand::Value(value) => write!(f, "{value}"),
            Operand::Size(inner) => write!(f, "size({inner})"),
        }
    }
}

impl Condition {
    /// Binding strength when printing: OR < AND < NOT < everything else.
    fn precedence(&self) -> u8 {
        match self {
            Condition::Or(..) => 0,
            Condition::And(..) => 1,
            Condition::Not(..) => 2,
            _ => 3,
        }
    }
}

fn fmt_grouped(child: &Condition, parenthesize: bool, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    if parenthesize {
        write!(f, "({child})")
    } else {
        write!(f, "{child}")
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Condition::Compare {
                left,
                comparator,
                right,
            } => write!(f, "{left} {} {right}", comparator.symbol()),
            Condition::Between { value, low, high } => {
                write!(f, "{value} BETWEEN {low} AND {high}")
            }
            Condition::In { value, candidates } => {
                write!(f, "{value} IN (")?;
                for (position, candidate) in candidates.iter().enumerate() {
                    if position > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{candidate}")?;
                }
                f.write_str(")")
            }
            Condition::AttributeExists(path) => write!(f, "attribute_exists({path})"),
            Condition::AttributeNotExists(path) => write!(f, "attribute_not_exists({path})"),
            Condition::AttributeType { value, type_name } => {
                write!(f, "attribute_type({value}, {type_name})")
            }
            Condition::BeginsWith { value, prefix } => write!(f, "begins_with({value}, {prefix})"),
            Condition::Contains { container, member } => {
                write!(f, "contains({container}, {member})")
            }
            // Both operators are parsed left-associatively, so a right child of the same
            // strength needs parentheses to keep its grouping.
            Condition::And(left, right) | Condition::Or(left, right) => {
                let own = self.precedence();
                let keyword = if own == 0 { "OR" } else { "AND" };
                fmt_grouped(left, left.precedence() < own, f)?;
                write!(f, " {keyword} ")?;
                fmt_grouped(right, right.precedence() <= own, f)
            }
            Condition::Not(inner) => {
                f.write_str("NOT ")?;
                fmt_grouped(inner, inner.precedence() < 2, f)
            }
        }
    }
}

impl fmt::Display for UpdateOperand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpdateOperand::Path(path) => write!(f, "{path}"),
            UpdateOperand::Value(value) => write!(f, "{value}"),
            UpdateOperand::IfNotExists(path, fallback) => {
                write!(f, "if_not_exists({path}, {fallback})")
            }
            UpdateOperand::ListAppend(first, second) => {
                write!(f, "list_append({first}, {second})")
            }
        }
    }
}

impl fmt::Display for SetValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetValue::Operand(operand) => write!(f, "{operand}"),
            SetValue::Plus(left, right) => write!(f, "{left} + {right}"),
            SetValue::Minus(left, right) => write!(f, "{left} - {right}"),
        }
    }
}

impl fmt::Display for UpdateAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpdateAction::Set { path, value } => write!(f, "{path} = {value}"),
            UpdateAction::Remove { path } => write!(f, "{path}"),
            UpdateAction::Add { path, value, .. } => write!(f, "{path} {value}"),
            UpdateAction::Delete {
                path,
                value: Some(value),
            } => write!(f, "{path} {value}"),
            UpdateAction::Delete { path, value: None } => write!(f, "{path}"),
        }
    }
}

/// Prints update actions grouped into their sections, in order: `SET a = :v, b = :w REMOVE c`.
pub(crate) fn fmt_update_actions(
    actions: &[UpdateAction],
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    let mut previous_section: Option<&str> = None;
    for action in actions {
        let section = action.section();
        if previous_section == Some(section) {
            f.write_str(", ")?;
        } else {
            if previous_section.is_some() {
                f.write_str(" ")?;
            }
            write!(f, "{section} ")?;
        }
        write!(f, "{action}")?;
        previous_section = Some(section);
    }
    Ok(())
}
