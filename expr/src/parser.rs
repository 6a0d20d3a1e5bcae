//! One hand-written recursive-descent parser for every expression kind.
//!
//! Grammar (keywords case-insensitive, function names case-sensitive):
//!
//! ```text
//! condition  := or
//! or         := and ( OR and )*
//! and        := not ( AND not )*
//! not        := NOT not | primary
//! primary    := '(' or ')' | function-call | operand comparator operand
//!             | operand BETWEEN operand AND operand | operand IN '(' operand ( ',' operand )* ')'
//! operand    := path | :value | function-call | '(' operand ')'
//!               (a `(` starts an operand when its `)` is followed by a comparator, BETWEEN or IN)
//! path       := name ( '.' name | '[' integer ']' )*        name := identifier | #placeholder
//! update     := ( SET set-action (',' set-action)* | REMOVE path (',' path)*
//!               | ADD path :value (',' …)* | DELETE path :value (',' …)* )+
//! set-action := path '=' set-value | path '=' '(' set-value ')'
//! set-value  := operand ( ('+' | '-') operand )?
//! projection := path ( ',' path )*
//! ```
//!
//! Syntax errors stop parsing at once. Reserved words and undefined placeholders are
//! remembered and reported only once the whole text has parsed, so a syntax error later in the
//! text wins, as in DynamoDB. Errors are plain messages here; `Context` adds the
//! `Invalid <Kind>Expression: ` prefix.

use shoal_model::{ApiError, AttributeValue};

use crate::ast::{
    Comparator, Condition, Operand, Path, PathElement, SetValue, UpdateAction, UpdateOperand,
    ValueRef,
};
use crate::context::{Context, ExpressionKind};
use crate::lexer::{tokenize, Token, TokenKind};
use crate::projection::Projection;
use crate::reserved::is_reserved_word;
use crate::update::Update;
use crate::validate;

/// Longest expression text DynamoDB accepts, in bytes.
pub const EXPRESSION_SIZE_BYTES_MAX: usize = 4096;
/// Most operators and functions in one expression.
pub const OPERATOR_COUNT_MAX: usize = 300;
/// Most operands on the right of `IN`.
pub const IN_OPERAND_COUNT_MAX: usize = 100;
/// Deepest nesting of parentheses and function calls the recursive descent follows; keeps its
/// stack use inside a 2 MiB thread stack even in an unoptimised build. DynamoDB limits nesting
/// only through its operator limit: a call is an operator, and a parenthesized level that is
/// not redundant holds an operator of its own, so a text nested deeper than the operator limit
/// (plus the one level a call and its parentheses may share) has too many operators or
/// redundant parentheses (see `Parser::too_deep_error`).
const NESTING_DEPTH_MAX: usize = OPERATOR_COUNT_MAX + 8;

/// The sections of an update expression, each allowed once.
const UPDATE_SECTIONS: [&str; 4] = ["SET", "REMOVE", "ADD", "DELETE"];

/// Keywords of the grammar; they can never be a bare path name.
const GRAMMAR_KEYWORDS: [&str; 9] = [
    "AND", "OR", "NOT", "BETWEEN", "IN", "SET", "REMOVE", "ADD", "DELETE",
];

/// An operand as written, before it is checked for the place it is used in. A function name
/// borrows the source text: most calls are valid and need no owned copy.
#[derive(Debug, Clone)]
enum RawOperand<'t> {
    Path(Path),
    Value(ValueRef),
    Call {
        function: &'t str,
        arguments: Vec<RawOperand<'t>>,
    },
}

const CONDITION_FUNCTIONS: [&str; 5] = [
    "attribute_exists",
    "attribute_not_exists",
    "attribute_type",
    "begins_with",
    "contains",
];
const UPDATE_FUNCTIONS: [&str; 2] = ["if_not_exists", "list_append"];

fn is_known_function(name: &str) -> bool {
    name == "size" || CONDITION_FUNCTIONS.contains(&name) || UPDATE_FUNCTIONS.contains(&name)
}

fn invalid_function(name: &str) -> String {
    format!("Invalid function name; function: {name}")
}

