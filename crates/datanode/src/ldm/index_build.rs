//! Ordered indexes added to a table that holds rows, built a slice of rows at a time
//! between the `ldm`'s other signals (as NDB's builds run, step by step), so operations
//! and scans wait for one slice, never for the whole table: adding an index to a table
//! of a million rows stalled every transaction of its `ldm` for two seconds when the
//! build ran in one go.
//!
//! A new definition whose new ordered indexes must be filled is confirmed to the
//! dictionary only once they are built; meanwhile writes keep the entries of the rows they
//! change (`Partition::add_index_building`) and nothing reads through them (the dictionary
//! publishes them as being built until every `ldm` has confirmed).

use kista_runtime::Context;
use kista_signal::BlockAddress;
use kista_storage::partition::IndexId;

use super::{error_code_of, lock_partition, LocalDataManager};
use crate::protocol::*;

/// Row slots one slice enters at most: about 2 ms with a 120-byte key here, the most a
/// slice adds to the wait of the signals of its round (4,096 rows made the transactions
/// of a 16-thread load wait up to 1.2 s while a 1M-row table's index was built).
pub(super) const INDEX_BUILD_SLICE_ROWS: usize = 512;

/// The builds a definition waits for, and its confirmation.
pub(super) struct PendingDefinition {
    pub(super) id: u64,
    pub(super) table_id: u32,
    /// (partition, index) still to build.
    pub(super) builds: Vec<(u32, IndexId)>,
    pub(super) conf: TableDefinitionConf,
    pub(super) definer: BlockAddress,
}

impl LocalDataManager {
    /// Waits to confirm definition `conf` until `builds` are done, building them from
    /// now on.
    pub(super) fn build_then_confirm(
        &mut self,
        ctx: &mut Context,
        table_id: u32,
        builds: Vec<(u32, IndexId)>,
        (conf, definer): (TableDefinitionConf, BlockAddress),
    ) {
        let id = self.next_definition_build;
        self.next_definition_build += 1;
        self.definition_builds.push(PendingDefinition {
            id,
            table_id,
            builds,
            conf,
            definer,
        });
        ctx.send_typed(ctx.address(), &IndexBuildSlice { id });
    }

    /// One slice of definition `id`'s next build; the next slice follows as a signal of
    /// its own, after what is queued.
    pub(super) fn index_build_slice(&mut self, ctx: &mut Context, slice: IndexBuildSlice) {
        let Some(position) = (self.definition_builds.iter()).position(|d| d.id == slice.id) else {
            return;
        };
        let pending = &mut self.definition_builds[position];
        let outcome = match pending.builds.first().copied() {
            None => Ok(true),
            Some((partition, index)) => {
                let found = (self.tables.get(&pending.table_id))
                    .and_then(|table| table.partitions.get(&partition));
                match found {
                    // Dropped meanwhile: nothing to build.
                    None => Ok(true),
                    Some(shared) => lock_partition(shared)
                        .build_index_slice(index, INDEX_BUILD_SLICE_ROWS)
                        .map_err(|error| error_code_of(&error)),
                }
            }
        };
        match outcome {
            Ok(true) if pending.builds.len() > 1 => {
                pending.builds.remove(0);
                ctx.send_typed(ctx.address(), &slice);
            }
            Ok(false) => ctx.send_typed(ctx.address(), &slice),
            Ok(true) | Err(_) => {
                let pending = self.definition_builds.remove(position);
                let code = outcome.err().map_or(0, |code| code as u32);
                let conf = TableDefinitionConf {
                    code,
                    ..pending.conf
                };
                ctx.send_typed(pending.definer, &conf);
            }
        }
    }
}
