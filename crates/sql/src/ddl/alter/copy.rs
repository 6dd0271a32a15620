//! The part of ALTER TABLE's plan that needs the rows copied: columns dropped or moved, a
//! column's type changed, a column made NOT NULL, a prefix index that adds a hidden
//! column. The new definition is built as the clauses run, with each new column's source
//! (the old column its values come from); [`finish`] checks what a copy can do and gives
//! the [`CopyPlan`] that `table_copy` runs.
//!
//! A copy keeps the primary key (its columns and types): the copy and the writes mirrored
//! during it find a row in the new table by the key it has in the old one. The table's
//! foreign keys, on either side, move to the new table at the switch (a column of one may
//! be renamed or widened, not dropped (1828) nor given another key form (3780)). A copy
//! that adds or drops a foreign key, renames the table or changes its AUTO_INCREMENT
//! column's place is refused (1846) and names the reason.

use kista_client::schema::{IndexSchema, TableSchema};
use kista_client::{same_key_form, ForeignKey};

use super::{needs_copy, AlterPlan, Altering};
use crate::catalog::SqlTable;
use crate::error::{SqlError, SqlResult};
use crate::table_metadata::{Generated, TableExtras};

/// A table's rows copied into a new definition (`table_copy` runs it).
#[derive(Debug)]
pub struct CopyPlan {
    /// The new table's schema under the old table's name, its extra metadata encoded.
    pub schema: TableSchema,
    /// Its secondary indexes (the ordered `PRIMARY` over its key among them, as CREATE
    /// TABLE makes it).
    pub indexes: Vec<IndexSchema>,
    /// For each of its columns, the old table's column its values come from (`None`:
    /// added by the statement, filled as an insert that names no value would be).
    pub sources: Vec<Option<usize>>,
    /// Why the statement copies, as ALTER TABLE's progress reports it.
    pub reason: String,
}

