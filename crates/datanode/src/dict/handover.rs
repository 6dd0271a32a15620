//! A start from disk whose master's dictionary is suspect (NDB takes the schema from a
//! node whose files are intact): a schema file of the master was refused (damaged,
//! unreadable, cut short), so the older twin it fell back to may lack the latest changes,
//! or its disk holds data without any schema file. Shipping it would drop tables a peer
//! still holds, and every participant's schema file would be rewritten without them.
//!
//! The master picks the source ([`dictionary_source`]): itself when its dictionary is
//! sound, else the first participant whose is, else (every one suspect) the first with a
//! dictionary at all, warning that changes may be missing. The order names the source,
//! which keeps its saved tables; once every participant recorded the order, the master
//! asks it for them ([`DictionaryWanted`]), applies each as any member applies a
//! published definition (its own schema file rewritten whole, so the damage is mended),
//! and on [`DictionaryHandedOver`] ships them on to the others as its own.
//!
//! A failure of the source or the master meanwhile is a participant's failure after the
//! order: the start stops, to be run again.

use rustc_hash::FxHashSet;

use kista_runtime::Context;
use kista_signal::{BlockAddress, NodeId};

use super::system_restart::{node_of, Decision, MasterStart, Phase, Step};
use super::Dictionary;
use crate::protocol::*;

/// Request id of the definitions a participant hands over to the master (a start's
/// shipped definitions are `1 << 61`, a node restart's `1 << 62`).
const HANDOVER_DEFINITION: u64 = 1 << 60;

/// The source's side of a handover: the master's confirmations still to come.
pub(crate) struct Handover {
    master: BlockAddress,
    awaiting: FxHashSet<(BlockAddress, u32)>,
    tables: u32,
}

/// The participant whose dictionary the cluster takes from the members' reports, when
/// not the master's own (`None`). A start that restores no rows needs one too: a table's
/// creation is acknowledged once on every node's disk, whatever GCI its rows reached.
pub(super) fn dictionary_source(
    reports: &[StartReport],
    decision: &Decision,
    master: NodeId,
) -> Result<Option<NodeId>, String> {
    if !decision.participants.contains(master) {
        // The master stops, and the next one decides.
        return Ok(None);
    }
    let others = decision.participants.iter().filter(|&n| n != master);
    // The master first, then the other participants by id.
    let candidates: Vec<StartReport> = std::iter::once(master)
        .chain(others)
        .filter_map(|node| reports.iter().find(|r| node_of(r.node) == Some(node)))
        .copied()
        .collect();
    let has_dictionary = |r: &&StartReport| r.next_table_id > 0;
    let mut with_dictionary = candidates.iter().filter(has_dictionary);
    let sound = with_dictionary.clone().find(|r| r.schema_suspect == 0);
    let Some(chosen) = sound.or_else(|| with_dictionary.next()) else {
        if candidates
            .iter()
            .all(|r| r.schema_suspect != SCHEMA_REFUSED)
        {
            // A cluster's first start, or one that never had a table: no schema file
            // anywhere (none refused).
            return Ok(None);
        }
        return Err(format!(
            "no data node taking part in the start from disk (GCI {}) has a schema file \
             that can be used, and some had one: their tables cannot be known. Put back a \
             data directory's dict/ from a copy, or restore the cluster from a backup",
            decision.gci
        ));
    };
    let chosen = node_of(chosen.node).filter(|&node| node != master);
    Ok(chosen)
}

impl Dictionary {
    /// Every participant recorded the order: ship the master's dictionary, or first ask
    /// the source for its own.
    pub(super) fn take_dictionary(&mut self, ctx: &mut Context, decision: Decision) {
        let Some(source) = decision.dictionary_from else {
            return self.ship_definitions(ctx, decision);
        };
        let Some(dict) = self.cluster.node(source).map(|n| n.dict_address()) else {
            return self.ship_definitions(ctx, decision);
        };
        ctx.send_typed(dict, &DictionaryWanted {});
        if let Some(master) = &mut self.master_start {
            master.step = Some(Step::HandingOver(decision));
        }
    }

    /// At the source: the master wants this node's saved tables.
    pub(super) fn dictionary_wanted(&mut self, ctx: &mut Context, master: BlockAddress) {
        if !matches!(self.start, Phase::Ordered { handover: None, .. }) {
            return;
        }
        self.take_saved_schema();
        let awaiting = self.send_definitions(ctx, &[master], HANDOVER_DEFINITION);
        let tables = self.tables.len() as u32;
        ctx.log(&format!(
            "start from disk: {tables} table definitions handed over to the master, whose \
             schema file is suspect"
        ));
        if let Phase::Ordered { handover, .. } = &mut self.start {
            *handover = Some(Handover {
                master,
                awaiting,
                tables,
            });
        }
        self.handover_progress(ctx);
    }

    /// Whether `conf` answers a definition handed over to the master (and takes it).
    pub(super) fn handover_definition_applied(
        &mut self,
        ctx: &mut Context,
        conf: &TableDefinitionConf,
        from: BlockAddress,
    ) -> bool {
        if conf.request_id != HANDOVER_DEFINITION {
            return false;
        }
        if conf.code != 0 {
            let reason = format!(
                "the master could not apply table {}'s definition (error {}) handed over in \
                 the start from disk",
                conf.table_id, conf.code
            );
            ctx.stop_node(&reason);
            return true;
        }
        if let Phase::Ordered {
            handover: Some(handover),
            ..
        } = &mut self.start
        {
            handover.awaiting.remove(&(from, conf.table_id));
        }
        self.handover_progress(ctx);
        true
    }

    fn handover_progress(&mut self, ctx: &mut Context) {
        let Phase::Ordered {
            handover: Some(handover),
            ..
        } = &self.start
        else {
            return;
        };
        if handover.awaiting.is_empty() {
            let done = DictionaryHandedOver {
                tables: handover.tables,
            };
            ctx.send_typed(handover.master, &done);
        }
    }

    /// At the master: the source's tables are this dictionary's now; ship them on.
    pub(super) fn dictionary_handed_over(&mut self, ctx: &mut Context, done: DictionaryHandedOver) {
        let Some(MasterStart {
            step: Some(Step::HandingOver(decision)),
            ..
        }) = &self.master_start
        else {
            return;
        };
        let decision = decision.clone();
        ctx.log(&format!(
            "start from disk: {} table definitions taken from data node {}",
            done.tables,
            decision.dictionary_from.map_or(0, |n| n.0)
        ));
        self.ship_definitions(ctx, decision);
    }
}

#[cfg(test)]
mod tests;
