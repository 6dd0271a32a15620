//! Adding and dropping foreign keys. A foreign key lives in the definitions of both its
//! tables (the child's writes report new references, the parent's removed keys), so a
//! change publishes both; the parent's goes first, and the client hears once the child's
//! is applied everywhere and every coordinator saw the transactions open until then end
//! (their writes were not checked: a client adding a foreign key to a table with rows
//! checks the rows there are after the answer).

use kista_runtime::Context;
use kista_storage::codec::Reader;
use kista_storage::schema::{Column, IndexKind, TableSchema};

use super::{DictTable, Dictionary, Reply};
use crate::protocol::*;

fn column(schema: &TableSchema, number: u16) -> Result<&Column, String> {
    let found = schema.columns.get(usize::from(number));
    found.ok_or_else(|| format!("table `{}` has no column {number}", schema.name))
}

/// Why a request cannot add `key` to `child`, referencing `parent`: its shape, then its
/// name and the tables' limits.
fn check_foreign_key(
    child: &DictTable,
    parent: &DictTable,
    key: &ForeignKey,
) -> Result<(), String> {
    check_key_shape(child, parent, key)?;
    let taken = (child.definition.foreign_keys.iter()).any(|other| {
        other.child_table == key.child_table && other.name.eq_ignore_ascii_case(&key.name)
    });
    if taken {
        return Err(format!("foreign key `{}` exists already", key.name));
    }
    for table in [child, parent] {
        if table.definition.foreign_keys.len() >= FOREIGN_KEYS_PER_TABLE_MAX {
            return Err(format!(
                "table `{}` takes part in {FOREIGN_KEYS_PER_TABLE_MAX} foreign keys, the limit",
                table.definition.schema.name
            ));
        }
    }
    Ok(())
}

/// Why `key` cannot bind `child`'s columns to `parent`'s key: columns missing or of
/// another key form, SET NULL on a NOT NULL column, no parent key or child index.
pub(super) fn check_key_shape(
    child: &DictTable,
    parent: &DictTable,
    key: &ForeignKey,
) -> Result<(), String> {
    let (child_schema, parent_schema) = (&child.definition.schema, &parent.definition.schema);
    let count = key.child_columns.len();
    if count == 0 || count != key.parent_columns.len() {
        return Err("a foreign key has as many referencing columns as referenced ones".into());
    }
    for (&child_column, &parent_column) in key.child_columns.iter().zip(&key.parent_columns) {
        let (child_column, parent_column) = (
            column(child_schema, child_column)?,
            column(parent_schema, parent_column)?,
        );
        if !same_key_form(child_column.column_type, parent_column.column_type) {
            return Err(format!(
                "column `{}` and referenced column `{}` of foreign key `{}` are incompatible",
                child_column.name, parent_column.name, key.name
            ));
        }
        let sets_null = [key.on_delete, key.on_update].contains(&ReferenceAction::SetNull);
        if sets_null && !child_column.nullable {
            return Err(format!(
                "column `{}` cannot be NOT NULL: needed in foreign key `{}` SET NULL",
                child_column.name, key.name
            ));
        }
    }
    check_parent_key(parent, key)?;
    check_child_index(child, key)
}

/// The referenced columns are the parent's primary key or one of its built unique indexes,
/// in order.
fn check_parent_key(parent: &DictTable, key: &ForeignKey) -> Result<(), String> {
    let schema = &parent.definition.schema;
    let columns: Vec<usize> = key.parent_columns.iter().map(|&c| usize::from(c)).collect();
    let keyed = if key.parent_index == PRIMARY_KEY {
        schema.primary_key == columns
    } else {
        (parent.definition.indexes.iter()).any(|(id, index)| {
            *id == key.parent_index
                && index.kind == IndexKind::Unique
                && index.columns == columns
                && !parent.definition.is_building(*id)
        })
    };
    if keyed {
        Ok(())
    } else {
        Err(format!(
            "foreign key `{}`: the referenced columns of table `{}` are not its primary key or \
             a unique index on them",
            key.name, schema.name
        ))
    }
}

