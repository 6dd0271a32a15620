//! What a data node tells operators about itself on request (NDB's ndbinfo): the `info`
//! block's tables, their rows and how they travel. `kista top` and the SQL front end's
//! `kista_info` tables read them through the native client.

use kista_storage::codec::{CodecError, Reader, Writer};

/// The tables a node's `info` block answers for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum InfoTable {
    /// Each scheduler thread's load over the last second ([`ThreadLoad`]).
    Threads = 1,
    /// The node's counters and gauges by name, its data memory included
    /// ([`NamedValuesBody`]).
    Counters = 2,
    /// The node's configuration as it runs, by the names of docs/cluster-config.md
    /// ([`NamedValuesBody`]).
    Config = 3,
    /// The partitions its `ldm` instances hold ([`PartitionRow`]s).
    Partitions = 4,
    /// The transactions its `tc` instances coordinate ([`TransactionRow`]s).
    Transactions = 5,
    /// The row locks held or waited for in its `ldm` instances' partitions
    /// ([`LockRow`]s).
    Locks = 6,
}

impl InfoTable {
    pub fn from_u32(table: u32) -> Option<Self> {
        match table {
            1 => Some(InfoTable::Threads),
            2 => Some(InfoTable::Counters),
            3 => Some(InfoTable::Config),
            4 => Some(InfoTable::Partitions),
            5 => Some(InfoTable::Transactions),
            6 => Some(InfoTable::Locks),
            _ => None,
        }
    }
}

/// Threads one node reports at most (a layout has far fewer; this bounds a section).
pub const THREAD_LOADS_MAX: usize = 256;
/// Bytes of a thread's module list kept (`ldm.0,query.0,...`).
pub const MODULES_TEXT_BYTES_MAX: usize = 256;

/// One scheduler thread's load over the last second, as its node's monitor measured it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadLoad {
    pub thread: u32,
    /// The module instances it runs, as `ldm.0,query.0`.
    pub modules: String,
    /// Shares of the second, in thousandths: user CPU, system CPU, and the part of its CPU
    /// spent spinning for work.
    pub user_permille: u32,
    pub system_permille: u32,
    pub spin_permille: u32,
    pub signals_per_second: u64,
    /// Signals waiting for it at the end of the second.
    pub queue_depth: u32,
    /// The read router's load level, 1 (idle) to 5 (overloaded).
    pub load_level: u32,
}

/// A [`ThreadLoad`] list: a count, then each row.
pub struct ThreadLoadsBody;

impl ThreadLoadsBody {
    pub fn encode(loads: &[ThreadLoad], out: &mut Vec<u8>) {
        let loads = &loads[..loads.len().min(THREAD_LOADS_MAX)];
        let mut writer = Writer(out);
        writer.u32(loads.len() as u32);
        for load in loads {
            writer.u32(load.thread);
            let mut modules = load.modules.len().min(MODULES_TEXT_BYTES_MAX);
            while !load.modules.is_char_boundary(modules) {
                modules -= 1;
            }
            writer.bytes(&load.modules.as_bytes()[..modules]);
            writer.u32(load.user_permille);
            writer.u32(load.system_permille);
            writer.u32(load.spin_permille);
            writer.u64(load.signals_per_second);
            writer.u32(load.queue_depth);
            writer.u32(load.load_level);
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Vec<ThreadLoad>, CodecError> {
        let mut reader = Reader::new(bytes);
        let count = reader.u32()? as usize;
        if count > THREAD_LOADS_MAX {
            return Err(reader.invalid("thread count"));
        }
        let mut loads = Vec::with_capacity(count);
        for _ in 0..count {
            let thread = reader.u32()?;
            let modules = std::str::from_utf8(reader.bytes()?)
                .map_err(|_| reader.invalid("module list"))?
                .to_string();
            loads.push(ThreadLoad {
                thread,
                modules,
                user_permille: reader.u32()?,
                system_permille: reader.u32()?,
                spin_permille: reader.u32()?,
                signals_per_second: reader.u64()?,
                queue_depth: reader.u32()?,
                load_level: reader.u32()?,
            });
        }
        reader.finish()?;
        Ok(loads)
    }
}

/// Rows one block lists for a gathered table at most.
pub const INFO_ROWS_PER_BLOCK_MAX: usize = 16_384;

impl InfoTable {
    /// For a table the `info` block gathers from other blocks: the size of its rows.
    pub fn gathered_row_bytes(self) -> Option<usize> {
        match self {
            InfoTable::Partitions => Some(PartitionRow::BYTES),
            InfoTable::Transactions => Some(TransactionRow::BYTES),
            InfoTable::Locks => Some(LockRow::BYTES),
            InfoTable::Threads | InfoTable::Counters | InfoTable::Config => None,
        }
    }
}

/// A row of a table the `info` block gathers from other blocks: fixed-size, so one
/// block's answer and the gathered table are both plain runs of rows, which the `info`
/// block concatenates.
pub trait GatheredRow: Sized {
    /// Bytes one row takes.
    const BYTES: usize;

    fn write(&self, writer: &mut Writer);

    fn read(reader: &mut Reader) -> Result<Self, CodecError>;

    fn encode(&self, out: &mut Vec<u8>) {
        self.write(&mut Writer(out));
    }

    /// Every row of `bytes`; a cut row is an error.
    fn decode_all(bytes: &[u8]) -> Result<Vec<Self>, CodecError> {
        let mut reader = Reader::new(bytes);
        let mut rows = Vec::with_capacity(bytes.len() / Self::BYTES);
        while reader.remaining() > 0 {
            rows.push(Self::read(&mut reader)?);
        }
        Ok(rows)
    }
}

/// One partition replica an `ldm` holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartitionRow {
    pub table_id: u32,
    pub partition: u32,
    /// The `ldm` instance holding it.
    pub ldm: u32,
    pub committed_rows: u64,
    /// `DataMemory` it holds: rows (pending versions too), primary key, ordered indexes.
    pub memory_bytes: u64,
    /// Transactions holding locks or changes in it now.
    pub open_transactions: u32,
    pub role: ReplicaRole,
}

/// What a replica is to its partition now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReplicaRole {
    /// Writes reach it first and it commits last (the first started replica in placement
    /// order: a failed node's primaries move to its backups, and back once it started).
    #[default]
    Primary,
    Backup,
    /// On a node restarting into the cluster: written, not read, until the node started.
    Starting,
}

