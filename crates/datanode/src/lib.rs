//! The data node's blocks: the schema dictionary (`dict`), transaction coordinators (`tc`),
//! local data managers (`ldm`) and distribution (`dist`) over the cluster's node groups
//! (`cluster`), with the protocol they speak.
//!
//! Blocks are deterministic state machines on the runtime: they keep their state, react to
//! signals, and reach the world only through their `Context`. Partitions are the one thing
//! shared between blocks: an `ldm` owns them and `query` instances read them through the
//! [`registry`], each partition behind its own reader/writer lock, with the node's
//! [`read_lease`] that says whether its replicas may answer reads at all.

pub mod arbitration;
pub mod backup_files;
pub mod cluster;
pub mod dict;
pub mod dist;
pub mod fragment_scan;
pub mod gcp;
pub mod info;
pub mod ldm;
pub mod membership;
pub mod metrics;
pub mod node;
pub mod protocol;
pub mod query;
mod read;
pub mod read_lease;
pub mod registry;
pub mod router;
pub mod tc;
pub mod twin_file;

use kista_runtime::Context;
use kista_signal::{SectionHandle, Signal, TypedSignal};
use kista_storage::partition::{OperationError, OperationErrorKind};

use protocol::{ErrorCode, Prepare, PrepareRef};

/// Sends `signal` with `bytes` as its section (none when empty). When no section is free
/// the signal goes without it and `false` says the bytes were lost.
pub(crate) fn send_with_bytes(ctx: &mut Context, signal: Signal, bytes: &[u8]) -> bool {
    if ctx.send_with_bytes(signal, bytes).is_ok() {
        return true;
    }
    ctx.send(signal);
    false
}

/// Sends `signal` carrying `section`'s bytes: the section itself on its last use, else a copy.
/// When no section is free for the copy the signal goes without one, and its receiver refuses
/// it as a request without a body.
pub(crate) fn send_sharing_section(
    ctx: &mut Context,
    mut signal: Signal,
    section: SectionHandle,
    last_use: bool,
) {
    let carried = if last_use {
        Some(section)
    } else {
        let bytes = ctx.held_section(section).to_vec();
        ctx.allocate_section(&bytes).ok()
    };
    if let Some(carried) = carried {
        ctx.attach_section(&mut signal, carried);
    }
    ctx.send(signal);
}

/// Tells a coordinator that an operation failed on this replica or executor.
pub(crate) fn refuse_prepare(ctx: &mut Context, prepare: &Prepare, code: ErrorCode, message: &str) {
    let refusal = PrepareRef {
        transaction: prepare.transaction,
        op_ref: prepare.op_ref,
        code: code as u32,
        op_index: prepare.op_index,
    };
    send_with_bytes(
        ctx,
        refusal.to_signal(prepare.tc, ctx.address()),
        message.as_bytes(),
    );
}

/// The stable code for a storage error.
pub(crate) fn error_code_of(error: &OperationError) -> ErrorCode {
    match error.kind() {
        OperationErrorKind::NotFound { .. } => ErrorCode::NotFound,
        OperationErrorKind::Duplicate { .. } => ErrorCode::Duplicate,
        OperationErrorKind::Memory(_) => ErrorCode::DataMemoryFull,
        OperationErrorKind::Locks(_) => ErrorCode::TooManyLocks,
        // The client's definition names an index dropped since.
        OperationErrorKind::NoSuchIndex { .. } => ErrorCode::SchemaVersion,
        OperationErrorKind::PrimaryKeyUpdate { .. }
        | OperationErrorKind::NotOrdered { .. }
        | OperationErrorKind::AnyVersionScan { .. }
        | OperationErrorKind::IndexBuilding { .. }
        | OperationErrorKind::NoSuchColumn { .. }
        | OperationErrorKind::Row(_) => ErrorCode::BadRequest,
        OperationErrorKind::Schema(_) => ErrorCode::BadSchema,
    }
}
