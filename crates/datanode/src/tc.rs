//! The transaction coordinator: one record per open transaction, the operations of each
//! batch sent to the replicas of their partitions, then commit (or abort) along the chains.
//!
//! A batch ends when its last operation (the one carrying `NoCommit`, `Commit` or
//! `Rollback`) has arrived and every operation has answered. A write that fails aborts the
//! transaction; a read that finds nothing is not a failure (the client sees no row). A
//! transaction idle for longer than the inactivity timeout while waiting for its client is
//! aborted, and the client is told so with error 237.
//!
//! Unique indexes live in index tables (see `protocol`): the coordinator runs the
//! index-table operations a write reports as operations of the same transaction
//! ([`Role::IndexUpkeep`]), and a unique read in two steps ([`Role::UniqueLookup`]).
//! Foreign keys are checked and their actions run the same way, once a batch's operations
//! have answered (`tc/foreign_keys.rs`).

use rustc_hash::FxHashMap;
use std::sync::Arc;

use kista_runtime::section_pool::SectionPoolExhausted;
use kista_runtime::{Block, Context};
use kista_signal::{BlockAddress, SectionHandle, Signal, TypedSignal};

use crate::cluster::{ClusterShape, NodeSet};
use crate::dist::PartitionMap;
use crate::metrics::CoordinatorCounters;
use crate::node::NodeSettings;
use crate::protocol::*;
use crate::registry::PartitionRegistry;
use crate::router::ReadRouter;
use crate::{send_sharing_section, send_with_bytes};

mod drain;
mod durable;
mod failures;
mod foreign_keys;
mod gcp;
mod idle;
mod listing;
mod reads_here;
mod restart;
mod scans;
mod unique;

use foreign_keys::{ChildCheck, ChildSearch, PendingKeyEvent, Removal, TcForeignKeys};
use reads_here::{is_committed_key_read, ReadHere};
use scans::Scan;
use unique::{UniqueIndexRoute, UniqueLookup};

/// How often the coordinator looks for idle transactions while it has any.
const INACTIVITY_CHECK_MS: u64 = 100;
/// Ended transactions' records kept for reuse.
const SPARE_RECORDS_MAX: usize = 4096;
/// The global checkpoint of a new cluster's first commits.
pub(crate) const FIRST_GCI: u64 = 1;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    /// Operations of a batch may arrive; some may be running.
    #[default]
    Executing,
    Committing,
    Completing,
    Aborting,
}

struct Operation {
    /// The client's number for the operation (for upkeep, the write that caused it).
    op_index: u32,
    table_id: u32,
    /// Sent, not yet answered.
    running: bool,
    /// The nodes it runs on (its executor, or its chain's replicas), so a node's failure
    /// finds the operations that will never answer.
    nodes: NodeSet,
    role: Role,
    /// How the key events of a write are handled: which rule a removed parent key follows
    /// (`None`: reads, index upkeep, and writes made with foreign-key checks off).
    foreign_keys: Option<Removal>,
    /// The delete half of a change of a row's primary key: the row under its new key,
    /// whose referenced keys ON UPDATE CASCADE gives the children.
    moved_to: Option<Box<KeyBody>>,
    /// How many foreign-key cascades led to this write (0: the client's own).
    cascade_depth: u8,
    /// Not 0: a client's batch of this many whole-row writes (`KeyBatchBody`), whose
    /// failure names the failed one's op index.
    batch_operations: u32,
}

enum Role {
    /// An operation as the client sent it.
    Client,
    /// A unique read's first step: the index table's entry, read under a shared lock so the
    /// key cannot move to another row before the row itself is read. The entry's row comes
    /// back here as a `ReadResult`; then the operation reads the row as the client asked.
    UniqueLookup(Box<UniqueLookup>),
    /// An index-table operation a client's write needs.
    IndexUpkeep { table_id: u32, index_id: u32 },
    /// A read of the parent key a write gave a child row (a foreign key's check).
    ParentCheck { watch_id: u64 },
    /// A search for the children of a parent key a write removed.
    ChildSearch(Box<ChildSearch>),
    /// A child the search found, read again in the transaction.
    ChildCheck(Box<ChildCheck>),
    /// A foreign key's action on a child: its delete, or its columns set to NULL.
    Cascade,
}

#[derive(Default)]
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
    /// Committed reads answered as they arrived, without an operation record (see
    /// `reads_here`); they count towards the operation limit.
    reads_here: u32,
    /// The operations client batches carried beyond the one record each has; they count
    /// towards the operation limit.
    batched_operations: u32,
    failure: Option<(ErrorCode, u32, String)>,
    /// Foreign-key events of this batch's writes, handled once they all answered.
    key_events: Vec<PendingKeyEvent>,
    /// Partitions with locks or changes.
    participants: Vec<Participant>,
    /// Commit confirmations still expected (one per participant).
    confirmations_left: usize,
    /// Replicas whose complete or abort confirmation is still expected.
    awaiting: Vec<BlockAddress>,
    last_activity_ns: u64,
    /// When its record opened (for the commit-latency metric).
    started_ns: u64,
    /// The global checkpoint it commits in, stamped when its commit starts.
    gci: u64,
    /// Its abort goes along each participant's chain (`AbortAlong`): it began with
    /// operations still under way.
    aborts_along_chains: bool,
    /// Its client's connection to this node closed: it ends when it next waits for the
    /// client (`tc/idle.rs`).
    client_lost: bool,
}

/// A partition that may hold a transaction's locks or changes.
#[derive(Clone, Copy)]
struct Participant {
    table_id: u32,
    partition: u32,
    chain: ReplicaChain,
    /// Its primary confirmed the commit.
    committed: bool,
}

