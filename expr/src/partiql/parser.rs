//! A recursive-descent parser for DynamoDB's PartiQL subset (SPEC-2 §3.2), with DynamoDB's
//! texts for what it refuses (SPEC-2 §3.3).
//!
//! Precedence, loosest first: `OR`, `AND`, `NOT`, the predicates (comparisons, `BETWEEN`,
//! `IN`, `IS`), `+`/`-`, then terms. Nesting is bounded ([`NESTING_DEPTH_MAX`]) so no input
//! can exhaust the stack.

use shoal_model::{ApiError, AttributeValue, Number};

use super::ast::{
    Action, Delete, Insert, Node, OrderBy, Position, Returning, Select, Statement, Target,
    TypeTest, UpdateStatement,
};
use super::lexer::{tokenize, Token, TokenKind};
use super::not_well_formed;
use crate::ast::{Path, PathElement};

/// Deepest nesting of parentheses, lists, maps and operators the parser follows. DynamoDB
/// refuses documents nested past 32 levels anyway; the bound only keeps recursion finite.
pub const NESTING_DEPTH_MAX: usize = 128;

/// Words that cannot be bare names: the statement's structure. A path step through one is
/// DynamoDB's "Invalid path dot component".
const KEYWORDS: &[&str] = &[
    "ALL",
    "AND",
    "AS",
    "ASC",
    "BETWEEN",
    "BY",
    "CASE",
    "CAST",
    "CROSS",
    "DELETE",
    "DESC",
    "DISTINCT",
    "ELSE",
    "END",
    "EXISTS",
    "FALSE",
    "FROM",
    "FULL",
    "GROUP",
    "HAVING",
    "IN",
    "INNER",
    "INSERT",
    "INTO",
    "IS",
    "JOIN",
    "LEFT",
    "LIKE",
    "LIMIT",
    "MISSING",
    "NOT",
    "NULL",
    "OFFSET",
    "ON",
    "OR",
    "ORDER",
    "OUTER",
    "REMOVE",
    "RETURNING",
    "RIGHT",
    "SELECT",
    "SET",
    "THEN",
    "TRUE",
    "UNION",
    "UPDATE",
    "VALUE",
    "VALUES",
    "WHEN",
    "WHERE",
];

/// Keywords that are operators: met where a term should start, DynamoDB says
/// "Unexpected operator".
const OPERATOR_KEYWORDS: &[&str] = &["AND", "OR", "IS", "LIKE", "BETWEEN", "IN"];

fn is_keyword(word: &str) -> bool {
    KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word))
}

/// Parses one statement.
pub fn parse_statement(text: &str) -> Result<Statement, ApiError> {
    parse_with_parameter_count(text).map(|(statement, _)| statement)
}

/// Parses one statement and counts its `?` parameters (numbered 0..count).
pub fn parse_with_parameter_count(text: &str) -> Result<(Statement, usize), ApiError> {
    let tokens = tokenize(text)?;
    let mut parser = Parser {
        tokens,
        at: 0,
        parameters: 0,
        depth: 0,
        function_in_projection: None,
    };
    let statement = parser.statement()?;
    parser.end()?;
    Ok((statement, parser.parameters))
}

struct Parser<'s> {
    tokens: Vec<Token<'s>>,
    at: usize,
    parameters: usize,
    depth: usize,
    /// The first function call in the SELECT being parsed's projection (`SELECT COUNT(*)
    /// FROM t`): kept in the statement and refused once its table has been read, so a
    /// syntax error or an alias anywhere, and what the table decides, win, as on AWS.
    function_in_projection: Option<Position>,
}

