//! The coordinator's side of scans: one record per client scan, a partition scan on each of
//! the table's partitions (placed by the read router), and rounds the client paces.
//!
//! A round asks every partition that has more for a batch; rows go straight from the
//! executors to the client, and when every partition has answered the coordinator tells the
//! client how many rows the round carried and whether the scan is over. A limit ends the
//! scan once enough rows have been sent: counted over all partitions for an unordered scan,
//! per partition for an ordered one (the client merges ordered partitions, so each must
//! deliver its own first `limit` rows). The client discards rows beyond the limit.
//!
//! A coordinator also scans for itself: a foreign key's search for the children of a
//! parent key a transaction removes (`tc/foreign_keys.rs`). The rows come here, and each
//! round is followed by the next at once.

use kista_runtime::section_pool::SectionPoolExhausted;
use kista_runtime::Context;
use kista_signal::{BlockAddress, NodeId, SectionHandle, TypedSignal};

use super::TransactionCoordinator;
use crate::cluster::NodeSet;
use crate::protocol::*;
use crate::{send_sharing_section, send_with_bytes};

/// Who receives a scan's rows and paces its rounds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ScanOwner {
    Client {
        client: BlockAddress,
        client_scan: u64,
    },
    /// This coordinator, for operation `op_ref` of `transaction`: a foreign key's search
    /// for children.
    ChildSearch { transaction: u64, op_ref: u32 },
}

pub(super) struct Scan {
    owner: ScanOwner,
    ordered: bool,
    limit: u64,
    batch_rows: u32,
    partitions: Vec<PartitionScan>,
    /// Partitions that have not answered this round.
    awaiting: u32,
    round_rows: u32,
    /// `ScanRows` signals the partitions sent the client this round.
    round_batches: u32,
    delivered: u64,
    failure: Option<(ErrorCode, String)>,
    /// The client closed the scan during a round.
    closing: bool,
    last_activity_ns: u64,
    /// The client's connection to this node closed (`tc/idle.rs`).
    client_lost: bool,
}

struct PartitionScan {
    partition: u32,
    executor: BlockAddress,
    delivered: u64,
    /// The executor has no more rows (or failed) and has forgotten the scan.
    done: bool,
    /// Asked for a batch in the current round, not answered yet.
    asked: bool,
}

impl Scan {
    /// Rows to ask a partition for in the next batch.
    fn rows_max(&self, partition: &PartitionScan) -> u32 {
        let sent = if self.ordered {
            partition.delivered
        } else {
            self.delivered
        };
        let left = self.limit.saturating_sub(sent);
        left.min(u64::from(self.batch_rows)) as u32
    }

    fn wants_more(&self, partition: &PartitionScan) -> bool {
        !partition.done && self.rows_max(partition) > 0
    }

    fn finished(&self) -> bool {
        self.failure.is_some()
            || self.closing
            || !self.partitions.iter().any(|p| self.wants_more(p))
    }
}

/// What a scan reads, from its request.
pub(super) struct ScanShape {
    pub(super) table_id: u32,
    pub(super) schema_version: u32,
    /// Rows wanted in all (`u64::MAX`: no limit).
    pub(super) limit: u64,
    /// 0: the default.
    pub(super) batch_rows: u32,
    pub(super) ordered: bool,
}

/// A scan's `ScanBody`: the client's section, or bytes the coordinator made.
#[derive(Clone, Copy)]
pub(super) enum ScanSection<'a> {
    Held(SectionHandle),
    Bytes(&'a [u8]),
}

/// Rows a partition returns per batch when the client does not say.
const SCAN_BATCH_ROWS_DEFAULT: u32 = 256;

