//! The byte forms of values, table schemas, index schemas and filters, as they travel in
//! signal sections between clients and data nodes.
//!
//! Little-endian, length-prefixed, versionless (the signal wire format carries the version).
//! Decoding is total: any byte string yields a value or a [`CodecError`], never a panic, and
//! lengths are checked against what remains before anything is allocated.

use crate::filter::{CompareOp, Filter, FILTER_DEPTH_MAX};
use crate::schema::{Column, IndexKind, IndexSchema, TableSchema, COLUMNS_MAX};
use crate::types::{Collation, ColumnType, Date, DateTime, Decimal, Value};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("truncated: needed {needed} more bytes at offset {offset}")]
    Truncated { offset: usize, needed: usize },
    #[error("unknown {what} tag {tag} at offset {offset}")]
    UnknownTag {
        what: &'static str,
        tag: u8,
        offset: usize,
    },
    #[error("{what} at offset {offset} is invalid")]
    Invalid { what: &'static str, offset: usize },
    #[error("the {what} is in format {found}; this build reads formats up to {newest} (written by a newer Kista)")]
    NewerFormat {
        what: &'static str,
        found: u16,
        newest: u16,
    },
    #[error("{0} bytes left over after the end")]
    TrailingBytes(usize),
}

/// Appends to a byte buffer.
pub struct Writer<'a>(pub &'a mut Vec<u8>);

impl Writer<'_> {
    #[inline]
    pub fn u8(&mut self, value: u8) {
        self.0.push(value);
    }
    #[inline]
    pub fn u16(&mut self, value: u16) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }
    #[inline]
    pub fn u32(&mut self, value: u32) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }
    #[inline]
    pub fn u64(&mut self, value: u64) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }
    #[inline]
    pub fn bytes(&mut self, bytes: &[u8]) {
        self.u32(bytes.len() as u32);
        self.0.extend_from_slice(bytes);
    }
}

/// Reads a byte buffer front to back (a copy reads on from where the original was).
#[derive(Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl<'a> Reader<'a> {
    #[inline]
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, offset: 0 }
    }

    #[inline]
    pub fn offset(&self) -> usize {
        self.offset
    }

    #[inline]
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.offset
    }

    #[inline]
    pub fn take(&mut self, count: usize) -> Result<&'a [u8], CodecError> {
        if count > self.remaining() {
            return Err(self.truncated(count));
        }
        let taken = &self.bytes[self.offset..self.offset + count];
        self.offset += count;
        Ok(taken)
    }

    #[cold]
    #[inline(never)]
    fn truncated(&self, count: usize) -> CodecError {
        CodecError::Truncated {
            offset: self.offset,
            needed: count - self.remaining(),
        }
    }

    #[inline]
    fn array<const N: usize>(&mut self) -> Result<[u8; N], CodecError> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N)?);
        Ok(array)
    }

    #[inline]
    pub fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.take(1)?[0])
    }
    #[inline]
    pub fn u16(&mut self) -> Result<u16, CodecError> {
        self.array().map(u16::from_le_bytes)
    }
    #[inline]
    pub fn u32(&mut self) -> Result<u32, CodecError> {
        self.array().map(u32::from_le_bytes)
    }
    #[inline]
    pub fn u64(&mut self) -> Result<u64, CodecError> {
        self.array().map(u64::from_le_bytes)
    }
    #[inline]
    pub fn bytes(&mut self) -> Result<&'a [u8], CodecError> {
        let length = self.u32()? as usize;
        self.take(length)
    }

    /// Fails unless everything was read.
    pub fn finish(&self) -> Result<(), CodecError> {
        match self.remaining() {
            0 => Ok(()),
            left => Err(CodecError::TrailingBytes(left)),
        }
    }

    pub fn invalid(&self, what: &'static str) -> CodecError {
        CodecError::Invalid {
            what,
            offset: self.offset,
        }
    }

    /// An unknown tag `tag`, just read.
    pub fn unknown(&self, what: &'static str, tag: u8) -> CodecError {
        CodecError::UnknownTag {
            what,
            tag,
            offset: self.offset - 1,
        }
    }

    /// A count of items that each take at least `item_bytes_min`, checked against what is
    /// left so a hostile count cannot make the decoder reserve memory.
    pub(crate) fn count(&mut self, item_bytes_min: usize) -> Result<usize, CodecError> {
        let count = self.u32()? as usize;
        if count.saturating_mul(item_bytes_min) > self.remaining() {
            return Err(self.invalid("count"));
        }
        Ok(count)
    }
}

// ----- values -----

