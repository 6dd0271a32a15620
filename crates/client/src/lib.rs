//! The native Kista client: connects to a data node over TCP and runs batched transactions,
//! many in flight at once on one connection.
//!
//! A [`Client`] owns one connection. A [`Transaction`] collects operations and sends the
//! whole batch in one round trip when executed; [`Transaction::execute`] returns a
//! [`Pending`] at once, so a thread can keep thousands of transactions in flight and collect
//! them later (or pass a callback with [`Transaction::execute_then`], run on the connection's
//! receive thread). Errors carry the node's stable code and category (temporary: retry may
//! succeed; permanent; unknown outcome).
//!
//! ```no_run
//! use kista_client::{Client, ExecuteMode, LockKind};
//! use kista_client::schema::{Column, TableSchema};
//! use kista_client::types::{ColumnType, Value};
//!
//! let client = Client::connect("127.0.0.1:11860")?;
//! let schema = TableSchema {
//!     name: "sessions".into(),
//!     columns: vec![
//!         Column::new("id", ColumnType::Int { bytes: 8, signed: true }),
//!         Column::new("user", ColumnType::VarChar { max_length: 64 }),
//!     ],
//!     primary_key: vec![0],
//! };
//! let sessions = client.create_table(schema, vec![])?;
//!
//! let mut insert = client.transaction();
//! insert.insert(&sessions, vec![Value::Int(1), Value::Bytes(b"ada".to_vec())])?;
//! insert.execute(ExecuteMode::Commit)?.wait()?;
//!
//! let mut read = client.transaction();
//! let op = read.read(&sessions, &[Value::Int(1)], LockKind::Committed)?;
//! let done = read.execute(ExecuteMode::Commit)?.wait()?;
//! assert_eq!(done.row(op).unwrap()[1], Value::Bytes(b"ada".to_vec()));
//! # Ok::<(), kista_client::ClientError>(())
//! ```
//!
//! Scans run over every partition in parallel, with the filter evaluated in the data node;
//! an ordered-index range comes back merged in index order:
//!
//! ```no_run
//! # use kista_client::{Client, IndexBound, ScanSpec, Table};
//! # use kista_client::filter::{CompareOp, Filter};
//! # use kista_client::types::Value;
//! # fn example(client: &Client, sessions: &Table) -> Result<(), kista_client::ClientError> {
//! // Sessions of users after "m", ids only, at most 100.
//! let spec = ScanSpec::full()
//!     .filter(Filter::Compare { column: 1, op: CompareOp::Gt, value: Value::Bytes(b"m".to_vec()) })
//!     .columns(vec![0])
//!     .limit(100);
//! for row in client.scan(sessions, spec)? {
//!     println!("{:?}", row?[0]);
//! }
//! // The newest first by an ordered index `by_started` on a timestamp column.
//! let since = IndexBound { values: vec![Value::Timestamp(1_700_000_000)], inclusive: true };
//! let newest = ScanSpec::index_range(sessions, "by_started", Some(since), None, true)?.limit(10);
//! let rows: Vec<_> = client.scan(sessions, newest)?.collect::<Result<_, _>>()?;
//! # Ok(()) }
//! ```

mod completion;
mod error;
mod scan;
mod transaction;

use rustc_hash::FxHashMap;
use std::net::ToSocketAddrs;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kista_datanode::protocol::*;
use kista_signal::{BlockAddress, BlockId, Signal, TypedSignal};
use kista_storage::codec::{write_index_schema, Writer};
use kista_storage::partition::IndexId;
use kista_storage::row::RowLayout;
use kista_storage::schema::{IndexSchema, TableSchema};
use kista_transport::client::{ClientConnection, Event};

pub use completion::Pending;
pub use error::ClientError;
pub use kista_datanode::protocol::{ErrorCategory, ExecuteMode, LockKind, TransactionOutcome};
pub use kista_storage::partition::IndexBound;
pub use kista_storage::{filter, schema, types};
pub use scan::{Scan, ScanSpec, SCAN_BATCH_ROWS_DEFAULT};
pub use transaction::{Executed, OpIndex, Transaction};