impl Transaction {
    /// Adds an operation, running from now on, to the batch; returns its `op_ref`.
    fn start_operation(&mut self, op_index: u32, table_id: u32, role: Role) -> u32 {
        let op_ref = self.operations.len() as u32;
        self.operations.push(Operation {
            op_index,
            table_id,
            running: true,
            nodes: NodeSet::EMPTY,
            role,
            foreign_keys: None,
            moved_to: None,
            cascade_depth: 0,
            batch_operations: 0,
        });
        self.outstanding += 1;
        op_ref
    }

    /// Whether its commit is decided but held until the next GCI begins (`tc/gcp.rs`):
    /// every operation answered and none failed, so every live replica holds its changes.
    fn commit_held(&self) -> bool {
        self.phase == Phase::Executing
            && self.outstanding == 0
            && self.failure.is_none()
            && self.batch_end.is_some_and(ExecuteMode::commits)
    }

    /// Whether it ends with a durable commit (`tc/durable.rs`).
    fn commits_durably(&self) -> bool {
        self.batch_end == Some(ExecuteMode::CommitDurable)
    }

    /// Operations the transaction has had, for the limit on them: those with records and
    /// the reads answered as they arrived.
    fn operation_count(&self) -> usize {
        self.operations.len() + self.reads_here as usize + self.batched_operations as usize
    }

    /// Back to a new transaction's state, keeping the lists' capacity.
    fn reset(&mut self) {
        let mut operations = std::mem::take(&mut self.operations);
        let mut participants = std::mem::take(&mut self.participants);
        let mut awaiting = std::mem::take(&mut self.awaiting);
        operations.clear();
        participants.clear();
        awaiting.clear();
        *self = Transaction {
            operations,
            participants,
            awaiting,
            ..Transaction::default()
        };
    }
}

/// What a coordinator knows of a table: where its partitions are, and its unique indexes'
/// tables. (Schema versions are checked by the data managers, which hold the data they
/// describe; the coordinator needs them only for operations it makes itself.)
struct TcTable {
    map: PartitionMap,
    name: String,
    schema_version: u32,
    unique: Vec<UniqueIndexRoute>,
    foreign_keys: TcForeignKeys,
}

pub struct TransactionCoordinator {
    settings: Arc<NodeSettings>,
    cluster: Arc<ClusterShape>,
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
    /// Records of ended transactions, ready for new ones.
    spare_records: Vec<Transaction>,
    /// The replicas a commit or abort goes to (kept for its capacity).
    replicas: Vec<BlockAddress>,
    /// Data nodes the membership removed (whose transactions a takeover resolves).
    failed_nodes: NodeSet,
    takeover: Option<failures::Takeover>,
    next_takeover: u32,
    /// Members that hold all their data (chains start with their replicas).
    started_nodes: NodeSet,
    /// A restarting member, whose replicas end the chains (see `restart`).
    starting_nodes: NodeSet,
    /// The generation this node joined in, when it restarted into a running cluster
    /// (part of every transaction id it makes).
    incarnation: u8,
    /// False on a restarted node until its own `NodeJoined` came: until then it knows
    /// neither the members (its chains could name a node that failed before it started)
    /// nor its incarnation (its transaction ids could repeat its earlier life's), so it
    /// serves no client even if the master's `NodeStarted` came first.
    knows_membership: bool,
    /// Who waits for the transactions open at some moment to end (`tc/drain.rs`).
    drains: Vec<drain::Drain>,
    /// The latest membership generation this coordinator heard of.
    generation: u32,
    /// Where this coordinator stands in the global checkpoints (see `tc/gcp.rs`).
    checkpoints: gcp::CoordinatorCheckpoints,
    /// Confirmations of durable commits waiting for their GCI (see `tc/durable.rs`).
    durable: durable::DurableCommits,
    /// What this coordinator counts for operators (never read by it).
    counters: Arc<CoordinatorCounters>,
}

impl TransactionCoordinator {
    pub fn new(
        settings: Arc<NodeSettings>,
        cluster: Arc<ClusterShape>,
        instance: u16,
        registry: Arc<PartitionRegistry>,
        counters: Arc<CoordinatorCounters>,
    ) -> Self {
        let router = ReadRouter::new(settings.read_policy, settings.query_addresses().collect());
        let knows_membership = !settings.joins_running_cluster;
        // A node restarting learns who is started when it joins.
        let (started_nodes, generation, checkpoints) = if settings.joins_running_cluster {
            // It learns the GCI from the master's next round.
            (NodeSet::EMPTY, 0, gcp::CoordinatorCheckpoints::new(0))
        } else if settings.keeps_data_on_disk() {
            // The start from disk tells who started and the GCI to go on with.
            (NodeSet::EMPTY, 1, gcp::CoordinatorCheckpoints::new(0))
        } else {
            (
                cluster.node_set(),
                1,
                gcp::CoordinatorCheckpoints::new(FIRST_GCI),
            )
        };
        Self {
            settings,
            cluster,
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
            spare_records: Vec::new(),
            replicas: Vec::new(),
            failed_nodes: NodeSet::EMPTY,
            takeover: None,
            next_takeover: 1,
            started_nodes,
            starting_nodes: NodeSet::EMPTY,
            incarnation: 0,
            knows_membership,
            drains: Vec::new(),
            generation,
            checkpoints,
            durable: durable::DurableCommits::default(),
            counters,
        }
    }

    /// Open transactions, for tests and statistics.
    pub fn open_transactions(&self) -> usize {
        self.transactions.len()
    }

