//! The coordinator's part in global checkpoints (NDB's Dbtc GCP handling; the protocol is
//! described in `gcp.rs`, the master's side).
//!
//! The coordinator stamps each commit with the GCI it is in. Between the master's
//! `GcpPrepare` of GCI n+1 and its `GcpCommit`, it *holds* the commits it decides (they
//! wait, locks and all, in the order decided); at `GcpCommit` it stamps n+1 from then on and
//! starts the held ones. Since every coordinator holds before any stamps n+1, no commit is
//! stamped n after another was stamped n+1: a transaction of GCI n never read what one of
//! n+1 wrote, so restoring every change up to n gives a state the cluster was in.
//!
//! It confirms `GcpCommit` once no transaction it stamped below n+1 is still committing
//! (each has committed on every replica, so each change is in the replicas' REDO logs), no
//! takeover of failed coordinators' transactions is waiting for reports, and it knew the
//! membership's latest generation: the master counts a confirmation only then.

use kista_runtime::Context;
use kista_signal::{BlockAddress, PayloadError, Signal, TypedSignal};

use super::TransactionCoordinator;
use crate::protocol::*;

/// Distinct GCIs a coordinator may have transactions committing in at once: the current
/// one, the one before (its round still waits for them), and those of transactions taken
/// over from failed coordinators.
const COMMITTING_GCIS_MAX: usize = 64;

/// Where one coordinator stands in the global checkpoints.
pub(super) struct CoordinatorCheckpoints {
    /// The GCI commits are stamped with now; 0 until a restarted node's coordinator hears
    /// the master's first round (it holds commits until then).
    gci: u64,
    /// The GCI a `GcpPrepare` announced and no `GcpCommit` began yet: commits are held.
    preparing: Option<u64>,
    /// Transactions whose commit waits for the next GCI, in the order decided.
    held: Vec<u64>,
    /// Transactions committing, counted per GCI: (gci, count), few entries.
    committing: Vec<(u64, u32)>,
    /// The master's latest `GcpCommit`: its GCI and the master.
    asked: Option<(u64, BlockAddress)>,
    /// The generation that latest `GcpCommit` was confirmed in, if it was.
    confirmed_in: Option<u32>,
}

impl CoordinatorCheckpoints {
    pub(super) fn new(gci: u64) -> Self {
        Self {
            gci,
            preparing: None,
            held: Vec::new(),
            committing: Vec::new(),
            asked: None,
            confirmed_in: None,
        }
    }

    /// The GCI to stamp a commit decided now with; `None` while commits are held.
    pub(super) fn stamp(&self) -> Option<u64> {
        (self.gci != 0 && self.preparing.is_none()).then_some(self.gci)
    }

    /// Holds a transaction's commit until the next GCI begins.
    pub(super) fn hold(&mut self, transaction: u64) {
        self.held.push(transaction);
    }

    /// A transaction stamped `gci` started committing.
    pub(super) fn committing(&mut self, gci: u64) {
        match self.committing.iter_mut().find(|(g, _)| *g == gci) {
            Some((_, count)) => *count += 1,
            None => {
                assert!(
                    self.committing.len() < COMMITTING_GCIS_MAX,
                    "transactions committing in more than {COMMITTING_GCIS_MAX} GCIs: \
                     global checkpoints stopped advancing"
                );
                self.committing.push((gci, 1));
            }
        }
    }

    /// A transaction stamped `gci` committed on every replica.
    pub(super) fn committed(&mut self, gci: u64) {
        let at = self
            .committing
            .iter()
            .position(|(g, _)| *g == gci)
            .expect("a transaction that committed was counted as committing");
        self.committing[at].1 -= 1;
        if self.committing[at].1 == 0 {
            self.committing.swap_remove(at);
        }
    }

    /// Whether a transaction stamped below `gci` is still committing.
    fn committing_below(&self, gci: u64) -> bool {
        self.committing.iter().any(|&(g, _)| g < gci)
    }
}

