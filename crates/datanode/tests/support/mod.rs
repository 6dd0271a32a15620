//! A data node in the deterministic simulation, with a client stand-in that records what the
//! node sends it. Tests drive transactions through the real protocol signals.

// Shared by several test binaries, each of which uses only part of it.
#![allow(dead_code)]

pub mod chains;
pub mod disk_cluster;
pub mod redo_logs;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kista_datanode::arbitration::Arbitrator;
use kista_datanode::metrics::NodeCounters;
use kista_datanode::node::{data_node_blocks, data_node_start_signals, NodeSettings};
use kista_datanode::protocol::*;
use kista_runtime::io::SimulatedDisk;
use kista_runtime::simulation::{Simulation, SimulationOptions};
use kista_runtime::{Block, Context};
use kista_signal::{BlockAddress, BlockId, NodeId, Signal, TypedSignal};
use kista_storage::memory::DataMemory;
use kista_storage::schema::{Column, IndexKind, IndexSchema, TableSchema};
use kista_storage::types::{ColumnType, Value};

/// The client stand-in's node id (clients get 64 and up).
const CLIENT_NODE: NodeId = NodeId(64);
/// Where the arbitrator runs: where the management server hosts it in a real cluster.
pub const ARBITRATOR: BlockAddress = kista_datanode::arbitration::arbitrator_address();
/// Virtual time steps are bounded so a test that waits for something that never comes
/// fails instead of hanging.
const STEPS_MAX: u64 = 1_000_000;

type Inbox = Arc<Mutex<Vec<(Signal, Vec<u8>)>>>;

/// Records every signal (and its section's bytes) it receives.
struct ClientStandIn {
    inbox: Inbox,
}

impl Block for ClientStandIn {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        let bytes = ctx.section().map(|b| b.to_vec()).unwrap_or_default();
        self.inbox.lock().unwrap().push((*signal, bytes));
    }
}

/// One data node, or several forming a cluster, in one simulation, with a client that sends
/// its requests to one node's first `tc` and its `dict`.
pub struct Node {
    pub simulation: Simulation,
    /// The settings of the node requests go to.
    pub settings: NodeSettings,
    nodes: Vec<NodeSettings>,
    /// Each node's disk, which outlives its crashes.
    pub disks: HashMap<NodeId, SimulatedDisk>,
    client: BlockAddress,
    inbox: Inbox,
    next_request: u64,
}

/// What a batch returned.
#[derive(Debug)]
pub struct Executed {
    pub outcome: TransactionOutcome,
    pub code: u32,
    pub message: String,
    /// The op index of the operation that failed (when `code` is not 0).
    pub failed_op: u32,
    /// (op_index, values) per row read.
    pub rows: Vec<(u32, Vec<Value>)>,
    /// The block that sent each row, in the order of `rows`.
    pub row_senders: Vec<BlockAddress>,
    /// The GCI a committed transaction belongs to (0 for a single committed read).
    pub gci: u64,
}

/// What a scan returned.
#[derive(Debug, Default)]
pub struct Scanned {
    /// Rows per partition, in the order each partition sent them.
    pub by_partition: std::collections::BTreeMap<u32, Vec<Vec<Value>>>,
    /// Blocks that sent rows.
    pub senders: Vec<BlockAddress>,
    /// Partitions that said they had no more rows, in the order they said it.
    pub partitions_done: Vec<u32>,
    pub rounds: u32,
    pub code: u32,
    pub message: String,
}

impl Scanned {
    pub fn rows(&self) -> Vec<Vec<Value>> {
        self.by_partition.values().flatten().cloned().collect()
    }
}

/// A scan to run.
pub struct ScanSpec {
    pub table: (u32, u32),
    pub body: ScanBody,
    pub limit: u64,
    pub batch_rows: u32,
    pub ordered: bool,
}

