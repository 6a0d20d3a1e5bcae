//! A cursor over a whole table: a block cursor plus the index position, moving between data
//! blocks as it runs off either end of one.

use std::ops::Range;
use std::sync::Arc;

use shoal_compaction::{InternalIterator, IterError};

use super::block::{BlockCursor, BlockLayout};
use super::format::DecodeError;
use super::table::Table;
use super::SstError;

/// An iterator [releasing behind](TableIterator::releasing_behind) itself releases the
/// file's bytes it has passed once they add up to this much: 64 calls for a 64 MiB table,
/// and about this much of each table resident at a time.
const RELEASE_STEP_BYTES: usize = 1 << 20;

/// Iterates a table's entries in internal-key order, forward or backward. Owns an
/// `Arc<Table>`, so it may outlive the caller's handle. After an error it is invalid.
pub struct TableIterator {
    table: Arc<Table>,
    block_index: usize,
    /// Where the current data block's contents are in the file.
    block_range: Range<usize>,
    cursor: BlockCursor,
    /// When releasing behind: where the file's bytes not yet released begin.
    released_to: Option<usize>,
}

impl Table {
    /// A cursor over the whole table, forward and reverse. (Here rather than in `table.rs`:
    /// the cursor is built on the table, not the table on the cursor.)
    pub fn iter(self: &Arc<Self>) -> TableIterator {
        TableIterator::new(Arc::clone(self))
    }
}

impl TableIterator {
    pub(crate) fn new(table: Arc<Table>) -> TableIterator {
        TableIterator {
            table,
            block_index: 0,
            block_range: 0..0,
            cursor: BlockCursor::default(),
            released_to: None,
        }
    }

    /// Makes the iterator release ([`shoal_vfs::ReadableFile::release`]) the data blocks it
    /// has passed going forward, a step at a time, and the rest of them once it runs off the
    /// end: for a walk that reads the table once, such as a check of a whole tree, which
    /// would otherwise leave every page of every table it read in the process's resident
    /// memory. Blocks a seek skips over count as passed. Reads are unaffected: a block read
    /// again after its release is mapped back in.
    pub fn releasing_behind(mut self) -> TableIterator {
        self.released_to = Some(0);
        self
    }

    /// When releasing behind, releases the bytes before `offset` once they make a step.
    fn release_before(&mut self, offset: usize, whole_step: bool) {
        let Some(released_to) = self.released_to else {
            return;
        };
        if offset > released_to && (!whole_step || offset - released_to >= RELEASE_STEP_BYTES) {
            self.table.release(released_to..offset);
            self.released_to = Some(offset);
        }
    }

    fn load_block(&mut self, index: usize) -> Result<(), SstError> {
        self.cursor.reset(BlockLayout::default());
        let block = self.table.data_block(index)?;
        if self.released_to.is_none() {
            self.table.charge_mapped(&block);
        }
        let offset = block.offset;
        self.block_index = index;
        self.block_range = offset..offset + block.contents.len();
        self.cursor.reset(block.layout);
        self.release_before(offset, true);
        Ok(())
    }

    fn block_error(&self, error: DecodeError) -> SstError {
        self.table
            .corruption(self.block_range.start + error.offset, error.detail)
    }

    /// Runs one cursor operation on the current block's bytes.
    fn on_block<T>(
        &mut self,
        operation: impl FnOnce(&mut BlockCursor, &[u8]) -> Result<T, DecodeError>,
    ) -> Result<T, SstError> {
        let table = &*self.table;
        let contents = table.block_contents(self.block_range.clone());
        operation(&mut self.cursor, contents).map_err(|e| self.block_error(e))
    }

    /// Moves to the first entry of the following blocks while the cursor is off its block.
    fn skip_forward(&mut self) -> Result<(), SstError> {
        while !self.cursor.valid() && self.block_index + 1 < self.table.block_count() {
            self.load_block(self.block_index + 1)?;
            self.on_block(|cursor, block| cursor.seek_to_first(block))?;
        }
        if !self.cursor.valid() {
            // Off the end: every data block has been passed.
            self.release_before(self.table.data_end(), false);
        }
        Ok(())
    }

