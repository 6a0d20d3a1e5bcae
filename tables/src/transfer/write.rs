//! An export in DynamoDB's S3 export layout (SPEC-2 §6.3), written to a local directory that
//! stands for the S3 bucket: the object with key `K` is the file `<bucket dir>/K`.
//!
//! # The files
//!
//! An export with id `I` (`<14 digits>-<8 hex>`) and an optional prefix `P` lives under the
//! key prefix `[P/]AWSDynamoDB/I/`, and holds, written in this order:
//!
//! 1. `_started`: an empty marker, written (and synced) before anything else.
//! 2. `data/<26 random base-32 characters>.json.gz`: the items. Each is gzip of lines, one
//!    item per line as `{"Item":{...}}` in DynamoDB JSON (the model's serializer), each line
//!    ending in `\n`. One file per writer of items (one per worker of a parallel export); a
//!    file may hold no line at all (it is then a gzip stream of nothing). A file written in
//!    pages that must each survive on their own (`shoal copy`, which resumes after the last
//!    recorded page) is several gzip members one after another, one per page
//!    ([`DataFileWriter::end_member`]): what every gzip reader, and DynamoDB's import, reads
//!    as one stream.
//! 3. `shoal-table.json`, when the caller gives a table description: the table's DescribeTable
//!    output (`{"Table": {...}}`, key schema, attribute definitions, indexes, billing), so an
//!    export carries the schema a new table needs. AWS's exports have no such file; readers of
//!    AWS's layout ignore files they do not know.
//! 4. `manifest-files.json`: one JSON object per line and per data file, in key order:
//!    `{"itemCount":N,"md5Checksum":"<base64 MD5 of the .gz file>","etag":"<hex MD5>",
//!    "dataFileS3Key":"[P/]AWSDynamoDB/I/data/<name>.json.gz"}`. The etag is what S3 gives an
//!    object uploaded in one part: the hex MD5 of its bytes.
//! 5. `manifest-files.md5`: base64 of the MD5 of `manifest-files.json`, no newline.
//! 6. `manifest-summary.json`: one JSON object: `version` (`2020-06-30`), `exportArn`,
//!    `startTime`, `endTime`, `exportTime` (ISO-8601 UTC with milliseconds and `Z`),
//!    `tableArn`, `tableId`, `s3Bucket`, `s3Prefix` (null without one), `s3SseAlgorithm`
//!    (`AES256` unless the export named another), `s3SseKmsKeyId` (null), `manifestFilesS3Key`
//!    (the full key of `manifest-files.json`), `billedSizeBytes` (the sum of the items'
//!    DynamoDB sizes), `itemCount` (the sum of the manifest lines' counts), `outputFormat`
//!    (`DYNAMODB_JSON`).
//! 7. `manifest-summary.md5`: base64 of the MD5 of `manifest-summary.json`.
//!
//! Every file is synced when written, and each directory after the files in it: so a reader
//! that finds `manifest-summary.json` finds a complete export, and an export a crash
//! interrupted has none. These files are outside the database's data directory and are
//! written with the standard library's files, not through the storage engine's file system.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use base64::Engine;
use flate2::write::GzEncoder;
use flate2::Compression;
use md5::{Digest, Md5};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use shoal_model::calendar::format_millis_iso;
use shoal_model::Item;

use crate::api::control::DescribeTableResponse;

/// `version` of every manifest summary (DynamoDB's export format version).
pub const MANIFEST_VERSION: &str = "2020-06-30";
/// The directory every export's key prefix goes through.
pub const EXPORTS_DIR: &str = "AWSDynamoDB";
pub const STARTED_FILE: &str = "_started";
pub const DATA_DIR: &str = "data";
pub const DATA_FILE_SUFFIX: &str = ".json.gz";
pub const MANIFEST_FILES: &str = "manifest-files.json";
pub const MANIFEST_FILES_MD5: &str = "manifest-files.md5";
pub const MANIFEST_SUMMARY: &str = "manifest-summary.json";
pub const MANIFEST_SUMMARY_MD5: &str = "manifest-summary.md5";
/// Shoal's own addition: the exported table's DescribeTable output.
pub const TABLE_DESCRIPTION_FILE: &str = "shoal-table.json";
/// The one output format written.
pub const OUTPUT_FORMAT: &str = "DYNAMODB_JSON";
/// The server-side encryption a summary names when the export named none.
pub const SSE_ALGORITHM_DEFAULT: &str = "AES256";