fn misused_function(name: &str) -> String {
    format!("The function is not allowed to be used this way in an expression; function: {name}")
}

fn operand_count_error(name: &str, count: usize) -> String {
    format!(
        "Incorrect number of operands for operator or function; operator or function: {name}, number of operands: {count}"
    )
}

fn path_required(name: &str) -> String {
    format!("Operator or function requires a document path; operator or function: {name}")
}

pub(crate) struct Parser<'t, 'c, 'a> {
    source: &'t str,
    tokens: Vec<Token>,
    position: usize,
    context: &'c mut Context<'a>,
    /// First semantic error (reserved word, undefined placeholder, …), reported after parsing.
    deferred_error: Option<String>,
    operator_count: usize,
    nesting_depth: usize,
}

type Parsed<T> = Result<T, String>;

/// A condition and whether it is exactly one parenthesized group.
type Grouped = (Box<Condition>, bool);

impl<'t, 'c, 'a> Parser<'t, 'c, 'a> {
    /// Checks the text's emptiness and size, then tokenizes it.
    pub(crate) fn new(
        source: &'t str,
        kind: ExpressionKind,
        context: &'c mut Context<'a>,
    ) -> Result<Parser<'t, 'c, 'a>, ApiError> {
        if source.trim().is_empty() {
            return Err(kind.error("The expression can not be empty;"));
        }
        if source.len() > EXPRESSION_SIZE_BYTES_MAX {
            return Err(kind.error(&format!(
                "Expression size has exceeded the maximum allowed size; expression size: {}",
                source.len()
            )));
        }
        Ok(Parser {
            source,
            tokens: tokenize(source),
            position: 0,
            context,
            deferred_error: None,
            operator_count: 0,
            nesting_depth: 0,
        })
    }

    // ---- entry points ------------------------------------------------------------------

    pub(crate) fn parse_condition_expression(mut self) -> Parsed<Condition> {
        let (condition, _) = self.parse_or()?;
        self.expect_end()?;
        self.finish_checks()?;
        validate::check_condition(&condition)?;
        Ok(*condition)
    }

    pub(crate) fn parse_update_expression(mut self) -> Parsed<Update> {
        // Room for a typical update's actions without regrowing.
        let mut actions = Vec::with_capacity(8);
        let mut sections_seen = [false; UPDATE_SECTIONS.len()];
        while self.peek().kind != TokenKind::EndOfInput {
            let (section_index, section) = self.parse_section_keyword()?;
            if sections_seen[section_index] {
                return Err(format!(
                    "The \"{section}\" section can only be used once in an update expression;"
                ));
            }
            sections_seen[section_index] = true;
            loop {
                actions.push(self.parse_update_action(section)?);
                if self.peek().kind != TokenKind::Comma {
                    break;
                }
                self.advance();
            }
        }
        self.finish_checks()?;
        validate::check_update_actions(&actions)?;
        Ok(Update::from_actions(actions))
    }

    pub(crate) fn parse_projection_expression(mut self) -> Parsed<Projection> {
        let mut paths = vec![self.parse_path()?];
        while self.peek().kind == TokenKind::Comma {
            self.advance();
            paths.push(self.parse_path()?);
        }
        self.expect_end()?;
        self.finish_checks()?;
        validate::check_no_overlap(&paths, |path| path)?;
        Ok(Projection::new(paths))
    }

    fn finish_checks(&mut self) -> Parsed<()> {
        if let Some(message) = self.deferred_error.take() {
            return Err(message);
        }
        if self.operator_count > OPERATOR_COUNT_MAX {
            return Err(format!(
                "The expression contains too many operators; operator count: {}",
                self.operator_count
            ));
        }
        Ok(())
    }

    // ---- tokens ------------------------------------------------------------------------

    fn peek(&self) -> Token {
        self.peek_at(0)
    }

    fn peek_at(&self, offset: usize) -> Token {
        let last = self.tokens.len().saturating_sub(1);
        let index = (self.position + offset).min(last);
        self.tokens.get(index).copied().unwrap_or_else(|| {
            let end = u32::try_from(self.source.len()).unwrap_or(u32::MAX);
            Token {
                kind: TokenKind::EndOfInput,
                start: end,
                end,
            }
        })
    }

    fn advance(&mut self) -> Token {
        let token = self.peek();
        if self.position < self.tokens.len().saturating_sub(1) {
            self.position += 1;
        }
        token
    }

    fn text(&self, token: Token) -> &'t str {
        self.source.get(token.span()).unwrap_or("")
    }

    fn is_keyword(&self, token: Token, keyword: &str) -> bool {
        token.kind == TokenKind::Identifier && self.text(token).eq_ignore_ascii_case(keyword)
    }

    /// `Syntax error; token: "<tok>", near: "<previous token through the next one>"` for the
    /// token at the cursor.
    fn syntax_error(&self) -> String {
        self.syntax_error_at(self.position)
    }

    fn syntax_error_at(&self, index: usize) -> String {
        let last = self.tokens.len().saturating_sub(1);
        let index = index.min(last);
        let token = self.tokens.get(index).copied();
        let token_text = match token {
            Some(token) if token.kind != TokenKind::EndOfInput => self.text(token),
            _ => "<EOF>",
        };
        let span_of = |index: usize| self.tokens.get(index).map(|token| token.span());
        let near_start = index
            .checked_sub(1)
            .and_then(span_of)
            .or_else(|| span_of(index))
            .map_or(0, |span| span.start);
        let near_end = span_of((index + 1).min(last))
            .or_else(|| span_of(index))
            .map_or(near_start, |span| span.end);
        let near = self.source.get(near_start..near_end).unwrap_or("");
        format!("Syntax error; token: \"{token_text}\", near: \"{near}\"")
    }

    fn expect(&mut self, kind: TokenKind) -> Parsed<Token> {
        if self.peek().kind == kind {
            Ok(self.advance())
        } else {
            Err(self.syntax_error())
        }
    }

    fn expect_end(&self) -> Parsed<()> {
        if self.peek().kind == TokenKind::EndOfInput {
            Ok(())
        } else {
            Err(self.syntax_error())
        }
    }

    /// Remembers a semantic error to report once the whole text has parsed. Only the first
    /// one is reported, so the message is built only when it is the first.
    fn defer_with(&mut self, message: impl FnOnce() -> String) {
        if self.deferred_error.is_none() {
            self.deferred_error = Some(message());
        }
    }

    fn count_operator(&mut self) {
        self.operator_count += 1;
    }

    fn enter_nesting(&mut self) -> Parsed<()> {
        if self.nesting_depth >= NESTING_DEPTH_MAX {
            return Err(self.too_deep_error());
        }
        self.nesting_depth += 1;
        Ok(())
    }

    /// The error for a text nested deeper than the parser follows, found from its tokens
    /// alone: unbalanced parentheses are a syntax error, then the operator limit, and
    /// otherwise some parentheses must be redundant (see `NESTING_DEPTH_MAX`).
    fn too_deep_error(&self) -> String {
        let mut depth = 0usize;
        let mut operators = 0usize;
        let mut pending_between_and = 0usize;
        for (index, token) in self.tokens.iter().enumerate() {
            match token.kind {
                TokenKind::OpenParen => depth += 1,
                TokenKind::CloseParen => match depth.checked_sub(1) {
                    Some(outer) => depth = outer,
                    None => return self.syntax_error_at(index),
                },
                TokenKind::EndOfInput if depth > 0 => return self.syntax_error_at(index),
                TokenKind::Equal
                | TokenKind::NotEqual
                | TokenKind::Less
                | TokenKind::LessOrEqual
                | TokenKind::Greater
                | TokenKind::GreaterOrEqual
                | TokenKind::Plus
                | TokenKind::Minus => operators += 1,
                TokenKind::Identifier => {
                    let is_call = self
                        .tokens
                        .get(index + 1)
                        .is_some_and(|next| next.kind == TokenKind::OpenParen);
                    if is_call
                        || ["OR", "NOT", "IN"]
                            .iter()
                            .any(|k| self.is_keyword(*token, k))
                    {
                        operators += 1;
                    } else if self.is_keyword(*token, "BETWEEN") {
                        operators += 1;
                        pending_between_and += 1;
                    } else if self.is_keyword(*token, "AND") {
                        // The AND of `BETWEEN x AND y` is part of BETWEEN, not an operator.
                        match pending_between_and.checked_sub(1) {
                            Some(rest) => pending_between_and = rest,
                            None => operators += 1,
                        }
                    }
                }
                _ => {}
            }
        }
        if operators > OPERATOR_COUNT_MAX {
            format!("The expression contains too many operators; operator count: {operators}")
        } else {
            "The expression has redundant parentheses;".to_string()
        }
    }

    fn leave_nesting(&mut self) {
        self.nesting_depth = self.nesting_depth.saturating_sub(1);
    }

    // ---- conditions --------------------------------------------------------------------
    //
    // Each level also returns whether what it parsed is exactly one parenthesized group, to
    // detect DynamoDB's "redundant parentheses" error for `((a < b))`. The levels recurse once
    // per parenthesis and pass conditions boxed, which keeps their stack frames small.

    fn parse_or(&mut self) -> Parsed<Grouped> {
        let (mut condition, mut is_group) = self.parse_and()?;
        while self.is_keyword(self.peek(), "OR") {
            self.advance();
            self.count_operator();
            let (right, _) = self.parse_and()?;
            condition = Box::new(Condition::Or(condition, right));
            is_group = false;
        }
        Ok((condition, is_group))
    }

    fn parse_and(&mut self) -> Parsed<Grouped> {
        let (mut condition, mut is_group) = self.parse_not()?;
        while self.is_keyword(self.peek(), "AND") {
            self.advance();
            self.count_operator();
            let (right, _) = self.parse_not()?;
            condition = Box::new(Condition::And(condition, right));
            is_group = false;
        }
        Ok((condition, is_group))
    }

    /// `NOT NOT … primary`, read in a loop: a chain of NOTs costs no stack.
    fn parse_not(&mut self) -> Parsed<Grouped> {
        let mut nots = 0usize;
        while self.is_keyword(self.peek(), "NOT") {
            self.advance();
            self.count_operator();
            nots += 1;
        }
        if nots == 0 {
            return self.parse_primary();
        }
        let (mut condition, _) = self.parse_primary()?;
        for _ in 0..nots {
            condition = Box::new(Condition::Not(condition));
        }
        Ok((condition, false))
    }

    fn parse_primary(&mut self) -> Parsed<Grouped> {
        if self.peek().kind == TokenKind::OpenParen && !self.opens_operand() {
            self.advance();
            self.enter_nesting()?;
            let (inner, inner_is_group) = self.parse_or()?;
            self.leave_nesting();
            self.expect(TokenKind::CloseParen)?;
            if inner_is_group {
                self.defer_with(|| "The expression has redundant parentheses;".to_string());
            }
            return Ok((inner, true));
        }
        Ok((Box::new(self.parse_predicate()?), false))
    }

    /// Whether the `(` at the cursor holds an operand (`(a) = :v`, `(size(a)) < :n`) rather
    /// than conditions: what follows its matching `)` is a comparator, BETWEEN or IN.
    fn opens_operand(&self) -> bool {
        let Some(next) = self
            .matching_close_paren()
            .and_then(|close| self.tokens.get(close + 1))
            .copied()
        else {
            return false;
        };
        matches!(
            next.kind,
            TokenKind::Equal
                | TokenKind::NotEqual
                | TokenKind::Less
                | TokenKind::LessOrEqual
                | TokenKind::Greater
                | TokenKind::GreaterOrEqual
        ) || self.is_keyword(next, "BETWEEN")
            || self.is_keyword(next, "IN")
    }

    /// A comparison, BETWEEN, IN or function call. Kept out of `parse_primary`, which
    /// recurses once per parenthesis: its many temporaries would otherwise sit in every
    /// level's stack frame.
    #[inline(never)]
    fn parse_predicate(&mut self) -> Parsed<Condition> {
        let left = self.parse_raw_operand()?;
        let next = self.peek();
        let comparator = match next.kind {
            TokenKind::Equal => Some(Comparator::Eq),
            TokenKind::NotEqual => Some(Comparator::Ne),
            TokenKind::Less => Some(Comparator::Lt),
            TokenKind::LessOrEqual => Some(Comparator::Le),
            TokenKind::Greater => Some(Comparator::Gt),
            TokenKind::GreaterOrEqual => Some(Comparator::Ge),
            _ => None,
        };
        if let Some(comparator) = comparator {
            self.advance();
            self.count_operator();
            let left = condition_operand(left)?;
            let right = condition_operand(self.parse_raw_operand()?)?;
            return Ok(Condition::Compare {
                left,
                comparator,
                right,
            });
        }
        if self.is_keyword(next, "BETWEEN") {
            self.advance();
            self.count_operator();
            let value = condition_operand(left)?;
            let low = condition_operand(self.parse_raw_operand()?)?;
            if !self.is_keyword(self.peek(), "AND") {
                return Err(self.syntax_error());
            }
            self.advance();
            let high = condition_operand(self.parse_raw_operand()?)?;
            return Ok(Condition::Between { value, low, high });
        }
        if self.is_keyword(next, "IN") {
            self.advance();
            self.count_operator();
            let value = condition_operand(left)?;
            self.expect(TokenKind::OpenParen)?;
            let mut candidates = vec![condition_operand(self.parse_raw_operand()?)?];
            while self.peek().kind == TokenKind::Comma {
                self.advance();
                candidates.push(condition_operand(self.parse_raw_operand()?)?);
                if candidates.len() > IN_OPERAND_COUNT_MAX {
                    return Err(format!(
                        "The IN operator is provided with too many operands; number of operands: {}",
                        candidates.len()
                    ));
                }
            }
            self.expect(TokenKind::CloseParen)?;
            return Ok(Condition::In { value, candidates });
        }
        match left {
            RawOperand::Call {
                function,
                arguments,
            } => condition_function(function, arguments),
            RawOperand::Path(_) | RawOperand::Value(_) => Err(self.syntax_error()),
        }
    }

    // ---- operands ----------------------------------------------------------------------

    fn parse_raw_operand(&mut self) -> Parsed<RawOperand<'t>> {
        let token = self.peek();
        match token.kind {
            TokenKind::OpenParen => self.parse_parenthesized_operand(),
            TokenKind::ValuePlaceholder => {
                self.advance();
                Ok(RawOperand::Value(self.resolve_value(token)))
            }
            TokenKind::Identifier if self.peek_at(1).kind == TokenKind::OpenParen => {
                self.parse_call()
            }
            _ => Ok(RawOperand::Path(self.parse_path()?)),
        }
    }

    /// `(operand)`: DynamoDB accepts one pair of parentheses around any operand; a second
    /// pair (`((a))`) is redundant.
    fn parse_parenthesized_operand(&mut self) -> Parsed<RawOperand<'t>> {
        self.expect(TokenKind::OpenParen)?;
        self.enter_nesting()?;
        if self.peek().kind == TokenKind::OpenParen {
            self.defer_with(|| "The expression has redundant parentheses;".to_string());
        }
        let inner = self.parse_raw_operand()?;
        self.leave_nesting();
        self.expect(TokenKind::CloseParen)?;
        Ok(inner)
    }

    fn parse_call(&mut self) -> Parsed<RawOperand<'t>> {
        let name_token = self.advance();
        let function = self.text(name_token);
        self.expect(TokenKind::OpenParen)?;
        self.count_operator();
        self.enter_nesting()?;
        // Every function takes one or two operands when used correctly.
        let mut arguments = Vec::with_capacity(2);
        arguments.push(self.parse_raw_operand()?);
        while self.peek().kind == TokenKind::Comma {
            self.advance();
            arguments.push(self.parse_raw_operand()?);
        }
        self.leave_nesting();
        self.expect(TokenKind::CloseParen)?;
        if !is_known_function(function) {
            return Err(invalid_function(function));
        }
        Ok(RawOperand::Call {
            function,
            arguments,
        })
    }

    fn resolve_value(&mut self, token: Token) -> ValueRef {
        let placeholder = self.text(token);
        let value = match self.context.resolve_value(placeholder) {
            Some(value) => value.clone(),
            None => {
                self.defer_with(|| {
                    format!(
                        "An expression attribute value used in expression is not defined; attribute value: {placeholder}"
                    )
                });
                AttributeValue::Null
            }
        };
        ValueRef {
            placeholder: placeholder.to_string(),
            value,
        }
    }

    pub(crate) fn parse_path(&mut self) -> Parsed<Path> {
        let first = self.parse_name()?;
        let mut path = Path::new(vec![first]).ok_or_else(|| self.syntax_error())?;
        let mut depth = 1usize;
        loop {
            match self.peek().kind {
                TokenKind::Dot => {
                    self.advance();
                    path.push(self.parse_name()?);
                }
                TokenKind::OpenBracket => {
                    self.advance();
                    let index_token = self.peek();
                    if index_token.kind != TokenKind::Integer {
                        return Err(self.syntax_error());
                    }
                    // DynamoDB reads an index as a Java int: past 2^31 - 1 it is out of range.
                    let index: u32 = self
                        .text(index_token)
                        .parse::<i32>()
                        .ok()
                        .and_then(|index| u32::try_from(index).ok())
                        .ok_or_else(|| {
                            "List index is not within the allowable range".to_string()
                        })?;
                    self.advance();
                    self.expect(TokenKind::CloseBracket)?;
                    path.push(PathElement::Index(index));
                }
                _ => break,
            }
            depth += 1;
        }
        if depth > crate::ast::PATH_DEPTH_MAX {
            self.defer_with(|| {
                format!("The document path has too many nesting levels; nesting levels: {depth}")
            });
        }
        Ok(path)
    }

    fn parse_name(&mut self) -> Parsed<PathElement> {
        let token = self.peek();
        match token.kind {
            TokenKind::Identifier => {
                let name = self.text(token);
                if GRAMMAR_KEYWORDS
                    .iter()
                    .any(|keyword| name.eq_ignore_ascii_case(keyword))
                {
                    return Err(self.syntax_error());
                }
                self.advance();
                if is_reserved_word(name) {
                    self.defer_with(|| {
                        format!("Attribute name is a reserved keyword; reserved keyword: {name}")
                    });
                }
                Ok(PathElement::attribute(name))
            }
            TokenKind::NamePlaceholder => {
                self.advance();
                let placeholder = self.text(token);
                let name = match self.context.resolve_name(placeholder) {
                    Some(name) => name,
                    None => {
                        self.defer_with(|| {
                            format!(
                                "An expression attribute name used in the document path is not defined; attribute name: {placeholder}"
                            )
                        });
                        placeholder
                    }
                };
                Ok(PathElement::Attribute {
                    name: name.to_string(),
                    placeholder: Some(placeholder.to_string()),
                })
            }
            _ => Err(self.syntax_error()),
        }
    }

    // ---- updates -----------------------------------------------------------------------

    /// The section keyword at the cursor, with its index in [`UPDATE_SECTIONS`].
    fn parse_section_keyword(&mut self) -> Parsed<(usize, &'static str)> {
        let token = self.peek();
        for (index, section) in UPDATE_SECTIONS.into_iter().enumerate() {
            if self.is_keyword(token, section) {
                self.advance();
                return Ok((index, section));
            }
        }
        Err(self.syntax_error())
    }

    /// `operand`, `operand + operand` or `operand - operand`, each operand possibly
    /// parenthesized, or the whole sum in one pair of parentheses (`(a + :v)`).
    fn parse_set_value(&mut self) -> Parsed<SetValue> {
        if !self.opens_sum() {
            return self.parse_set_sum();
        }
        self.expect(TokenKind::OpenParen)?;
        self.enter_nesting()?;
        let value = self.parse_set_sum()?;
        self.leave_nesting();
        self.expect(TokenKind::CloseParen)?;
        Ok(value)
    }

    /// Whether the `(` at the cursor holds a whole `x + y` / `x - y`: a `+` or `-` sits
    /// directly inside it.
    fn opens_sum(&self) -> bool {
        if self.peek().kind != TokenKind::OpenParen {
            return false;
        }
        let Some(close) = self.matching_close_paren() else {
            return false;
        };
        let mut depth = 0usize;
        for token in self.tokens.get(self.position..close).unwrap_or_default() {
            match token.kind {
                TokenKind::OpenParen => depth += 1,
                TokenKind::CloseParen => depth = depth.saturating_sub(1),
                TokenKind::Plus | TokenKind::Minus if depth == 1 => return true,
                _ => {}
            }
        }
        false
    }

    fn parse_set_sum(&mut self) -> Parsed<SetValue> {
        let first = update_operand(self.parse_raw_operand()?)?;
        Ok(match self.peek().kind {
            TokenKind::Plus => {
                self.advance();
                self.count_operator();
                SetValue::Plus(first, update_operand(self.parse_raw_operand()?)?)
            }
            TokenKind::Minus => {
                self.advance();
                self.count_operator();
                SetValue::Minus(first, update_operand(self.parse_raw_operand()?)?)
            }
            _ => SetValue::Operand(first),
        })
    }

    /// The index of the `)` that closes the `(` at the cursor.
    fn matching_close_paren(&self) -> Option<usize> {
        let mut depth = 0usize;
        for (index, token) in self.tokens.iter().enumerate().skip(self.position) {
            match token.kind {
                TokenKind::OpenParen => depth += 1,
                TokenKind::CloseParen => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(index);
                    }
                }
                TokenKind::EndOfInput => return None,
                _ => {}
            }
        }
        None
    }

    fn parse_update_action(&mut self, section: &'static str) -> Parsed<UpdateAction> {
        let path = self.parse_path()?;
        match section {
            "SET" => {
                self.expect(TokenKind::Equal)?;
                let value = self.parse_set_value()?;
                Ok(UpdateAction::Set { path, value })
            }
            "REMOVE" => Ok(UpdateAction::Remove { path }),
            _ => {
                let token = self.expect(TokenKind::ValuePlaceholder)?;
                let value = self.resolve_value(token);
                if section == "ADD" {
                    Ok(UpdateAction::Add {
                        path,
                        value,
                        lists_allowed: false,
                    })
                } else {
                    Ok(UpdateAction::Delete {
                        path,
                        value: Some(value),
                    })
                }
            }
        }
    }
}

