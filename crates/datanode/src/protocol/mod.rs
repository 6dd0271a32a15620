//! The data node's protocol: block ids, signals, and the bodies that travel in sections.
//!
//! A client (or the test standing in for one) talks to the `dict` block for schema changes
//! and to a `tc` instance for transactions. Inside the node, `tc` drives `ldm` instances with
//! the linear commit protocol of DESIGN.md section 4:
//!
//! ```text
//! client --KeyRequest--> tc --Prepare--> ldm(primary) --Prepare--> ldm(backup) ...
//!        tc <--PrepareConf/PrepareRef-- last replica     (reads: ldm --ReadResult--> client)
//! commit: tc --Commit--> last replica --Commit--> ... primary --CommitConf--> tc
//!         tc --ExecuteConf--> client;  tc --Complete--> each replica --CompleteConf--> tc
//! abort:  tc --Abort--> every replica --AbortConf--> tc --ExecuteConf--> client
//! ```
//!
//! A transaction of one committed read that commits, read by the coordinator itself, needs
//! no record and one answer: `client --KeyRequest--> tc --ReadCommitted--> client` (the row
//! and the commit together).
//!
//! A unique index keeps its entries in a table of its own, distributed by the unique key.
//! A write that changes a row's unique key reports the index-table operations it needs in
//! its `PrepareConf`; `tc` runs them as operations of the same transaction. A unique read
//! first reads the index table's entry under a shared lock (the row comes back to `tc`),
//! then reads the row by its primary key:
//!
//! ```text
//! tc --Prepare(index table, shared)--> ldm --ReadResult(primary key)--> tc
//! tc --Prepare(table, by primary key)--> executor --ReadResult--> client
//! ```
//!
//! Scans read committed rows of every partition in parallel, on the owning `ldm` or a
//! `query` instance, in rounds the client paces:
//!
//! ```text
//! client --ScanRequest--> tc --ScanFragment--> executor of each partition
//!        executor --ScanRows--> client;  executor --ScanFragmentConf/Ref--> tc
//!        tc --ScanConf(rows in the round, done?)--> client
//! client --ScanNext--> tc --ScanFragmentNext--> executors that have more ...
//! ```

mod body;
mod client;
mod errors;
mod foreign_key;
mod info;
mod signals;

pub use body::{
    ColumnSourcesBody, CopiedChange, CopyBatchBody, IndexUpkeep, IndexUpkeepBody, KeyBatchBody,
    KeyBatchEntry, KeyBody, KeyBodyRef, LoadLevelsBody, OrphanedPart, RowBody, RowsBody, ScanBody,
    TableDefinitionBody, TakeoverReportBody, WriteUpkeep, KEY_BATCH_FULL_BYTES,
    KEY_BATCH_OPERATIONS_MAX,
};
pub use client::{check_client_signal, NodeInfo};
pub use errors::{ErrorCategory, ErrorCode};
pub use foreign_key::{
    same_key_form, ForeignKey, KeyEvent, ReferenceAction, FOREIGN_KEYS_PER_TABLE_MAX,
};
pub use info::{
    GatheredRow, InfoTable, LockRow, NamedValuesBody, PartitionRow, ReplicaRole, ThreadLoad,
    ThreadLoadsBody, TransactionRow, INFO_ROWS_PER_BLOCK_MAX, THREAD_LOADS_MAX,
};
pub use signals::*;

use kista_signal::BlockId;

/// The schema dictionary, one instance on `main`.
pub const DICT_BLOCK: BlockId = BlockId(10);
/// Transaction coordinators, one per `tc` instance.
pub const TC_BLOCK: BlockId = BlockId(11);
/// Local data managers, one per `ldm` instance.
pub const LDM_BLOCK: BlockId = BlockId(12);
/// Committed-read executors, one per `query` instance.
pub const QUERY_BLOCK: BlockId = BlockId(13);
/// Global checkpoints, one instance on `main`; the president's runs the rounds.
pub const GCP_BLOCK: BlockId = BlockId(14);

/// The cluster membership (heartbeats, failures, joins), one instance on `main`. It is the
/// runtime's fence gate: a restarted node's membership can ask a fenced cluster to let it in.
pub const MEMBERSHIP_BLOCK: BlockId = kista_runtime::fence::FENCE_GATE_BLOCK;
/// The arbitrator, in the management server.
pub const ARBITRATOR_BLOCK: BlockId = BlockId(15);
/// What the node tells operators on request (`info.rs`), one instance on `main`.
pub const INFO_BLOCK: BlockId = BlockId(16);

/// Replicas a partition may have (NDB: 4).
pub const REPLICAS_MAX: usize = 4;
