//! The tree answers as std's `BTreeSet` does, for any sequence of inserts and removes, and
//! keeps its shape: leaves at one depth, nodes within bounds, separators between children.

use std::collections::BTreeSet;
use std::ops::Bound;

use proptest::prelude::*;

use super::*;

impl TreeEntry for u16 {
    /// Some entries hold heap bytes, as keys with tails do.
    fn heap_bytes(&self) -> usize {
        usize::from(*self % 3) * 8
    }

    /// Coarser than the order, as a key's head is: entries 0-7 share a hint.
    fn order_hint(&self) -> u128 {
        u128::from(*self / 8)
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u16),
    Remove(u16),
    /// Inserts a run in key order, as a load does.
    InsertRun(u16, u16),
    /// Removes a run, to empty and merge nodes.
    RemoveRun(u16, u16),
}

fn an_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..400u16).prop_map(Op::Insert),
        3 => (0..400u16).prop_map(Op::Remove),
        1 => (0..400u16, 1..80u16).prop_map(|(from, n)| Op::InsertRun(from, n)),
        1 => (0..400u16, 1..120u16).prop_map(|(from, n)| Op::RemoveRun(from, n)),
    ]
}

fn a_bound() -> impl Strategy<Value = Bound<u16>> {
    prop_oneof![
        Just(Bound::Unbounded),
        (0..420u16).prop_map(Bound::Included),
        (0..420u16).prop_map(Bound::Excluded),
    ]
}

/// Whether the range is one `BTreeSet::range` accepts (it panics on inverted ones).
fn valid(low: Bound<u16>, high: Bound<u16>) -> bool {
    match (low, high) {
        (Bound::Included(l), Bound::Included(h)) => l <= h,
        (Bound::Excluded(l), Bound::Excluded(h)) => l < h,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Included(h) | Bound::Excluded(h)) => {
            l <= h
        }
        _ => true,
    }
}

fn visited(tree: &EntryTree<u16>, low: Bound<u16>, high: Bound<u16>, descending: bool) -> Vec<u16> {
    let mut out = Vec::new();
    tree.visit_range(low.as_ref(), high.as_ref(), descending, &mut |&e| {
        out.push(e);
        true
    });
    out
}

/// The entries under `node`, checking its shape on the way: every entry within
/// `[low, high)`, leaves at `depth`, widths within bounds. Returns the leaves' depth.
fn check_node(
    tree: &EntryTree<u16>,
    node: &Node<u16>,
    low: Option<u16>,
    high: Option<u16>,
    depth: usize,
    out: &mut Vec<u16>,
) -> usize {
    let node_max = tree.shape.node_max;
    let within = |e: u16| low.is_none_or(|l| l <= e) && high.is_none_or(|h| e < h);
    match node {
        Node::Leaf(entries) => {
            assert!(entries.len() <= node_max, "leaf overflows");
            assert!(!entries.is_empty(), "an empty leaf is freed");
            assert!(entries.windows(2).all(|w| w[0] < w[1]), "leaf unsorted");
            assert!(
                entries.iter().all(|&e| within(e)),
                "entry outside its separators"
            );
            out.extend(entries.iter());
            depth
        }
        Node::Inner(inner) => {
            let (separators, children) = (&inner.separators, &inner.children);
            assert_eq!(children.len(), separators.len() + 1);
            assert!(separators.len() <= node_max, "inner node overflows");
            assert!(
                separators.iter().all(|&s| within(s)),
                "separator outside its parent's"
            );
            let mut depths = BTreeSet::new();
            for (i, child) in children.iter().enumerate() {
                let child_low = if i == 0 { low } else { Some(separators[i - 1]) };
                let child_high = separators.get(i).copied().or(high);
                depths.insert(check_node(
                    tree,
                    child,
                    child_low,
                    child_high,
                    depth + 1,
                    out,
                ));
            }
            assert_eq!(depths.len(), 1, "leaves at different depths");
            depths.into_iter().next().expect("one depth")
        }
    }
}

fn check_shape(tree: &EntryTree<u16>) -> Vec<u16> {
    let mut entries = Vec::new();
    if let Some(root) = &tree.root {
        check_node(tree, root, None, None, 0, &mut entries);
    }
    assert_eq!(entries.len(), tree.len(), "len counts the entries");
    entries
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn the_tree_answers_as_a_btree_set_does(
        node_max in 4..9usize,
        ops in proptest::collection::vec(an_op(), 1..120),
        ranges in proptest::collection::vec((a_bound(), a_bound(), any::<bool>()), 8),
    ) {
        let mut tree = EntryTree::with_node_max(node_max);
        let mut model = BTreeSet::new();
        let insert = |tree: &mut EntryTree<u16>, e: u16| {
            let bound = tree.heap_bytes_after_insert_max(e.heap_bytes());
            let inserted = tree.insert(e);
            assert!(tree.heap_bytes() <= bound, "an insert stays within its bound");
            inserted
        };
        for op in ops {
            match op {
                Op::Insert(e) => prop_assert_eq!(insert(&mut tree, e), model.insert(e)),
                Op::Remove(e) => prop_assert_eq!(tree.remove(&e), model.remove(&e)),
                Op::InsertRun(from, n) => {
                    for e in from..from + n {
                        prop_assert_eq!(insert(&mut tree, e), model.insert(e));
                    }
                }
                Op::RemoveRun(from, n) => {
                    for e in from..from + n {
                        prop_assert_eq!(tree.remove(&e), model.remove(&e));
                    }
                }
            }
            prop_assert_eq!(check_shape(&tree), model.iter().copied().collect::<Vec<_>>());
            tree.check_counts();
        }
        for e in 0..420 {
            prop_assert_eq!(tree.contains(&e), model.contains(&e));
        }
        prop_assert_eq!(tree.last(), model.last());
        for (low, high, descending) in ranges {
            if !valid(low, high) {
                continue;
            }
            let mut want: Vec<u16> = model.range((low, high)).copied().collect();
            if descending {
                want.reverse();
            }
            prop_assert_eq!(visited(&tree, low, high, descending), want, "{:?}..{:?}", low, high);
        }
    }
}

#[test]
fn a_visit_stops_when_asked() {
    let mut tree = EntryTree::with_node_max(4);
    for e in 0..100u16 {
        tree.insert(e);
    }
    let mut seen = Vec::new();
    tree.visit_range(Bound::Included(&10), Bound::Unbounded, false, &mut |&e| {
        seen.push(e);
        e < 14
    });
    assert_eq!(seen, [10, 11, 12, 13, 14]);
    seen.clear();
    tree.visit_range(Bound::Unbounded, Bound::Excluded(&50), true, &mut |&e| {
        seen.push(e);
        seen.len() < 3
    });
    assert_eq!(seen, [49, 48, 47]);
}

#[test]
fn a_load_in_key_order_fills_its_leaves() {
    let mut tree = EntryTree::with_node_max(8);
    for e in 0..800u16 {
        tree.insert(e);
    }
    tree.check_counts();
    assert_eq!(tree.shape.leaves, 100, "800 entries in full leaves of 8");
}

#[test]
fn emptied_the_tree_holds_no_nodes_again() {
    let mut tree = EntryTree::with_node_max(4);
    for e in 0..500u16 {
        tree.insert(e * 7 % 500);
    }
    for e in 0..500u16 {
        assert!(tree.remove(&e));
    }
    assert_eq!(tree.len(), 0);
    assert!(tree.root.is_none());
    assert_eq!(tree.heap_bytes(), 0);
    assert_eq!(tree.last(), None);
}
