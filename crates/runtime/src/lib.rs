//! The data node's kernel: it runs blocks on threads and carries signals between them.
//!
//! - [`thread_config`]: NDB `ThreadConfig` strings and the automatic configuration, resolved
//!   to a [`ThreadLayout`](thread_config::ThreadLayout) of threads and module instances.

pub mod module;
pub mod thread_config;

pub use module::{Module, ModuleInstance};
