//! Reading recordings (the format is `shoal_server::record::format`'s): one or more files,
//! line by line, so a recording of any size reads in bounded memory.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use shoal_server::record::format::{parse_line, Line};

/// Longest line read; a longer one (a request body near DynamoDB's 16 MiB cap is the most a
/// line holds) is skipped.
pub const LINE_BYTES_MAX: usize = 40 << 20;

/// Calls `each` with every line of the files, in order; lines that do not parse (a torn last
/// line) are skipped and counted.
pub fn each_line(paths: &[impl AsRef<Path>], mut each: impl FnMut(Line)) -> Result<u64, String> {
    let mut skipped = 0;
    for path in paths {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut buffer = Vec::new();
        loop {
            buffer.clear();
            let read = Read::take(&mut reader, LINE_BYTES_MAX as u64 + 1)
                .read_until(b'\n', &mut buffer)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            if read == 0 {
                break;
            }
            if buffer.len() > LINE_BYTES_MAX {
                // Skip the rest of the long line.
                skipped += 1;
                let mut rest = Vec::new();
                reader
                    .read_until(b'\n', &mut rest)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                continue;
            }
            match std::str::from_utf8(&buffer).ok().and_then(parse_line) {
                Some(line) => each(line),
                None if buffer.iter().all(u8::is_ascii_whitespace) => {}
                None => skipped += 1,
            }
        }
    }
    Ok(skipped)
}
