//! Binding and planning without a cluster: queries bound against tables built in memory
//! (through [`BindCatalog`]), their plans checked as EXPLAIN states them.

use std::collections::HashMap;
use std::sync::Arc;

use sqlparser::ast;

use super::{explain, SelectPlan};
use crate::catalog::{BindCatalog, SqlTable};
use crate::error::{SqlError, SqlResult};
use crate::expr::Expr;
use crate::subquery::Subqueries;

/// A catalog of tables declared by CREATE TABLE statements, in database `db`.
struct Memory {
    tables: HashMap<String, Arc<SqlTable>>,
    views: HashMap<String, String>,
    subqueries: Subqueries,
}

impl Memory {
    fn with(create_tables: &[&str]) -> Self {
        let mut tables = HashMap::new();
        for (id, sql) in create_tables.iter().enumerate() {
            let ast::Statement::CreateTable(create) = statement(sql) else {
                panic!("not a CREATE TABLE: {sql}");
            };
            let name = create.name.to_string().to_lowercase();
            let definition =
                crate::ddl::create_table(&create, format!("db/{name}"), Default::default())
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            let table =
                kista_client::Table::detached(id as u32 + 1, definition.schema, definition.indexes);
            let auto_increment = definition.auto_increment.map(|(column, _)| column);
            let table = SqlTable::opened("db", table, auto_increment).expect("opens");
            tables.insert(name, Arc::new(table));
        }
        Memory {
            tables,
            views: HashMap::new(),
            subqueries: Subqueries::default(),
        }
    }
}

impl BindCatalog for Memory {
    fn table(&self, database: &str, name: &str) -> SqlResult<Arc<SqlTable>> {
        match (database, self.tables.get(&name.to_lowercase())) {
            ("db", Some(table)) => Ok(table.clone()),
            _ => Err(SqlError::unknown_table(database, name)),
        }
    }

    fn view(&self, database: &str, name: &str) -> SqlResult<Option<String>> {
        Ok((database == "db")
            .then(|| self.views.get(name).cloned())
            .flatten())
    }

    fn database(&self) -> Option<&str> {
        Some("db")
    }

    fn subqueries(&self) -> &Subqueries {
        &self.subqueries
    }
}