// ---- turning raw operands into the operand kinds of each place --------------------------

/// An operand of a comparison, BETWEEN, IN or a condition function's value argument.
fn condition_operand(raw: RawOperand<'_>) -> Parsed<Operand> {
    match raw {
        RawOperand::Path(path) => Ok(Operand::Path(path)),
        RawOperand::Value(value) => Ok(Operand::Value(value)),
        RawOperand::Call {
            function,
            arguments,
        } => {
            if function != "size" {
                return Err(misused_function(function));
            }
            Ok(Operand::Size(Box::new(path_or_value_argument(
                function, arguments,
            )?)))
        }
    }
}

fn single_path_argument(function: &str, arguments: Vec<RawOperand<'_>>) -> Parsed<Path> {
    let count = arguments.len();
    let mut arguments = arguments.into_iter();
    match (arguments.next(), arguments.next()) {
        (Some(RawOperand::Path(path)), None) => Ok(path),
        (Some(_), None) => Err(path_required(function)),
        _ => Err(operand_count_error(function, count)),
    }
}

/// The one argument of `size`: a path or, as DynamoDB also accepts, a value.
fn path_or_value_argument(function: &str, arguments: Vec<RawOperand<'_>>) -> Parsed<Operand> {
    let count = arguments.len();
    let mut arguments = arguments.into_iter();
    match (arguments.next(), arguments.next()) {
        (Some(first), None) => path_or_value(function, first),
        _ => Err(operand_count_error(function, count)),
    }
}

