"""INSERT ... SELECT and REPLACE ... SELECT: the query's rows are inserted as VALUES rows
would be (column list, defaults, AUTO_INCREMENT, IGNORE, ON DUPLICATE KEY UPDATE), all or
none of them, and a table may be copied into itself.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
from session_helpers import Session

session = Session("copies")
cur, rows, error_of = session.cur, session.rows, session.error_of

cur.execute("CREATE TABLE src (k INT PRIMARY KEY, v VARCHAR(10), n INT)")
cur.execute("INSERT INTO src VALUES (1, 'x', 10), (2, 'y', 20), (3, NULL, 30)")

# Every row and column, as the query gives them.
cur.execute("CREATE TABLE copy (k INT PRIMARY KEY, v VARCHAR(10), n INT)")
cur.execute("INSERT INTO copy SELECT * FROM src")
assert cur.rowcount == 3, cur.rowcount
assert rows("SELECT * FROM copy ORDER BY k") == rows("SELECT * FROM src ORDER BY k")

# A column list: the others take their defaults, AUTO_INCREMENT goes on from its counter.
cur.execute(
    "CREATE TABLE auto (id INT PRIMARY KEY AUTO_INCREMENT, v VARCHAR(10), n INT DEFAULT 7)"
)
cur.execute("INSERT INTO auto (v) VALUES ('first')")
cur.execute("INSERT INTO auto (v) SELECT v FROM src WHERE k > 1 ORDER BY k")
assert cur.lastrowid == 2, cur.lastrowid
assert rows("SELECT * FROM auto ORDER BY id") == [
    (1, "first", 7),
    (2, "y", 7),
    (3, None, 7),
], rows("SELECT * FROM auto ORDER BY id")

# A table copied into itself reads it as it was before the statement.
cur.execute("INSERT INTO src SELECT k + 100, CONCAT(v, '!'), n * 2 FROM src")
assert cur.rowcount == 3
assert rows("SELECT k, v, n FROM src WHERE k > 100 ORDER BY k") == [
    (101, "x!", 20),
    (102, "y!", 40),
    (103, None, 60),
]

# Grouped and joined queries are sources too.
cur.execute("CREATE TABLE totals (parity INT PRIMARY KEY, count_rows BIGINT, total BIGINT)")
cur.execute("INSERT INTO totals SELECT k % 2, COUNT(*), SUM(n) FROM src GROUP BY k % 2")
assert rows("SELECT * FROM totals ORDER BY parity") == [(0, 2, 60), (1, 4, 120)]
cur.execute("CREATE TABLE pairs (a INT, b INT, PRIMARY KEY (a, b))")
cur.execute("INSERT INTO pairs SELECT s.k, c.k FROM src s JOIN copy c ON c.n = s.n")
assert rows("SELECT * FROM pairs ORDER BY a") == [(1, 1), (2, 2), (3, 3), (101, 2)]

# Wrong statements change nothing: a column count that does not match, a duplicate key
# (the rows before it are not kept either), NULL into a NOT NULL column.
before = rows("SELECT * FROM copy ORDER BY k")
assert error_of("INSERT INTO copy SELECT k FROM src") == 1136
assert error_of("INSERT INTO copy SELECT k + 2, v, n FROM src") == 1062
assert rows("SELECT * FROM copy ORDER BY k") == before
cur.execute("CREATE TABLE strict (k INT PRIMARY KEY, v VARCHAR(10) NOT NULL)")
assert error_of("INSERT INTO strict SELECT k, v FROM src") == 1048
assert rows("SELECT * FROM strict") == []

# IGNORE skips the duplicates with a warning each; ON DUPLICATE KEY UPDATE updates them.
cur.execute("INSERT IGNORE INTO copy SELECT k, v, n FROM src WHERE k IN (1, 101)")
assert cur.rowcount == 1
assert rows("SHOW WARNINGS")[0][1] == 1062
# Two warnings: SHOW WARNINGS LIMIT [offset,] count pages them, SHOW COUNT(*) WARNINGS
# counts them, and neither clears them.
cur.execute("INSERT IGNORE INTO copy SELECT k, v, n FROM src WHERE k IN (1, 101)")
assert cur.rowcount == 0
assert rows("SHOW COUNT(*) WARNINGS") == [(2,)]
both = rows("SHOW WARNINGS")
assert len(both) == 2 and all(w[1] == 1062 for w in both), both
assert rows("SHOW WARNINGS LIMIT 1") == both[:1]
assert rows("SHOW WARNINGS LIMIT 1, 1") == both[1:]
assert rows("SHOW WARNINGS LIMIT 5, 1") == []
assert rows("SHOW ERRORS") == [] and rows("SHOW COUNT(*) ERRORS") == [(0,)]
# An error is kept as the statement's diagnostics: SHOW WARNINGS and SHOW ERRORS list it
# (level Error), and the next statement clears it. A statement that does not parse says
# only its error.
assert error_of("INSERT INTO copy SELECT k, v, n FROM src WHERE k = 1") == 1062
errors = rows("SHOW ERRORS")
assert len(errors) == 1 and errors[0][:2] == ("Error", 1062), errors
assert rows("SHOW WARNINGS") == errors and rows("SHOW COUNT(*) ERRORS") == [(1,)]
assert rows("SHOW ERRORS LIMIT 1, 1") == []
assert error_of("SELEKT 1") == 1064
assert [e[1] for e in rows("SHOW WARNINGS")] == [1064]
rows("SELECT 1")
assert rows("SHOW ERRORS") == []
cur.execute(
    "INSERT INTO copy SELECT k, v, n FROM src WHERE k IN (2, 102) "
    "ON DUPLICATE KEY UPDATE n = copy.n + 1000"
)
assert rows("SELECT k, n FROM copy WHERE k IN (2, 102) ORDER BY k") == [(2, 1020), (102, 40)]
cur.execute("REPLACE INTO copy SELECT k, 'replaced', 0 FROM src WHERE k = 1")
assert rows("SELECT v, n FROM copy WHERE k = 1") == [("replaced", 0)]

# Inside a transaction the query sees the transaction's own writes, and a rollback
# takes the copied rows back.
cur.execute("CREATE TABLE later (k INT PRIMARY KEY, v VARCHAR(10), n INT)")
cur.execute("BEGIN")
cur.execute("INSERT INTO src VALUES (4, 'w', 40)")
cur.execute("INSERT INTO later SELECT * FROM src WHERE k < 100")
assert rows("SELECT k FROM later ORDER BY k") == [(1,), (2,), (3,), (4,)]
cur.execute("ROLLBACK")
assert rows("SELECT COUNT(*) FROM later") == [(0,)]
assert rows("SELECT COUNT(*) FROM src WHERE k = 4") == [(0,)]

print("insert select ok")
