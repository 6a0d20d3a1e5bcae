//! The control plane: CreateTable, DescribeTable, ListTables, DeleteTable (SPEC §2). A
//! table protected against deletion (SPEC-2 §5.2) is not deleted.
//!
//! A table is one LSM tree named by its TableId (base items, LSI entries, collection
//! records) plus one tree per GSI named `<TableId>/gsi/<IndexName>`. Creating or deleting a
//! table changes its trees and its catalog entry (`table/<name>` manifest metadata) in ONE
//! durable version change, so a crash leaves either the whole table or none of it. Changes
//! are serialised by `Database::catalog_change`; the in-memory catalog is reloaded from the
//! durable version after each one.
//!
//! DescribeTable's ItemCount / TableSizeBytes / IndexSizeBytes are the table's statistics
//! records, kept with every write (`core::stats`): reading them costs the same whatever the
//! table's size.

use std::collections::hash_map::RandomState;
use std::collections::BTreeSet;
use std::hash::{BuildHasher, Hasher};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use shoal_model::{ApiError, ErrorCode};

use crate::api::common::{table_name_of, validation_errors};
use crate::api::constraint::{value_at_least, value_at_most, violation};
use crate::api::control::{
    AttributeDefinition, BillingModeSummary, CreateTableRequest, CreateTableResponse,
    DeleteTableRequest, DeleteTableResponse, DescribeTableRequest, DescribeTableResponse,
    GlobalSecondaryIndexDescription, KeySchemaElement, ListTablesRequest, ListTablesResponse,
    LocalSecondaryIndexDescription, OnDemandThroughput, Projection as ProjectionDescription,
    ProvisionedThroughputDescription, StreamSpecification, TableClassSummary, TableDescription,
};
use crate::control::schema::{self, TableSchema};
use crate::core::catalog::{
    metadata_key, BillingMode, CapacitySettings, GlobalIndexDef, IndexStatus, KeyAttribute,
    KeySchema, OnDemandLimits, Projection, TableDef, Throughput, CATALOG_FORMAT,
};
use crate::core::clock::epoch_seconds;
use crate::core::clock::now_millis;
use crate::core::definition::new_definition_edits;
use crate::core::error::internal;
use crate::core::region::{self, table_arn};
use crate::core::stats::{self, TableStats};
use crate::database::Database;
use crate::emulation::transient::TransientStatus;
use crate::streams::lifecycle;
use shoal_engine::version::VersionEdit;
use shoal_engine::{TreeId, WriteBatch};

/// ListTables' largest (and default) page.
pub const LIST_TABLES_LIMIT_MAX: i64 = 100;
/// The text of a DeleteTable of a table protected against deletion.
pub const DELETION_PROTECTED_MESSAGE: &str = "Resource cannot be deleted as it is currently protected against deletion. Disable deletion protection first.";

