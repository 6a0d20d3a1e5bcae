//! The catalog: what tables and indexes exist, how they are keyed and projected, and which
//! LSM trees hold them.
//!
//! Each table's definition is stored durably as manifest metadata (key `table/<name>`), in
//! the same version change that creates or drops its trees, so a table and its storage
//! appear and disappear together. The stored form is JSON (serde of [`TableDef`]) with a
//! `format` field: small, rarely written, and readable by a person debugging a data
//! directory.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use shoal_model::{AttributeValue, ScalarType};

use shoal_engine::{Db, DbError, TreeId};

/// Version of the stored catalog format.
pub const CATALOG_FORMAT: u32 = 1;

/// Prefix of the manifest metadata keys holding table definitions.
pub const METADATA_PREFIX: &str = "table/";

/// The metadata key of a table's definition, by its catalog key ([`TableDef::catalog_key`]).
pub fn metadata_key(catalog_key: &str) -> String {
    format!("{METADATA_PREFIX}{catalog_key}")
}

/// Table definitions by catalog key ([`TableDef::catalog_key`]).
pub type Catalog = BTreeMap<String, Arc<TableDef>>;

/// Separates a table's name from its Region in the catalog key of a table kept in one
/// Region only. No table name holds it (names are `[a-zA-Z0-9_.-]`).
const REGION_SEPARATOR: char = '@';

/// The catalog key of table `name` kept in `region` only (None: in every Region).
pub fn catalog_key(name: &str, region: Option<&str>) -> String {
    match region {
        // Every data-plane request builds one (`resolve`): joined without `format!`'s
        // machinery, which cost more than the lookup.
        Some(region) => {
            let mut key = String::with_capacity(name.len() + 1 + region.len());
            key.push_str(name);
            key.push(REGION_SEPARATOR);
            key.push_str(region);
            key
        }
        None => name.to_string(),
    }
}

/// The name and Region (None: every Region) of catalog key `key`, as [`catalog_key`] built it.
pub fn split_catalog_key(key: &str) -> (&str, Option<&str>) {
    match key.split_once(REGION_SEPARATOR) {
        Some((name, region)) => (name, Some(region)),
        None => (key, None),
    }
}

/// The table a request sent to `region` means by `name`: the one kept in that Region if
/// there is one, else the one every Region shares (how every table is kept until it joins a
/// global table, `replication`).
pub fn resolve<'c>(catalog: &'c Catalog, name: &str, region: &str) -> Option<&'c Arc<TableDef>> {
    catalog
        .get(&catalog_key(name, Some(region)))
        .or_else(|| catalog.get(name))
}

/// The current entry of the table `table` is a definition of (on every write: no key is
/// built for a table every Region shares).
pub fn entry_of<'c>(catalog: &'c Catalog, table: &TableDef) -> Option<&'c Arc<TableDef>> {
    match table.region {
        None => catalog.get(&table.name),
        Some(_) => catalog.get(&table.catalog_key()),
    }
}

/// The names of the tables a request sent to `region` sees, in byte order, once each.
pub fn visible_names(catalog: &Catalog, region: &str) -> BTreeSet<String> {
    catalog
        .values()
        .filter(|table| table.region.as_deref().is_none_or(|r| r == region))
        .map(|table| table.name.clone())
        .collect()
}

/// The catalog as stored in the current durable version of `db`.
pub(crate) fn read_catalog(db: &Db) -> Result<Catalog, DbError> {
    let version = db.version();
    let mut catalog = BTreeMap::new();
    for (key, bytes) in &version.metadata {
        if key.starts_with(METADATA_PREFIX) {
            let table = TableDef::from_metadata(bytes).map_err(|e| {
                DbError::Poisoned(format!("catalog entry {key} cannot be read: {e}"))
            })?;
            catalog.insert(table.catalog_key(), Arc::new(table));
        }
    }
    Ok(catalog)
}

/// A key attribute: its name and scalar type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyAttribute {
    pub name: String,
    pub ty: ScalarTypeDef,
}

/// `ScalarType` with serde, for the stored catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScalarTypeDef {
    S,
    N,
    B,
}