    /// Applies a table's definition, or its drop, and tells the dictionary that sent it.
    fn define_table(
        &mut self,
        ctx: &mut Context,
        definition: TableDefinition,
        definer: BlockAddress,
    ) {
        let body = ctx
            .section()
            .map(|bytes| TableDefinitionBody::decode(&bytes));
        let code = match body {
            _ if definition.dropped != 0 => {
                self.tables.remove(&definition.table_id);
                0
            }
            Some(Ok(body)) => {
                let mut map = PartitionMap::for_cluster(definition.partitions, &self.cluster);
                map.arrange(self.started_nodes, self.starting_nodes);
                let unique = body
                    .indexes
                    .iter()
                    .filter_map(|(index_id, index)| {
                        Some(UniqueIndexRoute {
                            index_id: *index_id,
                            name: index.name.clone(),
                            key_columns: index.columns.len() as u16,
                            index_table: body.index_table(*index_id)?,
                            building: body.is_building(*index_id),
                        })
                    })
                    .collect();
                let foreign_keys = TcForeignKeys {
                    layout: Arc::new(kista_storage::row::RowLayout::new(&body.schema)),
                    keys: body.foreign_keys,
                };
                let table = TcTable {
                    map,
                    name: body.schema.name,
                    schema_version: definition.schema_version,
                    unique,
                    foreign_keys,
                };
                self.tables.insert(definition.table_id, table);
                0
            }
            _ => ErrorCode::BadRequest as u32,
        };
        let conf = TableDefinitionConf {
            request_id: definition.request_id,
            table_id: definition.table_id,
            code,
        };
        ctx.send_typed(definer, &conf);
    }

    /// A transaction id unique in the cluster: node, incarnation, coordinator instance
    /// (fewer than 256), sequence (40 bits).
    fn new_transaction_id(&mut self) -> u64 {
        let sequence = self.next_transaction & ((1 << 40) - 1);
        self.next_transaction += 1;
        u64::from(self.settings.node.0) << 56
            | u64::from(self.incarnation) << 48
            | u64::from(self.instance as u8) << 40
            | sequence
    }

    /// Passes a deadlock probe for one of this coordinator's transactions to the data
    /// managers where it may be waiting for a lock: those of the partitions it uses, while
    /// it has operations running (see `ldm/deadlock.rs`).
    fn deadlock_probe(&mut self, ctx: &mut Context, probe: DeadlockProbe) {
        let Some(transaction) = self.transactions.get(&probe.target) else {
            return; // ended: its locks are gone, so is the edge to it
        };
        if transaction.phase != Phase::Executing || transaction.outstanding == 0 {
            return; // waits for its client or commits: for no lock
        }
        replicas_of(&transaction.participants, &mut self.replicas);
        for &replica in &self.replicas {
            ctx.send_typed(replica, &probe);
        }
    }

