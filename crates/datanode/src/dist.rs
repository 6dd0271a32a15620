//! Distribution: which partition a key belongs to and which `ldm` instances hold it.
//!
//! A key's distribution hash picks one of [`BUCKETS`] buckets; a table maps buckets to
//! partitions (so partitions can later split or move without rehashing rows) and each
//! partition to its replica chain: one replica on every node of one node group. Partitions
//! go to node groups round-robin; inside a group the primary replica rotates from node to
//! node, and on each node the partition goes to an `ldm` instance so that every instance
//! holds its share of primaries and of backups. The number of partitions is a property of
//! the table, independent of the number of `ldm` instances. Clients compute the same hash
//! to send each transaction to the right node.

use kista_signal::{BlockAddress, NodeId};

use crate::cluster::{ClusterShape, NodeSet};
use crate::protocol::{ReplicaChain, LDM_BLOCK, REPLICAS_MAX};

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
    /// Partition → replicas (primary first) when every node is started.
    placement: Vec<ReplicaChain>,
    /// Partition → the replicas writes go to now (see [`PartitionMap::arrange`]).
    chains: Vec<ReplicaChain>,
}

impl PartitionMap {
    /// `partitions` partitions placed on the cluster's node groups.
    ///
    /// Partition `p` goes to group `p % groups` as that group's `k = p / groups`th
    /// partition. Its chain starts at the group's node `k % replicas` (so primaries rotate)
    /// and on each node it lives in `ldm` instance `(k / replicas) % ldm_instances` (so each
    /// instance gets primaries and backups alike).
    pub fn for_cluster(partitions: u32, cluster: &ClusterShape) -> Self {
        assert!(partitions > 0, "a table needs a partition");
        let groups = cluster.node_groups();
        let group_count = groups.len() as u32;
        let replicas = u32::from(cluster.replicas());
        let buckets = (0..BUCKETS as u32).map(|b| b % partitions).collect();
        let chains = (0..partitions)
            .map(|p| {
                let group = &groups[(p % group_count) as usize];
                let k = p / group_count;
                let mut chain = [BlockAddress::default(); REPLICAS_MAX];
                for (position, slot) in chain.iter_mut().take(group.len()).enumerate() {
                    let node = group[(k as usize + position) % group.len()];
                    let ldm_instances = cluster
                        .node(node)
                        .map_or(1, |shape| u32::from(shape.ldm_instances));
                    let instance = ((k / replicas) % ldm_instances) as u16;
                    *slot = BlockAddress::new(node, LDM_BLOCK, instance);
                }
                ReplicaChain::of(&chain[..group.len()])
            })
            .collect::<Vec<_>>();
        Self {
            buckets,
            placement: chains.clone(),
            chains,
        }
    }

