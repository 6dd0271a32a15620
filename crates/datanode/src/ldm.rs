//! The local data manager: owns partition replicas and runs operations on them.
//!
//! An operation that must wait for a row lock is parked with a lock-wait timer; when a
//! commit or abort grants the lock it runs again, and when the timer fires first the
//! operation fails with error 266 and its coordinator aborts the transaction. Later
//! operations of the same transaction on the same partition queue behind a parked one, so a
//! transaction's operations on a partition run in the order they arrived. A wait also looks
//! for a cycle of waits it is part of (`deadlock.rs`), which ends one of them at once, with
//! error 4261.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use std::sync::{Arc, RwLock, RwLockWriteGuard};
use std::time::Duration;

use kista_runtime::io::FileReply;
use kista_runtime::{Block, Context};
use kista_signal::{BlockAddress, SectionHandle, Signal, TypedSignal};
use kista_storage::locks::TransactionId;
use kista_storage::memory::DataMemory;
use kista_storage::partition::{Granted, IndexId, Outcome, Partition, PartitionLimits};
use kista_storage::redo::{Record, RowPlace};
use kista_storage::row::RowLayout;
use kista_storage::row_store::RowId;

use crate::cluster::{ClusterShape, NodeSet};
use crate::dist::PartitionMap;
use crate::fragment_scan::FragmentScans;
use crate::metrics::DataManagerCounters;
use crate::node::NodeSettings;
use crate::protocol::*;
use crate::read::{answer_committed_read, body_error, encode_committed_row, ReadAnswer};
use crate::registry::{read_partition, PartitionRegistry, SharedPartition, Versions};
use crate::{error_code_of, refuse_prepare, send_sharing_section, send_with_bytes};
use operation::RunningOperation;
use restore::RestoreError;

mod backup;
mod checkpoint;
pub(crate) use checkpoint::NO_SPACE_RETRY;
mod copy;
mod deadlock;
mod index_build;
mod listing;
mod operation;
mod reclaim;
mod redo;
mod redo_wait;
mod restore;

struct LdmTable {
    versions: Versions,
    layout: Arc<RowLayout>,
    /// Whether the table has a unique index or a foreign key (its writes report unique-key
    /// changes or foreign-key events to their coordinator).
    reports_upkeep: bool,
    partitions: FxHashMap<u32, Arc<RwLock<Partition>>>,
}

/// A partition replica this data manager owns (its query threads read it too).
type OwnedPartition = Arc<RwLock<Partition>>;

/// The partition a batch runs on and its table's row layout.
type BatchTarget = (OwnedPartition, Arc<RowLayout>);

/// An operation waiting for a lock or for REDO log space, or behind one of its
/// transaction's that is.
struct Parked {
    prepare: Prepare,
    section: Option<SectionHandle>,
    waiting: Wait,
    wait_id: u32,
    /// Of a batch that ran up to the operation that waits: where that one starts in its
    /// `KeyBatchBody` (it and the rest run when the lock is granted).
    batch_offset: Option<usize>,
}

/// What a parked operation waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// Its turn: it queues behind an earlier parked operation of its transaction on the
    /// partition.
    Behind,
    /// The lock on this row.
    Lock(RowId),
    /// Room in the REDO log (`ldm/redo_wait.rs`).
    Redo,
}

impl Wait {
    /// The row whose lock it waits for.
    fn lock(self) -> Option<RowId> {
        match self {
            Wait::Lock(row) => Some(row),
            Wait::Behind | Wait::Redo => None,
        }
    }
}

/// What this data manager knows of a transaction.
#[derive(Default)]
struct LdmTransaction {
    /// Its coordinator, whose failure hands the transaction to the takeover.
    tc: BlockAddress,
    /// (table, partition) it has touched here and not committed.
    partitions: Vec<(u32, u32)>,
    /// (table, partition) that committed it here, until it completes.
    committed: Vec<(u32, u32)>,
    /// The global checkpoint its commit belongs to, once a commit arrived.
    gci: u64,
    /// Parked operations per (table, partition), oldest first.
    parked: FxHashMap<(u32, u32), VecDeque<Parked>>,
    /// On a starting replica: the unique-key changes the last started replica computed,
    /// per operation (`op_ref`), to report instead of this replica's own.
    starting_upkeep: Vec<(u32, Vec<u8>)>,
    /// REDO log bytes its prepared writes reserved here, freed when it is forgotten.
    redo_reserved_bytes: u64,
}

pub struct LocalDataManager {
    settings: Arc<NodeSettings>,
    cluster: Arc<ClusterShape>,
    memory: Arc<DataMemory>,
    registry: Arc<PartitionRegistry>,
    tables: FxHashMap<u32, LdmTable>,
    transactions: FxHashMap<u64, LdmTransaction>,
    next_wait_id: u32,
    scans: FragmentScans,
    /// The operation running now: its body and what it left for the coordinator.
    running: RunningOperation,
    /// What this data manager counts for operators (never read by it).
    counters: Arc<DataManagerCounters>,
    /// The encoded `IndexUpkeepBody` (kept for its capacity).
    upkeep_bytes: Vec<u8>,
    /// Nodes whose coordinators failed: their operations are refused from now on, so none
    /// starts after the takeover looked (until the node has restarted).
    failed_coordinators: NodeSet,
    /// Partitions being copied to or from a restarting node.
    copies: copy::Copies,
    deadlocks: deadlock::DeadlockDetection,
    /// False on a restarted node until it is a member again: operations that reach it
    /// meanwhile were meant for its earlier life (whose connections the others have not
    /// yet seen close) and are refused.
    member: bool,
    /// Where committed changes are logged; `None` on a node without a REDO log.
    redo: Option<redo::RedoLog>,
    /// Writes parked until the REDO log has room.
    redo_waits: redo_wait::RedoWaits,
    /// The partitions' checkpoints, which free the REDO log (with it or not at all).
    checkpoints: Option<checkpoint::LocalCheckpoints>,
    /// The start from disk's restore of the partitions, while it runs.
    restore: Option<restore::Restore>,
    /// Definitions confirmed once their new ordered indexes are built (`index_build.rs`).
    definition_builds: Vec<index_build::PendingDefinition>,
    next_definition_build: u64,
    /// Partitions of dropped tables, freed a slice at a time (`ldm/reclaim.rs`).
    reclaiming: Vec<Arc<RwLock<Partition>>>,
    /// This data manager's part in an online backup, while it runs (`ldm/backup.rs`).
    backup: Option<backup::Backup>,
    /// Reused to encode a deleted row's key for the REDO log (and a backup's log).
    deleted_key: Vec<u8>,
    /// The data nodes started (their replicas read and written): the first of a
    /// partition's placement among them holds its primary (`kista_info.partitions`).
    started_nodes: NodeSet,
}