impl Database {
    /// CreateTable: validates the request (SPEC §2.2), then creates the table's trees and
    /// its catalog entry in one durable change. The table is ACTIVE at once.
    pub fn create_table(
        &self,
        request: CreateTableRequest,
    ) -> Result<CreateTableResponse, ApiError> {
        let schema = schema::validate_create_table(&request)?;
        let _change = self.catalog_change.lock();
        if self.find_table(&schema.name).is_some() {
            return Err(ApiError::new(
                ErrorCode::ResourceInUseException,
                format!("Table already exists: {}", schema.name),
            ));
        }
        // A table still DELETING (`emulation::transient`) keeps its name.
        self.emulation
            .transitions
            .refuse_named(&schema.name, &region::current())?;
        let table_id = new_table_id();
        let created_at_millis = now_millis();
        let mut tree_names = vec![table_id.clone()];
        tree_names.extend(
            schema
                .global_indexes
                .iter()
                .map(|gsi| gsi_tree_name(&table_id, &gsi.name)),
        );
        let mut definition = table_def(
            &schema,
            &table_id,
            created_at_millis,
            &vec![0; tree_names.len()],
        );
        // The stream's tree follows the GSIs' (`stream_tree_position`).
        let stream_tree_position = tree_names.len();
        if let Some(view_type) = schema.stream {
            self.load_iterator_key(true)?;
            tree_names.push(self.stream_for_new_table(&mut definition, view_type));
        }
        // The first table brings the statistics tree, in the same version change (last, so
        // the table's own trees keep their places in `tree_ids`).
        let creates_stats_tree = !self.stats.has_tree();
        if creates_stats_tree {
            tree_names.push(stats::STATS_TREE_NAME.to_string());
        }
        // Fail before touching storage if the definition cannot be stored.
        definition.to_metadata().map_err(internal)?;

        let mut stored = None;
        let tree_ids = self
            .db
            .create_trees_with(&tree_names, |ids| {
                let mut table = definition.clone();
                table.tree = ids.first().copied().unwrap_or_default();
                for (gsi, tree) in table.global_indexes.iter_mut().zip(ids.iter().skip(1)) {
                    gsi.tree = *tree;
                }
                if schema.stream.is_some() {
                    if let Some(&tree) = ids.get(stream_tree_position) {
                        Database::stream_tree_created(&mut table, tree);
                    }
                }
                new_definition_edits(table, &mut stored)
            })
            .map_err(internal)?;
        let table = self.table_created(stored, &tree_ids, creates_stats_tree)?;
        // Its statistics are complete (empty) from the start: marked before any writer can
        // see the table. A crash before this leaves a table the next open rebuilds.
        let mut batch = WriteBatch::new();
        stats::mark_maintained(self.stats.tree()?, &table, &mut batch)?;
        self.db.write(batch).map_err(internal)?;
        self.reload_catalog().map_err(internal)?;
        self.start_upkeep().map_err(internal)?;
        self.emulation.transitions.begin(
            &table.catalog_key(),
            TransientStatus::Creating,
            None,
            None,
        );
        let status = if self.emulation.transitions.enabled() {
            "CREATING"
        } else {
            "ACTIVE"
        };
        Ok(CreateTableResponse {
            table_description: describe(&table, &TableStats::empty_for(&table), status),
        })
    }

    /// The sizes of `table` and its indexes, as of the last committed write: the sums of
    /// its statistics records, kept in memory (`core::stats`).
    pub fn table_stats(&self, table: &TableDef) -> TableStats {
        self.stats.of(table)
    }

