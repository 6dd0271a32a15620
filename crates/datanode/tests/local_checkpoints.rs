//! Local checkpoints in the deterministic simulation: with a REDO log far smaller than the
//! changes made, each `ldm`'s newest usable checkpoint plus its log from the checkpoint's
//! start restores every replica to the last saved GCI, alike on both replicas and with
//! every acknowledged write; through a crash of every node with torn disks too.
//!
//! The workload: a ballast of batches that rewrite `BALLAST_ROWS` rows (to fill the log
//! many times over), beside chains of dependent transactions (as in
//! `global_checkpoints.rs`) whose restored state must be one the cluster was in.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use kista_datanode::membership::DISK_UNRESTORABLE;
use kista_datanode::node::NodeSettings;
use kista_datanode::protocol::*;
use kista_runtime::io::SimulatedDisk;
use kista_signal::NodeId;
use kista_storage::checkpoint::{self, CHECKPOINT_FILES};
use kista_storage::redo::LogRing;
use support::chains::{consistent, Workload, BALLAST_FIRST_ROW, BALLAST_ROWS};
use support::disk_cluster::{
    node_settings, rows_through, GCP_INTERVAL_MS, LDM_INSTANCES, REDO_LOG_BYTES,
};
use support::redo_logs::{read_checkpoint, restore_ldm};
use support::{cluster_settings, counter_op, Node};

fn ring() -> LogRing {
    LogRing {
        file_bytes: REDO_LOG_BYTES / u64::from(LDM_INSTANCES) / 4,
        files: 4,
    }
}

/// A node's rows restored to `gci` from its checkpoints and logs; asserts that each `ldm`
/// restored from a checkpoint taken after its log had wrapped.
fn restore_node(disk: &SimulatedDisk, gci: u64) -> BTreeMap<i64, i64> {
    let mut rows = BTreeMap::new();
    for ldm in 0..LDM_INSTANCES {
        let (checkpoint, ldm_rows) = restore_ldm(disk, ring(), ldm, gci);
        let checkpoint = checkpoint.expect("a usable checkpoint");
        assert!(
            checkpoint.redo_lsn > ring().ring_bytes(),
            "ldm {ldm}: the log wrapped before the checkpoint began: {checkpoint:?}"
        );
        rows.extend(ldm_rows);
    }
    rows
}

/// Both nodes' checkpoints and logs, restored to the last saved GCI, hold the same rows:
/// every write `workload` had acknowledged.
fn both_restore_every_acknowledged_write(cluster: &Node, workload: &Workload) {
    let gci = last_saved_gci(cluster);
    let states: Vec<_> = [NodeId(1), NodeId(2)]
        .iter()
        .map(|node| restore_node(&cluster.disks[node], gci))
        .collect();
    assert_eq!(states[0], states[1], "both replicas restore alike");
    assert_eq!(
        consistent(&states[0]),
        (workload.chain_steps.clone(), workload.ballast_batch),
        "every acknowledged write is restored"
    );
}

fn last_saved_gci(cluster: &Node) -> u64 {
    cluster
        .delivered::<GcpSaved>()
        .into_iter()
        .map(|(_, _, saved)| saved.gci)
        .max()
        .expect("some GCI was saved")
}

#[test]
fn a_checkpoint_and_the_log_after_it_restore_the_last_saved_gci() {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, node_settings), 64 << 20, 11);
    cluster.run_for_ms(200);
    let mut workload = Workload::new(&mut cluster);
    for _ in 0..300 {
        workload.round(&mut cluster);
    }
    cluster.run_for_ms(10 * GCP_INTERVAL_MS);
    both_restore_every_acknowledged_write(&cluster, &workload);
    assert!(workload.ballast_batch > 250, "the writes went on");
}