    /// A batch with no operations: commit or roll back the earlier batches' work.
    fn end_batch(&mut self, ctx: &mut Context, end: EndBatch) {
        let Some(&id) = self.by_client.get(&(end.client, end.client_tx)) else {
            // Nothing ran here, so nothing to commit or roll back.
            let outcome = match end.execute {
                ExecuteMode::Commit | ExecuteMode::CommitDurable => TransactionOutcome::Committed,
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
        self.counters.operation(request.kind);
        let mut placed = None;
        if is_committed_key_read(&request) {
            match self.read_here(ctx, &request) {
                ReadHere::Answered => return,
                ReadHere::PlacedOn(executor) => placed = Some(executor),
                ReadHere::NotTaken => {}
            }
        }
        let section = ctx.take_section();
        if request.is_batch() && self.has_upkeep(request.table_id) {
            return self.split_batch(ctx, &request, section);
        }
        if let Some(unused) = self.key_operation(ctx, &request, section, placed) {
            ctx.release_section(unused);
        }
    }

    /// Runs one operation of a client's transaction, a committed read on the executor the
    /// router `placed` it on; returns its section unless it was passed on.
    fn key_operation(
        &mut self,
        ctx: &mut Context,
        request: &KeyRequest,
        section: Result<Option<SectionHandle>, SectionPoolExhausted>,
        placed: Option<BlockAddress>,
    ) -> Option<SectionHandle> {
        let client_key = (request.client, request.client_tx);
        let id = match self.by_client.get(&client_key) {
            Some(&id) => id,
            None => {
                if request.execute == ExecuteMode::Rollback {
                    // Nothing to roll back: the transaction never ran here.
                    let outcome = TransactionOutcome::Aborted;
                    self.reply(ctx, request.client, request.client_tx, outcome, 0, None);
                    return section.ok().flatten();
                }
                match self.open_record(ctx, request) {
                    Some(id) => id,
                    None => return section.ok().flatten(),
                }
            }
        };
        let now = ctx.now_ns();
        let operations_max = self.settings.operations_per_transaction_max;
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return section.ok().flatten();
        };
        transaction.last_activity_ns = now;
        if transaction.phase != Phase::Executing || transaction.batch_end.is_some() {
            refuse_state(ctx, request.client, request.client_tx, request.op_index);
            return section.ok().flatten();
        }
        if request.execute == ExecuteMode::Rollback {
            transaction.batch_end = Some(ExecuteMode::Rollback);
            self.batch_progress(ctx, id);
            return section.ok().flatten();
        }
        if request.execute != ExecuteMode::More {
            transaction.batch_end = Some(request.execute);
        }
        let section = match section {
            Ok(section) => section,
            Err(exhausted) => {
                let message = format!("no room for the operation's body: {exhausted}");
                self.fail(id, ErrorCode::Overloaded, request.op_index, message);
                self.batch_progress(ctx, id);
                return None;
            }
        };
        if request.index_id != PRIMARY_KEY && transaction.operation_count() < operations_max {
            if let Some(section) = section {
                self.start_unique_read(ctx, id, request, section);
                return None;
            }
        }
        let too_many = |operations: usize| {
            (operations > operations_max).then(|| {
                let message = format!("a transaction may have {operations_max} operations");
                (ErrorCode::TooManyLocks, message)
            })
        };
        let failure = if let Some(failure) = too_many(transaction.operation_count() + 1) {
            Some(failure)
        } else {
            let table = self.tables.get(&request.table_id);
            if let Some(table) = table {
                table.tell_if_changed(ctx, request);
            }
            match (table, section) {
                (None, _) => {
                    let message = format!("no table {}", request.table_id);
                    Some((ErrorCode::NoSuchTable, message))
                }
                (Some(_), None) => Some((
                    ErrorCode::BadRequest,
                    "operation without a readable key".to_string(),
                )),
                (Some(table), Some(section)) => match locate(ctx, table, request, section) {
                    Ok(located) => match too_many(
                        transaction.operation_count() + located.batch_operations.max(1) as usize,
                    ) {
                        Some(failure) => Some(failure),
                        None => {
                            let op_ref = transaction.start_operation(
                                request.op_index,
                                request.table_id,
                                Role::Client,
                            );
                            let operation = &mut transaction.operations[op_ref as usize];
                            operation.foreign_keys = Removal::of_request(request);
                            if request.flags & KeyRequest::MOVES_KEY != 0 {
                                let body = KeyBody::decode(&ctx.held_section(section));
                                operation.moved_to = body.ok().map(Box::new);
                            }
                            operation.batch_operations = located.batch_operations;
                            let beyond_first = located.batch_operations.saturating_sub(1);
                            transaction.batched_operations += beyond_first;
                            (self.counters).operations_of(request.kind, u64::from(beyond_first));
                            let operation = ClientOperation {
                                id,
                                op_ref,
                                request,
                                located,
                                section,
                                placed,
                            };
                            send_prepare(ctx, operation, table, transaction);
                            return None;
                        }
                    },
                    Err(message) => Some((ErrorCode::BadRequest, message)),
                },
            }
        };
        if let Some((code, message)) = failure {
            self.fail(id, code, request.op_index, message);
        }
        self.batch_progress(ctx, id);
        section
    }

    /// Whether a table's writes report index upkeep or key events (unique indexes,
    /// foreign keys), one write at a time: a client's batch for it is split.
    fn has_upkeep(&self, table_id: u32) -> bool {
        self.tables
            .get(&table_id)
            .is_some_and(|table| !table.unique.is_empty() || !table.foreign_keys.keys.is_empty())
    }

    /// Runs a client's batch as the operations it holds, one by one: its table has gained
    /// a unique index or a foreign key since the client looked (the client batches only
    /// for tables without).
    #[cold]
    fn split_batch(
        &mut self,
        ctx: &mut Context,
        request: &KeyRequest,
        section: Result<Option<SectionHandle>, SectionPoolExhausted>,
    ) {
        let count = match section {
            Ok(Some(section)) => KeyBatchBody::count(&ctx.held_section(section)).unwrap_or(0),
            _ => 0,
        };
        let section = match section {
            Ok(Some(section)) if (1..=KEY_BATCH_OPERATIONS_MAX).contains(&count) => section,
            unreadable => {
                // Refused as the batch run whole would be.
                if let Some(unused) = self.key_operation(ctx, request, unreadable, None) {
                    ctx.release_section(unused);
                }
                return;
            }
        };
        let bytes = ctx.held_section(section).to_vec();
        ctx.release_section(section);
        let operations = KeyBatchBody::operations(&bytes).map_while(Result::ok);
        for (position, operation) in operations.enumerate() {
            let single = KeyRequest {
                op_index: operation.op_index,
                execute: match position + 1 == count {
                    true => request.execute,
                    false => ExecuteMode::More,
                },
                flags: request.flags & !KeyRequest::BATCH,
                ..*request
            };
            let section = ctx.allocate_section(operation.body).map(Some);
            if let Some(unused) = self.key_operation(ctx, &single, section, None) {
                ctx.release_section(unused);
            }
        }
    }

    /// A batch's failure names the operation of it that failed.
    fn name_failed_batch_operation(&mut self, refusal: PrepareRef) {
        let operation = (self.transactions.get_mut(&refusal.transaction))
            .and_then(|transaction| transaction.operations.get_mut(refusal.op_ref as usize))
            .filter(|operation| operation.batch_operations > 0);
        if let Some(operation) = operation {
            operation.op_index = refusal.op_index;
        }
    }

    /// Records a transaction's first failure; it aborts when its batch ends.
    fn fail(&mut self, id: u64, code: ErrorCode, op_index: u32, message: String) {
        if let Some(transaction) = self.transactions.get_mut(&id) {
            transaction.failure.get_or_insert((code, op_index, message));
        }
    }

    /// Sends an operation the coordinator made itself (an index-table operation, or a
    /// unique read's steps) to the primary replica of its partition, recording the
    /// partition as a participant unless it is a committed read.
    fn send_internal(
        &mut self,
        ctx: &mut Context,
        id: u64,
        op_ref: u32,
        target: Internal,
        body: &[u8],
    ) {
        let here = ctx.address();
        let located = self.tables.get(&target.table_id).and_then(|table| {
            let key = KeyBodyRef::parse(body).ok()?.key;
            let partition = table.map.partition_of(key);
            Some((table.schema_version, partition, table.map.chain(partition)))
        });
        let Some((schema_version, partition, chain)) = located else {
            let message = format!("no table {} (an index table)", target.table_id);
            return self.prepare_answered(ctx, id, op_ref, Err((ErrorCode::NoSuchTable, message)));
        };
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let prepare = Prepare {
            tc: here,
            transaction: id,
            op_ref,
            table_id: target.table_id,
            schema_version: target.schema_version.unwrap_or(schema_version),
            partition,
            kind: target.kind,
            lock: target.lock,
            client: target.client,
            client_tx: if target.client == here {
                id
            } else {
                transaction.client_tx
            },
            op_index: target.op_index,
            chain,
            batch_operations: 0,
        };
        if !(target.kind == OperationKind::Read && target.lock == LockKind::Committed) {
            note_participant(transaction, target.table_id, partition, chain);
        }
        if let Some(record) = transaction.operations.get_mut(op_ref as usize) {
            record.nodes = nodes_of(&chain);
        }
        send_with_bytes(ctx, prepare.to_signal(chain.current(), here), body);
    }

    /// Opens a record for the client's new transaction; `None` when the coordinator is at
    /// its limit, after telling the client so.
    fn open_record(&mut self, ctx: &mut Context, request: &KeyRequest) -> Option<u64> {
        if self.transactions.len() >= self.settings.transactions_per_tc_max {
            let message = format!(
                "the coordinator has {} open transactions, its limit",
                self.transactions.len()
            );
            let failure = Some((ErrorCode::TooManyLocks, request.op_index, message));
            let outcome = TransactionOutcome::Aborted;
            self.reply(ctx, request.client, request.client_tx, outcome, 0, failure);
            return None;
        }
        let id = self.new_transaction_id();
        let mut record = self.spare_records.pop().unwrap_or_default();
        record.client = request.client;
        record.client_tx = request.client_tx;
        record.last_activity_ns = ctx.now_ns();
        record.started_ns = record.last_activity_ns;
        self.transactions.insert(id, record);
        self.by_client
            .insert((request.client, request.client_tx), id);
        self.start_ticking(ctx);
        Some(id)
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
        if !operation.running {
            return;
        }
        transaction.last_activity_ns = now;
        match (&mut operation.role, result) {
            (Role::UniqueLookup(lookup), Ok(rows)) => {
                lookup.answered = Some(rows > 0);
                return self.unique_step(ctx, transaction_id, op_ref);
            }
            (Role::ChildCheck(_), Ok(rows)) => {
                return self.child_read_answered(ctx, transaction_id, op_ref, rows);
            }
            (Role::ParentCheck { watch_id }, Ok(0)) => {
                let (watch_id, op_index, table_id) =
                    (*watch_id, operation.op_index, operation.table_id);
                let message = self.parent_missing(watch_id, table_id);
                self.fail(transaction_id, ErrorCode::NoParentRow, op_index, message);
                return self.operation_done(ctx, transaction_id, op_ref);
            }
            (Role::ParentCheck { .. }, Ok(_)) => {}
            (_, Ok(read_rows)) => transaction.reads += read_rows,
            (Role::IndexUpkeep { table_id, index_id }, Err((ErrorCode::NotFound, _)))
                if self.tables.get(table_id).is_some_and(|table| {
                    table
                        .unique_route(*index_id)
                        .is_some_and(|route| route.building)
                }) =>
            {
                // The entry of a row the index build has not reached yet: nothing to remove.
            }
            (Role::IndexUpkeep { table_id, index_id }, Err((ErrorCode::Duplicate, _))) => {
                let names = self.tables.get(table_id).and_then(|table| {
                    let route = table.unique_route(*index_id)?;
                    Some((table.name.as_str(), route.name.as_str()))
                });
                let (table, index) = names.unwrap_or(("?", "?"));
                let message = format!("duplicate key in unique index `{index}` of table `{table}`");
                let failure = (ErrorCode::Duplicate, operation.op_index, message);
                transaction.failure.get_or_insert(failure);
            }
            (_, Err((code, message))) => {
                transaction
                    .failure
                    .get_or_insert((code, operation.op_index, message));
            }
        }
        operation.running = false;
        transaction.outstanding -= 1;
        self.batch_progress(ctx, transaction_id);
    }

    /// A row read for this coordinator itself: a unique read's entry, or a candidate child
    /// (a parent check's row is not used: that it exists is all that counts).
    fn own_read_result(&mut self, ctx: &mut Context, result: ReadResult) {
        let role = (self.transactions.get(&result.client_tx))
            .and_then(|transaction| transaction.operations.get(result.op_index as usize))
            .map(|operation| &operation.role);
        match role {
            Some(Role::UniqueLookup(_)) => self.unique_entry(ctx, result),
            Some(Role::ChildCheck(_)) => self.child_row(ctx, result.client_tx, result.op_index),
            _ => {}
        }
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
        if !transaction.key_events.is_empty() && self.run_key_events(ctx, id) {
            return; // the batch ends when they have answered
        }
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        if transaction.failure.is_some() {
            return self.start_abort(ctx, id);
        }
        match end {
            ExecuteMode::Commit | ExecuteMode::CommitDurable => self.start_commit(ctx, id),
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

    /// The client's transaction is to commit: stamp it with the current GCI and commit
    /// it, unless a global checkpoint holds commits (then it waits, as it is, until the
    /// next GCI begins: see `tc/gcp.rs`).
    fn start_commit(&mut self, ctx: &mut Context, id: u64) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let changes = !transaction.participants.is_empty();
        if transaction.commits_durably() && changes && self.durable.is_full() {
            let message = format!(
                "more than {} durable commits wait for their global checkpoint here: \
                 try again",
                durable::DURABLE_COMMITS_WAITING_MAX
            );
            self.fail(id, ErrorCode::Overloaded, 0, message);
            return self.start_abort(ctx, id);
        }
        match self.checkpoints.stamp() {
            Some(gci) => transaction.gci = gci,
            // A transaction that changed nothing belongs to no GCI: it commits at once.
            None if transaction.participants.is_empty() => transaction.gci = 0,
            None => return self.checkpoints.hold(id),
        }
        self.send_commits(ctx, id);
    }

    /// Commits a transaction whose GCI is stamped: the commit of each participant goes to
    /// the last replica of its chain.
    fn send_commits(&mut self, ctx: &mut Context, id: u64) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        transaction.phase = Phase::Committing;
        transaction.confirmations_left = transaction.participants.len();
        self.checkpoints.committing(transaction.gci);
        let here = ctx.address();
        for participant in &transaction.participants {
            send_commit(ctx, here, id, transaction.gci, participant);
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
        // After a node failure a commit may be sent twice; count each partition once.
        let Some(participant) = transaction
            .participants
            .iter_mut()
            .find(|p| !p.committed && p.table_id == conf.table_id && p.partition == conf.partition)
        else {
            return;
        };
        participant.committed = true;
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
        let ack = durable::CommitAck {
            client: transaction.client,
            client_tx: transaction.client_tx,
            reads: transaction.reads,
            gci: transaction.gci,
        };
        let durable = transaction.commits_durably();
        let duration_ns = ctx.now_ns().saturating_sub(transaction.started_ns);
        self.counters.committed(Some(duration_ns));
        replicas_of(&transaction.participants, &mut self.replicas);
        transaction.phase = Phase::Completing;
        transaction.awaiting.clone_from(&self.replicas);
        let gci = transaction.gci;
        self.checkpoints.committed(gci);
        self.report_checkpoint(ctx);
        let here = ctx.address();
        for &replica in &self.replicas {
            let complete = Complete {
                tc: here,
                transaction: id,
            };
            ctx.send_typed(replica, &complete);
        }
        self.acknowledge_commit(ctx, ack, durable);
        if self.replicas.is_empty() {
            self.finished(ctx, id);
        }
    }

    fn start_abort(&mut self, ctx: &mut Context, id: u64) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        transaction.phase = Phase::Aborting;
        // Only a node failure aborts with operations under way (`tc/failures.rs`).
        transaction.aborts_along_chains = transaction.outstanding > 0;
        self.send_aborts(ctx, id);
    }

    /// Tells the replicas to abort: each at once, or, while operations may still travel
    /// along their chains, along each participant's chain behind them.
    fn send_aborts(&mut self, ctx: &mut Context, id: u64) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let here = ctx.address();
        transaction.awaiting.clear();
        if transaction.aborts_along_chains {
            for participant in &transaction.participants {
                let chain = participant.chain;
                transaction.awaiting.push(chain.last());
                let abort = AbortAlong {
                    tc: here,
                    transaction: id,
                    chain,
                };
                ctx.send_typed(chain.current(), &abort);
            }
        } else {
            replicas_of(&transaction.participants, &mut self.replicas);
            transaction.awaiting.clone_from(&self.replicas);
            for &replica in &self.replicas {
                let abort = Abort {
                    tc: here,
                    transaction: id,
                };
                ctx.send_typed(replica, &abort);
            }
        }
        if transaction.awaiting.is_empty() {
            self.aborted(ctx, id);
        }
    }