/// Lines are gathered up to this many bytes before they go to the compressor, so that it
/// works on large inputs (one call per line costs twice as much) in bounded memory.
const LINES_BUFFER_BYTES: usize = 256 << 10;
/// gzip's fastest level: a data file is written once and read once.
const GZIP_LEVEL: u32 = 1;

/// Why an export could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ExportWriteError {
    /// The bucket's directory does not exist (S3's NoSuchBucket).
    #[error("the bucket does not exist: no directory {}", .0.display())]
    NoSuchBucket(PathBuf),
    #[error("cannot write {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> ExportWriteError + '_ {
    move |source| ExportWriteError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One line of `manifest-files.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataFileEntry {
    pub item_count: u64,
    pub md5_checksum: String,
    pub etag: String,
    pub data_file_s3_key: String,
    /// The sum of the file's items' sizes (only the summary shows it).
    #[serde(skip)]
    pub billed_size_bytes: u64,
}

/// What the summary says of the export besides what the writer counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportIdentity {
    pub export_arn: String,
    pub table_arn: String,
    pub table_id: String,
    pub s3_bucket: String,
    pub s3_prefix: Option<String>,
    pub s3_sse_algorithm: Option<String>,
    /// When the export was asked for, in milliseconds since the Unix epoch.
    pub start_time_millis: u64,
    /// The instant whose state the export holds, in milliseconds since the Unix epoch.
    pub export_time_millis: u64,
}

/// `manifest-summary.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestSummary {
    pub version: String,
    pub export_arn: String,
    pub start_time: String,
    pub end_time: String,
    pub table_arn: String,
    pub table_id: String,
    pub export_time: String,
    pub s3_bucket: String,
    pub s3_prefix: Option<String>,
    pub s3_sse_algorithm: String,
    pub s3_sse_kms_key_id: Option<String>,
    pub manifest_files_s3_key: String,
    pub billed_size_bytes: u64,
    pub item_count: u64,
    pub output_format: String,
}

/// A finished export: its summary and the key of the summary file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinishedExport {
    pub summary: ManifestSummary,
    /// The key of `manifest-summary.json` (DynamoDB's `ExportManifest`).
    pub manifest_summary_key: String,
    /// The end time, in milliseconds since the Unix epoch.
    pub end_time_millis: u64,
    /// The export's directory.
    pub dir: PathBuf,
}

/// An export being written: hand out one [`DataFileWriter`] per thread writing items, then
/// [`ExportWriter::finish`] writes the manifests.
#[derive(Debug)]
pub struct ExportWriter {
    /// The export's directory: `<bucket dir>/<key_prefix>`.
    dir: PathBuf,
    /// `[P/]AWSDynamoDB/I/`: the key prefix of every file of the export.
    key_prefix: String,
    files: Mutex<Vec<DataFileEntry>>,
}

impl ExportWriter {
    /// Starts export `export_id` in the bucket whose directory is `bucket_dir`, under
    /// `s3_prefix` (`/`-separated, without a leading or trailing `/`): creates the export's
    /// directories and writes `_started`. A missing `bucket_dir` is S3's NoSuchBucket: the
    /// bucket is never created.
    pub fn create(
        bucket_dir: &Path,
        s3_prefix: Option<&str>,
        export_id: &str,
    ) -> Result<ExportWriter, ExportWriteError> {
        if !bucket_dir.is_dir() {
            return Err(ExportWriteError::NoSuchBucket(bucket_dir.to_path_buf()));
        }
        let key_prefix = match s3_prefix {
            Some(prefix) => format!("{prefix}/{EXPORTS_DIR}/{export_id}/"),
            None => format!("{EXPORTS_DIR}/{export_id}/"),
        };
        let dir = bucket_dir.join(&key_prefix);
        let data_dir = dir.join(DATA_DIR);
        fs::create_dir_all(&data_dir).map_err(io_error(&data_dir))?;
        // The new directories' entries must be durable before the files in them are.
        let mut synced = data_dir.as_path();
        while synced != bucket_dir {
            sync_dir(synced)?;
            match synced.parent() {
                Some(parent) => synced = parent,
                None => break,
            }
        }
        sync_dir(bucket_dir)?;
        let writer = ExportWriter {
            dir,
            key_prefix,
            files: Mutex::new(Vec::new()),
        };
        writer.write_file(STARTED_FILE, b"")?;
        sync_dir(&writer.dir)?;
        Ok(writer)
    }

    /// The export's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key prefix of the export's files (`[P/]AWSDynamoDB/I/`).
    pub fn key_prefix(&self) -> &str {
        &self.key_prefix
    }