impl From<ScalarType> for ScalarTypeDef {
    fn from(t: ScalarType) -> Self {
        match t {
            ScalarType::S => ScalarTypeDef::S,
            ScalarType::N => ScalarTypeDef::N,
            ScalarType::B => ScalarTypeDef::B,
        }
    }
}

impl From<ScalarTypeDef> for ScalarType {
    fn from(t: ScalarTypeDef) -> Self {
        match t {
            ScalarTypeDef::S => ScalarType::S,
            ScalarTypeDef::N => ScalarType::N,
            ScalarTypeDef::B => ScalarType::B,
        }
    }
}

impl KeyAttribute {
    pub fn new(name: impl Into<String>, ty: ScalarType) -> KeyAttribute {
        KeyAttribute {
            name: name.into(),
            ty: ty.into(),
        }
    }

    pub fn scalar_type(&self) -> ScalarType {
        self.ty.into()
    }

    /// Whether `value` has this key's type.
    pub fn accepts(&self, value: &AttributeValue) -> bool {
        value.as_scalar_type() == Some(self.scalar_type())
    }
}

/// A primary key or index key schema: hash key and optional range key.
///
/// A GSI key may have up to 4 HASH and 4 RANGE attributes (multi-attribute keys, SPEC-3
/// §1): `hash` and `range` are the first of each, `more_hash` and `more_range` the rest in
/// schema order (`more_range` only when `range` is set). Tables and LSIs never have more.
/// The extra lists are left out of the stored JSON when empty, so definitions stored
/// before multi-attribute keys read unchanged and single-attribute ones are written as
/// before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeySchema {
    pub hash: KeyAttribute,
    pub range: Option<KeyAttribute>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_hash: Vec<KeyAttribute>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_range: Vec<KeyAttribute>,
}

/// HASH attributes of a multi-attribute GSI key, at most.
pub const KEY_HASH_ATTRIBUTES_MAX: usize = 4;
/// RANGE attributes of a multi-attribute GSI key, at most.
pub const KEY_RANGE_ATTRIBUTES_MAX: usize = 4;

impl KeySchema {
    /// A key of one hash attribute and at most one range attribute.
    pub fn new(hash: KeyAttribute, range: Option<KeyAttribute>) -> KeySchema {
        KeySchema {
            hash,
            range,
            more_hash: Vec::new(),
            more_range: Vec::new(),
        }
    }

    /// The key attribute names in schema order: every HASH attribute, then every RANGE one.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.attributes().map(|a| a.name.as_str())
    }

    /// The key attributes in schema order: every HASH attribute, then every RANGE one.
    pub fn attributes(&self) -> impl Iterator<Item = &KeyAttribute> {
        self.hash_attributes().chain(self.range_attributes())
    }

    /// The HASH attributes in schema order (one, or up to 4 on a GSI).
    pub fn hash_attributes(&self) -> impl Iterator<Item = &KeyAttribute> {
        std::iter::once(&self.hash).chain(self.more_hash.iter())
    }

    /// The RANGE attributes in schema order (none, one, or up to 4 on a GSI).
    pub fn range_attributes(&self) -> impl Iterator<Item = &KeyAttribute> {
        self.range.iter().chain(self.more_range.iter())
    }

    /// Whether the key has more than one HASH or more than one RANGE attribute.
    pub fn is_multi_attribute(&self) -> bool {
        !self.more_hash.is_empty() || !self.more_range.is_empty()
    }
}

/// What an index entry holds besides the keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Projection {
    KeysOnly,
    Include(Vec<String>),
    All,
}

impl Projection {
    /// DynamoDB's `ProjectionType` name.
    pub fn type_name(&self) -> &'static str {
        match self {
            Projection::KeysOnly => "KEYS_ONLY",
            Projection::Include(_) => "INCLUDE",
            Projection::All => "ALL",
        }
    }
}

/// Lifecycle of a global secondary index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum IndexStatus {
    /// Being built from a snapshot of the table (`backfilling` false while resources are
    /// set up, true while items are copied).
    Creating {
        backfilling: bool,
    },
    Active,
    Deleting,
}

