//! The native Kista client: connects to a cluster's data nodes over TCP and runs batched
//! transactions, many in flight at once.
//!
//! A [`Client`] proves it holds the cluster's key ([`ClusterKey`]), registers with the
//! management server, which leases it a client node id, and connects to every data node
//! under that id ([`Client::connect_cluster`]); a
//! standalone data node is reached directly ([`Client::connect`]). A [`Transaction`] collects operations and sends the
//! whole batch in one round trip when executed; [`Transaction::execute`] returns a
//! [`Pending`] at once, so a thread can keep thousands of transactions in flight and collect
//! them later (or pass a callback with [`Transaction::execute_then`], run on the connection's
//! receive thread). Errors carry the node's stable code and category (temporary: retry may
//! succeed; permanent; unknown outcome).
//!
//! ```no_run
//! use kista_client::{Client, ClusterKey, ExecuteMode, LockKind};
//! use kista_client::schema::{Column, TableSchema};
//! use kista_client::types::{ColumnType, Value};
//!
//! // `kista up` keeps the cluster's key in its directory.
//! let key = ClusterKey::load("kista-data/cluster.key".as_ref()).expect("the cluster's key");
//! let client = Client::connect_cluster("127.0.0.1:1186", Some(&key))?;
//! let schema = TableSchema {
//!     name: "sessions".into(),
//!     columns: vec![
//!         Column::new("id", ColumnType::Int { bytes: 8, signed: true }),
//!         Column::new("user", ColumnType::varchar(64)),
//!     ],
//!     primary_key: vec![0],
//!     extra_metadata: Vec::new(),
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
mod foreign_keys;
mod heartbeat;
mod in_flight;
mod index_build;
mod nodes;
mod scan;
mod transaction;

use std::net::ToSocketAddrs;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kista_datanode::dist::PartitionMap;
use kista_datanode::protocol::*;
use kista_mgm::admin::AdminClient;
use kista_mgm::lease::Registration;
use kista_signal::{BlockAddress, BlockId, Signal, TypedSignal};
use kista_storage::codec::{write_index_schema, write_table_schema, Writer};
use kista_storage::partition::IndexId;
use kista_storage::row::RowLayout;
use kista_storage::schema::{IndexKind, IndexSchema, TableSchema};
pub use kista_transport::cluster_key::ClusterKey;

pub use completion::Pending;
pub use error::ClientError;
pub use foreign_keys::ForeignKeySpec;
pub use kista_datanode::protocol::INFO_ROWS_PER_BLOCK_MAX;
pub use kista_datanode::protocol::{same_key_form, ForeignKey, ReferenceAction};
pub use kista_datanode::protocol::{ErrorCategory, ExecuteMode, LockKind, TransactionOutcome};
pub use kista_signal::NodeId;
pub use kista_storage::partition::IndexBound;
pub use kista_storage::{codec, compare, filter, schema, types};
pub use scan::{Scan, ScanSpec, SCAN_BATCH_ROWS_DEFAULT};
pub use transaction::{
    Executed, OpIndex, Transaction, BATCH_BYTES_MAX, BATCH_FULL_BYTES, BATCH_FULL_OPERATIONS,
};

use completion::Completion;
use heartbeat::Heartbeats;
use in_flight::{InFlight, SchemaAnswer, SchemaChange};
use nodes::{DataNodeLink, DataNodes};

/// How long connecting and schema changes may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connecting may take to a data node the management server does not see.
pub const ABSENT_NODE_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// The block id the client's address uses.
pub(crate) const CLIENT_BLOCK: BlockId = BlockId(1);

