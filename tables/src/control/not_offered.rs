//! Operations DynamoDB has (SPEC-3 §6) that Shoal does not implement. Each is answered with a
//! ValidationException naming the operation and what Shoal offers instead, so that a client
//! (an infrastructure-as-code tool, a console) can tell "not implemented here" from a
//! misspelt name, which gets UnknownOperationException (SPEC-3 §7).

use shoal_model::ApiError;

/// Each operation Shoal knows of but does not implement, with what it offers instead.
pub const NOT_OFFERED: &[(&str, &str)] = &[
    ("SearchVectors", VECTORS),
    ("StartBulkPutItems", BULK),
    ("DescribeBulkOperation", BULK),
    ("ListBulkOperations", BULK),
    ("CancelBulkOperation", BULK),
    ("EnableKinesisStreamingDestination", KINESIS),
    ("DisableKinesisStreamingDestination", KINESIS),
    ("DescribeKinesisStreamingDestination", KINESIS),
    ("UpdateKinesisStreamingDestination", KINESIS),
];

const VECTORS: &str = "vector indexes are not implemented; Query and Scan read a table";
const BULK: &str = "bulk operations are not implemented; ImportTable creates a table from exported files, and `shoal import` loads them";
const KINESIS: &str = "Kinesis streaming destinations are not implemented; DynamoDB Streams (ListStreams, GetShardIterator, GetRecords, `shoal streams tail`) carry the same changes";

/// The refusal of `operation` if it is one of [`NOT_OFFERED`].
pub fn refusal(operation: &str) -> Option<ApiError> {
    NOT_OFFERED
        .iter()
        .find(|(name, _)| *name == operation)
        .map(|(name, instead)| {
            ApiError::validation(format!("{name} is not offered by Shoal: {instead}."))
        })
}
