//! Splits a PartiQL statement into tokens.
//!
//! PartiQL's lexical rules differ from the expression language's (SPEC-2 §3.2): strings are
//! single-quoted (`''` is a quote inside one), identifiers are bare or double-quoted (case
//! kept, any character), `?` is a positional parameter, `<<` `>>` delimit a set, `--` starts
//! a comment to the end of the line. A `#`, an unterminated `/*`, an unterminated string or
//! an exponent beyond 32 bits are refused here with DynamoDB's empty "not well formed" text.

use shoal_model::ApiError;

use super::not_well_formed;

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TokenKind {
    /// A bare word: a keyword or a name (`[A-Za-z_][A-Za-z0-9_$]*`), as written.
    Word(String),
    /// A double-quoted identifier, unquoted.
    QuotedIdentifier(String),
    /// A single-quoted string, unquoted.
    String(String),
    /// A number literal's text (`12`, `2.5`, `1e3`); a sign is a separate token.
    Number(String),
    /// `?`.
    Parameter,
    /// `=`, `<>`, `!=`, `<`, `<=`, `>`, `>=`, `+`, `-`, `*`, `/`, `||`.
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
pub(crate) struct Token {
    pub kind: TokenKind,
    pub column: usize,
    pub length: usize,
}

impl Token {
    /// The token's word in upper case, if it is a bare word.
    pub(crate) fn keyword(&self) -> Option<String> {
        match &self.kind {
            TokenKind::Word(word) => Some(word.to_ascii_uppercase()),
            _ => None,
        }
    }

    /// Whether the token is the bare word `keyword` (any case).
    pub(crate) fn is_keyword(&self, keyword: &str) -> bool {
        matches!(&self.kind, TokenKind::Word(word) if word.eq_ignore_ascii_case(keyword))
    }
}

/// Tokenizes `statement`; the last token is always `EndOfInput`.
pub(crate) fn tokenize(statement: &str) -> Result<Vec<Token>, ApiError> {
    let chars: Vec<char> = statement.chars().collect();
    let mut tokens = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let start = at;
        let kind = match c {
            c if c.is_whitespace() => {
                at += 1;
                continue;
            }
            '-' if chars.get(at + 1) == Some(&'-') => {
                while at < chars.len() && chars[at] != '\n' {
                    at += 1;
                }
                continue;
            }
            '/' if chars.get(at + 1) == Some(&'*') => {
                let close = (at + 2..chars.len().saturating_sub(1))
                    .find(|&i| chars[i] == '*' && chars[i + 1] == '/');
                match close {
                    Some(close) => {
                        at = close + 2;
                        continue;
                    }
                    None => return Err(not_well_formed("")),
                }
            }
            '#' => return Err(not_well_formed("")),
            '\'' => {
                let (text, end) = quoted(&chars, at, '\'')?;
                at = end;
                TokenKind::String(text)
            }
            '"' => {
                let (text, end) = quoted(&chars, at, '"')?;
                at = end;
                TokenKind::QuotedIdentifier(text)
            }
            c if c.is_ascii_digit()
                || (c == '.' && chars.get(at + 1).is_some_and(char::is_ascii_digit)) =>
            {
                let end = number_end(&chars, at)?;
                let text: String = chars[at..end].iter().collect();
                at = end;
                TokenKind::Number(text)
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == '$' => {
                let mut end = at + 1;
                while end < chars.len()
                    && (chars[end].is_ascii_alphanumeric()
                        || chars[end] == '_'
                        || chars[end] == '$')
                {
                    end += 1;
                }
                let text: String = chars[at..end].iter().collect();
                at = end;
                TokenKind::Word(text)
            }
            _ => {
                let two: String = chars[at..(at + 2).min(chars.len())].iter().collect();
                let (kind, width) = match two.as_str() {
                    "<<" => (TokenKind::OpenBag, 2),
                    ">>" => (TokenKind::CloseBag, 2),
                    "<>" => (TokenKind::Operator("<>"), 2),
                    "!=" => (TokenKind::Operator("<>"), 2),
                    "<=" => (TokenKind::Operator("<="), 2),
                    ">=" => (TokenKind::Operator(">="), 2),
                    "||" => (TokenKind::Operator("||"), 2),
                    _ => {
                        let kind = match c {
                            '=' => TokenKind::Operator("="),
                            '<' => TokenKind::Operator("<"),
                            '>' => TokenKind::Operator(">"),
                            '+' => TokenKind::Operator("+"),
                            '-' => TokenKind::Operator("-"),
                            '*' => TokenKind::Operator("*"),
                            '/' => TokenKind::Operator("/"),
                            '%' => TokenKind::Operator("%"),
                            '?' => TokenKind::Parameter,
                            '(' => TokenKind::OpenParen,
                            ')' => TokenKind::CloseParen,
                            '[' => TokenKind::OpenBracket,
                            ']' => TokenKind::CloseBracket,
                            '{' => TokenKind::OpenBrace,
                            '}' => TokenKind::CloseBrace,
                            ',' => TokenKind::Comma,
                            '.' => TokenKind::Dot,
                            ':' => TokenKind::Colon,
                            ';' => TokenKind::Semicolon,
                            _ => return Err(not_well_formed("")),
                        };
                        (kind, 1)
                    }
                };
                at += width;
                kind
            }
        };
        tokens.push(Token {
            kind,
            column: start + 1,
            length: at - start,
        });
    }
    tokens.push(Token {
        kind: TokenKind::EndOfInput,
        column: chars.len() + 1,
        length: 0,
    });
    Ok(tokens)
}

/// A quoted string or identifier starting at `start` (the quote); a doubled quote stands
/// for one. Returns the text and the index after the closing quote.
fn quoted(chars: &[char], start: usize, quote: char) -> Result<(String, usize), ApiError> {
    let mut text = String::new();
    let mut at = start + 1;
    loop {
        match chars.get(at) {
            None => return Err(not_well_formed("")),
            Some(&c) if c == quote => {
                if chars.get(at + 1) == Some(&quote) {
                    text.push(quote);
                    at += 2;
                } else {
                    return Ok((text, at + 1));
                }
            }
            Some(&c) => {
                text.push(c);
                at += 1;
            }
        }
    }
}

/// The end of the number literal starting at `start`: digits, an optional fraction and an
/// optional exponent whose value must fit 32 bits (DynamoDB's parser reads it as an int).
fn number_end(chars: &[char], start: usize) -> Result<usize, ApiError> {
    let digits_from = |mut at: usize| {
        while chars.get(at).is_some_and(char::is_ascii_digit) {
            at += 1;
        }
        at
    };
    let mut at = digits_from(start);
    if chars.get(at) == Some(&'.') {
        at = digits_from(at + 1);
    }
    if matches!(chars.get(at), Some('e' | 'E')) {
        let mut exponent_at = at + 1;
        if matches!(chars.get(exponent_at), Some('+' | '-')) {
            exponent_at += 1;
        }
        let end = digits_from(exponent_at);
        if end > exponent_at {
            let exponent: String = chars[at + 1..end].iter().collect();
            if exponent.parse::<i32>().is_err() {
                return Err(not_well_formed(""));
            }
            at = end;
        }
    }
    Ok(at)
}
