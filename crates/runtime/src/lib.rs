//! The data node's kernel: it runs blocks on threads and carries signals between them.
//!
//! - [`thread_config`]: NDB `ThreadConfig` strings and the automatic configuration, resolved
//!   to a [`ThreadLayout`](thread_config::ThreadLayout) of threads and module instances.

pub mod module;
pub mod thread_config;

pub use module::{Module, ModuleInstance};
pub mod block;
pub mod fence;
pub mod io;
pub mod job_buffer;
pub mod rng;
pub mod section_pool;

pub use block::{Block, Context};
pub use rng::Rng;
pub use section_pool::SectionPool;
pub mod scheduler;
pub mod stats;
mod timed_queue;

pub use scheduler::{
    start, BlockRegistration, InjectBatch, InjectError, Injector, Remote, RemoteSink, RunningNode,
    RuntimeOptions, StartError, StatsSource, EXTERNAL_SIGNALS_MAX,
};
pub use stats::ThreadStatsSnapshot;
pub mod relay;
pub mod simulation;
