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

use kista_runtime::io::{FileOperation, FileReply, FileRequest, FileStatus};
use kista_runtime::Context;
use kista_signal::wire::SECTION_BYTES_MAX;
use kista_signal::BlockAddress;

use crate::protocol::{TableDefinitionBody, TableDefinitionConf};

const MAGIC: [u8; 4] = *b"KSCH";
const FORMAT_VERSION: u32 = 1;
/// Bytes of the header; with the trailer, the smallest file.
const HEADER_BYTES: usize = 24;

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
    #[error("it is {0} bytes long, shorter than any schema file")]
    Short(usize),
    #[error("it is not a schema file (no KSCH magic)")]
    NotASchemaFile,
    #[error("its format version {0} is not this program's ({FORMAT_VERSION})")]
    Version(u32),
    #[error("it fails its checksum (damaged or cut short)")]
    Checksum,
    #[error("table {table_id}'s definition does not decode: {reason}")]
    Definition { table_id: u32, reason: String },
    #[error("its table list is cut short")]
    Truncated,
}

/// The file a write of sequence number `sequence` goes to.
pub fn path_of(sequence: u64) -> String {
    format!("dict/schema.{}", sequence % 2)
}

/// The file's bytes for `tables` (sorted by the caller, if an order matters).
pub fn encode<'a>(
    sequence: u64,
    next_table_id: u32,
    tables: impl ExactSizeIterator<Item = (u32, u32, Option<u32>, &'a TableDefinitionBody)>,
) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&sequence.to_le_bytes());
    out.extend_from_slice(&next_table_id.to_le_bytes());
    out.extend_from_slice(&(tables.len() as u32).to_le_bytes());
    let mut body = Vec::new();
    for (table_id, version, index_of, definition) in tables {
        body.clear();
        definition.encode(&mut body);
        for word in [table_id, version, index_of.unwrap_or(0), body.len() as u32] {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.extend_from_slice(&body);
    }
    let checksum = crc32fast::hash(&out);
    out.extend_from_slice(&checksum.to_le_bytes());
    out
}

/// Reads a schema file's bytes back, checking everything.
pub fn decode(bytes: &[u8]) -> Result<SchemaImage, SchemaFileError> {
    if bytes.len() < HEADER_BYTES + 4 {
        return Err(SchemaFileError::Short(bytes.len()));
    }
    if bytes[..4] != MAGIC {
        return Err(SchemaFileError::NotASchemaFile);
    }
    let (content, trailer) = bytes.split_at(bytes.len() - 4);
    let mut input = Words(&content[4..]);
    let version = input.word()?;
    if version != FORMAT_VERSION {
        return Err(SchemaFileError::Version(version));
    }
    if crc32fast::hash(content).to_le_bytes() != trailer {
        return Err(SchemaFileError::Checksum);
    }
    let sequence = u64::from(input.word()?) | (u64::from(input.word()?) << 32);
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

/// What the file system is doing for the write in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Opening,
    /// Writing from this offset of the image.
    Writing(usize),
    Syncing,
    Closing,
}

/// Request ids: the step each answers.
const OPENING: u64 = 1 << 32;
const WRITING: u64 = 2 << 32;
const SYNCING: u64 = 3 << 32;
const CLOSING: u64 = 4 << 32;

/// A confirmation that may go only once the change it confirms is on disk.
pub(crate) type HeldConf = (BlockAddress, TableDefinitionConf);

/// The writes of the dictionary's file: one at a time, each of the whole dictionary.
#[derive(Default)]
pub(crate) struct SchemaWriter {
    /// The sequence number of the latest image handed to the disk.
    sequence: u64,
    step: Option<Step>,
    image: Vec<u8>,
    file: u32,
    /// Confirmations the write in flight makes durable.
    in_flight: Vec<HeldConf>,
    /// Confirmations of changes made since the write in flight began: the next write.
    next: Vec<HeldConf>,
    /// The dictionary changed since the write in flight began.
    dirty: bool,
}

impl SchemaWriter {
    /// Goes on from the file read at the node's start (`sequence` 0 for none).
    pub fn new(sequence: u64) -> Self {
        Self {
            sequence,
            ..Self::default()
        }
    }

    /// The dictionary changed: `conf` goes once a write holding the change is synced.
    /// Returns whether a write should start now (the caller hands [`SchemaWriter::start`]
    /// the image); otherwise the write under way is followed by another.
    pub fn changed(&mut self, conf: Option<HeldConf>) -> bool {
        self.next.extend(conf);
        self.dirty = true;
        self.step.is_none()
    }

    /// The sequence number the next image must carry.
    pub fn next_sequence(&self) -> u64 {
        self.sequence + 1
    }

    /// Starts writing `image` (of [`SchemaWriter::next_sequence`]).
    pub fn start(&mut self, ctx: &mut Context, image: Vec<u8>) -> Result<(), String> {
        self.sequence += 1;
        self.image = image;
        self.in_flight = std::mem::take(&mut self.next);
        self.dirty = false;
        self.step = Some(Step::Opening);
        let request = FileRequest::open_empty(OPENING);
        ctx.request_io(&request, path_of(self.sequence).as_bytes())
            .map_err(|_| "no section for the schema file's name".to_string())
    }

    /// The file system's answer. Returns whether the write is done (its confirmations
    /// sent) and another should start for changes made meanwhile.
    pub fn replied(&mut self, ctx: &mut Context, reply: FileReply) -> Result<bool, String> {
        if reply.status != FileStatus::Ok {
            return Err(format!(
                "the schema file {} of this data node failed: {:?}",
                path_of(self.sequence),
                reply.status
            ));
        }
        let step = match (self.step, reply.request_id) {
            (Some(Step::Opening), OPENING) => {
                self.file = reply.file;
                Step::Writing(0)
            }
            (Some(Step::Writing(offset)), WRITING) => {
                let written = offset + reply.length as usize;
                if written < self.image.len() {
                    Step::Writing(written)
                } else {
                    Step::Syncing
                }
            }
            (Some(Step::Syncing), SYNCING) => {
                for (receiver, conf) in self.in_flight.drain(..) {
                    ctx.send_typed(receiver, &conf);
                }
                Step::Closing
            }
            (Some(Step::Closing), CLOSING) => {
                self.step = None;
                self.image = Vec::new();
                return Ok(self.dirty);
            }
            (step, id) => unreachable!("schema file reply {id:#x} in step {step:?}"),
        };
        self.step = Some(step);
        self.request(ctx, step)?;
        Ok(false)
    }

    fn request(&mut self, ctx: &mut Context, step: Step) -> Result<(), String> {
        let (request_id, operation, data) = match step {
            Step::Writing(offset) => {
                let end = (offset + SECTION_BYTES_MAX).min(self.image.len());
                let write = FileOperation::Write {
                    offset: offset as u64,
                };
                (WRITING, write, &self.image[offset..end])
            }
            Step::Syncing => (SYNCING, FileOperation::Sync, &[][..]),
            Step::Closing => (CLOSING, FileOperation::Close, &[][..]),
            Step::Opening => unreachable!("a write opens its file in start"),
        };
        let request = FileRequest {
            request_id,
            file: self.file,
            operation,
        };
        ctx.request_io(&request, data)
            .map_err(|_| "no section for a schema file write".to_string())
    }
}

#[cfg(test)]
mod tests;
