"""A PyMySQL session against `kista sql`: connect, DDL, DML, transactions and errors.

Run by crates/kista/tests/sql.rs with the front end's port; exits non-zero (with the
failed assertion) when the server does not behave as MySQL does.
"""
import decimal
import sys
import threading

import pymysql

port = int(sys.argv[1])
conn = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", autocommit=True)
cur = conn.cursor()

cur.execute("CREATE DATABASE py")
cur.execute("USE py")
cur.execute(
    "CREATE TABLE accounts (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
    "owner VARCHAR(40) NOT NULL, balance DECIMAL(12,2) NOT NULL DEFAULT 0, "
    "opened DATE, UNIQUE KEY by_owner (owner))"
)

# Parameters are quoted by the driver; AUTO_INCREMENT values come back as lastrowid.
cur.execute("INSERT INTO accounts (owner, balance, opened) VALUES (%s, %s, %s)", ("ada", "100.50", "2024-02-29"))
first = cur.lastrowid
assert first >= 1, first
cur.executemany("INSERT INTO accounts (owner, balance) VALUES (%s, %s)", [("bob", 20), ("cy", 5)])
assert cur.rowcount == 2, cur.rowcount

cur.execute("SELECT id, owner, balance, opened FROM accounts WHERE id = %s", (first,))
row = cur.fetchone()
assert row[1] == "ada" and row[2] == decimal.Decimal("100.50"), row
assert str(row[3]) == "2024-02-29", row

cur.execute("SELECT owner FROM accounts WHERE owner = 'bob'")
assert cur.fetchall() == (("bob",),)
cur.execute("SELECT COUNT(*), SUM(balance) FROM accounts")
assert cur.fetchone() == (3, decimal.Decimal("125.50"))
cur.execute("SELECT owner FROM accounts WHERE balance BETWEEN 1 AND 50 ORDER BY owner DESC")
assert cur.fetchall() == (("cy",), ("bob",))

# Errors carry MySQL's codes.
def error_code(sql, args=None):
    try:
        cur.execute(sql, args)
    except pymysql.MySQLError as error:
        return error.args[0]
    raise AssertionError("no error from " + sql)

assert error_code("INSERT INTO accounts (id, owner) VALUES (%s, 'dup')", (first,)) == 1062
assert error_code("SELECT nothing FROM accounts") == 1054
assert error_code("SELECT * FROM missing") == 1146
assert error_code("SELEKT 1") == 1064
assert error_code("INSERT INTO accounts (owner, balance) VALUES (NULL, 1)") == 1048
assert error_code("INSERT INTO accounts (owner) VALUES (%s)", ("x" * 41,)) == 1406

# A transaction sees its own changes; ROLLBACK undoes them, COMMIT keeps them.
conn.begin()
cur.execute("UPDATE accounts SET balance = balance - 10 WHERE owner = 'ada'")
cur.execute("UPDATE accounts SET balance = balance + 10 WHERE owner = 'bob'")
cur.execute("SELECT balance FROM accounts WHERE id = %s", (first,))
assert cur.fetchone() == (decimal.Decimal("90.50"),)
conn.rollback()
cur.execute("SELECT balance FROM accounts WHERE id = %s", (first,))
assert cur.fetchone() == (decimal.Decimal("100.50"),)

conn.begin()
cur.execute("DELETE FROM accounts WHERE owner = 'cy'")
conn.commit()
cur.execute("SELECT COUNT(*) FROM accounts")
assert cur.fetchone() == (2,)

# A transaction's scans see its own inserts, changes and deletes (the data nodes scan
# committed rows only; the front end adds the rows the transaction wrote).
conn.begin()
cur.execute("INSERT INTO accounts (owner, balance) VALUES ('dee', 7)")
cur.execute("UPDATE accounts SET balance = 3 WHERE owner = 'bob'")
cur.execute("SELECT owner FROM accounts WHERE balance < 10 ORDER BY owner")
assert cur.fetchall() == (("bob",), ("dee",)), "a scan finds its own insert and change"
cur.execute("UPDATE accounts SET balance = balance + 1 WHERE balance < 10")
assert cur.rowcount == 2, cur.rowcount
cur.execute("DELETE FROM accounts WHERE owner = 'ada'")
cur.execute("SELECT COUNT(*), SUM(balance) FROM accounts")
assert cur.fetchone() == (2, decimal.Decimal("12.00")), "bob 4 + dee 8, ada gone"
cur.execute(
    "SELECT a.owner, b.owner FROM accounts a JOIN accounts b ON b.balance > a.balance"
)
assert cur.fetchall() == (("bob", "dee"),), "a joined table's scan sees them too"
conn.rollback()
cur.execute("SELECT owner, balance FROM accounts ORDER BY owner")
assert cur.fetchall() == (("ada", decimal.Decimal("100.50")), ("bob", decimal.Decimal("20.00")))

