//! Backups on disk: one directory per backup under `<data-dir>/backups/`.
//!
//! # Layout
//!
//! ```text
//! <data-dir>/backups/<backup-id>/          backup-id: <13-digit epoch ms>-<8 hex digits>
//!     <number>.sst                         hard links to the source table's SSTables
//!     backup.json                          the description (below); written last
//! ```
//!
//! The `.sst` files are the engine's own SSTables (format in `shoal_engine::sstable`),
//! linked, not copied: the table tree's and each ACTIVE global secondary index's files, as
//! one superversion named them at the backup's point (`shoal_engine::checkpoint`). A linked
//! SSTable is never written again (the engine removes, never recycles, a file with a second
//! name), so the bytes stay as they were for as long as the backup exists, whatever happens
//! to the table, including DeleteTable.
//!
//! `backup.json` is one JSON object ([`BackupFile`]):
//! - `format` (1), `backup_id`, `backup_name`, `created_at_millis` (epoch ms);
//! - `backup_type`: `"USER"` (CreateBackup) or `"SYSTEM"` (taken by DeleteTable of a table
//!   with point-in-time recovery); `expires_at_millis`: when a SYSTEM backup goes (epoch
//!   ms), null for USER. Both may be absent (files written before they existed): USER,
//!   never expiring;
//! - `table`: the source table's definition exactly as the catalog stores it
//!   (`catalog::TableDef`), with only the indexes the backup holds;
//! - `stats`: the table's statistics at the backup's point: `items` and `bytes` of the
//!   table, then per LSI (by its section) and per GSI (by its name, since a restore gives
//!   it a new tree) the same two figures;
//! - `size_bytes`: the sum of the SSTables' sizes;
//! - `files`: per SSTable its `index` (null for the table tree, else the GSI's name),
//!   `level`, and the engine's description of it: `number` (its name in the directory),
//!   `size_bytes`, `smallest_key` and `largest_key` (internal keys, hex), `entries`,
//!   `tombstones`, `seq_min`, `seq_max`.
//!
//! # Crash safety
//!
//! A backup exists exactly when its `backup.json` does. It is written as `backup.json.tmp`,
//! synced, renamed and the directory synced, after the links are durable; DeleteBackup
//! removes `backup.json` first. A directory without it is what a crash in the middle of
//! either leaves: [`remove_partial`] takes such directories away at open. (The vfs creates
//! directories durably and cannot rename them, so the description, not a directory rename,
//! is what makes a backup appear at once.)

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use shoal_engine::version::FileMeta;
use shoal_engine::{LinkedFile, SourceFile};
use shoal_model::ApiError;
use shoal_vfs::Fs;

use crate::core::catalog::TableDef;
use crate::core::error::internal;
use crate::core::stats::{SizeStats, TableStats};

/// Version of the `backup.json` format.
pub const BACKUP_FORMAT: u32 = 1;

/// The directory, under the data directory, holding every backup.
pub const BACKUPS_DIR_NAME: &str = "backups";

/// The description's name inside a backup's directory.
pub const DESCRIPTION_FILE_NAME: &str = "backup.json";

const DESCRIPTION_TEMP_NAME: &str = "backup.json.tmp";

/// A backup's `backup.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackupFile {
    pub format: u32,
    pub backup_id: String,
    pub backup_name: String,
    pub created_at_millis: u64,
    #[serde(default)]
    pub backup_type: BackupKind,
    #[serde(default)]
    pub expires_at_millis: Option<u64>,
    pub table: TableDef,
    pub stats: BackupStats,
    pub size_bytes: u64,
    pub files: Vec<BackupSsTable>,
}

/// Who made a backup: the user (CreateBackup) or DeleteTable (a SYSTEM backup).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum BackupKind {
    #[default]
    #[serde(rename = "USER")]
    User,
    #[serde(rename = "SYSTEM")]
    System,
}

impl BackupKind {
    /// The name the API gives it (BackupType).
    pub fn name(self) -> &'static str {
        match self {
            BackupKind::User => "USER",
            BackupKind::System => "SYSTEM",
        }
    }
}

