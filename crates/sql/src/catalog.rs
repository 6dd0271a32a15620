//! Databases and tables as SQL names them, kept in the cluster so that any number of
//! front ends share them (the front end itself is stateless).
//!
//! A table `t` of database `db` is the cluster table `db/t`. Databases, views and each
//! table's counters (its AUTO_INCREMENT column's, its hidden key's) live in system tables
//! of the cluster (names starting with `#`, which no database may have). Tables opened once are cached; an answer saying a
//! table changed (241) or vanished (723) makes the session forget it and look again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kista_client::schema::{Column, TableSchema};
use kista_client::types::{Collation, ColumnType, Value};
use kista_client::{Client, ClientError, ExecuteMode, LockKind, ScanSpec, Table};

use crate::ddl::alter::AlterPlan;
use crate::ddl::{BoundChecks, ComputedDefaults, PrefixColumn};
use crate::error::{SqlError, SqlResult};
use crate::sql_type::SqlType;
use crate::table_metadata::TableExtras;
use crate::trigger::Trigger;

/// The cluster table listing databases: one row per database.
pub const DATABASES_TABLE: &str = "#kista/databases";
/// The cluster table holding databases' options: a database → its default collation's
/// name.
pub const DATABASE_OPTIONS_TABLE: &str = "#kista/database_options";
/// The cluster table holding AUTO_INCREMENT counters: table name → column, next value.
pub const AUTO_INCREMENT_TABLE: &str = "#kista/auto_increment";
/// The cluster table holding views: `database/view` → the view's query, as text.
pub const VIEWS_TABLE: &str = "#kista/views";
/// Values one front end takes from a counter at a time (NDB's
/// `ndb_autoincrement_prefetch_sz`); values are unique, not consecutive across front ends.
pub const AUTO_INCREMENT_PREFETCH: u64 = 1024;
/// Longest database or table name (MySQL's limit).
pub const NAME_BYTES_MAX: usize = 64;
/// Tables one front end keeps open; past this the cache starts again empty.
pub const OPEN_TABLES_MAX: usize = 4096;

/// What binding a statement reads: the tables and views its names mean, the current
/// database, and the statement's subqueries. A session answers from the cluster's catalog;
/// binding and planning tests answer from tables built in memory, without a cluster.
pub trait BindCatalog {
    /// Table `name` of `database` (error 1146 when there is none).
    fn table(&self, database: &str, name: &str) -> SqlResult<Arc<SqlTable>>;
    /// The query of view `name` of `database`, as text, if there is one.
    fn view(&self, database: &str, name: &str) -> SqlResult<Option<String>>;
    /// The current database, if one is chosen.
    fn database(&self) -> Option<&str>;
    /// The statement's subqueries and their answers (`subquery.rs`).
    fn subqueries(&self) -> &crate::subquery::Subqueries;

    /// The current database; error 1046 when none is chosen.
    fn current_database(&self) -> SqlResult<&str> {
        self.database().ok_or_else(SqlError::no_database)
    }
}

/// A table as SQL sees it.
pub struct SqlTable {
    pub database: String,
    pub name: String,
    pub table: Table,
    /// The AUTO_INCREMENT column, if the table has one.
    pub auto_increment: Option<usize>,
    /// The hidden primary-key column, if the table was declared without a primary key.
    pub hidden_key: Option<usize>,
    /// What SQL declared beyond the storage schema: SQL types, comments.
    pub extras: TableExtras,
    /// The hidden columns holding prefixes of others, for prefix indexes.
    pub prefix_columns: Vec<PrefixColumn>,
    /// The table's triggers, ready to fire, in the order they fire.
    pub triggers: Vec<Arc<Trigger>>,
    /// Defaults computed per row and ON UPDATE columns, bound (`ddl/defaults.rs`).
    pub computed: ComputedDefaults,
    /// Enforced CHECK constraints, bound (`ddl/checks.rs`).
    pub checks: BoundChecks,
    /// While a copying ALTER TABLE runs: where the table's writes are mirrored.
    pub mirror: Option<crate::table_copy::Mirror>,
}

/// A table's counters in the catalog's counter table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Counter {
    /// Values of the table's AUTO_INCREMENT column.
    AutoIncrement,
    /// Values of the hidden primary key of a table declared without one.
    HiddenKey,
}

impl Counter {
    /// The counter's key in the counter table: the table's cluster name, with a suffix
    /// no table name can have for the hidden key's.
    fn key(self, database: &str, name: &str) -> String {
        self.key_of(&cluster_name(database, name))
    }
    /// The key for the table whose cluster name is `cluster_name`.
    fn key_of(self, cluster_name: &str) -> String {
        // Any case of the table's name finds the table, and so its counters.
        let cluster_name = cluster_name.to_lowercase();
        match self {
            Counter::AutoIncrement => cluster_name,
            Counter::HiddenKey => format!("{cluster_name}/#hidden_key"),
        }
    }
}