    fn aborted(&mut self, ctx: &mut Context, id: u64) {
        let Some(mut transaction) = self.forget(ctx, id) else {
            return;
        };
        let failure = transaction.failure.take();
        self.counters
            .aborted(failure.as_ref().map(|(code, _, _)| *code));
        let (client, client_tx) = (transaction.client, transaction.client_tx);
        self.recycle(transaction);
        let outcome = TransactionOutcome::Aborted;
        self.reply(ctx, client, client_tx, outcome, 0, failure);
    }

    /// A replica confirmed it completed or aborted the transaction.
    fn confirmation(&mut self, ctx: &mut Context, id: u64, replica: BlockAddress) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let phase = transaction.phase;
        if !matches!(phase, Phase::Completing | Phase::Aborting) {
            return;
        }
        let Some(position) = transaction.awaiting.iter().position(|&r| r == replica) else {
            return;
        };
        transaction.awaiting.swap_remove(position);
        self.end_when_confirmed(ctx, id);
    }

    /// Ends a completing or aborting transaction once no replica's confirmation is awaited.
    fn end_when_confirmed(&mut self, ctx: &mut Context, id: u64) {
        let Some(transaction) = self.transactions.get(&id) else {
            return;
        };
        if !transaction.awaiting.is_empty() {
            return;
        }
        match transaction.phase {
            Phase::Aborting => self.aborted(ctx, id),
            Phase::Completing => self.finished(ctx, id),
            Phase::Executing | Phase::Committing => {}
        }
    }

    fn finished(&mut self, ctx: &mut Context, id: u64) {
        if let Some(transaction) = self.forget(ctx, id) {
            self.recycle(transaction);
        }
    }

    /// Removes a transaction's record and its client's name for it.
    fn forget(&mut self, ctx: &mut Context, id: u64) -> Option<Transaction> {
        let transaction = self.transactions.remove(&id)?;
        self.by_client
            .remove(&(transaction.client, transaction.client_tx));
        self.drained(ctx, Some(id));
        Some(transaction)
    }

    /// Keeps an ended transaction's record, with the capacity of its lists, for the next
    /// transaction: a steady load then allocates nothing per transaction.
    fn recycle(&mut self, mut transaction: Transaction) {
        if self.spare_records.len() < SPARE_RECORDS_MAX {
            transaction.reset();
            self.spare_records.push(transaction);
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
        if client == BlockAddress::default() {
            return; // a transaction taken over from a failed coordinator
        }
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
            gci: 0,
        };
        send_with_bytes(
            ctx,
            conf.to_signal(client, ctx.address()),
            message.as_bytes(),
        );
    }

    /// Refuses a client's transaction while this node restarts.
    fn refuse_transaction(&self, ctx: &mut Context, client: BlockAddress, client_tx: u64) {
        let (code, message) = restart::not_serving_yet(self.settings.node);
        let failure = Some((code, 0, message));
        self.reply(
            ctx,
            client,
            client_tx,
            TransactionOutcome::Aborted,
            0,
            failure,
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
        gci: 0,
    };
    send_with_bytes(
        ctx,
        refusal.to_signal(client, ctx.address()),
        message.as_bytes(),
    );
}

