//! The Regions a replica may be created in: those where DynamoDB offers global tables
//! version 2019.11.21. A request names any other with SPEC-3 §2.1's "is not supported"
//! text, which lists these.

/// Every Region a replica may be created in, in the order the error text lists them.
pub const SUPPORTED_REGIONS: &[&str] = &[
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
    "af-south-1",
    "ap-east-1",
    "ap-south-1",
    "ap-south-2",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-southeast-3",
    "ap-southeast-4",
    "ap-southeast-5",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "ca-central-1",
    "ca-west-1",
    "eu-central-1",
    "eu-central-2",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "eu-south-1",
    "eu-south-2",
    "eu-north-1",
    "il-central-1",
    "me-south-1",
    "me-central-1",
    "mx-central-1",
    "sa-east-1",
];

pub fn is_supported(region: &str) -> bool {
    SUPPORTED_REGIONS.contains(&region)
}

/// SPEC-3 §2.1's text for a Region no replica may be created in.
pub fn unsupported_message(region: &str) -> String {
    format!(
        "Region {region} is not supported. The latest version of global tables are only supported in the following regions: [{}]",
        SUPPORTED_REGIONS.join(", ")
    )
}
