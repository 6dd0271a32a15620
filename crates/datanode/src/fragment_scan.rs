//! Partition scans run for a coordinator, one batch per request. The same code serves the
//! owning `ldm` and `query` instances: both read through the [`PartitionRegistry`] under the
//! partition's shared lock, and only committed versions, so a scan never blocks on row locks
//! and never sees a half-written row.

use rustc_hash::FxHashMap;
use std::sync::Arc;

use kista_runtime::Context;
use kista_signal::wire::SECTION_BYTES_MAX;
use kista_signal::{BlockAddress, PayloadError, Signal, TypedSignal};
use kista_storage::codec::CodecError;
use kista_storage::filter::FilterProgram;
use kista_storage::partition::{ScanPosition, ScanRange, ScanVersions};

use crate::protocol::*;
use crate::read::project;
use crate::registry::{read_partition, PartitionRegistry};
use crate::{error_code_of, send_with_bytes};

/// Rows one batch of one partition returns at most, whatever the client asks.
pub const SCAN_BATCH_ROWS_MAX: u32 = 4096;
/// A batch ends once its encoded rows pass this size (always after at least one row), so
/// each `ScanRows` section stays well inside the transport's section limit.
pub const SCAN_BATCH_BYTES_TARGET: usize = 256 * 1024;

struct FragmentScan {
    table_id: u32,
    client: BlockAddress,
    client_scan: u64,
    range: ScanRange,
    filter: Option<FilterProgram>,
    columns: Vec<u16>,
    versions: ScanVersions,
    /// Where the next batch starts; `None` before the first.
    position: Option<ScanPosition>,
}

/// A coordinator's scan of one partition: (coordinator, its scan id, partition).
type ScanKey = (BlockAddress, u64, u32);

pub struct FragmentScans {
    registry: Arc<PartitionRegistry>,
    scans: FxHashMap<ScanKey, FragmentScan>,
    scans_max: usize,
    /// The batch being filled, kept to reuse its allocation.
    rows: Vec<u8>,
}

type Failure = (ErrorCode, String);

impl FragmentScans {
    pub fn new(registry: Arc<PartitionRegistry>, scans_max: usize) -> Self {
        Self {
            registry,
            scans: FxHashMap::default(),
            scans_max,
            rows: Vec::new(),
        }
    }

    /// Partition scans waiting for their next batch.
    pub fn open_scans(&self) -> usize {
        self.scans.len()
    }

    /// Executes the scan signals (`ScanFragment`, `ScanFragmentNext`) for the block hosting
    /// these scans; `None` for any other signal.
    pub fn execute(
        &mut self,
        signal: &Signal,
        ctx: &mut Context,
    ) -> Option<Result<(), PayloadError>> {
        let number = signal.number();
        if number == ScanFragment::NUMBER {
            Some(ScanFragment::from_signal(signal).map(|request| {
                let body = ctx.section().map(|bytes| ScanBody::decode(&bytes));
                self.open(ctx, request, body)
            }))
        } else if number == ScanFragmentNext::NUMBER {
            Some(ScanFragmentNext::from_signal(signal).map(|next| self.next(ctx, next)))
        } else {
            None
        }
    }

    /// Opens a partition scan and sends its first batch.
    fn open(
        &mut self,
        ctx: &mut Context,
        request: ScanFragment,
        body: Option<Result<ScanBody, CodecError>>,
    ) {
        let key = (request.tc, request.scan_id, request.partition);
        let opened = self.validate(&request, body).and_then(|scan| {
            if self.scans.len() >= self.scans_max {
                let message = format!(
                    "{} partition scans are open on this executor, its limit",
                    self.scans.len()
                );
                return Err((ErrorCode::TooManyScans, message));
            }
            self.scans.insert(key, scan);
            Ok(())
        });
        match opened {
            Ok(()) => self.batch(ctx, key, request.rows_max),
            Err(failure) => refuse(ctx, key, failure),
        }
    }

    /// Sends the next batch of a partition scan, or forgets it when the coordinator closes it.
    fn next(&mut self, ctx: &mut Context, next: ScanFragmentNext) {
        let key = (next.tc, next.scan_id, next.partition);
        if next.close != 0 {
            self.scans.remove(&key);
        } else if self.scans.contains_key(&key) {
            self.batch(ctx, key, next.rows_max);
        } else {
            let message = format!(
                "no open scan {} of partition {}",
                next.scan_id, next.partition
            );
            refuse(ctx, key, (ErrorCode::BadTransactionState, message));
        }
    }

