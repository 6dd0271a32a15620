//! Foreign keys as the dictionary keeps them, in the definitions of both their tables,
//! and the key events a write reports for them.
//!
//! The coordinators enforce them, as NDB's do: a write that gives a child row a new
//! reference reads the parent row under a shared lock in the same transaction (no parent:
//! error 255); a write that takes a parent key away looks for its children with the child
//! table's index and then, per the foreign key's action, refuses (256), deletes them or sets
//! their columns to NULL, in the same transaction (`tc/foreign_keys.rs`).

use kista_storage::codec::{CodecError, Reader, Writer};
use kista_storage::partition::{KeyChange, WatchSide, WatchedKey};
use kista_storage::types::{ColumnType, Value};

use super::body::{read_columns, write_columns};
use kista_storage::codec::{read_values, write_values};

/// Foreign keys per table, counting both ends (NDB's limit is on schema objects; MySQL
/// has none to speak of).
pub const FOREIGN_KEYS_PER_TABLE_MAX: usize = 64;

/// What a parent-key removal does to the rows that reference the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReferenceAction {
    /// Refuse the removal (error 256). MySQL checks RESTRICT and NO ACTION alike at once.
    Restrict,
    NoAction,
    /// Delete the children (on delete) with the parent.
    Cascade,
    /// Set the children's referencing columns to NULL.
    SetNull,
}

impl ReferenceAction {
    fn code(self) -> u8 {
        match self {
            Self::Restrict => 0,
            Self::NoAction => 1,
            Self::Cascade => 2,
            Self::SetNull => 3,
        }
    }

    fn from_code(code: u8, input: &Reader) -> Result<Self, CodecError> {
        Ok(match code {
            0 => Self::Restrict,
            1 => Self::NoAction,
            2 => Self::Cascade,
            3 => Self::SetNull,
            tag => return Err(input.unknown("foreign key action", tag)),
        })
    }
}

/// A foreign key: the child table's `child_columns` reference the parent table's key
/// (its primary key or a unique index) in `parent_columns`, in the same order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignKey {
    pub name: String,
    pub child_table: u32,
    /// Numbered by the child table, from the numbers its indexes take.
    pub number: u32,
    pub child_columns: Vec<u16>,
    /// An ordered index of the child table whose columns begin with `child_columns`: how a
    /// parent's coordinator finds the children.
    pub child_index: u32,
    pub parent_table: u32,
    /// The parent's key: `PRIMARY_KEY` or a unique index.
    pub parent_index: u32,
    pub parent_columns: Vec<u16>,
    pub on_delete: ReferenceAction,
    pub on_update: ReferenceAction,
}

impl ForeignKey {
    /// The id under which a partition of either table reports this key's changes.
    pub fn watch_id(&self) -> u64 {
        u64::from(self.child_table) << 32 | u64::from(self.number)
    }

    /// What a partition of `table_id` watches for this foreign key (both ends, for a table
    /// referencing itself).
    pub fn watched_keys(&self, table_id: u32) -> impl Iterator<Item = WatchedKey> + '_ {
        let columns = |columns: &[u16]| columns.iter().map(|&c| usize::from(c)).collect();
        let child = (self.child_table == table_id).then(|| WatchedKey {
            id: self.watch_id(),
            side: WatchSide::Referencing,
            columns: columns(&self.child_columns),
        });
        let parent = (self.parent_table == table_id).then(|| WatchedKey {
            id: self.watch_id(),
            side: WatchSide::Referenced,
            columns: columns(&self.parent_columns),
        });
        child.into_iter().chain(parent)
    }

    pub fn encode(&self, writer: &mut Writer) {
        writer.bytes(self.name.as_bytes());
        writer.u32(self.child_table);
        writer.u32(self.number);
        write_columns(writer, &self.child_columns);
        writer.u32(self.child_index);
        writer.u32(self.parent_table);
        writer.u32(self.parent_index);
        write_columns(writer, &self.parent_columns);
        writer.u8(self.on_delete.code());
        writer.u8(self.on_update.code());
    }

    pub fn decode(input: &mut Reader) -> Result<Self, CodecError> {
        let name = String::from_utf8(input.bytes()?.to_vec())
            .map_err(|_| input.invalid("foreign key name"))?;
        Ok(Self {
            name,
            child_table: input.u32()?,
            number: input.u32()?,
            child_columns: read_columns(input)?,
            child_index: input.u32()?,
            parent_table: input.u32()?,
            parent_index: input.u32()?,
            parent_columns: read_columns(input)?,
            on_delete: ReferenceAction::from_code(input.u8()?, input)?,
            on_update: ReferenceAction::from_code(input.u8()?, input)?,
        })
    }
}

/// Whether a child's column of type `child` may reference a parent's of type `parent`:
/// one value has the same key bytes in both, so the reference finds its parent (MySQL asks
/// for the same type too; strings of one collation may differ in length).
pub fn same_key_form(child: ColumnType, parent: ColumnType) -> bool {
    match (child, parent) {
        (ColumnType::VarChar { collation: a, .. }, ColumnType::VarChar { collation: b, .. }) => {
            a == b
        }
        (ColumnType::VarBinary { .. }, ColumnType::VarBinary { .. }) => true,
        _ => child == parent,
    }
}

/// A watched-key change as the coordinator receives it (see [`KeyChange`]).
#[derive(Clone, Debug, PartialEq)]
pub struct KeyEvent {
    /// [`ForeignKey::watch_id`].
    pub watch_id: u64,
    pub side: WatchSide,
    pub key: Vec<u8>,
    pub values: Vec<Value>,
    /// The written row's.
    pub primary_key: Vec<u8>,
    /// A referenced key an update took: the values that replaced it
    /// ([`KeyChange::new_values`]).
    pub new_values: Option<Vec<Value>>,
}

pub(super) fn write_key_changes(writer: &mut Writer, changes: &[KeyChange]) {
    writer.u32(changes.len() as u32);
    for change in changes {
        writer.u64(change.id);
        writer.u8(match change.side {
            WatchSide::Referencing => 0,
            WatchSide::Referenced => 1,
        });
        writer.bytes(&change.key);
        write_values(writer, &change.values);
        writer.bytes(&change.primary_key);
        match &change.new_values {
            None => writer.u8(0),
            Some(values) => {
                writer.u8(1);
                write_values(writer, values);
            }
        }
    }
}

pub(super) fn read_key_events(input: &mut Reader) -> Result<Vec<KeyEvent>, CodecError> {
    let count = input.u32()? as usize;
    // Each takes at least its id, side, key length, value count, primary key length and
    // new values' tag.
    if count.saturating_mul(22) > input.remaining() {
        return Err(input.invalid("key change count"));
    }
    (0..count)
        .map(|_| {
            let watch_id = input.u64()?;
            let side = match input.u8()? {
                0 => WatchSide::Referencing,
                1 => WatchSide::Referenced,
                tag => return Err(input.unknown("watched key side", tag)),
            };
            let key = input.bytes()?.to_vec();
            let values = read_values(input)?;
            let primary_key = input.bytes()?.to_vec();
            let new_values = match input.u8()? {
                0 => None,
                1 => Some(read_values(input)?),
                tag => return Err(input.unknown("new values' tag", tag)),
            };
            Ok(KeyEvent {
                watch_id,
                side,
                key,
                values,
                primary_key,
                new_values,
            })
        })
        .collect()
}
