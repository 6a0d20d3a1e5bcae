//! A directory as one end of a copy: DynamoDB's S3 export layout (`tables::transfer::write`
//! writes it; this module adds the resumable copy's side of it).
//!
//! As a destination, the directory stands for the bucket: the copy writes
//! `<dir>/AWSDynamoDB/<export id>/`, one data file per unit, each page a gzip member synced
//! before the resume file records it, and the manifests (and `shoal-table.json`, the source's
//! DescribeTable) once every unit is done. As a source, it is such an export (or the bucket
//! directory holding exactly one): its data files, listed by `manifest-files.json`, are the
//! units, read line by line.

use std::path::{Path, PathBuf};

use serde_json::Value;
use shoal_model::Item;
use shoal_tables::api::control::DescribeTableResponse;
use shoal_tables::transfer::write::DataFileEntry;
use shoal_tables::transfer::write::{
    self, DataFileWriter, ExportIdentity, ExportWriter, DATA_DIR, EXPORTS_DIR, MANIFEST_FILES,
    MANIFEST_SUMMARY, TABLE_DESCRIPTION_FILE,
};

use super::state::UnitOutput;

/// The export a copy writes into a directory.
pub struct DirDestination {
    writer: ExportWriter,
    export_id: String,
    bucket: String,
    started_millis: u64,
}

impl DirDestination {
    /// Starts (or, with the id a resume file recorded, goes on with) export `export_id` in
    /// `dir`, which is created if missing.
    pub fn open(dir: &Path, export_id: &str) -> Result<DirDestination, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let writer = ExportWriter::create(dir, None, export_id).map_err(|e| e.to_string())?;
        let started_millis = export_id
            .split('-')
            .next()
            .and_then(|digits| digits.parse().ok())
            .unwrap_or_else(now_millis);
        Ok(DirDestination {
            writer,
            export_id: export_id.to_string(),
            bucket: dir
                .canonicalize()
                .ok()
                .and_then(|dir| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_default(),
            started_millis,
        })
    }

    /// The export's id (the resume file keeps it).
    pub fn export_id(&self) -> &str {
        &self.export_id
    }

    /// A new export id, for a copy that starts.
    pub fn new_export_id() -> String {
        write::export_id(now_millis())
    }

    /// The writer of one unit's data file: a new file, or the one `output` records, cut back
    /// to the last recorded page.
    pub fn unit_file(
        &self,
        output: Option<&UnitOutput>,
        items: u64,
    ) -> Result<UnitFile<'_>, String> {
        let file = match output {
            None => self.writer.data_file(),
            Some(output) => {
                self.writer
                    .resume_data_file(&output.file, output.bytes, items, output.billed_bytes)
            }
        }
        .map_err(|e| e.to_string())?;
        Ok(UnitFile { file })
    }

    /// Writes the manifests: the export is complete. `source` is the source table's
    /// DescribeTable `Table`.
    pub fn finish(self, source: &Value) -> Result<PathBuf, String> {
        let table_arn = source["TableArn"].as_str().unwrap_or_default().to_string();
        let identity = ExportIdentity {
            export_arn: format!("{table_arn}/export/{}", self.export_id),
            table_arn,
            table_id: source["TableId"].as_str().unwrap_or_default().to_string(),
            s3_bucket: self.bucket.clone(),
            s3_prefix: None,
            s3_sse_algorithm: None,
            start_time_millis: self.started_millis,
            export_time_millis: self.started_millis,
        };
        // A description another endpoint gave may hold members Shoal's type does not know:
        // they are left out, the schema is what the file is for.
        let table: Option<DescribeTableResponse> =
            serde_json::from_value(serde_json::json!({ "Table": source })).ok();
        let finished = self
            .writer
            .finish(&identity, table.as_ref(), now_millis())
            .map_err(|e| e.to_string())?;
        Ok(finished.dir)
    }
}

