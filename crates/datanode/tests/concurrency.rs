//! Committed reads on `query` threads while the owning `ldm` thread writes, on the real
//! multi-threaded runtime: every row a read or scan returns must be whole and committed.
//!
//! Each row keeps an invariant its writers preserve in every version: `triple = 3 * version`
//! and `text` is the version's digits repeated to a length that changes with the version (so
//! the variable-size part moves between updates). A read that saw half an update would break
//! it. Some transactions write negative versions and roll back: a read that returns one saw
//! an uncommitted version.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kista_datanode::metrics::NodeCounters;
use kista_datanode::node::{data_node_blocks, NodeSettings};
use kista_datanode::protocol::*;
use kista_datanode::router::ReadPolicy;
use kista_runtime::thread_config::{ThreadConfig, ThreadLayout};
use kista_runtime::{
    start, Block, BlockRegistration, Context, Module, ModuleInstance, RuntimeOptions,
};
use kista_signal::{
    BlockAddress, BlockId, NodeId, PayloadError, PayloadReader, PayloadWriter, Signal,
    SignalNumber, TypedSignal,
};
use kista_storage::memory::DataMemory;
use kista_storage::partition::ScanRange;
use kista_storage::row::RowLayout;
use kista_storage::schema::{Column, TableSchema};
use kista_storage::types::{ColumnType, Value};

const NODE: NodeId = NodeId(1);
const WRITER: BlockAddress = BlockAddress::new(NODE, BlockId(200), 0);
const READER: BlockAddress = BlockAddress::new(NODE, BlockId(201), 0);
const KEYS: i64 = 64;
const WRITES: u64 = 4_000;
const WRITES_IN_FLIGHT: u64 = 8;
const READS_IN_FLIGHT: u64 = 16;
/// Generous: the run takes a few seconds; this only keeps a broken node from hanging CI.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

fn schema() -> TableSchema {
    let int = ColumnType::Int {
        bytes: 8,
        signed: true,
    };
    TableSchema {
        extra_metadata: Vec::new(),
        name: "hammered".into(),
        columns: vec![
            Column::new("id", int),
            Column::new("version", int),
            Column::new("triple", int),
            Column::new("text", ColumnType::varchar(200)),
        ],
        primary_key: vec![0],
    }
}

fn row(id: i64, version: i64) -> Vec<Value> {
    // Rolled-back writes have negative versions; debug builds check the arithmetic.
    let digit = char::from(b'0' + version.rem_euclid(10) as u8);
    let length = 1 + (version.unsigned_abs() as usize).wrapping_mul(7) % 199;
    let text: String = std::iter::repeat_n(digit, length).collect();
    vec![
        Value::Int(id),
        Value::Int(version),
        Value::Int(3 * version),
        Value::Bytes(text.into_bytes()),
    ]
}

fn key(id: i64) -> Vec<u8> {
    let mut key = Vec::new();
    RowLayout::new(&schema())
        .primary_key_of_values(&[Value::Int(id)], &mut key)
        .unwrap();
    key
}

/// What the drivers saw, checked by the test.
#[derive(Default)]
struct Observed {
    table: Mutex<Option<(u32, u32)>>,
    writes_committed: AtomicU64,
    writes_rolled_back: AtomicU64,
    write_failures: AtomicU64,
    reads: AtomicU64,
    scanned_rows: AtomicU64,
    scans: AtomicU64,
    broken_rows: Mutex<Vec<String>>,
    done: AtomicBool,
}

impl Observed {
    fn check(&self, values: &[Value], what: &str) {
        let whole = match values {
            [Value::Int(id), Value::Int(version), _, _] => {
                *version >= 0 && values == row(*id, *version)
            }
            _ => false,
        };
        if !whole {
            self.broken_rows
                .lock()
                .unwrap()
                .push(format!("{what}: {values:?}"));
        }
    }
}

/// Tells a driver to begin.
struct Begin;

