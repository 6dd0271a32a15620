//! The import's threads: a reader cutting the files into chunks of records, workers
//! loading a chunk per transaction, and the calling thread collecting what they did
//! (progress, rejects, the state file).

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::Mutex;
use std::time::Duration;

use kista_sql::error::SqlError;
use kista_sql::load_data::{DirectLoader, EncodedRows, Loader, OnDuplicate, Record, RecordReader};
use kista_sql::session::Session;
use kista_sql::Catalog;

use super::state::ImportState;
use super::summary::Summary;
use super::Plan;
use crate::progress::Progress;
use crate::Failure;

/// Chunks read ahead of the workers, per worker.
const CHUNKS_AHEAD_PER_WORKER: usize = 2;
/// Tries of a chunk that meets a deadlock, lock wait timeout or temporary cluster error.
const TEMPORARY_ATTEMPTS: u32 = 10;
/// How often the progress line and the state file are brought up to date.
const REPORT_INTERVAL: Duration = Duration::from_secs(1);
/// How often the committed chunks are recorded for `--resume`: what a crash makes a resume
/// load again is what committed since (skipped by key, but read and sent).
const STATE_SAVE_INTERVAL: Duration = Duration::from_millis(250);

/// Records of one file, loaded in one transaction.
struct Chunk {
    /// Its place among every chunk of every file, from 0: the state file's unit.
    id: u64,
    file: usize,
    records: Vec<Record>,
    /// An earlier import may have committed it (it is not recorded as done): a row whose
    /// key is taken is taken by itself, and skipped.
    retried: bool,
}

/// A record that makes no row.
pub(super) struct Reject {
    file: usize,
    line: u64,
    reason: String,
    fields: Vec<Option<Vec<u8>>>,
}

/// What a worker did with a chunk.
enum Done {
    Loaded {
        chunk: u64,
        rows: u64,
        skipped: u64,
        rejects: Vec<Reject>,
    },
    /// It could not be loaded (its outcome may be unknown): the import stops.
    Failed { chunk: u64, reason: String },
}

/// Imports `plan`'s files into its table; the summary once every chunk is loaded, or the
/// import stopped (`stop` set by a signal, too many rejects, a failed chunk).
pub(super) fn import(
    catalog: &Catalog,
    plan: &Plan,
    stop: &AtomicBool,
) -> Result<Summary, Failure> {
    let session = Session::new(catalog, "root".into(), 0);
    let columns = plan.columns.as_deref();
    let table = (Some(plan.database.as_str()), plan.table.as_str());
    let loader =
        Loader::open(&session, table, columns, &plan.set, plan.on_duplicate).map_err(|e| {
            Failure::runtime(format!("{}.{}: {}", plan.database, plan.table, e.message))
        })?;
    drop(session);
    // A plain table's rows go to the cluster encoded straight from the file.
    let direct = match loader.direct() {
        Ok(direct) => Some(direct),
        Err(reason) => {
            eprintln!(
                "kista import: {}.{} is loaded through the SQL layer a row at a time, more \
                 slowly, because {reason}",
                plan.database, plan.table
            );
            None
        }
    };
    let mut state = ImportState::open(plan)?;
    let total_bytes = plan
        .files
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    let mut rejects = RejectsFile::new(plan);
    let mut progress = Progress::new(total_bytes, plan.progress);
    let bytes_read = AtomicU64::new(0);
    let (chunks_in, chunks_out) = mpsc::sync_channel(plan.threads * CHUNKS_AHEAD_PER_WORKER);
    let chunks_out = Mutex::new(chunks_out);
    let (done_in, done_out) = mpsc::channel();
    // Loaded chunks' records go back to the reader to be filled again: a record's buffers
    // are allocated once, not once per row (and not freed on another thread).
    let (spent_in, spent_out) = mpsc::sync_channel(plan.threads * CHUNKS_AHEAD_PER_WORKER);
    std::thread::scope(|scope| {
        // The reader passes over the chunks committed when the import began.
        let done_before = state.clone();
        let bytes_read = &bytes_read;
        let channels = (chunks_in, spent_out);
        let reader =
            scope.spawn(move || read_chunks(plan, &done_before, channels, bytes_read, stop));
        for worker in 0..plan.threads {
            let (done_in, chunks_out) = (done_in.clone(), &chunks_out);
            let loaders = (&loader, direct.as_ref());
            let worker = worker as u32 + 1;
            let channels = (chunks_out, spent_in.clone(), done_in);
            scope.spawn(move || load_chunks(catalog, worker, loaders, channels, stop));
        }
        drop(spent_in);
        drop(done_in);
        let collected = collect(
            &done_out,
            plan,
            &mut state,
            &mut rejects,
            &mut progress,
            bytes_read,
            stop,
        );
        // Every worker has ended: a reader still handing over a chunk (the import
        // stopped) is let go by the end of what it hands them to.
        if let Ok(mut receiver) = chunks_out.lock() {
            *receiver = mpsc::sync_channel(0).1;
        }
        let read = reader
            .join()
            .unwrap_or_else(|_| Err("the reader thread failed".into()));
        collected.and(read.map_err(Failure::runtime))
    })?;
    state.save()?;
    rejects.finish()?;
    Ok(Summary::of(&progress, &rejects.path))
}