/// Writes of a batch whose primary index buckets are loaded ahead at a time: enough to
/// overlap their memory waits, few enough to stay in the first-level cache.
const BATCH_PREFETCH_ENTRIES: usize = 16;

/// Hints the CPU to load the primary index buckets of a batch's next writes from
/// `offset`, which each write would otherwise wait for in turn: the offset after the last.
/// An entry that does not parse stops it (running it reports the error).
fn prefetch_batch_keys(bytes: &[u8], partition: &RwLock<Partition>, mut offset: usize) -> usize {
    let partition = read_partition(partition);
    for _ in 0..BATCH_PREFETCH_ENTRIES {
        let Some(Ok(entry)) = KeyBatchBody::entry_at(bytes, offset) else {
            break;
        };
        let Ok(body) = KeyBodyRef::parse(entry.body) else {
            break;
        };
        partition.prefetch_key(body.key);
        offset = entry.next_offset;
    }
    offset
}

fn lock_partition(partition: &RwLock<Partition>) -> RwLockWriteGuard<'_, Partition> {
    // A poisoned lock means a thread panicked, which stops the node; go on regardless.
    partition
        .write()
        .unwrap_or_else(|poison| poison.into_inner())
}

impl LocalDataManager {
    pub fn new(
        settings: Arc<NodeSettings>,
        cluster: Arc<ClusterShape>,
        memory: Arc<DataMemory>,
        registry: Arc<PartitionRegistry>,
        instance: u16,
        counters: Arc<DataManagerCounters>,
    ) -> Self {
        let member = !settings.joins_running_cluster;
        let mut started_nodes = cluster.node_set();
        if settings.joins_running_cluster {
            started_nodes.remove(settings.node);
        }
        let redo = redo::ring_for(&settings)
            .map(|ring| redo::RedoLog::new(ring, instance, counters.clone()));
        let checkpoints = redo.is_some().then(|| {
            checkpoint::LocalCheckpoints::new(instance, settings.checkpoint_write_bytes_per_sec)
        });
        Self {
            cluster,
            scans: FragmentScans::new(registry.clone(), settings.partition_scans_per_executor_max),
            settings,
            memory,
            registry,
            tables: FxHashMap::default(),
            transactions: FxHashMap::default(),
            next_wait_id: 0,
            running: RunningOperation::default(),
            counters,
            upkeep_bytes: Vec::new(),
            failed_coordinators: NodeSet::EMPTY,
            copies: copy::Copies::default(),
            deadlocks: deadlock::DeadlockDetection::default(),
            member,
            redo,
            redo_waits: redo_wait::RedoWaits::default(),
            checkpoints,
            restore: None,
            definition_builds: Vec::new(),
            next_definition_build: 0,
            reclaiming: Vec::new(),
            backup: None,
            deleted_key: Vec::new(),
            started_nodes,
        }
    }

    // ----- schema -----

    /// Applies a table's definition, or its drop, and tells the dictionary that sent it.
    fn define_table(
        &mut self,
        ctx: &mut Context,
        definition: TableDefinition,
        definer: BlockAddress,
    ) {
        let applied = self.apply_definition(ctx, &definition);
        let conf = TableDefinitionConf {
            request_id: definition.request_id,
            table_id: definition.table_id,
            code: applied.as_ref().err().map_or(0, |&code| code as u32),
        };
        match applied {
            Ok(builds) if !builds.is_empty() => {
                self.build_then_confirm(ctx, definition.table_id, builds, (conf, definer))
            }
            _ => ctx.send_typed(definer, &conf),
        }
    }

    /// Applies a table's definition; returns the ordered indexes it added that must be
    /// built from the rows there are (per partition), which it starts empty.
    fn apply_definition(
        &mut self,
        ctx: &mut Context,
        definition: &TableDefinition,
    ) -> Result<Vec<(u32, IndexId)>, ErrorCode> {
        let table_id = definition.table_id;
        if definition.dropped != 0 {
            if let Some(table) = self.tables.remove(&table_id) {
                for partition in table.partitions.keys() {
                    self.registry.withdraw(table_id, *partition);
                }
                self.reclaim(ctx, table.partitions.into_values());
            }
            return Ok(Vec::new());
        }
        let body = ctx
            .section()
            .map(|bytes| TableDefinitionBody::decode(&bytes))
            .ok_or(ErrorCode::BadRequest)?
            .map_err(|_| ErrorCode::BadRequest)?;
        let table = self.tables.entry(table_id).or_insert_with(|| {
            let layout = Arc::new(RowLayout::new(&body.schema));
            let map = PartitionMap::for_cluster(definition.partitions, &self.cluster);
            let here = ctx.address();
            let limits = partition_limits(&self.settings);
            let partitions = map
                .held_by(here)
                .map(|p| {
                    (
                        p,
                        Arc::new(RwLock::new(Partition::new(
                            layout.clone(),
                            self.memory.clone(),
                            limits,
                        ))),
                    )
                })
                .collect();
            LdmTable {
                versions: Versions {
                    oldest: 0,
                    current: 0,
                },
                layout,
                reports_upkeep: false,
                partitions,
            }
        });
        // A table that existed here may hold rows: its new ordered indexes are built in
        // slices.
        let may_hold_rows = table.versions.current != 0;
        let mut builds = Vec::new();
        if may_hold_rows {
            // A change in place (the dictionary publishes no other to a table that exists).
            table.layout = Arc::new(RowLayout::new(&body.schema));
            for partition in table.partitions.values() {
                lock_partition(partition).change_layout(table.layout.clone());
            }
        }
        let has_unique = (body.indexes.iter())
            .any(|(_, index)| index.kind == kista_storage::schema::IndexKind::Unique);
        table.reports_upkeep = has_unique || !body.foreign_keys.is_empty();
        let watched: Vec<_> = (body.foreign_keys.iter())
            .flat_map(|foreign_key| foreign_key.watched_keys(table_id))
            .collect();
        // Bring each partition's indexes in line with the definition.
        for (&number, partition) in &table.partitions {
            let mut partition = lock_partition(partition);
            for (id, index) in &body.indexes {
                let id = IndexId(*id);
                if partition.has_index(id) {
                    continue;
                }
                let sliced =
                    may_hold_rows && index.kind == kista_storage::schema::IndexKind::Ordered;
                let added = if sliced {
                    builds.push((number, id));
                    partition.add_index_building(id, index.clone())
                } else {
                    partition.add_index(id, index.clone())
                };
                added.map_err(|error| error_code_of(&error))?;
            }
            for id in partition.index_ids() {
                if !body
                    .indexes
                    .iter()
                    .any(|(wanted, _)| IndexId(*wanted) == id)
                {
                    let _ = partition.drop_index(id);
                }
            }
            partition.watch_keys(watched.clone());
        }
        table.versions = Versions {
            oldest: definition.oldest_version,
            current: definition.schema_version,
        };
        for (&number, partition) in &table.partitions {
            let shared = SharedPartition {
                versions: table.versions,
                partition: partition.clone(),
            };
            self.registry.publish(table_id, number, shared);
        }
        Ok(builds)
    }