/// A table as the client uses it: ids for requests, the layout for encoding keys, the
/// indexes for unique lookups and ordered merges.
#[derive(Clone)]
pub struct Table {
    pub id: u32,
    pub schema_version: u32,
    /// Where the partitions live, so that a transaction goes to the node holding its first
    /// key's primary replica.
    pub(crate) map: Arc<PartitionMap>,
    pub(crate) schema: Arc<TableSchema>,
    pub(crate) layout: Arc<RowLayout>,
    /// The indexes clients may use (a unique index being built is not among them).
    pub(crate) indexes: Vec<(IndexId, IndexSchema)>,
    /// Each unique index's table of entries, built ones or not.
    pub(crate) index_tables: Vec<(IndexId, u32)>,
    /// The foreign keys it is the child or the parent of.
    pub(crate) foreign_keys: Vec<ForeignKey>,
}

/// 0, 1, 2, ...: the column numbers of the widest table.
static COLUMN_NUMBERS: [u16; kista_storage::schema::COLUMNS_MAX] = {
    let mut numbers = [0; kista_storage::schema::COLUMNS_MAX];
    let mut column = 0;
    while column < numbers.len() {
        numbers[column] = column as u16;
        column += 1;
    }
    numbers
};

/// The schema version of every unique index's table: the dictionary never changes one.
const INDEX_TABLE_SCHEMA_VERSION: u32 = 1;

impl Table {
    /// The table holding the entries of unique `index` of this table, numbered `id`: its
    /// partitions are as many as every table's, so it shares the map.
    fn index_table(&self, id: u32, index: &IndexSchema) -> Table {
        let schema = index.index_table(&self.schema);
        Table {
            id,
            schema_version: INDEX_TABLE_SCHEMA_VERSION,
            map: self.map.clone(),
            layout: Arc::new(RowLayout::new(&schema)),
            schema: Arc::new(schema),
            indexes: Vec::new(),
            index_tables: Vec::new(),
            foreign_keys: Vec::new(),
        }
    }

    /// A projection of every column this definition has, named one by one: a node may
    /// hold a newer definition with columns added since, which a read asking for "every
    /// column" would return. (A slice of a static list: a read allocates nothing for it.)
    pub(crate) fn every_column(&self) -> &'static [u16] {
        &COLUMN_NUMBERS[..self.layout.column_count()]
    }

    /// A table no cluster holds, numbered `id`, with `indexes` numbered from 1 in order:
    /// for tests that bind and plan statements without a cluster. Any operation on it
    /// fails, having nowhere to go.
    pub fn detached(id: u32, schema: TableSchema, indexes: Vec<IndexSchema>) -> Self {
        let nowhere =
            kista_datanode::cluster::ClusterShape::single(kista_datanode::cluster::DataNodeShape {
                node: NodeId(1),
                node_group: 0,
                tc_instances: 1,
                ldm_instances: 1,
            });
        Table {
            id,
            schema_version: 1,
            map: Arc::new(PartitionMap::for_cluster(1, &nowhere)),
            layout: Arc::new(RowLayout::new(&schema)),
            schema: Arc::new(schema),
            indexes: (1..).map(IndexId).zip(indexes).collect(),
            index_tables: Vec::new(),
            foreign_keys: Vec::new(),
        }
    }

    pub fn schema(&self) -> &TableSchema {
        &self.schema
    }

    /// The table's secondary indexes.
    pub fn indexes(&self) -> impl Iterator<Item = &(IndexId, IndexSchema)> {
        self.indexes.iter()
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

pub struct Client {
    in_flight: Arc<InFlight>,
    nodes: Arc<DataNodes>,
    me: BlockAddress,
    /// Pings every live node; the thread stops when the client is dropped.
    _heartbeats: Heartbeats,
    /// The management server leases this client's node id while this connection lasts.
    _lease: Option<AdminClient>,
    next_id: AtomicU64,
}

/// How a change of a table's definition reaches the operations of other clients.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Visibility {
    /// Operations made for the versions before still apply; their clients hear of it.
    InPlace,
    /// Operations made for the versions before are refused (241) from now on.
    RefusesOlder,
    /// As `RefusesOlder`, answered once the transactions open at the change have ended.
    Drained,
}