#[test]
fn after_every_node_crashed_the_last_saved_gci_restores_from_the_checkpoints() {
    for seed in 0..8u64 {
        let settings = cluster_settings(2, 2, node_settings);
        let mut cluster = Node::start_cluster(settings, 64 << 20, 300 + seed);
        cluster.run_for_ms(200);
        let mut workload = Workload::new(&mut cluster);
        for _ in 0..200 + 10 * seed {
            workload.round(&mut cluster);
        }
        // Crash both amid a round of writes (and perhaps a checkpoint's writes).
        let table = workload.table;
        cluster.use_node(NodeId(1));
        let ops = (0..BALLAST_ROWS)
            .map(|row| counter_op(OperationKind::Write, BALLAST_FIRST_ROW + row, -1))
            .collect();
        cluster.send_batch(99_999, table, ops, ExecuteMode::Commit);
        cluster.run_for_ms(seed);
        let gci = last_saved_gci(&cluster);
        for node in [NodeId(1), NodeId(2)] {
            cluster.simulation.crash(node);
        }
        let states: Vec<_> = [NodeId(1), NodeId(2)]
            .iter()
            .map(|node| restore_node(&cluster.disks[node], gci))
            .collect();
        assert_eq!(
            states[0], states[1],
            "seed {seed}: both replicas restore alike"
        );
        let (_, batch) = consistent(&states[0]);
        let needed = workload.ballast_in(&cluster, gci);
        assert!(
            batch >= needed || batch == -1,
            "seed {seed}: GCI {gci} restores batch {batch}, not {needed} acknowledged before"
        );
        assert!(needed > 150, "seed {seed}: the check has teeth: {needed}");
    }
}

/// The disk cluster's settings with checkpoints written at 64 KiB/s, far slower than the
/// writes: the log fills.
fn slow_checkpoints(node: NodeId) -> NodeSettings {
    let mut settings = node_settings(node);
    settings.checkpoint_write_bytes_per_sec = 64 << 10;
    settings
}

/// How long a write waits for room in the REDO log before it is refused
/// (`ldm/redo_wait.rs`, `REDO_WAIT_MS_MAX`).
const REDO_WAIT_MS: u64 = 20_000;

#[test]
fn writes_wait_for_a_full_log_until_a_checkpoint_frees_it_and_all_commit() {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, slow_checkpoints), 64 << 20, 12);
    cluster.run_for_ms(200);
    let table = cluster.create_counters();
    let mut slowest_ms = 0;
    for client_tx in 1..=400u64 {
        let ops = (0..BALLAST_ROWS)
            .map(|row| counter_op(OperationKind::Write, row, client_tx as i64))
            .collect();
        cluster.send_batch(client_tx, table, ops, ExecuteMode::Commit);
        let sent_ns = cluster.now_ns();
        let result = cluster
            .batch_result(client_tx, sent_ns + 2 * REDO_WAIT_MS * 1_000_000)
            .expect("an answer");
        assert_eq!(
            result.outcome,
            TransactionOutcome::Committed,
            "transaction {client_tx} waited for the log instead of failing: {result:?}"
        );
        slowest_ms = slowest_ms.max((cluster.now_ns() - sent_ns) / 1_000_000);
    }
    // A wait's timer fires even once the wait is over (and then does nothing).
    cluster.run_for_ms(REDO_WAIT_MS + 1_000);
    let waits = cluster.delivered::<WaitExpired>().len();
    assert!(
        waits > 0,
        "the log filled faster than the checkpoints freed it"
    );
    assert!(
        slowest_ms < REDO_WAIT_MS,
        "every wait ended with room, not at its limit: {slowest_ms} ms"
    );
    assert!(cluster.stopped().is_empty(), "no node stopped");
}

#[test]
fn a_write_that_waited_its_limit_for_log_room_is_refused_with_a_temporary_error() {
    // Two transactions, kept open, reserve more and more of the log for their commits,
    // a batch each in turn, until one's batch has to wait: nothing will free room (the
    // other never ends and holds its reservation, and the log written is too little for a
    // checkpoint), so it waits its limit and is refused.
    let patient = |node| {
        let mut settings = node_settings(node);
        settings.transaction_inactive_timeout_ms = 10 * REDO_WAIT_MS;
        settings
    };
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, patient), 64 << 20, 15);
    cluster.run_for_ms(200);
    let table = cluster.create_counters();
    for batch in 0..200i64 {
        let hog = 1 + batch as u64 % 2;
        let ops = (0..1000)
            .map(|row| counter_op(OperationKind::Insert, batch * 1000 + row, 1))
            .collect();
        cluster.send_batch(hog, table, ops, ExecuteMode::NoCommit);
        let started_ns = cluster.now_ns();
        let answer_within = |cluster: &mut Node, ms: u64| {
            cluster.batch_result(hog, cluster.now_ns() + ms * 1_000_000)
        };
        let Some(result) = answer_within(&mut cluster, 1_000) else {
            // It waits for room: until its limit, then it is refused.
            let result = answer_within(&mut cluster, 2 * REDO_WAIT_MS).expect("an answer");
            let waited_ms = (cluster.now_ns() - started_ns) / 1_000_000;
            assert_eq!(result.outcome, TransactionOutcome::Aborted, "{result:?}");
            assert_eq!(result.code, ErrorCode::RedoLogFull as u32, "{result:?}");
            assert!(
                waited_ms >= REDO_WAIT_MS,
                "it waited its limit: {waited_ms} ms"
            );
            assert!(cluster.stopped().is_empty(), "no node stopped");
            return;
        };
        assert_eq!(
            result.outcome,
            TransactionOutcome::Open,
            "batch {batch}: {result:?}"
        );
    }
    panic!("the reservations never made a write wait");
}

