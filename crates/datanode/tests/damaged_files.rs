//! A node's damaged or unreadable files at a start from disk, in the simulation: what a
//! peer still holds is never lost. A node whose newest schema file is damaged falls back
//! to its older twin, which may lack the latest tables: the start takes a sound peer's
//! dictionary instead (and mends the node's file), even when that node is the master.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kista_datanode::dict::schema_file::decode;
use kista_datanode::membership::{DISK_UNRESTORABLE, STALE_AT_START};
use kista_datanode::protocol::*;
use kista_runtime::io::SimulatedDisk;
use kista_signal::NodeId;
use kista_storage::schema::TableSchema;
use support::disk_cluster::*;
use support::{cluster_settings, counters, Node};

/// The path of `disk`'s newest valid schema file.
fn newest_schema_file(disk: &SimulatedDisk) -> PathBuf {
    (0..2)
        .map(|slot| PathBuf::from(format!("dict/schema.{slot}")))
        .filter_map(|path| Some((decode(&disk.contents(&path)?).ok()?.sequence, path)))
        .max()
        .map(|(_, path)| path)
        .expect("a valid schema file")
}

/// How a test damages a file.
#[derive(Clone, Copy, Debug)]
enum Damage {
    /// Two bytes flipped in its middle (a failing disk).
    Flipped,
    /// Every open refused (its owner or mode changed).
    Unreadable,
}

fn damage(disk: &SimulatedDisk, path: &Path, damage: Damage) {
    match damage {
        Damage::Flipped => {
            let mut bytes = disk.contents(path).expect("the file exists");
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0x5a;
            bytes[middle + 1] ^= 0xa5;
            disk.put(path, bytes);
        }
        Damage::Unreadable => disk.set_unreadable(path, true),
    }
}

/// A counters table named `name`.
fn create_named(cluster: &mut Node, name: &str) -> (u32, u32) {
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: name.into(),
        ..counters()
    };
    let definition = TableDefinitionBody::new(schema, Vec::new());
    cluster.create_table(&definition).expect("created")
}

#[test]
fn a_damaged_or_unreadable_schema_file_of_the_master_loses_no_table_its_peer_holds() {
    for (seed, how) in [(21, Damage::Flipped), (22, Damage::Unreadable)] {
        let settings = cluster_settings(2, 2, node_settings);
        let mut cluster = Node::start_cluster(settings, MEMORY_BYTES, seed);
        let first = create_named(&mut cluster, "db/first");
        let (mut client_tx, mut first_rows) = (1, BTreeMap::new());
        write_rounds(&mut cluster, first, &mut client_tx, 1..4, &mut first_rows);
        // The newest schema file alone holds the ledger.
        let ledger = create_named(&mut cluster, "db/ledger");
        let mut ledger_rows = BTreeMap::new();
        write_rounds(&mut cluster, ledger, &mut client_tx, 1..4, &mut ledger_rows);
        cluster.run_for_ms(5 * GCP_INTERVAL_MS);
        for node in [NodeId(1), NodeId(2)] {
            cluster.simulation.crash(node);
        }
        let master_disk = cluster.disks[&NodeId(1)].clone();
        let damaged = newest_schema_file(&master_disk);
        damage(&master_disk, &damaged, how);

        cluster.start_again(MEMORY_BYTES);
        for (scan, node) in [(1, NodeId(1)), (2, NodeId(2))] {
            let rows = rows_through(&mut cluster, node, ledger, 10 * seed + scan);
            assert_eq!(rows, ledger_rows, "{how:?}: the ledger through {node:?}");
            let rows = rows_through(&mut cluster, node, first, 20 * seed + scan);
            assert_eq!(
                rows, first_rows,
                "{how:?}: the first table through {node:?}"
            );
        }
        let log = cluster.simulation.log_of(NodeId(1)).join("\n");
        let named = format!("schema file refused: {}", damaged.display());
        assert!(
            log.contains(&named),
            "{how:?}: the refusal names the file:\n{log}"
        );
        assert!(
            log.contains("takes the dictionary of data node 2"),
            "{how:?}: {log}"
        );
        assert!(cluster.stopped().is_empty(), "{how:?}: no node stopped");

        // The master's dictionary was mended: a start with node 2's newest file damaged in
        // turn keeps the ledger too, and new tables still get new ids.
        write_rounds(&mut cluster, ledger, &mut client_tx, 4..6, &mut ledger_rows);
        cluster.run_for_ms(5 * GCP_INTERVAL_MS);
        for node in [NodeId(1), NodeId(2)] {
            cluster.simulation.crash(node);
        }
        if let Damage::Unreadable = how {
            // Its twin took the write that mended the dictionary.
            let warned = "cannot be opened (PermissionDenied): its twin takes every write";
            assert!(log.contains(warned), "{log}");
            master_disk.set_unreadable(&damaged, false);
        }
        let peer_disk = cluster.disks[&NodeId(2)].clone();
        damage(&peer_disk, &newest_schema_file(&peer_disk), how);
        cluster.start_again(MEMORY_BYTES);
        let rows = rows_through(&mut cluster, NodeId(2), ledger, 30 * seed);
        assert_eq!(rows, ledger_rows, "{how:?}: after the second start");
        let later = create_named(&mut cluster, "db/later");
        assert!(later.0 > ledger.0, "{how:?}: {later:?} after {ledger:?}");
    }
}