impl TransactionCoordinator {
    pub(super) fn scan_request(
        &mut self,
        ctx: &mut Context,
        request: ScanRequest,
        section: Result<Option<SectionHandle>, SectionPoolExhausted>,
    ) {
        let refuse = |ctx: &mut Context, section: Option<SectionHandle>, code, message: String| {
            if let Some(section) = section {
                ctx.release_section(section);
            }
            scan_conf(
                ctx,
                request.client,
                request.client_scan,
                (0, 0),
                true,
                Some((code, message)),
            );
        };
        if !self.node_serves() {
            let (code, message) = super::restart::not_serving_yet(self.settings.node);
            return refuse(ctx, section.ok().flatten(), code, message);
        }
        let section = match section {
            Ok(Some(section)) => section,
            Ok(None) => {
                let message = "scan without a body".into();
                return refuse(ctx, None, ErrorCode::BadRequest, message);
            }
            Err(exhausted) => {
                let message = format!("no room for the scan's body: {exhausted}");
                return refuse(ctx, None, ErrorCode::Overloaded, message);
            }
        };
        if self
            .scans_by_client
            .contains_key(&(request.client, request.client_scan))
        {
            let message = format!("scan {} is already open", request.client_scan);
            return refuse(ctx, Some(section), ErrorCode::BadTransactionState, message);
        }
        if self.scans.len() >= self.settings.scans_per_tc_max {
            let message = format!(
                "the coordinator has {} open scans, its limit",
                self.scans.len()
            );
            return refuse(ctx, Some(section), ErrorCode::TooManyScans, message);
        }
        let Some(table) = self.tables.get(&request.table_id) else {
            let message = format!("no table {}", request.table_id);
            return refuse(ctx, Some(section), ErrorCode::NoSuchTable, message);
        };
        if request.schema_version < table.schema_version {
            table.tell_changed(ctx, request.client, request.table_id);
        }
        let owner = ScanOwner::Client {
            client: request.client,
            client_scan: request.client_scan,
        };
        let shape = ScanShape {
            table_id: request.table_id,
            schema_version: request.schema_version,
            limit: request.limit,
            batch_rows: request.batch_rows,
            ordered: request.ordered != 0,
        };
        let Some(id) = self.open_scan(ctx, owner, shape, ScanSection::Held(section)) else {
            // A limit of 0: nothing to ask anyone.
            return scan_conf(ctx, request.client, request.client_scan, (0, 0), true, None);
        };
        self.scans_by_client
            .insert((request.client, request.client_scan), id);
    }

    /// Starts a scan of every partition of a table this coordinator knows (the caller
    /// checked it and the limit on scans); `None` when nothing is to be asked (a limit of 0).
    pub(super) fn open_scan(
        &mut self,
        ctx: &mut Context,
        owner: ScanOwner,
        shape: ScanShape,
        body: ScanSection,
    ) -> Option<u64> {
        let here = ctx.address();
        let table = self.tables.get(&shape.table_id)?;
        self.counters.scan_opened();
        let mut scan = Scan {
            owner,
            ordered: shape.ordered,
            limit: shape.limit,
            batch_rows: match shape.batch_rows {
                0 => SCAN_BATCH_ROWS_DEFAULT,
                rows => rows,
            },
            partitions: Vec::new(),
            awaiting: 0,
            round_rows: 0,
            round_batches: 0,
            delivered: 0,
            failure: None,
            closing: false,
            last_activity_ns: ctx.now_ns(),
            client_lost: false,
        };
        scan.partitions = (0..table.map.partitions())
            .map(|partition| PartitionScan {
                partition,
                executor: self
                    .router
                    .place_scan(table.map.read_replica(partition, here.node()), here),
                delivered: 0,
                done: false,
                asked: true,
            })
            .collect();
        if scan.finished() {
            if let ScanSection::Held(section) = body {
                ctx.release_section(section);
            }
            return None;
        }
        let id = self.next_scan;
        self.next_scan += 1;
        let (client, client_scan) = match owner {
            ScanOwner::Client {
                client,
                client_scan,
            } => (client, client_scan),
            ScanOwner::ChildSearch { .. } => (here, id),
        };
        let count = scan.partitions.len();
        for (position, partition) in scan.partitions.iter().enumerate() {
            let signal = ScanFragment {
                tc: here,
                scan_id: id,
                table_id: shape.table_id,
                schema_version: shape.schema_version,
                partition: partition.partition,
                rows_max: scan.rows_max(partition),
                client,
                client_scan,
            }
            .to_signal(partition.executor, here);
            match body {
                ScanSection::Held(section) => {
                    send_sharing_section(ctx, signal, section, position + 1 == count);
                }
                ScanSection::Bytes(bytes) => {
                    send_with_bytes(ctx, signal, bytes);
                }
            }
        }
        scan.awaiting = count as u32;
        self.scans.insert(id, scan);
        self.start_ticking(ctx);
        Some(id)
    }