    // ----- operations -----

    fn prepare(&mut self, ctx: &mut Context, prepare: Prepare, section: Option<SectionHandle>) {
        if !self.member {
            if let Some(section) = section {
                ctx.release_section(section);
            }
            let message = "the replica's node restarted and is not a member again yet";
            return refuse_prepare(ctx, &prepare, ErrorCode::NodeFailure, message);
        }
        if self.failed_coordinators.contains(prepare.tc.node()) {
            if let Some(section) = section {
                ctx.release_section(section);
            }
            let message = "the transaction's coordinator failed";
            return refuse_prepare(ctx, &prepare, ErrorCode::NodeFailure, message);
        }
        let is_write = prepare.kind != OperationKind::Read;
        let redo_wait = is_write && self.must_wait_for_redo(ctx);
        if let Some((code, message)) = redo_wait
            .then(|| self.redo_refusal(prepare.transaction))
            .flatten()
        {
            if let Some(section) = section {
                ctx.release_section(section);
            }
            return refuse_prepare(ctx, &prepare, code, message.as_str());
        }
        if prepare.kind == OperationKind::Read && prepare.lock == LockKind::Committed {
            // Takes no lock and leaves nothing behind: no record, and no commit or abort
            // will come for it.
            return self.run(ctx, prepare, section);
        }
        let key = (prepare.table_id, prepare.partition);
        let transaction = self.transactions.entry(prepare.transaction).or_default();
        transaction.tc = prepare.tc;
        if !transaction.partitions.contains(&key) {
            transaction.partitions.push(key);
        }
        if let Some(queue) = transaction.parked.get_mut(&key).filter(|q| !q.is_empty()) {
            queue.push_back(Parked {
                prepare,
                section,
                waiting: Wait::Behind,
                wait_id: 0,
                batch_offset: None,
            });
            return;
        }
        if redo_wait {
            return self.park_for_redo(ctx, prepare, section);
        }
        self.run(ctx, prepare, section);
    }

    /// Runs an operation now; parks it if it must wait for a lock.
    fn run(&mut self, ctx: &mut Context, prepare: Prepare, section: Option<SectionHandle>) {
        if prepare.batch_operations > 0 {
            return self.run_batch(ctx, prepare, section, KeyBatchBody::FIRST_OFFSET);
        }
        match self.execute_operation(ctx, &prepare, section) {
            Ok(Outcome::Done(read_rows)) => {
                if prepare.kind != OperationKind::Read {
                    self.reserve_redo(prepare.transaction);
                }
                self.prepared(ctx, &prepare, read_rows, section)
            }
            Ok(Outcome::Waiting(anchor)) => self.park(ctx, prepare, section, anchor, None),
            Err((code, message)) => {
                if let Some(section) = section {
                    ctx.release_section(section);
                }
                refuse_prepare(ctx, &prepare, code, &message);
            }
        }
    }

    /// Runs a batch's writes in order from byte `offset` of its `KeyBatchBody`; parks the
    /// batch at the first that must wait for a lock, and refuses it at the first that fails
    /// (naming that one: the coordinator aborts the transaction, and with it the writes
    /// before). Once all ran, the batch goes on along the chain as one operation.
    fn run_batch(
        &mut self,
        ctx: &mut Context,
        prepare: Prepare,
        section: Option<SectionHandle>,
        mut offset: usize,
    ) {
        let target = match section {
            Some(section) => self.batch_target(&prepare).map(|target| (section, target)),
            None => Err((ErrorCode::BadRequest, "a batch without a body".into())),
        };
        let mut prefetched_to = offset;
        let ran = match target {
            Err(failure) => Err((prepare, failure)),
            Ok((section, (partition, layout))) => loop {
                let bytes = ctx.held_section(section);
                if offset >= prefetched_to {
                    prefetched_to = prefetch_batch_keys(&bytes, &partition, offset);
                }
                let entry = match KeyBatchBody::entry_at(&bytes, offset) {
                    None => break Ok(()),
                    Some(Ok(entry)) => entry,
                    Some(Err(error)) => break Err((prepare, body_error(error))),
                };
                let (operation, next_offset) = (
                    Prepare {
                        op_index: entry.op_index,
                        ..prepare
                    },
                    entry.next_offset,
                );
                let decoded = self.running.take_body(prepare.kind, entry.body);
                drop(bytes);
                let ran = decoded
                    .map_err(body_error)
                    .and_then(|()| self.running.execute(ctx, &operation, &partition, &layout));
                match ran {
                    Ok(Outcome::Done(_)) => self.reserve_redo(prepare.transaction),
                    Ok(Outcome::Waiting(anchor)) => {
                        return self.park(ctx, operation, Some(section), anchor, Some(offset));
                    }
                    Err(failure) => break Err((operation, failure)),
                }
                offset = next_offset;
            },
        };
        match ran {
            Ok(()) => self.prepared(ctx, &prepare, 0, section),
            Err((operation, (code, message))) => {
                if let Some(section) = section {
                    ctx.release_section(section);
                }
                refuse_prepare(ctx, &operation, code, &message);
            }
        }
    }

