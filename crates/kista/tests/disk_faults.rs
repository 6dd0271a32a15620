//! Damaged data directories, through real processes: every data node is killed (`kill -9`)
//! after durable commits, its files are damaged as a crash or a failing disk would, and the
//! cluster is started again. A torn REDO tail is cut at the last whole record and the log
//! goes on from there; a lost or damaged newest checkpoint falls back to the one before;
//! a log damaged where the restore needs it is refused with a message naming it, and the
//! node whose directory is emptied copies its data from its peer; a damaged schema file on
//! the master gives way to its peer's dictionary.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kista_client::{Client, ExecuteMode};
use kista_datanode::dict::schema_file;
use kista_storage::checkpoint::{self, CHECKPOINT_FILES};
use kista_storage::redo::{self, Record, Stamp};
use support::chains::{
    create_chains_table, create_table_like_chains, every_chains_row, write_rows,
};
use support::cluster::TestCluster;

/// Longest a node refusing its disk may take to stop.
const REFUSAL_LIMIT: Duration = Duration::from_secs(60);
/// How long a start's checkpoint of what it restored may take.
const CHECKPOINT_LIMIT: Duration = Duration::from_secs(60);

/// One record of a REDO log file: where it starts in the file, its stamp and its bytes.
struct LoggedRecord {
    offset: usize,
    stamp: Stamp,
    bytes: Vec<u8>,
    is_write: bool,
}

/// The `ldm` directories under `kind` (`redo` or `lcp`) of a data directory.
fn ldm_dirs(data_dir: &Path, kind: &str) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(data_dir.join(kind))
        .expect("the directory exists")
        .map(|entry| entry.expect("an entry").path())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "{kind} holds an ldm's directory");
    dirs
}

/// The records of the first file of a log (these tests' logs never fill it), up to the
/// first it cannot trust.
fn first_file_records(log_dir: &Path) -> Vec<LoggedRecord> {
    let bytes = std::fs::read(log_dir.join("00.log")).expect("the log's first file");
    let (mut offset, mut life) = (0, 0);
    let mut records = Vec::new();
    while let Ok(decoded) = redo::decode(&bytes[offset..], offset as u64, life) {
        assert_ne!(
            decoded.record,
            Record::FileEnd,
            "the test's log fills a file"
        );
        records.push(LoggedRecord {
            offset,
            stamp: decoded.stamp,
            bytes: bytes[offset..offset + decoded.bytes].to_vec(),
            is_write: matches!(decoded.record, Record::WriteRow { .. }),
        });
        offset += decoded.bytes;
        life = decoded.stamp.life;
    }
    records
}

/// Where the log's valid records end in its first file.
fn log_end(log_dir: &Path) -> usize {
    let records = first_file_records(log_dir);
    records
        .last()
        .map_or(0, |last| last.offset + last.bytes.len())
}

/// Writes `bytes` into `file` at `offset`, as a write that reached the disk would.
fn overwrite(file: &Path, offset: usize, bytes: &[u8]) {
    let mut contents = std::fs::read(file).expect("the file");
    contents[offset..offset + bytes.len()].copy_from_slice(bytes);
    std::fs::write(file, contents).expect("the file is written");
}

/// A crash amid a write: the first half of a row record of the next GCI, at the log's end.
fn tear_log_tail(log_dir: &Path) -> usize {
    let records = first_file_records(log_dir);
    let last = records.last().expect("the log holds records");
    let write = records.iter().rev().find(|r| r.is_write).expect("a row");
    let end = last.offset + last.bytes.len();
    let decoded = redo::decode(&write.bytes, write.offset as u64, 0).expect("a record");
    let stamp = Stamp {
        lsn: end as u64,
        gci: last.stamp.gci + 1,
        life: last.stamp.life,
    };
    let mut torn = Vec::new();
    redo::encode(stamp, &decoded.record, &mut torn);
    torn.truncate(torn.len() / 2);
    overwrite(&log_dir.join("00.log"), end, &torn);
    end
}