impl SqlTable {
    /// `table`, of `database`, as SQL sees it (named as it was created): its counters'
    /// columns, what SQL declared beyond the storage schema, its prefix columns and
    /// triggers.
    pub fn opened(database: &str, table: Table, auto_increment: Option<usize>) -> SqlResult<Self> {
        let hidden_key = crate::ddl::hidden_key_column(table.schema());
        let extras = TableExtras::decode(table.schema())?;
        let prefix_columns = PrefixColumn::of(table.schema(), &extras);
        let computed = ComputedDefaults::of(table.schema(), &extras)?;
        let checks = BoundChecks::of(table.schema(), &extras)?;
        let triggers = extras
            .triggers
            .iter()
            .map(|def| Trigger::prepare(def.clone(), table.schema()).map(Arc::new))
            .collect::<SqlResult<_>>()?;
        Ok(SqlTable {
            database: database.to_lowercase(),
            name: table_part(&table.schema().name).to_string(),
            table,
            auto_increment,
            hidden_key,
            extras,
            prefix_columns,
            triggers,
            computed,
            checks,
            mirror: None,
        })
    }

    pub fn schema(&self) -> &TableSchema {
        self.table.schema()
    }

    /// Column `column`'s SQL type, where its storage type is not it.
    pub fn sql_type(&self, column: usize) -> Option<&SqlType> {
        self.extras.columns.get(column)?.sql_type.as_ref()
    }

    /// `value` as column `column` keeps it, or MySQL's strict-mode error (NULL passes).
    /// A TIME, DATETIME or TIMESTAMP is rounded to the column's digits of a second.
    pub fn coerce(&self, column: usize, value: &Value) -> SqlResult<Value> {
        let definition = &self.schema().columns[column];
        match self.sql_type(column) {
            Some(sql_type) => sql_type.coerce(value, &definition.name),
            None => {
                let coerced =
                    crate::value::coerce(value, definition.column_type, &definition.name)?;
                let digits = self.extras.columns[column].fraction_digits;
                Ok(crate::value::round_fraction(coerced, digits))
            }
        }
    }

    /// Column `column`'s constant default, if it has one. (A table made before an explicit
    /// DEFAULT NULL was taken for none keeps NULL as a value: none either.)
    pub fn constant_default(&self, column: usize) -> Option<&Value> {
        let default = self.schema().columns[column].default.as_ref();
        default.filter(|value| !value.is_null())
    }

    /// Fills the generated columns of a whole row from its other columns.
    pub fn generate(&self, row: &mut [Value]) {
        for prefix in &self.prefix_columns {
            row[prefix.column] = prefix.prefix_of(&row[prefix.source]);
        }
    }

    /// Adds to `changes` (of a row now `row`) the generated columns they change.
    pub fn generated_changes(&self, row: &[Value], changes: &mut Vec<(u16, Value)>) {
        for prefix in &self.prefix_columns {
            let source = prefix.source as u16;
            if let Some((_, value)) = changes.iter().find(|(c, _)| *c == source) {
                let value = prefix.prefix_of(value);
                if !crate::value::same_value(&row[prefix.column], &value) {
                    changes.push((prefix.column as u16, value));
                }
            }
        }
    }

    /// The source column and length of prefix column `column`, if it is one.
    pub fn prefix_source(&self, column: usize) -> Option<(usize, u32)> {
        self.prefix_columns
            .iter()
            .find(|p| p.column == column)
            .map(|p| (p.source, p.length))
    }

    /// Column `column`'s type as SHOW CREATE TABLE prints it.
    pub fn type_name(&self, column: usize) -> String {
        match (
            self.sql_type(column),
            self.extras.columns[column].fraction_digits,
        ) {
            (Some(sql_type), _) => sql_type.type_name(),
            (None, 0) => crate::ddl::type_name(self.schema().columns[column].column_type),
            (None, digits) => {
                let name = crate::ddl::type_name(self.schema().columns[column].column_type);
                format!("{name}({digits})")
            }
        }
    }

    /// The primary key of a full row of this table.
    pub fn key_of(&self, row: &[Value]) -> Vec<Value> {
        self.schema()
            .primary_key
            .iter()
            .map(|&c| row[c].clone())
            .collect()
    }

    /// The primary key's columns, as the client's column lists name them.
    pub fn key_columns(&self) -> Vec<u16> {
        self.schema()
            .primary_key
            .iter()
            .map(|&c| c as u16)
            .collect()
    }

    /// The collations of the primary key's columns, in key order: two keys are one row when
    /// they are equal under these.
    pub fn key_collations(&self) -> Vec<kista_client::types::Collation> {
        let schema = self.schema();
        (schema.primary_key.iter())
            .map(|&c| schema.columns[c].column_type.collation())
            .collect()
    }

    /// The table's columns as expressions over its row see them, qualified by `alias`.
    pub fn scope(&self, alias: &str) -> Vec<crate::expr::ScopeColumn> {
        self.schema()
            .columns
            .iter()
            .map(|c| crate::expr::ScopeColumn::of(alias, c))
            .collect()
    }

    /// The column SQL names `name` (never a hidden one).
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.visible_columns()
            .find(|(_, c)| c.name.eq_ignore_ascii_case(name))
            .map(|(position, _)| position)
    }

    /// The columns SQL sees, with their positions in the row: all but the hidden key and
    /// prefixes' columns.
    pub fn visible_columns(&self) -> impl Iterator<Item = (usize, &Column)> {
        self.schema()
            .columns
            .iter()
            .enumerate()
            .filter(|(_, column)| !crate::ddl::is_hidden_column(&column.name))
    }
}

/// Values of one counter this front end took and has not handed out yet.
#[derive(Clone, Copy)]
struct Reserved {
    next: u64,
    end: u64,
}

