"""Views: CREATE [OR REPLACE] VIEW stores the query in the cluster (every session and
front end sees it), a query naming the view runs it as a derived table, DROP VIEW [IF
EXISTS] forgets it; MySQL's errors for a name taken, a view missing and a query that
does not bind.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
import pymysql.constants

from session_helpers import Session

session = Session("views")
cur, rows, error_of = session.cur, session.rows, session.error_of

cur.execute("CREATE TABLE item (id INT PRIMARY KEY, price INT)")
cur.execute("INSERT INTO item VALUES (1, 10), (2, 20), (3, NULL)")

cur.execute("CREATE VIEW priced AS SELECT id, price FROM item WHERE price IS NOT NULL")
assert rows("SELECT * FROM priced ORDER BY id") == [(1, 10), (2, 20)]
assert rows("SELECT p.id FROM priced AS p WHERE p.price > 15") == [(2,)]
assert rows("SELECT COUNT(*), SUM(price) FROM priced") == [(2, 30)]
# The view follows its table, and another session sees it.
cur.execute("INSERT INTO item VALUES (4, 40)")
other = Session("views", create=False)
assert other.rows("SELECT id FROM priced ORDER BY id") == [(1,), (2,), (4,)]

# Views over unions and subqueries; a view of no row keeps its columns' types.
cur.execute("CREATE VIEW ids AS SELECT id FROM item UNION SELECT 99")
assert rows("SELECT COUNT(*) FROM ids") == [(5,)]
cur.execute("CREATE VIEW cheapest AS SELECT id FROM item WHERE price = (SELECT MIN(price) FROM item)")
assert rows("SELECT * FROM cheapest") == [(1,)]
cur.execute("CREATE VIEW none AS SELECT id, price FROM item WHERE id > 99")
cur.execute("SELECT * FROM none UNION ALL SELECT * FROM none")
assert cur.fetchall() == ()
integer = pymysql.constants.FIELD_TYPE.LONGLONG
assert [c[1] for c in cur.description] == [integer, integer], cur.description

# SHOW TABLES lists views; FULL says which is which (SQLAlchemy's reflection reads it).
assert rows("SHOW TABLES") == [("cheapest",), ("ids",), ("item",), ("none",), ("priced",)]
assert rows("SHOW FULL TABLES LIKE 'i%'") == [("ids", "VIEW"), ("item", "BASE TABLE")]

# A view's query names tables of the view's database, whatever the session's.
other.cur.execute("USE information_schema")
assert other.rows("SELECT COUNT(*) FROM views.ids") == [(5,)]

# OR REPLACE changes it; DROP VIEW forgets it.
cur.execute("CREATE OR REPLACE VIEW priced AS SELECT id FROM item WHERE price > 15")
assert rows("SELECT * FROM priced ORDER BY id") == [(2,), (4,)]
cur.execute("DROP VIEW priced")
assert error_of("SELECT * FROM priced") == 1146
assert error_of("DROP VIEW priced") == 1051
cur.execute("DROP VIEW IF EXISTS priced")
assert rows("SHOW WARNINGS")[0][1] == 1051

# A name taken by a table or a view, and a query that does not bind, are refused.
assert error_of("CREATE VIEW item AS SELECT 1") == 1050
assert error_of("CREATE VIEW ids AS SELECT 1") == 1050
assert error_of("CREATE VIEW broken AS SELECT nope FROM item") == 1054
assert error_of("CREATE VIEW broken AS SELECT id FROM missing") == 1146

# DROP DATABASE takes its views with it.
cur.execute("DROP DATABASE views")
cur.execute("CREATE DATABASE views")
cur.execute("USE views")
cur.execute("CREATE TABLE item (id INT PRIMARY KEY)")
assert error_of("SELECT * FROM ids") == 1146
cur.execute("CREATE VIEW ids AS SELECT id FROM item")

print("views ok")
