//! One client's session: its current database, transaction, variables, warnings and
//! prepared statements; and statement dispatch. The protocol side (`connection.rs`)
//! hands it statements and sends what it returns.

use std::collections::HashMap;

use sqlparser::ast::Statement;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use kista_client::types::Value;
use kista_client::{ClientError, ExecuteMode, LockKind, Table, Transaction};

use crate::catalog::{BindCatalog, Catalog, SqlTable};
use crate::dialect::KistaDialect;
use crate::error::{SqlError, SqlResult};
use crate::expr::EvalContext;
use crate::protocol::results::ColumnDefinition;
use crate::savepoint::{Savepoints, Undo};
use crate::select::RowSink;
use crate::write_set::WriteSet;
use crate::{admin, dml, select, subquery};

/// The version string clients see (`@@version`, the greeting).
pub const SERVER_VERSION: &str = "8.0.36-kista";
/// Warnings a session keeps for SHOW WARNINGS (MySQL's `max_error_count`).
pub const WARNINGS_MAX: usize = 64;

/// What a statement returns.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Rows {
        columns: Vec<ColumnDefinition>,
        rows: Vec<Vec<Value>>,
    },
    Done {
        affected_rows: u64,
        last_insert_id: u64,
        info: String,
    },
    /// The result's columns and its `rows` rows went to the client as they were read
    /// (`select/stream.rs`); its end is still to send.
    Streamed { rows: u64 },
}

impl Outcome {
    pub fn done() -> Self {
        Outcome::Done {
            affected_rows: 0,
            last_insert_id: 0,
            info: String::new(),
        }
    }

    pub fn affected(rows: u64) -> Self {
        Outcome::Done {
            affected_rows: rows,
            last_insert_id: 0,
            info: String::new(),
        }
    }
}

/// A prepared query's bound plan, with what it was bound under.
#[derive(Default)]
pub struct PlanCache {
    generation: u64,
    database: Option<String>,
    plan: Option<std::sync::Arc<select::SelectPlan>>,
    /// Whether the plan is a point read (`Some(None)`: looked, it is not).
    point_read: Option<Option<std::sync::Arc<crate::point_read::PointRead>>>,
    /// An UPDATE's or DELETE's bound plan.
    write: Option<std::sync::Arc<dml::WritePlan>>,
}

/// A statement parsed once, with where each `?` is.
pub struct Parsed {
    pub statement: Statement,
    pub placeholders: Vec<Location>,
    /// An UPDATE's ORDER BY, which the parser does not take (MySQL has it): cut from the
    /// statement's tokens and parsed on its own.
    pub update_order_by: Vec<sqlparser::ast::OrderByExpr>,
    /// `SELECT SQL_CALC_FOUND_ROWS ...` (cut from the tokens): FOUND_ROWS() then counts
    /// the rows LIMIT left out too.
    pub calc_found_rows: bool,
    /// An account statement (`accounts/statements.rs`), which sqlparser does not parse:
    /// then it, not `statement` (an empty COMMIT), is what runs.
    pub account: Option<Box<crate::accounts::AccountStatement>>,
    /// A LOAD DATA statement (`load_data/statement.rs`), which sqlparser does not parse
    /// either: then it is what runs.
    pub load_data: Option<Box<crate::load_data::LoadData>>,
}

/// How deeply a statement may nest (parentheses, subqueries, expressions): sqlparser's
/// default of 50 refused machine-made WHERE clauses MySQL runs. A connection's thread
/// stack ([`crate::server::CONNECTION_STACK_BYTES`]) holds parsing, binding and
/// evaluating a statement this deep (test `a_statement_nested_to_the_limit_...`).
pub const NESTING_DEPTH_MAX: usize = 200;

/// Parses one statement (MySQL dialect). `LOCK IN SHARE MODE` becomes `FOR SHARE`.
pub fn parse(sql: &str) -> SqlResult<Parsed> {
    // Statements sqlparser does not parse: what runs is theirs, not `statement` (an empty
    // COMMIT).
    let special = |account, load_data| Parsed {
        statement: Statement::Commit {
            chain: false,
            end: false,
            modifier: None,
        },
        placeholders: Vec::new(),
        update_order_by: Vec::new(),
        calc_found_rows: false,
        account,
        load_data,
    };
    if let Some(account) = crate::accounts::statements::parse(sql)? {
        return Ok(special(Some(Box::new(account)), None));
    }
    if let Some(load) = crate::load_data::statement::parse(sql)? {
        return Ok(special(None, Some(Box::new(load))));
    }
    let dialect = KistaDialect;
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(SqlError::syntax)?;
    crate::dialect::check_operator_runs(&tokens)?;
    let mut tokens = tokens;
    rewrite_lock_in_share_mode(&mut tokens);
    crate::dialect::rewrite_type_names(&mut tokens);
    crate::dialect::rewrite_alter_keys(&mut tokens);
    crate::dialect::rewrite_consistent_snapshot(&mut tokens);
    let database_collation = crate::dialect::take_create_database_options(&mut tokens)?;
    let calc_found_rows = crate::dialect::take_select_modifiers(&mut tokens);
    crate::dialect::rewrite_interval_units(&mut tokens);
    crate::dialect::keep_show_warnings_limit(&mut tokens);
    let placeholders = tokens
        .iter()
        .filter(|t| matches!(&t.token, Token::Placeholder(p) if p == "?"))
        .map(|t| t.span.start)
        .collect();
    let update_order_by = match take_update_order_by(&mut tokens) {
        Some(clause) => parse_order_by(clause)?,
        None => Vec::new(),
    };
    let mut parser = Parser::new(&dialect)
        .with_recursion_limit(NESTING_DEPTH_MAX)
        .with_tokens_with_locations(tokens);
    let mut statements = parser.parse_statements().map_err(SqlError::syntax)?;
    if let (Some(collation), [statement]) = (database_collation, statements.as_mut_slice()) {
        crate::dialect::give_database_collation(statement, collation);
    }
    match statements.len() {
        1 => Ok(Parsed {
            statement: statements.remove(0),
            placeholders,
            update_order_by,
            calc_found_rows,
            account: None,
            load_data: None,
        }),
        0 => Err(SqlError::new(1065, "42000", "Query was empty")),
        _ => Err(SqlError::not_supported("several statements in one query")),
    }
}

