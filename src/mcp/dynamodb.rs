//! One MCP tool per DynamoDB operation Shoal serves: the list is `SUPPORTED_OPERATIONS`
//! less the operations Shoal only refuses (`NOT_OFFERED`), so it never drifts from what the
//! tables layer dispatches. A tool takes the operation's request exactly as DynamoDB's API
//! does (DynamoDB JSON: `{"S": "text"}`, `{"N": "12"}`, …) and answers the operation's
//! response; the call goes through [`Client::call`](crate::client::target::Client::call),
//! which is `Database::execute_json_text` embedded or an HTTP request to an endpoint.

use serde_json::{json, Map, Value};
use shoal::tables::control::not_offered::NOT_OFFERED;
use shoal::tables::SUPPORTED_OPERATIONS;

/// What an agent reads about one operation: what it does, and the members a request must
/// have (the others are DynamoDB's optional members, accepted as the API defines them).
struct Operation {
    name: &'static str,
    required: &'static [&'static str],
    description: &'static str,
}

const fn op(
    name: &'static str,
    required: &'static [&'static str],
    description: &'static str,
) -> Operation {
    Operation {
        name,
        required,
        description,
    }
}

/// Every operation with a tool. A test checks that it names each operation of
/// `SUPPORTED_OPERATIONS` that is not refused, and nothing else.
const OPERATIONS: &[Operation] = &[
    op(
        "CreateTable",
        &["TableName", "KeySchema", "AttributeDefinitions"],
        "Creates a table: KeySchema (a HASH key, optionally a RANGE key), AttributeDefinitions \
        for every key attribute of the table and its indexes (AttributeType S, N or B), \
        BillingMode PAY_PER_REQUEST or PROVISIONED with ProvisionedThroughput, optional \
        LocalSecondaryIndexes, GlobalSecondaryIndexes, StreamSpecification, Tags. The table \
        is ACTIVE at once.",
    ),
    op(
        "DescribeTable",
        &["TableName"],
        "Describes a table: key schema, attribute definitions, indexes, billing mode, \
        throughput, ItemCount and TableSizeBytes, stream settings and ARNs.",
    ),
    op(
        "ListTables",
        &[],
        "Lists table names (up to Limit, default 100), in order; page with \
        ExclusiveStartTableName set to LastEvaluatedTableName.",
    ),
    op(
        "DeleteTable",
        &["TableName"],
        "Deletes a table with all its items, indexes and streams. Cannot be undone.",
    ),
    op(
        "UpdateTable",
        &["TableName"],
        "Changes a table: BillingMode, ProvisionedThroughput, StreamSpecification, \
        GlobalSecondaryIndexUpdates (Create with AttributeDefinitions, Update, Delete a GSI), \
        DeletionProtectionEnabled, TableClass.",
    ),
    op(
        "UpdateTimeToLive",
        &["TableName", "TimeToLiveSpecification"],
        "Enables or disables Time to Live: TimeToLiveSpecification {Enabled, AttributeName}; \
        items whose attribute is a Number of epoch seconds in the past are deleted.",
    ),
    op(
        "DescribeTimeToLive",
        &["TableName"],
        "Tells whether Time to Live is enabled and on which attribute.",
    ),
    op(
        "UpdateContributorInsights",
        &["TableName", "ContributorInsightsAction"],
        "Turns Contributor Insights on (ENABLE) or off (DISABLE) for a table or one of its GSIs \
         (IndexName); ContributorInsightsMode ACCESSED_AND_THROTTLED_KEYS or THROTTLED_KEYS. \
         Shoal then counts the most accessed and most throttled keys.",
    ),
    op(
        "DescribeContributorInsights",
        &["TableName"],
        "Shows whether Contributor Insights is on for a table or GSI, its mode and rule names.",
    ),
    op(
        "ListContributorInsights",
        &[],
        "Lists the tables and GSIs with Contributor Insights on (optionally of one TableName).",
    ),
    op(
        "PutResourcePolicy",
        &["ResourceArn", "Policy"],
        "Attaches a resource-based policy (an IAM JSON document as a string) to a table or \
         stream ARN; returns its RevisionId. Shoal stores policies and does not enforce them.",
    ),
    op(
        "GetResourcePolicy",
        &["ResourceArn"],
        "Returns the resource-based policy of a table or stream ARN and its RevisionId.",
    ),
    op(
        "DeleteResourcePolicy",
        &["ResourceArn"],
        "Removes the resource-based policy of a table or stream ARN.",
    ),
    op(
        "TagResource",
        &["ResourceArn", "Tags"],
        "Adds tags [{Key, Value}] to a table (by its ARN).",
    ),
    op(
        "UntagResource",
        &["ResourceArn", "TagKeys"],
        "Removes tags (by key) from a table (by its ARN).",
    ),
    op(
        "ListTagsOfResource",
        &["ResourceArn"],
        "Lists a table's tags (by its ARN).",
    ),
    op(
        "DescribeLimits",
        &[],
        "The account's throughput quotas, as DynamoDB reports them.",
    ),
    op(
        "DescribeEndpoints",
        &[],
        "The endpoint to use, as DynamoDB answers it.",
    ),
    op(
        "DescribeContinuousBackups",
        &["TableName"],
        "Whether point-in-time recovery is enabled on a table, and its restorable window.",
    ),
    op(
        "UpdateContinuousBackups",
        &["TableName", "PointInTimeRecoverySpecification"],
        "Enables or disables point-in-time recovery: PointInTimeRecoverySpecification \
        {PointInTimeRecoveryEnabled: true}.",
    ),
    op(
        "ExportTableToPointInTime",
        &["TableArn", "S3Bucket"],
        "Exports a table in DynamoDB's S3 export layout (DYNAMODB_JSON or ION) to the \
        directory standing for the bucket; follow it with DescribeExport.",
    ),
    op(
        "DescribeExport",
        &["ExportArn"],
        "The status and files of an export.",
    ),
    op(
        "ListExports",
        &[],
        "Lists exports, optionally of one TableArn.",
    ),
    op(
        "CreateBackup",
        &["TableName", "BackupName"],
        "Takes an on-demand backup of a table.",
    ),
    op("DescribeBackup", &["BackupArn"], "Describes a backup."),
    op(
        "ListBackups",
        &[],
        "Lists backups, optionally of one TableName.",
    ),
    op("DeleteBackup", &["BackupArn"], "Deletes a backup."),
    op(
        "RestoreTableFromBackup",
        &["TargetTableName", "BackupArn"],
        "Creates a new table from a backup.",
    ),
    op(
        "RestoreTableToPointInTime",
        &["TargetTableName"],
        "Creates a new table from a table's state at RestoreDateTime (epoch seconds) or \
        UseLatestRestorableTime; name the source with SourceTableName or SourceTableArn. \
        Needs point-in-time recovery enabled on the source.",
    ),
    op(
        "ImportTable",
        &["S3BucketSource", "InputFormat", "TableCreationParameters"],
        "Creates a new table from exported files (DYNAMODB_JSON, ION or CSV) in the \
        directory standing for S3BucketSource; follow it with DescribeImport.",
    ),
    op("DescribeImport", &["ImportArn"], "The status of an import."),
    op("ListImports", &[], "Lists imports."),
    op(
        "CreateGlobalTable",
        &["GlobalTableName", "ReplicationGroup"],
        "Legacy (2017) global tables: answered with DynamoDB's current error; use \
        CreateTable.",
    ),
    op(
        "UpdateGlobalTable",
        &["GlobalTableName", "ReplicaUpdates"],
        "Legacy (2017) global tables: answered with DynamoDB's current error.",
    ),
    op(
        "DescribeGlobalTable",
        &["GlobalTableName"],
        "Legacy (2017) global tables: answers GlobalTableNotFoundException.",
    ),
    op(
        "ListGlobalTables",
        &[],
        "Legacy (2017) global tables: lists none.",
    ),
    op(
        "DescribeGlobalTableSettings",
        &["GlobalTableName"],
        "Legacy (2017) global tables: answers GlobalTableNotFoundException.",
    ),
    op(
        "UpdateGlobalTableSettings",
        &["GlobalTableName"],
        "Legacy (2017) global tables: answers GlobalTableNotFoundException.",
    ),
    op(
        "DescribeTableReplicaAutoScaling",
        &["TableName"],
        "A global table's auto scaling settings: per member, the table's and each GSI's read \
        settings (that Region's) and write settings (the group's). Shoal stores them and \
        never changes capacity.",
    ),
    op(
        "UpdateTableReplicaAutoScaling",
        &["TableName"],
        "Sets a global table's auto scaling settings: ProvisionedWriteCapacityAutoScalingUpdate \
        and GlobalSecondaryIndexUpdates (the group's write settings), ReplicaUpdates \
        [{RegionName, ReplicaProvisionedReadCapacityAutoScalingUpdate, \
        ReplicaGlobalSecondaryIndexUpdates}] (one Region's read settings). Stored and echoed; \
        capacity never changes.",
    ),
    op(
        "PutItem",
        &["TableName", "Item"],
        "Writes a whole item (replacing any item with the same key). Item is DynamoDB JSON: \
        {\"pk\": {\"S\": \"a\"}, \"n\": {\"N\": \"1\"}}. Optional ConditionExpression with \
        ExpressionAttributeNames/Values; ReturnValues ALL_OLD returns the replaced item.",
    ),
    op(
        "GetItem",
        &["TableName", "Key"],
        "Reads one item by its full primary key (Key: the HASH and RANGE attributes in \
        DynamoDB JSON). Optional ProjectionExpression, ConsistentRead. No Item member when \
        absent.",
    ),
    op(
        "UpdateItem",
        &["TableName", "Key"],
        "Changes attributes of one item (created if absent) with an UpdateExpression \
        (SET a = :v, REMOVE b, ADD c :n, DELETE s :set) and ExpressionAttributeValues; \
        optional ConditionExpression; ReturnValues ALL_NEW returns the item after.",
    ),
    op(
        "DeleteItem",
        &["TableName", "Key"],
        "Deletes one item by its primary key; optional ConditionExpression; ReturnValues \
        ALL_OLD returns the deleted item.",
    ),
    op(
        "BatchWriteItem",
        &["RequestItems"],
        "Up to 25 puts and deletes across tables: RequestItems {table: [{PutRequest: {Item}} \
        | {DeleteRequest: {Key}}]}. Send UnprocessedItems again if any are returned.",
    ),
    op(
        "BatchGetItem",
        &["RequestItems"],
        "Reads up to 100 items by key across tables: RequestItems {table: {Keys: [...], \
        ProjectionExpression?}}. Send UnprocessedKeys again if any are returned.",
    ),
    op(
        "TransactWriteItems",
        &["TransactItems"],
        "Up to 100 writes (Put, Update, Delete, ConditionCheck) that all succeed or none \
        does; a failed condition cancels all with TransactionCanceledException and its \
        CancellationReasons.",
    ),
    op(
        "TransactGetItems",
        &["TransactItems"],
        "Reads up to 100 items ([{Get: {TableName, Key}}]) at one consistent snapshot.",
    ),
    op(
        "Query",
        &["TableName"],
        "Reads the items of one partition key, in sort-key order: KeyConditionExpression \
        (pk = :p, optionally AND sk BETWEEN / begins_with / < > …) with \
        ExpressionAttributeValues; IndexName to query an LSI or GSI; FilterExpression, \
        ProjectionExpression, Limit, ScanIndexForward false for descending. Page with \
        ExclusiveStartKey = LastEvaluatedKey. Use Limit: a tool answer is capped.",
    ),
    op(
        "Scan",
        &["TableName"],
        "Reads every item of a table or index, a page (up to 1 MB, or Limit items) per call; \
        page with ExclusiveStartKey = LastEvaluatedKey; optional FilterExpression, \
        ProjectionExpression, Segment/TotalSegments. Use Limit: a tool answer is capped.",
    ),
    op(
        "ExecuteStatement",
        &["Statement"],
        "Runs one PartiQL statement: SELECT, INSERT, UPDATE or DELETE, e.g. \
        SELECT * FROM \"Music\" WHERE Artist = ?, with Parameters [DynamoDB JSON values].",
    ),
    op(
        "BatchExecuteStatement",
        &["Statements"],
        "Runs up to 25 PartiQL statements [{Statement, Parameters?}], each on its own.",
    ),
    op(
        "ExecuteTransaction",
        &["TransactStatements"],
        "Runs up to 100 PartiQL statements [{Statement, Parameters?}] as one transaction.",
    ),
    op(
        "ListStreams",
        &[],
        "Lists DynamoDB Streams, optionally of one TableName.",
    ),
    op(
        "DescribeStream",
        &["StreamArn"],
        "Describes a stream and its shards (ShardId, ParentShardId, sequence range).",
    ),
    op(
        "GetShardIterator",
        &["StreamArn", "ShardId", "ShardIteratorType"],
        "An iterator into a shard: ShardIteratorType TRIM_HORIZON, LATEST, AT_SEQUENCE_NUMBER \
        or AFTER_SEQUENCE_NUMBER (with SequenceNumber). The tail_stream tool does all of \
        this for you.",
    ),
    op(
        "GetRecords",
        &["ShardIterator"],
        "Stream records from a shard iterator (up to Limit, at most 1000), with the \
        NextShardIterator to read on.",
    ),
];

