"""Correlated subqueries answer as MySQL's: EXISTS and NOT EXISTS, scalar subqueries,
IN / NOT IN and ANY / ALL (with SQL's NULLs), nested ones naming a column two queries
out, in the select list, WHERE, HAVING, ORDER BY, GROUP BY, an aggregate's argument and
an inner join's ON; in UPDATE's SET and WHERE and DELETE's WHERE. Uncorrelated ANY and
ALL too. What is not supported yet is refused with a clear error.

The expected answers are MySQL 8's (and MariaDB's: run it with MariaDB's port and it
passes but for the Kista-only EXPLAIN lines).

Run by crates/kista/tests/sql.rs with the front end's port.
"""
from session_helpers import Session

session = Session("correlated")
cur, rows, error_of = session.cur, session.rows, session.error_of
kista = "kista" in rows("SELECT VERSION()")[0][0].lower()

cur.execute("CREATE TABLE author (id INT PRIMARY KEY, name VARCHAR(20), best INT)")
cur.execute(
    "INSERT INTO author VALUES (1, 'ann', 10), (2, 'bob', 20), (3, 'cy', 30), "
    "(4, 'Ann', NULL)"
)
cur.execute(
    "CREATE TABLE book (id INT PRIMARY KEY, author_id INT, pages INT, title VARCHAR(20))"
)
cur.execute(
    "INSERT INTO book VALUES (10, 1, 100, 'A'), (11, 1, 300, 'b'), (20, 2, 200, 'c'), "
    "(21, 2, NULL, 'd'), (40, 9, 50, 'e')"
)

# EXISTS and NOT EXISTS, once per author; the book is found by key when one names it.
assert rows(
    "SELECT id FROM author a WHERE EXISTS "
    "(SELECT 1 FROM book WHERE book.author_id = a.id) ORDER BY id"
) == [(1,), (2,)]
assert rows(
    "SELECT id FROM author WHERE NOT EXISTS "
    "(SELECT * FROM book WHERE author_id = author.id) ORDER BY id"
) == [(3,), (4,)]
assert rows(
    "SELECT name FROM author WHERE EXISTS (SELECT 1 FROM book WHERE book.id = author.best)"
    " ORDER BY id"
) == [("ann",), ("bob",)]
if kista:
    plan = rows("EXPLAIN SELECT name FROM author WHERE EXISTS "
                "(SELECT 1 FROM book WHERE book.id = author.best)")[0][0]
    assert "for each row, a correlated subquery" in plan, plan
    assert "primary key read" in plan.split("correlated subquery")[1], plan

# Scalar subqueries: NULL for no row, 1242 for several, 1241 for several columns.
assert rows(
    "SELECT id, (SELECT MAX(pages) FROM book WHERE author_id = author.id) FROM author "
    "ORDER BY id"
) == [(1, 300), (2, 200), (3, None), (4, None)]
assert rows(
    "SELECT id, (SELECT COUNT(*) FROM book WHERE author_id = author.id) AS n FROM author "
    "ORDER BY n DESC, id"
) == [(1, 2), (2, 2), (3, 0), (4, 0)]
assert rows(
    "SELECT id FROM author WHERE (SELECT COUNT(*) FROM book WHERE author_id = author.id) "
    "> 1 AND name <> 'bob' ORDER BY id"
) == [(1,)]
assert error_of("SELECT (SELECT id FROM book WHERE author_id = author.id) FROM author") == 1242
assert (
    error_of("SELECT (SELECT id, pages FROM book WHERE author_id = author.id) FROM author")
    == 1241
)

# IN and NOT IN: a NULL among the values makes a miss unknown (so NOT IN fails).
assert rows(
    "SELECT id FROM author WHERE best IN "
    "(SELECT id FROM book WHERE author_id = author.id) ORDER BY id"
) == [(1,), (2,)]
assert rows(
    "SELECT id FROM author WHERE 200 NOT IN "
    "(SELECT pages FROM book WHERE author_id = author.id) ORDER BY id"
) == [(1,), (3,), (4,)]
assert rows(
    "SELECT id, 5 NOT IN (SELECT pages FROM book WHERE author_id = author.id) FROM author "
    "ORDER BY id"
) == [(1, 1), (2, None), (3, 1), (4, 1)]

# ANY and ALL, correlated: ANY of no value is false, ALL of none true.
assert rows(
    "SELECT id FROM author WHERE 150 < ANY "
    "(SELECT pages FROM book WHERE author_id = author.id) ORDER BY id"
) == [(1,), (2,)]
assert rows(
    "SELECT id, 150 < ALL (SELECT pages FROM book WHERE author_id = author.id) FROM author "
    "ORDER BY id"
) == [(1, 0), (2, None), (3, 1), (4, 1)]
assert rows(
    "SELECT id FROM author WHERE best <> ALL "
    "(SELECT id FROM book WHERE author_id = author.id) ORDER BY id"
) == [(3,), (4,)]

# ANY and ALL, uncorrelated.
assert rows("SELECT id FROM book WHERE pages > ALL (SELECT pages FROM book WHERE id < 20)"
            " ORDER BY id") == []
assert rows("SELECT id FROM book WHERE pages >= ALL (SELECT pages FROM book WHERE id < 20)"
            " ORDER BY id") == [(11,)]
assert rows("SELECT id FROM book WHERE pages > ANY (SELECT pages FROM book WHERE id < 20)"
            " ORDER BY id") == [(11,), (20,)]