    /// The partition a batch runs on and its table's row layout, found once for all its
    /// writes (nothing else runs on this data manager while one signal's batch runs).
    fn batch_target(&self, prepare: &Prepare) -> Result<BatchTarget, (ErrorCode, String)> {
        let (table, partition) = operation_partition(&self.tables, prepare)?;
        if table.reports_upkeep {
            let message = "the table gained a unique index or a foreign key since the batch \
                was sent: run its writes one by one";
            return Err((ErrorCode::SchemaVersion, message.into()));
        }
        Ok((partition.clone(), table.layout.clone()))
    }

    /// Reserves in the REDO log what the write that just ran will log at commit.
    fn reserve_redo(&mut self, transaction: u64) {
        let (Some(redo), Some(record)) =
            (self.redo.as_mut(), self.transactions.get_mut(&transaction))
        else {
            return;
        };
        redo.reserve(self.running.staged_redo_bytes);
        record.redo_reserved_bytes += self.running.staged_redo_bytes;
    }

    /// The operation ran here: pass a write on along the chain with its body, or report to
    /// the coordinator, with the index-table operations a write needs (every replica
    /// computes the same ones; the last reports them). A read ends at the primary.
    fn prepared(
        &mut self,
        ctx: &mut Context,
        prepare: &Prepare,
        read_rows: u32,
        section: Option<SectionHandle>,
    ) {
        let is_write = prepare.kind != OperationKind::Read;
        match prepare.chain.next().filter(|_| is_write) {
            Some(chain) => {
                if chain.at_starting_replica() && !prepare.chain.at_starting_replica() {
                    self.pass_upkeep_to_starting(ctx, prepare, chain.current());
                }
                let next = Prepare { chain, ..*prepare }.to_signal(chain.current(), ctx.address());
                match section {
                    Some(section) => send_sharing_section(ctx, next, section, true),
                    None => ctx.send(next),
                }
            }
            None => {
                let conf = PrepareConf {
                    transaction: prepare.transaction,
                    op_ref: prepare.op_ref,
                    read_rows,
                };
                let passed = prepare
                    .chain
                    .at_starting_replica()
                    .then(|| self.passed_upkeep(prepare))
                    .flatten();
                if let Some(bytes) = passed {
                    if bytes.is_empty() {
                        ctx.send_typed(prepare.tc, &conf);
                    } else {
                        send_with_bytes(ctx, conf.to_signal(prepare.tc, ctx.address()), &bytes);
                    }
                } else if self.running.unique_changes.is_empty()
                    && self.running.key_changes.is_empty()
                {
                    ctx.send_typed(prepare.tc, &conf);
                } else {
                    self.upkeep_bytes.clear();
                    let changes = (&self.running.unique_changes, &self.running.key_changes);
                    IndexUpkeepBody::encode(changes.0, changes.1, &mut self.upkeep_bytes);
                    let signal = conf.to_signal(prepare.tc, ctx.address());
                    send_with_bytes(ctx, signal, &self.upkeep_bytes);
                }
                if let Some(section) = section {
                    ctx.release_section(section);
                }
            }
        }
        self.running.unique_changes.clear();
        self.running.key_changes.clear();
    }

    /// Before passing a write to a starting replica: the unique-key changes it made here,
    /// which that replica reports (it may lack the row, and so compute others).
    fn pass_upkeep_to_starting(
        &mut self,
        ctx: &mut Context,
        prepare: &Prepare,
        starting: BlockAddress,
    ) {
        let reports_upkeep = self
            .tables
            .get(&prepare.table_id)
            .is_some_and(|table| table.reports_upkeep);
        if !reports_upkeep {
            return;
        }
        self.upkeep_bytes.clear();
        if !self.running.unique_changes.is_empty() || !self.running.key_changes.is_empty() {
            let changes = (&self.running.unique_changes, &self.running.key_changes);
            IndexUpkeepBody::encode(changes.0, changes.1, &mut self.upkeep_bytes);
        }
        let upkeep = StartingUpkeep {
            transaction: prepare.transaction,
            op_ref: prepare.op_ref,
        };
        send_with_bytes(
            ctx,
            upkeep.to_signal(starting, ctx.address()),
            &self.upkeep_bytes,
        );
    }

    fn upkeep_passed(&mut self, ctx: &mut Context, upkeep: StartingUpkeep) {
        let bytes = ctx.section().map(|b| b.to_vec()).unwrap_or_default();
        let transaction = self.transactions.entry(upkeep.transaction).or_default();
        transaction.starting_upkeep.push((upkeep.op_ref, bytes));
    }

    /// The upkeep a started replica passed for `prepare`, taken.
    fn passed_upkeep(&mut self, prepare: &Prepare) -> Option<Vec<u8>> {
        let transaction = self.transactions.get_mut(&prepare.transaction)?;
        let position = transaction
            .starting_upkeep
            .iter()
            .position(|(op_ref, _)| *op_ref == prepare.op_ref)?;
        Some(transaction.starting_upkeep.swap_remove(position).1)
    }

    fn park(
        &mut self,
        ctx: &mut Context,
        prepare: Prepare,
        section: Option<SectionHandle>,
        anchor: RowId,
        batch_offset: Option<usize>,
    ) {
        let limit = Duration::from_millis(self.settings.lock_wait_timeout_ms);
        let wait_id = self.start_wait(ctx, prepare.transaction, limit);
        self.start_deadlock_checks(ctx, prepare.transaction, wait_id);
        self.counters.lock_wait();
        let key = (prepare.table_id, prepare.partition);
        let transaction = self.transactions.entry(prepare.transaction).or_default();
        transaction
            .parked
            .entry(key)
            .or_default()
            .push_front(Parked {
                prepare,
                section,
                waiting: Wait::Lock(anchor),
                wait_id,
                batch_offset,
            });
    }

    /// A new wait of `transaction`'s, which expires after `limit` unless it ended: its id.
    fn start_wait(&mut self, ctx: &mut Context, transaction: u64, limit: Duration) -> u32 {
        self.next_wait_id = self.next_wait_id.wrapping_add(1);
        let wait_id = self.next_wait_id;
        let expiry = WaitExpired {
            transaction,
            wait_id,
        };
        ctx.send_delayed(expiry.to_signal(ctx.address(), ctx.address()), limit);
        wait_id
    }