pub struct Catalog {
    client: Client,
    started: std::time::Instant,
    connections: Arc<std::sync::atomic::AtomicUsize>,
    /// Print why connections broke (`--verbose`).
    pub log_connection_errors: bool,
    /// Whether sessions start with `kista_durable_commits` on (`--durable-commits`).
    pub durable_commits_default: bool,
    /// Bytes of rows a statement may collect in one place (`--result-memory`;
    /// `row_budget.rs`).
    pub result_bytes_max: usize,
    /// The accounts `kista sql --user` configured (`root` by default): they hold every
    /// privilege (`accounts/`).
    pub configured_users: Vec<crate::protocol::auth::User>,
    /// TLS for clients that ask for it (`--tls-cert`); `None`: plain connections only.
    pub tls: Option<Arc<crate::tls::Tls>>,
    tables: Mutex<HashMap<String, Arc<SqlTable>>>,
    /// Bumped whenever a cached table is forgotten: plans bound before are stale.
    generation: std::sync::atomic::AtomicU64,
    /// The client's count of tables heard changed in place, when last looked at
    /// ([`Catalog::forget_changed_tables`]).
    table_notices_seen: std::sync::atomic::AtomicU64,
    /// Counter values taken and not yet handed out, by table id.
    counters: Mutex<HashMap<(u32, Counter), Reserved>>,
    system: Mutex<Option<SystemTables>>,
    /// This front end's connections (SHOW PROCESSLIST, KILL).
    pub(crate) processes: Arc<crate::processes::Processes>,
    /// Tables whose name now means another (`superseded.rs`).
    pub(crate) superseded: crate::superseded::Superseded,
}

/// The cluster tables the front ends keep their own state in.
#[derive(Clone)]
struct SystemTables {
    databases: Table,
    database_options: Table,
    counters: Table,
    views: Table,
    accounts: Table,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The cluster's name for table `name` of `database` in lowercase: how this front end
/// keys the tables it caches and its own rows about them (counters, views). The cluster
/// finds a table by it in any case.
pub fn cluster_name(database: &str, name: &str) -> String {
    format!("{}/{}", database.to_lowercase(), name.to_lowercase())
}

/// The name a table is created (or renamed) under: its database in lowercase, its own name
/// as the statement wrote it, shown so by SHOW TABLES, SHOW CREATE TABLE and
/// `information_schema` and found in any case (MySQL's `lower_case_table_names=2`; ORMs
/// compare the names they read back with their models' `Users`).
pub fn stored_name(database: &str, name: &str) -> String {
    format!("{}/{name}", database.to_lowercase())
}

/// The table's own name within the cluster name `stored` (after its database's).
fn table_part(stored: &str) -> &str {
    stored.split_once('/').map_or(stored, |(_, name)| name)
}

/// Refuses names the cluster's naming cannot hold.
pub fn check_name(kind: &str, name: &str) -> SqlResult<()> {
    let bad = name.is_empty()
        || name.len() > NAME_BYTES_MAX
        || name.contains('/')
        || name.starts_with('#')
        || name.ends_with(' ');
    if bad {
        return Err(SqlError::new(
            1103,
            "42000",
            format!("Incorrect {kind} name '{name}'"),
        ));
    }
    Ok(())
}

fn varchar(name: &str, max_length: u32) -> Column {
    Column::new(name, ColumnType::varchar(max_length))
}

impl Catalog {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            started: std::time::Instant::now(),
            connections: Arc::default(),
            log_connection_errors: false,
            durable_commits_default: false,
            result_bytes_max: crate::row_budget::RESULT_BYTES_MAX_DEFAULT,
            configured_users: Vec::new(),
            tls: None,
            tables: Mutex::new(HashMap::new()),
            generation: std::sync::atomic::AtomicU64::new(0),
            table_notices_seen: std::sync::atomic::AtomicU64::new(0),
            superseded: Default::default(),
            counters: Mutex::new(HashMap::new()),
            system: Mutex::new(None),
            processes: Arc::default(),
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn configured_users(&self) -> &[crate::protocol::auth::User] {
        &self.configured_users
    }

