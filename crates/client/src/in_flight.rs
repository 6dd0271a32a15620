//! What the connections' receive threads share with the client's callers: transactions,
//! scans and schema changes waiting for answers, and which data nodes are live. Answers
//! arrive on any connection (a row from one node, the commit from another) and find their
//! waiter by the client's own request ids.

use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Mutex, MutexGuard};

use kista_datanode::cluster::NodeSet;
use kista_datanode::protocol::*;
use kista_signal::{NodeId, TypedSignal};
use kista_transport::client::Event;

use crate::completion::Completion;
use crate::nodes::lost_connection_error;
use crate::scan::ScanEvent;
use crate::transaction::Collecting;
use crate::ClientError;

/// A dictionary's answer (to a schema change, a table lookup or a list of tables), or an
/// `info` block's (a table's rows).
#[derive(Clone, Debug, Default)]
pub(crate) struct SchemaAnswer {
    /// The table or index created, or the table found.
    pub id: u32,
    pub schema_version: u32,
    /// A created or found table's partition count.
    pub partitions: u32,
    /// A found table's definition.
    pub definition: Option<TableDefinitionBody>,
    /// Listed tables (id, name), and whether more follow.
    pub listed: Vec<(u32, String)>,
    pub more: bool,
    /// An info table's rows, encoded as the node sent them.
    pub info_rows: Vec<u8>,
}

/// A schema change waiting for its answer from the dictionary of `node`.
pub(crate) struct SchemaChange {
    pub node: NodeId,
    pub completion: Completion<SchemaAnswer>,
}

#[derive(Default)]
pub(crate) struct InFlight {
    // Keyed by this client's own sequence numbers, so the unseeded FxHash is safe (SipHash
    // cost ~100 instructions per answer).
    transactions: Mutex<FxHashMap<u64, Collecting>>,
    schema_changes: Mutex<FxHashMap<u64, SchemaChange>>,
    scans: Mutex<FxHashMap<u64, Sender<ScanEvent>>>,
    /// The data nodes whose connections are open (a [`NodeSet`]).
    live: AtomicU64,
    /// Why the last connection closed, while none is live (the client connects again to
    /// the nodes that come back).
    all_lost: Mutex<Option<String>>,
    /// `[node id]` → the latest heartbeat it answered.
    pongs: Pongs,
    /// Heartbeats sent so far (to each connected node, numbered 1 and up).
    pings_sent: AtomicU64,
    /// Tables changed in place, as coordinators told: table id → the newest version heard.
    changed_tables: Mutex<FxHashMap<u32, u32>>,
    /// How many such notices arrived, so a caller checks its tables only when one did.
    table_notices: AtomicU64,
}

struct Pongs([AtomicU64; 64]);

