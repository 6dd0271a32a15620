//! The row format.
//!
//! A row has a fixed-size part, the same size for every row of a table, and a variable-size
//! part for VARCHAR, VARBINARY, TEXT and BLOB columns:
//!
//! ```text
//! fixed:    [null bitmap: 1 bit per column][fixed-size columns at fixed offsets]
//! variable: [end offset (u32) of each variable column's bytes][the bytes][dynamic part]
//! dynamic:  [carried: u16][null bitmap: 1 bit per carried column]
//!           [end offset (u32) of each carried column's bytes][the bytes]
//! ```
//!
//! All numbers are little-endian. Reading one column never decodes the others: fixed columns
//! sit at known offsets, and variable column `k` spans `end[k-1]..end[k]` of the bytes.
//!
//! Columns added to a table in place (`Column::added`, NDB's dynamic attributes) live in the
//! dynamic part, after every other column's bytes: the first `carried` added columns, each
//! as its fixed-size slot or its variable bytes. A row written before a column was added
//! does not carry it (or has no dynamic part at all) and reads the column's `added` value.
//! So adding a column changes no stored row: every row's bytes stay valid under the new
//! layout, in memory, in the REDO log and in checkpoints.

use std::cell::RefCell;

use crate::codec::{write_bytes_value, write_value, CodecError, Writer, INT_TAG, UINT_TAG};
use crate::ordered_index::{encode_ordered, ordered_int, push_escaped};
use crate::schema::{Column, TableSchema};
use crate::types::{
    decimal_fits, integer_range, ColumnType, Date, DateTime, Decimal, Value, ValueError,
    TIME_US_MAX,
};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RowError {
    #[error("table `{table}` has {expected} columns, {given} values were given")]
    ColumnCount {
        table: String,
        expected: usize,
        given: usize,
    },
    #[error("column `{column}` is NOT NULL")]
    NotNull { column: String },
    #[error("a key cannot hold NULL (column `{column}`)")]
    NullInKey { column: String },
    #[error("column `{column}`: {source}")]
    Value { column: String, source: ValueError },
    #[error("the row's values are malformed: {0}")]
    Malformed(#[from] CodecError),
}

/// Where each column of a table lives in its rows.
#[derive(Clone, Debug)]
pub struct RowLayout {
    table: String,
    columns: Vec<Column>,
    /// Per column: byte offset in the fixed part, or the index among variable columns.
    places: Vec<Place>,
    /// The columns in the fixed and variable parts; the rest are added columns.
    base_columns: usize,
    /// Per added column: what a row that does not carry it reads.
    absent: Vec<Value>,
    null_bitmap_bytes: usize,
    fixed_bytes: usize,
    var_columns: usize,
    primary_key: Vec<usize>,
    /// Where the key lies in the fixed part when the primary key is one fixed column that
    /// compares bytewise (an integer, say): the commonest key is compared as one slice.
    primary_key_slot: Option<std::ops::Range<usize>>,
    /// Per column: how [`RowLayout::write_projected`] sends it, decided once per table.
    wire_columns: Vec<WireColumn>,
}

#[derive(Clone, Copy, Debug)]
enum Place {
    Fixed(usize),
    Variable(usize),
    /// The k-th added column, in the dynamic part.
    Dynamic(usize),
}

#[derive(Clone, Copy, Debug)]
enum WireColumn {
    /// An integer slot, sent widened to 8 bytes after its tag; the commonest column, so
    /// it goes from the slot to the wire without a `Value` in between.
    Int {
        offset: usize,
        bytes: u8,
        signed: bool,
    },
    /// The k-th variable-length column.
    Variable(usize),
    /// Any other fixed-size column, sent through a `Value`.
    Fixed {
        offset: usize,
        column_type: ColumnType,
    },
    /// An added column, sent through a `Value`.
    Dynamic,
}

impl RowLayout {
    /// The layout of a validated schema.
    pub fn new(schema: &TableSchema) -> Self {
        let base_columns = schema.base_columns();
        let null_bitmap_bytes = base_columns.div_ceil(8);
        let mut offset = null_bitmap_bytes;
        let mut var_columns = 0;
        let absent: Vec<Value> = schema.columns[base_columns..]
            .iter()
            .map(|column| column.added.clone().unwrap_or(Value::Null))
            .collect();
        let places = schema
            .columns
            .iter()
            .enumerate()
            .map(|(index, column)| {
                let size = column.column_type.fixed_bytes();
                if index >= base_columns {
                    Place::Dynamic(index - base_columns)
                } else if size == 0 {
                    var_columns += 1;
                    Place::Variable(var_columns - 1)
                } else {
                    offset += size;
                    Place::Fixed(offset - size)
                }
            })
            .collect::<Vec<_>>();
        let wire_columns = places
            .iter()
            .zip(&schema.columns)
            .map(|(&place, column)| match (place, column.column_type) {
                (Place::Variable(k), _) => WireColumn::Variable(k),
                (Place::Dynamic(_), _) => WireColumn::Dynamic,
                (Place::Fixed(offset), ColumnType::Int { bytes, signed }) => WireColumn::Int {
                    offset,
                    bytes,
                    signed,
                },
                (Place::Fixed(offset), column_type) => WireColumn::Fixed {
                    offset,
                    column_type,
                },
            })
            .collect();
        let primary_key_slot = match (schema.primary_key.as_slice(), &places) {
            (&[column], places) => match places[column] {
                Place::Fixed(offset) if schema.columns[column].column_type.compares_bytewise() => {
                    Some(offset..offset + schema.columns[column].column_type.fixed_bytes())
                }
                _ => None,
            },
            _ => None,
        };
        Self {
            table: schema.name.clone(),
            columns: schema.columns.clone(),
            primary_key_slot,
            wire_columns,
            places,
            base_columns,
            absent,
            null_bitmap_bytes,
            fixed_bytes: offset,
            var_columns,
            primary_key: schema.primary_key.clone(),
        }
    }

    /// Whether every row `old` stored is a valid row of this layout, read alike: a table
    /// changed in place (`TableSchema::in_place_change_from`).
    pub fn reads_rows_of(&self, old: &RowLayout) -> bool {
        let same_column = |(new, was): (&Column, &Column)| {
            new.column_type == was.column_type && new.added == was.added
        };
        self.fixed_bytes == old.fixed_bytes
            && self.base_columns == old.base_columns
            && self.primary_key == old.primary_key
            && self.columns.len() >= old.columns.len()
            && self.columns.iter().zip(&old.columns).all(same_column)
    }

    /// Appends the primary key of a stored row to `key`: for each key column its fixed slot,
    /// or its length (u32) and bytes; for a text column with a collation that does not
    /// compare bytes (a case-insensitive one), the length and bytes of its weight key.
    /// Equal keys give equal bytes: 'a' and 'A' are one key under `utf8mb4_0900_ai_ci`.
    pub fn primary_key_of_row(&self, fixed: &[u8], var: &[u8], key: &mut Vec<u8>) {
        let whole = self.key_of_row(&self.primary_key, fixed, var, key);
        debug_assert!(whole, "primary key columns are NOT NULL");
    }

    /// Whether a stored row's primary key is `key` ([`RowLayout::primary_key_of_row`]'s
    /// form): how the primary hash index, which keeps no keys, tells rows apart. Compared in
    /// place, column by column; only a text under a collation that does not compare bytes
    /// has its weight key built (in a buffer kept per thread: readers share the layout).
    #[inline]
    pub fn row_has_primary_key(&self, fixed: &[u8], var: &[u8], key: &[u8]) -> bool {
        match &self.primary_key_slot {
            Some(slot) => same_short_bytes(&fixed[slot.clone()], key),
            None => self.row_has_primary_key_by_columns(fixed, var, key),
        }
    }

    fn row_has_primary_key_by_columns(&self, fixed: &[u8], var: &[u8], mut key: &[u8]) -> bool {
        for &column in &self.primary_key {
            let column_type = self.columns[column].column_type;
            let matched = match self.places[column] {
                Place::Fixed(offset) if column_type.compares_bytewise() => {
                    let bytes = column_type.fixed_bytes();
                    skip_prefix(&mut key, &fixed[offset..offset + bytes])
                }
                Place::Variable(k) if column_type.compares_bytewise() => {
                    let bytes = self.var_slice(var, k);
                    skip_prefix(&mut key, &(bytes.len() as u32).to_le_bytes())
                        && skip_prefix(&mut key, bytes)
                }
                _ => self.skip_built_key_part(column, fixed, var, &mut key),
            };
            if !matched {
                return false;
            }
        }
        key.is_empty()
    }

    /// [`RowLayout::row_has_primary_key`] of one column by its built key form.
    fn skip_built_key_part(
        &self,
        column: usize,
        fixed: &[u8],
        var: &[u8],
        key: &mut &[u8],
    ) -> bool {
        thread_local!(static PART: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) });
        PART.with_borrow_mut(|part| {
            part.clear();
            let whole = self.key_of_row(&[column], fixed, var, part);
            whole && skip_prefix(key, part)
        })
    }

    /// Appends the key a stored row has in `columns` (in key order), in the form of primary
    /// keys; false, with `key` unchanged, when one of them is NULL (such a row has no entry
    /// in a unique index).
    pub fn key_of_row(
        &self,
        columns: &[usize],
        fixed: &[u8],
        var: &[u8],
        key: &mut Vec<u8>,
    ) -> bool {
        if columns
            .iter()
            .any(|&column| self.is_null(fixed, var, column))
        {
            return false;
        }
        for &column in columns {
            let column_type = self.columns[column].column_type;
            match self.places[column] {
                Place::Dynamic(_) => {
                    let value = self.value(fixed, var, column);
                    self.append_key_of_value(column, &value, key);
                }
                Place::Fixed(offset) if column_type.compares_bytewise() => {
                    key.extend_from_slice(&fixed[offset..offset + column_type.fixed_bytes()])
                }
                Place::Fixed(_) => {
                    let value = self.value(fixed, var, column);
                    let Value::Bytes(text) = value else {
                        unreachable!("only text columns have a collation")
                    };
                    column_type
                        .collation()
                        .length_prefixed_weight_key(&text, key);
                }
                Place::Variable(k) if column_type.compares_bytewise() => {
                    let bytes = self.var_slice(var, k);
                    key.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                    key.extend_from_slice(bytes);
                }
                Place::Variable(k) => {
                    let text = self.var_slice(var, k);
                    column_type
                        .collation()
                        .length_prefixed_weight_key(text, key)
                }
            }
        }
        true
    }

    /// Appends the primary key made of `values` (one per key column, in key order) to `key`,
    /// in the form of [`RowLayout::primary_key_of_row`]. On error `key` is unchanged.
    pub fn primary_key_of_values(
        &self,
        values: &[Value],
        key: &mut Vec<u8>,
    ) -> Result<(), RowError> {
        self.key_of_values(&self.primary_key, values, key)
    }

    /// Appends the key made of `values` for `columns` (one value per column, in key order)
    /// to `key`, in the form of [`RowLayout::key_of_row`]: a unique-index lookup builds its
    /// key with it. NULL is refused (no row has a key with NULL). On error `key` is unchanged.
    pub fn key_of_values(
        &self,
        columns: &[usize],
        values: &[Value],
        key: &mut Vec<u8>,
    ) -> Result<(), RowError> {
        if values.len() != columns.len() {
            return Err(RowError::ColumnCount {
                table: format!("{} (key)", self.table),
                expected: columns.len(),
                given: values.len(),
            });
        }
        self.append_key(columns.iter().copied().zip(values), key)
    }

    /// The primary key of a whole row given as values (one per column, as
    /// [`RowLayout::encode`] takes them), appended to `key` as
    /// [`RowLayout::primary_key_of_values`] would append it.
    pub fn primary_key_of_row_values(
        &self,
        row: &[Value],
        key: &mut Vec<u8>,
    ) -> Result<(), RowError> {
        let value_of = |column: usize| row.get(column).unwrap_or(&Value::Null);
        let parts = self
            .primary_key
            .iter()
            .map(|&column| (column, value_of(column)));
        self.append_key(parts, key)
    }

    /// [`RowLayout::primary_key_of_row_values`] of a whole row given as
    /// `codec::write_values` encoded its values (a load's rows, encoded straight from a
    /// file's fields, never were `Value`s): the same key, or the same error, a malformed
    /// encoding being [`RowError::Malformed`]. Only the values up to the key's last column
    /// are read (the data node checks the whole row).
    pub fn primary_key_of_encoded_row(
        &self,
        encoded: &[u8],
        key: &mut Vec<u8>,
    ) -> Result<(), RowError> {
        let mut input = crate::codec::Reader::new(encoded);
        let count = input.count(1)?;
        let key_columns = self.primary_key.iter().max().map_or(0, |last| last + 1);
        if count < key_columns {
            return Err(RowError::ColumnCount {
                table: self.table.clone(),
                expected: self.columns.len(),
                given: count,
            });
        }
        if self.integer_key_of_encoded(input.clone(), key)? {
            return Ok(());
        }
        let mut values: smallvec::SmallVec<[Value; 2]> = smallvec::SmallVec::new();
        for _ in 0..key_columns {
            values.push(crate::codec::read_value_ref(&mut input)?.into_value());
        }
        let parts = self
            .primary_key
            .iter()
            .map(|&column| (column, &values[column]));
        self.append_key(parts, key)
    }

    /// [`RowLayout::primary_key_of_encoded_row`] of a key of one integer column (most
    /// keys) whose value is an integer of its range, with no list of `Value`s or general
    /// check on the way. False (nothing appended) for any other key or value, which the
    /// general way reads and checks. `input` is after the value count.
    fn integer_key_of_encoded(
        &self,
        mut input: crate::codec::Reader,
        key: &mut Vec<u8>,
    ) -> Result<bool, RowError> {
        let &[column] = self.primary_key.as_slice() else {
            return Ok(false);
        };
        let ColumnType::Int { bytes, signed } = self.columns[column].column_type else {
            return Ok(false);
        };
        for _ in 0..column {
            crate::codec::read_value_ref(&mut input)?;
        }
        let (value, n) = match crate::codec::read_value_ref(&mut input)? {
            crate::codec::ValueRef::Int(n) => (Value::Int(n), i128::from(n)),
            crate::codec::ValueRef::UInt(n) => (Value::UInt(n), i128::from(n)),
            _ => return Ok(false),
        };
        let (min, max) = integer_range(bytes, signed);
        if !(min..=max).contains(&n) {
            return Ok(false);
        }
        self.append_key_of_value(column, &value, key);
        Ok(true)
    }

    /// Appends the key of `(column, value)` parts, checked first (so `key` is unchanged
    /// on error).
    fn append_key<'v>(
        &self,
        parts: impl Iterator<Item = (usize, &'v Value)> + Clone,
        key: &mut Vec<u8>,
    ) -> Result<(), RowError> {
        for (column, value) in parts.clone() {
            let column = &self.columns[column];
            if value.is_null() {
                return Err(RowError::NullInKey {
                    column: column.name.clone(),
                });
            }
            check_value(column, value)?;
        }
        for (column, value) in parts {
            self.append_key_of_value(column, value, key);
        }
        Ok(())
    }

    /// Appends the key form of a checked, non-null `value` of `column`: by its type, so a
    /// key read from a row and one made of values agree wherever the column is stored.
    fn append_key_of_value(&self, column: usize, value: &Value, key: &mut Vec<u8>) {
        let column_type = self.columns[column].column_type;
        match value {
            Value::Bytes(text) if !column_type.compares_bytewise() => column_type
                .collation()
                .length_prefixed_weight_key(column_type.unpadded(text), key),
            _ if column_type.fixed_bytes() > 0 => {
                let start = key.len();
                key.resize(start + column_type.fixed_bytes(), 0);
                write_fixed(column_type, value, &mut key[start..]);
            }
            Value::Bytes(bytes) => {
                key.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                key.extend_from_slice(bytes);
            }
            _ => unreachable!("checked: variable columns hold bytes"),
        }
    }

    /// Size of every row's fixed part.
    pub fn fixed_bytes(&self) -> usize {
        self.fixed_bytes
    }

    /// Size of the variable part for `values` (after [`RowLayout::encode`] accepted them).
    pub fn var_bytes(&self, values: &[Value]) -> usize {
        let bytes_of = |value: &Value| match value {
            Value::Bytes(bytes) => bytes.len(),
            _ => 0,
        };
        let base: usize = values[..self.base_columns]
            .iter()
            .zip(&self.places)
            .filter(|(_, place)| matches!(place, Place::Variable(_)))
            .map(|(value, _)| bytes_of(value))
            .sum();
        let added = &values[self.base_columns..];
        let dynamic = if added.is_empty() {
            0
        } else {
            let data: usize = (added.iter().zip(&self.columns[self.base_columns..]))
                .filter(|(value, _)| !value.is_null())
                .map(|(value, column)| match column.column_type.fixed_bytes() {
                    0 => bytes_of(value),
                    size => size,
                })
                .sum();
            2 + added.len().div_ceil(8) + 4 * added.len() + data
        };
        4 * self.var_columns + base + dynamic
    }

    /// Encodes a whole row. `fixed` must be [`RowLayout::fixed_bytes`] long; `var` is cleared
    /// and filled. Nothing is written to `fixed` unless every value is valid. `values` may
    /// leave out added columns at the end (a writer that does not know them yet): the row
    /// then does not carry them and reads their `added` values.
    pub fn encode(
        &self,
        values: &[Value],
        fixed: &mut [u8],
        var: &mut Vec<u8>,
    ) -> Result<(), RowError> {
        assert_eq!(
            fixed.len(),
            self.fixed_bytes,
            "fixed part of the wrong size"
        );
        if !(self.base_columns..=self.columns.len()).contains(&values.len()) {
            return Err(RowError::ColumnCount {
                table: self.table.clone(),
                expected: self.columns.len(),
                given: values.len(),
            });
        }
        for (column, value) in self.columns.iter().zip(values) {
            check_value(column, value)?;
        }
        fixed.fill(0);
        var.clear();
        var.resize(4 * self.var_columns, 0);
        let (base, added) = values.split_at(self.base_columns);
        for (index, value) in base.iter().enumerate() {
            self.write_base_value(index, value, fixed, var);
        }
        if !added.is_empty() {
            self.encode_dynamic(added, var);
        }
        Ok(())
    }

    /// Writes base column `index`'s checked value into its place: its null bit, its fixed
    /// slot, or its variable bytes (appended to `var`, whose earlier columns are written).
    fn write_base_value(&self, index: usize, value: &Value, fixed: &mut [u8], var: &mut Vec<u8>) {
        if value.is_null() {
            fixed[index / 8] |= 1 << (index % 8);
        }
        let column_type = self.columns[index].column_type;
        match self.places[index] {
            Place::Fixed(offset) => {
                let end = offset + column_type.fixed_bytes();
                write_fixed(column_type, value, &mut fixed[offset..end]);
            }
            Place::Variable(k) => {
                if let Value::Bytes(bytes) = value {
                    var.extend_from_slice(bytes);
                }
                self.end_variable(k, var);
            }
            Place::Dynamic(_) => unreachable!("added columns follow the base columns"),
        }
    }

    /// Records that variable column `k`'s bytes end where `var` does now.
    fn end_variable(&self, k: usize, var: &mut [u8]) {
        let end = (var.len() - 4 * self.var_columns) as u32;
        var[4 * k..4 * k + 4].copy_from_slice(&end.to_le_bytes());
    }

    /// Appends the dynamic part carrying `added` (checked values of the first added columns).
    fn encode_dynamic(&self, added: &[Value], var: &mut Vec<u8>) {
        var.extend_from_slice(&(added.len() as u16).to_le_bytes());
        let bitmap_at = var.len();
        var.resize(bitmap_at + added.len().div_ceil(8), 0);
        let ends_at = var.len();
        var.resize(ends_at + 4 * added.len(), 0);
        let data_at = var.len();
        let columns = &self.columns[self.base_columns..];
        for (d, (value, column)) in added.iter().zip(columns).enumerate() {
            let column_type = column.column_type;
            match value {
                Value::Null => var[bitmap_at + d / 8] |= 1 << (d % 8),
                Value::Bytes(bytes) if column_type.fixed_bytes() == 0 => {
                    var.extend_from_slice(bytes)
                }
                _ => {
                    let slot_at = var.len();
                    var.resize(slot_at + column_type.fixed_bytes(), 0);
                    write_fixed(column_type, value, &mut var[slot_at..]);
                }
            }
            let end = (var.len() - data_at) as u32;
            var[ends_at + 4 * d..ends_at + 4 * d + 4].copy_from_slice(&end.to_le_bytes());
        }
    }

    /// The bytes of added column `d` in a row: `None` when the row does not carry it (it
    /// was written before the column was added), `Some(None)` when it holds NULL.
    fn dynamic_slice<'a>(&self, var: &'a [u8], d: usize) -> Option<Option<&'a [u8]>> {
        let start = match self.var_columns {
            0 => 0,
            k => 4 * k + end_at(var, k - 1),
        };
        let part = var.get(start..).filter(|part| !part.is_empty())?;
        let carried = usize::from(u16::from_le_bytes([part[0], part[1]]));
        if d >= carried {
            return None;
        }
        if part[2 + d / 8] & (1 << (d % 8)) != 0 {
            return Some(None);
        }
        let (ends, data) = part[2 + carried.div_ceil(8)..].split_at(4 * carried);
        let begin = if d == 0 { 0 } else { end_at(ends, d - 1) };
        Some(Some(&data[begin..end_at(ends, d)]))
    }

    /// Whether `column` of a stored row is NULL.
    pub fn is_null(&self, fixed: &[u8], var: &[u8], column: usize) -> bool {
        match self.places[column] {
            Place::Dynamic(d) => match self.dynamic_slice(var, d) {
                None => self.absent[d].is_null(),
                Some(bytes) => bytes.is_none(),
            },
            _ => self.base_is_null(fixed, column),
        }
    }

    #[inline(always)]
    fn base_is_null(&self, fixed: &[u8], column: usize) -> bool {
        fixed[column / 8] & (1 << (column % 8)) != 0
    }

    /// Reads one column of a row this layout encoded.
    pub fn value(&self, fixed: &[u8], var: &[u8], column: usize) -> Value {
        let column_type = self.columns[column].column_type;
        if let Place::Dynamic(d) = self.places[column] {
            return match self.dynamic_slice(var, d) {
                None => self.absent[d].clone(),
                Some(None) => Value::Null,
                Some(Some(bytes)) if column_type.fixed_bytes() == 0 => Value::Bytes(bytes.to_vec()),
                Some(Some(slot)) => read_fixed(column_type, slot),
            };
        }
        if self.base_is_null(fixed, column) {
            return Value::Null;
        }
        match self.places[column] {
            Place::Fixed(offset) => read_fixed(
                column_type,
                &fixed[offset..offset + column_type.fixed_bytes()],
            ),
            Place::Variable(k) => Value::Bytes(self.var_slice(var, k).to_vec()),
            Place::Dynamic(_) => unreachable!("answered above"),
        }
    }

    /// Appends the values of `columns` (every column when empty; NULL for a column the
    /// table does not have) to `out` in the form of `codec::write_values`, straight from the
    /// row's bytes: no `Value`s are built, so variable-length columns are not copied twice.
    pub fn write_projected(
        &self,
        fixed: &[u8],
        var: &[u8],
        columns: impl ExactSizeIterator<Item = u16>,
        out: &mut Writer,
    ) {
        if columns.len() == 0 {
            out.u32(self.wire_columns.len() as u32);
            for column in 0..self.wire_columns.len() {
                self.write_column(fixed, var, column, out);
            }
        } else {
            out.u32(columns.len() as u32);
            for column in columns {
                self.write_column(fixed, var, usize::from(column), out);
            }
        }
    }

    /// One column for [`RowLayout::write_projected`]; inlined into both of its loops, as
    /// the call cost as much as the work for an integer.
    #[inline(always)]
    fn write_column(&self, fixed: &[u8], var: &[u8], column: usize, out: &mut Writer) {
        let Some(&wire) = self.wire_columns.get(column) else {
            return write_value(out, &Value::Null);
        };
        if let WireColumn::Dynamic = wire {
            return write_value(out, &self.value(fixed, var, column));
        }
        if self.base_is_null(fixed, column) {
            return write_value(out, &Value::Null);
        }
        match wire {
            WireColumn::Int {
                offset,
                bytes,
                signed,
            } => {
                let tag = if signed { INT_TAG } else { UINT_TAG };
                let mut encoded = [tag, 0, 0, 0, 0, 0, 0, 0, 0];
                encoded[1..].copy_from_slice(&int_at(fixed, offset, bytes, signed).to_le_bytes());
                out.0.extend_from_slice(&encoded);
            }
            WireColumn::Variable(k) => write_bytes_value(out, self.var_slice(var, k)),
            WireColumn::Fixed {
                offset,
                column_type,
            } => write_value(out, &read_fixed(column_type, &fixed[offset..])),
            WireColumn::Dynamic => unreachable!("answered above"),
        }
    }

    /// Appends `column`'s order-preserving key part ([`encode_ordered`]) of a row this
    /// layout encoded, straight from its bytes for the common columns (integers, and texts
    /// compared bytewise): an index entry's key costs no `Value` and no copy of the text.
    pub fn ordered_key_of_column(
        &self,
        fixed: &[u8],
        var: &[u8],
        column: usize,
        out: &mut Vec<u8>,
    ) {
        let column_type = self.columns[column].column_type;
        let wire = self.wire_columns[column];
        if matches!(wire, WireColumn::Dynamic) || self.base_is_null(fixed, column) {
            return encode_ordered(column_type, &self.value(fixed, var, column), out);
        }
        match wire {
            WireColumn::Int {
                offset,
                bytes,
                signed,
            } => {
                out.push(1);
                out.extend_from_slice(&ordered_int(int_at(fixed, offset, bytes, signed), signed));
            }
            WireColumn::Variable(k) if column_type.compares_bytewise() => {
                out.push(1);
                push_escaped(self.var_slice(var, k), out);
            }
            _ => encode_ordered(column_type, &self.value(fixed, var, column), out),
        }
    }

    /// Reads every column.
    pub fn values(&self, fixed: &[u8], var: &[u8]) -> Vec<Value> {
        (0..self.columns.len())
            .map(|c| self.value(fixed, var, c))
            .collect()
    }

    #[inline]
    fn var_slice<'a>(&self, var: &'a [u8], k: usize) -> &'a [u8] {
        // The variable part: each column's end offset (4 bytes), then the columns' bytes.
        let (ends, data) = var.split_at(4 * self.var_columns);
        let start = if k == 0 { 0 } else { end_at(ends, k - 1) };
        &data[start..end_at(ends, k)]
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub fn column(&self, column: usize) -> Option<&Column> {
        self.columns.get(column)
    }

    /// The type of a column the layout has.
    pub fn column_type(&self, column: usize) -> ColumnType {
        self.columns[column].column_type
    }

    pub fn column_count(&self) -> usize {
        self.columns.len()
    }

    /// The primary key's columns, in key order.
    pub fn primary_key(&self) -> &[usize] {
        &self.primary_key
    }

    pub fn null_bitmap_bytes(&self) -> usize {
        self.null_bitmap_bytes
    }
}