impl ScanSpec {
    /// A scan of every row of `table`, every column, `batch_rows` per batch per partition.
    pub fn every_row(table: (u32, u32), batch_rows: u32) -> Self {
        ScanSpec {
            table,
            body: ScanBody {
                range: kista_storage::partition::ScanRange::Full,
                filter: None,
                columns: vec![],
                versions: kista_storage::partition::ScanVersions::Committed,
            },
            limit: u64::MAX,
            batch_rows,
            ordered: false,
        }
    }
}

/// One operation of a batch.
pub struct Op {
    pub kind: OperationKind,
    pub lock: LockKind,
    pub index_id: u32,
    pub body: KeyBody,
}

impl Node {
    pub fn start(settings: NodeSettings, data_memory_bytes: u64, seed: u64) -> Self {
        Self::start_cluster(vec![settings], data_memory_bytes, seed)
    }

    /// Data nodes that form one cluster (each one's `peers` name the others), each with
    /// its own `data_memory_bytes`; requests go to the first. Returns once the cluster
    /// started (nodes that keep their data on disk start from it).
    pub fn start_cluster(nodes: Vec<NodeSettings>, data_memory_bytes: u64, seed: u64) -> Self {
        let mut cluster = Self::begin_cluster(nodes, data_memory_bytes, seed);
        if cluster.nodes.iter().any(NodeSettings::keeps_data_on_disk) {
            cluster.wait_for_start();
        }
        cluster
    }

    /// [`Node::start_cluster`], returning at once, before the nodes started.
    pub fn begin_cluster(nodes: Vec<NodeSettings>, data_memory_bytes: u64, seed: u64) -> Self {
        let mut simulation = Simulation::new(&SimulationOptions {
            seed,
            latency_ns_max: 20_000,
            // Cluster tests look for protocol signals in the trace.
            record_trace: nodes.len() > 1,
            sections_max: 4096,
        });
        let mut disks = HashMap::new();
        for settings in &nodes {
            let disk = SimulatedDisk::new();
            simulation.attach_disk(settings.node, disk.clone());
            disks.insert(settings.node, disk.clone());
            let blocks = blocks_on(settings, disk, data_memory_bytes);
            simulation.add_registrations(settings.node, blocks).unwrap();
            for signal in data_node_start_signals(settings) {
                simulation.inject(signal);
            }
        }
        simulation
            .add_block(ARBITRATOR, Box::new(Arbitrator::default()))
            .unwrap();
        let client = BlockAddress::new(CLIENT_NODE, BlockId(200), 0);
        let inbox = Inbox::default();
        simulation
            .add_block(
                client,
                Box::new(ClientStandIn {
                    inbox: inbox.clone(),
                }),
            )
            .unwrap();
        Self {
            simulation,
            settings: nodes[0].clone(),
            nodes,
            disks,
            client,
            inbox,
            next_request: 1,
        }
    }

    /// Runs until the start from disk is over (every node that keeps its data on disk
    /// starts so, an initial start too): the master logs it, and its word reaches every
    /// node within a few milliseconds.
    pub fn wait_for_start(&mut self) {
        if let Err(failure) = self.try_wait_for_start() {
            panic!("{failure}");
        }
    }

    /// [`Node::wait_for_start`], saying why when the start from disk did not end: every
    /// node stopped (the start refused to go on), or 120 s passed.
    pub fn try_wait_for_start(&mut self) -> Result<(), String> {
        let starts = |cluster: &Self| -> usize {
            let logs = cluster
                .nodes
                .iter()
                .map(|n| cluster.simulation.log_of(n.node));
            let ends = logs.map(|log| {
                let done = log
                    .iter()
                    .filter(|line| line.starts_with("start from disk done"));
                done.count()
            });
            ends.sum()
        };
        let before = starts(self);
        let done = |cluster: &Self| starts(cluster) > before;
        let until_ns = self.simulation.now_ns() + 120_000_000_000;
        while !done(self) {
            if self.simulation.now_ns() < until_ns && self.simulation.step() {
                continue;
            }
            let logs: Vec<_> = self
                .nodes
                .iter()
                .map(|n| self.simulation.log_of(n.node))
                .collect();
            return Err(format!(
                "the start from disk did not end within 120 s: logs {logs:?}, stopped {:?}",
                self.simulation.stopped_nodes()
            ));
        }
        self.run_for_ms(20);
        Ok(())
    }

