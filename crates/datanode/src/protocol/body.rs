//! What travels in sections: operation bodies, rows, table definitions.

use kista_storage::codec::{
    read_filter, read_index_schema, read_table_schema, read_values, read_values_into, write_filter,
    write_index_schema, write_table_schema, write_values, CodecError, Reader, Writer,
};
use kista_storage::filter::Filter;
use kista_storage::partition::{
    IndexBound, IndexId, KeyChange, ScanRange, ScanVersions, UniqueChange,
};
use kista_storage::schema::{IndexSchema, TableSchema};
use kista_storage::types::Value;

use super::foreign_key::{read_key_events, write_key_changes, ForeignKey, KeyEvent};

fn invalid(what: &'static str, input: &Reader) -> CodecError {
    CodecError::Invalid {
        what,
        offset: input.offset(),
    }
}

pub(super) fn write_columns(writer: &mut Writer, columns: &[u16]) {
    writer.u32(columns.len() as u32);
    for &column in columns {
        writer.u16(column);
    }
}

pub(super) fn read_columns(input: &mut Reader) -> Result<Vec<u16>, CodecError> {
    let count = input.u32()? as usize;
    if count.saturating_mul(2) > input.remaining() {
        return Err(invalid("column count", input));
    }
    (0..count).map(|_| input.u16()).collect()
}

/// A key operation's section: the encoded primary key, then the columns and values.
///
/// - insert / write: `columns` empty, `values` every column in table order;
/// - update: `columns` and `values` pair up (the columns to change);
/// - read: `columns` is the projection (empty: every column), `values` empty;
/// - delete: both empty.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyBody {
    pub key: Vec<u8>,
    pub columns: Vec<u16>,
    pub values: Vec<Value>,
}

impl KeyBody {
    pub fn encode(&self, out: &mut Vec<u8>) {
        Self::write(&self.key, &self.columns, &self.values, out);
    }

    /// Appends a body made of borrowed parts, as `encode` would write it.
    pub fn write(key: &[u8], columns: &[u16], values: &[Value], out: &mut Vec<u8>) {
        let written: Result<(), std::convert::Infallible> = Self::write_keyed(
            |out| {
                out.extend_from_slice(key);
                Ok(())
            },
            columns,
            values,
            out,
        );
        let Ok(()) = written;
    }

    /// Appends a body whose key `write_key` appends in place, so the key needs no buffer
    /// of its own; on its error `out` is as it was.
    #[inline]
    pub fn write_keyed<E>(
        write_key: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
        columns: &[u16],
        values: &[Value],
        out: &mut Vec<u8>,
    ) -> Result<(), E> {
        Self::write_key_and_columns(write_key, columns, out)?;
        write_values(&mut Writer(out), values);
        Ok(())
    }

    /// [`KeyBody::write_keyed`] of a whole row whose values are encoded already (as
    /// `codec::write_values` writes them): the same bytes.
    #[inline]
    pub fn write_keyed_encoded<E>(
        write_key: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
        encoded_values: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), E> {
        Self::write_key_and_columns(write_key, &[], out)?;
        out.extend_from_slice(encoded_values);
        Ok(())
    }

    #[inline]
    fn write_key_and_columns<E>(
        write_key: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
        columns: &[u16],
        out: &mut Vec<u8>,
    ) -> Result<(), E> {
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        if let Err(error) = write_key(out) {
            out.truncate(start);
            return Err(error);
        }
        let key_len = (out.len() - start - 4) as u32;
        out[start..start + 4].copy_from_slice(&key_len.to_le_bytes());
        write_columns(&mut Writer(out), columns);
        Ok(())
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let mut body = Self::default();
        body.decode_into(bytes)?;
        Ok(body)
    }

    /// Decodes `bytes` into this body, reusing its buffers: a data manager keeps one for
    /// the operations it runs, so decoding one allocates only for its text values.
    pub fn decode_into(&mut self, bytes: &[u8]) -> Result<(), CodecError> {
        let body = KeyBodyRef::parse(bytes)?;
        self.key.clear();
        self.key.extend_from_slice(body.key);
        self.columns.clear();
        self.columns.extend(body.columns());
        let mut input = Reader::new(body.values);
        read_values_into(&mut input, &mut self.values)?;
        input.finish()
    }
}

/// Several whole-row writes (inserts or upserts) of one transaction to one partition, in
/// one section: for each, the client's op index and its `KeyBody`, length-prefixed. One
/// signal then carries a load's rows from the client through the coordinator along the
/// replica chain, where each would otherwise be a signal of its own at every hop.
pub struct KeyBatchBody;

/// Operations one `KeyBatchBody` carries at most: a batch runs as one signal on the data
/// manager, which holds its thread for that long.
pub const KEY_BATCH_OPERATIONS_MAX: usize = 64;
/// Body bytes past which a client starts a new batch (one row may take it past).
pub const KEY_BATCH_FULL_BYTES: usize = 16 * 1024;

