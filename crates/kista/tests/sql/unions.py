"""UNION [ALL | DISTINCT] answers as MySQL's: rows of each SELECT in turn, repeated rows
removed unless ALL, then the whole's ORDER BY (by result column name or position) and
LIMIT; unions as subqueries and as INSERT ... SELECT sources; clear errors for what
cannot be.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
from session_helpers import Session

session = Session("unions")
cur, rows, error_of = session.cur, session.rows, session.error_of

cur.execute("CREATE TABLE a (k INT PRIMARY KEY, v INT)")
cur.execute("INSERT INTO a VALUES (1, 10), (2, 20), (3, NULL)")
cur.execute("CREATE TABLE b (k INT PRIMARY KEY, w INT)")
cur.execute("INSERT INTO b VALUES (1, 10), (2, 3)")

# DISTINCT by default: (1, 10) is in both tables and comes once.
assert rows("SELECT k, v FROM a UNION SELECT k, w FROM b ORDER BY k, v") == [
    (1, 10),
    (2, 3),
    (2, 20),
    (3, None),
]
assert rows("SELECT k, v FROM a UNION ALL SELECT k, w FROM b ORDER BY k, v") == [
    (1, 10),
    (1, 10),
    (2, 3),
    (2, 20),
    (3, None),
]
# ORDER BY a position or the first SELECT's names; LIMIT and OFFSET of the whole.
assert rows("SELECT k FROM a UNION ALL SELECT k FROM b ORDER BY 1 DESC LIMIT 2 OFFSET 1") == [
    (2,),
    (2,),
]
assert rows("SELECT v AS x FROM a UNION SELECT w FROM b ORDER BY x DESC") == [
    (20,),
    (10,),
    (3,),
    (None,),
]
# A DISTINCT union removes repeats from everything to its left; ALL after it keeps them.
assert rows("SELECT 1 UNION ALL SELECT 1 UNION SELECT 1") == [(1,)]
assert rows("SELECT 1 UNION SELECT 1 UNION ALL SELECT 1") == [(1,), (1,)]
# Parenthesised parts; the type comes from the first part that has one.
assert rows("(SELECT NULL) UNION (SELECT 5) ORDER BY 1") == [(None,), (5,)]

# A union is a subquery and an INSERT ... SELECT source too.
assert rows("SELECT k FROM a WHERE k IN (SELECT k FROM b WHERE w > 5 UNION SELECT 3) ORDER BY k") == [
    (1,),
    (3,),
]
cur.execute("CREATE TABLE c (k INT PRIMARY KEY, v INT)")
cur.execute("INSERT INTO c SELECT k, v FROM a UNION ALL SELECT k + 10, w FROM b")
assert rows("SELECT COUNT(*), SUM(k) FROM c") == [(5, 29)]

assert error_of("SELECT k FROM a UNION SELECT k, w FROM b") == 1222
assert error_of("SELECT k FROM a UNION SELECT k FROM b ORDER BY nope") == 1054
assert error_of("SELECT k FROM a INTERSECT SELECT k FROM b") == 1235

print("unions ok")
