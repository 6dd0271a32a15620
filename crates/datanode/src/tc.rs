//! The transaction coordinator: one record per open transaction, the operations of each
//! batch sent to the replicas of their partitions, then commit (or abort) along the chains.
//!
//! A batch ends when its last operation (the one carrying `NoCommit`, `Commit` or
//! `Rollback`) has arrived and every operation has answered. A write that fails aborts the
//! transaction; a read that finds nothing is not a failure (the client sees no row). A
//! transaction idle for longer than the inactivity timeout while waiting for its client is
//! aborted, and the client is told so with error 237.

use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::time::Duration;

use kista_runtime::{Block, Context};
use kista_signal::{BlockAddress, SectionHandle, Signal, TypedSignal};

use crate::dist::PartitionMap;
use crate::node::NodeSettings;
use crate::protocol::*;
use crate::query::read_shared;
use crate::registry::PartitionRegistry;
use crate::router::{ReadPlace, ReadRouter};
use crate::{send_sharing_section, send_with_bytes};

mod scans;

use scans::Scan;

/// How often the coordinator looks for idle transactions while it has any.
const INACTIVITY_CHECK_MS: u64 = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Operations of a batch may arrive; some may be running.
    Executing,
    Committing,
    Completing,
    Aborting,
}

struct Operation {
    op_index: u32,
    /// Answers still expected (more than one when a unique-index operation asks every
    /// partition).
    answers_left: u32,
    /// For fanned-out operations: whether some partition found the row.
    found: bool,
    kind: OperationKind,
}

struct Transaction {
    client: BlockAddress,
    client_tx: u64,
    phase: Phase,
    operations: Vec<Operation>,
    /// Operations of the current batch not yet answered.
    outstanding: u32,
    /// How the batch ends, once its last operation has arrived.
    batch_end: Option<ExecuteMode>,
    reads: u32,
    failure: Option<(ErrorCode, u32, String)>,
    /// Partitions with locks or changes: (table, partition, chain).
    participants: Vec<(u32, u32, ReplicaChain)>,
    /// Commit, complete or abort confirmations still expected.
    confirmations_left: usize,
    last_activity_ns: u64,
}

/// What a coordinator knows of a table: where its partitions are. (Schema versions are
/// checked by the data managers, which hold the data they describe.)
struct TcTable {
    map: PartitionMap,
}

pub struct TransactionCoordinator {
    settings: Arc<NodeSettings>,
    instance: u16,
    /// For committed reads the router runs here.
    registry: Arc<PartitionRegistry>,
    router: ReadRouter,
    tables: FxHashMap<u32, TcTable>,
    transactions: FxHashMap<u64, Transaction>,
    by_client: FxHashMap<(BlockAddress, u64), u64>,
    next_transaction: u64,
    scans: FxHashMap<u64, Scan>,
    scans_by_client: FxHashMap<(BlockAddress, u64), u64>,
    next_scan: u64,
    ticking: bool,
}

impl TransactionCoordinator {
    pub fn new(
        settings: Arc<NodeSettings>,
        instance: u16,
        registry: Arc<PartitionRegistry>,
    ) -> Self {
        let router = ReadRouter::new(settings.read_policy, settings.query_addresses().collect());
        Self {
            settings,
            instance,
            registry,
            router,
            tables: FxHashMap::default(),
            transactions: FxHashMap::default(),
            by_client: FxHashMap::default(),
            next_transaction: 1,
            scans: FxHashMap::default(),
            scans_by_client: FxHashMap::default(),
            next_scan: 1,
            ticking: false,
        }
    }

    /// Open transactions, for tests and statistics.
    pub fn open_transactions(&self) -> usize {
        self.transactions.len()
    }

