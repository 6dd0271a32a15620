//! The schema dictionary: creates and drops tables and indexes, numbers their schema
//! versions, and publishes each definition to every `ldm` and `tc` instance of the cluster
//! before it answers the client, so an acknowledged table is usable at once on every thread
//! of every node.
//!
//! One dictionary, the master's (the first live data node), makes every change; the others
//! pass the requests they receive on to it and its answers back ([`relay`]), and keep a copy
//! of each definition it publishes, so that any of them can take its place.
//!
//! Every change bumps the table's schema version. Operations carry the version their
//! client knows; a data manager refuses one older than the table's `oldest_version`
//! (error 241), as NDB does. A change in place (ALTER TABLE that renames, sets defaults or
//! adds columns at the end; a new index) leaves every stored row and every operation made
//! for the versions before valid, so it keeps `oldest_version`: transactions running
//! across it go on, and their clients hear of the new version from the coordinators
//! (`TableChanged`). So does dropping an index: an operation that names it fails alone,
//! with 241. Only a change whose client asks (`refuses_older`: a trigger's or a copying
//! ALTER's mirror, which every client must see at once) moves `oldest_version` up to the
//! new version (the mirror's change is answered once the transactions open at it have
//! ended).
//! A copying ALTER ends by putting its new table in the old one's place ([`replace`]).
//!
//! Each unique index gets an *index table* (`IndexSchema::index_table`), published before
//! the table that uses it and dropped with it; a unique index added to an existing table
//! is published only once every instance applied its index table ([`NewIndex`]: the
//! coordinators write its entries at once). Clients never see index tables.
//!
//! On a node that keeps its data on disk, every dictionary writes its tables to its file
//! ([`schema_file`]) after each change and confirms the change only once the file is
//! synced; the master counts its own file among the confirmations it waits for. So an
//! acknowledged change is on every member's disk.

use rustc_hash::FxHashMap;
use std::sync::Arc;

use kista_runtime::io::FileReply;
use kista_runtime::{Block, Context};
use kista_signal::{BlockAddress, NodeId, Signal, TypedSignal};
use kista_storage::codec::{read_index_schema, read_table_schema, Reader};
use kista_storage::schema::{IndexKind, IndexSchema, TableSchema};

use crate::cluster::{ClusterShape, NodeSet};
use crate::node::NodeSettings;
use crate::protocol::*;
use crate::send_with_bytes;

mod backup;
mod definition;
mod disk_room;
mod foreign_keys;
mod handover;
mod lookup;
mod relay;
mod replace;
mod restart;
pub mod schema_file;
pub mod system_restart;
use crate::twin_file::{TwinWriteError, WriteProgress};
use definition::Definition;
use lookup::same_table_name;

/// Tables one node's dictionary holds (NDB: MaxNoOfTables is 20320 schema objects).
pub const TABLES_MAX: usize = 20_000;
/// Secondary indexes per table (NDB: 64).
pub const INDEXES_PER_TABLE_MAX: usize = 64;
/// How often a schema file the disk had no room for is tried again (as a checkpoint is).
const SCHEMA_WRITE_RETRY: std::time::Duration = crate::ldm::NO_SPACE_RETRY;

struct DictTable {
    version: u32,
    /// The earliest version whose operations still apply (see the module's comment). Not
    /// kept on disk: after a start from disk it is `version`.
    oldest_version: u32,
    definition: Definition,
    next_index_id: u32,
    /// For an index table: the table whose unique index it holds.
    index_of: Option<u32>,
}

/// What to tell the client once every instance has applied a change.
#[derive(Clone, Copy)]
enum Reply {
    TableCreated {
        table_id: u32,
        version: u32,
        partitions: u32,
    },
    IndexCreated {
        index_id: u32,
        version: u32,
    },
    TableDropped,
    IndexDropped {
        version: u32,
    },
    TableAltered {
        version: u32,
    },
}

struct SchemaChange {
    /// `None` for a roll-back nobody waits for.
    reply: Option<Reply>,
    client: BlockAddress,
    client_request: u64,
    table_id: u32,
    /// Blocks that have not confirmed they applied it.
    awaiting: Vec<BlockAddress>,
    failure: Option<u32>,
    /// The definition and version before the change, put back if an instance cannot apply
    /// it. (No client learned the new version, so none carries it.)
    previous: Option<(Definition, u32)>,
    /// Index tables made for the change, dropped again if it fails.
    new_index_tables: Vec<u32>,
    /// Once applied, every coordinator must see the transactions open then end before the
    /// client hears (a unique index to build: none of them keeps its entries).
    drain_after: bool,
    /// An ordered index the `ldm`s built before they confirmed: once all did, it is
    /// published as built, and that answers the client.
    built_when_applied: Option<u32>,
    /// A table's new unique index, published once this change (its index table) is
    /// applied everywhere.
    then_publish: Option<NewIndex>,
}

/// A table's definition with a new index, waiting to be published: a unique one after its
/// index table is applied by every instance. A coordinator that applies the table's new
/// definition sends the index's entries to `ldm`s at once, and the dictionary's signals
/// and a coordinator's reach an `ldm` by different ways, in no order between them: an
/// `ldm` that had not yet applied the index table refused a write's entry (723).
struct NewIndex {
    client: BlockAddress,
    client_request: u64,
    table_id: u32,
    index_id: u32,
    version: u32,
    index_table: Option<u32>,
    previous: (Definition, u32),
}

