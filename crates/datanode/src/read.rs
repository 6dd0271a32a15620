//! Committed key reads, the same wherever they run: on the owning `ldm`, on a `query`
//! instance, or in the coordinator that received them. They take no row lock and see only
//! committed versions; the partition's shared lock is held only while the row is copied
//! out, not while it is sent.

use kista_runtime::Context;
use kista_signal::{BlockAddress, SectionHandle, TypedSignal};
use std::sync::RwLock;

use kista_storage::codec::Writer;
use kista_storage::partition::Partition;
use kista_storage::row::RowLayout;
use kista_storage::types::Value;

use crate::protocol::{ErrorCode, KeyBodyRef, Prepare, ReadCommitted, ReadResult, RowBody};
use crate::registry::read_partition;
use crate::send_with_bytes;

/// Who a committed read answers, and how.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReadAnswer {
    pub client: BlockAddress,
    pub client_tx: u64,
    pub op_index: u32,
    /// The read is its transaction's only operation and commits it: one `ReadCommitted`
    /// carries the row (or its absence) and the commit. Otherwise a `ReadResult` carries
    /// the row when there is one, and the coordinator's `ExecuteConf` ends the batch.
    pub whole_transaction: bool,
}

impl ReadAnswer {
    /// The answer to the client of an operation that is part of a transaction.
    pub fn row_of(prepare: &Prepare) -> Self {
        Self {
            client: prepare.client,
            client_tx: prepare.client_tx,
            op_index: prepare.op_index,
            whole_transaction: false,
        }
    }
}

/// Reads the committed row the `KeyBody` in `section` names and answers `answer`'s client;
/// `encode` finds the partition and encodes the row (see [`encode_committed_row`]). The body
/// is read in place: its borrow of the context ends before the answer is sent. Returns how
/// many rows were sent (0 when there is no such row).
pub(crate) fn answer_committed_read(
    ctx: &mut Context,
    section: SectionHandle,
    answer: ReadAnswer,
    encode: impl FnOnce(&KeyBodyRef, &mut Vec<u8>) -> Result<bool, (ErrorCode, String)>,
) -> Result<u32, (ErrorCode, String)> {
    with_row_scratch(|row| {
        let found = {
            let bytes = ctx.held_section(section);
            let body = KeyBodyRef::parse(&bytes).map_err(body_error)?;
            encode(&body, row)?
        };
        send_answer(ctx, answer, found.then_some(row))
    })
}

/// The error for an operation body that does not decode.
pub(crate) fn body_error(error: kista_storage::codec::CodecError) -> (ErrorCode, String) {
    (ErrorCode::BadRequest, format!("operation body: {error}"))
}

/// Encodes the projected columns of the committed row `body.key` names into `row` (as a
/// `RowBody`, after clearing it); `false` when there is no such row.
pub(crate) fn encode_committed_row(
    partition: &RwLock<Partition>,
    body: &KeyBodyRef,
    row: &mut Vec<u8>,
) -> bool {
    row.clear();
    let partition = read_partition(partition);
    // Encoded while the partition's shared lock is held, sent after it is released.
    partition
        .read_committed(body.key)
        .map(|(fixed, var)| {
            let layout = partition.layout();
            layout.write_projected(fixed, var, body.columns(), &mut Writer(row))
        })
        .is_some()
}

/// Runs `read` with this thread's buffer for encoded rows: it keeps the capacity of the
/// largest row it has seen, so no read allocates for its row.
pub(crate) fn with_row_scratch<R>(read: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    ROW_SCRATCH.with_borrow_mut(read)
}

/// Sends one read row to the client of `prepare`.
pub(crate) fn send_row(
    ctx: &mut Context,
    prepare: &Prepare,
    values: &[Value],
) -> Result<(), (ErrorCode, String)> {
    with_row_scratch(|row| {
        row.clear();
        RowBody::encode(values, row);
        send_answer(ctx, ReadAnswer::row_of(prepare), Some(row)).map(drop)
    })
}

/// Sends a read's answer: its row (a `RowBody`) if one was found. Returns how many rows
/// were sent.
pub(crate) fn send_answer(
    ctx: &mut Context,
    answer: ReadAnswer,
    row: Option<&[u8]>,
) -> Result<u32, (ErrorCode, String)> {
    let found = u32::from(row.is_some());
    let signal = if answer.whole_transaction {
        let conf = ReadCommitted {
            client_tx: answer.client_tx,
            op_index: answer.op_index,
            found,
        };
        conf.to_signal(answer.client, ctx.address())
    } else if row.is_some() {
        let result = ReadResult {
            client_tx: answer.client_tx,
            op_index: answer.op_index,
            found,
        };
        result.to_signal(answer.client, ctx.address())
    } else {
        return Ok(0);
    };
    if send_with_bytes(ctx, signal, row.unwrap_or_default()) {
        Ok(found)
    } else {
        Err((ErrorCode::Overloaded, "no section free for the row".into()))
    }
}

thread_local! {
    /// Where reads encode rows before they are sent ([`with_row_scratch`]).
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