impl KeyBatchBody {
    /// Where the first operation starts, after the batch's mark.
    pub const FIRST_OFFSET: usize = 4;
    /// Opens a batch with a mark that reads as a key of 4 GiB: a node of an earlier build
    /// that takes the section for a `KeyBody` refuses it instead of misreading it.
    const MARK: u32 = u32::MAX;

    /// Starts an empty batch in `out`.
    pub fn start(out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&Self::MARK.to_le_bytes());
    }

    /// Appends one operation's encoded `KeyBody`.
    pub fn push(out: &mut Vec<u8>, op_index: u32, body: &[u8]) {
        out.extend_from_slice(&op_index.to_le_bytes());
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(body);
    }

    /// The operation at byte `offset` of `bytes`: its op index, its `KeyBody` bytes and the
    /// offset of the next one; `None` at the end.
    pub fn entry_at(bytes: &[u8], offset: usize) -> Option<Result<KeyBatchEntry<'_>, CodecError>> {
        let rest = bytes.get(offset..).filter(|rest| !rest.is_empty())?;
        let split = || {
            let (op_index, rest) = rest.split_first_chunk::<4>()?;
            let (len, rest) = rest.split_first_chunk::<4>()?;
            let body = rest.get(..u32::from_le_bytes(*len) as usize)?;
            Some(KeyBatchEntry {
                op_index: u32::from_le_bytes(*op_index),
                body,
                next_offset: offset + 8 + body.len(),
            })
        };
        Some(split().ok_or(CodecError::Invalid {
            what: "key batch entry",
            offset,
        }))
    }

    /// Each operation of `bytes` in order, with the key its body holds; a missing mark,
    /// an operation cut short or a body without a readable key ends them with an error.
    pub fn operations(
        bytes: &[u8],
    ) -> impl Iterator<Item = Result<KeyBatchOperation<'_>, CodecError>> {
        let marked = bytes.get(..Self::FIRST_OFFSET) == Some(&Self::MARK.to_le_bytes()[..]);
        let mark_missing = CodecError::Invalid {
            what: "key batch mark",
            offset: 0,
        };
        let mut next = Some(marked.then_some(Self::FIRST_OFFSET).ok_or(mark_missing));
        // `next` is `None` once an error was given or the last operation read.
        std::iter::from_fn(move || {
            let offset = match next.take()? {
                Ok(offset) => offset,
                Err(error) => return Some(Err(error)),
            };
            let read = Self::entry_at(bytes, offset)?.and_then(|entry| {
                let key = KeyBodyRef::parse(entry.body)?.key;
                next = Some(Ok(entry.next_offset));
                Ok(KeyBatchOperation {
                    op_index: entry.op_index,
                    body: entry.body,
                    key,
                })
            });
            Some(read)
        })
    }

    /// How many operations `bytes` holds, each with a readable key; an error for a
    /// malformed batch.
    pub fn count(bytes: &[u8]) -> Result<usize, CodecError> {
        Self::operations(bytes).try_fold(0, |count, operation| operation.map(|_| count + 1))
    }
}

/// One operation of a `KeyBatchBody`, read with its key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeyBatchOperation<'a> {
    pub op_index: u32,
    /// Its `KeyBody`.
    pub body: &'a [u8],
    pub key: &'a [u8],
}

/// One operation of a `KeyBatchBody`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeyBatchEntry<'a> {
    pub op_index: u32,
    pub body: &'a [u8],
    pub next_offset: usize,
}

/// A `KeyBody` read in place: the key and the columns borrowed from the section, the values
/// still encoded. A committed read needs nothing more, so it copies and allocates nothing.
#[derive(Clone, Copy, Debug)]
pub struct KeyBodyRef<'a> {
    pub key: &'a [u8],
    /// The columns as little-endian `u16`s.
    columns: &'a [u8],
    values: &'a [u8],
}

impl<'a> KeyBodyRef<'a> {
    /// Every key operation's body passes here, so the well-formed case is a few slice
    /// splits; only a malformed body goes through the `Reader` that explains the fault.
    #[inline]
    pub fn parse(bytes: &'a [u8]) -> Result<Self, CodecError> {
        Self::split(bytes).map_or_else(|| Self::parse_explaining(bytes), Ok)
    }

    #[inline]
    fn split(bytes: &'a [u8]) -> Option<Self> {
        let (key_len, rest) = bytes.split_first_chunk::<4>()?;
        let (key, rest) = rest.split_at_checked(u32::from_le_bytes(*key_len) as usize)?;
        let (count, rest) = rest.split_first_chunk::<4>()?;
        let column_bytes = (u32::from_le_bytes(*count) as usize).checked_mul(2)?;
        let (columns, values) = rest.split_at_checked(column_bytes)?;
        Some(Self {
            key,
            columns,
            values,
        })
    }

