//! Transactions: operations collected into batches, each batch sent in one round trip.

use std::ops::Range;

use kista_datanode::protocol::*;
use kista_signal::{BlockAddress, NodeId, TypedSignal};
use kista_storage::codec::CodecError;
use kista_storage::row::RowError;
use kista_storage::schema::IndexKind;
use kista_storage::types::Value;

use crate::completion::{Completion, Pending};
use crate::{Client, ClientError, Table};

/// Which operation of a batch a read result belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpIndex(pub u32);

/// What an executed batch returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Executed {
    pub outcome: TransactionOutcome,
    /// `[op index]` → the row a read found (`None` for writes and for reads of missing rows).
    pub rows: Vec<Option<Vec<Value>>>,
    /// The global checkpoint a committed transaction that changed rows belongs to (NDB's
    /// `getGCI`), else 0: a start from disk restores it once that GCI was saved, and a
    /// commit with `ExecuteMode::CommitDurable` is confirmed only then.
    pub gci: u64,
}

impl Executed {
    pub fn row(&self, op: OpIndex) -> Option<&[Value]> {
        self.rows.get(op.0 as usize)?.as_deref()
    }
}

struct Operation {
    kind: OperationKind,
    lock: LockKind,
    table: (u32, u32),
    /// The unique index the key belongs to, or `PRIMARY_KEY`.
    index_id: u32,
    /// Where its body is in the transaction's `bodies`.
    body: Range<usize>,
    /// `KeyRequest` flags.
    flags: u32,
    /// The partition of a whole-row write that may share a `KeyBatchBody` with others to
    /// the same partition (its table has no unique index and no foreign key).
    batch_partition: Option<u32>,
}

pub struct Transaction<'c> {
    client: &'c Client,
    client_tx: u64,
    /// Chosen when the first batch is sent; every later batch goes to it too.
    coordinator: Option<BlockAddress>,
    /// The replicas of the first operation's partition (by primary key), whose primary's
    /// node is where the coordinator should be.
    first_chain: Option<ReplicaChain>,
    batch: Vec<Operation>,
    /// The bodies of the operations in `batch`, one after another: one buffer kept for
    /// its capacity, where each operation's body was a buffer of its own (an allocation
    /// per row of a load).
    bodies: Vec<u8>,
    finished: bool,
    /// Flags every operation carries: foreign-key checks off
    /// ([`Transaction::set_foreign_key_checks`]).
    flags: u32,
}

/// Operations past which a batch is full ([`Transaction::batch_is_full`]): a statement
/// writing more rows executes them in batches of about this many, so no round trip
/// carries an unbounded batch and the coordinator's work arrives as it can take it.
pub const BATCH_FULL_OPERATIONS: usize = 1024;
/// Body bytes past which a batch is full.
pub const BATCH_FULL_BYTES: usize = 1 << 20;
/// Body bytes a batch may carry at most: a bigger one is refused before anything is sent.
/// All of a batch is queued on the connection at once, and a connection whose peer lets
/// 64 MiB pile up counts as lost (`kista_transport`), which would leave a committing
/// transaction's outcome unknown.
pub const BATCH_BYTES_MAX: usize = 16 << 20;

impl<'c> Transaction<'c> {
    pub(crate) fn new(client: &'c Client, client_tx: u64) -> Self {
        Self {
            client,
            client_tx,
            coordinator: None,
            first_chain: None,
            batch: Vec::new(),
            bodies: Vec::new(),
            finished: false,
            flags: 0,
        }
    }

    /// Whether the writes added from now on check their foreign keys and run their
    /// actions (on by default; SQL's `foreign_key_checks = 0` turns it off for loads).
    pub fn set_foreign_key_checks(&mut self, on: bool) {
        let off = KeyRequest::NO_FOREIGN_KEY_CHECKS;
        self.flags = if on {
            self.flags & !off
        } else {
            self.flags | off
        };
    }

