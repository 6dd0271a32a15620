//! Scans: a cursor over the rows of every partition of a table, fetched in rounds.
//!
//! The node sends each partition's rows straight to this client and ends each round with a
//! `ScanConf`; the cursor asks for the next round only when it runs low, so a slow reader
//! holds at most about one round of rows. An ordered scan merges the partitions' rows in
//! index order: a row leaves the cursor only when every partition that may still send rows
//! has one buffered, compared by the same byte encoding the node's ordered index uses.

use std::collections::{BTreeMap, VecDeque};
use std::sync::mpsc::{Receiver, RecvTimeoutError};

use kista_datanode::protocol::*;
use kista_signal::{BlockAddress, TypedSignal};
use kista_storage::codec::CodecError;
use kista_storage::filter::Filter;
use kista_storage::ordered_index::encode_ordered;
use kista_storage::partition::{IndexBound, IndexId, ScanRange};
use kista_storage::types::{ColumnType, Value};

use crate::{Client, ClientError, Table, REQUEST_TIMEOUT};

/// Rows per partition per round when the caller does not say (the node allows up to 4096).
pub const SCAN_BATCH_ROWS_DEFAULT: u32 = 256;

/// What to scan. Build with [`ScanSpec::full`] or [`ScanSpec::index_range`], then refine.
#[derive(Clone, Debug)]
pub struct ScanSpec {
    range: ScanRange,
    filter: Option<Filter>,
    columns: Vec<u16>,
    limit: Option<u64>,
    batch_rows: u32,
    ordered: bool,
}

impl ScanSpec {
    /// Every row of the table, in no particular order.
    pub fn full() -> Self {
        Self {
            range: ScanRange::Full,
            filter: None,
            columns: Vec::new(),
            limit: None,
            batch_rows: SCAN_BATCH_ROWS_DEFAULT,
            ordered: false,
        }
    }

    /// Rows whose key in the ordered index `index` lies between `lower` and `upper` (each a
    /// bound on a prefix of the index columns; `None`: open), returned in index order
    /// (descending when asked) merged over all partitions.
    pub fn index_range(
        table: &Table,
        index: &str,
        lower: Option<IndexBound>,
        upper: Option<IndexBound>,
        descending: bool,
    ) -> Result<Self, ClientError> {
        let (id, _) = table.index(index)?;
        Ok(Self {
            range: ScanRange::Index {
                index: id,
                lower,
                upper,
                descending,
            },
            ordered: true,
            ..Self::full()
        })
    }

    /// Keeps only rows the filter accepts (evaluated in the data node).
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Returns only these columns, in this order (default: every column).
    pub fn columns(mut self, columns: Vec<u16>) -> Self {
        self.columns = columns;
        self
    }

    /// Returns at most `rows` rows (for an ordered scan, the first ones in index order).
    pub fn limit(mut self, rows: u64) -> Self {
        self.limit = Some(rows);
        self
    }

    /// Rows each partition sends per round.
    pub fn batch_rows(mut self, rows: u32) -> Self {
        self.batch_rows = rows;
        self
    }

    /// An index range in no particular order: partitions' rows are returned as they arrive,
    /// which saves the merge.
    pub fn unordered(mut self) -> Self {
        self.ordered = false;
        self
    }
}

/// What the receive thread passes to a scan's cursor.
pub(crate) enum ScanEvent {
    Rows {
        partition: u32,
        done: bool,
        rows: Result<Vec<Vec<Value>>, CodecError>,
    },
    Conf {
        batches: u32,
        done: bool,
        code: u32,
        message: String,
    },
    /// The scan cannot go on: a connection it depends on is gone.
    Failed(ClientError),
}

/// How an ordered scan compares rows: the positions of the index columns in the rows it
/// receives, with their types.
struct MergeOrder {
    key: Vec<(usize, ColumnType)>,
    descending: bool,
    /// Columns the caller asked for: the first ones of each received row.
    returned_columns: Option<usize>,
}

