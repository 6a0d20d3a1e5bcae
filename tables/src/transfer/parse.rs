//! Lines and CSV records turned into items.
//!
//! - DYNAMODB_JSON: one `{"Item": {...}}` per line, exactly what DynamoDB's export writes,
//!   decoded by the model's DynamoDB-JSON decoder (`shoal_model::item_from_json`), so a
//!   value is refused here exactly where a PutItem would refuse it. Other members beside
//!   `Item` are ignored.
//! - CSV: the columns are named by the header line or the request's `HeaderList`. Key
//!   attributes of the table and its GSIs take the type their AttributeDefinitions give
//!   (an `N` cell must be a number, a `B` cell base64); every other column is a string, and
//!   an empty non-key cell is left out of the item, as DynamoDB's import does.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use shoal_model::{item_from_json, AttributeValue, Item, ScalarType};

/// Decodes one DYNAMODB_JSON line; the error is the reason the line is bad.
pub fn dynamodb_json_line(line: &[u8]) -> Result<Item, String> {
    let value: Value =
        serde_json::from_slice(line).map_err(|e| format!("The line is not valid JSON: {e}"))?;
    let Some(item) = value.get("Item") else {
        return Err("The line has no Item member".to_string());
    };
    if !item.is_object() {
        return Err("The line's Item member is not an object".to_string());
    }
    item_from_json(item).map_err(|e| e.message)
}

/// How CSV records become items: the column names and the typed (key) columns.
#[derive(Debug, Clone)]
pub struct CsvColumns {
    names: Vec<String>,
    /// Key attributes of the table and its indexes, by name, with their types.
    typed: BTreeMap<String, ScalarType>,
}

impl CsvColumns {
    pub fn new(names: Vec<String>, typed: BTreeMap<String, ScalarType>) -> CsvColumns {
        CsvColumns { names, typed }
    }

    /// The item of one record; the error is the reason the record is bad.
    pub fn item(&self, record: &csv::ByteRecord) -> Result<Item, String> {
        if record.len() > self.names.len() {
            return Err(format!(
                "The record has {} fields but the header names {} columns",
                record.len(),
                self.names.len()
            ));
        }
        let mut item = Item::new();
        for (name, cell) in self.names.iter().zip(record.iter()) {
            let text = std::str::from_utf8(cell)
                .map_err(|_| format!("The value of column {name} is not UTF-8"))?;
            let value = match self.typed.get(name) {
                // An empty key cell is a missing key: the item check reports it.
                Some(_) if text.is_empty() => continue,
                Some(ScalarType::S) | None => {
                    if text.is_empty() {
                        continue;
                    }
                    AttributeValue::S(text.to_string())
                }
                Some(ScalarType::N) => AttributeValue::from_json(&json!({ "N": text }))
                    .map_err(|e| format!("Column {name}: {}", e.message))?,
                Some(ScalarType::B) => AttributeValue::from_json(&json!({ "B": text }))
                    .map_err(|e| format!("Column {name}: {}", e.message))?,
            };
            item.insert(name.clone(), value);
        }
        Ok(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_model::Number;

    #[test]
    fn dynamodb_json_lines_decode_with_the_models_rules() {
        let item = dynamodb_json_line(br#"{"Item":{"pk":{"S":"a"},"n":{"N":"1.50"}}}"#).unwrap();
        assert_eq!(
            item.get("n"),
            Some(&AttributeValue::N(Number::parse("1.5").unwrap()))
        );
        assert!(dynamodb_json_line(b"{oops")
            .unwrap_err()
            .contains("not valid JSON"));
        assert!(dynamodb_json_line(br#"{"pk":{"S":"a"}}"#)
            .unwrap_err()
            .contains("no Item"));
        assert!(dynamodb_json_line(br#"{"Item":{"ss":{"SS":[]}}}"#)
            .unwrap_err()
            .contains("may not be empty"));
    }

    #[test]
    fn csv_keys_are_typed_and_empty_other_cells_left_out() {
        let typed = BTreeMap::from([("id".to_string(), ScalarType::N)]);
        let columns = CsvColumns::new(vec!["id".into(), "name".into(), "note".into()], typed);
        let item = columns
            .item(&csv::ByteRecord::from(vec!["7", "x", ""]))
            .unwrap();
        assert_eq!(item.len(), 2);
        assert_eq!(
            item.get("id"),
            Some(&AttributeValue::N(Number::parse("7").unwrap()))
        );
        assert_eq!(item.get("name"), Some(&AttributeValue::S("x".into())));
        assert!(columns
            .item(&csv::ByteRecord::from(vec!["seven", "x"]))
            .is_err());
        assert!(columns
            .item(&csv::ByteRecord::from(vec!["1", "x", "y", "z"]))
            .is_err());
    }
}
