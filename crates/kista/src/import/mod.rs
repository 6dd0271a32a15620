//! `kista import` (NDB's `ndb_import`): loads delimited text files into an existing table,
//! many transactions in flight. One thread reads the files into chunks of records
//! (`--batch-rows` each); `--threads` workers, each a SQL session of its own on one shared
//! catalog, convert a chunk's records as INSERT converts values (`kista_sql::load_data`)
//! and insert it in one transaction. A record that cannot be a row (a field that does not
//! convert, a wrong number of fields, a duplicate key, a missing parent row) goes to the
//! rejects file with its file, line and reason; past `--max-rejects` the import stops.
//! Progress (rows, rows/s, ETA) is drawn once a second; the chunks committed are recorded
//! in a state file every quarter second, so `--resume` continues an interrupted import
//! without loading a row twice.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use clap::Args;
use kista_client::Client;
use kista_sql::load_data::{parse_assignments, Assignment, FieldFormat, OnDuplicate};
use kista_sql::Catalog;

use crate::key_file::KeyFileArg;
use crate::Failure;

mod state;
mod summary;
mod workers;

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The management server of the cluster.
    #[arg(long, default_value = "127.0.0.1:1186")]
    mgm: String,

    #[command(flatten)]
    key: KeyFileArg,

    /// The table to load, as DATABASE.TABLE (it must exist).
    target: String,

    /// The files to load, one after another (each a table's rows, one record a line).
    #[arg(required = true)]
    files: Vec<PathBuf>,

    /// What separates fields (escapes: \t \n \r \\ \0).
    #[arg(long, default_value = ",")]
    fields_terminated_by: String,

    /// The quote a field may be enclosed in (empty: none).
    #[arg(long, default_value = "\"")]
    fields_enclosed_by: String,

    /// The escape character (`\N` is NULL, `\t` a tab; empty: none).
    #[arg(long, default_value = "\\")]
    fields_escaped_by: String,

    /// What ends a record (e.g. \r\n).
    #[arg(long, default_value = "\\n")]
    lines_terminated_by: String,

    /// A prefix each record begins after (lines without it are skipped).
    #[arg(long, default_value = "")]
    lines_starting_by: String,

    /// Lines skipped at the start of each file (a header).
    #[arg(long, default_value_t = 0)]
    skip_lines: u64,

    /// The columns the fields go to, in order, comma-separated (default: every column).
    /// Columns left out get their defaults (AUTO_INCREMENT ones their next values).
    #[arg(long, value_delimiter = ',')]
    columns: Option<Vec<String>>,

    /// Columns computed for each record after its fields are taken, as LOAD DATA's SET:
    /// comma-separated assignments, e.g. `--columns id,@raw --set "name = UPPER(@raw)"`.
    #[arg(long, default_value = "")]
    set: String,

    /// Rows per transaction.
    #[arg(long, default_value_t = 1000)]
    batch_rows: usize,

    /// Transactions in flight (one SQL session each).
    #[arg(long, default_value_t = 8)]
    threads: usize,

    /// Where rejected records go, with their file, line and reason (default: the table's
    /// name with `.rejects` in the current directory).
    #[arg(long)]
    rejects: Option<PathBuf>,

    /// Rejected records allowed before the import stops (0: none).
    #[arg(long, default_value_t = 0)]
    max_rejects: u64,

    /// A row whose key is taken replaces the row that has it (default: it is rejected).
    #[arg(long)]
    replace: bool,

    /// Continues the import the state file describes: chunks it records as committed are
    /// skipped, the others loaded with duplicates of earlier tries skipped.
    #[arg(long)]
    resume: bool,

    /// The state file (default: the table's name with `.import-state`).
    #[arg(long)]
    state: Option<PathBuf>,

    /// No progress line (for scripts; the summary is printed all the same).
    #[arg(long)]
    quiet: bool,
}

/// Largest `--batch-rows`: a transaction's operations are bounded in the data nodes.
const BATCH_ROWS_MAX: usize = 10_000;
/// Most `--threads`.
const THREADS_MAX: usize = 256;