impl BackupFile {
    /// Whether the backup has passed its expiry at `now_millis` (from then on it does not
    /// exist; the next open removes its files).
    pub fn expired(&self, now_millis: u64) -> bool {
        self.expires_at_millis
            .is_some_and(|expires| expires <= now_millis)
    }
}

/// Item count and size of the table and of each index, at the backup's point.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupStats {
    pub items: u64,
    pub bytes: u64,
    /// (LSI section, items, bytes).
    pub local_indexes: Vec<(u8, u64, u64)>,
    /// (GSI name, items, bytes).
    pub global_indexes: Vec<(String, u64, u64)>,
}

impl BackupStats {
    /// The figures of `stats`, taken of `table`.
    pub fn of(table: &TableDef, stats: &TableStats) -> BackupStats {
        BackupStats {
            items: stats.table.item_count,
            bytes: stats.table.size_bytes,
            local_indexes: table
                .local_indexes
                .iter()
                .zip(&stats.local_indexes)
                .map(|(lsi, s)| (lsi.section, s.item_count, s.size_bytes))
                .collect(),
            global_indexes: table
                .global_indexes
                .iter()
                .zip(&stats.global_indexes)
                .map(|(gsi, s)| (gsi.name.clone(), s.item_count, s.size_bytes))
                .collect(),
        }
    }

    /// The table's own figures.
    pub fn table(&self) -> SizeStats {
        SizeStats {
            item_count: self.items,
            size_bytes: self.bytes,
        }
    }
}

/// One SSTable of a backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupSsTable {
    /// None for the table's tree, else the GSI's name.
    pub index: Option<String>,
    pub level: usize,
    pub number: u64,
    pub size_bytes: u64,
    pub smallest_key: String,
    pub largest_key: String,
    pub entries: u64,
    pub tombstones: u64,
    pub seq_min: u64,
    pub seq_max: u64,
}

impl BackupSsTable {
    /// Describes `linked`, a file of the tree of `index` (None: the table's).
    pub fn of(linked: &LinkedFile, index: Option<String>) -> BackupSsTable {
        let meta = &linked.meta;
        BackupSsTable {
            index,
            level: linked.level,
            number: meta.number,
            size_bytes: meta.size_bytes,
            smallest_key: hex(&meta.smallest_key),
            largest_key: hex(&meta.largest_key),
            entries: meta.entries,
            tombstones: meta.tombstones,
            seq_min: meta.seq_min,
            seq_max: meta.seq_max,
        }
    }