    /// Runs one operation on its partition. Ok(Done(rows sent to the client)).
    fn execute_operation(
        &mut self,
        ctx: &mut Context,
        prepare: &Prepare,
        section: Option<SectionHandle>,
    ) -> Result<Outcome<u32>, (ErrorCode, String)> {
        if prepare.kind == OperationKind::Read {
            // A read ends here, at one replica: it may be stale unless the node holds its
            // lease. (A write goes on to every replica, which refuse a removed node.)
            self.registry.check_read_lease(ctx.now_ns())?;
        }
        let (table, partition) = operation_partition(&self.tables, prepare)?;
        let section = section.ok_or_else(|| {
            (
                ErrorCode::BadRequest,
                "operation without a body".to_string(),
            )
        })?;
        if prepare.kind == OperationKind::Read && prepare.lock == LockKind::Committed {
            // Under the shared lock, like any other reader of the partition.
            let answer = ReadAnswer::row_of(prepare);
            let rows = answer_committed_read(ctx, section, answer, |body, row| {
                Ok(encode_committed_row(partition, body, row))
            })?;
            return Ok(Outcome::Done(rows));
        }
        (self.running)
            .take_body(prepare.kind, &ctx.held_section(section))
            .map_err(body_error)?;
        self.running.execute(ctx, prepare, partition, &table.layout)
    }

    /// Runs parked operations whose locks were granted.
    fn resume(&mut self, ctx: &mut Context, table_id: u32, partition: u32, granted: Vec<Granted>) {
        for grant in granted {
            if self.copy_lock_granted(ctx, (table_id, partition), grant.transaction) {
                continue;
            }
            let Some(transaction) = self.transactions.get_mut(&grant.transaction.0) else {
                continue;
            };
            let Some(queue) = transaction.parked.get_mut(&(table_id, partition)) else {
                continue;
            };
            if queue
                .front()
                .is_some_and(|p| p.waiting == Wait::Lock(grant.row))
            {
                self.run_queue(ctx, grant.transaction.0, (table_id, partition));
            }
        }
    }

    /// Runs a transaction's parked operations on a partition, oldest first, until one waits.
    fn run_queue(&mut self, ctx: &mut Context, transaction: u64, key: (u32, u32)) {
        loop {
            let Some(parked) = self
                .transactions
                .get_mut(&transaction)
                .and_then(|t| t.parked.get_mut(&key))
                .and_then(|queue| queue.pop_front())
            else {
                return;
            };
            match parked.batch_offset {
                Some(offset) => self.run_batch(ctx, parked.prepare, parked.section, offset),
                None => self.run(ctx, parked.prepare, parked.section),
            }
            let waiting = self
                .transactions
                .get(&transaction)
                .and_then(|t| t.parked.get(&key))
                .is_some_and(|queue| queue.front().is_some_and(|p| p.waiting != Wait::Behind));
            if waiting {
                return;
            }
        }
    }

    /// A parked operation's wait for a lock, or for REDO log space, lasted its limit.
    fn wait_expired(&mut self, ctx: &mut Context, expired: WaitExpired) {
        let wait = self.waiting(expired.transaction, expired.wait_id);
        if let Some((_, Wait::Redo)) = wait {
            let disk_full = (self.checkpoints.as_ref()).is_some_and(|c| c.held_by_full_disk());
            return self.end_wait(ctx, expired.transaction, expired.wait_id, |_| {
                redo_wait::expired_refusal(disk_full)
            });
        }
        let timeout_ms = self.settings.lock_wait_timeout_ms;
        self.end_wait(ctx, expired.transaction, expired.wait_id, |table_id| {
            let message = format!(
                "lock wait timeout after {timeout_ms} ms on table {table_id} (probably a deadlock); the transaction is aborted"
            );
            (ErrorCode::LockWaitTimeout, message)
        });
    }

    /// The (table, partition) where `transaction`'s wait `wait_id` is parked and what it
    /// waits for, if it still waits (not granted, timed out or aborted since).
    fn waiting(&self, transaction: u64, wait_id: u32) -> Option<((u32, u32), Wait)> {
        let transaction = self.transactions.get(&transaction)?;
        transaction.parked.iter().find_map(|(&key, queue)| {
            let front = queue.front().filter(|p| p.wait_id == wait_id)?;
            (front.waiting != Wait::Behind).then_some((key, front.waiting))
        })
    }

    /// Gives up a wait: the waiting operation, and the operations of its transaction queued
    /// behind it on the partition, are refused with the error `refusal` describes for the
    /// table (the coordinator then aborts the transaction). Nothing if the wait is over.
    fn end_wait(
        &mut self,
        ctx: &mut Context,
        transaction: u64,
        wait_id: u32,
        refusal: impl Fn(u32) -> (ErrorCode, String),
    ) {
        let Some((key, wait)) = self.waiting(transaction, wait_id) else {
            return; // granted or aborted before the timer or the probe came
        };
        let granted = match (wait, self.partition(key)) {
            (Wait::Lock(anchor), Some(partition)) => {
                lock_partition(&partition).cancel_wait(TransactionId(transaction), anchor)
            }
            (Wait::Redo, _) => {
                self.redo_waits.forget(transaction, wait_id);
                Vec::new()
            }
            _ => Vec::new(),
        };
        let queue = self
            .transactions
            .get_mut(&transaction)
            .and_then(|record| record.parked.remove(&key))
            .unwrap_or_default();
        let (code, message) = refusal(key.0);
        for parked in queue {
            if let Some(section) = parked.section {
                ctx.release_section(section);
            }
            refuse_prepare(ctx, &parked.prepare, code, &message);
        }
        self.resume(ctx, key.0, key.1, granted);
    }

    fn partition(&self, (table_id, partition): (u32, u32)) -> Option<Arc<RwLock<Partition>>> {
        self.tables
            .get(&table_id)?
            .partitions
            .get(&partition)
            .cloned()
    }

    // ----- commit protocol -----

    fn commit(&mut self, ctx: &mut Context, commit: Commit) {
        let key = (commit.table_id, commit.partition);
        if let Some(granted) = self.commit_partition(ctx, key, commit.transaction, commit.gci) {
            if let Some(transaction) = self.transactions.get_mut(&commit.transaction) {
                transaction.partitions.retain(|&p| p != key);
                transaction.gci = commit.gci;
                if !transaction.committed.contains(&key) {
                    transaction.committed.push(key);
                }
            }
            self.resume(ctx, key.0, key.1, granted);
        }
        match commit.chain.previous() {
            Some(chain) => ctx.send_typed(chain.current(), &Commit { chain, ..commit }),
            None => {
                let conf = CommitConf {
                    transaction: commit.transaction,
                    table_id: commit.table_id,
                    partition: commit.partition,
                };
                ctx.send_typed(commit.tc, &conf);
            }
        }
    }

