//! PartiQL: ExecuteStatement, BatchExecuteStatement and ExecuteTransaction ([`statements`]),
//! each statement compiled onto the operations Shoal already has ([`compile`]).

pub mod compile;
pub mod statements;
