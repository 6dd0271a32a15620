//! The operation a data manager runs now: its body, decoded into buffers kept for their
//! capacity, and what running it left behind for the coordinator and the REDO log.

use std::sync::RwLock;

use kista_runtime::Context;
use kista_storage::codec::CodecError;
use kista_storage::locks::{LockMode, TransactionId};
use kista_storage::partition::{
    KeyChange, OperationError, OperationErrorKind, Outcome, Partition, UniqueChange,
};
use kista_storage::redo::{delete_row_record_bytes, write_row_record_bytes};
use kista_storage::row::RowLayout;

use super::lock_partition;
use crate::error_code_of;
use crate::protocol::*;
use crate::read::{project, send_row};

#[derive(Default)]
pub(super) struct RunningOperation {
    /// A read's, an update's or a delete's body.
    body: KeyBody,
    /// An insert's or upsert's values as the client encoded them: the partition writes
    /// its row straight from them (`Partition::insert_from_wire`).
    row_values: Vec<u8>,
    /// How the write that just ran changed its row's unique keys, for the coordinator.
    pub(super) unique_changes: Vec<UniqueChange>,
    /// The foreign-key events of the write that just ran, for the coordinator.
    pub(super) key_changes: Vec<KeyChange>,
    /// The REDO bytes the write that just ran will log at commit.
    pub(super) staged_redo_bytes: u64,
}

impl RunningOperation {
    /// Takes in the body of the next operation, of `kind`.
    pub(super) fn take_body(
        &mut self,
        kind: OperationKind,
        bytes: &[u8],
    ) -> Result<(), CodecError> {
        match kind {
            OperationKind::Insert | OperationKind::Write => {
                let body = KeyBodyRef::parse(bytes)?;
                self.row_values.clear();
                self.row_values.extend_from_slice(body.encoded_values());
                Ok(())
            }
            OperationKind::Read | OperationKind::Update | OperationKind::Delete => {
                self.body.decode_into(bytes)
            }
        }
    }

    /// Runs the operation whose body [`Self::take_body`] took.
    pub(super) fn execute(
        &mut self,
        ctx: &mut Context,
        prepare: &Prepare,
        partition: &RwLock<Partition>,
        layout: &RowLayout,
    ) -> Result<Outcome<u32>, (ErrorCode, String)> {
        let body = &self.body;
        let key = body.key.as_slice();
        let tx = TransactionId(prepare.transaction);
        let mut partition = lock_partition(partition);
        let described = |error: OperationError| (error_code_of(&error), error.to_string());
        let outcome = match prepare.kind {
            OperationKind::Read => {
                let mode = match prepare.lock {
                    LockKind::Committed => unreachable!("committed reads returned above"),
                    LockKind::Shared => LockMode::Shared,
                    LockKind::Exclusive => LockMode::Exclusive,
                };
                return Ok(
                    match partition.read_locked(tx, key, mode).map_err(described)? {
                        Outcome::Waiting(anchor) => Outcome::Waiting(anchor),
                        Outcome::Done(None) => Outcome::Done(0),
                        Outcome::Done(Some(version)) => {
                            let (fixed, var) = partition.version(version);
                            let values = project(layout, fixed, var, &body.columns);
                            drop(partition);
                            send_row(ctx, prepare, &values)?;
                            Outcome::Done(1)
                        }
                    },
                );
            }
            OperationKind::Insert if prepare.chain.at_starting_replica() => {
                // The replicas before checked the insert; this one may still hold the
                // key from its own disk (deleted since, the copy will say) and takes
                // the row as written.
                let written = partition.write_from_wire(tx, &self.row_values);
                done_or_wait(written.map_err(described)?)
            }
            OperationKind::Insert => {
                let inserted = partition.insert_from_wire(tx, &self.row_values);
                done_or_wait(inserted.map_err(described)?)
            }
            OperationKind::Write => {
                let written = partition.write_from_wire(tx, &self.row_values);
                done_or_wait(written.map_err(described)?)
            }
            OperationKind::Delete => {
                let deleted = partition.delete(tx, key);
                done_or_wait(lenient_when_starting(prepare, deleted).map_err(described)?)
            }
            OperationKind::Update => {
                if body.columns.len() != body.values.len() {
                    return Err((
                        ErrorCode::BadRequest,
                        "an update names as many columns as it gives values".into(),
                    ));
                }
                let changes: Vec<(usize, kista_storage::types::Value)> = body
                    .columns
                    .iter()
                    .map(|&c| usize::from(c))
                    .zip(body.values.iter().cloned())
                    .collect();
                let updated = partition.update(tx, key, &changes);
                done_or_wait(lenient_when_starting(prepare, updated).map_err(described)?)
            }
        };
        self.staged_redo_bytes = match prepare.kind {
            OperationKind::Read => 0,
            OperationKind::Delete => delete_row_record_bytes(key.len()) as u64,
            _ => write_row_record_bytes(partition.staged_image_bytes()) as u64,
        };
        // Empty unless the write finished and changed a unique key.
        self.unique_changes = partition.take_unique_changes();
        self.key_changes = partition.take_key_changes();
        Ok(outcome)
    }
}

/// On a starting replica a row missing is no error: the copy brings it later, with this
/// write's change (see `copy`).
fn lenient_when_starting(
    prepare: &Prepare,
    result: Result<Outcome<()>, OperationError>,
) -> Result<Outcome<()>, OperationError> {
    match result {
        Err(error)
            if matches!(error.kind(), OperationErrorKind::NotFound { .. })
                && prepare.chain.at_starting_replica() =>
        {
            Ok(Outcome::Done(()))
        }
        other => other,
    }
}

fn done_or_wait(outcome: Outcome<()>) -> Outcome<u32> {
    match outcome {
        Outcome::Done(()) => Outcome::Done(0),
        Outcome::Waiting(anchor) => Outcome::Waiting(anchor),
    }
}