pub struct Dictionary {
    settings: Arc<NodeSettings>,
    cluster: Arc<ClusterShape>,
    tables: FxHashMap<u32, DictTable>,
    next_table_id: u32,
    next_change: u64,
    changes: FxHashMap<u64, SchemaChange>,
    /// Data nodes outside the membership.
    failed_nodes: NodeSet,
    relays: relay::Relays,
    /// The master: the membership's president (its most senior member).
    master_node: NodeId,
    /// This node is restarting: it holds no data to speak of until it is started.
    restarting: bool,
    /// The master's node restarts, running and waiting.
    restarts: restart::Restarts,
    /// Writes the dictionary to this node's disk; `None` on a node that keeps nothing on
    /// disk.
    schema_writer: Option<schema_file::SchemaWriter>,
    /// Whether a write of the schema file waits for room on the disk (said once).
    schema_write_waited: bool,
    /// On the master: the members whose schema file waits for room ([`disk_room`]).
    schema_files_waiting: NodeSet,
    /// Where the node is in its start from disk (`Started` from the beginning on a node
    /// that keeps nothing on disk or joins a running cluster).
    start: system_restart::Phase,
    /// The dictionary this node's schema file held at the start, until the master ships
    /// its own (or, on the master, takes it as the cluster's).
    saved_schema: Option<schema_file::SchemaImage>,
    /// The master's side of the start from disk.
    master_start: Option<system_restart::MasterStart>,
    /// Online backups: the master's running one, this node's part, the catalog.
    backups: backup::Backups,
}

impl Dictionary {
    pub fn new(settings: Arc<NodeSettings>, cluster: Arc<ClusterShape>) -> Self {
        // Members that start together are in node id order, the first the president; a
        // restarting node learns the president when it joins.
        let master_node = cluster.nodes().first().map_or(settings.node, |n| n.node);
        Self {
            master_node,
            restarting: settings.joins_running_cluster,
            restarts: restart::Restarts::default(),
            schema_writer: settings
                .keeps_data_on_disk()
                .then(|| schema_file::SchemaWriter::new(schema_file::SCHEMA_FILE, 0)),
            schema_write_waited: false,
            schema_files_waiting: NodeSet::EMPTY,
            start: if settings.keeps_data_on_disk() && !settings.joins_running_cluster {
                system_restart::Phase::ReadingControl
            } else {
                system_restart::Phase::Started
            },
            saved_schema: None,
            master_start: None,
            backups: backup::Backups::default(),
            settings,
            cluster,
            tables: FxHashMap::default(),
            next_table_id: 1,
            next_change: 1,
            changes: FxHashMap::default(),
            failed_nodes: NodeSet::EMPTY,
            relays: relay::Relays::default(),
        }
    }

    fn refuse(
        &self,
        ctx: &mut Context,
        client: BlockAddress,
        request_id: u64,
        code: ErrorCode,
        message: &str,
    ) {
        let signal = DictRef {
            request_id,
            code: code as u32,
        }
        .to_signal(client, ctx.address());
        send_with_bytes(ctx, signal, message.as_bytes());
    }

    fn no_such_table(
        &self,
        ctx: &mut Context,
        client: BlockAddress,
        request_id: u64,
        table_id: u32,
    ) {
        let message = format!("no table {table_id}");
        self.refuse(ctx, client, request_id, ErrorCode::NoSuchTable, &message);
    }

    fn create_table(&mut self, ctx: &mut Context, request: CreateTableRequest) {
        let refuse = |this: &Self, ctx: &mut Context, code, message: String| {
            this.refuse(ctx, request.client, request.request_id, code, &message)
        };
        let definition = match ctx
            .section()
            .map(|bytes| TableDefinitionBody::decode(&bytes))
        {
            Some(Ok(definition)) => definition,
            Some(Err(error)) => {
                return refuse(
                    self,
                    ctx,
                    ErrorCode::BadRequest,
                    format!("table definition: {error}"),
                )
            }
            None => {
                return refuse(
                    self,
                    ctx,
                    ErrorCode::BadRequest,
                    "table definition missing".into(),
                )
            }
        };
        if let Err(error) = definition.schema.validate() {
            return refuse(self, ctx, ErrorCode::BadSchema, error.to_string());
        }
        let name = &definition.schema.name;
        if self.client_table_named(name).is_some() {
            return refuse(
                self,
                ctx,
                ErrorCode::BadSchema,
                format!("table `{name}` exists already"),
            );
        }
        if self.tables.len() >= TABLES_MAX {
            return refuse(
                self,
                ctx,
                ErrorCode::BadSchema,
                format!("the dictionary holds {TABLES_MAX} tables, its limit"),
            );
        }
        if definition.indexes.len() > INDEXES_PER_TABLE_MAX {
            return refuse(
                self,
                ctx,
                ErrorCode::BadSchema,
                format!("a table may have {INDEXES_PER_TABLE_MAX} indexes"),
            );
        }
        let mut definition = definition;
        for (position, (id, index)) in definition.indexes.iter_mut().enumerate() {
            if let Err(error) = validate_index(&definition.schema, index) {
                return refuse(self, ctx, ErrorCode::BadSchema, error);
            }
            *id = position as u32 + 1;
        }
        let table_id = self.next_table_id;
        self.next_table_id += 1;
        let next_index_id = definition.indexes.len() as u32 + 1;
        definition.index_tables.clear();
        let unique: Vec<(u32, IndexSchema)> = definition
            .indexes
            .iter()
            .filter(|(_, index)| index.kind == IndexKind::Unique)
            .cloned()
            .collect();
        for (index_id, index) in unique {
            let (index_table, _) =
                self.create_index_table(ctx, table_id, &definition.schema, &index);
            definition.index_tables.push((index_id, index_table));
        }
        self.tables.insert(
            table_id,
            DictTable {
                version: 1,
                oldest_version: 1,
                definition: Definition::new(definition),
                next_index_id,
                index_of: None,
            },
        );
        let reply = Reply::TableCreated {
            table_id,
            version: 1,
            partitions: self.partitions_per_table(),
        };
        self.publish(
            ctx,
            request.client,
            request.request_id,
            table_id,
            Some(reply),
            None,
        );
    }