    /// Deletes the row with `key` as the first half of a change of its primary key (the
    /// insert of `new_row`, the row under its new key, follows in the same batch): foreign
    /// keys referencing the row apply their ON UPDATE rule, not their ON DELETE one, and
    /// ON UPDATE CASCADE gives the children the new key from `new_row` (every column, in
    /// table order), which the delete carries.
    pub fn delete_moving_key(
        &mut self,
        table: &Table,
        key: &[Value],
        new_row: &[Value],
    ) -> Result<OpIndex, ClientError> {
        let columns: Vec<u16> = (0..new_row.len() as u16).collect();
        let op = self.push(
            OperationKind::Delete,
            LockKind::Exclusive,
            table,
            key,
            &columns,
            new_row,
        )?;
        if let Some(operation) = self.batch.last_mut() {
            operation.flags |= KeyRequest::MOVES_KEY;
        }
        Ok(op)
    }

    /// Inserts a row (every column, in table order); fails with 630 if the key exists.
    pub fn insert(
        &mut self,
        table: &Table,
        values: impl AsRef<[Value]>,
    ) -> Result<OpIndex, ClientError> {
        self.whole_row(OperationKind::Insert, table, values.as_ref())
    }

    /// Inserts the row or replaces the one with its key (upsert).
    pub fn write(
        &mut self,
        table: &Table,
        values: impl AsRef<[Value]>,
    ) -> Result<OpIndex, ClientError> {
        self.whole_row(OperationKind::Write, table, values.as_ref())
    }

    /// Changes some columns of the row with `key` (primary key values); 626 if none.
    pub fn update(
        &mut self,
        table: &Table,
        key: &[Value],
        changes: Vec<(u16, Value)>,
    ) -> Result<OpIndex, ClientError> {
        let (columns, values): (Vec<u16>, Vec<Value>) = changes.into_iter().unzip();
        self.push(
            OperationKind::Update,
            LockKind::Exclusive,
            table,
            key,
            &columns,
            &values,
        )
    }

    pub fn delete(&mut self, table: &Table, key: &[Value]) -> Result<OpIndex, ClientError> {
        self.push(
            OperationKind::Delete,
            LockKind::Exclusive,
            table,
            key,
            &[],
            &[],
        )
    }

    /// Reads the row with `key`: committed (no lock), or under a shared or exclusive lock
    /// held until the transaction ends.
    pub fn read(
        &mut self,
        table: &Table,
        key: &[Value],
        lock: LockKind,
    ) -> Result<OpIndex, ClientError> {
        self.push(
            OperationKind::Read,
            lock,
            table,
            key,
            table.every_column(),
            &[],
        )
    }

    /// Reads only `columns` of the row with `key`.
    pub fn read_columns(
        &mut self,
        table: &Table,
        key: &[Value],
        lock: LockKind,
        columns: Vec<u16>,
    ) -> Result<OpIndex, ClientError> {
        self.push(OperationKind::Read, lock, table, key, &columns, &[])
    }

    /// Reads the row whose key in the unique index `index` is `key` (one value per index
    /// column, none NULL); `columns` projects (empty: every column). The index entry is read
    /// under a shared lock held until the transaction ends, whatever `lock` asks of the row
    /// (docs/datanode.md, "Unique indexes").
    pub fn read_unique(
        &mut self,
        table: &Table,
        index: &str,
        key: &[Value],
        lock: LockKind,
        columns: Vec<u16>,
    ) -> Result<OpIndex, ClientError> {
        let (id, schema) = table.index(index)?;
        if schema.kind != IndexKind::Unique || key.len() != schema.columns.len() {
            return Err(ClientError::Usage(format!(
                "a unique read needs a unique index and one value per column; `{}` is {:?} \
                 on {} columns",
                schema.name,
                schema.kind,
                schema.columns.len()
            )));
        }
        let write_key = |out: &mut Vec<u8>| table.layout.key_of_values(&schema.columns, key, out);
        let columns = match columns.is_empty() {
            true => table.every_column(),
            false => &columns,
        };
        let body = self.body_of(write_key, columns, &[])?;
        self.push_encoded(OperationKind::Read, lock, table, id.0, body)
    }