    fn complete(&mut self, ctx: &mut Context, complete: Complete) {
        self.forget(ctx, complete.transaction, false);
        ctx.send_typed(
            complete.tc,
            &CompleteConf {
                transaction: complete.transaction,
            },
        );
    }

    fn abort(&mut self, ctx: &mut Context, abort: Abort) {
        self.forget(ctx, abort.transaction, true);
        ctx.send_typed(
            abort.tc,
            &AbortConf {
                transaction: abort.transaction,
            },
        );
    }

    /// Aborts here, then passes the abort on to the chain's next replica; the last confirms.
    fn abort_along(&mut self, ctx: &mut Context, abort: AbortAlong) {
        self.forget(ctx, abort.transaction, true);
        match abort.chain.next() {
            Some(chain) => ctx.send_typed(chain.current(), &AbortAlong { chain, ..abort }),
            None => ctx.send_typed(
                abort.tc,
                &AbortConf {
                    transaction: abort.transaction,
                },
            ),
        }
    }

    /// Drops a transaction's record here, rolling back what it still holds (`abort`) and
    /// dropping its parked operations.
    fn forget(&mut self, ctx: &mut Context, transaction: u64, abort: bool) {
        let Some(record) = self.transactions.remove(&transaction) else {
            return;
        };
        for parked in record.parked.into_values().flatten() {
            if parked.waiting == Wait::Redo {
                self.redo_waits.forget_transaction(transaction);
            }
            if let Some(section) = parked.section {
                ctx.release_section(section);
            }
        }
        for key in record.partitions {
            let granted = if abort {
                self.partition(key)
                    .map(|partition| lock_partition(&partition).abort(TransactionId(transaction)))
            } else {
                self.commit_partition(ctx, key, transaction, record.gci)
            };
            if let Some(granted) = granted {
                self.resume(ctx, key.0, key.1, granted);
            }
        }
        if let Some(redo) = self.redo.as_mut() {
            redo.release(record.redo_reserved_bytes);
        }
        self.resume_redo_waits(ctx);
    }

    /// Commits `transaction`'s changes to one partition, logging each in the REDO log;
    /// `None` when this data manager has no such partition.
    fn commit_partition(
        &mut self,
        ctx: &mut Context,
        (table_id, partition_id): (u32, u32),
        transaction: u64,
        gci: u64,
    ) -> Option<Vec<Granted>> {
        let transaction = TransactionId(transaction);
        let table = self.tables.get(&table_id)?;
        let partition = table.partitions.get(&partition_id)?;
        let Some(redo) = self.redo.as_mut() else {
            return Some(lock_partition(partition).commit(transaction, gci));
        };
        let place = RowPlace {
            table_id,
            table_version: table.versions.current,
            partition: partition_id,
        };
        let mut failure = None;
        let mut backup = self.backup.as_mut();
        let mut backup_failure = None;
        let key = &mut self.deleted_key;
        let granted = lock_partition(partition).commit_logged(transaction, gci, &mut |change| {
            let record = Record::of_change(place, &table.layout, change, key);
            if failure.is_none() {
                failure = redo.log_change(gci, &record).err();
            }
            if let Some(backup) = backup.as_mut().filter(|_| backup_failure.is_none()) {
                backup_failure = backup.log_change(gci, &record).err();
            }
        });
        if let Some(reason) = failure.or_else(|| redo.write_more(ctx).err()) {
            // The change is committed in memory but cannot be made durable here: the node
            // stops rather than go on without its log; the other replicas hold the change.
            ctx.stop_node(&reason);
        }
        if self.backup.is_some() {
            self.backup_logged(ctx, backup_failure);
        }
        Some(granted)
    }

    /// The master's order to restore the partitions (or start them empty), or, on a node
    /// restarting into a running cluster, its `gcp`'s word to load them from its own disk
    /// before the copy, and, once it started, to start its log and checkpoints afresh
    /// (those confs go to that `gcp`).
    fn restore(&mut self, ctx: &mut Context, order: LdmRestore, master: BlockAddress) {
        let Some(redo) = self.redo.as_ref().filter(|_| self.restore.is_none()) else {
            return;
        };
        let Some(kind) = RestoreKind::of(order.restores) else {
            return ctx.log(&format!(
                "ldm: a restore of unknown kind {}",
                order.restores
            ));
        };
        let limits = partition_limits(&self.settings);
        let (gci, life) = (order.gci, order.node_life);
        match restore::Restore::start(ctx, gci, life, kind, master, redo.ring(), limits) {
            Ok(restore) => self.restore = Some(restore),
            Err(reason) => ctx.stop_node(&reason),
        }
    }

    /// A reply to the restore: go on with the log, and checkpoint, once it is over.
    fn restore_replied(&mut self, ctx: &mut Context, reply: FileReply) -> Result<(), String> {
        let (Some(restore), Some(redo), Some(checkpoints)) = (
            self.restore.as_mut(),
            self.redo.as_mut(),
            self.checkpoints.as_mut(),
        ) else {
            return Ok(());
        };
        let next = match restore.replied(ctx, reply, &self.tables) {
            Ok(next) => next,
            Err(error) if restore.kind == RestoreKind::BeforeCopy => {
                return self.restore_abandoned(ctx, &error.to_string());
            }
            Err(RestoreError::DiskUnusable(why)) => {
                // The node's `gcp` records it in the control file, then stops the node.
                let gcp = BlockAddress::new(ctx.address().node(), GCP_BLOCK, 0);
                let signal = LdmDiskUnusable {}.to_signal(gcp, ctx.address());
                send_with_bytes(ctx, signal, why.as_bytes());
                return Ok(());
            }
            Err(RestoreError::Failed(reason)) => {
                return Err(format!(
                    "{reason}. Restore this node's data directory from a backup, or empty \
                     it: started again once the others serve, the node copies its data \
                     from a peer"
                ))
            }
        };
        match next {
            restore::Next::Going => Ok(()),
            restore::Next::Fresh => {
                redo.open(ctx, restore.life)?;
                if self.settings.joins_running_cluster {
                    // A restarting node started (its copy is over): its disk restores
                    // its rows once a checkpoint of them all is written.
                    checkpoints.copy_done();
                    checkpoints.start_if_due(ctx, &self.tables, redo)?;
                }
                self.restored(ctx);
                Ok(())
            }
            restore::Next::Loaded => {
                restore.partitions_restored(&self.tables);
                self.restored(ctx);
                Ok(())
            }
            restore::Next::Resume {
                files,
                head_lsn,
                tail_lsn,
                checkpoint_id,
            } => {
                restore.partitions_restored(&self.tables);
                redo.resume(&files, head_lsn, tail_lsn, restore.life, restore.gci);
                checkpoints.start_restored(ctx, &self.tables, redo, checkpoint_id)
            }
        }
    }

