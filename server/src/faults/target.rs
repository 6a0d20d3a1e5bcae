//! What a request names that a rule can match on: its tables, in action order for
//! transactions, and its index. Read from the body only when a rule needs it.

use serde_json::Value;

/// The tables and index a request names.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RequestTarget {
    /// One entry per action for transactions (`None` where an action names no table, as a
    /// PartiQL statement does); otherwise the request's tables (`TableName`, or the keys of
    /// `RequestItems`).
    pub tables: Vec<Option<String>>,
    pub index: Option<String>,
}

impl RequestTarget {
    /// Reads `body` (a JSON object) of `operation`. A body that is not what the operation
    /// expects names nothing: the operation itself will refuse it.
    pub fn of(operation: &str, body: &[u8]) -> RequestTarget {
        let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(body) else {
            return RequestTarget::default();
        };
        let tables = match operation {
            "TransactWriteItems" | "TransactGetItems" => actions(&body, "TransactItems")
                .iter()
                .map(|action| {
                    // Each action is an object with one member (Put, Get, ...) holding TableName.
                    action
                        .as_object()
                        .and_then(|action| action.values().next())
                        .and_then(|inner| inner.get("TableName"))
                        .and_then(Value::as_str)
                        .map(table_name)
                })
                .collect(),
            "ExecuteTransaction" => vec![None; actions(&body, "TransactStatements").len()],
            "BatchWriteItem" | "BatchGetItem" => match body.get("RequestItems") {
                Some(Value::Object(items)) => {
                    items.keys().map(|name| Some(table_name(name))).collect()
                }
                _ => Vec::new(),
            },
            _ => body
                .get("TableName")
                .and_then(Value::as_str)
                .map(|name| vec![Some(table_name(name))])
                .unwrap_or_default(),
        };
        let index = body
            .get("IndexName")
            .and_then(Value::as_str)
            .map(str::to_owned);
        RequestTarget { tables, index }
    }

    /// Whether a rule for `table` (a name or `*`) matches any of the request's tables.
    pub fn names_table(&self, table: &str) -> bool {
        table == "*" || self.tables.iter().flatten().any(|name| name == table)
    }
}

fn actions<'a>(body: &'a serde_json::Map<String, Value>, member: &str) -> &'a [Value] {
    match body.get(member) {
        Some(Value::Array(actions)) => actions,
        _ => &[],
    }
}

/// The table a `TableName` names: itself, or the name in a table ARN
/// (`arn:aws:dynamodb:REGION:ACCOUNT:table/NAME`).
fn table_name(name: &str) -> String {
    match name.split_once(":table/") {
        Some((_, rest)) => rest.split('/').next().unwrap_or(rest).to_owned(),
        None => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tables_per_operation_shape() {
        let get = RequestTarget::of("Query", br#"{"TableName": "T", "IndexName": "I"}"#);
        assert_eq!(get.tables, vec![Some("T".to_owned())]);
        assert_eq!(get.index.as_deref(), Some("I"));
        let arn = RequestTarget::of(
            "GetItem",
            br#"{"TableName": "arn:aws:dynamodb:us-east-1:000000000000:table/T"}"#,
        );
        assert!(arn.names_table("T"));
        let batch = RequestTarget::of("BatchWriteItem", br#"{"RequestItems": {"A": [], "B": []}}"#);
        assert!(batch.names_table("B") && !batch.names_table("C"));
        let transaction = RequestTarget::of(
            "TransactWriteItems",
            br#"{"TransactItems": [{"Put": {"TableName": "A"}}, {"ConditionCheck": {"TableName": "B"}}]}"#,
        );
        assert_eq!(
            transaction.tables,
            vec![Some("A".to_owned()), Some("B".to_owned())]
        );
        let statements =
            RequestTarget::of("ExecuteTransaction", br#"{"TransactStatements": [{}, {}]}"#);
        assert_eq!(statements.tables, vec![None, None]);
        assert!(statements.names_table("*") && !statements.names_table("A"));
        assert_eq!(
            RequestTarget::of("GetItem", b"[1]"),
            RequestTarget::default()
        );
    }
}