    /// The file as a source for a new tree, read from the backup in `dir`.
    pub fn source(&self, dir: &Path) -> Result<SourceFile, ApiError> {
        let key = |hex_key: &str| {
            unhex(hex_key).ok_or_else(|| internal(format!("backup file {}: bad key", self.number)))
        };
        Ok(SourceFile {
            path: dir.join(shoal_engine::manifest::sst_file_name(self.number)),
            level: self.level,
            meta: FileMeta {
                number: self.number,
                size_bytes: self.size_bytes,
                smallest_key: key(&self.smallest_key)?,
                largest_key: key(&self.largest_key)?,
                entries: self.entries,
                tombstones: self.tombstones,
                seq_min: self.seq_min,
                seq_max: self.seq_max,
            },
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Where backups live for the database in `data_dir`.
pub fn backups_dir(data_dir: &Path) -> PathBuf {
    data_dir.join(BACKUPS_DIR_NAME)
}

/// The directory of backup `backup_id`.
pub fn backup_dir(data_dir: &Path, backup_id: &str) -> PathBuf {
    backups_dir(data_dir).join(backup_id)
}

fn io(context: &str, path: &Path, error: std::io::Error) -> ApiError {
    internal(format!("{context} {}: {error}", path.display()))
}

/// Makes the backup visible: writes its description durably and in one step.
pub fn write_description(fs: &Fs, dir: &Path, backup: &BackupFile) -> Result<(), ApiError> {
    let bytes = serde_json::to_vec_pretty(backup).map_err(internal)?;
    let temp = dir.join(DESCRIPTION_TEMP_NAME);
    let file = fs.create(&temp).map_err(|e| io("creating", &temp, e))?;
    file.write_all(&bytes)
        .and_then(|()| file.sync_data())
        .map_err(|e| io("writing", &temp, e))?;
    drop(file);
    let path = dir.join(DESCRIPTION_FILE_NAME);
    fs.rename(&temp, &path)
        .and_then(|()| fs.sync_dir(dir))
        .map_err(|e| io("installing", &path, e))
}

/// The description of the backup in `dir`, or None when there is none (no such backup).
pub fn read_description(fs: &Fs, dir: &Path) -> Result<Option<BackupFile>, ApiError> {
    let path = dir.join(DESCRIPTION_FILE_NAME);
    if !fs.exists(&path) {
        return Ok(None);
    }
    let file = fs.open_read(&path).map_err(|e| io("reading", &path, e))?;
    let backup: BackupFile = serde_json::from_slice(file.bytes())
        .map_err(|e| internal(format!("{} cannot be read: {e}", path.display())))?;
    if backup.format != BACKUP_FORMAT {
        return Err(internal(format!(
            "{}: unknown format {}",
            path.display(),
            backup.format
        )));
    }
    Ok(Some(backup))
}

/// Every backup's description, in backup id order (which is creation time order).
pub fn list(fs: &Fs, data_dir: &Path) -> Result<Vec<BackupFile>, ApiError> {
    let root = backups_dir(data_dir);
    if !fs.exists(&root) {
        return Ok(Vec::new());
    }
    let mut ids = fs.list(&root).map_err(|e| io("listing", &root, e))?;
    ids.sort();
    let mut backups = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(backup) = read_description(fs, &root.join(&id))? {
            backups.push(backup);
        }
    }
    Ok(backups)
}

/// Removes the backup in `dir`: its description first (from then on it does not exist),
/// then its links and the directory.
pub fn remove(fs: &Fs, dir: &Path) -> Result<(), ApiError> {
    let description = dir.join(DESCRIPTION_FILE_NAME);
    if fs.exists(&description) {
        fs.remove(&description)
            .and_then(|()| fs.sync_dir(dir))
            .map_err(|e| io("removing", &description, e))?;
    }
    remove_directory(fs, dir)
}

fn remove_directory(fs: &Fs, dir: &Path) -> Result<(), ApiError> {
    for name in fs.list(dir).map_err(|e| io("listing", dir, e))? {
        let path = dir.join(&name);
        fs.remove(&path).map_err(|e| io("removing", &path, e))?;
    }
    fs.sync_dir(dir).map_err(|e| io("syncing", dir, e))?;
    fs.remove_dir(dir).map_err(|e| io("removing", dir, e))
}

/// Removes every backup directory without a description, and every backup past its
/// expiry. Called at open, before any backup starts or is read. A directory without a
/// description is what a crash during CreateBackup (links made, no description yet) or
/// DeleteBackup (description gone, links not yet) leaves: nothing can refer to it, and its
/// links would keep the table's old SSTables on disk for ever. An expired SYSTEM backup is
/// already invisible to every request; this frees its files.
pub fn remove_partial_and_expired(
    fs: &Fs,
    data_dir: &Path,
    now_millis: u64,
) -> Result<(), ApiError> {
    let root = backups_dir(data_dir);
    if !fs.exists(&root) {
        return Ok(());
    }
    for id in fs.list(&root).map_err(|e| io("listing", &root, e))? {
        let dir = root.join(&id);
        match read_description(fs, &dir)? {
            None => {
                tracing::info!(backup = %id, "removing a backup a crash left incomplete");
                remove_directory(fs, &dir)?;
            }
            Some(backup) if backup.expired(now_millis) => {
                tracing::info!(backup = %id, "removing an expired system backup");
                remove(fs, &dir)?;
            }
            Some(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_hex() {
        let key = vec![0u8, 1, 0xab, 0xff];
        assert_eq!(hex(&key), "0001abff");
        assert_eq!(unhex(&hex(&key)), Some(key));
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("zz"), None);
    }
}