/// The reader: each file's records, in chunks, to the workers (chunks the state records
/// as committed are passed over).
fn read_chunks(
    plan: &Plan,
    done: &ImportState,
    (chunks, spent): (SyncSender<Chunk>, Receiver<Vec<Record>>),
    bytes_read: &AtomicU64,
    stop: &AtomicBool,
) -> Result<(), String> {
    let mut next_id = 0;
    for (file_index, path) in plan.files.iter().enumerate() {
        let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let counting = CountingReader {
            inner: file,
            bytes: bytes_read,
        };
        let mut reader = RecordReader::new(std::io::BufReader::new(counting), plan.format.clone())
            .map_err(|e| e.to_string())?;
        reader
            .skip_lines(plan.skip_lines)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        loop {
            let mut records = spent.try_recv().unwrap_or_default();
            let mut filled = 0;
            while filled < plan.batch_rows {
                if filled == records.len() {
                    records.push(Record::default());
                }
                let record = &mut records[filled];
                let read = reader.next_record(record);
                if !read.map_err(|e| format!("{}: {e}", path.display()))? {
                    break;
                }
                filled += 1;
            }
            records.truncate(filled);
            if records.is_empty() || stop.load(Ordering::SeqCst) {
                break;
            }
            let id = next_id;
            next_id += 1;
            if done.is_done(id) {
                continue;
            }
            let chunk = Chunk {
                id,
                file: file_index,
                records,
                retried: plan.resume,
            };
            if chunks.send(chunk).is_err() {
                return Ok(()); // the workers stopped
            }
        }
    }
    Ok(())
}

/// A worker: a SQL session of its own, loading chunks until there are none (directly
/// when it can).
fn load_chunks(
    catalog: &Catalog,
    worker: u32,
    (loader, direct): (&Loader, Option<&DirectLoader>),
    (chunks, spent, done): (
        &Mutex<Receiver<Chunk>>,
        SyncSender<Vec<Record>>,
        Sender<Done>,
    ),
    stop: &AtomicBool,
) {
    let mut session = Session::new(catalog, "root".into(), worker);
    let ignoring = loader.with_duplicates(OnDuplicate::Ignore);
    let mut encoded = EncodedRows::default();
    while !stop.load(Ordering::SeqCst) {
        let next = chunks.lock().map(|receiver| receiver.recv());
        let Ok(Ok(chunk)) = next else {
            return;
        };
        let loaded = match (chunk.retried, direct) {
            (true, _) => load_chunk(&mut session, &ignoring, &chunk),
            (false, Some(direct)) => {
                load_chunk_directly(&mut session, (direct, loader), &chunk, &mut encoded)
            }
            (false, None) => load_chunk(&mut session, loader, &chunk),
        };
        // Back to the reader unless it has enough (or has ended).
        let _ = spent.try_send(chunk.records);
        if done.send(loaded).is_err() {
            return;
        }
    }
}

