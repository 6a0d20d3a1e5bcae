//! Sequence-suffixed puts (`WriteBatch::put_sequenced`): the stored key is the prefix
//! followed by the entry's own sequence number, the same bytes after the live commit, a WAL
//! replay and a flush, and such keys sort in commit order whoever commits them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use shoal_engine::batch::SEQ_SUFFIX_BYTES;
use shoal_engine::{Db, DbOptions, Durability, WriteBatch};
use shoal_vfs::sim::SimFs;

use crate::scan_all;

fn options(durability: Durability) -> DbOptions {
    DbOptions {
        durability,
        background_flush: false,
        compaction_threads: 0,
        ..DbOptions::default()
    }
}

fn sequenced_key(prefix: &[u8], seq: u64) -> Vec<u8> {
    [prefix, &seq.to_be_bytes()].concat()
}

/// A batch of a plain put, a sequence-suffixed put and a delete: the suffixed key carries the
/// seq of its own entry (the second: `first_seq + 1`) after the commit, after a reopen that
/// replays the WAL (once, not a second key) and flushes it, and after another reopen.
#[test]
fn a_sequenced_key_ends_with_its_entry_seq_after_commit_replay_and_flush() {
    let sim = SimFs::new();
    let dir = Path::new("/db");
    let (items, stream, expected) = {
        let db = Db::open_with_fs(sim.fs(), dir, options(Durability::Sync)).unwrap();
        let items = db.create_tree("items").unwrap();
        let stream = db.create_tree("stream").unwrap();
        let mut earlier = WriteBatch::new();
        earlier.put(items, b"gone", b"old").unwrap();
        db.write(earlier).unwrap();

        let mut batch = WriteBatch::new();
        batch.put(items, b"item", b"new image").unwrap();
        batch.put_sequenced(stream, b"shard-1/", b"record").unwrap();
        batch.delete(items, b"gone").unwrap();
        let first_seq = db.write(batch).unwrap();
        let key = sequenced_key(b"shard-1/", first_seq + 1);
        assert_eq!(key.len(), b"shard-1/".len() + SEQ_SUFFIX_BYTES);
        assert_eq!(
            db.get(stream, &key, None).unwrap(),
            Some(b"record".to_vec())
        );
        let expected = vec![(key, b"record".to_vec())];
        assert_eq!(scan_all(&db, stream), expected);
        assert_eq!(
            db.get(items, b"item", None).unwrap(),
            Some(b"new image".to_vec())
        );
        assert_eq!(db.get(items, b"gone", None).unwrap(), None);
        (items, stream, expected)
    };

    // No flush happened: the reopen replays the WAL, which must make the same key, and
    // flushes what it replayed to L0 (so the SSTable holds the replayed key).
    let db = Db::open_with_fs(sim.fs(), dir, options(Durability::Sync)).unwrap();
    assert_eq!(db.tree_stats(stream).unwrap().level_files[0], 1);
    assert_eq!(
        db.tree_stats(stream).unwrap().entries_estimate,
        1,
        "the replayed record is there exactly once"
    );
    assert_eq!(scan_all(&db, stream), expected);
    assert_eq!(
        db.get(stream, &expected[0].0, None).unwrap(),
        Some(b"record".to_vec())
    );
    assert_eq!(db.get(items, b"gone", None).unwrap(), None);

    db.flush_all().unwrap();
    assert_eq!(db.tree_stats(stream).unwrap().level_files[0], 1);
    drop(db);
    let db = Db::open_with_fs(sim.fs(), dir, options(Durability::Sync)).unwrap();
    assert_eq!(db.tree_stats(stream).unwrap().entries_estimate, 1);
    assert_eq!(scan_all(&db, stream), expected);
    assert_eq!(
        db.get(items, b"item", None).unwrap(),
        Some(b"new image".to_vec())
    );
}

/// Writers racing through group commit: every suffixed key carries the seq its entry got
/// (`first_seq + index` from its own `Db::write`), so the keys' order is the commit order,
/// across writers, and each writer's records follow its own program order.
#[test]
fn concurrent_writers_sequenced_keys_sort_in_commit_order() {
    const WRITERS: u64 = 4;
    const BATCHES_PER_WRITER: u64 = 150;
    let db = Arc::new(
        Db::open_with_fs(
            SimFs::new().fs(),
            Path::new("/db"),
            options(Durability::Sync),
        )
        .unwrap(),
    );
    let items = db.create_tree("items").unwrap();
    let stream = db.create_tree("stream").unwrap();
    let handles: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut committed = Vec::new();
                for n in 0..BATCHES_PER_WRITER {
                    let value = format!("{writer}-{n}").into_bytes();
                    let mut batch = WriteBatch::new();
                    batch.put(items, &value, b"item").unwrap();
                    batch.put_sequenced(stream, b"s", &value).unwrap();
                    let first_seq = db.write(batch).unwrap();
                    committed.push((first_seq, value));
                }
                committed
            })
        })
        .collect();
    // Expected stream key of each record: the seq of entry 1 of its batch.
    let mut expected = BTreeMap::new();
    for handle in handles {
        let committed = handle.join().unwrap();
        assert!(
            committed.windows(2).all(|pair| pair[0].0 < pair[1].0),
            "one writer's commits get increasing seqs"
        );
        for (first_seq, value) in committed {
            expected.insert(sequenced_key(b"s", first_seq + 1), value);
        }
    }
    let scanned = scan_all(&db, stream);
    assert_eq!(scanned.len() as u64, WRITERS * BATCHES_PER_WRITER);
    assert_eq!(
        scanned,
        expected.into_iter().collect::<Vec<_>>(),
        "scan order (by suffixed key) is the order of the returned seqs"
    );
}