    /// Creates and publishes the table holding a unique index's entries; returns its id
    /// and its publication's change. Instances apply it before the table that names it,
    /// which is published after it (for an existing table, after all applied it:
    /// [`NewIndex`]).
    fn create_index_table(
        &mut self,
        ctx: &mut Context,
        table_id: u32,
        schema: &TableSchema,
        index: &IndexSchema,
    ) -> (u32, u64) {
        let index_table = self.next_table_id;
        self.next_table_id += 1;
        let definition = TableDefinitionBody::new(index.index_table(schema), Vec::new());
        self.tables.insert(
            index_table,
            DictTable {
                version: 1,
                oldest_version: 1,
                definition: Definition::new(definition),
                next_index_id: 1,
                index_of: Some(table_id),
            },
        );
        let change_id = self.publish(ctx, BlockAddress::from_word(0), 0, index_table, None, None);
        (index_table, change_id)
    }

    /// The client table called `name` (case-insensitive).
    fn client_table_named(&self, name: &str) -> Option<&DictTable> {
        self.tables.values().find(|table| {
            table.index_of.is_none() && same_table_name(&table.definition.schema.name, name)
        })
    }

    /// A table a client may name (index tables are the dictionary's own).
    fn client_table_ref(&self, table_id: u32) -> Option<&DictTable> {
        (self.tables.get(&table_id)).filter(|table| table.index_of.is_none())
    }

    /// [`Dictionary::client_table_ref`], to change.
    fn client_table(&mut self, table_id: u32) -> Option<&mut DictTable> {
        self.tables
            .get_mut(&table_id)
            .filter(|table| table.index_of.is_none())
    }

    fn create_index(&mut self, ctx: &mut Context, request: CreateIndexRequest) {
        let index = ctx.section().map(|bytes| {
            let mut input = Reader::new(&bytes);
            read_index_schema(&mut input).and_then(|index| input.finish().map(|()| index))
        });
        let index = match index {
            Some(Ok(index)) => index,
            Some(Err(error)) => {
                return self.refuse(
                    ctx,
                    request.client,
                    request.request_id,
                    ErrorCode::BadRequest,
                    &format!("index definition: {error}"),
                )
            }
            None => {
                return self.refuse(
                    ctx,
                    request.client,
                    request.request_id,
                    ErrorCode::BadRequest,
                    "index definition missing",
                )
            }
        };
        let Some(table) = self.client_table(request.table_id) else {
            return self.no_such_table(ctx, request.client, request.request_id, request.table_id);
        };
        let checked = validate_index(&table.definition.schema, &index).and_then(|()| {
            let taken = table
                .definition
                .indexes
                .iter()
                .any(|(_, i)| i.name.eq_ignore_ascii_case(&index.name));
            if taken {
                Err(format!("index `{}` exists already", index.name))
            } else if table.definition.indexes.len() >= INDEXES_PER_TABLE_MAX {
                Err(format!("a table may have {INDEXES_PER_TABLE_MAX} indexes"))
            } else {
                Ok(())
            }
        });
        if let Err(message) = checked {
            return self.refuse(
                ctx,
                request.client,
                request.request_id,
                ErrorCode::BadSchema,
                &message,
            );
        }
        let previous = (table.definition.clone(), table.version);
        let index_id = table.next_index_id;
        table.next_index_id += 1;
        let schema = table.definition.schema.clone();
        let index_table = (index.kind == IndexKind::Unique)
            .then(|| self.create_index_table(ctx, request.table_id, &schema, &index));
        let Some(table) = self.tables.get_mut(&request.table_id) else {
            return;
        };
        table.version += 1;
        table.definition.change(|definition| {
            definition.indexes.push((index_id, index));
            (definition.index_tables).extend(index_table.map(|(t, _)| (index_id, t)));
            // The client fills a unique index's table from the rows there are, then says
            // so (`index_built`); the `ldm`s build an ordered one before they confirm
            // (`ldm/index_build.rs`). Until then nobody reads through it.
            definition.building.push(index_id);
        });
        let new_index = NewIndex {
            client: request.client,
            client_request: request.request_id,
            table_id: request.table_id,
            index_id,
            version: table.version,
            index_table: index_table.map(|(t, _)| t),
            previous,
        };
        let index_table_change = index_table.and_then(|(_, change)| self.changes.get_mut(&change));
        match index_table_change {
            Some(change) => change.then_publish = Some(new_index),
            None => self.publish_new_index(ctx, new_index),
        }
    }

