//! What a query's FROM names: nothing, one table (of the cluster, `information_schema`,
//! derived, a view), or tables joined. Joins are `[INNER | CROSS] JOIN`, `LEFT [OUTER]
//! JOIN`, `RIGHT [OUTER] JOIN` (as the first join of a FROM item: `A RIGHT JOIN B` runs as
//! `B LEFT JOIN A`, `*` still listing A's columns first), `ON`, `USING (columns)` and
//! `NATURAL` (an `ON` of equal columns; the second table's copies are reached only
//! qualified and `*` lists each once, first, as MySQL coalesces them), and nested joins in
//! parentheses: first in FROM they are their tables written out; joined, they are a
//! [`Nest`] (`a LEFT JOIN (b JOIN c ON ..) ON ..`: b and c pair first, and a row of a
//! with no pair gets NULLs for both).

use std::borrow::Cow;
use std::sync::Arc;

use sqlparser::ast::{self, TableFactor};

use kista_client::schema::{Column, TableSchema};

use super::FrontTable;
use crate::catalog::{BindCatalog, SqlTable};
use crate::error::{SqlError, SqlResult};
use crate::expr::ScopeColumn;
use crate::information_schema::SystemTable;
use crate::join::JoinSource;
use crate::output::type_of_value;
use crate::subquery::Met;

/// What a query's FROM names: nothing, one table (of the cluster, or one the front end
/// holds), or tables joined (`items`, in the order they run; `table` is then the first).
pub(super) struct BoundFrom<'q> {
    pub table: Option<(Arc<SqlTable>, String)>,
    pub system: Option<(FrontTable, TableSchema, String)>,
    pub items: Vec<FromItem<'q>>,
    /// `items` in the order FROM wrote them (a RIGHT JOIN runs its tables swapped).
    written: Vec<usize>,
    /// The columns USING and NATURAL joins kept (item, name), which `*` lists first.
    coalesced: Vec<(usize, String)>,
}

/// A table of FROM: its name in the query, whether a LEFT JOIN brought it, its ON.
pub(super) struct FromItem<'q> {
    pub table: JoinSource,
    pub alias: String,
    pub left: bool,
    pub on: Option<Cow<'q, ast::Expr>>,
    /// Its columns a USING or NATURAL join coalesced away (reached only qualified).
    qualified_only: Vec<String>,
    /// The first table of a nested join brought by a JOIN: the nest's.
    pub nest: Option<Nest<'q>>,
    /// It belongs to a nest a LEFT JOIN brought, which may give it NULLs.
    pub in_outer_nest: bool,
}

/// A nested join in parentheses, joined: `JOIN (b JOIN c ON ..) ON ..`. Its tables (the
/// item holding it and the next ones) pair with each other first, then the pairs that pass
/// `on` join the rows before; under a LEFT JOIN, a row before with none continues with
/// NULLs for every table of the nest.
pub(super) struct Nest<'q> {
    /// How many of FROM's items it holds, nested nests' included.
    pub tables: usize,
    pub left: bool,
    pub on: Option<&'q ast::Expr>,
}

impl FromItem<'_> {
    fn new(table: JoinSource, alias: String) -> Self {
        Self {
            table,
            alias,
            left: false,
            on: None,
            qualified_only: Vec::new(),
            nest: None,
            in_outer_nest: false,
        }
    }

    fn has_column(&self, name: &str) -> bool {
        self.table.column_index(name).is_some()
    }
}

