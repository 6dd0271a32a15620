//! The ordered index's entries: a B+tree with wide nodes searched by bisection.
//!
//! Made for what std's `BTreeSet` cannot do cheaply: an entry past the last one (a load in
//! key order, AUTO_INCREMENT keys) is appended to the last leaf after one comparison,
//! where a search compares at every level. Entries live in leaves; an inner node's
//! separators are copies of the first entry of each child but the first: child `i` holds
//! the entries from `separators[i - 1]` up to, not including, `separators[i]`.
//!
//! A node is one allocation holding its entries (or its separators and children) inline,
//! and a parent holds its children's pointers: a step down reads one block of memory, whose
//! lines are asked for together. In a tree larger than the cache that is one wait for
//! memory a level; an arena of nodes named by index, which this replaced, cost three (the
//! node's slot, its entries, its children) and an insert into the import benchmark's index
//! on `k` spent most of its time in them. Removal frees emptied nodes and merges a node
//! that fell below a quarter full into a neighbour with room; the root gives way to its
//! only child.

use std::ops::Bound;

use arrayvec::ArrayVec;

use crate::prefetch::prefetch;

/// Entries (or separators) a node holds at most.
const NODE_ENTRIES_MAX: usize = 64;

/// Room a node is made with: its most entries and the one that overflows it until it splits.
const NODE_CAPACITY: usize = NODE_ENTRIES_MAX + 1;

/// What the tree holds: ordered, and cheap to compare (the tree compares a few dozen
/// times per insert), with perhaps some bytes on the heap.
pub(super) trait TreeEntry: Ord + Clone {
    /// Bytes it holds on the heap (a copy kept as a separator holds as many again).
    fn heap_bytes(&self) -> usize;

    /// A number that never decreases along the order (`a < b` implies
    /// `a.order_hint() <= b.order_hint()`), cheap to make: an entry whose hint is below
    /// the greatest hint inserted cannot go after the last entry.
    fn order_hint(&self) -> u128;
}

/// A node's entries (or separators) in order.
type Sorted<T> = ArrayVec<T, NODE_CAPACITY>;

/// An inner node: separators and, one more, children.
struct Inner<T> {
    separators: Sorted<T>,
    children: ArrayVec<Node<T>, { NODE_CAPACITY + 1 }>,
}

enum Node<T> {
    Leaf(Box<Sorted<T>>),
    Inner(Box<Inner<T>>),
}

impl<T> Node<T> {
    /// Entries of a leaf, children of an inner node.
    fn width(&self) -> usize {
        match self {
            Node::Leaf(entries) => entries.len(),
            Node::Inner(inner) => inner.children.len(),
        }
    }

    /// Asks for all of the node's memory at once, before its search reads it.
    #[inline]
    fn prefetch(&self) {
        match self {
            Node::Leaf(entries) => prefetch(std::slice::from_ref(&**entries)),
            Node::Inner(inner) => prefetch(std::slice::from_ref(&inner.separators)),
        }
    }
}

/// How many items of `items` are below `probe` (`or_equal`: at most `probe`).
#[inline]
fn count_below<T: Ord>(items: &[T], probe: &T, or_equal: bool) -> usize {
    if or_equal {
        items.partition_point(|item| item <= probe)
    } else {
        items.partition_point(|item| item < probe)
    }
}

/// Where `probe` is in `items` (`Ok`) or would go (`Err`).
#[inline]
fn search<T: Ord>(items: &[T], probe: &T) -> Result<usize, usize> {
    let at = count_below(items, probe, false);
    match items.get(at) {
        Some(item) if item == probe => Ok(at),
        _ => Err(at),
    }
}

fn new_inner<T>() -> Box<Inner<T>> {
    Box::new(Inner {
        separators: Sorted::new(),
        children: ArrayVec::new(),
    })
}

pub(super) struct EntryTree<T> {
    /// `None` while empty: an index that never held an entry allocates nothing.
    root: Option<Node<T>>,
    shape: Shape,
}

