//! DynamoDB's reserved words: names that may not appear bare in an expression and must be
//! written through an `ExpressionAttributeNames` placeholder.

use std::sync::OnceLock;

/// The list, one upper-case word per line, sorted (copied from DynamoDB's documentation).
const RESERVED_WORDS: &str = include_str!("reserved_words.txt");

/// Longest reserved word; longer identifiers skip the lookup.
const RESERVED_WORD_BYTES_MAX: usize = 16;

/// A word of at most [`RESERVED_WORD_BYTES_MAX`] bytes, upper-cased and zero-padded into one
/// big-endian integer: integers order like the words (no word holds a zero byte), so the
/// lookup is a binary search over integers, with no allocation and no string comparison.
fn packed(word: &str) -> Option<u128> {
    if word.len() > RESERVED_WORD_BYTES_MAX {
        return None;
    }
    let mut bytes = [0u8; RESERVED_WORD_BYTES_MAX];
    bytes[..word.len()].copy_from_slice(word.as_bytes());
    bytes.make_ascii_uppercase();
    Some(u128::from_be_bytes(bytes))
}

fn sorted_packed_words() -> &'static [u128] {
    static WORDS: OnceLock<Vec<u128>> = OnceLock::new();
    WORDS.get_or_init(|| {
        let mut words: Vec<u128> = RESERVED_WORDS
            .lines()
            .filter_map(|word| packed(word.trim()))
            .collect();
        words.sort_unstable();
        words
    })
}

/// Whether `word` is reserved (reserved words are case-insensitive).
pub(crate) fn is_reserved_word(word: &str) -> bool {
    // Identifiers never hold a zero byte; one that did could alias a shorter word.
    if word.as_bytes().contains(&0) {
        return false;
    }
    packed(word).is_some_and(|word| sorted_packed_words().binary_search(&word).is_ok())
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
        assert!(!is_reserved_word("size\0"));
        assert!(!is_reserved_word("a_name_longer_than_sixteen_bytes"));
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