/// Cuts `ORDER BY ...` (up to a LIMIT or the end) out of an UPDATE statement's tokens and
/// returns it; `None` for any other statement or an UPDATE without one. Only words outside
/// parentheses count, so a subquery's ORDER BY stays (and is refused later).
fn take_update_order_by(tokens: &mut Vec<TokenWithSpan>) -> Option<Vec<TokenWithSpan>> {
    let is_word = |t: &TokenWithSpan, word: &str| matches!(&t.token, Token::Word(w) if w.value.eq_ignore_ascii_case(word));
    let mut meaningful = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| !matches!(t.token, Token::Whitespace(_)));
    if !meaningful.next().is_some_and(|(_, t)| is_word(t, "UPDATE")) {
        return None;
    }
    let mut depth = 0i32;
    let mut start = None;
    let mut end = tokens.len();
    let mut previous_order = None;
    for (position, token) in meaningful {
        match &token.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::SemiColon if start.is_some() => {
                end = position;
                break;
            }
            _ if depth != 0 => {}
            _ if start.is_none() && is_word(token, "ORDER") => previous_order = Some(position),
            _ if start.is_none() && is_word(token, "BY") && previous_order.is_some() => {
                start = previous_order;
            }
            _ if start.is_some() && is_word(token, "LIMIT") => {
                end = position;
                break;
            }
            _ => previous_order = None,
        }
    }
    let start = start?;
    let clause: Vec<TokenWithSpan> = tokens.drain(start..end).collect();
    Some(clause)
}

/// Parses a cut-out `ORDER BY ...` clause (its tokens keep their places, so placeholders in
/// it are found as in the statement).
fn parse_order_by(clause: Vec<TokenWithSpan>) -> SqlResult<Vec<sqlparser::ast::OrderByExpr>> {
    let mut tokens = vec![
        TokenWithSpan::wrap(Token::make_keyword("SELECT")),
        TokenWithSpan::wrap(Token::Whitespace(sqlparser::tokenizer::Whitespace::Space)),
        TokenWithSpan::wrap(Token::Number("1".into(), false)),
        TokenWithSpan::wrap(Token::Whitespace(sqlparser::tokenizer::Whitespace::Space)),
    ];
    tokens.extend(clause);
    let query = Parser::new(&KistaDialect)
        .with_recursion_limit(NESTING_DEPTH_MAX)
        .with_tokens_with_locations(tokens)
        .parse_query()
        .map_err(SqlError::syntax)?;
    match query.order_by.map(|order| order.kind) {
        Some(sqlparser::ast::OrderByKind::Expressions(exprs)) => Ok(exprs),
        _ => Err(SqlError::not_supported("this ORDER BY in UPDATE")),
    }
}

fn rewrite_lock_in_share_mode(tokens: &mut Vec<TokenWithSpan>) {
    use sqlparser::tokenizer::Whitespace;
    // Only the last four words can be the clause; no other token is looked at.
    let mut words = tokens
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, t)| !matches!(t.token, Token::Whitespace(_) | Token::SemiColon))
        .map(|(position, _)| position);
    let last: Vec<usize> = words.by_ref().take(4).collect();
    let is_clause = last.len() == 4
        && last
            .iter()
            .rev()
            .zip(["LOCK", "IN", "SHARE", "MODE"])
            .all(|(&position, word)| {
                tokens[position]
                    .token
                    .to_string()
                    .eq_ignore_ascii_case(word)
            });
    if is_clause {
        tokens.truncate(last[3]);
        tokens.push(TokenWithSpan::wrap(Token::make_keyword("FOR")));
        tokens.push(TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space)));
        tokens.push(TokenWithSpan::wrap(Token::make_keyword("SHARE")));
    }
}

pub struct Warning {
    pub level: &'static str,
    pub code: u16,
    pub message: String,
}

/// The session variable that makes commits durable (`SET kista_durable_commits = ON`).
pub const DURABLE_COMMITS: &str = "kista_durable_commits";

/// The session variable that turns foreign-key checks and actions off for loads.
pub const FOREIGN_KEY_CHECKS: &str = "foreign_key_checks";

