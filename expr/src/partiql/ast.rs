//! The parsed form of a PartiQL statement.
//!
//! Conditions and values share one tree, [`Node`], as in PartiQL itself (`(a = 1)` and
//! `(a + 1)` start alike); what may stand where is checked when a statement is compiled onto
//! DynamoDB's operations, which is also where parameters are bound.

use shoal_model::{ApiError, AttributeValue};

use crate::ast::Path;

/// One statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    Select(Select),
    Insert(Insert),
    Update(UpdateStatement),
    Delete(Delete),
    /// `EXISTS(SELECT …)`: a condition check, only inside ExecuteTransaction.
    Exists(Select),
}

impl Statement {
    /// The table the statement reads or writes, and the index a SELECT reads through.
    pub fn target(&self) -> (&str, Option<&str>) {
        match self {
            Statement::Select(select) | Statement::Exists(select) => {
                (&select.target.table, select.target.index.as_deref())
            }
            Statement::Insert(insert) => (&insert.table, None),
            Statement::Update(update) => (&update.table, None),
            Statement::Delete(delete) => (&delete.table, None),
        }
    }
}

/// A table, or an index of it (`"T"."Idx"`).
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub table: String,
    pub index: Option<String>,
}

/// `SELECT proj FROM target [WHERE cond] [ORDER BY …]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    /// None for `*`.
    pub projection: Option<Vec<Path>>,
    pub target: Target,
    pub condition: Option<Node>,
    pub order_by: Vec<OrderBy>,
    /// The first function call in the projection (`SELECT COUNT(*) FROM t`), which
    /// `projection` leaves out: the statement parses, and is refused by
    /// [`Select::refuse_function_in_projection`] once the table has been read.
    pub function_in_projection: Option<Position>,
}

impl Select {
    /// SPEC-2 §3.3's refusal of a function in a projection (an aggregate such as `COUNT(*)`
    /// included), at the function name's position. DynamoDB reports it after what the
    /// table decides first: a missing table, an index with a multi-attribute key (SPEC-3
    /// §1.5).
    pub fn refuse_function_in_projection(&self) -> Result<(), ApiError> {
        match self.function_in_projection {
            Some(at) => Err(ApiError::validation(format!(
                "Unexpected path component at 1:{}:{}",
                at.column, at.length
            ))),
            None => Ok(()),
        }
    }
}

/// One `ORDER BY` term.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderBy {
    pub path: Path,
    pub descending: bool,
}

/// `INSERT INTO table VALUE {…}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Insert {
    pub table: String,
    /// A `Node::Map` literal (possibly holding parameters).
    pub item: Node,
}

/// `UPDATE table SET … REMOVE … WHERE cond [RETURNING …]`.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateStatement {
    pub table: String,
    pub actions: Vec<Action>,
    /// None when the statement has no WHERE (refused when compiled: the key is mandatory).
    pub condition: Option<Node>,
    pub returning: Option<Returning>,
}

/// One action of an UPDATE, in written order.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Set(Path, Node),
    Remove(Path),
}

/// `DELETE FROM table WHERE cond [RETURNING ALL OLD *]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Delete {
    pub table: String,
    pub condition: Option<Node>,
    pub returning: Option<Returning>,
}

/// `RETURNING (ALL|MODIFIED) (OLD|NEW) *`: UpdateItem's ReturnValues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Returning {
    AllOld,
    ModifiedOld,
    AllNew,
    ModifiedNew,
}

/// Where a token sat, for DynamoDB's `at 1:<column>:<length>` texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub column: usize,
    pub length: usize,
}

/// What `IS [NOT] …` tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeTest {
    Missing,
    Null,
    /// A DynamoDB type name (`S`, `N`, `BOOL`, `L`, `M`, `B`, …) a PartiQL type maps to.
    Type(&'static str),
}

/// An expression: a value or a condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Literal(AttributeValue),
    /// The n-th `?` (0-based), bound from the request's `Parameters`.
    Parameter(usize),
    Path(Path),
    List(Vec<Node>),
    Map(Vec<(String, Node)>),
    /// `<<…>>`: a set literal.
    Bag(Vec<Node>, Position),
    /// A function call; `name` is lower case.
    Call {
        name: String,
        arguments: Vec<Node>,
        position: Position,
    },
    /// `=`, `<>`, `<`, `<=`, `>`, `>=`, `+`, `-` (and operators DynamoDB refuses, kept so the
    /// refusal can name them).
    Binary {
        operator: &'static str,
        left: Box<Node>,
        right: Box<Node>,
    },
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Not(Box<Node>),
    Between {
        operand: Box<Node>,
        low: Box<Node>,
        high: Box<Node>,
        negated: bool,
    },
    In {
        operand: Box<Node>,
        values: Vec<Node>,
        negated: bool,
    },
    Is {
        operand: Box<Node>,
        test: TypeTest,
        negated: bool,
    },
}