    /// The TableStatus of `table`, which exists: ACTIVE, or CREATING or UPDATING while
    /// such a transition lasts (`emulation::transient`).
    pub(crate) fn table_status(&self, table: &TableDef) -> &'static str {
        match self.emulation.transitions.of(&table.catalog_key()) {
            Some(t) if t.status != TransientStatus::Deleting => t.status.as_str(),
            _ => "ACTIVE",
        }
    }

    /// DescribeTable.
    pub fn describe_table(
        &self,
        request: DescribeTableRequest,
    ) -> Result<DescribeTableResponse, ApiError> {
        let name = table_name_of(request.table_name.as_deref())?;
        let table = match self.table(name) {
            Ok(table) => table,
            Err(error) => {
                // A table DELETING (`emulation::transient`) is described as it was deleted.
                let transition = self
                    .emulation
                    .transitions
                    .of_named(name, &region::current());
                return match transition.and_then(|t| t.deleted) {
                    Some(deleted) => Ok(DescribeTableResponse { table: deleted }),
                    None => Err(error),
                };
            }
        };
        let stats = self.table_stats(&table);
        let mut description = describe(&table, &stats, self.table_status(&table));
        self.describe_members(&table, &mut description);
        let transition = self.emulation.transitions.of(&table.catalog_key());
        if let Some(index) = transition.and_then(|t| t.creating_index) {
            for gsi in description.global_secondary_indexes.iter_mut().flatten() {
                if gsi.index_name == index && gsi.index_status == "ACTIVE" {
                    gsi.index_status = "CREATING".to_string();
                    gsi.backfilling = Some(false);
                }
            }
        }
        Ok(DescribeTableResponse { table: description })
    }

    /// ListTables: table names in byte order, `Limit` (1..=100) at a time.
    pub fn list_tables(&self, request: ListTablesRequest) -> Result<ListTablesResponse, ApiError> {
        let mut problems = Vec::new();
        if let Some(start) = request.exclusive_start_table_name.as_deref() {
            schema::name_problems(Some(start), "exclusiveStartTableName", &mut problems);
        }
        if let Some(limit) = request.limit {
            let value = limit.to_string();
            if limit < 1 {
                problems.push(violation(Some(&value), "limit", &value_at_least(1)));
            }
            if limit > LIST_TABLES_LIMIT_MAX {
                problems.push(violation(
                    Some(&value),
                    "limit",
                    &value_at_most(LIST_TABLES_LIMIT_MAX),
                ));
            }
        }
        if !problems.is_empty() {
            return Err(validation_errors(&problems));
        }
        // Within 1..=100 after the checks above.
        let limit = request.limit.unwrap_or(LIST_TABLES_LIMIT_MAX) as usize;
        // Tables still DELETING (`emulation::transient`) are listed too.
        let mut all: BTreeSet<String> = self.table_names().into_iter().collect();
        all.extend(self.emulation.transitions.deleting(&region::current()));
        let lower = match request.exclusive_start_table_name.as_deref() {
            Some(start) => Bound::Excluded(start),
            None => Bound::Unbounded,
        };
        let mut names = all.range::<str, _>((lower, Bound::Unbounded));
        let table_names: Vec<String> = names.by_ref().take(limit).cloned().collect();
        let more_follow = names.next().is_some();
        Ok(ListTablesResponse {
            last_evaluated_table_name: if more_follow {
                table_names.last().cloned()
            } else {
                None
            },
            table_names,
        })
    }

    /// DeleteTable: drops the table's trees and its catalog entry in one durable change,
    /// after a SYSTEM backup of it if it has point-in-time recovery (`backups::on_demand`).
    /// The response describes the table as DELETING, without its schema (SPEC §2.4).
    pub fn delete_table(
        &self,
        request: DeleteTableRequest,
    ) -> Result<DeleteTableResponse, ApiError> {
        let name = table_name_of(request.table_name.as_deref())?;
        let _change = self.catalog_change.lock();
        let table = self.table(name)?;
        if table.settings.deletion_protection {
            return Err(ApiError::validation(DELETION_PROTECTED_MESSAGE));
        }
        if table.replication.as_ref().is_some_and(|r| r.strong) {
            return Err(ApiError::validation(
                crate::replication::strong::DELETE_ONE_MEMBER_MESSAGE,
            ));
        }
        self.emulation
            .transitions
            .refuse_change(&table.catalog_key())?;
        let stats = self.drop_table(&table)?;
        // The members that stay see it DELETING for the transient delay, as after a
        // ReplicaUpdates Delete.
        if let Some(replication) = &table.replication {
            let region = crate::replication::feature::region_of(&table).to_string();
            self.show_departed(&table, &replication.members, &[region], None);
        }
        let mut description = describe(&table, &stats, "DELETING");
        description.key_schema = None;
        description.attribute_definitions = None;
        description.creation_date_time = None;
        description.local_secondary_indexes = None;
        description.global_secondary_indexes = None;
        description.stream_specification = None;
        description.deletion_protection_enabled = None;
        description.table_class_summary = None;
        self.emulation.transitions.begin(
            &table.catalog_key(),
            TransientStatus::Deleting,
            None,
            Some(description.clone()),
        );
        Ok(DeleteTableResponse {
            table_description: description,
        })
    }

    /// Drops `table`'s trees and its catalog entry in one durable change (a member of a
    /// global table leaves its group in the same change, `replication::members`), after a
    /// SYSTEM backup of it if it has point-in-time recovery, and returns its last
    /// statistics. The caller holds `catalog_change`.
    pub(crate) fn drop_table(&self, table: &TableDef) -> Result<TableStats, ApiError> {
        let mut stats = self.drop_tables(std::slice::from_ref(table))?;
        stats
            .pop()
            .ok_or_else(|| internal("a dropped table has no statistics"))
    }

    /// [`Database::drop_table`] for several members of one global table leaving it
    /// together (a strong group taken apart): every table's trees and catalog entry, and
    /// what their leaving changes in the members that stay, in ONE version change, so a
    /// crash leaves the group whole or all of them gone. Returns each table's last
    /// statistics, in `tables`' order. The caller holds `catalog_change`.
    pub(crate) fn drop_tables(&self, tables: &[TableDef]) -> Result<Vec<TableStats>, ApiError> {
        for table in tables {
            if table.settings.point_in_time_recovery.is_some() {
                // Before the drop: a crash between the two leaves the table and its backup,
                // and the retried DeleteTable takes no second one.
                self.take_deleted_table_backup(table)?;
            }
        }
        let stats: Vec<TableStats> = tables.iter().map(|t| self.table_stats(t)).collect();
        let mut trees = Vec::new();
        for table in tables {
            trees.push(table.tree);
            trees.extend(table.global_indexes.iter().map(|gsi| gsi.tree));
            // The table's streams go with it (docs/COMPATIBILITY.md: DynamoDB keeps them
            // readable for 24 hours).
            trees.extend(table.streams.iter().map(|stream| stream.tree));
            trees.extend(table.time_to_live.iter().map(|ttl| ttl.tree));
        }
        let leaving: Vec<&TableDef> = tables.iter().collect();
        let (group_trees, mut edits) = self.leave_group(&leaving)?;
        trees.extend(group_trees);
        edits.extend(tables.iter().map(|table| VersionEdit::SetMetadata {
            key: metadata_key(&table.catalog_key()),
            value: None,
        }));
        self.db.drop_trees_with(&trees, edits).map_err(internal)?;
        self.reload_catalog().map_err(internal)?;
        // The records go after the tables: a crash between leaves records of no table,
        // which the next open removes.
        let mut batch = WriteBatch::new();
        for table in tables {
            stats::remove_all(self.stats.tree()?, table.tree, &mut batch)?;
        }
        self.db.write(batch).map_err(internal)?;
        for table in tables {
            self.stats.forget(table.tree);
        }
        Ok(stats)
    }
}

