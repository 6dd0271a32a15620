//! Loading a backup: its tables created, each `ldm`'s rows written by worker threads
//! (one transaction in flight each), its foreign keys added last (the rows arrive in no
//! particular order, so they are written with foreign-key checks off; the backup is one
//! consistent state, so every reference has its parent).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kista_client::schema::{IndexSchema, TableSchema};
use kista_client::types::Value;
use kista_client::{Client, ClientError, ExecuteMode, ForeignKeySpec, Table, TransactionOutcome};
use kista_datanode::backup_files;
use kista_datanode::dict::schema_file::SavedTable;
use kista_datanode::protocol::PRIMARY_KEY;
use kista_storage::row::RowLayout;

use super::files::BackupFiles;
use crate::progress::Progress;
use crate::Failure;

/// Tables the cluster keeps for itself (AUTO_INCREMENT counters, accounts): a target
/// whose SQL front end ran has them already, and a restore writes into them.
const HIDDEN_TABLE_PREFIX: &str = "#kista/";
/// Tries of a transaction that fails with a temporary error (an overloaded node, a
/// failover) before the restore gives up.
const TRIES_MAX: u32 = 10;
/// Chunks waiting for a worker, per worker: the reader stays this far ahead.
const QUEUED_CHUNKS_PER_WORKER: usize = 2;

pub(super) struct Options {
    pub threads: usize,
    pub batch_rows: usize,
    pub progress: bool,
}

/// Rows of one table for one transaction: (index into the restore's tables, values).
type Chunk = Vec<(usize, Vec<Value>)>;

/// What a restore did.
pub(super) struct Summary {
    backup_id: u32,
    stop_gci: u64,
    tables: usize,
    rows: u64,
    bytes: u64,
    seconds: f64,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kista restore: backup {} (GCI {}) restored: {} rows into {} tables in {:.1} s \
             ({:.0} rows/s, {:.1} MB/s of backup files)",
            self.backup_id,
            self.stop_gci,
            self.rows,
            self.tables,
            self.seconds,
            self.rows as f64 / self.seconds.max(0.001),
            self.bytes as f64 / 1e6 / self.seconds.max(0.001)
        )
    }
}

pub(super) fn restore(
    client: &Client,
    backup: &BackupFiles,
    options: &Options,
    stop: &AtomicBool,
) -> Result<Summary, Failure> {
    let saved = &backup.manifest.schema.tables;
    let tables = create_tables(client, saved)?;
    let layouts: HashMap<u32, RowLayout> = (saved.iter())
        .map(|t| (t.table_id, RowLayout::new(&t.definition.schema)))
        .collect();
    let index_of: HashMap<u32, usize> = (saved.iter().enumerate())
        .map(|(index, t)| (t.table_id, index))
        .collect();
    let total_bytes = backup.total_bytes();
    let mut progress = Progress::new(total_bytes, options.progress);
    let loaded = Arc::new(AtomicU64::new(0));
    let failure: Arc<Mutex<Option<String>>> = Arc::default();
    let (sender, receiver) = sync_channel::<Chunk>(options.threads * QUEUED_CHUNKS_PER_WORKER);
    let receiver = Arc::new(Mutex::new(receiver));
    let mut stop_gci = 0;
    std::thread::scope(|scope| -> Result<(), Failure> {
        for _ in 0..options.threads {
            let worker = Worker {
                client,
                tables: &tables,
                receiver: receiver.clone(),
                loaded: loaded.clone(),
                failure: failure.clone(),
            };
            scope.spawn(move || worker.run());
        }
        let mut reader = Reader {
            sender,
            batch_rows: options.batch_rows,
            chunks: HashMap::new(),
            failure: failure.clone(),
        };
        let mut bytes_done = 0;
        for ((node, ldm), data_path, log_path) in &backup.ldm_files {
            let cannot = |path: &std::path::Path, e: std::io::Error| {
                Failure::runtime(format!("{}: {e}", path.display()))
            };
            let mut data = std::fs::File::open(data_path).map_err(|e| cannot(data_path, e))?;
            let data_bytes = data.metadata().map_err(|e| cannot(data_path, e))?.len();
            let mut log = std::fs::File::open(log_path).map_err(|e| cannot(log_path, e))?;
            let log_bytes = log.metadata().map_err(|e| cannot(log_path, e))?.len();
            let restored = backup_files::restore_ldm(
                backup.id,
                &mut data,
                &mut log,
                &layouts,
                |table_id, fixed, var| {
                    if let Some(&index) = index_of.get(&table_id) {
                        reader.row(index, layouts[&table_id].values(fixed, var));
                    }
                    if progress.due(Duration::from_secs(1)) {
                        progress.loaded(loaded.swap(0, Ordering::Relaxed), 0, 0);
                        progress.draw(bytes_done);
                    }
                },
            );
            let (gci, _) = restored.map_err(|e| {
                Failure::runtime(format!(
                    "node {} ldm {ldm}'s files of backup {}: {e}",
                    node.0, backup.id
                ))
            })?;
            stop_gci = gci;
            bytes_done += data_bytes + log_bytes;
            if reader.failed() || stop.load(Ordering::SeqCst) {
                break;
            }
        }
        reader.finish();
        Ok(())
    })?;
    progress.loaded(loaded.swap(0, Ordering::Relaxed), 0, 0);
    progress.finish(total_bytes);
    if let Some(reason) = failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(Failure::runtime(format!("the restore stopped: {reason}")));
    }
    if stop.load(Ordering::SeqCst) {
        return Err(Failure::runtime(
            "stopped; run the restore again to finish it",
        ));
    }
    add_foreign_keys(client, saved, &tables)?;
    let (rows, ..) = progress.counts();
    Ok(Summary {
        backup_id: backup.id,
        stop_gci,
        tables: tables.len(),
        rows,
        bytes: total_bytes,
        seconds: progress.seconds(),
    })
}