# INSERT IGNORE and ON DUPLICATE KEY UPDATE find duplicates by unique index too, not only by
# primary key: the clash is ignored (a 1062 warning) or the clashing row updated.
cur.execute("INSERT IGNORE INTO accounts (owner, balance) VALUES ('ada', 1), ('fay', 2)")
assert cur.rowcount == 1, cur.rowcount
cur.execute("SHOW WARNINGS")
assert [w[1] for w in cur.fetchall()] == [1062]
# The counts a SELECT reads are the statement's before it (SHOW WARNINGS keeps them); the
# SELECT itself starts the list afresh.
cur.execute("SELECT @@warning_count, @@session.error_count")
assert cur.fetchall() == ((1, 0),)
cur.execute("SELECT @@warning_count")
assert cur.fetchall() == ((0,),)
cur.execute(
    "INSERT INTO accounts (owner, balance) VALUES ('bob', 5) "
    "ON DUPLICATE KEY UPDATE balance = balance + VALUES(balance)"
)
assert cur.rowcount == 2, cur.rowcount
cur.execute("SELECT owner, balance FROM accounts ORDER BY owner")
assert cur.fetchall() == (
    ("ada", decimal.Decimal("100.50")),
    ("bob", decimal.Decimal("25.00")),
    ("fay", decimal.Decimal("2.00")),
)
# Rows of one statement clash with each other as with stored rows, each meeting the rows
# as the statement's earlier rows left them (MySQL goes row by row): kim is inserted, then
# updated; bob is updated twice.
cur.execute(
    "INSERT INTO accounts (owner, balance) VALUES ('kim', 1), ('kim', 2), ('bob', 1), "
    "('bob', 1) ON DUPLICATE KEY UPDATE balance = balance + VALUES(balance)"
)
assert cur.rowcount == 7, cur.rowcount
cur.execute("SELECT owner, balance FROM accounts WHERE owner IN ('bob', 'kim') ORDER BY owner")
assert cur.fetchall() == (("bob", decimal.Decimal("27.00")), ("kim", decimal.Decimal("3.00")))
cur.execute("DELETE FROM accounts WHERE owner IN ('fay', 'kim')")
cur.execute("UPDATE accounts SET balance = 20 WHERE owner = 'bob'")

# UPDATE and DELETE with ORDER BY ... LIMIT change the first rows in that order.
cur.execute("INSERT INTO accounts (owner, balance) VALUES ('gus', 1), ('hal', 2), ('ida', 3)")
cur.execute("UPDATE accounts SET balance = balance * 10 WHERE balance < 10 ORDER BY balance DESC LIMIT 2")
assert cur.rowcount == 2, cur.rowcount
cur.execute("DELETE FROM accounts WHERE balance < 50 ORDER BY balance DESC, owner LIMIT 1")
cur.execute("SELECT owner, balance FROM accounts WHERE balance < 50 ORDER BY owner")
assert cur.fetchall() == (
    ("bob", decimal.Decimal("20.00")),
    ("gus", decimal.Decimal("1.00")),
    ("hal", decimal.Decimal("20.00")),
), "hal and ida were multiplied, then ida (30) deleted"
cur.execute("DELETE FROM accounts WHERE owner IN ('gus', 'hal')")

# A second connection sees what the first committed.
other = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", database="py")
with other.cursor() as c:
    c.execute("SELECT owner FROM accounts ORDER BY id")
    assert c.fetchall() == (("ada",), ("bob",))
other.close()

# A deadlock: each transaction waits for a row the other holds. One of them gets 1213 and is
# rolled back (well before the 1.2 s lock wait timeout would end it); the other goes on.
a = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", database="py")
b = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", database="py")
a.begin()
b.begin()
a.cursor().execute("UPDATE accounts SET balance = balance + 1 WHERE owner = 'ada'")
b.cursor().execute("UPDATE accounts SET balance = balance + 1 WHERE owner = 'bob'")
outcomes = {}

def update(name, conn, owner):
    try:
        conn.cursor().execute("UPDATE accounts SET balance = balance + 1 WHERE owner = %s", (owner,))
        outcomes[name] = "ok"
    except pymysql.MySQLError as error:
        outcomes[name] = error.args[0]