/// `a == b` for the few bytes of an integer key without a call to `memcmp`.
#[inline]
fn same_short_bytes(a: &[u8], b: &[u8]) -> bool {
    match (<[u8; 8]>::try_from(a), <[u8; 8]>::try_from(b)) {
        (Ok(a), Ok(b)) => u64::from_ne_bytes(a) == u64::from_ne_bytes(b),
        _ => a == b,
    }
}

/// Whether `key` begins with `part`, which is then cut off it.
fn skip_prefix(key: &mut &[u8], part: &[u8]) -> bool {
    match key.strip_prefix(part) {
        Some(rest) => {
            *key = rest;
            true
        }
        None => false,
    }
}

/// The k-th end offset (u32) of a list of them.
#[inline]
fn end_at(ends: &[u8], k: usize) -> usize {
    let end: [u8; 4] = ends[4 * k..4 * k + 4].try_into().expect("4 bytes");
    u32::from_le_bytes(end) as usize
}

/// Whether `value` may be stored in `column`.
pub(crate) fn check_value(column: &Column, value: &Value) -> Result<(), RowError> {
    if value.is_null() {
        return if column.nullable {
            Ok(())
        } else {
            Err(RowError::NotNull {
                column: column.name.clone(),
            })
        };
    }
    check_type(column.column_type, value).map_err(|source| RowError::Value {
        column: column.name.clone(),
        source,
    })
}

