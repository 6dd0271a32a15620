//! Chains of dependent transactions beside a ballast of batches that rewrite many rows:
//! a workload whose every state is recognisable. A restored state is one the cluster was
//! in exactly when every chain holds its rows up to its counter and no further, and every
//! ballast row holds the same batch (`consistent`). Shared by the local checkpoint and
//! backup tests.

use std::collections::BTreeMap;

use kista_datanode::protocol::*;
use kista_signal::NodeId;

use super::{counter_op, Node};

pub const BALLAST_ROWS: i64 = 400;
pub const BALLAST_FIRST_ROW: i64 = 1_000_000;
pub const CHAINS: i64 = 4;
pub const ROUND_PAUSE_MS: u64 = 2;

/// The workload and what was acknowledged of it.
pub struct Workload {
    pub table: (u32, u32),
    pub client_tx: u64,
    /// Per chain: the last step acknowledged (rows `chain_row(c, 1..=step)` written).
    pub chain_steps: Vec<i64>,
    /// The last ballast batch acknowledged: every ballast row holds its number.
    pub ballast_batch: i64,
    /// When each ballast batch was acknowledged (ns), by batch.
    pub acknowledged_ns: Vec<(i64, u64)>,
}

pub fn chain_row(chain: i64, step: i64) -> i64 {
    1000 * (chain + 1) + step
}

impl Workload {
    pub fn new(cluster: &mut Node) -> Self {
        Self {
            table: cluster.create_counters(),
            client_tx: 1,
            chain_steps: vec![0; CHAINS as usize],
            ballast_batch: 0,
            acknowledged_ns: Vec::new(),
        }
    }

    /// The last ballast batch that a restore to `gci` must hold. A commit acknowledged
    /// while GCI s was the last saved belongs to GCI s+2 or below (coordinators stamp at
    /// most one GCI past the one being saved, which is one past the last saved).
    pub fn ballast_in(&self, cluster: &Node, gci: u64) -> i64 {
        let saved = cluster.delivered::<GcpSaved>();
        let saved_at = |at_ns: u64| {
            saved
                .iter()
                .filter(|(ns, _, _)| *ns <= at_ns)
                .map(|(_, _, s)| s.gci)
                .max()
                .unwrap_or(0)
        };
        self.acknowledged_ns
            .iter()
            .filter(|&&(_, at_ns)| saved_at(at_ns) + 2 <= gci)
            .map(|&(batch, _)| batch)
            .max()
            .unwrap_or(0)
    }

    /// One ballast batch and one step of every chain, side by side; waits for them, then
    /// lets `ROUND_PAUSE_MS` pass (so the log fills at about 10 MB/s per `ldm`, as a busy
    /// node's would).
    pub fn round(&mut self, cluster: &mut Node) {
        let nodes = [NodeId(1), NodeId(2)];
        let mut sent = Vec::new();
        let batch = self.ballast_batch + 1;
        cluster.use_node(nodes[self.client_tx as usize % 2]);
        let ops = (0..BALLAST_ROWS)
            .map(|row| counter_op(OperationKind::Write, BALLAST_FIRST_ROW + row, batch))
            .collect();
        cluster.send_batch(self.client_tx, self.table, ops, ExecuteMode::Commit);
        sent.push((self.client_tx, None));
        self.client_tx += 1;
        for chain in 0..CHAINS {
            let step = self.chain_steps[chain as usize] + 1;
            cluster.use_node(nodes[(self.client_tx as usize + chain as usize) % 2]);
            let ops = vec![
                counter_op(OperationKind::Write, chain, step),
                counter_op(OperationKind::Write, chain_row(chain, step), step),
            ];
            cluster.send_batch(self.client_tx, self.table, ops, ExecuteMode::Commit);
            sent.push((self.client_tx, Some(chain)));
            self.client_tx += 1;
        }
        let until_ns = cluster.now_ns() + 2_000_000_000;
        for (client_tx, chain) in sent {
            let result = cluster.batch_result(client_tx, until_ns);
            if !result.is_some_and(|r| r.outcome == TransactionOutcome::Committed) {
                continue;
            }
            match chain {
                Some(chain) => self.chain_steps[chain as usize] += 1,
                None => {
                    self.ballast_batch = batch;
                    self.acknowledged_ns.push((batch, cluster.now_ns()));
                }
            }
        }
        cluster.run_for_ms(ROUND_PAUSE_MS);
    }
}

/// Checks that `rows` is a state the workload was in: each chain's rows up to its counter
/// and none after, every ballast row from one batch. Returns the chains' counters and the
/// ballast's batch.
pub fn consistent(rows: &BTreeMap<i64, i64>) -> (Vec<i64>, i64) {
    let counters = (0..CHAINS)
        .map(|chain| {
            let counter = rows.get(&chain).copied().unwrap_or(0);
            for step in 1..=counter {
                assert_eq!(
                    rows.get(&chain_row(chain, step)),
                    Some(&step),
                    "chain {chain}"
                );
            }
            assert!(!rows.contains_key(&chain_row(chain, counter + 1)));
            counter
        })
        .collect();
    let batches: Vec<i64> = (0..BALLAST_ROWS)
        .map(|row| rows.get(&(BALLAST_FIRST_ROW + row)).copied().unwrap_or(0))
        .collect();
    assert!(
        batches.iter().all(|&b| b == batches[0]),
        "one ballast batch, whole: {batches:?}"
    );
    (counters, batches[0])
}