    /// Chains for the nodes' states (a failed node is in neither set, so its backups
    /// become primaries): each partition's replicas on `started` nodes in
    /// their placement order (so a restarted node's primaries go back to it), then those
    /// on `starting` nodes. A partition with no started replica keeps its chain (its node
    /// group is lost, and the cluster stops).
    pub fn arrange(&mut self, started: NodeSet, starting: NodeSet) {
        for (chain, placed) in self.chains.iter_mut().zip(&self.placement) {
            let on = |nodes: NodeSet| {
                let mut found = [BlockAddress::default(); REPLICAS_MAX];
                let mut count = 0;
                for &replica in placed.replicas[..placed.count as usize]
                    .iter()
                    .filter(|r| nodes.contains(r.node()))
                {
                    found[count] = replica;
                    count += 1;
                }
                (found, count)
            };
            let (first, first_count) = on(started);
            let (then, then_count) = on(starting.minus(started));
            if first_count > 0 {
                *chain = ReplicaChain::with_starting(&first[..first_count], &then[..then_count]);
            }
        }
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

    /// The replica of `partition` on `node`, if it holds one: a committed read there
    /// needs no hop to another node (read backup).
    pub fn replica_on(&self, partition: u32, node: NodeId) -> Option<BlockAddress> {
        let chain = &self.chains[partition as usize];
        chain
            .started()
            .iter()
            .copied()
            .find(|replica| replica.node() == node)
    }

    /// Where a committed read of `partition` received on `node` runs: that node's replica
    /// if it holds one, else the primary.
    pub fn read_replica(&self, partition: u32, node: NodeId) -> BlockAddress {
        self.replica_on(partition, node)
            .unwrap_or_else(|| self.chains[partition as usize].current())
    }

    /// The first replica of `partition`'s placement (primary first) on one of `nodes`: the
    /// one a backup takes of it. `None` for a partition the map does not have or with no
    /// replica there.
    pub fn first_placed_on(&self, partition: u32, nodes: NodeSet) -> Option<BlockAddress> {
        let chain = self.placement.get(partition as usize)?;
        chain.replicas[..chain.count as usize]
            .iter()
            .copied()
            .find(|replica| nodes.contains(replica.node()))
    }

    /// Partitions with a replica on `ldm` (where the table is placed, whatever the nodes'
    /// states).
    pub fn held_by(&self, ldm: BlockAddress) -> impl Iterator<Item = u32> + '_ {
        self.placement
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

    use crate::cluster::DataNodeShape;

    fn shape(replicas: u16, groups: &[&[u8]], ldm_instances: u16) -> ClusterShape {
        let nodes = groups
            .iter()
            .enumerate()
            .flat_map(|(group, nodes)| {
                nodes.iter().map(move |&node| DataNodeShape {
                    node: NodeId(node),
                    node_group: group as u16,
                    tc_instances: 1,
                    ldm_instances,
                })
            })
            .collect();
        ClusterShape::new(replicas, nodes).unwrap()
    }

    fn ldm(node: u8, instance: u16) -> BlockAddress {
        BlockAddress::new(NodeId(node), LDM_BLOCK, instance)
    }

    #[test]
    fn keys_spread_over_partitions_and_partitions_over_ldm_instances() {
        let map = PartitionMap::for_cluster(4, &shape(1, &[&[1]], 2));
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
    fn primaries_alternate_inside_a_group_and_every_ldm_gets_primaries_and_backups() {
        let map = PartitionMap::for_cluster(8, &shape(2, &[&[1, 2]], 2));
        let chains: Vec<Vec<BlockAddress>> = (0..8)
            .map(|p| {
                let chain = map.chain(p);
                chain.replicas[..chain.count as usize].to_vec()
            })
            .collect();
        assert_eq!(chains[0], [ldm(1, 0), ldm(2, 0)]);
        assert_eq!(chains[1], [ldm(2, 0), ldm(1, 0)]);
        assert_eq!(chains[2], [ldm(1, 1), ldm(2, 1)]);
        assert_eq!(chains[3], [ldm(2, 1), ldm(1, 1)]);
        for instance in [ldm(1, 0), ldm(1, 1), ldm(2, 0), ldm(2, 1)] {
            let primaries = chains.iter().filter(|c| c[0] == instance).count();
            let backups = chains.iter().filter(|c| c[1] == instance).count();
            assert_eq!((primaries, backups), (2, 2), "{instance}");
        }
        assert_eq!(map.read_replica(1, NodeId(1)), ldm(1, 0));
        assert_eq!(map.read_replica(1, NodeId(3)), ldm(2, 0));
    }

    #[test]
    fn when_a_node_fails_its_backups_become_primaries() {
        let mut map = PartitionMap::for_cluster(4, &shape(2, &[&[1, 2]], 1));
        map.arrange(NodeSet::of([NodeId(2)]), NodeSet::EMPTY);
        for partition in 0..4 {
            let chain = map.chain(partition);
            assert_eq!((chain.count, chain.current()), (1, ldm(2, 0)));
        }
        map.arrange(NodeSet::EMPTY, NodeSet::EMPTY);
        assert_eq!(map.chain(0).current(), ldm(2, 0), "a chain never empties");
    }

    #[test]
    fn a_restarting_node_ends_every_chain_until_it_is_started_and_then_its_primaries_return() {
        let mut map = PartitionMap::for_cluster(4, &shape(2, &[&[1, 2]], 1));
        let (one, both) = (
            NodeSet::of([NodeId(1)]),
            NodeSet::of([NodeId(1), NodeId(2)]),
        );
        map.arrange(one, NodeSet::of([NodeId(2)]));
        for partition in 0..4 {
            let chain = map.chain(partition);
            assert_eq!(
                chain.started(),
                [ldm(1, 0)],
                "node 2 is never primary nor read"
            );
            assert_eq!(
                (chain.count, chain.last()),
                (2, ldm(2, 0)),
                "but takes writes"
            );
            assert_eq!(map.read_replica(partition, NodeId(2)), ldm(1, 0));
        }
        assert_eq!(map.held_by(ldm(2, 0)).count(), 4);
        map.arrange(both, NodeSet::EMPTY);
        assert_eq!(
            map.chain(1).started(),
            [ldm(2, 0), ldm(1, 0)],
            "primary back"
        );
        assert_eq!(map.chain(0).started(), [ldm(1, 0), ldm(2, 0)]);
    }

    #[test]
    fn partitions_spread_over_node_groups() {
        let map = PartitionMap::for_cluster(8, &shape(2, &[&[1, 2], &[3, 4]], 1));
        for node in 1..=4 {
            let held = map.held_by(ldm(node, 0)).count();
            let primaries = (0..8).filter(|&p| map.chain(p).current() == ldm(node, 0));
            assert_eq!((held, primaries.count()), (4, 2), "node {node}");
        }
        assert_eq!(map.chain(1).current(), ldm(3, 0));
    }

    #[test]
    fn the_hash_is_pinned() {
        // Clients and nodes of different versions must agree: changing it breaks clusters.
        assert_eq!(distribution_hash(b""), 0x_cbf2_9ce4 ^ 0x8422_2325);
        assert_eq!(distribution_hash(b"kista"), 0x9d53_dc60);
        assert_ne!(distribution_hash(b"a"), distribution_hash(b"b"));
    }
}