impl Altering<'_> {
    /// Notes that the statement needs the rows copied, for `reason` (the first one kept).
    pub(super) fn copies(&mut self, reason: impl Into<String>) {
        self.copy_reason.get_or_insert_with(|| reason.into());
    }

    /// Rearranges the new table's columns: column `i` becomes the one at `order[i]` now.
    /// Columns `order` leaves out are dropped, and with them from every index (an index
    /// left with none is dropped).
    fn reorder(&mut self, order: &[usize]) {
        let new_position = |old: usize| order.iter().position(|&o| o == old);
        let columns = std::mem::take(&mut self.schema.columns);
        let extras = std::mem::take(&mut self.extras.columns);
        self.schema.columns = order.iter().map(|&o| columns[o].clone()).collect();
        self.extras.columns = order.iter().map(|&o| extras[o].clone()).collect();
        self.sources = order.iter().map(|&o| self.sources[o]).collect();
        let key = std::mem::take(&mut self.schema.primary_key);
        self.schema.primary_key = key.into_iter().filter_map(new_position).collect();
        for indexes in [&mut self.indexes, &mut self.plan.add_indexes] {
            for index in indexes.iter_mut() {
                let columns = std::mem::take(&mut index.columns);
                index.columns = columns.into_iter().filter_map(new_position).collect();
            }
            indexes.retain(|index| !index.columns.is_empty());
        }
    }

    /// DROP COLUMN: the column and the prefix columns made of it.
    pub(super) fn drop_column(&mut self, name: &str, if_exists: bool) -> SqlResult<()> {
        let Some(column) = self.schema.column_index(name) else {
            if if_exists {
                return Ok(());
            }
            return Err(super::cannot_drop(name));
        };
        if self.schema.primary_key.contains(&column) {
            return Err(needs_copy("a primary key column is dropped"));
        }
        if self.table.auto_increment.is_some() && self.sources[column] == self.table.auto_increment
        {
            return Err(needs_copy("the AUTO_INCREMENT column is dropped"));
        }
        let column_name = self.schema.columns[column].name.clone();
        if let Some(key) = self.sources[column].and_then(|old| self.kept_key_on(old)) {
            return Err(SqlError::new(
                1828,
                "HY000",
                format!(
                    "Cannot drop column '{column_name}': needed in a foreign key constraint \
                     '{}'",
                    key.name
                ),
            ));
        }
        let made_of_it = |c: usize| match &self.extras.columns[c].generated {
            Some(Generated::Prefix { source, .. }) => source.eq_ignore_ascii_case(&column_name),
            None => false,
        };
        let kept: Vec<usize> = (0..self.schema.columns.len())
            .filter(|&c| c != column && !made_of_it(c))
            .collect();
        let visible_left = kept
            .iter()
            .any(|&c| !crate::ddl::is_hidden_column(&self.schema.columns[c].name));
        if !visible_left {
            return Err(SqlError::new(
                1090,
                "42000",
                "You can't delete all columns with ALTER TABLE; use DROP TABLE instead",
            ));
        }
        self.reorder(&kept);
        self.copies(format!("column '{column_name}' is dropped"));
        Ok(())
    }

    /// A foreign key the statement keeps that names the old table's column `old`, on
    /// either side.
    fn kept_key_on(&self, old: usize) -> Option<&ForeignKey> {
        let table = &self.table.table;
        let dropped = |key: &ForeignKey| {
            (self.plan.drop_foreign_keys.iter()).any(|name| name.eq_ignore_ascii_case(&key.name))
        };
        let names = |columns: &[u16]| columns.contains(&(old as u16));
        (table.foreign_keys().iter()).find(|key| {
            let as_child = key.child_table == table.id && names(&key.child_columns);
            let as_parent = key.parent_table == table.id && names(&key.parent_columns);
            (as_child && !dropped(key)) || as_parent
        })
    }

    /// Moves `column` FIRST or AFTER another (a column's place in the row is fixed, so the
    /// rows are copied).
    pub(super) fn move_column(
        &mut self,
        column: usize,
        position: &sqlparser::ast::MySQLColumnPosition,
    ) -> SqlResult<()> {
        let mut order: Vec<usize> = (0..self.schema.columns.len())
            .filter(|&c| c != column)
            .collect();
        let at = match position {
            sqlparser::ast::MySQLColumnPosition::First => 0,
            sqlparser::ast::MySQLColumnPosition::After(after) => {
                let after = self.column(after)?;
                order.iter().position(|&c| c == after).map_or(0, |p| p + 1)
            }
        };
        order.insert(at, column);
        let name = self.schema.columns[column].name.clone();
        self.reorder(&order);
        self.copies(format!("column '{name}' moves"));
        Ok(())
    }
}

/// The copy `altering`'s clauses need, checked: the new table keeps the primary key and
/// the AUTO_INCREMENT column's place, the key forms of its foreign keys, and its name.
pub(super) fn finish(
    table: &SqlTable,
    (mut schema, extras): (TableSchema, TableExtras),
    indexes: Vec<IndexSchema>,
    sources: Vec<Option<usize>>,
    (plan, reason): (&mut AlterPlan, String),
) -> SqlResult<()> {
    let old = table.schema();
    if !plan.add_foreign_keys.is_empty() || !plan.drop_foreign_keys.is_empty() {
        return Err(needs_copy(format!(
            "{reason}, and it adds or drops a foreign key (do that in a statement of its own)"
        )));
    }
    keys_keep_their_form(table, &schema, &sources)?;
    if !schema.name.eq_ignore_ascii_case(&old.name) {
        return Err(needs_copy(format!(
            "{reason}, and the table is renamed (rename it in a statement of its own)"
        )));
    }
    let key_kept = schema.primary_key.len() == old.primary_key.len()
        && (schema.primary_key.iter().zip(&old.primary_key)).all(|(&new, &was)| {
            sources[new] == Some(was)
                && schema.columns[new].column_type == old.columns[was].column_type
        });
    if !key_kept {
        return Err(needs_copy(format!("{reason}, and the primary key changes")));
    }
    if let Some(auto) = table.auto_increment {
        if sources.get(auto) != Some(&Some(auto)) {
            return Err(needs_copy(format!(
                "{reason}, and the AUTO_INCREMENT column moves"
            )));
        }
    }
    // Every row of the new table holds every column: none is "added" there.
    for column in &mut schema.columns {
        column.added = None;
    }
    super::check_opens(&schema, &extras)?;
    schema.extra_metadata = extras.encode(&schema);
    plan.copy = Some(CopyPlan {
        schema,
        indexes,
        sources,
        reason,
    });
    plan.schema = None;
    plan.add_indexes.clear();
    plan.drop_indexes.clear();
    plan.new_checks.clear();
    Ok(())
}