/// The child's index begins with the referencing columns: how a parent finds its children.
fn check_child_index(child: &DictTable, key: &ForeignKey) -> Result<(), String> {
    let columns: Vec<usize> = key.child_columns.iter().map(|&c| usize::from(c)).collect();
    let indexed = (child.definition.indexes.iter()).any(|(id, index)| {
        *id == key.child_index
            && index.kind == IndexKind::Ordered
            && index.columns.starts_with(&columns)
    });
    if indexed {
        Ok(())
    } else {
        Err(format!(
            "foreign key `{}`: index {} of table `{}` is not an ordered index beginning with \
             the referencing columns",
            key.name, key.child_index, child.definition.schema.name
        ))
    }
}

impl Dictionary {
    pub(super) fn add_foreign_key(&mut self, ctx: &mut Context, request: ForeignKeyRequest) {
        let (client, request_id) = (request.client, request.request_id);
        let key = ctx.section().map(|bytes| {
            let mut input = Reader::new(&bytes);
            ForeignKey::decode(&mut input).and_then(|key| input.finish().map(|()| key))
        });
        let mut key = match key {
            Some(Ok(key)) => key,
            Some(Err(error)) => {
                let message = format!("foreign key definition: {error}");
                return self.refuse(ctx, client, request_id, ErrorCode::BadRequest, &message);
            }
            None => {
                let message = "foreign key definition missing";
                return self.refuse(ctx, client, request_id, ErrorCode::BadRequest, message);
            }
        };
        key.child_table = request.table_id;
        let checked = match (
            self.client_table_ref(request.table_id),
            self.client_table_ref(key.parent_table),
        ) {
            (None, _) => return self.no_such_table(ctx, client, request_id, request.table_id),
            (_, None) => return self.no_such_table(ctx, client, request_id, key.parent_table),
            (Some(child), _) if child.version != request.schema_version => {
                let message = format!(
                    "table {} is at schema version {}, not {}",
                    request.table_id, child.version, request.schema_version
                );
                Err((ErrorCode::SchemaVersion, message))
            }
            (Some(child), Some(parent)) => check_foreign_key(child, parent, &key)
                .map_err(|message| (ErrorCode::BadSchema, message)),
        };
        if let Err((code, message)) = checked {
            return self.refuse(ctx, client, request_id, code, &message);
        }
        let Some(child) = self.tables.get_mut(&request.table_id) else {
            return;
        };
        key.number = child.next_index_id;
        child.next_index_id += 1;
        self.change_foreign_keys(ctx, (client, request_id), &key, |keys| {
            keys.push(key.clone())
        });
    }

    pub(super) fn drop_foreign_key(&mut self, ctx: &mut Context, request: DropForeignKeyRequest) {
        let (client, request_id) = (request.client, request.request_id);
        let Some(child) = self.client_table_ref(request.table_id) else {
            return self.no_such_table(ctx, client, request_id, request.table_id);
        };
        let found = (child.definition.foreign_keys.iter())
            .find(|key| key.child_table == request.table_id && key.number == request.number)
            .cloned();
        let Some(key) = found else {
            let message = format!(
                "table {} has no foreign key {}",
                request.table_id, request.number
            );
            return self.refuse(ctx, client, request_id, ErrorCode::BadSchema, &message);
        };
        let watch_id = key.watch_id();
        self.change_foreign_keys(ctx, (client, request_id), &key, |keys| {
            keys.retain(|other| other.watch_id() != watch_id)
        });
    }

    /// Changes the foreign keys of both of `key`'s tables and publishes them, the parent's
    /// first; the client hears once the child's definition is applied and the
    /// coordinators drained.
    fn change_foreign_keys(
        &mut self,
        ctx: &mut Context,
        (client, request_id): (kista_signal::BlockAddress, u64),
        key: &ForeignKey,
        change: impl Fn(&mut Vec<ForeignKey>),
    ) {
        if key.parent_table != key.child_table {
            if let Some(parent) = self.tables.get_mut(&key.parent_table) {
                parent
                    .definition
                    .change(|body| change(&mut body.foreign_keys));
                parent.version += 1;
                self.publish_quietly(ctx, key.parent_table);
            }
        }
        let Some(child) = self.tables.get_mut(&key.child_table) else {
            return;
        };
        child
            .definition
            .change(|body| change(&mut body.foreign_keys));
        child.version += 1;
        let reply = Reply::TableAltered {
            version: child.version,
        };
        let change_id = self.publish(ctx, client, request_id, key.child_table, Some(reply), None);
        if let Some(change) = self.changes.get_mut(&change_id) {
            change.drain_after = true;
        }
    }