    fn define_table(&mut self, ctx: &mut Context, definition: TableDefinition) {
        if definition.dropped != 0 {
            self.tables.remove(&definition.table_id);
        } else {
            let map = PartitionMap::single_node(
                definition.partitions,
                self.settings.node,
                self.settings.ldm_instances,
            );
            self.tables.insert(definition.table_id, TcTable { map });
        }
        let conf = TableDefinitionConf {
            request_id: definition.request_id,
            table_id: definition.table_id,
            code: 0,
        };
        ctx.send_typed(self.settings.dict_address(), &conf);
    }

    /// A transaction id unique in the cluster: node, coordinator instance, sequence.
    fn new_transaction_id(&mut self) -> u64 {
        let sequence = self.next_transaction;
        self.next_transaction += 1;
        u64::from(self.settings.node.0) << 56 | u64::from(self.instance) << 40 | sequence
    }

    /// A batch with no operations: commit or roll back the earlier batches' work.
    fn end_batch(&mut self, ctx: &mut Context, end: EndBatch) {
        let Some(&id) = self.by_client.get(&(end.client, end.client_tx)) else {
            // Nothing ran here, so nothing to commit or roll back.
            let outcome = match end.execute {
                ExecuteMode::Commit => TransactionOutcome::Committed,
                ExecuteMode::Rollback => TransactionOutcome::Aborted,
                _ => TransactionOutcome::Open,
            };
            return self.reply(ctx, end.client, end.client_tx, outcome, 0, None);
        };
        let now = ctx.now_ns();
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        if transaction.phase != Phase::Executing
            || transaction.batch_end.is_some()
            || end.execute == ExecuteMode::More
        {
            return refuse_state(ctx, end.client, end.client_tx, 0);
        }
        transaction.last_activity_ns = now;
        transaction.batch_end = Some(end.execute);
        self.batch_progress(ctx, id);
    }

    fn key_request(&mut self, ctx: &mut Context, request: KeyRequest) {
        let client_key = (request.client, request.client_tx);
        let id = match self.by_client.get(&client_key) {
            Some(&id) => id,
            None => {
                if request.execute == ExecuteMode::Rollback {
                    // Nothing to roll back: the transaction never ran here.
                    return self.reply(
                        ctx,
                        request.client,
                        request.client_tx,
                        TransactionOutcome::Aborted,
                        0,
                        None,
                    );
                }
                if self.transactions.len() >= self.settings.transactions_per_tc_max {
                    let message = format!(
                        "the coordinator has {} open transactions, its limit",
                        self.transactions.len()
                    );
                    return self.reply(
                        ctx,
                        request.client,
                        request.client_tx,
                        TransactionOutcome::Aborted,
                        0,
                        Some((ErrorCode::TooManyLocks, request.op_index, message)),
                    );
                }
                let id = self.new_transaction_id();
                self.transactions.insert(
                    id,
                    Transaction {
                        client: request.client,
                        client_tx: request.client_tx,
                        phase: Phase::Executing,
                        operations: Vec::new(),
                        outstanding: 0,
                        batch_end: None,
                        reads: 0,
                        failure: None,
                        participants: Vec::new(),
                        confirmations_left: 0,
                        last_activity_ns: ctx.now_ns(),
                    },
                );
                self.by_client.insert(client_key, id);
                self.start_ticking(ctx);
                id
            }
        };
        let now = ctx.now_ns();
        let operations_max = self.settings.operations_per_transaction_max;
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        transaction.last_activity_ns = now;
        if transaction.phase != Phase::Executing || transaction.batch_end.is_some() {
            return refuse_state(ctx, request.client, request.client_tx, request.op_index);
        }
        if request.execute == ExecuteMode::Rollback {
            transaction.batch_end = Some(ExecuteMode::Rollback);
            return self.batch_progress(ctx, id);
        }
        if request.execute != ExecuteMode::More {
            transaction.batch_end = Some(request.execute);
        }
        if transaction.operations.len() >= operations_max {
            let message = format!("a transaction may have {operations_max} operations");
            transaction
                .failure
                .get_or_insert((ErrorCode::TooManyLocks, request.op_index, message));
            return self.batch_progress(ctx, id);
        }
        match self.tables.get(&request.table_id) {
            None => {
                let message = format!("no table {}", request.table_id);
                transaction.failure.get_or_insert((
                    ErrorCode::NoSuchTable,
                    request.op_index,
                    message,
                ));
            }
            Some(table) => {
                let section = ctx.take_section();
                let key = section.map(|handle| key_of_body(&ctx.held_section(handle)));
                match key {
                    Some(Some(key)) => {
                        let partitions: Vec<u32> = if request.index_id == PRIMARY_KEY {
                            vec![table.map.partition_of(&key)]
                        } else {
                            (0..table.map.partitions()).collect()
                        };
                        let op_ref = transaction.operations.len() as u32;
                        transaction.operations.push(Operation {
                            op_index: request.op_index,
                            answers_left: partitions.len() as u32,
                            found: false,
                            kind: request.kind,
                        });
                        transaction.outstanding += 1;
                        let section = section.expect("the key came from it");
                        let target = Target {
                            table,
                            router: &mut self.router,
                            registry: &self.registry,
                        };
                        let answered_here = send_prepares(
                            ctx,
                            id,
                            op_ref,
                            &request,
                            target,
                            &partitions,
                            section,
                            transaction,
                        );
                        for answer in answered_here {
                            self.prepare_answered(ctx, id, op_ref, answer);
                        }
                    }
                    _ => {
                        if let Some(section) = section {
                            ctx.release_section(section);
                        }
                        let message = "operation without a readable key".to_string();
                        transaction.failure.get_or_insert((
                            ErrorCode::BadRequest,
                            request.op_index,
                            message,
                        ));
                    }
                }
            }
        }
        self.batch_progress(ctx, id);
    }

