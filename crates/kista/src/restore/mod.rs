//! `kista restore` (NDB's `ndb_restore`): loads an online backup into a running cluster of
//! any size through the native client. It finds the backup's files under the directories
//! given (every participant's, `files.rs`), creates the backup's tables (`load.rs`), loads
//! what each `ldm`'s files restore (its scanned rows, each replaced by its log's last
//! change up to the backup's stop GCI: `kista_datanode::backup_files::restore_ldm`) with
//! `--threads` transactions in flight, then adds the foreign keys. The rows are written
//! (insert or replace), so a restore interrupted and run again into the same tables
//! finishes the job.
//!
//! The cluster's own hidden tables (`#kista/...`, e.g. AUTO_INCREMENT counters) may exist
//! already in the target (its SQL front end creates them): their rows are written into
//! them. Any other table of the backup must not exist yet.

use std::path::PathBuf;

use clap::Args;
use kista_client::Client;

use crate::key_file::KeyFileArg;
use crate::Failure;

mod files;
mod load;

#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// The management server of the cluster to restore into.
    #[arg(long, default_value = "127.0.0.1:1186")]
    mgm: String,

    #[command(flatten)]
    key: KeyFileArg,

    /// The backup to restore (default: the newest found under the paths).
    #[arg(long)]
    backup_id: Option<u32>,

    /// Directories holding the backup: each data node's `backup/BACKUP-<id>` directory,
    /// or directories above them (searched four levels deep), e.g. `kista up`'s `--dir`.
    #[arg(required = true)]
    paths: Vec<PathBuf>,

    /// Transactions in flight.
    #[arg(long, default_value_t = 8)]
    threads: usize,

    /// Rows per transaction.
    #[arg(long, default_value_t = 500)]
    batch_rows: usize,

    /// No progress line (for scripts; the summary is printed all the same).
    #[arg(long)]
    quiet: bool,
}

/// Largest `--batch-rows`: a transaction's operations are bounded in the data nodes.
const BATCH_ROWS_MAX: usize = 10_000;
/// Most `--threads`.
const THREADS_MAX: usize = 256;

pub fn run(args: &RestoreArgs) -> Result<(), Failure> {
    crate::check_count("--batch-rows", args.batch_rows, BATCH_ROWS_MAX)?;
    crate::check_count("--threads", args.threads, THREADS_MAX)?;
    let backup = files::find(&args.paths, args.backup_id)?;
    let stop = crate::stop_on_signals()?;
    let client = Client::connect_cluster(&args.mgm, args.key.load()?.as_ref())
        .map_err(|e| Failure::runtime(format!("cannot reach the cluster at {}: {e}", args.mgm)))?;
    let options = load::Options {
        threads: args.threads,
        batch_rows: args.batch_rows,
        progress: !args.quiet,
    };
    let summary = load::restore(&client, &backup, &options, &stop)?;
    println!("{summary}");
    Ok(())
}