    fn whole_row(
        &mut self,
        kind: OperationKind,
        table: &Table,
        values: &[Value],
    ) -> Result<OpIndex, ClientError> {
        let columns = table.layout.column_count();
        if values.len() != columns {
            return Err(ClientError::Usage(format!(
                "table {} has {columns} columns, the row gives {} values",
                table.layout.table(),
                values.len()
            )));
        }
        let write_key = |out: &mut Vec<u8>| table.layout.primary_key_of_row_values(values, out);
        let body = self.body_of(write_key, &[], values)?;
        self.push_whole_row(kind, table, body)
    }

    /// Inserts a whole row given as `kista_storage::codec::write_values` encoded its
    /// values (a load's rows, encoded straight from a file's fields): the operation
    /// [`Transaction::insert`] of those values adds, byte for byte.
    pub fn insert_encoded(
        &mut self,
        table: &Table,
        encoded_values: &[u8],
    ) -> Result<OpIndex, ClientError> {
        let columns = table.layout.column_count();
        let given = encoded_values
            .first_chunk::<4>()
            .map(|n| u32::from_le_bytes(*n));
        if given != Some(columns as u32) {
            return Err(ClientError::Usage(format!(
                "table {} has {columns} columns, the encoded row gives {given:?} values",
                table.layout.table(),
            )));
        }
        let start = self.bodies.len();
        let write_key =
            |out: &mut Vec<u8>| table.layout.primary_key_of_encoded_row(encoded_values, out);
        let written = KeyBody::write_keyed_encoded(write_key, encoded_values, &mut self.bodies);
        if let Err(error) = written {
            return Err(ClientError::Usage(error.to_string()));
        }
        self.push_whole_row(OperationKind::Insert, table, start..self.bodies.len())
    }

    /// Adds a whole-row write whose body is `body` of `bodies`; one to a table with no
    /// unique index or foreign key goes in its partition's batch.
    fn push_whole_row(
        &mut self,
        kind: OperationKind,
        table: &Table,
        body: Range<usize>,
    ) -> Result<OpIndex, ClientError> {
        let batch_partition = (table.index_tables.is_empty() && table.foreign_keys.is_empty())
            .then(|| KeyBodyRef::parse(&self.bodies[body.clone()]))
            .and_then(Result::ok)
            .map(|body| table.map.partition_of(body.key));
        self.push_encoded(kind, LockKind::Exclusive, table, PRIMARY_KEY, body)?;
        let op = self.batch.len() as u32 - 1;
        if let Some(operation) = self.batch.last_mut() {
            operation.batch_partition = batch_partition;
        }
        Ok(OpIndex(op))
    }

    fn push(
        &mut self,
        kind: OperationKind,
        lock: LockKind,
        table: &Table,
        key: &[Value],
        columns: &[u16],
        values: &[Value],
    ) -> Result<OpIndex, ClientError> {
        let write_key = |out: &mut Vec<u8>| table.layout.primary_key_of_values(key, out);
        let body = self.body_of(write_key, columns, values)?;
        self.push_encoded(kind, lock, table, PRIMARY_KEY, body)
    }

    fn push_encoded(
        &mut self,
        kind: OperationKind,
        lock: LockKind,
        table: &Table,
        index_id: u32,
        body: Range<usize>,
    ) -> Result<OpIndex, ClientError> {
        if self.finished {
            self.bodies.truncate(body.start);
            return Err(ClientError::Usage("the transaction has ended".into()));
        }
        let first = self.coordinator.is_none() && self.batch.is_empty();
        if first && index_id == PRIMARY_KEY {
            if let Ok(key) = KeyBodyRef::parse(&self.bodies[body.clone()]).map(|body| body.key) {
                self.first_chain = Some(table.map.chain(table.map.partition_of(key)));
            }
        }
        self.batch.push(Operation {
            kind,
            lock,
            table: (table.id, table.schema_version),
            index_id,
            body,
            flags: self.flags,
            batch_partition: None,
        });
        Ok(OpIndex(self.batch.len() as u32 - 1))
    }

