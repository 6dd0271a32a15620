//! Which thread hosts each block instance of this node.

use kista_signal::{BlockAddress, NodeId};

const NO_THREAD: u16 = u16::MAX;

/// Block instance → hosting thread, read by every thread on every send.
pub(crate) struct RouteTable {
    node: NodeId,
    /// `[block id][instance]` → thread index, or `NO_THREAD`.
    threads: Vec<Vec<u16>>,
}

impl RouteTable {
    pub fn new(node: NodeId) -> Self {
        Self {
            node,
            threads: vec![Vec::new(); 256],
        }
    }

    /// Returns false if the address was already placed.
    pub fn place(&mut self, address: BlockAddress, thread: usize) -> bool {
        let instances = &mut self.threads[usize::from(address.block().0)];
        let instance = usize::from(address.instance());
        if instances.len() <= instance {
            instances.resize(instance + 1, NO_THREAD);
        }
        if instances[instance] != NO_THREAD {
            return false;
        }
        instances[instance] = thread as u16;
        true
    }

    /// Whether `address` is on this node (whether or not a block is there).
    pub fn is_local(&self, address: BlockAddress) -> bool {
        address.node() == self.node
    }

    #[inline]
    pub fn thread_of(&self, address: BlockAddress) -> Option<usize> {
        if address.node() != self.node {
            return None;
        }
        let instances = &self.threads[usize::from(address.block().0)];
        match instances.get(usize::from(address.instance())) {
            Some(&thread) if thread != NO_THREAD => Some(usize::from(thread)),
            _ => None,
        }
    }
}
