//! Splits a PartiQL statement into tokens.
//!
//! PartiQL's lexical rules differ from the expression language's (SPEC-2 §3.2): strings are
//! single-quoted (`''` is a quote inside one), identifiers are bare or double-quoted (case
//! kept, any character), `?` is a positional parameter, `<<` `>>` delimit a set, `--` starts
//! a comment to the end of the line. A `#`, an unterminated `/*`, an unterminated string or
//! an exponent beyond 32 bits are refused here with DynamoDB's empty "not well formed" text.

use std::borrow::Cow;

use shoal_model::ApiError;

use super::not_well_formed;

/// What a token is; text borrows from the statement where it can.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TokenKind<'s> {
    /// A bare word: a keyword or a name (`[A-Za-z_$][A-Za-z0-9_$]*`), as written.
    Word(&'s str),
    /// A double-quoted identifier, unquoted.
    QuotedIdentifier(Cow<'s, str>),
    /// A single-quoted string, unquoted.
    String(Cow<'s, str>),
    /// A number literal's text (`12`, `2.5`, `1e3`); a sign is a separate token.
    Number(&'s str),
    /// `?`.
    Parameter,
    /// `=`, `<>` (also written `!=`), `<`, `<=`, `>`, `>=`, `+`, `-`, `*`, `/`, `%`, `||`.
    Operator(&'static str),
    OpenParen,
    CloseParen,
    OpenBracket,
    CloseBracket,
    OpenBrace,
    CloseBrace,
    OpenBag,
    CloseBag,
    Comma,
    Dot,
    Colon,
    Semicolon,
    EndOfInput,
}

/// A token and its position: 1-based column of its first character and its length in
/// characters, the `at 1:<col>:<len>` DynamoDB's texts quote.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token<'s> {
    pub kind: TokenKind<'s>,
    pub column: usize,
    pub length: usize,
}

impl Token<'_> {
    /// Whether the token is the bare word `keyword` (any case).
    pub(crate) fn is_keyword(&self, keyword: &str) -> bool {
        matches!(&self.kind, TokenKind::Word(word) if word.eq_ignore_ascii_case(keyword))
    }
}

/// Tokenizes `statement`; the last token is always `EndOfInput`.
pub(crate) fn tokenize(statement: &str) -> Result<Vec<Token<'_>>, ApiError> {
    let bytes = statement.as_bytes();
    let mut tokens = Vec::with_capacity(statement.len() / 3 + 2);
    let mut at = 0;
    // Columns count characters: `counted` is the byte offset up to which `column` counts.
    // In ASCII text (nearly every statement) they are byte offsets.
    let ascii = statement.is_ascii();
    let (mut counted, mut column) = (0, 1);
    let mut column_of = |offset: usize| {
        if ascii {
            return offset + 1;
        }
        column += statement[counted..offset].chars().count();
        counted = offset;
        column
    };
    let length_of = |range: std::ops::Range<usize>| {
        if ascii {
            range.len()
        } else {
            statement[range].chars().count()
        }
    };
    while at < bytes.len() {
        let c = bytes[at];
        let start = at;
        let kind = match c {
            c if c.is_ascii_whitespace() => {
                at += 1;
                continue;
            }
            b'-' if bytes.get(at + 1) == Some(&b'-') => {
                while at < bytes.len() && bytes[at] != b'\n' {
                    at += 1;
                }
                continue;
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => match statement[at + 2..].find("*/") {
                Some(close) => {
                    at += 2 + close + 2;
                    continue;
                }
                None => return Err(not_well_formed("")),
            },
            b'#' => return Err(not_well_formed("")),
            b'\'' => {
                let (text, end) = quoted(statement, at, '\'')?;
                at = end;
                TokenKind::String(text)
            }
            b'"' => {
                let (text, end) = quoted(statement, at, '"')?;
                at = end;
                TokenKind::QuotedIdentifier(text)
            }
            c if c.is_ascii_digit()
                || (c == b'.' && bytes.get(at + 1).is_some_and(u8::is_ascii_digit)) =>
            {
                at = number_end(bytes, at)?;
                TokenKind::Number(&statement[start..at])
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' => {
                at += 1;
                while at < bytes.len()
                    && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_' || bytes[at] == b'$')
                {
                    at += 1;
                }
                TokenKind::Word(&statement[start..at])
            }
            _ => {
                let next = bytes.get(at + 1).copied();
                let (kind, width) = match (c, next) {
                    (b'<', Some(b'<')) => (TokenKind::OpenBag, 2),
                    (b'>', Some(b'>')) => (TokenKind::CloseBag, 2),
                    (b'<', Some(b'>')) | (b'!', Some(b'=')) => (TokenKind::Operator("<>"), 2),
                    (b'<', Some(b'=')) => (TokenKind::Operator("<="), 2),
                    (b'>', Some(b'=')) => (TokenKind::Operator(">="), 2),
                    (b'|', Some(b'|')) => (TokenKind::Operator("||"), 2),
                    _ => {
                        let kind = match c {
                            b'=' => TokenKind::Operator("="),
                            b'<' => TokenKind::Operator("<"),
                            b'>' => TokenKind::Operator(">"),
                            b'+' => TokenKind::Operator("+"),
                            b'-' => TokenKind::Operator("-"),
                            b'*' => TokenKind::Operator("*"),
                            b'/' => TokenKind::Operator("/"),
                            b'%' => TokenKind::Operator("%"),
                            b'?' => TokenKind::Parameter,
                            b'(' => TokenKind::OpenParen,
                            b')' => TokenKind::CloseParen,
                            b'[' => TokenKind::OpenBracket,
                            b']' => TokenKind::CloseBracket,
                            b'{' => TokenKind::OpenBrace,
                            b'}' => TokenKind::CloseBrace,
                            b',' => TokenKind::Comma,
                            b'.' => TokenKind::Dot,
                            b':' => TokenKind::Colon,
                            b';' => TokenKind::Semicolon,
                            _ => return Err(not_well_formed("")),
                        };
                        (kind, 1)
                    }
                };
                at += width;
                kind
            }
        };
        let column = column_of(start);
        let length = length_of(start..at);
        tokens.push(Token {
            kind,
            column,
            length,
        });
    }
    let column = column_of(statement.len());
    tokens.push(Token {
        kind: TokenKind::EndOfInput,
        column,
        length: 0,
    });
    Ok(tokens)
}

/// A quoted string or identifier starting at byte `start` (the quote); a doubled quote
/// stands for one. Returns the text and the byte offset after the closing quote.
fn quoted(statement: &str, start: usize, quote: char) -> Result<(Cow<'_, str>, usize), ApiError> {
    let body = start + 1;
    let mut owned: Option<String> = None;
    let mut from = body;
    loop {
        let Some(found) = statement[from..].find(quote) else {
            return Err(not_well_formed(""));
        };
        let at = from + found;
        let doubled = statement[at + 1..].starts_with(quote);
        if doubled {
            let text = owned.get_or_insert_with(String::new);
            text.push_str(&statement[from..=at]);
            from = at + 2;
            continue;
        }
        let text = match owned {
            Some(mut text) => {
                text.push_str(&statement[from..at]);
                Cow::Owned(text)
            }
            None => Cow::Borrowed(&statement[body..at]),
        };
        return Ok((text, at + 1));
    }
}

/// The end of the number literal starting at `start`: digits, an optional fraction and an
/// optional exponent whose value must fit 32 bits (DynamoDB's parser reads it as an int).
fn number_end(bytes: &[u8], start: usize) -> Result<usize, ApiError> {
    let digits_from = |mut at: usize| {
        while bytes.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        at
    };
    let mut at = digits_from(start);
    if bytes.get(at) == Some(&b'.') {
        at = digits_from(at + 1);
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        let mut exponent_at = at + 1;
        if matches!(bytes.get(exponent_at), Some(b'+' | b'-')) {
            exponent_at += 1;
        }
        let end = digits_from(exponent_at);
        if end > exponent_at {
            // ASCII digits and a sign: valid UTF-8.
            let exponent = std::str::from_utf8(&bytes[at + 1..end]).unwrap_or("");
            if exponent.parse::<i32>().is_err() {
                return Err(not_well_formed(""));
            }
            at = end;
        }
    }
    Ok(at)
}
