//! Limits every write obeys, whoever the writer is.

use crate::error::{Error, InputErrors, Result};
use crate::record::Record;

/// Refuses records whose JSON is over `limits.max_record_bytes`, whatever wrote
/// them (files, transcripts, the MCP server): every writer goes through
/// [`Store::add`], which calls this before anything is written.
pub(crate) fn check_record_sizes(records: &[Record], limit: usize) -> Result<()> {
    let mut errors = Vec::new();
    for record in records {
        let mut counter = ByteCounter(0);
        // Writing into a counter cannot fail; a failure would mean no size.
        if serde_json::to_writer(&mut counter, &record.source).is_err() {
            continue;
        }
        if counter.0 > limit {
            errors.push(crate::error::InputError::new(
                &crate::error::Origin::file(format!("record `{}`", record.id)),
                None,
                format!(
                    "record is {}, over the limit of {} (raise `limits.max_record_bytes` in the store's config.toml)",
                    crate::record::input::human_bytes(counter.0 as u64),
                    crate::record::input::human_bytes(limit as u64)
                ),
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Error::Input(InputErrors(errors)))
    }
}

/// Counts the bytes written to it.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