fn check_type(column_type: ColumnType, value: &Value) -> Result<(), ValueError> {
    let out_of_range = |shown: String| {
        Err(ValueError::OutOfRange {
            value: shown,
            column_type,
        })
    };
    match (column_type, value) {
        (ColumnType::Int { bytes, signed }, Value::Int(_) | Value::UInt(_)) => {
            let number = match *value {
                Value::Int(n) => i128::from(n),
                Value::UInt(n) => i128::from(n),
                _ => unreachable!(),
            };
            let (min, max) = integer_range(bytes, signed);
            if (min..=max).contains(&number) {
                Ok(())
            } else {
                out_of_range(number.to_string())
            }
        }
        (ColumnType::Float, Value::Float(_)) | (ColumnType::Double, Value::Double(_)) => Ok(()),
        (ColumnType::Decimal { precision, scale }, Value::Decimal(decimal)) => {
            if decimal_fits(*decimal, precision, scale) {
                Ok(())
            } else {
                out_of_range(decimal.to_string())
            }
        }
        (_, Value::Bytes(bytes)) if column_type.holds_strings() => {
            check_string_length(column_type, bytes.len())
        }
        (ColumnType::Date, Value::Date(_))
        | (ColumnType::DateTime, Value::DateTime(_))
        | (ColumnType::Timestamp, Value::Timestamp(_)) => Ok(()),
        (ColumnType::Time, Value::Time(us)) => {
            if us.unsigned_abs() <= TIME_US_MAX as u64 {
                Ok(())
            } else {
                out_of_range(format!("{us} µs"))
            }
        }
        _ => Err(ValueError::WrongType {
            value: value.kind(),
            column_type,
        }),
    }
}