    /// Starts every data node again (all crashed or stopped) as a cluster starts: from
    /// what their disks hold.
    pub fn start_again(&mut self, data_memory_bytes: u64) {
        if let Err(failure) = self.try_start_again(data_memory_bytes) {
            panic!("{failure}");
        }
    }

    /// [`Node::start_again`], saying why when the start did not end.
    pub fn try_start_again(&mut self, data_memory_bytes: u64) -> Result<(), String> {
        self.try_start_again_without(&[], data_memory_bytes)
    }

    /// [`Node::try_start_again`] with the nodes `absent` left down (started later, they
    /// join the running cluster: [`Node::restart_node`]).
    pub fn try_start_again_without(
        &mut self,
        absent: &[NodeId],
        data_memory_bytes: u64,
    ) -> Result<(), String> {
        let starting = self.nodes.clone().into_iter();
        for settings in starting.filter(|s| !absent.contains(&s.node)) {
            let disk = self.disks[&settings.node].clone();
            let blocks = blocks_on(&settings, disk, data_memory_bytes);
            self.simulation.restart(settings.node, blocks).unwrap();
            for signal in data_node_start_signals(&settings) {
                self.simulation.inject(signal);
            }
        }
        self.try_wait_for_start()
    }

    /// The settings node `node` starts with from now on (as a changed configuration
    /// gives them).
    pub fn reconfigure(&mut self, settings: NodeSettings) {
        let slot = self.nodes.iter_mut().find(|s| s.node == settings.node);
        *slot.expect("a node of the cluster") = settings;
    }

    /// Starts crashed data node `node` again with fresh blocks, joining the running cluster.
    pub fn restart_node(&mut self, node: NodeId, data_memory_bytes: u64) {
        let mut settings = self
            .nodes
            .iter()
            .find(|settings| settings.node == node)
            .expect("a node of the cluster")
            .clone();
        settings.joins_running_cluster = true;
        let disk = self.disks[&node].clone();
        let blocks = blocks_on(&settings, disk, data_memory_bytes);
        self.simulation.restart(node, blocks).unwrap();
        for signal in data_node_start_signals(&settings) {
            self.simulation.inject(signal);
        }
    }

    /// Runs `ms` milliseconds of virtual time.
    pub fn run_for_ms(&mut self, ms: u64) {
        self.simulation
            .run_until(self.simulation.now_ns() + ms * 1_000_000);
    }

    /// Every executed signal of type `T` with its time and receiver, in order.
    pub fn delivered<T: TypedSignal>(&self) -> Vec<(u64, BlockAddress, T)> {
        let mut found = Vec::new();
        let mut rest = self.simulation.trace();
        while rest.len() > 8 {
            let at_ns = u64::from_le_bytes(rest[..8].try_into().unwrap());
            let decoded = kista_signal::wire::decode(&rest[8..]).unwrap();
            if let Ok(signal) = T::from_signal(&decoded.signal) {
                found.push((at_ns, decoded.signal.receiver(), signal));
            }
            rest = &rest[8 + decoded.frame_len..];
        }
        found
    }

    /// The signals executed since trace byte `offset`, with their times, and the offset
    /// to read on from: for tests that watch the cluster step by step.
    pub fn trace_since(&self, offset: usize) -> (Vec<(u64, Signal)>, usize) {
        let trace = self.simulation.trace();
        let mut found = Vec::new();
        let mut at = offset;
        while trace.len() > at + 8 {
            let at_ns = u64::from_le_bytes(trace[at..at + 8].try_into().unwrap());
            let decoded = kista_signal::wire::decode(&trace[at + 8..]).unwrap();
            found.push((at_ns, decoded.signal));
            at += 8 + decoded.frame_len;
        }
        (found, at)
    }

