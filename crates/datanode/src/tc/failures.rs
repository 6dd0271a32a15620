//! What a coordinator does when data nodes fail (NDB's node failure handling in Dbtc).
//!
//! Its own transactions: one still executing that used a failed node aborts (error 4010,
//! which a client may retry), unless its commit is only held for the next GCI; its abort
//! goes along each participant's chain behind any prepare still travelling it, so none
//! locks a row after the abort passed; one committing sends the commit again along the chains that
//! lost a replica (a replica commits a transaction once; the coordinator counts each
//! partition's confirmation once); one completing or aborting stops waiting for replicas on
//! failed nodes. Its tables' chains lose those replicas, so backups become primaries.
//!
//! The failed nodes' transactions (*takeover*): the president's first coordinator asks every
//! live `ldm` what it holds of transactions whose coordinator is gone. A transaction that
//! some partition committed was decided: it commits everywhere. One that none committed may
//! not have been decided, and its client was not told it committed (that happens only once
//! every replica committed): it aborts. Either way its locks are freed. The query names
//! every failed coordinator node, not only the latest, so a takeover cut short by the
//! president's own failure is redone by the next president; resolving a transaction twice
//! is harmless. A transaction committed keeps the GCI its coordinator stamped.

use rustc_hash::FxHashMap;

use kista_runtime::Context;
use kista_signal::BlockAddress;

use super::{nodes_of, send_commit, Participant, Phase, TransactionCoordinator};
use crate::cluster::NodeSet;
use crate::protocol::*;

/// What the `ldm` instances report of one transaction whose coordinator failed.
#[derive(Default)]
struct Orphan {
    /// Some partition committed it: the coordinator had decided to commit.
    committed: bool,
    /// The GCI its commit was stamped with (where committed).
    gci: u64,
    /// Its partitions: (table, partition).
    partitions: Vec<(u32, u32)>,
}

/// A takeover waiting for the `ldm` instances' reports.
pub(super) struct Takeover {
    id: u32,
    awaiting: Vec<BlockAddress>,
    /// Transaction → what the reports say of it.
    found: FxHashMap<u64, Orphan>,
}

impl TransactionCoordinator {
    pub(super) fn node_failed(&mut self, ctx: &mut Context, failed: NodeFailed) {
        let lost = failed.failed;
        self.failed_nodes = self.failed_nodes.union(lost);
        self.restart_failed(lost);
        self.arrange_chains();
        let ids: Vec<u64> = self.transactions.keys().copied().collect();
        for id in ids {
            self.recover(ctx, id, lost);
        }
        self.scans_lost(ctx, lost);
        if let Some(takeover) = &mut self.takeover {
            takeover.awaiting.retain(|ldm| !lost.contains(ldm.node()));
            if takeover.awaiting.is_empty() {
                self.finish_takeover(ctx);
            }
        }
        let president = u32::from(ctx.address().node().0) == failed.president;
        if president && self.instance == 0 {
            self.start_takeover(ctx);
        }
    }

    /// Brings one of this coordinator's transactions past the loss of `lost`.
    fn recover(&mut self, ctx: &mut Context, id: u64, lost: NodeSet) {
        let here = ctx.address();
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        let touched = transaction
            .participants
            .iter()
            .any(|p| nodes_of(&p.chain).intersects(lost))
            || transaction
                .operations
                .iter()
                .any(|op| op.running && op.nodes.intersects(lost));
        for participant in &mut transaction.participants {
            participant.chain = participant.chain.without_nodes(lost);
        }
        match transaction.phase {
            // Held for the next GCI, it commits as if it had begun: along the shortened
            // chains, whose live replicas all hold its changes.
            Phase::Executing if transaction.commit_held() => {}
            Phase::Executing if touched => {
                let message = format!(
                    "data node(s) {lost:?} failed while the transaction used them; it was \
                     aborted and may be retried"
                );
                transaction
                    .failure
                    .get_or_insert((ErrorCode::NodeFailure, 0, message));
                self.start_abort(ctx, id);
            }
            Phase::Executing => {}
            Phase::Committing if touched => {
                for participant in transaction.participants.iter().filter(|p| !p.committed) {
                    send_commit(ctx, here, id, transaction.gci, participant);
                }
            }
            Phase::Committing => {}
            // An abort along the chains may have stopped at the failed node: again along
            // the shortened chains (aborting twice is harmless).
            Phase::Aborting if touched && transaction.aborts_along_chains => {
                self.send_aborts(ctx, id);
            }
            Phase::Completing | Phase::Aborting => {
                transaction
                    .awaiting
                    .retain(|replica| !lost.contains(replica.node()));
                self.end_when_confirmed(ctx, id);
            }
        }
    }

