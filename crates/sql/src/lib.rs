//! The SQL front end: a MySQL-protocol server that runs SQL on a Kista cluster through the
//! native client. It keeps no data and no schema of its own (the cluster holds both), so
//! any number of front ends may serve the same cluster.

pub mod accounts;
pub mod admin;
pub mod admission;
pub mod catalog;
pub mod connection;
pub mod ddl;
pub mod dialect;
pub mod dml;
pub mod error;
pub mod expr;
pub(crate) mod functions;
pub mod information_schema;
pub mod join;
pub(crate) mod json;
pub mod load_data;
pub mod output;
pub mod plan;
pub mod point_read;
pub(crate) mod processes;
pub mod protocol;
mod result_set;
mod row_budget;
pub(crate) mod savepoint;
pub mod select;
pub mod server;
pub mod session;
pub mod sql_type;
mod statement_text;
pub mod subquery;
pub mod superseded;
pub mod table_copy;
pub mod table_metadata;
pub mod text_statements;
pub mod tls;
pub mod trigger;
pub mod value;
pub mod write_set;

pub use admission::Limits;
pub use catalog::Catalog;
pub use protocol::auth::User;
pub use protocol::handshake::Users;
pub use row_budget::{RESULT_BYTES_MAX_DEFAULT, RESULT_ROWS_MAX};
pub use server::{ServerConfig, SqlServer, CONNECTIONS_MAX_DEFAULT};

/// A line of the front end's log on standard error (`kista_log`'s format).
pub(crate) fn log_line(level: kista_log::Level, message: impl std::fmt::Display) {
    kista_log::eprint(level, "kista sql", message);
}