/// Error 3780 when a column of one of the table's foreign keys changes its key form in the
/// new table (a string's length may change, not its type or collation): the other side's
/// column, of the old form, would no longer match it.
fn keys_keep_their_form(
    table: &SqlTable,
    schema: &TableSchema,
    sources: &[Option<usize>],
) -> SqlResult<()> {
    let old = table.schema();
    let id = table.table.id;
    for key in table.table.foreign_keys() {
        let child = (key.child_table == id).then_some(&key.child_columns[..]);
        let parent = (key.parent_table == id).then_some(&key.parent_columns[..]);
        for &column in child.into_iter().chain(parent).flatten() {
            let column = usize::from(column);
            let new = sources.iter().position(|&source| source == Some(column));
            let Some(new) = new else { continue }; // dropped: refused by DROP COLUMN
            if !same_key_form(
                schema.columns[new].column_type,
                old.columns[column].column_type,
            ) {
                return Err(SqlError::new(
                    3780,
                    "HY000",
                    format!(
                        "Referencing column '{}' and referenced column in foreign key \
                         constraint '{}' are incompatible.",
                        schema.columns[new].name, key.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use sqlparser::ast;

    use super::*;
    use crate::expr::EvalContext;

    /// `create` made into a table in memory, then planned with `alter`'s clauses.
    pub(in crate::ddl::alter) fn planned(create: &str, alter: &str) -> SqlResult<AlterPlan> {
        let statement = |sql: &str| {
            let dialect = sqlparser::dialect::MySqlDialect {};
            let mut parsed = sqlparser::parser::Parser::parse_sql(&dialect, sql).expect("parses");
            parsed.remove(0)
        };
        let ast::Statement::CreateTable(create) = statement(create) else {
            panic!("not a CREATE TABLE");
        };
        let definition =
            crate::ddl::create_table(&create, "db/t".into(), Default::default()).expect("creates");
        let auto_increment = definition.auto_increment.map(|(column, _)| column);
        let table = kista_client::Table::detached(1, definition.schema, definition.indexes);
        let table = SqlTable::opened("db", table, auto_increment).expect("opens");
        let ast::Statement::AlterTable { operations, .. } = statement(alter) else {
            panic!("not an ALTER TABLE");
        };
        let ctx = EvalContext::bare();
        let rename = |name: &ast::ObjectName| Ok(format!("db/{name}"));
        super::super::plan(&table, &operations, &rename, &ctx)
    }

    fn copied(create: &str, alter: &str) -> CopyPlan {
        let plan = planned(create, alter).unwrap_or_else(|e| panic!("{alter}: {e}"));
        assert!(plan.schema.is_none() && plan.add_indexes.is_empty());
        plan.copy.unwrap_or_else(|| panic!("{alter} copies"))
    }

    fn column_names(copy: &CopyPlan) -> Vec<&str> {
        copy.schema
            .columns
            .iter()
            .map(|c| c.name.as_str())
            .collect()
    }

    fn index_columns(copy: &CopyPlan, name: &str) -> Vec<usize> {
        let index = copy.indexes.iter().find(|i| i.name == name);
        index
            .unwrap_or_else(|| panic!("no index {name}"))
            .columns
            .clone()
    }

    const TABLE: &str = "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(10), \
                         c INT, KEY ab (a, b), KEY c (c))";

    #[test]
    fn a_dropped_column_leaves_the_indexes_and_a_key_keeps_its_columns() {
        let copy = copied(TABLE, "ALTER TABLE t DROP COLUMN a");
        assert_eq!(column_names(&copy), ["id", "b", "c"]);
        assert_eq!(copy.sources, [Some(0), Some(2), Some(3)]);
        assert_eq!(copy.schema.primary_key, [0]);
        assert_eq!(index_columns(&copy, "ab"), [1], "the index keeps b");
        assert_eq!(index_columns(&copy, "c"), [2]);
        assert_eq!(index_columns(&copy, "PRIMARY"), [0]);
        let copy = copied(TABLE, "ALTER TABLE t DROP COLUMN c");
        assert!(
            copy.indexes.iter().all(|i| i.name != "c"),
            "an index left empty goes"
        );
    }

    #[test]
    fn a_moved_column_takes_its_values_and_its_index_entries_along() {
        let copy = copied(TABLE, "ALTER TABLE t MODIFY c INT AFTER id");
        assert_eq!(column_names(&copy), ["id", "c", "a", "b"]);
        assert_eq!(copy.sources, [Some(0), Some(3), Some(1), Some(2)]);
        assert_eq!(index_columns(&copy, "ab"), [2, 3]);
        assert_eq!(index_columns(&copy, "c"), [1]);
        let copy = copied(TABLE, "ALTER TABLE t ADD COLUMN z INT DEFAULT 3 FIRST");
        assert_eq!(column_names(&copy), ["z", "id", "a", "b", "c"]);
        assert_eq!(copy.sources, [None, Some(0), Some(1), Some(2), Some(3)]);
        assert_eq!(copy.schema.primary_key, [1]);
        assert!(copy.schema.columns.iter().all(|c| c.added.is_none()));
    }

    #[test]
    fn a_new_type_or_not_null_copies_and_says_why() {
        let copy = copied(TABLE, "ALTER TABLE t MODIFY b VARCHAR(40)");
        assert_eq!(copy.reason, "column 'b' changes its type");
        let copy = copied(TABLE, "ALTER TABLE t MODIFY a INT NOT NULL");
        assert_eq!(copy.reason, "column `a` becomes NOT NULL");
        let copy = copied(TABLE, "ALTER TABLE t ADD COLUMN twice INT DEFAULT (a * 2)");
        assert_eq!(copy.reason, "column 'twice' needs a value per row");
        assert_eq!(copy.sources.last(), Some(&None));
        let copy = copied(TABLE, "ALTER TABLE t ADD KEY bp (b(2))");
        assert_eq!(
            copy.sources.last(),
            Some(&None),
            "the prefix column is computed"
        );
        // What stays in place does not copy.
        let plan = planned(
            TABLE,
            "ALTER TABLE t ADD COLUMN z INT, RENAME COLUMN a TO aa",
        );
        assert!(plan.expect("plans").copy.is_none());
    }

    #[test]
    fn what_a_copy_cannot_keep_is_refused_naming_it() {
        let refused = |alter: &str| match planned(TABLE, alter) {
            Err(error) => (error.code, error.message),
            Ok(plan) => panic!("{alter} planned: {plan:?}"),
        };
        for alter in [
            "ALTER TABLE t DROP COLUMN id",
            "ALTER TABLE t MODIFY id BIGINT",
            "ALTER TABLE t DROP COLUMN a, RENAME TO u",
        ] {
            assert_eq!(refused(alter).0, 1846, "{alter}");
        }
        assert_eq!(refused("ALTER TABLE t DROP COLUMN nothing").0, 1091);
        let last = planned("CREATE TABLE t (a INT)", "ALTER TABLE t DROP COLUMN a");
        assert_eq!(
            last.expect_err("refused").code,
            1090,
            "a hidden key is no column"
        );
        let auto = "CREATE TABLE t (n INT AUTO_INCREMENT PRIMARY KEY, a INT)";
        let moved = planned(auto, "ALTER TABLE t MODIFY a INT FIRST");
        assert_eq!(moved.expect_err("refused").code, 1846);
    }
}
