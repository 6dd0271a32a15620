//! The coordinator's side of foreign keys (see `protocol/foreign_key.rs`).
//!
//! A write's key events wait until every operation of its batch has answered, so that a
//! batch may insert a parent and its children, or delete children and their parent, in any
//! order (MySQL checks after each row; a batch is what runs at once here). Then:
//!
//! - A *referencing* key a write gave a child row: the parent's key is read under a shared
//!   lock in the same transaction ([`Role::ParentCheck`]); no parent fails the transaction
//!   with 255. The lock keeps the parent until the transaction ends.
//! - A *referenced* key a write took from a parent (a delete, or a change of the key): the
//!   children are looked up in the child table's index by a scan of every partition that
//!   returns each row with an entry for the key in *any* version, committed or being
//!   written ([`Role::ChildSearch`]); each candidate is then read in the transaction
//!   ([`Role::ChildCheck`]: it sees the transaction's own changes and waits for other
//!   writers), and one that still references the key is refused (256), deleted, has its
//!   referencing columns set to NULL, or (ON UPDATE CASCADE) given the parent's new key,
//!   per the foreign key's rule ([`Role::Cascade`]). A write that gives a child the key
//!   afterwards must read the parent, which the removal holds exclusively: no child slips
//!   in between.
//!
//! The parent's new key comes from the partition when an update changed it, and from the
//! row the client sent with the delete half of a primary key's change (`MOVES_KEY`),
//! whose insert half the partition sees as another write.
//!
//! Writes made by cascades report events of their own, handled when they have all
//! answered; a cycle of cascades ends because a row changed once no longer holds the key
//! it is searched by, and a chain of them ends with 4263 past [`CASCADE_DEPTH_MAX`].

use std::sync::Arc;

use kista_runtime::Context;
use kista_signal::BlockAddress;
use kista_storage::partition::{IndexBound, IndexId, ScanRange, ScanVersions, WatchSide};
use kista_storage::row::RowLayout;
use kista_storage::types::Value;

use super::scans::{ScanOwner, ScanSection, ScanShape};
use super::{Internal, Role, TcTable, TransactionCoordinator};
use crate::protocol::*;

mod moved_child;

/// Cascades deep a chain may go: a client's write, then at most this many generations of
/// children deleted or changed by their parents' (MySQL's limit, error 3008).
pub(super) const CASCADE_DEPTH_MAX: u8 = 15;

/// Which rule of a foreign key a referenced key's removal follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Removal {
    /// The row is deleted: ON DELETE.
    Delete,
    /// The row's key changes (an update, or the delete half of a primary-key change):
    /// ON UPDATE.
    Update,
}

impl Removal {
    /// How a client's operation's key events are handled (`None`: not at all).
    pub(super) fn of_request(request: &KeyRequest) -> Option<Self> {
        if request.kind == OperationKind::Read
            || request.flags & KeyRequest::NO_FOREIGN_KEY_CHECKS != 0
        {
            return None;
        }
        let moves_key = request.flags & KeyRequest::MOVES_KEY != 0;
        Some(match request.kind {
            OperationKind::Delete if !moves_key => Removal::Delete,
            _ => Removal::Update,
        })
    }
}

/// A key event waiting for its batch to answer.
pub(super) struct PendingKeyEvent {
    /// The client's operation that caused it.
    op_index: u32,
    /// The table written.
    table_id: u32,
    removal: Removal,
    /// The write's [`super::Operation::cascade_depth`].
    depth: u8,
    event: KeyEvent,
}

/// What a removed parent key does to a child that still references it.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum OnChild {
    /// Fail the transaction (RESTRICT, NO ACTION): 256.
    Refuse,
    /// ON DELETE CASCADE.
    Delete,
    /// SET NULL, on delete or update.
    SetNull,
    /// ON UPDATE CASCADE: the referencing columns take the parent's new key.
    SetKey(Vec<Value>),
}

/// A search for the children of a removed parent key.
pub(super) struct ChildSearch {
    watch_id: u64,
    child_table: u32,
    on_child: OnChild,
    /// The removing write's cascade depth.
    depth: u8,
    key: Vec<u8>,
    /// The primary keys of the rows found.
    candidates: Vec<Vec<u8>>,
}