    /// Client connections open now.
    pub fn connections(&self) -> usize {
        self.connections.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Counts a connection until the guard is dropped.
    pub fn connection_opened(&self) -> ConnectionGuard {
        self.connections
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ConnectionGuard(self.connections.clone())
    }

    /// This front end's Prometheus metrics (`kista sql --metrics-port`).
    pub fn render_metrics(&self, out: &mut kista_metrics::Exposition) {
        self.processes.render_metrics(self.connections(), out);
        let expiry = (self.tls.as_ref()).and_then(|tls| tls.served().not_after_s);
        if let Some(not_after_s) = expiry {
            let help = "When the TLS certificate served to MySQL clients expires (seconds \
                        since 1970-01-01 UTC).";
            let name = "kista_sql_tls_certificate_expiry_timestamp_seconds";
            out.single(name, help, kista_metrics::Kind::Gauge, not_after_s as f64);
        }
    }

    pub fn uptime_s(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    pub fn log_connection_error(&self, connection_id: u32, error: &str) {
        if self.log_connection_errors {
            let message = format!("connection {connection_id} closed: {error}");
            crate::log_line(kista_log::Level::Warn, message);
        }
    }

    /// The system tables, created by the first front end that needs them.
    fn system(&self) -> SqlResult<SystemTables> {
        let mut system = lock(&self.system);
        if let Some(tables) = system.as_ref() {
            return Ok(tables.clone());
        }
        let databases = self.open_or_create(TableSchema {
            extra_metadata: Vec::new(),
            name: DATABASES_TABLE.into(),
            columns: vec![varchar("name", NAME_BYTES_MAX as u32)],
            primary_key: vec![0],
        })?;
        let database_options = self.open_or_create(TableSchema {
            extra_metadata: Vec::new(),
            name: DATABASE_OPTIONS_TABLE.into(),
            columns: vec![
                varchar("name", NAME_BYTES_MAX as u32),
                varchar("collation", NAME_BYTES_MAX as u32).nullable(),
            ],
            primary_key: vec![0],
        })?;
        let counters = self.open_or_create(TableSchema {
            extra_metadata: Vec::new(),
            name: AUTO_INCREMENT_TABLE.into(),
            columns: vec![
                varchar("table_name", 2 * NAME_BYTES_MAX as u32 + 1),
                Column::new(
                    "column_no",
                    ColumnType::Int {
                        bytes: 4,
                        signed: false,
                    },
                ),
                Column::new(
                    "next_value",
                    ColumnType::Int {
                        bytes: 8,
                        signed: false,
                    },
                ),
            ],
            primary_key: vec![0],
        })?;
        let views = self.open_or_create(TableSchema {
            extra_metadata: Vec::new(),
            name: VIEWS_TABLE.into(),
            columns: vec![
                varchar("view_name", 2 * NAME_BYTES_MAX as u32 + 1),
                Column::new("definition", ColumnType::TEXT),
            ],
            primary_key: vec![0],
        })?;
        let accounts = self.open_or_create(crate::accounts::store::schema())?;
        let tables = SystemTables {
            databases,
            database_options,
            counters,
            views,
            accounts,
        };
        *system = Some(tables.clone());
        Ok(tables)
    }

    /// The cluster table of accounts (`accounts/store.rs`).
    pub(crate) fn accounts_table(&self) -> SqlResult<Table> {
        Ok(self.system()?.accounts)
    }

    /// The query view `name` of `database` stands for, as text; `None`: no such view.
    pub fn view(&self, database: &str, name: &str) -> SqlResult<Option<String>> {
        let views = self.system()?.views;
        let mut read = self.client.transaction();
        let key = [Value::Bytes(cluster_name(database, name).into_bytes())];
        let op = read.read(&views, &key, LockKind::Committed)?;
        let done = read.execute(ExecuteMode::Commit)?.wait()?;
        Ok(done.row(op).map(|row| match &row[1] {
            Value::Bytes(text) => String::from_utf8_lossy(text).into_owned(),
            _ => String::new(),
        }))
    }

    /// Stores view `name` of `database` as `definition`; `replace`: over one there.
    pub fn create_view(
        &self,
        database: &str,
        name: &str,
        definition: &str,
        replace: bool,
    ) -> SqlResult<()> {
        check_name("table", name)?;
        if !self.database_exists(database)? {
            return Err(SqlError::unknown_database(database));
        }
        let exists = SqlError::new(1050, "42S01", format!("Table '{name}' already exists"));
        match self.table(database, name) {
            Ok(_) => return Err(exists),
            Err(error) if error.code == 1146 => {}
            Err(error) => return Err(error),
        }
        let views = self.system()?.views;
        let mut write = self.client.transaction();
        let row = vec![
            Value::Bytes(cluster_name(database, name).into_bytes()),
            Value::Bytes(definition.as_bytes().to_vec()),
        ];
        match replace {
            true => write.write(&views, row)?,
            false => write.insert(&views, row)?,
        };
        match write.execute(ExecuteMode::Commit)?.wait() {
            Ok(_) => Ok(()),
            Err(error) if error.code() == 630 => Err(exists),
            Err(error) => Err(error.into()),
        }
    }

    /// The views of `database` (the views table is small: a full scan).
    pub fn view_names(&self, database: &str) -> SqlResult<Vec<String>> {
        let views = self.system()?.views;
        let prefix = cluster_name(database, "");
        let mut names = Vec::new();
        for row in self.client.scan(&views, ScanSpec::full())? {
            if let Some(Value::Bytes(name)) = row?.into_iter().next() {
                let name = String::from_utf8_lossy(&name).into_owned();
                if let Some(view) = name.strip_prefix(&prefix) {
                    names.push(view.to_string());
                }
            }
        }
        Ok(names)
    }

    /// Forgets view `name` of `database`; returns whether there was one.
    pub fn drop_view(&self, database: &str, name: &str) -> SqlResult<bool> {
        if self.view(database, name)?.is_none() {
            return Ok(false);
        }
        let views = self.system()?.views;
        let mut delete = self.client.transaction();
        let key = [Value::Bytes(cluster_name(database, name).into_bytes())];
        delete.delete(&views, &key)?;
        match delete.execute(ExecuteMode::Commit)?.wait() {
            Ok(_) => Ok(true),
            // Dropped by another session meanwhile.
            Err(error) if error.code() == 626 => Ok(false),
            Err(error) => Err(error.into()),
        }
    }

    fn open_or_create(&self, schema: TableSchema) -> SqlResult<Table> {
        match self.client.open_table(&schema.name) {
            Ok(table) => return Ok(table),
            Err(error) if error.code() == 723 => {}
            Err(error) => return Err(error.into()),
        }
        let name = schema.name.clone();
        match self.client.create_table(schema, vec![]) {
            Ok(table) => Ok(table),
            // Another front end created it meanwhile.
            Err(_) => Ok(self.client.open_table(&name)?),
        }
    }

    pub fn database_exists(&self, name: &str) -> SqlResult<bool> {
        if crate::information_schema::system_database(name).is_some() {
            return Ok(true);
        }
        let databases = self.system()?.databases;
        let mut read = self.client.transaction();
        let key = [Value::Bytes(name.to_lowercase().into_bytes())];
        let op = read.read(&databases, &key, LockKind::Committed)?;
        let done = read.execute(ExecuteMode::Commit)?.wait()?;
        Ok(done.row(op).is_some())
    }

    /// Creates database `name`, with `collation` the default of its tables (MySQL 8's
    /// default when `None`), in one transaction.
    pub fn create_database(&self, name: &str, collation: Option<Collation>) -> SqlResult<()> {
        check_name("database", name)?;
        let system = self.system()?;
        let key = Value::Bytes(name.to_lowercase().into_bytes());
        let mut insert = self.client.transaction();
        insert.insert(&system.databases, vec![key.clone()])?;
        // Written over what a database of the name dropped before left.
        let collation = collation.unwrap_or_default().name().as_bytes().to_vec();
        insert.write(&system.database_options, vec![key, Value::Bytes(collation)])?;
        match insert.execute(ExecuteMode::Commit)?.wait() {
            Err(error) if error.code() == 630 => Err(SqlError::database_exists(name)),
            other => other.map(drop).map_err(SqlError::from),
        }
    }

    /// Drops the database and every table in it; returns how many tables it dropped.
    pub fn drop_database(&self, name: &str) -> SqlResult<usize> {
        if !self.database_exists(name)? {
            return Err(SqlError::new(
                1008,
                "HY000",
                format!("Can't drop database '{name}'; database doesn't exist"),
            ));
        }
        let tables = self.table_names(name)?;
        // Its foreign keys first: then its tables go in any order.
        for table in &tables {
            let mut child = self.table(name, table)?.table.clone();
            self.forget(name, table);
            let names: Vec<String> = (child.foreign_keys().iter())
                .filter(|key| key.child_table == child.id)
                .map(|key| key.name.clone())
                .collect();
            for key in names {
                child = self.client.drop_foreign_key(&child, &key)?;
            }
        }
        for table in &tables {
            self.forget(name, table);
            self.drop_table(name, table)?;
        }
        for view in self.view_names(name)? {
            self.drop_view(name, &view)?;
        }
        let databases = self.system()?.databases;
        let mut delete = self.client.transaction();
        delete.delete(
            &databases,
            &[Value::Bytes(name.to_lowercase().into_bytes())],
        )?;
        delete.execute(ExecuteMode::Commit)?.wait()?;
        Ok(tables.len())
    }

    /// The default collation of database `name`'s tables: the one it was created with, or
    /// MySQL 8's default.
    pub fn database_collation(&self, name: &str) -> SqlResult<Collation> {
        let options = self.system()?.database_options;
        let mut read = self.client.transaction();
        let key = [Value::Bytes(name.to_lowercase().into_bytes())];
        let op = read.read(&options, &key, LockKind::Committed)?;
        let done = read.execute(ExecuteMode::Commit)?.wait()?;
        Ok(collation_of_row(done.row(op)))
    }

    /// The default collations databases keep (a database created before there were any
    /// has none: MySQL 8's default is its).
    pub fn database_collations(&self) -> SqlResult<Vec<(String, Collation)>> {
        let options = self.system()?.database_options;
        let mut collations = Vec::new();
        for row in self.client.scan(&options, ScanSpec::full())? {
            let row = row?;
            if let Some(Value::Bytes(name)) = row.first() {
                let name = String::from_utf8_lossy(name).into_owned();
                collations.push((name, collation_of_row(Some(&row))));
            }
        }
        Ok(collations)
    }

    /// Every database, sorted, the system ones (`information_schema`, `kista_info`)
    /// included.
    pub fn databases(&self) -> SqlResult<Vec<String>> {
        let databases = self.system()?.databases;
        let system = [
            crate::information_schema::DATABASE,
            crate::information_schema::kista_info::DATABASE,
        ];
        let mut names: Vec<String> = system.iter().map(|name| name.to_string()).collect();
        for row in self.client.scan(&databases, ScanSpec::full())? {
            if let Some(Value::Bytes(name)) = row?.into_iter().next() {
                names.push(String::from_utf8_lossy(&name).into_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    /// The tables of `database`, sorted.
    pub fn table_names(&self, database: &str) -> SqlResult<Vec<String>> {
        let prefix = format!("{}/", database.to_lowercase());
        let mut names: Vec<String> = self
            .client
            .table_names()?
            .into_iter()
            .filter_map(|name| name.strip_prefix(&prefix).map(str::to_string))
            .filter(|name| !name.contains('/'))
            .collect();
        names.sort();
        Ok(names)
    }

    /// The database and name of the table the cluster numbers `table_id` (`None`: no such
    /// table, or one of the catalog's own): how a foreign key names its other table.
    pub fn table_named_by_id(&self, table_id: u32) -> SqlResult<Option<(String, String)>> {
        let tables = self.client.tables()?;
        let found = tables.into_iter().find(|(id, _)| *id == table_id);
        Ok(found.and_then(|(_, full)| {
            let (database, name) = full.split_once('/')?;
            (!name.contains('/')).then(|| (database.to_string(), name.to_string()))
        }))
    }

    /// The table `name` of `database`, from the cache or the cluster.
    pub fn table(&self, database: &str, name: &str) -> SqlResult<Arc<SqlTable>> {
        let full = cluster_name(database, name);
        if let Some(table) = lock(&self.tables).get(&full) {
            return Ok(table.clone());
        }
        let table = match self.client.open_table(&full) {
            Ok(table) => table,
            Err(error) if error.code() == 723 => {
                return Err(SqlError::unknown_table(database, name))
            }
            Err(error) => return Err(error.into()),
        };
        self.superseded.opened(&full, table.id);
        let auto_increment = self.auto_increment_column(&full)?;
        let mut opened = SqlTable::opened(database, table, auto_increment)?;
        if let Some(copying) = &opened.extras.copying {
            opened.mirror = Some(crate::table_copy::Mirror::open(self, database, copying)?);
        }
        let opened = Arc::new(opened);
        let mut tables = lock(&self.tables);
        if tables.len() >= OPEN_TABLES_MAX {
            tables.clear();
        }
        tables.insert(full, opened.clone());
        Ok(opened)
    }

    /// Replaces what SQL keeps of `table` beyond its storage schema (its triggers, ...).
    /// Error 1412 (retried by the session) when the table changed since it was opened.
    pub fn alter_extras(&self, table: &SqlTable, extras: &TableExtras) -> SqlResult<()> {
        self.change_extras(table, extras, false)
    }

    /// [`Catalog::alter_extras`], answered once the transactions open at the change have
    /// ended (a copying ALTER's mirror: `table_copy.rs`).
    pub fn alter_extras_drained(&self, table: &SqlTable, extras: &TableExtras) -> SqlResult<()> {
        self.change_extras(table, extras, true)
    }

    fn change_extras(
        &self,
        table: &SqlTable,
        extras: &TableExtras,
        drained: bool,
    ) -> SqlResult<()> {
        let metadata = extras.encode(table.schema());
        self.forget(&table.database, &table.name);
        let changed = match drained {
            true => self
                .client
                .alter_extra_metadata_drained(&table.table, metadata),
            false => self.client.alter_extra_metadata(&table.table, metadata),
        };
        // Again: another session may have cached the old definition while it changed.
        self.forget(&table.database, &table.name);
        changed?;
        Ok(())
    }

    /// Forgets what is cached of a table (it changed or vanished).
    pub fn forget(&self, database: &str, name: &str) {
        lock(&self.tables).remove(&cluster_name(database, name));
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::Release);
    }

    /// Forgets every cached table: after the cluster said a table changed (error 241), as
    /// another front end may have changed any.
    pub fn forget_all(&self) {
        lock(&self.tables).clear();
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::Release);
    }

    /// Forgets the cached tables that a coordinator said changed in place (ALTER TABLE on
    /// another front end) since they were opened: one atomic load unless a notice came.
    pub fn forget_changed_tables(&self) {
        use std::sync::atomic::Ordering;
        let notices = self.client.table_notices();
        // Read first: a write per statement would bounce the line between every core.
        if self.table_notices_seen.load(Ordering::Acquire) == notices
            || self.table_notices_seen.swap(notices, Ordering::AcqRel) == notices
        {
            return;
        }
        let mut tables = lock(&self.tables);
        let cached = tables.len();
        tables.retain(|_, table| !self.client.table_changed_since_opened(&table.table));
        if tables.len() != cached {
            self.generation.fetch_add(1, Ordering::Release);
        }
    }

    /// Runs ALTER TABLE's `plan` on `table` (see `ddl/alter.rs`): the change in place first
    /// (a rename moves the table's counters with it), then the index drops and builds, then
    /// the AUTO_INCREMENT start.
    pub fn alter_table(&self, table: &SqlTable, plan: AlterPlan) -> SqlResult<()> {
        self.forget(&table.database, &table.name);
        // Again at the end, however it ends: another session may have cached the old
        // definition while it changed, and a plan made from that would undo this change.
        let _forget_again = ForgetOnDrop(self, &table.database, &table.name);
        let mut current = table.table.clone();
        if let Some(schema) = plan.schema {
            current = self.change_in_place(table, schema)?;
        }
        for name in &plan.drop_indexes {
            current = self.client.drop_index(&current, name)?;
        }
        for index in plan.add_indexes {
            current = self.client.create_index(&current, index)?;
        }
        // Their keys move to the indexes just built (the dictionary finds which).
        for name in &plan.drop_served_key_indexes {
            current = self.client.drop_index(&current, name)?;
        }
        if let (Some(start), Some(_)) = (plan.auto_increment, table.auto_increment) {
            lock(&self.counters).remove(&(table.table.id, Counter::AutoIncrement));
            // Under the name the statement gave it.
            let cluster_name = &current.schema().name;
            self.take_from_counter(cluster_name, Counter::AutoIncrement, |next| {
                (next, next.max(start))
            })?;
        }
        Ok(())
    }

    /// Changes `table` into `schema` in place; a new name takes the counters with it
    /// (moved first, and back if the cluster refuses the change).
    fn change_in_place(&self, table: &SqlTable, schema: TableSchema) -> SqlResult<Table> {
        let old_name = table.table.schema().name.clone();
        let new_name = schema.name.clone();
        // A new case of the same name keeps the counters where they are.
        let renamed = new_name.to_lowercase() != old_name.to_lowercase();
        if renamed {
            self.move_counters_between(table, &old_name, &new_name)?;
        }
        let refused = match self.client.alter_table(&table.table, schema) {
            Ok(altered) => return Ok(altered),
            Err(refused) => refused,
        };
        if renamed {
            self.move_counters_between(table, &new_name, &old_name)?;
        }
        Err(match refused {
            ClientError::Node {
                code: 4256,
                message,
                ..
            } if message.contains("exists") => {
                SqlError::table_exists(new_name.rsplit('/').next().unwrap_or(&new_name))
            }
            other => other.into(),
        })
    }

    /// Moves `table`'s counters (their rows, in one transaction, the old ones locked) from
    /// cluster name `from` to `to`.
    fn move_counters_between(&self, table: &SqlTable, from: &str, to: &str) -> SqlResult<()> {
        let kinds = [
            (Counter::AutoIncrement, table.auto_increment.is_some()),
            (Counter::HiddenKey, table.hidden_key.is_some()),
        ];
        let counters = self.system()?.counters;
        let mut transaction = self.client.transaction();
        let mut reads = Vec::new();
        for (counter, _) in kinds.iter().filter(|(_, exists)| *exists) {
            let key = [Value::Bytes(counter.key_of(from).into_bytes())];
            reads.push((
                *counter,
                transaction.read(&counters, &key, LockKind::Exclusive)?,
                key,
            ));
        }
        if reads.is_empty() {
            return Ok(());
        }
        let done = transaction.execute(ExecuteMode::NoCommit)?.wait()?;
        for (counter, op, key) in reads {
            if let Some(row) = done.row(op) {
                let mut moved = row.to_vec();
                moved[0] = Value::Bytes(counter.key_of(to).into_bytes());
                transaction.write(&counters, moved)?;
                transaction.delete(&counters, &key)?;
            }
        }
        transaction.execute(ExecuteMode::Commit)?.wait()?;
        Ok(())
    }

    /// Changes with every [`Catalog::forget`]; a plan bound at another generation may name
    /// a table that changed.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    fn auto_increment_column(&self, full: &str) -> SqlResult<Option<usize>> {
        let key = Counter::AutoIncrement.key_of(full);
        Ok(self.counter_field(key, 1)?.map(|column| column as usize))
    }

    /// Field `field` of the counter row keyed `key` (1: its column, 2: its next value),
    /// read committed; `None` when there is no such counter.
    fn counter_field(&self, key: String, field: usize) -> SqlResult<Option<u64>> {
        let counters = self.system()?.counters;
        let mut read = self.client.transaction();
        let op = read.read(
            &counters,
            &[Value::Bytes(key.into_bytes())],
            LockKind::Committed,
        )?;
        let done = read.execute(ExecuteMode::Commit)?.wait()?;
        Ok(match done.row(op).and_then(|row| row.get(field)) {
            Some(Value::UInt(value)) => Some(*value),
            _ => None,
        })
    }

    /// Creates a table (and its counters: its AUTO_INCREMENT column's, starting at
    /// `auto_increment_start`, and its hidden key's).
    pub fn create_table(
        &self,
        database: &str,
        schema: TableSchema,
        indexes: Vec<kista_client::schema::IndexSchema>,
        auto_increment: Option<(usize, u64)>,
    ) -> SqlResult<Table> {
        let full = schema.name.clone();
        let table_name = full.rsplit('/').next().unwrap_or(&full).to_string();
        let hidden_key = crate::ddl::hidden_key_column(&schema).map(|column| (column, 1));
        let counters = [
            (Counter::AutoIncrement, auto_increment),
            (Counter::HiddenKey, hidden_key),
        ];
        for (counter, column_and_start) in counters {
            // The counters first: a table never exists without them.
            if let Some((column, start)) = column_and_start {
                self.create_counter(counter.key(database, &table_name), column, start)?;
            }
        }
        match self.client.create_table(schema, indexes) {
            Ok(created) => Ok(created),
            Err(ClientError::Node {
                code: 4256,
                message,
                ..
            }) if message.contains("exists") => Err(SqlError::table_exists(&table_name)),
            Err(ClientError::Node {
                code: 4256,
                message,
                ..
            }) => Err(SqlError::new(
                1005,
                "HY000",
                format!("Can't create table '{database}.{table_name}' ({message})"),
            )),
            Err(error) => Err(error.into()),
        }
    }

    pub fn drop_table(&self, database: &str, name: &str) -> SqlResult<()> {
        let table = self.table(database, name)?;
        self.forget(database, name);
        match self.client.drop_table(&table.table) {
            Ok(()) => {}
            Err(error) if error.code() == 723 => {
                return Err(SqlError::new(
                    1051,
                    "42S02",
                    format!("Unknown table '{database}.{name}'"),
                ))
            }
            Err(error) => return Err(error.into()),
        }
        let mut reserved = lock(&self.counters);
        reserved.remove(&(table.table.id, Counter::AutoIncrement));
        reserved.remove(&(table.table.id, Counter::HiddenKey));
        drop(reserved);
        let counters = self.system()?.counters;
        for (counter, exists) in [
            (Counter::AutoIncrement, table.auto_increment.is_some()),
            (Counter::HiddenKey, table.hidden_key.is_some()),
        ] {
            if exists {
                let mut delete = self.client.transaction();
                let key = [Value::Bytes(counter.key(database, name).into_bytes())];
                delete.delete(&counters, &key)?;
                // A counter already gone is no error.
                let _ = delete.execute(ExecuteMode::Commit)?.wait();
            }
        }
        Ok(())
    }

    fn create_counter(&self, key: String, column: usize, start: u64) -> SqlResult<()> {
        let counters = self.system()?.counters;
        let mut write = self.client.transaction();
        let row = vec![
            Value::Bytes(key.into_bytes()),
            Value::UInt(column as u64),
            Value::UInt(start.max(1)),
        ];
        write.write(&counters, row)?;
        write.execute(ExecuteMode::Commit)?.wait()?;
        Ok(())
    }

    /// The next `count` values of a counter of `table` (consecutive), taken from this
    /// front end's reserve, which is refilled from the cluster's counter when short. The
    /// reserve's last values come first when no other front end took values since it was
    /// filled: a LOAD DATA's thousand-row batches, each taking a thousand values from a
    /// reserve of 1,024, numbered a million rows up to 1,023,976.
    pub fn next_values(&self, table: &SqlTable, counter: Counter, count: u64) -> SqlResult<u64> {
        let id = (table.table.id, counter);
        let leftover = {
            let mut counters = lock(&self.counters);
            match counters.get_mut(&id) {
                Some(reserved) if reserved.end - reserved.next >= count => {
                    let first = reserved.next;
                    reserved.next += count;
                    return Ok(first);
                }
                // Too few: taken out, so that no other session of this front end hands
                // them out while this one refills.
                _ => counters.remove(&id),
            }
        };
        let take = count.max(AUTO_INCREMENT_PREFETCH);
        let name = &table.table.schema().name;
        let first = self.take_from_counter(name, counter, |next| match leftover {
            // The counter is where the reserve ended: its values go on from the reserve's.
            Some(Reserved { next: from, end }) if end == next => (from, next + take),
            _ => (next, next + take),
        })?;
        let end = match leftover {
            Some(Reserved { next: from, end }) if first == from => end + take,
            _ => first + take,
        };
        lock(&self.counters).insert(
            id,
            Reserved {
                next: first + count,
                end,
            },
        );
        Ok(first)
    }

    /// A row was inserted with an explicit AUTO_INCREMENT value: later values must be
    /// above it.
    pub fn saw_auto_increment_value(&self, table: &SqlTable, value: u64) -> SqlResult<()> {
        let id = (table.table.id, Counter::AutoIncrement);
        if let Some(reserved) = lock(&self.counters).get_mut(&id) {
            if value < reserved.next {
                return Ok(());
            }
            if value < reserved.end {
                reserved.next = value + 1;
                return Ok(());
            }
        }
        let above = value.saturating_add(1);
        self.take_from_counter(&table.table.schema().name, Counter::AutoIncrement, |next| {
            (next, next.max(above))
        })?;
        Ok(())
    }

    /// The value `table`'s AUTO_INCREMENT column gives the next row without one (SHOW
    /// CREATE TABLE's `AUTO_INCREMENT=`): the next of this front end's reserve, else the
    /// cluster's counter (values other front ends reserved count as taken, as with NDB's
    /// prefetch). `None` for a table without the column.
    pub fn next_auto_increment(&self, table: &SqlTable) -> SqlResult<Option<u64>> {
        if table.auto_increment.is_none() {
            return Ok(None);
        }
        let id = (table.table.id, Counter::AutoIncrement);
        if let Some(reserved) = lock(&self.counters).get(&id) {
            return Ok(Some(reserved.next));
        }
        let key = Counter::AutoIncrement.key_of(&table.table.schema().name);
        self.counter_field(key, 2)
    }

    /// Reads the counter of the table called `cluster_name` under an exclusive lock and
    /// moves it to what `step` returns (from its current value: the value to hand back
    /// and the new next value).
    fn take_from_counter(
        &self,
        cluster_name: &str,
        counter: Counter,
        step: impl Fn(u64) -> (u64, u64),
    ) -> SqlResult<u64> {
        let counters = self.system()?.counters;
        let key = [Value::Bytes(counter.key_of(cluster_name).into_bytes())];
        let mut transaction = self.client.transaction();
        let op = transaction.read(&counters, &key, LockKind::Exclusive)?;
        let done = transaction.execute(ExecuteMode::NoCommit)?.wait()?;
        let next = match done.row(op).and_then(|row| row.get(2).cloned()) {
            Some(Value::UInt(next)) => next,
            _ => {
                transaction.execute(ExecuteMode::Rollback)?.wait()?;
                return Err(SqlError::new(
                    1467,
                    "HY000",
                    "Failed to read auto-increment value from storage engine",
                ));
            }
        };
        let (handed, new_next) = step(next);
        transaction.update(&counters, &key, vec![(2, Value::UInt(new_next))])?;
        transaction.execute(ExecuteMode::Commit)?.wait()?;
        Ok(handed)
    }
}

/// Holds one place in the connection count.
pub struct ConnectionGuard(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Forgets a table's cached definition when dropped (at the end of a change, however it
/// ends).
struct ForgetOnDrop<'a>(&'a Catalog, &'a str, &'a str);

impl Drop for ForgetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.forget(self.1, self.2);
    }
}

/// The collation a row of the database options names (MySQL 8's default for none, or for a
/// name this build does not know).
fn collation_of_row(row: Option<&[Value]>) -> Collation {
    match row.and_then(|row| row.get(1)) {
        Some(Value::Bytes(name)) => {
            Collation::named(&String::from_utf8_lossy(name)).unwrap_or_default()
        }
        _ => Collation::default(),
    }
}
