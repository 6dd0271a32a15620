//! Block addresses: which node, which block, which instance of it.

use std::fmt;

/// A node of the cluster. Node ids are 1..=255; 0 means "this node" inside a process that has
/// not been given an id yet (a standalone runtime or a test).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct NodeId(pub u8);

/// A kind of block (transaction coordinator, local data manager, ...). The numbers are
/// assigned by the crate that defines the blocks; the runtime only routes on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct BlockId(pub u8);

/// Where a signal goes: one instance of one block on one node.
///
/// Packed into 32 bits (node 8, block 8, instance 16) so that a receive thread can route a
/// signal by reading one little-endian word of its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct BlockAddress {
    pub node: NodeId,
    pub block: BlockId,
    pub instance: u16,
}

impl BlockAddress {
    pub const fn new(node: NodeId, block: BlockId, instance: u16) -> Self {
        Self {
            node,
            block,
            instance,
        }
    }

    /// The address as one word: `node << 24 | block << 16 | instance`.
    pub const fn to_word(self) -> u32 {
        (self.node.0 as u32) << 24 | (self.block.0 as u32) << 16 | self.instance as u32
    }

    pub const fn from_word(word: u32) -> Self {
        Self {
            node: NodeId((word >> 24) as u8),
            block: BlockId((word >> 16) as u8),
            instance: word as u16,
        }
    }
}

impl fmt::Display for BlockAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "node{}:block{}.{}",
            self.node.0, self.block.0, self.instance
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_survives_packing_into_a_word() {
        let address = BlockAddress::new(NodeId(255), BlockId(7), 65_535);
        assert_eq!(BlockAddress::from_word(address.to_word()), address);
        assert_eq!(address.to_word(), 0xFF07_FFFF);
    }
}
