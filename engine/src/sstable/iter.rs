//! A cursor over a whole table: a block cursor plus the index position, moving between data
//! blocks as it runs off either end of one.

use std::ops::Range;
use std::sync::Arc;

use shoal_compaction::{InternalIterator, IterError};

use super::block::{BlockCursor, BlockLayout};
use super::format::DecodeError;
use super::table::Table;
use super::SstError;

/// Iterates a table's entries in internal-key order, forward or backward. Owns an
/// `Arc<Table>`, so it may outlive the caller's handle. After an error it is invalid.
pub struct TableIterator {
    table: Arc<Table>,
    block_index: usize,
    /// Where the current data block's contents are in the file.
    block_range: Range<usize>,
    cursor: BlockCursor,
}

impl TableIterator {
    pub(crate) fn new(table: Arc<Table>) -> TableIterator {
        TableIterator {
            table,
            block_index: 0,
            block_range: 0..0,
            cursor: BlockCursor::default(),
        }
    }

    fn load_block(&mut self, index: usize) -> Result<(), SstError> {
        self.cursor.reset(BlockLayout::default());
        let block = self.table.data_block(index)?;
        self.block_index = index;
        self.block_range = block.offset..block.offset + block.contents.len();
        self.cursor.reset(block.layout);
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