/// Every data manager holding a replica of the participants, once each, into `replicas`.
fn replicas_of(participants: &[Participant], replicas: &mut Vec<BlockAddress>) {
    replicas.clear();
    for participant in participants {
        let chain = &participant.chain;
        replicas.extend_from_slice(&chain.replicas[..chain.count as usize]);
    }
    replicas.sort_unstable_by_key(|a| a.to_word());
    replicas.dedup();
}

/// Sends the commit of one participant to the last replica of its chain.
fn send_commit(
    ctx: &mut Context,
    tc: BlockAddress,
    transaction: u64,
    gci: u64,
    participant: &Participant,
) {
    let chain = participant.chain.at_last();
    let commit = Commit {
        tc,
        transaction,
        table_id: participant.table_id,
        partition: participant.partition,
        chain,
        gci,
    };
    ctx.send_typed(chain.current(), &commit);
}

/// The nodes a chain's replicas live on.
fn nodes_of(chain: &ReplicaChain) -> NodeSet {
    NodeSet::of(
        chain.replicas[..chain.count as usize]
            .iter()
            .map(|r| r.node()),
    )
}

/// One client operation to send to the replicas of its partition.
struct ClientOperation<'a> {
    id: u64,
    op_ref: u32,
    request: &'a KeyRequest,
    located: Located,
    section: SectionHandle,
    /// For a committed read, the executor the router placed it on (reads it placed here
    /// never get this far: `reads_here` answers them).
    placed: Option<BlockAddress>,
}

