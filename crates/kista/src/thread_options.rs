//! The thread-layout options every data-node-shaped command shares.

use clap::Args;
use kista_runtime::scheduler::available_cpus;
use kista_runtime::thread_config::{automatic_config, ThreadConfig, ThreadLayout, AUTO_CPUS_MAX};

use crate::Failure;

#[derive(Args, Debug)]
pub struct ThreadOptions {
    /// Thread configuration in NDB ThreadConfig syntax, e.g.
    /// 'ldm={count=1,cpubind=0},query={count=1,cpubind=1},tc={count=0},recv={count=2},io={count=1}'.
    /// Kinds: ldm, query, tc, recv, send, main, rep, io. Keys: count, cpubind, cpuset,
    /// spintime, realtime, thread_prio. See docs/thread-config.md.
    #[arg(long, value_name = "STRING", conflicts_with = "num_cpus")]
    pub thread_config: Option<String>,

    /// Derive the thread configuration automatically for this many CPUs (1 to 512). Without
    /// this or --thread-config, the CPUs available to the process are counted.
    #[arg(long, value_name = "N")]
    pub num_cpus: Option<u32>,
}

impl ThreadOptions {
    pub fn layout(&self) -> Result<ThreadLayout, Failure> {
        layout_for(self.thread_config.as_deref(), self.num_cpus)
    }
}

/// The layout of an explicit thread configuration, or the automatic one for `cpus` CPUs,
/// or for the CPUs this process may use when neither is given.
pub fn layout_for(thread_config: Option<&str>, cpus: Option<u32>) -> Result<ThreadLayout, Failure> {
    let config = match (thread_config, cpus) {
        (Some(text), _) => text.parse::<ThreadConfig>().map_err(Failure::usage)?,
        (None, Some(cpus)) => automatic_config(cpus).map_err(Failure::usage)?,
        (None, None) => {
            let cpus = available_cpus()
                .map_err(|e| Failure::runtime(format!("cannot count CPUs: {e}")))?;
            let cpus = (cpus.len() as u32).clamp(1, AUTO_CPUS_MAX);
            automatic_config(cpus).map_err(Failure::usage)?
        }
    };
    Ok(ThreadLayout::from_config(&config))
}