/// [`load_chunk`] with its rows encoded straight from their fields; if the cluster
/// refuses it for one of its rows, `load_chunk` finds which.
fn load_chunk_directly(
    session: &mut Session,
    (direct, loader): (&DirectLoader, &Loader),
    chunk: &Chunk,
    encoded: &mut EncodedRows,
) -> Done {
    encoded.clear();
    let mut rejects = Vec::new();
    for record in &chunk.records {
        if let Err(error) = direct.encode(session, record, encoded) {
            rejects.push(reject(chunk, record, &error));
        }
    }
    match retrying(|| direct.insert(session, encoded)) {
        Ok(rows) => Done::Loaded {
            chunk: chunk.id,
            rows,
            skipped: 0,
            rejects,
        },
        Err(error) if is_row_error(&error) => load_chunk(session, loader, chunk),
        Err(error) => Done::Failed {
            chunk: chunk.id,
            reason: reason(&error),
        },
    }
}

/// One chunk in one transaction; if the cluster refuses it for one of its rows (a
/// duplicate key, a missing parent row, a CHECK), each row alone, to find which.
fn load_chunk(session: &mut Session, loader: &Loader, chunk: &Chunk) -> Done {
    let mut rejects = Vec::new();
    let mut good = Vec::with_capacity(chunk.records.len());
    let mut rows = Vec::with_capacity(chunk.records.len());
    for (index, record) in chunk.records.iter().enumerate() {
        match loader.convert(session, record) {
            Ok(row) => {
                rows.push(row);
                good.push(index);
            }
            Err(error) => rejects.push(reject(chunk, record, &error)),
        }
    }
    let mut rows = Some(rows);
    let outcome = retrying(|| {
        // Converted again after a refused try, which took the rows (a rare path).
        let rows = match rows.take() {
            Some(rows) => rows,
            None => (good.iter())
                .map(|&i| loader.convert(session, &chunk.records[i]))
                .collect::<Result<_, _>>()?,
        };
        loader.insert(session, rows)
    });
    let (rows, skipped) = match outcome {
        Ok(counts) => counts,
        Err(error) if is_row_error(&error) => {
            match load_one_by_one(session, loader, chunk, &good, &mut rejects) {
                Ok(counts) => counts,
                Err(reason) => {
                    return Done::Failed {
                        chunk: chunk.id,
                        reason,
                    }
                }
            }
        }
        Err(error) => {
            return Done::Failed {
                chunk: chunk.id,
                reason: reason(&error),
            }
        }
    };
    Done::Loaded {
        chunk: chunk.id,
        rows,
        skipped,
        rejects,
    }
}

fn load_one_by_one(
    session: &mut Session,
    loader: &Loader,
    chunk: &Chunk,
    good: &[usize],
    rejects: &mut Vec<Reject>,
) -> Result<(u64, u64), String> {
    let mut counts = (0, 0);
    for &index in good {
        let record = &chunk.records[index];
        let row = loader.convert(session, record).map_err(|e| e.message)?;
        match loader.insert(session, vec![row]) {
            Ok((rows, skipped)) => {
                counts.0 += rows;
                counts.1 += skipped;
            }
            Err(error) if is_row_error(&error) => rejects.push(reject(chunk, record, &error)),
            Err(error) => return Err(reason(&error)),
        }
    }
    Ok(counts)
}

