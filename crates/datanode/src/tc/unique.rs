//! The coordinator's side of unique indexes, whose entries live in index tables: the
//! index-table operations a write reports join its transaction, and a unique read runs in two
//! steps (the entry under a shared lock, then the row by its primary key).

use kista_runtime::Context;
use kista_signal::SectionHandle;
use kista_storage::types::Value;

use super::{Internal, Role, TcTable, TransactionCoordinator};
use crate::protocol::*;
use crate::read::body_error;

pub(super) struct UniqueLookup {
    pub(super) table_id: u32,
    pub(super) schema_version: u32,
    pub(super) lock: LockKind,
    /// The client's projection.
    pub(super) columns: Vec<u16>,
    /// The row's primary key, once the index entry arrived.
    pub(super) primary_key: Option<Vec<u8>>,
    /// Whether the index table's read has answered (and found the entry).
    pub(super) answered: Option<bool>,
}

/// Where a unique index keeps its entries.
pub(super) struct UniqueIndexRoute {
    pub(super) index_id: u32,
    pub(super) name: String,
    /// Columns in the key: the entry's primary-key column follows them.
    pub(super) key_columns: u16,
    pub(super) index_table: u32,
    /// Being built: rows may lack their entries, so nothing reads through it, and a write
    /// that removes an entry not made yet removes nothing.
    pub(super) building: bool,
}

impl TcTable {
    /// Where the table's unique index `index_id` keeps its entries.
    pub(super) fn unique_route(&self, index_id: u32) -> Option<&UniqueIndexRoute> {
        self.unique.iter().find(|route| route.index_id == index_id)
    }
}

impl TransactionCoordinator {
    /// Starts a unique read: the index table's entry first ([`Role::UniqueLookup`]).
    pub(super) fn start_unique_read(
        &mut self,
        ctx: &mut Context,
        id: u64,
        request: &KeyRequest,
        section: SectionHandle,
    ) {
        let bytes = ctx.held_section(section);
        let started = match self.tables.get(&request.table_id) {
            None => Err((
                ErrorCode::NoSuchTable,
                format!("no table {}", request.table_id),
            )),
            Some(table) => unique_lookup_of(table, request, &bytes),
        };
        drop(bytes);
        ctx.release_section(section);
        let (lookup, entry_body, index_table) = match started {
            Ok(started) => started,
            Err((code, message)) => {
                self.fail(id, code, request.op_index, message);
                return self.batch_progress(ctx, id);
            }
        };
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let op_ref = transaction.start_operation(
            request.op_index,
            request.table_id,
            Role::UniqueLookup(Box::new(lookup)),
        );
        let target = Internal {
            table_id: index_table,
            kind: OperationKind::Read,
            lock: LockKind::Shared,
            client: ctx.address(),
            op_index: op_ref,
            schema_version: None,
        };
        self.send_internal(ctx, id, op_ref, target, &entry_body);
    }

