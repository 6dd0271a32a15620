"""ALTER TABLE while the table serves: every in-place form and every copying form runs
under a concurrent load of multi-statement transactions (four connections updating,
inserting and deleting rows), with every row as the writers left it afterwards. No
transaction fails, except one open when a copying ALTER begins or switches that uses the
table again: it is refused whole with 1412 (retry), so that it never sees both
definitions.
Then RENAME, AUTO_INCREMENT, a unique index that meets a duplicate, a copy that meets a
value the new type cannot hold, and the forms refused with 1846.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
import sys
import threading
import time

import pymysql

from session_helpers import Session

session = Session("alter")
cur, rows, error_of = session.cur, session.rows, session.error_of
port = int(sys.argv[1])

ROWS = 2000
WRITERS = 4
cur.execute(
    "CREATE TABLE items (id INT PRIMARY KEY, k INT NOT NULL, v VARCHAR(20), n INT NOT NULL)"
)
for start in range(0, ROWS, 500):
    values = ", ".join(f"({i}, {3 * i}, 'v{i}', 0)" for i in range(start, start + 500))
    cur.execute(f"INSERT INTO items VALUES {values}")

# Errors a transaction may meet under contention, after which it runs again; anything
# else is a failure of the ALTER's promise.
RETRIED = {1205, 1213, 1297}


class Writer(threading.Thread):
    """Runs transactions on rows of its own (ids i, i + WRITERS, ...) until stopped, and
    keeps what each of them holds."""

    def __init__(self, number):
        super().__init__()
        self.number = number
        self.stop = threading.Event()
        self.n = {}
        self.v = {}
        self.extra = set()
        self.committed = 0
        self.retried = 0
        self.switched = 0
        self.failures = []

    def run(self):
        connection = pymysql.connect(
            host="127.0.0.1", port=port, user="root", password="", database="alter"
        )
        cur = connection.cursor()
        step = 0
        while not self.stop.is_set():
            step += 1
            row = self.number + WRITERS * (step * 7 % (ROWS // WRITERS))
            extra = 100_000 + self.number + WRITERS * (step % 50)
            try:
                cur.execute("BEGIN")
                cur.execute("UPDATE items SET n = n + 1 WHERE id = %s", (row,))
                cur.execute("UPDATE items SET v = %s WHERE id = %s", (f"w{step}", row))
                cur.execute("SELECT n FROM items WHERE id = %s", (row,))
                n = cur.fetchone()[0]
                if extra in self.extra:
                    cur.execute("DELETE FROM items WHERE id = %s", (extra,))
                else:
                    cur.execute(
                        "INSERT INTO items (id, k, v, n) VALUES (%s, %s, 'x', 0)",
                        (extra, 3 * extra),
                    )
                cur.execute("COMMIT")
            except pymysql.MySQLError as error:
                # Half the writers begin again without a ROLLBACK, as sysbench does: a
                # BEGIN commits what is open, so an error that ends the transaction
                # (1205, 1213, 1412) must leave nothing of it to commit.
                if self.number % 2 == 0:
                    cur.execute("ROLLBACK")
                if error.args[0] in RETRIED:
                    self.retried += 1
                elif error.args[0] == 1412:
                    self.switched += 1
                else:
                    self.failures.append(error.args)
                continue
            self.n[row] = n
            self.v[row] = f"w{step}"
            self.extra ^= {extra}
            self.committed += 1
        connection.close()


writers = [Writer(number) for number in range(WRITERS)]
for writer in writers:
    writer.start()


def commits_past(count):
    """Waits (60 s at most) until the writers committed more than `count` transactions."""
    deadline = time.monotonic() + 60
    while sum(w.committed for w in writers) <= count:
        failures = [f for w in writers for f in w.failures]
        assert not failures and time.monotonic() < deadline, failures[:5]
        time.sleep(0.01)


def under_load(statement):
    """Runs `statement` while the writers run, with some of their commits on each side."""
    commits_past(sum(w.committed for w in writers) + 20)
    cur.execute(statement)
    commits_past(sum(w.committed for w in writers) + 20)


under_load("ALTER TABLE items ADD COLUMN note VARCHAR(20) DEFAULT 'none'")
under_load("ALTER TABLE items ADD COLUMN c2 INT NOT NULL DEFAULT 0")
under_load("ALTER TABLE items ADD INDEX by_k (k)")
under_load("ALTER TABLE items ADD UNIQUE KEY u_k (k)")
under_load("ALTER TABLE items RENAME COLUMN note TO remark")
# CHANGE redefines the column whole (its default goes: MySQL's rule), then SET DEFAULT.
under_load("ALTER TABLE items CHANGE remark remark VARCHAR(20) NULL COMMENT 'kept'")
under_load("ALTER TABLE items ALTER COLUMN remark SET DEFAULT 'later'")
under_load(
    "ALTER TABLE items ADD COLUMN a INT, ADD COLUMN b VARCHAR(5) DEFAULT 'b', ADD INDEX by_a (a)"
)
under_load("ALTER TABLE items DROP INDEX by_k")
under_load("CREATE INDEX by_n ON items (n)")
# The forms that copy the rows into a new table while the writers go on.
COPYING = (
    "ALTER TABLE items MODIFY v VARCHAR(40) NOT NULL",
    "ALTER TABLE items MODIFY a BIGINT",
    "ALTER TABLE items DROP COLUMN c2",
    "ALTER TABLE items MODIFY b VARCHAR(5) DEFAULT 'b' AFTER id",
    "ALTER TABLE items ADD INDEX by_v (v(3)), ADD COLUMN c2 INT NOT NULL DEFAULT 2 FIRST",
)
for statement in COPYING:
    under_load(statement)
for writer in writers:
    writer.stop.set()
for writer in writers:
    writer.join()
failures = [f for w in writers for f in w.failures]
assert not failures, failures
committed = sum(w.committed for w in writers)
assert committed > 200, committed

# Every row as its writer left it; the added columns read what they were added with.
got = {r[0]: r[1:] for r in rows("SELECT id, k, v, n, remark, c2, a, b FROM items")}
# At most the transactions open when a copy began (its mirror published) or switched.
switched = sum(w.switched for w in writers)
assert switched <= 2 * WRITERS * len(COPYING), switched
expected_ids = set(range(ROWS)) | {e for w in writers for e in w.extra}
assert set(got) == expected_ids, sorted(set(got) ^ expected_ids)[:10]
for writer in writers:
    for row, n in writer.n.items():
        assert got[row][2] == n and got[row][1] == writer.v[row], (row, got[row], n)
for id, (k, v, n, remark, c2, a, b) in got.items():
    assert k == 3 * id, (id, k)
    # A row inserted under load took the remark default of its moment: none, after the
    # CHANGE none (NULL), after SET DEFAULT 'later'; the others read what it was added with.
    remarks = ("none",) if id < ROWS else ("none", None, "later")
    assert remark in remarks and (c2, a, b) == (2, None, "b"), (id, remark, c2, a, b)
# A row inserted now takes the defaults of today.
cur.execute("INSERT INTO items (id, k, v, n, c2) VALUES (500000, 1, 'n', 1, 5)")
assert rows("SELECT remark, c2, a, b FROM items WHERE id = 500000") == [("later", 5, None, "b")]
# A NOT NULL column added without a default: the rows there read MySQL's implicit value,
# and a row inserted without it is refused, as in strict mode.
cur.execute("ALTER TABLE items ADD COLUMN c3 INT NOT NULL, ADD COLUMN c4 VARCHAR(3) NOT NULL")
assert rows("SELECT DISTINCT c3, c4 FROM items") == [(0, "")]
assert error_of("INSERT INTO items (id, k, v, n) VALUES (500001, 2, 'n', 1)") == 1364

# The unique index built under load holds every row: each k finds its row, a second row
# with a k is refused.
sample = [0, 1, ROWS - 1] + sorted(e for w in writers for e in w.extra)[:3]
for id in sample:
    assert rows("SELECT id FROM items WHERE k = %s", (3 * id,)) == [(id,)], id
assert error_of("INSERT INTO items (id, k, v, n, c3, c4) VALUES (600000, 3, 'n', 0, 0, '')") == 1062
assert rows("EXPLAIN SELECT id FROM items WHERE k = 3")
indexes = {r[2] for r in rows("SHOW INDEX FROM items")}
assert indexes == {"PRIMARY", "u_k", "by_a", "by_n", "by_v"}, indexes
create = rows("SHOW CREATE TABLE items")[0][1]
for part in (
    "`remark` varchar(20) DEFAULT 'later' COMMENT 'kept'",
    "`c2` int NOT NULL DEFAULT '2'",
    "`v` varchar(40) NOT NULL",
    "`a` bigint DEFAULT NULL",
    "`b` varchar(5) DEFAULT 'b'",
    "UNIQUE KEY `u_k` (`k`)",
    "KEY `by_a` (`a`)",
    "KEY `by_v` (`v`(3))",
):
    assert part in create, (part, create)
columns = [r[0] for r in rows("SHOW COLUMNS FROM items")]
assert columns == ["c2", "id", "b", "k", "v", "n", "remark", "a", "c3", "c4"], columns
assert not [t for t in rows("SHOW TABLES") if "#" in t[0]], rows("SHOW TABLES")

# RENAME TABLE and ALTER TABLE ... RENAME TO keep the rows and the AUTO_INCREMENT counter.
cur.execute("CREATE TABLE counted (id INT AUTO_INCREMENT PRIMARY KEY, s VARCHAR(5))")
cur.execute("INSERT INTO counted (s) VALUES ('a'), ('b')")
cur.execute("RENAME TABLE counted TO renamed")
assert error_of("SELECT * FROM counted") == 1146
cur.execute("INSERT INTO renamed (s) VALUES ('c')")
cur.execute("ALTER TABLE renamed RENAME TO counted_again, AUTO_INCREMENT = 5000")
cur.execute("INSERT INTO counted_again (s) VALUES ('d')")
got = rows("SELECT id, s FROM counted_again ORDER BY s")
assert [s for _, s in got] == ["a", "b", "c", "d"] and got[3][0] >= 5000, got
assert len({id for id, _ in got}) == 4, got
cur.execute("CREATE TABLE taken (id INT PRIMARY KEY)")
assert error_of("RENAME TABLE counted_again TO taken") == 1050
assert rows("SELECT COUNT(*) FROM counted_again") == [(4,)]

# A unique index that meets a duplicate fails with 1062 and leaves nothing behind.
cur.execute("CREATE TABLE twins (id INT PRIMARY KEY, k INT)")
cur.execute("INSERT INTO twins VALUES (1, 10), (2, 20), (3, 10), (4, NULL), (5, NULL)")
assert error_of("ALTER TABLE twins ADD UNIQUE KEY u (k)") == 1062
assert {r[2] for r in rows("SHOW INDEX FROM twins")} == {"PRIMARY"}
cur.execute("DELETE FROM twins WHERE id = 3")
cur.execute("ALTER TABLE twins ADD UNIQUE KEY u (k)")
assert error_of("INSERT INTO twins VALUES (6, 20)") == 1062
cur.execute("INSERT INTO twins VALUES (7, NULL)")

# A copy that meets a value the new definition cannot hold fails as a whole, naming the
# table, and leaves the table as it was.
assert error_of("ALTER TABLE twins MODIFY k VARCHAR(1)") == 1406
assert error_of("ALTER TABLE twins MODIFY k INT NOT NULL") in (1048, 1138)
cur.execute("UPDATE twins SET k = 300 WHERE id = 4")
assert error_of("ALTER TABLE twins MODIFY k TINYINT") == 1264
assert [r[0] for r in rows("SHOW COLUMNS FROM twins")] == ["id", "k"]
assert rows("SELECT id, k FROM twins ORDER BY id") == [(1, 10), (2, 20), (4, 300), (5, None), (7, None)]
cur.execute("CREATE TABLE prefixes (id INT PRIMARY KEY, s VARCHAR(10))")
cur.execute("INSERT INTO prefixes VALUES (1, 'abc'), (2, 'abd')")
try:
    cur.execute("ALTER TABLE prefixes ADD UNIQUE KEY p (s(2))")
    refused = None
except pymysql.MySQLError as error:
    refused = error.args
assert refused and refused[0] == 1062 and "#" not in refused[1], refused
assert rows("SELECT id, s FROM prefixes ORDER BY id") == [(1, "abc"), (2, "abd")]
cur.execute("ALTER TABLE prefixes ADD UNIQUE KEY p (s(3))")
assert error_of("INSERT INTO prefixes VALUES (3, 'abcz')") == 1062
assert rows("SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_NAME = 'twins' AND COLUMN_NAME = 'k'") == [("int",)]

# A table without a primary key (its hidden key) and its trigger go through a copy.
cur.execute("CREATE TABLE keyless (a INT, b VARCHAR(5), c INT)")
cur.execute("INSERT INTO keyless VALUES (1, 'x', 0), (1, 'x', 0), (2, 'y', 0)")
cur.execute("CREATE TABLE audit (n INT)")
cur.execute(
    "CREATE TRIGGER keyless_t AFTER INSERT ON keyless FOR EACH ROW INSERT INTO audit VALUES (NEW.a)"
)
cur.execute("ALTER TABLE keyless MODIFY a BIGINT NOT NULL, DROP COLUMN b")
cur.execute("INSERT INTO keyless VALUES (3, 0)")
assert sorted(rows("SELECT a, c FROM keyless")) == [(1, 0), (1, 0), (2, 0), (3, 0)]
assert rows("SELECT n FROM audit") == [(3,)], "the trigger fires on the new table"
cur.execute("UPDATE keyless SET c = 5 WHERE a = 1")
assert rows("SELECT COUNT(*) FROM keyless WHERE c = 5") == [(2,)]
# A default computed from the row's other columns: each copied row gets its own value.
cur.execute("ALTER TABLE keyless ADD COLUMN twice BIGINT DEFAULT (a * 2)")
assert sorted(rows("SELECT a, twice FROM keyless")) == [(1, 2), (1, 2), (2, 4), (3, 6)]

# What a copy cannot do either is refused, naming the reason; so are unknown names.
for statement in (
    "ALTER TABLE twins ADD PRIMARY KEY (k)",
    "ALTER TABLE twins DROP PRIMARY KEY",
    "ALTER TABLE twins ADD COLUMN serial_no INT AUTO_INCREMENT",
):
    assert error_of(statement) == 1846, statement
assert error_of("ALTER TABLE twins ADD COLUMN k INT") == 1060
assert error_of("ALTER TABLE twins RENAME COLUMN nothing TO other") == 1054
assert error_of("ALTER TABLE twins DROP INDEX nothing") == 1091
assert error_of("ALTER TABLE twins ADD INDEX u (id)") == 1061
assert error_of("ALTER TABLE nothing ADD COLUMN x INT") == 1146
cur.execute("ALTER TABLE IF EXISTS nothing ADD COLUMN x INT")
# A statement refused as a whole changes nothing, even its clauses before the refusal.
assert error_of("ALTER TABLE twins ADD COLUMN fine INT, DROP PRIMARY KEY") == 1846
assert [r[0] for r in rows("SHOW COLUMNS FROM twins")] == ["id", "k"]

# A change every front end must see at once (a trigger) refuses the operations of a
# transaction begun before it: the transaction fails with 1412 and is rolled back whole,
# and no statement of it runs again on its own.
cur.execute("CREATE TABLE tx (id INT PRIMARY KEY, n INT)")
cur.execute("INSERT INTO tx VALUES (1, 0), (2, 0)")
other = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", database="alter")
ocur = other.cursor()
ocur.execute("BEGIN")
ocur.execute("UPDATE tx SET n = 1 WHERE id = 1")
cur.execute("CREATE TRIGGER tx_t BEFORE INSERT ON tx FOR EACH ROW SET NEW.n = NEW.n + 10")
try:
    ocur.execute("UPDATE tx SET n = 1 WHERE id = 2")
    ocur.execute("COMMIT")
    refused = None
except pymysql.MySQLError as error:
    refused = error.args[0]
assert refused == 1412, refused
# Nothing of it is left to commit, even by a BEGIN (which commits what is open).
ocur.execute("BEGIN")
ocur.execute("COMMIT")
assert rows("SELECT id, n FROM tx ORDER BY id") == [(1, 0), (2, 0)]
ocur.execute("INSERT INTO tx VALUES (3, 0)")
other.commit()
assert rows("SELECT n FROM tx WHERE id = 3") == [(10,)], "the trigger fires from then on"

retried = sum(w.retried for w in writers)
print(
    f"alter table ok ({committed} transactions under load, {retried} retried, "
    f"{switched} refused at a copy's switch)"
)