impl Client {
    /// Connects to a standalone data node (`kista datad --standalone`), which gives the
    /// client its node id, proving the process holds `key` if the node has one. A cluster's
    /// data nodes refuse this: use [`Client::connect_cluster`].
    pub fn connect(
        address: impl ToSocketAddrs,
        key: Option<&ClusterKey>,
    ) -> Result<Self, ClientError> {
        let in_flight = Arc::new(InFlight::default());
        let link = DataNodeLink::connect(address, None, key, REQUEST_TIMEOUT, &in_flight, true)
            .map_err(ClientError::ConnectionLost)?;
        let me = BlockAddress::new(link.client_node, CLIENT_BLOCK, 0);
        Self::with_links(in_flight, vec![link], Vec::new(), key.cloned(), me, None)
    }

    /// Connects to the cluster whose management server is at `mgm` (`host:port`), proving
    /// at every connection that the process holds `key`, the cluster's (`None` for a
    /// cluster without one): leases a client node id there and connects to every data node
    /// under it. Data nodes that cannot be reached now are connected later (as are nodes
    /// lost and restarted); at least one must answer now.
    pub fn connect_cluster(mgm: &str, key: Option<&ClusterKey>) -> Result<Self, ClientError> {
        let lost = |e: String| ClientError::ConnectionLost(e);
        let mut lease =
            AdminClient::connect(mgm, key, REQUEST_TIMEOUT).map_err(|e| lost(e.to_string()))?;
        let text = lease
            .request("register client")
            .map_err(|e| lost(e.to_string()))?;
        let registration = Registration::parse(&text).map_err(lost)?;
        let in_flight = Arc::new(InFlight::default());
        let mut links = Vec::new();
        let mut failures = Vec::new();
        for data_node in &registration.data_nodes {
            let id = Some(registration.client_node);
            // A node the management server does not see is probably down: do not wait long
            // for an address that may not answer at all.
            let timeout = if data_node.started {
                REQUEST_TIMEOUT
            } else {
                ABSENT_NODE_CONNECT_TIMEOUT
            };
            let started = data_node.started;
            let address = &data_node.address;
            match DataNodeLink::connect(address, id, key, timeout, &in_flight, started) {
                Ok(link) => links.push(link),
                Err(error) => failures.push(format!(
                    "node {} at {}: {error}",
                    data_node.node.0, data_node.address
                )),
            }
        }
        if links.is_empty() {
            return Err(lost(format!(
                "no data node of the cluster at {mgm} could be reached: {}",
                failures.join("; ")
            )));
        }
        let me = BlockAddress::new(registration.client_node, CLIENT_BLOCK, 0);
        let addresses = registration
            .data_nodes
            .into_iter()
            .map(|data_node| (data_node.node, data_node.address))
            .collect();
        let lease = Some(lease);
        let client = Self::with_links(in_flight, links, addresses, key.cloned(), me, lease)?;
        client.wait_for_a_started_node(mgm)?;
        Ok(client)
    }

