//! Online backups in the deterministic simulation: a backup taken under a steady load of
//! writes restores one state the cluster was in (every chain of dependent transactions
//! whole up to its counter, every ballast row of one batch), no older than what was
//! acknowledged before the request and no newer than what was acknowledged by its answer;
//! each partition is in it once; a participant's failure fails the backup, and the next
//! one completes on the survivors under the next id; schema changes wait meanwhile.

mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use kista_datanode::backup_files::{self, BackupEntry, Manifest};
use kista_datanode::protocol::*;
use kista_runtime::io::SimulatedDisk;
use kista_signal::{NodeId, Signal, TypedSignal};
use kista_storage::checkpoint::{self, CheckpointEntry};
use kista_storage::row::RowLayout;
use kista_storage::types::Value;
use support::chains::{consistent, Workload};
use support::disk_cluster::{node_settings, LDM_INSTANCES};
use support::{cluster_settings, counters, Node};

/// The answer to backup request `request_id`.
fn backup_answer(request_id: u64) -> impl Fn(&Signal) -> bool {
    move |s| {
        BackupConf::from_signal(s).is_ok_and(|c| c.request_id == request_id)
            || DictRef::from_signal(s).is_ok_and(|r| r.request_id == request_id)
    }
}

/// Rounds of the workload until the backup's answer comes (at most `rounds_max`).
fn rounds_until_answered(
    cluster: &mut Node,
    workload: &mut Workload,
    request_id: u64,
    rounds_max: u32,
) -> (Signal, Vec<u8>) {
    for _ in 0..rounds_max {
        workload.round(cluster);
        if let Some(answer) = cluster.wait_for(cluster.now_ns(), backup_answer(request_id)) {
            return answer;
        }
    }
    panic!("no answer to the backup within {rounds_max} rounds");
}

/// What backup `id` restores from the files on `disks`: the rows (id → value), the stop
/// GCI and the rows its logs set (changed up to the stop GCI); asserts that every partition is in it once.
fn restore(disks: &[&SimulatedDisk], table_id: u32, id: u32) -> (BTreeMap<i64, i64>, u64, u64) {
    let file = |disk: &SimulatedDisk, path: String| {
        disk.contents(Path::new(&path))
            .unwrap_or_else(|| panic!("{path} is on disk"))
    };
    let manifest = disks
        .iter()
        .find_map(|disk| {
            let node = (1..=4).find(|&n| {
                disk.contents(Path::new(&backup_files::manifest_path(id, NodeId(n))))
                    .is_some()
            })?;
            Some(file(disk, backup_files::manifest_path(id, NodeId(node))))
        })
        .expect("a manifest");
    let manifest = Manifest::decode(&manifest).unwrap();
    assert_eq!(manifest.schema.tables.len(), 1, "the one client table");
    let layout = RowLayout::new(&counters());
    let layouts = HashMap::from([(table_id, layout.clone())]);
    let int = |value: &Value| match value {
        Value::Int(int) => *int,
        other => panic!("a counters column: {other:?}"),
    };
    let mut rows = BTreeMap::new();
    let mut stop_gcis = BTreeSet::new();
    let mut partitions = Vec::new();
    let mut logged = 0;
    for &(node, ldms) in &manifest.participants {
        let disk = disks
            .iter()
            .find(|d| {
                d.contents(Path::new(&backup_files::manifest_path(id, node)))
                    .is_some()
            })
            .expect("the participant's disk");
        for ldm in 0..ldms {
            let data = file(disk, backup_files::data_path(id, node, ldm));
            let log = file(disk, backup_files::log_path(id, node, ldm));
            let mut data_file = std::io::Cursor::new(&data);
            let mut log_file = std::io::Cursor::new(&log);
            let (stop_gci, _) = backup_files::restore_ldm(
                id,
                &mut data_file,
                &mut log_file,
                &layouts,
                |_, f, v| {
                    let values = layout.values(f, v);
                    assert!(rows.insert(int(&values[0]), int(&values[1])).is_none());
                },
            )
            .unwrap();
            stop_gcis.insert(stop_gci);
            let changed = backup_files::read_log(id, &mut log_file, &layouts)
                .unwrap()
                .last;
            logged += changed.values().map(|keys| keys.len() as u64).sum::<u64>();
            checkpoint::read_file(&data, |entry| {
                if let CheckpointEntry::Partition { place, .. } = entry {
                    partitions.push(place.partition);
                }
            })
            .unwrap();
        }
    }
    partitions.sort_unstable();
    let expected: Vec<u32> = (0..manifest.partitions_per_table).collect();
    assert_eq!(partitions, expected, "every partition once");
    assert_eq!(stop_gcis.len(), 1, "one stop GCI: {stop_gcis:?}");
    (rows, stop_gcis.into_iter().next().unwrap(), logged)
}