/// Provisioned throughput as declared (enforced only by capacity emulation,
/// `capacity::throttle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Throughput {
    pub read_capacity_units: u64,
    pub write_capacity_units: u64,
}

/// How the table is billed (reported back by DescribeTable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BillingMode {
    PayPerRequest,
    Provisioned(Throughput),
}

/// A local secondary index: same partition key, another sort key, stored inside the table's
/// tree in its own key section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalIndexDef {
    pub name: String,
    pub key: KeySchema,
    pub projection: Projection,
    /// Key section in the table tree (1..=5), see `keys`.
    pub section: u8,
}

/// A global secondary index: any key schema, its own tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalIndexDef {
    pub name: String,
    pub key: KeySchema,
    pub projection: Projection,
    pub tree: TreeId,
    pub status: IndexStatus,
    pub throughput: Option<Throughput>,
    /// Throughput change history and on-demand caps. Absent in definitions stored before
    /// UpdateTable changed throughput.
    #[serde(default)]
    pub capacity: CapacitySettings,
}

/// What a table or GSI remembers about its capacity besides its current units: when the
/// provisioned units last went up and down, how many decreases its day saw (SPEC-2 §5.4),
/// and its on-demand caps (§5.5).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapacitySettings {
    /// Milliseconds since the Unix epoch.
    #[serde(default)]
    pub last_increase_millis: Option<u64>,
    #[serde(default)]
    pub last_decrease_millis: Option<u64>,
    /// Decreases on the UTC day of `last_decrease_millis` (NumberOfDecreasesToday on that
    /// day, 0 on any later one).
    #[serde(default)]
    pub decreases_that_day: u64,
    #[serde(default)]
    pub on_demand: OnDemandLimits,
}

/// Milliseconds in a day: NumberOfDecreasesToday counts per UTC day.
pub const DAY_MILLIS: u64 = 86_400_000;

impl CapacitySettings {
    /// NumberOfDecreasesToday at `now_millis`.
    pub fn decreases_today(&self, now_millis: u64) -> u64 {
        match self.last_decrease_millis {
            Some(last) if last / DAY_MILLIS == now_millis / DAY_MILLIS => self.decreases_that_day,
            _ => 0,
        }
    }

    /// Records a change of provisioned units from `old` to `new` at `now_millis`: a unit
    /// going up is an increase, one going down a decrease (both when they go opposite ways).
    pub fn record_change(&mut self, old: Throughput, new: Throughput, now_millis: u64) {
        let pairs = [
            (old.read_capacity_units, new.read_capacity_units),
            (old.write_capacity_units, new.write_capacity_units),
        ];
        if pairs.iter().any(|(old, new)| new > old) {
            self.last_increase_millis = Some(now_millis);
        }
        if pairs.iter().any(|(old, new)| new < old) {
            self.decreases_that_day = self.decreases_today(now_millis) + 1;
            self.last_decrease_millis = Some(now_millis);
        }
    }
}

/// OnDemandThroughput: the most request units per second an on-demand table or GSI may use
/// (None: no cap). Enforced only by capacity emulation (`capacity::throttle`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnDemandLimits {
    #[serde(default)]
    pub max_read_request_units: Option<u64>,
    #[serde(default)]
    pub max_write_request_units: Option<u64>,
}

impl OnDemandLimits {
    pub fn is_set(&self) -> bool {
        self.max_read_request_units.is_some() || self.max_write_request_units.is_some()
    }
}