    /// Moves to the last entry of the preceding blocks while the cursor is off its block.
    fn skip_backward(&mut self) -> Result<(), SstError> {
        while !self.cursor.valid() && self.block_index > 0 {
            self.load_block(self.block_index - 1)?;
            self.on_block(|cursor, block| cursor.seek_to_last(block))?;
        }
        Ok(())
    }

    fn seek_to_last_inner(&mut self) -> Result<(), SstError> {
        let Some(last) = self.table.block_count().checked_sub(1) else {
            return Ok(());
        };
        self.load_block(last)?;
        self.on_block(|cursor, block| cursor.seek_to_last(block))?;
        self.skip_backward()
    }

    /// Runs a positioning operation; on error leaves the iterator invalid.
    fn run(
        &mut self,
        operation: impl FnOnce(&mut Self) -> Result<(), SstError>,
    ) -> Result<(), IterError> {
        let result = operation(self);
        if result.is_err() {
            self.cursor.reset(BlockLayout::default());
        }
        result.map_err(IterError::from)
    }
}

impl InternalIterator for TableIterator {
    fn valid(&self) -> bool {
        self.cursor.valid()
    }

    fn key(&self) -> &[u8] {
        debug_assert!(self.valid(), "key() on an invalid iterator");
        self.cursor.key()
    }

    fn value(&self) -> &[u8] {
        debug_assert!(self.valid(), "value() on an invalid iterator");
        let (start, end) = self.cursor.value_range();
        &self.table.block_contents(self.block_range.clone())[start..end]
    }

    fn seek_to_first(&mut self) -> Result<(), IterError> {
        self.run(|it| {
            it.cursor.reset(BlockLayout::default());
            if it.table.block_count() == 0 {
                return Ok(());
            }
            it.load_block(0)?;
            it.on_block(|cursor, block| cursor.seek_to_first(block))?;
            it.skip_forward()
        })
    }

    fn seek_to_last(&mut self) -> Result<(), IterError> {
        self.run(|it| {
            it.cursor.reset(BlockLayout::default());
            it.seek_to_last_inner()
        })
    }