/// An operation the coordinator makes itself, for [`TransactionCoordinator::send_internal`].
struct Internal {
    table_id: u32,
    kind: OperationKind,
    lock: LockKind,
    /// Where a read's row goes: the client, or this coordinator (a unique read's entry).
    client: BlockAddress,
    op_index: u32,
    /// The version to check; `None`: the one this coordinator knows (index tables).
    schema_version: Option<u32>,
}

impl TcTable {
    /// Tells the client of an operation made for an earlier version of the table (changed
    /// in place since: the data managers still take it) that the table changed, so that it
    /// opens the table again before its next statement.
    #[inline]
    fn tell_if_changed(&self, ctx: &mut Context, request: &KeyRequest) {
        if request.schema_version < self.schema_version {
            self.tell_changed(ctx, request.client, request.table_id);
        }
    }

    #[cold]
    fn tell_changed(&self, ctx: &mut Context, client: BlockAddress, table_id: u32) {
        let changed = TableChanged {
            table_id,
            schema_version: self.schema_version,
        };
        ctx.send_typed(client, &changed);
    }
}

/// Where a client's operation runs.
#[derive(Clone, Copy)]
struct Located {
    partition: u32,
    /// Operations a batch carries (0: not a batch).
    batch_operations: u32,
}

/// The partition a request's primary key leads to (every key of a batch must); an error
/// when the body has no readable key, or a batch is not one the protocol allows.
fn locate(
    ctx: &Context,
    table: &TcTable,
    request: &KeyRequest,
    section: SectionHandle,
) -> Result<Located, String> {
    let bytes = ctx.held_section(section);
    if !request.is_batch() {
        let key = (KeyBodyRef::parse(&bytes).map_err(|_| "operation without a readable key"))?.key;
        let partition = table.map.partition_of(key);
        return Ok(Located {
            partition,
            batch_operations: 0,
        });
    }
    let whole_rows = matches!(request.kind, OperationKind::Insert | OperationKind::Write);
    if !whole_rows || request.index_id != PRIMARY_KEY {
        return Err("a batch holds inserts or upserts by primary key only".into());
    }
    let (mut count, mut partition) = (0, None);
    for operation in KeyBatchBody::operations(&bytes) {
        let key = operation
            .map_err(|error| format!("a bad batch: {error}"))?
            .key;
        let of_key = table.map.partition_of(key);
        if *partition.get_or_insert(of_key) != of_key {
            return Err("a batch's rows belong to one partition".into());
        }
        count += 1;
    }
    match partition {
        Some(partition) if count <= KEY_BATCH_OPERATIONS_MAX => Ok(Located {
            partition,
            batch_operations: count as u32,
        }),
        _ => {
            let max = KEY_BATCH_OPERATIONS_MAX;
            Err(format!("a batch holds 1 to {max} operations, not {count}"))
        }
    }
}

fn prepare_of(
    request: &KeyRequest,
    tc: BlockAddress,
    transaction: u64,
    op_ref: u32,
    located: Located,
    chain: ReplicaChain,
) -> Prepare {
    Prepare {
        tc,
        transaction,
        op_ref,
        table_id: request.table_id,
        schema_version: request.schema_version,
        partition: located.partition,
        kind: request.kind,
        lock: request.lock,
        client: request.client,
        client_tx: request.client_tx,
        op_index: request.op_index,
        chain,
        batch_operations: located.batch_operations,
    }
}

/// Records that a partition may hold the transaction's locks or changes.
fn note_participant(
    transaction: &mut Transaction,
    table_id: u32,
    partition: u32,
    chain: ReplicaChain,
) {
    let known = transaction
        .participants
        .iter()
        .any(|p| p.table_id == table_id && p.partition == partition);
    if !known {
        transaction.participants.push(Participant {
            table_id,
            partition,
            chain,
            committed: false,
        });
    }
}

/// Sends a client's operation to the primary replica of its partition, or a committed read
/// to the executor the router placed it on, recording the partition if it may now hold
/// locks or changes.
fn send_prepare(
    ctx: &mut Context,
    operation: ClientOperation,
    table: &TcTable,
    transaction: &mut Transaction,
) {
    let here = ctx.address();
    let request = operation.request;
    let partition = operation.located.partition;
    let chain = table.map.chain(partition);
    let committed_read = request.kind == OperationKind::Read && request.lock == LockKind::Committed;
    if !committed_read {
        note_participant(transaction, request.table_id, partition, chain);
    }
    let executor = operation.placed.unwrap_or(chain.current());
    if let Some(record) = transaction.operations.get_mut(operation.op_ref as usize) {
        record.nodes = if committed_read {
            NodeSet::of([executor.node()])
        } else {
            nodes_of(&chain)
        };
    }
    let prepare = prepare_of(
        request,
        here,
        operation.id,
        operation.op_ref,
        operation.located,
        chain,
    );
    send_sharing_section(
        ctx,
        prepare.to_signal(executor, here),
        operation.section,
        true,
    );
}