impl TypedSignal for Begin {
    const NUMBER: SignalNumber = SignalNumber(900);
    fn write(&self, _: &mut PayloadWriter<'_>) {}
    fn read(_: &mut PayloadReader<'_>) -> Result<Self, PayloadError> {
        Ok(Begin)
    }
}

fn send_with(ctx: &mut Context, mut signal: Signal, bytes: &[u8]) {
    let section = ctx.allocate_section(bytes).expect("the pool has room");
    ctx.attach_section(&mut signal, section);
    ctx.send(signal);
}

/// Creates the table, inserts every key, then updates random keys with ever higher
/// versions, a few transactions in flight.
struct Writer {
    settings: NodeSettings,
    observed: Arc<Observed>,
    table: (u32, u32),
    next_version: i64,
    next_tx: u64,
    inserted: bool,
    in_flight: u64,
    /// Transactions that wrote a negative version and will roll back.
    rolling_back: std::collections::HashSet<u64>,
}

impl Writer {
    fn send_write(&mut self, ctx: &mut Context, kind: OperationKind, id: i64) {
        self.next_tx += 1;
        self.next_version += 1;
        // One write in four is never committed: its version is negative.
        let roll_back = kind == OperationKind::Write && ctx.random_u64() % 4 == 0;
        let version = if roll_back {
            self.rolling_back.insert(self.next_tx);
            -self.next_version
        } else {
            self.next_version
        };
        let request = KeyRequest {
            client: WRITER,
            client_tx: self.next_tx,
            op_index: 0,
            table_id: self.table.0,
            schema_version: self.table.1,
            kind,
            lock: LockKind::Exclusive,
            execute: if roll_back {
                ExecuteMode::NoCommit
            } else {
                ExecuteMode::Commit
            },
            index_id: PRIMARY_KEY,
            flags: 0,
        };
        let mut body = Vec::new();
        KeyBody {
            key: key(id),
            columns: vec![],
            values: row(id, version),
        }
        .encode(&mut body);
        let tc = self.settings.tc_addresses().next().unwrap();
        send_with(ctx, request.to_signal(tc, WRITER), &body);
        self.in_flight += 1;
    }

    fn fill(&mut self, ctx: &mut Context) {
        let committed = self.observed.writes_committed.load(Ordering::Relaxed);
        while self.in_flight < WRITES_IN_FLIGHT && committed + self.in_flight < WRITES {
            let id = (ctx.random_u64() % KEYS as u64) as i64;
            self.send_write(ctx, OperationKind::Write, id);
        }
        if committed >= WRITES {
            self.observed.done.store(true, Ordering::Release);
        }
    }
}

impl Block for Writer {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        if Begin::from_signal(signal).is_ok() {
            let mut body = Vec::new();
            TableDefinitionBody::new(schema(), vec![]).encode(&mut body);
            let request = CreateTableRequest {
                request_id: 1,
                client: WRITER,
            };
            send_with(
                ctx,
                request.to_signal(self.settings.dict_address(), WRITER),
                &body,
            );
        } else if let Ok(conf) = CreateTableConf::from_signal(signal) {
            self.table = (conf.table_id, conf.schema_version);
            *self.observed.table.lock().unwrap() = Some(self.table);
            for id in 0..KEYS {
                self.send_write(ctx, OperationKind::Insert, id);
            }
        } else if let Ok(conf) = ExecuteConf::from_signal(signal) {
            let rolling_back = self.rolling_back.contains(&conf.client_tx);
            match conf.outcome {
                TransactionOutcome::Open if rolling_back => {
                    // The uncommitted version is in place: give readers time, then undo it.
                    let end = EndBatch {
                        client: WRITER,
                        client_tx: conf.client_tx,
                        execute: ExecuteMode::Rollback,
                    };
                    let tc = self.settings.tc_addresses().next().unwrap();
                    return ctx.send_typed(tc, &end);
                }
                TransactionOutcome::Aborted if rolling_back && conf.code == 0 => {
                    self.rolling_back.remove(&conf.client_tx);
                    self.observed
                        .writes_rolled_back
                        .fetch_add(1, Ordering::Relaxed);
                }
                TransactionOutcome::Committed => {
                    self.observed
                        .writes_committed
                        .fetch_add(1, Ordering::Relaxed);
                }
                _ => {
                    self.observed.write_failures.fetch_add(1, Ordering::Relaxed);
                }
            }
            self.in_flight -= 1;
            if !self.inserted && self.in_flight == 0 {
                self.inserted = true;
                ctx.send_typed(READER, &Begin);
            }
            if self.inserted {
                self.fill(ctx);
            }
        }
    }
}

