//! Transient table statuses (`EmulationOptions::transient_status_delay`, DynamoDB Local's
//! `-delayTransientStatuses`): with a non-zero delay, a created table is CREATING, an updated
//! one UPDATING (a GSI it creates CREATING) and a deleted one DELETING for that long, so
//! applications' waiters see what they see on AWS. With the default delay of zero nothing
//! is recorded and every table is ACTIVE at once. A global table's members see a replica
//! that left DELETING, and a witness CREATING when the group forms and DELETING when it is
//! taken apart, for the same delay (SPEC-3 §2.2).
//!
//! Only statuses are delayed, never the work: a CREATING table already holds its storage,
//! and a DELETING table's storage is already gone (DescribeTable answers its last
//! description, ListTables names it, CreateTable of its name is refused). Data operations
//! are not refused on a CREATING table. The transitions live in memory: a restart ends them
//! all.
//!
//! Transitions are kept by the table's catalog key (`core::catalog`), as its definition is:
//! a global table's members are one name in several Regions, and one member's UPDATING
//! must not hold back a change sent to another.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use shoal_model::{ApiError, ErrorCode};

use crate::api::control::TableDescription;
use crate::core::catalog::{catalog_key, split_catalog_key};

/// A table's status while a transition lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransientStatus {
    Creating,
    Updating,
    Deleting,
}

impl TransientStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TransientStatus::Creating => "CREATING",
            TransientStatus::Updating => "UPDATING",
            TransientStatus::Deleting => "DELETING",
        }
    }
}

/// One table's transition.
#[derive(Debug, Clone)]
pub(crate) struct Transition {
    pub status: TransientStatus,
    until: Instant,
    /// A GSI the UpdateTable created: reported CREATING while the transition lasts.
    pub creating_index: Option<String>,
    /// A deleted table's description, answered while it is DELETING.
    pub deleted: Option<TableDescription>,
}

/// A global table's member or witness in a transition as another member sees it
/// (`Replicas[]`, `GlobalTableWitnesses[]`, SPEC-3 §2.2): a replica DELETING after it left, a
/// witness CREATING or DELETING.
#[derive(Debug, Clone)]
pub(crate) struct ReplicaTransition {
    pub region: String,
    /// A witness (no table) rather than a replica.
    pub witness: bool,
    /// Whether the group was strong (`MultiRegionConsistency: STRONG`): what a member left
    /// regional by a teardown still shows while its departed members are DELETING.
    pub strong: bool,
    pub status: TransientStatus,
    until: Instant,
}

/// The transitions under way, by the table's catalog key.
#[derive(Debug, Default)]
pub(crate) struct Transitions {
    delay: Duration,
    entries: Mutex<HashMap<String, Transition>>,
    /// By the catalog key of the member that sees them, in the order they began.
    replicas: Mutex<HashMap<String, Vec<ReplicaTransition>>>,
    /// Members whose overrides a ReplicaUpdates Update changed, by catalog key, with the end
    /// of their `ReplicaStatus` UPDATING: an entry in `Replicas[]`, not the member's own
    /// `TableStatus`, which is in `entries`.
    updated_members: Mutex<HashMap<String, Instant>>,
}

impl Transitions {
    pub fn new(delay: Duration) -> Transitions {
        Transitions {
            delay,
            entries: Mutex::new(HashMap::new()),
            replicas: Mutex::new(HashMap::new()),
            updated_members: Mutex::new(HashMap::new()),
        }
    }

    /// Starts the `ReplicaStatus` UPDATING of the member whose catalog key is `key`;
    /// nothing when disabled.
    pub fn begin_member_update(&self, key: &str) {
        if self.enabled() {
            let until = Instant::now() + self.delay;
            self.updated_members.lock().insert(key.to_string(), until);
        }
    }

    /// Whether the member whose catalog key is `key` is UPDATING in `Replicas[]`.
    pub fn member_updating(&self, key: &str) -> bool {
        let mut updated = self.updated_members.lock();
        let now = Instant::now();
        updated.retain(|_, until| *until > now);
        updated.contains_key(key)
    }

