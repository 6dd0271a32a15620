//! An INSERT's rows against the keys they may clash on: INSERT IGNORE and ON DUPLICATE KEY
//! UPDATE, which must find a duplicate before writing it (an operation the cluster refuses
//! aborts the whole transaction), and the 1062 message, which names the clashing value.
//!
//! A row clashes on its primary key or on any unique index, under the key columns'
//! collations ('a' and 'A' under a `_ci` key). Keys are compared by their encoded group
//! keys in hash maps, so a statement of a million rows costs a million lookups, not the
//! pairs of rows.

use std::collections::{HashMap, HashSet};

use kista_client::schema::IndexKind;
use kista_client::types::{Collation, Value};
use kista_client::LockKind;

use super::{evaluate_assignments, same_value};
use crate::catalog::SqlTable;
use crate::error::{SqlError, SqlResult};
use crate::expr::{EvalContext, Expr};
use crate::select::encode_group_key;
use crate::session::Tx;

/// A row's primary key, then its key in each unique index in order (`None` where a
/// column of it is NULL: such a key clashes with none).
type RowKeys = Vec<Option<Vec<Value>>>;

/// Each row's keys and the stored row an exclusive read of them found first (primary key
/// first, then the unique indexes in order, as MySQL picks the row it ignores against or
/// updates).
pub(super) struct FoundKeys {
    row_keys: Vec<RowKeys>,
    /// The collations of each key's columns (the primary key's, then each unique index's).
    key_collations: Vec<Vec<Collation>>,
    found: Vec<Option<Vec<Value>>>,
}

/// For IGNORE and ON DUPLICATE KEY UPDATE: reads every row's keys under an exclusive lock
/// first, a full batch at a time.
pub(super) fn read_unique_keys(
    tx: &mut Tx,
    table: &SqlTable,
    rows: &[Vec<Value>],
) -> SqlResult<FoundKeys> {
    let unique = unique_indexes(table);
    let row_keys: Vec<RowKeys> = rows
        .iter()
        .map(|row| keys_of(table, &unique, row))
        .collect();
    let mut found = Vec::with_capacity(rows.len());
    let add = |tx: &mut Tx, keys: &RowKeys| read_keys(tx, table, &unique, keys);
    tx.in_batches(&row_keys, false, add, |_, _, ops, answered| {
        let first = ops.iter().find_map(|&op| answered.row(op));
        found.push(first.map(<[Value]>::to_vec));
        Ok(())
    })?;
    let schema = table.schema();
    let collations_of = |columns: &[usize]| -> Vec<Collation> {
        (columns.iter())
            .map(|&c| schema.columns[c].column_type.collation())
            .collect()
    };
    let key_collations = std::iter::once(collations_of(&schema.primary_key))
        .chain(unique.iter().map(|(_, columns)| collations_of(columns)))
        .collect();
    Ok(FoundKeys {
        row_keys,
        key_collations,
        found,
    })
}

/// Adds exclusive reads of one row's keys to the batch: by primary key, then by each
/// unique index whose key has no NULL.
fn read_keys(
    tx: &mut Tx,
    table: &SqlTable,
    unique: &[(String, Vec<usize>)],
    keys: &RowKeys,
) -> SqlResult<Vec<kista_client::OpIndex>> {
    let mut ops = Vec::with_capacity(keys.len());
    for (position, key) in keys.iter().enumerate() {
        let Some(key) = key else { continue };
        let lock = LockKind::Exclusive;
        ops.push(match position.checked_sub(1) {
            None => tx.transaction.read(&table.table, key, lock)?,
            Some(index) => {
                let name = &unique[index].0;
                (tx.transaction).read_unique(&table.table, name, key, lock, Vec::new())?
            }
        });
    }
    Ok(ops)
}

/// What IGNORE or ON DUPLICATE KEY UPDATE did: rows affected as MySQL counts them (1 per
/// insert, 2 per update), and rows ignored.
pub(super) struct DuplicateOutcome {
    pub affected: u64,
    pub ignored: u64,
}