fn path_or_value(function: &str, raw: RawOperand<'_>) -> Parsed<Operand> {
    match raw {
        RawOperand::Path(path) => Ok(Operand::Path(path)),
        RawOperand::Value(value) => Ok(Operand::Value(value)),
        RawOperand::Call { .. } => Err(path_required(function)),
    }
}

fn two_arguments<'t>(
    function: &str,
    arguments: Vec<RawOperand<'t>>,
) -> Parsed<(RawOperand<'t>, RawOperand<'t>)> {
    let count = arguments.len();
    let mut arguments = arguments.into_iter();
    match (arguments.next(), arguments.next(), arguments.next()) {
        (Some(first), Some(second), None) => Ok((first, second)),
        _ => Err(operand_count_error(function, count)),
    }
}

/// A function call used as a whole condition.
fn condition_function(function: &str, arguments: Vec<RawOperand<'_>>) -> Parsed<Condition> {
    match function {
        "attribute_exists" => Ok(Condition::AttributeExists(single_path_argument(
            function, arguments,
        )?)),
        "attribute_not_exists" => Ok(Condition::AttributeNotExists(single_path_argument(
            function, arguments,
        )?)),
        "attribute_type" => {
            let (first, second) = two_arguments(function, arguments)?;
            let value = path_or_value(function, first)?;
            match second {
                RawOperand::Value(type_name) => Ok(Condition::AttributeType { value, type_name }),
                RawOperand::Path(_) => Err(format!(
                    "Incorrect operand type for operator or function; operator or function: {function}, operand type: PATH"
                )),
                RawOperand::Call { function: inner, .. } => Err(misused_function(inner)),
            }
        }
        "begins_with" => {
            let (first, second) = two_arguments(function, arguments)?;
            Ok(Condition::BeginsWith {
                value: condition_operand(first)?,
                prefix: condition_operand(second)?,
            })
        }
        "contains" => {
            let (first, second) = two_arguments(function, arguments)?;
            Ok(Condition::Contains {
                container: condition_operand(first)?,
                member: condition_operand(second)?,
            })
        }
        // `size`, `if_not_exists` and `list_append` do not yield a condition.
        _ => Err(misused_function(function)),
    }
}

