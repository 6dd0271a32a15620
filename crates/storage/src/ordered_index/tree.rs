//! The ordered index's entries: a B+tree with wide nodes searched by bisection.
//!
//! Made for what std's `BTreeSet` cannot do cheaply: an entry past the last one (a load in
//! key order, AUTO_INCREMENT keys) is appended to the last leaf after one comparison,
//! where a search compares at every level. Entries live in leaves; an inner node's
//! separators are copies of the first entry of each child but the first: child `i` holds
//! the entries from `separators[i - 1]` up to, not including, `separators[i]`.
//!
//! Nodes live in an arena (`nodes`, freed slots reused) and are named by index, so the
//! tree needs no `unsafe`. Removal frees emptied nodes and merges a node that fell below a
//! quarter full into a neighbour with room; the root gives way to its only child.

use std::ops::Bound;

use crate::prefetch::prefetch;

/// Entries (or separators) a node holds at most.
const NODE_ENTRIES_MAX: usize = 64;

type NodeId = usize;

/// What the tree holds: ordered, and cheap to compare (the tree compares a few dozen
/// times per insert), with perhaps some bytes on the heap.
pub(super) trait TreeEntry: Ord + Clone {
    /// Bytes it holds on the heap (a copy kept as a separator holds as many again).
    fn heap_bytes(&self) -> usize;
}

/// A node's entries (or separators) in order.
struct Sorted<T> {
    items: Vec<T>,
}

impl<T: TreeEntry> Sorted<T> {
    fn with_capacity(capacity: usize) -> Self {
        Self {
            items: Vec::with_capacity(capacity),
        }
    }

    fn len(&self) -> usize {
        self.items.len()
    }

    /// How many items are below `probe` (`or_equal`: at most `probe`).
    fn count_below(&self, probe: &T, or_equal: bool) -> usize {
        prefetch(&self.items);
        if or_equal {
            self.items.partition_point(|item| item <= probe)
        } else {
            self.items.partition_point(|item| item < probe)
        }
    }

    /// Where `probe` is (`Ok`) or would go (`Err`).
    fn search(&self, probe: &T) -> Result<usize, usize> {
        let at = self.count_below(probe, false);
        match self.items.get(at) {
            Some(item) if item == probe => Ok(at),
            _ => Err(at),
        }
    }

    fn insert(&mut self, at: usize, item: T) {
        self.items.insert(at, item);
    }

    fn remove(&mut self, at: usize) -> T {
        self.items.remove(at)
    }

    fn push(&mut self, item: T) {
        self.items.push(item);
    }

    fn pop(&mut self) -> Option<T> {
        self.items.pop()
    }

    /// Moves the items from `at` on to the end of `into`.
    fn move_tail(&mut self, at: usize, into: &mut Self) {
        into.items.extend(self.items.drain(at..));
    }
}

enum Node<T> {
    Leaf(Sorted<T>),
    Inner {
        separators: Sorted<T>,
        children: Vec<NodeId>,
    },
}

impl<T: TreeEntry> Node<T> {
    fn empty_leaf() -> Self {
        Node::Leaf(Sorted::with_capacity(0))
    }

    /// Whether it holds a node's buffers (every node but an empty root leaf does).
    fn has_buffers(&self) -> bool {
        match self {
            Node::Leaf(entries) => entries.items.capacity() > 0,
            Node::Inner { .. } => true,
        }
    }

    /// Entries of a leaf, children of an inner node.
    fn width(&self) -> usize {
        match self {
            Node::Leaf(entries) => entries.len(),
            Node::Inner { children, .. } => children.len(),
        }
    }
}

pub(super) struct EntryTree<T> {
    nodes: Vec<Node<T>>,
    free: Vec<NodeId>,
    root: NodeId,
    len: usize,
    /// [`NODE_ENTRIES_MAX`], smaller in tests to grow deep trees from few entries.
    node_max: usize,
    /// Levels of nodes (1: the root is a leaf).
    height: usize,
    /// Nodes holding a node's buffers (each made with room for a node's overflow, so
    /// never grown): what the tree's memory is counted by.
    buffered_nodes: usize,
    /// Heap bytes of the separators' entries (copies of entries, kept until their node
    /// merges or empties, perhaps after the entry itself is gone).
    separator_heap_bytes: usize,
    /// The most heap bytes an entry ever held here: what a new separator may take.
    entry_heap_bytes_max: usize,
    /// The most bytes one node's buffers take.
    node_buffer_bytes: usize,
}