    /// A restore before a copy found this node's disk unusable: the partitions start
    /// empty, and the copy brings every row.
    fn restore_abandoned(&mut self, ctx: &mut Context, reason: &str) -> Result<(), String> {
        let Some(restore) = self.restore.as_mut() else {
            return Ok(());
        };
        ctx.log(&format!(
            "ldm {}: this node's disk cannot be restored before its copy ({reason}); every \
             row is copied from the other replicas",
            ctx.address().instance()
        ));
        restore.empty_partitions(&self.tables)?;
        restore.gci = 0;
        restore.rows = 0;
        restore.records = 0;
        self.restored(ctx);
        Ok(())
    }

    /// The restore is over: the master hears it.
    fn restored(&mut self, ctx: &mut Context) {
        let Some(restore) = self.restore.take() else {
            return;
        };
        if restore.skipped > 0 {
            ctx.log(&format!(
                "ldm {}: {} restored rows or changes were of tables this node no longer holds",
                ctx.address().instance(),
                restore.skipped
            ));
        }
        let conf = LdmRestoreConf {
            rows: restore.rows,
            records: restore.records,
            gci: restore.gci,
        };
        ctx.send_typed(restore.master, &conf);
    }

    /// Marks a global checkpoint done in the REDO log and confirms it to the master once
    /// the log is durable through the mark (at once without a log: nothing to save). The
    /// GCI every member saved may make a local checkpoint usable, and a filling log may
    /// call for the next.
    fn save_checkpoint(&mut self, ctx: &mut Context, save: GcpSave, master: BlockAddress) {
        let (Some(redo), Some(checkpoints)) = (self.redo.as_mut(), self.checkpoints.as_mut())
        else {
            return ctx.send_typed(master, &GcpSaveConf { gci: save.gci });
        };
        checkpoints.restorable(save.restorable, redo);
        let result = redo
            .save(ctx, save.gci, master)
            .and_then(|()| checkpoints.start_if_due(ctx, &self.tables, redo));
        if let Err(reason) = result {
            ctx.stop_node(&reason);
        }
        self.resume_redo_waits(ctx);
        self.backup_gci_saved(ctx, save.gci);
    }

    fn file_replied(&mut self, ctx: &mut Context, reply: FileReply) {
        if reply.request_id & backup::BACKUP_REQUEST != 0 {
            return self.backup_replied(ctx, reply);
        }
        let (Some(redo), Some(checkpoints)) = (self.redo.as_mut(), self.checkpoints.as_mut())
        else {
            return;
        };
        let result = if reply.request_id & checkpoint::CHECKPOINT_REQUEST != 0 {
            match checkpoints.replied(ctx, reply, &self.tables, redo) {
                Ok(Some(written)) => {
                    self.counters.local_checkpoint_written();
                    if checkpoints.is_after_copy(written.id) {
                        let gcp = BlockAddress::new(ctx.address().node(), GCP_BLOCK, 0);
                        ctx.send_typed(gcp, &LdmHoldsData {});
                    }
                    if let Some(restore) =
                        self.restore.as_ref().filter(|r| r.checkpointed(written.id))
                    {
                        // Of the restored GCI: usable at once, and the log before it is free.
                        checkpoints.restorable(restore.gci, redo);
                        self.restored(ctx);
                    }
                    Ok(())
                }
                Ok(None) => Ok(()),
                Err(reason) => Err(reason),
            }
        } else if reply.request_id & restore::RESTORE_REQUEST != 0 {
            self.restore_replied(ctx, reply)
        } else {
            redo.replied(ctx, reply)
        };
        if let Err(reason) = result {
            ctx.stop_node(&reason);
        }
    }

    fn local_checkpoint_step(&mut self, ctx: &mut Context, step: LocalCheckpointStep) {
        let (Some(redo), Some(checkpoints)) = (self.redo.as_ref(), self.checkpoints.as_mut())
        else {
            return;
        };
        if let Err(reason) = checkpoints.step_due(ctx, step, &self.tables, redo) {
            ctx.stop_node(&reason);
        }
    }
}

impl LocalDataManager {
    // ----- failed coordinators -----

    fn node_failed(&mut self, ctx: &mut Context, failed: NodeFailed) {
        self.failed_coordinators = self.failed_coordinators.union(failed.failed);
        self.started_nodes = self.started_nodes.minus(failed.failed);
        self.copies_lost(ctx, failed.failed);
        self.backup_master_failed(ctx, failed.failed);
    }

    fn node_joined(&mut self, ctx: &Context, joined: NodeJoined) {
        if joined.joined == u32::from(ctx.address().node().0) {
            self.member = true;
        }
    }

    /// A restarted node's coordinators are trusted again: its earlier life's transactions
    /// were taken over before it started.
    fn node_started(&mut self, started: NodeStarted) {
        if let Ok(node) = u8::try_from(started.node) {
            self.failed_coordinators.remove(kista_signal::NodeId(node));
            self.started_nodes.insert(kista_signal::NodeId(node));
        }
    }

    /// Reports what this data manager holds of transactions whose coordinators failed.
    fn takeover_query(&mut self, ctx: &mut Context, query: TakeoverQuery, from: BlockAddress) {
        self.failed_coordinators = self.failed_coordinators.union(query.coordinators);
        let mut parts = Vec::new();
        for (&transaction, record) in &self.transactions {
            if !query.coordinators.contains(record.tc.node()) {
                continue;
            }
            let prepared = record.partitions.iter().map(|&key| (key, false));
            let committed = record.committed.iter().map(|&key| (key, true));
            for ((table_id, partition), committed) in prepared.chain(committed) {
                parts.push(OrphanedPart {
                    transaction,
                    table_id,
                    partition,
                    committed,
                    gci: if committed { record.gci } else { 0 },
                });
            }
        }
        let mut chunks = parts.chunks(TAKEOVER_PARTS_PER_REPORT).peekable();
        let mut bytes = Vec::new();
        loop {
            let chunk = chunks.next().unwrap_or(&[]);
            let last = chunks.peek().is_none();
            bytes.clear();
            TakeoverReportBody::encode(chunk, &mut bytes);
            let report = TakeoverReport {
                takeover: query.takeover,
                entries: chunk.len() as u32,
                last: u32::from(last),
            };
            send_with_bytes(ctx, report.to_signal(from, ctx.address()), &bytes);
            if last {
                break;
            }
        }
    }
}

