//! Foreign keys, as the data nodes enforce them (`kista_datanode::protocol::ForeignKey`):
//! declaring and dropping them, and reading them from a table's definition.

use kista_datanode::protocol::{
    DropForeignKeyRequest, ForeignKey, ForeignKeyRequest, ReferenceAction, PRIMARY_KEY,
};
use kista_storage::codec::Writer;
use kista_storage::schema::IndexKind;

use crate::{Client, ClientError, Table};

/// A foreign key to declare on a child table: its columns reference the parent's primary
/// key or one of its unique indexes (`parent_index` names it; `None`: the primary key), in
/// order. The child needs an ordered index beginning with `columns`.
#[derive(Clone, Debug)]
pub struct ForeignKeySpec {
    pub name: String,
    pub columns: Vec<u16>,
    pub parent_index: Option<String>,
    pub on_delete: ReferenceAction,
    pub on_update: ReferenceAction,
}

impl Table {
    /// The foreign keys this table is the child or the parent of.
    pub fn foreign_keys(&self) -> &[ForeignKey] {
        &self.foreign_keys
    }
}

impl Client {
    /// Declares a foreign key from `child` to `parent`; returns the child at its new
    /// schema version. From the answer on every write is checked, but rows written before
    /// are not: a caller adding a key to a table with rows checks them itself (and drops
    /// the key if one has no parent).
    pub fn add_foreign_key(
        &self,
        child: &Table,
        parent: &Table,
        spec: ForeignKeySpec,
    ) -> Result<Table, ClientError> {
        let key = self.foreign_key_of(child, parent, spec)?;
        let mut body = Vec::new();
        key.encode(&mut Writer(&mut body));
        let (table_id, schema_version) = (child.id, child.schema_version);
        self.change_schema(&body, |request_id, client| ForeignKeyRequest {
            request_id,
            client,
            table_id,
            schema_version,
        })?;
        self.open_table(&child.schema.name)
    }

    /// Drops the foreign key of `child` called `name`; returns the child at its new schema
    /// version.
    pub fn drop_foreign_key(&self, child: &Table, name: &str) -> Result<Table, ClientError> {
        let number = (child.foreign_keys.iter())
            .find(|key| key.child_table == child.id && key.name.eq_ignore_ascii_case(name))
            .map(|key| key.number)
            .ok_or_else(|| {
                ClientError::Usage(format!(
                    "table `{}` has no foreign key `{name}`",
                    child.schema.name
                ))
            })?;
        let table_id = child.id;
        self.change_schema(&[], |request_id, client| DropForeignKeyRequest {
            request_id,
            client,
            table_id,
            number,
        })?;
        self.open_table(&child.schema.name)
    }

    /// The key as the dictionary takes it: the parent's key columns and the child's index.
    fn foreign_key_of(
        &self,
        child: &Table,
        parent: &Table,
        spec: ForeignKeySpec,
    ) -> Result<ForeignKey, ClientError> {
        let usage = |message: String| ClientError::Usage(message);
        let (parent_index, parent_columns) = match &spec.parent_index {
            None => (PRIMARY_KEY, parent.schema.primary_key.clone()),
            Some(name) => {
                let (id, index) = parent.index(name)?;
                if index.kind != IndexKind::Unique {
                    return Err(usage(format!("index `{name}` is not unique")));
                }
                (id.0, index.columns.clone())
            }
        };
        let columns: Vec<usize> = spec.columns.iter().map(|&c| usize::from(c)).collect();
        let child_index = (child.indexes.iter())
            .filter(|(_, index)| index.kind == IndexKind::Ordered)
            .find(|(_, index)| index.columns.starts_with(&columns))
            .map(|(id, _)| id.0)
            .ok_or_else(|| {
                usage(format!(
                    "foreign key `{}` needs an ordered index of table `{}` beginning with its \
                     columns",
                    spec.name, child.schema.name
                ))
            })?;
        Ok(ForeignKey {
            name: spec.name,
            child_table: child.id,
            number: 0,
            child_columns: spec.columns,
            child_index,
            parent_table: parent.id,
            parent_index,
            parent_columns: parent_columns.iter().map(|&c| c as u16).collect(),
            on_delete: spec.on_delete,
            on_update: spec.on_update,
        })
    }
}
