//! The data manager's rows of `kista_info`'s gathered tables: the partitions it holds and
//! the row locks held or waited for in them, as the node's `info` block asks.

use kista_runtime::Context;
use kista_signal::{BlockAddress, TypedSignal};
use kista_storage::locks::LockMode;

use super::LocalDataManager;
use crate::dist::PartitionMap;
use crate::protocol::*;
use crate::registry::read_partition;
use crate::send_with_bytes;

impl LocalDataManager {
    /// Answers the `info` block with this `ldm`'s rows of the table it asks for (none for
    /// a table kept elsewhere), at most `INFO_ROWS_PER_BLOCK_MAX`.
    pub(super) fn list(&self, ctx: &mut Context, request: InfoListRequest, info: BlockAddress) {
        let ldm = u32::from(ctx.address().instance());
        let mut rows = Vec::new();
        let mut listed = 0usize;
        let mut more = false;
        let table = InfoTable::from_u32(request.table);
        let role = self.replica_roles(ctx.address());
        let held = self.tables.iter().flat_map(|(&table_id, table)| {
            let partitions = table.partitions.iter();
            partitions.map(move |(&partition, shared)| (table_id, partition, shared))
        });
        for (table_id, partition, shared) in held {
            let held = read_partition(shared);
            let mut add = |encode: &mut dyn FnMut(&mut Vec<u8>)| {
                if listed < INFO_ROWS_PER_BLOCK_MAX {
                    encode(&mut rows);
                    listed += 1;
                } else {
                    more = true;
                }
            };
            match table {
                Some(InfoTable::Partitions) => add(&mut |out| {
                    let row = PartitionRow {
                        table_id,
                        partition,
                        ldm,
                        committed_rows: held.committed_rows() as u64,
                        memory_bytes: held.held_bytes(),
                        open_transactions: held.open_transactions() as u32,
                        role: role(partition),
                    };
                    row.encode(out);
                }),
                Some(InfoTable::Locks) => held.each_lock(|row, tx, mode, granted| {
                    add(&mut |out| {
                        let lock = LockRow {
                            table_id,
                            partition,
                            row: row.0,
                            transaction: tx.0,
                            exclusive: mode == LockMode::Exclusive,
                            granted,
                        };
                        lock.encode(out);
                    })
                }),
                _ => {}
            }
        }
        let conf = InfoListConf {
            gather: request.gather,
            truncated: u32::from(more),
        };
        // The info block is on this node; a lost answer only leaves its client's request
        // unanswered (the client times out).
        let _ = send_with_bytes(ctx, conf.to_signal(info, ctx.address()), &rows);
    }

    /// What this data manager's replica of a partition is now: the primary when it is the
    /// first started one in the partition's placement (as the coordinators arrange their
    /// chains), a backup on another started node, starting on a restarting one.
    fn replica_roles(&self, here: BlockAddress) -> impl Fn(u32) -> ReplicaRole + '_ {
        let partitions = self.settings.partitions_per_node * self.cluster.nodes().len() as u32;
        let map = PartitionMap::for_cluster(partitions.max(1), &self.cluster);
        move |partition| match map.first_placed_on(partition, self.started_nodes) {
            Some(first) if first == here => ReplicaRole::Primary,
            _ if self.started_nodes.contains(here.node()) => ReplicaRole::Backup,
            _ => ReplicaRole::Starting,
        }
    }
}