fn partition_limits(settings: &NodeSettings) -> PartitionLimits {
    PartitionLimits {
        locks_max: settings.locks_per_partition_max,
        deleted_keys_bytes_max: settings.deleted_keys_per_partition_bytes_max,
    }
}

/// Entries one takeover report carries (28 bytes each, well within a section).
const TAKEOVER_PARTS_PER_REPORT: usize = 1000;

/// The table and partition an operation runs on, once the table's version accepts the
/// operation's.
fn operation_partition<'t>(
    tables: &'t FxHashMap<u32, LdmTable>,
    prepare: &Prepare,
) -> Result<(&'t LdmTable, &'t OwnedPartition), (ErrorCode, String)> {
    let table = tables.get(&prepare.table_id).ok_or_else(|| {
        (
            ErrorCode::NoSuchTable,
            format!("no table {}", prepare.table_id),
        )
    })?;
    (table.versions).accept(prepare.table_id, prepare.schema_version)?;
    let partition = table.partitions.get(&prepare.partition).ok_or_else(|| {
        (
            ErrorCode::BadRequest,
            format!(
                "partition {} of table {} is not held here",
                prepare.partition, prepare.table_id
            ),
        )
    })?;
    Ok((table, partition))
}

impl Block for LocalDataManager {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        let number = signal.number();
        let result = if number == Prepare::NUMBER {
            Prepare::from_signal(signal).map(|p| match ctx.take_section() {
                Ok(section) => self.prepare(ctx, p, section),
                Err(exhausted) => {
                    let message = format!("no room for the operation's body: {exhausted}");
                    refuse_prepare(ctx, &p, ErrorCode::Overloaded, &message);
                }
            })
        } else if number == Commit::NUMBER {
            Commit::from_signal(signal).map(|c| self.commit(ctx, c))
        } else if number == FileReply::NUMBER {
            FileReply::from_signal(signal).map(|reply| self.file_replied(ctx, reply))
        } else if number == IndexBuildSlice::NUMBER {
            IndexBuildSlice::from_signal(signal).map(|s| self.index_build_slice(ctx, s))
        } else if number == ReclaimSlice::NUMBER {
            ReclaimSlice::from_signal(signal).map(|_| self.reclaim_slice(ctx))
        } else if number == LocalCheckpointStep::NUMBER {
            LocalCheckpointStep::from_signal(signal).map(|s| self.local_checkpoint_step(ctx, s))
        } else if number == LdmRestore::NUMBER {
            LdmRestore::from_signal(signal).map(|r| self.restore(ctx, r, signal.sender()))
        } else if number == GcpSave::NUMBER {
            GcpSave::from_signal(signal)
                .map(|save| self.save_checkpoint(ctx, save, signal.sender()))
        } else if number == Complete::NUMBER {
            Complete::from_signal(signal).map(|c| self.complete(ctx, c))
        } else if number == Abort::NUMBER {
            Abort::from_signal(signal).map(|a| self.abort(ctx, a))
        } else if number == AbortAlong::NUMBER {
            AbortAlong::from_signal(signal).map(|a| self.abort_along(ctx, a))
        } else if let Some(result) = self.scans.execute(signal, ctx) {
            result
        } else if number == WaitExpired::NUMBER {
            WaitExpired::from_signal(signal).map(|e| self.wait_expired(ctx, e))
        } else if number == InfoListRequest::NUMBER {
            let from = signal.sender();
            InfoListRequest::from_signal(signal).map(|r| self.list(ctx, r, from))
        } else if number == DeadlockCheck::NUMBER {
            DeadlockCheck::from_signal(signal).map(|c| self.deadlock_check(ctx, c))
        } else if number == DeadlockProbe::NUMBER {
            DeadlockProbe::from_signal(signal).map(|p| self.deadlock_probe(ctx, p))
        } else if number == DeadlockFound::NUMBER {
            DeadlockFound::from_signal(signal).map(|f| self.deadlock_found(ctx, f))
        } else if number == NodeFailed::NUMBER {
            NodeFailed::from_signal(signal).map(|f| self.node_failed(ctx, f))
        } else if number == NodeStarted::NUMBER {
            NodeStarted::from_signal(signal).map(|s| self.node_started(s))
        } else if number == NodeJoined::NUMBER {
            NodeJoined::from_signal(signal).map(|j| self.node_joined(ctx, j))
        } else if number == CopyPartition::NUMBER {
            CopyPartition::from_signal(signal).map(|c| self.copy_partition(ctx, c, signal.sender()))
        } else if number == CopyRows::NUMBER {
            CopyRows::from_signal(signal).map(|r| self.copied_rows(ctx, r, signal.sender()))
        } else if number == CopyRowsConf::NUMBER {
            CopyRowsConf::from_signal(signal).map(|c| self.copy_rows_applied(ctx, c))
        } else if number == StartingUpkeep::NUMBER {
            StartingUpkeep::from_signal(signal).map(|u| self.upkeep_passed(ctx, u))
        } else if number == TakeoverQuery::NUMBER {
            TakeoverQuery::from_signal(signal).map(|q| self.takeover_query(ctx, q, signal.sender()))
        } else if number == TableDefinition::NUMBER {
            TableDefinition::from_signal(signal).map(|d| self.define_table(ctx, d, signal.sender()))
        } else if number == BackupScan::NUMBER {
            BackupScan::from_signal(signal).map(|s| self.backup_scan(ctx, s))
        } else if number == BackupStep::NUMBER {
            BackupStep::from_signal(signal).map(|s| self.backup_step(ctx, s))
        } else if number == BackupStop::NUMBER {
            BackupStop::from_signal(signal).map(|s| self.backup_stop(ctx, s))
        } else if number == BackupEnded::NUMBER {
            BackupEnded::from_signal(signal).map(|e| self.backup_ended(ctx, e))
        } else {
            Ok(())
        };
        debug_assert!(result.is_ok(), "malformed signal to ldm: {result:?}");
    }
}