/// One unit's data file.
pub struct UnitFile<'a> {
    file: DataFileWriter<'a>,
}

impl UnitFile<'_> {
    /// Appends a page of items (DynamoDB JSON maps) as one gzip member, synced; returns
    /// where the file stands for the resume file.
    pub fn write_page(&mut self, items: &[Value]) -> Result<UnitOutput, String> {
        for value in items {
            let item: Item = serde_json::from_value(value.clone())
                .map_err(|e| format!("an item that is not DynamoDB JSON: {e}"))?;
            self.file.write_item(&item).map_err(|e| e.to_string())?;
        }
        let bytes = self.file.end_member().map_err(|e| e.to_string())?;
        Ok(UnitOutput {
            file: self.file.name().to_string(),
            bytes,
            billed_bytes: self.file.billed_size_bytes(),
        })
    }

    /// Ends the file and enters it in the export's manifest.
    pub fn finish(self) -> Result<(), String> {
        self.file.finish().map_err(|e| e.to_string())
    }
}

/// An export directory read as a copy's source.
pub struct DirSource {
    /// The export's directory (`…/AWSDynamoDB/<id>/`).
    pub dir: PathBuf,
    /// Its data files, in manifest order, with their item counts.
    pub files: Vec<(PathBuf, u64)>,
    /// The table's DescribeTable `Table` from `shoal-table.json`, when the export has one.
    pub description: Option<Value>,
    /// The summary's item count.
    pub item_count: u64,
}

impl DirSource {
    /// The export at `path`: the export's own directory, or a directory holding exactly one
    /// complete export under `AWSDynamoDB/`.
    pub fn open(path: &Path) -> Result<DirSource, String> {
        let dir = export_dir_of(path)?;
        let manifest = dir.join(MANIFEST_FILES);
        let text = std::fs::read_to_string(&manifest)
            .map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
        let mut files = Vec::new();
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            let entry: DataFileEntry = serde_json::from_str(line).map_err(|e| {
                format!(
                    "{}: a line that is not a data file's entry: {e}",
                    manifest.display()
                )
            })?;
            let name = entry
                .data_file_s3_key
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_string();
            files.push((dir.join(DATA_DIR).join(name), entry.item_count));
        }
        let summary: Value = read_json(&dir.join(MANIFEST_SUMMARY))?;
        let description = match std::fs::read(dir.join(TABLE_DESCRIPTION_FILE)) {
            Ok(text) => {
                let mut table: Value = serde_json::from_slice(&text)
                    .map_err(|e| format!("{}: {e}", dir.join(TABLE_DESCRIPTION_FILE).display()))?;
                Some(table["Table"].take())
            }
            Err(_) => None,
        };
        Ok(DirSource {
            item_count: summary["itemCount"].as_u64().unwrap_or_default(),
            dir,
            files,
            description,
        })
    }
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The complete export `path` names: itself, or the one export below its `AWSDynamoDB/`.
fn export_dir_of(path: &Path) -> Result<PathBuf, String> {
    if path.join(MANIFEST_SUMMARY).is_file() {
        return Ok(path.to_path_buf());
    }
    let exports = path.join(EXPORTS_DIR);
    let mut complete: Vec<PathBuf> = std::fs::read_dir(&exports)
        .map_err(|_| {
            format!(
                "{} is not an export: it has no {MANIFEST_SUMMARY} and no {EXPORTS_DIR}/ directory",
                path.display()
            )
        })?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|dir| dir.join(MANIFEST_SUMMARY).is_file())
        .collect();
    complete.sort();
    match complete.len() {
        1 => Ok(complete.remove(0)),
        0 => Err(format!(
            "{} holds no complete export (an export without {MANIFEST_SUMMARY} was interrupted)",
            exports.display()
        )),
        _ => Err(format!(
            "{} holds {} exports: name one of them ({})",
            exports.display(),
            complete.len(),
            complete
                .iter()
                .map(|dir| dir.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}