/// Whether a string of `length` bytes fits a column of `column_type`, which holds strings.
fn check_string_length(column_type: ColumnType, length: usize) -> Result<(), ValueError> {
    let length_max = match column_type {
        ColumnType::Char { length, .. } | ColumnType::Binary { length } => usize::from(length),
        _ => column_type.max_var_bytes() as usize,
    };
    if length <= length_max {
        Ok(())
    } else {
        Err(ValueError::TooLong {
            length,
            column_type,
        })
    }
}

/// Writes a checked, non-null value into its slot of the fixed part.
fn write_fixed(column_type: ColumnType, value: &Value, slot: &mut [u8]) {
    match (column_type, value) {
        (ColumnType::Int { bytes, .. }, Value::Int(n)) => {
            slot.copy_from_slice(&n.to_le_bytes()[..usize::from(bytes)])
        }
        (ColumnType::Int { bytes, .. }, Value::UInt(n)) => {
            slot.copy_from_slice(&n.to_le_bytes()[..usize::from(bytes)])
        }
        (_, Value::Float(x)) => slot.copy_from_slice(&x.to_le_bytes()),
        (_, Value::Double(x)) => slot.copy_from_slice(&x.to_le_bytes()),
        (_, Value::Decimal(d)) => slot.copy_from_slice(&d.unscaled.to_le_bytes()),
        (_, Value::Bytes(bytes)) => write_fixed_string(column_type, bytes, slot),
        (_, Value::Date(date)) => slot.copy_from_slice(&date.to_days().to_le_bytes()),
        (_, Value::Time(us) | Value::Timestamp(us)) => slot.copy_from_slice(&us.to_le_bytes()),
        (_, Value::DateTime(datetime)) => slot.copy_from_slice(&datetime.to_micros().to_le_bytes()),
        (_, Value::Null | Value::Int(_) | Value::UInt(_)) => {}
    }
}