impl Block for TransactionCoordinator {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        let number = signal.number();
        let result = if number == KeyRequest::NUMBER {
            KeyRequest::from_signal(signal).map(|r| {
                if self.node_serves() {
                    self.key_request(ctx, r)
                } else {
                    self.refuse_transaction(ctx, r.client, r.client_tx)
                }
            })
        } else if number == EndBatch::NUMBER {
            EndBatch::from_signal(signal).map(|e| {
                if self.node_serves() {
                    self.end_batch(ctx, e)
                } else {
                    self.refuse_transaction(ctx, e.client, e.client_tx)
                }
            })
        } else if number == PrepareConf::NUMBER {
            PrepareConf::from_signal(signal).map(|c| {
                let upkeep = ctx.section().map(|bytes| IndexUpkeepBody::decode(&bytes));
                match upkeep {
                    None => {}
                    Some(Ok(upkeep)) => {
                        self.note_key_events(c.transaction, c.op_ref, upkeep.keys);
                        self.index_upkeep(ctx, c.transaction, c.op_ref, upkeep.indexes)
                    }
                    Some(Err(error)) => {
                        let message = format!("index upkeep from a data manager: {error}");
                        return self.prepare_answered(
                            ctx,
                            c.transaction,
                            c.op_ref,
                            Err((ErrorCode::BadRequest, message)),
                        );
                    }
                }
                self.prepare_answered(ctx, c.transaction, c.op_ref, Ok(c.read_rows))
            })
        } else if number == DeadlockProbe::NUMBER {
            DeadlockProbe::from_signal(signal).map(|p| self.deadlock_probe(ctx, p))
        } else if number == ReadResult::NUMBER {
            ReadResult::from_signal(signal).map(|r| self.own_read_result(ctx, r))
        } else if number == PrepareRef::NUMBER {
            PrepareRef::from_signal(signal).map(|r| {
                let message = ctx
                    .section()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                let code = ErrorCode::from_u32(r.code).unwrap_or(ErrorCode::BadRequest);
                self.name_failed_batch_operation(r);
                self.prepare_answered(ctx, r.transaction, r.op_ref, Err((code, message)))
            })
        } else if number == CommitConf::NUMBER {
            CommitConf::from_signal(signal).map(|c| self.commit_confirmed(ctx, c))
        } else if number == CompleteConf::NUMBER {
            CompleteConf::from_signal(signal)
                .map(|c| self.confirmation(ctx, c.transaction, signal.sender()))
        } else if number == AbortConf::NUMBER {
            AbortConf::from_signal(signal)
                .map(|c| self.confirmation(ctx, c.transaction, signal.sender()))
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
        } else if number == ScanRows::NUMBER {
            ScanRows::from_signal(signal).map(|rows| self.own_scan_rows(ctx, rows))
        } else if number == ScanFragmentRef::NUMBER {
            ScanFragmentRef::from_signal(signal).map(|r| {
                let message = ctx
                    .section()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                let code = ErrorCode::from_u32(r.code).unwrap_or(ErrorCode::BadRequest);
                self.fragment_answered(ctx, r.scan_id, r.partition, Err((code, message)))
            })
        } else if number == ClientPing::NUMBER {
            ClientPing::from_signal(signal).map(|ping| {
                let pong = ClientPong {
                    sequence: ping.sequence,
                    started: u32::from(self.node_serves() && self.registry.read_lease_was_held()),
                };
                ctx.send_typed(ping.client, &pong);
            })
        } else if number == LoadReport::NUMBER {
            LoadReport::from_signal(signal).map(|report| self.load_report(ctx, report))
        } else if number == InfoListRequest::NUMBER {
            let from = signal.sender();
            InfoListRequest::from_signal(signal).map(|r| self.list_transactions(ctx, r, from))
        } else if number == NodeFailed::NUMBER {
            NodeFailed::from_signal(signal).map(|failed| {
                self.node_failed(ctx, failed);
                self.membership_changed(ctx, failed.generation);
            })
        } else if number == NodeJoined::NUMBER {
            NodeJoined::from_signal(signal).map(|joined| {
                self.node_joined(joined);
                self.membership_changed(ctx, joined.generation);
            })
        } else if let Some(result) = self.checkpoint_signal(ctx, signal) {
            result
        } else if number == DrainTransactions::NUMBER {
            DrainTransactions::from_signal(signal).map(|d| {
                let (request_id, dict) = (d.request_id, signal.sender());
                self.drain(ctx, drain::Waiter::Dictionary { request_id, dict })
            })
        } else if number == AddStartingReplica::NUMBER {
            AddStartingReplica::from_signal(signal)
                .map(|add| self.add_starting_replica(ctx, add, signal.sender()))
        } else if number == NodeStarted::NUMBER {
            NodeStarted::from_signal(signal).map(|started| self.node_started(started))
        } else if number == SystemStarted::NUMBER {
            SystemStarted::from_signal(signal).map(|started| self.system_started(started))
        } else if number == TakeoverReport::NUMBER {
            TakeoverReport::from_signal(signal)
                .map(|report| self.takeover_report(ctx, report, signal.sender()))
        } else if number == CoordinatorTick::NUMBER {
            CoordinatorTick::from_signal(signal).map(|_| self.tick(ctx))
        } else if number == ClientLost::NUMBER {
            ClientLost::from_signal(signal).map(|lost| self.client_lost(ctx, lost))
        } else if number == TableDefinition::NUMBER {
            TableDefinition::from_signal(signal).map(|d| self.define_table(ctx, d, signal.sender()))
        } else {
            Ok(())
        };
        debug_assert!(result.is_ok(), "malformed signal to tc: {result:?}");
    }
}
