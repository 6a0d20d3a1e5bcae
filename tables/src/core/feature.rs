//! The one way a feature rides on the core: a [`Feature`] registered when the database opens.
//!
//! The core writes items, keeps the catalog and checks the database without knowing which
//! features there are. A feature that derives data from item writes (a stream record, an
//! expiry index entry; a replication log next) or keeps state about tables (which trees hold
//! a stream, which keep history for point-in-time recovery) implements the hooks it needs;
//! the others keep their defaults, which do nothing. The hooks, in the order a write meets
//! them:
//!
//! 1. [`Feature::plan`]: while a write is planned, under its collection lock, the feature
//!    adds its own mutations for one item change. They go into the same WAL record as the
//!    change, so they commit with it or not at all (docs/DESIGN.md §3).
//! 2. [`Feature::plans_still_hold`]: at commit, whether a plan made under one definition of
//!    a table may commit under the current one; a plan that may not is made again.
//! 3. [`Feature::committed`]: after the WAL write, the plans that committed.
//!
//! And beside the writes: [`Feature::catalog_changed`] after every change of the catalog
//! (and once at open), and [`Feature::check`] during `Database::check`, for the invariants of
//! what the feature derives.
//!
//! As RocksDB gives listeners and table property collectors a narrow view of its write path,
//! a feature sees only what it is handed here: it cannot reach into the core's state.

use std::sync::Arc;

use shoal_model::{ApiError, Item};

use crate::core::catalog::{Catalog, TableDef};
use crate::core::checker::Checker;
use crate::core::plan::{Mutation, WritePlan};

/// Who made a change, as DynamoDB tells it in a stream record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Initiator {
    /// A client's request.
    Client,
    /// The service itself (Time to Live deleting an expired item).
    Service,
    /// Replication, applying a write another Region made (`replication`): its stream
    /// record is a plain change, and it is not queued again.
    Replication,
}

/// One item change being planned: `old` is the stored item (None if absent), `new` the item
/// to store (None for a delete).
pub struct ItemChange<'a> {
    pub table: &'a TableDef,
    /// The base item's storage key.
    pub base_key: &'a [u8],
    pub old: Option<&'a Item>,
    pub new: Option<&'a Item>,
    /// `new` as stored (encoded once for the base item; a feature that stores the image too
    /// reuses it).
    pub new_encoded: Option<&'a [u8]>,
    pub initiator: Initiator,
    /// Milliseconds since the Unix epoch when the change was planned.
    pub now_millis: u64,
}

/// What a feature plugs into the core with; every hook has a default that does nothing.
pub trait Feature: Send + Sync {
    /// Adds the feature's own mutations for `change`; they commit in the change's batch.
    fn plan(&self, _change: &ItemChange<'_>, _mutations: &mut Vec<Mutation>) {}

    /// Whether a plan made under `planned` (an earlier definition of the table) still adds
    /// the right mutations under `current`, the definition now.
    fn plans_still_hold(&self, _planned: &TableDef, _current: &TableDef) -> bool {
        true
    }

    /// Hears that `plans` of `table` committed, in one batch.
    fn committed(&self, _table: &TableDef, _plans: &[&WritePlan]) {}

    /// Hears the catalog after it changed, and once when the database opens.
    fn catalog_changed(&self, _catalog: &Catalog) {}

    /// Checks what the feature derives from `table`'s items, reporting what it finds wrong
    /// through `checker`.
    fn check(&self, _checker: &mut Checker<'_>, _table: &TableDef) -> Result<(), ApiError> {
        Ok(())
    }
}

/// The features registered when the database opened, in the order their hooks run.
#[derive(Clone, Default)]
pub struct Features(Arc<[Arc<dyn Feature>]>);

impl Features {
    pub fn new(features: Vec<Arc<dyn Feature>>) -> Features {
        Features(features.into())
    }

    /// No features: what unit tests of the core plan with.
    pub fn none() -> Features {
        Features::default()
    }

    pub fn iter(&self) -> impl Iterator<Item = &dyn Feature> {
        self.0.iter().map(|feature| feature.as_ref())
    }
}

impl std::fmt::Debug for Features {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Features({})", self.0.len())
    }
}
