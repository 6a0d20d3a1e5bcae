//! Manifest install, reopen and housekeeping on real files.

use std::path::Path;

use shoal_compaction::key::{encode, EntryKind};
use shoal_engine::manifest::{
    manifest_file_name, remove_obsolete_files, sst_file_name, Manifest, ManifestError,
};
use shoal_engine::version::{FileMeta, Version, VersionEdit};
use shoal_vfs::{Fs, RealFs};

fn file(number: u64, lo: &str, hi: &str) -> FileMeta {
    FileMeta {
        number,
        size_bytes: 4096,
        smallest_key: encode(lo.as_bytes(), number, EntryKind::Put),
        largest_key: encode(hi.as_bytes(), number, EntryKind::Put),
        entries: 20,
        tombstones: 2,
        seq_min: number,
        seq_max: number,
    }
}

fn with_files(numbers: &[u64]) -> Version {
    let mut edits = vec![VersionEdit::CreateTree {
        id: 1,
        name: "t".into(),
    }];
    for &n in numbers {
        edits.push(VersionEdit::AddFile {
            tree: 1,
            level: 0,
            file: file(n, "a", "z"),
        });
    }
    edits.push(VersionEdit::SetMetadata {
        key: "catalog".into(),
        value: Some(vec![1, 2, 3]),
    });
    Version::empty().apply(&edits).unwrap()
}

fn touch(dir: &Path, name: &str) {
    std::fs::write(dir.join(name), b"x").unwrap();
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn new_directory_gets_a_durable_empty_version() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let fs: Fs = RealFs::shared();
    let (manifest, version) = Manifest::open(fs.clone(), &dir).unwrap();
    assert_eq!(version, Version::empty());
    assert_eq!(manifest.current_file_name(), "MANIFEST-000001");
    assert_eq!(names(&dir), vec!["CURRENT", "MANIFEST-000001"]);
    assert_eq!(
        std::fs::read(dir.join("CURRENT")).unwrap(),
        b"MANIFEST-000001\n"
    );
    drop(manifest);
    let (_, reopened) = Manifest::open(fs, &dir).unwrap();
    assert_eq!(reopened, Version::empty());
}

#[test]
fn install_then_reopen_returns_the_installed_version() {
    let tmp = tempfile::tempdir().unwrap();
    let fs: Fs = RealFs::shared();
    let (mut manifest, _) = Manifest::open(fs.clone(), tmp.path()).unwrap();
    let a = with_files(&[1, 2]);
    manifest.install(&a).unwrap();
    let b = a
        .apply(&[
            VersionEdit::RemoveFile {
                tree: 1,
                level: 0,
                number: 1,
            },
            VersionEdit::AddFile {
                tree: 1,
                level: 1,
                file: file(3, "b", "c"),
            },
            VersionEdit::SetLastSeq(99),
        ])
        .unwrap();
    manifest.install(&b).unwrap();
    assert_eq!(manifest.current_file_name(), "MANIFEST-000003");
    // The old manifests are gone; only CURRENT and the live one remain.
    assert_eq!(names(tmp.path()), vec!["CURRENT", "MANIFEST-000003"]);
    drop(manifest);

    let (manifest, reopened) = Manifest::open(fs, tmp.path()).unwrap();
    assert_eq!(reopened, b);
    assert_eq!(manifest.current_file_name(), "MANIFEST-000003");
}

#[test]
fn installing_an_invalid_version_is_refused_without_poisoning() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut manifest, _) = Manifest::open(RealFs::shared(), tmp.path()).unwrap();
    let mut bad = with_files(&[4]);
    bad.next_file_number = 2;
    assert!(matches!(
        manifest.install(&bad),
        Err(ManifestError::InvalidVersion(_))
    ));
    assert!(manifest.poisoned().is_none());
    manifest.install(&with_files(&[4])).unwrap();
}