impl ReplicaRole {
    const ALL: [ReplicaRole; 3] = [
        ReplicaRole::Primary,
        ReplicaRole::Backup,
        ReplicaRole::Starting,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ReplicaRole::Primary => "primary",
            ReplicaRole::Backup => "backup",
            ReplicaRole::Starting => "starting",
        }
    }
}

impl GatheredRow for PartitionRow {
    const BYTES: usize = 36;

    fn write(&self, writer: &mut Writer) {
        writer.u32(self.table_id);
        writer.u32(self.partition);
        writer.u32(self.ldm);
        writer.u64(self.committed_rows);
        writer.u64(self.memory_bytes);
        writer.u32(self.open_transactions);
        writer.u32(self.role as u32);
    }

    fn read(reader: &mut Reader) -> Result<Self, CodecError> {
        Ok(PartitionRow {
            table_id: reader.u32()?,
            partition: reader.u32()?,
            ldm: reader.u32()?,
            committed_rows: reader.u64()?,
            memory_bytes: reader.u64()?,
            open_transactions: reader.u32()?,
            role: {
                let offset = reader.offset();
                let role = ReplicaRole::ALL.get(reader.u32()? as usize).copied();
                role.ok_or(CodecError::Invalid {
                    what: "replica role",
                    offset,
                })?
            },
        })
    }
}

/// One transaction a `tc` coordinates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransactionRow {
    pub transaction: u64,
    /// The `tc` instance coordinating it.
    pub tc: u32,
    /// The client node it belongs to (0: a takeover's, whose client is gone).
    pub client_node: u32,
    /// 0 executing, 1 committing, 2 completing, 3 aborting.
    pub state: u32,
    pub operations: u32,
    pub age_ms: u64,
    /// Since its client was last heard from.
    pub idle_ms: u64,
}

impl GatheredRow for TransactionRow {
    const BYTES: usize = 40;

    fn write(&self, writer: &mut Writer) {
        writer.u64(self.transaction);
        writer.u32(self.tc);
        writer.u32(self.client_node);
        writer.u32(self.state);
        writer.u32(self.operations);
        writer.u64(self.age_ms);
        writer.u64(self.idle_ms);
    }

    fn read(reader: &mut Reader) -> Result<Self, CodecError> {
        Ok(TransactionRow {
            transaction: reader.u64()?,
            tc: reader.u32()?,
            client_node: reader.u32()?,
            state: reader.u32()?,
            operations: reader.u32()?,
            age_ms: reader.u64()?,
            idle_ms: reader.u64()?,
        })
    }
}

/// One row lock held or waited for in an `ldm`'s partition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockRow {
    pub table_id: u32,
    pub partition: u32,
    /// The row's slot in its partition.
    pub row: u32,
    /// The coordinator's id of the transaction (`TransactionRow::transaction`).
    pub transaction: u64,
    pub exclusive: bool,
    pub granted: bool,
}

impl GatheredRow for LockRow {
    const BYTES: usize = 21;

    fn write(&self, writer: &mut Writer) {
        writer.u32(self.table_id);
        writer.u32(self.partition);
        writer.u32(self.row);
        writer.u64(self.transaction);
        writer.u8(u8::from(self.exclusive) | u8::from(self.granted) << 1);
    }

