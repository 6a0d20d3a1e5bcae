//! Fault injection for people testing their applications against Shoal: rules that answer
//! requests with DynamoDB's errors, delay them, or drop their connections (`--faults FILE`
//! and the admin API's `/shoal/faults`).

mod errors;
mod injector;
pub mod rules;
mod target;

pub use injector::{Decision, FaultInjector, InjectedError};
pub use rules::{parse_rule_set, FaultRule, RuleSet};
