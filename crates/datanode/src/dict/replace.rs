//! A table put in the place of another: the switch of a copying ALTER TABLE, which built
//! the new definition as a second table (its *replacement*), filled it, and now gives it
//! the old table's name in one dictionary change.
//!
//! The replacement takes the name first; the replaced table is renamed aside (`<name>/#replaced`)
//! and refuses operations made for its earlier versions (241), so a client that still
//! writes it looks the name up again and finds the replacement. Between the two
//! publications another dictionary's copy holds both under one name for a moment: a
//! lookup answers the newer table (ids only grow), so a name never goes missing and never
//! goes back. The answer waits until the transactions open at the switch have ended; the
//! client then drops the replaced table.

use kista_runtime::Context;

use super::{Dictionary, Reply};
use crate::protocol::*;

/// What the replaced table is renamed to, to be dropped by the client.
fn replaced_name(name: &str) -> String {
    format!("{name}/#replaced")
}

impl Dictionary {
    pub(super) fn replace_table(&mut self, ctx: &mut Context, request: ReplaceTableRequest) {
        let (client, request_id) = (request.client, request.request_id);
        if let Err((code, message)) = self.check_replace(&request) {
            return self.refuse(ctx, client, request_id, code, &message);
        }
        let Some(replaced) = self.client_table(request.table_id) else {
            return;
        };
        let name = replaced.definition.schema.name.clone();
        let aside = replaced_name(&name);
        replaced
            .definition
            .change(|definition| definition.schema.name = aside);
        replaced.version += 1;
        replaced.oldest_version = replaced.version;
        let Some(replacement) = self.client_table(request.replacement_id) else {
            return;
        };
        replacement
            .definition
            .change(|definition| definition.schema.name = name);
        replacement.version += 1;
        let reply = Reply::TableAltered {
            version: replacement.version,
        };
        // The replacement first: every dictionary finds the name throughout.
        self.publish_quietly(ctx, request.replacement_id);
        let change_id = self.publish(ctx, client, request_id, request.table_id, Some(reply), None);
        if let Some(change) = self.changes.get_mut(&change_id) {
            change.drain_after = true;
        }
    }

    /// Why `request` cannot switch its tables: either missing or changed since the client
    /// saw it, or bound to another table by a foreign key (which names tables by id).
    fn check_replace(&self, request: &ReplaceTableRequest) -> Result<(), (ErrorCode, String)> {
        let tables = [
            (request.table_id, request.schema_version),
            (request.replacement_id, request.replacement_version),
        ];
        if request.table_id == request.replacement_id {
            let message = format!("table {} cannot replace itself", request.table_id);
            return Err((ErrorCode::BadRequest, message));
        }
        for (table_id, seen_version) in tables {
            let Some(table) = self.client_table_ref(table_id) else {
                return Err((ErrorCode::NoSuchTable, format!("no table {table_id}")));
            };
            if table.version != seen_version {
                let message = format!(
                    "table {table_id} is at schema version {}, not {seen_version}",
                    table.version
                );
                return Err((ErrorCode::SchemaVersion, message));
            }
            if !table.definition.foreign_keys.is_empty() {
                let message = format!("table {table_id} has foreign keys: it cannot be replaced");
                return Err((ErrorCode::BadSchema, message));
            }
        }
        Ok(())
    }
}