#[test]
fn a_transaction_larger_than_the_log_is_refused_before_its_commit_and_no_node_stops() {
    // 2 MiB of log per `ldm`; 80,000 inserted rows log about 5 MiB on each node.
    const ROWS_PER_BATCH: i64 = 1000;
    const BATCHES: i64 = 80;
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, node_settings), 64 << 20, 14);
    cluster.run_for_ms(200);
    let table = cluster.create_counters();
    let big_tx = 1;
    let mut refusal = None;
    for batch in 0..BATCHES {
        let ops = (0..ROWS_PER_BATCH)
            .map(|row| counter_op(OperationKind::Insert, batch * ROWS_PER_BATCH + row, 1))
            .collect();
        cluster.send_batch(big_tx, table, ops, ExecuteMode::NoCommit);
        let until_ns = cluster.now_ns() + 2 * REDO_WAIT_MS * 1_000_000;
        let result = cluster.batch_result(big_tx, until_ns).expect("an answer");
        if result.outcome != TransactionOutcome::Open {
            refusal = Some((batch, result));
            break;
        }
    }
    if refusal.is_none() {
        // Every write was prepared: its commit would find the log full.
        cluster.send_batch(big_tx, table, vec![], ExecuteMode::Commit);
        let until_ns = cluster.now_ns() + 5_000_000_000;
        let result = cluster.batch_result(big_tx, until_ns);
        panic!("the whole transaction was prepared; its commit gave {result:?}");
    }
    let (batch, result) = refusal.unwrap();
    assert_eq!(result.outcome, TransactionOutcome::Aborted);
    assert_eq!(result.code, ErrorCode::RedoLogFull as u32, "{result:?}");
    assert!(
        batch > 10,
        "refused once the log was spoken for, not at once: {batch}"
    );
    cluster.run_for_ms(100);
    let small = vec![counter_op(OperationKind::Insert, 1, 7)];
    cluster.send_batch(2, table, small, ExecuteMode::Commit);
    let until_ns = cluster.now_ns() + 5_000_000_000;
    let result = cluster.batch_result(2, until_ns).expect("an answer");
    assert_eq!(
        result.outcome,
        TransactionOutcome::Committed,
        "the aborted transaction gave its reservation back: {result:?}"
    );
    assert!(cluster.stopped().is_empty(), "no node stopped");
}

/// The newest complete checkpoint of one `ldm` on `disk`: its id and its file.
fn newest_checkpoint(disk: &SimulatedDisk, ldm: u16) -> (u64, String) {
    let id = (0..CHECKPOINT_FILES)
        .filter_map(|slot| read_checkpoint(disk, ldm, slot).map(|(s, _)| s.id))
        .max()
        .expect("a complete checkpoint");
    (id, checkpoint_file(ldm, id))
}

fn checkpoint_file(ldm: u16, id: u64) -> String {
    format!("lcp/ldm-{ldm}/{}.ckpt", checkpoint::file_slot(id))
}

/// Flips a byte in the middle of the file at `path`: its checksum no longer holds.
fn flip_a_byte(disk: &SimulatedDisk, path: &str) {
    let mut bytes = disk.contents(Path::new(path)).expect("the file");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x5a;
    disk.put(Path::new(path), bytes);
}

