"""Column defaults computed per row: DEFAULT CURRENT_TIMESTAMP[(fsp)] and its synonyms,
expression defaults DEFAULT (expr), and ON UPDATE CURRENT_TIMESTAMP, which an UPDATE sets
when it changes another of the row's values; as MySQL 8 shows them in SHOW CREATE TABLE,
DESCRIBE and information_schema.COLUMNS, and refuses them where MySQL does. Also
INSERT ... SET, which gives a row by column name.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
import datetime
import sys
import time

import pymysql

from session_helpers import Session

session = Session("defaults")
cur, rows, error_of = session.cur, session.rows, session.error_of


def now():
    return datetime.datetime.utcnow().replace(microsecond=0)


cur.execute(
    "CREATE TABLE t (id INT PRIMARY KEY, v INT, "
    "ts TIMESTAMP DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, "
    "created DATETIME DEFAULT NOW(), precise DATETIME(3) DEFAULT CURRENT_TIMESTAMP(3), "
    "n INT DEFAULT (1 + 1), s VARCHAR(20) DEFAULT (CONCAT('a', 'b')), "
    "fixed DATETIME DEFAULT '2001-02-03 04:05:06')"
)

# Each inserted row without the column gets the time of its insert; one that gives a
# value keeps it; expression defaults are evaluated; a constant default is unchanged.
before = now()
cur.execute("INSERT INTO t (id, v) VALUES (1, 10), (2, 20)")
cur.execute("INSERT INTO t (id, v, ts, n, s) VALUES (3, 30, '2020-01-01 00:00:00', 5, 'given')")
cur.execute("INSERT INTO t SET id = 4, v = DEFAULT")
after = now() + datetime.timedelta(seconds=1)
got = {r[0]: r for r in rows("SELECT id, ts, created, precise, n, s, fixed FROM t")}
for id in (1, 2, 4):
    _, ts, created, precise, n, s, fixed = got[id]
    assert before <= ts <= after and before <= created <= after, got[id]
    assert before <= precise.replace(microsecond=0) <= after, got[id]
    assert (n, s, fixed) == (2, "ab", datetime.datetime(2001, 2, 3, 4, 5, 6)), got[id]
    assert ts.microsecond == 0, "CURRENT_TIMESTAMP without digits has whole seconds"
assert got[3][1:2] == (datetime.datetime(2020, 1, 1),) and got[3][4:6] == (5, "given")
# INSERT ... SELECT and REPLACE complete their rows the same way.
cur.execute("INSERT INTO t (id, v) SELECT id + 10, v FROM t WHERE id < 3")
cur.execute("REPLACE INTO t (id) VALUES (4)")
assert rows("SELECT COUNT(*) FROM t WHERE ts IS NULL OR n <> 2 AND id <> 3") == [(0,)]

# ON UPDATE: a change to another column stamps the row; an UPDATE that changes nothing,
# or that sets the column itself, does not.
cur.execute("UPDATE t SET ts = '2020-01-01 00:00:00'")
cur.execute("UPDATE t SET v = v WHERE id = 1")
assert rows("SELECT ts FROM t WHERE id = 1") == [(datetime.datetime(2020, 1, 1),)]
cur.execute("UPDATE t SET v = v + 1 WHERE id = 1")
stamped = rows("SELECT ts FROM t WHERE id = 1")[0][0]
assert stamped > datetime.datetime(2020, 1, 1), stamped
cur.execute("UPDATE t SET v = 0, ts = '2019-05-05 05:05:05' WHERE id = 2")
assert rows("SELECT ts FROM t WHERE id = 2") == [(datetime.datetime(2019, 5, 5, 5, 5, 5),)]
assert rows("SELECT created FROM t WHERE id = 2")[0][0] != datetime.datetime(2019, 5, 5, 5, 5, 5)
# ON DUPLICATE KEY UPDATE stamps the row it changes.
cur.execute("UPDATE t SET ts = '2020-01-01 00:00:00' WHERE id = 3")
cur.execute("INSERT INTO t (id, v) VALUES (3, 1) ON DUPLICATE KEY UPDATE v = v + 1")
assert rows("SELECT ts > '2020-01-01' FROM t WHERE id = 3") == [(1,)]

# How MySQL shows them.
create = rows("SHOW CREATE TABLE t")[0][1]
for expected in [
    "`ts` timestamp DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP",
    "`created` datetime DEFAULT CURRENT_TIMESTAMP",
    "`precise` datetime(3) DEFAULT CURRENT_TIMESTAMP(3)",
    "`n` int DEFAULT (1 + 1)",
    "`s` varchar(20) DEFAULT (CONCAT('a', 'b'))",
    "`fixed` datetime DEFAULT '2001-02-03 04:05:06'",
]:
    assert expected in create, (expected, create)
columns = rows(
    "SELECT COLUMN_NAME, COLUMN_DEFAULT, EXTRA FROM information_schema.COLUMNS "
    "WHERE TABLE_SCHEMA = 'defaults' AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION"
)
assert columns[2] == ("ts", "CURRENT_TIMESTAMP", "DEFAULT_GENERATED on update CURRENT_TIMESTAMP")
assert columns[5] == ("n", "1 + 1", "DEFAULT_GENERATED"), columns
assert columns[7] == ("fixed", "2001-02-03 04:05:06", ""), columns
assert rows("DESCRIBE t")[2][4:] == ("CURRENT_TIMESTAMP", "DEFAULT_GENERATED on update CURRENT_TIMESTAMP")

# A table whose definition a front end re-reads (another connection) keeps them.
other = Session("defaults", create=False)
other.cur.execute("INSERT INTO t (id) VALUES (100)")
assert other.rows("SELECT n, s, ts IS NOT NULL FROM t WHERE id = 100") == [(2, "ab", 1)]

# INSERT ... SET gives one row by column name; a column named twice is 1110.
cur.execute("INSERT INTO t SET v = 7, id = 200")
cur.execute("INSERT INTO t SET id = 200, v = 1 ON DUPLICATE KEY UPDATE v = v + 1")
assert rows("SELECT v, n, s FROM t WHERE id = 200") == [(8, 2, "ab")]
assert error_of("INSERT INTO t SET id = 201, id = 202") == 1110
assert error_of("INSERT INTO t (id, v, id) VALUES (1, 2, 3)") == 1110
assert error_of("INSERT INTO t SET id = 203, nope = 1") == 1054

# Fractional seconds are a column's: values are rounded to its digits (half up, carrying
# into the next second or day) and shown with exactly as many; DATETIME and TIME alone
# keep whole seconds.
cur.execute(
    "CREATE TABLE frac (id INT PRIMARY KEY, a DATETIME, b DATETIME(3), c TIMESTAMP(6), "
    "d TIME(2), e DATETIME(3) DEFAULT CURRENT_TIMESTAMP(3))"
)
cur.execute(
    "INSERT INTO frac (id, a, b, c, d) VALUES "
    "(1, '2020-01-01 10:00:00.5', '2020-01-01 10:00:00.1236', '2020-01-01 10:00:00', "
    "'-01:02:03.456'), "
    "(2, '2020-12-31 23:59:59.7', '2020-12-31 23:59:59.9996', '2020-01-01 10:00:00.123456', "
    "'10:00:00')"
)
assert rows("SELECT a, b FROM frac WHERE id = 2") == [
    (datetime.datetime(2021, 1, 1), datetime.datetime(2021, 1, 1))
]
assert rows("SELECT b, d FROM frac WHERE id = 1") == [
    (
        datetime.datetime(2020, 1, 1, 10, 0, 0, 124000),
        -datetime.timedelta(hours=1, minutes=2, seconds=3, microseconds=460000),
    )
]
# The text protocol shows the column's digits, as the mysql client prints them.
plain = pymysql.connect(
    host="127.0.0.1", port=int(sys.argv[1]), user="root", password="", database="defaults",
    conv={}
)
plain_cur = plain.cursor()
plain_cur.execute("SELECT a, b, c, d, e IS NOT NULL FROM frac ORDER BY id")
got = plain_cur.fetchall()
assert got == (
    ("2020-01-01 10:00:01", "2020-01-01 10:00:00.124", "2020-01-01 10:00:00.000000",
     "-01:02:03.46", "1"),
    ("2021-01-01 00:00:00", "2021-01-01 00:00:00.000", "2020-01-01 10:00:00.123456",
     "10:00:00.00", "1"),
), got
plain.close()
described = {r[0]: r[1] for r in rows("DESCRIBE frac")}
assert (described["b"], described["c"], described["d"]) == ("datetime(3)", "timestamp(6)", "time(2)")
assert "`e` datetime(3) DEFAULT CURRENT_TIMESTAMP(3)" in rows("SHOW CREATE TABLE frac")[0][1]
precision = rows(
    "SELECT COLUMN_NAME, DATETIME_PRECISION FROM information_schema.COLUMNS "
    "WHERE TABLE_SCHEMA = 'defaults' AND TABLE_NAME = 'frac' ORDER BY ORDINAL_POSITION"
)
assert precision == [("id", None), ("a", 0), ("b", 3), ("c", 6), ("d", 2), ("e", 3)], precision
# CURRENT_TIMESTAMP must have the column's digits (MySQL's 1067 and 1294).
assert error_of("CREATE TABLE e7 (t DATETIME(3) DEFAULT CURRENT_TIMESTAMP)") == 1067
assert error_of("CREATE TABLE e8 (t DATETIME DEFAULT CURRENT_TIMESTAMP(3))") == 1067
assert error_of("CREATE TABLE e9 (t TIMESTAMP(2) ON UPDATE CURRENT_TIMESTAMP)") == 1294
assert error_of("CREATE TABLE e10 (t DATETIME(7))") == 1426

# An expression default may read the row's other columns: the given values and the
# defaults of the columns before it.
cur.execute(
    "CREATE TABLE derived (id INT PRIMARY KEY, a INT, b INT DEFAULT (a * 2), "
    "c VARCHAR(20) DEFAULT (CONCAT('id-', id, '-', b)))"
)
cur.execute("INSERT INTO derived (id, a) VALUES (1, 5), (2, NULL)")
cur.execute("INSERT INTO derived (id, a, b) VALUES (3, 1, 100)")
assert rows("SELECT * FROM derived ORDER BY id") == [
    (1, 5, 10, "id-1-10"), (2, None, None, None), (3, 1, 100, "id-3-100")
]
assert error_of("CREATE TABLE e11 (id INT PRIMARY KEY, b INT DEFAULT (nope + 1))") == 1054
assert error_of("ALTER TABLE derived ALTER COLUMN a SET DEFAULT (no_such_fn())") == 1305
# Added to rows already there, such a default is computed per row: the table is copied.
cur.execute("ALTER TABLE derived ADD COLUMN e INT DEFAULT (a + 1)")
assert rows("SELECT id, e FROM derived ORDER BY id") == [(1, 6), (2, None), (3, 2)]

# SET DEFAULT NULL is no default, as an explicit DEFAULT NULL is (MySQL): the column
# still takes NULL, information_schema says NULL (not the text 'NULL'), SHOW CREATE
# TABLE prints DEFAULT NULL; on a NOT NULL column it is refused.
cur.execute("CREATE TABLE nulled (id INT PRIMARY KEY, n INT DEFAULT 7, m INT NOT NULL DEFAULT 1)")
cur.execute("ALTER TABLE nulled ALTER COLUMN n SET DEFAULT NULL")
cur.execute("INSERT INTO nulled (id) VALUES (1)")
assert rows("SELECT n, m FROM nulled") == [(None, 1)]
assert rows(
    "SELECT COLUMN_DEFAULT FROM information_schema.COLUMNS "
    "WHERE TABLE_NAME = 'nulled' AND COLUMN_NAME = 'n'"
) == [(None,)]
assert "`n` int DEFAULT NULL," in rows("SHOW CREATE TABLE nulled")[0][1]
assert error_of("ALTER TABLE nulled ALTER COLUMN m SET DEFAULT NULL") == 1067

# What MySQL refuses.
assert error_of("CREATE TABLE e1 (id INT PRIMARY KEY, n INT DEFAULT CURRENT_TIMESTAMP)") == 1067
assert error_of("CREATE TABLE e2 (id INT PRIMARY KEY, n INT ON UPDATE CURRENT_TIMESTAMP)") == 1294
assert error_of("CREATE TABLE e3 (id INT PRIMARY KEY, t DATETIME ON UPDATE 5)") == 1294
assert error_of("CREATE TABLE e4 (id INT PRIMARY KEY, t DATETIME DEFAULT NOW(7))") == 1426
assert error_of("CREATE TABLE e5 (id INT PRIMARY KEY, n INT DEFAULT (no_such_fn()))") == 1305
cur.execute("CREATE TABLE e6 (id INT PRIMARY KEY, n TINYINT DEFAULT (1000))")
assert error_of("INSERT INTO e6 (id) VALUES (1)") == 1264

print("column defaults ok")
