//! Thread configuration: NDB's `ThreadConfig` strings, the automatic configuration from a
//! CPU count, and the layout (thread → module instances) both resolve to.

mod auto;
mod config;
mod cpu_list;
mod layout;
mod parse;

pub use auto::{automatic_config, AutoConfigError, AUTO_CPUS_MAX};
pub use config::{
    count_range, default_count, CpuBinding, ThreadConfig, ThreadEntry, SPINTIME_US_MAX,
    THREAD_PRIO_MAX,
};
pub use cpu_list::{CpuList, CPU_ID_MAX};
pub use layout::{ThreadLayout, ThreadSpec};
pub use parse::ThreadConfigError;

#[cfg(test)]
mod tests;