    fn prepare_answered(
        &mut self,
        ctx: &mut Context,
        transaction_id: u64,
        op_ref: u32,
        result: Result<u32, (ErrorCode, String)>,
    ) {
        let now = ctx.now_ns();
        let Some(transaction) = self.transactions.get_mut(&transaction_id) else {
            return;
        };
        let Some(operation) = transaction.operations.get_mut(op_ref as usize) else {
            return;
        };
        if operation.answers_left == 0 {
            return;
        }
        transaction.last_activity_ns = now;
        operation.answers_left -= 1;
        // A unique-key operation asks every partition; one not finding the row is no failure
        // while another has found it or may still.
        let found_elsewhere = operation.answers_left > 0 || operation.found;
        match result {
            Ok(read_rows) => {
                transaction.reads += read_rows;
                operation.found |= read_rows > 0 || operation.kind != OperationKind::Read;
            }
            Err((ErrorCode::NotFound, _)) if found_elsewhere => {}
            Err((code, message)) => {
                transaction
                    .failure
                    .get_or_insert((code, operation.op_index, message));
            }
        }
        if operation.answers_left == 0 {
            transaction.outstanding -= 1;
        }
        self.batch_progress(ctx, transaction_id);
    }

    /// Ends the batch once its last operation arrived and all have answered.
    fn batch_progress(&mut self, ctx: &mut Context, id: u64) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        if transaction.phase != Phase::Executing || transaction.outstanding > 0 {
            return;
        }
        let Some(end) = transaction.batch_end else {
            return;
        };
        if transaction.failure.is_some() || end == ExecuteMode::Rollback {
            return self.start_abort(ctx, id);
        }
        match end {
            ExecuteMode::Commit => self.start_commit(ctx, id),
            _ => {
                let (client, client_tx, reads) =
                    (transaction.client, transaction.client_tx, transaction.reads);
                transaction.batch_end = None;
                transaction.reads = 0;
                self.reply(
                    ctx,
                    client,
                    client_tx,
                    TransactionOutcome::Open,
                    reads,
                    None,
                );
            }
        }
    }

    fn start_commit(&mut self, ctx: &mut Context, id: u64) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        transaction.phase = Phase::Committing;
        transaction.confirmations_left = transaction.participants.len();
        let here = ctx.address();
        for &(table_id, partition, chain) in &transaction.participants {
            let chain = chain.at_last();
            ctx.send_typed(
                chain.current(),
                &Commit {
                    tc: here,
                    transaction: id,
                    table_id,
                    partition,
                    chain,
                },
            );
        }
        if transaction.confirmations_left == 0 {
            self.committed(ctx, id);
        }
    }

    fn commit_confirmed(&mut self, ctx: &mut Context, conf: CommitConf) {
        let Some(transaction) = self.transactions.get_mut(&conf.transaction) else {
            return;
        };
        if transaction.phase != Phase::Committing {
            return;
        }
        transaction.confirmations_left -= 1;
        if transaction.confirmations_left == 0 {
            self.committed(ctx, conf.transaction);
        }
    }

    /// Every replica committed: tell the client, then let the data managers forget.
    fn committed(&mut self, ctx: &mut Context, id: u64) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let (client, client_tx, reads) =
            (transaction.client, transaction.client_tx, transaction.reads);
        let replicas = replicas_of(&transaction.participants);
        transaction.phase = Phase::Completing;
        transaction.confirmations_left = replicas.len();
        let here = ctx.address();
        for replica in &replicas {
            ctx.send_typed(
                *replica,
                &Complete {
                    tc: here,
                    transaction: id,
                },
            );
        }
        self.reply(
            ctx,
            client,
            client_tx,
            TransactionOutcome::Committed,
            reads,
            None,
        );
        if replicas.is_empty() {
            self.finished(id);
        }
    }

    fn start_abort(&mut self, ctx: &mut Context, id: u64) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let replicas = replicas_of(&transaction.participants);
        transaction.phase = Phase::Aborting;
        transaction.confirmations_left = replicas.len();
        let here = ctx.address();
        for replica in &replicas {
            ctx.send_typed(
                *replica,
                &Abort {
                    tc: here,
                    transaction: id,
                },
            );
        }
        if replicas.is_empty() {
            self.aborted(ctx, id);
        }
    }

    fn aborted(&mut self, ctx: &mut Context, id: u64) {
        let Some(transaction) = self.transactions.remove(&id) else {
            return;
        };
        self.by_client
            .remove(&(transaction.client, transaction.client_tx));
        self.reply(
            ctx,
            transaction.client,
            transaction.client_tx,
            TransactionOutcome::Aborted,
            0,
            transaction.failure,
        );
    }

    fn confirmation(&mut self, ctx: &mut Context, id: u64) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let phase = transaction.phase;
        if !matches!(phase, Phase::Completing | Phase::Aborting) {
            return;
        }
        transaction.confirmations_left -= 1;
        if transaction.confirmations_left > 0 {
            return;
        }
        match phase {
            Phase::Aborting => self.aborted(ctx, id),
            _ => self.finished(id),
        }
    }

    fn finished(&mut self, id: u64) {
        if let Some(transaction) = self.transactions.remove(&id) {
            self.by_client
                .remove(&(transaction.client, transaction.client_tx));
        }
    }

    fn reply(
        &self,
        ctx: &mut Context,
        client: BlockAddress,
        client_tx: u64,
        outcome: TransactionOutcome,
        reads: u32,
        failure: Option<(ErrorCode, u32, String)>,
    ) {
        let (code, failed_op, message) = match failure {
            Some((code, op, message)) => (code as u32, op, message),
            None => (0, 0, String::new()),
        };
        let conf = ExecuteConf {
            client_tx,
            outcome,
            reads,
            code,
            failed_op,
        };
        send_with_bytes(
            ctx,
            conf.to_signal(client, ctx.address()),
            message.as_bytes(),
        );
    }

    fn load_report(&mut self, ctx: &mut Context, report: LoadReport) {
        let Some(bytes) = ctx.section() else {
            return;
        };
        let levels = LoadLevelsBody::decode(&bytes, report.entries as usize);
        drop(bytes);
        self.router.update(levels);
    }

    // ----- inactivity -----

    fn start_ticking(&mut self, ctx: &mut Context) {
        if !self.ticking {
            self.ticking = true;
            let tick = CoordinatorTick {}.to_signal(ctx.address(), ctx.address());
            ctx.send_delayed(tick, Duration::from_millis(INACTIVITY_CHECK_MS));
        }
    }

    fn tick(&mut self, ctx: &mut Context) {
        self.ticking = false;
        let now = ctx.now_ns();
        let limit_ns = self
            .settings
            .transaction_inactive_timeout_ms
            .saturating_mul(1_000_000);
        let idle: Vec<u64> = self
            .transactions
            .iter()
            .filter(|(_, t)| {
                t.phase == Phase::Executing && t.outstanding == 0 && t.batch_end.is_none()
            })
            .filter(|(_, t)| now.saturating_sub(t.last_activity_ns) > limit_ns)
            .map(|(&id, _)| id)
            .collect();
        for id in idle {
            if let Some(transaction) = self.transactions.get_mut(&id) {
                let message = format!(
                    "the transaction was idle for more than {} ms and was aborted",
                    self.settings.transaction_inactive_timeout_ms
                );
                transaction.failure = Some((ErrorCode::TransactionInactive, 0, message));
                self.start_abort(ctx, id);
            }
        }
        self.close_idle_scans(ctx, now, limit_ns);
        if !self.transactions.is_empty() || !self.scans.is_empty() {
            self.start_ticking(ctx);
        }
    }
}