/// Creates every table of the backup (or finds the cluster's hidden tables), in the
/// backup's order.
fn create_tables(client: &Client, saved: &[SavedTable]) -> Result<Vec<Table>, Failure> {
    let mut targets = Vec::with_capacity(saved.len());
    for table in saved {
        let name = &table.definition.schema.name;
        let existing = client.open_table(name).ok();
        let target = match existing {
            Some(found) if name.starts_with(HIDDEN_TABLE_PREFIX) => {
                same_columns(&found, &table.definition.schema)?;
                found
            }
            Some(_) => {
                return Err(Failure::runtime(format!(
                    "table `{name}` exists in the cluster: restore into a cluster without \
                     the backup's tables (drop it first)"
                )))
            }
            None => {
                let mut indexes: Vec<&(u32, IndexSchema)> =
                    table.definition.indexes.iter().collect();
                indexes.sort_by_key(|(id, _)| *id);
                let indexes = indexes
                    .into_iter()
                    .map(|(_, index)| index.clone())
                    .collect();
                client
                    .create_table(table.definition.schema.clone(), indexes)
                    .map_err(|e| Failure::runtime(format!("creating table `{name}`: {e}")))?
            }
        };
        targets.push(target);
    }
    Ok(targets)
}

fn same_columns(found: &Table, saved: &TableSchema) -> Result<(), Failure> {
    let found_columns: Vec<_> = (found.schema().columns.iter())
        .map(|c| (&c.name, c.column_type))
        .collect();
    let saved_columns: Vec<_> = (saved.columns.iter())
        .map(|c| (&c.name, c.column_type))
        .collect();
    match found_columns == saved_columns {
        true => Ok(()),
        false => Err(Failure::runtime(format!(
            "the cluster's table `{}` has other columns than the backup's",
            saved.name
        ))),
    }
}

