//! The shape of the cluster every block plans with: which data nodes exist, how they form
//! node groups, and how many `tc` and `ldm` instances each runs (so a block can address
//! another node's blocks directly).
//!
//! Node groups hold `replicas` nodes each; a partition lives on every node of one group
//! (DESIGN.md section 3). Which of those nodes are alive is the membership's business; the
//! shape itself changes only when the configuration does.

use kista_signal::{BlockAddress, BlockId, NodeId};

use crate::protocol::{DICT_BLOCK, LDM_BLOCK, REPLICAS_MAX, TC_BLOCK};

/// A data node as the other nodes see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataNodeShape {
    pub node: NodeId,
    pub node_group: u16,
    pub tc_instances: u16,
    pub ldm_instances: u16,
}

impl DataNodeShape {
    pub fn dict_address(&self) -> BlockAddress {
        BlockAddress::new(self.node, DICT_BLOCK, 0)
    }

    pub fn tc_addresses(&self) -> impl Iterator<Item = BlockAddress> {
        instances(self.node, TC_BLOCK, self.tc_instances)
    }

    pub fn ldm_addresses(&self) -> impl Iterator<Item = BlockAddress> {
        instances(self.node, LDM_BLOCK, self.ldm_instances)
    }
}

/// The addresses of `count` instances of `block` on `node`.
pub fn instances(node: NodeId, block: BlockId, count: u16) -> impl Iterator<Item = BlockAddress> {
    (0..count).map(move |instance| BlockAddress::new(node, block, instance))
}

/// Data node ids are below this, so a set of them is one word pair.
pub const DATA_NODE_ID_LIMIT: u8 = 64;

/// A set of data nodes.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct NodeSet(pub u64);

impl NodeSet {
    pub const EMPTY: NodeSet = NodeSet(0);

    pub fn of(nodes: impl IntoIterator<Item = NodeId>) -> Self {
        let mut set = Self::EMPTY;
        for node in nodes {
            set.insert(node);
        }
        set
    }

    fn bit(node: NodeId) -> u64 {
        debug_assert!(node.0 < DATA_NODE_ID_LIMIT, "data node ids are below 64");
        1u64.checked_shl(u32::from(node.0)).unwrap_or(0)
    }

    pub fn insert(&mut self, node: NodeId) {
        self.0 |= Self::bit(node);
    }

    pub fn remove(&mut self, node: NodeId) {
        self.0 &= !Self::bit(node);
    }

    pub fn contains(self, node: NodeId) -> bool {
        node.0 < DATA_NODE_ID_LIMIT && self.0 & Self::bit(node) != 0
    }

    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn union(self, other: NodeSet) -> NodeSet {
        NodeSet(self.0 | other.0)
    }

    pub fn minus(self, other: NodeSet) -> NodeSet {
        NodeSet(self.0 & !other.0)
    }

    pub fn intersects(self, other: NodeSet) -> bool {
        self.0 & other.0 != 0
    }

    pub fn is_subset_of(self, other: NodeSet) -> bool {
        self.0 & !other.0 == 0
    }

    /// The nodes in id order.
    pub fn iter(self) -> impl Iterator<Item = NodeId> {
        (0..DATA_NODE_ID_LIMIT)
            .map(NodeId)
            .filter(move |&node| self.contains(node))
    }
}

impl std::fmt::Debug for NodeSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter().map(|n| n.0)).finish()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("data node ids are 1 to 63, not {0}")]
    NodeId(NodeId),
    #[error("replicas must be 1 to {REPLICAS_MAX}, not {0}")]
    Replicas(u16),
    #[error("node {0} appears twice")]
    DuplicateNode(NodeId),
    #[error("node {0} runs no tc or no ldm instance")]
    NoInstances(NodeId),
    #[error("node group {group} has {nodes} data nodes; every group needs {replicas}")]
    IncompleteGroup {
        group: u16,
        nodes: usize,
        replicas: u16,
    },
    #[error("a cluster needs a data node")]
    Empty,
}

/// The data nodes of a cluster in their node groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterShape {
    replicas: u16,
    /// Ordered by node id.
    nodes: Vec<DataNodeShape>,
    /// Node groups in order of their number, each's nodes by node id.
    groups: Vec<Vec<NodeId>>,
}

