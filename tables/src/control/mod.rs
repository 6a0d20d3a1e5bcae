//! The control plane: CreateTable, DescribeTable, ListTables and DeleteTable ([`tables`]),
//! CreateTable's validation ([`schema`]), UpdateTable ([`update_table`]) with the online GSI
//! backfill ([`backfill`]), tables written before any request can see them (restores,
//! imports: [`staging`]), the account-level answers ([`settings`]), the legacy global tables
//! operations ([`legacy_global_tables`]), and the refusal of the operations Shoal does not
//! implement ([`not_offered`]).

pub mod backfill;
pub mod legacy_global_tables;
pub mod not_offered;
pub mod schema;
pub mod settings;
pub mod staging;
pub mod tables;
pub mod update_table;
use parking_lot::RwLock;

/// The control plane's state in a [`Database`](crate::Database).
pub(crate) struct ControlState {
    /// Running GSI backfills (UpdateTable); resumed at open, stopped on drop.
    pub(crate) backfills: backfill::Backfills,
    /// What DescribeEndpoints answers ([`settings`]); a server sets its own address.
    pub(crate) endpoint_address: RwLock<String>,
}

impl ControlState {
    /// `endpoint_address` is what DescribeEndpoints answers until a server sets its own.
    pub(crate) fn new(endpoint_address: String) -> ControlState {
        ControlState {
            backfills: Default::default(),
            endpoint_address: RwLock::new(endpoint_address),
        }
    }
}