    /// Takes the foreign keys of table `table_id`, being dropped, out of the other tables
    /// they name, publishing those.
    pub(super) fn forget_foreign_keys_of(&mut self, ctx: &mut Context, table_id: u32) {
        let Some(table) = self.tables.get(&table_id) else {
            return;
        };
        let mut others: Vec<u32> = (table.definition.foreign_keys.iter())
            .flat_map(|key| [key.child_table, key.parent_table])
            .filter(|&other| other != table_id)
            .collect();
        others.sort_unstable();
        others.dedup();
        for other in others {
            if let Some(other_table) = self.tables.get_mut(&other) {
                other_table.definition.change(|body| {
                    (body.foreign_keys)
                        .retain(|key| key.child_table != table_id && key.parent_table != table_id)
                });
                other_table.version += 1;
                self.publish_quietly(ctx, other);
            }
        }
    }

    /// Why table `table_id` cannot be dropped: another table's foreign key references it.
    pub(super) fn referenced_by_other(&self, table_id: u32) -> Option<String> {
        let table = self.tables.get(&table_id)?;
        let key = (table.definition.foreign_keys.iter())
            .find(|key| key.parent_table == table_id && key.child_table != table_id)?;
        let child = self.tables.get(&key.child_table)?;
        Some(format!(
            "table `{}` is referenced by foreign key `{}` of table `{}`",
            table.definition.schema.name, key.name, child.definition.schema.name
        ))
    }

    /// The foreign keys of table `table_id` that use its index `index_id`, each moved to
    /// another of the table's ordered indexes beginning with its columns (MySQL lets an
    /// index go when another serves its keys); why not, when a key has no other index or
    /// references the index as its parent key.
    pub(super) fn keys_moved_off_index(
        &self,
        table_id: u32,
        index_id: u32,
    ) -> Result<Vec<(ForeignKey, ForeignKey)>, String> {
        let Some(table) = self.tables.get(&table_id) else {
            return Ok(Vec::new());
        };
        let needed = |key: &ForeignKey| {
            format!(
                "index {index_id} of table `{}` is needed by foreign key `{}`",
                table.definition.schema.name, key.name
            )
        };
        let mut moved = Vec::new();
        for key in &table.definition.foreign_keys {
            if key.parent_table == table_id && key.parent_index == index_id {
                return Err(needed(key));
            }
            if key.child_table != table_id || key.child_index != index_id {
                continue;
            }
            let columns: Vec<usize> = key.child_columns.iter().map(|&c| usize::from(c)).collect();
            let other = (table.definition.indexes.iter()).find(|(id, index)| {
                *id != index_id
                    && index.kind == IndexKind::Ordered
                    && index.columns.starts_with(&columns)
                    && !table.definition.is_building(*id)
            });
            let Some(&(other_id, _)) = other else {
                return Err(needed(key));
            };
            let mut new = key.clone();
            new.child_index = other_id;
            moved.push((key.clone(), new));
        }
        Ok(moved)
    }

    /// Writes each moved key into the other table it names (not `table_id`), publishing
    /// that table: until the change of `table_id` itself is applied, both tables hold
    /// indexes and keys that serve.
    pub(super) fn repoint_others(
        &mut self,
        ctx: &mut Context,
        table_id: u32,
        moved: &[(ForeignKey, ForeignKey)],
    ) {
        let mut others: Vec<u32> = (moved.iter())
            .flat_map(|(old, _)| [old.child_table, old.parent_table])
            .filter(|&id| id != table_id)
            .collect();
        others.sort_unstable();
        others.dedup();
        for other in others {
            let Some(table) = self.client_table(other) else {
                continue;
            };
            table
                .definition
                .change(|definition| repoint(&mut definition.foreign_keys, moved));
            table.version += 1;
            self.publish_quietly(ctx, other);
        }
    }
}

/// `keys` with each of `moved`'s old keys replaced by its new one.
pub(super) fn repoint(keys: &mut [ForeignKey], moved: &[(ForeignKey, ForeignKey)]) {
    for key in keys {
        if let Some((_, new)) = moved.iter().find(|(old, _)| old == key) {
            *key = new.clone();
        }
    }
}