/// Everything known about one table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDef {
    pub format: u32,
    pub name: String,
    /// DynamoDB's TableId (a UUID-shaped string).
    pub id: String,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at_millis: u64,
    pub key: KeySchema,
    /// Attribute definitions as given (every key attribute of the table and its indexes).
    pub attribute_definitions: Vec<KeyAttribute>,
    pub billing: BillingMode,
    /// The tree holding base items, LSI entries and collection records.
    pub tree: TreeId,
    pub local_indexes: Vec<LocalIndexDef>,
    pub global_indexes: Vec<GlobalIndexDef>,
    /// The table's streams still within retention, oldest first; at most the last one is
    /// enabled (`streams::record`). Absent in definitions stored before streams existed.
    #[serde(default)]
    pub streams: Vec<StreamDef>,
    /// Time to Live, while enabled (`ttl`).
    #[serde(default)]
    pub time_to_live: Option<TimeToLiveDef>,
    /// When Time to Live was last enabled or disabled (milliseconds since the epoch): the
    /// cool-down between changes counts from it.
    #[serde(default)]
    pub time_to_live_changed_at_millis: Option<u64>,
    /// Tags, deletion protection and table class. Absent in definitions stored before they
    /// existed (the defaults: no tags, unprotected, class never given).
    #[serde(default)]
    pub settings: TableSettings,
    /// The one Region this table is kept in, once it has been part of a global table
    /// (SPEC-3 §2); None: a table every Region shares, as Shoal keeps tables otherwise.
    #[serde(default)]
    pub region: Option<String>,
    /// Its global table, while it is a member of one (`replication`).
    #[serde(default)]
    pub replication: Option<ReplicationDef>,
}

/// A table's membership in a global table (SPEC-3 §2, version 2019.11.21): every member is
/// a table of the same name in its own Region ([`TableDef::region`]), and each copies its
/// writes to the others through its replication tree (`replication`, where the tree's
/// format is described).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicationDef {
    /// Every member, this one included, in the order they joined.
    pub members: Vec<MemberDef>,
    /// This member's own state.
    pub status: ReplicaStatus,
    /// This member's replication tree: its outgoing queues and the stamp of each item's
    /// last write.
    pub tree: TreeId,
    /// While CREATING: the TableId of the member it is filled from.
    #[serde(default)]
    pub source: Option<String>,
    /// Multi-Region strong consistency (SPEC-3 §2.5, `replication::strong`): a write is
    /// applied in every member before it is acknowledged. Fixed when the group forms.
    #[serde(default)]
    pub strong: bool,
    /// The Region of the group's witness (strong groups of two members only): it takes
    /// part in the group but holds no table.
    #[serde(default)]
    pub witness: Option<String>,
    /// This member's own read settings and table class (ReplicaUpdates `Create`/`Update`
    /// overrides, SPEC-3 §2.1; `replication::overrides`). Stored as the JSON object
    /// `"overrides": {"read_capacity_units": u64?, "max_read_request_units": u64?,
    /// "indexes": [{"name", "read_capacity_units"?, "max_read_request_units"?}],
    /// "table_class": "Standard" | "StandardInfrequentAccess" | null,
    /// "table_class_updated_at_millis": u64?}` inside the member's
    /// definition, which is written in the same version change (one WAL record) as the
    /// ReplicaUpdates action that sets it; the key is left out while nothing is overridden,
    /// so definitions stored before overrides existed read as "none".
    #[serde(default, skip_serializing_if = "ReplicaOverrides::is_empty")]
    pub overrides: ReplicaOverrides,
    /// Auto scaling settings (UpdateTableReplicaAutoScaling, SPEC-3 §2.7;
    /// `replication::autoscaling`), stored and echoed, never acted on. The write settings
    /// are the group's: every member's definition holds the same ones, all rewritten in
    /// one version change; the read settings are this member's own. Stored as the JSON
    /// object `"autoscaling": {"write": S?, "index_write": [{"name", "settings": S}],
    /// "read": S?, "index_read": [{"name", "settings": S}]}`, where S is
    /// `{"minimum_units": u64, "maximum_units": u64, "role_arn": string?, "policies":
    /// [{"name", "target_value": number, "disable_scale_in": bool?, "scale_in_cooldown":
    /// i32?, "scale_out_cooldown": i32?}]}`; a dimension without S (or the whole key, left
    /// out while nothing is set, so definitions stored before it existed read as "none")
    /// has auto scaling disabled.
    #[serde(default, skip_serializing_if = "AutoScalingDef::is_empty")]
    pub autoscaling: AutoScalingDef,
}

