//! Time to Live (SPEC-2 §2): UpdateTimeToLive, DescribeTimeToLive, the expiry index and
//! the sweep that deletes expired items.
//!
//! An item expires when its Time to Live attribute is a top-level Number of epoch seconds
//! before now and not more than five years before now (older values are taken for
//! mistakes, such as milliseconds, and never expire). Expired items stay readable until the
//! sweep deletes them.
//!
//! **The expiry index.** While Time to Live is enabled, every item with a Number in the
//! attribute has one entry in a tree of the table's own: key = expiry second (u64,
//! big-endian; the value rounded down) followed by the item's base key, value empty. The
//! write path maintains it in the same batch as the item (`write::plan_write`), like an
//! index entry, so it never disagrees with the items; items stored before Time to Live was
//! enabled are indexed by a backfill (`control::backfill`). A sweep reads the index from
//! "five years ago" to "now": it costs what has expired, not the table's size, and a sweep
//! that finds nothing is one seek.
//!
//! **The sweep** deletes each expired item exactly as DeleteItem does — `plan_write` with no
//! new item, committed by `commit_plans` under the item's collection lock, so its index
//! entries, its collection record, its statistics and its stream record change in the same
//! batch — except that it consumes no capacity and its stream record says the service
//! deleted it (`userIdentity`). Under the lock it re-reads the item and deletes it only if
//! its expiry time is still the one the index showed and still past: an item whose Time to
//! Live was moved into the future meanwhile stays.

use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

use shoal_engine::{Direction, TreeId};
use shoal_model::{ApiError, AttributeValue, ErrorCode, Item, Number};

use crate::api::common::table_name_of;
use crate::api::constraint::{self, violation, NOT_NULL};
use crate::api::ttl::{
    DescribeTimeToLiveInput, DescribeTimeToLiveOutput, TimeToLiveDescription,
    TimeToLiveSpecification, UpdateTimeToLiveInput, UpdateTimeToLiveOutput,
};
use crate::control::schema;
use crate::core::catalog::{TableDef, TimeToLiveDef};
use crate::core::checker::Checker;
use crate::core::error::internal;
use crate::core::feature::{Feature, Initiator, ItemChange};
use crate::core::item_codec::decode_item;
use crate::core::keys;
use crate::core::locks::CollectionLocks;
use crate::core::plan::{Mutation, WritePlan};
use crate::core::write::{is_definition_changed, key_of_item, plan_write_by};
use crate::database::Database;

mod check;

/// Expiry times further in the past than this are ignored (DynamoDB: five years).
pub const IGNORED_AFTER_SECONDS: u64 = 5 * 365 * 24 * 3600;
/// Items one sweep batch deletes in one write batch (and collection locks it holds).
pub const SWEEP_BATCH_ITEMS_MAX: usize = 256;
/// Items one sweep of one table deletes at most; the rest wait for the next sweep, so a
/// table with a great many expired items does not hold the upkeep thread up.
pub const SWEEP_ITEMS_MAX: usize = 100_000;

/// The whole seconds of a Time to Live value: a top-level Number of epoch seconds, rounded
/// down; None for anything that can never expire (another type, a negative number, one past
/// `u64`).
pub fn expiry_seconds(value: &AttributeValue) -> Option<u64> {
    let AttributeValue::N(number) = value else {
        return None;
    };
    whole_seconds(number)
}

fn whole_seconds(number: &Number) -> Option<u64> {
    if number.is_negative() {
        return None;
    }
    let mantissa = number.mantissa();
    let exponent = number.exponent();
    let whole = if exponent >= 0 {
        10u128
            .checked_pow(exponent.unsigned_abs())
            .and_then(|scale| mantissa.checked_mul(scale))?
    } else {
        match 10u128.checked_pow(exponent.unsigned_abs()) {
            Some(scale) => mantissa / scale,
            // More than 38 decimal places below the mantissa's digits: less than one.
            None => 0,
        }
    };
    u64::try_from(whole).ok()
}