/// The reasons every node that stopped gave, in order.
fn stop_reasons(cluster: &Node) -> Vec<(u8, String)> {
    let stopped = cluster.simulation.stopped_nodes().iter();
    stopped.map(|(node, why)| (node.0, why.clone())).collect()
}

/// Crashes both nodes of a 2-node cluster that took writes, lets `damage` work on node 2's
/// disk, and starts the cluster again: node 2 refuses its disk, node 1 serves, and node 2,
/// started again, copies every row from it. With node 1 failed then, node 2 alone serves
/// them all. Whether node 2 stopped the first start (finding out amid its restore).
fn node_2_refuses_its_disk_and_copies(seed: u64, damage: impl FnOnce(&SimulatedDisk)) -> bool {
    let settings = cluster_settings(2, 2, node_settings);
    let mut cluster = Node::start_cluster(settings, MEMORY_BYTES, seed);
    let table = cluster.create_counters();
    let (mut client_tx, mut expected) = (1, BTreeMap::new());
    write_rounds(&mut cluster, table, &mut client_tx, 1..20, &mut expected);
    cluster.run_for_ms(5 * GCP_INTERVAL_MS);
    for node in [NodeId(1), NodeId(2)] {
        cluster.simulation.crash(node);
    }
    damage(&cluster.disks[&NodeId(2)]);

    // Whether node 2 finds out before the start's decision (its control file) or amid its
    // restore (a log), one start or two bring node 1 back alone.
    let first_start_failed = cluster.try_start_again(MEMORY_BYTES).is_err();
    if first_start_failed {
        let reasons = stop_reasons(&cluster);
        let refused = reasons.iter().find(|(node, _)| *node == 2);
        let (_, why) = refused.expect("node 2 stopped the start");
        assert!(why.starts_with(DISK_UNRESTORABLE), "seed {seed}: {why}");
        cluster.start_again(MEMORY_BYTES);
    }
    let reasons = stop_reasons(&cluster);
    let (_, why) = reasons.last().expect("node 2 stopped");
    assert!(
        why.starts_with(STALE_AT_START) && why.contains("holds data its disk cannot restore"),
        "seed {seed}: {reasons:?}"
    );
    assert_eq!(rows_through(&mut cluster, NodeId(1), table, 1), expected);

    // Started again, node 2 copies every row.
    cluster.restart_node(NodeId(2), MEMORY_BYTES);
    cluster.run_for_ms(10_000);
    write_rounds(&mut cluster, table, &mut client_tx, 20..25, &mut expected);
    cluster.run_for_ms(5 * GCP_INTERVAL_MS);
    cluster.simulation.crash(NodeId(1));
    cluster.run_for_ms(10_000);
    let rows = rows_through(&mut cluster, NodeId(2), table, 2);
    assert_eq!(rows, expected, "seed {seed}: node 2 alone");
    first_start_failed
}

#[test]
fn a_node_whose_control_files_are_both_damaged_copies_from_its_peer() {
    let stopped_the_start = node_2_refuses_its_disk_and_copies(41, |disk| {
        damage(disk, Path::new("control/node.0"), Damage::Flipped);
        damage(disk, Path::new("control/node.1"), Damage::Flipped);
    });
    assert!(!stopped_the_start, "the start went on without node 2");
}

#[test]
fn a_node_whose_log_was_lost_where_its_restore_needs_it_copies_from_its_peer() {
    let stopped_the_start = node_2_refuses_its_disk_and_copies(42, |disk| {
        // The disk gives back zeros for every file of ldm 0's log.
        for file in 0..4 {
            let path = PathBuf::from(format!("redo/ldm-0/{file:02}.log"));
            let length = disk.contents(&path).expect("the log's file").len();
            disk.put(&path, vec![0; length]);
        }
    });
    assert!(
        stopped_the_start,
        "node 2 stopped the start amid its restore"
    );
}