/// Puts on `disk` what a checkpoint `id` of `ldm` begun just before a crash leaves: its
/// start record (its chain from `chain_start`), nothing more.
fn begin_checkpoint(disk: &SimulatedDisk, ldm: u16, id: u64, chain_start: u64) {
    let mut writer = checkpoint::writer(id, chain_start, 1);
    let (_, start) = writer.take_write(usize::MAX).expect("the start record");
    disk.put(Path::new(&checkpoint_file(ldm, id)), start);
}

#[test]
fn a_lost_or_damaged_newest_checkpoint_falls_back_to_the_one_before_and_the_log_kept_for_it() {
    // Checkpoints slower than the writes: the log fills, and each checkpoint's start lies
    // far behind the log's head.
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, slow_checkpoints), 64 << 20, 13);
    cluster.run_for_ms(200);
    let mut workload = Workload::new(&mut cluster);
    for _ in 0..300 {
        workload.round(&mut cluster);
    }
    let gci = last_saved_gci(&cluster);
    let needed = workload.ballast_in(&cluster, gci);
    for node in [NodeId(1), NodeId(2)] {
        cluster.simulation.crash(node);
    }
    // Node 1 lost each newest complete checkpoint file, and had begun the next, whose
    // chain needs the lost one; on node 2 one byte of each is flipped (a checkpoint being
    // written at the crash is unfinished besides).
    let mut damaged = Vec::new();
    for ldm in 0..LDM_INSTANCES {
        let disk = &cluster.disks[&NodeId(1)];
        let (id, lost) = newest_checkpoint(disk, ldm);
        disk.remove(Path::new(&lost));
        begin_checkpoint(disk, ldm, id + 1, id);
        let (_, path) = newest_checkpoint(&cluster.disks[&NodeId(2)], ldm);
        flip_a_byte(&cluster.disks[&NodeId(2)], &path);
        damaged.push(path);
    }

    cluster.start_again(64 << 20);
    let log = cluster.simulation.log_of(NodeId(2));
    for path in damaged {
        assert!(
            log.iter()
                .any(|line| line.contains(&format!("{path} not used"))),
            "node 2 fell back from {path}: {log:?}"
        );
    }
    // The checkpoint begun before the crash needs the lost file: it is not used.
    let log = cluster.simulation.log_of(NodeId(1));
    assert!(
        log.iter().any(|line| line.contains("a file of its chain")),
        "node 1 passed over the checkpoint whose chain lost a file: {log:?}"
    );
    let one = rows_through(&mut cluster, NodeId(1), workload.table, 1);
    let two = rows_through(&mut cluster, NodeId(2), workload.table, 2);
    assert_eq!(one, two, "both replicas restore alike");
    let (_, batch) = consistent(&one);
    assert!(
        batch >= needed && needed > 150,
        "GCI {gci} restores batch {batch}, not {needed} acknowledged before"
    );
}

/// A disk cluster after 300 rounds of the workload (about seven checkpoints per `ldm`)
/// and a crash of every node.
fn crashed_after_checkpoints() -> (Node, Workload) {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, node_settings), 64 << 20, 14);
    cluster.run_for_ms(200);
    let mut workload = Workload::new(&mut cluster);
    for _ in 0..300 {
        workload.round(&mut cluster);
    }
    for node in [NodeId(1), NodeId(2)] {
        cluster.simulation.crash(node);
    }
    (cluster, workload)
}

