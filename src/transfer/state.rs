//! The resume file of a copy: how far each unit of work got, so a copy that was interrupted
//! (Ctrl-C, kill -9, a lost connection, an endpoint that kept throttling) starts again where
//! it stopped instead of from the beginning.
//!
//! # Format
//!
//! One JSON object, rewritten whole (written to `<file>.tmp`, fsynced, renamed over the
//! file) after each unit's page is written to the destination:
//!
//! ```text
//! { "format": 1,
//!   "from": "<source as given>", "to": "<destination as given>",
//!   "table": "<source table>", "to_table": "<destination table>",
//!   "export_id": "<id of the export being written>" | null,
//!   "units": [ { "name": "segment 3 of 8" | "data/abc.json.gz",
//!                "cursor": <where the next page starts> | null,
//!                "items": <items written so far>,
//!                "done": true | false,
//!                "output": { "file": "<data file>", "bytes": <length written>,
//!                            "billed_bytes": <the items' DynamoDB sizes> } | null } ] }
//! ```
//!
//! `cursor` is the unit's own: a scan segment's `ExclusiveStartKey` (DynamoDB JSON), a data
//! file's count of lines already read. A page is recorded only after the destination
//! acknowledged all of it, so a resumed copy may write a page a second time (puts of the same
//! items: harmless) but never skips one. `output` is where a directory destination appends
//! the unit's items: a resumed copy cuts the file back to `bytes`, dropping whatever was
//! written after the last recorded page.
//!
//! The file belongs to one copy: its `from`, `to` and tables must match the command's, or
//! the copy refuses to start (`--restart` ignores it). It is removed when the copy ends.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Version of the format above.
const STATE_FORMAT: u32 = 1;

/// Where a directory destination appends a unit's items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitOutput {
    /// The data file, relative to the export's directory.
    pub file: String,
    /// Its length after the last recorded page.
    pub bytes: u64,
    /// The sum of the DynamoDB sizes of its items (the export summary's billedSizeBytes).
    pub billed_bytes: u64,
}

/// One unit of work: a scan segment or a source file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitState {
    pub name: String,
    pub cursor: Option<Value>,
    pub items: u64,
    pub done: bool,
    pub output: Option<UnitOutput>,
}

impl UnitState {
    pub fn new(name: String) -> UnitState {
        UnitState {
            name,
            cursor: None,
            items: 0,
            done: false,
            output: None,
        }
    }
}

/// The whole resume file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CopyState {
    pub format: u32,
    pub from: String,
    pub to: String,
    pub table: String,
    pub to_table: String,
    pub export_id: Option<String>,
    pub units: Vec<UnitState>,
}

impl CopyState {
    pub fn new(from: &str, to: &str, table: &str, to_table: &str) -> CopyState {
        CopyState {
            format: STATE_FORMAT,
            from: from.to_string(),
            to: to.to_string(),
            table: table.to_string(),
            to_table: to_table.to_string(),
            export_id: None,
            units: Vec::new(),
        }
    }

    /// Whether this file records the copy `other` describes (same ends, same tables).
    pub fn is_for(&self, other: &CopyState) -> bool {
        self.format == other.format
            && self.from == other.from
            && self.to == other.to
            && self.table == other.table
            && self.to_table == other.to_table
    }

    /// Items written by every unit so far.
    pub fn items(&self) -> u64 {
        self.units.iter().map(|unit| unit.items).sum()
    }

    /// Reads the file at `path`; None if there is none.
    pub fn load(path: &Path) -> Result<Option<CopyState>, String> {
        let text = match std::fs::read(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        serde_json::from_slice(&text)
            .map(Some)
            .map_err(|e| format!("{} is not a copy's resume file: {e}", path.display()))
    }

    /// Replaces the file at `path` with this state, durably: a crash leaves the old file or
    /// the new one, never a torn one (the copy would refuse a torn file and start over).
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_vec(self).map_err(|e| e.to_string())?;
        let temporary = temporary_path(path);
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::File::create(&temporary)?;
            file.write_all(&text)?;
            file.sync_data()?;
            std::fs::rename(&temporary, path)
        };
        write().map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// Removes the file at `path` (the copy is complete).
    pub fn remove(path: &Path) -> Result<(), String> {
        match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
        }
    }
}

fn temporary_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".tmp");
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_state_loads_back_and_only_matches_its_own_copy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        assert_eq!(CopyState::load(&path).unwrap(), None);
        let mut state = CopyState::new("http://a", "http://b", "T", "T2");
        let mut unit = UnitState::new("segment 0 of 2".into());
        unit.cursor = Some(serde_json::json!({"pk": {"S": "k"}}));
        unit.items = 7;
        state.units.push(unit);
        state.save(&path).unwrap();
        let loaded = CopyState::load(&path).unwrap().unwrap();
        assert_eq!(loaded, state);
        assert_eq!(loaded.items(), 7);
        assert!(loaded.is_for(&CopyState::new("http://a", "http://b", "T", "T2")));
        assert!(!loaded.is_for(&CopyState::new("http://a", "http://c", "T", "T2")));
        std::fs::write(&path, b"{torn").unwrap();
        assert!(CopyState::load(&path).is_err());
        CopyState::remove(&path).unwrap();
        assert_eq!(CopyState::load(&path).unwrap(), None);
    }
}
