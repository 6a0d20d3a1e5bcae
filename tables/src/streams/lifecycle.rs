//! The life of a table's streams (SPEC-2 §1.1): StreamSpecification on CreateTable and
//! UpdateTable, shard rollover, retention, and the background upkeep that does both.
//!
//! A stream is enabled by ONE durable version change that creates its tree and stores the
//! table definition with the new `StreamDef` and its first open shard; disabling, rolling a
//! shard over and forgetting what is past retention are likewise one catalog change each,
//! made under `Database::catalog_change`. A shard ends at the database's visible sequence
//! number when it closes: every write with a sequence number at or below it has committed
//! (and so has its record), and every later write gets a larger number, so no record can
//! fall between two shards or into a closed one.
//!
//! Writes find the enabled stream in the definition they plan with; a definition changed
//! under a write (a stream enabled or disabled) makes it plan again (`write.rs`), so a write
//! that starts after UpdateTable returns is in the new stream, and one that commits after a
//! disable is in no shard.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, RwLock};
use shoal_engine::version::VersionEdit;
use shoal_engine::{Db, DbError};
use shoal_model::{ApiError, ErrorCode};

use crate::api::constraint::{enum_value_set, validation_errors, violation, NOT_NULL};
use crate::api::streams::StreamSpecification;
use crate::core::catalog::{entry_of, resolve, Catalog};
use crate::core::catalog::{ShardDef, StreamDef, StreamViewType, TableDef};
use crate::core::clock::now_millis;
use crate::core::error::internal;
use crate::core::region::{self, table_arn};
use crate::database::Database;
use crate::streams::record::StreamRetention;

const INVALID: &str = "One or more parameter values were invalid:";

/// Records are kept this long by default (DynamoDB: 24 hours).
pub const STREAM_RETENTION_DEFAULT: Duration = Duration::from_secs(24 * 3600);
/// A shard rolls over after this long by default (AWS rolls roughly every 4 hours).
pub const STREAM_SHARD_DURATION_DEFAULT: Duration = Duration::from_secs(4 * 3600);

/// `duration` in milliseconds, saturating: an embedded user may pass `Duration::MAX`.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The member constraint problems of a StreamSpecification (the `N validation errors
/// detected` list of CreateTable and UpdateTable).
pub fn specification_problems(spec: &StreamSpecification, problems: &mut Vec<String>) {
    if spec.stream_enabled.is_none() {
        problems.push(violation(
            None,
            "streamSpecification.streamEnabled",
            NOT_NULL,
        ));
    }
    if let Some(view) = spec.stream_view_type.as_deref() {
        if StreamViewType::parse(view).is_none() {
            let allowed: Vec<&str> = StreamViewType::ALL.iter().map(|t| t.as_str()).collect();
            problems.push(violation(
                Some(view),
                "streamSpecification.streamViewType",
                &enum_value_set(&allowed),
            ));
        }
    }
}

/// The stream a CreateTable asks for (its constraints already checked).
pub fn stream_on_create(spec: &StreamSpecification) -> Result<Option<StreamViewType>, ApiError> {
    let view = spec
        .stream_view_type
        .as_deref()
        .and_then(StreamViewType::parse);
    match (spec.stream_enabled.unwrap_or(false), view) {
        (true, Some(view)) => Ok(Some(view)),
        (true, None) => Err(ApiError::validation(format!(
            "{INVALID} Table is being created with a stream enabled, UpdateViewType is required"
        ))),
        (false, None) => Ok(None),
        (false, Some(_)) => Err(ApiError::validation(format!(
            "{INVALID} Table is being created with a stream disabled, UpdateViewType should not be specified"
        ))),
    }
}

/// What an UpdateTable's StreamSpecification asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamChange {
    Enable(StreamViewType),
    Disable,
}