    /// A new data file, for one thread's items.
    pub fn data_file(&self) -> Result<DataFileWriter<'_>, ExportWriteError> {
        let name = format!("{}{DATA_FILE_SUFFIX}", random_name());
        let path = self.dir.join(DATA_DIR).join(&name);
        let file = File::create_new(&path).map_err(io_error(&path))?;
        Ok(self.data_file_writer(name, file, Md5::new(), 0, 0, 0))
    }

    /// Data file `name` again, to append to after its first `bytes` bytes, which hold
    /// `item_count` items of `billed_size_bytes` (a resumed copy: what lies past them was
    /// written after the last page it recorded, and is cut off). The file ends each page with
    /// [`DataFileWriter::end_member`], so `bytes` is always the end of a gzip member.
    pub fn resume_data_file(
        &self,
        name: &str,
        bytes: u64,
        item_count: u64,
        billed_size_bytes: u64,
    ) -> Result<DataFileWriter<'_>, ExportWriteError> {
        let path = self.dir.join(DATA_DIR).join(name);
        let mut file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io_error(&path))?;
        let length = file.metadata().map_err(io_error(&path))?.len();
        if length < bytes {
            return Err(io_error(&path)(io::Error::other(format!(
                "the file holds {length} bytes, fewer than the {bytes} recorded"
            ))));
        }
        // The checksum covers the whole file: hash the part kept.
        let mut md5 = Md5::new();
        io::copy(&mut (&mut file).take(bytes), &mut Md5Sink(&mut md5)).map_err(io_error(&path))?;
        file.set_len(bytes).map_err(io_error(&path))?;
        file.sync_all().map_err(io_error(&path))?;
        io::Seek::seek(&mut file, io::SeekFrom::Start(bytes)).map_err(io_error(&path))?;
        Ok(self.data_file_writer(
            name.to_string(),
            file,
            md5,
            bytes,
            item_count,
            billed_size_bytes,
        ))
    }

    fn data_file_writer(
        &self,
        name: String,
        file: File,
        md5: Md5,
        bytes: u64,
        item_count: u64,
        billed_size_bytes: u64,
    ) -> DataFileWriter<'_> {
        let hashed = Md5Writer {
            inner: BufWriter::with_capacity(LINES_BUFFER_BYTES, file),
            md5,
            bytes,
        };
        DataFileWriter {
            export: self,
            key: format!("{}{DATA_DIR}/{name}", self.key_prefix),
            path: self.dir.join(DATA_DIR).join(&name),
            name,
            gzip: Some(GzEncoder::new(hashed, Compression::new(GZIP_LEVEL))),
            lines: Vec::with_capacity(LINES_BUFFER_BYTES + (LINES_BUFFER_BYTES >> 2)),
            item_count,
            billed_size_bytes,
        }
    }

    /// Writes the manifests (and `shoal-table.json` if `table` is given), in the order of
    /// the module docs, each synced: the export is complete when this returns.
    pub fn finish(
        self,
        identity: &ExportIdentity,
        table: Option<&DescribeTableResponse>,
        end_time_millis: u64,
    ) -> Result<FinishedExport, ExportWriteError> {
        sync_dir(&self.dir.join(DATA_DIR))?;
        let mut files = std::mem::take(&mut *self.files.lock());
        files.sort_by(|a, b| a.data_file_s3_key.cmp(&b.data_file_s3_key));
        if let Some(table) = table {
            self.write_file(TABLE_DESCRIPTION_FILE, &to_json(table, &self.dir)?)?;
        }
        let mut lines = Vec::new();
        for entry in &files {
            lines.extend_from_slice(&to_json(entry, &self.dir)?);
            lines.push(b'\n');
        }
        self.write_file(MANIFEST_FILES, &lines)?;
        self.write_file(MANIFEST_FILES_MD5, md5_base64(&lines).as_bytes())?;
        let summary = ManifestSummary {
            version: MANIFEST_VERSION.to_string(),
            export_arn: identity.export_arn.clone(),
            start_time: iso_time(identity.start_time_millis),
            end_time: iso_time(end_time_millis),
            table_arn: identity.table_arn.clone(),
            table_id: identity.table_id.clone(),
            export_time: iso_time(identity.export_time_millis),
            s3_bucket: identity.s3_bucket.clone(),
            s3_prefix: identity.s3_prefix.clone(),
            s3_sse_algorithm: identity
                .s3_sse_algorithm
                .clone()
                .unwrap_or_else(|| SSE_ALGORITHM_DEFAULT.to_string()),
            s3_sse_kms_key_id: None,
            manifest_files_s3_key: format!("{}{MANIFEST_FILES}", self.key_prefix),
            billed_size_bytes: files.iter().map(|f| f.billed_size_bytes).sum(),
            item_count: files.iter().map(|f| f.item_count).sum(),
            output_format: OUTPUT_FORMAT.to_string(),
        };
        let summary_bytes = to_json(&summary, &self.dir)?;
        self.write_file(MANIFEST_SUMMARY, &summary_bytes)?;
        self.write_file(MANIFEST_SUMMARY_MD5, md5_base64(&summary_bytes).as_bytes())?;
        sync_dir(&self.dir)?;
        Ok(FinishedExport {
            summary,
            manifest_summary_key: format!("{}{MANIFEST_SUMMARY}", self.key_prefix),
            end_time_millis,
            dir: self.dir,
        })
    }

    /// Writes and syncs the file `name` of the export's directory.
    fn write_file(&self, name: &str, bytes: &[u8]) -> Result<(), ExportWriteError> {
        let path = self.dir.join(name);
        let mut file = File::create(&path).map_err(io_error(&path))?;
        file.write_all(bytes).map_err(io_error(&path))?;
        file.sync_all().map_err(io_error(&path))
    }
}