    pub(super) fn scan_next(&mut self, ctx: &mut Context, next: ScanNext) {
        let Some(&id) = self.scans_by_client.get(&(next.client, next.client_scan)) else {
            let message = format!("no open scan {}", next.client_scan);
            let failure = Some((ErrorCode::BadTransactionState, message));
            return scan_conf(ctx, next.client, next.client_scan, (0, 0), true, failure);
        };
        let now = ctx.now_ns();
        let scan = self.scans.get_mut(&id).expect("indexed scans exist");
        scan.last_activity_ns = now;
        if next.close != 0 {
            scan.closing = true;
            if scan.awaiting == 0 {
                self.end_round(ctx, id);
            }
            return;
        }
        if scan.awaiting > 0 {
            let message = "the scan's current round has not ended".to_string();
            let failure = Some((ErrorCode::BadTransactionState, message));
            return scan_conf(ctx, next.client, next.client_scan, (0, 0), false, failure);
        }
        self.next_round(ctx, id);
    }

    /// Asks every partition that has more for its next batch.
    fn next_round(&mut self, ctx: &mut Context, id: u64) {
        let here = ctx.address();
        let Some(scan) = self.scans.get_mut(&id) else {
            return;
        };
        for index in 0..scan.partitions.len() {
            let partition = &scan.partitions[index];
            if scan.wants_more(partition) {
                let request = ScanFragmentNext {
                    tc: here,
                    scan_id: id,
                    partition: partition.partition,
                    rows_max: scan.rows_max(partition),
                    close: 0,
                };
                ctx.send_typed(partition.executor, &request);
                scan.partitions[index].asked = true;
                scan.awaiting += 1;
            }
        }
    }

    pub(super) fn fragment_answered(
        &mut self,
        ctx: &mut Context,
        id: u64,
        partition: u32,
        answer: Result<(u32, bool), (ErrorCode, String)>,
    ) {
        let now = ctx.now_ns();
        let Some(scan) = self.scans.get_mut(&id) else {
            return;
        };
        let Some(state) = scan
            .partitions
            .iter_mut()
            .find(|p| p.partition == partition)
        else {
            return;
        };
        if !state.asked {
            return;
        }
        state.asked = false;
        scan.awaiting -= 1;
        scan.last_activity_ns = now;
        match answer {
            Ok((rows, done)) => {
                state.delivered += u64::from(rows);
                state.done |= done;
                scan.delivered += u64::from(rows);
                scan.round_rows += rows;
                scan.round_batches += 1;
            }
            Err(failure) => {
                state.done = true;
                scan.failure.get_or_insert(failure);
            }
        }
        if scan.awaiting == 0 {
            self.end_round(ctx, id);
        }
    }

    /// Every partition asked in this round answered: report the round, and end the scan if
    /// nothing more is wanted.
    fn end_round(&mut self, ctx: &mut Context, id: u64) {
        let Some(scan) = self.scans.get_mut(&id) else {
            return;
        };
        let round = (
            std::mem::take(&mut scan.round_rows),
            std::mem::take(&mut scan.round_batches),
        );
        let finished = scan.finished();
        match scan.owner {
            ScanOwner::Client {
                client,
                client_scan,
            } if !finished => scan_conf(ctx, client, client_scan, round, false, None),
            ScanOwner::ChildSearch { .. } if !finished => self.next_round(ctx, id),
            _ => {
                let Some(scan) = self.scans.remove(&id) else {
                    return;
                };
                close_partitions(ctx, id, &scan);
                match scan.owner {
                    ScanOwner::Client {
                        client,
                        client_scan,
                    } => {
                        self.scans_by_client.remove(&(client, client_scan));
                        scan_conf(ctx, client, client_scan, round, true, scan.failure);
                    }
                    ScanOwner::ChildSearch {
                        transaction,
                        op_ref,
                    } => self.children_searched(ctx, transaction, op_ref, scan.failure),
                }
            }
        }
    }