/// The tree's counts, apart from its nodes so that a walk down them can update these.
struct Shape {
    len: usize,
    /// [`NODE_ENTRIES_MAX`], smaller in tests to grow deep trees from few entries.
    node_max: usize,
    /// Levels of nodes (1: the root is a leaf; 0: empty).
    height: usize,
    leaves: usize,
    inner_nodes: usize,
    /// Heap bytes of the separators' entries (copies of entries, kept until their node
    /// merges or empties, perhaps after the entry itself is gone).
    separator_heap_bytes: usize,
    /// The most heap bytes an entry ever held here: what a new separator may take.
    entry_heap_bytes_max: usize,
    /// The greatest [`TreeEntry::order_hint`] of an entry inserted since the tree was last
    /// empty (the greatest entry's, unless that was removed): an entry below it skips the
    /// walk down the right edge that an append past the last entry takes.
    order_hint_max: u128,
}

/// A node split in two: the new right node and the first entry it holds.
struct Split<T> {
    separator: T,
    right: Node<T>,
}

impl<T: TreeEntry> EntryTree<T> {
    pub fn new() -> Self {
        Self::with_node_max(NODE_ENTRIES_MAX)
    }

    pub fn with_node_max(node_max: usize) -> Self {
        assert!(
            (4..=NODE_ENTRIES_MAX).contains(&node_max),
            "a node must split into halves of two at least, and fit its buffers"
        );
        Self {
            root: None,
            shape: Shape {
                len: 0,
                node_max,
                height: 0,
                leaves: 0,
                inner_nodes: 0,
                separator_heap_bytes: 0,
                entry_heap_bytes_max: 0,
                order_hint_max: 0,
            },
        }
    }

    /// Heap bytes the tree holds, its entries' own heap bytes aside: its nodes and the
    /// separators' heap bytes.
    pub fn heap_bytes(&self) -> usize {
        node_bytes::<T>(self.shape.leaves, self.shape.inner_nodes) + self.shape.separator_heap_bytes
    }

    /// [`EntryTree::heap_bytes`] after any one insert of an entry holding
    /// `entry_heap_bytes`: a split at every level and a new root (or the first leaf), and a
    /// new separator (a copy of the entry or of one before it).
    pub fn heap_bytes_after_insert_max(&self, entry_heap_bytes: usize) -> usize {
        let shape = &self.shape;
        let separator = entry_heap_bytes.max(shape.entry_heap_bytes_max);
        let (new_leaves, new_inner_nodes) = match &self.root {
            None => (1, 0),
            // A small index's one leaf: it splits only when full.
            Some(Node::Leaf(entries)) if entries.len() < shape.node_max => (0, 0),
            Some(_) => (1, shape.height),
        };
        node_bytes::<T>(
            shape.leaves + new_leaves,
            shape.inner_nodes + new_inner_nodes,
        ) + shape.separator_heap_bytes
            + separator
    }

    pub fn len(&self) -> usize {
        self.shape.len
    }

    pub fn contains(&self, entry: &T) -> bool {
        let mut next = self.root.as_ref();
        while let Some(node) = next {
            node.prefetch();
            match node {
                Node::Leaf(entries) => return search(entries, entry).is_ok(),
                Node::Inner(inner) => {
                    let child = count_below(&inner.separators, entry, true);
                    next = inner.children.get(child);
                }
            }
        }
        false
    }

    /// Adds `entry`; false if it was there already.
    pub fn insert(&mut self, entry: T) -> bool {
        let Self { root, shape } = self;
        shape.entry_heap_bytes_max = shape.entry_heap_bytes_max.max(entry.heap_bytes());
        let Some(node) = root else {
            shape.order_hint_max = entry.order_hint();
            let mut first = Box::new(Sorted::new());
            first.push(entry);
            *root = Some(Node::Leaf(first));
            (shape.len, shape.leaves, shape.height) = (1, 1, 1);
            return true;
        };
        let Err(entry) = shape.append(node, entry) else {
            return true;
        };
        let Some(split) = shape.insert_in(node, entry) else {
            return false;
        };
        if let Some(Split { separator, right }) = split {
            let mut new_root = new_inner();
            new_root.separators.push(separator);
            let Some(old_root) = root.take() else {
                unreachable!("the root was split")
            };
            new_root.children.extend([old_root, right]);
            *root = Some(Node::Inner(new_root));
            shape.inner_nodes += 1;
            shape.height += 1;
        }
        shape.len += 1;
        true
    }

