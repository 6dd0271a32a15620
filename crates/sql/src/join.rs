//! Joins, table by table from the left (inner and left outer). The first table is read
//! through its own access path; each next table is reached by **batched key lookups** when
//! the join conditions give its whole primary key (or a unique index) from the tables
//! before it: the keys of up to [`LOOKUP_BATCH_ROWS`] rows go in one batch, one round trip
//! (NDB's batched key access). Any other table is scanned once, with the conditions on it
//! alone pushed to the data nodes, and matched in the front end: by a **hash join** when
//! the conditions equate integer or string columns of it with expressions over the rows
//! before it (its rows hashed by those columns' values, strings by their weight keys under
//! the comparison's collation; each row before probing with its values), else by trying
//! every pair. Each step's rows are kept for the next (within the statement's row
//! budget); the last step of a streamed result hands them on as it makes them
//! ([`JoinOutput`]).

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use kista_client::filter::Filter;
use kista_client::schema::IndexKind;
use kista_client::types::Value;
use kista_client::{LockKind, ScanSpec};

use kista_client::schema::{Column, TableSchema};
use kista_client::types::{Collation, ColumnType};

use crate::catalog::SqlTable;
use crate::error::{SqlError, SqlResult};
use crate::expr::{derive, eval, CompareOp, Derivation, Expr};
use crate::row_budget::BoundedRows;
use crate::select::FrontTable;
use crate::select::{add_written_keys, read_keys_in};
use crate::session::{Session, Tx};
use crate::value::{fit_exactly, truth};

/// Left rows whose keys one lookup batch carries.
pub const LOOKUP_BATCH_ROWS: usize = 1000;

/// How a joined table's matching rows are found.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup {
    /// Its primary key, one expression per key column over the rows before it.
    PrimaryKey(Vec<Expr>),
    /// A unique index's key, likewise.
    Unique { index: String, key: Vec<Expr> },
    /// Every row (after the pushed conditions), matched in the front end by hashing the
    /// columns ON equates with expressions over the rows before it.
    Hash(Vec<HashedColumn>),
    /// Every row (after the pushed conditions), every pair tried in the front end.
    Scan,
}

/// A column a hash join hashes: ON holds `column = key`, `key` an expression over the
/// rows before the table.
#[derive(Clone, Debug, PartialEq)]
pub struct HashedColumn {
    pub column: usize,
    pub key: Expr,
    /// A string column's comparison collation (whose weight keys are hashed); `None` for
    /// an integer column.
    pub collation: Option<Collation>,
}

/// A table of a join (of FROM): of the cluster, or rows the front end holds (a derived
/// table, a view, `information_schema`), always matched as a scan would be.
#[derive(Clone)]
pub(crate) enum JoinSource {
    Cluster(Arc<SqlTable>),
    Front(FrontTable, TableSchema),
}

impl JoinSource {
    pub fn schema(&self) -> &TableSchema {
        match self {
            JoinSource::Cluster(table) => table.schema(),
            JoinSource::Front(_, schema) => schema,
        }
    }

    /// The column SQL names `name`.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        match self {
            JoinSource::Cluster(table) => table.column_index(name),
            JoinSource::Front(_, schema) => schema.column_index(name),
        }
    }

    /// The columns SQL sees, with their positions.
    pub fn visible_columns(&self) -> Vec<(usize, &Column)> {
        match self {
            JoinSource::Cluster(table) => table.visible_columns().collect(),
            JoinSource::Front(_, schema) => schema.columns.iter().enumerate().collect(),
        }
    }

    /// The cluster table, where it is one.
    pub fn cluster(&self) -> Option<&Arc<SqlTable>> {
        match self {
            JoinSource::Cluster(table) => Some(table),
            JoinSource::Front(..) => None,
        }
    }
}