use completion::Completion;
use scan::ScanEvent;
use transaction::Collecting;

/// How long connecting and schema changes may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The block id the client's address uses.
const CLIENT_BLOCK: BlockId = BlockId(1);

/// A table as the client uses it: ids for requests, the layout for encoding keys, the
/// indexes for unique lookups and ordered merges.
#[derive(Clone)]
pub struct Table {
    pub id: u32,
    pub schema_version: u32,
    pub(crate) schema: Arc<TableSchema>,
    pub(crate) layout: Arc<RowLayout>,
    pub(crate) indexes: Vec<(IndexId, IndexSchema)>,
}

impl Table {
    pub fn schema(&self) -> &TableSchema {
        &self.schema
    }

    /// The secondary index called `name` (names compare case-insensitively, as in SQL).
    pub fn index(&self, name: &str) -> Result<(IndexId, &IndexSchema), ClientError> {
        self.indexes
            .iter()
            .find(|(_, index)| index.name.eq_ignore_ascii_case(name))
            .map(|(id, index)| (*id, index))
            .ok_or_else(|| {
                ClientError::Usage(format!(
                    "table `{}` has no index `{name}`",
                    self.schema.name
                ))
            })
    }
}

/// A schema change's answer: (table or index id, new schema version).
type SchemaAnswer = (u32, u32);

/// What the receive thread shares with the client's callers.
#[derive(Default)]
struct Shared {
    // Keyed by this client's own sequence numbers, so the unseeded FxHash is safe (SipHash
    // cost ~100 instructions per answer).
    transactions: Mutex<FxHashMap<u64, Collecting>>,
    schema_changes: Mutex<FxHashMap<u64, Completion<SchemaAnswer>>>,
    scans: Mutex<FxHashMap<u64, Sender<ScanEvent>>>,
    closed: Mutex<Option<String>>,
}

pub struct Client {
    shared: Arc<Shared>,
    connection: ClientConnection,
    me: BlockAddress,
    coordinators: Vec<BlockAddress>,
    dict: BlockAddress,
    next_id: AtomicU64,
}

impl Client {
    /// Connects to a data node (`kista datad --standalone`).
    pub fn connect(address: impl ToSocketAddrs) -> Result<Self, ClientError> {
        let shared = Arc::new(Shared::default());
        let receiving = shared.clone();
        let connection = ClientConnection::connect(address, REQUEST_TIMEOUT, move |event| {
            receiving.receive(event)
        })
        .map_err(|e| ClientError::ConnectionLost(e.to_string()))?;
        let welcome = connection.welcome().clone();
        let info = NodeInfo::decode(&welcome.info).ok_or_else(|| {
            ClientError::ConnectionLost("the node sent no usable node info".into())
        })?;
        let coordinators = (0..info.tc_instances)
            .map(|i| BlockAddress::new(welcome.node, TC_BLOCK, i))
            .collect();
        Ok(Self {
            shared,
            connection,
            me: BlockAddress::new(welcome.client_node, CLIENT_BLOCK, 0),
            coordinators,
            dict: BlockAddress::new(welcome.node, DICT_BLOCK, 0),
            next_id: AtomicU64::new(1),
        })
    }

    /// Creates a table with its secondary indexes (numbered from 1 in the order given).
    pub fn create_table(
        &self,
        schema: TableSchema,
        indexes: Vec<IndexSchema>,
    ) -> Result<Table, ClientError> {
        let usage = |e: schema::SchemaError| ClientError::Usage(e.to_string());
        schema.validate().map_err(usage)?;
        for index in &indexes {
            index.validate(&schema).map_err(usage)?;
        }
        let definition = TableDefinitionBody::new(schema, (1..).zip(indexes).collect());
        let mut body = Vec::new();
        definition.encode(&mut body);
        let (id, schema_version) = self.change_schema(&body, |request_id, client| {
            CreateTableRequest { request_id, client }
        })?;
        let TableDefinitionBody {
            schema, indexes, ..
        } = definition;
        Ok(Table {
            id,
            schema_version,
            layout: Arc::new(RowLayout::new(&schema)),
            schema: Arc::new(schema),
            indexes: indexes
                .into_iter()
                .map(|(id, index)| (IndexId(id), index))
                .collect(),
        })
    }