/// The name of the tree of GSI `index_name` of the table `table_id` (module docs).
pub(crate) fn gsi_tree_name(table_id: &str, index_name: &str) -> String {
    format!("{table_id}/gsi/{index_name}")
}

pub(crate) fn table_def(
    schema: &TableSchema,
    table_id: &str,
    created_at_millis: u64,
    tree_ids: &[TreeId],
) -> TableDef {
    TableDef {
        format: CATALOG_FORMAT,
        name: schema.name.clone(),
        id: table_id.to_string(),
        created_at_millis,
        key: schema.key.clone(),
        attribute_definitions: schema.attribute_definitions.clone(),
        billing: schema.billing,
        tree: tree_ids.first().copied().unwrap_or_default(),
        local_indexes: schema.local_indexes.clone(),
        streams: Vec::new(),
        time_to_live: None,
        time_to_live_changed_at_millis: None,
        settings: schema.settings.clone(),
        region: None,
        replication: None,
        global_indexes: schema
            .global_indexes
            .iter()
            .zip(tree_ids.iter().skip(1))
            .map(|(gsi, tree)| GlobalIndexDef {
                name: gsi.name.clone(),
                key: gsi.key.clone(),
                projection: gsi.projection.clone(),
                tree: *tree,
                status: IndexStatus::Active,
                throughput: gsi.throughput,
                capacity: CapacitySettings {
                    on_demand: gsi.on_demand,
                    ..CapacitySettings::default()
                },
            })
            .collect(),
    }
}

/// The KeySchema as declared: every HASH element, then every RANGE one, in schema order.
pub(crate) fn key_schema_elements(key: &KeySchema) -> Vec<KeySchemaElement> {
    let element = |attribute: &KeyAttribute, key_type: &str| KeySchemaElement {
        attribute_name: Some(attribute.name.clone()),
        key_type: Some(key_type.to_string()),
    };
    key.hash_attributes()
        .map(|a| element(a, "HASH"))
        .chain(key.range_attributes().map(|a| element(a, "RANGE")))
        .collect()
}