impl BoundFrom<'_> {
    /// The columns names may reach, every table's in order, qualified by its alias.
    pub fn scope(&self) -> Vec<ScopeColumn> {
        let scope_of = |schema: &TableSchema, alias: &str| -> Vec<ScopeColumn> {
            schema
                .columns
                .iter()
                .map(|c| ScopeColumn::of(alias, c))
                .collect()
        };
        match (&self.table, &self.system) {
            _ if !self.items.is_empty() => self
                .items
                .iter()
                .flat_map(|item| {
                    scope_of(item.table.schema(), &item.alias)
                        .into_iter()
                        .map(|mut column| {
                            column.qualified_only = item
                                .qualified_only
                                .iter()
                                .any(|c| c.eq_ignore_ascii_case(&column.name));
                            column
                        })
                })
                .collect(),
            (Some((table, alias)), _) => scope_of(table.schema(), alias),
            (None, Some((_, schema, alias))) => scope_of(schema, alias),
            (None, None) => Vec::new(),
        }
    }

    /// The scope positions `*` lists, in order (`None`: every column SQL sees, in scope
    /// order): the columns joins coalesced first, then each table's in FROM's order.
    pub fn star(&self) -> Option<Vec<usize>> {
        let swapped = self.written.iter().enumerate().any(|(i, &w)| i != w);
        if self.coalesced.is_empty() && !swapped {
            return None;
        }
        let mut offsets = Vec::with_capacity(self.items.len());
        let mut offset = 0;
        for item in &self.items {
            offsets.push(offset);
            offset += item.table.schema().columns.len();
        }
        let position = |item: usize, name: &str| {
            self.items[item]
                .table
                .column_index(name)
                .map(|c| offsets[item] + c)
        };
        let mut star: Vec<usize> = self
            .coalesced
            .iter()
            .filter_map(|(item, name)| position(*item, name))
            .collect();
        for &item in &self.written {
            let from = &self.items[item];
            for (column, definition) in from.table.visible_columns() {
                let at = offsets[item] + column;
                let away = from
                    .qualified_only
                    .iter()
                    .any(|c| c.eq_ignore_ascii_case(&definition.name));
                if !away && !star.contains(&at) {
                    star.push(at);
                }
            }
        }
        Some(star)
    }
}

pub(super) fn bind_from<'q>(
    session: &dyn BindCatalog,
    from: &'q [ast::TableWithJoins],
) -> SqlResult<BoundFrom<'q>> {
    let mut bound = BoundFrom {
        table: None,
        system: None,
        items: Vec::new(),
        written: Vec::new(),
        coalesced: Vec::new(),
    };
    // (A nested join is never a lone table: MySQL's parser wants a join inside.)
    let alone = |item: &ast::TableWithJoins| {
        item.joins.is_empty() && !matches!(item.relation, TableFactor::NestedJoin { .. })
    };
    match from {
        [] => {}
        [only] if alone(only) && is_dual(&only.relation) => {}
        [only] if alone(only) => match only_table_of(session, &only.relation)? {
            OnlyTable::Front(found) => bound.system = Some(found),
            OnlyTable::Cluster(table) => bound.table = Some(table),
        },
        items => {
            for item in items {
                add_item(session, &mut bound, &item.relation, &item.joins)?;
            }
            if let JoinSource::Cluster(first) = &bound.items[0].table {
                bound.table = Some((first.clone(), bound.items[0].alias.clone()));
            }
        }
    }
    Ok(bound)
}

/// Adds a FROM item, `relation` and its `joins`. A nested join in parentheses first in an
/// item is the same as its tables written out there: `(a JOIN b ON x) LEFT JOIN c ON y` is
/// `a JOIN b ON x LEFT JOIN c ON y`, joins running from the left.
fn add_item<'q>(
    session: &dyn BindCatalog,
    bound: &mut BoundFrom<'q>,
    relation: &'q TableFactor,
    joins: &'q [ast::Join],
) -> SqlResult<()> {
    let first_of_item = bound.items.len();
    if let TableFactor::NestedJoin {
        table_with_joins,
        alias,
    } = relation
    {
        refuse_nest_alias(alias)?;
        add_item(
            session,
            bound,
            &table_with_joins.relation,
            &table_with_joins.joins,
        )?;
    } else {
        let (table, alias) = only_table_of(session, relation)?.joined();
        bound.written.push(bound.items.len());
        bound.items.push(FromItem::new(table, alias));
    }
    for join in joins {
        join_one(session, bound, join, first_of_item)?;
    }
    Ok(())
}

/// `(a JOIN b) AS n`: MySQL refuses an alias on a nested join too (1064).
fn refuse_nest_alias(alias: &Option<ast::TableAlias>) -> SqlResult<()> {
    match alias {
        Some(alias) => Err(SqlError::syntax(format!(
            "a nested join in parentheses takes no alias (`{}`)",
            alias.name
        ))),
        None => Ok(()),
    }
}