/// The expiry index key of an item expiring at `seconds` with base key `base_key`.
pub fn expiry_key(seconds: u64, base_key: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(8 + base_key.len());
    key.extend_from_slice(&seconds.to_be_bytes());
    key.extend_from_slice(base_key);
    key
}

/// The expiry second and base key an index key holds.
fn split_expiry_key(key: &[u8]) -> Option<(u64, &[u8])> {
    let (seconds, base_key) = key.split_at_checked(8)?;
    Some((u64::from_be_bytes(seconds.try_into().ok()?), base_key))
}

/// The expiry index key `item` has in `table`'s index (None without Time to Live or when
/// the item has no Number in the attribute).
pub fn expiry_entry(table: &TableDef, item: &Item, base_key: &[u8]) -> Option<(TreeId, Vec<u8>)> {
    let ttl = table.time_to_live.as_ref()?;
    let seconds = expiry_seconds(item.get(&ttl.attribute_name)?)?;
    Some((ttl.tree, expiry_key(seconds, base_key)))
}

/// Whether an item expiring at `seconds` has expired at `now_seconds`.
pub fn is_expired(seconds: u64, now_seconds: u64) -> bool {
    seconds < now_seconds && seconds >= now_seconds.saturating_sub(IGNORED_AFTER_SECONDS)
}

impl Database {
    /// UpdateTimeToLive (SPEC-2 §2.1). Enabling creates the expiry index's tree with the
    /// setting in one durable version change and starts the backfill of the items already
    /// stored; disabling drops the tree with the setting. On a member of a global table,
    /// every member's setting changes in that one version change (SPEC-3 §2.1).
    pub fn update_time_to_live(
        &self,
        request: UpdateTimeToLiveInput,
    ) -> Result<UpdateTimeToLiveOutput, ApiError> {
        let mut problems = Vec::new();
        let name = request.table_name.as_deref();
        if name.is_none() {
            problems.push(violation(None, "tableName", NOT_NULL));
        }
        let spec = request.time_to_live_specification.as_ref();
        match spec {
            None => problems.push(violation(None, "timeToLiveSpecification", NOT_NULL)),
            Some(spec) => {
                if spec.enabled.is_none() {
                    problems.push(violation(None, "timeToLiveSpecification.enabled", NOT_NULL));
                }
                schema::attribute_name_problems(
                    spec.attribute_name.as_deref(),
                    "timeToLiveSpecification.attributeName",
                    &mut problems,
                );
            }
        }
        constraint::check(&problems)?;
        let name = table_name_of(name)?;
        let (Some(enabled), Some(attribute)) = (
            spec.and_then(|s| s.enabled),
            spec.and_then(|s| s.attribute_name.as_deref()),
        ) else {
            return Err(internal("a checked TimeToLiveSpecification lost a member"));
        };
        let backfills: Vec<(String, TreeId)> = {
            let _change = self.catalog_change.lock();
            let table = self.table(name)?;
            crate::replication::strong::refuse(&table, "Time to Live is")?;
            let now = self.options.clock.now_millis();
            match &table.time_to_live {
                Some(current) if enabled && current.attribute_name == attribute => {
                    return Err(ApiError::validation("TimeToLive is already enabled"));
                }
                Some(current) if current.attribute_name != attribute => {
                    return Err(ApiError::validation(format!(
                        "TimeToLive is active on a different AttributeName: current AttributeName is {}",
                        current.attribute_name
                    )));
                }
                None if !enabled => {
                    return Err(ApiError::validation("TimeToLive is already disabled"));
                }
                _ => {}
            }
            let cooldown_millis =
                crate::streams::lifecycle::millis(self.options.time_to_live.change_cooldown);
            if table
                .time_to_live_changed_at_millis
                .is_some_and(|changed| now < changed.saturating_add(cooldown_millis))
            {
                return Err(ApiError::validation(
                    "Time to live has been modified multiple times within a fixed interval",
                ));
            }
            // Group-wide on a global table (SPEC-3 §2.1, `replication::settings`): every
            // member's setting changes in one version change, each member with an expiry
            // index of its own that it fills from its own items.
            let members = self.settings_members(&table)?;
            if enabled {
                // A member that has Time to Live already (a group whose members differed
                // before settings were shared) keeps it.
                let mut changed: Vec<TableDef> = members
                    .into_iter()
                    .filter(|member| member.time_to_live.is_none())
                    .map(|mut member| {
                        member.time_to_live_changed_at_millis = Some(now);
                        member.time_to_live = Some(TimeToLiveDef {
                            attribute_name: attribute.to_string(),
                            tree: 0,
                            backfilled: false,
                        });
                        member
                    })
                    .collect();
                let tree_names = changed
                    .iter()
                    .map(|member| format!("{}/ttl/{now}", member.id))
                    .collect();
                let created =
                    self.store_definitions_with_trees(&mut changed, tree_names, |member, tree| {
                        if let Some(ttl) = member.time_to_live.as_mut() {
                            ttl.tree = tree;
                        }
                    })?;
                tracing::info!(table = %table.name, attribute, members = changed.len(), "Time to Live enabled");
                created
            } else {
                let mut changed = Vec::with_capacity(members.len());
                let mut dropped = Vec::with_capacity(members.len());
                for mut member in members {
                    if let Some(current) = member.time_to_live.take() {
                        member.time_to_live_changed_at_millis = Some(now);
                        dropped.push(current.tree);
                        changed.push(member);
                    }
                }
                self.store_definitions_dropping(&changed, &dropped)?;
                tracing::info!(table = %table.name, members = changed.len(), "Time to Live disabled");
                Vec::new()
            }
        };
        for (table_id, tree) in &backfills {
            self.start_expiry_backfill(table_id, *tree)
                .map_err(internal)?;
        }
        if !backfills.is_empty() {
            self.start_upkeep().map_err(internal)?;
        }
        Ok(UpdateTimeToLiveOutput {
            time_to_live_specification: TimeToLiveSpecification {
                enabled: Some(enabled),
                attribute_name: Some(attribute.to_string()),
            },
        })
    }