/// Inserts the rows whose keys clash with no row (found, or written earlier by the
/// statement); a clashing row is updated by `assignments` (ON DUPLICATE KEY UPDATE) or
/// else ignored. Each row meets the rows as the statement's earlier rows left them:
/// `(1, 'a'), (1, 'b')` inserts the first and updates it with the second, as MySQL does.
pub(super) fn insert_unless_duplicate(
    tx: &mut Tx,
    table: &SqlTable,
    rows: &[Vec<Value>],
    keys: &FoundKeys,
    assignments: Option<&[(usize, Expr)]>,
    ctx: &EvalContext,
) -> SqlResult<DuplicateOutcome> {
    let mut outcome = DuplicateOutcome {
        affected: 0,
        ignored: 0,
    };
    let unique = unique_indexes(table);
    let mut written = WrittenRows::new(keys.key_collations.clone());
    for ((row, row_keys), found) in rows.iter().zip(&keys.row_keys).zip(&keys.found) {
        // The row it clashes with as it stands now: one the statement wrote (a found row
        // the statement updated is that one, matched by its primary key), else the row
        // found.
        let found_key = found.as_ref().map(|found| vec![Some(table.key_of(found))]);
        let earlier = [Some(row_keys), found_key.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(|keys| written.clashing(keys))
            .min();
        let existing = match earlier {
            Some(position) => Some(written.rows[position].1.clone()),
            None => found.clone(),
        };
        match (existing, assignments) {
            (None, _) => {
                tx.wrote_row(table.table.id, || table.key_of(row));
                tx.undo_insert(&table.table, || table.key_of(row))?;
                tx.transaction.insert(&table.table, row)?;
                crate::table_copy::mirror(tx, table, (None, Some(row)), ctx)?;
                written.put(None, row_keys.clone(), row.clone());
                outcome.affected += 1;
            }
            (Some(existing), Some(assignments)) => {
                let updated = update_duplicate(tx, table, &existing, row, assignments, ctx)?;
                if let Some(updated) = updated {
                    written.put(earlier, keys_of(table, &unique, &updated), updated);
                    outcome.affected += 2;
                }
            }
            (Some(_), None) => outcome.ignored += 1,
        }
        tx.send_when_full()?;
    }
    Ok(outcome)
}

/// The rows an INSERT statement inserted or updated, as it left them, found by any of
/// their keys.
struct WrittenRows {
    key_collations: Vec<Vec<Collation>>,
    rows: Vec<(RowKeys, Vec<Value>)>,
    /// (which key, its encoding) → the row in `rows` that has it.
    by_key: HashMap<(usize, Vec<u8>), usize>,
}

impl WrittenRows {
    fn new(key_collations: Vec<Vec<Collation>>) -> Self {
        Self {
            key_collations,
            rows: Vec::new(),
            by_key: HashMap::new(),
        }
    }

    /// The earliest written row one of `keys` clashes with (`keys` may hold only the
    /// first few keys, such as a primary key alone).
    fn clashing(&self, keys: &RowKeys) -> Option<usize> {
        (self.encoded(keys).iter())
            .filter_map(|key| self.by_key.get(key).copied())
            .min()
    }

    /// Records `row` with `keys`, in place of the row at `replacing` if given.
    fn put(&mut self, replacing: Option<usize>, keys: RowKeys, row: Vec<Value>) {
        let position = match replacing {
            Some(position) => {
                for old in self.encoded(&self.rows[position].0) {
                    self.by_key.remove(&old);
                }
                self.rows[position] = (keys, row);
                position
            }
            None => {
                self.rows.push((keys, row));
                self.rows.len() - 1
            }
        };
        for key in self.encoded(&self.rows[position].0) {
            self.by_key.insert(key, position);
        }
    }

    fn encoded(&self, keys: &RowKeys) -> Vec<(usize, Vec<u8>)> {
        (keys.iter().zip(&self.key_collations).enumerate())
            .filter_map(|(which, (key, collations))| {
                Some((which, encode_group_key(key.as_ref()?, collations)))
            })
            .collect()
    }
}

/// ON DUPLICATE KEY UPDATE of `existing` for the clashing `row`: the row as updated, or
/// `None` when the assignments change nothing.
fn update_duplicate(
    tx: &mut Tx,
    table: &SqlTable,
    existing: &[Value],
    row: &[Value],
    assignments: &[(usize, Expr)],
    ctx: &EvalContext,
) -> SqlResult<Option<Vec<Value>>> {
    let key = table.key_of(existing);
    let mut both = existing.to_vec();
    both.extend(row.iter().cloned());
    let changed: Vec<(u16, Value)> = evaluate_assignments(table, assignments, &both, ctx)?
        .into_iter()
        .filter(|(c, v)| !same_value(&existing[usize::from(*c)], v))
        .collect();
    if changed.is_empty() {
        return Ok(None);
    }
    let updated = super::with_changes(existing, &changed);
    table.checks.verify(&updated, ctx)?;
    tx.wrote_row(table.table.id, || key.clone());
    tx.undo_change(&table.table, existing)?;
    tx.transaction.update(&table.table, &key, changed)?;
    crate::table_copy::mirror(tx, table, (Some(existing), Some(&updated)), ctx)?;
    Ok(Some(updated))
}

/// A row's keys, its unique indexes' in the order of `unique`.
fn keys_of(table: &SqlTable, unique: &[(String, Vec<usize>)], row: &[Value]) -> RowKeys {
    let unique_keys = unique
        .iter()
        .map(|(_, columns)| unique_key_of(row, columns));
    std::iter::once(Some(table.key_of(row)))
        .chain(unique_keys)
        .collect()
}

/// The table's unique indexes: name and columns.
pub(super) fn unique_indexes(table: &SqlTable) -> Vec<(String, Vec<usize>)> {
    table
        .table
        .indexes()
        .filter(|(_, index)| index.kind == IndexKind::Unique)
        .map(|(_, index)| (index.name.clone(), index.columns.clone()))
        .collect()
}

/// A full row's key in a unique index on `columns`; `None` if a part is NULL.
fn unique_key_of(row: &[Value], columns: &[usize]) -> Option<Vec<Value>> {
    columns
        .iter()
        .map(|&c| Some(row[c].clone()).filter(|v| *v != Value::Null))
        .collect()
}

/// MySQL's 1062 message for rows the cluster refused as a duplicate: the key the cluster
/// names (a unique index, else the primary key) as `table.key`, with the clashing value
/// where the rows show it (a statement of one row, or the first row of the statement
/// whose key an earlier one has); the cluster's own words never reach the client.
pub(crate) fn duplicate_message(
    error: SqlError,
    table: &SqlTable,
    rows: &[Vec<Value>],
) -> SqlError {
    if error.code != 1062 {
        return error;
    }
    let named =
        (error.message.split("unique index `").nth(1)).and_then(|rest| rest.split('`').next());
    let unique = unique_indexes(table);
    let (key_name, columns) = match named.and_then(|n| unique.iter().find(|(name, _)| name == n)) {
        Some((name, columns)) => (name.as_str(), columns.clone()),
        None if table.hidden_key.is_some() => return error,
        None => (
            crate::ddl::PRIMARY_INDEX,
            table.schema().primary_key.clone(),
        ),
    };
    let collations: Vec<Collation> = (columns.iter())
        .map(|&c| table.schema().columns[c].column_type.collation())
        .collect();
    let mut keys = rows.iter().filter_map(|row| unique_key_of(row, &columns));
    let clashing = match rows {
        [_] => keys.next(),
        _ => {
            let mut seen = HashSet::new();
            keys.find(|key| !seen.insert(encode_group_key(key, &collations)))
        }
    };
    let value = clashing.map(|values| {
        let text: Vec<String> = (values.iter())
            .map(|v| String::from_utf8_lossy(&crate::value::to_text(v)).into_owned())
            .collect();
        text.join("-")
    });
    SqlError::duplicate_entry(&format!("{}.{key_name}", table.name), value.as_deref())
}
