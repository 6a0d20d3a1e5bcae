//! DynamoDB expressions (being written).