/// A JOIN of a nested join in parentheses (see [`Nest`]): its tables are added as items,
/// the first holding the nest.
fn join_nest<'q>(
    session: &dyn BindCatalog,
    bound: &mut BoundFrom<'q>,
    nested: &'q ast::TableWithJoins,
    (left, right, constraint): (bool, bool, &'q ast::JoinConstraint),
) -> SqlResult<()> {
    let on = match constraint {
        ast::JoinConstraint::On(on) => Some(on),
        ast::JoinConstraint::None => None,
        ast::JoinConstraint::Using(_) | ast::JoinConstraint::Natural => {
            return Err(SqlError::not_supported(
                "USING or NATURAL with a nested join",
            ))
        }
    };
    if right {
        return Err(SqlError::not_supported(
            "RIGHT JOIN of a nested join (write it as a LEFT JOIN)",
        ));
    }
    let head = bound.items.len();
    add_item(session, bound, &nested.relation, &nested.joins)?;
    let tables = bound.items.len() - head;
    bound.items[head].nest = Some(Nest { tables, left, on });
    if left {
        for item in &mut bound.items[head..] {
            item.in_outer_nest = true;
        }
    }
    Ok(())
}

/// How a JOIN joins: whether it keeps unmatched rows of the left side (LEFT) or of the
/// right side (RIGHT), and its constraint.
fn join_kind(operator: &ast::JoinOperator) -> SqlResult<(bool, bool, &ast::JoinConstraint)> {
    use ast::JoinOperator as J;
    Ok(match operator {
        J::Join(c) | J::Inner(c) | J::CrossJoin(c) => (false, false, c),
        J::Left(c) | J::LeftOuter(c) => (true, false, c),
        J::Right(c) | J::RightOuter(c) => (false, true, c),
        other => {
            return Err(SqlError::not_supported(
                format!("{other:?}")
                    .split('(')
                    .next()
                    .unwrap_or("join")
                    .to_uppercase()
                    + " JOIN",
            ))
        }
    })
}

/// Adds one JOIN of a FROM item whose first table is `items[first_of_item]`.
fn join_one<'q>(
    session: &dyn BindCatalog,
    bound: &mut BoundFrom<'q>,
    join: &'q ast::Join,
    first_of_item: usize,
) -> SqlResult<()> {
    let (left, right, constraint) = join_kind(&join.join_operator)?;
    if let TableFactor::NestedJoin {
        table_with_joins,
        alias,
    } = &join.relation
    {
        refuse_nest_alias(alias)?;
        return join_nest(session, bound, table_with_joins, (left, right, constraint));
    }
    let (table, alias) = only_table_of(session, &join.relation)?.joined();
    let mut joined = FromItem::new(table, alias);
    let using = match constraint {
        ast::JoinConstraint::On(on) => {
            joined.on = Some(Cow::Borrowed(on));
            Vec::new()
        }
        ast::JoinConstraint::None => Vec::new(),
        ast::JoinConstraint::Using(names) => names
            .iter()
            .map(|n| n.to_string().trim_matches('`').to_string())
            .collect(),
        ast::JoinConstraint::Natural => {
            let before = &bound.items[first_of_item..];
            joined
                .table
                .visible_columns()
                .into_iter()
                .map(|(_, c)| c.name.clone())
                .filter(|name| before.iter().any(|item| item.has_column(name)))
                .collect()
        }
    };
    let here = bound.items.len();
    if !using.is_empty() {
        let (on, away) = using_condition(bound, &joined, first_of_item, &using, right)?;
        joined.on = Some(Cow::Owned(on));
        joined.qualified_only = away;
    }
    if !right {
        joined.left = left;
        bound.written.push(here);
        bound.items.push(joined);
        return Ok(());
    }
    // `A RIGHT JOIN B` runs as `B LEFT JOIN A`: only a lone table can be swapped.
    if here != first_of_item + 1 {
        return Err(SqlError::not_supported(
            "RIGHT JOIN after another join (write it as a LEFT JOIN)",
        ));
    }
    let mut first = std::mem::replace(&mut bound.items[first_of_item], joined);
    first.left = true;
    first.on = bound.items[first_of_item].on.take();
    for kept in bound.coalesced.iter_mut().filter(|(item, _)| *item == here) {
        kept.0 = first_of_item;
    }
    let written = bound.written.len() - 1;
    bound.written[written] = here;
    bound.written.push(first_of_item);
    bound.items.push(first);
    Ok(())
}