assert rows("SELECT id FROM book WHERE pages = SOME (SELECT pages FROM book WHERE id > 20)"
            " ORDER BY id") == [(40,)]
assert rows("SELECT 1 < ALL (SELECT pages FROM book), 1 < ANY (SELECT pages FROM book), "
            "1 < ALL (SELECT pages FROM book WHERE id > 99), "
            "1 = ANY (SELECT pages FROM book WHERE id > 99)") == [(None, 1, 1, 0)]

# Nested: the innermost names a column of the outermost query.
assert rows(
    "SELECT id, (SELECT MAX(b.pages) FROM book b WHERE b.author_id = a.id AND b.pages > "
    "(SELECT MIN(c.pages) FROM book c WHERE c.author_id = a.id)) FROM author a ORDER BY id"
) == [(1, 300), (2, None), (3, None), (4, None)]
assert rows(
    "SELECT id, (SELECT (SELECT COUNT(*) FROM book WHERE author_id = a.id)) FROM author a "
    "ORDER BY id"
) == [(1, 2), (2, 2), (3, 0), (4, 0)]

# Strings compare under the columns' collation; 'ann' and 'Ann' are one name.
assert rows(
    "SELECT a.id, (SELECT COUNT(*) FROM author o WHERE o.name = a.name) FROM author a "
    "ORDER BY id"
) == [(1, 2), (2, 1), (3, 1), (4, 2)]

# HAVING, ORDER BY, GROUP BY, an aggregate's argument, an inner join's ON.
assert rows(
    "SELECT name, COUNT(*) FROM author GROUP BY name HAVING COUNT(*) > "
    "(SELECT COUNT(*) FROM book WHERE book.title = author.name) ORDER BY name"
) == [("ann", 2), ("bob", 1), ("cy", 1)]
assert rows(
    "SELECT id FROM author ORDER BY (SELECT MIN(pages) FROM book WHERE author_id = author.id)"
    " DESC, id"
) == [(2,), (1,), (3,), (4,)]
assert rows(
    "SELECT (SELECT COUNT(*) FROM book WHERE author_id = author.id) AS n, COUNT(*) "
    "FROM author GROUP BY n ORDER BY n"
) == [(0, 2), (2, 2)]
assert rows(
    "SELECT SUM((SELECT COUNT(*) FROM book WHERE author_id = author.id)) FROM author"
) == [(4,)]
assert rows(
    "SELECT a.id, b.id FROM author a JOIN book b ON b.author_id = a.id AND "
    "b.pages = (SELECT MAX(pages) FROM book m WHERE m.author_id = a.id) ORDER BY a.id"
) == [(1, 11), (2, 20)]

# Many rows, few distinct outer values: every row gets its answer.
cur.execute("CREATE TABLE event (id INT PRIMARY KEY, author_id INT)")
cur.execute(
    "INSERT INTO event VALUES "
    + ", ".join(f"({i}, {i % 5})" for i in range(1, 301))
)
assert rows(
    "SELECT author_id, COUNT(*) FROM event e WHERE EXISTS "
    "(SELECT 1 FROM book WHERE book.author_id = e.author_id) GROUP BY author_id "
    "ORDER BY author_id"
) == [(1, 60), (2, 60)]
assert rows(
    "SELECT SUM((SELECT COUNT(*) FROM book WHERE author_id = e.author_id)) FROM event e"
) == [(240,)]

# UPDATE and DELETE: SET and WHERE run theirs once per row they change.
cur.execute("CREATE TABLE total (author_id INT PRIMARY KEY, pages INT)")
cur.execute("INSERT INTO total VALUES (1, 0), (2, 0), (3, 0)")
cur.execute(
    "UPDATE total SET pages = (SELECT SUM(pages) FROM book WHERE book.author_id = "
    "total.author_id)"
)
assert cur.rowcount == 3
assert rows("SELECT * FROM total ORDER BY author_id") == [(1, 400), (2, 200), (3, None)]
cur.execute(
    "UPDATE total SET pages = -1 WHERE EXISTS "
    "(SELECT 1 FROM book WHERE book.author_id = total.author_id AND book.pages IS NULL)"
)
assert cur.rowcount == 1
cur.execute("BEGIN")
cur.execute(
    "DELETE FROM total WHERE NOT EXISTS "
    "(SELECT 1 FROM book WHERE book.author_id = total.author_id)"
)
assert cur.rowcount == 1
assert rows("SELECT author_id, pages FROM total ORDER BY author_id") == [(1, 400), (2, -1)]
cur.execute("ROLLBACK")
assert rows("SELECT COUNT(*) FROM total") == [(3,)]

# A name no query has is MySQL's 1054.
assert error_of(
    "SELECT id FROM author WHERE EXISTS (SELECT 1 FROM book WHERE book.author_id = a.nope)"
) == 1054

if kista:
    # MySQL's 1093 for a subquery reading the table being changed (MariaDB runs it).
    assert error_of(
        "UPDATE total SET pages = (SELECT COUNT(*) FROM total t WHERE t.author_id = "
        "total.author_id)"
    ) == 1093
    # Not yet: a correlated subquery in a LEFT JOIN's ON (1235).
    assert error_of(
        "SELECT a.id FROM author a LEFT JOIN book b ON b.author_id = a.id AND "
        "b.pages = (SELECT MAX(pages) FROM book m WHERE m.author_id = a.id)"
    ) == 1235

print("correlated subqueries ok")
