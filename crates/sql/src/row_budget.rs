//! What one statement may hold of rows in the front end.
//!
//! A result, a join's rows and the rows an UPDATE or DELETE changes are built in memory
//! before they are sent or written, so each place that collects rows counts them and
//! their bytes, and the statement fails with 1104 past either limit instead of taking the
//! front end's memory: a million rows of a few columns, or a few thousand rows of large
//! BLOBs, not gigabytes of either.

use kista_client::types::Value;

use crate::error::{SqlError, SqlResult};

/// Rows one result may hold.
pub const RESULT_ROWS_MAX: usize = 1_000_000;
/// Bytes of rows one statement may collect in one place unless the front end is started
/// with another `--result-memory`: twice a million rows of sysbench's table.
pub const RESULT_BYTES_MAX_DEFAULT: usize = 512 << 20;

/// Rows collected in one place, with what they take.
pub(crate) struct RowBudget {
    rows: usize,
    bytes: usize,
    bytes_max: usize,
    /// What the statement does with them, for the error: "The SELECT would examine".
    doing: &'static str,
}

impl RowBudget {
    pub fn new(bytes_max: usize, doing: &'static str) -> Self {
        Self {
            rows: 0,
            bytes: 0,
            bytes_max,
            doing,
        }
    }

    /// Counts `row`: 1104 once the rows are more than [`RESULT_ROWS_MAX`] or their bytes
    /// more than the budget.
    pub fn count(&mut self, row: &[Value]) -> SqlResult<()> {
        self.count_bytes(row_bytes(row))
    }

    /// Counts a row made of `parts` (a value an aggregate keeps, with its sort keys), as
    /// [`RowBudget::count`] counts a row.
    pub fn count_parts(&mut self, parts: &[&[Value]]) -> SqlResult<()> {
        self.count_bytes(parts.iter().map(|part| row_bytes(part)).sum())
    }

    fn count_bytes(&mut self, bytes: usize) -> SqlResult<()> {
        self.rows += 1;
        self.bytes += bytes;
        let doing = self.doing;
        if self.rows > RESULT_ROWS_MAX {
            let message =
                format!("{doing} more than {RESULT_ROWS_MAX} rows, the front end's limit");
            return Err(SqlError::new(1104, "42000", message));
        }
        if self.bytes > self.bytes_max {
            let message = format!(
                "{doing} more than {} bytes of rows, the front end's limit (kista sql \
                 --result-memory)",
                self.bytes_max
            );
            return Err(SqlError::new(1104, "42000", message));
        }
        Ok(())
    }
}

/// Rows collected in one place, refused past the budget.
pub(crate) struct BoundedRows {
    pub rows: Vec<Vec<Value>>,
    budget: RowBudget,
}

impl BoundedRows {
    /// `doing`: what the statement does with them, for 1104's message.
    pub fn new(bytes_max: usize, doing: &'static str) -> Self {
        Self {
            rows: Vec::new(),
            budget: RowBudget::new(bytes_max, doing),
        }
    }

    /// Keeps `row`, or 1104 past the budget.
    pub fn push(&mut self, row: Vec<Value>) -> SqlResult<()> {
        self.budget.count(&row)?;
        self.rows.push(row);
        Ok(())
    }
}

/// What a row takes in memory as values: the row, each value, and the bytes of each
/// string.
pub(crate) fn row_bytes(row: &[Value]) -> usize {
    let strings: usize = (row.iter())
        .map(|value| match value {
            Value::Bytes(bytes) => bytes.len(),
            _ => 0,
        })
        .sum();
    std::mem::size_of::<Vec<Value>>() + std::mem::size_of_val(row) + strings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_refuses_the_row_past_its_bytes_or_past_a_million_rows() {
        let blob = vec![Value::Int(1), Value::Bytes(vec![0; 1000])];
        let one = row_bytes(&blob);
        assert!(one > 1000 && one < 1200, "{one}");
        let mut budget = RowBudget::new(10 * one, "The SELECT would examine");
        for _ in 0..10 {
            budget.count(&blob).unwrap();
        }
        let error = budget.count(&blob).unwrap_err();
        assert_eq!(error.code, 1104);
        assert!(
            error.message.contains("--result-memory"),
            "{}",
            error.message
        );

        let mut rows = RowBudget::new(usize::MAX, "The join would produce");
        let small = [Value::Int(1)];
        for _ in 0..RESULT_ROWS_MAX {
            rows.count(&small).unwrap();
        }
        let error = rows.count(&small).unwrap_err();
        assert!(error.message.contains("1000000 rows"), "{}", error.message);
    }
}