/// The encoding of `Value::Bytes(bytes)`, for callers that hold only the slice.
#[inline]
pub fn write_bytes_value(out: &mut Writer, bytes: &[u8]) {
    let length = (bytes.len() as u32).to_le_bytes();
    out.0
        .extend_from_slice(&[BYTES_TAG, length[0], length[1], length[2], length[3]]);
    out.0.extend_from_slice(bytes);
}

/// The tags of signed and unsigned integers in a value's byte form.
pub const INT_TAG: u8 = 1;
pub const UINT_TAG: u8 = 2;
const DECIMAL_TAG: u8 = 5;
const BYTES_TAG: u8 = 6;
const DATE_TAG: u8 = 7;
const DATETIME_TAG: u8 = 9;

pub fn write_value(out: &mut Writer, value: &Value) {
    match value {
        Value::Null => out.u8(0),
        Value::Int(n) => {
            out.u8(INT_TAG);
            out.u64(*n as u64);
        }
        Value::UInt(n) => {
            out.u8(UINT_TAG);
            out.u64(*n);
        }
        Value::Float(x) => {
            out.u8(3);
            out.u32(x.to_bits());
        }
        Value::Double(x) => {
            out.u8(4);
            out.u64(x.to_bits());
        }
        Value::Decimal(d) => {
            out.u8(DECIMAL_TAG);
            out.0.extend_from_slice(&d.unscaled.to_le_bytes());
            out.u8(d.scale);
        }
        Value::Bytes(bytes) => write_bytes_value(out, bytes),
        Value::Date(date) => {
            out.u8(DATE_TAG);
            out.u32(date.to_days() as u32);
        }
        Value::Time(us) => {
            out.u8(8);
            out.u64(*us as u64);
        }
        Value::DateTime(dt) => {
            out.u8(DATETIME_TAG);
            out.u64(dt.to_micros() as u64);
        }
        Value::Timestamp(us) => {
            out.u8(10);
            out.u64(*us as u64);
        }
    }
}

/// The bytes [`write_value`] writes for `value` (a buffer sized with it is not regrown).
pub fn value_bytes(value: &Value) -> usize {
    1 + match value {
        Value::Null => 0,
        Value::Float(_) | Value::Date(_) => 4,
        Value::Int(_)
        | Value::UInt(_)
        | Value::Double(_)
        | Value::Time(_)
        | Value::DateTime(_)
        | Value::Timestamp(_) => 8,
        Value::Decimal(_) => 17,
        Value::Bytes(bytes) => 4 + bytes.len(),
    }
}

pub fn read_value(input: &mut Reader) -> Result<Value, CodecError> {
    let tag = input.u8()?;
    read_tagged_value(tag, input)
}

/// [`read_value`] into `value`: text or bytes reuse the buffer `value` holds, so a data
/// manager decoding operation after operation into the same values allocates nothing.
fn read_value_into(input: &mut Reader, value: &mut Value) -> Result<(), CodecError> {
    let tag = input.u8()?;
    match value {
        Value::Bytes(buffer) if tag == BYTES_TAG => {
            buffer.clear();
            buffer.extend_from_slice(input.bytes()?);
        }
        _ => *value = read_tagged_value(tag, input)?,
    }
    Ok(())
}

/// A value read in place: text and bytes borrowed from the buffer, a DATE or DATETIME left
/// as its days or microseconds (checked as [`read_value`] checks them), so a row written
/// straight from its encoded values (`RowLayout::encode_from_wire`) copies each once and
/// converts none.
#[derive(Debug, PartialEq)]
pub enum ValueRef<'a> {
    Bytes(&'a [u8]),
    Int(i64),
    UInt(u64),
    Decimal(Decimal),
    Days(i32),
    Micros(i64),
    Other(Value),
}

impl ValueRef<'_> {
    /// The value [`read_value`] would have read.
    pub fn into_value(self) -> Value {
        match self {
            ValueRef::Bytes(bytes) => Value::Bytes(bytes.to_vec()),
            ValueRef::Int(n) => Value::Int(n),
            ValueRef::UInt(n) => Value::UInt(n),
            ValueRef::Decimal(decimal) => Value::Decimal(decimal),
            ValueRef::Days(days) => Value::Date(Date::from_days(days).expect("checked on read")),
            ValueRef::Micros(micros) => {
                Value::DateTime(DateTime::from_micros(micros).expect("checked on read"))
            }
            ValueRef::Other(value) => value,
        }
    }
}