    fn read(reader: &mut Reader) -> Result<Self, CodecError> {
        let (table_id, partition, row) = (reader.u32()?, reader.u32()?, reader.u32()?);
        let transaction = reader.u64()?;
        let flags = reader.u8()?;
        Ok(LockRow {
            table_id,
            partition,
            row,
            transaction,
            exclusive: flags & 1 != 0,
            granted: flags & 2 != 0,
        })
    }
}

/// Names and values (a node's counters): a count, then each name and value.
pub struct NamedValuesBody;

/// Named values one answer carries at most.
pub const NAMED_VALUES_MAX: usize = 1_024;

impl NamedValuesBody {
    pub fn encode(values: &[(String, u64)], out: &mut Vec<u8>) {
        let values = &values[..values.len().min(NAMED_VALUES_MAX)];
        let mut writer = Writer(out);
        writer.u32(values.len() as u32);
        for (name, value) in values {
            writer.bytes(name.as_bytes());
            writer.u64(*value);
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Vec<(String, u64)>, CodecError> {
        let mut reader = Reader::new(bytes);
        let count = reader.u32()? as usize;
        if count > NAMED_VALUES_MAX {
            return Err(reader.invalid("value count"));
        }
        let mut values = Vec::with_capacity(count);
        for _ in 0..count {
            let name = std::str::from_utf8(reader.bytes()?)
                .map_err(|_| reader.invalid("value name"))?
                .to_string();
            values.push((name, reader.u64()?));
        }
        reader.finish()?;
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_rows_round_trip_and_a_cut_row_is_refused() {
        let rows = [
            PartitionRow {
                table_id: 9,
                partition: 3,
                ldm: 1,
                committed_rows: 1 << 40,
                memory_bytes: 1 << 33,
                open_transactions: 2,
                role: ReplicaRole::Starting,
            },
            PartitionRow::default(),
        ];
        let mut bytes = Vec::new();
        for row in &rows {
            row.encode(&mut bytes);
        }
        assert_eq!(bytes.len(), 2 * PartitionRow::BYTES);
        assert_eq!(PartitionRow::decode_all(&bytes).unwrap(), rows);
        assert!(PartitionRow::decode_all(&bytes[..30]).is_err());
        let unknown_role = PartitionRow::BYTES - 4;
        bytes[unknown_role] = 3;
        assert!(PartitionRow::decode_all(&bytes).is_err());
    }

    #[test]
    fn transaction_rows_round_trip() {
        let row = TransactionRow {
            transaction: u64::MAX - 1,
            tc: 1,
            client_node: 64,
            state: 3,
            operations: 7,
            age_ms: 1_500,
            idle_ms: 20,
        };
        let mut bytes = Vec::new();
        row.encode(&mut bytes);
        assert_eq!(bytes.len(), TransactionRow::BYTES);
        assert_eq!(TransactionRow::decode_all(&bytes).unwrap(), vec![row]);
        assert!(TransactionRow::decode_all(&bytes[..39]).is_err());
    }

    #[test]
    fn lock_rows_round_trip() {
        let rows = [
            LockRow {
                table_id: 3,
                partition: 1,
                row: 77,
                transaction: 9,
                exclusive: true,
                granted: false,
            },
            LockRow {
                table_id: 3,
                partition: 1,
                row: 77,
                transaction: 8,
                exclusive: false,
                granted: true,
            },
        ];
        let mut bytes = Vec::new();
        rows.iter().for_each(|row| row.encode(&mut bytes));
        assert_eq!(bytes.len(), 2 * LockRow::BYTES);
        assert_eq!(LockRow::decode_all(&bytes).unwrap(), rows);
    }

    #[test]
    fn named_values_round_trip() {
        let values = vec![("operations_read".to_string(), 7), ("scans".to_string(), 0)];
        let mut bytes = Vec::new();
        NamedValuesBody::encode(&values, &mut bytes);
        assert_eq!(NamedValuesBody::decode(&bytes).unwrap(), values);
        assert!(NamedValuesBody::decode(&bytes[..5]).is_err());
    }

    #[test]
    fn thread_loads_round_trip_and_garbage_is_refused() {
        let loads = vec![
            ThreadLoad {
                thread: 0,
                modules: "ldm.0,query.0".into(),
                user_permille: 512,
                system_permille: 31,
                spin_permille: 100,
                signals_per_second: 1_234_567,
                queue_depth: 3,
                load_level: 2,
            },
            ThreadLoad::default(),
        ];
        let mut bytes = Vec::new();
        ThreadLoadsBody::encode(&loads, &mut bytes);
        assert_eq!(ThreadLoadsBody::decode(&bytes).unwrap(), loads);
        assert!(ThreadLoadsBody::decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(ThreadLoadsBody::decode(&[0xff, 0xff, 0xff, 0xff]).is_err());
    }
}
