//! The dictionary's file: every table definition this node's dictionary holds, so that the
//! schema survives a restart of the whole cluster (NDB's schema file, `P0.SchemaLog`).
//!
//! The whole dictionary is written after every change, alternately to `dict/schema.0` and
//! `dict/schema.1`, and synced; the change is confirmed (so acknowledged to the client)
//! only then. A crash while one file is written leaves the other whole: a restart takes
//! the valid file with the higher sequence number. Changes that arrive while a write is
//! under way wait for the next, which holds them all.
//!
//! ```text
//! header    magic "KSCH", format version u32, sequence u64, next table id u32, tables u32
//! table     id u32, schema version u32, index of u32 (0: none), body length u32,
//!           the definition's body (as `TableDefinition` carries it)
//! trailer   crc32 u32 of everything before it
//! ```
//!
//! Nothing read back is trusted: a file that is short, of another format, or fails its
//! checksum is refused with the reason, and so is a definition that does not decode.

use kista_signal::BlockAddress;

use crate::protocol::{TableDefinitionBody, TableDefinitionConf};
use crate::twin_file::{SealError, TwinKind, TwinWriter};

/// The dictionary's twin files.
pub const SCHEMA_FILE: TwinKind = TwinKind {
    magic: *b"KSCH",
    format_version: 3,
    path: "dict/schema",
    request_tag: 0,
};

/// One table as the file keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct SavedTable {
    pub table_id: u32,
    pub version: u32,
    pub index_of: Option<u32>,
    pub definition: TableDefinitionBody,
}

/// A dictionary read back from its file.
#[derive(Clone, Debug, PartialEq)]
pub struct SchemaImage {
    pub sequence: u64,
    pub next_table_id: u32,
    pub tables: Vec<SavedTable>,
}

/// Why a schema file cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchemaFileError {
    #[error("{0}")]
    Sealed(#[from] SealError),
    #[error("table {table_id}'s definition does not decode: {reason}")]
    Definition { table_id: u32, reason: String },
    #[error("its table list is cut short")]
    Truncated,
}

/// The file a write of sequence number `sequence` goes to.
pub fn path_of(sequence: u64) -> String {
    SCHEMA_FILE.path_of(sequence)
}

/// The file's bytes for `tables` (sorted by the caller, if an order matters), each
/// definition as `TableDefinitionBody::encode` wrote it.
pub fn encode<'a>(
    sequence: u64,
    next_table_id: u32,
    tables: impl ExactSizeIterator<Item = (u32, u32, Option<u32>, &'a [u8])> + Clone,
) -> Vec<u8> {
    let bytes: usize = (tables.clone()).map(|(.., body)| 16 + body.len()).sum();
    SCHEMA_FILE.seal(sequence, bytes + 8, |out| {
        out.extend_from_slice(&next_table_id.to_le_bytes());
        out.extend_from_slice(&(tables.len() as u32).to_le_bytes());
        for (table_id, version, index_of, body) in tables {
            for word in [table_id, version, index_of.unwrap_or(0), body.len() as u32] {
                out.extend_from_slice(&word.to_le_bytes());
            }
            out.extend_from_slice(body);
        }
    })
}

/// Reads a schema file's bytes back, checking everything.
pub fn decode(bytes: &[u8]) -> Result<SchemaImage, SchemaFileError> {
    let (sequence, payload) = SCHEMA_FILE.unseal(bytes)?;
    let mut input = Words(payload);
    let next_table_id = input.word()?;
    let count = input.word()?;
    let mut tables = Vec::new();
    for _ in 0..count {
        let (table_id, version, index_of) = (input.word()?, input.word()?, input.word()?);
        let length = input.word()? as usize;
        let body = input.take(length)?;
        let definition =
            TableDefinitionBody::decode(body).map_err(|error| SchemaFileError::Definition {
                table_id,
                reason: error.to_string(),
            })?;
        tables.push(SavedTable {
            table_id,
            version,
            index_of: (index_of != 0).then_some(index_of),
            definition,
        });
    }
    if !input.0.is_empty() {
        return Err(SchemaFileError::Truncated);
    }
    Ok(SchemaImage {
        sequence,
        next_table_id,
        tables,
    })
}

/// Little-endian words read front first.
struct Words<'a>(&'a [u8]);

impl<'a> Words<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8], SchemaFileError> {
        let (taken, rest) = self
            .0
            .split_at_checked(count)
            .ok_or(SchemaFileError::Truncated)?;
        self.0 = rest;
        Ok(taken)
    }

    fn word(&mut self) -> Result<u32, SchemaFileError> {
        let bytes = self.take(4)?;
        Ok(u32::from_le_bytes(bytes.try_into().expect("4 bytes")))
    }
}

/// A confirmation that may go only once the change it confirms is on disk.
pub(crate) type HeldConf = (BlockAddress, TableDefinitionConf);

/// The writes of the dictionary's file.
pub(crate) type SchemaWriter = TwinWriter<HeldConf>;

#[cfg(test)]
mod tests;
