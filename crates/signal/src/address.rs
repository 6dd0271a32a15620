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
/// Stored packed in one word (`node << 24 | block << 16 | instance`), exactly as it sits in a
/// signal's header, so routing reads it without converting and a receive thread can route a
/// signal by reading one little-endian word of its wire form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct BlockAddress(u32);

impl BlockAddress {
    #[inline]
    pub const fn new(node: NodeId, block: BlockId, instance: u16) -> Self {
        Self((node.0 as u32) << 24 | (block.0 as u32) << 16 | instance as u32)
    }

    #[inline]
    pub const fn node(self) -> NodeId {
        NodeId((self.0 >> 24) as u8)
    }

    #[inline]
    pub const fn block(self) -> BlockId {
        BlockId((self.0 >> 16) as u8)
    }

    #[inline]
    pub const fn instance(self) -> u16 {
        self.0 as u16
    }

    /// The packed word.
    #[inline]
    pub const fn to_word(self) -> u32 {
        self.0
    }

    #[inline]
    pub const fn from_word(word: u32) -> Self {
        Self(word)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for BlockAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "node{}:block{}.{}",
            self.node().0,
            self.block().0,
            self.instance()
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
        assert_eq!(
            (address.node(), address.block(), address.instance()),
            (NodeId(255), BlockId(7), 65_535)
        );
    }
}