    /// The same parse through a `Reader`, which names the fault in a body
    /// [`KeyBodyRef::parse`] could not split.
    #[cold]
    fn parse_explaining(bytes: &'a [u8]) -> Result<Self, CodecError> {
        let mut input = Reader::new(bytes);
        let key = input.bytes()?;
        let count = input.u32()? as usize;
        if count.saturating_mul(2) > input.remaining() {
            return Err(invalid("column count", &input));
        }
        let columns = input.take(2 * count)?;
        let values = input.take(input.remaining())?;
        Ok(Self {
            key,
            columns,
            values,
        })
    }

    /// The projection of a read, the changed columns of an update.
    pub fn columns(&self) -> impl ExactSizeIterator<Item = u16> + 'a {
        self.columns
            .chunks_exact(2)
            .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
    }

    /// The values as the client encoded them (`codec::write_values`).
    pub fn encoded_values(&self) -> &'a [u8] {
        self.values
    }

    /// Decodes the values (a read's are ignored: it has none).
    pub fn values(&self) -> Result<Vec<Value>, CodecError> {
        let mut input = Reader::new(self.values);
        let values = read_values(&mut input)?;
        input.finish()?;
        Ok(values)
    }
}

/// A row read for a client: the projected columns' values.
#[derive(Clone, Debug, PartialEq)]
pub struct RowBody {
    pub values: Vec<Value>,
}

impl RowBody {
    pub fn encode(values: &[Value], out: &mut Vec<u8>) {
        write_values(&mut Writer(out), values);
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let mut input = Reader::new(bytes);
        let values = read_values(&mut input)?;
        input.finish()?;
        Ok(Self { values })
    }
}

/// The section of a [`ReplaceTableRequest`](super::ReplaceTableRequest): for each of the
/// replacement's columns, the replaced table's column it holds (`None`: a new column), so
/// the replaced table's foreign keys move to the replacement's columns.
pub struct ColumnSourcesBody;

impl ColumnSourcesBody {
    /// How a new column holding no old one is written.
    const NO_SOURCE: u16 = u16::MAX;

    pub fn encode(sources: &[Option<u16>], out: &mut Vec<u8>) {
        let mut writer = Writer(out);
        writer.u32(sources.len() as u32);
        for source in sources {
            writer.u16(source.unwrap_or(Self::NO_SOURCE));
        }
    }

    /// The sources of a replacement of `columns` columns (bounded by them).
    pub fn decode(bytes: &[u8], columns: usize) -> Result<Vec<Option<u16>>, String> {
        let mut input = Reader::new(bytes);
        let count = input.u32().map_err(|error| error.to_string())? as usize;
        if count != columns {
            return Err(format!("{count} column sources for {columns} columns"));
        }
        let sources = (0..count)
            .map(|_| (input.u16()).map(|source| (source != Self::NO_SOURCE).then_some(source)))
            .collect::<Result<Vec<_>, _>>();
        let sources = sources.map_err(|error| error.to_string())?;
        input.finish().map_err(|error| error.to_string())?;
        Ok(sources)
    }
}

/// A table as the dictionary publishes it: schema and secondary indexes.
#[derive(Clone, Debug, PartialEq)]
pub struct TableDefinitionBody {
    pub schema: TableSchema,
    /// (index id, schema).
    pub indexes: Vec<(u32, IndexSchema)>,
    /// (unique index id, id of the table holding its entries). The dictionary fills it in;
    /// a client's request leaves it empty.
    pub index_tables: Vec<(u32, u32)>,
    /// Unique indexes being built: writes keep their entries, but they hold no entry for
    /// some rows yet, so nothing reads through them (`IndexBuiltRequest`).
    pub building: Vec<u32>,
    /// Foreign keys of which this table is the child, the parent or both (the dictionary
    /// fills it in; a client's request leaves it empty).
    pub foreign_keys: Vec<ForeignKey>,
}

impl TableDefinitionBody {
    /// A definition as a client asks for it (the dictionary assigns the index tables).
    pub fn new(schema: TableSchema, indexes: Vec<(u32, IndexSchema)>) -> Self {
        Self {
            schema,
            indexes,
            index_tables: Vec::new(),
            building: Vec::new(),
            foreign_keys: Vec::new(),
        }
    }

    /// Whether index `index_id` is being built (see [`TableDefinitionBody::building`]).
    pub fn is_building(&self, index_id: u32) -> bool {
        self.building.contains(&index_id)
    }

    /// The number the table's next index or foreign key takes (table `table_id` numbers
    /// both from one sequence): one above the highest it has.
    pub fn next_number(&self, table_id: u32) -> u32 {
        let indexes = self.indexes.iter().map(|&(id, _)| id);
        let foreign_keys = (self.foreign_keys.iter())
            .filter(|key| key.child_table == table_id)
            .map(|key| key.number);
        indexes
            .chain(foreign_keys)
            .max()
            .map_or(1, |highest| highest + 1)
    }