pub(crate) fn projection_description(projection: &Projection) -> ProjectionDescription {
    ProjectionDescription {
        projection_type: Some(projection.type_name().to_string()),
        non_key_attributes: match projection {
            Projection::Include(names) => Some(names.clone()),
            _ => None,
        },
    }
}

/// ProvisionedThroughput of a table or GSI: its units (zeros on demand) and its history.
fn throughput_description(
    throughput: Option<Throughput>,
    capacity: &CapacitySettings,
    now_millis: u64,
) -> ProvisionedThroughputDescription {
    let throughput = throughput.unwrap_or(Throughput {
        read_capacity_units: 0,
        write_capacity_units: 0,
    });
    let seconds = |millis: Option<u64>| millis.map(epoch_seconds);
    ProvisionedThroughputDescription {
        last_increase_date_time: seconds(capacity.last_increase_millis),
        last_decrease_date_time: seconds(capacity.last_decrease_millis),
        number_of_decreases_today: capacity.decreases_today(now_millis),
        read_capacity_units: throughput.read_capacity_units,
        write_capacity_units: throughput.write_capacity_units,
    }
}

/// OnDemandThroughput as described: the caps that are set, if any.
fn on_demand_description(limits: &OnDemandLimits) -> Option<OnDemandThroughput> {
    let units = |cap: Option<u64>| cap.map(|units| i64::try_from(units).unwrap_or(i64::MAX));
    limits.is_set().then(|| OnDemandThroughput {
        max_read_request_units: units(limits.max_read_request_units),
        max_write_request_units: units(limits.max_write_request_units),
    })
}

pub(crate) fn index_status(status: IndexStatus) -> (&'static str, Option<bool>) {
    match status {
        IndexStatus::Creating { backfilling } => ("CREATING", Some(backfilling)),
        IndexStatus::Active => ("ACTIVE", None),
        IndexStatus::Deleting => ("DELETING", None),
    }
}

