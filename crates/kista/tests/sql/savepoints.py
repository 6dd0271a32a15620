"""Savepoints: ROLLBACK TO undoes the inserts, updates, deletes and REPLACEs made since
the savepoint, and only those, in the same transaction, which goes on and commits; the
savepoint stays, later ones go; RELEASE forgets; a missing name is error 1305; outside
a transaction SAVEPOINT marks nothing. Django's nested atomic blocks send exactly this.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
from session_helpers import Session

session = Session("savepoints")
cur, rows, error_of = session.cur, session.rows, session.error_of

cur.execute("CREATE TABLE account (id INT PRIMARY KEY, balance INT, UNIQUE KEY (balance))")
cur.execute("INSERT INTO account VALUES (1, 100), (2, 200), (3, 300)")

cur.execute("BEGIN")
cur.execute("UPDATE account SET balance = 110 WHERE id = 1")
cur.execute("SAVEPOINT before_transfer")
cur.execute("UPDATE account SET balance = balance - 50 WHERE id = 2")
cur.execute("DELETE FROM account WHERE id = 3")
cur.execute("INSERT INTO account VALUES (4, 400)")
cur.execute("REPLACE INTO account VALUES (5, 500), (1, 111)")
cur.execute("UPDATE account SET id = 6 WHERE id = 4")
cur.execute("INSERT INTO account VALUES (7, 700) ON DUPLICATE KEY UPDATE balance = 1")
cur.execute("INSERT INTO account VALUES (2, 9) ON DUPLICATE KEY UPDATE balance = 151")
assert rows("SELECT * FROM account ORDER BY id") == [
    (1, 111), (2, 151), (5, 500), (6, 400), (7, 700)]
cur.execute("ROLLBACK TO SAVEPOINT before_transfer")
# Everything since the savepoint is undone; the update before it stays.
assert rows("SELECT * FROM account ORDER BY id") == [(1, 110), (2, 200), (3, 300)]

# The savepoint stays set: roll back to it again after more work.
cur.execute("INSERT INTO account VALUES (8, 800)")
cur.execute("SAVEPOINT inner_one")
cur.execute("DELETE FROM account WHERE id = 1")
cur.execute("ROLLBACK TO before_transfer")
assert error_of("ROLLBACK TO inner_one") == 1305, "later savepoints go"
assert rows("SELECT * FROM account ORDER BY id") == [(1, 110), (2, 200), (3, 300)]

# RELEASE forgets it; the transaction commits what is left.
cur.execute("SAVEPOINT last")
cur.execute("UPDATE account SET balance = 333 WHERE id = 3")
cur.execute("RELEASE SAVEPOINT last")
assert error_of("ROLLBACK TO SAVEPOINT last") == 1305
cur.execute("COMMIT")
assert rows("SELECT * FROM account ORDER BY id") == [(1, 110), (2, 200), (3, 333)]

# Another session sees the committed rows only.
other = Session("savepoints", create=False)
assert other.rows("SELECT COUNT(*), SUM(balance) FROM account") == [(3, 643)]

# Outside a transaction a savepoint marks nothing (MySQL's rule).
cur.execute("SAVEPOINT nowhere")
assert error_of("ROLLBACK TO nowhere") == 1305

# With autocommit off, a savepoint lives in the implicit transaction.
cur.execute("SET autocommit = 0")
cur.execute("SAVEPOINT a")
cur.execute("INSERT INTO account VALUES (9, 900)")
cur.execute("ROLLBACK TO a")
cur.execute("COMMIT")
cur.execute("SET autocommit = 1")
assert rows("SELECT COUNT(*) FROM account WHERE id = 9") == [(0,)]

print("savepoints ok")