    /// Takes every signal the client has received and not yet taken.
    pub fn take_inbox(&mut self) -> Vec<(Signal, Vec<u8>)> {
        std::mem::take(&mut *self.inbox.lock().unwrap())
    }

    /// Sends the following requests to `node`.
    pub fn use_node(&mut self, node: NodeId) {
        self.settings = self
            .nodes
            .iter()
            .find(|settings| settings.node == node)
            .expect("a node of the cluster")
            .clone();
    }

    fn send(&mut self, mut signal: Signal, section: &[u8]) {
        if !section.is_empty() {
            let handle = self.simulation.sections().allocate(section).unwrap();
            signal.header.section = handle;
        }
        self.simulation.inject(signal);
    }

    /// Runs until the client has a signal `wanted` accepts (removing and returning it), or
    /// until `until_ns` of virtual time has passed (`None`).
    pub fn wait_for(
        &mut self,
        until_ns: u64,
        wanted: impl Fn(&Signal) -> bool,
    ) -> Option<(Signal, Vec<u8>)> {
        for _ in 0..STEPS_MAX {
            {
                let mut inbox = self.inbox.lock().unwrap();
                if let Some(position) = inbox.iter().position(|(s, _)| wanted(s)) {
                    return Some(inbox.remove(position));
                }
            }
            if self.simulation.now_ns() > until_ns || !self.simulation.step() {
                return None;
            }
        }
        panic!("no answer within {STEPS_MAX} steps");
    }

    pub fn create_table(
        &mut self,
        definition: &TableDefinitionBody,
    ) -> Result<(u32, u32), (u32, String)> {
        self.create_table_by(definition, u64::MAX)
            .expect("dict answers")
    }

    /// [`Node::create_table`], waiting only until `until_ns` of virtual time: `None` when no
    /// answer came by then (it may still come: wait for its `CreateTableConf`).
    pub fn create_table_by(
        &mut self,
        definition: &TableDefinitionBody,
        until_ns: u64,
    ) -> Option<Result<(u32, u32), (u32, String)>> {
        let mut body = Vec::new();
        definition.encode(&mut body);
        let client = self.client;
        let request = |request_id| CreateTableRequest { request_id, client };
        let answer = self.dict_request_by::<_, CreateTableConf>(request, &body, until_ns)?;
        Some(answer.map(|conf| (conf.table_id, conf.schema_version)))
    }

    /// Adds `index` to table `table_id`: (its id, the table's new version), or the
    /// refusal's code. A unique index is left being built (no `IndexBuiltRequest`).
    pub fn create_index(&mut self, table_id: u32, index: &IndexSchema) -> Result<(u32, u32), u32> {
        let mut body = Vec::new();
        kista_storage::codec::write_index_schema(
            &mut kista_storage::codec::Writer(&mut body),
            index,
        );
        let client = self.client;
        let request = |request_id| CreateIndexRequest {
            request_id,
            client,
            table_id,
        };
        let conf: CreateIndexConf = self.dict_request(request, &body).map_err(|e| e.0)?;
        Ok((conf.index_id, conf.schema_version))
    }

    /// Drops a table; `Err` with the refusal's code.
    pub fn drop_table(&mut self, table_id: u32) -> Result<(), u32> {
        let client = self.client;
        let request = |request_id| DropTableRequest {
            request_id,
            client,
            table_id,
        };
        let _: DropTableConf = self.dict_request(request, &[]).map_err(|e| e.0)?;
        Ok(())
    }