/// A table joined to the rows before it.
pub struct JoinedTable {
    pub(crate) table: JoinSource,
    /// Where its first column sits in the joined row.
    pub offset: usize,
    /// LEFT JOIN: a row with no match continues with NULLs for this table.
    pub left: bool,
    /// The ON condition, over the joined row (`None`: every pair matches).
    pub on: Option<Expr>,
    pub lookup: Lookup,
    /// Conditions on this table alone, over its own row: pushed to its scan.
    pub pushed: Vec<Expr>,
    /// The first table of a nested join in parentheses: the nest (this table is then
    /// joined as `left` says within the nest: never LEFT).
    pub nest: Option<Box<JoinNest>>,
    /// It belongs to a nest a LEFT JOIN brought, which may give it NULLs.
    pub in_outer_nest: bool,
}

/// A nested join in parentheses (`JOIN (b JOIN c ON ..) ON ..`): its tables pair with
/// each other first, then the pairs that pass `on` are the matches of the rows before;
/// under a LEFT JOIN, a row before with none continues with NULLs for every table of it.
#[derive(Debug)]
pub struct JoinNest {
    /// How many joined tables it holds (its first included), nested nests' included.
    pub tables: usize,
    pub left: bool,
    /// Over the joined row, checked once its last table is joined.
    pub on: Option<Expr>,
}

impl JoinedTable {
    /// Whether a LEFT JOIN (of the table, or of a nest it belongs to) may give it NULLs.
    pub fn nullable(&self) -> bool {
        self.left || self.in_outer_nest
    }

    pub fn describe(&self) -> String {
        let table = self.describe_table();
        match &self.nest {
            None => table,
            Some(nest) => format!(
                "{} of {} tables nested in parentheses, paired first: {table}",
                if nest.left { "left join" } else { "join" },
                nest.tables
            ),
        }
    }

    fn describe_table(&self) -> String {
        let kind = if self.left { "left join" } else { "join" };
        let how = match &self.lookup {
            Lookup::PrimaryKey(_) => "batched primary key lookups".to_string(),
            Lookup::Unique { index, .. } => format!("batched unique lookups on `{index}`"),
            Lookup::Hash(columns) => {
                let names: Vec<&str> = (columns.iter())
                    .map(|h| self.table.schema().columns[h.column].name.as_str())
                    .collect();
                format!(
                    "one scan of all partitions, hash joined on `{}`",
                    names.join("`, `")
                )
            }
            Lookup::Scan => "one scan of all partitions, matched in the front end".to_string(),
        };
        match &self.table {
            JoinSource::Cluster(table) => {
                format!("{kind} {}.{}: {how}", table.database, table.name)
            }
            JoinSource::Front(_, schema) => {
                format!(
                    "{kind} {}: its rows held by the front end, matched there",
                    schema.name
                )
            }
        }
    }
}

/// `joined` (the rows a nest made from rows of `before`, in their order, each beginning
/// with its row) and, in order among them, each row of `before` that made none continued
/// with NULLs for the nest's `width` columns. The rows a nest makes depend on the values
/// of the row before only, so equal rows next to each other are taken together.
pub(crate) fn with_unmatched(
    before: Vec<Vec<Value>>,
    joined: Vec<Vec<Value>>,
    width: usize,
) -> Vec<Vec<Value>> {
    let mut out = Vec::with_capacity(joined.len().max(before.len()));
    let mut joined = joined.into_iter().peekable();
    let mut at = 0;
    while at < before.len() {
        let row = &before[at];
        let equal = (before[at..].iter())
            .take_while(|other| copies(other, row))
            .count();
        let mut made_any = false;
        while let Some(made) = joined.next_if(|made| copies(&made[..row.len()], row)) {
            out.push(made);
            made_any = true;
        }
        if !made_any {
            for _ in 0..equal {
                let mut unmatched = Vec::with_capacity(row.len() + width);
                unmatched.extend_from_slice(row);
                unmatched.resize(row.len() + width, Value::Null);
                out.push(unmatched);
            }
        }
        at += equal;
    }
    assert!(
        joined.next().is_none(),
        "every row a nest made begins with a row before it, in their order"
    );
    out
}

