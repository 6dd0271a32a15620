//! A whole row written straight from its values as a client encoded them
//! (`codec::write_values`). A load's inserts are a data node's commonest writes, and decoding
//! their values first (a `Value` each, text copied into a buffer of its own, each date
//! worked out into its calendar fields and back) cost about as much as the rest of
//! writing the row. Here each value is checked and copied into its place once.

use super::{check_string_length, check_value, write_fixed_string, Place, RowError};
use super::{decimal_fits, integer_range, ColumnType, Decimal, RowLayout, Value, ValueError};
use crate::codec::{read_value_ref, read_values_into, Reader, ValueRef};

impl RowLayout {
    /// [`RowLayout::encode`] of the values `encoded` holds (as `codec::write_values` wrote
    /// them): the same row, or the same error, a malformed encoding being
    /// [`RowError::Malformed`]. On error `fixed` and `var` hold part of a row.
    pub fn encode_from_wire(
        &self,
        encoded: &[u8],
        fixed: &mut [u8],
        var: &mut Vec<u8>,
    ) -> Result<(), RowError> {
        let mut input = Reader::new(encoded);
        if input.count(1)? != self.base_columns {
            // Values of added columns (which go in the dynamic part), or a count that is
            // wrong: rare, so through `Value`s.
            return self.encode_through_values(encoded, fixed, var);
        }
        assert_eq!(
            fixed.len(),
            self.fixed_bytes,
            "fixed part of the wrong size"
        );
        fixed.fill(0);
        var.clear();
        var.resize(4 * self.var_columns, 0);
        for index in 0..self.base_columns {
            let value = read_value_ref(&mut input)?;
            self.put_value_ref(index, value, fixed, var)?;
        }
        input.finish()?;
        Ok(())
    }

    #[cold]
    fn encode_through_values(
        &self,
        encoded: &[u8],
        fixed: &mut [u8],
        var: &mut Vec<u8>,
    ) -> Result<(), RowError> {
        let mut input = Reader::new(encoded);
        let mut values = Vec::new();
        read_values_into(&mut input, &mut values)?;
        input.finish()?;
        self.encode(&values, fixed, var)
    }

    /// Checks base column `index`'s value and writes it into its place: the kinds a
    /// client sends for the column's type directly, anything else (NULL, another type's
    /// value, or one the check refuses) through its `Value`.
    #[inline]
    fn put_value_ref(
        &self,
        index: usize,
        value: ValueRef,
        fixed: &mut [u8],
        var: &mut Vec<u8>,
    ) -> Result<(), RowError> {
        let column = &self.columns[index];
        let column_type = column.column_type;
        let checked = |result: Result<(), ValueError>| {
            result.map_err(|source| RowError::Value {
                column: column.name.clone(),
                source,
            })
        };
        match (self.places[index], value) {
            (Place::Variable(k), ValueRef::Bytes(bytes)) if column_type.holds_strings() => {
                checked(check_string_length(column_type, bytes.len()))?;
                var.extend_from_slice(bytes);
                self.end_variable(k, var);
            }
            (Place::Fixed(offset), ValueRef::Bytes(bytes)) if column_type.holds_strings() => {
                checked(check_string_length(column_type, bytes.len()))?;
                let slot = &mut fixed[offset..offset + column_type.fixed_bytes()];
                write_fixed_string(column_type, bytes, slot);
            }
            (Place::Fixed(offset), ValueRef::Int(n)) if int_fits(column_type, n) => {
                write_int(
                    n as u64,
                    &mut fixed[offset..offset + column_type.fixed_bytes()],
                );
            }
            (Place::Fixed(offset), ValueRef::UInt(n)) if int_fits(column_type, n) => {
                write_int(n, &mut fixed[offset..offset + column_type.fixed_bytes()]);
            }
            (Place::Fixed(offset), ValueRef::Decimal(decimal))
                if decimal_fits_type(column_type, decimal) =>
            {
                fixed[offset..offset + 16].copy_from_slice(&decimal.unscaled.to_le_bytes());
            }
            (Place::Fixed(offset), ValueRef::Days(days)) if column_type == ColumnType::Date => {
                fixed[offset..offset + 4].copy_from_slice(&days.to_le_bytes());
            }
            (Place::Fixed(offset), ValueRef::Micros(micros))
                if column_type == ColumnType::DateTime =>
            {
                fixed[offset..offset + 8].copy_from_slice(&micros.to_le_bytes());
            }
            (_, value) => self.put_value(index, &value.into_value(), fixed, var)?,
        }
        Ok(())
    }

    /// [`Self::put_value_ref`] for any value: checked, then written.
    fn put_value(
        &self,
        index: usize,
        value: &Value,
        fixed: &mut [u8],
        var: &mut Vec<u8>,
    ) -> Result<(), RowError> {
        check_value(&self.columns[index], value)?;
        self.write_base_value(index, value, fixed, var);
        Ok(())
    }
}

/// Whether integer `n` is a valid value of `column_type` (an integer type it fits).
#[inline]
fn int_fits(column_type: ColumnType, n: impl Into<i128>) -> bool {
    match column_type {
        ColumnType::Int { bytes, signed } => {
            let (min, max) = integer_range(bytes, signed);
            (min..=max).contains(&n.into())
        }
        _ => false,
    }
}

/// Writes an integer into its slot, the slot's width of its little-endian bytes: one
/// fixed-size store per width (copying by the slot's run-time width calls `memcpy`).
#[inline]
fn write_int(n: u64, slot: &mut [u8]) {
    let bytes = n.to_le_bytes();
    match slot.len() {
        1 => slot[0] = bytes[0],
        2 => slot.copy_from_slice(&bytes[..2]),
        4 => slot.copy_from_slice(&bytes[..4]),
        _ => slot.copy_from_slice(&bytes),
    }
}

/// Whether `decimal` is a valid value of `column_type` (a DECIMAL of its scale it fits).
#[inline]
fn decimal_fits_type(column_type: ColumnType, decimal: Decimal) -> bool {
    match column_type {
        ColumnType::Decimal { precision, scale } => decimal_fits(decimal, precision, scale),
        _ => false,
    }
}