    /// Sends the dictionary the request `request` makes of the next request id (`body` its
    /// section) and runs until it answers: its conf `C`, or the refusal's code and message.
    fn dict_request<R: TypedSignal, C: TypedSignal>(
        &mut self,
        request: impl FnOnce(u64) -> R,
        body: &[u8],
    ) -> Result<C, (u32, String)> {
        self.dict_request_by(request, body, u64::MAX)
            .expect("dict answers")
    }

    /// [`Node::dict_request`], waiting until `until_ns` at most (`None`: no answer yet).
    fn dict_request_by<R: TypedSignal, C: TypedSignal>(
        &mut self,
        request: impl FnOnce(u64) -> R,
        body: &[u8],
        until_ns: u64,
    ) -> Option<Result<C, (u32, String)>> {
        let request_id = self.next_request;
        self.next_request += 1;
        let signal = request(request_id).to_signal(self.settings.dict_address(), self.client);
        self.send(signal, body);
        let (signal, bytes) = self.wait_for(until_ns, |s| {
            s.number() == C::NUMBER || s.number() == DictRef::NUMBER
        })?;
        Some(C::from_signal(&signal).map_err(|_| {
            let code = DictRef::from_signal(&signal).map_or(0, |refusal| refusal.code);
            (code, String::from_utf8_lossy(&bytes).into_owned())
        }))
    }

    /// Asks the node's dictionary for a backup (as the management server does); returns
    /// the request id its answer (`BackupConf` or `DictRef`) carries.
    pub fn request_backup(&mut self) -> u64 {
        let request_id = self.next_request;
        self.next_request += 1;
        let signal = BackupRequest {
            request_id,
            client: self.client,
        }
        .to_signal(self.settings.dict_address(), self.client);
        self.send(signal, &[]);
        request_id
    }

    /// The complete backups the master's catalog lists.
    pub fn list_backups(&mut self) -> Vec<kista_datanode::backup_files::BackupEntry> {
        let request_id = self.next_request;
        self.next_request += 1;
        let signal = BackupListRequest {
            request_id,
            client: self.client,
        }
        .to_signal(self.settings.dict_address(), self.client);
        self.send(signal, &[]);
        let (_, bytes) = self
            .wait_for(u64::MAX, |s| {
                BackupListConf::from_signal(s).is_ok_and(|c| c.request_id == request_id)
            })
            .expect("dict answers");
        kista_datanode::backup_files::BackupEntry::decode_all(&bytes).unwrap()
    }

    /// What the transport tells every coordinator when the client's connection closes.
    pub fn lose_client(&mut self) {
        let notice = ClientLost {
            client_node: u32::from(CLIENT_NODE.0),
        };
        let coordinators: Vec<_> = self.settings.tc_addresses().collect();
        for tc in coordinators {
            self.send(notice.to_signal(tc, tc), &[]);
        }
    }

    /// Sends a batch of operations as transaction `client_tx`, ending with `mode`.
    pub fn send_batch(
        &mut self,
        client_tx: u64,
        table: (u32, u32),
        ops: Vec<Op>,
        mode: ExecuteMode,
    ) {
        let tc = self.settings.tc_addresses().next().unwrap();
        let count = ops.len();
        if count == 0 {
            let end = EndBatch {
                client: self.client,
                client_tx,
                execute: mode,
            };
            return self.send(end.to_signal(tc, self.client), &[]);
        }
        for (index, op) in ops.into_iter().enumerate() {
            let request = KeyRequest {
                client: self.client,
                client_tx,
                op_index: index as u32,
                table_id: table.0,
                schema_version: table.1,
                kind: op.kind,
                lock: op.lock,
                execute: if index + 1 == count {
                    mode
                } else {
                    ExecuteMode::More
                },
                index_id: op.index_id,
                flags: 0,
            };
            let mut body = Vec::new();
            op.body.encode(&mut body);
            self.send(request.to_signal(tc, self.client), &body);
        }
    }