    /// Waits (at most [`REQUEST_TIMEOUT`]) until some connected node says it started: right
    /// after a cluster's first start the management server may not call any started yet.
    fn wait_for_a_started_node(&self, mgm: &str) -> Result<(), ClientError> {
        let deadline = std::time::Instant::now() + REQUEST_TIMEOUT;
        while self.in_flight.live().is_empty() {
            if std::time::Instant::now() >= deadline {
                return Err(ClientError::ConnectionLost(format!(
                    "no data node of the cluster at {mgm} is started after {} s (they may be \
                     starting: a first start forming, or restarting nodes copying their data)",
                    REQUEST_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    fn with_links(
        in_flight: Arc<InFlight>,
        links: Vec<DataNodeLink>,
        addresses: Vec<(NodeId, String)>,
        key: Option<ClusterKey>,
        me: BlockAddress,
        lease: Option<AdminClient>,
    ) -> Result<Self, ClientError> {
        let nodes = Arc::new(DataNodes::new(links, addresses, key));
        let heartbeats = Heartbeats::start(nodes.clone(), in_flight.clone(), me)
            .map_err(|e| ClientError::ConnectionLost(format!("no heartbeat thread: {e}")))?;
        Ok(Self {
            in_flight,
            nodes,
            me,
            _heartbeats: heartbeats,
            _lease: lease,
            next_id: AtomicU64::new(first_id()),
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
        let created = self.change_schema(&body, |request_id, client| CreateTableRequest {
            request_id,
            client,
        })?;
        self.table_from(
            created.id,
            created.schema_version,
            created.partitions,
            definition,
        )
    }

    /// Adds a secondary index to `table`, built from the rows it holds while writes go on
    /// (a unique one by this client: `index_build.rs`; a duplicate key fails with error 630
    /// and leaves no index); returns the table at its new schema version.
    pub fn create_index(&self, table: &Table, index: IndexSchema) -> Result<Table, ClientError> {
        index
            .validate(&table.schema)
            .map_err(|e| ClientError::Usage(e.to_string()))?;
        let mut body = Vec::new();
        write_index_schema(&mut Writer(&mut body), &index);
        let table_id = table.id;
        let created = self.change_schema(&body, |request_id, client| CreateIndexRequest {
            request_id,
            client,
            table_id,
        })?;
        if index.kind == IndexKind::Unique {
            return self.build_unique_index(table, IndexId(created.id), index);
        }
        let mut changed = table.clone();
        changed.schema_version = created.schema_version;
        changed.indexes.push((IndexId(created.id), index));
        Ok(changed)
    }

    /// Fills unique index `index_id`, just added to `table`, and makes it readable; drops
    /// it again if that fails.
    fn build_unique_index(
        &self,
        table: &Table,
        index_id: IndexId,
        index: IndexSchema,
    ) -> Result<Table, ClientError> {
        let built = self.open_table(&table.schema.name).and_then(|current| {
            let entries = (current.index_tables.iter())
                .find(|(id, _)| *id == index_id)
                .map(|&(_, entries)| current.index_table(entries, &index))
                .ok_or_else(|| ClientError::Usage("the index table is gone".into()))?;
            index_build::fill_unique_index(self, &current, &index, &entries)?;
            let (table_id, index_id) = (current.id, index_id.0);
            let finished = self.change_schema(&[], |request_id, client| IndexBuiltRequest {
                request_id,
                client,
                table_id,
                index_id,
            })?;
            Ok((current, finished.schema_version))
        });
        match built {
            Ok((mut current, schema_version)) => {
                current.schema_version = schema_version;
                current.indexes.push((index_id, index));
                Ok(current)
            }
            Err(error) => {
                // Best effort: a lost connection leaves the index being built (unread),
                // which DROP INDEX removes.
                let _ = self.drop_index_numbered(table.id, index_id);
                Err(error)
            }
        }
    }

    /// Drops the secondary index called `name` of `table`; returns the table at its new
    /// schema version. A foreign key that found its rows through it moves to another
    /// ordered index beginning with its columns; with none, the drop is refused.
    pub fn drop_index(&self, table: &Table, name: &str) -> Result<Table, ClientError> {
        let (index_id, _) = table.index(name)?;
        let dropped = self.drop_index_numbered(table.id, index_id)?;
        let keys_moved = (table.foreign_keys.iter())
            .any(|key| key.child_table == table.id && key.child_index == index_id.0);
        if keys_moved {
            // The dictionary moved them to another index that serves them: which one, its
            // definition says.
            return self.open_table(&table.schema.name);
        }
        let mut changed = table.clone();
        changed.schema_version = dropped.schema_version;
        changed.indexes.retain(|(id, _)| *id != index_id);
        Ok(changed)
    }

    fn drop_index_numbered(
        &self,
        table_id: u32,
        index_id: IndexId,
    ) -> Result<SchemaAnswer, ClientError> {
        let index_id = index_id.0;
        self.change_schema(&[], |request_id, client| DropIndexRequest {
            request_id,
            client,
            table_id,
            index_id,
        })
    }

    /// Replaces `table`'s extra metadata (what the layer above keeps with the table);
    /// returns the table at its new schema version, the only one operations may carry from
    /// now on. Error 241 when the table changed since `table` was opened (open it again and
    /// decide again).
    pub fn alter_extra_metadata(
        &self,
        table: &Table,
        extra_metadata: Vec<u8>,
    ) -> Result<Table, ClientError> {
        self.change_extra_metadata(table, extra_metadata, Visibility::RefusesOlder)
    }

    /// [`Client::alter_extra_metadata`], answered only once the transactions open at the
    /// change have ended: no write made for the versions before can commit afterwards.
    pub fn alter_extra_metadata_drained(
        &self,
        table: &Table,
        extra_metadata: Vec<u8>,
    ) -> Result<Table, ClientError> {
        self.change_extra_metadata(table, extra_metadata, Visibility::Drained)
    }

    fn change_extra_metadata(
        &self,
        table: &Table,
        extra_metadata: Vec<u8>,
        visibility: Visibility,
    ) -> Result<Table, ClientError> {
        let mut schema = (*table.schema).clone();
        schema.extra_metadata = extra_metadata;
        self.change_table(table, schema, visibility)
    }

    /// Changes `table` in place into `schema` (`TableSchema::in_place_change_from`: a new
    /// name, columns renamed or added at the end, defaults, extra metadata); returns the
    /// table at its new schema version. Operations made for `table` still apply; other
    /// clients hear of the change at their next operation on it
    /// ([`Client::table_changed_since_opened`]). Error 241 when the table changed since
    /// `table` was opened (open it again and decide again).
    pub fn alter_table(&self, table: &Table, schema: TableSchema) -> Result<Table, ClientError> {
        self.change_table(table, schema, Visibility::InPlace)
    }

    /// [`Client::alter_table`], with the change seen by other clients as `visibility` says.
    fn change_table(
        &self,
        table: &Table,
        schema: TableSchema,
        visibility: Visibility,
    ) -> Result<Table, ClientError> {
        schema
            .in_place_change_from(&table.schema)
            .map_err(ClientError::Usage)?;
        let mut body = Vec::new();
        write_table_schema(&mut Writer(&mut body), &schema);
        let (table_id, schema_version) = (table.id, table.schema_version);
        let altered = self.change_schema(&body, |request_id, client| AlterTableRequest {
            request_id,
            client,
            table_id,
            schema_version,
            refuses_older: (visibility != Visibility::InPlace).into(),
            drains: (visibility == Visibility::Drained).into(),
        })?;
        let mut changed = table.clone();
        changed.schema_version = altered.schema_version;
        changed.layout = Arc::new(RowLayout::new(&schema));
        changed.schema = Arc::new(schema);
        Ok(changed)
    }

    /// How many times a coordinator told this client that a table changed in place: while
    /// it stays the same, no table this client opened has changed so.
    pub fn table_notices(&self) -> u64 {
        self.in_flight.table_notices()
    }

    /// Whether a coordinator told this client that `table` changed in place since it was
    /// opened (open it again to see the change).
    pub fn table_changed_since_opened(&self, table: &Table) -> bool {
        (self.in_flight.newest_version_heard(table.id))
            .is_some_and(|newest| newest > table.schema_version)
    }

    /// Puts `replacement` in the place of `table` in one change (the switch of a copying
    /// ALTER TABLE): the replacement takes `table`'s name, which every client finds from
    /// now on, and `table`, renamed `<name>/#replaced`, refuses operations made for its
    /// versions before (241: their clients look the name up again). Answered once the
    /// transactions open at the switch have ended; `table` is then the caller's to drop.
    /// Error 241 when either changed since opened. `table`'s foreign keys, on either side,
    /// move to the replacement: `sources` says, for each of the replacement's columns,
    /// which of `table`'s it holds (`None`: a new one). Returns the replacement as renamed.
    pub fn replace_table(
        &self,
        table: &Table,
        replacement: &Table,
        sources: &[Option<usize>],
    ) -> Result<Table, ClientError> {
        let (table_id, schema_version) = (table.id, table.schema_version);
        let (replacement_id, replacement_version) = (replacement.id, replacement.schema_version);
        let sources: Vec<Option<u16>> = (sources.iter())
            .map(|source| source.and_then(|column| u16::try_from(column).ok()))
            .collect();
        let mut section = Vec::new();
        ColumnSourcesBody::encode(&sources, &mut section);
        let answer = self.change_schema(&section, |request_id, client| ReplaceTableRequest {
            request_id,
            client,
            table_id,
            schema_version,
            replacement_id,
            replacement_version,
        })?;
        let mut schema = (*replacement.schema).clone();
        schema.name = table.schema.name.clone();
        let mut replaced = replacement.clone();
        replaced.schema_version = answer.schema_version;
        replaced.schema = Arc::new(schema);
        Ok(replaced)
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

    /// The table called `name` (case-insensitive), as the dictionary of a live node knows it
    /// now; error 723 if there is none. Ask again after error 241 (the table changed).
    pub fn open_table(&self, name: &str) -> Result<Table, ClientError> {
        let found = self.change_schema(name.as_bytes(), |request_id, client| {
            TableLookupRequest { request_id, client }
        })?;
        let Some(definition) = found.definition else {
            return Err(ClientError::Usage("the node found no definition".into()));
        };
        self.table_from(found.id, found.schema_version, found.partitions, definition)
    }

    /// The names of every table, in the order they were created.
    pub fn table_names(&self) -> Result<Vec<String>, ClientError> {
        Ok(self.tables()?.into_iter().map(|(_, name)| name).collect())
    }

    /// The id and name of every table, in the order they were created.
    pub fn tables(&self) -> Result<Vec<(u32, String)>, ClientError> {
        let mut tables = Vec::new();
        let mut after_table_id = 0;
        loop {
            let page = self.change_schema(&[], |request_id, client| TableListRequest {
                request_id,
                client,
                after_table_id,
            })?;
            after_table_id = page.listed.last().map_or(after_table_id, |&(id, _)| id);
            let more = page.more && !page.listed.is_empty();
            tables.extend(page.listed);
            if !more {
                return Ok(tables);
            }
        }
    }

    fn table_from(
        &self,
        id: u32,
        schema_version: u32,
        partitions: u32,
        definition: TableDefinitionBody,
    ) -> Result<Table, ClientError> {
        if partitions == 0 {
            return Err(ClientError::ConnectionLost(
                "the node described a table without partitions".into(),
            ));
        }
        let TableDefinitionBody {
            schema,
            indexes,
            index_tables,
            building,
            foreign_keys,
        } = definition;
        let map = PartitionMap::for_cluster(partitions, self.nodes.cluster());
        Ok(Table {
            id,
            schema_version,
            map: Arc::new(map),
            layout: Arc::new(RowLayout::new(&schema)),
            schema: Arc::new(schema),
            indexes: indexes
                .into_iter()
                .filter(|(id, _)| !building.contains(id))
                .map(|(id, index)| (IndexId(id), index))
                .collect(),
            index_tables: (index_tables.into_iter())
                .map(|(index, table)| (IndexId(index), table))
                .collect(),
            foreign_keys,
        })
    }

    /// Sends a schema request built by `request` (from its id and our address) to the
    /// dictionary of a live node and waits for the answer.
    fn change_schema<R: TypedSignal>(
        &self,
        section: &[u8],
        request: impl FnOnce(u64, BlockAddress) -> R,
    ) -> Result<SchemaAnswer, ClientError> {
        let dict = self
            .nodes
            .dict(self.in_flight.live())
            .ok_or_else(|| self.no_live_node())?;
        self.ask(dict, section, request)
    }

    /// The node id this client is on every data node.
    pub fn node_id(&self) -> NodeId {
        self.me.node()
    }

    /// Every data node of the cluster: its node group, and whether it is live for this
    /// client now.
    pub fn data_nodes(&self) -> Vec<DataNodeStatus> {
        let live = self.in_flight.live();
        let cluster = self.nodes.cluster();
        let status = |n: &kista_datanode::cluster::DataNodeShape| DataNodeStatus {
            node: n.node,
            node_group: n.node_group,
            live: live.contains(n.node),
        };
        cluster.nodes().iter().map(status).collect()
    }

    /// How each scheduler thread of data node `node` was loaded over the last second (its
    /// `info` block's `Threads` table; empty in the node's first second).
    pub fn thread_loads(&self, node: NodeId) -> Result<Vec<ThreadLoad>, ClientError> {
        let rows = self.info_rows(node, InfoTable::Threads)?;
        ThreadLoadsBody::decode(&rows).map_err(|e| unreadable_info(node, "thread loads", e))
    }

    /// Data node `node`'s counters by name (operations, transactions, aborts by code,
    /// lock waits, REDO, checkpoints, data memory): its `info` block's `Counters` table.
    pub fn node_counters(&self, node: NodeId) -> Result<Vec<(String, u64)>, ClientError> {
        let rows = self.info_rows(node, InfoTable::Counters)?;
        NamedValuesBody::decode(&rows).map_err(|e| unreadable_info(node, "counters", e))
    }

    /// Data node `node`'s configuration as it runs, by the names of the cluster
    /// configuration: its `info` block's `Config` table.
    pub fn node_config(&self, node: NodeId) -> Result<Vec<(String, u64)>, ClientError> {
        let rows = self.info_rows(node, InfoTable::Config)?;
        NamedValuesBody::decode(&rows).map_err(|e| unreadable_info(node, "configuration", e))
    }

    /// The partitions data node `node` holds (one row per replica, with its committed rows
    /// and open transactions), and whether the list was cut at its bounds
    /// (`INFO_ROWS_PER_BLOCK_MAX` per `ldm`, a section in all).
    pub fn node_partitions(&self, node: NodeId) -> Result<(Vec<PartitionRow>, bool), ClientError> {
        self.gathered(node, InfoTable::Partitions)
    }

    /// The transactions data node `node`'s coordinators have open, and whether the list
    /// was cut at its bounds.
    pub fn node_transactions(
        &self,
        node: NodeId,
    ) -> Result<(Vec<TransactionRow>, bool), ClientError> {
        self.gathered(node, InfoTable::Transactions)
    }

    /// The row locks held or waited for in data node `node`'s partitions, and whether the
    /// list was cut at its bounds.
    pub fn node_locks(&self, node: NodeId) -> Result<(Vec<LockRow>, bool), ClientError> {
        self.gathered(node, InfoTable::Locks)
    }

    /// A table the `info` block gathers from other blocks: its rows, and whether they
    /// were cut at a bound (the answer's first word).
    fn gathered<R: GatheredRow>(
        &self,
        node: NodeId,
        table: InfoTable,
    ) -> Result<(Vec<R>, bool), ClientError> {
        let answer = self.info_rows(node, table)?;
        let unreadable = |e: &dyn std::fmt::Display| unreadable_info(node, "rows", e);
        let (flag, rows) =
            (answer.split_first_chunk::<4>()).ok_or_else(|| unreadable(&"no truncation flag"))?;
        let rows = R::decode_all(rows).map_err(|e| unreadable(&e))?;
        Ok((rows, u32::from_le_bytes(*flag) != 0))
    }

    /// One table of `node`'s `info` block, encoded as the node sent it.
    fn info_rows(&self, node: NodeId, table: InfoTable) -> Result<Vec<u8>, ClientError> {
        let info = BlockAddress::new(node, INFO_BLOCK, 0);
        let table = table as u32;
        let answer = self.ask(info, &[], |request_id, client| InfoRequest {
            request_id,
            client,
            table,
        })?;
        Ok(answer.info_rows)
    }

    /// Sends a request to block `to` and waits for its answer (a schema change's way).
    fn ask<R: TypedSignal>(
        &self,
        to: BlockAddress,
        section: &[u8],
        request: impl FnOnce(u64, BlockAddress) -> R,
    ) -> Result<SchemaAnswer, ClientError> {
        let request_id = self.next_id();
        let completion = Completion::waiter();
        let pending = completion.pending();
        let change = SchemaChange {
            node: to.node(),
            completion,
        };
        self.in_flight.lock_schema().insert(request_id, change);
        let signal = request(request_id, self.me).to_signal(to, self.me);
        if let Err(error) = self.send(signal, section) {
            self.in_flight.lock_schema().remove(&request_id);
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

    /// A coordinator on a live node for the transaction or scan `client_id`.
    fn any_coordinator(&self, client_id: u64) -> Result<BlockAddress, ClientError> {
        self.coordinator_near(None, client_id)
    }

    /// A coordinator on the first live node of `chain` if there is one (the partition of a
    /// transaction's first key), else on any live node.
    fn coordinator_near(
        &self,
        chain: Option<&ReplicaChain>,
        client_id: u64,
    ) -> Result<BlockAddress, ClientError> {
        let live = self.in_flight.live();
        chain
            .and_then(|chain| self.nodes.coordinator_for(live, chain, client_id))
            .or_else(|| self.nodes.any_coordinator(live, client_id))
            .ok_or_else(|| self.no_live_node())
    }

    /// Why nothing can be sent: no data node is live. In a cluster nothing was sent, so
    /// the request may be retried once a node is (the client connects again to nodes
    /// that come back); a standalone node's client has no address to connect again to,
    /// and is closed for good.
    fn no_live_node(&self) -> ClientError {
        let lost = self.in_flight.all_lost_reason();
        if !self.nodes.connects_again() {
            let reason = lost.unwrap_or_else(|| "no data node is connected".into());
            return ClientError::ConnectionLost(reason);
        }
        let why = match lost {
            Some(reason) => format!("every data node was lost, the last: {reason}"),
            None => "no data node serves yet".into(),
        };
        ClientError::node(
            ErrorCode::NodeStarting as u32,
            format!("no data node is connected ({why}); the cluster is unavailable for now: retry"),
        )
    }

    /// Sends `signal` to its receiver's node. A node whose connection is gone fails the
    /// request as the loss failed what was in flight there (the cluster aborts it).
    fn send(&self, signal: Signal, section: &[u8]) -> Result<(), ClientError> {
        // An atomic load per signal; the reason's lock only once nothing is live.
        if self.in_flight.live().is_empty() {
            return Err(self.no_live_node());
        }
        let node = signal.receiver().node();
        self.nodes
            .send(&signal, section)
            .map_err(|reason| nodes::lost_connection_error(node, false, &reason))
    }
}

/// The first transaction, scan and request id of a client: the microseconds since the
/// epoch, so a client that takes the node id of one gone a moment ago (a restarted SQL
/// front end) numbers its work apart from whatever the data nodes still finish for the
/// old one (the old one would have had to take more than one id a microsecond over its
/// whole life to reach the new one's first).
fn first_id() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |since| since.as_micros() as u64)
        .max(1)
}

/// A data node as [`Client::data_nodes`] lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataNodeStatus {
    pub node: NodeId,
    pub node_group: u16,
    pub live: bool,
}

fn unreadable_info(node: NodeId, what: &str, error: impl std::fmt::Display) -> ClientError {
    ClientError::ConnectionLost(format!("node {} sent unreadable {what}: {error}", node.0))
}
