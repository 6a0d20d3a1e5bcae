//! Tables moving in and out of Shoal in DynamoDB's own file formats (SPEC-2 §6.3, §6.4).
//!
//! - [`write`]: an export in DynamoDB's S3 export layout, written to a local directory.

pub mod write;
