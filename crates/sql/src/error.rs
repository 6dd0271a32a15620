//! Errors as MySQL clients know them: a code, an SQLSTATE and a message. Everything a
//! statement can fail with becomes one of these; the session sends it and carries on.

use kista_client::{ClientError, ErrorCategory};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ERROR {code} ({state}): {message}")]
pub struct SqlError {
    pub code: u16,
    pub state: &'static str,
    pub message: String,
    /// The cluster refused an operation built from an old table definition (error 241) or
    /// for a table dropped since it was opened (723): the statement may run again with the
    /// table looked up afresh.
    pub stale_schema: bool,
}

pub type SqlResult<T> = Result<T, SqlError>;

/// The errors whose MySQL message names the statement's row (" at row N"): a value its
/// column cannot hold (1263 NULL made the default, 1264 out of range, 1265 truncated,
/// 1366 not of the column's type, 1406 too long).
const NAMING_THEIR_ROW: [u16; 5] = [1263, 1264, 1265, 1366, 1406];

impl SqlError {
    pub fn new(code: u16, state: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            state,
            message: message.into(),
            stale_schema: false,
        }
    }

    /// This error naming `row` (counted from 1 among the statement's rows) where MySQL's
    /// does ([`NAMING_THEIR_ROW`]).
    pub(crate) fn at_row(self, row: usize) -> Self {
        match NAMING_THEIR_ROW.contains(&self.code) {
            true => Self {
                message: format!("{} at row {row}", self.message),
                ..self
            },
            false => self,
        }
    }

    /// 1064: the parser's message names the position.
    pub fn syntax(message: impl std::fmt::Display) -> Self {
        Self::new(
            1064,
            "42000",
            format!("You have an error in your SQL syntax: {message}"),
        )
    }

    /// 1064 for an expression nested deeper than `max` levels (`expr::EXPRESSION_DEPTH_MAX`).
    pub fn too_deep(max: usize) -> Self {
        Self::syntax(format!(
            "an expression nests more than {max} levels deep (each operator of a chain \
             such as `a + b + c` is a level)"
        ))
    }

    /// 1235: valid SQL this server does not run.
    pub fn not_supported(what: impl std::fmt::Display) -> Self {
        Self::new(
            1235,
            "42000",
            format!("This version of Kista doesn't yet support '{what}'"),
        )
    }

    /// 1045: a login (or COM_CHANGE_USER) refused.
    pub fn access_denied(user: &str, with_password: bool) -> Self {
        let yes_no = if with_password { "YES" } else { "NO" };
        Self::new(
            1045,
            "28000",
            format!("Access denied for user '{user}' (using password: {yes_no})"),
        )
    }

    /// A plain connection to a front end that requires TLS (`--require-secure-transport`).
    pub fn insecure_transport() -> Self {
        Self::new(
            3159,
            "HY000",
            "Connections using insecure transport are prohibited while \
             --require_secure_transport=ON.",
        )
    }

    pub fn no_database() -> Self {
        Self::new(1046, "3D000", "No database selected")
    }

    pub fn unknown_database(name: &str) -> Self {
        Self::new(1049, "42000", format!("Unknown database '{name}'"))
    }

    pub fn database_exists(name: &str) -> Self {
        Self::new(
            1007,
            "HY000",
            format!("Can't create database '{name}'; database exists"),
        )
    }

    pub fn unknown_table(database: &str, table: &str) -> Self {
        Self::new(
            1146,
            "42S02",
            format!("Table '{database}.{table}' doesn't exist"),
        )
    }

    pub fn table_exists(table: &str) -> Self {
        Self::new(1050, "42S01", format!("Table '{table}' already exists"))
    }

    pub fn unknown_column(column: &str, place: &str) -> Self {
        Self::new(
            1054,
            "42S22",
            format!("Unknown column '{column}' in '{place}'"),
        )
    }

    /// MySQL's duplicate-key error for `key` (`table.key`), naming the clashing `value`
    /// where it is known.
    pub fn duplicate_entry(key: &str, value: Option<&str>) -> Self {
        let message = match value {
            Some(value) => format!("Duplicate entry '{value}' for key '{key}'"),
            None => format!("Duplicate entry for key '{key}'"),
        };
        Self::new(1062, "23000", message)
    }

    /// A subquery (or row) of several columns where one value is expected.
    pub fn operand_columns() -> Self {
        Self::new(1241, "21000", "Operand should contain 1 column(s)")
    }

    /// A scalar subquery that returned several rows.
    pub fn subquery_rows() -> Self {
        Self::new(1242, "21000", "Subquery returns more than 1 row")
    }

    /// 1364: a NOT NULL column without a default that a row gives no value.
    pub fn no_default(column: &str) -> Self {
        Self::new(
            1364,
            "HY000",
            format!("Field '{column}' doesn't have a default value"),
        )
    }

    /// 1317: the statement was killed (KILL QUERY) while it ran.
    pub fn query_interrupted() -> Self {
        Self::new(1317, "70100", "Query execution was interrupted")
    }

    pub fn not_null(column: &str) -> Self {
        Self::new(1048, "23000", format!("Column '{column}' cannot be null"))
    }

    pub fn data_too_long(column: &str) -> Self {
        Self::new(
            1406,
            "22001",
            format!("Data too long for column '{column}'"),
        )
    }

    pub fn data_truncated(column: &str) -> Self {
        Self::new(
            1265,
            "01000",
            format!("Data truncated for column '{column}'"),
        )
    }

    pub fn out_of_range(column: &str) -> Self {
        Self::new(
            1264,
            "22003",
            format!("Out of range value for column '{column}'"),
        )
    }

    pub fn wrong_value(kind: &str, value: &str, column: &str) -> Self {
        Self::new(
            1366,
            "HY000",
            format!("Incorrect {kind} value: '{value}' for column '{column}'"),
        )
    }

    pub fn column_count(expected: usize, got: usize) -> Self {
        Self::new(
            1136,
            "21S01",
            format!("Column count doesn't match value count ({expected} columns, {got} values)"),
        )
    }

    pub fn wrong_arguments(what: &str) -> Self {
        Self::new(1210, "HY000", format!("Incorrect arguments to {what}"))
    }

    pub fn unknown_statement(id: u32) -> Self {
        Self::new(
            1243,
            "HY000",
            format!("Unknown prepared statement handler ({id}) given to mysqld_stmt_execute"),
        )
    }

    /// Whether running the transaction again may succeed: a deadlock (1213), a lock wait
    /// timeout (1205), a temporary error of the cluster (1297).
    pub fn is_temporary(&self) -> bool {
        matches!(self.code, 1205 | 1213 | 1297)
    }

    /// Whether the cluster's error `code` says the table an operation was built from is
    /// gone or changed (241, 723): the session looks its tables up again.
    pub fn is_stale_schema(code: u32) -> bool {
        matches!(code, 241 | 723)
    }

    /// 1412: a table the transaction used changed or went since; the transaction is over.
    pub fn definition_changed(message: &str) -> Self {
        Self {
            stale_schema: true,
            ..Self::new(
                1412,
                "HY000",
                format!("Table definition has changed, please retry transaction ({message})"),
            )
        }
    }

    /// An error from the cluster, by the code the data node gave it.
    pub fn from_cluster(error: &ClientError) -> Self {
        let message = error.to_string();
        match error.code() {
            241 => Self::definition_changed(&message),
            266 => Self::new(
                1205,
                "HY000",
                format!("Lock wait timeout exceeded; try restarting transaction ({message})"),
            ),
            4261 => Self::new(
                1213,
                "40001",
                format!("Deadlock found when trying to get lock; try restarting transaction ({message})"),
            ),
            630 => Self::new(1062, "23000", format!("Duplicate entry ({message})")),
            255 => Self::new(
                1452,
                "23000",
                format!("Cannot add or update a child row: a foreign key constraint fails ({message})"),
            ),
            256 => Self::new(
                1451,
                "23000",
                format!("Cannot delete or update a parent row: a foreign key constraint fails ({message})"),
            ),
            4263 => Self::new(
                3008,
                "HY000",
                format!("Foreign key cascade delete/update exceeds max depth of 15 ({message})"),
            ),
            // A table opened from the cache and dropped since (by another front end, or
            // replaced by a copying ALTER): looked up again, the name may find another.
            723 => Self {
                stale_schema: true,
                ..Self::new(1146, "42S02", message)
            },
            827 => Self::new(1114, "HY000", format!("The table is full ({message})")),
            4262 => Self::new(
                1021,
                "HY000",
                format!("Disk full ({message}); free space on the data nodes' disks and retry"),
            ),
            _ if error.category() == ErrorCategory::UnknownOutcome => Self::new(
                1180,
                "HY000",
                format!("Got error {} during COMMIT: the transaction may or may not have committed ({message})", error.code()),
            ),
            // MySQL's NDB engine answers a temporary error with 1297, on which
            // applications retry the transaction; anything else with 1296.
            code if error.is_temporary() => Self::new(
                1297,
                "HY000",
                format!("Got temporary error {code} '{message}' from Kista"),
            ),
            code => Self::new(
                1296,
                "HY000",
                format!("Got error {code} '{message}' from Kista"),
            ),
        }
    }
}

impl From<ClientError> for SqlError {
    fn from(error: ClientError) -> Self {
        Self::from_cluster(&error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_error(code: u32, category: ErrorCategory) -> ClientError {
        let message = format!("error {code}");
        ClientError::Node {
            code,
            category,
            message,
        }
    }

    #[test]
    fn a_temporary_cluster_error_is_1297_and_a_permanent_one_1296() {
        let error = SqlError::from_cluster(&node_error(410, ErrorCategory::Temporary));
        assert_eq!((error.code, error.state), (1297, "HY000"));
        assert!(
            error.message.contains("temporary error 410"),
            "{}",
            error.message
        );
        let permanent = node_error(626, ErrorCategory::Permanent);
        assert_eq!(SqlError::from_cluster(&permanent).code, 1296);
        let disk_full = SqlError::from_cluster(&node_error(4262, ErrorCategory::Temporary));
        assert_eq!((disk_full.code, disk_full.state), (1021, "HY000"));
        assert!(
            disk_full.message.starts_with("Disk full"),
            "{}",
            disk_full.message
        );
        let deadlock = node_error(4261, ErrorCategory::Temporary);
        assert_eq!(
            SqlError::from_cluster(&deadlock).code,
            1213,
            "its own code first"
        );
    }
}
