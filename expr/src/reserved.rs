//! DynamoDB's reserved words: names that may not appear bare in an expression and must be
//! written through an `ExpressionAttributeNames` placeholder.

use std::sync::OnceLock;

/// The list, one upper-case word per line, sorted (copied from DynamoDB's documentation).
const RESERVED_WORDS: &str = include_str!("reserved_words.txt");

/// Longest reserved word; longer identifiers skip the lookup.
const RESERVED_WORD_BYTES_MAX: usize = 16;

fn sorted_words() -> &'static [&'static str] {
    static WORDS: OnceLock<Vec<&'static str>> = OnceLock::new();
    WORDS.get_or_init(|| {
        let mut words: Vec<&'static str> = RESERVED_WORDS.lines().map(str::trim).collect();
        words.sort_unstable();
        words
    })
}

/// Whether `word` is reserved (reserved words are case-insensitive).
pub(crate) fn is_reserved_word(word: &str) -> bool {
    if word.len() > RESERVED_WORD_BYTES_MAX {
        return false;
    }
    let upper = word.to_ascii_uppercase();
    sorted_words().binary_search(&upper.as_str()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_reserved_words_in_any_case() {
        assert!(is_reserved_word("status"));
        assert!(is_reserved_word("STATUS"));
        assert!(is_reserved_word("Name"));
        assert!(is_reserved_word("size"));
        assert!(!is_reserved_word("price"));
        assert!(!is_reserved_word("my_attr"));
    }

    #[test]
    fn list_is_sorted_and_upper_case() {
        let words: Vec<&str> = RESERVED_WORDS.lines().collect();
        assert!(words.len() > 500);
        assert!(words.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(words.iter().all(|w| *w == w.to_ascii_uppercase()));
        assert!(words.iter().all(|w| w.len() <= RESERVED_WORD_BYTES_MAX));
        assert!(words.iter().all(|w| is_reserved_word(w)));
    }
}