/// Always inlined: called, it returned its value through memory, and its caller read the
/// variant back at offsets its stores did not line up with, a stall each value (perf: two
/// thirds of `encode_from_wire`'s samples, 3% of a loading data node's main thread).
#[inline(always)]
pub fn read_value_ref<'a>(input: &mut Reader<'a>) -> Result<ValueRef<'a>, CodecError> {
    let tag = input.u8()?;
    Ok(match tag {
        BYTES_TAG => ValueRef::Bytes(input.bytes()?),
        // A row's commonest values, read here rather than as a `Value` of
        // `read_tagged_value` (a write's row is checked and copied from them).
        INT_TAG => ValueRef::Int(input.u64()? as i64),
        UINT_TAG => ValueRef::UInt(input.u64()?),
        DECIMAL_TAG => {
            let unscaled = i128::from_le_bytes(input.array()?);
            ValueRef::Decimal(Decimal {
                unscaled,
                scale: input.u8()?,
            })
        }
        DATE_TAG => {
            let days = input.u32()? as i32;
            if !Date::days_valid(days) {
                return Err(input.invalid("date"));
            }
            ValueRef::Days(days)
        }
        DATETIME_TAG => {
            let micros = input.u64()? as i64;
            if !DateTime::micros_valid(micros) {
                return Err(input.invalid("datetime"));
            }
            ValueRef::Micros(micros)
        }
        tag => ValueRef::Other(read_tagged_value(tag, input)?),
    })
}

fn read_tagged_value(tag: u8, input: &mut Reader) -> Result<Value, CodecError> {
    Ok(match tag {
        0 => Value::Null,
        INT_TAG => Value::Int(input.u64()? as i64),
        UINT_TAG => Value::UInt(input.u64()?),
        3 => Value::Float(f32::from_bits(input.u32()?)),
        4 => Value::Double(f64::from_bits(input.u64()?)),
        DECIMAL_TAG => {
            let unscaled = i128::from_le_bytes(input.array()?);
            Value::Decimal(Decimal {
                unscaled,
                scale: input.u8()?,
            })
        }
        BYTES_TAG => Value::Bytes(input.bytes()?.to_vec()),
        DATE_TAG => {
            let days = input.u32()? as i32;
            Value::Date(Date::from_days(days).ok_or_else(|| input.invalid("date"))?)
        }
        8 => Value::Time(input.u64()? as i64),
        DATETIME_TAG => {
            let micros = input.u64()? as i64;
            Value::DateTime(DateTime::from_micros(micros).ok_or_else(|| input.invalid("datetime"))?)
        }
        10 => Value::Timestamp(input.u64()? as i64),
        tag => return Err(input.unknown("value", tag)),
    })
}

pub fn write_values(out: &mut Writer, values: &[Value]) {
    out.u32(values.len() as u32);
    for value in values {
        write_value(out, value);
    }
}

pub fn read_values(input: &mut Reader) -> Result<Vec<Value>, CodecError> {
    let mut values = Vec::new();
    read_values_into(input, &mut values)?;
    Ok(values)
}

/// [`read_values`] into `values`, reusing its allocations (see [`read_value_into`]).
pub fn read_values_into(input: &mut Reader, values: &mut Vec<Value>) -> Result<(), CodecError> {
    let count = input.count(1)?;
    values.truncate(count);
    for value in values.iter_mut() {
        read_value_into(input, value)?;
    }
    while values.len() < count {
        values.push(read_value(input)?);
    }
    Ok(())
}

// ----- schemas -----

fn write_column_type(out: &mut Writer, column_type: ColumnType) {
    let (tag, a, b): (u8, u32, u32) = match column_type {
        ColumnType::Int { bytes, signed } => (1, bytes.into(), signed.into()),
        ColumnType::Float => (2, 0, 0),
        ColumnType::Double => (3, 0, 0),
        ColumnType::Decimal { precision, scale } => (4, precision.into(), scale.into()),
        ColumnType::Char { length, collation } => (5, length.into(), collation.id().into()),
        ColumnType::Binary { length } => (6, length.into(), 0),
        ColumnType::VarChar {
            max_length,
            collation,
        } => (7, max_length, collation.id().into()),
        ColumnType::VarBinary { max_length } => (8, max_length, 0),
        ColumnType::Text { collation } => (9, 0, collation.id().into()),
        ColumnType::Blob => (10, 0, 0),
        ColumnType::Date => (11, 0, 0),
        ColumnType::Time => (12, 0, 0),
        ColumnType::DateTime => (13, 0, 0),
        ColumnType::Timestamp => (14, 0, 0),
    };
    out.u8(tag);
    out.u32(a);
    out.u32(b);
}