impl TransactionCoordinator {
    /// Handles a global-checkpoint signal; `None` when `signal` is not one.
    pub(super) fn checkpoint_signal(
        &mut self,
        ctx: &mut Context,
        signal: &Signal,
    ) -> Option<Result<(), PayloadError>> {
        let number = signal.number();
        let master = signal.sender();
        Some(if number == GcpPrepare::NUMBER {
            GcpPrepare::from_signal(signal).map(|p| self.checkpoint_prepare(ctx, p, master))
        } else if number == GcpCommit::NUMBER {
            GcpCommit::from_signal(signal).map(|c| self.checkpoint_commit(ctx, c, master))
        } else if number == GcpSaved::NUMBER {
            GcpSaved::from_signal(signal).map(|saved| self.gci_saved(ctx, saved.gci))
        } else if number == GcpJoinState::NUMBER {
            GcpJoinState::from_signal(signal).map(|state| {
                // A restarted node's coordinator may have heard a round's request meant
                // for its earlier life, sent again before that life's failure was seen:
                // the GCI it named is closed by now. It goes on from the master's.
                self.checkpoints.gci = self.checkpoints.gci.max(state.current_gci);
            })
        } else if number == GcpStateQuery::NUMBER {
            GcpStateQuery::from_signal(signal).map(|_| {
                let state = GcpState {
                    gci: self.checkpoints.gci,
                };
                ctx.send_typed(master, &state);
            })
        } else {
            return None;
        })
    }

    fn checkpoint_prepare(&mut self, ctx: &mut Context, prepare: GcpPrepare, master: BlockAddress) {
        let checkpoints = &mut self.checkpoints;
        if prepare.gci > checkpoints.gci {
            checkpoints.preparing = Some(prepare.gci.max(checkpoints.preparing.unwrap_or(0)));
        }
        ctx.send_typed(master, &GcpPrepareConf { gci: prepare.gci });
    }

    /// The next GCI begins: stamp it from now on, start the held commits, and confirm once
    /// the transactions of earlier GCIs have committed.
    fn checkpoint_commit(&mut self, ctx: &mut Context, commit: GcpCommit, master: BlockAddress) {
        let checkpoints = &mut self.checkpoints;
        checkpoints.gci = checkpoints.gci.max(commit.gci);
        if checkpoints
            .preparing
            .is_some_and(|gci| gci <= checkpoints.gci)
        {
            checkpoints.preparing = None;
        }
        checkpoints.asked = Some((commit.gci, master));
        checkpoints.confirmed_in = None;
        if checkpoints.stamp().is_some() {
            for id in std::mem::take(&mut checkpoints.held) {
                self.start_held_commit(ctx, id);
            }
        }
        self.report_checkpoint(ctx);
    }

    /// Starts a held commit, unless its transaction ended meanwhile.
    fn start_held_commit(&mut self, ctx: &mut Context, id: u64) {
        if self.transactions.get(&id).is_some_and(|t| t.commit_held()) {
            self.start_commit(ctx, id);
        }
    }

    /// Confirms the master's latest `GcpCommit` if nothing it waits for is left and it was
    /// not confirmed in this generation yet.
    pub(super) fn report_checkpoint(&mut self, ctx: &mut Context) {
        let Some((gci, master)) = self.checkpoints.asked else {
            return;
        };
        if self.checkpoints.confirmed_in == Some(self.generation)
            || self.checkpoints.committing_below(gci)
            || self.taking_over()
        {
            return;
        }
        self.checkpoints.confirmed_in = Some(self.generation);
        let conf = GcpCommitConf {
            gci,
            generation: self.generation,
        };
        ctx.send_typed(master, &conf);
    }

    /// The membership changed: a confirmation the master did not count (given before this
    /// coordinator knew of a failure) goes again, now with the new generation.
    pub(super) fn membership_changed(&mut self, ctx: &mut Context, generation: u32) {
        self.generation = self.generation.max(generation);
        self.report_checkpoint(ctx);
    }
}