/// The change an UpdateTable StreamSpecification asks for (constraints already checked),
/// before looking at the table.
pub fn stream_change(spec: &StreamSpecification) -> Result<StreamChange, ApiError> {
    let view = spec
        .stream_view_type
        .as_deref()
        .and_then(StreamViewType::parse);
    match (spec.stream_enabled.unwrap_or(false), view) {
        (true, Some(view)) => Ok(StreamChange::Enable(view)),
        (true, None) => Err(ApiError::validation(format!(
            "{INVALID} If stream is being enabled then UpdateViewType is required"
        ))),
        (false, None) => Ok(StreamChange::Disable),
        (false, Some(_)) => Err(ApiError::validation(format!(
            "{INVALID} If stream is being disabled, then UpdateViewType must not be specified"
        ))),
    }
}

/// `<TableArn>/stream/<label>`.
pub fn stream_arn(table_name: &str, label: &str) -> String {
    format!("{}/stream/{label}", table_arn(table_name))
}

/// The (table name, label) an ARN names, or None when it is not a stream ARN.
pub fn parse_stream_arn(arn: &str) -> Option<(&str, &str)> {
    let rest = arn.strip_prefix("arn:")?;
    // partition:service:region:account:resource
    let mut parts = rest.splitn(5, ':');
    let (_partition, service, _region, _account) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if service != "dynamodb" {
        return None;
    }
    let resource = parts.next()?.strip_prefix("table/")?;
    let (table, label) = resource.split_once("/stream/")?;
    let label_ok = label.len() == 23
        && label.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            10 => b == b'T',
            13 | 16 => b == b':',
            19 => b == b'.',
            _ => b.is_ascii_digit(),
        });
    (!table.is_empty() && label_ok).then_some((table, label))
}