pub struct Session<'c> {
    pub(crate) catalog: &'c Catalog,
    pub database: Option<String>,
    pub user: String,
    pub connection_id: u32,
    pub autocommit: bool,
    /// `SET kista_durable_commits = ON`: commits are confirmed only once on disk on every
    /// replica (docs/durability.md); off, once in memory on every replica (NDB's rule).
    pub durable_commits: bool,
    /// What the session's account may do (`accounts/`): checked before every statement
    /// unless it may do everything.
    pub(crate) privileges: crate::accounts::Privileges,
    /// `SET foreign_key_checks = 0`: writes neither check their foreign keys nor run
    /// their actions, and DROP TABLE drops a parent's references (docs/sql.md).
    pub foreign_key_checks: bool,
    /// `SET max_execution_time = ms`: how long a SELECT may run (0: no bound).
    pub max_execution_time_ms: u64,
    /// Open while a transaction is (BEGIN, or autocommit off and a statement ran).
    pub(crate) transaction: Option<Transaction<'c>>,
    /// Whether the open transaction was begun explicitly or by autocommit off.
    pub(crate) explicit: bool,
    /// What the open transaction wrote, so its reads see it (`write_set.rs`).
    pub(crate) written: WriteSet,
    /// How many superseded tables the catalog had recorded when last looked at.
    superseded_seen: u64,
    /// The open transaction's savepoints (`savepoint.rs`).
    pub(crate) savepoints: Savepoints,
    pub last_insert_id: u64,
    /// Session variables set with SET, and user variables (`@x`, set with SET or `:=`
    /// inside a query, which is why a query's evaluation may write them): lower-case names.
    pub(crate) variables: std::cell::RefCell<HashMap<String, Value>>,
    /// The last statement's warnings. Behind a cell, as `variables`: a query that reads
    /// through `&Session` may warn (a `kista_info` list cut at its bound).
    pub(crate) warnings: std::cell::RefCell<Vec<Warning>>,
    /// `@@warning_count` and `@@error_count`: what the statement before the running one
    /// left (a SELECT of them, which clears the list as any statement but SHOW WARNINGS
    /// does, still answers the earlier statement's, as MySQL's).
    previous_diagnostics: (usize, usize),
    /// The running statement's subqueries (`subquery.rs`).
    pub(crate) subqueries: crate::subquery::Subqueries,
    /// The privileges of the definers of triggers the running statement fired, read
    /// once per statement (`accounts::check_definer`).
    pub(crate) definers: std::cell::RefCell<Vec<(String, crate::accounts::Privileges)>>,
    /// FOUND_ROWS(): the rows the last SELECT answered (with SQL_CALC_FOUND_ROWS, before
    /// its LIMIT).
    pub(crate) found_rows: u64,
    /// The rows the last query had before its LIMIT and OFFSET cut them.
    pub(crate) rows_before_limit: std::cell::Cell<u64>,
    /// The connection as SHOW PROCESSLIST lists it and KILL marks it (`None` in tests).
    pub(crate) process: Option<std::sync::Arc<crate::processes::Process>>,
    /// The TLS the connection runs in (`Ssl_cipher`, `Ssl_version`); `None`: plain.
    pub(crate) secure: Option<crate::tls::Negotiated>,
}

impl BindCatalog for Session<'_> {
    fn table(&self, database: &str, name: &str) -> SqlResult<std::sync::Arc<SqlTable>> {
        self.catalog.table(database, name)
    }

    fn view(&self, database: &str, name: &str) -> SqlResult<Option<String>> {
        self.catalog.view(database, name)
    }

    fn database(&self) -> Option<&str> {
        self.database.as_deref()
    }

    fn subqueries(&self) -> &crate::subquery::Subqueries {
        &self.subqueries
    }
}

impl<'c> Session<'c> {
    pub fn new(catalog: &'c Catalog, user: String, connection_id: u32) -> Self {
        Self {
            catalog,
            database: None,
            user,
            connection_id,
            autocommit: true,
            durable_commits: catalog.durable_commits_default,
            privileges: crate::accounts::Privileges::all(),
            foreign_key_checks: true,
            max_execution_time_ms: 0,
            transaction: None,
            explicit: false,
            written: WriteSet::default(),
            superseded_seen: 0,
            savepoints: Savepoints::default(),
            last_insert_id: 0,
            variables: std::cell::RefCell::new(HashMap::new()),
            warnings: std::cell::RefCell::new(Vec::new()),
            previous_diagnostics: (0, 0),
            subqueries: Default::default(),
            definers: Default::default(),
            found_rows: 0,
            rows_before_limit: Default::default(),
            process: None,
            secure: None,
        }
    }

    pub fn in_transaction(&self) -> bool {
        self.transaction.is_some()
    }

    /// The database statements name implicitly.
    pub fn current_database(&self) -> SqlResult<&str> {
        self.database.as_deref().ok_or_else(SqlError::no_database)
    }

    pub fn use_database(&mut self, name: &str) -> SqlResult<()> {
        crate::accounts::check_use(self, name)?;
        if !self.catalog.database_exists(name)? {
            return Err(SqlError::unknown_database(name));
        }
        self.database = Some(name.to_lowercase());
        Ok(())
    }

    pub fn warn(&self, code: u16, message: String) {
        self.keep_diagnostic("Warning", code, message);
    }

    /// Keeps the error that ended the last statement among its diagnostics (level
    /// `Error`), as MySQL does: SHOW WARNINGS and SHOW ERRORS list it.
    pub fn keep_error(&self, code: u16, message: &str) {
        self.keep_diagnostic("Error", code, message.to_string());
    }

    /// Adds one of the statement's diagnostics, while fewer than [`WARNINGS_MAX`] are kept.
    fn keep_diagnostic(&self, level: &'static str, code: u16, message: String) {
        let mut warnings = self.warnings.borrow_mut();
        if warnings.len() < WARNINGS_MAX {
            warnings.push(Warning {
                level,
                code,
                message,
            });
        }
    }

    /// Warning 1062 for each of `count` rows of `table` skipped as duplicates (as many as
    /// the session keeps: a million skipped rows make no million messages).
    pub(crate) fn warn_duplicates(&self, table: &str, count: u64) {
        let room = WARNINGS_MAX.saturating_sub(self.warnings.borrow().len());
        for _ in 0..count.min(room as u64) {
            self.warn(1062, format!("Duplicate entry in table '{table}'"));
        }
    }

    /// Runs one parsed statement with `params` for its `?`s. A statement of its own
    /// (autocommit) refused because a table changed under it runs once more with the
    /// tables looked up afresh.
    pub fn execute(&mut self, parsed: &Parsed, params: &[Value]) -> SqlResult<Outcome> {
        self.execute_cached(parsed, &mut PlanCache::default(), params)
    }

    /// Like [`Session::execute`], keeping a query's bound plan in `cache` for the next
    /// execution (prepared statements): binding costs more than running a key read.
    pub fn execute_cached(
        &mut self,
        parsed: &Parsed,
        cache: &mut PlanCache,
        params: &[Value],
    ) -> SqlResult<Outcome> {
        self.execute_to(parsed, cache, params, None)
    }

