//! The objects of an import: S3's bucket and key prefix mapped onto a local directory.
//!
//! Bucket `B`, key `K` is the file `<export_dir>/B/K`: a key is the file's path relative to
//! the bucket's directory, its components joined with `/`. A key prefix selects keys that
//! start with it, as S3's do: `data/part-1` selects `data/part-10.gz` as well as
//! `data/part-1/x.gz`, not only whole directories. Objects are listed in key order (S3 lists
//! keys in UTF-8 byte order). Symbolic links are not followed, so a listing stays inside the
//! bucket's directory.

use std::path::{Path, PathBuf};

/// ImportTable's cap on objects under one prefix (SPEC-2 §6.4).
pub const IMPORT_OBJECTS_MAX: usize = 5000;

/// One object to import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceObject {
    /// Its S3 key: the path below the bucket's directory, `/`-separated.
    pub key: String,
    pub path: PathBuf,
    pub size_bytes: u64,
}

/// Why the objects could not be listed: each ends the import FAILED.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceError {
    /// The bucket's directory does not exist (S3's `S3NoSuchBucket`).
    NoSuchBucket(String),
    /// More than [`IMPORT_OBJECTS_MAX`] objects match the prefix.
    TooManyObjects,
    /// The directory could not be read.
    Io(String),
}

impl SourceError {
    /// The import's `FailureCode`.
    pub fn failure_code(&self) -> &'static str {
        match self {
            SourceError::NoSuchBucket(_) => "S3NoSuchBucket",
            SourceError::TooManyObjects => "ImportLimitExceeded",
            SourceError::Io(_) => "S3AccessDenied",
        }
    }

    /// The import's `FailureMessage`.
    pub fn failure_message(&self) -> String {
        match self {
            SourceError::NoSuchBucket(bucket) => {
                format!("The specified bucket does not exist: {bucket}")
            }
            SourceError::TooManyObjects => format!(
                "The import source holds more than {IMPORT_OBJECTS_MAX} objects under the given prefix"
            ),
            SourceError::Io(reason) => format!("The import source could not be read: {reason}"),
        }
    }
}

/// The objects of `bucket` whose keys start with `prefix`, in key order.
pub fn list_objects(
    export_dir: &Path,
    bucket: &str,
    prefix: &str,
) -> Result<Vec<SourceObject>, SourceError> {
    let root = export_dir.join(bucket);
    if !root.is_dir() {
        return Err(SourceError::NoSuchBucket(bucket.to_string()));
    }
    let mut objects = Vec::new();
    walk(&root, "", prefix, &mut objects)?;
    objects.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(objects)
}

/// Adds the files below `dir` (whose keys start with `dir_key`) that match `prefix`.
fn walk(
    dir: &Path,
    dir_key: &str,
    prefix: &str,
    objects: &mut Vec<SourceObject>,
) -> Result<(), SourceError> {
    let io = |error: std::io::Error| SourceError::Io(format!("{}: {error}", dir.display()));
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        // A name that is not UTF-8 cannot be an S3 key.
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let key = format!("{dir_key}{name}");
        let kind = entry.file_type().map_err(io)?;
        if kind.is_dir() {
            let below = format!("{key}/");
            // Only directories that can hold a matching key are read.
            if below.starts_with(prefix) || prefix.starts_with(&below) {
                walk(&entry.path(), &below, prefix, objects)?;
            }
        } else if kind.is_file() && key.starts_with(prefix) {
            if objects.len() == IMPORT_OBJECTS_MAX {
                return Err(SourceError::TooManyObjects);
            }
            let size_bytes = entry.metadata().map_err(io)?.len();
            objects.push(SourceObject {
                key,
                path: entry.path(),
                size_bytes,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(objects: &[SourceObject]) -> Vec<&str> {
        objects.iter().map(|o| o.key.as_str()).collect()
    }

    #[test]
    fn a_prefix_selects_keys_as_s3_does_not_only_directories() {
        let dir = tempfile::tempdir().unwrap();
        let bucket = dir.path().join("b");
        std::fs::create_dir_all(bucket.join("data/part-1")).unwrap();
        for file in [
            "data/part-10.gz",
            "data/part-1/x.gz",
            "data/part-2.gz",
            "top",
        ] {
            std::fs::write(bucket.join(file), b"x").unwrap();
        }
        let all = list_objects(dir.path(), "b", "").unwrap();
        assert_eq!(
            keys(&all),
            [
                "data/part-1/x.gz",
                "data/part-10.gz",
                "data/part-2.gz",
                "top"
            ]
        );
        let some = list_objects(dir.path(), "b", "data/part-1").unwrap();
        assert_eq!(keys(&some), ["data/part-1/x.gz", "data/part-10.gz"]);
        assert!(list_objects(dir.path(), "b", "nothing").unwrap().is_empty());
        assert_eq!(
            list_objects(dir.path(), "missing", ""),
            Err(SourceError::NoSuchBucket("missing".into()))
        );
    }
}
