//! Committed key reads, the same wherever they run: on the owning `ldm`, on a `query`
//! instance, or in the coordinator that received them. They take no row lock and see only
//! committed versions; the caller holds the partition's lock (shared or exclusive) so the
//! row cannot change while it is copied out.

use kista_runtime::Context;
use kista_signal::TypedSignal;
use kista_storage::partition::{IndexId, Lookup, Partition};
use kista_storage::row::RowLayout;
use kista_storage::types::Value;

use crate::protocol::{ErrorCode, KeyBody, Prepare, ReadResult, RowBody, PRIMARY_KEY};
use crate::{error_code_of, send_with_bytes};

/// Reads the row `body.key` names, and sends its projected columns to the client. Returns
/// how many rows were sent (0 when there is no such row).
pub(crate) fn read_committed_row(
    ctx: &mut Context,
    partition: &Partition,
    prepare: &Prepare,
    body: &KeyBody,
) -> Result<u32, (ErrorCode, String)> {
    let lookup = lookup_of(prepare.index_id, &body.key);
    let row = partition
        .read_committed(lookup)
        .map_err(|error| (error_code_of(&error), error.to_string()))?;
    let Some((fixed, var)) = row else {
        return Ok(0);
    };
    let values = project(partition.layout(), fixed, var, &body.columns);
    send_row(ctx, prepare, &values)?;
    Ok(1)
}

/// Sends one read row to the client of `prepare`.
pub(crate) fn send_row(
    ctx: &mut Context,
    prepare: &Prepare,
    values: &[Value],
) -> Result<(), (ErrorCode, String)> {
    let mut row = Vec::new();
    RowBody::encode(values, &mut row);
    let result = ReadResult {
        client_tx: prepare.client_tx,
        op_index: prepare.op_index,
        found: 1,
    };
    let signal = result.to_signal(prepare.client, ctx.address());
    if send_with_bytes(ctx, signal, &row) {
        Ok(())
    } else {
        Err((ErrorCode::Overloaded, "no section free for the row".into()))
    }
}

pub(crate) fn lookup_of(index_id: u32, key: &[u8]) -> Lookup<'_> {
    if index_id == PRIMARY_KEY {
        Lookup::Primary(key)
    } else {
        Lookup::Unique(IndexId(index_id), key)
    }
}

/// The values of the projected columns (all when `columns` is empty); unknown columns read
/// as NULL rather than failing a read the schema version already vouched for.
pub(crate) fn project(layout: &RowLayout, fixed: &[u8], var: &[u8], columns: &[u16]) -> Vec<Value> {
    if columns.is_empty() {
        return layout.values(fixed, var);
    }
    columns
        .iter()
        .map(|&c| {
            let c = usize::from(c);
            if c < layout.column_count() {
                layout.value(fixed, var, c)
            } else {
                Value::Null
            }
        })
        .collect()
}
