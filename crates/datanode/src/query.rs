//! The query executor: committed key reads and partition scans on partitions an `ldm` owns,
//! so reads can spread over more threads than the data managers (RonDB's query threads).
//!
//! It reads through the [`PartitionRegistry`] under each partition's shared lock and only
//! committed versions; it takes no row locks and keeps no transaction state, so anything
//! else (locked reads, writes) is refused and goes to the owning `ldm`.

use std::sync::Arc;

use kista_runtime::{Block, Context};
use kista_signal::{SectionHandle, Signal, TypedSignal};

use crate::fragment_scan::FragmentScans;
use crate::node::NodeSettings;
use crate::protocol::*;
use crate::read::{answer_committed_read, encode_committed_row, ReadAnswer};
use crate::refuse_prepare;
use crate::registry::PartitionRegistry;

pub struct QueryExecutor {
    registry: Arc<PartitionRegistry>,
    scans: FragmentScans,
}

impl QueryExecutor {
    pub fn new(settings: &NodeSettings, registry: Arc<PartitionRegistry>) -> Self {
        Self {
            scans: FragmentScans::new(registry.clone(), settings.partition_scans_per_executor_max),
            registry,
        }
    }

    fn prepare(&mut self, ctx: &mut Context, prepare: Prepare, section: Option<SectionHandle>) {
        let result = self.read(ctx, &prepare, section);
        if let Some(section) = section {
            ctx.release_section(section);
        }
        answer_read(ctx, &prepare, result);
    }

    fn read(
        &self,
        ctx: &mut Context,
        prepare: &Prepare,
        section: Option<SectionHandle>,
    ) -> Result<u32, (ErrorCode, String)> {
        if prepare.kind != OperationKind::Read || prepare.lock != LockKind::Committed {
            let message = "a query executor runs committed reads only".to_string();
            return Err((ErrorCode::BadRequest, message));
        }
        let section =
            section.ok_or_else(|| (ErrorCode::BadRequest, "read without a body".to_string()))?;
        read_shared(ctx, &self.registry, prepare, section)
    }
}

/// A committed read through the registry, its body in `section`.
fn read_shared(
    ctx: &mut Context,
    registry: &PartitionRegistry,
    prepare: &Prepare,
    section: SectionHandle,
) -> Result<u32, (ErrorCode, String)> {
    let (table, partition, version) = (prepare.table_id, prepare.partition, prepare.schema_version);
    registry.check_read_lease(ctx.now_ns())?;
    answer_committed_read(ctx, section, ReadAnswer::row_of(prepare), |body, row| {
        registry.with_partition_at_version(table, partition, version, |shared| {
            encode_committed_row(&shared.partition, body, row)
        })
    })
}

/// Reports a read's outcome to its coordinator.
pub(crate) fn answer_read(
    ctx: &mut Context,
    prepare: &Prepare,
    result: Result<u32, (ErrorCode, String)>,
) {
    match result {
        Ok(read_rows) => {
            let conf = PrepareConf {
                transaction: prepare.transaction,
                op_ref: prepare.op_ref,
                read_rows,
            };
            ctx.send_typed(prepare.tc, &conf);
        }
        Err((code, message)) => refuse_prepare(ctx, prepare, code, &message),
    }
}

impl Block for QueryExecutor {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        let number = signal.number();
        let result = if number == Prepare::NUMBER {
            Prepare::from_signal(signal).map(|p| match ctx.take_section() {
                Ok(section) => self.prepare(ctx, p, section),
                Err(exhausted) => {
                    let message = format!("no room for the operation's body: {exhausted}");
                    refuse_prepare(ctx, &p, ErrorCode::Overloaded, &message);
                }
            })
        } else if let Some(result) = self.scans.execute(signal, ctx) {
            result
        } else {
            Ok(())
        };
        debug_assert!(result.is_ok(), "malformed signal to query: {result:?}");
    }
}
