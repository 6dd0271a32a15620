//! `kista_info`: the data nodes' own tables (NDB's ndbinfo), read with plain SELECT
//! through the mysql client.

mod support;

use std::time::{Duration, Instant};

use support::{mysql, run_mgm, spawn_up, ShutdownOnDrop};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn kista_info_tables_show_nodes_threads_memory_and_counters_to_any_mysql_client() {
    let dir = std::env::temp_dir().join(format!("kista-info-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let up = spawn_up(&dir, &["--data-memory", "64M"]);
    let mgm = up.address.to_string();
    let cluster = ShutdownOnDrop::new(&mgm, &dir);
    let port = up.sql_address().port();
    let sql =
        |statement: &str| mysql(port, statement).unwrap_or_else(|e| panic!("{statement}: {e}"));
    // Waits (LIMIT at most) until `query` answers `expected`.
    let shows = |query: &str, expected: &str| {
        let deadline = Instant::now() + LIMIT;
        while sql(query) != expected {
            assert!(
                Instant::now() < deadline,
                "{query}: {} after {LIMIT:?}",
                sql(query)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };

    // Listed where asked for by name, not in the list mysqldump --all-databases dumps.
    assert!(sql("SHOW DATABASES LIKE 'kista%'")
        .lines()
        .any(|l| l == "kista_info"));
    assert!(!sql("SHOW DATABASES").lines().any(|l| l == "kista_info"));
    let schemata =
        "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'kista%'";
    assert_eq!(sql(schemata), "kista_info\n");
    assert_eq!(
        sql("SHOW TABLES FROM kista_info"),
        "certificates\nconfig\ncounters\nlocks\nmemory\nnodes\npartitions\nthreads\ntransactions\n"
    );
    let nodes = "SELECT node_id, node_group, status FROM kista_info.nodes ORDER BY node_id";
    assert_eq!(sql(nodes), "1\t0\tstarted\n2\t0\tstarted\n");

    let mut load =
        String::from("CREATE DATABASE i; CREATE TABLE i.t (id INT PRIMARY KEY, v VARCHAR(100));");
    for id in 0..100 {
        load.push_str(&format!("INSERT INTO i.t VALUES ({id}, REPEAT('x', 100));"));
    }
    sql(&load);
    let inserts =
        "SELECT SUM(value) FROM kista_info.counters WHERE counter_name = 'operations_insert'";
    let inserted: u64 = sql(inserts).trim().parse().unwrap();
    assert!(inserted >= 100, "{inserted} inserts counted");
    let committed =
        "SELECT SUM(value) FROM kista_info.counters WHERE counter_name = 'transactions_committed'";
    assert!(sql(committed).trim().parse::<u64>().unwrap() >= 100);

    // Two nodes in one node group: each holds a replica of every partition (4: two per
    // node), and each replica all the rows its partition has.
    let partitions = "SELECT node_id, COUNT(*), SUM(row_count) FROM kista_info.partitions \
                      WHERE database_name = 'i' AND table_name = 't' GROUP BY node_id ORDER BY node_id";
    assert_eq!(sql(partitions), "1\t4\t100\n2\t4\t100\n");
    // Each partition's primary on one node, its backup on the other.
    let roles = "SELECT role, COUNT(*), COUNT(DISTINCT partition_id) FROM kista_info.partitions \
                 WHERE database_name = 'i' AND table_name = 't' GROUP BY role ORDER BY role";
    assert_eq!(sql(roles), "backup\t4\t4\nprimary\t4\t4\n");
    let memory =
        "SELECT node_id, used_bytes > 0, total_bytes FROM kista_info.memory ORDER BY node_id";
    assert_eq!(sql(memory), "1\t1\t67108864\n2\t1\t67108864\n");
    // Each replica holds its rows' memory (100 rows of 100 bytes, at least a page each).
    let held = "SELECT node_id, SUM(memory_bytes) > 10000, MIN(memory_bytes) >= 32768 \
                FROM kista_info.partitions WHERE database_name = 'i' AND table_name = 't' \
                GROUP BY node_id ORDER BY node_id";
    assert_eq!(sql(held), "1\t1\t1\n2\t1\t1\n");
    // Each node measures its threads once a second; both have by now.
    let coordinators = "SELECT node_id, COUNT(*) FROM kista_info.threads \
                        WHERE modules LIKE '%tc.0%' AND load_level BETWEEN 1 AND 5 \
                        AND user_percent + system_percent <= 200 GROUP BY node_id ORDER BY node_id";
    assert_eq!(sql(coordinators), "1\t1\n2\t1\n");
    // The configuration as each node runs it: kista up's data memory and two replicas.
    let config = "SELECT node_id, config_param, value FROM kista_info.config \
                  WHERE config_param IN ('data_memory', 'replicas') ORDER BY node_id, config_param";
    assert_eq!(
        sql(config),
        "1\tdata_memory\t67108864\n1\treplicas\t2\n2\tdata_memory\t67108864\n2\treplicas\t2\n"
    );
    // A transaction held open for two seconds shows, executing, with its locked row.
    let holder = std::thread::spawn(move || {
        let hold = "BEGIN; UPDATE i.t SET v = 'y' WHERE id = 1; SELECT SLEEP(2); COMMIT";
        mysql(port, hold)
    });
    let open = "SELECT state, operations > 0, age_ms < 60000 FROM kista_info.transactions";
    shows(open, "executing\t1\t1\n");
    // Its row lock, exclusive, under the transaction id its coordinator shows: on the
    // row's primary (the update's write, deferred to the commit, has not reached the
    // backup yet; if it has, the backup's lock is the same).
    let id = sql("SELECT transaction_id FROM kista_info.transactions");
    let lock = "SELECT mode, state, transaction_id FROM kista_info.locks \
                WHERE database_name = 'i' AND table_name = 't'";
    let locks = sql(lock);
    let held = format!("X\tgranted\t{}", id.trim());
    assert!(
        !locks.is_empty() && locks.lines().all(|l| l == held),
        "{locks}"
    );
    holder.join().unwrap().expect("the holder commits");
    shows(open, "");
    let error = mysql(port, "SELECT * FROM kista_info.nosuch").unwrap_err();
    assert!(error.contains("1109"), "{error}");

    // A list cut at its bound (16,384 rows per block) says so: a transaction holding
    // 70,000 row locks (on each node, its primaries': over 17,000 per data manager), and
    // a warning per node with its part of the list.
    sql("CREATE TABLE i.many (id INT PRIMARY KEY)");
    for first in (0..70_000).step_by(5_000) {
        let values: Vec<String> = (first..first + 5_000).map(|id| format!("({id})")).collect();
        sql(&format!("INSERT INTO i.many VALUES {}", values.join(",")));
    }
    let cut = sql("BEGIN; SELECT COUNT(*) FROM i.many FOR UPDATE; \
                   SELECT COUNT(*) < 70000 FROM kista_info.locks; SHOW WARNINGS; COMMIT");
    let warned = |node| format!("Warning\t1105\tkista_info.locks: node {node} listed only part");
    assert!(
        cut.starts_with("70000\n1\n") && cut.contains(&warned(1)) && cut.contains(&warned(2)),
        "{cut}"
    );
    assert_eq!(
        sql("SELECT COUNT(*) FROM kista_info.locks; SHOW WARNINGS"),
        "0\n"
    );

    // A data node stopped: listed as not reachable, its rows gone from the others.
    let (code, _, stderr) = run_mgm(&mgm, &cluster.key_file, "2 stop", LIMIT);
    assert_eq!(code, Some(0), "{stderr}");
    shows(nodes, "1\t0\tstarted\n2\t0\tnot reachable\n");
    let threads = "SELECT DISTINCT node_id FROM kista_info.threads";
    assert_eq!(sql(threads), "1\n");
    // Node 1's backups took over: every replica left is a primary.
    shows(roles, "primary\t4\t4\n");
    let _ = std::fs::remove_dir_all(&dir);
}