/// The complete checkpoints of one `ldm` directory: (checkpoint id, REDO LSN, file).
fn complete_checkpoints(lcp_dir: &Path) -> Vec<(u64, u64, PathBuf)> {
    let mut complete: Vec<_> = (0..CHECKPOINT_FILES)
        .filter_map(|slot| {
            let path = lcp_dir.join(format!("{slot}.ckpt"));
            let bytes = std::fs::read(&path).ok()?;
            let summary = checkpoint::read_file(&bytes, |_| {}).ok()?;
            Some((summary.id, summary.redo_lsn, path))
        })
        .collect();
    complete.sort();
    complete
}

/// Kills every data node, lets `damage` work on the data directories, and starts the
/// cluster again.
fn crash_damage_and_start(cluster: &mut TestCluster, damage: impl FnOnce(&TestCluster)) {
    cluster.crash_every_node();
    damage(cluster);
    cluster.spawn_every_node();
}

/// Round r writes rows 500 r to 500 r + 499 with value r, durably, then every data node
/// is killed and the cluster started again (each start from disk checkpoints what it
/// restored). That checkpoint may end after the start is reported (it did on a loaded
/// machine, and the next crash left an ldm one complete checkpoint): each round waits
/// until every ldm has written it.
fn write_rounds_each_checkpointed(cluster: &mut TestCluster, rounds: std::ops::Range<i64>) {
    for round in rounds {
        let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
        let ids = round * 500..round * 500 + 500;
        write_rows(&client, ids, round, ExecuteMode::CommitDurable);
        drop(client);
        let before = newest_checkpoints(cluster);
        crash_damage_and_start(cluster, |_| {});
        cluster.wait_for_start_from_disk();
        support::wait_until(
            CHECKPOINT_LIMIT,
            "every ldm's checkpoint of its start",
            || {
                let after = newest_checkpoints(cluster);
                !after.is_empty()
                    && (after.iter()).all(|(dir, id)| *id > before.get(dir).copied().unwrap_or(0))
            },
        );
    }
}

/// The newest complete checkpoint's id of each ldm of nodes 1 and 2, by its directory.
fn newest_checkpoints(cluster: &TestCluster) -> BTreeMap<PathBuf, u64> {
    let ldm_dirs = |node: u8| {
        let entries = std::fs::read_dir(cluster.data_dir(node).join("lcp")).into_iter();
        entries.flatten().flatten().map(|entry| entry.path())
    };
    (ldm_dirs(1).chain(ldm_dirs(2)))
        .map(|dir| {
            let newest = complete_checkpoints(&dir)
                .last()
                .map_or(0, |(id, _, _)| *id);
            (dir, newest)
        })
        .collect()
}

fn expected(ranges: &[(std::ops::Range<i64>, i64)]) -> BTreeMap<i64, i64> {
    let mut rows = BTreeMap::new();
    for (ids, value) in ranges {
        rows.extend(ids.clone().map(|id| (id, *value)));
    }
    rows
}