/// A global table member's auto scaling settings (see [`ReplicationDef::autoscaling`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoScalingDef {
    /// The group's table write capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<AutoScalingSettingsDef>,
    /// The group's GSI write capacity, by index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub index_write: Vec<IndexAutoScalingDef>,
    /// This member's table read capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<AutoScalingSettingsDef>,
    /// This member's GSI read capacity, by index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub index_read: Vec<IndexAutoScalingDef>,
}

impl AutoScalingDef {
    pub fn is_empty(&self) -> bool {
        *self == AutoScalingDef::default()
    }

    /// The group-wide part alone: what a new member starts from.
    pub fn group_wide(&self) -> AutoScalingDef {
        AutoScalingDef {
            write: self.write.clone(),
            index_write: self.index_write.clone(),
            ..AutoScalingDef::default()
        }
    }
}

/// One GSI's auto scaling settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexAutoScalingDef {
    pub name: String,
    pub settings: AutoScalingSettingsDef,
}

/// One dimension's auto scaling, while enabled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoScalingSettingsDef {
    pub minimum_units: u64,
    pub maximum_units: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_arn: Option<String>,
    /// Target tracking policies, by name, in the order first given.
    #[serde(default)]
    pub policies: Vec<ScalingPolicyDef>,
}

/// A target tracking scaling policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScalingPolicyDef {
    pub name: String,
    /// As the client sent it (a JSON number), so it reads back exactly.
    pub target_value: serde_json::Number,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_scale_in: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_in_cooldown: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_out_cooldown: Option<i32>,
}

/// A member's overrides of the group's settings: read capacity only (write capacity is
/// group-wide, SPEC-3 §2.1) and the table class. None: inherited from the table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaOverrides {
    /// ProvisionedThroughputOverride.ReadCapacityUnits (PROVISIONED tables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_capacity_units: Option<u64>,
    /// OnDemandThroughputOverride.MaxReadRequestUnits (PAY_PER_REQUEST tables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_read_request_units: Option<u64>,
    /// Per-GSI read overrides, in the order first given; an entry with nothing set is
    /// removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<IndexOverrides>,
    /// TableClassOverride.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_class: Option<TableClass>,
    /// When the TableClassOverride was last set to another class (milliseconds since the
    /// Unix epoch): `Replicas[]`'s `ReplicaTableClassSummary.LastUpdateDateTime`. Absent in
    /// overrides stored before it was kept (the summary then has no time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_class_updated_at_millis: Option<u64>,
}

impl ReplicaOverrides {
    pub fn is_empty(&self) -> bool {
        *self == ReplicaOverrides::default()
    }

    /// The overrides of GSI `name`, if it has any.
    pub fn index(&self, name: &str) -> Option<&IndexOverrides> {
        self.indexes.iter().find(|index| index.name == name)
    }

    /// Removes the GSI entries that no longer override anything.
    pub fn forget_empty_indexes(&mut self) {
        self.indexes.retain(|index| {
            index.read_capacity_units.is_some() || index.max_read_request_units.is_some()
        });
    }
}

/// A member's read overrides of one GSI.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexOverrides {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_capacity_units: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_read_request_units: Option<u64>,
}

/// One member of a global table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberDef {
    pub region: String,
    /// Its TableId: what queues for it are keyed by.
    pub table_id: String,
}

/// Where a member is in its life (DescribeTable's `ReplicaStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplicaStatus {
    /// Being filled with the source's items.
    Creating,
    Active,
    /// Disassociating (ReplicaUpdates `Disassociate`, `replication::disassociate`): its
    /// writes are no longer queued, and once what it had queued has reached the others it
    /// leaves the group. DescribeTable shows it UPDATING (SPEC-3 §2.2 has no status of its
    /// own for it).
    Leaving,
}

impl ReplicaStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ReplicaStatus::Creating => "CREATING",
            ReplicaStatus::Active => "ACTIVE",
            ReplicaStatus::Leaving => "UPDATING",
        }
    }
}