/// A node split in two: the new right node and the first entry it holds.
struct Split<T> {
    separator: T,
    right: NodeId,
}

impl<T: TreeEntry> EntryTree<T> {
    pub fn new() -> Self {
        Self::with_node_max(NODE_ENTRIES_MAX)
    }

    pub fn with_node_max(node_max: usize) -> Self {
        assert!(
            node_max >= 4,
            "a node must split into halves of two at least"
        );
        Self {
            nodes: vec![Node::empty_leaf()],
            free: Vec::new(),
            root: 0,
            len: 0,
            node_max,
            height: 1,
            buffered_nodes: 0,
            separator_heap_bytes: 0,
            entry_heap_bytes_max: 0,
            node_buffer_bytes: (node_max + 1) * std::mem::size_of::<T>()
                + (node_max + 2) * std::mem::size_of::<NodeId>(),
        }
    }

    /// Heap bytes the tree holds at most now, its entries' own heap bytes aside: every
    /// buffered node at its buffers' size, the arena and free list at their capacity, and
    /// the separators' heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.heap_bytes_with(self.buffered_nodes, self.nodes.capacity())
    }

    /// [`EntryTree::heap_bytes`] after any one insert of an entry holding
    /// `entry_heap_bytes`: a split at every level and a new root (or the empty root
    /// leaf's first buffers), the arena grown for them, and a new separator (a copy of
    /// the entry or of one before it).
    pub fn heap_bytes_after_insert_max(&self, entry_heap_bytes: usize) -> usize {
        let separator = entry_heap_bytes.max(self.entry_heap_bytes_max);
        let new_nodes = match &self.nodes[self.root] {
            // A small index's one leaf: it splits only when full.
            Node::Leaf(entries) if entries.items.capacity() == 0 => 1,
            Node::Leaf(entries) if entries.len() < self.node_max => 0,
            _ => self.height + 1,
        };
        let slots_needed = self.nodes.len() + new_nodes.saturating_sub(self.free.len());
        let arena = match slots_needed > self.nodes.capacity() {
            true => slots_needed.max(2 * self.nodes.capacity()).max(4),
            false => self.nodes.capacity(),
        };
        self.heap_bytes_with(self.buffered_nodes + new_nodes, arena) + separator
    }

    fn heap_bytes_with(&self, buffered_nodes: usize, arena_slots: usize) -> usize {
        if buffered_nodes == 0 && self.is_fresh() {
            return 0; // its one empty slot is the index's own, as its struct is
        }
        // The free list never holds more than every slot, grown by doubling.
        let free_list = (2 * arena_slots + 4) * std::mem::size_of::<NodeId>();
        buffered_nodes * self.node_buffer_bytes
            + arena_slots * std::mem::size_of::<Node<T>>()
            + free_list
            + self.separator_heap_bytes
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is as new: one empty leaf in an arena of one slot.
    fn is_fresh(&self) -> bool {
        self.len == 0 && self.nodes.capacity() == 1 && self.free.capacity() == 0
    }

    pub fn contains(&self, entry: &T) -> bool {
        let mut node = self.root;
        loop {
            match &self.nodes[node] {
                Node::Leaf(entries) => return entries.search(entry).is_ok(),
                Node::Inner {
                    separators,
                    children,
                } => node = children[separators.count_below(entry, true)],
            }
        }
    }

    /// Adds `entry`; false if it was there already.
    pub fn insert(&mut self, entry: T) -> bool {
        self.entry_heap_bytes_max = self.entry_heap_bytes_max.max(entry.heap_bytes());
        let Err(entry) = self.append(entry) else {
            return true;
        };
        let Some(split) = self.insert_in(self.root, entry) else {
            return false;
        };
        if let Some(Split { separator, right }) = split {
            let mut separators = self.sorted();
            separators.push(separator);
            let mut children = Vec::with_capacity(self.node_max + 2);
            children.extend([self.root, right]);
            self.root = self.allocate(Node::Inner {
                separators,
                children,
            });
            self.height += 1;
        }
        self.len += 1;
        true
    }

    /// Adds `entry` at the end of the last leaf if it sorts after every entry and the leaf
    /// has room: the keys of a load in key order, or of AUTO_INCREMENT rows, cost a walk
    /// down the right edge and one comparison instead of a search at every level.
    /// Gives `entry` back when it goes elsewhere.
    fn append(&mut self, entry: T) -> Result<(), T> {
        let mut node = self.root;
        while let Node::Inner { children, .. } = &self.nodes[node] {
            node = *children.last().expect("an inner node has children");
        }
        let Node::Leaf(entries) = &mut self.nodes[node] else {
            unreachable!("the walk ends at a leaf");
        };
        let after_last = entries.items.last().is_some_and(|last| &entry > last);
        if !after_last || entries.len() >= self.node_max {
            return Err(entry);
        }
        entries.push(entry);
        self.len += 1;
        Ok(())
    }

    /// `None`: the entry was there. `Some(split)`: added, and `node` split if it overflowed.
    fn insert_in(&mut self, node: NodeId, entry: T) -> Option<Option<Split<T>>> {
        let node_max = self.node_max;
        match &mut self.nodes[node] {
            Node::Leaf(entries) => {
                let at = entries.search(&entry).err()?;
                if entries.items.capacity() == 0 {
                    // The empty root leaf's first entry.
                    *entries = Sorted::with_capacity(node_max + 1);
                    self.buffered_nodes += 1;
                }
                entries.insert(at, entry);
                if entries.len() <= node_max {
                    return Some(None);
                }
                // Appending at the end (a load in key order) leaves the left node full; a
                // node filled anywhere else splits in halves.
                let keep = if at + 1 == entries.len() {
                    node_max
                } else {
                    entries.len() / 2
                };
                let mut right = Sorted::with_capacity(node_max + 1);
                entries.move_tail(keep, &mut right);
                let separator = right.items[0].clone();
                self.separator_heap_bytes += separator.heap_bytes();
                Some(Some(Split {
                    separator,
                    right: self.allocate(Node::Leaf(right)),
                }))
            }
            Node::Inner {
                separators,
                children,
            } => {
                let at = separators.count_below(&entry, true);
                let child = children[at];
                let Some(split) = self.insert_in(child, entry)? else {
                    return Some(None);
                };
                let (separators, children) = self.inner_mut(node);
                separators.insert(at, split.separator);
                children.insert(at + 1, split.right);
                if separators.len() <= node_max {
                    return Some(None);
                }
                Some(Some(self.split_inner(node)))
            }
        }
    }

    /// Splits an overflowing inner node in halves; the separator between them moves up,
    /// as it bounds them both.
    fn split_inner(&mut self, node: NodeId) -> Split<T> {
        let mut right_separators = self.sorted();
        let mut right_children = Vec::with_capacity(self.node_max + 2);
        let (separators, children) = self.inner_mut(node);
        let keep = separators.len() / 2;
        separators.move_tail(keep + 1, &mut right_separators);
        right_children.extend(children.drain(keep + 1..));
        let separator = separators.pop().expect("kept at least two");
        Split {
            separator,
            right: self.allocate(Node::Inner {
                separators: right_separators,
                children: right_children,
            }),
        }
    }

    /// The separators and children of an inner node.
    fn inner_mut(&mut self, node: NodeId) -> (&mut Sorted<T>, &mut Vec<NodeId>) {
        match &mut self.nodes[node] {
            Node::Inner {
                separators,
                children,
            } => (separators, children),
            Node::Leaf(_) => unreachable!("node {node} is an inner node"),
        }
    }

    /// An empty list with room for a node's overflow, so it never reallocates.
    fn sorted(&self) -> Sorted<T> {
        Sorted::with_capacity(self.node_max + 1)
    }

    fn allocate(&mut self, node: Node<T>) -> NodeId {
        self.buffered_nodes += usize::from(node.has_buffers());
        match self.free.pop() {
            Some(id) => {
                self.nodes[id] = node;
                id
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        }
    }

    fn release(&mut self, node: NodeId) {
        self.discard(node);
        self.free.push(node);
    }

    /// Drops a node's contents, leaving an empty leaf in its slot.
    fn discard(&mut self, node: NodeId) {
        if let Node::Inner { separators, .. } = self.take(node) {
            self.separator_heap_bytes -= heap_bytes_of(&separators.items);
        }
    }

    /// Takes a node out of its slot, leaving an empty leaf there.
    fn take(&mut self, node: NodeId) -> Node<T> {
        let taken = std::mem::replace(&mut self.nodes[node], Node::empty_leaf());
        self.buffered_nodes -= usize::from(taken.has_buffers());
        taken
    }

    /// Removes `entry`; false if it was not there.
    pub fn remove(&mut self, entry: &T) -> bool {
        if !self.remove_in(self.root, entry) {
            return false;
        }
        self.len -= 1;
        if self.len == 0 {
            // Emptied: the arena and the separators go too.
            *self = Self::with_node_max(self.node_max);
            return true;
        }
        // A root left with one child gives way to it.
        while let Node::Inner { children, .. } = &self.nodes[self.root] {
            if children.len() > 1 {
                break;
            }
            let old_root = self.root;
            match children.first().copied() {
                Some(child) => {
                    self.root = child;
                    self.height -= 1;
                    self.release(old_root);
                }
                None => {
                    // Its slot stays the root, an empty leaf again: nothing is allocated.
                    self.discard(old_root);
                    self.height = 1;
                }
            }
        }
        true
    }

    fn remove_in(&mut self, node: NodeId, entry: &T) -> bool {
        match &mut self.nodes[node] {
            Node::Leaf(entries) => match entries.search(entry) {
                Ok(at) => {
                    entries.remove(at);
                    true
                }
                Err(_) => false,
            },
            Node::Inner {
                separators,
                children,
            } => {
                let at = separators.count_below(entry, true);
                let child = children[at];
                if !self.remove_in(child, entry) {
                    return false;
                }
                self.after_removal(node, at);
                true
            }
        }
    }

    /// Child `at` of `node` lost an entry: free it if empty, or merge it into a neighbour
    /// if it fell below a quarter full (or to one child or entry, in the small nodes tests
    /// use, where a quarter is one) and they fit in one node.
    fn after_removal(&mut self, node: NodeId, at: usize) {
        let Node::Inner { children, .. } = &self.nodes[node] else {
            unreachable!("a parent is an inner node");
        };
        let child = children[at];
        let width = self.nodes[child].width();
        if width == 0 {
            let (separators, children) = self.inner_mut(node);
            children.remove(at);
            if separators.len() > 0 {
                // Child `at` began at separator `at - 1`; the first child has none.
                let dropped = separators.remove(at.saturating_sub(1));
                self.separator_heap_bytes -= dropped.heap_bytes();
            }
            self.release(child);
            return;
        }
        if width >= (self.node_max / 4).max(2) {
            return;
        }
        let neighbours = children.len();
        let fits = |tree: &Self, other: NodeId| {
            // An inner merge also pulls down the separator between them.
            tree.nodes[other].width() + width <= tree.node_max
        };
        if at > 0 && fits(self, children[at - 1]) {
            self.merge(node, at - 1);
        } else if at + 1 < neighbours && fits(self, children[at + 1]) {
            self.merge(node, at);
        }
    }

    /// Merges child `left + 1` of `node` into child `left`.
    fn merge(&mut self, node: NodeId, left: usize) {
        let (separators, children) = self.inner_mut(node);
        let right = children.remove(left + 1);
        let between = separators.remove(left);
        let left = children[left];
        let moved = self.take(right);
        match (&mut self.nodes[left], moved) {
            (Node::Leaf(entries), Node::Leaf(mut more)) => {
                // Leaves are bounded by separators: the one between them goes.
                self.separator_heap_bytes -= between.heap_bytes();
                more.move_tail(0, entries);
            }
            (
                Node::Inner {
                    separators,
                    children,
                },
                Node::Inner {
                    separators: mut more_separators,
                    children: more_children,
                },
            ) => {
                separators.push(between);
                more_separators.move_tail(0, separators);
                children.extend(more_children);
            }
            _ => unreachable!("siblings are at one depth"),
        }
        self.free.push(right);
    }

    /// The greatest entry.
    pub fn last(&self) -> Option<&T> {
        let mut node = self.root;
        loop {
            match &self.nodes[node] {
                Node::Leaf(entries) => return entries.items.last(),
                Node::Inner { children, .. } => node = *children.last()?,
            }
        }
    }

    /// Visits the entries between the bounds in order (in reverse when `descending`)
    /// until `visit` returns false.
    pub fn visit_range(
        &self,
        low: Bound<&T>,
        high: Bound<&T>,
        descending: bool,
        visit: &mut impl FnMut(&T) -> bool,
    ) {
        self.visit_in(self.root, low, high, descending, visit);
    }

    /// False once `visit` asked to stop.
    fn visit_in(
        &self,
        node: NodeId,
        low: Bound<&T>,
        high: Bound<&T>,
        descending: bool,
        visit: &mut impl FnMut(&T) -> bool,
    ) -> bool {
        match &self.nodes[node] {
            Node::Leaf(entries) => {
                let start = match low {
                    Bound::Unbounded => 0,
                    Bound::Included(low) => entries.count_below(low, false),
                    Bound::Excluded(low) => entries.count_below(low, true),
                };
                let end = match high {
                    Bound::Unbounded => entries.len(),
                    Bound::Included(high) => entries.count_below(high, true),
                    Bound::Excluded(high) => entries.count_below(high, false),
                };
                let range = entries.items.get(start..end).unwrap_or_default();
                if descending {
                    range.iter().rev().all(visit)
                } else {
                    range.iter().all(visit)
                }
            }
            Node::Inner {
                separators,
                children,
            } => {
                // Child i holds entries from separator i - 1 to before separator i.
                let first = match low {
                    Bound::Unbounded => 0,
                    Bound::Included(low) | Bound::Excluded(low) => {
                        separators.count_below(low, true)
                    }
                };
                let last = match high {
                    Bound::Unbounded => separators.len(),
                    Bound::Included(high) => separators.count_below(high, true),
                    Bound::Excluded(high) => separators.count_below(high, false),
                };
                let range = children.get(first..=last).unwrap_or_default();
                let mut visit_child =
                    |&child: &NodeId| self.visit_in(child, low, high, descending, visit);
                if descending {
                    range.iter().rev().all(&mut visit_child)
                } else {
                    range.iter().all(&mut visit_child)
                }
            }
        }
    }
}

#[cfg(test)]
impl<T: TreeEntry> EntryTree<T> {
    /// Asserts the counts the memory bound is made of: buffered nodes, the separators'
    /// heap bytes, the height.
    pub(super) fn check_counts(&self) {
        let live: Vec<&Node<T>> = (0..self.nodes.len())
            .filter(|id| !self.free.contains(id))
            .map(|id| &self.nodes[id])
            .collect();
        let buffered = live.iter().filter(|node| node.has_buffers()).count();
        assert_eq!(self.buffered_nodes, buffered, "buffered nodes");
        let separators: usize = (live.iter())
            .map(|node| match node {
                Node::Inner { separators, .. } => heap_bytes_of(&separators.items),
                Node::Leaf(_) => 0,
            })
            .sum();
        assert_eq!(
            self.separator_heap_bytes, separators,
            "separators' heap bytes"
        );
        let (mut height, mut node) = (1, self.root);
        while let Node::Inner { children, .. } = &self.nodes[node] {
            (height, node) = (height + 1, children[0]);
        }
        assert_eq!(self.height, height, "height");
        assert!(
            self.heap_bytes() >= self.heap_bytes_exact(),
            "the bound holds"
        );
    }

    /// The heap bytes the tree holds, its entries' own aside, from its buffers' real
    /// capacities: what [`EntryTree::heap_bytes`] must never be below.
    pub(super) fn heap_bytes_exact(&self) -> usize {
        let sorted = |s: &Sorted<T>| s.items.capacity() * std::mem::size_of::<T>();
        let nodes: usize = (self.nodes.iter())
            .map(|node| match node {
                Node::Leaf(entries) => sorted(entries),
                Node::Inner {
                    separators,
                    children,
                } => {
                    sorted(separators)
                        + children.capacity() * std::mem::size_of::<NodeId>()
                        + heap_bytes_of(&separators.items)
                }
            })
            .sum();
        if self.is_fresh() {
            return 0;
        }
        nodes
            + self.nodes.capacity() * std::mem::size_of::<Node<T>>()
            + self.free.capacity() * std::mem::size_of::<NodeId>()
    }
}

/// Heap bytes of `items`.
fn heap_bytes_of<T: TreeEntry>(items: &[T]) -> usize {
    items.iter().map(TreeEntry::heap_bytes).sum()
}

#[cfg(test)]
mod tests;
