//! The DynamoDB layer's integration tests, as one test binary: the crate and its
//! dependencies are linked once, not once per file. Each module is one concern (its docs say
//! which); the `*_support` modules are shared. One test has a binary of its own,
//! `tests/export_memory.rs`: it counts every byte the process holds, which other tests
//! running beside it would disturb.

mod crash_support;
mod import_support;
mod items_support;
mod query_support;
mod restore_support;

mod arn_region;
mod backups;
mod backups_crash;
mod batch_ops;
mod capacity_throttle;
mod check_corruption;
mod check_memory;
mod collection_walk;
mod control_billing;
mod control_crash;
mod control_create;
mod control_settings;
mod control_tables;
mod control_transient;
mod dispatch_text;
mod eventual_consistency;
mod export;
mod global_tables;
mod global_tables_autoscaling;
mod global_tables_crash;
mod global_tables_disassociate;
mod global_tables_model;
mod global_tables_overrides;
mod global_tables_settings;
mod global_tables_strong;
mod global_tables_transient;
mod gsi_multi_attribute;
mod gsi_multi_attribute_model;
mod gsi_online_backfill;
mod gsi_online_crash;
mod gsi_online_rules;
mod import;
mod import_crash;
mod insights;
mod items_capacity;
mod items_expression_edges;
mod items_model;
mod items_ops;
mod json_answers;
mod metering;
mod operations_answered;
mod page_size_boundary;
mod partiql;
mod partiql_model;
mod pitr;
mod policies;
mod query_pagination;
mod query_rules;
mod query_scan;
mod request_edges;
mod streams;
mod streams_crash;
mod streams_model;
mod streams_retention;
mod table_crash;
mod tags;
mod transact_concurrency;
mod transact_crash;
mod transact_ops;
mod transaction_conflicts;
mod transfer_round_trip;
mod ttl;
mod ttl_crash;
mod ttl_model;