    // ----- takeover -----

    fn start_takeover(&mut self, ctx: &mut Context) {
        let coordinators = self.failed_nodes;
        let id = self.next_takeover;
        ctx.log(&format!(
            "tc.{}: takeover {id}: resolving the transactions node(s) {} coordinated",
            self.instance,
            crate::membership::node_list(coordinators)
        ));
        self.next_takeover += 1;
        let awaiting: Vec<BlockAddress> = self
            .cluster
            .nodes()
            .iter()
            .filter(|node| !coordinators.contains(node.node))
            .flat_map(|node| node.ldm_addresses())
            .collect();
        for &ldm in &awaiting {
            let query = TakeoverQuery {
                takeover: id,
                coordinators,
            };
            ctx.send_typed(ldm, &query);
        }
        self.takeover = Some(Takeover {
            id,
            awaiting,
            found: FxHashMap::default(),
        });
    }

    pub(super) fn takeover_report(
        &mut self,
        ctx: &mut Context,
        report: TakeoverReport,
        from: BlockAddress,
    ) {
        let Some(takeover) = self.takeover.as_mut().filter(|t| t.id == report.takeover) else {
            return;
        };
        let parts = ctx
            .section()
            .map(|bytes| TakeoverReportBody::decode(&bytes, report.entries as usize))
            .unwrap_or_default();
        for part in parts {
            let orphan = takeover.found.entry(part.transaction).or_default();
            if part.committed {
                assert!(
                    !orphan.committed || orphan.gci == part.gci,
                    "transaction {:#x} committed with two GCIs ({} and {})",
                    part.transaction,
                    orphan.gci,
                    part.gci
                );
                orphan.committed = true;
                orphan.gci = part.gci;
            }
            let key = (part.table_id, part.partition);
            if !orphan.partitions.contains(&key) {
                orphan.partitions.push(key);
            }
        }
        if report.last != 0 {
            takeover.awaiting.retain(|&ldm| ldm != from);
            if takeover.awaiting.is_empty() {
                self.finish_takeover(ctx);
            }
        }
    }

    /// Every live `ldm` reported: commit or abort each orphaned transaction, as a record of
    /// this coordinator's with no client to answer.
    fn finish_takeover(&mut self, ctx: &mut Context) {
        let Some(takeover) = self.takeover.take() else {
            return;
        };
        let committing = takeover.found.values().filter(|o| o.committed).count();
        ctx.log(&format!(
            "tc.{}: takeover {}: {} transaction(s) found: {committing} to commit, the others \
             to abort",
            self.instance,
            takeover.id,
            takeover.found.len()
        ));
        for (id, orphan) in takeover.found {
            if self.transactions.contains_key(&id) {
                continue; // an earlier takeover is resolving it
            }
            let mut record = self.spare_records.pop().unwrap_or_default();
            record
                .participants
                .extend(
                    orphan
                        .partitions
                        .iter()
                        .filter_map(|&(table_id, partition)| {
                            let table = self.tables.get(&table_id)?;
                            Some(Participant {
                                table_id,
                                partition,
                                chain: table.map.chain(partition),
                                committed: false,
                            })
                        }),
                );
            record.last_activity_ns = ctx.now_ns();
            record.gci = orphan.gci;
            self.transactions.insert(id, record);
            // A restart waiting for this takeover waits for its transactions too: an
            // insert they commit is no committed row yet for a partition's copy to see.
            self.drain_also(id);
            if orphan.committed {
                // Decided, and stamped: it commits in its GCI, which no global checkpoint
                // is saved beyond until it has (see `tc/gcp.rs`).
                self.send_commits(ctx, id);
            } else {
                self.start_abort(ctx, id);
            }
        }
        self.drained(ctx, None);
        self.report_checkpoint(ctx);
    }

    /// Whether a takeover waits for the data managers' reports.
    pub(super) fn taking_over(&self) -> bool {
        self.takeover.is_some()
    }
}