/// Tells a client its request does not fit the transaction's state (it is committing,
/// aborting, or its batch is already ending); the transaction itself goes on.
fn refuse_state(ctx: &mut Context, client: BlockAddress, client_tx: u64, failed_op: u32) {
    let message = "the transaction is committing, aborting or already ending its batch";
    let refusal = ExecuteConf {
        client_tx,
        outcome: TransactionOutcome::Open,
        reads: 0,
        code: ErrorCode::BadTransactionState as u32,
        failed_op,
    };
    send_with_bytes(
        ctx,
        refusal.to_signal(client, ctx.address()),
        message.as_bytes(),
    );
}

/// The partition key at the front of a `KeyBody`, without decoding the rest.
fn key_of_body(bytes: &[u8]) -> Option<Vec<u8>> {
    let length = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    bytes.get(4..4 + length).map(<[u8]>::to_vec)
}

/// Every data manager holding a replica of the participants, once each.
fn replicas_of(participants: &[(u32, u32, ReplicaChain)]) -> Vec<BlockAddress> {
    let mut replicas: Vec<BlockAddress> = participants
        .iter()
        .flat_map(|(_, _, chain)| chain.replicas[..chain.count as usize].to_vec())
        .collect();
    replicas.sort_unstable_by_key(|a| a.to_word());
    replicas.dedup();
    replicas
}

