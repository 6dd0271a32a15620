"""Uncorrelated subqueries answer as MySQL's: IN and NOT IN (with MySQL's NULLs), scalar
subqueries, EXISTS, nested ones, in the select list and WHERE, with prepared statements'
parameters; derived tables in FROM; in UPDATE and DELETE. Correlated ones are
correlated_subqueries.py's.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
from session_helpers import Session

session = Session("subs")
cur, rows, error_of = session.cur, session.rows, session.error_of

cur.execute("CREATE TABLE item (id INT PRIMARY KEY, price INT, kind VARCHAR(10))")
cur.execute(
    "INSERT INTO item VALUES (1, 10, 'a'), (2, 20, 'b'), (3, NULL, 'a'), (4, 40, 'c')"
)
cur.execute("CREATE TABLE pick (id INT PRIMARY KEY, item_id INT)")
cur.execute("INSERT INTO pick VALUES (1, 1), (2, 3), (3, NULL)")

# IN and NOT IN: a NULL among the subquery's values makes NOT IN unknown for the rest.
assert rows("SELECT id FROM item WHERE id IN (SELECT item_id FROM pick) ORDER BY id") == [
    (1,),
    (3,),
]
assert rows("SELECT id FROM item WHERE id NOT IN (SELECT item_id FROM pick)") == []
assert rows(
    "SELECT id FROM item WHERE id NOT IN "
    "(SELECT item_id FROM pick WHERE item_id IS NOT NULL) ORDER BY id"
) == [(2,), (4,)]
# Nothing is in an empty set, not even NULL; with values, NULL IN is unknown.
assert rows(
    "SELECT NULL IN (SELECT item_id FROM pick WHERE id > 9), "
    "NULL NOT IN (SELECT item_id FROM pick WHERE id > 9), "
    "NULL IN (SELECT item_id FROM pick)"
) == [(0, 1, None)]

# The answer is an IN list like one written out: the keys are read in one batch.
plan = rows("EXPLAIN SELECT price FROM item WHERE id IN (SELECT item_id FROM pick)")[0][0]
assert "batched primary key read" in plan, plan

# Scalar subqueries: one value, NULL for no row, an error for more than one.
assert rows("SELECT (SELECT MAX(price) FROM item), (SELECT price FROM item WHERE id = 9)") == [
    (40, None)
]
assert rows("SELECT id FROM item WHERE price > (SELECT AVG(price) FROM item) ORDER BY id") == [
    (4,)
]
assert error_of("SELECT (SELECT id FROM item)") == 1242
assert error_of("SELECT 1 IN (SELECT id, price FROM item)") == 1241

# EXISTS, and subqueries within subqueries.
assert rows(
    "SELECT EXISTS (SELECT * FROM pick WHERE item_id = 3), "
    "NOT EXISTS (SELECT * FROM pick WHERE item_id = 4)"
) == [(1, 1)]
assert rows(
    "SELECT kind FROM item WHERE id IN "
    "(SELECT item_id FROM pick WHERE id IN (SELECT id FROM item WHERE kind = 'a'))"
) == [("a",)]

# Parameters reach the subquery (PyMySQL fills them in the text), and the answer follows
# the table as it changes.
query = "SELECT COUNT(*) FROM item WHERE id IN (SELECT item_id FROM pick WHERE id <= %s)"
assert rows(query, (1,)) == [(1,)]
assert rows(query, (2,)) == [(2,)]
cur.execute("INSERT INTO pick VALUES (4, 4)")
assert rows(query, (4,)) == [(3,)]

# Inside a transaction the subquery sees the transaction's writes.
cur.execute("BEGIN")
cur.execute("INSERT INTO pick VALUES (5, 2)")
assert rows("SELECT COUNT(*) FROM item WHERE id IN (SELECT item_id FROM pick)") == [(4,)]
cur.execute("ROLLBACK")

# A subquery as an INSERT ... SELECT's filter.
cur.execute("CREATE TABLE picked (id INT PRIMARY KEY, price INT)")
cur.execute("INSERT INTO picked SELECT id, price FROM item WHERE id IN (SELECT item_id FROM pick)")
assert rows("SELECT id FROM picked ORDER BY id") == [(1,), (3,), (4,)]

# Derived tables: the query in FROM runs first and its rows are the table's, filtered,
# grouped and ordered by the query around it.
assert rows(
    "SELECT t.kind, COUNT(*), SUM(t.price) FROM "
    "(SELECT kind, price FROM item WHERE id IN (SELECT item_id FROM pick)) AS t "
    "GROUP BY t.kind ORDER BY t.kind"
) == [("a", 2, 10), ("c", 1, 40)]
assert rows(
    "SELECT doubled FROM (SELECT price * 2 AS doubled FROM item) d WHERE doubled > 30 ORDER BY 1"
) == [(40,), (80,)]
assert rows("SELECT COUNT(*) FROM (SELECT id FROM item WHERE id > 99) AS nothing") == [(0,)]
plan = rows("EXPLAIN SELECT * FROM (SELECT id FROM item) AS t")[0][0]
assert plan.startswith("derived table t"), plan
assert error_of("SELECT * FROM (SELECT id FROM item)") == 1248

# HAVING: a subquery, and a select-list alias before a table column (MySQL's rule).
assert rows("SELECT price, COUNT(*) FROM item GROUP BY price "
            "HAVING COUNT(*) >= (SELECT COUNT(*) FROM item WHERE id = 1) ORDER BY price") == [
    tuple(r) for r in rows("SELECT price, COUNT(*) FROM item GROUP BY price ORDER BY price")]
assert rows("SELECT id * 10 AS id FROM item HAVING id = 10") == [(10,)]

# UPDATE and DELETE run their subqueries first, in WHERE and in SET; one reading the
# table being changed is MySQL's 1093.
cur.execute("UPDATE item SET price = (SELECT COUNT(*) FROM pick) WHERE id IN "
            "(SELECT item_id FROM pick WHERE item_id IS NOT NULL)")
assert cur.rowcount == 3
assert rows("SELECT id, price FROM item ORDER BY id") == [(1, 4), (2, 20), (3, 4), (4, 4)]
assert error_of("UPDATE item SET price = 0 WHERE id IN (SELECT id FROM item)") == 1093
assert error_of("DELETE FROM item WHERE price > (SELECT AVG(price) FROM item)") == 1093
cur.execute("DELETE FROM item WHERE id NOT IN "
            "(SELECT item_id FROM pick WHERE item_id IS NOT NULL)")
assert cur.rowcount == 1
assert rows("SELECT COUNT(*) FROM item") == [(3,)]
cur.execute("BEGIN")
cur.execute("DELETE FROM item WHERE EXISTS (SELECT 1 FROM pick WHERE id = 99)")
assert cur.rowcount == 0
cur.execute("UPDATE item SET kind = 'z' WHERE id = (SELECT MIN(item_id) FROM pick)")
cur.execute("ROLLBACK")
assert rows("SELECT kind FROM item WHERE id = 1") == [("a",)]

print("subqueries ok")
