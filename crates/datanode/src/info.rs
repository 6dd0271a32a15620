//! The `info` block (NDB's DBINFO): answers clients' requests for what the node knows of
//! itself. It holds what the process outside the blocks measured and told it
//! (`ThreadLoadsReport`, each second), so it stays a deterministic state machine: a thread's
//! CPU is a number it is given, never one it reads.

use std::sync::Arc;

use kista_runtime::{Block, Context, ThreadStatsSnapshot};
use kista_signal::{BlockAddress, Signal, TypedSignal};
use kista_storage::memory::DataMemory;

use crate::metrics::NodeCounters;
use crate::node::NodeSettings;
use crate::protocol::*;
use crate::router::load_level;
use crate::send_with_bytes;

/// How often the process measures its threads for the `info` block.
pub const THREAD_LOADS_INTERVAL_MS: u64 = 1_000;

/// Each thread's load between two statistics snapshots `elapsed_us` apart (the process's
/// monitor calls this; the rows go to the block in a `ThreadLoadsReport`).
pub fn measure_thread_loads(
    before: &[ThreadStatsSnapshot],
    now: &[ThreadStatsSnapshot],
    elapsed_us: u64,
) -> Vec<ThreadLoad> {
    let elapsed_us = elapsed_us.max(1);
    let permille = |us: u64| (us.saturating_mul(1000) / elapsed_us).min(u64::from(u32::MAX)) as u32;
    now.iter()
        .map(|thread| {
            let earlier = before.iter().find(|b| b.thread == thread.thread);
            let delta = |read: fn(&ThreadStatsSnapshot) -> u64| {
                read(thread).saturating_sub(earlier.map_or(read(thread), read))
            };
            let (user_us, system_us) = (delta(|t| t.cpu_user_us), delta(|t| t.cpu_system_us));
            let busy_percent = (user_us + system_us) * 100 / elapsed_us;
            let modules: Vec<String> = thread.modules.iter().map(ToString::to_string).collect();
            ThreadLoad {
                thread: thread.thread as u32,
                modules: modules.join(","),
                user_permille: permille(user_us),
                system_permille: permille(system_us),
                spin_permille: permille(delta(|t| t.spin_us)),
                signals_per_second: delta(|t| t.signals_executed) * 1_000_000 / elapsed_us,
                queue_depth: thread.queue_depth.min(u64::from(u32::MAX)) as u32,
                load_level: u32::from(load_level(busy_percent, thread.queue_depth)),
            }
        })
        .collect()
}

pub struct NodeInfoBlock {
    /// The latest report, as it came (a `ThreadLoadsBody`); empty before the first.
    thread_loads: Vec<u8>,
    /// What the other blocks count, read to report it (never to decide anything).
    counters: Arc<NodeCounters>,
    memory: Arc<DataMemory>,
    settings: Arc<NodeSettings>,
    /// Tables being gathered from the `ldm` or `tc` instances.
    gathers: Vec<Gather>,
    next_gather: u32,
}

/// Tables gathered at once; more requests are refused (`Overloaded`) meanwhile.
const GATHERS_MAX: usize = 8;

/// A client's request for a gathered table (`InfoTable::gathered_row_bytes`), while the
/// blocks that hold its rows answer.
struct Gather {
    id: u32,
    table: InfoTable,
    client: BlockAddress,
    request_id: u64,
    awaiting: usize,
    /// The answer's body: a truncation flag (u32), then the table's rows.
    body: Vec<u8>,
}

impl NodeInfoBlock {
    pub fn new(
        counters: Arc<NodeCounters>,
        memory: Arc<DataMemory>,
        settings: Arc<NodeSettings>,
    ) -> Self {
        Self {
            thread_loads: Vec::new(),
            counters,
            memory,
            settings,
            gathers: Vec::new(),
            next_gather: 0,
        }
    }

    /// Asks every block holding rows of `table` (each `ldm` for partitions, each `tc` for
    /// transactions) for them; the client is answered when all have (`listed`).
    fn gather(&mut self, ctx: &mut Context, request: InfoRequest, table: InfoTable) {
        if self.gathers.len() >= GATHERS_MAX {
            let conf = InfoConf {
                request_id: request.request_id,
                table: request.table,
                code: ErrorCode::Overloaded as u32,
            };
            let _ = send_with_bytes(ctx, conf.to_signal(request.client, ctx.address()), &[]);
            return;
        }
        let holders: Vec<BlockAddress> = match table {
            InfoTable::Transactions => self.settings.tc_addresses().collect(),
            _ => self.settings.ldm_addresses().collect(),
        };
        self.next_gather = self.next_gather.wrapping_add(1);
        let id = self.next_gather;
        self.gathers.push(Gather {
            id,
            table,
            client: request.client,
            request_id: request.request_id,
            awaiting: holders.len(),
            body: vec![0; 4],
        });
        for holder in holders {
            let ask = InfoListRequest {
                gather: id,
                table: table as u32,
            };
            ctx.send_typed(holder, &ask);
        }
        self.answer_if_gathered(ctx, id);
    }

    /// One block's rows of a gathered table.
    fn listed(&mut self, ctx: &mut Context, conf: InfoListConf) {
        let Some(gather) = self.gathers.iter_mut().find(|g| g.id == conf.gather) else {
            return;
        };
        let row_bytes = gather.table.gathered_row_bytes().unwrap_or(1);
        let fits = {
            let rows = ctx.section();
            let rows: &[u8] = rows.as_deref().unwrap_or(&[]);
            let fits = gather.body.len() + rows.len() <= kista_signal::wire::SECTION_BYTES_MAX;
            if fits && rows.len() % row_bytes == 0 {
                gather.body.extend_from_slice(rows);
            }
            fits
        };
        if conf.truncated != 0 || !fits {
            gather.body[..4].copy_from_slice(&1u32.to_le_bytes());
        }
        gather.awaiting = gather.awaiting.saturating_sub(1);
        self.answer_if_gathered(ctx, conf.gather);
    }