#[test]
fn a_start_erases_the_checkpoints_it_passed_over_so_a_later_start_never_mixes_them_in() {
    let (mut cluster, mut workload) = crashed_after_checkpoints();
    // On node 1 the newest checkpoint of each `ldm` is damaged: the start restores the
    // one before (whose chain no later checkpoint overwrites), and the node's next
    // checkpoints take the ids on from there. The newest, of the life before, is passed
    // over: its chain's other files would stay complete on the disk until the node
    // writes checkpoints with their ids, and a crash before that would leave a chain of
    // both lives.
    let disk = &cluster.disks[&NodeId(1)];
    let mut passed_over = Vec::new();
    for ldm in 0..LDM_INSTANCES {
        let (newest, path) = newest_checkpoint(disk, ldm);
        let (summary, _) = read_checkpoint(disk, ldm, checkpoint::file_slot(newest))
            .expect("the newest checkpoint");
        assert!(
            summary.chain_start < newest,
            "{path}'s chain holds the one before"
        );
        flip_a_byte(disk, &checkpoint_file(ldm, newest));
        passed_over.push((ldm, newest));
    }

    cluster.start_again(64 << 20);
    let log = cluster.simulation.log_of(NodeId(1));
    for &(ldm, newest) in &passed_over {
        let erased = log.iter().any(|line| {
            let Some(ids) = line.strip_prefix(&format!("ldm {ldm}: checkpoints ")) else {
                return false;
            };
            let ids = ids.split(" emptied").next().unwrap_or_default();
            ids.split(", ").any(|id| id == newest.to_string())
        });
        assert!(erased, "ldm {ldm}'s checkpoint {newest} is erased: {log:?}");
    }
    // A start after the node wrote checkpoints of its new life restores both replicas
    // alike.
    for _ in 0..20 {
        workload.round(&mut cluster);
    }
    for node in [NodeId(1), NodeId(2)] {
        cluster.simulation.crash(node);
    }
    cluster.start_again(64 << 20);
    let one = rows_through(&mut cluster, NodeId(1), workload.table, 1);
    let two = rows_through(&mut cluster, NodeId(2), workload.table, 2);
    assert_eq!(one, two, "both replicas restore alike");
}

#[test]
fn a_node_with_no_usable_checkpoint_whose_log_no_longer_reaches_back_says_so_and_copies() {
    let (mut cluster, workload) = crashed_after_checkpoints();
    // Two checkpoints in a row damaged on node 1: every chain on its disk needs one of
    // them, or a file written over since, and its log was released up to the start of
    // the newest but one.
    let disk = &cluster.disks[&NodeId(1)];
    for ldm in 0..LDM_INSTANCES {
        let (newest, _) = newest_checkpoint(disk, ldm);
        flip_a_byte(disk, &checkpoint_file(ldm, newest - 1));
        flip_a_byte(disk, &checkpoint_file(ldm, newest - 2));
    }
    assert!(
        cluster.try_start_again(64 << 20).is_err(),
        "the start that met node 1's disk stops"
    );
    let stopped = cluster.simulation.stopped_nodes().to_vec();
    let reason_of = |node| {
        let stopped = stopped.iter().find(|(id, _)| *id == node);
        stopped
            .map(|(_, reason)| reason.clone())
            .unwrap_or_default()
    };
    let one = reason_of(NodeId(1));
    assert!(
        one.starts_with(DISK_UNRESTORABLE)
            && one.contains("the log alone no longer holds every change")
            && one.contains("copies its data from a peer"),
        "node 1 says why and what comes next: {one:?}"
    );
    let two = reason_of(NodeId(2));
    assert!(
        two.contains("[1] failed during the start from disk"),
        "node 2 names node 1: {two:?}"
    );

    // Started again, the cluster starts from node 2's disk, and node 1 copies from it.
    cluster.start_again(64 << 20);
    let table = workload.table;
    let two = rows_through(&mut cluster, NodeId(2), table, 1);
    cluster.restart_node(NodeId(1), 64 << 20);
    cluster.run_for_ms(10_000);
    cluster.simulation.crash(NodeId(2));
    cluster.run_for_ms(10_000);
    let one = rows_through(&mut cluster, NodeId(1), table, 2);
    assert_eq!(one, two, "node 1 copied every row");
}

/// The lines of `node`'s log.
fn log_lines(cluster: &Node, node: NodeId) -> Vec<String> {
    let log = cluster.simulation.log_of(node);
    log.iter().map(|line| line.to_string()).collect()
}

