//! The management side of a Kista cluster (`kista mgmd`, `kista mgm`). It owns the cluster
//! configuration: the file an operator writes, checked whole at start so that a mistake is
//! reported with its file, line and reason instead of surfacing as a misbehaving node later.
//!
//! - [`config`]: the file, parsed and checked.
//! - [`server`]: `kista mgmd`: serves the configuration, hosts the arbitrator, tracks which
//!   nodes are connected, answers the admin protocol.
//! - [`admin`] and [`command`]: the admin protocol and its commands, for both ends.
//! - [`backup`]: `start backup` and `show backups`, asked of the data nodes.
//! - [`lease`]: client node ids, leased to applications so every data node knows each
//!   client by the same id.
//! - [`arbitration_file`]: the arbitrator's decisions on the management server's disk, so
//!   its restart forgets no split's winner.

pub mod admin;
pub mod arbitration_file;
pub mod backup;
pub mod command;
pub mod config;
pub mod lease;
pub mod server;
pub mod size;

pub use config::{ClusterConfig, ConfigError};
