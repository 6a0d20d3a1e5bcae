//! Splits expression text into tokens. Unknown characters become `Unknown` tokens so the
//! parser can report them as DynamoDB does (`Syntax error; token: "&", near: "a &"`).

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// A bare name or keyword: `[A-Za-z][A-Za-z0-9_]*`.
    Identifier,
    /// `#name`.
    NamePlaceholder,
    /// `:value`.
    ValuePlaceholder,
    /// Decimal digits (list indexes).
    Integer,
    Equal,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
    OpenParen,
    CloseParen,
    OpenBracket,
    CloseBracket,
    Comma,
    Dot,
    Plus,
    Minus,
    Unknown,
    EndOfInput,
}

/// A token and where it sits in the source (byte offsets). Offsets are u32 (expressions
/// are at most a few KiB) to keep the token vector small: tokenizing is on every request's
/// path, and a vector past 1 KiB takes the allocator's slower large-chunk route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: TokenKind,
    pub start: u32,
    pub end: u32,
}

impl Token {
    /// The token's bytes in the source.
    pub(crate) fn span(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// A source offset as stored in a token; saturates past 4 GiB, far beyond any expression
/// the parser accepts (it checks the size before tokenizing).
fn offset(position: usize) -> u32 {
    u32::try_from(position).unwrap_or(u32::MAX)
}

fn is_name_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Tokenizes `source`; the last token is always `EndOfInput`.
pub(crate) fn tokenize(source: &str) -> Vec<Token> {
    let bytes = source.as_bytes();
    // Typical expressions have about one token per four bytes; reserving a little more up
    // front saves the reallocations of a growing vector.
    let mut tokens = Vec::with_capacity(bytes.len() / 3 + 2);
    let mut position = 0;
    while position < bytes.len() {
        let start = position;
        let byte = bytes[position];
        let kind = match byte {
            b' ' | b'\t' | b'\n' | b'\r' => {
                position += 1;
                continue;
            }
            b'#' | b':' => {
                position += 1;
                while position < bytes.len() && is_name_char(bytes[position]) {
                    position += 1;
                }
                if position == start + 1 {
                    TokenKind::Unknown
                } else if byte == b'#' {
                    TokenKind::NamePlaceholder
                } else {
                    TokenKind::ValuePlaceholder
                }
            }
            b'0'..=b'9' => {
                while position < bytes.len() && bytes[position].is_ascii_digit() {
                    position += 1;
                }
                TokenKind::Integer
            }
            b'A'..=b'Z' | b'a'..=b'z' | b'_' => {
                while position < bytes.len() && is_name_char(bytes[position]) {
                    position += 1;
                }
                // DynamoDB's tokenizer takes no name that starts with `_`: the whole word is
                // the bad token of its syntax error.
                if byte == b'_' {
                    TokenKind::Unknown
                } else {
                    TokenKind::Identifier
                }
            }
            b'<' => match bytes.get(position + 1) {
                Some(b'=') => {
                    position += 2;
                    TokenKind::LessOrEqual
                }
                Some(b'>') => {
                    position += 2;
                    TokenKind::NotEqual
                }
                _ => {
                    position += 1;
                    TokenKind::Less
                }
            },
            b'>' => {
                if bytes.get(position + 1) == Some(&b'=') {
                    position += 2;
                    TokenKind::GreaterOrEqual
                } else {
                    position += 1;
                    TokenKind::Greater
                }
            }
            _ => {
                let single = match byte {
                    b'=' => TokenKind::Equal,
                    b'(' => TokenKind::OpenParen,
                    b')' => TokenKind::CloseParen,
                    b'[' => TokenKind::OpenBracket,
                    b']' => TokenKind::CloseBracket,
                    b',' => TokenKind::Comma,
                    b'.' => TokenKind::Dot,
                    b'+' => TokenKind::Plus,
                    b'-' => TokenKind::Minus,
                    _ => TokenKind::Unknown,
                };
                // Step over a whole UTF-8 character so token text stays on char boundaries.
                position += if byte.is_ascii() {
                    1
                } else {
                    let character = source.get(start..).and_then(|rest| rest.chars().next());
                    character.map_or(1, char::len_utf8)
                };
                single
            }
        };
        tokens.push(Token {
            kind,
            start: offset(start),
            end: offset(position),
        });
    }
    tokens.push(Token {
        kind: TokenKind::EndOfInput,
        start: offset(bytes.len()),
        end: offset(bytes.len()),
    });
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(source: &str) -> Vec<TokenKind> {
        tokenize(source).iter().map(|token| token.kind).collect()
    }

    #[test]
    fn tokenizes_every_kind() {
        use TokenKind::*;
        assert_eq!(
            kinds("a.#b[12] <> :v_1 <= >= < > = ( ) , + - &"),
            vec![
                Identifier,
                Dot,
                NamePlaceholder,
                OpenBracket,
                Integer,
                CloseBracket,
                NotEqual,
                ValuePlaceholder,
                LessOrEqual,
                GreaterOrEqual,
                Less,
                Greater,
                Equal,
                OpenParen,
                CloseParen,
                Comma,
                Plus,
                Minus,
                Unknown,
                EndOfInput
            ]
        );
    }

    #[test]
    fn a_name_starting_with_an_underscore_is_one_unknown_token() {
        let source = "_a_b.c_";
        let tokens = tokenize(source);
        assert_eq!(tokens[0].kind, TokenKind::Unknown);
        assert_eq!(&source[tokens[0].span()], "_a_b");
        assert_eq!(tokens[2].kind, TokenKind::Identifier);
    }

    #[test]
    fn lone_sigils_and_non_ascii_are_unknown_tokens_on_char_boundaries() {
        let source = "# : é";
        let tokens = tokenize(source);
        assert_eq!(tokens[0].kind, TokenKind::Unknown);
        assert_eq!(tokens[1].kind, TokenKind::Unknown);
        assert_eq!(tokens[2].kind, TokenKind::Unknown);
        assert_eq!(&source[tokens[2].span()], "é");
    }
}