#[test]
fn a_full_disk_holds_checkpoints_back_without_stopping_a_node_and_they_go_on_once_freed() {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, node_settings), 64 << 20, 13);
    cluster.run_for_ms(200);
    let mut workload = Workload::new(&mut cluster);
    for _ in 0..20 {
        workload.round(&mut cluster);
    }
    // Each disk is full from now on: a checkpoint's file cannot grow, while the REDO log's
    // files, written whole at their creation, take every write within them.
    for disk in cluster.disks.values() {
        disk.set_capacity(Some(disk.used_bytes()));
    }
    for _ in 0..60 {
        workload.round(&mut cluster);
    }
    let refused = |cluster: &Node, node| {
        let lines = log_lines(cluster, node);
        lines
            .iter()
            .filter(|l| l.contains("not written: the disk is full"))
            .count()
    };
    for node in [NodeId(1), NodeId(2)] {
        assert!(
            refused(&cluster, node) > 0,
            "{node:?}: {:?}",
            log_lines(&cluster, node)
        );
    }
    assert!(cluster.stopped().is_empty(), "no node stopped");
    let before = workload.ballast_batch;
    assert!(before >= 80, "writes went on: {before}");
    // Until the log is nearly full: then a write is refused at once, saying the disk is
    // full, where it would have waited 20 s for a checkpoint to free room.
    let refused = fill_the_log(&mut cluster, workload.table, 1_000_000);
    assert_eq!(refused.code, ErrorCode::DiskFull as u32, "{refused:?}");
    assert!(cluster.stopped().is_empty(), "no node stopped");

    // Space freed: the same checkpoint is tried again and written, freeing the log.
    for disk in cluster.disks.values() {
        disk.set_capacity(None);
    }
    cluster.run_for_ms(2 * checkpoint_retry_ms());
    for _ in 0..200 {
        workload.round(&mut cluster);
    }
    cluster.run_for_ms(10 * GCP_INTERVAL_MS);
    for node in [NodeId(1), NodeId(2)] {
        let lines = log_lines(&cluster, node);
        let last_refusal = lines.iter().rposition(|l| l.contains("the disk is full"));
        let written_after = lines[last_refusal.expect("refused") + 1..]
            .iter()
            .any(|line| line.contains("local checkpoint") && line.contains("written"));
        assert!(written_after, "{node:?} checkpoints again: {lines:?}");
    }
    // The log wrapped since: restores read those checkpoints.
    both_restore_every_acknowledged_write(&cluster, &workload);
    assert!(cluster.stopped().is_empty(), "no node stopped");
}

#[test]
fn a_checkpoint_the_full_disk_refuses_is_written_at_once_into_the_space_held_in_reserve() {
    let mut cluster = Node::start_cluster(cluster_settings(2, 2, node_settings), 64 << 20, 13);
    cluster.run_for_ms(200);
    let mut workload = Workload::new(&mut cluster);
    let checkpointed = |cluster: &Node| {
        [NodeId(1), NodeId(2)].into_iter().all(|node| {
            let lines = log_lines(cluster, node);
            (0..LDM_INSTANCES).all(|ldm| {
                let written = format!("ldm {ldm}: local checkpoint");
                lines.iter().any(|l| l.starts_with(&written))
            })
        })
    };
    for _ in 0..300 {
        workload.round(&mut cluster);
        if checkpointed(&cluster) {
            break;
        }
    }
    // Each `ldm` holds as much in reserve as its largest checkpoint file.
    for (node, disk) in &cluster.disks {
        for ldm in 0..LDM_INSTANCES {
            let reserve = disk.contents(Path::new(&format!("lcp/ldm-{ldm}/reserve")));
            let held = reserve.map_or(0, |bytes| bytes.len());
            assert!(held > 0, "{node:?} ldm {ldm} holds space in reserve");
        }
    }
    for disk in cluster.disks.values() {
        disk.set_capacity(Some(disk.used_bytes()));
    }
    let used_reserve = |cluster: &Node, node| {
        let lines = log_lines(cluster, node);
        lines
            .iter()
            .position(|l| l.contains("is written again into the"))
    };
    for _ in 0..60 {
        workload.round(&mut cluster);
    }
    for node in [NodeId(1), NodeId(2)] {
        let lines = log_lines(&cluster, node);
        let used = used_reserve(&cluster, node).unwrap_or_else(|| panic!("{node:?}: {lines:?}"));
        // The first refusal takes the reserve, and that checkpoint is written at once.
        let first_refusal = lines.iter().position(|l| l.contains("the disk is full"));
        assert_eq!(first_refusal, Some(used), "{node:?}: {lines:?}");
        let (ldm, id) = checkpoint_of(&lines[used]);
        let written = format!("ldm {ldm}: local checkpoint {id} written");
        let next = lines[used + 1..]
            .iter()
            .find(|l| l.starts_with(&format!("ldm {ldm}:")));
        assert!(
            next.is_some_and(|line| line.starts_with(&written)),
            "{node:?}: {written} next: {lines:?}"
        );
    }
    assert!(cluster.stopped().is_empty(), "no node stopped");
}