    /// Whether the operations added since the last execute make a batch worth sending
    /// ([`BATCH_FULL_OPERATIONS`], [`BATCH_FULL_BYTES`]).
    pub fn batch_is_full(&self) -> bool {
        self.batch.len() >= BATCH_FULL_OPERATIONS || self.bodies.len() >= BATCH_FULL_BYTES
    }

    /// Appends an operation's body to `bodies`: where it is.
    fn body_of(
        &mut self,
        write_key: impl FnOnce(&mut Vec<u8>) -> Result<(), RowError>,
        columns: &[u16],
        values: &[Value],
    ) -> Result<Range<usize>, ClientError> {
        let start = self.bodies.len();
        let written = KeyBody::write_keyed(write_key, columns, values, &mut self.bodies);
        if let Err(error) = written {
            self.bodies.truncate(start);
            return Err(ClientError::Usage(error.to_string()));
        }
        Ok(start..self.bodies.len())
    }

    /// Whether any batch was sent: a transaction that sent nothing holds nothing in the
    /// cluster, and may be dropped without ending it.
    pub fn has_sent(&self) -> bool {
        self.coordinator.is_some()
    }

    /// Sends the batch (every operation added since the last execute) and ends it with
    /// `mode`; returns at once. `Commit` and `Rollback` end the transaction.
    pub fn execute(&mut self, mode: ExecuteMode) -> Result<Pending<Executed>, ClientError> {
        let completion = Completion::waiter();
        let pending = completion.pending();
        self.send_batch(mode, completion)?;
        Ok(pending)
    }

    /// Like [`Transaction::execute`], but `callback` receives the result on the
    /// connection's receive thread (keep it short).
    pub fn execute_then(
        &mut self,
        mode: ExecuteMode,
        callback: impl FnOnce(Result<Executed, ClientError>) + Send + 'static,
    ) -> Result<(), ClientError> {
        self.send_batch(mode, Completion::callback(callback))
    }

    fn send_batch(
        &mut self,
        mode: ExecuteMode,
        completion: Completion<Executed>,
    ) -> Result<(), ClientError> {
        if self.finished {
            return Err(ClientError::Usage("the transaction has ended".into()));
        }
        if mode == ExecuteMode::More {
            return Err(ClientError::Usage(
                "a batch ends with NoCommit, Commit or Rollback".into(),
            ));
        }
        if self.bodies.len() > BATCH_BYTES_MAX {
            return Err(self.drop_oversized_batch());
        }
        let client = self.client;
        let tc = match self.coordinator {
            Some(tc) => tc,
            None => {
                let near = client.coordinator_near(self.first_chain.as_ref(), self.client_tx)?;
                *self.coordinator.insert(near)
            }
        };
        self.finished = mode.commits() || mode == ExecuteMode::Rollback;
        let batch = std::mem::take(&mut self.batch);
        let collecting = Collecting {
            coordinator: tc.node(),
            committing: mode.commits(),
            reads_expected: batch.iter().any(|op| op.kind == OperationKind::Read),
            ..Collecting::new(batch.len(), completion)
        };
        let client_tx = self.client_tx;
        client
            .in_flight
            .lock_transactions()
            .insert(client_tx, collecting);
        let mut bodies = std::mem::take(&mut self.bodies);
        let sent = self.send_operations(tc, mode, batch, &bodies);
        bodies.clear();
        self.bodies = bodies;
        match sent {
            Ok(()) => Ok(()),
            // A loss noticed meanwhile has failed the batch through its completion already.
            Err(error) => match client.in_flight.lock_transactions().remove(&client_tx) {
                Some(_) => Err(error),
                None => Ok(()),
            },
        }
    }

    /// Drops a batch over [`BATCH_BYTES_MAX`], so that a rollback (which sends the batch
    /// first) can still be sent, and says why. Out of line: `send_batch` is on every
    /// statement's path, and this code in it cost a point select 130 instructions
    /// (callgrind) through what the compiler then stopped inlining.
    #[cold]
    #[inline(never)]
    fn drop_oversized_batch(&mut self) -> ClientError {
        let operations = std::mem::take(&mut self.batch).len();
        let bytes = self.bodies.len();
        self.bodies.clear();
        ClientError::Usage(format!(
            "a batch of {operations} operations carries {bytes} bytes, more than the \
             {BATCH_BYTES_MAX} one batch may: execute it in smaller batches (see \
             batch_is_full); its operations were dropped"
        ))
    }