/// Asserts that backup request `request` is answered within a second with `code` and a
/// message saying `reason`.
fn assert_refused(cluster: &mut Node, request: u64, code: ErrorCode, reason: &str) {
    let (answer, message) = cluster
        .wait_for(cluster.now_ns() + 1_000_000_000, backup_answer(request))
        .expect("answered");
    let refusal = DictRef::from_signal(&answer).expect("refused");
    assert_eq!(refusal.code, code as u32);
    let message = String::from_utf8_lossy(&message);
    assert!(message.contains(reason), "{message}");
}

fn disk_cluster(seed: u64) -> Node {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, node_settings), 64 << 20, seed);
    cluster.run_for_ms(200);
    cluster
}

#[test]
fn a_backup_under_writes_restores_one_state_between_its_request_and_its_answer() {
    let mut seeds_logged = 0;
    for seed in 0..8u64 {
        let mut cluster = disk_cluster(40 + seed);
        let mut workload = Workload::new(&mut cluster);
        for _ in 0..40 + 10 * seed {
            workload.round(&mut cluster);
        }
        let before = (workload.chain_steps.clone(), workload.ballast_batch);
        cluster.use_node(NodeId(1 + (seed % 2) as u8));
        let request = cluster.request_backup();
        let (answer, _) = rounds_until_answered(&mut cluster, &mut workload, request, 500);
        let conf = BackupConf::from_signal(&answer).expect("the backup completes");
        let after = (workload.chain_steps.clone(), workload.ballast_batch);
        assert!(
            after.1 > before.1,
            "seed {seed}: writes went on during the backup: {before:?} {after:?}"
        );
        let disks = [&cluster.disks[&NodeId(1)], &cluster.disks[&NodeId(2)]];
        let (rows, stop_gci, logged) = restore(&disks, workload.table.0, conf.backup_id);
        assert_eq!(stop_gci, conf.stop_gci);
        seeds_logged += u32::from(logged > 0);

        let (chains, batch) = consistent(&rows);
        for (chain, (&restored, (&low, &high))) in
            chains.iter().zip(before.0.iter().zip(&after.0)).enumerate()
        {
            assert!(
                (low..=high).contains(&restored),
                "seed {seed}: chain {chain} restores step {restored}, not in {low}..={high}"
            );
        }
        assert!(
            (before.1..=after.1).contains(&batch),
            "seed {seed}: ballast batch {batch}, not in {}..={}",
            before.1,
            after.1
        );
        assert_eq!(conf.backup_id, 1);
        let listed = cluster.list_backups();
        assert_eq!(
            listed.iter().map(|e| e.backup_id).collect::<Vec<_>>(),
            vec![1]
        );
        assert_eq!(listed[0].stop_gci, conf.stop_gci);
        assert_eq!(listed[0].rows, conf.rows);
    }
    // The logs matter: in most runs commits of the stop GCI came after the scans.
    assert!(
        seeds_logged >= 6,
        "{seeds_logged} of 8 runs restored rows from the logs"
    );
}

