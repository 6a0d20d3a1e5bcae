//! Backups: on-demand backups and restores ([`on_demand`]) kept on disk ([`store`]), and
//! point-in-time recovery ([`pitr`]) with its clock and retention floors ([`pitr_clock`]).

pub mod on_demand;
pub mod pitr;
pub mod pitr_clock;
pub mod store;