fn statement(sql: &str) -> ast::Statement {
    crate::session::parse(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .statement
}

/// `sql`, a query, bound against `catalog`.
fn bound(catalog: &Memory, sql: &str) -> SqlResult<SelectPlan> {
    let parsed = crate::session::parse(sql)?;
    let ast::Statement::Query(query) = &parsed.statement else {
        panic!("not a query: {sql}");
    };
    crate::subquery::bind_without_running(catalog, query, &parsed.placeholders)
}

/// What EXPLAIN says of `sql`.
fn plan_of(catalog: &Memory, sql: &str) -> String {
    explain(&bound(catalog, sql).unwrap_or_else(|e| panic!("{sql}: {e}")))
}

fn error_of(catalog: &Memory, sql: &str) -> u16 {
    match bound(catalog, sql) {
        Ok(plan) => panic!("bound: {sql}: {}", explain(&plan)),
        Err(error) => error.code,
    }
}

fn shop() -> Memory {
    Memory::with(&[
        "CREATE TABLE item (id INT PRIMARY KEY, k INT, code VARCHAR(10), name VARCHAR(20), \
         price INT, KEY by_k (k), UNIQUE KEY by_code (code))",
        "CREATE TABLE pick (id INT PRIMARY KEY, item_id INT, qty INT)",
    ])
}

#[test]
fn each_condition_on_a_key_or_index_chooses_its_access_path() {
    let shop = shop();
    let cases = [
        (
            "SELECT name FROM item WHERE id = 5",
            "db.item: primary key read",
        ),
        (
            "SELECT name FROM item WHERE id = ?",
            "db.item: primary key read",
        ),
        (
            "SELECT name FROM item WHERE id IN (3, 1, 2)",
            "db.item: batched primary key read of 3 keys in one round trip",
        ),
        (
            "SELECT name FROM item WHERE code = 'x'",
            "db.item: unique index read on `by_code`",
        ),
        (
            "SELECT name FROM item WHERE id BETWEEN 1 AND 10",
            "db.item: ordered range scan of index `PRIMARY`",
        ),
        (
            "SELECT name FROM item WHERE k > 3",
            "db.item: ordered range scan of index `by_k`",
        ),
        (
            "SELECT name FROM item WHERE name = 'x'",
            "db.item: scan of all partitions in parallel",
        ),
        // Compared under another collation than the key's, the key cannot answer.
        (
            "SELECT name FROM item WHERE code = 'x' COLLATE utf8mb4_bin",
            "db.item: scan of all partitions in parallel",
        ),
        ("SELECT 1", "no table"),
    ];
    for (sql, expected) in cases {
        assert_eq!(plan_of(&shop, sql), expected, "{sql}");
    }
}

#[test]
fn joins_find_the_next_table_by_its_key_where_the_condition_names_it() {
    let shop = shop();
    let cases = [
        (
            "SELECT * FROM pick JOIN item ON item.id = pick.item_id",
            "db.pick: scan of all partitions in parallel; then join db.item: batched primary \
             key lookups",
        ),
        (
            "SELECT * FROM pick JOIN item ON item.code = pick.qty WHERE pick.id = 1",
            "db.pick: primary key read; then join db.item: batched unique lookups on `by_code`",
        ),
        // No unique key to look up by: one scan, hash joined on the integer columns ON
        // equates with the rows before.
        (
            "SELECT * FROM pick LEFT JOIN item ON item.k = pick.qty",
            "db.pick: scan of all partitions in parallel; then left join db.item: one scan of \
             all partitions, hash joined on `k`",
        ),
        (
            "SELECT * FROM pick, item WHERE item.price = pick.qty AND item.k = pick.item_id",
            "db.pick: scan of all partitions in parallel; then join db.item: one scan of all \
             partitions, hash joined on `k`, `price`",
        ),
        // Strings hash by their weight keys under the comparison's collation; a string
        // column equated with an integer compares as numbers: every pair is tried.
        (
            "SELECT * FROM item a JOIN item b ON b.name = a.code",
            "db.item: scan of all partitions in parallel; then join db.item: one scan of all \
             partitions, hash joined on `name`",
        ),
        (
            "SELECT * FROM item a JOIN item b ON b.name = CONCAT(a.code, '-') COLLATE utf8mb4_bin",
            "db.item: scan of all partitions in parallel; then join db.item: one scan of all \
             partitions, hash joined on `name`",
        ),
        // (the parser reads `b.name COLLATE x` as `b.(name COLLATE x)`: bound as written)
        (
            "SELECT * FROM item a JOIN item b ON b.name COLLATE utf8mb4_bin = a.code",
            "db.item: scan of all partitions in parallel; then join db.item: one scan of all \
             partitions, hash joined on `name`",
        ),
        (
            "SELECT * FROM pick JOIN item ON item.name = pick.qty",
            "db.pick: scan of all partitions in parallel; then join db.item: one scan of all \
             partitions, matched in the front end",
        ),
    ];
    for (sql, expected) in cases {
        assert_eq!(plan_of(&shop, sql), expected, "{sql}");
    }
}

/// A nested join in parentheses joined pairs its own tables first (each found by its key
/// where the nest's ON or its own names it), then tests the nest's ON; first in FROM it is
/// its tables written out.
#[test]
fn a_nested_join_pairs_its_tables_first_and_its_on_finds_them_by_key() {
    let shop = shop();
    let cases = [
        (
            // Sequelize's many-to-many include.
            "SELECT * FROM item LEFT OUTER JOIN (pick p INNER JOIN item i2 ON i2.id = p.item_id) \
             ON p.id = item.k",
            "db.item: scan of all partitions in parallel; then left join of 2 tables nested in \
             parentheses, paired first: join db.pick: batched primary key lookups; then join \
             db.item: batched primary key lookups",
        ),
        (
            "SELECT * FROM pick JOIN (item a JOIN item b ON b.code = a.name) ON a.id = pick.item_id",
            "db.pick: scan of all partitions in parallel; then join of 2 tables nested in \
             parentheses, paired first: join db.item: batched primary key lookups; then join \
             db.item: batched unique lookups on `by_code`",
        ),
        (
            "SELECT * FROM (pick JOIN item ON item.id = pick.item_id) LEFT JOIN item b ON b.k = pick.qty",
            "db.pick: scan of all partitions in parallel; then join db.item: batched primary \
             key lookups; then left join db.item: one scan of all partitions, hash joined on `k`",
        ),
    ];
    for (sql, expected) in cases {
        assert_eq!(plan_of(&shop, sql), expected, "{sql}");
    }
    // The nest's tables may be NULL under a LEFT JOIN, and the WHERE finds no key in them.
    let plan = bound(
        &shop,
        "SELECT * FROM pick LEFT JOIN (item a JOIN item b ON b.id = a.k) ON a.id = pick.item_id \
         WHERE b.id = 3",
    )
    .unwrap();
    let (_, joined) = plan.joins.as_ref().unwrap();
    assert!(joined.iter().all(|table| table.nullable()));
    assert_eq!(
        error_of(
            &shop,
            "SELECT * FROM pick JOIN (item a JOIN item b) AS n ON a.id = 1"
        ),
        1064
    );
    assert_eq!(
        error_of(
            &shop,
            "SELECT * FROM pick RIGHT JOIN (item a JOIN item b ON a.id = b.k) ON a.id = 1"
        ),
        1235
    );
}

/// A correlated subquery runs per outer row; the outer column it names becomes its
/// parameter after the statement's `?`s, so a key still finds its rows.
#[test]
fn a_correlated_subquery_reads_by_the_key_its_outer_column_names() {
    let shop = shop();
    let sql = "SELECT id FROM pick WHERE qty > ? AND EXISTS \
               (SELECT 1 FROM item WHERE item.id = pick.item_id AND item.price > ?)";
    assert_eq!(
        plan_of(&shop, sql),
        "db.pick: scan of all partitions in parallel; then for each row, a correlated \
         subquery: db.item: primary key read"
    );
    let plan = bound(&shop, sql).expect("binds");
    // pick's row has 3 columns; the subquery's value is the 4th, read by the WHERE after.
    assert_eq!(plan.row_width, 3);
    assert_eq!(plan.correlated.len(), 1);
    assert_eq!(plan.correlated[0].outer_values(), [Expr::Column(1)]);
    assert_eq!(plan.correlated_filter, Some(Expr::Column(3)));
    assert!(plan.needed_columns.is_empty() || plan.needed_columns.contains(&1));
}

#[test]
fn a_subquery_naming_a_column_two_queries_out_passes_it_through_the_middle_one() {
    let shop = shop();
    let plan = bound(
        &shop,
        "SELECT (SELECT (SELECT COUNT(*) FROM pick WHERE pick.item_id = item.id)) FROM item",
    )
    .expect("binds");
    // The middle query reads item.id (position 0 of item's row) for the innermost.
    assert_eq!(plan.correlated[0].outer_values(), [Expr::Column(0)]);
}

#[test]
fn names_resolve_as_mysql_resolves_them() {
    let shop = shop();
    assert_eq!(error_of(&shop, "SELECT nope FROM item"), 1054);
    assert_eq!(error_of(&shop, "SELECT id FROM item, pick"), 1052);
    assert_eq!(error_of(&shop, "SELECT id FROM missing"), 1146);
    assert_eq!(error_of(&shop, "SELECT * FROM (SELECT 1) AS d"), 1235);
    // Without a statement to run them in, uncorrelated subqueries are refused.
    assert_eq!(error_of(&shop, "SELECT (SELECT 1)"), 1235);
    // An alias names an output in ORDER BY, a column first in WHERE.
    assert!(bound(&shop, "SELECT price AS p FROM item ORDER BY p").is_ok());
    assert_eq!(
        error_of(&shop, "SELECT price AS p FROM item WHERE p > 1"),
        1054
    );
}

/// Results of a scan or a join in the order read go to the client as they are read; a
/// key read, a sort, a group or DISTINCT are answered whole.
#[test]
fn a_scan_or_a_join_in_the_order_read_streams_and_nothing_else_does() {
    let shop = shop();
    let streams = |sql: &str| super::stream::streams(&bound(&shop, sql).expect("binds"));
    for sql in [
        "SELECT * FROM item",
        "SELECT name FROM item WHERE price > 3 LIMIT 10",
        "SELECT name FROM item WHERE id BETWEEN 1 AND 10",
        "SELECT * FROM pick JOIN item ON item.id = pick.item_id",
    ] {
        assert!(streams(sql), "{sql}");
    }
    for sql in [
        "SELECT name FROM item WHERE id = 5",
        "SELECT name FROM item WHERE id IN (1, 2)",
        "SELECT name FROM item ORDER BY name",
        "SELECT k, COUNT(*) FROM item GROUP BY k",
        "SELECT DISTINCT k FROM item",
        "SELECT COUNT(*) FROM item",
        "SELECT 1",
    ] {
        assert!(!streams(sql), "{sql}");
    }
}