/// Committed reads of random keys and full scans, checking every row, until the writer is
/// done.
struct Reader {
    settings: NodeSettings,
    observed: Arc<Observed>,
    next_tx: u64,
    /// client_tx → (rows announced by ExecuteConf, rows received).
    reads: HashMap<u64, (Option<u32>, u32)>,
    scan_open: bool,
    next_scan: u64,
}

impl Reader {
    fn tc(&self) -> BlockAddress {
        self.settings.tc_addresses().next().unwrap()
    }

    fn send_read(&mut self, ctx: &mut Context, table: (u32, u32)) {
        self.next_tx += 1;
        let id = (ctx.random_u64() % KEYS as u64) as i64;
        let request = KeyRequest {
            client: READER,
            client_tx: self.next_tx,
            op_index: 0,
            table_id: table.0,
            schema_version: table.1,
            kind: OperationKind::Read,
            lock: LockKind::Committed,
            execute: ExecuteMode::Commit,
            index_id: PRIMARY_KEY,
            flags: 0,
        };
        let mut body = Vec::new();
        KeyBody {
            key: key(id),
            columns: vec![],
            values: vec![],
        }
        .encode(&mut body);
        send_with(ctx, request.to_signal(self.tc(), READER), &body);
        self.reads.insert(self.next_tx, (None, 0));
    }

    fn send_scan(&mut self, ctx: &mut Context, table: (u32, u32)) {
        self.next_scan += 1;
        let request = ScanRequest {
            client: READER,
            client_scan: self.next_scan,
            table_id: table.0,
            schema_version: table.1,
            limit: u64::MAX,
            batch_rows: 16,
            ordered: 0,
        };
        let mut body = Vec::new();
        ScanBody {
            range: ScanRange::Full,
            filter: None,
            columns: vec![],
            versions: kista_storage::partition::ScanVersions::Committed,
        }
        .encode(&mut body);
        send_with(ctx, request.to_signal(self.tc(), READER), &body);
        self.scan_open = true;
    }

    /// Checks the row a key read's answer carries.
    fn check_read_row(&self, ctx: &Context) {
        let values = ctx
            .section()
            .map(|bytes| RowBody::decode(&bytes).map(|r| r.values));
        match values {
            Some(Ok(values)) => self.observed.check(&values, "key read"),
            _ => self.observed.check(&[], "key read without a row"),
        }
    }

    fn settle(&mut self, ctx: &mut Context, client_tx: u64) {
        if let Some(&(Some(announced), received)) = self.reads.get(&client_tx) {
            if announced == received {
                self.reads.remove(&client_tx);
                self.observed.reads.fetch_add(1, Ordering::Relaxed);
                self.fill(ctx);
            }
        }
    }

    fn fill(&mut self, ctx: &mut Context) {
        if self.observed.done.load(Ordering::Acquire) {
            return;
        }
        let table = self
            .observed
            .table
            .lock()
            .unwrap()
            .expect("created before Begin");
        while (self.reads.len() as u64) < READS_IN_FLIGHT {
            self.send_read(ctx, table);
        }
        if !self.scan_open {
            self.send_scan(ctx, table);
        }
    }
}