    /// Publishes a table's definition with a new index ([`NewIndex`]).
    fn publish_new_index(&mut self, ctx: &mut Context, new_index: NewIndex) {
        if self.client_table_ref(new_index.table_id).is_none() {
            // Dropped while its index table was being applied.
            let (client, request) = (new_index.client, new_index.client_request);
            return self.no_such_table(ctx, client, request, new_index.table_id);
        }
        let reply = Reply::IndexCreated {
            index_id: new_index.index_id,
            version: new_index.version,
        };
        let change_id = self.publish(
            ctx,
            new_index.client,
            new_index.client_request,
            new_index.table_id,
            Some(reply),
            Some(new_index.previous),
        );
        if let Some(change) = self.changes.get_mut(&change_id) {
            let index_table = new_index.index_table;
            change.new_index_tables.extend(index_table);
            change.drain_after = index_table.is_some();
            change.built_when_applied = index_table.is_none().then_some(new_index.index_id);
        }
    }

    fn drop_table(&mut self, ctx: &mut Context, request: DropTableRequest) {
        if self.client_table_ref(request.table_id).is_none() {
            return self.no_such_table(ctx, request.client, request.request_id, request.table_id);
        }
        if let Some(message) = self.referenced_by_other(request.table_id) {
            let (client, id) = (request.client, request.request_id);
            return self.refuse(ctx, client, id, ErrorCode::BadSchema, &message);
        }
        self.forget_foreign_keys_of(ctx, request.table_id);
        let Some(table) = self.client_table(request.table_id) else {
            return;
        };
        let index_tables: Vec<u32> = table
            .definition
            .index_tables
            .iter()
            .map(|&(_, index_table)| index_table)
            .collect();
        for index_table in index_tables {
            self.drop_index_table(ctx, index_table);
        }
        self.tables.remove(&request.table_id);
        self.publish(
            ctx,
            request.client,
            request.request_id,
            request.table_id,
            Some(Reply::TableDropped),
            None,
        );
    }

    /// Drops a secondary index: the table's new definition goes out first, then the drop
    /// of a unique index's index table, so every instance stops maintaining the entries
    /// before their table goes (each instance gets the dictionary's signals in order).
    /// The foreign keys that used it as their child index move to another that serves
    /// them, published to their parents first.
    fn drop_index(&mut self, ctx: &mut Context, request: DropIndexRequest) {
        let moved = match self.keys_moved_off_index(request.table_id, request.index_id) {
            Ok(moved) => moved,
            Err(message) => {
                let (client, id) = (request.client, request.request_id);
                return self.refuse(ctx, client, id, ErrorCode::BadSchema, &message);
            }
        };
        let Some(table) = self.client_table_ref(request.table_id) else {
            return self.no_such_table(ctx, request.client, request.request_id, request.table_id);
        };
        let Some(position) = table
            .definition
            .indexes
            .iter()
            .position(|&(id, _)| id == request.index_id)
        else {
            let message = format!(
                "table {} has no index {}",
                request.table_id, request.index_id
            );
            return self.refuse(
                ctx,
                request.client,
                request.request_id,
                ErrorCode::BadSchema,
                &message,
            );
        };
        self.repoint_others(ctx, request.table_id, &moved);
        let Some(table) = self.client_table(request.table_id) else {
            return;
        };
        let index_table = table.definition.index_table(request.index_id);
        table.definition.change(|definition| {
            foreign_keys::repoint(&mut definition.foreign_keys, &moved);
            definition.indexes.remove(position);
            (definition.index_tables).retain(|&(index, _)| index != request.index_id);
            (definition.building).retain(|&index| index != request.index_id);
        });
        table.version += 1;
        let reply = Reply::IndexDropped {
            version: table.version,
        };
        // No way back once sent: an instance cannot fail to forget an index.
        self.publish(
            ctx,
            request.client,
            request.request_id,
            request.table_id,
            Some(reply),
            None,
        );
        if let Some(index_table) = index_table {
            self.drop_index_table(ctx, index_table);
        }
    }

    /// Changes a table in place, if the client saw its current version.
    fn alter_table(&mut self, ctx: &mut Context, request: AlterTableRequest) {
        let schema = ctx.section().map(|bytes| {
            let mut input = Reader::new(&bytes);
            read_table_schema(&mut input).and_then(|schema| input.finish().map(|()| schema))
        });
        let table = (self.tables.get(&request.table_id)).filter(|table| table.index_of.is_none());
        let refusal = match (schema, table) {
            (_, None) => {
                let (client, id) = (request.client, request.request_id);
                return self.no_such_table(ctx, client, id, request.table_id);
            }
            (None, _) => Err((ErrorCode::BadRequest, "table definition missing".into())),
            (Some(Err(error)), _) => {
                Err((ErrorCode::BadRequest, format!("table definition: {error}")))
            }
            (Some(Ok(schema)), Some(table)) => {
                self.check_alter(&request, table, &schema).map(|()| schema)
            }
        };
        let schema = match refusal {
            Ok(schema) => schema,
            Err((code, message)) => {
                return self.refuse(ctx, request.client, request.request_id, code, &message)
            }
        };
        let Some(table) = self.client_table(request.table_id) else {
            return;
        };
        table
            .definition
            .change(|definition| definition.schema = schema);
        table.version += 1;
        if request.refuses_older != 0 {
            table.oldest_version = table.version;
        }
        let reply = Reply::TableAltered {
            version: table.version,
        };
        // No way back once sent: an instance cannot fail to take a change in place.
        let change_id = self.publish(
            ctx,
            request.client,
            request.request_id,
            request.table_id,
            Some(reply),
            None,
        );
        if let Some(change) = self.changes.get_mut(&change_id) {
            change.drain_after = request.drains != 0;
        }
    }

