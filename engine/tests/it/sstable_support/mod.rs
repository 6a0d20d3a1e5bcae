//! Shared helpers for the SSTable integration tests: an in-memory file and build/open
//! shortcuts.

use std::io;
use std::sync::{Arc, Mutex};

use shoal_engine::sstable::{
    PrefixFn, SstError, Table, TableBuilder, TableOptions, TableProperties,
};

/// A writable file whose bytes land in a shared vector.
pub struct MemWritable {
    pub bytes: Arc<Mutex<Vec<u8>>>,
    pub synced_len: Arc<Mutex<usize>>,
}

impl shoal_vfs::WritableFile for MemWritable {
    fn write_all(&self, data: &[u8]) -> io::Result<()> {
        self.bytes.lock().unwrap().extend_from_slice(data);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        *self.synced_len.lock().unwrap() = self.bytes.lock().unwrap().len();
        Ok(())
    }

    fn position(&self) -> u64 {
        self.bytes.lock().unwrap().len() as u64
    }
}

/// A readable file over owned bytes.
pub struct MemReadable(pub Vec<u8>);

impl shoal_vfs::ReadableFile for MemReadable {
    fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Builds a table from sorted entries; returns its bytes and the builder's properties.
pub fn build(entries: &[(Vec<u8>, Vec<u8>)], options: TableOptions) -> (Vec<u8>, TableProperties) {
    let bytes = Arc::new(Mutex::new(Vec::new()));
    let synced_len = Arc::new(Mutex::new(0));
    let file = MemWritable {
        bytes: Arc::clone(&bytes),
        synced_len: Arc::clone(&synced_len),
    };
    let mut builder = TableBuilder::new(Box::new(file), options);
    for (key, value) in entries {
        builder.add(key, value).unwrap();
    }
    assert_eq!(builder.entry_count(), entries.len() as u64);
    let properties = builder.finish().unwrap();
    let bytes = bytes.lock().unwrap().clone();
    assert_eq!(
        *synced_len.lock().unwrap(),
        bytes.len(),
        "finish must sync every byte"
    );
    assert_eq!(properties.size_bytes, bytes.len() as u64);
    (bytes, properties)
}

/// Opens a table over in-memory bytes.
pub fn open(bytes: Vec<u8>, prefix: PrefixFn) -> Result<Arc<Table>, SstError> {
    Table::open(Arc::new(MemReadable(bytes)), 7, prefix).map(Arc::new)
}

/// The bloom prefix used by the tests: the first two bytes of the user key.
pub fn two_byte_prefix(user_key: &[u8]) -> &[u8] {
    &user_key[..user_key.len().min(2)]
}