#[test]
fn a_torn_redo_tail_is_cut_at_the_last_whole_record_and_the_log_goes_on_from_there() {
    let mut cluster = TestCluster::start(2, 2);
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    create_chains_table(&client);
    write_rows(&client, 0..1_000, 1, ExecuteMode::CommitDurable);
    drop(client);

    let mut torn_at = Vec::new();
    crash_damage_and_start(&mut cluster, |cluster| {
        for id in [1, 2] {
            for log_dir in ldm_dirs(&cluster.data_dir(id), "redo") {
                torn_at.push((id, log_dir.clone(), tear_log_tail(&log_dir)));
            }
        }
    });
    // A node whose disk was behind (a loaded machine's missed heartbeats) copies its data
    // instead, and its log begins afresh: only the others' logs go on from the tear.
    let mut copied = cluster.wait_for_start_from_disk();
    assert_eq!(every_chains_row(&cluster.mgm), expected(&[(0..1_000, 1)]));

    // The log goes on where the torn record began, and a second crash reads past it.
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    write_rows(&client, 1_000..1_500, 2, ExecuteMode::CommitDurable);
    drop(client);
    crash_damage_and_start(&mut cluster, |_| {});
    copied.extend(cluster.wait_for_start_from_disk());
    let restored: Vec<_> = (torn_at.into_iter())
        .filter(|(id, _, _)| !copied.contains(id))
        .collect();
    assert!(!restored.is_empty(), "some node restored its own disk");
    for (_, log_dir, end) in restored {
        assert!(
            log_end(&log_dir) > end,
            "{}: the log was written on from the torn record's place",
            log_dir.display()
        );
    }
    let rows = every_chains_row(&cluster.mgm);
    assert_eq!(rows, expected(&[(0..1_000, 1), (1_000..1_500, 2)]));
}

#[test]
fn a_lost_or_damaged_checkpoint_falls_back_and_a_damaged_log_is_refused_naming_it() {
    let mut cluster = TestCluster::start(2, 2);
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    create_chains_table(&client);
    drop(client);
    // Each start from disk checkpoints what it restored: three starts leave every ldm
    // two complete checkpoints, the rows of each round in the log after one of them.
    write_rounds_each_checkpointed(&mut cluster, 0..3);
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    write_rows(&client, 0..100, 7, ExecuteMode::CommitDurable);
    drop(client);
    let mut all = expected(&[
        (0..100, 7),
        (100..500, 0),
        (500..1_000, 1),
        (1_000..1_500, 2),
    ]);

    // Node 1 lost each ldm's newest checkpoint; node 2's has a flipped byte.
    crash_damage_and_start(&mut cluster, |cluster| {
        for id in [1, 2] {
            for lcp_dir in ldm_dirs(&cluster.data_dir(id), "lcp") {
                let complete = complete_checkpoints(&lcp_dir);
                assert!(complete.len() >= 2, "{}: {complete:?}", lcp_dir.display());
                let (_, _, newest) = complete.last().expect("checked");
                if id == 1 {
                    std::fs::remove_file(newest).expect("removed");
                } else {
                    let middle = std::fs::metadata(newest).expect("the file").len() / 2;
                    overwrite(newest, middle as usize, &[0x5a; 8]);
                }
            }
        }
    });
    cluster.wait_for_start_from_disk();
    assert_eq!(every_chains_row(&cluster.mgm), all);
    let node_2_log = cluster.node(2).stderr();
    assert!(
        node_2_log.contains("not used (checkpoint")
            && node_2_log.contains("the checkpoint ends before its last record"),
        "node 2 says which checkpoint it could not use: {node_2_log}"
    );
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    write_rows(&client, 1_500..1_600, 3, ExecuteMode::CommitDurable);
    drop(client);
    all.extend((1_500..1_600).map(|id| (id, 3)));

    // A row record node 2 needs is damaged: node 2 refuses its disk, naming the log, and
    // stops that start (node 1 with it); started again, the cluster starts from node 1's
    // disk, and node 2 copies every row from it.
    crash_damage_and_start(&mut cluster, |cluster| {
        let data_dir = cluster.data_dir(2);
        let (log_dir, lcp_dir) = (ldm_dirs(&data_dir, "redo"), ldm_dirs(&data_dir, "lcp"));
        let (_, redo_lsn, _) = complete_checkpoints(&lcp_dir[0])
            .pop()
            .expect("a checkpoint");
        let needed = first_file_records(&log_dir[0]);
        let needed = needed.iter().filter(|r| r.offset as u64 >= redo_lsn);
        let write = needed
            .into_iter()
            .find(|r| r.is_write)
            .expect("a row logged");
        overwrite(&log_dir[0].join("00.log"), write.offset + 40, &[0xa5; 4]);
    });
    let stopped = cluster.node(1).wait_exit(REFUSAL_LIMIT);
    assert!(
        stopped.is_some(),
        "node 1 stops with the start it cannot finish"
    );
    let node_2_log = cluster.node(2).stderr();
    assert!(
        node_2_log.contains("redo/ldm-0/ is damaged or missing")
            && node_2_log.contains("this node's disk cannot restore its data"),
        "node 2 names its log: {node_2_log}"
    );
    assert!(
        cluster.node(2).is_running(),
        "node 2's process starts it again: {}\n---- node 1:\n{}",
        cluster.node(2).stderr(),
        cluster.node(1).stderr()
    );
    cluster.restart(1);
    let copied = cluster.wait_for_start_from_disk();
    assert_eq!(
        copied,
        vec![2],
        "node 2 copies its data: {}",
        cluster.node(2).stderr()
    );
    assert_eq!(every_chains_row(&cluster.mgm), all);
    cluster.node(1).kill();
    assert_eq!(
        every_chains_row(&cluster.mgm),
        all,
        "node 2 alone holds every row"
    );
}

