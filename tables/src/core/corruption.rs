//! The corruption the storage engine met (`shoal_engine::corruption`), named in the tables
//! layer's words: which table, index, expiry index or stream a damaged SSTable belongs to,
//! for the server's /metrics and health answer and for operators (docs/RECOVERY.md).

use shoal_engine::corruption::escape;

use crate::core::store::Core;

/// One damaged place of an SSTable, located.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CorruptionFound {
    /// The file, as named in the data directory (`000042.sst`).
    pub file: String,
    pub offset: u64,
    pub detail: String,
    /// Failed reads of the place so far.
    pub failures: u64,
    /// What the file holds: `table Orders`, `GSI ByStatus of table Orders`, …; `an obsolete
    /// file` once compaction replaced it.
    pub holds: String,
    /// The first and last keys of the file, as text (non-printable bytes as `\xNN`).
    pub smallest_key: String,
    pub largest_key: String,
}

impl Core {
    /// Every failed SSTable read since open, and each damaged place located.
    pub fn corruption_report(&self) -> (u64, Vec<CorruptionFound>) {
        let report = self.lsm().corruption_report();
        let catalog = self.catalog.read();
        let holds = |tree: Option<shoal_engine::TreeId>| -> String {
            let Some(tree) = tree else {
                return "an obsolete file".to_string();
            };
            for table in catalog.values() {
                let name = &table.name;
                if table.tree == tree {
                    return format!("table {name} (its items, LSIs and collection records)");
                }
                if let Some(gsi) = table.global_indexes.iter().find(|gsi| gsi.tree == tree) {
                    return format!("GSI {} of table {name}", gsi.name);
                }
                if table
                    .time_to_live
                    .as_ref()
                    .is_some_and(|ttl| ttl.tree == tree)
                {
                    return format!("the Time to Live expiry index of table {name}");
                }
                if table.streams.iter().any(|stream| stream.tree == tree) {
                    return format!("a stream of table {name}");
                }
            }
            format!("tree {tree} (not a table's)")
        };
        let found = report
            .places
            .iter()
            .map(|place| CorruptionFound {
                file: format!("{:06}.sst", place.file_number),
                offset: place.offset,
                detail: place.detail.clone(),
                failures: place.failures,
                holds: holds(place.tree),
                smallest_key: escape(&place.smallest_key),
                largest_key: escape(&place.largest_key),
            })
            .collect();
        (report.failures, found)
    }
}