    /// DescribeTimeToLive.
    pub fn describe_time_to_live(
        &self,
        request: DescribeTimeToLiveInput,
    ) -> Result<DescribeTimeToLiveOutput, ApiError> {
        let name = table_name_of(request.table_name.as_deref())?;
        let table = self.table(name)?;
        Ok(DescribeTimeToLiveOutput {
            time_to_live_description: match &table.time_to_live {
                Some(ttl) => TimeToLiveDescription {
                    time_to_live_status: "ENABLED".to_string(),
                    attribute_name: Some(ttl.attribute_name.clone()),
                },
                None => TimeToLiveDescription {
                    time_to_live_status: "DISABLED".to_string(),
                    attribute_name: None,
                },
            },
        })
    }

    /// Deletes every item of every table that has expired by the database's clock, now:
    /// what the upkeep does every `TimeToLiveOptions::sweep_interval` (tests and the
    /// admin call it to see expiry at once). Returns the number of items deleted.
    pub fn expire_now(&self) -> Result<u64, ApiError> {
        let tables: Vec<Arc<TableDef>> = self
            .catalog
            .read()
            .values()
            .filter(|table| table.time_to_live.is_some())
            .cloned()
            .collect();
        let mut deleted = 0;
        for table in tables {
            deleted += self.sweep_table(&table)?;
        }
        Ok(deleted)
    }