/// The full TableDescription of `table` with status `table_status`.
pub(crate) fn describe(
    table: &TableDef,
    stats: &TableStats,
    table_status: &str,
) -> TableDescription {
    let arn = table_arn(&table.name);
    let created_at_seconds = epoch_seconds(table.created_at_millis);
    let now = now_millis();
    let (provisioned, billing_mode_summary) = match table.billing {
        BillingMode::PayPerRequest => (
            None,
            BillingModeSummary {
                billing_mode: "PAY_PER_REQUEST".to_string(),
                last_update_to_pay_per_request_date_time: Some(
                    table
                        .settings
                        .pay_per_request_since_millis
                        .map_or(created_at_seconds, epoch_seconds),
                ),
            },
        ),
        BillingMode::Provisioned(throughput) => (
            Some(throughput),
            BillingModeSummary {
                billing_mode: "PROVISIONED".to_string(),
                last_update_to_pay_per_request_date_time: None,
            },
        ),
    };
    let local_secondary_indexes: Vec<LocalSecondaryIndexDescription> = table
        .local_indexes
        .iter()
        .enumerate()
        .map(|(position, lsi)| {
            let sizes = stats
                .local_indexes
                .get(position)
                .copied()
                .unwrap_or_default();
            LocalSecondaryIndexDescription {
                index_name: lsi.name.clone(),
                key_schema: key_schema_elements(&lsi.key),
                projection: projection_description(&lsi.projection),
                index_size_bytes: sizes.size_bytes,
                item_count: sizes.item_count,
                index_arn: format!("{arn}/index/{}", lsi.name),
            }
        })
        .collect();
    let global_secondary_indexes: Vec<GlobalSecondaryIndexDescription> = table
        .global_indexes
        .iter()
        .enumerate()
        .map(|(position, gsi)| {
            let sizes = stats
                .global_indexes
                .get(position)
                .copied()
                .unwrap_or_default();
            let (index_status, backfilling) = index_status(gsi.status);
            GlobalSecondaryIndexDescription {
                index_name: gsi.name.clone(),
                key_schema: key_schema_elements(&gsi.key),
                projection: projection_description(&gsi.projection),
                index_status: index_status.to_string(),
                backfilling,
                provisioned_throughput: throughput_description(gsi.throughput, &gsi.capacity, now),
                on_demand_throughput: on_demand_description(&gsi.capacity.on_demand),
                index_size_bytes: sizes.size_bytes,
                item_count: sizes.item_count,
                index_arn: format!("{arn}/index/{}", gsi.name),
            }
        })
        .collect();
    TableDescription {
        table_name: table.name.clone(),
        table_arn: arn,
        table_id: table.id.clone(),
        table_status: table_status.to_string(),
        key_schema: Some(key_schema_elements(&table.key)),
        attribute_definitions: Some(
            table
                .attribute_definitions
                .iter()
                .map(|d| AttributeDefinition {
                    attribute_name: Some(d.name.clone()),
                    attribute_type: Some(d.scalar_type().as_str().to_string()),
                })
                .collect(),
        ),
        creation_date_time: Some(created_at_seconds),
        item_count: stats.table.item_count,
        table_size_bytes: stats.table.size_bytes,
        provisioned_throughput: throughput_description(provisioned, &table.settings.capacity, now),
        billing_mode_summary,
        on_demand_throughput: on_demand_description(&table.settings.capacity.on_demand),
        local_secondary_indexes: (!local_secondary_indexes.is_empty())
            .then_some(local_secondary_indexes),
        global_secondary_indexes: (!global_secondary_indexes.is_empty())
            .then_some(global_secondary_indexes),
        stream_specification: table.enabled_stream().map(|stream| StreamSpecification {
            stream_enabled: Some(true),
            stream_view_type: Some(stream.view_type.as_str().to_string()),
        }),
        latest_stream_arn: table
            .latest_stream()
            .map(|stream| lifecycle::stream_arn(&table.name, &stream.label)),
        latest_stream_label: table.latest_stream().map(|stream| stream.label.clone()),
        deletion_protection_enabled: Some(table.settings.deletion_protection),
        table_class_summary: table.settings.table_class.map(|class| TableClassSummary {
            table_class: class.as_str().to_string(),
            last_update_date_time: table
                .settings
                .table_class_updated_at_millis
                .map(epoch_seconds),
        }),
        restore_summary: None,
        global_table_version: None,
        replicas: None,
        // A member's own mode replaces it (`replication::members::describe_members`).
        global_table_settings_replication_mode: table.settings.settings_replication_mode.clone(),
        multi_region_consistency: None,
        global_table_witnesses: None,
    }
}

/// 128 random bits. `RandomState` carries per-process random keys; the clock and a counter
/// make successive draws differ.
pub(crate) fn random_bits() -> u128 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let state = RandomState::new();
    let mut bits = 0u128;
    for half in 0..2usize {
        let mut hasher = state.build_hasher();
        hasher.write_u128(nanos);
        hasher.write_u64(count);
        hasher.write_usize(half);
        bits = (bits << 64) | u128::from(hasher.finish());
    }
    bits
}

/// A random (version 4 shaped) UUID for a new table.
pub(crate) fn new_table_id() -> String {
    let mut bytes = random_bits().to_be_bytes();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_ids_are_uuid_shaped_and_distinct() {
        let a = new_table_id();
        let b = new_table_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        let groups: Vec<usize> = a.split('-').map(str::len).collect();
        assert_eq!(groups, vec![8, 4, 4, 4, 12]);
        assert_eq!(&a[14..15], "4");
    }

    #[test]
    fn arns_and_names() {
        assert_eq!(
            table_arn("T1"),
            "arn:aws:dynamodb:ddblocal:000000000000:table/T1"
        );
        assert_eq!(
            crate::api::common::table_name_of(Some("arn:aws:dynamodb:x:1:table/Thread")).unwrap(),
            "Thread"
        );
        assert_eq!(table_name_of(Some("Thread")).unwrap(), "Thread");
        assert!(table_name_of(None).is_err());
    }
}