impl MergeOrder {
    /// The order of ordered index `index`; adds its columns to `columns` (the projection
    /// the node returns) where missing, so every received row carries its key.
    fn new(
        table: &Table,
        index: IndexId,
        descending: bool,
        columns: &mut Vec<u16>,
    ) -> Result<Self, ClientError> {
        let schema = table
            .indexes
            .iter()
            .find(|(id, _)| *id == index)
            .map(|(_, schema)| schema)
            .ok_or_else(|| ClientError::Usage(format!("no index {}", index.0)))?;
        let returned_columns = (!columns.is_empty()).then_some(columns.len());
        let mut key = Vec::with_capacity(schema.columns.len());
        for &column in &schema.columns {
            let column_type = table
                .layout
                .column(column)
                .expect("indexes name their table's columns")
                .column_type;
            let position = match columns.iter().position(|&c| usize::from(c) == column) {
                _ if returned_columns.is_none() => column,
                Some(at) => at,
                None => {
                    columns.push(column as u16);
                    columns.len() - 1
                }
            };
            key.push((position, column_type));
        }
        Ok(Self {
            key,
            descending,
            returned_columns,
        })
    }
}

#[derive(Default)]
struct PartitionRows {
    rows: VecDeque<(Vec<u8>, Vec<Value>)>,
    received: u64,
    done: bool,
}

/// A running scan: an iterator over its rows. Dropping it before the end closes the scan
/// on the node.
pub struct Scan<'c> {
    client: &'c Client,
    client_scan: u64,
    coordinator: BlockAddress,
    events: Receiver<ScanEvent>,
    limit: u64,
    returned: u64,
    merge: Option<MergeOrder>,
    /// Unordered: every row in arrival order. Ordered: rows by partition.
    arrived: VecDeque<Vec<Value>>,
    partitions: BTreeMap<u32, PartitionRows>,
    /// The first round is in: every partition has sent a batch, so `partitions` holds all.
    partitions_known: bool,
    low_water_rows: usize,
    round: Round,
    failure: Option<ClientError>,
}

/// The state of the current round.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Round {
    /// Rows are on their way; `batches` arrived, `conf` once the coordinator ended it.
    Running {
        batches: u32,
        conf: Option<(u32, bool)>,
    },
    /// Every batch arrived and the scan has more: the next round is the cursor's to ask.
    Ended,
    /// The node has sent everything and forgotten the scan.
    Over,
}

impl Client {
    /// Starts a committed-read scan of `table` over all its partitions in parallel.
    pub fn scan(&self, table: &Table, spec: ScanSpec) -> Result<Scan<'_>, ClientError> {
        if spec.batch_rows == 0 || spec.limit == Some(0) {
            return Err(ClientError::Usage(
                "a scan needs a batch size and a limit above 0".into(),
            ));
        }
        let mut columns = if spec.columns.is_empty() {
            table.every_column().to_vec()
        } else {
            spec.columns.clone()
        };
        let merge = match &spec.range {
            ScanRange::Index {
                index, descending, ..
            } if spec.ordered => Some(MergeOrder::new(table, *index, *descending, &mut columns)?),
            _ => None,
        };
        let body = ScanBody {
            range: spec.range,
            filter: spec.filter,
            columns,
            versions: kista_storage::partition::ScanVersions::Committed,
        };
        let mut section = Vec::new();
        body.encode(&mut section);
        let client_scan = self.next_id();
        let coordinator = self.any_coordinator(client_scan)?;
        let events = self.in_flight.open_scan(client_scan);
        let request = ScanRequest {
            client: self.me,
            client_scan,
            table_id: table.id,
            schema_version: table.schema_version,
            limit: spec.limit.unwrap_or(u64::MAX),
            batch_rows: spec.batch_rows,
            ordered: u32::from(merge.is_some()),
        };
        if let Err(error) = self.send(request.to_signal(coordinator, self.me), &section) {
            self.in_flight.forget_scan(client_scan);
            return Err(error);
        }
        Ok(Scan {
            client: self,
            client_scan,
            coordinator,
            events,
            limit: spec.limit.unwrap_or(u64::MAX),
            returned: 0,
            merge,
            arrived: VecDeque::new(),
            partitions: BTreeMap::new(),
            partitions_known: false,
            low_water_rows: spec.batch_rows as usize,
            round: Round::Running {
                batches: 0,
                conf: None,
            },
            failure: None,
        })
    }
}

impl Iterator for Scan<'_> {
    type Item = Result<Vec<Value>, ClientError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(failure) = self.failure.take() {
                // Nothing follows a failure: the cursor ends here.
                self.limit = self.returned;
                return Some(Err(failure));
            }
            if self.returned >= self.limit {
                return None;
            }
            if let Some(row) = self.take_row() {
                self.returned += 1;
                if self.round == Round::Ended && self.buffered_rows() <= self.low_water_rows {
                    self.ask_next_round();
                }
                return Some(Ok(row));
            }
            match self.round {
                Round::Over => return None,
                Round::Ended => self.ask_next_round(),
                Round::Running { .. } => self.receive(),
            }
        }
    }
}

