//! An expression's shape: its text with every value placeholder (`:v`) replaced by `?` and
//! every name placeholder (`#n`) by the attribute name it stands for, tokens separated by
//! single spaces. Requests that differ only in their values, in how their client named the
//! placeholders, or in spacing have the same shape: a recorder groups requests into access
//! patterns by it.

use crate::lexer::{tokenize, TokenKind};

/// The shape of `source`; `name_of` resolves a name placeholder (`#n`) to its attribute name
/// (None keeps the placeholder). Keywords are upper-cased; a function name keeps its case.
pub fn shape(source: &str, name_of: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(source.len());
    let mut previous = TokenKind::EndOfInput;
    for token in tokenize(source) {
        if token.kind == TokenKind::EndOfInput {
            break;
        }
        let text = source.get(token.span()).unwrap_or_default();
        // No space inside a path (`a.b[0]`), before `(` of a function, `,` or `)`, or after
        // `(`: the shape reads as the expression was written.
        let glued = matches!(
            token.kind,
            TokenKind::Dot
                | TokenKind::OpenBracket
                | TokenKind::CloseBracket
                | TokenKind::Comma
                | TokenKind::CloseParen
        ) || matches!(
            previous,
            TokenKind::Dot | TokenKind::OpenBracket | TokenKind::OpenParen
        ) || (token.kind == TokenKind::OpenParen && previous == TokenKind::Identifier);
        if !out.is_empty() && !glued {
            out.push(' ');
        }
        match token.kind {
            TokenKind::ValuePlaceholder => out.push('?'),
            TokenKind::NamePlaceholder => match name_of(text) {
                Some(name) => out.push_str(&name),
                None => out.push_str(text),
            },
            TokenKind::Identifier if is_keyword(text) => out.push_str(&text.to_ascii_uppercase()),
            _ => out.push_str(text),
        }
        previous = token.kind;
    }
    out
}

fn is_keyword(word: &str) -> bool {
    const KEYWORDS: [&str; 9] = [
        "AND", "OR", "NOT", "BETWEEN", "IN", "SET", "REMOVE", "ADD", "DELETE",
    ];
    KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use super::shape;

    fn names(name: &str) -> Option<String> {
        match name {
            "#s" => Some("status".to_string()),
            "#d" => Some("data".to_string()),
            _ => None,
        }
    }

    #[test]
    fn values_become_question_marks_and_names_resolve() {
        assert_eq!(shape("#s = :st", names), "status = ?");
        assert_eq!(shape("#s=:other", names), "status = ?");
        assert_eq!(
            shape("pk = :p and begins_with(sk, :prefix)", names),
            "pk = ? AND begins_with(sk, ?)"
        );
        assert_eq!(
            shape("set #d.x[2] = :v, n = n + :one remove old", names),
            "SET data.x[2] = ?, n = n + ? REMOVE old"
        );
        assert_eq!(shape("sk between :a and :b", names), "sk BETWEEN ? AND ?");
        assert_eq!(shape("size(#d) > :n", names), "size(data) > ?");
        // An unknown placeholder stays as written.
        assert_eq!(shape("#x = :v", names), "#x = ?");
    }
}
