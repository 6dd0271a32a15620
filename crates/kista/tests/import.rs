//! `kista import` against `kista up`: a million-row file with bad records among them is
//! loaded, the bad ones written to the rejects file with their lines and reasons; an
//! import killed midway is resumed and every row is in the table once.

mod support;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{key_file, mysql, run_kista, run_mgm, spawn_up, KistaProcess};

const LIMIT: Duration = Duration::from_secs(300);

/// `kista up` on free ports, shut down with the test.
struct Cluster {
    up: KistaProcess,
    dir: PathBuf,
}

impl Cluster {
    fn start(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("kista-import-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let up = spawn_up(&dir, &["--data-memory", "512M"]);
        Cluster { up, dir }
    }

    fn mgm(&self) -> String {
        self.up.address.to_string()
    }

    /// Runs `sql` through the mysql client; its output (no column names).
    fn sql(&self, sql: &str) -> String {
        let output = mysql(self.up.sql_address().port(), sql);
        let output = output.unwrap_or_else(|error| panic!("{sql}: {error}"));
        output.trim().to_string()
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = run_mgm(&self.mgm(), &key_file(&self.dir), "shutdown", LIMIT);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Rows `1..=rows` as CSV (`id,name,amount,note`), with the lines `bad` replaced by
/// records that make no row.
fn write_rows(path: &Path, rows: u64, bad: &[(u64, &str)]) {
    let mut text = String::with_capacity(rows as usize * 40);
    text.push_str("id,name,amount,note\n");
    for id in 1..=rows {
        match bad.iter().find(|(line, _)| *line == id + 1) {
            Some((_, record)) => text.push_str(record),
            None => {
                let note = if id % 10 == 0 {
                    "\\N".to_string()
                } else {
                    format!("\"n, {id}\"")
                };
                let _ = write!(text, "{id},name{id},{}.50,{note}", id % 1000);
            }
        }
        text.push('\n');
    }
    std::fs::write(path, text).expect("the file is written");
}

const TABLE: &str = "CREATE DATABASE imp; CREATE TABLE imp.t (id INT PRIMARY KEY, \
                     name VARCHAR(12) NOT NULL, amount DECIMAL(8,2), note VARCHAR(20))";

#[test]
fn an_import_loads_every_good_row_and_writes_each_bad_one_to_the_rejects_file() {
    let cluster = Cluster::start("rejects");
    cluster.sql(TABLE);
    let file = cluster.file("rows.csv");
    let bad = [
        (101, "100,name100,lots,x"),
        (50_001, "50000,a name far too long,1.00,x"),
        (500_001, "500000,short"),
        (999_001, "7,taken,1.00,x"),
    ];
    write_rows(&file, 1_000_000, &bad);
    let rejects = cluster.file("rows.rejects");
    let (file_arg, rejects_arg) = (file.display().to_string(), rejects.display().to_string());
    let state = cluster.file("rows.state").display().to_string();
    let (mgm, key_file) = (cluster.mgm(), key_file(&cluster.dir));
    let import = [
        "import",
        "--mgm",
        &mgm,
        "--key-file",
        &key_file,
        "imp.t",
        &file_arg,
        "--skip-lines",
        "1",
        "--rejects",
        &rejects_arg,
        "--state",
        &state,
        "--quiet",
    ];
    let args = [&import[..], &["--max-rejects", "10"]].concat();
    let (code, stdout, stderr) = run_kista(&args, LIMIT);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("999996 rows loaded"), "{stdout}");
    assert!(stdout.contains("4 rejected"), "{stdout}");
    let rejected = std::fs::read_to_string(&rejects).unwrap();
    for (line, reason) in [
        (101, "1366"),
        (50_001, "1406"),
        (500_001, "1261"),
        (999_001, "1062"),
    ] {
        let named = format!("{file_arg}:{line}: ");
        let entry = rejected.lines().find(|l| l.starts_with(&named));
        assert!(
            entry.is_some_and(|e| e.contains(reason)),
            "line {line} ({reason}):\n{rejected}"
        );
    }
    let counted = cluster.sql("SELECT COUNT(*), SUM(id), SUM(note IS NULL) FROM imp.t");
    let loaded_ids: u64 = (1..=1_000_000u64).sum::<u64>() - 100 - 50_000 - 500_000 - 999_000;
    // Every tenth note is NULL; the four bad lines replaced four of those rows.
    assert_eq!(counted, format!("999996\t{loaded_ids}\t99996"));
    assert_eq!(
        cluster.sql("SELECT name, note FROM imp.t WHERE id = 7"),
        "name7\tn, 7"
    );

    // Past --max-rejects the import fails, naming the file.
    cluster.sql("DELETE FROM imp.t WHERE id > 900000");
    let args = import;
    let (code, stdout, stderr) = run_kista(&args, LIMIT);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("--max-rejects (0)"), "{stderr}");
}

#[test]
fn an_import_killed_midway_resumes_and_loads_every_row_once() {
    let cluster = Cluster::start("resume");
    cluster.sql(TABLE);
    let file = cluster.file("rows.csv");
    write_rows(&file, 300_000, &[]);
    let file_arg = file.display().to_string();
    let state = cluster.file("rows.state");
    let state_arg = state.display().to_string();
    let (mgm, key_file) = (cluster.mgm(), key_file(&cluster.dir));
    let args = [
        "import",
        "--mgm",
        &mgm,
        "--key-file",
        &key_file,
        "imp.t",
        &file_arg,
        "--skip-lines",
        "1",
        "--state",
        &state_arg,
        "--quiet",
        // Small chunks on two threads: slow enough (several seconds) that the import is
        // still under way when the first progress record (after a second) ends it.
        "--threads",
        "2",
        "--batch-rows",
        "250",
    ];
    let mut import = Command::new(env!("CARGO_BIN_EXE_kista"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once some chunks are recorded as committed, others still in flight.
    let deadline = Instant::now() + LIMIT;
    let recorded = || {
        let text = std::fs::read_to_string(&state).unwrap_or_default();
        text.lines()
            .nth(2)
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    while recorded() < 20 {
        assert!(Instant::now() < deadline, "the import records its progress");
        assert!(
            import.try_wait().unwrap().is_none(),
            "the import ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    import.kill().unwrap();
    let _ = import.wait();
    let before: u64 = cluster.sql("SELECT COUNT(*) FROM imp.t").parse().unwrap();
    assert!(before > 0 && before < 300_000, "{before}");

    let mut resumed = args.to_vec();
    resumed.push("--resume");
    let (code, stdout, stderr) = run_kista(&resumed, LIMIT);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains(", 0 rejected"), "{stdout}");
    let total: u64 = (1..=300_000u64).sum();
    assert_eq!(
        cluster.sql("SELECT COUNT(*), SUM(id) FROM imp.t"),
        format!("300000\t{total}")
    );
    // A resume of a finished import loads nothing.
    let (code, stdout, stderr) = run_kista(&resumed, LIMIT);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("kista import: 0 rows loaded"), "{stdout}");
}

#[test]
fn bad_import_arguments_are_refused_with_the_reason() {
    let refused = |args: &[&str], reason: &str| {
        let (code, stdout, stderr) = run_kista(args, LIMIT);
        assert_eq!(code, Some(2), "{stdout}{stderr}");
        assert!(stderr.contains(reason), "{stderr}");
    };
    refused(&["import", "t", "/nonexistent"], "DATABASE.TABLE");
    refused(&["import", "d.t", "/nonexistent"], "no such file");
    let cargo = env!("CARGO_MANIFEST_DIR");
    let file = format!("{cargo}/Cargo.toml");
    refused(
        &["import", "d.t", &file, "--batch-rows", "0"],
        "--batch-rows",
    );
    refused(
        &["import", "d.t", &file, "--fields-enclosed-by", "ab"],
        "one character",
    );
    refused(&["import", "d.t", &file, "--set", "v UPPER(x)"], "--set");
}

#[test]
fn an_import_fills_the_columns_it_is_not_given_and_replaces_taken_keys_when_asked() {
    let cluster = Cluster::start("columns");
    cluster.sql(
        "CREATE DATABASE imp; \
         CREATE TABLE imp.notes (id INT AUTO_INCREMENT PRIMARY KEY, body VARCHAR(20), \
         kind VARCHAR(10) DEFAULT 'plain'); \
         CREATE TABLE imp.kv (id INT PRIMARY KEY, v INT)",
    );
    let (mgm, key_file) = (cluster.mgm(), key_file(&cluster.dir));
    let import = |table: &str, name: &str, text: &str, extra: &[&str]| {
        let file = cluster.file(name);
        std::fs::write(&file, text).unwrap();
        let (file, rejects) = (
            file.display().to_string(),
            cluster.file("r").display().to_string(),
        );
        let state = cluster.file("s").display().to_string();
        let mut args = vec![
            "import",
            "--mgm",
            &mgm,
            "--key-file",
            &key_file,
            table,
            &file,
            "--quiet",
            "--rejects",
            &rejects,
            "--state",
            &state,
        ];
        args.extend_from_slice(extra);
        run_kista(&args, LIMIT)
    };
    // Only `body` given: AUTO_INCREMENT numbers the rows, `kind` takes its default.
    let (code, stdout, stderr) = import(
        "imp.notes",
        "notes.csv",
        "hello\n\"a, b\"\n",
        &["--columns", "body"],
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(
        cluster.sql("SELECT id, body, kind FROM imp.notes ORDER BY id"),
        "1\thello\tplain\n2\ta, b\tplain"
    );
    // A taken key is rejected, or with --replace replaces the row.
    let (code, ..) = import("imp.kv", "kv1.csv", "1,10\n2,20\n", &[]);
    assert_eq!(code, Some(0));
    let (code, stdout, _) = import("imp.kv", "kv2.csv", "1,11\n3,30\n", &["--max-rejects", "1"]);
    assert_eq!(code, Some(0));
    assert!(
        stdout.contains("1 rows loaded") && stdout.contains("1 rejected"),
        "{stdout}"
    );
    let (code, stdout, stderr) = import("imp.kv", "kv2.csv", "1,11\n3,30\n", &["--replace"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(
        cluster.sql("SELECT id, v FROM imp.kv ORDER BY id"),
        "1\t11\n2\t20\n3\t30"
    );
    // A field read into a variable and a column computed from it, as LOAD DATA's SET.
    let set = ["--columns", "id,@raw", "--set", "v = @raw * 100 + id"];
    let (code, stdout, stderr) = import("imp.kv", "kv3.csv", "7,5\n8,6\n", &set);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(
        cluster.sql("SELECT id, v FROM imp.kv WHERE id > 5 ORDER BY id"),
        "7\t507\n8\t608"
    );
}

/// A plain table's rows go to the cluster encoded straight from the file's fields; a
/// table with a CHECK goes through the SQL layer a row at a time. The same file loaded
/// into both (every storage type, good values and each kind of bad one, a taken key)
/// gives the same rows and the same rejects, and only the second import says it is slower.
#[test]
fn a_plain_table_loads_directly_the_rows_and_rejects_the_sql_layer_gives() {
    let cluster = Cluster::start("direct");
    let columns = "(id INT PRIMARY KEY, t TINYINT, u BIGINT UNSIGNED NOT NULL, \
                   d DECIMAL(6,2), c CHAR(4), v VARCHAR(6), x TEXT, b VARBINARY(3), \
                   day DATE, at DATETIME, f DOUBLE, tm TIME, KEY by_v (v))";
    cluster.sql(&format!(
        "CREATE DATABASE imp; CREATE TABLE imp.plain {columns}; \
         CREATE TABLE imp.checked {columns}; \
         ALTER TABLE imp.checked ADD CONSTRAINT positive CHECK (id > 0)"
    ));
    let good = [
        "-5,18446744073709551615,-1234.5,ab,héllo,text,xyz,2024-02-29,2024-01-02 03:04:05,1.5e3,12:34:56",
        "127,0,1.005,\"a,b\",\"\",,\\N,1999-12-31,1999-12-31 23:59:59,-0.25,-838:59:59",
        "\\N,7,9999.99,abcd,ééé,\\N,,2000-1-1,2000-01-01,0,00:00:01",
    ];
    let bad = [
        "128,1,1,a,a,a,a,2024-01-01,2024-01-01 00:00:00,1,00:00:00",
        "1,-1,1,a,a,a,a,2024-01-01,2024-01-01 00:00:00,1,00:00:00",
        "1,\\N,1,a,a,a,a,2024-01-01,2024-01-01 00:00:00,1,00:00:00",
        "1,1,10000,a,a,a,a,2024-01-01,2024-01-01 00:00:00,1,00:00:00",
        "1,1,lots,a,a,a,a,2024-01-01,2024-01-01 00:00:00,1,00:00:00",
        "1,1,1,abcde,a,a,a,2024-01-01,2024-01-01 00:00:00,1,00:00:00",
        "1,1,1,a,abcdefg,a,a,2024-01-01,2024-01-01 00:00:00,1,00:00:00",
        "1,1,1,a,a,a,abcd,2024-01-01,2024-01-01 00:00:00,1,00:00:00",
        "1,1,1,a,a,a,a,2024-02-30,2024-01-01 00:00:00,1,00:00:00",
        "1,1,1,a,a,a,a,2024-01-01,yesterday,1,00:00:00",
        "1,1,1,a,a,a,a,2024-01-01,2024-01-01 00:00:00,x,00:00:00",
        "1,1,1,a,a,a,a,2024-01-01,2024-01-01 00:00:00,1",
        "1,1,1,a,a,a,a,2024-01-01,2024-01-01 00:00:00,1,00:00:00,extra",
    ];
    let mut text = String::new();
    for id in 1..=3000 {
        let record = match id % 100 {
            0 => format!("{id},{}", bad[(id / 100) % bad.len()]),
            // A key taken by an earlier row of another chunk (from line 2050 on, the
            // keys of records that were themselves refused: loaded).
            50 if id > 1000 => format!("{},{}", id - 1000, good[0]),
            _ => format!("{id},{}", good[id % good.len()]),
        };
        text.push_str(&record);
        text.push('\n');
    }
    let file = cluster.file("rows.csv");
    std::fs::write(&file, text).unwrap();
    let (mgm, key_file) = (cluster.mgm(), key_file(&cluster.dir));
    let import = |table: &str| {
        let rejects = cluster.file(&format!("{table}.rejects"));
        let state = cluster.file(&format!("{table}.state"));
        let args = [
            "import",
            "--mgm",
            &mgm,
            "--key-file",
            &key_file,
            &format!("imp.{table}"),
            &file.display().to_string(),
            "--batch-rows",
            "200",
            // One worker: which of two records with one key is refused is then the later.
            "--threads",
            "1",
            "--quiet",
            "--max-rejects",
            "100",
            "--rejects",
            &rejects.display().to_string(),
            "--state",
            &state.display().to_string(),
        ]
        .map(String::from);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = run_kista(&args, LIMIT);
        assert_eq!(code, Some(0), "{table}: {stdout}{stderr}");
        let rejected = std::fs::read_to_string(&rejects).unwrap_or_default();
        (stdout, stderr, rejected)
    };
    let (plain_out, plain_err, plain_rejects) = import("plain");
    let (checked_out, checked_err, checked_rejects) = import("checked");
    assert!(!plain_err.contains("SQL layer"), "{plain_err}");
    assert!(
        checked_err.contains("a row at a time") && checked_err.contains("CHECK constraints"),
        "{checked_err}"
    );
    // 30 bad records and 10 taken keys of 3,000.
    assert!(plain_out.contains("2960 rows loaded"), "{plain_out}");
    assert!(plain_out.contains("40 rejected"), "{plain_out}");
    assert!(checked_out.contains("2960 rows loaded"), "{checked_out}");
    assert!(checked_out.contains("40 rejected"), "{checked_out}");
    assert_eq!(
        plain_rejects,
        checked_rejects.replace("'checked.", "'plain.")
    );
    for code in ["1264", "1048", "1366", "1406", "1261", "1262", "1062"] {
        assert!(plain_rejects.contains(code), "{code}:\n{plain_rejects}");
    }
    let rows = |table: &str| cluster.sql(&format!("SELECT * FROM imp.{table} ORDER BY id"));
    let plain_rows = rows("plain");
    assert_eq!(plain_rows.lines().count(), 2960);
    assert_eq!(plain_rows, rows("checked"));
    assert!(plain_rows.contains("héllo"), "{plain_rows}");
}