/// Writes a checked string into its CHAR (padded with spaces) or BINARY slot.
fn write_fixed_string(column_type: ColumnType, bytes: &[u8], slot: &mut [u8]) {
    if let ColumnType::Char { .. } = column_type {
        slot.fill(b' ');
    }
    slot[..bytes.len()].copy_from_slice(bytes);
}

/// The integer in the `bytes`-wide slot at `offset`, sign-extended when `signed`. Each width
/// is a fixed-size load (a slot copied by its run-time width costs a `memcpy` call).
#[inline(always)]
fn int_at(fixed: &[u8], offset: usize, bytes: u8, signed: bool) -> u64 {
    fn le<const N: usize>(slot: &[u8]) -> [u8; N] {
        let mut word = [0; N];
        word.copy_from_slice(&slot[..N]);
        word
    }
    let slot = &fixed[offset..];
    let raw = match bytes {
        1 => u64::from(slot[0]),
        2 => u64::from(u16::from_le_bytes(le(slot))),
        4 => u64::from(u32::from_le_bytes(le(slot))),
        _ => u64::from_le_bytes(le(slot)),
    };
    debug_assert!(
        matches!(bytes, 1 | 2 | 4 | 8),
        "checked by ColumnType::check"
    );
    let unused_bits = 64 - 8 * u32::from(bytes);
    if signed {
        ((raw << unused_bits) as i64 >> unused_bits) as u64
    } else {
        raw
    }
}