/// `work` again after a pause while the cluster refuses it with a temporary error (a
/// deadlock, a lock wait timeout, a temporary cluster error), up to
/// [`TEMPORARY_ATTEMPTS`] tries.
fn retrying<T>(mut work: impl FnMut() -> Result<T, SqlError>) -> Result<T, SqlError> {
    let mut attempt = 1;
    loop {
        match work() {
            Err(error) if error.is_temporary() && attempt < TEMPORARY_ATTEMPTS => {
                std::thread::sleep(Duration::from_millis(10 << attempt.min(6)));
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// Whether the cluster refused a batch for a row in it (not for a reason that would
/// refuse any batch).
fn is_row_error(error: &SqlError) -> bool {
    matches!(
        error.code,
        1048 | 1062 | 1264 | 1366 | 1406 | 1451 | 1452 | 3819
    )
}

/// How the import names an error: its message and code.
fn reason(error: &SqlError) -> String {
    format!("{} (error {})", error.message, error.code)
}

fn reject(chunk: &Chunk, record: &Record, error: &SqlError) -> Reject {
    Reject {
        file: chunk.file,
        line: record.line,
        reason: reason(error),
        fields: record.fields().map(|f| f.map(<[u8]>::to_vec)).collect(),
    }
}

/// The calling thread's part: takes what the workers did, draws progress, writes
/// rejects, records committed chunks; stops the import past `--max-rejects` or at a
/// failed chunk.
fn collect(
    done: &Receiver<Done>,
    plan: &Plan,
    state: &mut ImportState,
    rejects: &mut RejectsFile,
    progress: &mut Progress,
    bytes_read: &AtomicU64,
    stop: &AtomicBool,
) -> Result<(), Failure> {
    let mut failure = None;
    let mut saved_at = std::time::Instant::now();
    loop {
        match done.recv_timeout(STATE_SAVE_INTERVAL) {
            Ok(Done::Loaded {
                chunk,
                rows,
                skipped,
                rejects: rejected,
            }) => {
                progress.loaded(rows, skipped, rejected.len() as u64);
                for reject in rejected {
                    rejects.write(plan, &reject)?;
                }
                state.done(chunk);
                if progress.rejected() > plan.max_rejects && !stop.swap(true, Ordering::SeqCst) {
                    failure = Some(Failure::runtime(format!(
                        "more than --max-rejects ({}) records rejected; see {}",
                        plan.max_rejects,
                        rejects.path.display()
                    )));
                }
            }
            Ok(Done::Failed { chunk, reason }) => {
                stop.store(true, Ordering::SeqCst);
                failure.get_or_insert_with(|| {
                    Failure::runtime(format!(
                        "chunk {chunk} could not be loaded: {reason}; run again with --resume \
                         to go on (state in {})",
                        plan.state.display()
                    ))
                });
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if saved_at.elapsed() >= STATE_SAVE_INTERVAL {
            state.save()?;
            saved_at = std::time::Instant::now();
        }
        if progress.due(REPORT_INTERVAL) {
            progress.draw(bytes_read.load(Ordering::Relaxed));
        }
    }
    progress.finish(bytes_read.load(Ordering::Relaxed));
    failure.map_or(Ok(()), Err)
}

/// Counts the bytes read through it (the progress line's share of the files).
struct CountingReader<'a> {
    inner: File,
    bytes: &'a AtomicU64,
}

impl Read for CountingReader<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buffer)?;
        self.bytes.fetch_add(read as u64, Ordering::Relaxed);
        Ok(read)
    }
}

/// The rejects file: one line per rejected record, `FILE:LINE: REASON`, then the record
/// (its fields tab-separated, NULL as `\N`).
struct RejectsFile {
    path: std::path::PathBuf,
    out: Option<BufWriter<File>>,
}

impl RejectsFile {
    /// Opened at the first reject (an import without any leaves no file).
    fn new(plan: &Plan) -> Self {
        RejectsFile {
            path: plan.rejects.clone(),
            out: None,
        }
    }

    fn write(&mut self, plan: &Plan, reject: &Reject) -> Result<(), Failure> {
        let failed = |e: std::io::Error| Failure::runtime(format!("{}: {e}", self.path.display()));
        if self.out.is_none() {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(plan.resume)
                .write(true)
                .truncate(!plan.resume)
                .open(&self.path)
                .map_err(failed)?;
            self.out = Some(BufWriter::new(file));
        }
        let Some(out) = self.out.as_mut() else {
            return Ok(());
        };
        let fields: Vec<String> = reject
            .fields
            .iter()
            .map(|f| {
                f.as_ref().map_or("\\N".to_string(), |b| {
                    String::from_utf8_lossy(b).into_owned()
                })
            })
            .collect();
        let file = plan.files[reject.file].display();
        writeln!(
            out,
            "{file}:{}: {}\n\t{}",
            reject.line,
            reject.reason,
            fields.join("\t")
        )
        .map_err(|e| Failure::runtime(format!("{}: {e}", self.path.display())))
    }

    fn finish(&mut self) -> Result<(), Failure> {
        if let Some(out) = self.out.as_mut() {
            out.flush()
                .map_err(|e| Failure::runtime(format!("{}: {e}", self.path.display())))?;
        }
        Ok(())
    }
}