    /// Like [`Session::execute_cached`], a long query result going to `sink` as its rows
    /// are read (`Outcome::Streamed`). A statement that sent rows is not run again.
    pub(crate) fn execute_to(
        &mut self,
        parsed: &Parsed,
        cache: &mut PlanCache,
        params: &[Value],
        mut sink: Option<&mut dyn RowSink>,
    ) -> SqlResult<Outcome> {
        // Every statement but SHOW WARNINGS / ERRORS starts its diagnostics afresh (the
        // account statements and LOAD DATA too, which run apart from the rest).
        if !reads_diagnostics(&parsed.statement) {
            let warnings = self.warnings.get_mut();
            let errors = warnings.iter().filter(|w| w.level == "Error").count();
            self.previous_diagnostics = (warnings.len(), errors);
            warnings.clear();
        }
        if let Some(account) = &parsed.account {
            return crate::accounts::run(self, account);
        }
        if let Some(load) = &parsed.load_data {
            return crate::load_data::run_server_file(self, load);
        }
        crate::accounts::check(self, &parsed.statement)?;
        self.definers.get_mut().clear();
        // Decided before the statement runs: one that fails ends the transaction.
        let in_transaction = self.transaction.is_some();
        // What the transaction wrote before a switch was mirrored: it may still commit.
        let ends = matches!(
            parsed.statement,
            Statement::Commit { .. } | Statement::Rollback { .. }
        );
        if in_transaction && !ends {
            self.refuse_superseded_tables()?;
        } else if !in_transaction {
            // A table changed in place elsewhere is seen from the next statement outside a
            // transaction on.
            self.catalog.forget_changed_tables();
        }
        let first_sink = sink.as_mut().map(|sink| &mut **sink as &mut dyn RowSink);
        match self.execute_once(parsed, cache, params, first_sink) {
            // Run again only a statement that began no transaction's work: inside one, the
            // cluster rolled back the statements before, which the client must hear.
            Err(error)
                if error.stale_schema
                    && !in_transaction
                    && !sink.as_ref().is_some_and(|sink| sink.started()) =>
            {
                self.catalog.forget_all();
                // What the thrown-away run said is not the statement's.
                if !reads_diagnostics(&parsed.statement) {
                    self.warnings.get_mut().clear();
                }
                self.execute_once(parsed, cache, params, sink)
            }
            // The transaction fails whole (MySQL's 1412: retry it), and the next one looks
            // its tables up again. The front end may have found the change itself (a
            // copying ALTER's mirror gone while the name was looked up), with the cluster's
            // transaction still open: it is rolled back here, or a write of an earlier
            // statement waiting for the next batch would commit with the client's next
            // COMMIT, or BEGIN (which commits what is open, and is how sysbench restarts).
            Err(error) if error.stale_schema => {
                self.catalog.forget_all();
                if in_transaction {
                    // A rollback that fails leaves nothing to commit either: the transaction
                    // is taken from the session before it is sent.
                    let _ = self.rollback();
                }
                match error.code {
                    1412 => Err(error),
                    _ => Err(SqlError::definition_changed(&error.message)),
                }
            }
            other => other,
        }
    }

    /// Error 1412, the transaction rolled back, when a table it used (wrote, or read under a
    /// lock) no longer has its name (`superseded.rs`): its next statement would meet the
    /// table's new definition, or the new table's rows, which its locks do not hold.
    fn refuse_superseded_tables(&mut self) -> SqlResult<()> {
        let superseded = self.catalog.superseded.since(&mut self.superseded_seen);
        if !superseded
            .iter()
            .any(|&table_id| self.written.used(table_id))
        {
            return Ok(());
        }
        self.rollback()?;
        self.catalog.forget_all();
        Err(SqlError::definition_changed(
            "a table this transaction used was replaced by ALTER TABLE or dropped",
        ))
    }

    /// Error 1317 once the connection's statement was killed (KILL QUERY), or 3024 past
    /// its time limit: work the front end does on its own, with no round trip to the
    /// cluster that would notice, checks it every so many rows.
    pub(crate) fn check_killed(&self) -> SqlResult<()> {
        self.process
            .as_ref()
            .map_or(Ok(()), |process| process.check_killed())
    }

    /// Bounds the query about to run by `max_execution_time` (ms; 0: no bound), which
    /// MySQL applies to SELECT alone: past it, its next check fails it with 3024.
    fn limit_query_time(&self) {
        if let (Some(process), 1..) = (&self.process, self.max_execution_time_ms) {
            process.limit_statement(self.max_execution_time_ms);
        }
    }

    fn execute_once(
        &mut self,
        parsed: &Parsed,
        cache: &mut PlanCache,
        params: &[Value],
        sink: Option<&mut dyn RowSink>,
    ) -> SqlResult<Outcome> {
        self.subqueries.clear();
        if let Statement::Query(query) = &parsed.statement {
            self.limit_query_time();
            let outcome = if select::union::is_set_operation(query) {
                select::union::execute(self, query, &parsed.placeholders, params)
            } else {
                let plan = self.cached_plan(query, &parsed.placeholders, cache, Some(params))?;
                // SQL_CALC_FOUND_ROWS counts the rows past the LIMIT: the whole result
                // is read.
                let sink = sink.filter(|_| !parsed.calc_found_rows);
                select::execute(self, &plan, params, sink)
            };
            self.found_rows = match (&outcome, parsed.calc_found_rows) {
                (Ok(Outcome::Rows { .. }), true) => self.rows_before_limit.get(),
                (Ok(Outcome::Rows { rows, .. }), false) => rows.len() as u64,
                (Ok(Outcome::Streamed { rows }), _) => *rows,
                _ => self.found_rows,
            };
            return outcome;
        }
        if let Some(plan) = self.cached_write_plan(parsed, cache, params)? {
            return dml::run_write(self, &plan, params);
        }
        self.execute_uncached(parsed, params)
    }