/// A shard id of AWS's shape, `shardId-<20 digits>-<8 hex>`: its creation time then a
/// hash of the stream and its first sequence number, so ids sort by creation.
fn shard_id(stream_tree: u32, start_seq: u64, created_at_millis: u64) -> String {
    // FNV-1a: stable across processes (ids are stored), no key needed.
    let mut hash: u32 = 0x811c_9dc5;
    for byte in stream_tree
        .to_le_bytes()
        .into_iter()
        .chain(start_seq.to_le_bytes())
    {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    format!("shardId-{created_at_millis:020}-{hash:08x}")
}

/// Whether `id` has the shape of a shard id (for ShardFilter's check).
pub fn is_shard_id(id: &str) -> bool {
    (28..=65).contains(&id.len()) && id.starts_with("shardId-")
}

/// The state shared between writers, readers and the upkeep thread.
pub(crate) struct Streams {
    /// Also the engine's compaction filter: drops records past retention.
    pub(crate) retention: Arc<StreamRetention>,
    /// Records committed to each stream's open shard since it opened (or since the database
    /// opened): what rolls a shard over by count.
    open_shard_records: RwLock<std::collections::HashMap<u32, AtomicU64>>,
    /// Bumped after every commit that added stream records; blocking readers wait on it.
    committed: Mutex<u64>,
    committed_changed: Condvar,
    /// Keys the shard iterators' check value, so a forged or damaged iterator is refused.
    /// Random, made with the first stream and stored in the manifest
    /// ([`ITERATOR_KEY_METADATA`]), so iterators stay valid across a restart.
    iterator_key: RwLock<[u8; 16]>,
    /// When each stream tree was last compacted to drop expired records (milliseconds).
    trimmed_at_millis: Mutex<std::collections::HashMap<u32, u64>>,
}

impl Streams {
    pub(crate) fn new(retention: Arc<StreamRetention>) -> Streams {
        Streams {
            retention,
            open_shard_records: Default::default(),
            committed: Mutex::new(0),
            committed_changed: Condvar::new(),
            iterator_key: RwLock::new([0; 16]),
            trimmed_at_millis: Default::default(),
        }
    }

    /// The check value of an iterator's `payload`: a hash of the secret key and the
    /// payload (not a cryptographic MAC; it tells a damaged or invented iterator from one
    /// Shoal issued).
    pub(crate) fn iterator_check(&self, payload: &[u8]) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.iterator_key.read().hash(&mut hasher);
        payload.hash(&mut hasher);
        hasher.finish()
    }

    /// Called after a commit that added `count` records to the stream in `tree`.
    pub(crate) fn records_committed(&self, tree: u32, count: u64) {
        let counted = {
            let counts = self.open_shard_records.read();
            counts
                .get(&tree)
                .map(|counter| counter.fetch_add(count, Ordering::Relaxed))
                .is_some()
        };
        if !counted {
            self.open_shard_records
                .write()
                .entry(tree)
                .or_default()
                .fetch_add(count, Ordering::Relaxed);
        }
        *self.committed.lock() += 1;
        self.committed_changed.notify_all();
    }

    /// Waits until a commit adds stream records or `timeout` passes; true if one did.
    pub(crate) fn wait_for_commit(&self, since: u64, timeout: Duration) -> bool {
        let mut committed = self.committed.lock();
        if *committed != since {
            return true;
        }
        let _ = self.committed_changed.wait_for(&mut committed, timeout);
        *committed != since
    }

    /// The commit counter [`Streams::wait_for_commit`] compares against.
    pub(crate) fn commit_count(&self) -> u64 {
        *self.committed.lock()
    }

    fn open_shard_record_count(&self, tree: u32) -> u64 {
        self.open_shard_records
            .read()
            .get(&tree)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    fn reset_open_shard_records(&self, tree: u32) {
        self.open_shard_records.write().remove(&tree);
    }
}

/// The manifest metadata key of the iterator key (16 bytes).
pub const ITERATOR_KEY_METADATA: &str = "streams/iterator-key";

/// Tells the retention filter which trees are stream trees.
pub(crate) fn note_stream_trees(retention: &StreamRetention, catalog: &Catalog) {
    let trees = catalog
        .values()
        .flat_map(|table| table.streams.iter().map(|s| s.tree))
        .collect();
    *retention.trees.write() = trees;
}

impl Database {
    /// Loads the stored iterator key, or with `create` makes and stores one if there is
    /// none yet (before the first stream; the caller holds `catalog_change`).
    pub(crate) fn load_iterator_key(&self, create: bool) -> Result<(), ApiError> {
        let stored = self
            .db
            .version()
            .metadata
            .get(ITERATOR_KEY_METADATA)
            .and_then(|bytes| <[u8; 16]>::try_from(bytes.as_slice()).ok());
        let key = match stored {
            Some(key) => key,
            None if create => {
                use std::hash::BuildHasher;
                let random = std::collections::hash_map::RandomState::new();
                let mut key = [0u8; 16];
                key[..8].copy_from_slice(&random.hash_one(now_millis()).to_le_bytes());
                key[8..].copy_from_slice(&random.hash_one(self.db.visible_seq()).to_le_bytes());
                self.db
                    .apply_edits(vec![VersionEdit::SetMetadata {
                        key: ITERATOR_KEY_METADATA.to_string(),
                        value: Some(key.to_vec()),
                    }])
                    .map_err(internal)?;
                key
            }
            None => return Ok(()),
        };
        *self.streams.iterator_key.write() = key;
        Ok(())
    }

    /// A new stream of `view_type` for `table`, recorded in `changed`; its tree is created
    /// with the catalog change. Returns the tree name to create.
    fn new_stream(&self, changed: &mut TableDef, view_type: StreamViewType, now: u64) -> String {
        // Labels are creation times; a stream re-enabled within the same millisecond still
        // gets a label (and ARN) of its own.
        let created_at_millis = changed
            .streams
            .last()
            .map_or(now, |last| now.max(last.created_at_millis + 1));
        let label = shoal_model::calendar::format_millis_iso(created_at_millis);
        // Records only exist once the tree does, and every later commit has a larger
        // sequence number than the one visible now.
        let start_seq = self.db.visible_seq() + 1;
        changed.streams.push(StreamDef {
            label: label.clone(),
            created_at_millis,
            view_type,
            tree: 0,
            disabled_at_millis: None,
            shards: vec![ShardDef {
                id: String::new(),
                parent: None,
                start_seq,
                end_seq: None,
                created_at_millis,
                closed_at_millis: None,
            }],
        });
        format!("{}/stream/{label}", changed.id)
    }

    /// Gives the stream just added by [`Database::new_stream`] its tree (and so its first
    /// shard its id).
    fn assign_stream_tree(changed: &mut TableDef, tree: u32) {
        if let Some(stream) = changed.streams.last_mut() {
            stream.tree = tree;
            if let Some(shard) = stream.shards.first_mut() {
                shard.id = shard_id(tree, shard.start_seq, shard.created_at_millis);
            }
        }
    }

    /// Adds the stream of a table being created to its definition: the tree name to create
    /// with the table, placed at `tree_position` of the created trees.
    pub(crate) fn stream_for_new_table(
        &self,
        table: &mut TableDef,
        view_type: StreamViewType,
    ) -> String {
        self.new_stream(table, view_type, table.created_at_millis)
    }

    /// Completes the definition of a created table whose stream tree is `tree`.
    pub(crate) fn stream_tree_created(table: &mut TableDef, tree: u32) {
        Database::assign_stream_tree(table, tree);
    }

    /// UpdateTable's StreamSpecification. The caller holds `catalog_change`.
    pub(crate) fn change_stream(
        &self,
        table: &TableDef,
        change: StreamChange,
    ) -> Result<(), ApiError> {
        let mut changed = table.clone();
        let now = now_millis();
        match change {
            StreamChange::Enable(view_type) => {
                if table.enabled_stream().is_some() {
                    return Err(ApiError::validation(format!(
                        "Table already has an enabled stream: TableName: {}",
                        table.name
                    )));
                }
                self.load_iterator_key(true)?;
                let tree_name = self.new_stream(&mut changed, view_type, now);
                self.store_definition_with_tree(&mut changed, tree_name, |changed, tree| {
                    Database::assign_stream_tree(changed, tree)
                })?;
                self.start_upkeep().map_err(internal)?;
                tracing::info!(table = %table.name, view = view_type.as_str(), "stream enabled");
            }
            StreamChange::Disable => {
                let Some(stream) = changed.streams.last_mut().filter(|s| s.is_enabled()) else {
                    return Err(ApiError::validation(format!(
                        "Table has no stream to disable: TableName: {}",
                        table.name
                    )));
                };
                stream.disabled_at_millis = Some(now);
                let end_seq = self.db.visible_seq();
                if let Some(shard) = stream.shards.last_mut() {
                    close_shard(shard, end_seq, now);
                }
                self.store_definition(&changed)?;
                tracing::info!(table = %table.name, "stream disabled");
            }
        }
        Ok(())
    }

    /// Rolls shards over and forgets what is past retention, now (what the upkeep thread
    /// does every interval; tests call it directly).
    pub fn stream_upkeep(&self) -> Result<(), ApiError> {
        self.upkeep_once()
    }
}

fn close_shard(shard: &mut ShardDef, end_seq: u64, now: u64) {
    debug_assert!(shard.end_seq.is_none(), "a shard closes once");
    // A shard that never saw a sequence number ends where it started, empty.
    shard.end_seq = Some(end_seq.max(shard.start_seq.saturating_sub(1)));
    shard.closed_at_millis = Some(now);
}

impl Database {
    /// One pass of the upkeep: for every table with streams, rolls the open shard over when
    /// it is old or full enough, forgets closed shards whose newest record is past
    /// retention, and drops a disabled stream (and its tree) once nothing of it is retained.
    fn upkeep_once(&self) -> Result<(), ApiError> {
        let (db, catalog, streams, options) =
            (&*self.db, &*self.catalog, &*self.streams, &self.options);
        let now = now_millis();
        let retention_millis = millis(options.streams.retention);
        let shard_millis = millis(options.streams.shard_duration);
        let tables: Vec<Arc<TableDef>> = catalog
            .read()
            .values()
            .filter(|table| !table.streams.is_empty())
            .cloned()
            .collect();
        for table in &tables {
            for stream in &table.streams {
                trim_stream(db, streams, stream.tree, now, retention_millis)?;
            }
        }
        for table in tables {
            let needs_change = table.streams.iter().any(|stream| {
                let open = stream.shards.last().filter(|s| s.end_seq.is_none());
                let roll = stream.is_enabled()
                    && open.is_some_and(|shard| {
                        now.saturating_sub(shard.created_at_millis) >= shard_millis
                            || options.streams.shard_records_max.is_some_and(|max| {
                                streams.open_shard_record_count(stream.tree) >= max
                            })
                    });
                let forget = stream.shards.iter().any(|shard| {
                    shard
                        .closed_at_millis
                        .is_some_and(|closed| closed.saturating_add(retention_millis) < now)
                });
                roll || forget
            });
            if !needs_change {
                continue;
            }
            let _change = self.catalog_change.lock();
            // Re-read under the lock: the table may have changed or gone meanwhile.
            let Some(current) = entry_of(&catalog.read(), &table).cloned() else {
                continue;
            };
            let mut changed = (*current).clone();
            let mut dropped_trees = Vec::new();
            for stream in &mut changed.streams {
                let enabled = stream.is_enabled();
                let tree = stream.tree;
                if let Some(open) = stream.shards.last_mut().filter(|s| s.end_seq.is_none()) {
                    let full = options
                        .streams
                        .shard_records_max
                        .is_some_and(|max| streams.open_shard_record_count(tree) >= max);
                    if enabled
                        && (now.saturating_sub(open.created_at_millis) >= shard_millis || full)
                    {
                        let end_seq = db.visible_seq();
                        close_shard(open, end_seq, now);
                        let parent = open.id.clone();
                        let start_seq = open.end_seq.unwrap_or(end_seq) + 1;
                        // A child created in the parent's millisecond still sorts after it.
                        let created_at_millis = now.max(open.created_at_millis + 1);
                        stream.shards.push(ShardDef {
                            id: shard_id(tree, start_seq, created_at_millis),
                            parent: Some(parent),
                            start_seq,
                            end_seq: None,
                            created_at_millis,
                            closed_at_millis: None,
                        });
                        streams.reset_open_shard_records(tree);
                    }
                }
                stream.shards.retain(|shard| {
                    shard
                        .closed_at_millis
                        .is_none_or(|closed| closed.saturating_add(retention_millis) >= now)
                });
                if stream.shards.is_empty() {
                    dropped_trees.push(stream.tree);
                }
            }
            changed.streams.retain(|stream| !stream.shards.is_empty());
            self.store_definition_dropping(&changed, &dropped_trees)?;
        }
        Ok(())
    }
}

/// Drops the records of the stream in `tree` that are past retention, by compacting the
/// tree whole through the retention filter, when its oldest stored record has expired.
/// Stream keys only grow, so the engine's own compactions mostly move their files down
/// without rewriting them and would never drop anything. A tree is rewritten at most once
/// per 1/24 of the retention (an hour by default), so expired records stay on disk at most
/// that much longer, and a steady stream costs one rewrite of its retained records an hour.
fn trim_stream(
    db: &Db,
    streams: &Streams,
    tree: u32,
    now: u64,
    retention_millis: u64,
) -> Result<(), ApiError> {
    let period_millis = retention_millis / 24;
    let last = streams.trimmed_at_millis.lock().get(&tree).copied();
    if last.is_some_and(|last| now.saturating_sub(last) < period_millis) {
        return Ok(());
    }
    let oldest = match db.scan(
        tree,
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
        shoal_engine::Direction::Forward,
        None,
        1,
    ) {
        Ok(oldest) => oldest,
        // Dropped meanwhile (its table deleted, or the stream forgotten).
        Err(DbError::UnknownTree(_)) => return Ok(()),
        Err(error) => return Err(internal(error)),
    };
    let expired = oldest.first().is_some_and(|(_, value)| {
        crate::streams::record::record_created_at_millis(value)
            .is_some_and(|created| created.saturating_add(retention_millis) < now)
    });
    if expired {
        match db.compact_tree(tree) {
            Ok(()) | Err(DbError::UnknownTree(_)) => {}
            Err(error) => return Err(internal(error)),
        }
        streams.trimmed_at_millis.lock().insert(tree, now);
    }
    Ok(())
}

/// The table a stream ARN names and the stream itself, or DynamoDB's error: a malformed
/// ARN is a ValidationException, a well-formed one naming nothing ResourceNotFound.
pub(crate) fn find_stream(
    catalog: &Catalog,
    arn: Option<&str>,
) -> Result<(Arc<TableDef>, usize), ApiError> {
    let Some(arn) = arn else {
        return Err(validation_errors(&[violation(None, "streamArn", NOT_NULL)]));
    };
    let Some((table_name, label)) = parse_stream_arn(arn) else {
        return Err(ApiError::validation(format!("Invalid StreamArn: {arn}")));
    };
    let not_found = || {
        ApiError::new(
            ErrorCode::ResourceNotFoundException,
            format!("Requested resource not found: Stream: {arn} not found"),
        )
    };
    let table = resolve(catalog, table_name, &region::current())
        .cloned()
        .ok_or_else(not_found)?;
    let position = table
        .streams
        .iter()
        .position(|s| s.label == label)
        .ok_or_else(not_found)?;
    Ok((table, position))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_arns_round_trip_and_garbage_is_refused() {
        let arn = stream_arn("Thread", "2015-05-11T21:21:33.291");
        assert_eq!(
            arn,
            "arn:aws:dynamodb:ddblocal:000000000000:table/Thread/stream/2015-05-11T21:21:33.291"
        );
        assert_eq!(
            parse_stream_arn(&arn),
            Some(("Thread", "2015-05-11T21:21:33.291"))
        );
        for garbage in [
            "",
            "dog",
            "arn:aws:dynamodb:ddblocal:000000000000:table/Thread",
            "arn:aws:dynamodb:ddblocal:000000000000:table/Thread/stream/yesterday",
            "arn:aws:s3:ddblocal:000000000000:table/Thread/stream/2015-05-11T21:21:33.291",
        ] {
            assert_eq!(parse_stream_arn(garbage), None, "{garbage}");
        }
    }

    #[test]
    fn shard_ids_have_awss_shape_and_sort_by_creation() {
        let a = shard_id(3, 10, 1_000);
        let b = shard_id(3, 20, 2_000);
        assert!(is_shard_id(&a));
        assert!((28..=65).contains(&a.len()));
        assert!(a < b);
        assert_ne!(shard_id(3, 10, 1_000), shard_id(4, 10, 1_000));
    }

    #[test]
    fn specification_rules_and_texts() {
        let spec = |enabled: Option<bool>, view: Option<&str>| StreamSpecification {
            stream_enabled: enabled,
            stream_view_type: view.map(str::to_string),
        };
        let mut problems = Vec::new();
        specification_problems(&spec(None, Some("Fisk")), &mut problems);
        assert_eq!(problems.len(), 2);
        assert!(problems[1].contains("[NEW_IMAGE, OLD_IMAGE, NEW_AND_OLD_IMAGES, KEYS_ONLY]"));
        assert_eq!(
            stream_on_create(&spec(Some(true), Some("KEYS_ONLY"))).unwrap(),
            Some(StreamViewType::KeysOnly)
        );
        assert_eq!(stream_on_create(&spec(Some(false), None)).unwrap(), None);
        assert!(stream_on_create(&spec(Some(true), None))
            .unwrap_err()
            .message
            .ends_with("Table is being created with a stream enabled, UpdateViewType is required"));
        assert!(stream_on_create(&spec(Some(false), Some("NEW_IMAGE")))
            .unwrap_err()
            .message
            .ends_with("UpdateViewType should not be specified"));
        assert!(stream_change(&spec(Some(true), None))
            .unwrap_err()
            .message
            .ends_with("If stream is being enabled then UpdateViewType is required"));
        assert!(stream_change(&spec(Some(false), Some("NEW_IMAGE")))
            .unwrap_err()
            .message
            .ends_with("If stream is being disabled, then UpdateViewType must not be specified"));
        assert_eq!(
            stream_change(&spec(Some(false), None)).unwrap(),
            StreamChange::Disable
        );
    }
}