    /// Sends whole-row writes of `kind` as one `KeyBatchBody` (op indexes 0, 1, ...) in
    /// one `KeyRequest`, as the client sends writes to one partition; `bytes` replaces the
    /// body when given (a malformed batch).
    pub fn send_key_batch(
        &mut self,
        client_tx: u64,
        table: (u32, u32),
        kind: OperationKind,
        rows: &[KeyBody],
        mode: ExecuteMode,
        bytes: Option<Vec<u8>>,
    ) {
        let tc = self.settings.tc_addresses().next().unwrap();
        let request = KeyRequest {
            client: self.client,
            client_tx,
            op_index: 0,
            table_id: table.0,
            schema_version: table.1,
            kind,
            lock: LockKind::Exclusive,
            execute: mode,
            index_id: PRIMARY_KEY,
            flags: KeyRequest::BATCH,
        };
        let body = bytes.unwrap_or_else(|| {
            let (mut batch, mut body) = (Vec::new(), Vec::new());
            KeyBatchBody::start(&mut batch);
            for (op_index, row) in rows.iter().enumerate() {
                body.clear();
                row.encode(&mut body);
                KeyBatchBody::push(&mut batch, op_index as u32, &body);
            }
            batch
        });
        self.send(request.to_signal(tc, self.client), &body);
    }

    /// Where a table's rows live in this cluster (every table has the same map).
    pub fn partition_map(&self) -> kista_datanode::dist::PartitionMap {
        let shape = self.settings.cluster_shape().unwrap();
        let partitions = self.settings.partitions_per_node * shape.nodes().len() as u32;
        kista_datanode::dist::PartitionMap::for_cluster(partitions, &shape)
    }

    /// Waits for the batch's `ExecuteConf` and every row it announced.
    pub fn batch_result(&mut self, client_tx: u64, until_ns: u64) -> Option<Executed> {
        let is_conf = move |s: &Signal| {
            ExecuteConf::from_signal(s).is_ok_and(|c| c.client_tx == client_tx)
                || ReadCommitted::from_signal(s).is_ok_and(|c| c.client_tx == client_tx)
        };
        let (signal, bytes) = self.wait_for(until_ns, is_conf)?;
        if let Ok(read) = ReadCommitted::from_signal(&signal) {
            // A transaction of one committed read: its row and its commit in one signal.
            let found = read.found != 0;
            return Some(Executed {
                outcome: TransactionOutcome::Committed,
                code: 0,
                message: String::new(),
                failed_op: 0,
                rows: found
                    .then(|| (read.op_index, RowBody::decode(&bytes).unwrap().values))
                    .into_iter()
                    .collect(),
                row_senders: found.then(|| signal.sender()).into_iter().collect(),
                gci: 0,
            });
        }
        let conf = ExecuteConf::from_signal(&signal).unwrap();
        let mut rows = Vec::new();
        let mut row_senders = Vec::new();
        for _ in 0..conf.reads {
            let is_row = move |s: &Signal| {
                ReadResult::from_signal(s).is_ok_and(|r| r.client_tx == client_tx)
            };
            let (signal, bytes) = self
                .wait_for(u64::MAX, is_row)
                .expect("announced rows arrive");
            let result = ReadResult::from_signal(&signal).unwrap();
            rows.push((result.op_index, RowBody::decode(&bytes).unwrap().values));
            row_senders.push(signal.sender());
        }
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_by_key(|&i| rows[i].0);
        let rows = order.iter().map(|&i| rows[i].clone()).collect();
        let row_senders = order.iter().map(|&i| row_senders[i]).collect();
        Some(Executed {
            outcome: conf.outcome,
            code: conf.code,
            message: String::from_utf8_lossy(&bytes).into_owned(),
            failed_op: conf.failed_op,
            rows,
            row_senders,
            gci: conf.gci,
        })
    }