fn read_column_type(input: &mut Reader) -> Result<ColumnType, CodecError> {
    let tag = input.u8()?;
    let (a, b) = (input.u32()?, input.u32()?);
    let small = |n: u32| u8::try_from(n).map_err(|_| input.invalid("column type"));
    let medium = |n: u32| u16::try_from(n).map_err(|_| input.invalid("column type"));
    let collation = |id: u32| {
        u16::try_from(id)
            .ok()
            .and_then(Collation::with_id)
            .ok_or_else(|| input.invalid("collation"))
    };
    let column_type = match tag {
        1 => ColumnType::Int {
            bytes: small(a)?,
            signed: b != 0,
        },
        2 => ColumnType::Float,
        3 => ColumnType::Double,
        4 => ColumnType::Decimal {
            precision: small(a)?,
            scale: small(b)?,
        },
        5 => ColumnType::Char {
            length: medium(a)?,
            collation: collation(b)?,
        },
        6 => ColumnType::Binary { length: medium(a)? },
        7 => ColumnType::VarChar {
            max_length: a,
            collation: collation(b)?,
        },
        8 => ColumnType::VarBinary { max_length: a },
        9 => ColumnType::Text {
            collation: collation(b)?,
        },
        10 => ColumnType::Blob,
        11 => ColumnType::Date,
        12 => ColumnType::Time,
        13 => ColumnType::DateTime,
        14 => ColumnType::Timestamp,
        tag => {
            return Err(CodecError::UnknownTag {
                what: "column type",
                tag,
                offset: input.offset() - 9,
            })
        }
    };
    Ok(column_type)
}

fn write_str(out: &mut Writer, text: &str) {
    out.bytes(text.as_bytes());
}

fn read_string(input: &mut Reader) -> Result<String, CodecError> {
    let bytes = input.bytes()?;
    String::from_utf8(bytes.to_vec()).map_err(|_| input.invalid("name"))
}

fn write_column_list(out: &mut Writer, columns: &[usize]) {
    out.u32(columns.len() as u32);
    for &column in columns {
        out.u16(column as u16);
    }
}

fn read_column_list(input: &mut Reader) -> Result<Vec<usize>, CodecError> {
    let count = input.count(2)?;
    (0..count).map(|_| input.u16().map(usize::from)).collect()
}

/// Marks a table schema's encoding as versioned: where the first encoding (format 1) has
/// the name's length, which never comes near it. A reader of format 1 only takes it as a
/// length past the end and refuses the definition, never misreads it.
const SCHEMA_FORMAT_MARK: u32 = u32::MAX;
/// The table-schema formats this build reads. 1: the first (no mark). 2: columns added in
/// place (`Column::added`). A schema is written in the oldest format that holds it, so
/// nodes and clients of an earlier build read every table that uses nothing newer.
pub const SCHEMA_FORMAT_NEWEST: u16 = 2;

/// The oldest format that holds `schema`.
fn schema_format(schema: &TableSchema) -> u16 {
    if schema.columns.iter().any(|column| column.added.is_some()) {
        2
    } else {
        1
    }
}

/// Encodes a table schema (not validated here: the dictionary validates what it receives).
pub fn write_table_schema(out: &mut Writer, schema: &TableSchema) {
    let format = schema_format(schema);
    if format > 1 {
        out.u32(SCHEMA_FORMAT_MARK);
        out.u16(format);
    }
    write_str(out, &schema.name);
    out.u32(schema.columns.len() as u32);
    for column in &schema.columns {
        write_str(out, &column.name);
        write_column_type(out, column.column_type);
        out.u8(column.nullable.into());
        write_optional_value(out, column.default.as_ref());
        if format >= 2 {
            write_optional_value(out, column.added.as_ref());
        }
    }
    write_column_list(out, &schema.primary_key);
    out.bytes(&schema.extra_metadata);
}

fn write_optional_value(out: &mut Writer, value: Option<&Value>) {
    match value {
        None => out.u8(0),
        Some(value) => {
            out.u8(1);
            write_value(out, value);
        }
    }
}

fn read_optional_value(
    input: &mut Reader,
    what: &'static str,
) -> Result<Option<Value>, CodecError> {
    match input.u8()? {
        0 => Ok(None),
        1 => Ok(Some(read_value(input)?)),
        tag => Err(input.unknown(what, tag)),
    }
}

