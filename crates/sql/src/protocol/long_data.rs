//! Values a client sends ahead of an execute, a chunk at a time, with
//! `COM_STMT_SEND_LONG_DATA` (a BLOB parameter too large for one packet): held per
//! connection until the statement runs, and bounded together, for a client could
//! otherwise send gigabytes of chunks that are never executed.

use std::collections::{HashMap, HashSet};

use super::packet::COMMAND_BYTES_MAX;
use crate::error::SqlError;

/// Bytes of long data one connection may hold, over all its prepared statements: MySQL's
/// bound on one parameter's (`max_allowed_packet`).
pub const LONG_DATA_BYTES_MAX: usize = COMMAND_BYTES_MAX;

/// One connection's long data.
#[derive(Default)]
pub struct LongData {
    /// By statement id and parameter position.
    values: HashMap<(u32, usize), Vec<u8>>,
    bytes: usize,
    /// Statements sent more than the bound allows: their next execute is refused.
    overflowed: HashSet<u32>,
}

impl LongData {
    /// Appends `chunk` to parameter `parameter` of `statement`; past the bound the chunk
    /// is dropped and the statement's next execute refused (no answer goes to the
    /// command itself, which has none).
    pub fn append(&mut self, statement: u32, parameter: usize, chunk: &[u8]) {
        if self.overflowed.contains(&statement) {
            return;
        }
        if self.bytes + chunk.len() > LONG_DATA_BYTES_MAX {
            self.forget(statement);
            self.overflowed.insert(statement);
            return;
        }
        self.bytes += chunk.len();
        let value = self.values.entry((statement, parameter)).or_default();
        value.extend_from_slice(chunk);
    }

    /// Error 1153 if `statement` was sent more long data than the bound allows; its
    /// execute then runs with none (the next one may send again).
    pub fn check(&mut self, statement: u32) -> Result<(), SqlError> {
        // (every execute asks: no hashing while nothing is held)
        if !self.overflowed.is_empty() && self.overflowed.remove(&statement) {
            return Err(SqlError::new(
                1153,
                "08S01",
                format!(
                    "Parameter of prepared statement which is set through \
                     mysql_send_long_data() is longer than 'max_allowed_packet' bytes \
                     ({LONG_DATA_BYTES_MAX})"
                ),
            ));
        }
        Ok(())
    }

    /// The value sent for parameter `parameter` of `statement`, if one was.
    pub fn take(&mut self, statement: u32, parameter: usize) -> Option<Vec<u8>> {
        if self.values.is_empty() {
            return None;
        }
        let value = self.values.remove(&(statement, parameter))?;
        self.bytes -= value.len();
        Some(value)
    }

    /// Drops what was sent for `statement` (executed, reset or closed).
    pub fn forget(&mut self, statement: u32) {
        if self.values.is_empty() && self.overflowed.is_empty() {
            return;
        }
        let bytes = &mut self.bytes;
        self.values.retain(|&(id, _), value| {
            let kept = id != statement;
            if !kept {
                *bytes -= value.len();
            }
            kept
        });
        self.overflowed.remove(&statement);
    }

    /// Bytes held now.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_data_past_the_bound_is_dropped_and_the_execute_refused() {
        let mut long_data = LongData::default();
        let chunk = vec![7u8; 1 << 20];
        for _ in 0..LONG_DATA_BYTES_MAX / chunk.len() {
            long_data.append(1, 0, &chunk);
        }
        assert_eq!(long_data.bytes(), LONG_DATA_BYTES_MAX);
        long_data.append(2, 0, &chunk[..1]);
        assert_eq!(
            long_data.bytes(),
            LONG_DATA_BYTES_MAX,
            "the bound is per connection"
        );
        assert_eq!(long_data.check(2).unwrap_err().code, 1153);
        long_data.check(1).unwrap();
        assert_eq!(
            long_data.take(1, 0).map(|v| v.len()),
            Some(LONG_DATA_BYTES_MAX)
        );
        assert_eq!(long_data.bytes(), 0);
        long_data.append(2, 1, b"again");
        long_data.append(2, 3, b"more");
        long_data.forget(2);
        assert_eq!((long_data.bytes(), long_data.take(2, 1)), (0, None));
    }
}