impl<'s> Parser<'s> {
    fn peek(&self) -> &Token<'s> {
        // `tokenize` always ends with EndOfInput, and `advance` never moves past it.
        &self.tokens[self.at.min(self.tokens.len() - 1)]
    }

    fn peek_at(&self, ahead: usize) -> &Token<'s> {
        &self.tokens[(self.at + ahead).min(self.tokens.len() - 1)]
    }

    /// Moves past the current token (never past the end).
    fn advance(&mut self) {
        if self.at + 1 < self.tokens.len() {
            self.at += 1;
        }
    }

    /// The current token's kind, taken out of the token list, and moves past it.
    fn take(&mut self) -> TokenKind<'s> {
        let at = self.at.min(self.tokens.len() - 1);
        self.advance();
        if at + 1 == self.tokens.len() {
            return TokenKind::EndOfInput;
        }
        std::mem::replace(&mut self.tokens[at].kind, TokenKind::EndOfInput)
    }

    fn eat_keyword(&mut self, keyword: &str) -> bool {
        if self.peek().is_keyword(keyword) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn eat(&mut self, kind: &TokenKind<'_>) -> bool {
        if &self.peek().kind == kind {
            self.advance();
            true
        } else {
            false
        }
    }

    /// What follows a complete statement: nothing, or one `;`.
    fn end(&mut self) -> Result<(), ApiError> {
        self.eat(&TokenKind::Semicolon);
        if self.peek().kind == TokenKind::EndOfInput {
            Ok(())
        } else {
            Err(not_well_formed("Unexpected token after expression"))
        }
    }

    fn expect_keyword(&mut self, keyword: &str) -> Result<(), ApiError> {
        if self.eat_keyword(keyword) {
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    fn expect(&mut self, kind: TokenKind<'_>) -> Result<(), ApiError> {
        if self.eat(&kind) {
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    /// The error for a token where a term should start.
    fn unexpected(&self) -> ApiError {
        let token = self.peek();
        match &token.kind {
            TokenKind::Word(word)
                if OPERATOR_KEYWORDS
                    .iter()
                    .any(|k| k.eq_ignore_ascii_case(word)) =>
            {
                not_well_formed("Unexpected operator")
            }
            TokenKind::Word(word) if is_keyword(word) => not_well_formed("Unexpected keyword"),
            TokenKind::Operator(_) => not_well_formed("Unexpected operator"),
            TokenKind::EndOfInput
            | TokenKind::Semicolon
            | TokenKind::CloseParen
            | TokenKind::CloseBracket
            | TokenKind::CloseBrace
            | TokenKind::CloseBag
            | TokenKind::Comma => not_well_formed("Unexpected term"),
            _ => not_well_formed("Unexpected token after expression"),
        }
    }

    fn nested<T>(
        &mut self,
        parse: impl FnOnce(&mut Self) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        if self.depth >= NESTING_DEPTH_MAX {
            return Err(ApiError::validation(
                "Statement wasn't well formed, can't be processed: Expression nested too deeply",
            ));
        }
        self.depth += 1;
        let result = parse(self);
        self.depth -= 1;
        result
    }

    fn statement(&mut self) -> Result<Statement, ApiError> {
        let verb = match self.peek().kind {
            TokenKind::Word(word) => word,
            _ => "",
        };
        let is = |keyword: &str| verb.eq_ignore_ascii_case(keyword);
        match () {
            _ if is("SELECT") => {
                self.advance();
                Ok(Statement::Select(self.select()?))
            }
            _ if is("INSERT") => {
                self.advance();
                self.insert()
            }
            _ if is("UPDATE") => {
                self.advance();
                let table = self.simple_table()?;
                self.update_rest(table)
            }
            _ if is("FROM") => {
                // PartiQL's FROM-first DML: `FROM t WHERE cond SET …`.
                self.advance();
                let table = self.simple_table()?;
                self.expect_keyword("WHERE")?;
                let condition = self.expression()?;
                let actions = self.actions()?;
                let returning = self.returning()?;
                Ok(Statement::Update(UpdateStatement {
                    table,
                    actions,
                    condition: Some(condition),
                    returning,
                }))
            }
            _ if is("DELETE") => {
                self.advance();
                self.delete()
            }
            _ if is("EXISTS") && self.peek_at(1).kind == TokenKind::OpenParen => {
                self.advance();
                self.advance();
                if !self.eat_keyword("SELECT") {
                    return Err(self.unexpected());
                }
                let select = self.select()?;
                self.expect(TokenKind::CloseParen)?;
                Ok(Statement::Exists(select))
            }
            _ => {
                // Not a statement: an expression DynamoDB's parser reads and then refuses
                // (`x IS INT4`), or nothing it can read (`SELECTT * FROM t`).
                let start = self.at;
                match self.expression() {
                    Ok(Node::Is { .. }) if self.peek().kind == TokenKind::EndOfInput => {
                        Err(ApiError::validation("Unsupported operation: IsType"))
                    }
                    _ => {
                        self.at = start;
                        Err(not_well_formed("Expected data manipulation"))
                    }
                }
            }
        }
    }

    fn select(&mut self) -> Result<Select, ApiError> {
        let projection = if self.eat(&TokenKind::Operator("*")) {
            None
        } else {
            let mut paths: Vec<Path> = self.projection_path()?.into_iter().collect();
            while self.eat(&TokenKind::Comma) {
                paths.extend(self.projection_path()?);
            }
            Some(paths)
        };
        self.expect_keyword("FROM")?;
        let target = self.target()?;
        self.refuse_alias()?;
        let condition = if self.eat_keyword("WHERE") {
            Some(self.expression()?)
        } else {
            None
        };
        let mut order_by = Vec::new();
        if self.peek().is_keyword("ORDER") && self.peek_at(1).is_keyword("BY") {
            self.advance();
            self.advance();
            loop {
                let path = self.path()?;
                let descending = if self.eat_keyword("DESC") {
                    true
                } else {
                    self.eat_keyword("ASC");
                    false
                };
                order_by.push(OrderBy { path, descending });
                if !self.eat(&TokenKind::Comma) {
                    break;
                }
            }
        }
        Ok(Select {
            projection,
            target,
            condition,
            order_by,
            function_in_projection: self.function_in_projection.take(),
        })
    }

    /// A projected path, or None for a function call there (an aggregate such as
    /// `COUNT(*)` included), whose position is kept for the statement's refusal.
    fn projection_path(&mut self) -> Result<Option<Path>, ApiError> {
        let token = self.peek().clone();
        if matches!(token.kind, TokenKind::Word(_)) && self.peek_at(1).kind == TokenKind::OpenParen
        {
            self.function_in_projection.get_or_insert(Position {
                column: token.column,
                length: token.length,
            });
            // Skip the call: its name, then everything up to its balancing `)`.
            self.advance();
            let mut depth = 0usize;
            loop {
                match self.peek().kind {
                    TokenKind::OpenParen => depth += 1,
                    TokenKind::CloseParen => depth = depth.saturating_sub(1),
                    TokenKind::EndOfInput => return Err(self.unexpected()),
                    _ => {}
                }
                self.advance();
                if depth == 0 {
                    break;
                }
            }
            return Ok(None);
        }
        self.path().map(Some)
    }

    /// `FROM "T"` or `FROM "T"."Idx"` of a SELECT (an expression position: a missing table
    /// is an "Unexpected term").
    fn target(&mut self) -> Result<Target, ApiError> {
        let table = match self.identifier() {
            Some(name) => name,
            None => return Err(self.unexpected()),
        };
        let index = if self.peek().kind == TokenKind::Dot {
            self.advance();
            match self.identifier() {
                Some(name) => Some(name),
                None => return Err(not_well_formed("Invalid path dot component")),
            }
        } else {
            None
        };
        Ok(Target { table, index })
    }

    /// The table of INSERT, UPDATE and DELETE: a simple path.
    fn simple_table(&mut self) -> Result<String, ApiError> {
        let table = self
            .identifier()
            .ok_or_else(|| not_well_formed("Expected identifier for simple path"))?;
        self.refuse_alias()?;
        Ok(table)
    }

    /// `FROM "T" t` and `FROM "T" AS t`.
    fn refuse_alias(&mut self) -> Result<(), ApiError> {
        let alias = match &self.peek().kind {
            TokenKind::Word(word) => word.eq_ignore_ascii_case("AS") || !is_keyword(word),
            TokenKind::QuotedIdentifier(_) => true,
            _ => false,
        };
        if alias {
            Err(ApiError::validation("Aliasing is not supported"))
        } else {
            Ok(())
        }
    }

    /// A bare (non-keyword) or double-quoted name.
    fn identifier(&mut self) -> Option<String> {
        let name = match &self.peek().kind {
            TokenKind::Word(word) if !is_keyword(word) => word.to_string(),
            TokenKind::QuotedIdentifier(name) => name.to_string(),
            _ => return None,
        };
        self.advance();
        Some(name)
    }

    fn insert(&mut self) -> Result<Statement, ApiError> {
        self.expect_keyword("INTO")?;
        let table = self
            .identifier()
            .ok_or_else(|| not_well_formed("Expected identifier for simple path"))?;
        if !self.eat_keyword("VALUE") {
            return Err(not_well_formed("Unexpected token after expression"));
        }
        if self.peek().kind != TokenKind::OpenBrace {
            return Err(self.unexpected());
        }
        let item = self.term("root")?;
        Ok(Statement::Insert(Insert { table, item }))
    }

    fn update_rest(&mut self, table: String) -> Result<Statement, ApiError> {
        let actions = self.actions()?;
        let condition = if self.eat_keyword("WHERE") {
            Some(self.expression()?)
        } else {
            None
        };
        let returning = self.returning()?;
        Ok(Statement::Update(UpdateStatement {
            table,
            actions,
            condition,
            returning,
        }))
    }

    /// `SET p = v {, p = v}` and `REMOVE p {, p}`, each repeatable, in written order.
    fn actions(&mut self) -> Result<Vec<Action>, ApiError> {
        let mut actions = Vec::new();
        loop {
            if self.eat_keyword("SET") {
                loop {
                    let path = self.path()?;
                    self.expect(TokenKind::Operator("="))?;
                    let value = self.rhs(Self::additive)?;
                    actions.push(Action::Set(path, value));
                    if !self.eat(&TokenKind::Comma) {
                        break;
                    }
                }
            } else if self.eat_keyword("REMOVE") {
                loop {
                    actions.push(Action::Remove(self.path()?));
                    if !self.eat(&TokenKind::Comma) {
                        break;
                    }
                }
            } else {
                break;
            }
        }
        if actions.is_empty() {
            return Err(self.unexpected());
        }
        Ok(actions)
    }

    fn returning(&mut self) -> Result<Option<Returning>, ApiError> {
        if !self.eat_keyword("RETURNING") {
            return Ok(None);
        }
        let all = if self.eat_keyword("ALL") {
            true
        } else if self.eat_keyword("MODIFIED") {
            false
        } else {
            return Err(self.unexpected());
        };
        let old = if self.eat_keyword("OLD") {
            true
        } else if self.eat_keyword("NEW") {
            false
        } else {
            return Err(self.unexpected());
        };
        self.expect(TokenKind::Operator("*"))?;
        Ok(Some(match (all, old) {
            (true, true) => Returning::AllOld,
            (false, true) => Returning::ModifiedOld,
            (true, false) => Returning::AllNew,
            (false, false) => Returning::ModifiedNew,
        }))
    }

    fn delete(&mut self) -> Result<Statement, ApiError> {
        self.expect_keyword("FROM")?;
        let table = self.simple_table()?;
        let condition = if self.eat_keyword("WHERE") {
            Some(self.expression()?)
        } else {
            None
        };
        let returning = self.returning()?;
        Ok(Statement::Delete(Delete {
            table,
            condition,
            returning,
        }))
    }

    /// A document path: a name, then `.name`, `."name"`, `[n]` or `['key']` steps.
    fn path(&mut self) -> Result<Path, ApiError> {
        let first = self.identifier().ok_or_else(|| self.unexpected())?;
        self.path_steps(first)
    }

    fn path_steps(&mut self, first: String) -> Result<Path, ApiError> {
        let mut elements = vec![PathElement::attribute(first)];
        loop {
            match self.peek().kind {
                TokenKind::Dot => {
                    self.advance();
                    let name = self
                        .identifier()
                        .ok_or_else(|| not_well_formed("Invalid path dot component"))?;
                    elements.push(PathElement::attribute(name));
                }
                TokenKind::OpenBracket => {
                    self.advance();
                    match self.take() {
                        TokenKind::Number(digits) => {
                            let index = digits.parse::<u32>().map_err(|_| {
                                ApiError::validation(
                                    "Statement wasn't well formed, can't be processed: Invalid path index",
                                )
                            })?;
                            elements.push(PathElement::Index(index));
                        }
                        TokenKind::String(key) => {
                            elements.push(PathElement::attribute(key.into_owned()))
                        }
                        _ => return Err(not_well_formed("Unexpected term")),
                    }
                    self.expect(TokenKind::CloseBracket)?;
                }
                _ => break,
            }
        }
        // The first element is an attribute, so `Path::new` accepts it.
        Path::new(elements).ok_or_else(|| not_well_formed("Unexpected term"))
    }

    /// Parses with `parse` after an infix operator: nothing left is DynamoDB's "Missing
    /// right-hand side expression of infix operator".
    fn rhs(&mut self, parse: fn(&mut Self) -> Result<Node, ApiError>) -> Result<Node, ApiError> {
        if self.peek().kind == TokenKind::EndOfInput {
            return Err(not_well_formed(
                "Missing right-hand side expression of infix operator",
            ));
        }
        parse(self)
    }

    fn expression(&mut self) -> Result<Node, ApiError> {
        self.nested(|p| {
            let mut left = p.and()?;
            while p.eat_keyword("OR") {
                let right = p.rhs(Self::and)?;
                left = Node::Or(Box::new(left), Box::new(right));
            }
            Ok(left)
        })
    }

    fn and(&mut self) -> Result<Node, ApiError> {
        let mut left = self.not()?;
        while self.eat_keyword("AND") {
            let right = self.rhs(Self::not)?;
            left = Node::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Node, ApiError> {
        if self.eat_keyword("NOT") {
            let inner = self.nested(Self::not)?;
            return Ok(Node::Not(Box::new(inner)));
        }
        self.predicate()
    }

    fn predicate(&mut self) -> Result<Node, ApiError> {
        let left = self.additive()?;
        if let TokenKind::Operator(op @ ("=" | "<>" | "<" | "<=" | ">" | ">=")) = self.peek().kind {
            self.advance();
            let right = self.rhs(Self::additive)?;
            return Ok(Node::Binary {
                operator: op,
                left: Box::new(left),
                right: Box::new(right),
            });
        }
        let negated = self.peek().is_keyword("NOT")
            && (self.peek_at(1).is_keyword("BETWEEN")
                || self.peek_at(1).is_keyword("IN")
                || self.peek_at(1).is_keyword("LIKE"));
        if negated {
            self.advance();
        }
        if self.eat_keyword("BETWEEN") {
            let low = self.rhs(Self::additive)?;
            self.expect_keyword("AND")?;
            let high = self.rhs(Self::additive)?;
            return Ok(Node::Between {
                operand: Box::new(left),
                low: Box::new(low),
                high: Box::new(high),
                negated,
            });
        }
        if self.eat_keyword("IN") {
            let close = match self.peek().kind {
                TokenKind::OpenBracket => TokenKind::CloseBracket,
                TokenKind::OpenParen => TokenKind::CloseParen,
                _ => return Err(self.unexpected()),
            };
            self.advance();
            let mut values = vec![self.term("root")?];
            while self.eat(&TokenKind::Comma) {
                values.push(self.term("root")?);
            }
            self.expect(close)?;
            return Ok(Node::In {
                operand: Box::new(left),
                values,
                negated,
            });
        }
        if self.peek().is_keyword("LIKE") {
            return Err(ApiError::validation(
                "Statement wasn't well formed, can't be processed: LIKE is not supported",
            ));
        }
        if self.eat_keyword("IS") {
            let negated = self.eat_keyword("NOT");
            let test = self.type_test()?;
            return Ok(Node::Is {
                operand: Box::new(left),
                test,
                negated,
            });
        }
        Ok(left)
    }

    /// The type after `IS [NOT]`: `MISSING`, `NULL` or a PartiQL type name.
    fn type_test(&mut self) -> Result<TypeTest, ApiError> {
        let word = match self.peek().kind {
            TokenKind::Word(word) => word.to_ascii_uppercase(),
            _ => return Err(not_well_formed("Expected type name")),
        };
        let test = match word.as_str() {
            "MISSING" => TypeTest::Missing,
            "NULL" => TypeTest::Null,
            "BOOL" | "BOOLEAN" => TypeTest::Type("BOOL"),
            "STRING" | "VARCHAR" | "CHAR" | "SYMBOL" => TypeTest::Type("S"),
            "INT" | "INTEGER" | "INT2" | "INT4" | "INT8" | "SMALLINT" | "BIGINT" | "DECIMAL"
            | "NUMERIC" | "FLOAT" | "REAL" | "DOUBLE" | "NUMBER" => TypeTest::Type("N"),
            "BLOB" | "CLOB" | "BINARY" => TypeTest::Type("B"),
            "LIST" | "SEXP" | "ARRAY" => TypeTest::Type("L"),
            "STRUCT" | "TUPLE" | "MAP" => TypeTest::Type("M"),
            _ => return Err(not_well_formed("Expected type name")),
        };
        self.advance();
        Ok(test)
    }

    fn additive(&mut self) -> Result<Node, ApiError> {
        let mut left = self.term("root")?;
        while let TokenKind::Operator(op @ ("+" | "-" | "*" | "/" | "%" | "||")) = self.peek().kind
        {
            self.advance();
            let right = self.rhs(|p| p.term("root"))?;
            left = Node::Binary {
                operator: op,
                left: Box::new(left),
                right: Box::new(right),
            };
        }
        Ok(left)
    }

    /// A term; `location` names where a literal sits (`root`, `root.x`, `root[1]`) for the
    /// number texts.
    fn term(&mut self, location: &str) -> Result<Node, ApiError> {
        self.nested(|p| p.term_inner(location))
    }

    fn term_inner(&mut self, location: &str) -> Result<Node, ApiError> {
        let token = self.peek().clone();
        match token.kind {
            TokenKind::String(text) => {
                self.advance();
                Ok(Node::Literal(AttributeValue::S(text.into_owned())))
            }
            TokenKind::Number(text) => {
                self.advance();
                number(text, location)
            }
            TokenKind::Operator("-") if matches!(self.peek_at(1).kind, TokenKind::Number(_)) => {
                self.advance();
                let TokenKind::Number(text) = self.take() else {
                    return Err(not_well_formed("Unexpected term"));
                };
                number(&format!("-{text}"), location)
            }
            TokenKind::Parameter => {
                self.advance();
                let index = self.parameters;
                self.parameters += 1;
                Ok(Node::Parameter(index))
            }
            TokenKind::OpenParen => {
                self.advance();
                let inner = self.expression()?;
                self.expect(TokenKind::CloseParen)?;
                Ok(inner)
            }
            TokenKind::OpenBracket => {
                self.advance();
                let mut elements = Vec::new();
                if !self.eat(&TokenKind::CloseBracket) {
                    loop {
                        let at = format!("{location}[{}]", elements.len());
                        elements.push(self.term(&at)?);
                        if !self.eat(&TokenKind::Comma) {
                            break;
                        }
                    }
                    self.expect(TokenKind::CloseBracket)?;
                }
                Ok(Node::List(elements))
            }
            TokenKind::OpenBrace => {
                self.advance();
                let mut entries = Vec::new();
                if !self.eat(&TokenKind::CloseBrace) {
                    loop {
                        let key = match self.take() {
                            TokenKind::String(key) | TokenKind::QuotedIdentifier(key) => {
                                key.into_owned()
                            }
                            _ => return Err(not_well_formed("Unexpected term")),
                        };
                        self.expect(TokenKind::Colon)?;
                        let at = format!("{location}.{key}");
                        let value = self.term(&at)?;
                        entries.push((key, value));
                        if !self.eat(&TokenKind::Comma) {
                            break;
                        }
                    }
                    self.expect(TokenKind::CloseBrace)?;
                }
                Ok(Node::Map(entries))
            }
            TokenKind::OpenBag => {
                self.advance();
                let position = Position {
                    column: token.column,
                    length: token.length,
                };
                let mut members = Vec::new();
                if !self.eat(&TokenKind::CloseBag) {
                    loop {
                        members.push(self.term(location)?);
                        if !self.eat(&TokenKind::Comma) {
                            break;
                        }
                    }
                    self.expect(TokenKind::CloseBag)?;
                }
                Ok(Node::Bag(members, position))
            }
            TokenKind::Word(word) => {
                let call = self.peek_at(1).kind == TokenKind::OpenParen;
                let is = |keyword: &str| word.eq_ignore_ascii_case(keyword);
                match () {
                    _ if is("TRUE") || is("FALSE") => {
                        self.advance();
                        Ok(Node::Literal(AttributeValue::Bool(is("TRUE"))))
                    }
                    _ if is("NULL") => {
                        self.advance();
                        Ok(Node::Literal(AttributeValue::Null))
                    }
                    _ if call && (!is_keyword(word) || is("EXISTS")) => {
                        self.advance();
                        self.advance();
                        let mut arguments = Vec::new();
                        if !self.eat(&TokenKind::CloseParen) {
                            loop {
                                arguments.push(self.rhs(Self::expression)?);
                                if !self.eat(&TokenKind::Comma) {
                                    break;
                                }
                            }
                            self.expect(TokenKind::CloseParen)?;
                        }
                        Ok(Node::Call {
                            name: word.to_ascii_lowercase(),
                            arguments,
                            position: Position {
                                column: token.column,
                                length: token.length,
                            },
                        })
                    }
                    _ if is_keyword(word) => Err(self.unexpected()),
                    _ => Ok(Node::Path(self.path()?)),
                }
            }
            TokenKind::QuotedIdentifier(_) => Ok(Node::Path(self.path()?)),
            _ => Err(self.unexpected()),
        }
    }
}

/// A number literal, with DynamoDB's number texts followed by where the literal sits.
fn number(text: &str, location: &str) -> Result<Node, ApiError> {
    Number::parse(text)
        .map(|n| Node::Literal(AttributeValue::N(n)))
        .map_err(|e| ApiError::validation(format!("{} under {location}", e.message)))
}