    fn answer_if_gathered(&mut self, ctx: &mut Context, id: u32) {
        let Some(at) = self
            .gathers
            .iter()
            .position(|g| g.id == id && g.awaiting == 0)
        else {
            return;
        };
        let gather = self.gathers.swap_remove(at);
        let conf = InfoConf {
            request_id: gather.request_id,
            table: gather.table as u32,
            code: 0,
        };
        let _ = send_with_bytes(
            ctx,
            conf.to_signal(gather.client, ctx.address()),
            &gather.body,
        );
    }

    /// The `Config` table: the settings, with the data memory the node was given.
    fn config_rows(&self) -> Vec<u8> {
        let mut values = self.settings.named_values();
        values.push(("data_memory".into(), self.memory.limit_bytes()));
        let mut rows = Vec::new();
        NamedValuesBody::encode(&values, &mut rows);
        rows
    }

    /// The `Counters` table: the blocks' counts and the data memory.
    fn counter_rows(&self) -> Vec<u8> {
        let mut values = self.counters.named_values();
        values.push(("data_memory_used_bytes".into(), self.memory.used_bytes()));
        values.push(("data_memory_limit_bytes".into(), self.memory.limit_bytes()));
        let mut rows = Vec::new();
        NamedValuesBody::encode(&values, &mut rows);
        rows
    }

    fn thread_loads_reported(&mut self, ctx: &Context) {
        let Some(body) = ctx.section() else {
            return;
        };
        // Kept only if readable, so every answer is.
        if ThreadLoadsBody::decode(&body).is_ok() {
            self.thread_loads.clear();
            self.thread_loads.extend_from_slice(&body);
        }
    }

    fn requested(&mut self, ctx: &mut Context, request: InfoRequest) {
        let mut conf = InfoConf {
            request_id: request.request_id,
            table: request.table,
            code: 0,
        };
        let named_rows;
        let rows: &[u8] = match InfoTable::from_u32(request.table) {
            Some(InfoTable::Threads) if !self.thread_loads.is_empty() => &self.thread_loads,
            // No report yet (the node just started): no threads measured.
            Some(InfoTable::Threads) => &[0, 0, 0, 0],
            Some(InfoTable::Counters) => {
                named_rows = self.counter_rows();
                &named_rows
            }
            Some(InfoTable::Config) => {
                named_rows = self.config_rows();
                &named_rows
            }
            Some(table @ (InfoTable::Partitions | InfoTable::Transactions | InfoTable::Locks)) => {
                return self.gather(ctx, request, table)
            }
            None => {
                conf.code = ErrorCode::BadRequest as u32;
                &[]
            }
        };
        // A lost answer is the client's timeout; rows fit a section (THREAD_LOADS_MAX,
        // NAMED_VALUES_MAX).
        let _ = send_with_bytes(ctx, conf.to_signal(request.client, ctx.address()), rows);
    }
}

impl Block for NodeInfoBlock {
    fn execute(&mut self, signal: &Signal, ctx: &mut Context<'_>) {
        let number = signal.number();
        let result = if number == ThreadLoadsReport::NUMBER {
            ThreadLoadsReport::from_signal(signal).map(|_| self.thread_loads_reported(ctx))
        } else if number == InfoRequest::NUMBER {
            InfoRequest::from_signal(signal).map(|request| self.requested(ctx, request))
        } else if number == InfoListConf::NUMBER {
            InfoListConf::from_signal(signal).map(|conf| self.listed(ctx, conf))
        } else {
            Ok(())
        };
        debug_assert!(result.is_ok(), "malformed signal to info: {result:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kista_runtime::{Module, ModuleInstance};

    fn snapshot(signals: u64, user_us: u64, system_us: u64, spin_us: u64) -> ThreadStatsSnapshot {
        ThreadStatsSnapshot {
            thread: 2,
            kind: Module::Tc,
            modules: vec![
                ModuleInstance {
                    module: Module::Recv,
                    instance: 0,
                },
                ModuleInstance {
                    module: Module::Tc,
                    instance: 1,
                },
            ],
            signals_executed: signals,
            busy_rounds: 0,
            sleeps: 0,
            spin_us,
            cpu_user_us: user_us,
            cpu_system_us: system_us,
            queue_depth: 7,
        }
    }

    #[test]
    fn a_threads_load_is_its_counters_change_over_the_interval() {
        let before = [snapshot(1_000, 100_000, 50_000, 0)];
        let now = [snapshot(501_000, 700_000, 150_000, 200_000)];
        let loads = measure_thread_loads(&before, &now, 2_000_000); // two seconds
        assert_eq!(
            loads,
            vec![ThreadLoad {
                thread: 2,
                modules: "recv.0,tc.1".into(),
                user_permille: 300,
                system_permille: 50,
                spin_permille: 100,
                signals_per_second: 250_000,
                queue_depth: 7,
                load_level: u32::from(load_level(35, 7)),
            }]
        );
        // A thread first seen now has no past: nothing measured yet.
        let fresh = measure_thread_loads(&[], &now, 1_000_000);
        assert_eq!(
            (fresh[0].user_permille, fresh[0].signals_per_second),
            (0, 0)
        );
    }
}