/// A candidate child, read again in the transaction.
pub(super) struct ChildCheck {
    watch_id: u64,
    child_table: u32,
    on_child: OnChild,
    depth: u8,
    key: Vec<u8>,
    primary_key: Vec<u8>,
    /// Read whole: ON UPDATE CASCADE changes a column of its primary key, so the child
    /// moves (`moved_child.rs`).
    whole_row: bool,
    /// Its referencing columns (every column, read whole), once its row arrived.
    values: Option<Vec<Value>>,
    /// Whether the read has answered (and found the row).
    answered: Option<bool>,
}

/// What a coordinator knows of a table's foreign keys.
pub(super) struct TcForeignKeys {
    pub(super) keys: Vec<ForeignKey>,
    /// For encoding the keys of rows a search finds.
    pub(super) layout: Arc<RowLayout>,
}

impl TcTable {
    fn foreign_key(&self, watch_id: u64) -> Option<&ForeignKey> {
        (self.foreign_keys.keys.iter()).find(|key| key.watch_id() == watch_id)
    }
}

/// An operation to start for a key event: its role, what to send, and its body.
type Started = (Role, Internal, Vec<u8>);

impl TransactionCoordinator {
    /// A write's last replica reported key events: they wait for the batch (see the
    /// module's comment), unless the write's foreign keys go unchecked.
    pub(super) fn note_key_events(&mut self, id: u64, op_ref: u32, events: Vec<KeyEvent>) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let Some(write) = transaction.operations.get(op_ref as usize) else {
            return;
        };
        let Some(removal) = write.foreign_keys else {
            return;
        };
        let (op_index, table_id, depth) = (write.op_index, write.table_id, write.cascade_depth);
        let table = self.tables.get(&table_id);
        for mut event in events {
            if let (Some(moved_to), Some(table)) = (&write.moved_to, table) {
                event.new_values = event.new_values.or_else(|| {
                    let key = table.foreign_key(event.watch_id)?;
                    new_key_of_moved(key, moved_to)
                });
            }
            transaction.key_events.push(PendingKeyEvent {
                op_index,
                table_id,
                removal,
                depth,
                event,
            });
        }
    }

    /// Starts the operations the waiting key events call for; false when there were none
    /// to start (the batch may end).
    pub(super) fn run_key_events(&mut self, ctx: &mut Context, id: u64) -> bool {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return false;
        };
        let events = std::mem::take(&mut transaction.key_events);
        let mut started: Vec<(u32, Started)> = Vec::new();
        for pending in events {
            let table = self.tables.get(&pending.table_id);
            let Some(key) = table.and_then(|table| table.foreign_key(pending.event.watch_id))
            else {
                continue; // dropped since the write
            };
            let operation = match pending.event.side {
                WatchSide::Referencing => self.parent_check(key, &pending.event),
                WatchSide::Referenced if kept_key(&pending.event) => None,
                WatchSide::Referenced => match on_child(key, &pending) {
                    Some(on_child) => Some(self.child_search(key, &pending, on_child)),
                    None => {
                        let message = format!(
                            "foreign key `{}` cascades a primary key's change whose new key \
                             the request did not carry",
                            key.name
                        );
                        self.fail(id, ErrorCode::BadRequest, pending.op_index, message);
                        None
                    }
                },
            };
            if let Some(operation) = operation {
                started.push((pending.op_index, operation));
            }
        }
        if started.is_empty() {
            return false;
        }
        self.start_key_operations(ctx, id, started);
        true
    }

    /// Records every operation before sending any, so that one answered at once does not
    /// end the batch while others are still to be sent.
    fn start_key_operations(&mut self, ctx: &mut Context, id: u64, started: Vec<(u32, Started)>) {
        let operations_max = self.settings.operations_per_transaction_max;
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        if transaction.operation_count() + started.len() > operations_max {
            let message = format!(
                "a transaction may have {operations_max} operations (counting foreign-key checks)"
            );
            let op_index = started[0].0;
            self.fail(id, ErrorCode::TooManyLocks, op_index, message);
            return;
        }
        let mut sends = Vec::with_capacity(started.len());
        for (op_index, (role, mut target, body)) in started {
            // A search for children scans the child table (the target's) instead.
            let scans = matches!(role, Role::ChildSearch(_));
            let op_ref = transaction.start_operation(op_index, target.table_id, role);
            target.client = ctx.address();
            target.op_index = op_ref;
            sends.push((op_ref, scans, target, body));
        }
        for (op_ref, scans, target, body) in sends {
            if scans {
                self.start_child_scan(ctx, id, op_ref, target.table_id, &body);
            } else {
                self.send_internal(ctx, id, op_ref, target, &body);
            }
        }
    }

    /// A read of the parent key a child row now references (its row or its unique index's
    /// entry), under a shared lock.
    fn parent_check(&self, key: &ForeignKey, event: &KeyEvent) -> Option<Started> {
        let (table_id, column) = if key.parent_index == PRIMARY_KEY {
            (key.parent_table, *key.parent_columns.first()?)
        } else {
            let parent = self.tables.get(&key.parent_table)?;
            let route = parent.unique_route(key.parent_index)?;
            (route.index_table, route.key_columns)
        };
        let mut body = Vec::new();
        KeyBody::write(&event.key, &[column], &[], &mut body);
        let role = Role::ParentCheck {
            watch_id: key.watch_id(),
        };
        Some((role, self.internal_read(table_id, LockKind::Shared), body))
    }

    /// A search of the child table's index for rows referencing a removed parent key; the
    /// body is the scan's.
    fn child_search(
        &self,
        key: &ForeignKey,
        pending: &PendingKeyEvent,
        on_child: OnChild,
    ) -> Started {
        let bound = IndexBound {
            values: pending.event.values.clone(),
            inclusive: true,
        };
        let primary_key_columns = (self.tables.get(&key.child_table))
            .map(|table| table.foreign_keys.layout.primary_key())
            .unwrap_or_default()
            .iter()
            .map(|&column| column as u16)
            .collect();
        let scan = ScanBody {
            range: ScanRange::Index {
                index: IndexId(key.child_index),
                lower: Some(bound.clone()),
                upper: Some(bound),
                descending: false,
            },
            filter: None,
            columns: primary_key_columns,
            versions: ScanVersions::AnyVersion,
        };
        let mut body = Vec::new();
        scan.encode(&mut body);
        let role = Role::ChildSearch(Box::new(ChildSearch {
            watch_id: key.watch_id(),
            child_table: key.child_table,
            on_child,
            depth: pending.depth,
            key: pending.event.key.clone(),
            candidates: Vec::new(),
        }));
        (
            role,
            self.internal_read(key.child_table, LockKind::Committed),
            body,
        )
    }

    /// A read whose row comes back here (client and op_index are set when it starts).
    fn internal_read(&self, table_id: u32, lock: LockKind) -> Internal {
        Internal {
            table_id,
            kind: OperationKind::Read,
            lock,
            client: BlockAddress::from_word(0),
            op_index: 0,
            schema_version: None,
        }
    }

    fn start_child_scan(
        &mut self,
        ctx: &mut Context,
        id: u64,
        op_ref: u32,
        child_table: u32,
        body: &[u8],
    ) {
        let failure = if self.scans.len() >= self.settings.scans_per_tc_max {
            let message = format!(
                "the coordinator has {} open scans, its limit (a foreign key's search for \
                 children is one)",
                self.scans.len()
            );
            Some((ErrorCode::TooManyScans, message))
        } else if let Some(table) = self.tables.get(&child_table) {
            let shape = ScanShape {
                table_id: child_table,
                schema_version: table.schema_version,
                limit: u64::MAX,
                batch_rows: 0,
                ordered: false,
            };
            let owner = ScanOwner::ChildSearch {
                transaction: id,
                op_ref,
            };
            match self.open_scan(ctx, owner, shape, ScanSection::Bytes(body)) {
                Some(_) => None,
                None => Some((ErrorCode::BadRequest, "a search for no rows".to_string())),
            }
        } else {
            Some((ErrorCode::NoSuchTable, format!("no table {child_table}")))
        };
        if let Some(failure) = failure {
            self.children_searched(ctx, id, op_ref, Some(failure));
        }
    }

    /// Rows a search for children found: their primary keys.
    pub(super) fn children_found(&mut self, id: u64, op_ref: u32, rows: Vec<Vec<Value>>) {
        let operations_max = self.settings.operations_per_transaction_max;
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let Some(operation) = transaction.operations.get_mut(op_ref as usize) else {
            return;
        };
        let Role::ChildSearch(search) = &mut operation.role else {
            return;
        };
        let Some(table) = self.tables.get(&search.child_table) else {
            return;
        };
        for row in rows {
            let mut primary_key = Vec::new();
            if table
                .foreign_keys
                .layout
                .primary_key_of_values(&row, &mut primary_key)
                .is_ok()
            {
                search.candidates.push(primary_key);
            }
        }
        // Each candidate becomes an operation: refuse early what cannot fit.
        if search.candidates.len() > operations_max {
            search.candidates.truncate(operations_max + 1);
        }
    }

    /// A search for children ended: each candidate is read again in the transaction.
    pub(super) fn children_searched(
        &mut self,
        ctx: &mut Context,
        id: u64,
        op_ref: u32,
        failure: Option<(ErrorCode, String)>,
    ) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let Some(operation) = transaction.operations.get_mut(op_ref as usize) else {
            return;
        };
        let Role::ChildSearch(search) = std::mem::replace(&mut operation.role, Role::Client) else {
            return;
        };
        let op_index = operation.op_index;
        let mut started = Vec::new();
        if let Some((code, message)) = failure {
            self.fail(id, code, op_index, message);
        } else {
            let (read_columns, whole_row) = self.child_read_columns(&search);
            let lock = match search.on_child {
                OnChild::Refuse => LockKind::Shared,
                OnChild::Delete | OnChild::SetNull | OnChild::SetKey(_) => LockKind::Exclusive,
            };
            for primary_key in search.candidates {
                let mut body = Vec::new();
                KeyBody::write(&primary_key, &read_columns, &[], &mut body);
                let check = ChildCheck {
                    watch_id: search.watch_id,
                    child_table: search.child_table,
                    on_child: search.on_child.clone(),
                    depth: search.depth,
                    key: search.key.clone(),
                    primary_key,
                    whole_row,
                    values: None,
                    answered: None,
                };
                let read = self.internal_read(search.child_table, lock);
                started.push((op_index, (Role::ChildCheck(Box::new(check)), read, body)));
            }
        }
        if !started.is_empty() {
            self.start_key_operations(ctx, id, started);
        }
        self.operation_done(ctx, id, op_ref);
    }

    /// The row of a candidate child arrived: its referencing columns.
    pub(super) fn child_row(&mut self, ctx: &mut Context, id: u64, op_ref: u32) {
        let row = ctx.section().map(|bytes| RowBody::decode(&bytes));
        if let Some(check) = self.child_check(id, op_ref) {
            if let Some(Ok(row)) = row {
                check.values = Some(row.values);
            }
        }
        self.child_check_step(ctx, id, op_ref);
    }

    /// A candidate child's read answered.
    pub(super) fn child_read_answered(
        &mut self,
        ctx: &mut Context,
        id: u64,
        op_ref: u32,
        rows: u32,
    ) {
        if let Some(check) = self.child_check(id, op_ref) {
            check.answered = Some(rows > 0);
        }
        self.child_check_step(ctx, id, op_ref);
    }

    fn child_check(&mut self, id: u64, op_ref: u32) -> Option<&mut ChildCheck> {
        let transaction = self.transactions.get_mut(&id)?;
        match &mut transaction.operations.get_mut(op_ref as usize)?.role {
            Role::ChildCheck(check) => Some(check),
            _ => None,
        }
    }

    /// Once a candidate's row and answer are both in (two signals): a child that still
    /// references the key is refused, deleted, set to NULL or given the new key.
    fn child_check_step(&mut self, ctx: &mut Context, id: u64, op_ref: u32) {
        let ready = self
            .child_check(id, op_ref)
            .is_some_and(|check| match check.answered {
                Some(found) => !found || check.values.is_some(),
                None => false,
            });
        if !ready {
            return;
        }
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let operation = &mut transaction.operations[op_ref as usize];
        let Role::ChildCheck(check) = std::mem::replace(&mut operation.role, Role::Client) else {
            return;
        };
        let op_index = operation.op_index;
        let Some((child_columns, refusal)) = self.still_references(&check) else {
            return self.operation_done(ctx, id, op_ref);
        };
        if check.on_child != OnChild::Refuse && check.depth >= CASCADE_DEPTH_MAX {
            let message = format!(
                "foreign key cascades went deeper than {CASCADE_DEPTH_MAX} tables ({refusal})"
            );
            self.fail(id, ErrorCode::CascadeTooDeep, op_index, message);
            return self.operation_done(ctx, id, op_ref);
        }
        if check.whole_row && matches!(check.on_child, OnChild::SetKey(_)) {
            return self.move_child(ctx, id, op_ref, *check, child_columns);
        }
        let (kind, removal, columns, values) = match check.on_child {
            OnChild::Refuse => {
                self.fail(id, ErrorCode::RowReferenced, op_index, refusal);
                return self.operation_done(ctx, id, op_ref);
            }
            OnChild::Delete => (OperationKind::Delete, Removal::Delete, vec![], vec![]),
            OnChild::SetNull => {
                let nulls = vec![Value::Null; child_columns.len()];
                (OperationKind::Update, Removal::Update, child_columns, nulls)
            }
            OnChild::SetKey(values) => (
                OperationKind::Update,
                Removal::Update,
                child_columns,
                values,
            ),
        };
        let mut body = Vec::new();
        KeyBody::write(&check.primary_key, &columns, &values, &mut body);
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let operation = &mut transaction.operations[op_ref as usize];
        operation.role = Role::Cascade;
        operation.foreign_keys = Some(removal);
        operation.cascade_depth = check.depth + 1;
        let target = cascade_write(ctx, check.child_table, kind, op_ref);
        self.send_internal(ctx, id, op_ref, target, &body);
    }

    /// Whether a candidate child read in the transaction still references the removed key:
    /// then its referencing columns, and the refusal to give under RESTRICT.
    fn still_references(&self, check: &ChildCheck) -> Option<(Vec<u16>, String)> {
        let table = self.tables.get(&check.child_table)?;
        let key = table.foreign_key(check.watch_id)?;
        let columns: Vec<usize> = key.child_columns.iter().map(|&c| usize::from(c)).collect();
        let values = check.values.as_ref()?;
        let referencing: Vec<Value>;
        let values = if check.whole_row {
            referencing = (columns.iter())
                .map(|&c| values.get(c).cloned())
                .collect::<Option<_>>()?;
            &referencing
        } else {
            values
        };
        let mut child_key = Vec::new();
        (table.foreign_keys.layout)
            .key_of_values(&columns, values, &mut child_key)
            .ok()?;
        if child_key != check.key {
            return None;
        }
        let refusal = format!(
            "foreign key `{}`: a row of table `{}` references the key",
            key.name, table.name
        );
        Some((key.child_columns.clone(), refusal))
    }

    /// A parent check found no parent: the transaction fails with 255.
    pub(super) fn parent_missing(&self, watch_id: u64, table_id: u32) -> String {
        let names = (self.tables.get(&table_id)).and_then(|table| {
            let key = (self.tables.values()).find_map(|table| table.foreign_key(watch_id))?;
            Some((key.name.clone(), table.name.clone()))
        });
        let (key, parent) = names.unwrap_or_else(|| ("?".into(), "?".into()));
        format!("foreign key `{key}`: no row of table `{parent}` has the key")
    }

    /// An operation this module made is over (it answered, or needs nothing more).
    pub(super) fn operation_done(&mut self, ctx: &mut Context, id: u64, op_ref: u32) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let Some(operation) = transaction.operations.get_mut(op_ref as usize) else {
            return;
        };
        if operation.running {
            operation.running = false;
            transaction.outstanding -= 1;
        }
        self.batch_progress(ctx, id);
    }
}