impl Default for Pongs {
    fn default() -> Self {
        Self(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl InFlight {
    pub fn live(&self) -> NodeSet {
        NodeSet(self.live.load(Ordering::Acquire))
    }

    pub fn node_is_live(&self, node: NodeId) {
        let mut set = NodeSet::default();
        set.insert(node);
        if self.live.fetch_or(set.0, Ordering::AcqRel) == 0 {
            *self.all_lost.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }

    /// A connection to `node` opened: its heartbeats count from now; it is live at once
    /// when `started`, else once it answers a heartbeat as started.
    pub fn connected(&self, node: NodeId, started: bool) {
        if let Some(latest) = self.pongs.0.get(usize::from(node.0)) {
            latest.store(self.pings_sent(), Ordering::Release);
        }
        if started {
            self.node_is_live(node);
        }
    }

    pub fn pings_sent(&self) -> u64 {
        self.pings_sent.load(Ordering::Acquire)
    }

    /// Counts one more heartbeat sent; returns its number.
    pub fn next_ping(&self) -> u64 {
        self.pings_sent.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// The latest heartbeat `node` answered (0: none).
    pub fn last_pong(&self, node: NodeId) -> u64 {
        self.pongs
            .0
            .get(usize::from(node.0))
            .map_or(0, |pong| pong.load(Ordering::Acquire))
    }

    /// Why nothing can be sent now: every connection closed, this the last one's reason.
    pub fn all_lost_reason(&self) -> Option<String> {
        self.all_lost
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn lock_transactions(&self) -> MutexGuard<'_, FxHashMap<u64, Collecting>> {
        self.transactions.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn lock_schema(&self) -> MutexGuard<'_, FxHashMap<u64, SchemaChange>> {
        self.schema_changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn lock_scans(&self) -> MutexGuard<'_, FxHashMap<u64, Sender<ScanEvent>>> {
        self.scans.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a scan; its events arrive on the receiver.
    pub fn open_scan(&self, client_scan: u64) -> Receiver<ScanEvent> {
        let (sender, receiver) = mpsc::channel();
        self.lock_scans().insert(client_scan, sender);
        receiver
    }

    pub fn forget_scan(&self, client_scan: u64) {
        self.lock_scans().remove(&client_scan);
    }

    fn table_changed(&self, changed: TableChanged) {
        let mut tables = self
            .changed_tables
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let newest = tables.entry(changed.table_id).or_default();
        if changed.schema_version > *newest {
            *newest = changed.schema_version;
            self.table_notices.fetch_add(1, Ordering::Release);
        }
    }

    /// How many times a table was heard to have changed in place.
    pub fn table_notices(&self) -> u64 {
        self.table_notices.load(Ordering::Acquire)
    }

    /// The newest version of `table_id` heard of from a coordinator, if any.
    pub fn newest_version_heard(&self, table_id: u32) -> Option<u32> {
        let tables = self
            .changed_tables
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        tables.get(&table_id).copied()
    }

    /// Runs on a connection's receive thread for everything its node sends.
    pub fn receive(&self, event: Event<'_>) {
        let (signal, section) = match event {
            Event::Signal(signal, section) => (signal, section),
            Event::Closed { node, reason } => return self.lose_node(node, reason),
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
                gci: 0,
            };
            self.progress(read.client_tx, |c| {
                if let Some(row) = row {
                    c.row(read.op_index, row);
                }
                c.conf(conf, String::new());
            });
        } else if let Ok(pong) = ClientPong::from_signal(&signal) {
            let node = signal.sender().node();
            if let Some(latest) = self.pongs.0.get(usize::from(node.0)) {
                latest.fetch_max(pong.sequence, Ordering::AcqRel);
            }
            // A restarted node is used once it holds its data.
            if pong.started != 0 {
                self.node_is_live(node);
            }
        } else if let Ok(changed) = TableChanged::from_signal(&signal) {
            self.table_changed(changed);
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
                let answer = SchemaAnswer {
                    id: conf.table_id,
                    schema_version: conf.schema_version,
                    partitions: conf.partitions,
                    ..SchemaAnswer::default()
                };
                (conf.request_id, Ok(answer))
            } else if let Ok(conf) = CreateIndexConf::from_signal(&signal) {
                let answer = SchemaAnswer {
                    id: conf.index_id,
                    schema_version: conf.schema_version,
                    ..SchemaAnswer::default()
                };
                (conf.request_id, Ok(answer))
            } else if let Ok(conf) = TableLookupConf::from_signal(&signal) {
                let answer = TableDefinitionBody::decode(section)
                    .map(|definition| SchemaAnswer {
                        id: conf.table_id,
                        schema_version: conf.schema_version,
                        partitions: conf.partitions,
                        definition: Some(definition),
                        ..SchemaAnswer::default()
                    })
                    .map_err(|e| unreadable("table definition", e));
                (conf.request_id, answer)
            } else if let Ok(conf) = TableListConf::from_signal(&signal) {
                let answer = decode_table_list(section, conf.count)
                    .map(|listed| SchemaAnswer {
                        listed,
                        more: conf.more != 0,
                        ..SchemaAnswer::default()
                    })
                    .map_err(|e| unreadable("table list", e));
                (conf.request_id, answer)
            } else if let Ok(conf) = AlterTableConf::from_signal(&signal) {
                let answer = SchemaAnswer {
                    schema_version: conf.schema_version,
                    ..SchemaAnswer::default()
                };
                (conf.request_id, Ok(answer))
            } else if let Ok(conf) = DropIndexConf::from_signal(&signal) {
                let answer = SchemaAnswer {
                    schema_version: conf.schema_version,
                    ..SchemaAnswer::default()
                };
                (conf.request_id, Ok(answer))
            } else if let Ok(conf) = DropTableConf::from_signal(&signal) {
                (conf.request_id, Ok(SchemaAnswer::default()))
            } else if let Ok(conf) = InfoConf::from_signal(&signal) {
                let answer = if conf.code == 0 {
                    Ok(SchemaAnswer {
                        info_rows: section.to_vec(),
                        ..SchemaAnswer::default()
                    })
                } else {
                    let message = format!("the node has no info table {}", conf.table);
                    Err(ClientError::node(conf.code, message))
                };
                (conf.request_id, answer)
            } else if let Ok(refusal) = DictRef::from_signal(&signal) {
                let error = ClientError::node(refusal.code, message());
                (refusal.request_id, Err(error))
            } else {
                return;
            };
            let (request_id, result) = answer;
            if let Some(change) = self.lock_schema().remove(&request_id) {
                change.completion.complete(result);
            }
        }
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

    /// The connection to `node` is gone. What it coordinated fails, and so does whatever
    /// may have been waiting for rows from it (a read's row comes from the node holding the
    /// replica, which need not be the coordinator's); the rest goes on through the other
    /// nodes. With no node left, everything fails (each as its own coordinator's loss
    /// would fail it) until a node comes back.
    pub fn lose_node(&self, node: NodeId, reason: String) {
        let mut gone = NodeSet::default();
        gone.insert(node);
        let live = NodeSet(self.live.fetch_and(!gone.0, Ordering::AcqRel)).minus(gone);
        let every = live.is_empty();
        if every {
            *self.all_lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason.clone());
        }
        let failed: Vec<Collecting> = {
            let mut transactions = self.lock_transactions();
            let touched: Vec<u64> = transactions
                .iter()
                .filter(|(_, c)| every || c.coordinator() == node || c.awaits_rows())
                .map(|(&id, _)| id)
                .collect();
            touched
                .iter()
                .filter_map(|id| transactions.remove(id))
                .collect()
        };
        for collecting in failed {
            let error = lost_connection_error(node, collecting.is_committing(), &reason);
            collecting.fail(error);
        }
        // Every scan reads every partition, some of them on the lost node.
        for (_, cursor) in self.lock_scans().drain() {
            let error = lost_connection_error(node, false, &reason);
            let _ = cursor.send(ScanEvent::Failed(error));
        }
        let changes: Vec<SchemaChange> = {
            let mut changes = self.lock_schema();
            let touched: Vec<u64> = changes
                .iter()
                .filter(|(_, change)| every || change.node == node)
                .map(|(&id, _)| id)
                .collect();
            touched.iter().filter_map(|id| changes.remove(id)).collect()
        };
        for change in changes {
            let error = lost_connection_error(node, true, &reason);
            change.completion.complete(Err(error));
        }
    }
}

fn unreadable(what: &str, error: impl std::fmt::Display) -> ClientError {
    ClientError::Usage(format!(
        "the node sent a {what} this client cannot read: {error}"
    ))
}

/// A [`TableListConf`]'s section: `count` times a table id and its name.
fn decode_table_list(
    section: &[u8],
    count: u32,
) -> Result<Vec<(u32, String)>, kista_storage::codec::CodecError> {
    let mut reader = kista_storage::codec::Reader::new(section);
    let mut listed = Vec::with_capacity(count.min(4096) as usize);
    for _ in 0..count {
        let id = reader.u32()?;
        let name = String::from_utf8_lossy(reader.bytes()?).into_owned();
        listed.push((id, name));
    }
    reader.finish()?;
    Ok(listed)
}