pub fn read_table_schema(input: &mut Reader) -> Result<TableSchema, CodecError> {
    let format = if input.bytes[input.offset..].starts_with(&SCHEMA_FORMAT_MARK.to_le_bytes()) {
        input.u32()?;
        let format = input.u16()?;
        if !(2..=SCHEMA_FORMAT_NEWEST).contains(&format) {
            return Err(CodecError::NewerFormat {
                what: "table definition",
                found: format,
                newest: SCHEMA_FORMAT_NEWEST,
            });
        }
        format
    } else {
        1
    };
    let name = read_string(input)?;
    let count = input.count(14)?;
    if count > COLUMNS_MAX {
        return Err(input.invalid("column count"));
    }
    let mut columns = Vec::with_capacity(count);
    for _ in 0..count {
        let name = read_string(input)?;
        let column_type = read_column_type(input)?;
        let nullable = input.u8()? != 0;
        let default = read_optional_value(input, "default")?;
        let added = if format >= 2 {
            read_optional_value(input, "added column")?
        } else {
            None
        };
        columns.push(Column {
            name,
            column_type,
            nullable,
            default,
            added,
        });
    }
    let primary_key = read_column_list(input)?;
    let extra_metadata = input.bytes()?.to_vec();
    Ok(TableSchema {
        extra_metadata,
        name,
        columns,
        primary_key,
    })
}

pub fn write_index_schema(out: &mut Writer, schema: &IndexSchema) {
    write_str(out, &schema.name);
    out.u8(match schema.kind {
        IndexKind::Unique => 1,
        IndexKind::Ordered => 2,
    });
    write_column_list(out, &schema.columns);
}

pub fn read_index_schema(input: &mut Reader) -> Result<IndexSchema, CodecError> {
    let name = read_string(input)?;
    let kind = match input.u8()? {
        1 => IndexKind::Unique,
        2 => IndexKind::Ordered,
        tag => return Err(input.unknown("index kind", tag)),
    };
    Ok(IndexSchema {
        name,
        kind,
        columns: read_column_list(input)?,
    })
}

// ----- filters -----

pub fn write_filter(out: &mut Writer, filter: &Filter) {
    let op_tag = |op: CompareOp| op as u8;
    match filter {
        Filter::Compare { column, op, value } => {
            out.u8(1);
            out.u16(*column as u16);
            out.u8(op_tag(*op));
            write_value(out, value);
        }
        Filter::CompareColumns { left, op, right } => {
            out.u8(2);
            out.u16(*left as u16);
            out.u8(op_tag(*op));
            out.u16(*right as u16);
        }
        Filter::IsNull(column) => {
            out.u8(3);
            out.u16(*column as u16);
        }
        Filter::Like { column, pattern } => {
            out.u8(4);
            out.u16(*column as u16);
            out.bytes(pattern);
        }
        Filter::And(parts) | Filter::Or(parts) => {
            out.u8(if matches!(filter, Filter::And(_)) {
                5
            } else {
                6
            });
            out.u32(parts.len() as u32);
            for part in parts {
                write_filter(out, part);
            }
        }
        Filter::Not(inner) => {
            out.u8(7);
            write_filter(out, inner);
        }
    }
}

/// Decodes a filter; nesting past [`FILTER_DEPTH_MAX`] is refused before recursing further.
pub fn read_filter(input: &mut Reader) -> Result<Filter, CodecError> {
    read_filter_at(input, 1)
}

fn read_filter_at(input: &mut Reader, depth: usize) -> Result<Filter, CodecError> {
    if depth > FILTER_DEPTH_MAX {
        return Err(input.invalid("filter nesting"));
    }
    let read_op = |input: &mut Reader| {
        Ok(match input.u8()? {
            0 => CompareOp::Eq,
            1 => CompareOp::Ne,
            2 => CompareOp::Lt,
            3 => CompareOp::Le,
            4 => CompareOp::Gt,
            5 => CompareOp::Ge,
            tag => return Err(input.unknown("comparison", tag)),
        })
    };
    let column = |input: &mut Reader| input.u16().map(usize::from);
    Ok(match input.u8()? {
        1 => Filter::Compare {
            column: column(input)?,
            op: read_op(input)?,
            value: read_value(input)?,
        },
        2 => Filter::CompareColumns {
            left: column(input)?,
            op: read_op(input)?,
            right: column(input)?,
        },
        3 => Filter::IsNull(column(input)?),
        4 => Filter::Like {
            column: column(input)?,
            pattern: input.bytes()?.to_vec(),
        },
        tag @ (5 | 6) => {
            let count = input.count(1)?;
            let parts = (0..count)
                .map(|_| read_filter_at(input, depth + 1))
                .collect::<Result<Vec<_>, _>>()?;
            if tag == 5 {
                Filter::And(parts)
            } else {
                Filter::Or(parts)
            }
        }
        7 => Filter::Not(Box::new(read_filter_at(input, depth + 1)?)),
        tag => return Err(input.unknown("filter", tag)),
    })
}

#[cfg(test)]
mod tests;