impl Block for Reader {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        if Begin::from_signal(signal).is_ok() {
            self.fill(ctx);
        } else if let Ok(conf) = ExecuteConf::from_signal(signal) {
            if conf.code != 0 {
                let message = format!("read failed with {}", conf.code);
                self.observed.broken_rows.lock().unwrap().push(message);
            }
            if let Some(read) = self.reads.get_mut(&conf.client_tx) {
                read.0 = Some(conf.reads);
            }
            self.settle(ctx, conf.client_tx);
        } else if let Ok(read) = ReadCommitted::from_signal(signal) {
            // A transaction of one committed read: its row and its commit in one signal.
            if read.found != 0 {
                self.check_read_row(ctx);
            }
            if let Some(progress) = self.reads.get_mut(&read.client_tx) {
                *progress = (Some(read.found), read.found);
            }
            self.settle(ctx, read.client_tx);
        } else if let Ok(result) = ReadResult::from_signal(signal) {
            self.check_read_row(ctx);
            if let Some(read) = self.reads.get_mut(&result.client_tx) {
                read.1 += 1;
            }
            self.settle(ctx, result.client_tx);
        } else if ScanRows::from_signal(signal).is_ok() {
            let rows = ctx.section().map(|bytes| RowsBody::decode(&bytes));
            if let Some(Ok(rows)) = rows {
                for values in &rows {
                    self.observed.check(values, "scanned row");
                }
                self.observed
                    .scanned_rows
                    .fetch_add(rows.len() as u64, Ordering::Relaxed);
            }
        } else if let Ok(conf) = ScanConf::from_signal(signal) {
            if conf.code != 0 {
                let message = format!("scan failed with {}", conf.code);
                self.observed.broken_rows.lock().unwrap().push(message);
            }
            if conf.done != 0 {
                self.scan_open = false;
                self.observed.scans.fetch_add(1, Ordering::Relaxed);
                self.fill(ctx);
            } else {
                let next = ScanNext {
                    client: READER,
                    client_scan: conf.client_scan,
                    close: 0,
                };
                ctx.send_typed(self.tc(), &next);
            }
        }
    }
}

fn driver(block: BlockAddress, host: Module, implementation: Box<dyn Block>) -> BlockRegistration {
    BlockRegistration {
        block: block.block(),
        instance: block.instance(),
        host: ModuleInstance {
            module: host,
            instance: 0,
        },
        implementation,
    }
}

#[test]
fn query_threads_read_whole_committed_rows_while_the_ldm_thread_writes() {
    let config: ThreadConfig =
        "ldm={count=1},query={count=2},tc={count=1},recv={count=1},main={count=1}"
            .parse()
            .unwrap();
    let layout = ThreadLayout::from_config(&config).unbound();
    let mut settings = NodeSettings::new(NODE);
    settings.query_instances = 2;
    settings.read_policy = ReadPolicy::Query;
    let observed = Arc::new(Observed::default());
    let mut blocks = data_node_blocks(
        &settings,
        Arc::new(DataMemory::new(64 << 20)),
        None,
        &Arc::new(NodeCounters::new(&settings)),
    )
    .expect("one node is a cluster");
    blocks.push(driver(
        WRITER,
        Module::Recv,
        Box::new(Writer {
            settings: settings.clone(),
            observed: observed.clone(),
            table: (0, 0),
            next_version: 0,
            next_tx: 0,
            inserted: false,
            in_flight: 0,
            rolling_back: Default::default(),
        }),
    ));
    blocks.push(driver(
        READER,
        Module::Main,
        Box::new(Reader {
            settings: settings.clone(),
            observed: observed.clone(),
            next_tx: 0,
            reads: HashMap::new(),
            scan_open: false,
            next_scan: 0,
        }),
    ));
    let begin = Begin.to_signal(WRITER, WRITER);
    let runtime = RuntimeOptions {
        node: NODE,
        ..RuntimeOptions::default()
    };
    let node = start(&layout, blocks, vec![begin], &runtime).unwrap();
    let deadline = Instant::now() + RUN_TIMEOUT;
    while !observed.done.load(Ordering::Acquire) && !node.has_stopped() {
        assert!(Instant::now() < deadline, "the load did not finish");
        std::thread::sleep(Duration::from_millis(5));
    }
    node.stop().expect("no thread failed");

    let broken = observed.broken_rows.lock().unwrap();
    assert!(
        broken.is_empty(),
        "{} broken rows, first: {:?}",
        broken.len(),
        broken.first()
    );
    assert_eq!(observed.write_failures.load(Ordering::Relaxed), 0);
    assert!(observed.writes_committed.load(Ordering::Relaxed) >= WRITES);
    assert!(observed.writes_rolled_back.load(Ordering::Relaxed) > 0);
    let reads = observed.reads.load(Ordering::Relaxed);
    let scans = observed.scans.load(Ordering::Relaxed);
    assert!(reads > 100, "only {reads} reads ran beside the writes");
    assert!(scans > 0, "no scan finished beside the writes");
    assert!(observed.scanned_rows.load(Ordering::Relaxed) >= KEYS as u64);
}