/// One data file being written, by one thread.
pub struct DataFileWriter<'a> {
    export: &'a ExportWriter,
    key: String,
    path: PathBuf,
    /// The file's name in the export's `data` directory.
    name: String,
    /// None only while a member is being ended.
    gzip: Option<GzEncoder<Md5Writer<BufWriter<File>>>>,
    /// Lines not yet compressed (at most about [`LINES_BUFFER_BYTES`]).
    lines: Vec<u8>,
    item_count: u64,
    billed_size_bytes: u64,
}

impl DataFileWriter<'_> {
    /// Appends one item, as the line `{"Item":{...}}`.
    pub fn write_item(&mut self, item: &Item) -> Result<(), ExportWriteError> {
        self.lines.extend_from_slice(b"{\"Item\":");
        // Writing to a Vec fails only for a map with non-string keys, which an item is not.
        serde_json::to_writer(&mut self.lines, item)
            .map_err(|e| io_error(&self.path)(io::Error::other(e)))?;
        self.lines.extend_from_slice(b"}\n");
        self.item_count += 1;
        self.billed_size_bytes += shoal_model::item_size_bytes(item) as u64;
        if self.lines.len() >= LINES_BUFFER_BYTES {
            self.compress_lines()?;
        }
        Ok(())
    }

    /// Items written so far.
    pub fn item_count(&self) -> u64 {
        self.item_count
    }

    /// The sum of the sizes of the items written so far.
    pub fn billed_size_bytes(&self) -> u64 {
        self.billed_size_bytes
    }

    /// The file's name in the export's `data` directory.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn compress_lines(&mut self) -> Result<(), ExportWriteError> {
        let Some(gzip) = self.gzip.as_mut() else {
            return Err(io_error(&self.path)(io::Error::other(
                "a gzip member failed to end",
            )));
        };
        gzip.write_all(&self.lines).map_err(io_error(&self.path))?;
        self.lines.clear();
        Ok(())
    }

    /// Ends the gzip member holding the items written since the last one, syncs the file
    /// and returns its length: the items so far survive a crash, and a writer resumed at
    /// that length ([`ExportWriter::resume_data_file`]) goes on with a new member.
    pub fn end_member(&mut self) -> Result<u64, ExportWriteError> {
        self.compress_lines()?;
        let path = self.path.clone();
        let gzip = self
            .gzip
            .take()
            .ok_or_else(|| io_error(&path)(io::Error::other("a gzip member failed to end")))?;
        let mut hashed = gzip.finish().map_err(io_error(&path))?;
        hashed.inner.flush().map_err(io_error(&path))?;
        hashed
            .inner
            .get_ref()
            .sync_data()
            .map_err(io_error(&path))?;
        let bytes = hashed.bytes;
        self.gzip = Some(GzEncoder::new(hashed, Compression::new(GZIP_LEVEL)));
        Ok(bytes)
    }

    /// Ends the file (synced) and enters it in the export's manifest.
    pub fn finish(mut self) -> Result<(), ExportWriteError> {
        self.compress_lines()?;
        let path = self.path.clone();
        let gzip = self
            .gzip
            .take()
            .ok_or_else(|| io_error(&path)(io::Error::other("a gzip member failed to end")))?;
        let hashed = gzip.finish().map_err(io_error(&path))?;
        let md5 = hashed.md5.finalize();
        let file = hashed
            .inner
            .into_inner()
            .map_err(|e| io_error(&path)(e.into_error()))?;
        file.sync_all().map_err(io_error(&path))?;
        self.export.files.lock().push(DataFileEntry {
            item_count: self.item_count,
            md5_checksum: base64::engine::general_purpose::STANDARD.encode(md5),
            etag: md5.iter().map(|b| format!("{b:02x}")).collect(),
            data_file_s3_key: self.key,
            billed_size_bytes: self.billed_size_bytes,
        });
        Ok(())
    }
}