    /// Opens a scan as `client_scan` and collects rounds until it is done; `close_after`
    /// closes it after that many rounds instead.
    pub fn scan(&mut self, client_scan: u64, spec: &ScanSpec, close_after: Option<u32>) -> Scanned {
        let tc = self.settings.tc_addresses().next().unwrap();
        let request = ScanRequest {
            client: self.client,
            client_scan,
            table_id: spec.table.0,
            schema_version: spec.table.1,
            limit: spec.limit,
            batch_rows: spec.batch_rows,
            ordered: u32::from(spec.ordered),
        };
        let mut body = Vec::new();
        spec.body.encode(&mut body);
        self.send(request.to_signal(tc, self.client), &body);
        let mut scanned = Scanned::default();
        loop {
            let is_conf = move |s: &Signal| {
                ScanConf::from_signal(s).is_ok_and(|c| c.client_scan == client_scan)
            };
            let (signal, message) = self.wait_for(u64::MAX, is_conf).expect("rounds end");
            let conf = ScanConf::from_signal(&signal).unwrap();
            scanned.rounds += 1;
            let mut rows_left = conf.rows;
            for _ in 0..conf.batches {
                let is_rows = move |s: &Signal| {
                    ScanRows::from_signal(s).is_ok_and(|r| r.client_scan == client_scan)
                };
                let (signal, bytes) = self
                    .wait_for(u64::MAX, is_rows)
                    .expect("announced rows arrive");
                let header = ScanRows::from_signal(&signal).unwrap();
                let rows = RowsBody::decode(&bytes).unwrap();
                assert_eq!(rows.len() as u32, header.rows, "the header counts the rows");
                rows_left -= header.rows;
                if header.done != 0 {
                    scanned.partitions_done.push(header.partition);
                }
                if header.rows > 0 {
                    scanned.senders.push(signal.sender());
                }
                scanned
                    .by_partition
                    .entry(header.partition)
                    .or_default()
                    .extend(rows);
            }
            assert_eq!(rows_left, 0, "the round's batches carry its rows");
            if conf.done != 0 {
                scanned.code = conf.code;
                scanned.message = String::from_utf8_lossy(&message).into_owned();
                return scanned;
            }
            let close = close_after.is_some_and(|rounds| scanned.rounds >= rounds);
            let next = ScanNext {
                client: self.client,
                client_scan,
                close: u32::from(close),
            };
            self.send(next.to_signal(tc, self.client), &[]);
        }
    }

    /// Sends the coordinators a load report, as the node's monitor does.
    pub fn report_load(&mut self, levels: &[(BlockAddress, u8)]) {
        let mut body = Vec::new();
        LoadLevelsBody::encode(levels, &mut body);
        let tcs: Vec<_> = self.settings.tc_addresses().collect();
        for tc in tcs {
            let report = LoadReport {
                entries: levels.len() as u32,
            };
            self.send(report.to_signal(tc, self.client), &body);
        }
        self.settle();
    }

    /// Runs everything due in the next 5 ms of virtual time.
    pub fn settle(&mut self) {
        self.simulation
            .run_until(self.simulation.now_ns() + 5_000_000);
    }

    /// Whether any signal to the client is still unread (a scan sent more than it said).
    pub fn inbox_is_empty(&mut self) -> bool {
        self.settle();
        self.inbox.lock().unwrap().is_empty()
    }

    pub fn execute(
        &mut self,
        client_tx: u64,
        table: (u32, u32),
        ops: Vec<Op>,
        mode: ExecuteMode,
    ) -> Executed {
        self.send_batch(client_tx, table, ops, mode);
        self.batch_result(client_tx, u64::MAX)
            .expect("the batch ends")
    }

    pub fn now_ns(&self) -> u64 {
        self.simulation.now_ns()
    }

    /// Creates the `counters` table (no indexes).
    pub fn create_counters(&mut self) -> (u32, u32) {
        let definition = TableDefinitionBody::new(counters(), vec![]);
        self.create_table(&definition).expect("created")
    }