    fn send_operations(
        &self,
        tc: BlockAddress,
        mode: ExecuteMode,
        batch: Vec<Operation>,
        bodies: &[u8],
    ) -> Result<(), ClientError> {
        let client = self.client;
        if batch.is_empty() {
            let end = EndBatch {
                client: client.me,
                client_tx: self.client_tx,
                execute: mode,
            };
            return client.send(end.to_signal(tc, client.me), &[]);
        }
        let requests = requests_of(client.me, self.client_tx, batch, bodies);
        let count = requests.len();
        for (position, (mut request, body)) in requests.into_iter().enumerate() {
            if position + 1 == count {
                request.execute = mode;
            }
            client.send(request.to_signal(tc, client.me), body.bytes(bodies))?;
        }
        Ok(())
    }
}

/// The requests that carry a batch's operations, in the order to send them: whole-row
/// writes to one partition share a `KeyBatchBody` (up to its limits), sent once full or
/// before the next operation that cannot join one, so a transaction's operations on any
/// one row still run in the order they were added. Each request's `execute` is `More`.
fn requests_of(
    client: BlockAddress,
    client_tx: u64,
    batch: Vec<Operation>,
    bodies: &[u8],
) -> Vec<(KeyRequest, RequestBody)> {
    let mut requests = Vec::with_capacity(batch.len());
    let mut open: Vec<OpenBatch> = Vec::new();
    for (index, operation) in batch.into_iter().enumerate() {
        let request = KeyRequest {
            client,
            client_tx,
            op_index: index as u32,
            table_id: operation.table.0,
            schema_version: operation.table.1,
            kind: operation.kind,
            lock: operation.lock,
            execute: ExecuteMode::More,
            index_id: operation.index_id,
            flags: operation.flags,
        };
        let Some(partition) = operation.batch_partition else {
            open.drain(..)
                .for_each(|batch| requests.push(batch.request()));
            requests.push((request, RequestBody::One(operation.body)));
            continue;
        };
        let joins = |batch: &OpenBatch| {
            batch.partition == partition && same_but_op_index(&batch.first, &request)
        };
        let position = match open.iter().position(joins) {
            Some(position) if open[position].has_room_for(operation.body.len()) => position,
            Some(full) => {
                requests.push(open.remove(full).request());
                open.push(OpenBatch::new(request, partition));
                open.len() - 1
            }
            None => {
                open.push(OpenBatch::new(request, partition));
                open.len() - 1
            }
        };
        open[position].push(index as u32, operation.body, bodies);
    }
    open.into_iter()
        .for_each(|batch| requests.push(batch.request()));
    requests
}

/// A request's body: one operation's, where it is in the transaction's bodies, or a
/// batch's `KeyBatchBody`.
enum RequestBody {
    One(Range<usize>),
    Batch(Vec<u8>),
}

impl RequestBody {
    fn bytes<'a>(&'a self, bodies: &'a [u8]) -> &'a [u8] {
        match self {
            RequestBody::One(range) => &bodies[range.clone()],
            RequestBody::Batch(bytes) => bytes,
        }
    }
}

/// Whole-row writes to one partition collected into one request.
struct OpenBatch {
    first: KeyRequest,
    partition: u32,
    operations: usize,
    /// The first operation's body, until a second joins.
    first_body: Range<usize>,
    /// A `KeyBatchBody` once a second operation joined.
    bytes: Vec<u8>,
}

impl OpenBatch {
    fn new(first: KeyRequest, partition: u32) -> Self {
        Self {
            first,
            partition,
            operations: 0,
            first_body: 0..0,
            bytes: Vec::new(),
        }
    }

    fn has_room_for(&self, body_bytes: usize) -> bool {
        let bytes = self.first_body.len() + self.bytes.len() + body_bytes;
        self.operations < KEY_BATCH_OPERATIONS_MAX && bytes <= KEY_BATCH_FULL_BYTES
    }

