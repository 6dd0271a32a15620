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

mod completion;
mod error;
mod transaction;

use std::collections::HashMap;
use std::net::ToSocketAddrs;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kista_datanode::protocol::*;
use kista_signal::{BlockAddress, BlockId, Signal, TypedSignal};
use kista_storage::row::RowLayout;
use kista_storage::schema::IndexSchema;
use kista_transport::client::{ClientConnection, Event};

pub use completion::Pending;
pub use error::ClientError;
pub use kista_datanode::protocol::{ErrorCategory, ExecuteMode, LockKind, TransactionOutcome};
pub use kista_storage::{schema, types};
pub use transaction::{Executed, OpIndex, Transaction};

use completion::Completion;
use transaction::Collecting;

/// How long connecting and schema changes may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The block id the client's address uses.
const CLIENT_BLOCK: BlockId = BlockId(1);

/// A table as the client uses it: ids for requests, the layout for encoding keys.
#[derive(Clone)]
pub struct Table {
    pub id: u32,
    pub schema_version: u32,
    pub(crate) layout: Arc<RowLayout>,
}

/// What the receive thread shares with the client's callers.
#[derive(Default)]
struct Shared {
    transactions: Mutex<HashMap<u64, Collecting>>,
    schema_changes: Mutex<HashMap<u64, Completion<(u32, u32)>>>,
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
        schema: schema::TableSchema,
        indexes: Vec<IndexSchema>,
    ) -> Result<Table, ClientError> {
        schema
            .validate()
            .map_err(|e| ClientError::Usage(e.to_string()))?;
        let layout = Arc::new(RowLayout::new(&schema));
        let definition = TableDefinitionBody {
            schema,
            indexes: (1..).zip(indexes).collect(),
        };
        let mut body = Vec::new();
        definition.encode(&mut body);
        let request_id = self.next_id();
        let completion = Completion::waiter();
        let pending = completion.pending();
        self.shared.lock_schema().insert(request_id, completion);
        let request = CreateTableRequest {
            request_id,
            client: self.me,
        };
        self.send(request.to_signal(self.dict, self.me), &body)?;
        let (id, schema_version) = pending.wait_timeout(REQUEST_TIMEOUT)?;
        Ok(Table {
            id,
            schema_version,
            layout,
        })
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
    fn lock_transactions(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Collecting>> {
        self.transactions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_schema(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Completion<(u32, u32)>>> {
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
        let number = signal.number();
        let message = || String::from_utf8_lossy(section).into_owned();
        if let Ok(conf) = ExecuteConf::from_signal(&signal) {
            self.progress(conf.client_tx, |c| c.conf(conf, message()));
        } else if let Ok(result) = ReadResult::from_signal(&signal) {
            let row = RowBody::decode(section).map(|r| r.values);
            self.progress(result.client_tx, |c| c.row(result.op_index, row));
        } else if number == CreateTableConf::NUMBER || number == DictRef::NUMBER {
            let (request_id, result) = match CreateTableConf::from_signal(&signal) {
                Ok(conf) => (conf.request_id, Ok((conf.table_id, conf.schema_version))),
                Err(_) => match DictRef::from_signal(&signal) {
                    Ok(refusal) => (
                        refusal.request_id,
                        Err(ClientError::node(refusal.code, message())),
                    ),
                    Err(_) => return,
                },
            };
            if let Some(completion) = self.lock_schema().remove(&request_id) {
                completion.complete(result);
            }
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
        let changes: Vec<_> = self.lock_schema().drain().map(|(_, c)| c).collect();
        for completion in changes {
            completion.complete(Err(ClientError::ConnectionLost(reason.clone())));
        }
    }
}