/// Time to Live of a table: which attribute holds each item's expiry time, and the expiry
/// index (expiry second, then the item's base key) in a tree of its own, written with every
/// item write so a sweep reads only what has expired (`ttl`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeToLiveDef {
    pub attribute_name: String,
    pub tree: TreeId,
    /// Whether the items stored before Time to Live was enabled have been indexed; until
    /// then a backfill does it (`control::backfill`), and an open resumes it.
    pub backfilled: bool,
}

/// What a table is set to that does not change how its items are stored: its tags
/// (SPEC-2 §4), deletion protection (§5.2) and table class (§5.3).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableSettings {
    /// Tag key → value; ListTagsOfResource answers in this (key) order.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// While true, DeleteTable is refused.
    #[serde(default)]
    pub deletion_protection: bool,
    /// None while neither CreateTable nor UpdateTable named a class: the table is STANDARD
    /// and DescribeTable leaves `TableClassSummary` out.
    #[serde(default)]
    pub table_class: Option<TableClass>,
    /// When UpdateTable last changed the class (milliseconds since the Unix epoch).
    #[serde(default)]
    pub table_class_updated_at_millis: Option<u64>,
    /// When UpdateTable last switched the table to PAY_PER_REQUEST (milliseconds since the
    /// Unix epoch); None: on demand since creation, or never.
    #[serde(default)]
    pub pay_per_request_since_millis: Option<u64>,
    /// The table's own throughput history and on-demand caps.
    #[serde(default)]
    pub capacity: CapacitySettings,
    /// Point-in-time recovery, while enabled (`backups::pitr`).
    #[serde(default)]
    pub point_in_time_recovery: Option<PointInTimeRecoveryDef>,
    /// The table's resource-based policy (`policies`), stored and never enforced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_policy: Option<StoredPolicy>,
    /// Each stream's resource-based policy, by stream label: a slot of its own per stream.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stream_policies: BTreeMap<String, StoredPolicy>,
    /// UpdateTable's `GlobalTableSettingsReplicationMode` of a regional table (`ENABLED` or
    /// `DISABLED`), once set; a member of a global table reports `ENABLED_WITH_OVERRIDES`
    /// instead (SPEC-3 §2.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings_replication_mode: Option<String>,
    /// Contributor Insights of the table (`index: None`) and of its GSIs, once configured
    /// (`insights`); a resource never configured has no entry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contributor_insights: Vec<InsightsDef>,
}

/// A resource-based policy as stored (SPEC-3 §5): the document minified, and its revision
/// id, the time of the change that stored it in epoch milliseconds (as text, as AWS gives
/// it), larger than every earlier revision of the same slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPolicy {
    pub document: String,
    pub revision_id: String,
}

/// Contributor Insights of a table or one of its GSIs (SPEC-3 §3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InsightsDef {
    /// The GSI, or None for the table itself.
    pub index: Option<String>,
    pub enabled: bool,
    /// `ACCESSED_AND_THROTTLED_KEYS` or `THROTTLED_KEYS`.
    pub mode: String,
    /// When it was last enabled or disabled (epoch milliseconds): ENABLING and DISABLING
    /// last the transient-status delay from here.
    pub changed_at_millis: u64,
    /// When the current rules were created (epoch milliseconds): part of their names.
    pub rules_created_at_millis: u64,
}

/// Point-in-time recovery of a table (SPEC-2 §6.2): how far back a restore may go, and
/// from when. Compaction keeps the table tree's versions of that period (`backups::pitr`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointInTimeRecoveryDef {
    /// RecoveryPeriodInDays (1..=35).
    pub recovery_period_days: u32,
    /// No restore goes earlier (milliseconds since the Unix epoch): when it was enabled, or
    /// the earliest restorable time when the period last changed (`backups::pitr`).
    pub restorable_from_millis: u64,
    /// The sequence number visible then: the state a restore to that time reads, and the
    /// lowest retention floor the table's tree gets.
    pub restorable_from_seq: u64,
}

/// DynamoDB's `TableClass`: a storage price class, with no effect on behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TableClass {
    Standard,
    StandardInfrequentAccess,
}

impl TableClass {
    /// Every class, in the API model's enum order.
    pub const ALL: [TableClass; 2] = [TableClass::Standard, TableClass::StandardInfrequentAccess];