impl ClusterShape {
    pub fn new(replicas: u16, mut nodes: Vec<DataNodeShape>) -> Result<Self, ShapeError> {
        if replicas == 0 || usize::from(replicas) > REPLICAS_MAX {
            return Err(ShapeError::Replicas(replicas));
        }
        if nodes.is_empty() {
            return Err(ShapeError::Empty);
        }
        nodes.sort_by_key(|n| n.node);
        if let Some(node) = nodes
            .iter()
            .find(|n| n.node.0 == 0 || n.node.0 >= DATA_NODE_ID_LIMIT)
        {
            return Err(ShapeError::NodeId(node.node));
        }
        for pair in nodes.windows(2) {
            if pair[0].node == pair[1].node {
                return Err(ShapeError::DuplicateNode(pair[0].node));
            }
        }
        if let Some(node) = nodes
            .iter()
            .find(|n| n.tc_instances == 0 || n.ldm_instances == 0)
        {
            return Err(ShapeError::NoInstances(node.node));
        }
        let mut group_numbers: Vec<u16> = nodes.iter().map(|n| n.node_group).collect();
        group_numbers.sort_unstable();
        group_numbers.dedup();
        let groups: Vec<Vec<NodeId>> = group_numbers
            .iter()
            .map(|&group| {
                nodes
                    .iter()
                    .filter(|n| n.node_group == group)
                    .map(|n| n.node)
                    .collect()
            })
            .collect();
        for (&group, members) in group_numbers.iter().zip(&groups) {
            if members.len() != usize::from(replicas) {
                return Err(ShapeError::IncompleteGroup {
                    group,
                    nodes: members.len(),
                    replicas,
                });
            }
        }
        Ok(Self {
            replicas,
            nodes,
            groups,
        })
    }

    /// One data node holding every partition alone.
    pub fn single(node: DataNodeShape) -> Self {
        let node = DataNodeShape {
            node_group: 0,
            ..node
        };
        Self::new(1, vec![node]).expect("one node with instances is a whole cluster")
    }

    pub fn replicas(&self) -> u16 {
        self.replicas
    }

    pub fn nodes(&self) -> &[DataNodeShape] {
        &self.nodes
    }

    /// Every data node's id.
    pub fn node_set(&self) -> NodeSet {
        NodeSet::of(self.nodes.iter().map(|n| n.node))
    }

    pub fn node(&self, id: NodeId) -> Option<&DataNodeShape> {
        self.nodes
            .binary_search_by_key(&id, |n| n.node)
            .ok()
            .map(|index| &self.nodes[index])
    }

    /// Node groups, each's nodes in node-id order.
    pub fn node_groups(&self) -> &[Vec<NodeId>] {
        &self.groups
    }

    /// The first node group none of `alive` belongs to, if any: without it the cluster
    /// lacks some partitions and cannot go on.
    pub fn group_lost(&self, alive: NodeSet) -> Option<u16> {
        self.groups
            .iter()
            .find(|members| !members.iter().any(|&n| alive.contains(n)))
            .and_then(|members| self.node(members[0]))
            .map(|node| node.node_group)
    }

    /// Whether `survivors` hold every member of some node group (of `members`, the
    /// membership they survive from): then no other part of the membership holds any node
    /// of that group, so no other part can go on, and these need no arbitration (NDB's
    /// rule; a plain majority is not enough with more than two replicas).
    pub fn holds_a_whole_group(&self, members: NodeSet, survivors: NodeSet) -> bool {
        self.groups.iter().any(|group| {
            let in_membership: Vec<NodeId> = group
                .iter()
                .copied()
                .filter(|&n| members.contains(n))
                .collect();
            !in_membership.is_empty() && in_membership.iter().all(|&n| survivors.contains(n))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: u8, group: u16) -> DataNodeShape {
        DataNodeShape {
            node: NodeId(id),
            node_group: group,
            tc_instances: 1,
            ldm_instances: 2,
        }
    }

    #[test]
    fn nodes_form_their_groups_in_node_order() {
        let shape =
            ClusterShape::new(2, vec![node(4, 1), node(1, 0), node(3, 1), node(2, 0)]).unwrap();
        assert_eq!(
            shape.node_groups(),
            [vec![NodeId(1), NodeId(2)], vec![NodeId(3), NodeId(4)]]
        );
        assert_eq!(shape.node(NodeId(3)).unwrap().node_group, 1);
    }

    #[test]
    fn a_cluster_survives_while_every_group_keeps_a_node() {
        let shape =
            ClusterShape::new(2, vec![node(1, 0), node(2, 0), node(3, 1), node(4, 1)]).unwrap();
        let alive = |ids: &[u8]| NodeSet::of(ids.iter().map(|&id| NodeId(id)));
        assert_eq!(shape.group_lost(alive(&[1, 2, 3, 4])), None);
        assert_eq!(shape.group_lost(alive(&[2, 3])), None);
        assert_eq!(shape.group_lost(alive(&[1, 2])), Some(1));
        assert_eq!(alive(&[2, 3]).minus(alive(&[3])), alive(&[2]));
        assert!(alive(&[2]).is_subset_of(alive(&[2, 3])));
        assert_eq!(
            alive(&[3, 1]).iter().collect::<Vec<_>>(),
            [NodeId(1), NodeId(3)]
        );
        assert_eq!(format!("{:?}", alive(&[3, 1])), "{1, 3}");
    }

    #[test]
    fn a_group_short_of_replicas_is_refused() {
        let error = ClusterShape::new(2, vec![node(1, 0), node(2, 0), node(3, 1)]).unwrap_err();
        assert_eq!(
            error,
            ShapeError::IncompleteGroup {
                group: 1,
                nodes: 1,
                replicas: 2
            }
        );
        assert_eq!(
            ClusterShape::new(1, vec![node(1, 0), node(1, 1)]).unwrap_err(),
            ShapeError::DuplicateNode(NodeId(1))
        );
    }
}