/// `USING (a, b)` of the table `joined` as `left.a = joined.a AND ...`, `left` being the
/// one table of the item's earlier ones with the column (MySQL's 1052 if several have it,
/// 1054 if none does). The kept column (the left one, or the right one of a RIGHT JOIN)
/// is noted for `*`, the other reached only qualified: returns the condition and the
/// joined table's columns reached only qualified.
fn using_condition(
    bound: &mut BoundFrom,
    joined: &FromItem,
    first_of_item: usize,
    using: &[String],
    right: bool,
) -> SqlResult<(ast::Expr, Vec<String>)> {
    let here = bound.items.len();
    let mut condition: Option<ast::Expr> = None;
    let mut away = Vec::new();
    for name in using {
        let unknown = || SqlError::unknown_column(name, "from clause");
        if !joined.has_column(name) {
            return Err(unknown());
        }
        let mut having = (first_of_item..here).filter(|&i| bound.items[i].has_column(name));
        let left = match (having.next(), having.next()) {
            (Some(item), None) => item,
            (Some(_), Some(_)) => {
                return Err(SqlError::new(
                    1052,
                    "23000",
                    format!("Column '{name}' in from clause is ambiguous"),
                ))
            }
            (None, _) => return Err(unknown()),
        };
        let column = |alias: &str| {
            ast::Expr::CompoundIdentifier(vec![ast::Ident::new(alias), ast::Ident::new(name)])
        };
        let equal = ast::Expr::BinaryOp {
            left: Box::new(column(&bound.items[left].alias)),
            op: ast::BinaryOperator::Eq,
            right: Box::new(column(&joined.alias)),
        };
        condition = Some(match condition {
            None => equal,
            Some(before) => ast::Expr::BinaryOp {
                left: Box::new(before),
                op: ast::BinaryOperator::And,
                right: Box::new(equal),
            },
        });
        if right {
            bound.coalesced.push((here, name.clone()));
            bound.items[left].qualified_only.push(name.clone());
        } else {
            bound.coalesced.push((left, name.clone()));
            away.push(name.clone());
        }
    }
    let condition = condition.ok_or_else(|| SqlError::syntax("USING needs a column"))?;
    Ok((condition, away))
}

/// The one table a FROM names: a table of the cluster, or one whose rows the front end
/// has (its schema and alias beside it).
enum OnlyTable {
    Cluster((Arc<SqlTable>, String)),
    Front((FrontTable, TableSchema, String)),
}

impl OnlyTable {
    /// As a table of a join, with its alias.
    fn joined(self) -> (JoinSource, String) {
        match self {
            OnlyTable::Cluster((table, alias)) => (JoinSource::Cluster(table), alias),
            OnlyTable::Front((front, schema, alias)) => (JoinSource::Front(front, schema), alias),
        }
    }
}

/// `FROM DUAL`: MySQL's name for no table.
fn is_dual(relation: &TableFactor) -> bool {
    matches!(relation, TableFactor::Table { name, alias: None, .. }
        if name.0.len() == 1 && name.to_string().eq_ignore_ascii_case("dual"))
}

/// A FROM item standing alone: derived, `information_schema`, a table of the cluster or
/// else a view (looked up only when no table has the name).
fn only_table_of(session: &dyn BindCatalog, relation: &TableFactor) -> SqlResult<OnlyTable> {
    if let TableFactor::Derived {
        subquery, alias, ..
    } = relation
    {
        let alias = alias.as_ref().map(|a| a.name.value.as_str());
        return derived_table_of(session, subquery, alias, None).map(OnlyTable::Front);
    }
    if let Some((system, schema, alias)) = system_table_of(session, relation)? {
        return Ok(OnlyTable::Front((
            FrontTable::System(system),
            schema,
            alias,
        )));
    }
    match table_of(session, relation) {
        Ok(table) => Ok(OnlyTable::Cluster(table)),
        Err(missing) if missing.code == 1146 => {
            view_of(session, relation, missing).map(OnlyTable::Front)
        }
        Err(error) => Err(error),
    }
}