#[test]
fn remove_obsolete_files_keeps_live_files_only() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let fs: Fs = RealFs::shared();
    let (mut manifest, _) = Manifest::open(fs.clone(), dir).unwrap();
    let version = with_files(&[2, 5]);
    manifest.install(&version).unwrap();

    for n in [1, 2, 5, 6] {
        touch(dir, &sst_file_name(n));
    }
    touch(dir, &manifest_file_name(1)); // an old manifest whose removal was lost
    touch(dir, &manifest_file_name(9)); // a newer one whose install crashed
    touch(dir, "CURRENT.tmp");
    touch(dir, "000007.sst.tmp");
    touch(dir, "LOCK");
    touch(dir, "notes.txt");
    std::fs::create_dir(dir.join("wal")).unwrap();
    touch(&dir.join("wal"), "00000000000000000001.log");

    let removed = remove_obsolete_files(&fs, dir, &version, &manifest.current_file_name()).unwrap();
    assert_eq!(
        removed,
        vec![
            "000001.sst",
            "000006.sst",
            "000007.sst.tmp",
            "CURRENT.tmp",
            "MANIFEST-000001",
            "MANIFEST-000009"
        ]
    );
    assert_eq!(
        names(dir),
        vec![
            "000002.sst",
            "000005.sst",
            "CURRENT",
            "LOCK",
            "MANIFEST-000002",
            "notes.txt",
            "wal"
        ]
    );
    assert_eq!(names(&dir.join("wal")), vec!["00000000000000000001.log"]);
    // The database still opens to the same version.
    let (_, reopened) = Manifest::open(fs.clone(), dir).unwrap();
    assert_eq!(reopened, version);
    // Nothing left to do the second time.
    assert!(
        remove_obsolete_files(&fs, dir, &version, &manifest.current_file_name())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn remove_obsolete_files_refuses_a_missing_current_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let fs: Fs = RealFs::shared();
    let (_manifest, version) = Manifest::open(fs.clone(), tmp.path()).unwrap();
    touch(tmp.path(), &sst_file_name(1));
    let result = remove_obsolete_files(&fs, tmp.path(), &version, "MANIFEST-000042");
    assert!(matches!(result, Err(ManifestError::Corruption { .. })));
    assert!(tmp.path().join("MANIFEST-000001").exists());
    assert!(tmp.path().join("000001.sst").exists());
}

fn corruption_file(result: Result<(Manifest, Version), ManifestError>) -> String {
    match result {
        Err(ManifestError::Corruption { file, .. }) => {
            file.file_name().unwrap().to_string_lossy().into_owned()
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn a_flipped_byte_in_the_manifest_is_reported_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let fs: Fs = RealFs::shared();
    let (mut manifest, _) = Manifest::open(fs.clone(), tmp.path()).unwrap();
    manifest.install(&with_files(&[1, 2, 3])).unwrap();
    drop(manifest);
    let path = tmp.path().join("MANIFEST-000002");
    let original = std::fs::read(&path).unwrap();
    for offset in 0..original.len() {
        let mut corrupt = original.clone();
        corrupt[offset] ^= 0x10;
        std::fs::write(&path, &corrupt).unwrap();
        assert_eq!(
            corruption_file(Manifest::open(fs.clone(), tmp.path())),
            "MANIFEST-000002",
            "flip at byte {offset}"
        );
    }
}

#[test]
fn a_manifest_named_by_current_but_missing_is_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    let fs: Fs = RealFs::shared();
    Manifest::open(fs.clone(), tmp.path()).unwrap();
    std::fs::remove_file(tmp.path().join("MANIFEST-000001")).unwrap();
    assert_eq!(
        corruption_file(Manifest::open(fs, tmp.path())),
        "MANIFEST-000001"
    );
}

#[test]
fn a_garbled_current_is_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    let fs: Fs = RealFs::shared();
    Manifest::open(fs.clone(), tmp.path()).unwrap();
    for garbage in [
        &b"MANIFEST-00001\n"[..],
        b"",
        b"MANIFEST-000001",
        b"\x00\x01",
    ] {
        std::fs::write(tmp.path().join("CURRENT"), garbage).unwrap();
        assert_eq!(
            corruption_file(Manifest::open(fs.clone(), tmp.path())),
            "CURRENT"
        );
    }
}

#[test]
fn a_manifest_under_another_number_is_corruption() {
    // CURRENT names MANIFEST-000005 but that file is a copy of manifest 2.
    let tmp = tempfile::tempdir().unwrap();
    let fs: Fs = RealFs::shared();
    let (mut manifest, _) = Manifest::open(fs.clone(), tmp.path()).unwrap();
    manifest.install(&with_files(&[1])).unwrap();
    std::fs::copy(
        tmp.path().join("MANIFEST-000002"),
        tmp.path().join("MANIFEST-000005"),
    )
    .unwrap();
    std::fs::write(tmp.path().join("CURRENT"), b"MANIFEST-000005\n").unwrap();
    assert_eq!(
        corruption_file(Manifest::open(fs, tmp.path())),
        "MANIFEST-000005"
    );
}

#[test]
fn missing_current_over_existing_data_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let fs: Fs = RealFs::shared();
    touch(tmp.path(), &sst_file_name(3));
    assert!(matches!(
        Manifest::open(fs.clone(), tmp.path()),
        Err(ManifestError::MissingCurrent { .. })
    ));
    assert!(!tmp.path().join("CURRENT").exists(), "nothing was written");

    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir(other.path().join("wal")).unwrap();
    touch(&other.path().join("wal"), "00000000000000000001.log");
    assert!(matches!(
        Manifest::open(fs.clone(), other.path()),
        Err(ManifestError::MissingCurrent { .. })
    ));

    // An empty wal/ directory and leftovers of a crashed first install are no data.
    let fresh = tempfile::tempdir().unwrap();
    std::fs::create_dir(fresh.path().join("wal")).unwrap();
    touch(fresh.path(), "MANIFEST-000001");
    touch(fresh.path(), "CURRENT.tmp");
    let (_, version) = Manifest::open(fs, fresh.path()).unwrap();
    assert_eq!(version, Version::empty());
}