    /// Removes `entry`; false if it was not there.
    pub fn remove(&mut self, entry: &T) -> bool {
        let Self { root, shape } = self;
        let Some(node) = root else {
            return false;
        };
        if !shape.remove_in(node, entry) {
            return false;
        }
        shape.len -= 1;
        if shape.len == 0 {
            // Emptied: the nodes and the separators go too.
            *self = Self::with_node_max(self.shape.node_max);
            return true;
        }
        // A root left with one child gives way to it.
        while let Some(Node::Inner(inner)) = root {
            if inner.children.len() > 1 {
                break;
            }
            let only_child = inner
                .children
                .pop()
                .expect("a tree with entries has a leaf");
            assert!(inner.separators.is_empty(), "one child, no separators");
            *root = Some(only_child);
            shape.inner_nodes -= 1;
            shape.height -= 1;
        }
        true
    }

    /// The greatest entry.
    pub fn last(&self) -> Option<&T> {
        let mut node = self.root.as_ref()?;
        loop {
            match node {
                Node::Leaf(entries) => return entries.last(),
                Node::Inner(inner) => node = inner.children.last()?,
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
        if let Some(root) = &self.root {
            visit_in(root, low, high, descending, visit);
        }
    }
}

/// The bytes of `leaves` leaves and `inner_nodes` inner nodes.
fn node_bytes<T>(leaves: usize, inner_nodes: usize) -> usize {
    leaves * std::mem::size_of::<Sorted<T>>() + inner_nodes * std::mem::size_of::<Inner<T>>()
}

impl Shape {
    /// Adds `entry` at the end of the last leaf if it sorts after every entry and the leaf
    /// has room: the keys of a load in key order, or of AUTO_INCREMENT rows, cost a walk
    /// down the right edge and one comparison instead of a search at every level.
    /// Gives `entry` back when it goes elsewhere.
    fn append<T: TreeEntry>(&mut self, root: &mut Node<T>, entry: T) -> Result<(), T> {
        // Most entries of a load in no key order fall below the greatest: no walk for them.
        let hint = entry.order_hint();
        if hint < self.order_hint_max {
            return Err(entry);
        }
        self.order_hint_max = hint;
        let mut node = root;
        while let Node::Inner(inner) = node {
            node = inner
                .children
                .last_mut()
                .expect("an inner node has children");
        }
        let Node::Leaf(entries) = node else {
            unreachable!("the walk ends at a leaf");
        };
        let after_last = entries.last().is_some_and(|last| &entry > last);
        if !after_last || entries.len() >= self.node_max {
            return Err(entry);
        }
        entries.push(entry);
        self.len += 1;
        Ok(())
    }

    /// `None`: the entry was there. `Some(split)`: added, and `node` split if it overflowed.
    fn insert_in<T: TreeEntry>(
        &mut self,
        node: &mut Node<T>,
        entry: T,
    ) -> Option<Option<Split<T>>> {
        node.prefetch();
        match node {
            Node::Leaf(entries) => {
                let at = search(entries, &entry).err()?;
                entries.insert(at, entry);
                if entries.len() <= self.node_max {
                    return Some(None);
                }
                // Appending at the end (a load in key order) leaves the left node full; a
                // node filled anywhere else splits in halves.
                let keep = if at + 1 == entries.len() {
                    self.node_max
                } else {
                    entries.len() / 2
                };
                let mut right = Box::new(Sorted::new());
                right.extend(entries.drain(keep..));
                let separator = right[0].clone();
                self.separator_heap_bytes += separator.heap_bytes();
                self.leaves += 1;
                Some(Some(Split {
                    separator,
                    right: Node::Leaf(right),
                }))
            }
            Node::Inner(inner) => {
                let at = count_below(&inner.separators, &entry, true);
                let split = self.insert_in(&mut inner.children[at], entry)?;
                let Some(split) = split else {
                    return Some(None);
                };
                inner.separators.insert(at, split.separator);
                inner.children.insert(at + 1, split.right);
                if inner.separators.len() <= self.node_max {
                    return Some(None);
                }
                Some(Some(self.split_inner(inner)))
            }
        }
    }

    /// Splits an overflowing inner node in halves; the separator between them moves up,
    /// as it bounds them both.
    fn split_inner<T: TreeEntry>(&mut self, inner: &mut Inner<T>) -> Split<T> {
        let mut right = new_inner();
        let keep = inner.separators.len() / 2;
        right.separators.extend(inner.separators.drain(keep + 1..));
        right.children.extend(inner.children.drain(keep + 1..));
        let separator = inner.separators.pop().expect("kept at least two");
        self.inner_nodes += 1;
        Split {
            separator,
            right: Node::Inner(right),
        }
    }

    fn remove_in<T: TreeEntry>(&mut self, node: &mut Node<T>, entry: &T) -> bool {
        node.prefetch();
        match node {
            Node::Leaf(entries) => match search(entries, entry) {
                Ok(at) => {
                    entries.remove(at);
                    true
                }
                Err(_) => false,
            },
            Node::Inner(inner) => {
                let at = count_below(&inner.separators, entry, true);
                if !self.remove_in(&mut inner.children[at], entry) {
                    return false;
                }
                self.after_removal(inner, at);
                true
            }
        }
    }

    /// Child `at` of `inner` lost an entry: free it if empty, or merge it into a neighbour
    /// if it fell below a quarter full (or to one child or entry, in the small nodes tests
    /// use, where a quarter is one) and they fit in one node.
    fn after_removal<T: TreeEntry>(&mut self, inner: &mut Inner<T>, at: usize) {
        let width = inner.children[at].width();
        if width == 0 {
            let emptied = inner.children.remove(at);
            if !inner.separators.is_empty() {
                // Child `at` began at separator `at - 1`; the first child has none.
                let dropped = inner.separators.remove(at.saturating_sub(1));
                self.separator_heap_bytes -= dropped.heap_bytes();
            }
            self.forget(emptied);
            return;
        }
        if width >= (self.node_max / 4).max(2) {
            return;
        }
        // An inner merge also pulls down the separator between them.
        let fits = |other: &Node<T>| other.width() + width <= self.node_max;
        if at > 0 && fits(&inner.children[at - 1]) {
            self.merge(inner, at - 1);
        } else if inner.children.get(at + 1).is_some_and(fits) {
            self.merge(inner, at);
        }
    }

    /// Merges child `left + 1` of `inner` into child `left`.
    fn merge<T: TreeEntry>(&mut self, inner: &mut Inner<T>, left: usize) {
        let right = inner.children.remove(left + 1);
        let between = inner.separators.remove(left);
        match (&mut inner.children[left], right) {
            (Node::Leaf(entries), Node::Leaf(mut more)) => {
                // Leaves are bounded by separators: the one between them goes.
                self.separator_heap_bytes -= between.heap_bytes();
                entries.extend(more.drain(..));
                self.leaves -= 1;
            }
            (Node::Inner(left), Node::Inner(mut more)) => {
                left.separators.push(between);
                left.separators.extend(more.separators.drain(..));
                left.children.extend(more.children.drain(..));
                self.inner_nodes -= 1;
            }
            _ => unreachable!("siblings are at one depth"),
        }
    }

    /// Counts out an emptied node (an inner one has no separators left either).
    fn forget<T>(&mut self, node: Node<T>) {
        match node {
            Node::Leaf(_) => self.leaves -= 1,
            Node::Inner(inner) => {
                assert!(
                    inner.separators.is_empty(),
                    "an emptied node has no separators"
                );
                self.inner_nodes -= 1;
            }
        }
    }
}

/// False once `visit` asked to stop.
fn visit_in<T: TreeEntry>(
    node: &Node<T>,
    low: Bound<&T>,
    high: Bound<&T>,
    descending: bool,
    visit: &mut impl FnMut(&T) -> bool,
) -> bool {
    match node {
        Node::Leaf(entries) => {
            let start = match low {
                Bound::Unbounded => 0,
                Bound::Included(low) => count_below(entries, low, false),
                Bound::Excluded(low) => count_below(entries, low, true),
            };
            let end = match high {
                Bound::Unbounded => entries.len(),
                Bound::Included(high) => count_below(entries, high, true),
                Bound::Excluded(high) => count_below(entries, high, false),
            };
            let range = entries.get(start..end).unwrap_or_default();
            if descending {
                range.iter().rev().all(visit)
            } else {
                range.iter().all(visit)
            }
        }
        Node::Inner(inner) => {
            let separators = &inner.separators;
            // Child i holds entries from separator i - 1 to before separator i.
            let first = match low {
                Bound::Unbounded => 0,
                Bound::Included(low) | Bound::Excluded(low) => count_below(separators, low, true),
            };
            let last = match high {
                Bound::Unbounded => separators.len(),
                Bound::Included(high) => count_below(separators, high, true),
                Bound::Excluded(high) => count_below(separators, high, false),
            };
            let range = inner.children.get(first..=last).unwrap_or_default();
            let mut visit_child = |child: &Node<T>| visit_in(child, low, high, descending, visit);
            if descending {
                range.iter().rev().all(&mut visit_child)
            } else {
                range.iter().all(&mut visit_child)
            }
        }
    }
}

#[cfg(test)]
impl<T: TreeEntry> EntryTree<T> {
    /// Asserts the counts the memory bound is made of (leaves, inner nodes, the
    /// separators' heap bytes) and the height, counted afresh from the nodes.
    pub(super) fn check_counts(&self) {
        let mut counted = Counted::default();
        if let Some(root) = &self.root {
            counted.add(root, 1);
        }
        let shape = &self.shape;
        assert_eq!(shape.leaves, counted.leaves, "leaves");
        assert_eq!(shape.inner_nodes, counted.inner_nodes, "inner nodes");
        assert_eq!(
            shape.separator_heap_bytes, counted.separator_heap_bytes,
            "separators' heap bytes"
        );
        assert_eq!(shape.height, counted.height, "height");
    }

    /// The heap bytes the tree holds, its entries' own aside, counted from its nodes: what
    /// [`EntryTree::heap_bytes`] must never be below.
    pub(super) fn heap_bytes_exact(&self) -> usize {
        let mut counted = Counted::default();
        if let Some(root) = &self.root {
            counted.add(root, 1);
        }
        node_bytes::<T>(counted.leaves, counted.inner_nodes) + counted.separator_heap_bytes
    }
}

/// What [`EntryTree::check_counts`] finds in the nodes.
#[cfg(test)]
#[derive(Default)]
struct Counted {
    leaves: usize,
    inner_nodes: usize,
    separator_heap_bytes: usize,
    height: usize,
}

#[cfg(test)]
impl Counted {
    fn add<T: TreeEntry>(&mut self, node: &Node<T>, depth: usize) {
        match node {
            Node::Leaf(_) => {
                self.leaves += 1;
                self.height = self.height.max(depth);
            }
            Node::Inner(inner) => {
                self.inner_nodes += 1;
                self.separator_heap_bytes += inner
                    .separators
                    .iter()
                    .map(TreeEntry::heap_bytes)
                    .sum::<usize>();
                for child in &inner.children {
                    self.add(child, depth + 1);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