/// Adds every foreign key of the backup, once the rows are in.
fn add_foreign_keys(
    client: &Client,
    saved: &[SavedTable],
    targets: &[Table],
) -> Result<(), Failure> {
    let position = |table_id: u32| saved.iter().position(|t| t.table_id == table_id);
    let mut children = targets.to_vec();
    for (child_at, table) in saved.iter().enumerate() {
        for key in
            (table.definition.foreign_keys.iter()).filter(|k| k.child_table == table.table_id)
        {
            let Some(parent_at) = position(key.parent_table) else {
                return Err(Failure::runtime(format!(
                    "foreign key `{}` names table {}, which the backup lacks",
                    key.name, key.parent_table
                )));
            };
            let parent_index = match key.parent_index {
                PRIMARY_KEY => None,
                id => (saved[parent_at].definition.indexes.iter())
                    .find(|(index_id, _)| *index_id == id)
                    .map(|(_, index)| index.name.clone()),
            };
            let spec = ForeignKeySpec {
                name: key.name.clone(),
                columns: key.child_columns.clone(),
                parent_index,
                on_delete: key.on_delete,
                on_update: key.on_update,
            };
            let parent = children[parent_at].clone();
            let child = &children[child_at];
            let added = client
                .add_foreign_key(child, &parent, spec)
                .map_err(|e| Failure::runtime(format!("adding foreign key `{}`: {e}", key.name)))?;
            children[child_at] = added;
        }
    }
    Ok(())
}

/// Gathers rows into chunks of one table and hands full ones to the workers.
struct Reader {
    sender: SyncSender<Chunk>,
    batch_rows: usize,
    chunks: HashMap<usize, Chunk>,
    failure: Arc<Mutex<Option<String>>>,
}

impl Reader {
    fn row(&mut self, table: usize, values: Vec<Value>) {
        let chunk = self.chunks.entry(table).or_default();
        chunk.push((table, values));
        if chunk.len() >= self.batch_rows {
            let full = std::mem::take(chunk);
            let _ = self.sender.send(full);
        }
    }

    fn failed(&self) -> bool {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Hands over what is left; the workers end once the channel is empty.
    fn finish(mut self) {
        for (_, chunk) in self.chunks.drain() {
            if !chunk.is_empty() {
                let _ = self.sender.send(chunk);
            }
        }
    }
}

/// Writes chunks, one transaction each, until the reader is done or a write fails.
struct Worker<'a> {
    client: &'a Client,
    tables: &'a [Table],
    receiver: Arc<Mutex<Receiver<Chunk>>>,
    loaded: Arc<AtomicU64>,
    failure: Arc<Mutex<Option<String>>>,
}

impl Worker<'_> {
    fn run(self) {
        loop {
            let chunk = self
                .receiver
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .recv();
            let Ok(chunk) = chunk else {
                return;
            };
            if self
                .failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_some()
            {
                continue; // drain, so the reader is never stuck on a full channel
            }
            match self.write(&chunk) {
                Ok(()) => {
                    self.loaded.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                }
                Err(reason) => {
                    self.failure
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get_or_insert(reason);
                }
            }
        }
    }

    /// Writes the chunk in one transaction, again after a temporary error.
    fn write(&self, chunk: &Chunk) -> Result<(), String> {
        let mut tries = 0;
        loop {
            tries += 1;
            match self.try_write(chunk) {
                Ok(()) => return Ok(()),
                Err(error) if error.is_temporary() && tries < TRIES_MAX => {
                    std::thread::sleep(Duration::from_millis(10 << tries.min(6)));
                }
                Err(error) => {
                    let table = chunk
                        .first()
                        .map(|(t, _)| self.tables[*t].schema().name.clone());
                    return Err(format!(
                        "writing rows of `{}`: {error}",
                        table.unwrap_or_default()
                    ));
                }
            }
        }
    }

    fn try_write(&self, chunk: &Chunk) -> Result<(), ClientError> {
        let mut transaction = self.client.transaction();
        transaction.set_foreign_key_checks(false);
        for (table, values) in chunk {
            transaction.write(&self.tables[*table], values.clone())?;
        }
        let executed = transaction.execute(ExecuteMode::Commit)?.wait()?;
        match executed.outcome {
            TransactionOutcome::Committed => Ok(()),
            other => Err(ClientError::Usage(format!(
                "the transaction ended {other:?}"
            ))),
        }
    }
}