/// An operand of a `SET` action.
fn update_operand(raw: RawOperand<'_>) -> Parsed<UpdateOperand> {
    update_operand_in(raw, false)
}

/// An operand of a `SET` action, `inside_function` when it is an argument of a function.
/// DynamoDB accepts `if_not_exists` anywhere (`if_not_exists(a, if_not_exists(b, :v))`,
/// `list_append(if_not_exists(a, :empty), :v)`) but `list_append` only as the whole operand:
/// inside `list_append` or `if_not_exists` it is "not allowed to be used this way".
fn update_operand_in(raw: RawOperand<'_>, inside_function: bool) -> Parsed<UpdateOperand> {
    match raw {
        RawOperand::Path(path) => Ok(UpdateOperand::Path(path)),
        RawOperand::Value(value) => Ok(UpdateOperand::Value(value)),
        RawOperand::Call {
            function,
            arguments,
        } => match function {
            "if_not_exists" => {
                let (first, second) = two_arguments(function, arguments)?;
                let RawOperand::Path(path) = first else {
                    return Err(path_required(function));
                };
                Ok(UpdateOperand::IfNotExists(
                    path,
                    Box::new(update_operand_in(second, true)?),
                ))
            }
            "list_append" => {
                if inside_function {
                    return Err(misused_function(function));
                }
                let (first, second) = two_arguments(function, arguments)?;
                Ok(UpdateOperand::ListAppend(
                    Box::new(update_operand_in(first, true)?),
                    Box::new(update_operand_in(second, true)?),
                ))
            }
            _ => Err(format!(
                "The function is not allowed in an update expression; function: {function}"
            )),
        },
    }
}

#[cfg(test)]
#[path = "parser_tests.rs"]
mod tests;
