//! DynamoDB JSON-over-HTTP protocol (issue: `shoal serve`); not built yet.