    /// An UPDATE's or DELETE's bound plan from `cache`, bound again as a query's is
    /// ([`Session::cached_plan`]); `None` for other statements.
    /// A plan whose subqueries ran holds their answers: it is not kept.
    fn cached_write_plan(
        &mut self,
        parsed: &Parsed,
        cache: &mut PlanCache,
        params: &[Value],
    ) -> SqlResult<Option<std::sync::Arc<dml::WritePlan>>> {
        if !matches!(
            parsed.statement,
            Statement::Update { .. } | Statement::Delete(_)
        ) {
            return Ok(None);
        }
        let generation = self.catalog.generation();
        if let Some(plan) = &cache.write {
            if cache.generation == generation && cache.database == self.database {
                return Ok(Some(plan.clone()));
            }
        }
        let placeholders = &parsed.placeholders;
        let (plan, ran) = crate::subquery::answering(self, placeholders, params, |session| {
            dml::bind_write(session, parsed)
        })?;
        let plan = plan.map(std::sync::Arc::new);
        if ran {
            return Ok(plan);
        }
        *cache = PlanCache {
            generation,
            database: self.database.clone(),
            write: plan.clone(),
            ..PlanCache::default()
        };
        Ok(plan)
    }

    /// The query's plan from `cache`, bound again when a table it names may have changed
    /// or the current database did. With `params`, its subqueries run first (and the
    /// plan, which holds their answers, is not kept); without, they are refused.
    fn cached_plan(
        &mut self,
        query: &sqlparser::ast::Query,
        placeholders: &[Location],
        cache: &mut PlanCache,
        params: Option<&[Value]>,
    ) -> SqlResult<std::sync::Arc<select::SelectPlan>> {
        let generation = self.catalog.generation();
        match &cache.plan {
            Some(plan) if cache.generation == generation && cache.database == self.database => {
                Ok(plan.clone())
            }
            _ => {
                let plan = match params {
                    Some(params) => {
                        let (plan, ran) =
                            subquery::bind_answering(self, query, placeholders, params)?;
                        if ran {
                            return Ok(std::sync::Arc::new(plan));
                        }
                        plan
                    }
                    None => select::bind_query(self, query, placeholders)?,
                };
                let plan = std::sync::Arc::new(plan);
                *cache = PlanCache {
                    generation,
                    database: self.database.clone(),
                    plan: Some(plan.clone()),
                    ..PlanCache::default()
                };
                Ok(plan)
            }
        }
    }

    /// The prepared statement as a point read that may be answered from the client's
    /// receive thread: a query reading one row by primary key, outside any transaction
    /// (autocommit). `None` for anything else (or when binding fails: the ordinary path
    /// then reports the error).
    pub fn point_read(
        &mut self,
        parsed: &Parsed,
        cache: &mut PlanCache,
    ) -> Option<std::sync::Arc<crate::point_read::PointRead>> {
        let Statement::Query(query) = &parsed.statement else {
            return None;
        };
        // An account that may not read it takes the ordinary path, which refuses it.
        let refused = crate::accounts::check(self, &parsed.statement).is_err();
        if !self.autocommit || self.transaction.is_some() || refused {
            return None;
        }
        self.catalog.forget_changed_tables();
        let plan = self
            .cached_plan(query, &parsed.placeholders, cache, None)
            .ok()?;
        if cache.point_read.is_none() {
            cache.point_read = Some(plan.as_point_read().map(std::sync::Arc::new));
        }
        self.warnings.get_mut().clear();
        cache.point_read.clone().flatten()
    }

    fn execute_uncached(&mut self, parsed: &Parsed, params: &[Value]) -> SqlResult<Outcome> {
        match &parsed.statement {
            Statement::Insert(insert) => dml::insert(self, insert, &parsed.placeholders, params),
            other => admin::run(self, other, &parsed.placeholders, params),
        }
    }