    /// Why `table` cannot become `schema` in place, if it cannot.
    fn check_alter(
        &self,
        request: &AlterTableRequest,
        table: &DictTable,
        schema: &TableSchema,
    ) -> Result<(), (ErrorCode, String)> {
        let current = &table.definition.schema;
        if table.version != request.schema_version {
            let message = format!(
                "table {} is at schema version {}, not {}",
                request.table_id, table.version, request.schema_version
            );
            return Err((ErrorCode::SchemaVersion, message));
        }
        let bad = |message: String| (ErrorCode::BadSchema, message);
        schema.validate().map_err(|error| bad(error.to_string()))?;
        schema.in_place_change_from(current).map_err(|reason| {
            bad(format!(
                "table `{}` cannot change in place: {reason}",
                current.name
            ))
        })?;
        let renamed = !same_table_name(&schema.name, &current.name);
        if renamed && self.client_table_named(&schema.name).is_some() {
            return Err(bad(format!("table `{}` exists already", schema.name)));
        }
        Ok(())
    }

    /// Has every live coordinator answer once the transactions open now ended, then answers
    /// the client of `change` (applied by every instance).
    fn drain_coordinators(&mut self, ctx: &mut Context, id: u64, mut change: SchemaChange) {
        let coordinators: Vec<BlockAddress> = self
            .members()
            .flat_map(|node| node.tc_addresses())
            .collect();
        for &tc in &coordinators {
            ctx.send_typed(tc, &DrainTransactions { request_id: id });
        }
        change.awaiting = coordinators;
        change.drain_after = false;
        self.changes.insert(id, change);
    }

    fn drained(&mut self, ctx: &mut Context, drained: TransactionsDrained, from: BlockAddress) {
        let Some(change) = self.changes.get_mut(&drained.request_id) else {
            return;
        };
        change.awaiting.retain(|&block| block != from);
        if change.awaiting.is_empty() {
            self.change_applied(ctx, drained.request_id);
        }
    }

    /// A client filled unique index `index_id`: reads may go through it from now on.
    fn index_built(&mut self, ctx: &mut Context, request: IndexBuiltRequest) {
        let Some(table) = self.client_table(request.table_id) else {
            return self.no_such_table(ctx, request.client, request.request_id, request.table_id);
        };
        if !table.definition.is_building(request.index_id) {
            let message = format!(
                "table {} has no index {} being built",
                request.table_id, request.index_id
            );
            let (client, id) = (request.client, request.request_id);
            return self.refuse(ctx, client, id, ErrorCode::BadSchema, &message);
        }
        table
            .definition
            .change(|definition| (definition.building).retain(|&index| index != request.index_id));
        table.version += 1;
        let reply = Reply::TableAltered {
            version: table.version,
        };
        let (client, id) = (request.client, request.request_id);
        self.publish(ctx, client, id, request.table_id, Some(reply), None);
    }

    /// Publishes a table's change nobody waits for (another change answers the client).
    fn publish_quietly(&mut self, ctx: &mut Context, table_id: u32) {
        self.publish(ctx, BlockAddress::from_word(0), 0, table_id, None, None);
    }

    /// Every `ldm` built ordered index `index_id` of `change`'s table: it is readable from
    /// the table's next version on, whose publication answers the client.
    fn publish_built(&mut self, ctx: &mut Context, change: &SchemaChange, index_id: u32) {
        let Some(table) = self.tables.get_mut(&change.table_id) else {
            return;
        };
        (table.definition).change(|definition| definition.building.retain(|&i| i != index_id));
        table.version += 1;
        let reply = Reply::IndexCreated {
            index_id,
            version: table.version,
        };
        let (client, request) = (change.client, change.client_request);
        self.publish(ctx, client, request, change.table_id, Some(reply), None);
    }

    /// Drops an index table; nobody waits for it (its table's change answers the client).
    fn drop_index_table(&mut self, ctx: &mut Context, index_table: u32) {
        self.tables.remove(&index_table);
        self.publish(ctx, BlockAddress::from_word(0), 0, index_table, None, None);
    }

    /// Sends the table's current definition to every `ldm` and `tc` instance, or its drop
    /// when the dictionary no longer holds it, and remembers to answer the client when all
    /// have applied it. Returns the change's id.
    fn publish(
        &mut self,
        ctx: &mut Context,
        client: BlockAddress,
        client_request: u64,
        table_id: u32,
        reply: Option<Reply>,
        previous: Option<(Definition, u32)>,
    ) -> u64 {
        let change_id = self.next_change;
        self.next_change += 1;
        let table = self.tables.get(&table_id);
        let dropped = table.is_none();
        let body = table.map_or(Vec::new(), |table| table.definition.encoded().to_vec());
        let version = table.map_or(0, |table| table.version);
        let oldest_version = table.map_or(0, |table| table.oldest_version);
        let here = ctx.address();
        let mut receivers: Vec<BlockAddress> = self
            .members()
            .flat_map(|node| {
                let dict = node.dict_address();
                let other_dict = (dict != here).then_some(dict);
                other_dict
                    .into_iter()
                    .chain(node.ldm_addresses())
                    .chain(node.tc_addresses())
            })
            .collect();
        let index_of = table.and_then(|table| table.index_of).unwrap_or(0);
        let own = TableDefinitionConf {
            request_id: change_id,
            table_id,
            code: 0,
        };
        self.schema_changed(ctx, Some((here, own)));
        for &receiver in &receivers {
            let signal = TableDefinition {
                request_id: change_id,
                table_id,
                schema_version: version,
                oldest_version,
                partitions: self.partitions_per_table(),
                dropped: dropped.into(),
                index_of,
            }
            .to_signal(receiver, here);
            send_with_bytes(ctx, signal, &body);
        }
        // This dictionary's own file is among the confirmations awaited.
        receivers.push(here);
        self.changes.insert(
            change_id,
            SchemaChange {
                client,
                client_request,
                table_id,
                awaiting: receivers,
                failure: None,
                reply,
                previous,
                new_index_tables: Vec::new(),
                then_publish: None,
                drain_after: false,
                built_when_applied: None,
            },
        );
        change_id
    }