    /// Starts the transition of the replica or witness in `region` as the member whose
    /// catalog key is `observer` sees it (replacing one of the same Region); nothing when
    /// disabled.
    pub fn begin_replica(
        &self,
        observer: &str,
        region: &str,
        witness: bool,
        strong: bool,
        status: TransientStatus,
    ) {
        if !self.enabled() {
            return;
        }
        let mut replicas = self.replicas.lock();
        let seen = replicas.entry(observer.to_string()).or_default();
        seen.retain(|transition| transition.region != region);
        seen.push(ReplicaTransition {
            region: region.to_string(),
            witness,
            strong,
            status,
            until: Instant::now() + self.delay,
        });
    }

    /// The replica and witness transitions the member whose catalog key is `observer` sees,
    /// while they last.
    pub fn replicas_of(&self, observer: &str) -> Vec<ReplicaTransition> {
        if !self.enabled() {
            return Vec::new();
        }
        let mut replicas = self.replicas.lock();
        let now = Instant::now();
        replicas.retain(|_, seen| {
            seen.retain(|transition| transition.until > now);
            !seen.is_empty()
        });
        replicas.get(observer).cloned().unwrap_or_default()
    }

    /// How long a transient status lasts (zero: not at all).
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Whether statuses are delayed at all.
    pub fn enabled(&self) -> bool {
        !self.delay.is_zero()
    }

    /// Starts the transition of the table whose catalog key is `key` (replacing any other);
    /// nothing when disabled.
    pub fn begin(
        &self,
        key: &str,
        status: TransientStatus,
        creating_index: Option<String>,
        deleted: Option<TableDescription>,
    ) {
        if !self.enabled() {
            return;
        }
        self.entries.lock().insert(
            key.to_string(),
            Transition {
                status,
                until: Instant::now() + self.delay,
                creating_index,
                deleted,
            },
        );
    }

    /// The transition of the table whose catalog key is `key`, while it lasts.
    pub fn of(&self, key: &str) -> Option<Transition> {
        if !self.enabled() {
            return None;
        }
        let mut entries = self.entries.lock();
        let now = Instant::now();
        entries.retain(|_, transition| transition.until > now);
        entries.get(key).cloned()
    }

    /// The transition of the table a request sent to `region` means by `name` when no table
    /// of that name is in the catalog (a DELETING one): the one kept in that Region, else the
    /// one every Region shared, as `catalog::resolve` finds tables.
    pub fn of_named(&self, name: &str, region: &str) -> Option<Transition> {
        self.of(&catalog_key(name, Some(region)))
            .or_else(|| self.of(name))
    }

    /// Names of the tables still DELETING that a request sent to `region` sees.
    pub fn deleting(&self, region: &str) -> Vec<String> {
        if !self.enabled() {
            return Vec::new();
        }
        let mut entries = self.entries.lock();
        let now = Instant::now();
        entries.retain(|_, transition| transition.until > now);
        entries
            .iter()
            .filter(|(_, t)| t.status == TransientStatus::Deleting)
            .map(|(key, _)| split_catalog_key(key))
            .filter(|(_, kept_in)| kept_in.is_none_or(|r| r == region))
            .map(|(name, _)| name.to_string())
            .collect()
    }

    /// The refusal of a change to the table whose catalog key is `key` while it is in a
    /// transition: an UpdateTable or DeleteTable of a CREATING or UPDATING table.
    pub fn refuse_change(&self, key: &str) -> Result<(), ApiError> {
        refusal(key, self.of(key))
    }

    /// The refusal of a table named `name` in `region` (a CreateTable, a restore's target)
    /// while a table of that name is still DELETING there.
    pub fn refuse_named(&self, name: &str, region: &str) -> Result<(), ApiError> {
        refusal(name, self.of_named(name, region))
    }
}

/// ResourceInUseException for a change to the table whose catalog key is `key` during
/// `transition`; Ok when there is none.
fn refusal(key: &str, transition: Option<Transition>) -> Result<(), ApiError> {
    let (name, _) = split_catalog_key(key);
    match transition {
        None => Ok(()),
        Some(transition) => {
            let what = match transition.status {
                TransientStatus::Creating => "created",
                TransientStatus::Updating => "updated",
                TransientStatus::Deleting => "deleted",
            };
            Err(ApiError::new(
                    ErrorCode::ResourceInUseException,
                    format!(
                        "Attempt to change a resource which is still in use: Table is being {what}: {name}"
                    ),
                ))
        }
    }
}