/// The control files of a data directory.
fn control_files(data_dir: &Path) -> Vec<PathBuf> {
    (0..2)
        .map(|slot| data_dir.join(format!("control/node.{slot}")))
        .collect()
}

#[test]
fn a_node_whose_control_files_are_damaged_copies_from_its_peer_and_alone_starts_nothing() {
    let mut cluster = TestCluster::start(2, 2);
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    create_chains_table(&client);
    write_rows(&client, 0..1_000, 1, ExecuteMode::CommitDurable);
    drop(client);
    let all = expected(&[(0..1_000, 1)]);

    // Both twins of node 1's control file damaged: node 1 (the master) refuses its disk,
    // the cluster starts from node 2's, and node 1 copies every row from it.
    crash_damage_and_start(&mut cluster, |cluster| {
        for twin in control_files(&cluster.data_dir(1)) {
            overwrite(&twin, 20, &[0x5a, 0xa5]);
        }
    });
    let copied = cluster.wait_for_start_from_disk();
    assert_eq!(copied, vec![1], "node 1 copies its data");
    assert_eq!(every_chains_row(&cluster.mgm), all);
    let node_1_log = cluster.node(1).stderr();
    assert!(
        (node_1_log.lines())
            .any(|line| line.contains(" WARN ")
                && line.contains("control file refused: control/node.0")),
        "node 1 warns naming the file: {node_1_log}"
    );
    cluster.node(2).kill();
    assert_eq!(
        every_chains_row(&cluster.mgm),
        all,
        "node 1 alone holds every row"
    );

    // With the only other node's control files damaged too, nothing starts: an empty
    // cluster would lose every row.
    cluster.crash_every_node();
    for id in [1, 2] {
        for twin in control_files(&cluster.data_dir(id)) {
            overwrite(&twin, 20, &[0x5a, 0xa5]);
        }
    }
    cluster.spawn_every_node();
    let refused = cluster.node(1).wait_exit(REFUSAL_LIMIT);
    assert!(matches!(refused, Some((false, _))), "node 1 stops, failing");
    let node_1_log = cluster.node(1).stderr();
    assert!(
        node_1_log.contains("hold data their disks cannot restore")
            && node_1_log.contains("Nothing starts empty"),
        "the start says why it stops: {node_1_log}"
    );
}

/// The newest valid schema file of a data directory.
fn newest_schema_file(data_dir: &Path) -> PathBuf {
    (0..2)
        .map(|slot| data_dir.join(format!("dict/schema.{slot}")))
        .filter_map(|path| {
            let image = schema_file::decode(&std::fs::read(&path).ok()?).ok()?;
            Some((image.sequence, path))
        })
        .max()
        .map(|(_, path)| path)
        .expect("a valid schema file")
}

