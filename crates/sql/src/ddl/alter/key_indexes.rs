//! MySQL's rule for the index a foreign key finds its child rows through: where no index
//! of the child begins with the key's columns, one is made for it (its name kept in
//! `TableExtras::key_indexes`) and dropped again once another index serves the key; an
//! index a key uses may be dropped while another serves it (the dictionary moves the key
//! to that one), never the last (1553).

use kista_client::schema::{IndexKind, IndexSchema};

use super::Altering;
use crate::error::{SqlError, SqlResult};

/// Whether `index` finds the rows of a key on `columns`: ordered, beginning with them.
fn serves(index: &IndexSchema, columns: &[usize]) -> bool {
    index.kind == IndexKind::Ordered && index.columns.starts_with(columns)
}

impl Altering<'_> {
    /// Error 1553 when the statement drops an index a foreign key needs: the parent's
    /// unique key it references, or the child's index that finds its rows when no index
    /// kept from before the statement serves it (drops run before the new indexes are
    /// built).
    pub(super) fn refuse_needed_indexes(&self) -> SqlResult<()> {
        let table = &self.table.table;
        let dropped_key = |key: &kista_client::ForeignKey| {
            (self.plan.drop_foreign_keys.iter()).any(|n| n.eq_ignore_ascii_case(&key.name))
        };
        let added = |name: &str| (self.plan.add_indexes.iter()).any(|i| i.name == name);
        let served = |key: &kista_client::ForeignKey| {
            let columns: Vec<usize> = key.child_columns.iter().map(|&c| usize::from(c)).collect();
            (table.indexes()).any(|(_, index)| {
                self.has_index(&index.name) && !added(&index.name) && serves(index, &columns)
            })
        };
        for name in &self.plan.drop_indexes {
            let Ok((index_id, _)) = table.index(name) else {
                continue;
            };
            let needed = (table.foreign_keys().iter()).any(|key| {
                let parent_needs = key.parent_table == table.id && key.parent_index == index_id.0;
                let child_needs = key.child_table == table.id && key.child_index == index_id.0;
                parent_needs || (child_needs && !dropped_key(key) && !served(key))
            });
            if needed {
                return Err(SqlError::new(
                    1553,
                    "HY000",
                    format!("Cannot drop index '{name}': needed in a foreign key constraint"),
                ));
            }
        }
        Ok(())
    }

    /// Drops each index made for a foreign key that another index of the new definition
    /// serves: never built when this statement made it, else dropped after the new ones
    /// are built. Names of indexes gone are forgotten.
    pub(super) fn drop_served_key_indexes(&mut self) {
        let made = std::mem::take(&mut self.extras.key_indexes);
        for name in made {
            let Some(position) = self.index_position(&name) else {
                continue;
            };
            let columns = self.indexes[position].columns.clone();
            let served = (self.indexes.iter().enumerate())
                .any(|(other, index)| other != position && serves(index, &columns));
            if !served {
                self.extras.key_indexes.push(name);
                continue;
            }
            self.indexes.remove(position);
            let added = (self.plan.add_indexes.iter()).position(|i| i.name == name);
            match added {
                Some(added) => {
                    self.plan.add_indexes.remove(added);
                    self.plan.foreign_key_indexes.retain(|made| *made != name);
                }
                None => self.plan.drop_served_key_indexes.push(name),
            }
        }
    }

    fn index_position(&self, name: &str) -> Option<usize> {
        (self.indexes.iter()).position(|index| index.name.eq_ignore_ascii_case(name))
    }
}

#[cfg(test)]
mod tests {
    use super::super::copy::tests::planned;

    const CHILD: &str = "CREATE TABLE t (id INT PRIMARY KEY, p INT, n INT, \
                         CONSTRAINT fk FOREIGN KEY (p) REFERENCES q (id))";

    #[test]
    fn the_index_made_for_a_key_is_dropped_after_an_index_that_serves_the_key_is_built() {
        let plan = planned(CHILD, "ALTER TABLE t ADD INDEX wide (p, n)").expect("plans");
        let added: Vec<&str> = plan.add_indexes.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(added, ["wide"]);
        assert_eq!(plan.drop_served_key_indexes, ["fk"]);
        assert!(
            plan.drop_indexes.is_empty(),
            "not before the new one is built"
        );
    }

    #[test]
    fn an_index_that_does_not_begin_with_the_keys_columns_leaves_it() {
        let plan = planned(CHILD, "ALTER TABLE t ADD INDEX other (n, p)").expect("plans");
        assert!(plan.drop_served_key_indexes.is_empty());
    }

    #[test]
    fn a_key_and_an_index_serving_it_added_together_make_no_index_for_the_key() {
        let create = "CREATE TABLE t (id INT PRIMARY KEY, p INT, n INT)";
        let alter = "ALTER TABLE t ADD CONSTRAINT fk FOREIGN KEY (p) REFERENCES q (id), \
                     ADD INDEX wide (p, n)";
        let plan = planned(create, alter).expect("plans");
        let added: Vec<&str> = plan.add_indexes.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(added, ["wide"]);
        assert!(plan.foreign_key_indexes.is_empty() && plan.drop_served_key_indexes.is_empty());
    }
}
