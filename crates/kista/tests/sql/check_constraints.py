"""CHECK constraints as MySQL 8 enforces them: declared on a column or the table, named or
named `<table>_chk_<n>`, evaluated on every row INSERT, REPLACE, UPDATE and ON DUPLICATE
KEY UPDATE write (FALSE fails the statement with 3819; TRUE and NULL pass), NOT ENFORCED
ones kept and shown but not evaluated; added by ALTER TABLE only when every row passes,
dropped by DROP CONSTRAINT; shown by SHOW CREATE TABLE and information_schema.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
import pymysql

from session_helpers import Session

session = Session("checks")
cur, rows, error_of = session.cur, session.rows, session.error_of

cur.execute(
    "CREATE TABLE t (id INT PRIMARY KEY, qty INT CHECK (qty >= 0), "
    "lo INT, hi INT, note VARCHAR(10), "
    "CONSTRAINT range_ok CHECK (lo <= hi), "
    "CHECK (note <> 'bad') NOT ENFORCED)"
)
cur.execute("INSERT INTO t VALUES (1, 5, 1, 2, 'x'), (2, NULL, NULL, 3, 'bad')")
# FALSE fails the statement, and none of its rows is written.
assert error_of("INSERT INTO t VALUES (3, -1, 1, 2, 'y')") == 3819
assert error_of("INSERT INTO t VALUES (4, 1, 1, 2, 'y'), (5, 1, 3, 2, 'y')") == 3819
assert rows("SELECT id FROM t ORDER BY id") == [(1,), (2,)]
assert error_of("UPDATE t SET qty = qty - 10 WHERE id = 1") == 3819
assert error_of("UPDATE t SET lo = 9") == 3819
assert error_of("REPLACE INTO t VALUES (1, -5, 1, 2, 'x')") == 3819
assert error_of(
    "INSERT INTO t VALUES (1, 1, 1, 1, 'x') ON DUPLICATE KEY UPDATE qty = -1"
) == 3819
assert rows("SELECT qty, lo, hi FROM t WHERE id = 1") == [(5, 1, 2)]
cur.execute("UPDATE t SET qty = 0, lo = 2 WHERE id = 1")
cur.execute("INSERT INTO t VALUES (6, 1, 1, 1, 'bad')")  # NOT ENFORCED
try:
    cur.execute("INSERT INTO t VALUES (7, -7, 1, 2, 'z')")
    raise AssertionError("accepted")
except pymysql.MySQLError as error:
    assert error.args == (3819, "Check constraint 't_chk_1' is violated."), error.args

create = rows("SHOW CREATE TABLE t")[0][1]
for part in (
    "CONSTRAINT `t_chk_1` CHECK (qty >= 0)",
    "CONSTRAINT `range_ok` CHECK (lo <= hi)",
    "CONSTRAINT `t_chk_2` CHECK (note <> 'bad') /*!80016 NOT ENFORCED */",
):
    assert part in create, (part, create)
constraints = rows(
    "SELECT CONSTRAINT_NAME, CONSTRAINT_TYPE, ENFORCED FROM information_schema.TABLE_CONSTRAINTS "
    "WHERE TABLE_SCHEMA = 'checks' AND TABLE_NAME = 't' ORDER BY CONSTRAINT_NAME"
)
assert constraints == [
    ("PRIMARY", "PRIMARY KEY", "YES"),
    ("range_ok", "CHECK", "YES"),
    ("t_chk_1", "CHECK", "YES"),
    ("t_chk_2", "CHECK", "NO"),
], constraints
clauses = rows(
    "SELECT CONSTRAINT_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS "
    "WHERE CONSTRAINT_SCHEMA = 'checks' ORDER BY CONSTRAINT_NAME"
)
assert clauses == [
    ("range_ok", "lo <= hi"), ("t_chk_1", "qty >= 0"), ("t_chk_2", "note <> 'bad'")
], clauses

# ALTER TABLE adds one only if every row passes it, and drops one by name.
assert error_of("ALTER TABLE t ADD CONSTRAINT big CHECK (qty > 100)") == 3819
cur.execute("ALTER TABLE t ADD CONSTRAINT small CHECK (qty < 100)")
assert error_of("INSERT INTO t VALUES (8, 500, 1, 2, 'y')") == 3819
cur.execute("ALTER TABLE t DROP CONSTRAINT small")
cur.execute("INSERT INTO t VALUES (8, 500, 1, 2, 'y')")
assert error_of("ALTER TABLE t ADD CONSTRAINT range_ok CHECK (id > 0)") == 3822
assert error_of("ALTER TABLE t ADD CHECK (nope > 0)") == 3820
assert error_of("CREATE TABLE u (a INT CHECK (b > 0))") == 3820
# Another front end session sees them (the definition lives in the cluster).
other = Session("checks", create=False)
assert other.error_of("INSERT INTO t VALUES (9, -1, 1, 2, 'y')") == 3819

print("check constraints ok")