/// What a removed parent key does to the children that still reference it, by the
/// foreign key's rule for the removal; `None` when ON UPDATE CASCADE lacks the new key.
fn on_child(key: &ForeignKey, pending: &PendingKeyEvent) -> Option<OnChild> {
    let action = match pending.removal {
        Removal::Delete => key.on_delete,
        Removal::Update => key.on_update,
    };
    Some(match (action, pending.removal) {
        (ReferenceAction::Restrict | ReferenceAction::NoAction, _) => OnChild::Refuse,
        (ReferenceAction::SetNull, _) => OnChild::SetNull,
        (ReferenceAction::Cascade, Removal::Delete) => OnChild::Delete,
        (ReferenceAction::Cascade, Removal::Update) => {
            OnChild::SetKey(pending.event.new_values.clone()?)
        }
    })
}

/// Whether a referenced key reported taken is back with the same values: a change of the
/// row's primary key that kept its unique key, which no child needs to hear of.
fn kept_key(event: &KeyEvent) -> bool {
    event.new_values.as_ref() == Some(&event.values)
}

/// The parent key `key` references, in the row a primary key's change moves the parent
/// to (its columns and values as the client sent them with the delete half).
fn new_key_of_moved(key: &ForeignKey, moved_to: &KeyBody) -> Option<Vec<Value>> {
    (key.parent_columns.iter())
        .map(|column| {
            let position = moved_to.columns.iter().position(|c| c == column)?;
            moved_to.values.get(position).cloned()
        })
        .collect()
}

/// A write a foreign key's action makes on a child (operation `op_ref`), answered here.
fn cascade_write(ctx: &Context, table_id: u32, kind: OperationKind, op_ref: u32) -> Internal {
    Internal {
        table_id,
        kind,
        lock: LockKind::Exclusive,
        client: ctx.address(),
        op_index: op_ref,
        schema_version: None,
    }
}