    /// Adds the operation whose body is `body` of `bodies`.
    fn push(&mut self, op_index: u32, body: Range<usize>, bodies: &[u8]) {
        self.operations += 1;
        match self.operations {
            1 => self.first_body = body,
            2 => {
                let first = std::mem::replace(&mut self.first_body, 0..0);
                KeyBatchBody::start(&mut self.bytes);
                KeyBatchBody::push(&mut self.bytes, self.first.op_index, &bodies[first]);
                KeyBatchBody::push(&mut self.bytes, op_index, &bodies[body]);
            }
            _ => KeyBatchBody::push(&mut self.bytes, op_index, &bodies[body]),
        }
    }

    /// A single operation goes as itself; more as a batch.
    fn request(self) -> (KeyRequest, RequestBody) {
        match self.operations {
            1 => (self.first, RequestBody::One(self.first_body)),
            _ => {
                let flags = self.first.flags | KeyRequest::BATCH;
                (
                    KeyRequest {
                        flags,
                        ..self.first
                    },
                    RequestBody::Batch(self.bytes),
                )
            }
        }
    }
}

/// Whether two requests differ at most in their op index (so may share a batch).
fn same_but_op_index(a: &KeyRequest, b: &KeyRequest) -> bool {
    KeyRequest {
        op_index: b.op_index,
        ..*a
    } == *b
}

/// A batch whose answers are coming in: the coordinator's conf and the rows it announces
/// arrive in any order, over any of the client's connections.
pub(crate) struct Collecting {
    /// The node of the batch's coordinator.
    coordinator: NodeId,
    /// Whether the batch commits: losing it leaves the outcome unknown.
    committing: bool,
    /// Whether rows may come, from whichever nodes hold the replicas read.
    reads_expected: bool,
    conf: Option<(ExecuteConf, String)>,
    rows: Vec<Option<Vec<Value>>>,
    rows_received: u32,
    bad_row: Option<CodecError>,
    completion: Completion<Executed>,
}

impl Collecting {
    #[inline]
    fn new(operations: usize, completion: Completion<Executed>) -> Self {
        Self {
            coordinator: NodeId(0),
            committing: false,
            reads_expected: false,
            conf: None,
            rows: vec![None; operations],
            rows_received: 0,
            bad_row: None,
            completion,
        }
    }

    pub fn coordinator(&self) -> NodeId {
        self.coordinator
    }

    pub fn is_committing(&self) -> bool {
        self.committing
    }

    /// Whether rows may still be on their way.
    pub fn awaits_rows(&self) -> bool {
        self.reads_expected && !self.is_complete()
    }

    pub fn conf(&mut self, conf: ExecuteConf, message: String) {
        self.conf = Some((conf, message));
    }

    pub fn row(&mut self, op_index: u32, row: Result<Vec<Value>, CodecError>) {
        self.rows_received += 1;
        match row {
            Ok(values) => {
                if let Some(slot) = self.rows.get_mut(op_index as usize) {
                    *slot = Some(values);
                }
            }
            Err(error) => self.bad_row = Some(error),
        }
    }

    pub fn is_complete(&self) -> bool {
        self.conf
            .as_ref()
            .is_some_and(|(conf, _)| self.rows_received >= conf.reads)
    }

    pub fn finish(self) {
        let Some((conf, message)) = self.conf else {
            return self.fail(ClientError::ConnectionLost("the batch never ended".into()));
        };
        let result = if conf.code != 0 {
            Err(ClientError::node(conf.code, message))
        } else if let Some(error) = self.bad_row {
            Err(ClientError::Usage(format!(
                "the node sent a row this client cannot read: {error}"
            )))
        } else {
            Ok(Executed {
                outcome: conf.outcome,
                gci: conf.gci,
                rows: self.rows,
            })
        };
        self.completion.complete(result);
    }