    /// Adds a secondary index to `table`, built from the rows it holds; returns the table
    /// at its new schema version (operations built from the old one are refused).
    pub fn create_index(&self, table: &Table, index: IndexSchema) -> Result<Table, ClientError> {
        index
            .validate(&table.schema)
            .map_err(|e| ClientError::Usage(e.to_string()))?;
        let mut body = Vec::new();
        write_index_schema(&mut Writer(&mut body), &index);
        let table_id = table.id;
        let (index_id, schema_version) =
            self.change_schema(&body, |request_id, client| CreateIndexRequest {
                request_id,
                client,
                table_id,
            })?;
        let mut changed = table.clone();
        changed.schema_version = schema_version;
        changed.indexes.push((IndexId(index_id), index));
        Ok(changed)
    }

    /// Drops `table` and every row in it.
    pub fn drop_table(&self, table: &Table) -> Result<(), ClientError> {
        let table_id = table.id;
        self.change_schema(&[], |request_id, client| DropTableRequest {
            request_id,
            client,
            table_id,
        })?;
        Ok(())
    }

    /// Sends a schema request built by `request` (from its id and our address) to the
    /// dictionary and waits for the answer.
    fn change_schema<R: TypedSignal>(
        &self,
        section: &[u8],
        request: impl FnOnce(u64, BlockAddress) -> R,
    ) -> Result<SchemaAnswer, ClientError> {
        let request_id = self.next_id();
        let completion = Completion::waiter();
        let pending = completion.pending();
        self.shared.lock_schema().insert(request_id, completion);
        let signal = request(request_id, self.me).to_signal(self.dict, self.me);
        if let Err(error) = self.send(signal, section) {
            self.shared.lock_schema().remove(&request_id);
            return Err(error);
        }
        pending.wait_timeout(REQUEST_TIMEOUT)
    }

    /// Starts a transaction. Nothing is sent until it executes.
    pub fn transaction(&self) -> Transaction<'_> {
        Transaction::new(self, self.next_id())
    }

    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The coordinator for a transaction: spread over the node's instances.
    fn coordinator_of(&self, client_tx: u64) -> BlockAddress {
        self.coordinators[client_tx as usize % self.coordinators.len()]
    }

    fn send(&self, signal: Signal, section: &[u8]) -> Result<(), ClientError> {
        self.connection
            .send(&signal, section)
            .map_err(|closed| ClientError::ConnectionLost(closed.0))
    }
}