    /// Deletes the expired items of `table` (at most [`SWEEP_ITEMS_MAX`]), reading the
    /// front of its expiry index.
    fn sweep_table(&self, table: &TableDef) -> Result<u64, ApiError> {
        let Some(ttl) = &table.time_to_live else {
            return Ok(0);
        };
        // A global table's items expire in its first member only; the others receive the
        // deletes by replication (SPEC-3 §2.4, `replication`).
        if let Some(replication) = &table.replication {
            if replication.members.first().map(|m| &m.table_id) != Some(&table.id) {
                return Ok(0);
            }
        }
        let now_seconds = self.options.clock.now_millis() / 1000;
        let upper = now_seconds.to_be_bytes();
        let mut lower = now_seconds
            .saturating_sub(IGNORED_AFTER_SECONDS)
            .to_be_bytes()
            .to_vec();
        let mut lower_inclusive = true;
        let pk_type = table.key.hash.scalar_type();
        let mut deleted = 0u64;
        while (deleted as usize) < SWEEP_ITEMS_MAX {
            let lower_bound = if lower_inclusive {
                Bound::Included(lower.as_slice())
            } else {
                Bound::Excluded(lower.as_slice())
            };
            let entries = match self.db.scan(
                ttl.tree,
                lower_bound,
                Bound::Excluded(&upper[..]),
                Direction::Forward,
                None,
                SWEEP_BATCH_ITEMS_MAX,
            ) {
                Ok(entries) => entries,
                // Disabled meanwhile: nothing left to sweep.
                Err(shoal_engine::DbError::UnknownTree(_)) => return Ok(deleted),
                Err(error) => return Err(internal(error)),
            };
            let Some((last, _)) = entries.last() else {
                break;
            };
            let last = last.clone();
            let mut targets = Vec::with_capacity(entries.len());
            for (key, _) in &entries {
                let (seconds, base_key) =
                    split_expiry_key(key).ok_or_else(|| internal("malformed expiry index key"))?;
                let (prefix_len, _) = keys::split_table_key(base_key, pk_type).map_err(internal)?;
                targets.push((seconds, base_key.to_vec(), prefix_len));
            }
            let stripes = targets
                .iter()
                .map(|(_, base_key, prefix_len)| {
                    CollectionLocks::stripe_of(table.tree, &base_key[..*prefix_len])
                })
                .collect();
            let committed = {
                let _locks = self.locks.lock_many(stripes);
                let mut plans: Vec<WritePlan> = Vec::with_capacity(targets.len());
                for (seconds, base_key, _) in &targets {
                    let Some(bytes) = self.db.get(table.tree, base_key, None).map_err(internal)?
                    else {
                        continue;
                    };
                    let item = decode_item(&bytes).map_err(internal)?;
                    // Deleted only if it still expires when the index said, and has expired.
                    let current = item.get(&ttl.attribute_name).and_then(expiry_seconds);
                    if current != Some(*seconds) || !is_expired(*seconds, now_seconds) {
                        continue;
                    }
                    let key = key_of_item(table, &item)?;
                    // The service deletes it: its stream record says so (SPEC-2 §2.3).
                    plans.push(plan_write_by(
                        &self.features,
                        table,
                        &key,
                        Some(&item),
                        None,
                        false,
                        Initiator::Service,
                    )?);
                }
                let borrowed: Vec<&WritePlan> = plans.iter().collect();
                match self.commit_plans(table, &borrowed, false) {
                    Ok(_) => plans.len() as u64,
                    // The table's definition changed (Time to Live disabled, an index added)
                    // or the table is gone: the next sweep starts over with the new one.
                    Err(error)
                        if is_definition_changed(&error)
                            || error.code == ErrorCode::ResourceNotFoundException =>
                    {
                        tracing::debug!(table = %table.name, %error.message, "sweep stopped");
                        return Ok(deleted);
                    }
                    Err(error) => return Err(error),
                }
            };
            deleted += committed;
            lower = last;
            lower_inclusive = false;
        }
        if deleted > 0 {
            tracing::debug!(table = %table.name, deleted, "expired items deleted");
        }
        Ok(deleted)
    }
}

/// Time to Live's part in every write (`core::feature`): the item's expiry index entry,
/// in the write's batch; and the check of the expiry index.
pub struct TimeToLive;