    pub fn fail(self, error: ClientError) {
        self.completion.complete(Err(error));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An insert of `partition`'s (None: one that joins no batch), its body naming `tag`,
    /// appended to `bodies`.
    fn insert(partition: Option<u32>, tag: u8, body_bytes: usize) -> (Operation, Vec<u8>) {
        let operation = Operation {
            kind: OperationKind::Insert,
            lock: LockKind::Exclusive,
            table: (7, 1),
            index_id: PRIMARY_KEY,
            body: 0..body_bytes,
            flags: 0,
            batch_partition: partition,
        };
        (operation, vec![tag; body_bytes])
    }

    /// Each request as (its op indexes, whether it is a batch).
    fn shape(requests: &[(KeyRequest, Vec<u8>)]) -> Vec<(Vec<u32>, bool)> {
        requests
            .iter()
            .map(|(request, body)| {
                if !request.is_batch() {
                    return (vec![request.op_index], false);
                }
                let mut offset = KeyBatchBody::FIRST_OFFSET;
                let mut indexes = Vec::new();
                while let Some(entry) = KeyBatchBody::entry_at(body, offset) {
                    let entry = entry.unwrap();
                    assert_eq!(entry.body[0], entry.op_index as u8, "its own body");
                    indexes.push(entry.op_index);
                    offset = entry.next_offset;
                }
                assert_eq!(request.op_index, indexes[0], "named by its first");
                (indexes, true)
            })
            .collect()
    }

    /// The requests of `operations`, their bodies laid one after another as a
    /// transaction lays them, each request with its body's bytes.
    fn requests(operations: Vec<(Operation, Vec<u8>)>) -> Vec<(KeyRequest, Vec<u8>)> {
        let mut bodies = Vec::new();
        let batch = (operations.into_iter())
            .map(|(operation, body)| {
                let start = bodies.len();
                bodies.extend_from_slice(&body);
                Operation {
                    body: start..bodies.len(),
                    ..operation
                }
            })
            .collect();
        (requests_of(BlockAddress::default(), 1, batch, &bodies).into_iter())
            .map(|(request, body)| (request, body.bytes(&bodies).to_vec()))
            .collect()
    }

    #[test]
    fn writes_to_one_partition_share_a_batch_sent_before_the_next_other_operation() {
        let operations = vec![
            insert(Some(0), 0, 8),
            insert(Some(1), 1, 8),
            insert(Some(0), 2, 8),
            insert(None, 3, 8),
            insert(Some(0), 4, 8),
            insert(Some(0), 5, 8),
        ];
        let requests = requests(operations);
        assert_eq!(
            shape(&requests),
            [
                (vec![0, 2], true),
                (vec![1], false),
                (vec![3], false),
                (vec![4, 5], true)
            ]
        );
        assert!(requests.iter().all(|(r, _)| r.execute == ExecuteMode::More));
    }

    #[test]
    fn a_batch_is_sent_once_full_of_operations_or_bytes() {
        let many = (0..=KEY_BATCH_OPERATIONS_MAX as u8)
            .map(|tag| insert(Some(3), tag, 8))
            .collect();
        let max = KEY_BATCH_OPERATIONS_MAX as u32;
        assert_eq!(
            shape(&requests(many)),
            [((0..max).collect(), true), (vec![max], false)]
        );
        let big = KEY_BATCH_FULL_BYTES / 2 - 8;
        let wide = (0..4).map(|tag| insert(Some(3), tag, big)).collect();
        assert_eq!(
            shape(&requests(wide)),
            [(vec![0, 1], true), (vec![2, 3], true)]
        );
    }

    #[test]
    fn writes_that_differ_in_kind_table_or_flags_do_not_share_a_batch() {
        let mut upsert = insert(Some(0), 1, 8);
        upsert.0.kind = OperationKind::Write;
        let mut other_table = insert(Some(0), 2, 8);
        other_table.0.table = (8, 1);
        let mut unchecked = insert(Some(0), 3, 8);
        unchecked.0.flags = KeyRequest::NO_FOREIGN_KEY_CHECKS;
        let operations = vec![insert(Some(0), 0, 8), upsert, other_table, unchecked];
        let shapes = shape(&requests(operations));
        assert_eq!(shapes.len(), 4, "{shapes:?}");
        assert!(shapes.iter().all(|(_, batch)| !batch));
    }
}
