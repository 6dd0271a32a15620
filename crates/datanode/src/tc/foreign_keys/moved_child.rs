//! ON UPDATE CASCADE into a child whose referencing columns are part of its primary key
//! (a many-to-many join table's, `PRIMARY KEY (user_id, role_id)`): its new key moves the
//! row, which a partition cannot update in place. The child was read whole; it is deleted
//! under its old key and inserted under its new one in the same transaction, the delete
//! carrying the new row as a client's primary key change does, so the child's own
//! children follow its ON UPDATE rules in turn.

use kista_runtime::Context;

use super::{cascade_write, ChildCheck, OnChild, Removal};
use crate::protocol::*;
use crate::tc::{Role, TransactionCoordinator};

impl TransactionCoordinator {
    /// The columns a candidate child is read with: its referencing ones, or every column
    /// (`true`) when ON UPDATE CASCADE changes one of its primary key's.
    pub(super) fn child_read_columns(&self, search: &super::ChildSearch) -> (Vec<u16>, bool) {
        let Some(table) = self.tables.get(&search.child_table) else {
            return (Vec::new(), false);
        };
        let Some(key) = table.foreign_key(search.watch_id) else {
            return (Vec::new(), false);
        };
        let layout = &table.foreign_keys.layout;
        let in_primary_key = (key.child_columns.iter())
            .any(|&column| layout.primary_key().contains(&usize::from(column)));
        if in_primary_key && matches!(search.on_child, OnChild::SetKey(_)) {
            let every_column = (0..layout.column_count() as u16).collect();
            return (every_column, true);
        }
        (key.child_columns.clone(), false)
    }

    /// Moves a child read whole (`check`) to the parent's new key: operation `op_ref`
    /// becomes its delete, and one more operation its insert.
    pub(super) fn move_child(
        &mut self,
        ctx: &mut Context,
        id: u64,
        op_ref: u32,
        check: ChildCheck,
        child_columns: Vec<u16>,
    ) {
        let (OnChild::SetKey(new_key), Some(mut row)) = (check.on_child, check.values) else {
            return self.operation_done(ctx, id, op_ref);
        };
        for (&column, value) in child_columns.iter().zip(new_key) {
            if let Some(slot) = row.get_mut(usize::from(column)) {
                *slot = value;
            }
        }
        let operations_max = self.settings.operations_per_transaction_max;
        let moved_key = self.tables.get(&check.child_table).and_then(|table| {
            let mut key = Vec::new();
            let layout = &table.foreign_keys.layout;
            layout.primary_key_of_row_values(&row, &mut key).ok()?;
            Some(key)
        });
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let op_index = transaction.operations[op_ref as usize].op_index;
        let Some(moved_key) = moved_key else {
            let message = "a child's row does not fit its table's key".to_string();
            self.fail(id, ErrorCode::BadRequest, op_index, message);
            return self.operation_done(ctx, id, op_ref);
        };
        if transaction.operation_count() + 1 > operations_max {
            let message = format!(
                "a transaction may have {operations_max} operations (counting foreign-key \
                 cascades)"
            );
            self.fail(id, ErrorCode::TooManyLocks, op_index, message);
            return self.operation_done(ctx, id, op_ref);
        }
        // The delete's new row stays here (`moved_to`): the replicas need only its key.
        let (mut delete_body, mut insert_body) = (Vec::new(), Vec::new());
        KeyBody::write(&check.primary_key, &[], &[], &mut delete_body);
        KeyBody::write(&moved_key, &[], &row, &mut insert_body);
        let depth = check.depth + 1;
        let delete = &mut transaction.operations[op_ref as usize];
        delete.role = Role::Cascade;
        delete.foreign_keys = Some(Removal::Update);
        delete.cascade_depth = depth;
        delete.moved_to = Some(Box::new(KeyBody {
            key: Vec::new(),
            columns: (0..row.len() as u16).collect(),
            values: row,
        }));
        let insert_ref = transaction.start_operation(op_index, check.child_table, Role::Cascade);
        let insert = &mut transaction.operations[insert_ref as usize];
        insert.foreign_keys = Some(Removal::Update);
        insert.cascade_depth = depth;
        let table = check.child_table;
        let delete = cascade_write(ctx, table, OperationKind::Delete, op_ref);
        let insert = cascade_write(ctx, table, OperationKind::Insert, insert_ref);
        self.send_internal(ctx, id, op_ref, delete, &delete_body);
        self.send_internal(ctx, id, insert_ref, insert, &insert_body);
    }
}