    /// A write's last replica reported the index-table operations it needs: they join the
    /// transaction before the write counts as answered, so the batch waits for them.
    pub(super) fn index_upkeep(
        &mut self,
        ctx: &mut Context,
        id: u64,
        op_ref: u32,
        upkeep: Vec<IndexUpkeep>,
    ) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let Some(write) = transaction.operations.get(op_ref as usize) else {
            return;
        };
        let (op_index, table_id) = (write.op_index, write.table_id);
        let routes: Vec<(u32, u32, bool, Vec<u8>)> = upkeep
            .into_iter()
            .filter_map(|entry| {
                let route = self.tables.get(&table_id)?.unique_route(entry.index_id)?;
                Some((entry.index_id, route.index_table, entry.insert, entry.body))
            })
            .collect();
        let here = ctx.address();
        let operations_max = self.settings.operations_per_transaction_max;
        for (index_id, index_table, insert, body) in routes {
            let Some(transaction) = self.transactions.get_mut(&id) else {
                return;
            };
            if transaction.operation_count() >= operations_max {
                // Index upkeep counts against the limit like the client's own operations.
                let message = format!("a transaction may have {operations_max} operations");
                return self.fail(id, ErrorCode::TooManyLocks, op_index, message);
            }
            let upkeep_ref = transaction.start_operation(
                op_index,
                index_table,
                Role::IndexUpkeep { table_id, index_id },
            );
            let target = Internal {
                table_id: index_table,
                kind: if insert {
                    OperationKind::Insert
                } else {
                    OperationKind::Delete
                },
                lock: LockKind::Exclusive,
                client: here,
                op_index: upkeep_ref,
                schema_version: None,
            };
            self.send_internal(ctx, id, upkeep_ref, target, &body);
        }
    }

    /// The index entry of a unique read arrived: its row's primary key.
    pub(super) fn unique_entry(&mut self, ctx: &mut Context, result: ReadResult) {
        let row = ctx.section().map(|bytes| RowBody::decode(&bytes));
        let primary_key = match row {
            Some(Ok(RowBody { mut values })) if values.len() == 1 => match values.pop() {
                Some(Value::Bytes(key)) => key,
                _ => return,
            },
            _ => return,
        };
        let (id, op_ref) = (result.client_tx, result.op_index);
        if let Some(lookup) = self.unique_lookup(id, op_ref) {
            lookup.primary_key = Some(primary_key);
        }
        self.unique_step(ctx, id, op_ref);
    }

    fn unique_lookup(&mut self, id: u64, op_ref: u32) -> Option<&mut UniqueLookup> {
        let operation = self
            .transactions
            .get_mut(&id)?
            .operations
            .get_mut(op_ref as usize)?;
        match &mut operation.role {
            Role::UniqueLookup(lookup) => Some(lookup),
            _ => None,
        }
    }

    /// Reads a unique read's row once the index entry and its answer are both in (they come
    /// as two signals); with no entry, there is no row.
    pub(super) fn unique_step(&mut self, ctx: &mut Context, id: u64, op_ref: u32) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let Some(operation) = transaction.operations.get_mut(op_ref as usize) else {
            return;
        };
        let ready = matches!(
            &operation.role,
            Role::UniqueLookup(lookup) if match lookup.answered {
                Some(found) => !found || lookup.primary_key.is_some(),
                None => false,
            }
        );
        if !ready {
            return;
        }
        let Role::UniqueLookup(lookup) = std::mem::replace(&mut operation.role, Role::Client)
        else {
            return;
        };
        let Some(primary_key) = lookup.primary_key.filter(|_| lookup.answered == Some(true)) else {
            operation.running = false;
            transaction.outstanding -= 1;
            return self.batch_progress(ctx, id);
        };
        let mut body = Vec::new();
        KeyBody::write(&primary_key, &lookup.columns, &[], &mut body);
        let target = Internal {
            table_id: lookup.table_id,
            kind: OperationKind::Read,
            lock: lookup.lock,
            client: transaction.client,
            op_index: operation.op_index,
            schema_version: Some(lookup.schema_version),
        };
        self.send_internal(ctx, id, op_ref, target, &body);
    }
}

/// A unique read's first step from the client's request: what to remember, the index-table
/// read's body (the entry's primary-key column), and the index table.
fn unique_lookup_of(
    table: &TcTable,
    request: &KeyRequest,
    body: &[u8],
) -> Result<(UniqueLookup, Vec<u8>, u32), (ErrorCode, String)> {
    let Some(route) = table.unique_route(request.index_id).filter(|r| !r.building) else {
        // Dropped since the client's definition was made (or never built yet).
        let message = format!(
            "table `{}` has no unique index {} (built)",
            table.name, request.index_id
        );
        return Err((ErrorCode::SchemaVersion, message));
    };
    if request.kind != OperationKind::Read {
        let message = "only reads go through a unique index; write by primary key".to_string();
        return Err((ErrorCode::BadRequest, message));
    }
    let body = KeyBodyRef::parse(body).map_err(body_error)?;
    let mut entry_body = Vec::new();
    KeyBody::write(body.key, &[route.key_columns], &[], &mut entry_body);
    let lookup = UniqueLookup {
        table_id: request.table_id,
        schema_version: request.schema_version,
        lock: request.lock,
        columns: body.columns().collect(),
        primary_key: None,
        answered: None,
    };
    Ok((lookup, entry_body, route.index_table))
}