impl Scan<'_> {
    /// The next row if one may leave the cursor now.
    fn take_row(&mut self) -> Option<Vec<Value>> {
        let Some(merge) = &self.merge else {
            return self.arrived.pop_front();
        };
        if !self.partitions_known {
            return None;
        }
        let limit = self.limit;
        let mut best: Option<(u32, &[u8])> = None;
        for (&partition, rows) in &self.partitions {
            match rows.rows.front() {
                Some((key, _)) => {
                    let better = best.is_none_or(|(_, best_key)| {
                        if merge.descending {
                            key.as_slice() > best_key
                        } else {
                            key.as_slice() < best_key
                        }
                    });
                    if better {
                        best = Some((partition, key));
                    }
                }
                // A partition that may still send rows could send a smaller one.
                None if !rows.done && rows.received < limit && self.round != Round::Over => {
                    return None
                }
                None => {}
            }
        }
        let partition = best?.0;
        let (_, mut row) = self.partitions.get_mut(&partition)?.rows.pop_front()?;
        if let Some(columns) = merge.returned_columns {
            row.truncate(columns);
        }
        Some(row)
    }

    fn buffered_rows(&self) -> usize {
        self.arrived.len()
            + self
                .partitions
                .values()
                .map(|p| p.rows.len())
                .sum::<usize>()
    }

    fn ask_next_round(&mut self) {
        self.round = Round::Running {
            batches: 0,
            conf: None,
        };
        let next = ScanNext {
            client: self.client.me,
            client_scan: self.client_scan,
            close: 0,
        };
        if let Err(error) = self
            .client
            .send(next.to_signal(self.coordinator, self.client.me), &[])
        {
            self.fail(error);
        }
    }

    /// Waits for the node's next word on this scan.
    fn receive(&mut self) {
        let event = match self.events.recv_timeout(REQUEST_TIMEOUT) {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) => {
                let waited = REQUEST_TIMEOUT.as_millis();
                return self.fail(ClientError::ConnectionLost(format!(
                    "no answer to the scan within {waited} ms"
                )));
            }
            Err(RecvTimeoutError::Disconnected) => {
                return self.fail(ClientError::ConnectionLost("the client closed".into()));
            }
        };
        let Round::Running { batches, conf } = &mut self.round else {
            return;
        };
        match event {
            ScanEvent::Rows {
                partition,
                done,
                rows,
            } => {
                *batches += 1;
                let rows = match rows {
                    Ok(rows) => rows,
                    Err(error) => {
                        return self.fail(ClientError::Usage(format!(
                            "the node sent rows this client cannot read: {error}"
                        )))
                    }
                };
                self.arrive(partition, done, rows);
            }
            ScanEvent::Conf {
                batches: sent,
                done,
                code,
                message,
            } => {
                if code != 0 {
                    self.round = Round::Over;
                    return self.fail(ClientError::node(code, message));
                }
                *conf = Some((sent, done));
            }
            ScanEvent::Failed(error) => {
                self.round = Round::Over;
                return self.fail(error);
            }
        }
        if let Round::Running {
            batches,
            conf: Some((sent, done)),
        } = self.round
        {
            if batches >= sent {
                self.partitions_known = true;
                self.round = if done { Round::Over } else { Round::Ended };
            }
        }
    }

    fn arrive(&mut self, partition: u32, done: bool, rows: Vec<Vec<Value>>) {
        let Some(merge) = &self.merge else {
            self.arrived.extend(rows);
            return;
        };
        let state = self.partitions.entry(partition).or_default();
        state.done |= done;
        state.received += rows.len() as u64;
        for row in rows {
            let mut key = Vec::new();
            for &(position, column_type) in &merge.key {
                let value = row.get(position).unwrap_or(&Value::Null);
                encode_ordered(column_type, value, &mut key);
            }
            state.rows.push_back((key, row));
        }
    }

    fn fail(&mut self, error: ClientError) {
        self.failure.get_or_insert(error);
    }
}

impl Drop for Scan<'_> {
    fn drop(&mut self) {
        if self.round != Round::Over {
            let close = ScanNext {
                client: self.client.me,
                client_scan: self.client_scan,
                close: 1,
            };
            // The connection may be gone; then so is the scan.
            let _ = self
                .client
                .send(close.to_signal(self.coordinator, self.client.me), &[]);
        }
        self.client.in_flight.forget_scan(self.client_scan);
    }
}