/// Where an operation goes: its table's partitions, and for committed reads the router and
/// the partitions the coordinator may read itself.
struct Target<'a> {
    table: &'a TcTable,
    router: &'a mut ReadRouter,
    registry: &'a PartitionRegistry,
}

/// Sends an operation to the primary replica of each partition (several for a unique-index
/// operation), or for a committed read wherever the router places it, recording the
/// partitions that may now hold locks or changes. Returns the answers of the reads the
/// router placed here, which ran at once.
#[allow(clippy::too_many_arguments)]
fn send_prepares(
    ctx: &mut Context,
    id: u64,
    op_ref: u32,
    request: &KeyRequest,
    target: Target,
    partitions: &[u32],
    section: SectionHandle,
    transaction: &mut Transaction,
) -> Vec<Result<u32, (ErrorCode, String)>> {
    let here = ctx.address();
    let committed_read = request.kind == OperationKind::Read && request.lock == LockKind::Committed;
    let mut answered_here = Vec::new();
    for (position, &partition) in partitions.iter().enumerate() {
        let chain = target.table.map.chain(partition);
        let prepare = Prepare {
            tc: here,
            transaction: id,
            op_ref,
            table_id: request.table_id,
            schema_version: request.schema_version,
            partition,
            kind: request.kind,
            lock: request.lock,
            index_id: request.index_id,
            client: request.client,
            client_tx: request.client_tx,
            op_index: request.op_index,
            chain,
        };
        let place = if committed_read {
            target.router.place_read(chain.current(), here)
        } else {
            ReadPlace::Executor(chain.current())
        };
        let last = position + 1 == partitions.len();
        match place {
            ReadPlace::Here => {
                let body = KeyBody::decode(&ctx.held_section(section));
                answered_here.push(match body {
                    Ok(body) => read_shared(ctx, target.registry, &prepare, &body),
                    Err(error) => Err((ErrorCode::BadRequest, format!("operation body: {error}"))),
                });
                if last {
                    ctx.release_section(section);
                }
            }
            ReadPlace::Executor(executor) => {
                send_sharing_section(ctx, prepare.to_signal(executor, here), section, last);
            }
        }
        if !committed_read
            && !transaction
                .participants
                .iter()
                .any(|&(t, p, _)| t == request.table_id && p == partition)
        {
            transaction
                .participants
                .push((request.table_id, partition, chain));
        }
    }
    answered_here
}