waiter = threading.Thread(target=update, args=("a", a, "bob"))
waiter.start()
update("b", b, "ada")
waiter.join(30)
assert not waiter.is_alive(), "the deadlock was never broken"
assert sorted(outcomes.values(), key=str) == [1213, "ok"], outcomes
a.commit()
b.commit()
cur.execute("SELECT owner, balance FROM accounts ORDER BY owner")
# The survivor added 1 to both rows; the victim's change was rolled back.
assert cur.fetchall() == (("ada", decimal.Decimal("101.50")), ("bob", decimal.Decimal("21.00"))), outcomes
a.close()
b.close()

# Inside a transaction an UPDATE's or DELETE's write goes with the next statement or the
# commit (a table without unique keys): the transaction's own reads see it at once, other
# sessions only once it commits, and a rollback leaves nothing of it.
cur.execute("CREATE TABLE ledger (id INT PRIMARY KEY, k INT NOT NULL, note VARCHAR(20), KEY by_k (k))")
cur.execute("INSERT INTO ledger VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c')")
committed = ((1, 10, "a"), (2, 20, "b"), (3, 30, "c"))
t = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", database="py")
tc = t.cursor()
t.begin()
tc.execute("UPDATE ledger SET k = k + 1 WHERE id = 1")
assert tc.rowcount == 1, tc.rowcount
tc.execute("UPDATE ledger SET note = 'changed' WHERE id = 2")
tc.execute("DELETE FROM ledger WHERE id = 3")
assert tc.rowcount == 1, tc.rowcount
tc.execute("SELECT id FROM ledger WHERE id = 3")
assert tc.fetchall() == (), "the transaction sees its delete"
tc.execute("INSERT INTO ledger VALUES (3, 33, 'new')")
tc.execute("SELECT id, k, note FROM ledger ORDER BY id")
mine = ((1, 11, "a"), (2, 20, "changed"), (3, 33, "new"))
assert tc.fetchall() == mine, "a scan sees the transaction's writes"
tc.execute("SELECT id FROM ledger WHERE k = 11")
assert tc.fetchall() == ((1,),), "so does an index range"
cur.execute("SELECT id, k, note FROM ledger ORDER BY id")
assert cur.fetchall() == committed, "others see the committed rows"
tc.execute("UPDATE ledger SET note = 'last' WHERE id = 2")
t.commit()
cur.execute("SELECT id, k, note FROM ledger ORDER BY id")
assert cur.fetchall() == ((1, 11, "a"), (2, 20, "last"), (3, 33, "new")), "committed, the last update too"
t.begin()
tc.execute("UPDATE ledger SET k = 0 WHERE id = 1")
tc.execute("DELETE FROM ledger WHERE id = 2")
t.rollback()
cur.execute("SELECT id, k, note FROM ledger ORDER BY id")
assert cur.fetchall() == ((1, 11, "a"), (2, 20, "last"), (3, 33, "new")), "rolled back"
t.close()

# A computed column of no row, or of NULLs only, still has a type (Go's driver refuses a
# column typed NULL): integers for truth values and integer arithmetic, DECIMAL for /
# and SUM.
from pymysql.constants import FIELD_TYPE

cur.execute("SELECT -id, id / 2, id > 1, SUM(id), NULL + id, MAX(-id) FROM ledger WHERE id > 99")
types = [column[1] for column in cur.description]
assert types == [FIELD_TYPE.LONGLONG, FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.LONGLONG,
                 FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.LONGLONG, FIELD_TYPE.LONGLONG], types
# CASE in both forms, NULLIF and IFNULL.
cur.execute(
    "SELECT id, CASE WHEN id = 1 THEN 'one' WHEN id > 2 THEN 'many' END, "
    "CASE note WHEN 'a' THEN 1 WHEN 'new' THEN 2 ELSE 0 END, "
    "NULLIF(id, 3), IFNULL(NULLIF(id, 1), -1) FROM ledger ORDER BY id"
)
assert cur.fetchall() == (
    (1, "one", 1, 1, -1),
    (2, None, 0, 2, 2),
    (3, "many", 2, None, 3),
), "CASE, NULLIF, IFNULL"

# DIV binds as * does, and a DIV with nothing after it is a syntax error, not a lost
# connection.
cur.execute("SELECT 7 DIV 2 + 1, 7 DIV 2 * 3")
assert cur.fetchall() == ((4, 9),)
try:
    cur.execute("SELECT 7 DIV")
    raise AssertionError("accepted")
except pymysql.MySQLError as error:
    assert error.args[0] == 1064, error

cur.execute("DROP DATABASE py")
conn.close()
print("pymysql session ok")