pub fn run(args: &ImportArgs) -> Result<(), Failure> {
    let plan = plan(args)?;
    let stop = crate::stop_on_signals()?;
    let client = Client::connect_cluster(&args.mgm, args.key.load()?.as_ref())
        .map_err(|e| Failure::runtime(format!("cannot reach the cluster at {}: {e}", args.mgm)))?;
    let catalog = Catalog::new(client);
    let summary = workers::import(&catalog, &plan, &stop)?;
    println!("{summary}");
    if stop.load(Ordering::SeqCst) {
        return Err(Failure::runtime(format!(
            "stopped; run again with --resume to go on (state in {})",
            plan.state.display()
        )));
    }
    summary.verdict(plan.max_rejects)
}

/// What to import, and how, checked.
pub(crate) struct Plan {
    pub database: String,
    pub table: String,
    pub files: Vec<PathBuf>,
    pub format: FieldFormat,
    pub skip_lines: u64,
    pub columns: Option<Vec<String>>,
    pub set: Vec<Assignment>,
    pub batch_rows: usize,
    pub threads: usize,
    pub rejects: PathBuf,
    pub max_rejects: u64,
    pub on_duplicate: OnDuplicate,
    pub resume: bool,
    pub state: PathBuf,
    pub progress: bool,
}

fn plan(args: &ImportArgs) -> Result<Plan, Failure> {
    let Some((database, table)) = args.target.split_once('.') else {
        return Err(Failure::usage(format!(
            "the table must be given as DATABASE.TABLE, not `{}`",
            args.target
        )));
    };
    crate::check_count("--batch-rows", args.batch_rows, BATCH_ROWS_MAX)?;
    crate::check_count("--threads", args.threads, THREADS_MAX)?;
    for file in &args.files {
        if !file.is_file() {
            return Err(Failure::usage(format!("{}: no such file", file.display())));
        }
    }
    let format = FieldFormat {
        fields_terminated_by: unescape_option(&args.fields_terminated_by),
        enclosed_by: one_byte("--fields-enclosed-by", &args.fields_enclosed_by)?,
        escaped_by: one_byte("--fields-escaped-by", &args.fields_escaped_by)?,
        lines_starting_by: unescape_option(&args.lines_starting_by),
        lines_terminated_by: unescape_option(&args.lines_terminated_by),
    };
    format.check().map_err(|e| Failure::usage(e.to_string()))?;
    let set = match args.set.trim() {
        "" => Vec::new(),
        text => {
            parse_assignments(text).map_err(|e| Failure::usage(format!("--set: {}", e.message)))?
        }
    };
    let named = |extension: &str| PathBuf::from(format!("{table}.{extension}"));
    Ok(Plan {
        database: database.to_string(),
        table: table.to_string(),
        files: args.files.clone(),
        format,
        skip_lines: args.skip_lines,
        columns: args.columns.clone(),
        set,
        batch_rows: args.batch_rows,
        threads: args.threads,
        rejects: args.rejects.clone().unwrap_or_else(|| named("rejects")),
        max_rejects: args.max_rejects,
        on_duplicate: if args.replace {
            OnDuplicate::Replace
        } else {
            OnDuplicate::Error
        },
        resume: args.resume,
        state: args.state.clone().unwrap_or_else(|| named("import-state")),
        progress: !args.quiet,
    })
}

/// An option's text with `\t`, `\n`, `\r`, `\0` and `\\` turned into their bytes.
fn unescape_option(text: &str) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut chars = text.bytes();
    while let Some(byte) = chars.next() {
        if byte != b'\\' {
            bytes.push(byte);
            continue;
        }
        match chars.next() {
            Some(b't') => bytes.push(b'\t'),
            Some(b'n') => bytes.push(b'\n'),
            Some(b'r') => bytes.push(b'\r'),
            Some(b'0') => bytes.push(0),
            Some(other) => bytes.push(other),
            None => bytes.push(b'\\'),
        }
    }
    bytes
}

fn one_byte(option: &str, text: &str) -> Result<Option<u8>, Failure> {
    match unescape_option(text).as_slice() {
        [] => Ok(None),
        [byte] => Ok(Some(*byte)),
        _ => Err(Failure::usage(format!("{option} takes one character"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_escapes_become_their_bytes() {
        assert_eq!(unescape_option("\\t"), b"\t");
        assert_eq!(unescape_option("\\r\\n"), b"\r\n");
        assert_eq!(unescape_option("\\\\"), b"\\");
        assert_eq!(unescape_option("a,b"), b"a,b");
        assert!(matches!(one_byte("--x", "\\"), Ok(Some(b'\\'))));
        assert!(matches!(one_byte("--x", ""), Ok(None)));
        assert!(one_byte("--x", "ab").is_err());
    }
}