impl Shared {
    fn lock_transactions(&self) -> std::sync::MutexGuard<'_, FxHashMap<u64, Collecting>> {
        self.transactions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_schema(&self) -> std::sync::MutexGuard<'_, FxHashMap<u64, Completion<(u32, u32)>>> {
        self.schema_changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Runs on the connection's receive thread for everything the node sends.
    fn receive(&self, event: Event<'_>) {
        let (signal, section) = match event {
            Event::Signal(signal, section) => (signal, section),
            Event::Closed(reason) => return self.close(reason),
        };
        let message = || String::from_utf8_lossy(section).into_owned();
        if let Ok(conf) = ExecuteConf::from_signal(&signal) {
            self.progress(conf.client_tx, |c| c.conf(conf, message()));
        } else if let Ok(result) = ReadResult::from_signal(&signal) {
            let row = RowBody::decode(section).map(|r| r.values);
            self.progress(result.client_tx, |c| c.row(result.op_index, row));
        } else if let Ok(read) = ReadCommitted::from_signal(&signal) {
            // The row and the commit of a transaction that was one committed read.
            let row = (read.found != 0).then(|| RowBody::decode(section).map(|r| r.values));
            let conf = ExecuteConf {
                client_tx: read.client_tx,
                outcome: TransactionOutcome::Committed,
                reads: read.found,
                code: 0,
                failed_op: 0,
            };
            self.progress(read.client_tx, |c| {
                if let Some(row) = row {
                    c.row(read.op_index, row);
                }
                c.conf(conf, String::new());
            });
        } else if let Ok(rows) = ScanRows::from_signal(&signal) {
            let event = ScanEvent::Rows {
                partition: rows.partition,
                done: rows.done != 0,
                rows: RowsBody::decode(section),
            };
            self.to_scan(rows.client_scan, event);
        } else if let Ok(conf) = ScanConf::from_signal(&signal) {
            let event = ScanEvent::Conf {
                batches: conf.batches,
                done: conf.done != 0,
                code: conf.code,
                message: message(),
            };
            self.to_scan(conf.client_scan, event);
        } else {
            let answer = if let Ok(conf) = CreateTableConf::from_signal(&signal) {
                (conf.request_id, Ok((conf.table_id, conf.schema_version)))
            } else if let Ok(conf) = CreateIndexConf::from_signal(&signal) {
                (conf.request_id, Ok((conf.index_id, conf.schema_version)))
            } else if let Ok(conf) = DropTableConf::from_signal(&signal) {
                (conf.request_id, Ok((0, 0)))
            } else if let Ok(refusal) = DictRef::from_signal(&signal) {
                let error = ClientError::node(refusal.code, message());
                (refusal.request_id, Err(error))
            } else {
                return;
            };
            let (request_id, result) = answer;
            if let Some(completion) = self.lock_schema().remove(&request_id) {
                completion.complete(result);
            }
        }
    }

    fn lock_scans(&self) -> std::sync::MutexGuard<'_, FxHashMap<u64, Sender<ScanEvent>>> {
        self.scans.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a scan; its events arrive on the receiver.
    fn open_scan(&self, client_scan: u64) -> Receiver<ScanEvent> {
        let (sender, receiver) = mpsc::channel();
        self.lock_scans().insert(client_scan, sender);
        receiver
    }

    fn forget_scan(&self, client_scan: u64) {
        self.lock_scans().remove(&client_scan);
    }

    /// Passes an event to its scan's cursor (a dropped cursor's events are dropped). The
    /// cursor unregisters itself: the last round's rows may arrive after its `ScanConf`, as
    /// they come from other threads of the node.
    fn to_scan(&self, client_scan: u64, event: ScanEvent) {
        if let Some(cursor) = self.lock_scans().get(&client_scan) {
            let _ = cursor.send(event);
        }
    }

    fn progress(&self, client_tx: u64, step: impl FnOnce(&mut Collecting)) {
        let mut transactions = self.lock_transactions();
        let Some(collecting) = transactions.get_mut(&client_tx) else {
            return;
        };
        step(collecting);
        if collecting.is_complete() {
            let collecting = transactions.remove(&client_tx).expect("just found");
            drop(transactions);
            collecting.finish();
        }
    }

    /// The connection is gone: everything in flight fails.
    fn close(&self, reason: String) {
        *self.closed.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason.clone());
        let transactions: Vec<_> = self.lock_transactions().drain().map(|(_, c)| c).collect();
        for collecting in transactions {
            collecting.fail(ClientError::ConnectionLost(reason.clone()));
        }
        for (_, cursor) in self.lock_scans().drain() {
            let _ = cursor.send(ScanEvent::Closed(reason.clone()));
        }
        let changes: Vec<_> = self.lock_schema().drain().map(|(_, c)| c).collect();
        for completion in changes {
            completion.complete(Err(ClientError::ConnectionLost(reason.clone())));
        }
    }
}