    /// Every table has this many partitions, so each data node is primary of
    /// `partitions_per_node` of them.
    fn partitions_per_table(&self) -> u32 {
        self.settings.partitions_per_node * self.cluster.nodes().len() as u32
    }

    /// Keeps the copy of a definition the master published, so that this dictionary can
    /// take over.
    fn copy_definition(
        &mut self,
        ctx: &mut Context,
        definition: TableDefinition,
        master: BlockAddress,
    ) {
        let table_id = definition.table_id;
        let code = if definition.dropped != 0 {
            self.tables.remove(&table_id);
            0
        } else {
            match ctx
                .section()
                .map(|bytes| TableDefinitionBody::decode(&bytes))
            {
                Some(Ok(body)) => {
                    let table = DictTable {
                        version: definition.schema_version,
                        oldest_version: definition.oldest_version,
                        next_index_id: body.next_number(table_id),
                        definition: Definition::new(body),
                        index_of: (definition.index_of != 0).then_some(definition.index_of),
                    };
                    self.tables.insert(table_id, table);
                    self.next_table_id = self.next_table_id.max(table_id + 1);
                    0
                }
                _ => ErrorCode::BadRequest as u32,
            }
        };
        let conf = TableDefinitionConf {
            request_id: definition.request_id,
            table_id,
            code,
        };
        if code == 0 {
            self.schema_changed(ctx, Some((master, conf)));
        } else {
            ctx.send_typed(master, &conf);
        }
    }

    /// The dictionary changed: write it to disk, and send `conf` once it is there (at
    /// once on a node that keeps nothing on disk).
    fn schema_changed(&mut self, ctx: &mut Context, conf: Option<schema_file::HeldConf>) {
        let Some(writer) = self.schema_writer.as_mut() else {
            if let Some((receiver, conf)) = conf {
                ctx.send_typed(receiver, &conf);
            }
            return;
        };
        if writer.changed(conf) {
            self.write_schema(ctx);
        }
    }

    /// Starts writing the whole dictionary to its file.
    fn write_schema(&mut self, ctx: &mut Context) {
        let Some(writer) = self.schema_writer.as_mut() else {
            return;
        };
        let mut ids: Vec<u32> = self.tables.keys().copied().collect();
        ids.sort_unstable();
        let tables = ids.iter().map(|id| {
            let table = &self.tables[id];
            (
                *id,
                table.version,
                table.index_of,
                table.definition.encoded(),
            )
        });
        let image = schema_file::encode(writer.next_sequence(), self.next_table_id, tables);
        if let Err(reason) = writer.start(ctx, image) {
            ctx.stop_node(&reason);
        }
    }

    fn schema_file_replied(&mut self, ctx: &mut Context, reply: FileReply) {
        let Some(writer) = self.schema_writer.as_mut() else {
            return;
        };
        let progress = writer.replied(ctx, reply);
        self.schema_write_went(ctx, progress);
    }

    /// The disk had no room for the schema file: try again.
    fn schema_write_retry(&mut self, ctx: &mut Context) {
        let Some(writer) = self.schema_writer.as_mut() else {
            return;
        };
        let progress = writer.retry(ctx);
        self.schema_write_went(ctx, progress);
    }

    /// Where the schema file's write stands. On a full disk the node does not stop: the
    /// change is kept in memory and unconfirmed (its client waits, or times out), and the
    /// write is tried again every [`SCHEMA_WRITE_RETRY`] until the disk has room.
    fn schema_write_went(
        &mut self,
        ctx: &mut Context,
        progress: Result<WriteProgress<schema_file::HeldConf>, TwinWriteError>,
    ) {
        match progress {
            Ok(WriteProgress::Going) => {}
            Ok(WriteProgress::Durable { held, again }) => {
                // The master hears of the room before the change's confirmation, so a
                // change its client makes next is not refused.
                if std::mem::take(&mut self.schema_write_waited) {
                    ctx.log("the schema file is written again: the disk had room");
                    self.tell_schema_file_room(ctx, false);
                }
                for (receiver, conf) in held {
                    ctx.send_typed(receiver, &conf);
                }
                if again {
                    self.write_schema(ctx)
                }
            }
            Err(error @ TwinWriteError::NoSpace { .. }) => {
                if !std::mem::replace(&mut self.schema_write_waited, true) {
                    ctx.warn(&format!(
                        "{error}: the schema change waits (its client gets no answer until \
                         it is written, tried again every {} s; later changes are refused)",
                        SCHEMA_WRITE_RETRY.as_secs()
                    ));
                    self.tell_schema_file_room(ctx, true);
                }
                let retry = SchemaWriteRetry {}.to_signal(ctx.address(), ctx.address());
                ctx.send_delayed(retry, SCHEMA_WRITE_RETRY);
            }
            Err(error) => ctx.stop_node(&error.to_string()),
        }
    }