/// The `ldm` instance and checkpoint id a line `ldm L: ... local checkpoint N ...` names.
fn checkpoint_of(line: &str) -> (u16, u64) {
    let number_after = |prefix: &str| {
        let rest = &line[line.find(prefix).expect(prefix) + prefix.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u64>().expect("a number")
    };
    let ldm = u16::try_from(number_after("ldm ")).expect("an ldm instance");
    (ldm, number_after("local checkpoint "))
}

/// Writes batches to rows of its own (`first_tx` on) until one is refused; returns that.
fn fill_the_log(cluster: &mut Node, table: (u32, u32), first_tx: u64) -> support::Executed {
    for client_tx in first_tx..first_tx + 2_000 {
        let ops = (0..BALLAST_ROWS)
            .map(|row| counter_op(OperationKind::Write, 2_000_000 + row, client_tx as i64))
            .collect();
        cluster.send_batch(client_tx, table, ops, ExecuteMode::Commit);
        let until_ns = cluster.now_ns() + 1_000_000_000;
        let result = cluster
            .batch_result(client_tx, until_ns)
            .expect("an answer at once");
        if result.outcome != TransactionOutcome::Committed {
            return result;
        }
    }
    panic!("the log never filled");
}

/// How long a checkpoint refused for want of space waits (`ldm/checkpoint.rs`).
fn checkpoint_retry_ms() -> u64 {
    5_000
}

#[test]
fn an_unreadable_newest_checkpoint_falls_back_like_a_lost_one_and_its_file_is_passed_by() {
    let (mut cluster, mut workload) = crashed_after_checkpoints();
    let saved_before_crash = last_saved_gci(&cluster);
    // Every open of node 1's newest checkpoint files is refused (their owner or mode
    // changed), for good: reading them, emptying them, writing them.
    let disk = cluster.disks[&NodeId(1)].clone();
    let mut unreadable = Vec::new();
    for ldm in 0..LDM_INSTANCES {
        let (_, path) = newest_checkpoint(&disk, ldm);
        disk.set_unreadable(Path::new(&path), true);
        unreadable.push(path);
    }
    cluster.start_again(64 << 20);
    let log = cluster.simulation.log_of(NodeId(1));
    for path in &unreadable {
        let warned = format!("checkpoint file {path} cannot be read (PermissionDenied)");
        assert!(log.iter().any(|l| l.contains(&warned)), "{warned}: {log:?}");
    }
    let one = rows_through(&mut cluster, NodeId(1), workload.table, 1);
    let two = rows_through(&mut cluster, NodeId(2), workload.table, 2);
    assert_eq!(one, two, "both replicas restore alike");
    let (steps, batch) = consistent(&one);
    let needed = workload.ballast_in(&cluster, saved_before_crash);
    assert!(
        batch >= needed && needed > 150,
        "batch {batch}, not {needed}"
    );
    // The workload goes on from what was restored (the crash lost the last interval).
    workload.chain_steps = steps;
    workload.ballast_batch = batch;
    workload
        .acknowledged_ns
        .retain(|&(acknowledged, _)| acknowledged <= batch);

    // The node goes on checkpointing past the files it cannot open, and a later start
    // (the files still refused) restores from those checkpoints.
    for _ in 0..300 {
        workload.round(&mut cluster);
    }
    cluster.run_for_ms(10 * GCP_INTERVAL_MS);
    let log = cluster.simulation.log_of(NodeId(1));
    let skipped = log
        .iter()
        .filter(|l| l.contains("skipped, the next written whole"));
    assert!(
        skipped.count() > 0,
        "a checkpoint met an unreadable file: {log:?}"
    );
    assert!(cluster.stopped().is_empty(), "no node stopped");
    for node in [NodeId(1), NodeId(2)] {
        cluster.simulation.crash(node);
    }
    cluster.start_again(64 << 20);
    let one = rows_through(&mut cluster, NodeId(1), workload.table, 3);
    let two = rows_through(&mut cluster, NodeId(2), workload.table, 4);
    assert_eq!(one, two, "both replicas restore alike again");
    let (_, batch) = consistent(&one);
    let needed = workload.ballast_in(&cluster, last_saved_gci(&cluster));
    assert!(batch >= needed, "batch {batch}, not {needed}");
}