    fn seek(&mut self, target: &[u8]) -> Result<(), IterError> {
        self.run(|it| {
            it.cursor.reset(BlockLayout::default());
            let index = it.table.find_block(target);
            if index == it.table.block_count() {
                return Ok(());
            }
            it.load_block(index)?;
            it.on_block(|cursor, block| cursor.seek(block, target))?;
            it.skip_forward()
        })
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<(), IterError> {
        self.run(|it| {
            it.cursor.reset(BlockLayout::default());
            let index = it.table.find_block(target);
            if index == it.table.block_count() {
                return it.seek_to_last_inner();
            }
            it.load_block(index)?;
            it.on_block(|cursor, block| cursor.seek_for_prev(block, target))?;
            it.skip_backward()
        })
    }

    fn next(&mut self) -> Result<(), IterError> {
        self.run(|it| {
            if !it.cursor.valid() {
                return Ok(());
            }
            it.on_block(|cursor, block| cursor.next(block))?;
            it.skip_forward()
        })
    }

    fn prev(&mut self) -> Result<(), IterError> {
        self.run(|it| {
            if !it.cursor.valid() {
                return Ok(());
            }
            it.on_block(|cursor, block| cursor.prev(block))?;
            it.skip_backward()
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Mutex;

    use shoal_compaction::key::{encode, EntryKind};
    use shoal_vfs::ReadableFile;

    use super::*;
    use crate::sstable::format::{BLOCK_TRAILER_LEN, FOOTER_LEN};
    use crate::sstable::{TableBuilder, TableOptions};

    /// A table's bytes in memory, recording the ranges released.
    struct Recording {
        bytes: Vec<u8>,
        released: Mutex<Vec<Range<usize>>>,
    }

    impl ReadableFile for Recording {
        fn bytes(&self) -> &[u8] {
            &self.bytes
        }

        fn release(&self, range: Range<usize>) {
            self.released.lock().unwrap().push(range);
        }
    }

    impl Recording {
        fn take(&self) -> Vec<Range<usize>> {
            std::mem::take(&mut *self.released.lock().unwrap())
        }
    }

    /// A table of `entries` keys with 100-byte values (about 120 bytes an entry).
    fn table(entries: u32) -> (Arc<Recording>, Arc<Table>) {
        let fs = shoal_vfs::mem::MemFs::new().fs();
        fs.create_dir_all(Path::new("/d")).unwrap();
        let path = Path::new("/d/table.sst");
        let mut builder = TableBuilder::new(fs.create(path).unwrap(), TableOptions::default());
        for i in 0..entries {
            let key = encode(format!("key{i:08}").as_bytes(), 1, EntryKind::Put);
            builder.add(&key, &[i as u8; 100]).unwrap();
        }
        builder.finish().unwrap();
        let file = Arc::new(Recording {
            bytes: fs.open_read(path).unwrap().bytes().to_vec(),
            released: Mutex::new(Vec::new()),
        });
        let table = Table::open(Arc::clone(&file) as Arc<dyn ReadableFile>, 1, |k| k).unwrap();
        (file, Arc::new(table))
    }

    #[test]
    fn opening_releases_the_decoded_index() {
        let (file, table) = table(40_000);
        let released = file.take();
        assert_eq!(released.len(), 1, "{released:?}");
        assert!(released[0].start > table.data_end(), "{released:?}");
        // The index's contents: its trailer and the footer follow.
        assert_eq!(
            released[0].end + BLOCK_TRAILER_LEN,
            file.bytes.len() - FOOTER_LEN
        );
    }

    #[test]
    fn a_walk_releasing_behind_releases_each_step_it_passed_and_the_rest_at_the_end() {
        let entries = 40_000;
        let (file, table) = table(entries);
        let data_end = table.data_end();
        assert!(
            data_end > 4 * RELEASE_STEP_BYTES,
            "{data_end} bytes of data blocks"
        );
        file.take();

        // A plain walk releases nothing.
        let mut plain = table.iter();
        plain.seek_to_first().unwrap();
        let mut count = 0;
        while plain.valid() {
            count += 1;
            plain.next().unwrap();
        }
        assert_eq!(count, entries);
        assert!(file.take().is_empty());

        let mut walk = table.iter().releasing_behind();
        walk.seek_to_first().unwrap();
        let mut count = 0;
        let mut released = Vec::new();
        while walk.valid() {
            assert_eq!(walk.value(), &[count as u8; 100]);
            count += 1;
            released.extend(file.take());
            // Never the block in use: only bytes before it.
            let released_end = released.last().map_or(0, |r: &Range<usize>| r.end);
            assert!(released_end <= walk.block_range.start);
            walk.next().unwrap();
        }
        assert_eq!(count, entries);
        released.extend(file.take());
        // Consecutive ranges from the start of the file to the end of the data blocks, each a
        // whole step but the last.
        assert_eq!(released.first().map(|r| r.start), Some(0));
        assert_eq!(released.last().map(|r| r.end), Some(data_end));
        for pair in released.windows(2) {
            assert_eq!(pair[0].end, pair[1].start, "{released:?}");
            assert!(pair[0].len() >= RELEASE_STEP_BYTES, "{released:?}");
        }
        // Steps of about RELEASE_STEP_BYTES: one call per step, not per block.
        assert!(
            released.len() <= data_end / RELEASE_STEP_BYTES + 1,
            "{released:?}"
        );

        // Running off the end released everything: nothing more to release.
        walk.next().unwrap();
        walk.seek_to_first().unwrap();
        assert!(file.take().is_empty());
    }
}