    fn applied(&mut self, ctx: &mut Context, conf: TableDefinitionConf, from: BlockAddress) {
        if self.starting_definition_applied(ctx, &conf, from) {
            return;
        }
        if self.shipped_definition_applied(ctx, &conf, from) {
            return;
        }
        if self.handover_definition_applied(ctx, &conf, from) {
            return;
        }
        let Some(change) = self.changes.get_mut(&conf.request_id) else {
            return;
        };
        change.awaiting.retain(|&block| block != from);
        if conf.code != 0 {
            change.failure.get_or_insert(conf.code);
        }
        if change.awaiting.is_empty() {
            self.change_applied(ctx, conf.request_id);
        }
    }

    /// The members (a restarting node among them).
    fn members(&self) -> impl Iterator<Item = &crate::cluster::DataNodeShape> {
        self.cluster
            .nodes()
            .iter()
            .filter(|node| !self.failed_nodes.contains(node.node))
    }

    /// The master that makes schema changes: the president's dictionary.
    fn master(&self) -> Option<BlockAddress> {
        self.cluster
            .node(self.master_node)
            .map(|node| node.dict_address())
    }

    /// Failed nodes will not confirm changes: stop waiting for them.
    fn node_failed(&mut self, ctx: &mut Context, failed: NodeFailed) {
        self.failed_nodes = self.failed_nodes.union(failed.failed);
        let master_before = self.master_node;
        if let Ok(president) = u8::try_from(failed.president) {
            self.master_node = NodeId(president);
        }
        self.schema_file_room_after_failure(ctx, failed.failed, master_before);
        self.relays.master_failed(ctx, failed.failed);
        self.backup_nodes_failed(ctx, failed.failed);
        self.restart_lost(ctx, failed.failed);
        self.start_lost(ctx, failed.failed);
        let mut done = Vec::new();
        for (&id, change) in &mut self.changes {
            change
                .awaiting
                .retain(|block| !failed.failed.contains(block.node()));
            if change.awaiting.is_empty() {
                done.push(id);
            }
        }
        for id in done {
            self.change_applied(ctx, id);
        }
    }

    /// Every live block applied change `id`: answer its client (or undo it if one could
    /// not apply it).
    fn change_applied(&mut self, ctx: &mut Context, id: u64) {
        let Some(mut change) = self.changes.remove(&id) else {
            return;
        };
        if let Some(new_index) = change.then_publish.take() {
            self.publish_new_index(ctx, new_index);
        }
        let Some(reply) = change.reply else {
            return;
        };
        if let Some(code) = change.failure {
            if let (Some((definition, version)), Some(table)) =
                (change.previous, self.tables.get_mut(&change.table_id))
            {
                table.definition = definition;
                table.version = version;
                self.publish(ctx, change.client, 0, change.table_id, None, None);
            }
            for index_table in change.new_index_tables {
                self.drop_index_table(ctx, index_table);
            }
            let code = ErrorCode::from_u32(code).unwrap_or(ErrorCode::BadSchema);
            let message = format!("a data manager could not apply the change ({code:?})");
            return self.refuse(ctx, change.client, change.client_request, code, &message);
        }
        if change.drain_after {
            return self.drain_coordinators(ctx, id, change);
        }
        if let Some(index_id) = change.built_when_applied {
            return self.publish_built(ctx, &change, index_id);
        }
        let client = change.client;
        let request_id = change.client_request;
        let here = ctx.address();
        let signal = match reply {
            Reply::TableCreated {
                table_id,
                version,
                partitions,
            } => CreateTableConf {
                request_id,
                table_id,
                schema_version: version,
                partitions,
            }
            .to_signal(client, here),
            Reply::IndexCreated { index_id, version } => CreateIndexConf {
                request_id,
                index_id,
                schema_version: version,
            }
            .to_signal(client, here),
            Reply::TableDropped => DropTableConf { request_id }.to_signal(client, here),
            Reply::IndexDropped { version } => DropIndexConf {
                request_id,
                schema_version: version,
            }
            .to_signal(client, here),
            Reply::TableAltered { version } => AlterTableConf {
                request_id,
                schema_version: version,
            }
            .to_signal(client, here),
        };
        ctx.send(signal);
    }
}

fn validate_index(schema: &TableSchema, index: &IndexSchema) -> Result<(), String> {
    index.validate(schema).map_err(|error| error.to_string())
}

