//! Committed primary-key reads the router keeps in the coordinator's own thread. They run
//! as they arrive, on the body in place (an inline section needs no pooled buffer), without
//! a `Prepare` or an operation record: the row goes straight to the client. A transaction
//! that is nothing but one such read and commits needs no record at all; a read in a longer
//! transaction only adds to its record's counts.

use kista_runtime::Context;
use kista_signal::BlockAddress;

use super::{TcTable, Transaction, TransactionCoordinator};
use crate::protocol::*;
use crate::read::{encode_committed_row, send_answer, with_row_scratch, ReadAnswer};
use crate::registry::PartitionRegistry;
use crate::router::{ReadPlace, ReadRouter};

/// What became of a read offered to [`TransactionCoordinator::read_here`].
pub(super) enum ReadHere {
    /// Handled: read and answered, or refused with the client told why.
    Answered,
    /// The router placed the read on this executor: it goes the usual way, as a `Prepare`.
    PlacedOn(BlockAddress),
    /// Not one to take here (no such table, no readable key, a transaction that cannot take
    /// it now): the usual path runs it or says why not.
    NotTaken,
}

impl TransactionCoordinator {
    /// Runs a committed primary-key read here if the router places it here.
    pub(super) fn read_here(&mut self, ctx: &mut Context, request: &KeyRequest) -> ReadHere {
        debug_assert!(is_committed_key_read(request));
        let record = match self.by_client.get(&(request.client, request.client_tx)) {
            Some(&id) => Some(id),
            // One read that commits at once: the whole transaction.
            None if request.execute.commits() => None,
            None => match self.open_record(ctx, request) {
                Some(id) => Some(id),
                None => return ReadHere::Answered,
            },
        };
        let Some(table) = self.tables.get(&request.table_id) else {
            return ReadHere::NotTaken;
        };
        let answer = ReadAnswer {
            client: request.client,
            client_tx: request.client_tx,
            op_index: request.op_index,
            whole_transaction: record.is_none(),
        };
        let operations_max = self.settings.operations_per_transaction_max;
        let transaction = match record {
            None => None,
            Some(id) => match self.transactions.get_mut(&id) {
                Some(transaction) if transaction.takes_operation(operations_max) => {
                    Some(transaction)
                }
                _ => return ReadHere::NotTaken,
            },
        };
        let (router, registry) = (&mut self.router, &self.registry);
        let result = match read_in_place(ctx, table, router, registry, request, answer) {
            Ok(result) => result,
            // `key_operation` takes it, and tells the client if the table changed.
            Err(not_here) => return not_here,
        };
        table.tell_if_changed(ctx, request);
        let (Some(id), Some(transaction)) = (record, transaction) else {
            let counters = &self.counters;
            match &result {
                Ok(_) => counters.committed(None),
                Err((code, _)) => counters.aborted(Some(*code)),
            }
            if let Err((code, message)) = result {
                let failure = Some((code, request.op_index, message));
                let outcome = TransactionOutcome::Aborted;
                self.reply(ctx, answer.client, answer.client_tx, outcome, 0, failure);
            }
            return ReadHere::Answered;
        };
        transaction.count_read_here(request.op_index, result);
        transaction.last_activity_ns = ctx.now_ns();
        if request.execute != ExecuteMode::More {
            transaction.batch_end = Some(request.execute);
            self.batch_progress(ctx, id);
        }
        ReadHere::Answered
    }
}

/// Reads the row `request`'s body (the signal's section, read in place) names and sends it
/// as `answer` says, if the router places the read here. Returns how many rows were sent,
/// or why the read was not run.
fn read_in_place(
    ctx: &mut Context,
    table: &TcTable,
    router: &mut ReadRouter,
    registry: &PartitionRegistry,
    request: &KeyRequest,
    answer: ReadAnswer,
) -> Result<Result<u32, (ErrorCode, String)>, ReadHere> {
    let (here, now_ns) = (ctx.address(), ctx.now_ns());
    with_row_scratch(|row| {
        let found = {
            // The body's borrow of the context ends before the answer is sent.
            let Some(bytes) = ctx.section() else {
                return Err(ReadHere::NotTaken);
            };
            let Ok(body) = KeyBodyRef::parse(&bytes) else {
                return Err(ReadHere::NotTaken);
            };
            let partition = table.map.partition_of(body.key);
            let owner = table.map.read_replica(partition, here.node());
            match router.place_read(owner, here) {
                ReadPlace::Here => {}
                ReadPlace::Executor(executor) => return Err(ReadHere::PlacedOn(executor)),
            }
            registry.check_read_lease(now_ns).and_then(|()| {
                registry.with_partition_at_version(
                    request.table_id,
                    partition,
                    request.schema_version,
                    |shared| encode_committed_row(&shared.partition, &body, row),
                )
            })
        };
        Ok(found.and_then(|found| send_answer(ctx, answer, found.then_some(row))))
    })
}

impl Transaction {
    /// Whether an operation of the client's may join the transaction now: it is executing,
    /// its batch has not ended, and it is below the operation limit.
    pub(super) fn takes_operation(&self, operations_max: usize) -> bool {
        self.phase == super::Phase::Executing
            && self.batch_end.is_none()
            && self.operation_count() < operations_max
    }

    /// Counts a read answered here: its row for the batch's conf, or its failure, which
    /// aborts the transaction when the batch ends.
    fn count_read_here(&mut self, op_index: u32, result: Result<u32, (ErrorCode, String)>) {
        self.reads_here += 1;
        match result {
            Ok(rows) => self.reads += rows,
            Err((code, message)) => {
                self.failure.get_or_insert((code, op_index, message));
            }
        }
    }
}

/// A read of the committed row with a primary key, which may run wherever the router
/// places it.
pub(super) fn is_committed_key_read(request: &KeyRequest) -> bool {
    request.kind == OperationKind::Read
        && request.lock == LockKind::Committed
        && request.index_id == PRIMARY_KEY
        && request.execute != ExecuteMode::Rollback
}
