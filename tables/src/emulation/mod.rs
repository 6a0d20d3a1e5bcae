//! DynamoDB's behaviours a local store has no cause for, emulated on request so that
//! applications meet them in tests: GSIs and reads that lag ([`lag`]), transaction conflicts
//! ([`conflicts`]) and transient table statuses ([`transient`]).

pub mod conflicts;
pub mod lag;
pub mod transient;