    /// The context expressions are evaluated in.
    pub fn eval_context<'a>(
        &'a self,
        params: &'a [Value],
        aggregates: &'a [Value],
        variable: &'a dyn Fn(&str) -> Option<Value>,
    ) -> EvalContext<'a> {
        EvalContext {
            params,
            aggregates,
            database: self.database.as_deref(),
            user: &self.user,
            connection_id: self.connection_id,
            last_insert_id: self.last_insert_id,
            found_rows: self.found_rows,
            variable,
            user_variables: Some(&self.variables),
            process: self.process.as_deref(),
        }
    }

    /// Runs `work` in the session's transaction (opening one if none is open). With
    /// autocommit and no explicit transaction the statement ends it: `work`'s last batch
    /// commits ([`Tx::execute`] with `last`), or it commits afterwards. An error aborts the
    /// transaction (the cluster has rolled it back: NDB's rule, not InnoDB's
    /// statement-level rollback).
    pub fn transactional<T>(
        &mut self,
        work: impl FnOnce(&mut Tx<'c>, &Self) -> SqlResult<T>,
    ) -> SqlResult<T> {
        let catalog = self.catalog;
        let mut transaction = match self.transaction.take() {
            Some(transaction) => transaction,
            None => catalog.client().transaction(),
        };
        transaction.set_foreign_key_checks(self.foreign_key_checks);
        let written = std::mem::take(&mut self.written);
        let savepoints = std::mem::take(&mut self.savepoints);
        let mut tx = Tx {
            transaction,
            catalog,
            process: self.process.clone(),
            commits: (self.autocommit && !self.explicit).then(|| self.commit_mode()),
            ended: false,
            commit_held: 0,
            written,
            savepoints,
        };
        match work(&mut tx, self) {
            Ok(value) => {
                match tx.commits {
                    None => {
                        self.transaction = Some(tx.transaction);
                        self.written = tx.written;
                        self.savepoints = tx.savepoints;
                    }
                    Some(mode) if !tx.ended && tx.transaction.has_sent() => {
                        tx.transaction.execute(mode)?.wait()?;
                    }
                    Some(_) => {}
                }
                Ok(value)
            }
            Err(error) => {
                self.explicit = false;
                // The cluster aborted the transaction already when it refused an
                // operation; one refused before its batch went needs a rollback.
                if !tx.ended && tx.transaction.has_sent() {
                    let _ = tx
                        .transaction
                        .execute(ExecuteMode::Rollback)
                        .map(|p| p.wait());
                }
                Err(error)
            }
        }
    }

    /// SAVEPOINT: outside a transaction (autocommit) it marks nothing, as in MySQL.
    pub fn savepoint(&mut self, name: &str) -> SqlResult<()> {
        if self.autocommit && !self.explicit {
            return Ok(());
        }
        if self.transaction.is_none() {
            self.transaction = Some(self.catalog.client().transaction());
        }
        self.savepoints.set(name)
    }

    /// ROLLBACK TO SAVEPOINT: undoes the writes made since, in the transaction.
    pub fn rollback_to_savepoint(&mut self, name: &str) -> SqlResult<()> {
        let undo = self.savepoints.rollback_to(name)?;
        if undo.is_empty() {
            return Ok(());
        }
        self.transactional(|tx, _| {
            for record in undo {
                match record {
                    Undo::Delete { table, key } => tx.transaction.delete(&table, &key)?,
                    Undo::Restore { table, row } => tx.transaction.write(&table, row)?,
                };
                tx.send_when_full()?;
            }
            tx.execute(false).map(drop)
        })
    }

    pub fn begin(&mut self) -> SqlResult<()> {
        self.commit()?;
        self.transaction = Some(self.catalog.client().transaction());
        self.explicit = true;
        Ok(())
    }

    pub fn commit(&mut self) -> SqlResult<()> {
        self.explicit = false;
        self.written.clear();
        self.savepoints.clear();
        if let Some(mut transaction) = self.transaction.take().filter(Transaction::has_sent) {
            transaction.execute(self.commit_mode())?.wait()?;
        }
        Ok(())
    }

    /// How the session's transactions commit.
    pub(crate) fn commit_mode(&self) -> ExecuteMode {
        if self.durable_commits {
            ExecuteMode::CommitDurable
        } else {
            ExecuteMode::Commit
        }
    }

    pub fn rollback(&mut self) -> SqlResult<()> {
        self.explicit = false;
        self.written.clear();
        self.savepoints.clear();
        if let Some(mut transaction) = self.transaction.take().filter(Transaction::has_sent) {
            match transaction.execute(ExecuteMode::Rollback)?.wait() {
                // A transaction the cluster ended already (timeout, failure) is rolled back.
                Ok(_) | Err(ClientError::Node { .. }) => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(())
    }

    /// The value of `@@name` (session first, then the server's).
    pub fn variable(&self, name: &str) -> Option<Value> {
        let name = name
            .strip_prefix("session.")
            .or_else(|| name.strip_prefix("global."))
            .unwrap_or(name);
        if name == "autocommit" {
            return Some(Value::Int(i64::from(self.autocommit)));
        }
        if name == DURABLE_COMMITS {
            return Some(Value::Int(i64::from(self.durable_commits)));
        }
        if name == FOREIGN_KEY_CHECKS {
            return Some(Value::Int(i64::from(self.foreign_key_checks)));
        }
        let tls = self.catalog.tls.as_deref();
        match name {
            "have_ssl" | "have_openssl" => {
                let have = if tls.is_some() { "YES" } else { "DISABLED" };
                return Some(Value::Bytes(have.as_bytes().to_vec()));
            }
            "require_secure_transport" => {
                let required = tls.is_some_and(|tls| tls.require_secure_transport);
                return Some(Value::Int(i64::from(required)));
            }
            "warning_count" => return Some(Value::Int(self.previous_diagnostics.0 as i64)),
            "error_count" => return Some(Value::Int(self.previous_diagnostics.1 as i64)),
            _ => {}
        }
        if let Some(value) = self.variables.borrow().get(name) {
            return Some(value.clone());
        }
        admin::server_variable(name)
    }
}

/// Whether `statement` reads the last statement's diagnostics (SHOW WARNINGS / ERRORS,
/// SHOW COUNT(*) WARNINGS / ERRORS), so must not clear them.
fn reads_diagnostics(statement: &Statement) -> bool {
    matches!(statement, Statement::ShowVariable { variable }
        if variable.iter().take(2).any(|v| v.value.eq_ignore_ascii_case("warnings")
            || v.value.eq_ignore_ascii_case("errors")))
}

/// A statement's view of its transaction.
pub struct Tx<'c> {
    pub transaction: Transaction<'c>,
    pub catalog: &'c Catalog,
    /// The connection, whose KILL stops the statement at its next round trip.
    process: Option<std::sync::Arc<crate::processes::Process>>,
    /// How the statement ends the transaction, if it does (autocommit).
    commits: Option<ExecuteMode>,
    ended: bool,
    /// While above 0, the statement's last batch does not commit: triggers still have
    /// writes to make after it ([`Tx::holding_commit`]).
    commit_held: u32,
    written: WriteSet,
    savepoints: Savepoints,
}

impl Tx<'_> {
    /// Whether writes must record how to undo them (a savepoint is set).
    pub fn recording_undo(&self) -> bool {
        self.savepoints.recording()
    }

    /// Under a savepoint, records that the row of `table` with primary key `key` is about
    /// to be inserted (ROLLBACK TO deletes it).
    /// `key` is made only then (most inserts run with no savepoint set).
    pub fn undo_insert(
        &mut self,
        table: &Table,
        key: impl FnOnce() -> Vec<Value>,
    ) -> SqlResult<()> {
        self.savepoints.record(|| Undo::Delete {
            table: table.clone(),
            key: key(),
        })
    }

    /// Under a savepoint, records `row` of `table` as it was before a change or delete
    /// (ROLLBACK TO writes it back).
    pub fn undo_change(&mut self, table: &Table, row: &[Value]) -> SqlResult<()> {
        self.savepoints.record(|| Undo::Restore {
            table: table.clone(),
            row: row.to_vec(),
        })
    }

    /// Sends the operations added since the last batch; when `last` (the statement sends
    /// nothing after it) and the statement ends the transaction, commits with it, in the
    /// same round trip.
    pub fn execute(&mut self, last: bool) -> SqlResult<kista_client::Executed> {
        if let Some(process) = &self.process {
            process.check_killed()?;
        }
        let mode = match self.commits {
            Some(commit) if last && self.commit_held == 0 => {
                self.ended = true;
                commit
            }
            _ => ExecuteMode::NoCommit,
        };
        Ok(self.transaction.execute(mode)?.wait()?)
    }

    /// Adds operations for each of `items` (`add`, which returns how to find their
    /// answers), sending the batch whenever it fills and once every item is added (that
    /// last batch ends the statement's work when `last`); `answered` then sees each item
    /// with what its batch found. Reads of any number of rows go a full batch per round
    /// trip this way.
    pub fn in_batches<I, Ops>(
        &mut self,
        items: &[I],
        last: bool,
        mut add: impl FnMut(&mut Self, &I) -> SqlResult<Ops>,
        mut answered: impl FnMut(&mut Self, &I, Ops, &kista_client::Executed) -> SqlResult<()>,
    ) -> SqlResult<()> {
        let mut waiting = Vec::new();
        let mut batch_start = 0;
        for (n, item) in items.iter().enumerate() {
            waiting.push(add(self, item)?);
            let all_added = n + 1 == items.len();
            if all_added || self.transaction.batch_is_full() {
                let done = self.execute(last && all_added)?;
                for (item, ops) in items[batch_start..=n].iter().zip(waiting.drain(..)) {
                    answered(self, item, ops, &done)?;
                }
                batch_start = n + 1;
            }
        }
        Ok(())
    }

    /// Sends the operations added since the last batch, without ending the transaction,
    /// once they fill one (`Transaction::batch_is_full`): a statement writing a million
    /// rows sends them a batch at a time, never all in one. Only between writes: a read's
    /// result comes back with the batch that carries it.
    pub fn send_when_full(&mut self) -> SqlResult<()> {
        if self.transaction.batch_is_full() {
            self.execute(false)?;
        }
        Ok(())
    }

    /// Ends a statement's writes, which follow its locked reads of their rows. They are
    /// sent at once when the statement ends the transaction (autocommit, committing in the
    /// same round trip) or when the cluster could still refuse them; otherwise they wait
    /// for the transaction's next batch (its next statement's or the commit), which saves a
    /// round trip per UPDATE and DELETE in a transaction (NDB's
    /// `transaction_allow_batching`). A write may wait (`may_wait`) only if, its row locked
    /// by this transaction, the cluster refuses it for nothing the statement could report
    /// (no unique or foreign key, no primary key changes): what is left (a full DataMemory, a
    /// failed node) aborts the transaction, and the next statement or the commit reports
    /// it. The data nodes run a batch's operations on one row in order, so the next
    /// statement's reads see them (datanode test
    /// `a_locked_read_sees_the_writes_its_transaction_made_earlier_in_the_same_batch`).
    /// Runs `work` (when `hold`) with no batch committing: a statement whose triggers
    /// write after its own last batch, or a trigger's statement. The transaction then
    /// commits (under autocommit) when the statement that fired them ends.
    pub fn holding_commit<T>(&mut self, hold: bool, work: impl FnOnce(&mut Self) -> T) -> T {
        self.commit_held += u32::from(hold);
        let result = work(self);
        self.commit_held -= u32::from(hold);
        result
    }

    pub fn finish_writes(&mut self, may_wait: bool) -> SqlResult<()> {
        if may_wait && self.commits.is_none() {
            return Ok(());
        }
        self.execute(true).map(drop)
    }

    /// Notes that the transaction writes `table_id`.
    pub fn wrote(&mut self, table_id: u32) {
        self.written.wrote_table(table_id);
    }

    /// Notes that the transaction inserts or changes the row of `table_id` with primary key
    /// `key`, so its later statements' scans of the table find it. Nothing is kept when this
    /// statement ends the transaction (autocommit): no later statement will read in it, and
    /// a statement writes only after its own reads (`key` makes the key only when kept: a
    /// load's rows made one each for nothing).
    pub fn wrote_row(&mut self, table_id: u32, key: impl FnOnce() -> Vec<Value>) {
        if self.commits.is_none() {
            self.written.wrote_row(table_id, key());
        }
    }

    /// Keys of the rows of `table_id` the transaction inserted or changed.
    pub fn written_keys(&self, table_id: u32) -> &[Vec<Value>] {
        self.written.keys(table_id)
    }

    /// The lock a read of `table_id` takes: `asked`, or shared to see the transaction's
    /// own changes. A table read under a lock counts as used by the transaction
    /// (`superseded.rs`).
    pub fn read_lock(&mut self, table_id: u32, asked: LockKind) -> LockKind {
        let lock = self.lock_to_read(table_id, asked);
        if lock != LockKind::Committed {
            self.written.locked(table_id);
        }
        lock
    }

    /// [`Tx::read_lock`], for a read that takes no lock.
    pub fn lock_to_read(&self, table_id: u32, asked: LockKind) -> LockKind {
        if asked == LockKind::Committed && self.written.wrote(table_id) {
            LockKind::Shared
        } else {
            asked
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(c0 = 0 OR (c1 = 1 AND (c2 = 2 OR (...))))`, `depth` parentheses deep.
    fn nested_where(depth: usize) -> String {
        let mut condition = "1 = 1".to_string();
        for level in 0..depth {
            let joiner = if level % 2 == 0 { "OR" } else { "AND" };
            condition = format!("(c{level} = {level} {joiner} {condition})");
        }
        format!("SELECT 1 FROM t WHERE {condition}")
    }

    #[test]
    fn a_statement_nested_to_the_limit_parses_binds_and_runs_on_a_connection_stack() {
        let worker = std::thread::Builder::new()
            .stack_size(crate::server::CONNECTION_STACK_BYTES)
            .spawn(|| {
                // Each level of parentheses costs the parser a few levels of recursion.
                let deepest = (1..NESTING_DEPTH_MAX)
                    .rev()
                    .find(|&depth| parse(&nested_where(depth)).is_ok())
                    .expect("some depth parses");
                assert!(deepest >= 60, "only {deepest} levels parse");
                let parsed = parse(&nested_where(deepest)).unwrap();
                let Statement::Query(query) = &parsed.statement else {
                    panic!("a query")
                };
                let sqlparser::ast::SetExpr::Select(select) = query.body.as_ref() else {
                    panic!("a select")
                };
                let columns: Vec<crate::expr::ScopeColumn> = (0..deepest)
                    .map(|n| crate::expr::ScopeColumn::new("t", format!("c{n}")))
                    .collect();
                let mut binder = crate::expr::Binder::over(&columns, &[], "where clause");
                let bound =
                    crate::expr::bind(&mut binder, select.selection.as_ref().unwrap()).unwrap();
                // Every column equal to its number: every comparison holds.
                let row: Vec<Value> = (0..deepest as i64).map(Value::Int).collect();
                let ctx = EvalContext::bare();
                let value = crate::expr::eval(&bound, &row, &ctx).unwrap();
                assert_eq!(value, Value::Int(1));
                drop(bound);
                // Deeper than the limit: a syntax error, not a crash.
                let refused = parse(&nested_where(NESTING_DEPTH_MAX * 2)).err();
                assert_eq!(refused.map(|e| e.code), Some(1064));
                deepest
            })
            .unwrap();
        let deepest = worker.join().expect("no stack overflow");
        eprintln!("{deepest} levels of parentheses parse");
    }

    #[test]
    fn a_chain_of_operators_binds_to_the_depth_bound_and_a_longer_one_is_refused() {
        let chain = |terms: usize| format!("SELECT {}", vec!["1"; terms].join(" + "));
        let worker = std::thread::Builder::new()
            .stack_size(crate::server::CONNECTION_STACK_BYTES)
            .spawn(move || {
                let bind_first = |sql: &str| -> SqlResult<crate::expr::Expr> {
                    let parsed = parse(sql)?;
                    let Statement::Query(query) = &parsed.statement else {
                        panic!("a query")
                    };
                    let sqlparser::ast::SetExpr::Select(select) = query.body.as_ref() else {
                        panic!("a select")
                    };
                    let sqlparser::ast::SelectItem::UnnamedExpr(expr) = &select.projection[0]
                    else {
                        panic!("an expression")
                    };
                    crate::expr::bind(&mut crate::expr::Binder::over(&[], &[], "field list"), expr)
                };
                let deepest = crate::expr::EXPRESSION_DEPTH_MAX;
                let bound = bind_first(&chain(deepest)).unwrap();
                let value = crate::expr::eval(&bound, &[], &EvalContext::bare()).unwrap();
                assert_eq!(value, Value::Int(deepest as i64));
                let refused = bind_first(&chain(deepest + 1)).unwrap_err();
                assert_eq!(refused.code, 1064, "{}", refused.message);
                // Far past it: refused from its tokens, before a tree that deep exists.
                let refused = parse(&chain(1_000_000)).err().map(|e| e.code);
                assert_eq!(refused, Some(1064));
            })
            .unwrap();
        worker.join().expect("no stack overflow");
    }

    #[test]
    fn an_update_keeps_its_order_by_which_the_parser_does_not_take() {
        let parsed = parse("UPDATE t SET a = 1 WHERE b > ? ORDER BY c DESC, d LIMIT ?").unwrap();
        let order: Vec<String> = parsed
            .update_order_by
            .iter()
            .map(|o| o.to_string())
            .collect();
        assert_eq!(order, ["c DESC", "d"]);
        assert_eq!(parsed.placeholders.len(), 2);
        assert!(parsed.statement.to_string().ends_with("LIMIT ?"));
        let parsed = parse("update t set a = (select 1 order by 1) order by e;").unwrap();
        assert_eq!(
            parsed.update_order_by.len(),
            1,
            "the subquery's ORDER BY stays"
        );
        assert!(parse("SELECT a FROM t ORDER BY a")
            .unwrap()
            .update_order_by
            .is_empty());
        assert!(parse("UPDATE t SET a = 1")
            .unwrap()
            .update_order_by
            .is_empty());
    }

    fn lock_of(sql: &str) -> Option<sqlparser::ast::LockType> {
        let Statement::Query(query) = parse(sql).unwrap().statement else {
            panic!("not a query: {sql}");
        };
        query.locks.first().map(|l| l.lock_type)
    }

    #[test]
    fn lock_in_share_mode_reads_as_for_share() {
        use sqlparser::ast::LockType;
        assert_eq!(
            lock_of("SELECT c FROM t WHERE id = ? LOCK IN SHARE MODE"),
            Some(LockType::Share)
        );
        assert_eq!(
            lock_of("select c from t lock  in share\nmode ;"),
            Some(LockType::Share)
        );
        assert_eq!(
            lock_of("SELECT c FROM t FOR UPDATE"),
            Some(LockType::Update)
        );
        assert_eq!(lock_of("SELECT 'LOCK IN SHARE MODE'"), None);
        assert_eq!(parse("SELECT ? + ?").unwrap().placeholders.len(), 2);
    }
}