    fn validate(
        &self,
        request: &ScanFragment,
        body: Option<Result<ScanBody, kista_storage::codec::CodecError>>,
    ) -> Result<FragmentScan, Failure> {
        let body = body
            .ok_or_else(|| (ErrorCode::BadRequest, "scan without a body".to_string()))?
            .map_err(|error| (ErrorCode::BadRequest, format!("scan body: {error}")))?;
        let shared = self.registry.get_at_version(
            request.table_id,
            request.partition,
            request.schema_version,
        )?;
        let layout = read_partition(&shared.partition).layout().clone();
        if let Some(&column) = body
            .columns
            .iter()
            .find(|&&c| usize::from(c) >= layout.column_count())
        {
            let message = format!("table {} has no column {column}", layout.table());
            return Err((ErrorCode::BadRequest, message));
        }
        let filter = body
            .filter
            .map(|filter| FilterProgram::new(filter, &layout))
            .transpose()
            .map_err(|error| (ErrorCode::BadRequest, format!("scan filter: {error}")))?;
        Ok(FragmentScan {
            table_id: request.table_id,
            client: request.client,
            client_scan: request.client_scan,
            range: body.range,
            filter,
            columns: body.columns,
            versions: body.versions,
            position: None,
        })
    }

    fn batch(&mut self, ctx: &mut Context, key: ScanKey, rows_max: u32) {
        let filled = self
            .registry
            .check_read_lease(ctx.now_ns())
            .and_then(|()| self.fill_batch(key, rows_max));
        match filled {
            Ok((rows, done)) => {
                let scan = &self.scans[&key];
                let header = ScanRows {
                    client_scan: scan.client_scan,
                    partition: key.2,
                    rows,
                    done: u32::from(done),
                };
                let signal = header.to_signal(scan.client, ctx.address());
                if !send_with_bytes(ctx, signal, &self.rows) {
                    self.scans.remove(&key);
                    let message = "no section free for scanned rows".to_string();
                    return refuse(ctx, key, (ErrorCode::Overloaded, message));
                }
                if done {
                    self.scans.remove(&key);
                }
                let conf = ScanFragmentConf {
                    scan_id: key.1,
                    partition: key.2,
                    rows,
                    done: u32::from(done),
                };
                ctx.send_typed(key.0, &conf);
            }
            Err(failure) => {
                self.scans.remove(&key);
                refuse(ctx, key, failure);
            }
        }
    }

    /// Fills `self.rows` with the scan's next batch: (rows, whether the scan is exhausted).
    fn fill_batch(&mut self, key: ScanKey, rows_max: u32) -> Result<(u32, bool), Failure> {
        let scan = self
            .scans
            .get_mut(&key)
            .expect("batch() is called for open scans only");
        let shared = self.registry.get(scan.table_id, key.2).ok_or_else(|| {
            let message = format!("table {} was dropped during the scan", scan.table_id);
            (ErrorCode::NoSuchTable, message)
        })?;
        let partition = read_partition(&shared.partition);
        let layout = partition.layout().clone();
        let rows_max = rows_max.clamp(1, SCAN_BATCH_ROWS_MAX) as usize;
        let buffer = &mut self.rows;
        RowsBody::start(buffer);
        let mut rows = 0;
        let resume = partition
            .scan(
                &scan.range,
                scan.versions,
                scan.filter.as_ref(),
                scan.position.as_ref(),
                rows_max,
                |fixed, var| {
                    RowsBody::push(buffer, &project(&layout, fixed, var, &scan.columns));
                    rows += 1;
                    buffer.len() < SCAN_BATCH_BYTES_TARGET
                },
            )
            .map_err(|error| (error_code_of(&error), error.to_string()))?;
        if buffer.len() > SECTION_BYTES_MAX {
            let message = format!(
                "a row of table {} is larger than the {SECTION_BYTES_MAX}-byte batch limit",
                layout.table()
            );
            return Err((ErrorCode::BadRequest, message));
        }
        let done = resume.is_none();
        scan.position = resume;
        Ok((rows, done))
    }
}

fn refuse(ctx: &mut Context, (tc, scan_id, partition): ScanKey, (code, message): Failure) {
    let refusal = ScanFragmentRef {
        scan_id,
        partition,
        code: code as u32,
    };
    send_with_bytes(
        ctx,
        refusal.to_signal(tc, ctx.address()),
        message.as_bytes(),
    );
}