impl Feature for TimeToLive {
    /// The expiry index entry is free: counted nowhere, but in the same batch as its item.
    fn plan(&self, change: &ItemChange<'_>, mutations: &mut Vec<Mutation>) {
        let Some(ttl) = &change.table.time_to_live else {
            return;
        };
        let entry_of = |item: Option<&Item>| {
            item.and_then(|item| expiry_entry(change.table, item, change.base_key))
        };
        let (before, after) = (entry_of(change.old), entry_of(change.new));
        if before == after {
            return;
        }
        if let Some((_, key)) = before {
            mutations.push(Mutation::Delete {
                tree: ttl.tree,
                key,
            });
        }
        if let Some((_, key)) = after {
            mutations.push(Mutation::Put {
                tree: ttl.tree,
                key,
                value: Vec::new(),
            });
        }
    }

    /// Time to Live enabled or disabled since the plan: its expiry entries would be wrong.
    fn plans_still_hold(&self, planned: &TableDef, current: &TableDef) -> bool {
        planned.time_to_live.as_ref().map(|ttl| ttl.tree)
            == current.time_to_live.as_ref().map(|ttl| ttl.tree)
    }

    fn check(&self, checker: &mut Checker<'_>, table: &TableDef) -> Result<(), ApiError> {
        check::check_expiry_index(checker, table)
    }
}

/// How often expired items are swept by default: often enough that a local test sees
/// expiry within about a second.
pub const TIME_TO_LIVE_SWEEP_INTERVAL_DEFAULT: Duration = Duration::from_secs(1);

/// Time to Live's settings (`Options::time_to_live`).
#[derive(Debug, Clone)]
pub struct TimeToLiveOptions {
    /// How often expired items are looked for and deleted.
    pub sweep_interval: Duration,
    /// The time an UpdateTimeToLive must wait after the previous change of the same table
    /// (AWS: about an hour; 0 by default so tests can flip it).
    pub change_cooldown: Duration,
    /// Sweep as soon as the upkeep starts (at open, or when the first table needs it), not
    /// one interval later: with a long interval, a server that lives less than one (a test
    /// run, a process restarted after a crash) would otherwise never delete anything. Off
    /// only for tests that sweep when they choose.
    pub sweep_at_start: bool,
}

impl Default for TimeToLiveOptions {
    fn default() -> Self {
        TimeToLiveOptions {
            sweep_interval: TIME_TO_LIVE_SWEEP_INTERVAL_DEFAULT,
            change_cooldown: Duration::ZERO,
            sweep_at_start: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(text: &str) -> AttributeValue {
        AttributeValue::N(Number::parse(text).unwrap())
    }

    #[test]
    fn expiry_seconds_take_whole_seconds_of_top_level_numbers_only() {
        assert_eq!(expiry_seconds(&n("1700000000")), Some(1_700_000_000));
        assert_eq!(expiry_seconds(&n("12345678.1234")), Some(12_345_678));
        assert_eq!(expiry_seconds(&n("1234567e1")), Some(12_345_670));
        assert_eq!(expiry_seconds(&n("0.5")), Some(0));
        assert_eq!(expiry_seconds(&n("1e-100")), Some(0));
        assert_eq!(expiry_seconds(&n("-5")), None);
        assert_eq!(expiry_seconds(&n("1e30")), None);
        assert_eq!(
            expiry_seconds(&AttributeValue::S("1700000000".into())),
            None
        );
    }

    #[test]
    fn expired_means_past_and_within_five_years() {
        let now = 2_000_000_000;
        assert!(is_expired(now - 1, now));
        assert!(!is_expired(now, now));
        assert!(!is_expired(now + 10, now));
        assert!(is_expired(now - IGNORED_AFTER_SECONDS, now));
        assert!(!is_expired(now - IGNORED_AFTER_SECONDS - 1, now));
    }

    #[test]
    fn expiry_keys_sort_by_time_then_key_and_split_back() {
        let a = expiry_key(5, b"zz");
        let b = expiry_key(6, b"aa");
        assert!(a < b);
        assert_eq!(split_expiry_key(&b), Some((6, &b"aa"[..])));
        assert_eq!(split_expiry_key(b"short"), None);
    }
}
