//! Committed key reads, the same wherever they run: on the owning `ldm`, on a `query`
//! instance, or in the coordinator that received them. They take no row lock and see only
//! committed versions; the partition's shared lock is held only while the row is copied
//! out, not while it is sent.

use kista_runtime::Context;
use kista_signal::{SectionHandle, TypedSignal};
use std::sync::RwLock;

use kista_storage::codec::Writer;
use kista_storage::partition::Partition;
use kista_storage::row::RowLayout;
use kista_storage::types::Value;

use crate::protocol::{ErrorCode, KeyBodyRef, Prepare, ReadResult, RowBody};
use crate::registry::read_partition;
use crate::send_with_bytes;

/// Reads the row `body.key` names, and sends its projected columns to the client. Returns
/// how many rows were sent (0 when there is no such row).
pub(crate) fn read_committed_row(
    ctx: &mut Context,
    partition: &RwLock<Partition>,
    prepare: &Prepare,
    body: &KeyBodyRef,
) -> Result<u32, (ErrorCode, String)> {
    ROW_SCRATCH.with_borrow_mut(|row| {
        row.clear();
        let found = {
            let partition = read_partition(partition);
            // Encoded while the partition's shared lock is held, sent after it is released.
            partition.read_committed(body.key).map(|(fixed, var)| {
                let writer = &mut Writer(row);
                partition
                    .layout()
                    .write_projected(fixed, var, body.columns(), writer)
            })
        };
        if found.is_none() {
            return Ok(0);
        }
        send_encoded_row(ctx, prepare, row)?;
        Ok(1)
    })
}

/// Sends one read row to the client of `prepare`.
pub(crate) fn send_row(
    ctx: &mut Context,
    prepare: &Prepare,
    values: &[Value],
) -> Result<(), (ErrorCode, String)> {
    ROW_SCRATCH.with_borrow_mut(|row| {
        row.clear();
        RowBody::encode(values, row);
        send_encoded_row(ctx, prepare, row)
    })
}

/// Sends a row already encoded as a `RowBody` to the client of `prepare`.
fn send_encoded_row(
    ctx: &mut Context,
    prepare: &Prepare,
    row: &[u8],
) -> Result<(), (ErrorCode, String)> {
    let result = ReadResult {
        client_tx: prepare.client_tx,
        op_index: prepare.op_index,
        found: 1,
    };
    let signal = result.to_signal(prepare.client, ctx.address());
    if send_with_bytes(ctx, signal, row) {
        Ok(())
    } else {
        Err((ErrorCode::Overloaded, "no section free for the row".into()))
    }
}

/// Runs `read` with a copy of section `handle`'s bytes, so it may send signals while it
/// uses them (a section's bytes are reachable only through a borrow of the context). The
/// copy goes to a buffer each thread keeps, so it allocates nothing once warm.
pub(crate) fn with_section_copy<R>(
    ctx: &mut Context,
    handle: SectionHandle,
    read: impl FnOnce(&mut Context, &[u8]) -> R,
) -> R {
    BODY_SCRATCH.with_borrow_mut(|copy| {
        copy.clear();
        copy.extend_from_slice(&ctx.held_section(handle));
        read(ctx, copy)
    })
}

thread_local! {
    /// Where [`with_section_copy`] copies operation bodies.
    static BODY_SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Where reads encode rows before they are copied into a section; keeps the capacity of
    /// the largest row it has seen, so no read allocates for its row.
    static ROW_SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
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
