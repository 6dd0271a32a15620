"""Text INSERTs that `kista sql` parses once per shape store exactly what the whole parse
stores, and fail with the same errors.

Each INSERT goes once as it is (cut into its shape and values where the cut applies) and
once behind a comment, which the cut leaves to the parser (crates/sql/src/text_statements.rs),
into a twin table; the two tables must then hold the same rows. Run by
crates/kista/tests/sql.rs with the front end's port.
"""
import sys

import pymysql

port = int(sys.argv[1])
conn = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", autocommit=True)
cur = conn.cursor()
cur.execute("CREATE DATABASE texts")
cur.execute("USE texts")
columns = (
    "(id INT PRIMARY KEY, big BIGINT UNSIGNED, d DECIMAL(30,0), s VARCHAR(40), "
    "b VARBINARY(40), f DOUBLE, i TINYINT, t DATE)"
)
for table in ("cut", "whole"):
    cur.execute(f"CREATE TABLE {table} {columns}")

rows = [
    "(1, 18446744073709551615, 99999999999999999999, 'héllo wörld', 'bin', 5, 127, '2024-02-29')",
    "(2, 0, 0, '', '', 0, -1, NULL)",
    "(3, 42, 12345678901234567890123, 'x y,z) ?#--\"', '(', 12345678901234567890, 1, '1999-12-31')",
    "(4, 7, 1, 'it''s', 'plain', 2.5, 0, '2000-01-01')",
    # Escapes: the text is not the bytes between the quotes.
    "(13, 8, 1, 'back\\\\slash', 'a\\nb', 8, 8, '2013-01-01')",
    "(5, 9, 2, 'five', X'0A0B', 1e3, 3, '2001-01-01')",
    "(6, 10, 3, 'six', 'six', 6, 6, '2006-06-06'), (7, 11, 4, 'seven', 'seven', 7, 7, '2007-07-07')",
]
for values in rows:
    for table, prefix in (("cut", ""), ("whole", "/* whole */ ")):
        cur.execute(f"{prefix}INSERT INTO {table} (id, big, d, s, b, f, i, t) VALUES {values}")
# The same shape again, then statements the same way wrong: the same errors both ways.
failing = [
    "(8, 1, 1, 'ok', 'ok', 1, 300, '2008-08-08')",
    "(9, 1, 1, 'far too long for forty characters of text here', 'x', 1, 1, '2009-09-09')",
    "(1, 1, 1, 'duplicate', 'x', 1, 1, '2001-01-01')",
    "(10, 1, 1, 'no date', 'x', 1, 1, 'not a date')",
    "(11, 1, 1)",
    "(12, 1, 1, N'national', 'x', 1, 1, '2012-12-12')",
]
for values in failing:
    errors = []
    for table, prefix in (("cut", ""), ("whole", "/* whole */ ")):
        try:
            cur.execute(f"{prefix}INSERT INTO {table} (id, big, d, s, b, f, i, t) VALUES {values}")
            errors.append(None)
        except pymysql.MySQLError as error:
            errors.append((error.args[0], error.args[1].replace("whole", "cut")))
    assert errors[0] == errors[1], (values, errors)
    assert errors[0] is not None, ("accepted", values)

cur.execute("SELECT * FROM cut ORDER BY id")
cut = cur.fetchall()
cur.execute("SELECT * FROM whole ORDER BY id")
whole = cur.fetchall()
assert cut == whole, (cut, whole)
assert len(cut) == 8, cut
cur.execute("DROP DATABASE texts")
print("text inserts ok")
