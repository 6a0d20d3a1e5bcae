//! One data file of an export read as a copy's unit: gzip'd DynamoDB JSON lines, decoded
//! as ImportTable decodes them (`tables::transfer`), a page of items at a time; the cursor is
//! the number of lines already copied.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use serde_json::Value;
use shoal_tables::transfer::parse::dynamodb_json_line;
use shoal_tables::transfer::read::{self, Compression, Line, Lines};

use super::scan::ScanPage;

/// Items in one page of a file (about what a Scan page of 1 KB items holds).
const PAGE_ITEMS_MAX: usize = 1000;
/// Bytes of lines in one page, so that pages of large items stay bounded too.
const PAGE_BYTES_MAX: usize = 4 << 20;

/// A data file being read.
pub struct FileReader {
    path: PathBuf,
    lines: Lines<Box<dyn BufRead + Send>>,
    line: Vec<u8>,
    finished: bool,
}

impl FileReader {
    /// The file at `path`, after its first `cursor` lines (a resumed copy).
    pub fn open(path: &Path, cursor: Option<Value>) -> Result<FileReader, String> {
        let input = read::open(path, Compression::Gzip, Arc::new(AtomicU64::new(0)))
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut reader = FileReader {
            path: path.to_path_buf(),
            lines: Lines::new(input),
            line: Vec::new(),
            finished: false,
        };
        let skip = cursor.and_then(|cursor| cursor.as_u64()).unwrap_or(0);
        while reader.lines.number() < skip {
            if reader.read_line()?.is_none() {
                return Err(format!(
                    "{} has fewer lines than the {skip} the resume file says were copied",
                    path.display()
                ));
            }
        }
        Ok(reader)
    }

    fn read_line(&mut self) -> Result<Option<Line>, String> {
        self.lines
            .next_line(&mut self.line)
            .map_err(|e| format!("cannot read {}: {e}", self.path.display()))
    }

    /// The next page of items, or None once the file is done. A line that is not an item
    /// stops the copy, naming the file and the line: an export's lines are all items.
    pub fn next_page(&mut self) -> Result<Option<ScanPage>, String> {
        if self.finished {
            return Ok(None);
        }
        let mut items = Vec::new();
        let mut bytes = 0;
        while items.len() < PAGE_ITEMS_MAX && bytes < PAGE_BYTES_MAX {
            let Some(line) = self.read_line()? else {
                self.finished = true;
                break;
            };
            let at = format!("{} line {}", self.path.display(), self.lines.number());
            if line == Line::TooLong {
                return Err(format!("{at}: the line is too long to hold an item"));
            }
            if self.line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            bytes += self.line.len();
            let item =
                dynamodb_json_line(&self.line).map_err(|reason| format!("{at}: {reason}"))?;
            items.push(serde_json::to_value(&item).map_err(|e| format!("{at}: {e}"))?);
        }
        let next = (!self.finished).then(|| Value::from(self.lines.number()));
        Ok(Some(ScanPage { items, next }))
    }
}
