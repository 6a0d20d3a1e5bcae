//! End-to-end tests of the `shoal` binary, most through the official AWS SDK, as one test
//! binary: the crate and its dependencies are linked once, not once per file. Each module is
//! one concern (its docs say which); `sdk_server` (a server process and SDK clients for it)
//! and `scenario_runner` (the acceptance scenarios) are shared.

mod scenario_runner;
mod sdk_server;

mod bench_endpoint;
mod console_browser;
mod copy_cli;
mod corruption_cli;
mod crash_test_app;
mod crash_test_cli;
mod crash_test_server;
mod disk_full;
mod dynamodb_local_cli;
mod e2e_backups_sdk;
mod e2e_capacity_sdk;
mod e2e_consistency_sdk;
mod e2e_export_sdk;
mod e2e_faults_sdk;
mod e2e_global_tables_sdk;
mod e2e_import_sdk;
mod e2e_insights_sdk;
mod e2e_multi_attribute_gsi_sdk;
mod e2e_partiql_sdk;
mod e2e_pitr_sdk;
mod e2e_sdk;
mod e2e_settings_sdk;
mod e2e_streams_sdk;
mod e2e_ttl_sdk;
mod kill9;
mod kill9_streams;
mod loadgen;
mod mcp;
mod model_agreement;
mod model_bench;
mod model_report_browser;
mod record_model;
mod scenarios;
mod scenarios_http;
mod streams_cli;