/// `slot` may run past the column: only its first `fixed_bytes()` are read.
fn read_fixed(column_type: ColumnType, slot: &[u8]) -> Value {
    let slot = &slot[..column_type.fixed_bytes()];
    let le8 = |slot: &[u8], fill: u8| {
        let mut word = [fill; 8];
        word[..slot.len()].copy_from_slice(slot);
        word
    };
    match column_type {
        ColumnType::Int { signed: true, .. } => {
            let negative = slot.last().is_some_and(|&b| b & 0x80 != 0);
            Value::Int(i64::from_le_bytes(le8(
                slot,
                if negative { 0xFF } else { 0 },
            )))
        }
        ColumnType::Int { signed: false, .. } => Value::UInt(u64::from_le_bytes(le8(slot, 0))),
        ColumnType::Float => Value::Float(f32::from_le_bytes([slot[0], slot[1], slot[2], slot[3]])),
        ColumnType::Double => Value::Double(f64::from_le_bytes(le8(slot, 0))),
        ColumnType::Decimal { scale, .. } => {
            let mut word = [0u8; 16];
            word.copy_from_slice(slot);
            Value::Decimal(Decimal {
                unscaled: i128::from_le_bytes(word),
                scale,
            })
        }
        ColumnType::Char { .. } => Value::Bytes(column_type.unpadded(slot).to_vec()),
        ColumnType::Binary { .. } => Value::Bytes(slot.to_vec()),
        ColumnType::Date => {
            let days = i32::from_le_bytes([slot[0], slot[1], slot[2], slot[3]]);
            Date::from_days(days).map_or(Value::Null, Value::Date)
        }
        ColumnType::Time => Value::Time(i64::from_le_bytes(le8(slot, 0))),
        ColumnType::DateTime => DateTime::from_micros(i64::from_le_bytes(le8(slot, 0)))
            .map_or(Value::Null, Value::DateTime),
        ColumnType::Timestamp => Value::Timestamp(i64::from_le_bytes(le8(slot, 0))),
        ColumnType::VarChar { .. }
        | ColumnType::VarBinary { .. }
        | ColumnType::Text { .. }
        | ColumnType::Blob => {
            unreachable!("variable-length columns have no fixed slot")
        }
    }
}

mod from_wire;
#[cfg(test)]
mod tests;