/// Whether two rows hold the same values bit for bit (one copied from the other: a float
/// NaN equals itself here).
fn copies(a: &[Value], b: &[Value]) -> bool {
    let same = |a: &Value, b: &Value| match (a, b) {
        (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits(),
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (a, b) => a == b,
    };
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
}

/// `Column(target) = e` (either way round) where `e` reads only positions before `before`:
/// `e`, and the collation strings compare under there.
fn equality_for(conjuncts: &[Expr], target: usize, before: usize) -> Option<(Expr, Collation)> {
    let is_target = |e: &Expr| matches!(e, Expr::Column(t) if *t == target);
    equality_where(conjuncts, is_target, before)
}

/// Like [`equality_for`], the column also under a `COLLATE` (which the comparison's
/// collation then is): for a hash join, not for a key lookup, whose key compares under
/// the column's own collation.
fn collated_equality_for(
    conjuncts: &[Expr],
    target: usize,
    before: usize,
) -> Option<(Expr, Collation)> {
    let is_target = |e: &Expr| match e {
        Expr::Collate(inner, _) => matches!(inner.as_ref(), Expr::Column(t) if *t == target),
        other => matches!(other, Expr::Column(t) if *t == target),
    };
    equality_where(conjuncts, is_target, before)
}

/// `target = e` (either way round, `is_target` telling the target side) where `e` reads
/// only positions before `before`.
fn equality_where(
    conjuncts: &[Expr],
    is_target: impl Fn(&Expr) -> bool,
    before: usize,
) -> Option<(Expr, Collation)> {
    conjuncts.iter().find_map(|c| {
        let Expr::Compare(CompareOp::Eq, left, right, collation) = c else {
            return None;
        };
        let earlier = |e: &Expr| e.column_span().is_none_or(|(_, high)| high < before);
        match (left.as_ref(), right.as_ref()) {
            (t, e) | (e, t) if is_target(t) && earlier(e) => Some((e.clone(), *collation)),
            _ => None,
        }
    })
}

/// How to reach `table` (at `offset` of the row; `collation` tells the earlier columns'
/// collations, `None` for a column of no strings) from the rows before it, under
/// `conjuncts`.
pub fn choose_lookup(
    table: &SqlTable,
    (offset, collation): (usize, &dyn Fn(usize) -> Option<Collation>),
    conjuncts: &[Expr],
) -> Lookup {
    let key_for = |columns: &[usize]| -> Option<Vec<Expr>> {
        columns
            .iter()
            .map(|&c| Some(equality_for(conjuncts, offset + c, offset)?.0))
            .collect()
    };
    if let Some(key) = key_for(&table.schema().primary_key) {
        return Lookup::PrimaryKey(key);
    }
    for (_, index) in table
        .table
        .indexes()
        .filter(|(_, i)| i.kind == IndexKind::Unique)
    {
        if let Some(key) = key_for(&index.columns) {
            return Lookup::Unique {
                index: index.name.clone(),
                key,
            };
        }
    }
    hash_lookup(table, (offset, collation), conjuncts)
}

/// A hash join on the integer and string columns of `table` (at `offset`) that
/// `conjuncts` equate with expressions over the rows before it; a plain scan when there
/// are none. Integers equal by value and strings by weight key under the comparison's
/// collation, so a hash finds what `=` finds between two values of the column's kind;
/// other kinds (and columns whose SQL type storage lacks, JSON, ENUM) are left to `=`,
/// as is a string column equated with an expression that is no string (an integer
/// column: MySQL compares them as numbers).
fn hash_lookup(
    table: &SqlTable,
    (offset, earlier_collation): (usize, &dyn Fn(usize) -> Option<Collation>),
    conjuncts: &[Expr],
) -> Lookup {
    let is_string = |key: &Expr| {
        derive(key, earlier_collation)
            .is_ok_and(|d| d.coercibility != Derivation::NONE.coercibility)
    };
    let columns: Vec<HashedColumn> = (table.schema().columns.iter().enumerate())
        .filter(|&(c, _)| table.sql_type(c).is_none())
        .filter_map(|(c, column)| {
            let (key, collation) = collated_equality_for(conjuncts, offset + c, offset)?;
            let collation = match column.column_type {
                ColumnType::Int { .. } => None,
                strings if strings.holds_strings() && is_string(&key) => Some(collation),
                _ => return None,
            };
            Some(HashedColumn {
                column: c,
                key,
                collation,
            })
        })
        .collect();
    if columns.is_empty() {
        return Lookup::Scan;
    }
    Lookup::Hash(columns)
}

/// Extends `rows` (the joined rows so far) by `joined`, in `tx`, keeping only the rows
/// that pass `filter` (the WHERE, given with the last joined table: a row failing it is
/// never held, so a large join that the WHERE cuts down never takes the memory of all its
/// pairs).
pub fn extend(
    tx: &mut Tx,
    session: &Session,
    rows: &[Vec<Value>],
    step: (&JoinedTable, Option<&Expr>),
    params: &[Value],
    pushed_filter: impl Fn(&[Expr]) -> Option<Filter>,
) -> SqlResult<Vec<Vec<Value>>> {
    let mut kept = joined_rows(session);
    extend_into(tx, session, rows, step, params, pushed_filter, &mut kept)?;
    Ok(kept.rows)
}

/// The rows a join makes, kept within the statement's budget.
pub(crate) fn joined_rows(session: &Session) -> BoundedRows {
    BoundedRows::new(session.catalog.result_bytes_max, "The join would produce")
}

/// Where the rows a join step makes go: kept ([`BoundedRows`], for the next step or a
/// result built whole) or handed on as they are made (a streamed result's last step),
/// until `take` breaks.
pub(crate) trait JoinOutput {
    fn take(&mut self, row: Vec<Value>) -> SqlResult<ControlFlow<()>>;
}

impl JoinOutput for BoundedRows {
    fn take(&mut self, row: Vec<Value>) -> SqlResult<ControlFlow<()>> {
        self.push(row)?;
        Ok(ControlFlow::Continue(()))
    }
}

impl<F: FnMut(Vec<Value>) -> SqlResult<ControlFlow<()>>> JoinOutput for F {
    fn take(&mut self, row: Vec<Value>) -> SqlResult<ControlFlow<()>> {
        self(row)
    }
}

/// [`extend`], the rows going to `out` as they are made; it stops once `out` breaks.
pub(crate) fn extend_into(
    tx: &mut Tx,
    session: &Session,
    rows: &[Vec<Value>],
    (joined, filter): (&JoinedTable, Option<&Expr>),
    params: &[Value],
    pushed_filter: impl Fn(&[Expr]) -> Option<Filter>,
    out: &mut dyn JoinOutput,
) -> SqlResult<()> {
    let variable = |name: &str| session.variable(name);
    let ctx = session.eval_context(params, &[], &variable);
    let mut joiner = Joiner {
        joined,
        width: joined.table.schema().columns.len(),
        ctx: &ctx,
        filter,
        out,
        stopped: false,
    };
    match &joined.lookup {
        Lookup::PrimaryKey(exprs) | Lookup::Unique { key: exprs, .. } => {
            extend_by_key_lookups(tx, rows, exprs, &mut joiner)
        }
        Lookup::Hash(_) | Lookup::Scan => {
            let right_rows = scanned_rows(tx, session, joined, &ctx, pushed_filter)?;
            extend_by_matching(session, rows, &right_rows, &mut joiner)
        }
    }
}

/// Pairs each of `rows` with the rows of the scanned `right_rows` that pass ON, found by
/// the hash of their hashed columns or by trying every one.
fn extend_by_matching(
    session: &Session,
    rows: &[Vec<Value>],
    right_rows: &[Vec<Value>],
    joiner: &mut Joiner,
) -> SqlResult<()> {
    let hashed = match &joiner.joined.lookup {
        Lookup::Hash(columns) => Some((HashedRows::new(right_rows, columns), columns)),
        _ => None,
    };
    let mut probe = Vec::new();
    // Matching in the front end can take long without a round trip: KILL and
    // max_execution_time are checked every so many pairs.
    let mut steps: usize = 0;
    for left in rows {
        let candidates = match &hashed {
            Some((hashed, columns)) => hashed.candidates(columns, left, joiner.ctx, &mut probe)?,
            None => Candidates::All,
        };
        let mut matched = false;
        for position in candidates.positions(right_rows.len()) {
            if steps % crate::processes::ROWS_PER_KILL_CHECK == 0 {
                if let Some(process) = &session.process {
                    process.check_killed()?;
                }
            }
            steps = steps.wrapping_add(1);
            matched |= joiner.pair(left, &right_rows[position])?;
            if joiner.stopped {
                return Ok(());
            }
        }
        joiner.unless_matched(matched, left)?;
        if joiner.stopped {
            return Ok(());
        }
    }
    Ok(())
}

/// A joined table's scanned rows by their values in the hashed columns.
struct HashedRows {
    /// The hashed columns' values (`push_hash_key`) → the rows (positions, in scan order)
    /// that hold them; hashed by foldhash, seeded per map (the values are user data).
    by_key: HashMap<Vec<u8>, Vec<usize>, foldhash::fast::RandomState>,
}

impl HashedRows {
    fn new(rows: &[Vec<Value>], columns: &[HashedColumn]) -> Self {
        let mut by_key: HashMap<_, Vec<usize>, _> = HashMap::default();
        let mut key = Vec::new();
        'rows: for (position, row) in rows.iter().enumerate() {
            key.clear();
            for hashed in columns {
                // A row with NULL in a hashed column equals nothing (a column of the
                // kinds hashed holds nothing else).
                if !push_hash_key(&row[hashed.column], hashed.collation, &mut key) {
                    continue 'rows;
                }
            }
            by_key.entry(key.clone()).or_default().push(position);
        }
        Self { by_key }
    }

    /// The rows that may pair with `left`: those whose hashed columns hold the values of
    /// the keys over it (`probe` holds them); none when one of them is NULL (`=` is never
    /// true then); every row when one is of another kind than its column (a string equals
    /// an integer, a number a string, by MySQL's conversions, which ON then decides).
    fn candidates(
        &self,
        columns: &[HashedColumn],
        left: &[Value],
        ctx: &crate::expr::EvalContext,
        probe: &mut Vec<u8>,
    ) -> SqlResult<Candidates<'_>> {
        probe.clear();
        for hashed in columns {
            let value = eval(&hashed.key, left, ctx)?;
            if value.is_null() {
                return Ok(Candidates::These(&[]));
            }
            if !push_hash_key(&value, hashed.collation, probe) {
                return Ok(Candidates::All);
            }
        }
        let found = self
            .by_key
            .get(probe.as_slice())
            .map_or(&[][..], Vec::as_slice);
        Ok(Candidates::These(found))
    }
}

