//! The dictionary on disk: every node's dictionary writes its tables to its schema file,
//! and a schema change is acknowledged only once every node's file holds it, so a crash
//! of every node right after the acknowledgement keeps it.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use kista_datanode::dict::schema_file::{decode, SchemaImage};
use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::{CreateTableConf, ErrorCode, TableDefinitionBody};
use kista_runtime::io::SimulatedDisk;
use kista_signal::NodeId;
use kista_signal::TypedSignal;
use kista_storage::schema::TableSchema;
use support::{cluster_settings, counters, with_unique_index, Node};

fn node_settings(node: NodeId) -> NodeSettings {
    let mut settings = NodeSettings::new(node);
    settings.redo_log_bytes = 8 << 20;
    settings
}

fn named(name: &str) -> TableSchema {
    TableSchema {
        extra_metadata: Vec::new(),
        name: name.into(),
        ..counters()
    }
}

/// The newest valid schema file on `disk`.
fn saved_schema(disk: &SimulatedDisk) -> SchemaImage {
    (0..2)
        .filter_map(|slot| disk.contents(Path::new(&format!("dict/schema.{slot}"))))
        .filter_map(|bytes| decode(&bytes).ok())
        .max_by_key(|image| image.sequence)
        .expect("a valid schema file")
}

/// Table name → (id, whether it is an index table).
fn tables_of(image: &SchemaImage) -> BTreeMap<String, (u32, bool)> {
    image
        .tables
        .iter()
        .map(|t| {
            let name = t.definition.schema.name.clone();
            (name, (t.table_id, t.index_of.is_some()))
        })
        .collect()
}

#[test]
fn every_acknowledged_schema_change_survives_a_crash_of_every_node_right_after_it() {
    for seed in 0..6 {
        let settings = cluster_settings(2, 2, node_settings);
        let mut cluster = Node::start_cluster(settings, 64 << 20, 40 + seed);
        cluster.run_for_ms(200);
        let plain = TableDefinitionBody::new(named("db/plain"), Vec::new());
        let (plain_id, _) = cluster.create_table(&plain).expect("created");
        let unique = with_unique_index(named("db/unique"), "by_value", 1);
        let (unique_id, _) = cluster.create_table(&unique).expect("created");
        let doomed = TableDefinitionBody::new(named("db/doomed"), Vec::new());
        let (doomed_id, _) = cluster.create_table(&doomed).expect("created");
        cluster.drop_table(doomed_id).expect("dropped");
        cluster.use_node(NodeId(2 - seed as u8 % 2));
        let last = TableDefinitionBody::new(named("db/last"), Vec::new());
        let (last_id, _) = cluster.create_table(&last).expect("created");
        // Every node crashes the moment the last change is acknowledged.
        for node in [NodeId(1), NodeId(2)] {
            cluster.simulation.crash(node);
        }
        for node in [NodeId(1), NodeId(2)] {
            // Each twin holds a whole image: one written over a shorter older image in
            // place (creates) or after emptying a longer one (the drop) keeps no byte of it.
            for slot in 0..2 {
                let path = format!("dict/schema.{slot}");
                let bytes = cluster.disks[&node].contents(Path::new(&path));
                let bytes = bytes.expect("both twins written");
                assert!(decode(&bytes).is_ok(), "seed {seed}: {node:?} {path}");
            }
            let image = saved_schema(&cluster.disks[&node]);
            let tables = tables_of(&image);
            let client_tables: Vec<(&str, u32)> = tables
                .iter()
                .filter(|(_, (_, index))| !index)
                .map(|(name, (id, _))| (name.as_str(), *id))
                .collect();
            assert_eq!(
                client_tables,
                [
                    ("db/last", last_id),
                    ("db/plain", plain_id),
                    ("db/unique", unique_id)
                ],
                "seed {seed}: {node:?}"
            );
            assert_eq!(tables.len(), 4, "seed {seed}: and the unique index's table");
            let highest = image.tables.iter().map(|t| t.table_id).max().unwrap();
            assert!(
                image.next_table_id > highest.max(doomed_id),
                "seed {seed}: no id is handed out twice"
            );
        }
    }
}

#[test]
fn a_schema_change_on_a_full_disk_waits_for_room_and_later_ones_are_refused_as_disk_full() {
    // The master's disk, then a member's.
    for full_node in [NodeId(1), NodeId(2)] {
        schema_changes_with_a_full_disk_on(full_node);
    }
}

fn schema_changes_with_a_full_disk_on(full_node: NodeId) {
    let settings = cluster_settings(2, 2, node_settings);
    let mut cluster = Node::start_cluster(settings, 64 << 20, 47);
    cluster.run_for_ms(200);
    let before = TableDefinitionBody::new(named("db/before"), Vec::new());
    cluster.create_table(&before).expect("created");
    // The disk is full: the node's schema file cannot take the next change.
    let full = cluster.disks[&full_node].clone();
    full.set_capacity(Some(full.used_bytes()));
    let waiting = TableDefinitionBody::new(named("db/waiting"), Vec::new());
    let until_ns = cluster.now_ns() + 20_000_000_000;
    let answer = cluster.create_table_by(&waiting, until_ns);
    assert!(
        answer.is_none(),
        "{full_node:?}: unconfirmed while the disk is full: {answer:?}"
    );
    assert!(cluster.stopped().is_empty(), "no node stopped");
    let log = cluster.simulation.log_of(full_node).join("\n");
    assert!(
        log.contains("dict/schema.") && log.contains("the disk is full: the schema change waits"),
        "{log}"
    );

    // Meanwhile any other change is refused at once, as disk full (temporary).
    let refused = TableDefinitionBody::new(named("db/refused"), Vec::new());
    let until_ns = cluster.now_ns() + 100_000_000;
    match cluster.create_table_by(&refused, until_ns) {
        Some(Err((code, message))) => {
            assert_eq!(code, ErrorCode::DiskFull as u32, "{message}");
            let named = format!("data node(s) {} is full", full_node.0);
            assert!(message.contains(&named), "{message}");
        }
        other => panic!("{full_node:?}: refused at once, not {other:?}"),
    }

    // Room again: the write is tried again, the change confirmed, and changes go on.
    full.set_capacity(None);
    let (conf, _) = cluster
        .wait_for(u64::MAX, |s| s.number() == CreateTableConf::NUMBER)
        .expect("the change is confirmed");
    let conf = CreateTableConf::from_signal(&conf).expect("a CreateTableConf");
    let after = TableDefinitionBody::new(named("db/after"), Vec::new());
    cluster.create_table(&after).expect("changes go on");
    for node in [NodeId(1), NodeId(2)] {
        let tables = tables_of(&saved_schema(&cluster.disks[&node]));
        assert_eq!(tables["db/waiting"].0, conf.table_id, "{node:?} holds it");
        assert!(tables.contains_key("db/after"), "{node:?}");
        assert!(!tables.contains_key("db/refused"), "{node:?}");
    }
}

#[test]
fn a_node_without_a_disk_writes_no_schema_file() {
    let diskless = |node| NodeSettings::new(node);
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, diskless), 64 << 20, 3);
    cluster.run_for_ms(200);
    cluster.create_counters();
    for node in [NodeId(1), NodeId(2)] {
        let disk = &cluster.disks[&node];
        assert!(disk.contents(Path::new("dict/schema.1")).is_none());
    }
}
