"""Indexes on a prefix of a column (`a(10)`), as MySQL indexes TEXT and BLOB columns: a
unique prefix refuses two rows whose values begin alike, on INSERT, UPDATE, REPLACE and
INSERT ... SELECT; the prefix follows every change of its column; listings show the
prefix (SHOW CREATE TABLE, SHOW INDEX, information_schema.STATISTICS) and never the
column that holds it.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
import pymysql

from session_helpers import Session

session = Session("prefix_indexes")
cur, rows, error_of = session.cur, session.rows, session.error_of

# evidence/in1 of sqllogictest: one row per first character.
cur.execute("CREATE TABLE t7 (a TEXT, UNIQUE (a(1)))")
cur.execute("INSERT INTO t7 VALUES ('b'), ('c'), ('d')")
assert error_of("INSERT INTO t7 VALUES ('banana')") == 1062
# The unnamed index is named after its column, as MySQL; the message names it and the
# clashing prefix, also when two rows of one statement clash.
assert [r[2] for r in rows("SHOW INDEX FROM t7")] == ["a"]
try:
    cur.execute("INSERT INTO t7 VALUES ('x1'), ('x2')")
    raise AssertionError("two rows of one prefix accepted")
except pymysql.MySQLError as error:
    assert error.args == (1062, "Duplicate entry 'x' for key 't7.a'"), error.args
cur.execute("INSERT INTO t7 VALUES (NULL), (NULL)")  # NULLs never clash
assert rows("SELECT a FROM t7 ORDER BY a") == [(None,), (None,), ("b",), ("c",), ("d",)]
assert [c[0] for c in cur.description] == ["a"]
assert rows("SELECT * FROM t7 WHERE a = 'c'") == [("c",)]

# The prefix follows UPDATE, so a value moved away frees its prefix.
cur.execute("UPDATE t7 SET a = 'east' WHERE a = 'd'")
cur.execute("INSERT INTO t7 VALUES ('dog')")
assert error_of("UPDATE t7 SET a = 'cat' WHERE a = 'b'") == 1062
assert rows("SELECT a FROM t7 WHERE a IS NOT NULL ORDER BY a") == [
    ("b",), ("c",), ("dog",), ("east",)]
cur.execute("INSERT IGNORE INTO t7 VALUES ('cow'), ('fox')")
assert cur.rowcount == 1
cur.execute("CREATE TABLE t7n (a TEXT, UNIQUE (a(1)))")
cur.execute("INSERT INTO t7n SELECT * FROM t7")
assert rows("SELECT COUNT(*) FROM t7n") == [(7,)]

# Prefixes count characters of text, bytes of binary values.
cur.execute("CREATE TABLE words (id INT PRIMARY KEY, w VARCHAR(20), b BLOB, "
            "UNIQUE KEY w2 (w(2)), KEY bk (b(3)))")
cur.execute("INSERT INTO words VALUES (1, 'über', x'00010203'), (2, 'ua', x'000102')")
assert error_of("INSERT INTO words VALUES (3, 'übel', NULL)") == 1062
assert error_of("CREATE INDEX w2 ON words (id)") == 1061  # the name is taken
# The prefix compares under its column's collation: 'UB' is 'üb' under the default.
assert error_of("INSERT INTO words VALUES (3, 'UBoot', NULL)") == 1062
cur.execute("INSERT INTO words VALUES (3, 'uc', NULL)")
cur.execute("REPLACE INTO words VALUES (2, 'ab', x'05')")
assert rows("SELECT id, w FROM words ORDER BY id") == [(1, "über"), (2, "ab"), (3, "uc")]

# Listings show the prefix and hide its column.
cur.execute("SHOW CREATE TABLE words")
create = cur.fetchall()[0][1]
assert "UNIQUE KEY `w2` (`w`(2))" in create and "KEY `bk` (`b`(3))" in create, create
assert "#" not in create, create
assert [r[0] for r in rows("DESCRIBE words")] == ["id", "w", "b"]
assert sorted(rows("SELECT INDEX_NAME, COLUMN_NAME, SUB_PART FROM information_schema.STATISTICS "
                   "WHERE TABLE_NAME = 'words'")) == [
    ("PRIMARY", "id", None), ("bk", "b", 3), ("w2", "w", 2)]
assert rows("SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_NAME = 'words'") == [(3,)]

# What MySQL refuses.
assert error_of("CREATE TABLE bad (a TEXT UNIQUE)") == 1170
assert error_of("CREATE TABLE bad (a TEXT, KEY (a))") == 1170
assert error_of("CREATE TABLE bad (a INT, KEY (a(2)))") == 1089
assert error_of("CREATE TABLE bad (a VARCHAR(3), KEY (a(4)))") == 1089
assert error_of("CREATE TABLE bad (a TEXT, KEY (a(1000)))") == 1071
assert error_of("CREATE TABLE bad (`#a` INT)") == 1166
assert error_of("SELECT `#w(2)` FROM words") == 1054

print("prefix indexes ok")
