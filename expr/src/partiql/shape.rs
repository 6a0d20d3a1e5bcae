//! A statement's shape, for recordings: the statement with every string and number literal
//! written `?` like its parameters, so that calls differing only in their values group
//! together, and each `?`'s value in order (a literal's text or a parameter's number).
//! Strings that name a map literal's attributes (`{'pk': …}`) stay: they are the schema.

use shoal_model::ApiError;

use super::lexer::{tokenize, Token, TokenKind};

/// What one `?` of a shape stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slot {
    /// A literal of the statement as sent: its type (`S` or `N`) and text (a number with its
    /// sign).
    Literal { kind: &'static str, text: String },
    /// The request's parameter of this number (0 for the first `?`).
    Parameter(usize),
}

/// A statement's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementShape {
    /// The statement, tokens separated by single spaces where the statement had space.
    pub text: String,
    /// Each `?` of `text`, in order.
    pub slots: Vec<Slot>,
    /// Each `name = ?` (and a map literal's `'name': ?`): the attribute and its slot's
    /// number, where a key's value is found.
    pub equalities: Vec<(String, usize)>,
}

impl StatementShape {
    /// The slot attribute `name` is compared with `=` (or given in a map literal): where a
    /// key's value is found; the first when there are several.
    pub fn equality_slot(&self, name: &str) -> Option<usize> {
        self.equalities
            .iter()
            .find(|(attribute, _)| attribute == name)
            .map(|(_, slot)| *slot)
    }
}

/// Whether a token ends a value, so that a `-` after it subtracts rather than negates.
fn ends_value(kind: &TokenKind<'_>) -> bool {
    matches!(
        kind,
        TokenKind::Word(_)
            | TokenKind::QuotedIdentifier(_)
            | TokenKind::String(_)
            | TokenKind::Number(_)
            | TokenKind::Parameter
            | TokenKind::CloseParen
            | TokenKind::CloseBracket
            | TokenKind::CloseBrace
            | TokenKind::CloseBag
    )
}

/// The shape of `statement`; refused as the parser refuses a statement the lexer cannot read.
pub fn statement_shape(statement: &str) -> Result<StatementShape, ApiError> {
    let tokens = tokenize(statement)?;
    // Token columns count characters; the text is cut by bytes.
    let offsets: Vec<usize> = statement
        .char_indices()
        .map(|(at, _)| at)
        .chain(std::iter::once(statement.len()))
        .collect();
    let span = |token: &Token<'_>| {
        let start = offsets
            .get(token.column - 1)
            .copied()
            .unwrap_or(statement.len());
        let end = offsets
            .get(token.column - 1 + token.length)
            .copied()
            .unwrap_or(statement.len());
        (start, end)
    };
    let mut shape = StatementShape {
        text: String::with_capacity(statement.len()),
        slots: Vec::new(),
        equalities: Vec::new(),
    };
    let mut parameters = 0;
    let mut previous_end = 0;
    let mut at = 0;
    while at < tokens.len() {
        let token = &tokens[at];
        let first = at;
        if token.kind == TokenKind::EndOfInput {
            break;
        }
        let (start, mut end) = span(token);
        if !shape.text.is_empty() && start > previous_end {
            shape.text.push(' ');
        }
        let next = tokens.get(at + 1).map(|t| &t.kind);
        let negated_number = matches!(token.kind, TokenKind::Operator("-"))
            && !at
                .checked_sub(1)
                .is_some_and(|p| ends_value(&tokens[p].kind))
            && matches!(next, Some(TokenKind::Number(_)));
        let slot = match &token.kind {
            // A map literal's attribute name.
            TokenKind::String(_) if next == Some(&TokenKind::Colon) => None,
            TokenKind::String(text) => Some(Slot::Literal {
                kind: "S",
                text: text.to_string(),
            }),
            TokenKind::Number(text) => Some(Slot::Literal {
                kind: "N",
                text: text.to_string(),
            }),
            _ if negated_number => {
                at += 1;
                end = span(&tokens[at]).1;
                let TokenKind::Number(text) = &tokens[at].kind else {
                    unreachable!("checked above");
                };
                Some(Slot::Literal {
                    kind: "N",
                    text: format!("-{text}"),
                })
            }
            TokenKind::Parameter => {
                parameters += 1;
                Some(Slot::Parameter(parameters - 1))
            }
            _ => None,
        };
        match slot {
            Some(slot) => {
                // `name = ?`, or `'name': ?` in a map literal.
                let before = |back: usize| first.checked_sub(back).map(|i| &tokens[i].kind);
                let compared = match (before(2), before(1)) {
                    (Some(TokenKind::Word(name)), Some(TokenKind::Operator("="))) => {
                        Some(name.to_string())
                    }
                    (Some(TokenKind::QuotedIdentifier(name)), Some(TokenKind::Operator("=")))
                    | (Some(TokenKind::String(name)), Some(TokenKind::Colon)) => {
                        Some(name.to_string())
                    }
                    _ => None,
                };
                if let Some(name) = compared {
                    shape.equalities.push((name, shape.slots.len()));
                }
                shape.text.push('?');
                shape.slots.push(slot);
            }
            None => shape.text.push_str(&statement[start..end]),
        }
        previous_end = end;
        at += 1;
    }
    Ok(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_become_parameters_and_keys_are_found() {
        let shape =
            statement_shape(r#"SELECT * FROM "Orders"   WHERE customer = 'c#1' AND placed = -5"#)
                .unwrap();
        assert_eq!(
            shape.text,
            r#"SELECT * FROM "Orders" WHERE customer = ? AND placed = ?"#
        );
        assert_eq!(
            shape.slots,
            [
                Slot::Literal {
                    kind: "S",
                    text: "c#1".into()
                },
                Slot::Literal {
                    kind: "N",
                    text: "-5".into()
                }
            ]
        );
        assert_eq!(
            shape.equalities,
            [("customer".to_string(), 0), ("placed".to_string(), 1)]
        );
        // The same statement with parameters has the same shape.
        let parameters =
            statement_shape(r#"SELECT * FROM "Orders" WHERE customer = ? AND placed = ?"#).unwrap();
        assert_eq!(parameters.text, shape.text);
        assert_eq!(parameters.slots, [Slot::Parameter(0), Slot::Parameter(1)]);
        // A map literal keeps its attribute names; a subtraction keeps its operator.
        let insert =
            statement_shape("INSERT INTO Orders VALUE {'customer': ?, 'n': 7 - 2}").unwrap();
        assert_eq!(
            insert.text,
            "INSERT INTO Orders VALUE {'customer': ?, 'n': ? - ?}"
        );
        assert_eq!(insert.equalities[0], ("customer".to_string(), 0));
        assert_eq!(insert.slots.len(), 3);
    }
}