    /// DynamoDB's name.
    pub fn as_str(self) -> &'static str {
        match self {
            TableClass::Standard => "STANDARD",
            TableClass::StandardInfrequentAccess => "STANDARD_INFREQUENT_ACCESS",
        }
    }

    pub fn parse(name: &str) -> Option<TableClass> {
        TableClass::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

/// What a stream's records carry (DynamoDB's `StreamViewType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StreamViewType {
    KeysOnly,
    NewImage,
    OldImage,
    NewAndOldImages,
}

impl StreamViewType {
    /// Every view type, in the API model's enum order.
    pub const ALL: [StreamViewType; 4] = [
        StreamViewType::NewImage,
        StreamViewType::OldImage,
        StreamViewType::NewAndOldImages,
        StreamViewType::KeysOnly,
    ];

    /// DynamoDB's name.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamViewType::KeysOnly => "KEYS_ONLY",
            StreamViewType::NewImage => "NEW_IMAGE",
            StreamViewType::OldImage => "OLD_IMAGE",
            StreamViewType::NewAndOldImages => "NEW_AND_OLD_IMAGES",
        }
    }

    pub fn parse(name: &str) -> Option<StreamViewType> {
        StreamViewType::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// Whether records carry the item as it was before the change.
    pub fn has_old_image(self) -> bool {
        matches!(
            self,
            StreamViewType::OldImage | StreamViewType::NewAndOldImages
        )
    }

    /// Whether records carry the item as it is after the change.
    pub fn has_new_image(self) -> bool {
        matches!(
            self,
            StreamViewType::NewImage | StreamViewType::NewAndOldImages
        )
    }
}

/// One shard of a stream: the records whose sequence numbers fall in
/// `start_seq..=end_seq` (open while `end_seq` is None). Shards of a stream cover
/// consecutive ranges; each new one names the previous as its parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardDef {
    pub id: String,
    pub parent: Option<String>,
    pub start_seq: u64,
    pub end_seq: Option<u64>,
    pub created_at_millis: u64,
    /// When the shard was closed (its newest record is at most this old).
    pub closed_at_millis: Option<u64>,
}

/// One stream of a table: every change to its items while enabled, as records in a tree of
/// its own keyed by sequence number (`streams::record`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamDef {
    /// Creation time as `YYYY-MM-DDTHH:MM:SS.mmm` (UTC): DynamoDB's StreamLabel.
    pub label: String,
    pub created_at_millis: u64,
    pub view_type: StreamViewType,
    pub tree: TreeId,
    /// When the stream was disabled; its shards are all closed from then on.
    pub disabled_at_millis: Option<u64>,
    /// Oldest first; the last is the open one while the stream is enabled.
    pub shards: Vec<ShardDef>,
}

impl StreamDef {
    pub fn is_enabled(&self) -> bool {
        self.disabled_at_millis.is_none()
    }

    pub fn shard(&self, shard_id: &str) -> Option<&ShardDef> {
        self.shards.iter().find(|shard| shard.id == shard_id)
    }
}

impl TableDef {
    /// The key of the table's entry in the catalog: its name, or its name and Region when
    /// it is kept in one Region only.
    pub fn catalog_key(&self) -> String {
        catalog_key(&self.name, self.region.as_deref())
    }

    /// The enabled stream every write adds its record to, if any.
    pub fn enabled_stream(&self) -> Option<&StreamDef> {
        self.streams.last().filter(|stream| stream.is_enabled())
    }

    /// The most recently created stream (enabled or not): LatestStreamArn's.
    pub fn latest_stream(&self) -> Option<&StreamDef> {
        self.streams.last()
    }

    /// Whether item collections are capped and reported (tables with at least one LSI).
    pub fn has_local_indexes(&self) -> bool {
        !self.local_indexes.is_empty()
    }

    pub fn local_index(&self, name: &str) -> Option<&LocalIndexDef> {
        self.local_indexes.iter().find(|i| i.name == name)
    }

