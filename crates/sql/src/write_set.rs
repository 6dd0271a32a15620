//! What the open transaction wrote, so its reads see it.
//!
//! A read of a row the transaction changed must see the change, but the data nodes answer a
//! committed read with the committed version, and a scan reads committed rows only. So a
//! transaction's reads of a table it wrote lock (the data node then shows the transaction
//! its own version; ha_ndbcluster does the same), and its scans of such a table find keys
//! only, add the keys of the rows it inserted or changed (a committed scan cannot find a
//! row the transaction inserted, or one an update moved into the scan's range), and read
//! them all by key under that lock. The front end checks the whole WHERE on what comes back.

use std::collections::HashMap;

use kista_client::types::Value;

/// The tables and row keys the open transaction wrote.
#[derive(Default)]
pub struct WriteSet {
    /// Table id → primary keys of rows inserted or changed (deleted ones need no
    /// remembering: a locked read of them finds nothing). May repeat a key.
    keys: HashMap<u32, Vec<Vec<Value>>>,
    /// Tables the transaction read under a lock (it may write them from what it read).
    locked: Vec<u32>,
}

impl WriteSet {
    /// Notes that the transaction writes `table_id` (before it knows which rows).
    pub fn wrote_table(&mut self, table_id: u32) {
        self.keys.entry(table_id).or_default();
    }

    /// Notes the row with primary key `key` that the transaction inserted or changed.
    pub fn wrote_row(&mut self, table_id: u32, key: Vec<Value>) {
        self.keys.entry(table_id).or_default().push(key);
    }

    pub fn wrote(&self, table_id: u32) -> bool {
        self.keys.contains_key(&table_id)
    }

    /// Notes that the transaction read `table_id` under a lock.
    pub fn locked(&mut self, table_id: u32) {
        if !self.locked.contains(&table_id) {
            self.locked.push(table_id);
        }
    }

    /// Whether the transaction wrote `table_id` or read it under a lock.
    pub fn used(&self, table_id: u32) -> bool {
        self.wrote(table_id) || self.locked.contains(&table_id)
    }

    /// Keys of the rows of `table_id` the transaction inserted or changed.
    pub fn keys(&self, table_id: u32) -> &[Vec<Value>] {
        self.keys.get(&table_id).map_or(&[], Vec::as_slice)
    }

    pub fn clear(&mut self) {
        self.keys.clear();
        self.locked.clear();
    }
}
