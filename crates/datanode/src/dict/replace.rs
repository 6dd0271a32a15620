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
//!
//! The replaced table's foreign keys, on either side, move to the replacement in the same
//! change: each re-pointed through the request's column sources (which old column each new
//! one holds), the child index and the parent key found again in the replacement, and
//! checked as a new key is. The other table of each key is published with it between the
//! two: until then it, and the replaced table, enforce the key as before (the copy mirrored
//! every write, so the replacement's rows are the replaced one's).

use kista_runtime::Context;
use kista_storage::schema::IndexKind;

use super::foreign_keys::check_key_shape;
use super::{DictTable, Dictionary, Reply};
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
        let section = ctx.section().map(|bytes| bytes.to_vec());
        let moved = match self.moved_keys(&request, section.as_deref()) {
            Ok(moved) => moved,
            Err(message) => {
                return self.refuse(ctx, client, request_id, ErrorCode::BadSchema, &message)
            }
        };
        let Some(replaced) = self.client_table(request.table_id) else {
            return;
        };
        let name = replaced.definition.schema.name.clone();
        let aside = replaced_name(&name);
        replaced.definition.change(|definition| {
            definition.schema.name = aside;
            definition.foreign_keys.clear();
        });
        replaced.version += 1;
        replaced.oldest_version = replaced.version;
        let Some(replacement) = self.client_table(request.replacement_id) else {
            return;
        };
        let moved_to: Vec<ForeignKey> = moved.iter().map(|(_, new)| new.clone()).collect();
        replacement.definition.change(|definition| {
            definition.schema.name = name;
            definition.foreign_keys = moved_to;
        });
        replacement.version += 1;
        let reply = Reply::TableAltered {
            version: replacement.version,
        };
        // The replacement first: every dictionary finds the name throughout.
        self.publish_quietly(ctx, request.replacement_id);
        self.repoint_others(ctx, request.table_id, &moved);
        let change_id = self.publish(ctx, client, request_id, request.table_id, Some(reply), None);
        if let Some(change) = self.changes.get_mut(&change_id) {
            change.drain_after = true;
        }
    }

    /// Why `request` cannot switch its tables: either missing or changed since the client
    /// saw it, or the replacement already bound by a foreign key.
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
        }
        if let Some(replacement) = self.client_table_ref(request.replacement_id) {
            if !replacement.definition.foreign_keys.is_empty() {
                let message = format!(
                    "table {} has foreign keys of its own: it cannot replace another",
                    request.replacement_id
                );
                return Err((ErrorCode::BadSchema, message));
            }
        }
        Ok(())
    }

    /// The replaced table's foreign keys, each as it is and as it will be, moved to the
    /// replacement (see the module's comment); why they cannot move.
    fn moved_keys(
        &self,
        request: &ReplaceTableRequest,
        section: Option<&[u8]>,
    ) -> Result<Vec<(ForeignKey, ForeignKey)>, String> {
        let (old_id, new_id) = (request.table_id, request.replacement_id);
        let (Some(replaced), Some(replacement)) =
            (self.client_table_ref(old_id), self.client_table_ref(new_id))
        else {
            return Err("a table of the switch is gone".into());
        };
        let keys = &replaced.definition.foreign_keys;
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let columns = replacement.definition.schema.columns.len();
        let sources =
            section.ok_or("the switch of a table with foreign keys needs its column sources")?;
        let sources = ColumnSourcesBody::decode(sources, columns)?;
        let mut number = replacement.definition.next_number(new_id);
        let mut moved = Vec::with_capacity(keys.len());
        for key in keys {
            let new = moved_key(
                key,
                (replaced, replacement),
                (old_id, new_id),
                &sources,
                &mut number,
            )?;
            let table = |id: u32| {
                if id == new_id {
                    Some(replacement)
                } else {
                    self.client_table_ref(id)
                }
            };
            let (Some(child), Some(parent)) = (table(new.child_table), table(new.parent_table))
            else {
                return Err(format!("a table of foreign key `{}` is gone", key.name));
            };
            check_key_shape(child, parent, &new)?;
            moved.push((key.clone(), new));
        }
        Ok(moved)
    }
}

/// `key` of the replaced table (`old_id`) re-pointed to the replacement (`new_id`): its
/// columns there by `sources`, its child index and parent key found again; a key the
/// replacement holds as the child takes the next of its numbers (`number`).
fn moved_key(
    key: &ForeignKey,
    (replaced, replacement): (&DictTable, &DictTable),
    (old_id, new_id): (u32, u32),
    sources: &[Option<u16>],
    number: &mut u32,
) -> Result<ForeignKey, String> {
    let map = |columns: &[u16]| -> Result<Vec<u16>, String> {
        (columns.iter())
            .map(|&old| {
                let found = sources.iter().position(|&source| source == Some(old));
                found.map(|new| new as u16).ok_or_else(|| {
                    format!(
                        "a column of foreign key `{}` is not in the new table",
                        key.name
                    )
                })
            })
            .collect()
    };
    let missing = |what: &str| format!("foreign key `{}` has no {what} in the new table", key.name);
    let mut new = key.clone();
    if key.child_table == old_id {
        new.child_table = new_id;
        new.child_columns = map(&key.child_columns)?;
        let (index, columns) = (key.child_index, &new.child_columns);
        new.child_index = index_again(replaced, replacement, index, columns, IndexKind::Ordered)
            .ok_or_else(|| missing("index"))?;
        new.number = *number;
        *number += 1;
    }
    if key.parent_table == old_id {
        new.parent_table = new_id;
        new.parent_columns = map(&key.parent_columns)?;
        if key.parent_index != PRIMARY_KEY {
            let (index, columns) = (key.parent_index, &new.parent_columns);
            new.parent_index =
                index_again(replaced, replacement, index, columns, IndexKind::Unique)
                    .ok_or_else(|| missing("parent key"))?;
        }
    }
    Ok(new)
}

/// The replacement's index standing for the replaced table's index `index_id`: the one of
/// `kind` with its name (the copy keeps names), else any of `kind` on `columns`
/// (beginning with them, for an ordered index).
fn index_again(
    replaced: &DictTable,
    replacement: &DictTable,
    index_id: u32,
    columns: &[u16],
    kind: IndexKind,
) -> Option<u32> {
    let columns: Vec<usize> = columns.iter().map(|&c| usize::from(c)).collect();
    let fits = |index: &kista_storage::schema::IndexSchema| {
        index.kind == kind
            && match kind {
                IndexKind::Ordered => index.columns.starts_with(&columns),
                _ => index.columns == columns,
            }
    };
    let name = (replaced.definition.indexes.iter())
        .find(|(id, _)| *id == index_id)
        .map(|(_, index)| index.name.as_str());
    let indexes = &replacement.definition.indexes;
    let named = indexes
        .iter()
        .find(|(_, index)| Some(index.name.as_str()) == name && fits(index));
    named
        .or_else(|| indexes.iter().find(|(_, index)| fits(index)))
        .map(|(id, _)| *id)
}
