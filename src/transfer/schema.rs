//! A table's schema carried from one end of a copy to the other: the CreateTable request
//! that makes a table shaped like a DescribeTable answer (keys, attribute definitions, local
//! and global secondary indexes, billing mode and throughput). Streams, Time to Live, tags
//! and point-in-time recovery are settings of a table, not of its data: a copy does not carry
//! them (as a DynamoDB restore does not).

use serde_json::{json, Map, Value};

/// The key attribute names of a table description: partition key first.
pub fn key_names(description: &Value) -> Vec<String> {
    let mut names: Vec<(bool, String)> = description["KeySchema"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|element| {
            let name = element["AttributeName"].as_str()?;
            Some((element["KeyType"] != "HASH", name.to_string()))
        })
        .collect();
    names.sort();
    names.into_iter().map(|(_, name)| name).collect()
}

/// The CreateTable request for a table named `name` shaped like `description` (a
/// DescribeTable `Table`).
pub fn create_table_request(description: &Value, name: &str) -> Result<Value, String> {
    if !description["KeySchema"].is_array() || !description["AttributeDefinitions"].is_array() {
        return Err("the table description has no KeySchema or AttributeDefinitions".into());
    }
    let provisioned = billing_mode(description) == "PROVISIONED";
    let mut request = Map::new();
    request.insert("TableName".into(), json!(name));
    request.insert("KeySchema".into(), description["KeySchema"].clone());
    request.insert(
        "AttributeDefinitions".into(),
        description["AttributeDefinitions"].clone(),
    );
    request.insert("BillingMode".into(), json!(billing_mode(description)));
    if provisioned {
        request.insert(
            "ProvisionedThroughput".into(),
            throughput(&description["ProvisionedThroughput"]),
        );
    }
    let local: Vec<Value> = indexes(description, "LocalSecondaryIndexes")
        .map(|index| {
            json!({
                "IndexName": index["IndexName"],
                "KeySchema": index["KeySchema"],
                "Projection": index["Projection"],
            })
        })
        .collect();
    if !local.is_empty() {
        request.insert("LocalSecondaryIndexes".into(), Value::Array(local));
    }
    let global: Vec<Value> = indexes(description, "GlobalSecondaryIndexes")
        .map(|index| {
            let mut create = json!({
                "IndexName": index["IndexName"],
                "KeySchema": index["KeySchema"],
                "Projection": index["Projection"],
            });
            if provisioned {
                create["ProvisionedThroughput"] = throughput(&index["ProvisionedThroughput"]);
            }
            create
        })
        .collect();
    if !global.is_empty() {
        request.insert("GlobalSecondaryIndexes".into(), Value::Array(global));
    }
    Ok(Value::Object(request))
}

fn indexes<'a>(description: &'a Value, member: &str) -> impl Iterator<Item = &'a Value> {
    description[member].as_array().into_iter().flatten()
}

/// PAY_PER_REQUEST unless the description says PROVISIONED (a table created before billing
/// modes existed reports only its throughput).
fn billing_mode(description: &Value) -> &'static str {
    match description["BillingModeSummary"]["BillingMode"].as_str() {
        Some("PAY_PER_REQUEST") => "PAY_PER_REQUEST",
        Some(_) => "PROVISIONED",
        None if description["ProvisionedThroughput"]["ReadCapacityUnits"]
            .as_u64()
            .is_some_and(|units| units > 0) =>
        {
            "PROVISIONED"
        }
        None => "PAY_PER_REQUEST",
    }
}

/// The units of a description's ProvisionedThroughput, at least 1 each (CreateTable's floor).
fn throughput(description: &Value) -> Value {
    let units = |member: &str| description[member].as_u64().unwrap_or(1).max(1);
    json!({
        "ReadCapacityUnits": units("ReadCapacityUnits"),
        "WriteCapacityUnits": units("WriteCapacityUnits"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_becomes_the_create_table_that_makes_it() {
        let description = json!({
            "TableName": "Forum",
            "KeySchema": [{"AttributeName": "sk", "KeyType": "RANGE"},
                          {"AttributeName": "pk", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                     {"AttributeName": "sk", "AttributeType": "N"}],
            "BillingModeSummary": {"BillingMode": "PROVISIONED"},
            "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 7,
                                      "NumberOfDecreasesToday": 0},
            "LocalSecondaryIndexes": [{"IndexName": "l", "KeySchema": [], "Projection":
                {"ProjectionType": "ALL"}, "IndexSizeBytes": 0, "ItemCount": 0}],
            "GlobalSecondaryIndexes": [{"IndexName": "g", "KeySchema": [], "Projection":
                {"ProjectionType": "KEYS_ONLY"}, "IndexStatus": "ACTIVE",
                "ProvisionedThroughput": {"ReadCapacityUnits": 2, "WriteCapacityUnits": 3}}],
            "ItemCount": 10,
        });
        assert_eq!(key_names(&description), vec!["pk", "sk"]);
        let request = create_table_request(&description, "Copy").unwrap();
        assert_eq!(request["TableName"], "Copy");
        assert_eq!(request["BillingMode"], "PROVISIONED");
        assert_eq!(
            request["ProvisionedThroughput"],
            json!({"ReadCapacityUnits": 5, "WriteCapacityUnits": 7})
        );
        assert_eq!(
            request["LocalSecondaryIndexes"][0]
                .as_object()
                .unwrap()
                .len(),
            3
        );
        assert_eq!(
            request["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"],
            json!({"ReadCapacityUnits": 2, "WriteCapacityUnits": 3})
        );
        assert!(request.get("ItemCount").is_none());

        let on_demand = json!({"KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"},
            "ProvisionedThroughput": {"ReadCapacityUnits": 0, "WriteCapacityUnits": 0}});
        let request = create_table_request(&on_demand, "T").unwrap();
        assert_eq!(request["BillingMode"], "PAY_PER_REQUEST");
        assert!(request.get("ProvisionedThroughput").is_none());
        assert!(request.get("GlobalSecondaryIndexes").is_none());
        assert!(create_table_request(&json!({}), "T").is_err());
    }
}