    /// The table holding the entries of unique index `index_id`.
    pub fn index_table(&self, index_id: u32) -> Option<u32> {
        self.index_tables
            .iter()
            .find(|&&(index, _)| index == index_id)
            .map(|&(_, table)| table)
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut writer = Writer(out);
        write_table_schema(&mut writer, &self.schema);
        writer.u32(self.indexes.len() as u32);
        for (id, index) in &self.indexes {
            writer.u32(*id);
            write_index_schema(&mut writer, index);
        }
        writer.u32(self.index_tables.len() as u32);
        for &(index, table) in &self.index_tables {
            writer.u32(index);
            writer.u32(table);
        }
        // Only while an index is built or a foreign key is declared: a definition without
        // either is read by earlier builds.
        if !self.building.is_empty() || !self.foreign_keys.is_empty() {
            writer.u32(self.building.len() as u32);
            for &index in &self.building {
                writer.u32(index);
            }
        }
        if !self.foreign_keys.is_empty() {
            writer.u32(self.foreign_keys.len() as u32);
            for foreign_key in &self.foreign_keys {
                foreign_key.encode(&mut writer);
            }
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let mut input = Reader::new(bytes);
        let schema = read_table_schema(&mut input)?;
        let count = input.u32()? as usize;
        if count.saturating_mul(10) > input.remaining() {
            return Err(invalid("index count", &input));
        }
        let mut indexes = Vec::with_capacity(count);
        for _ in 0..count {
            let id = input.u32()?;
            indexes.push((id, read_index_schema(&mut input)?));
        }
        let count = input.u32()? as usize;
        if count.saturating_mul(8) > input.remaining() {
            return Err(invalid("index table count", &input));
        }
        let index_tables = (0..count)
            .map(|_| Ok((input.u32()?, input.u32()?)))
            .collect::<Result<_, CodecError>>()?;
        let building = if input.remaining() == 0 {
            Vec::new()
        } else {
            let count = input.u32()? as usize;
            if count.saturating_mul(4) > input.remaining() {
                return Err(invalid("building index count", &input));
            }
            (0..count).map(|_| input.u32()).collect::<Result<_, _>>()?
        };
        let foreign_keys = if input.remaining() == 0 {
            Vec::new()
        } else {
            let count = input.u32()? as usize;
            if count.saturating_mul(30) > input.remaining() {
                return Err(invalid("foreign key count", &input));
            }
            (0..count)
                .map(|_| ForeignKey::decode(&mut input))
                .collect::<Result<_, _>>()?
        };
        input.finish()?;
        Ok(Self {
            schema,
            indexes,
            index_tables,
            building,
            foreign_keys,
        })
    }
}

/// One operation on a unique index's table that a write needs: delete the entry of the
/// row's old key, or insert the entry of its new one. `body` is the operation's `KeyBody`.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexUpkeep {
    pub index_id: u32,
    pub insert: bool,
    pub body: Vec<u8>,
}

/// The index-table operations of a write and the foreign-key events it reported, from the
/// replica that ran it last to the coordinator in `PrepareConf`'s section.
pub struct IndexUpkeepBody;

/// What a write needs from its coordinator (see [`IndexUpkeepBody`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WriteUpkeep {
    pub indexes: Vec<IndexUpkeep>,
    pub keys: Vec<KeyEvent>,
}

