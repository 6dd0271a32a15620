//! The management side of a Kista cluster (`kista mgmd`, `kista mgm`). It owns the cluster
//! configuration: the file an operator writes, checked whole at start so that a mistake is
//! reported with its file, line and reason instead of surfacing as a misbehaving node later.
//! Node ids, node states, arbitration and the admin protocol join it as the cluster grows.

pub mod config;
pub mod size;

pub use config::{ClusterConfig, ConfigError};
