//! Distribution: which partition a key belongs to and which `ldm` instances hold it.
//!
//! A key's distribution hash picks one of [`BUCKETS`] buckets; a table maps buckets to
//! partitions (so partitions can later split or move without rehashing rows) and each
//! partition to its replica chain. The number of partitions is a property of the table,
//! independent of the number of `ldm` instances; partitions go to instances round-robin.
//! Clients compute the same hash to send each transaction to the right node.

use kista_signal::{BlockAddress, NodeId};

use crate::protocol::{ReplicaChain, LDM_BLOCK};

/// Buckets per table: enough for smooth balance across any partition count up to it.
pub const BUCKETS: usize = 1024;

/// The distribution hash of an encoded key (FNV-1a, 64-bit, folded): stable across
/// versions and machines because clients and nodes must agree on it.
pub fn distribution_hash(key: &[u8]) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in key {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (hash ^ (hash >> 32)) as u32
}

/// Where a table's partitions live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionMap {
    /// Bucket → partition.
    buckets: Vec<u32>,
    /// Partition → replicas (primary first).
    chains: Vec<ReplicaChain>,
}

impl PartitionMap {
    /// `partitions` partitions over the `ldm` instances of one node, round-robin.
    pub fn single_node(partitions: u32, node: NodeId, ldm_instances: u16) -> Self {
        assert!(
            partitions > 0 && ldm_instances > 0,
            "a table needs a partition and an ldm"
        );
        let buckets = (0..BUCKETS as u32).map(|b| b % partitions).collect();
        let chains = (0..partitions)
            .map(|p| {
                let instance = (p % u32::from(ldm_instances)) as u16;
                ReplicaChain::single(BlockAddress::new(node, LDM_BLOCK, instance))
            })
            .collect();
        Self { buckets, chains }
    }

    pub fn partitions(&self) -> u32 {
        self.chains.len() as u32
    }

    pub fn partition_of(&self, key: &[u8]) -> u32 {
        self.buckets[distribution_hash(key) as usize % BUCKETS]
    }

    pub fn chain(&self, partition: u32) -> ReplicaChain {
        self.chains[partition as usize]
    }

    /// Partitions with a replica on `ldm`.
    pub fn held_by(&self, ldm: BlockAddress) -> impl Iterator<Item = u32> + '_ {
        self.chains
            .iter()
            .enumerate()
            .filter_map(move |(p, chain)| {
                chain.replicas[..chain.count as usize]
                    .contains(&ldm)
                    .then_some(p as u32)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_spread_over_partitions_and_partitions_over_ldm_instances() {
        let map = PartitionMap::single_node(4, NodeId(1), 2);
        let mut counts = [0u32; 4];
        for n in 0u32..10_000 {
            counts[map.partition_of(&n.to_le_bytes()) as usize] += 1;
        }
        for count in counts {
            assert!((2_000..3_000).contains(&count), "{counts:?}");
        }
        let ldm1 = BlockAddress::new(NodeId(1), LDM_BLOCK, 1);
        assert_eq!(map.held_by(ldm1).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(
            map.chain(2).current(),
            BlockAddress::new(NodeId(1), LDM_BLOCK, 0)
        );
    }

    #[test]
    fn the_hash_is_pinned() {
        // Clients and nodes of different versions must agree: changing it breaks clusters.
        assert_eq!(distribution_hash(b""), 0x_cbf2_9ce4 ^ 0x8422_2325);
        assert_eq!(distribution_hash(b"kista"), 0x9d53_dc60);
        assert_ne!(distribution_hash(b"a"), distribution_hash(b"b"));
    }
}