#[test]
fn a_participant_failing_fails_the_backup_and_the_next_completes_on_the_survivors() {
    let mut cluster = disk_cluster(7);
    let mut workload = Workload::new(&mut cluster);
    for _ in 0..30 {
        workload.round(&mut cluster);
    }
    cluster.use_node(NodeId(1));
    let request = cluster.request_backup();
    cluster.run_for_ms(1);
    // A schema change waits for the backup.
    let refused = cluster.create_table(&TableDefinitionBody::new(
        kista_storage::schema::TableSchema {
            name: "later".into(),
            ..counters()
        },
        Vec::new(),
    ));
    assert_eq!(
        refused.map_err(|(code, _)| code),
        Err(ErrorCode::BackupRefused as u32)
    );
    cluster.simulation.crash(NodeId(2));
    // Node 2 is suspected after `heartbeat_misses_max` silent heartbeat intervals.
    cluster.run_for_ms(8_000);
    assert_refused(
        &mut cluster,
        request,
        ErrorCode::BackupFailed,
        "failed during the backup",
    );
    cluster.run_for_ms(500);
    for _ in 0..5 {
        workload.round(&mut cluster);
    }
    let before = (workload.chain_steps.clone(), workload.ballast_batch);
    cluster.use_node(NodeId(1));
    let request = cluster.request_backup();
    let (answer, _) = rounds_until_answered(&mut cluster, &mut workload, request, 500);
    let conf = BackupConf::from_signal(&answer).expect("the next backup completes");
    assert_eq!(conf.backup_id, 2, "the failed backup's id is not reused");
    let (rows, ..) = restore(&[&cluster.disks[&NodeId(1)]], workload.table.0, 2);
    // The failed backup's files lack their end records: a restore refuses them.
    let disk = &cluster.disks[&NodeId(1)];
    let layouts = HashMap::from([(workload.table.0, RowLayout::new(&counters()))]);
    for ldm in 0..LDM_INSTANCES {
        let file = |path: String| disk.contents(Path::new(&path)).unwrap_or_default();
        let data = file(backup_files::data_path(1, NodeId(1), ldm));
        let log = file(backup_files::log_path(1, NodeId(1), ldm));
        let (mut data, mut log) = (std::io::Cursor::new(data), std::io::Cursor::new(log));
        let refused = backup_files::restore_ldm(1, &mut data, &mut log, &layouts, |_, _, _| {});
        assert!(refused.is_err(), "ldm {ldm}: {refused:?}");
    }
    let (chains, batch) = consistent(&rows);
    assert!(chains.iter().zip(&before.0).all(|(r, b)| r >= b));
    assert!(batch >= before.1);
    cluster.use_node(NodeId(1));
    let listed: Vec<BackupEntry> = cluster.list_backups();
    let outcomes: Vec<_> = listed.iter().map(|e| (e.backup_id, e.complete)).collect();
    assert_eq!(
        outcomes,
        [(1, false), (2, true)],
        "the failed one is listed incomplete"
    );
    let survivors = listed[1].participants.iter().collect::<Vec<_>>();
    assert_eq!(survivors, [NodeId(1)]);
}

#[test]
fn a_backup_requested_while_one_starts_or_runs_is_refused() {
    let mut cluster = disk_cluster(9);
    let mut workload = Workload::new(&mut cluster);
    for _ in 0..5 {
        workload.round(&mut cluster);
    }
    cluster.use_node(NodeId(1));
    // The first waits for the catalog to be read; the second comes meanwhile.
    let first = cluster.request_backup();
    let second = cluster.request_backup();
    let refused = ErrorCode::BackupRefused;
    assert_refused(&mut cluster, second, refused, "starting already");
    cluster.run_for_ms(1);
    let third = cluster.request_backup();
    assert_refused(&mut cluster, third, refused, "running already");
    let (answer, _) = rounds_until_answered(&mut cluster, &mut workload, first, 500);
    let conf = BackupConf::from_signal(&answer).expect("the first completes");
    assert_eq!(conf.backup_id, 1);
}
