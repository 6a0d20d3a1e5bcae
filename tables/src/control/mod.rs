//! The control plane: CreateTable, DescribeTable, ListTables and DeleteTable ([`tables`]),
//! CreateTable's validation ([`schema`]), UpdateTable ([`update_table`]) with the online GSI
//! backfill ([`backfill`]), tables written before any request can see them (restores,
//! imports: [`staging`]), and the account-level answers ([`settings`]).

pub mod backfill;
pub mod schema;
pub mod settings;
pub mod staging;
pub mod tables;
pub mod update_table;