    /// The data nodes that stopped themselves, lowest id first.
    pub fn stopped(&self) -> Vec<u8> {
        let mut nodes: Vec<u8> = self
            .simulation
            .stopped_nodes()
            .iter()
            .map(|(node, _)| node.0)
            .collect();
        nodes.sort_unstable();
        nodes
    }
}

/// `schema` with one unique index, `name`, on `column` (index id 1 once created).
pub fn with_unique_index(schema: TableSchema, name: &str, column: usize) -> TableDefinitionBody {
    let index = IndexSchema {
        name: name.into(),
        kind: IndexKind::Unique,
        columns: vec![column],
    };
    TableDefinitionBody::new(schema, vec![(0, index)])
}

pub fn primary_key(schema: &TableSchema, values: &[Value]) -> Vec<u8> {
    let layout = kista_storage::row::RowLayout::new(schema);
    let mut key = Vec::new();
    layout.primary_key_of_values(values, &mut key).unwrap();
    key
}

/// The settings of `count` data nodes (ids 1..=count) forming one cluster with `replicas`
/// replicas, each node made by `node_settings`.
pub fn cluster_settings(
    count: u8,
    replicas: u16,
    node_settings: impl Fn(NodeId) -> NodeSettings,
) -> Vec<NodeSettings> {
    let mut nodes: Vec<NodeSettings> = (1..=count)
        .map(|id| {
            let mut settings = node_settings(NodeId(id));
            settings.node_group = u16::from(id - 1) / replicas;
            settings.replicas = replicas;
            settings.arbitrator = Some(ARBITRATOR);
            settings
        })
        .collect();
    let shapes: Vec<_> = nodes.iter().map(NodeSettings::shape).collect();
    for settings in &mut nodes {
        settings.peers = shapes
            .iter()
            .filter(|shape| shape.node != settings.node)
            .cloned()
            .collect();
    }
    nodes
}

/// `counters`: an `id` and a `value`, both 8-byte integers.
pub fn counters() -> TableSchema {
    let int = ColumnType::Int {
        bytes: 8,
        signed: true,
    };
    TableSchema {
        extra_metadata: Vec::new(),
        name: "counters".into(),
        columns: vec![Column::new("id", int), Column::new("value", int)],
        primary_key: vec![0],
    }
}

/// An operation on `counters`: inserts and writes give the whole row, updates the value,
/// reads and deletes only the key (a read without a lock).
pub fn counter_op(kind: OperationKind, id: i64, value: i64) -> Op {
    let key = primary_key(&counters(), &[Value::Int(id)]);
    let (columns, values) = match kind {
        OperationKind::Insert | OperationKind::Write => {
            (vec![], vec![Value::Int(id), Value::Int(value)])
        }
        OperationKind::Update => (vec![1], vec![Value::Int(value)]),
        _ => (vec![], vec![]),
    };
    Op::by_primary_key(kind, key, columns, values)
}

impl Op {
    /// An operation on the row with primary `key`: reads take no lock, writes an
    /// exclusive one.
    pub fn by_primary_key(
        kind: OperationKind,
        key: Vec<u8>,
        columns: Vec<u16>,
        values: Vec<Value>,
    ) -> Self {
        Op {
            kind,
            lock: if kind == OperationKind::Read {
                LockKind::Committed
            } else {
                LockKind::Exclusive
            },
            index_id: PRIMARY_KEY,
            body: KeyBody {
                key,
                columns,
                values,
            },
        }
    }
}

/// A data node's blocks, with `data_memory_bytes` of memory, keeping their files on `disk`.
fn blocks_on(
    settings: &NodeSettings,
    disk: SimulatedDisk,
    data_memory_bytes: u64,
) -> Vec<kista_runtime::BlockRegistration> {
    let memory = Arc::new(DataMemory::new(data_memory_bytes));
    let counters = Arc::new(NodeCounters::new(settings));
    data_node_blocks(settings, memory, Some(Box::new(disk)), &counters)
        .expect("the nodes form a cluster")
}