/// Appends `value`'s part of a hash key: an integer (whatever its signedness) for an
/// integer column (`collation` `None`), a string's weight key under `collation` for a
/// string column. `false`: the value is NULL or of another kind, and hashes to nothing.
fn push_hash_key(value: &Value, collation: Option<Collation>, key: &mut Vec<u8>) -> bool {
    match (value, collation) {
        (Value::Int(i), None) => key.extend_from_slice(&i128::from(*i).to_le_bytes()),
        (Value::UInt(u), None) => key.extend_from_slice(&i128::from(*u).to_le_bytes()),
        (Value::Bytes(text), Some(collation)) => collation.length_prefixed_weight_key(text, key),
        _ => return false,
    }
    true
}

/// The right rows a left row may pair with.
enum Candidates<'a> {
    /// These positions, in scan order.
    These(&'a [usize]),
    /// Every row.
    All,
}

impl Candidates<'_> {
    /// Their positions among `count` rows, in scan order.
    fn positions(&self, count: usize) -> impl Iterator<Item = usize> + '_ {
        let (listed, every): (&[usize], _) = match self {
            Candidates::These(positions) => (positions, 0..0),
            Candidates::All => (&[], 0..count),
        };
        listed.iter().copied().chain(every)
    }
}

/// Builds the joined rows of one joined table: a row so far with a row of the table that
/// passes ON, or, for a LEFT JOIN row that matched none, with NULLs.
struct Joiner<'a> {
    joined: &'a JoinedTable,
    /// The joined table's columns.
    width: usize,
    ctx: &'a crate::expr::EvalContext<'a>,
    /// The WHERE, which every row kept must pass.
    filter: Option<&'a Expr>,
    out: &'a mut dyn JoinOutput,
    /// `out` wants no more rows.
    stopped: bool,
}