/// The view a FROM item names, run as a derived table named by its alias or its own
/// name; `missing` (no table has the name) where no view does either.
fn view_of(
    session: &dyn BindCatalog,
    relation: &TableFactor,
    missing: SqlError,
) -> SqlResult<(FrontTable, TableSchema, String)> {
    let TableFactor::Table { name, alias, .. } = relation else {
        return Err(missing);
    };
    let (database, view) = split_name(session, name)?;
    let Some(definition) = session.view(&database, &view)? else {
        return Err(missing);
    };
    let parsed = crate::session::parse(&definition)?;
    let ast::Statement::Query(query) = &parsed.statement else {
        return Err(SqlError::new(
            1356,
            "HY000",
            format!("View '{database}.{view}' is broken"),
        ));
    };
    let alias = alias
        .as_ref()
        .map_or(view.as_str(), |a| a.name.value.as_str());
    // The view's query names tables of the view's database.
    derived_table_of(session, query, Some(alias), Some(&database))
}

/// A derived table's rows (its query runs first, in `database` for a view's: `subquery.rs`),
/// its schema and alias.
/// Its columns are named by the query's and typed by their first value that is not NULL,
/// else by the query's result.
fn derived_table_of(
    session: &dyn BindCatalog,
    subquery: &ast::Query,
    alias: Option<&str>,
    database: Option<&str>,
) -> SqlResult<(FrontTable, TableSchema, String)> {
    let Some(alias) = alias else {
        return Err(SqlError::new(
            1248,
            "42000",
            "Every derived table must have its own alias",
        ));
    };
    let (names, types, rows) = match session.subqueries().met_in(subquery, database) {
        None => return Err(SqlError::not_supported("derived tables here")),
        // A derived table may not name a column of the query around it (LATERAL).
        Some(Met::Wanted(error) | Met::Correlated(error)) => return Err(error),
        Some(Met::Rows { names, types, rows }) => (names, types, rows),
    };
    let columns = names.iter().zip(types).enumerate();
    let columns = columns.map(|(position, (name, announced))| {
        let first = rows.iter().find_map(|row| type_of_value(&row[position]));
        let column_type = first.or(announced);
        Column::new(
            name,
            column_type.unwrap_or(crate::sql_type::default_varchar(16_383)),
        )
        .nullable()
    });
    let schema = TableSchema {
        extra_metadata: Vec::new(),
        name: alias.to_string(),
        columns: columns.collect(),
        primary_key: Vec::new(),
    };
    Ok((FrontTable::Derived(rows), schema, alias.to_string()))
}

/// The system table (`information_schema`, `kista_info`) a FROM item names, its schema
/// and alias; `None` for any other table.
pub(super) fn system_table_of(
    session: &dyn BindCatalog,
    relation: &TableFactor,
) -> SqlResult<Option<(SystemTable, TableSchema, String)>> {
    let TableFactor::Table { name, alias, .. } = relation else {
        return Ok(None);
    };
    let parts: Vec<&str> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident())
        .map(|i| i.value.as_str())
        .collect();
    let (database, table) = match parts.as_slice() {
        [database, table] => (*database, *table),
        [table] => (session.database().unwrap_or(""), *table),
        _ => return Ok(None),
    };
    let Some(system) = SystemTable::named(database, table) else {
        return Ok(None);
    };
    let system = system?;
    let alias = alias
        .as_ref()
        .map_or_else(|| table.to_string(), |a| a.name.value.clone());
    Ok(Some((system, system.schema(), alias)))
}

/// The table a FROM item names, and the name its columns are qualified with.
pub fn table_of(
    session: &dyn BindCatalog,
    relation: &TableFactor,
) -> SqlResult<(Arc<SqlTable>, String)> {
    let TableFactor::Table {
        name,
        alias,
        args: None,
        ..
    } = relation
    else {
        return Err(SqlError::not_supported(relation));
    };
    let (database, table) = split_name(session, name)?;
    let table = session.table(&database, &table)?;
    let alias = alias
        .as_ref()
        .map_or_else(|| table.name.clone(), |a| a.name.value.clone());
    Ok((table, alias))
}

/// `db.table` or `table` (in the current database).
pub fn split_name(
    session: &dyn BindCatalog,
    name: &ast::ObjectName,
) -> SqlResult<(String, String)> {
    let parts: Vec<String> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident())
        .map(|i| i.value.clone())
        .collect();
    match parts.as_slice() {
        [table] => Ok((session.current_database()?.to_string(), table.clone())),
        [database, table] => Ok((database.clone(), table.clone())),
        _ => Err(SqlError::syntax(format!("bad table name {name}"))),
    }
}