    /// The rows of a round of a scan this coordinator owns.
    pub(super) fn own_scan_rows(&mut self, ctx: &mut Context, rows: ScanRows) {
        let owner = self.scans.get(&rows.client_scan).map(|scan| scan.owner);
        let Some(ScanOwner::ChildSearch {
            transaction,
            op_ref,
        }) = owner
        else {
            return;
        };
        let decoded = ctx.section().map(|bytes| RowsBody::decode(&bytes));
        match decoded {
            Some(Ok(rows)) => self.children_found(transaction, op_ref, rows),
            Some(Err(error)) => {
                if let Some(scan) = self.scans.get_mut(&rows.client_scan) {
                    let message = format!("scanned rows: {error}");
                    scan.failure.get_or_insert((ErrorCode::BadRequest, message));
                }
            }
            None => {}
        }
    }

    /// Closes scans whose client has not asked for the next round within the inactivity
    /// timeout, so their executors stop holding state.
    pub(super) fn close_idle_scans(&mut self, ctx: &mut Context, now_ns: u64, limit_ns: u64) {
        let idle: Vec<u64> = self
            .scans
            .iter()
            .filter(|(_, scan)| scan.awaiting == 0)
            .filter(|(_, scan)| {
                scan.client_lost || now_ns.saturating_sub(scan.last_activity_ns) > limit_ns
            })
            .map(|(&id, _)| id)
            .collect();
        for id in idle {
            if let Some(scan) = self.scans.get_mut(&id) {
                let message = if scan.client_lost {
                    "the connection of its client closed; the scan was closed".to_string()
                } else {
                    format!(
                        "the scan was idle for more than {} ms and was closed",
                        self.settings.transaction_inactive_timeout_ms
                    )
                };
                scan.failure = Some((ErrorCode::TransactionInactive, message));
                self.end_round(ctx, id);
            }
        }
    }

    /// Marks the scans of client node `lost`: closed once their round ends.
    pub(super) fn scans_client_lost(&mut self, lost: NodeId) {
        for scan in self.scans.values_mut() {
            if matches!(scan.owner, ScanOwner::Client { client, .. } if client.node() == lost) {
                scan.client_lost = true;
            }
        }
    }

    /// Partitions scanned on `lost` nodes will never answer: their scans fail (error
    /// 4010), ending the round if it waited only for them.
    pub(super) fn scans_lost(&mut self, ctx: &mut Context, lost: NodeSet) {
        let mut ended = Vec::new();
        for (&id, scan) in &mut self.scans {
            let waited = scan.awaiting > 0;
            for partition in &mut scan.partitions {
                if partition.done || !lost.contains(partition.executor.node()) {
                    continue;
                }
                partition.done = true;
                if partition.asked {
                    partition.asked = false;
                    scan.awaiting -= 1;
                }
                let message = format!(
                    "data node {} failed while it scanned partition {}; the scan may be retried",
                    partition.executor.node(),
                    partition.partition
                );
                scan.failure
                    .get_or_insert((ErrorCode::NodeFailure, message));
            }
            if waited && scan.awaiting == 0 {
                ended.push(id);
            }
        }
        for id in ended {
            self.end_round(ctx, id);
        }
    }

    /// Open scans, for tests and statistics.
    pub fn open_scans(&self) -> usize {
        self.scans.len()
    }
}

/// Tells the executors of partitions that still hold the scan to forget it.
fn close_partitions(ctx: &mut Context, id: u64, scan: &Scan) {
    let here = ctx.address();
    for partition in scan.partitions.iter().filter(|p| !p.done) {
        let close = ScanFragmentNext {
            tc: here,
            scan_id: id,
            partition: partition.partition,
            rows_max: 0,
            close: 1,
        };
        ctx.send_typed(partition.executor, &close);
    }
}

fn scan_conf(
    ctx: &mut Context,
    client: BlockAddress,
    client_scan: u64,
    (rows, batches): (u32, u32),
    done: bool,
    failure: Option<(ErrorCode, String)>,
) {
    let (code, message) =
        failure.map_or((0, String::new()), |(code, message)| (code as u32, message));
    let conf = ScanConf {
        client_scan,
        rows,
        batches,
        done: u32::from(done),
        code,
    };
    send_with_bytes(
        ctx,
        conf.to_signal(client, ctx.address()),
        message.as_bytes(),
    );
}