/// Short descriptions of request members that recur, put in the schema when a member is
/// required.
fn member_schema(member: &str) -> Value {
    let (kind, text) = match member {
        "TableName" | "TargetTableName" | "SourceTableName" => ("string", "A table name."),
        "Item" => (
            "object",
            "An item in DynamoDB JSON: {attribute: {\"S\"|\"N\"|\"B\"|\"BOOL\"|\"NULL\"|\"L\"|\"M\"|\"SS\"|\"NS\"|\"BS\": value}}; numbers are strings.",
        ),
        "Key" => (
            "object",
            "The primary key in DynamoDB JSON: the HASH attribute and, if the table has one, the RANGE attribute.",
        ),
        "KeySchema" => (
            "array",
            "[{\"AttributeName\": \"pk\", \"KeyType\": \"HASH\"}, {\"AttributeName\": \"sk\", \"KeyType\": \"RANGE\"}]",
        ),
        "AttributeDefinitions" => (
            "array",
            "[{\"AttributeName\": \"pk\", \"AttributeType\": \"S\"}] for every key attribute of the table and its indexes.",
        ),
        "RequestItems" => ("object", "Per table name, the requests."),
        "TransactItems" | "Statements" | "TransactStatements" | "Tags" | "TagKeys"
        | "ReplicationGroup" | "ReplicaUpdates" => ("array", "As DynamoDB's API defines it."),
        "Statement" => ("string", "A PartiQL statement."),
        _ => ("", "As DynamoDB's API defines it."),
    };
    let mut schema = Map::new();
    if !kind.is_empty() {
        schema.insert("type".into(), json!(kind));
    }
    schema.insert("description".into(), json!(text));
    Value::Object(schema)
}