/// A writer that hashes and counts what passes through it.
struct Md5Writer<W> {
    inner: W,
    md5: Md5,
    /// Bytes of the file so far.
    bytes: u64,
}

impl<W: Write> Write for Md5Writer<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(bytes)?;
        self.md5.update(&bytes[..written]);
        self.bytes += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Hashes what is copied into it.
struct Md5Sink<'a>(&'a mut Md5);

impl Write for Md5Sink<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// base64 of the MD5 of `bytes`: what the `.md5` files and `md5Checksum` hold.
pub fn md5_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(Md5::digest(bytes))
}

/// ISO-8601 UTC with milliseconds and `Z`, as the summary's times are.
pub fn iso_time(millis: u64) -> String {
    format!("{}Z", format_millis_iso(millis))
}

fn to_json<T: Serialize>(value: &T, dir: &Path) -> Result<Vec<u8>, ExportWriteError> {
    serde_json::to_vec(value).map_err(|e| io_error(dir)(io::Error::other(e)))
}

fn sync_dir(dir: &Path) -> Result<(), ExportWriteError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error(dir))
}

/// 26 random lowercase base-32 characters, as DynamoDB names its data files.
/// A new export id: DynamoDB's `<14 digits>-<8 hex>`, the digits the export's start in
/// milliseconds since the Unix epoch.
pub fn export_id(start_millis: u64) -> String {
    format!(
        "{start_millis:014}-{:08x}",
        crate::control::tables::random_bits() as u32
    )
}

fn random_name() -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut bits = crate::control::tables::random_bits();
    (0..26)
        .map(|_| {
            let c = ALPHABET[(bits & 31) as usize] as char;
            bits >>= 5;
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_base32_and_distinct() {
        let a = random_name();
        let b = random_name();
        assert_eq!(a.len(), 26);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_lowercase() || (b'2'..=b'7').contains(&c)));
        assert_ne!(a, b);
    }

    #[test]
    fn times_are_iso_with_milliseconds_and_zone() {
        assert_eq!(iso_time(1_604_474_914_028), "2020-11-04T07:28:34.028Z");
    }

    fn item(n: u64) -> Item {
        let mut item = Item::new();
        item.insert("pk".into(), shoal_model::AttributeValue::S(format!("k{n}")));
        item
    }

    fn lines_of(path: &Path) -> Vec<String> {
        let mut text = String::new();
        flate2::read::MultiGzDecoder::new(File::open(path).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn a_file_written_in_members_resumes_after_its_last_member() {
        let bucket = tempfile::tempdir().unwrap();
        let export = ExportWriter::create(bucket.path(), None, "01234567890123-abcdef01").unwrap();
        let mut file = export.data_file().unwrap();
        let name = file.name().to_string();
        file.write_item(&item(1)).unwrap();
        file.write_item(&item(2)).unwrap();
        let first = file.end_member().unwrap();
        let path = export.dir().join(DATA_DIR).join(&name);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), first);
        // A page written after the last recorded member, then a crash.
        file.write_item(&item(3)).unwrap();
        file.end_member().unwrap();
        drop(file);
        assert_eq!(lines_of(&path).len(), 3);

        let mut resumed = export.resume_data_file(&name, first, 2, 0).unwrap();
        resumed.write_item(&item(4)).unwrap();
        resumed.finish().unwrap();
        let lines = lines_of(&path);
        assert_eq!(
            lines,
            vec![
                r#"{"Item":{"pk":{"S":"k1"}}}"#,
                r#"{"Item":{"pk":{"S":"k2"}}}"#,
                r#"{"Item":{"pk":{"S":"k4"}}}"#
            ]
        );
        let entries = export.files.lock().clone();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].item_count, 3);
        assert_eq!(
            entries[0].md5_checksum,
            md5_base64(&std::fs::read(&path).unwrap())
        );
        // A length past the file's end is refused, not padded with zeros.
        assert!(export.resume_data_file(&name, 1 << 30, 0, 0).is_err());
    }
}