impl Joiner<'_> {
    /// Adds `left` with `right` if they pass ON; whether they did.
    fn pair(&mut self, left: &[Value], right: &[Value]) -> SqlResult<bool> {
        let mut row = Vec::with_capacity(left.len() + self.width);
        row.extend_from_slice(left);
        row.extend_from_slice(right);
        if let Some(on) = &self.joined.on {
            if truth(&eval(on, &row, self.ctx)?) != Some(true) {
                return Ok(false);
            }
        }
        self.push(row)?;
        Ok(true)
    }

    /// For a LEFT JOIN, adds `left` with NULLs when it matched no row.
    fn unless_matched(&mut self, matched: bool, left: &[Value]) -> SqlResult<()> {
        if matched || !self.joined.left {
            return Ok(());
        }
        let mut row = Vec::with_capacity(left.len() + self.width);
        row.extend_from_slice(left);
        row.resize(left.len() + self.width, Value::Null);
        self.push(row)
    }

    fn push(&mut self, row: Vec<Value>) -> SqlResult<()> {
        if let Some(filter) = self.filter {
            if truth(&eval(filter, &row, self.ctx)?) != Some(true) {
                return Ok(());
            }
        }
        self.stopped = self.out.take(row)?.is_break();
        Ok(())
    }
}

