"""Tables declared without a primary key get a hidden one, as NDB's do: every statement
works on them, duplicate rows included, and SQL never sees the hidden column (`*`,
INSERT without a column list, DESCRIBE, SHOW CREATE TABLE, SHOW INDEX,
information_schema, a name naming it).

Run by crates/kista/tests/sql.rs with the front end's port.
"""
from session_helpers import Session

session = Session("hidden_key")
cur, rows, error_of = session.cur, session.rows, session.error_of

# TPC-C's history table has no primary key; rows may repeat.
cur.execute("CREATE TABLE history (customer INT, amount DECIMAL(6,2), note VARCHAR(24))")
cur.execute("INSERT INTO history VALUES (1, 10.00, 'a'), (1, 10.00, 'a'), (2, 5.50, NULL)")
cur.execute("INSERT INTO history (amount, customer) VALUES (1.25, 3)")
assert rows("SELECT * FROM history ORDER BY customer, amount") == [
    (1, 10, "a"), (1, 10, "a"), (2, 5.5, None), (3, 1.25, None)]
assert [c[0] for c in cur.description] == ["customer", "amount", "note"]
assert rows("SELECT COUNT(*), COUNT(DISTINCT customer) FROM history") == [(4, 3)]

# INSERT ... SELECT from the table into itself doubles it.
cur.execute("INSERT INTO history SELECT * FROM history")
assert cur.rowcount == 4
assert rows("SELECT COUNT(*) FROM history") == [(8,)]

# UPDATE and DELETE reach each of the repeated rows.
cur.execute("UPDATE history SET note = 'paid' WHERE customer = 1")
assert cur.rowcount == 4
assert rows("SELECT DISTINCT note FROM history WHERE customer = 1") == [("paid",)]
cur.execute("DELETE FROM history WHERE customer = 1 LIMIT 1")
assert rows("SELECT COUNT(*) FROM history WHERE customer = 1") == [(3,)]
cur.execute("DELETE FROM history WHERE customer = 2")
assert cur.rowcount == 2

# Joins and qualified stars see only the declared columns.
cur.execute("CREATE TABLE customer (id INT PRIMARY KEY, name VARCHAR(8))")
cur.execute("INSERT INTO customer VALUES (1, 'ann'), (3, 'bo')")
assert rows("SELECT c.name, SUM(h.amount) FROM customer c JOIN history h "
            "ON h.customer = c.id GROUP BY c.name ORDER BY c.name") == [
    ("ann", 30), ("bo", 2.5)]
cur.execute("SELECT h.* FROM customer c, history h WHERE h.customer = c.id AND c.id = 3")
assert [c[0] for c in cur.description] == ["customer", "amount", "note"]
assert cur.fetchall() == ((3, 1.25, None), (3, 1.25, None))
assert error_of("SELECT nope.* FROM history") == 1051

# The hidden column is in no listing, and no name reaches it.
assert [r[0] for r in rows("DESCRIBE history")] == ["customer", "amount", "note"]
create = rows("SHOW CREATE TABLE history")[0][1]
assert "hidden" not in create and "PRIMARY" not in create, create
assert rows("SHOW INDEX FROM history") == []
assert rows("SELECT COLUMN_NAME FROM information_schema.columns "
            "WHERE TABLE_SCHEMA = 'hidden_key' AND TABLE_NAME = 'history' "
            "ORDER BY ORDINAL_POSITION") == [("customer",), ("amount",), ("note",)]
assert error_of("SELECT `#hidden_key` FROM history") == 1054
assert error_of("CREATE TABLE sneaky (`#hidden_key` INT)") == 1166
assert error_of("CREATE TABLE empty ()") in (1064, 1113)

# A unique key on a table without a primary key is still enforced.
cur.execute("CREATE TABLE tag (name VARCHAR(8) UNIQUE, uses INT)")
cur.execute("INSERT INTO tag VALUES ('x', 1), (NULL, 1), (NULL, 2)")
assert error_of("INSERT INTO tag VALUES ('x', 2)") == 1062
cur.execute("INSERT IGNORE INTO tag VALUES ('x', 3), ('y', 1)")
cur.execute("INSERT INTO tag VALUES ('y', 5) ON DUPLICATE KEY UPDATE uses = uses + 1")
assert rows("SELECT name, uses FROM tag ORDER BY name, uses") == [
    (None, 1), (None, 2), ("x", 1), ("y", 2)]

# An AUTO_INCREMENT column and a hidden key count apart: the column's values stay 1, 2, 3.
cur.execute("CREATE TABLE event (id INT AUTO_INCREMENT, what VARCHAR(8), UNIQUE KEY (id))")
cur.execute("INSERT INTO event (what) VALUES ('a'), ('b')")
cur.execute("INSERT INTO event (what) VALUES ('c')")
assert cur.lastrowid == 3
assert rows("SELECT id, what FROM event ORDER BY id") == [(1, "a"), (2, "b"), (3, "c")]

# Dropped and created again, the table starts empty.
cur.execute("DROP TABLE history")
cur.execute("CREATE TABLE history (customer INT)")
cur.execute("INSERT INTO history VALUES (7)")
assert rows("SELECT * FROM history") == [(7,)]

print("hidden key ok")