    pub fn global_index(&self, name: &str) -> Option<&GlobalIndexDef> {
        self.global_indexes.iter().find(|i| i.name == name)
    }

    /// Names of every key attribute of the table and its indexes (what a write type-checks).
    pub fn all_key_attribute_names(&self) -> BTreeSet<&str> {
        let mut names: BTreeSet<&str> = self.key.names().collect();
        for lsi in &self.local_indexes {
            names.extend(lsi.key.names());
        }
        for gsi in &self.global_indexes {
            names.extend(gsi.key.names());
        }
        names
    }

    /// Serialises the definition for the manifest.
    pub fn to_metadata(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }

    /// Reads a definition stored by [`TableDef::to_metadata`].
    pub fn from_metadata(bytes: &[u8]) -> Result<TableDef, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decreases_are_counted_per_utc_day() {
        let units = |r, w| Throughput {
            read_capacity_units: r,
            write_capacity_units: w,
        };
        let mut capacity = CapacitySettings::default();
        let morning = 20_000 * DAY_MILLIS + 1_000;
        capacity.record_change(units(5, 5), units(10, 5), morning);
        assert_eq!(capacity.last_increase_millis, Some(morning));
        assert_eq!(capacity.decreases_today(morning), 0);
        capacity.record_change(units(10, 5), units(4, 5), morning + 1);
        capacity.record_change(units(4, 5), units(4, 6), morning + 2);
        capacity.record_change(units(4, 6), units(5, 1), morning + 3);
        assert_eq!(capacity.decreases_today(morning + 3), 2);
        assert_eq!(capacity.last_increase_millis, Some(morning + 3));
        assert_eq!(capacity.last_decrease_millis, Some(morning + 3));
        // A new UTC day starts from zero.
        let next_day = morning - 1_000 + DAY_MILLIS;
        assert_eq!(capacity.decreases_today(next_day - 1), 2);
        assert_eq!(capacity.decreases_today(next_day), 0);
        capacity.record_change(units(5, 1), units(1, 1), next_day);
        assert_eq!(capacity.decreases_today(next_day), 1);
    }

    #[test]
    fn definitions_stored_before_table_settings_existed_still_load() {
        let mut table = TableDef {
            format: CATALOG_FORMAT,
            name: "T".into(),
            id: "id".into(),
            created_at_millis: 0,
            key: KeySchema::new(KeyAttribute::new("pk", ScalarType::S), None),
            attribute_definitions: vec![KeyAttribute::new("pk", ScalarType::S)],
            billing: BillingMode::PayPerRequest,
            tree: 1,
            local_indexes: vec![],
            global_indexes: vec![],
            streams: vec![],
            time_to_live: None,
            time_to_live_changed_at_millis: None,
            settings: TableSettings::default(),
            region: None,
            replication: None,
        };
        let mut stored: serde_json::Value =
            serde_json::from_slice(&table.to_metadata().unwrap()).unwrap();
        // A definition from before streams, Time to Live and settings were kept.
        for member in [
            "settings",
            "streams",
            "time_to_live",
            "time_to_live_changed_at_millis",
            "region",
            "replication",
        ] {
            stored.as_object_mut().unwrap().remove(member);
        }
        let old = serde_json::to_vec(&stored).unwrap();
        assert_eq!(TableDef::from_metadata(&old).unwrap(), table);

        table.settings.tags.insert("k".into(), "v".into());
        table.settings.deletion_protection = true;
        table.settings.table_class = Some(TableClass::StandardInfrequentAccess);
        table.settings.table_class_updated_at_millis = Some(5);
        table.settings.pay_per_request_since_millis = Some(6);
        table.settings.capacity.last_decrease_millis = Some(7);
        table.settings.capacity.decreases_that_day = 1;
        table.settings.capacity.on_demand.max_read_request_units = Some(8);
        table.settings.point_in_time_recovery = Some(PointInTimeRecoveryDef {
            recovery_period_days: 35,
            restorable_from_millis: 9,
            restorable_from_seq: 10,
        });
        let bytes = table.to_metadata().unwrap();
        assert_eq!(TableDef::from_metadata(&bytes).unwrap(), table);
    }
}