/// The DynamoDB operations that have a tool, in `SUPPORTED_OPERATIONS` order.
pub fn operations() -> impl Iterator<Item = &'static str> {
    SUPPORTED_OPERATIONS
        .iter()
        .copied()
        .filter(|name| NOT_OFFERED.iter().all(|(refused, _)| refused != name))
}

/// Whether `name` is a DynamoDB operation with a tool.
pub fn is_operation(name: &str) -> bool {
    operations().any(|operation| operation == name)
}

/// The tools of the DynamoDB operations: (name, description, input schema).
pub fn tools() -> Vec<(&'static str, String, Value)> {
    operations()
        .map(|name| {
            let (description, required) = match OPERATIONS.iter().find(|o| o.name == name) {
                Some(operation) => (operation.description, operation.required),
                // Kept honest by the test below; a new operation still gets a usable tool.
                None => (
                    "A DynamoDB operation, with its request as DynamoDB's API defines it.",
                    &[][..],
                ),
            };
            let properties: Map<String, Value> = required
                .iter()
                .map(|member| (member.to_string(), member_schema(member)))
                .collect();
            let schema = json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": true,
            });
            let description = format!(
                "DynamoDB {name}: {description} Arguments are the request exactly as DynamoDB's \
                 API takes it (DynamoDB JSON); the result is its response as JSON, or the \
                 exception name and message."
            );
            (name, description, schema)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_operation_has_its_own_description_and_nothing_else_does() {
        let served: Vec<&str> = operations().collect();
        for name in &served {
            assert!(
                OPERATIONS.iter().any(|o| o.name == *name),
                "{name} has no description"
            );
        }
        for operation in OPERATIONS {
            assert!(
                served.contains(&operation.name),
                "{} is described but not served",
                operation.name
            );
        }
        // The refused operations get no tool; the data plane does.
        assert!(!is_operation("SearchVectors"));
        assert!(is_operation("PutItem") && is_operation("GetRecords"));
    }

    #[test]
    fn schemas_name_the_required_members() {
        let tools = tools();
        let put = tools
            .iter()
            .find(|(name, _, _)| *name == "PutItem")
            .unwrap();
        assert_eq!(put.2["required"], json!(["TableName", "Item"]));
        assert_eq!(put.2["properties"]["Item"]["type"], "object");
        let list = tools
            .iter()
            .find(|(name, _, _)| *name == "ListTables")
            .unwrap();
        assert_eq!(list.2["required"], json!([]));
    }
}