impl Block for TransactionCoordinator {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        let number = signal.number();
        let result = if number == KeyRequest::NUMBER {
            KeyRequest::from_signal(signal).map(|r| self.key_request(ctx, r))
        } else if number == EndBatch::NUMBER {
            EndBatch::from_signal(signal).map(|e| self.end_batch(ctx, e))
        } else if number == PrepareConf::NUMBER {
            PrepareConf::from_signal(signal)
                .map(|c| self.prepare_answered(ctx, c.transaction, c.op_ref, Ok(c.read_rows)))
        } else if number == PrepareRef::NUMBER {
            PrepareRef::from_signal(signal).map(|r| {
                let message = ctx
                    .section()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                let code = ErrorCode::from_u32(r.code).unwrap_or(ErrorCode::BadRequest);
                self.prepare_answered(ctx, r.transaction, r.op_ref, Err((code, message)))
            })
        } else if number == CommitConf::NUMBER {
            CommitConf::from_signal(signal).map(|c| self.commit_confirmed(ctx, c))
        } else if number == CompleteConf::NUMBER {
            CompleteConf::from_signal(signal).map(|c| self.confirmation(ctx, c.transaction))
        } else if number == AbortConf::NUMBER {
            AbortConf::from_signal(signal).map(|c| self.confirmation(ctx, c.transaction))
        } else if number == ScanRequest::NUMBER {
            ScanRequest::from_signal(signal).map(|request| {
                let section = ctx.take_section();
                self.scan_request(ctx, request, section)
            })
        } else if number == ScanNext::NUMBER {
            ScanNext::from_signal(signal).map(|next| self.scan_next(ctx, next))
        } else if number == ScanFragmentConf::NUMBER {
            ScanFragmentConf::from_signal(signal).map(|conf| {
                self.fragment_answered(
                    ctx,
                    conf.scan_id,
                    conf.partition,
                    Ok((conf.rows, conf.done != 0)),
                )
            })
        } else if number == ScanFragmentRef::NUMBER {
            ScanFragmentRef::from_signal(signal).map(|r| {
                let message = ctx
                    .section()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                let code = ErrorCode::from_u32(r.code).unwrap_or(ErrorCode::BadRequest);
                self.fragment_answered(ctx, r.scan_id, r.partition, Err((code, message)))
            })
        } else if number == LoadReport::NUMBER {
            LoadReport::from_signal(signal).map(|report| self.load_report(ctx, report))
        } else if number == CoordinatorTick::NUMBER {
            CoordinatorTick::from_signal(signal).map(|_| self.tick(ctx))
        } else if number == TableDefinition::NUMBER {
            TableDefinition::from_signal(signal).map(|d| self.define_table(ctx, d))
        } else {
            Ok(())
        };
        debug_assert!(result.is_ok(), "malformed signal to tc: {result:?}");
    }
}
