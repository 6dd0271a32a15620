"""Long results go to the client as the scan reads them: every row arrives once, in the
client's protocol, however many the table has; a LIMIT ends the scan; an error met
after rows were sent ends the result with that error and the session goes on; a
result of a screenful or less is answered whole, as before.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
import decimal

import pymysql
import pymysql.cursors

from session_helpers import Session

ROWS = 10_000  # ten times what the front end holds before it starts sending

session = Session("streamed")
cur, rows, error_of = session.cur, session.rows, session.error_of
cur.execute("CREATE TABLE d (n INT PRIMARY KEY)")
cur.execute("INSERT INTO d VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)")
NUMBERS = "SELECT a.n + 10 * b.n + 100 * c.n + 1000 * e.n AS n FROM d a, d b, d c, d e"
cur.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT, c VARCHAR(40), maybe INT)")
cur.execute(
    f"INSERT INTO t SELECT n, n % 7, CONCAT('row ', n), IF(n >= 9000, n, NULL) "
    f"FROM ({NUMBERS}) s"
)

# Every row once, with table columns and computed ones, read as the rows arrive
# (an unbuffered cursor) and read whole.
unbuffered = session.connection.cursor(pymysql.cursors.SSCursor)
unbuffered.execute("SELECT id, c, k * 2, CONCAT(c, '!'), id / 4 FROM t")
names = [d[0] for d in unbuffered.description]
assert names == ["id", "c", "k * 2", "CONCAT(c, '!')", "id / 4"], names
seen = {}
for row in unbuffered:
    seen[row[0]] = row
assert len(seen) == ROWS, len(seen)
assert seen[1234] == (1234, "row 1234", 2 * (1234 % 7), "row 1234!", decimal.Decimal("308.5000"))
unbuffered.close()
assert sorted(r[0] for r in rows("SELECT id FROM t")) == list(range(ROWS))

# A column NULL in every row the front end held before sending still has a type.
result = rows("SELECT id, maybe + 1 FROM t")
assert len(result) == ROWS and sum(1 for r in result if r[1] is not None) == 1000
assert all(isinstance(r[1], int) for r in result if r[1] is not None)

# The WHERE, the data nodes' filter and a range decide what is sent.
assert rows("SELECT COUNT(*) FROM t") == [(ROWS,)]
odd = rows("SELECT id FROM t WHERE id % 2 = 1")
assert len(odd) == ROWS // 2 and all(r[0] % 2 == 1 for r in odd)
assert sorted(r[0] for r in rows("SELECT id FROM t WHERE id >= 2500 AND k = 3")) == [
    n for n in range(2500, ROWS) if n % 7 == 3
]

# LIMIT and OFFSET: the scan stops once enough rows were sent.
assert len(rows("SELECT * FROM t LIMIT 5")) == 5
assert len(rows("SELECT * FROM t LIMIT 0")) == 0
assert len(rows("SELECT * FROM t LIMIT 2000, 3000")) == 3000
assert len(rows("SELECT * FROM t LIMIT 9990, 100")) == 10
assert rows("SELECT id FROM t WHERE id >= 5000 LIMIT 3") == [(5000,), (5001,), (5002,)]
cur.execute("SELECT id FROM t LIMIT 1500")
assert len(cur.fetchall()) == 1500
assert rows("SELECT FOUND_ROWS()") == [(1500,)]
cur.execute("SELECT SQL_CALC_FOUND_ROWS id FROM t LIMIT 1500")
assert len(cur.fetchall()) == 1500
assert rows("SELECT FOUND_ROWS()") == [(ROWS,)]

# An error on a row after thousands were sent (the range reads in key order, the bad
# row last) ends the result with it; the session goes on.
bad_row = (
    f"SELECT id, JSON_EXTRACT(IF(id = {ROWS - 1}, 'not json', '{{}}'), '$') FROM t "
    "WHERE id >= 0"
)
for cursor_class in (pymysql.cursors.Cursor, pymysql.cursors.SSCursor):
    failing = session.connection.cursor(cursor_class)
    try:
        failing.execute(bad_row)
        failing.fetchall()
        raise AssertionError("the row's error was not reported")
    except pymysql.MySQLError as error:
        assert error.args[0] == 3141, error
    assert rows("SELECT COUNT(*) FROM t WHERE id < 10") == [(10,)]

# A join's rows go as its last table makes them: by key lookups, by a hash join, a LEFT
# JOIN's rows without a match, and a LIMIT that stops the join.
cur.execute("CREATE TABLE h (id INT PRIMARY KEY, k INT, label VARCHAR(10))")
cur.execute("INSERT INTO h VALUES (1, 0, 'zero'), (2, 1, 'one'), (3, 1, 'uno')")
by_key = rows("SELECT t.id, d.n FROM t JOIN d ON d.n = t.k")
assert sorted(by_key) == [(n, n % 7) for n in range(ROWS)]
hashed = rows("SELECT t.id, h.label FROM t JOIN h ON h.k = t.k")
assert "hash joined on `k`" in str(rows("EXPLAIN SELECT t.id FROM t JOIN h ON h.k = t.k"))
expected = sorted([(n, "zero") for n in range(ROWS) if n % 7 == 0]
                  + [(n, label) for n in range(ROWS) if n % 7 == 1 for label in ("one", "uno")])
assert sorted(hashed) == expected
outer = rows("SELECT t.id, d.n FROM t LEFT JOIN d ON d.n = t.k + 5")
assert len(outer) == ROWS
assert sum(1 for r in outer if r[1] is None) == sum(1 for n in range(ROWS) if n % 7 >= 5)
assert len(rows("SELECT t.id, h.label FROM t JOIN h ON h.k = t.k LIMIT 1200")) == 1200
assert len(rows("SELECT t.id FROM t JOIN d ON d.n = t.k WHERE t.id % 3 = 0 LIMIT 7, 2000")) == 2000

# In a transaction, rows the transaction wrote are read as it sees them.
cur.execute("BEGIN")
cur.execute("UPDATE t SET k = 100 WHERE id = 7777")
cur.execute("INSERT INTO t VALUES (-1, 100, 'new', NULL)")
assert sorted(r[0] for r in rows("SELECT id FROM t WHERE k = 100")) == [-1, 7777]
assert len(rows("SELECT id FROM t")) == ROWS + 1
cur.execute("ROLLBACK")
assert len(rows("SELECT id FROM t")) == ROWS

print("streamed results ok")