impl IndexUpkeepBody {
    /// Writes the operations `changes` call for: per change, a delete of the old key's entry
    /// and an insert of the new key's (the index columns, then the row's primary key); then
    /// the foreign-key events, when there are any.
    pub fn encode(changes: &[UniqueChange], key_changes: &[KeyChange], out: &mut Vec<u8>) {
        let count = changes
            .iter()
            .map(|change| {
                usize::from(change.removed.is_some()) + usize::from(change.added.is_some())
            })
            .sum::<usize>();
        Writer(out).u32(count as u32);
        let mut body = Vec::new();
        let mut push = |index: IndexId, insert: bool, key: &[u8], values: &[Value]| {
            body.clear();
            KeyBody::write(key, &[], values, &mut body);
            let mut writer = Writer(out);
            writer.u32(index.0);
            writer.u8(u8::from(insert));
            writer.bytes(&body);
        };
        for change in changes {
            if let Some(key) = &change.removed {
                push(change.index, false, key, &[]);
            }
            if let Some((key, values)) = &change.added {
                let mut row = values.clone();
                row.push(Value::Bytes(change.primary_key.clone()));
                push(change.index, true, key, &row);
            }
        }
        if !key_changes.is_empty() {
            write_key_changes(&mut Writer(out), key_changes);
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<WriteUpkeep, CodecError> {
        let mut input = Reader::new(bytes);
        let count = input.u32()? as usize;
        // Each entry takes at least its index id, its kind and its body's length.
        if count.saturating_mul(9) > input.remaining() {
            return Err(invalid("index upkeep count", &input));
        }
        let mut upkeep = Vec::with_capacity(count);
        for _ in 0..count {
            let index_id = input.u32()?;
            let insert = match input.u8()? {
                0 => false,
                1 => true,
                _ => return Err(invalid("index upkeep kind", &input)),
            };
            let body = input.bytes()?.to_vec();
            upkeep.push(IndexUpkeep {
                index_id,
                insert,
                body,
            });
        }
        let keys = if input.remaining() == 0 {
            Vec::new()
        } else {
            read_key_events(&mut input)?
        };
        input.finish()?;
        Ok(WriteUpkeep {
            indexes: upkeep,
            keys,
        })
    }
}

/// A scan's section: what to scan, which rows to keep, which columns to return (empty:
/// every column).
#[derive(Clone, Debug, PartialEq)]
pub struct ScanBody {
    pub range: ScanRange,
    pub filter: Option<Filter>,
    pub columns: Vec<u16>,
    /// Committed rows (clients' scans), or every version's anchor (a coordinator's search
    /// for a foreign key's children).
    pub versions: ScanVersions,
}

impl ScanBody {
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut writer = Writer(out);
        match &self.range {
            ScanRange::Full => writer.u8(0),
            ScanRange::Index {
                index,
                lower,
                upper,
                descending,
            } => {
                writer.u8(1);
                writer.u32(index.0);
                writer.u8(u8::from(*descending));
                for bound in [lower, upper] {
                    match bound {
                        None => writer.u8(0),
                        Some(bound) => {
                            writer.u8(if bound.inclusive { 2 } else { 1 });
                            write_values(&mut writer, &bound.values);
                        }
                    }
                }
            }
        }
        match &self.filter {
            None => writer.u8(0),
            Some(filter) => {
                writer.u8(1);
                write_filter(&mut writer, filter);
            }
        }
        write_columns(&mut writer, &self.columns);
        // Only when not the default, which is all earlier builds know.
        if self.versions == ScanVersions::AnyVersion {
            writer.u8(1);
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let mut input = Reader::new(bytes);
        let range = match input.u8()? {
            0 => ScanRange::Full,
            1 => {
                let index = IndexId(input.u32()?);
                let descending = match input.u8()? {
                    0 => false,
                    1 => true,
                    _ => return Err(invalid("scan direction", &input)),
                };
                let mut bound = || -> Result<Option<IndexBound>, CodecError> {
                    let inclusive = match input.u8()? {
                        0 => return Ok(None),
                        1 => false,
                        2 => true,
                        _ => return Err(invalid("range bound", &input)),
                    };
                    let values = read_values(&mut input)?;
                    Ok(Some(IndexBound { values, inclusive }))
                };
                let lower = bound()?;
                let upper = bound()?;
                ScanRange::Index {
                    index,
                    lower,
                    upper,
                    descending,
                }
            }
            _ => return Err(invalid("scan range", &input)),
        };
        let filter = match input.u8()? {
            0 => None,
            1 => Some(read_filter(&mut input)?),
            _ => return Err(invalid("filter presence", &input)),
        };
        let columns = read_columns(&mut input)?;
        let versions = match input.remaining() {
            0 => ScanVersions::Committed,
            _ => match input.u8()? {
                1 => ScanVersions::AnyVersion,
                tag => return Err(input.unknown("scan versions", tag)),
            },
        };
        input.finish()?;
        Ok(Self {
            range,
            filter,
            columns,
            versions,
        })
    }
}

/// A batch of scanned rows: a count, then each row's projected values.
pub struct RowsBody;

impl RowsBody {
    /// Starts an empty batch in `out`.
    pub fn start(out: &mut Vec<u8>) {
        out.clear();
        Writer(out).u32(0);
    }

    /// Appends one row and counts it.
    pub fn push(out: &mut Vec<u8>, values: &[Value]) {
        debug_assert!(out.len() >= 4, "RowsBody::start comes first");
        write_values(&mut Writer(out), values);
        let count = u32::from_le_bytes([out[0], out[1], out[2], out[3]]) + 1;
        out[..4].copy_from_slice(&count.to_le_bytes());
    }

    pub fn decode(bytes: &[u8]) -> Result<Vec<Vec<Value>>, CodecError> {
        let mut input = Reader::new(bytes);
        let count = input.u32()? as usize;
        // Each row takes at least its own 4-byte value count.
        if count.saturating_mul(4) > input.remaining() {
            return Err(invalid("row count", &input));
        }
        let rows = (0..count)
            .map(|_| read_values(&mut input))
            .collect::<Result<Vec<_>, _>>()?;
        input.finish()?;
        Ok(rows)
    }
}

/// What a copy to a restarting replica carries: a row as its source holds it, or a key
/// its source deleted, each with the GCI that wrote or deleted it.
#[derive(Clone, Debug, PartialEq)]
pub enum CopiedChange {
    Row { gci: u64, values: Vec<Value> },
    Deleted { gci: u64, key: Vec<u8> },
}

/// A batch of a partition's copy: a count, then per change a kind (0 row, 1 deleted), its
/// GCI and the row's values or the deleted key.
pub struct CopyBatchBody;

impl CopyBatchBody {
    /// Starts an empty batch in `out`.
    pub fn start(out: &mut Vec<u8>) {
        RowsBody::start(out);
    }

    pub fn push_row(out: &mut Vec<u8>, gci: u64, values: &[Value]) {
        let mut writer = Writer(out);
        writer.u8(0);
        writer.u64(gci);
        write_values(&mut writer, values);
        Self::count_one(out);
    }

    pub fn push_deleted(out: &mut Vec<u8>, gci: u64, key: &[u8]) {
        let mut writer = Writer(out);
        writer.u8(1);
        writer.u64(gci);
        writer.bytes(key);
        Self::count_one(out);
    }

    fn count_one(out: &mut [u8]) {
        let count = u32::from_le_bytes([out[0], out[1], out[2], out[3]]) + 1;
        out[..4].copy_from_slice(&count.to_le_bytes());
    }

    pub fn decode(bytes: &[u8]) -> Result<Vec<CopiedChange>, CodecError> {
        let mut input = Reader::new(bytes);
        let count = input.u32()? as usize;
        // Each change takes at least its kind, its GCI and a 4-byte count or length.
        if count.saturating_mul(13) > input.remaining() {
            return Err(invalid("change count", &input));
        }
        let changes = (0..count)
            .map(|_| {
                let kind = input.u8()?;
                let gci = input.u64()?;
                match kind {
                    0 => Ok(CopiedChange::Row {
                        gci,
                        values: read_values(&mut input)?,
                    }),
                    1 => Ok(CopiedChange::Deleted {
                        gci,
                        key: input.bytes()?.to_vec(),
                    }),
                    _ => Err(invalid("copied change kind", &input)),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        input.finish()?;
        Ok(changes)
    }
}

/// Load levels for read routing: (executor address word, level) pairs.
pub struct LoadLevelsBody;

impl LoadLevelsBody {
    pub fn encode(levels: &[(kista_signal::BlockAddress, u8)], out: &mut Vec<u8>) {
        let mut writer = Writer(out);
        for (executor, level) in levels {
            writer.u32(executor.to_word());
            writer.u32(u32::from(*level));
        }
    }

    /// At most `entries` pairs; a trailing partial pair is ignored.
    pub fn decode(bytes: &[u8], entries: usize) -> Vec<(kista_signal::BlockAddress, u8)> {
        bytes
            .chunks_exact(8)
            .take(entries)
            .map(|pair| {
                let word = |at: usize| {
                    u32::from_le_bytes([pair[at], pair[at + 1], pair[at + 2], pair[at + 3]])
                };
                let level = word(4).min(u32::from(u8::MAX)) as u8;
                (kista_signal::BlockAddress::from_word(word(0)), level)
            })
            .collect()
    }
}

/// What an `ldm` holds of a transaction whose coordinator failed, for the takeover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrphanedPart {
    pub transaction: u64,
    pub table_id: u32,
    pub partition: u32,
    /// The partition committed it (so the coordinator had decided to commit).
    pub committed: bool,
    /// The global checkpoint its commit was stamped with (0 when not committed here): the
    /// takeover commits it everywhere with the same one.
    pub gci: u64,
}

/// A `TakeoverReport`'s entries, 28 bytes each.
pub struct TakeoverReportBody;

impl TakeoverReportBody {
    pub const ENTRY_BYTES: usize = 28;

    pub fn encode(parts: &[OrphanedPart], out: &mut Vec<u8>) {
        let mut writer = Writer(out);
        for part in parts {
            writer.u64(part.transaction);
            writer.u32(part.table_id);
            writer.u32(part.partition);
            writer.u32(u32::from(part.committed));
            writer.u64(part.gci);
        }
    }

    /// At most `entries` entries; a trailing partial one is ignored.
    pub fn decode(bytes: &[u8], entries: usize) -> Vec<OrphanedPart> {
        bytes
            .chunks_exact(Self::ENTRY_BYTES)
            .take(entries)
            .map(|entry| {
                let word = |at: usize| {
                    u32::from_le_bytes([entry[at], entry[at + 1], entry[at + 2], entry[at + 3]])
                };
                OrphanedPart {
                    transaction: u64::from(word(0)) | u64::from(word(4)) << 32,
                    table_id: word(8),
                    partition: word(12),
                    committed: word(16) != 0,
                    gci: u64::from(word(20)) | u64::from(word(24)) << 32,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ReferenceAction, PRIMARY_KEY};
    use proptest::prelude::*;

    #[test]
    fn a_key_batch_reads_back_its_operations_in_order_and_refuses_a_cut_one() {
        let bodies: Vec<Vec<u8>> = (0..3)
            .map(|i| {
                let mut body = Vec::new();
                KeyBody::write(&[i], &[], &[Value::Int(i64::from(i))], &mut body);
                body
            })
            .collect();
        let mut batch = Vec::new();
        KeyBatchBody::start(&mut batch);
        for (i, body) in bodies.iter().enumerate() {
            KeyBatchBody::push(&mut batch, 10 + 2 * i as u32, body);
        }
        assert!(
            KeyBodyRef::parse(&batch).is_err(),
            "not a KeyBody to an earlier build"
        );
        let (mut read, mut ends) = (Vec::new(), vec![KeyBatchBody::FIRST_OFFSET]);
        let mut offset = KeyBatchBody::FIRST_OFFSET;
        while let Some(entry) = KeyBatchBody::entry_at(&batch, offset) {
            let entry = entry.unwrap();
            read.push((entry.op_index, entry.body.to_vec()));
            offset = entry.next_offset;
            ends.push(offset);
        }
        let expected: Vec<(u32, Vec<u8>)> = (10..).step_by(2).zip(bodies).collect();
        assert_eq!(read, expected);
        assert_eq!(KeyBatchBody::count(&batch), Ok(3));
        assert!(KeyBatchBody::count(&[]).is_err(), "no mark");
        for cut in (0..batch.len()).filter(|cut| !ends.contains(cut)) {
            assert!(KeyBatchBody::count(&batch[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn copied_rows_and_deleted_keys_read_back_as_written() {
        let mut batch = Vec::new();
        CopyBatchBody::start(&mut batch);
        CopyBatchBody::push_row(&mut batch, 7, &[Value::Int(1), Value::Null]);
        CopyBatchBody::push_deleted(&mut batch, 9, b"key");
        assert_eq!(
            CopyBatchBody::decode(&batch).unwrap(),
            [
                CopiedChange::Row {
                    gci: 7,
                    values: vec![Value::Int(1), Value::Null]
                },
                CopiedChange::Deleted {
                    gci: 9,
                    key: b"key".to_vec()
                },
            ]
        );
        for cut in 0..batch.len() {
            assert!(
                CopyBatchBody::decode(&batch[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        batch[4] = 2;
        assert!(CopyBatchBody::decode(&batch).is_err(), "an unknown kind");
    }

    #[test]
    fn takeover_entries_read_back_as_written() {
        let parts = [
            OrphanedPart {
                transaction: 0x0200_0000_0000_0007,
                table_id: 3,
                partition: 9,
                committed: true,
                gci: 0x1_0000_0002,
            },
            OrphanedPart {
                transaction: 5,
                table_id: 1,
                partition: 0,
                committed: false,
                gci: 0,
            },
        ];
        let mut bytes = Vec::new();
        TakeoverReportBody::encode(&parts, &mut bytes);
        assert_eq!(bytes.len(), 2 * TakeoverReportBody::ENTRY_BYTES);
        assert_eq!(TakeoverReportBody::decode(&bytes, 2), parts);
        assert_eq!(TakeoverReportBody::decode(&bytes[..40], 2), parts[..1]);
    }

    #[test]
    fn a_definition_lists_the_indexes_being_built_only_while_there_are_some() {
        use kista_storage::schema::{Column, IndexKind, TableSchema};
        use kista_storage::types::ColumnType;
        let schema = TableSchema {
            extra_metadata: Vec::new(),
            name: "db/t".into(),
            columns: vec![Column::new("id", ColumnType::signed(4))],
            primary_key: vec![0],
        };
        let index = IndexSchema {
            name: "u".into(),
            kind: IndexKind::Unique,
            columns: vec![0],
        };
        let mut definition = TableDefinitionBody::new(schema, vec![(1, index)]);
        definition.index_tables.push((1, 9));
        let mut built = Vec::new();
        definition.encode(&mut built);
        definition.building.push(1);
        let mut building = Vec::new();
        definition.encode(&mut building);
        assert_eq!(
            building.len(),
            built.len() + 8,
            "a count and an id, after the rest"
        );
        assert_eq!(TableDefinitionBody::decode(&building).unwrap(), definition);
        assert!(TableDefinitionBody::decode(&built)
            .unwrap()
            .building
            .is_empty());
        for cut in built.len() + 1..building.len() {
            assert!(
                TableDefinitionBody::decode(&building[..cut]).is_err(),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn foreign_keys_key_events_and_any_version_scans_read_back_as_written() {
        use kista_storage::partition::WatchSide;
        use kista_storage::schema::{Column, TableSchema};
        use kista_storage::types::ColumnType;
        let schema = TableSchema {
            extra_metadata: Vec::new(),
            name: "db/child".into(),
            columns: vec![Column::new("id", ColumnType::signed(4))],
            primary_key: vec![0],
        };
        let mut definition = TableDefinitionBody::new(schema, Vec::new());
        definition.foreign_keys.push(ForeignKey {
            name: "fk".into(),
            child_table: 3,
            number: 2,
            child_columns: vec![1, 2],
            child_index: 1,
            parent_table: 4,
            parent_index: PRIMARY_KEY,
            parent_columns: vec![0, 1],
            on_delete: ReferenceAction::Cascade,
            on_update: ReferenceAction::NoAction,
        });
        let mut bytes = Vec::new();
        definition.encode(&mut bytes);
        assert_eq!(TableDefinitionBody::decode(&bytes).unwrap(), definition);
        assert_eq!(definition.next_number(3), 3, "after the key's number");

        let change = KeyChange {
            id: definition.foreign_keys[0].watch_id(),
            side: WatchSide::Referenced,
            key: vec![1, 2],
            values: vec![Value::Int(7)],
            primary_key: vec![9],
            new_values: Some(vec![Value::Int(8)]),
        };
        let mut upkeep = Vec::new();
        IndexUpkeepBody::encode(&[], std::slice::from_ref(&change), &mut upkeep);
        let decoded = IndexUpkeepBody::decode(&upkeep).unwrap();
        assert!(decoded.indexes.is_empty());
        assert_eq!(
            decoded.keys,
            vec![KeyEvent {
                watch_id: change.id,
                side: change.side,
                key: change.key,
                values: change.values,
                primary_key: change.primary_key,
                new_values: change.new_values,
            }]
        );

        let mut scan = ScanBody {
            range: ScanRange::Full,
            filter: None,
            columns: vec![0],
            versions: ScanVersions::Committed,
        };
        let mut committed = Vec::new();
        scan.encode(&mut committed);
        scan.versions = ScanVersions::AnyVersion;
        let mut any = Vec::new();
        scan.encode(&mut any);
        assert_eq!(
            any.len(),
            committed.len() + 1,
            "earlier builds read the default"
        );
        assert_eq!(ScanBody::decode(&any).unwrap(), scan);
    }

    fn parts(body: KeyBodyRef) -> (Vec<u8>, Vec<u16>) {
        (body.key.to_vec(), body.columns().collect())
    }

    proptest! {
        #[test]
        fn a_key_body_reads_back_as_it_was_written(
            key in proptest::collection::vec(any::<u8>(), 0..40),
            columns in proptest::collection::vec(any::<u16>(), 0..8),
        ) {
            let mut bytes = Vec::new();
            KeyBody::write(&key, &columns, &[Value::Int(7)], &mut bytes);
            let body = KeyBodyRef::parse(&bytes).expect("a written body parses");
            prop_assert_eq!(body.key, &key[..]);
            prop_assert_eq!(body.columns().collect::<Vec<_>>(), columns);
            prop_assert_eq!(body.values().expect("values"), vec![Value::Int(7)]);
        }

        #[test]
        fn a_body_written_with_its_key_in_place_is_the_same_body(
            key in proptest::collection::vec(any::<u8>(), 0..40),
            columns in proptest::collection::vec(any::<u16>(), 0..8),
        ) {
            let mut whole = vec![1, 2];
            KeyBody::write(&key, &columns, &[Value::UInt(3)], &mut whole);
            let mut keyed = vec![1, 2];
            let written: Result<(), ()> = KeyBody::write_keyed(
                |out| {
                    out.extend_from_slice(&key);
                    Ok(())
                },
                &columns,
                &[Value::UInt(3)],
                &mut keyed,
            );
            prop_assert_eq!(written, Ok(()));
            prop_assert_eq!(&keyed, &whole);
            let refused = KeyBody::write_keyed(|out| {
                out.push(9);
                Err(())
            }, &columns, &[], &mut keyed);
            prop_assert_eq!(refused, Err(()));
            prop_assert_eq!(keyed, whole, "a refused key leaves the buffer as it was");
        }

        #[test]
        fn the_quick_split_and_the_explaining_parse_agree_on_any_bytes(
            bytes in proptest::collection::vec(any::<u8>(), 0..24),
            key_len in 0u32..12,
            count in prop_oneof![0u32..6, Just(u32::MAX)],
        ) {
            // Plausible length prefixes, so the bodies are sometimes whole.
            let mut framed = key_len.to_le_bytes().to_vec();
            framed.extend_from_slice(&bytes[..bytes.len().min(key_len as usize)]);
            framed.extend_from_slice(&count.to_le_bytes());
            framed.extend_from_slice(&bytes);
            for candidate in [&bytes[..], &framed[..]] {
                prop_assert_eq!(
                    KeyBodyRef::split(candidate).map(parts),
                    KeyBodyRef::parse_explaining(candidate).ok().map(parts)
                );
            }
        }
    }
}