#[test]
fn a_damaged_schema_file_on_the_master_loses_no_table_its_peer_holds() {
    let mut cluster = TestCluster::start(2, 2);
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    create_table_like_chains(&client, "early");
    // The chains table is the last change: only the newest schema file holds it.
    create_chains_table(&client);
    write_rows(&client, 0..1_000, 1, ExecuteMode::CommitDurable);
    drop(client);

    let mut damaged = PathBuf::new();
    crash_damage_and_start(&mut cluster, |cluster| {
        // Node 1 is the master of the start: two bytes flipped in its newest file.
        damaged = newest_schema_file(&cluster.data_dir(1));
        let middle = std::fs::metadata(&damaged).expect("the file").len() / 2;
        overwrite(&damaged, middle as usize, &[0x5a, 0xa5]);
    });
    cluster.wait_for_start_from_disk();
    assert_eq!(every_chains_row(&cluster.mgm), expected(&[(0..1_000, 1)]));
    let node_1_log = cluster.node(1).stderr();
    let refused = format!("schema file refused: dict/{}", file_name(&damaged));
    assert!(
        (node_1_log.lines()).any(|line| line.contains(" WARN ") && line.contains(&refused)),
        "node 1 warns naming the file ({refused}): {node_1_log}"
    );
    assert!(
        node_1_log.contains("takes the dictionary of data node 2"),
        "{node_1_log}"
    );

    // Node 1's dictionary was written again whole: with node 2's newest file damaged in
    // turn, the next start keeps every table as well.
    crash_damage_and_start(&mut cluster, |cluster| {
        let peers = newest_schema_file(&cluster.data_dir(2));
        overwrite(&peers, 40, &[0xff; 4]);
    });
    cluster.wait_for_start_from_disk();
    assert_eq!(every_chains_row(&cluster.mgm), expected(&[(0..1_000, 1)]));
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    client
        .open_table("early")
        .expect("the earlier table is kept too");
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .expect("a file")
        .to_string_lossy()
        .into_owned()
}

/// Files made immutable (`chattr +i`: every open for writing refused, even to root, as a
/// file of the wrong owner or mode refuses a node's user), made mutable again when dropped.
struct Immutable(Vec<PathBuf>);

impl Immutable {
    /// `None` where `chattr` is missing or the file system has no such flag.
    fn make(paths: Vec<PathBuf>) -> Option<Self> {
        let done = std::process::Command::new("chattr")
            .arg("+i")
            .args(&paths)
            .status();
        done.is_ok_and(|status| status.success())
            .then_some(Self(paths))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .args(&self.0)
            .status();
    }
}

#[test]
fn an_unreadable_checkpoint_file_falls_back_like_a_lost_one() {
    let mut cluster = TestCluster::start(2, 2);
    let client = Client::connect_cluster(&cluster.mgm, None).expect("a client connects");
    create_chains_table(&client);
    drop(client);
    // Two starts from disk leave every ldm two complete checkpoints.
    write_rounds_each_checkpointed(&mut cluster, 0..2);
    let mut locked = Vec::new();
    cluster.crash_every_node();
    for lcp_dir in ldm_dirs(&cluster.data_dir(1), "lcp") {
        let complete = complete_checkpoints(&lcp_dir);
        let (_, _, newest) = complete.last().expect("a checkpoint");
        locked.push(newest.clone());
    }
    let Some(_immutable) = Immutable::make(locked.clone()) else {
        eprintln!("skipped: chattr +i is not available here");
        return;
    };
    cluster.spawn_every_node();
    cluster.wait_for_start_from_disk();
    assert_eq!(
        every_chains_row(&cluster.mgm),
        expected(&[(0..500, 0), (500..1_000, 1)])
    );
    let node_1_log = cluster.node(1).stderr();
    for path in locked {
        let named = format!("{} cannot be read (PermissionDenied)", file_name(&path));
        assert!(node_1_log.contains(&named), "{named}: {node_1_log}");
    }
    assert!(cluster.node(1).is_running(), "node 1 serves");
}