/// Batched key lookups: the keys `exprs` give for the rows so far, `LOOKUP_BATCH_ROWS`
/// rows' keys in one round trip.
fn extend_by_key_lookups(
    tx: &mut Tx,
    rows: &[Vec<Value>],
    exprs: &[Expr],
    joiner: &mut Joiner,
) -> SqlResult<()> {
    let joined = joiner.joined;
    // Only a table of the cluster is looked up by key (`choose_lookup`).
    let table = joined
        .table
        .cluster()
        .ok_or_else(|| SqlError::not_supported("a key lookup in rows the front end holds"))?;
    let key_columns: Vec<usize> = match &joined.lookup {
        Lookup::Unique { index, .. } => table.table.index(index)?.1.columns.clone(),
        _ => table.schema().primary_key.clone(),
    };
    for batch in rows.chunks(LOOKUP_BATCH_ROWS) {
        // Every key first: one that cannot be built fails the batch before any read.
        let keys = (batch.iter())
            .map(|left| key_of(table, &key_columns, exprs, left, joiner.ctx))
            .collect::<SqlResult<Vec<_>>>()?;
        let mut ops = Vec::with_capacity(batch.len());
        for key in keys {
            ops.push(match key {
                None => None,
                Some(key) => Some(match &joined.lookup {
                    Lookup::Unique { index, .. } => tx.transaction.read_unique(
                        &table.table,
                        index,
                        &key,
                        LockKind::Committed,
                        Vec::new(),
                    )?,
                    _ => {
                        let lock = tx.read_lock(table.table.id, LockKind::Committed);
                        tx.transaction.read(&table.table, &key, lock)?
                    }
                }),
            });
        }
        let done = if ops.iter().any(Option::is_some) {
            Some(tx.execute(false)?)
        } else {
            None
        };
        for (left, op) in batch.iter().zip(ops) {
            let found = match (&done, op) {
                (Some(done), Some(op)) => done.row(op),
                _ => None,
            };
            let matched = match found {
                Some(right) => joiner.pair(left, right)?,
                None => false,
            };
            // (a pair that stopped the output matched: this adds nothing then)
            joiner.unless_matched(matched, left)?;
            if joiner.stopped {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Every row of the joined table that passes its own conditions: a scan of a cluster
/// table (those conditions pushed down), or the rows the front end holds.
fn scanned_rows(
    tx: &mut Tx,
    session: &Session,
    joined: &JoinedTable,
    ctx: &crate::expr::EvalContext,
    pushed_filter: impl Fn(&[Expr]) -> Option<Filter>,
) -> SqlResult<Vec<Vec<Value>>> {
    let scanned = match &joined.table {
        JoinSource::Cluster(table) => scan_joined(tx, session, table, joined, pushed_filter)?,
        JoinSource::Front(FrontTable::Derived(rows), _) => rows.as_ref().clone(),
        JoinSource::Front(FrontTable::System(system), _) => system.rows(session)?,
    };
    let mut right_rows = Vec::new();
    for row in scanned {
        let keep = joined.pushed.iter().try_fold(true, |keep, condition| {
            Ok::<_, SqlError>(keep && truth(&eval(condition, &row, ctx)?) == Some(true))
        })?;
        if keep {
            right_rows.push(row);
        }
    }
    Ok(right_rows)
}

/// A joined table of the cluster read whole, its conditions alone pushed to the scan.
fn scan_joined(
    tx: &mut Tx,
    session: &Session,
    table: &Arc<SqlTable>,
    joined: &JoinedTable,
    pushed_filter: impl Fn(&[Expr]) -> Option<Filter>,
) -> SqlResult<Vec<Vec<Value>>> {
    let mut spec = ScanSpec::full();
    if let Some(filter) = pushed_filter(&joined.pushed) {
        spec = spec.filter(filter);
    }
    let table_id = table.table.id;
    let lock = tx.read_lock(table_id, LockKind::Committed);
    let scanned = if lock == LockKind::Committed {
        let scan = session.catalog.client().scan(&table.table, spec)?;
        collect_bounded(session, scan)?
    } else {
        // The transaction wrote the table: the scan finds keys, the transaction's own
        // rows join them, and all are read under the lock that shows its versions.
        let spec = spec.columns(table.key_columns());
        let scan = session.catalog.client().scan(&table.table, spec)?;
        let mut keys = collect_bounded(session, scan)?;
        add_written_keys(tx, table, &mut keys);
        read_keys_in(tx, table, &keys, lock, &[], false)?
    };
    Ok(scanned)
}

/// A joined table's scanned rows, refused past the front end's limits.
fn collect_bounded(
    session: &Session,
    scan: impl Iterator<Item = Result<Vec<Value>, kista_client::ClientError>>,
) -> SqlResult<Vec<Vec<Value>>> {
    let mut rows = BoundedRows::new(session.catalog.result_bytes_max, "The join would examine");
    for row in scan {
        rows.push(row?)?;
    }
    Ok(rows.rows)
}

/// The key `exprs` give over `row`, each value made to fit its key column exactly; `None`
/// when one is NULL or cannot equal any key value (then no row matches).
pub fn key_of(
    table: &SqlTable,
    columns: &[usize],
    exprs: &[Expr],
    row: &[Value],
    ctx: &crate::expr::EvalContext,
) -> SqlResult<Option<Vec<Value>>> {
    let mut key = Vec::with_capacity(exprs.len());
    for (&column, expr) in columns.iter().zip(exprs) {
        let value = eval(expr, row, ctx)?;
        match fit_exactly(&value, table.schema().columns[column].column_type) {
            Some(fitted) => key.push(fitted),
            None => return Ok(None),
        }
    }
    Ok(Some(key))
}