impl Block for Dictionary {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        let number = signal.number();
        let is_client_request = relay::client_of(signal).is_some();
        if is_client_request && self.is_starting() {
            if let Some((client, request_id)) = relay::client_of(signal) {
                let message = "the cluster is starting from disk: schema changes wait";
                self.refuse(ctx, client, request_id, ErrorCode::NodeStarting, message);
            }
            return;
        }
        if is_client_request {
            if let Some(master) = self.master().filter(|&m| m != ctx.address()) {
                if let Err((client, request_id)) = self.relays.pass_on(ctx, signal, master) {
                    let message = format!(
                        "{} schema requests wait for the master already",
                        relay::RELAYED_REQUESTS_MAX
                    );
                    self.refuse(ctx, client, request_id, ErrorCode::Overloaded, &message);
                }
                return;
            }
        }
        if self.relays.pass_back(ctx, signal) {
            return;
        }
        if let Some((client, request_id)) = relay::client_of(signal) {
            let blocked =
                (self.backup_blocks_schema_changes()).filter(|_| relay::is_schema_change(signal));
            if let Some(message) = blocked {
                return self.refuse(ctx, client, request_id, ErrorCode::BackupRefused, &message);
            }
            if let Some(message) = self.refused_for_room(signal) {
                return self.refuse(ctx, client, request_id, ErrorCode::DiskFull, &message);
            }
        }
        if let Some(result) = self.backup_signal(signal, ctx) {
            debug_assert!(
                result.is_ok(),
                "malformed backup signal to dict: {result:?}"
            );
            return;
        }
        let result = if number == CreateTableRequest::NUMBER {
            CreateTableRequest::from_signal(signal).map(|r| self.create_table(ctx, r))
        } else if number == CreateIndexRequest::NUMBER {
            CreateIndexRequest::from_signal(signal).map(|r| self.create_index(ctx, r))
        } else if number == DropTableRequest::NUMBER {
            DropTableRequest::from_signal(signal).map(|r| self.drop_table(ctx, r))
        } else if number == DropIndexRequest::NUMBER {
            DropIndexRequest::from_signal(signal).map(|r| self.drop_index(ctx, r))
        } else if number == AlterTableRequest::NUMBER {
            AlterTableRequest::from_signal(signal).map(|r| self.alter_table(ctx, r))
        } else if number == IndexBuiltRequest::NUMBER {
            IndexBuiltRequest::from_signal(signal).map(|r| self.index_built(ctx, r))
        } else if number == ForeignKeyRequest::NUMBER {
            ForeignKeyRequest::from_signal(signal).map(|r| self.add_foreign_key(ctx, r))
        } else if number == DropForeignKeyRequest::NUMBER {
            DropForeignKeyRequest::from_signal(signal).map(|r| self.drop_foreign_key(ctx, r))
        } else if number == ReplaceTableRequest::NUMBER {
            ReplaceTableRequest::from_signal(signal).map(|r| self.replace_table(ctx, r))
        } else if number == TransactionsDrained::NUMBER {
            TransactionsDrained::from_signal(signal).map(|d| self.drained(ctx, d, signal.sender()))
        } else if number == TableLookupRequest::NUMBER {
            TableLookupRequest::from_signal(signal).map(|r| self.look_up_table(ctx, r))
        } else if number == TableListRequest::NUMBER {
            TableListRequest::from_signal(signal).map(|r| self.list_tables(ctx, r))
        } else if number == TableDefinitionConf::NUMBER {
            TableDefinitionConf::from_signal(signal).map(|c| self.applied(ctx, c, signal.sender()))
        } else if number == NodeFailed::NUMBER {
            NodeFailed::from_signal(signal).map(|f| self.node_failed(ctx, f))
        } else if number == TableDefinition::NUMBER {
            TableDefinition::from_signal(signal)
                .map(|d| self.copy_definition(ctx, d, signal.sender()))
        } else if number == SchemaFileRoom::NUMBER {
            SchemaFileRoom::from_signal(signal).map(|r| self.schema_file_room(r))
        } else if number == NodeJoined::NUMBER {
            NodeJoined::from_signal(signal).map(|j| self.node_joined(ctx, j))
        } else if number == FileReply::NUMBER {
            FileReply::from_signal(signal).map(|r| {
                if !self.schema_read_replied(ctx, r) && !self.backup_file_replied(ctx, r) {
                    self.schema_file_replied(ctx, r)
                }
            })
        } else if number == DiskState::NUMBER {
            DiskState::from_signal(signal).map(|d| self.disk_state(ctx, d))
        } else if number == StartTick::NUMBER {
            StartTick::from_signal(signal).map(|_| self.start_tick(ctx))
        } else if number == SchemaWriteRetry::NUMBER {
            SchemaWriteRetry::from_signal(signal).map(|_| self.schema_write_retry(ctx))
        } else if number == ClusterLifeBegunConf::NUMBER {
            ClusterLifeBegunConf::from_signal(signal).map(|c| self.life_begun(ctx, c.cluster_life))
        } else if number == StartReport::NUMBER {
            StartReport::from_signal(signal).map(|r| self.start_reported(ctx, r))
        } else if number == StartOrder::NUMBER {
            StartOrder::from_signal(signal).map(|o| self.start_ordered(ctx, o))
        } else if number == DiskStateSetConf::NUMBER {
            DiskStateSetConf::from_signal(signal).map(|_| self.disk_state_set(ctx))
        } else if number == DictionaryWanted::NUMBER {
            DictionaryWanted::from_signal(signal)
                .map(|_| self.dictionary_wanted(ctx, signal.sender()))
        } else if number == DictionaryHandedOver::NUMBER {
            DictionaryHandedOver::from_signal(signal).map(|d| self.dictionary_handed_over(ctx, d))
        } else if number == StartOrderConf::NUMBER {
            StartOrderConf::from_signal(signal)
                .map(|_| self.start_order_confirmed(ctx, signal.sender()))
        } else if number == OwnDiskRestored::NUMBER {
            OwnDiskRestored::from_signal(signal).map(|r| self.own_disk_restored(ctx, r))
        } else if number == LdmRestoreConf::NUMBER {
            LdmRestoreConf::from_signal(signal).map(|c| self.ldm_restored(ctx, c, signal.sender()))
        } else if number == SystemStarted::NUMBER {
            SystemStarted::from_signal(signal).map(|_| self.started())
        } else if number == StartingReplicaAdded::NUMBER {
            StartingReplicaAdded::from_signal(signal)
                .map(|a| self.starting_replica_added(ctx, a, signal.sender()))
        } else if number == PartitionCopied::NUMBER {
            PartitionCopied::from_signal(signal).map(|c| self.partition_copied(ctx, c))
        } else if number == NodeStarted::NUMBER {
            NodeStarted::from_signal(signal).map(|s| self.node_is_started(ctx, s))
        } else {
            Ok(())
        };
        debug_assert!(result.is_ok(), "malformed signal to dict: {result:?}");
    }
}
