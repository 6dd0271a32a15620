"""Statements of many rows: each sends its writes and locked reads a batch of about a
thousand operations (or a MiB) at a time, within its transaction, so a statement of any
size in rows or bytes works as a small one does: all or none of it, duplicates found
among its rows and named, savepoints undoing it.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
import io
import sys

import mysql.connector
import pymysql

from session_helpers import Session

ROWS = 10_000  # about ten batches

session = Session("big")
cur, rows, error_of = session.cur, session.rows, session.error_of
cur.execute("CREATE TABLE d (n INT PRIMARY KEY)")
cur.execute("INSERT INTO d VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)")
NUMBERS = "SELECT a.n + 10 * b.n + 100 * c.n + 1000 * e.n AS n FROM d a, d b, d c, d e"

cur.execute(
    "CREATE TABLE t (id INT PRIMARY KEY, k INT, u INT, c VARCHAR(40), UNIQUE KEY uk (u))"
)
cur.execute(f"INSERT INTO t SELECT n, n % 10, n, CONCAT('row ', n) FROM ({NUMBERS}) s")
assert cur.rowcount == ROWS, cur.rowcount
assert rows("SELECT COUNT(*), SUM(k), SUM(u) FROM t") == [(ROWS, 45_000, 49_995_000)]

# An UPDATE of every row inside a transaction: its later reads see every change, a
# ROLLBACK undoes them all, a COMMIT keeps them all.
cur.execute("BEGIN")
cur.execute("UPDATE t SET k = k + 1")
assert cur.rowcount == ROWS
assert rows("SELECT SUM(k) FROM t") == [(55_000,)]
cur.execute("ROLLBACK")
assert rows("SELECT SUM(k) FROM t") == [(45_000,)]
cur.execute("BEGIN")
cur.execute("UPDATE t SET k = k + 1 WHERE id >= 0")
cur.execute("COMMIT")
assert rows("SELECT SUM(k) FROM t") == [(55_000,)]

# A duplicate in the last batch fails the whole statement, and 1062 names its value.
try:
    cur.execute(f"INSERT INTO t SELECT n + {ROWS}, 0, n + {ROWS}, '' FROM ({NUMBERS}) s "
                f"UNION ALL SELECT {ROWS}, 0, -1, ''")
    raise AssertionError("a duplicate primary key was accepted")
except pymysql.MySQLError as error:
    assert error.args[0] == 1062, error
    assert f"'{ROWS}'" in error.args[1] and "t.PRIMARY" in error.args[1], error
assert rows("SELECT COUNT(*) FROM t") == [(ROWS,)]

# INSERT IGNORE over rows half of which exist: the others go in; ON DUPLICATE KEY UPDATE
# updates the existing half (2 per row, as MySQL counts) and inserts the rest.
half = ROWS // 2
cur.execute(f"INSERT IGNORE INTO t SELECT n + {half}, 0, n + {half}, 'new' FROM ({NUMBERS}) s")
assert cur.rowcount == half, cur.rowcount
assert rows("SELECT COUNT(*) FROM t") == [(ROWS + half,)]
cur.execute(
    f"INSERT INTO t SELECT n + {ROWS}, 0, n + {ROWS}, 'again' FROM ({NUMBERS}) s "
    "ON DUPLICATE KEY UPDATE c = 'updated'"
)
assert cur.rowcount == 2 * half + half, cur.rowcount
assert rows("SELECT c, COUNT(*) FROM t WHERE id >= %s GROUP BY c ORDER BY c", ROWS) == [
    ("again", half),
    ("updated", half),
]

# A unique key clashing on a row of the same statement, far from the first: 1062 with it.
try:
    cur.execute(f"INSERT INTO t SELECT n + 100000, 0, n % {ROWS - 1} + 200000, '' "
                f"FROM ({NUMBERS}) s")
    raise AssertionError("a duplicate unique key was accepted")
except pymysql.MySQLError as error:
    assert error.args[0] == 1062, error
    assert "'200000'" in error.args[1] and "t.uk" in error.args[1], error

# REPLACE under a savepoint reads the rows it overwrites a batch at a time; ROLLBACK TO
# puts every one back and removes the rows it added.
before = rows("SELECT SUM(k), COUNT(*) FROM t")
cur.execute("BEGIN")
cur.execute("SAVEPOINT s")
cur.execute(f"REPLACE INTO t SELECT n * 2, 7, NULL, 'replaced' FROM ({NUMBERS}) s")
assert rows("SELECT COUNT(*) FROM t WHERE c = 'replaced'") == [(ROWS,)]
cur.execute("ROLLBACK TO SAVEPOINT s")
cur.execute("COMMIT")
assert rows("SELECT SUM(k), COUNT(*) FROM t") == before

# Rows of 200 KB: forty MiB in one statement, a MiB per batch.
cur.execute("CREATE TABLE blobs (id INT PRIMARY KEY, b MEDIUMBLOB)")
cur.execute("INSERT INTO blobs SELECT a.n + 10 * b.n, REPEAT('x', 200000) FROM d a, d b")
cur.execute("INSERT INTO blobs SELECT a.n + 10 * b.n + 100, REPEAT('y', 200000) FROM d a, d b")
assert rows("SELECT COUNT(*), SUM(LENGTH(b)) FROM blobs") == [(200, 40_000_000)]

# Long expressions: a chain of a thousand terms (the bound on an expression's depth)
# runs, and so does a WHERE of 900 ORs on a column (the data node gets it as one
# OR, flat); one operator more is a syntax error, and a chain of a million (which once
# overflowed a connection's stack and ended the process) is refused before it is parsed.
assert rows("SELECT " + " + ".join(["1"] * 1000)) == [(1000,)]
names = [f"'row {n}'" for n in range(0, 9000, 10)]
ors = " OR ".join(f"c = {name}" for name in names)
expected = rows(f"SELECT COUNT(*) FROM t WHERE c IN ({', '.join(names)})")
assert expected[0][0] > 0
assert rows(f"SELECT COUNT(*) FROM t WHERE {ors}") == expected
assert error_of("SELECT " + " + ".join(["1"] * 1001)) == 1064
assert error_of("SELECT " + " + ".join(["1"] * 1_000_000)) == 1064
assert error_of("SELECT 1 FROM t WHERE " + " AND ".join(["k = 1"] * 100_000)) == 1064
assert rows("SELECT 1") == [(1,)], "the connection goes on"

# Long data (COM_STMT_SEND_LONG_DATA, a parameter sent in chunks before its execute) is
# held up to max_allowed_packet per connection: 200 MiB of it costs the server no more,
# the execute is refused with 1153, and the statement works again after.
class Chunks(io.RawIOBase):
    """`count` chunks of a MiB, read one at a time as the driver sends them."""

    def __init__(self, count):
        self.left = count

    def read(self, size=-1):
        if self.left == 0:
            return b""
        self.left -= 1
        return b"x" * (1 << 20)


raw = mysql.connector.connect(host="127.0.0.1", port=int(sys.argv[1]), user="root",
                              password="", use_pure=True)
prepared = raw.cmd_stmt_prepare(b"SELECT LENGTH(?)")
statement, parameters = prepared["statement_id"], prepared["parameters"]
raw.cmd_stmt_send_long_data(statement, 0, Chunks(200))
try:
    raw.cmd_stmt_execute(statement, data=(b"",), parameters=parameters)
    raise AssertionError("200 MiB of long data accepted")
except mysql.connector.Error as error:
    assert error.errno == 1153, error
raw.cmd_stmt_send_long_data(statement, 0, Chunks(3))
_, columns, _ = raw.cmd_stmt_execute(statement, data=(b"",), parameters=parameters)
raw.unread_result = True  # (what the driver's own cursor sets before reading rows)
assert raw.get_rows(binary=True, columns=columns)[0] == [(3 << 20,)]
raw.close()

cur.execute("DELETE FROM t")
assert cur.rowcount == ROWS + 2 * half, cur.rowcount
assert rows("SELECT COUNT(*) FROM t") == [(0,)]
print("big statements ok")
