"""RIGHT JOIN, JOIN ... USING and NATURAL JOIN answer as MySQL: USING and NATURAL
compare the named (or common) columns, list each once and first for `*`, and let an
unqualified name reach it; RIGHT JOIN keeps the right table's unmatched rows and lists
the left table's columns first; a nested join in parentheses pairs its own tables first
(under LEFT JOIN, a row with no pair gets NULLs for all of them).

Run by crates/kista/tests/sql.rs with the front end's port.
"""
from session_helpers import Session

session = Session("join_forms")
cur, rows, error_of = session.cur, session.rows, session.error_of

cur.execute("CREATE TABLE customer (id INT PRIMARY KEY, name VARCHAR(10), region INT)")
cur.execute("CREATE TABLE orders (oid INT PRIMARY KEY, id INT, total INT, region INT)")
cur.execute("CREATE TABLE region (region INT PRIMARY KEY, rname VARCHAR(10))")
cur.execute("INSERT INTO customer VALUES (1, 'ann', 10), (2, 'bo', 20), (3, 'cy', 30)")
cur.execute("INSERT INTO orders VALUES (100, 1, 5, 10), (101, 1, 7, 10), (102, 2, 9, 99), "
            "(103, 9, 1, 10)")
cur.execute("INSERT INTO region VALUES (10, 'north'), (20, 'south')")

# USING: the column once, first; unqualified names reach it; qualified ones both sides.
assert rows("SELECT * FROM customer JOIN orders USING (id) ORDER BY oid") == [
    (1, "ann", 10, 100, 5, 10), (1, "ann", 10, 101, 7, 10), (2, "bo", 20, 102, 9, 99)]
assert [c[0] for c in cur.description] == ["id", "name", "region", "oid", "total", "region"]
assert rows("SELECT id, customer.id, orders.id FROM customer JOIN orders USING (id) "
            "WHERE oid = 102") == [(2, 2, 2)]
assert rows("SELECT c.name, COUNT(oid) FROM customer c LEFT JOIN orders o USING (id) "
            "GROUP BY c.name ORDER BY c.name") == [("ann", 2), ("bo", 1), ("cy", 0)]
assert rows("SELECT * FROM customer JOIN orders USING (id, region) ORDER BY oid") == [
    (1, 10, "ann", 100, 5), (1, 10, "ann", 101, 7)]

# NATURAL: USING of every column the tables share.
assert rows("SELECT * FROM customer NATURAL JOIN orders ORDER BY oid") == [
    (1, 10, "ann", 100, 5), (1, 10, "ann", 101, 7)]
assert rows("SELECT name, rname FROM customer NATURAL JOIN region ORDER BY name") == [
    ("ann", "north"), ("bo", "south")]
assert rows("SELECT name, rname FROM customer NATURAL LEFT JOIN region ORDER BY name") == [
    ("ann", "north"), ("bo", "south"), ("cy", None)]

# RIGHT JOIN keeps the right table's unmatched rows; `*` lists the left table first.
assert rows("SELECT * FROM customer RIGHT JOIN orders ON customer.id = orders.id "
            "ORDER BY oid") == [
    (1, "ann", 10, 100, 1, 5, 10), (1, "ann", 10, 101, 1, 7, 10),
    (2, "bo", 20, 102, 2, 9, 99), (None, None, None, 103, 9, 1, 10)]
assert rows("SELECT o.oid, c.name FROM customer c RIGHT OUTER JOIN orders o USING (id) "
            "ORDER BY o.oid") == [(100, "ann"), (101, "ann"), (102, "bo"), (103, None)]
assert rows("SELECT id FROM customer RIGHT JOIN orders USING (id) ORDER BY oid") == [
    (1,), (1,), (2,), (9,)]
assert rows("SELECT r.rname, c.name FROM customer c RIGHT JOIN region r "
            "ON c.region = r.region JOIN orders o ON o.region = r.region "
            "WHERE o.oid = 100") == [("north", "ann")]

# A derived table or a view as the first table of a join.
assert rows("SELECT d.id, o.total FROM (SELECT id FROM customer WHERE region = 10) AS d "
            "JOIN orders o ON o.id = d.id ORDER BY o.oid") == [(1, 5), (1, 7)]
cur.execute("CREATE VIEW north AS SELECT id, name FROM customer WHERE region <= 20")
assert rows("SELECT n.name, o.oid FROM north n JOIN orders o USING (id) ORDER BY o.oid") == [
    ("ann", 100), ("ann", 101), ("bo", 102)]
assert rows("SELECT c.id, COUNT(o.oid) FROM (SELECT id FROM customer) c "
            "LEFT JOIN orders o ON o.id = c.id GROUP BY c.id ORDER BY c.id") == [
    (1, 2), (2, 1), (3, 0)]
assert rows("SELECT * FROM north JOIN region r ON r.region = 10 WHERE north.id = 1") == [
    (1, "ann", 10, "north")]
# ... and anywhere after: a LEFT JOIN to a grouped derived table, a view joined with USING.
assert rows("SELECT c.name, t.spent FROM customer c LEFT JOIN "
            "(SELECT id, SUM(total) AS spent FROM orders GROUP BY id) AS t ON t.id = c.id "
            "ORDER BY c.name") == [("ann", 12), ("bo", 9), ("cy", None)]
assert rows("SELECT o.oid, n.name FROM orders o JOIN north n USING (id) ORDER BY o.oid") == [
    (100, "ann"), (101, "ann"), (102, "bo")]
assert rows("SELECT c.name, e.ENGINE FROM customer c JOIN information_schema.ENGINES e "
            "ON e.ENGINE = 'ndbcluster' WHERE c.id = 1") == [("ann", "ndbcluster")]

# What MySQL refuses.
assert error_of("SELECT * FROM customer JOIN orders USING (nope)") == 1054
assert error_of("SELECT * FROM customer JOIN orders USING (oid)") == 1054
assert error_of("SELECT * FROM customer c JOIN orders o ON c.id = o.id "
                "JOIN region USING (region)") == 1052
assert error_of("SELECT region FROM customer JOIN orders USING (id)") == 1052

# A table reached by no key is hash joined on the integer columns ON (or an inner join's
# WHERE) equates with the rows before it; the answers are those of trying every pair:
# NULL matches nothing, signed and unsigned values meet, a string value is converted as
# MySQL converts it, and a LEFT JOIN keeps the rows that found none.
cur.execute("CREATE TABLE hl (id INT PRIMARY KEY, v INT, s VARCHAR(5), u BIGINT UNSIGNED)")
cur.execute("INSERT INTO hl VALUES (1, 10, '10', 10), (2, NULL, 'x', NULL), "
            "(3, 20, '30.0', 20), (4, 10, '10', 10)")
cur.execute("CREATE TABLE hr (id INT PRIMARY KEY, w INT, tag VARCHAR(5))")
cur.execute("INSERT INTO hr VALUES (1, 10, 'a'), (2, 10, 'b'), (3, NULL, 'c'), (4, 30, 'd')")
plan = rows("EXPLAIN SELECT hl.id, hr.tag FROM hl JOIN hr ON hr.w = hl.v")
assert "hash joined on `w`" in str(plan), plan
pairs = [(1, "a"), (1, "b"), (4, "a"), (4, "b")]
assert rows("SELECT hl.id, hr.tag FROM hl JOIN hr ON hr.w = hl.v ORDER BY 1, 2") == pairs
assert rows("SELECT hl.id, hr.tag FROM hl LEFT JOIN hr ON hr.w = hl.v ORDER BY 1, 2") == [
    (1, "a"), (1, "b"), (2, None), (3, None), (4, "a"), (4, "b")]
assert rows("SELECT hl.id, hr.tag FROM hl JOIN hr ON hr.w = hl.u ORDER BY 1, 2") == pairs
assert rows("SELECT hl.id, hr.tag FROM hl JOIN hr ON hr.w = hl.s ORDER BY 1, 2") == [
    (1, "a"), (1, "b"), (3, "d"), (4, "a"), (4, "b")]
assert rows("SELECT hl.id, hr.tag FROM hl JOIN hr ON hr.w = hl.v + 10") == [(3, "d")]
assert rows("SELECT COUNT(*) FROM hl, hr WHERE hr.w = hl.v AND hr.tag <> 'b'") == [(2,)]

# Strings hash by their weight keys under the comparison's collation: the default
# collation ignores case and accents, utf8mb4_bin trailing spaces, a COLLATE decides; a
# string column equated with a number compares as numbers, pair by pair.
cur.execute("CREATE TABLE sl (id INT PRIMARY KEY, name VARCHAR(10), code VARCHAR(10) "
            "COLLATE utf8mb4_bin, n INT)")
cur.execute("INSERT INTO sl VALUES (1, 'Apple', 'x ', 7), (2, 'éclair', 'X', 8), "
            "(3, NULL, NULL, 9), (4, 'pear', 'y', 10)")
cur.execute("CREATE TABLE sr (id INT PRIMARY KEY, name VARCHAR(10), code VARCHAR(10) "
            "COLLATE utf8mb4_bin, num VARCHAR(10))")
cur.execute("INSERT INTO sr VALUES (1, 'apple', 'x', '7'), (2, 'ECLAIR', 'x', '7.0'), "
            "(3, NULL, 'y', '8e0'), (4, 'APPLE ', 'X', 'ten')")
plan = rows("EXPLAIN SELECT sl.id, sr.id FROM sl JOIN sr ON sr.name = sl.name")
assert "hash joined on `name`" in str(plan), plan
assert rows("SELECT sl.id, sr.id FROM sl JOIN sr ON sr.name = sl.name ORDER BY 1, 2") == [
    (1, 1), (2, 2)]
assert rows("SELECT sl.id, sr.id FROM sl LEFT JOIN sr ON sr.code = sl.code ORDER BY 1, 2") == [
    (1, 1), (1, 2), (2, 4), (3, None), (4, 3)]
assert rows("SELECT sl.id, sr.id FROM sl JOIN sr "
            "ON sr.code COLLATE utf8mb4_0900_ai_ci = sl.code ORDER BY 1, 2") == [
    (2, 1), (2, 2), (2, 4), (4, 3)]
plan = rows("EXPLAIN SELECT sl.id, sr.id FROM sl JOIN sr ON sr.num = sl.n")
assert "matched in the front end" in str(plan), plan
assert rows("SELECT sl.id, sr.id FROM sl JOIN sr ON sr.num = sl.n ORDER BY 1, 2") == [
    (1, 1), (1, 2), (2, 3)]

# Nested joins in parentheses (Sequelize's many-to-many include): the nest's tables pair
# first; a customer whose orders have no region of their own still comes back, once, with
# NULLs for both tables (a flat LEFT JOIN chain would keep the order).
cur.execute("CREATE TABLE tag (tid INT PRIMARY KEY, label VARCHAR(10))")
cur.execute("CREATE TABLE customer_tag (id INT, tid INT, PRIMARY KEY (id, tid))")
cur.execute("INSERT INTO tag VALUES (1, 'vip'), (2, 'new')")
cur.execute("INSERT INTO customer_tag VALUES (1, 1), (1, 2), (2, 2), (3, 7)")
assert rows(
    "SELECT c.name, t.label FROM customer c LEFT OUTER JOIN (customer_tag ct INNER JOIN tag t "
    "ON t.tid = ct.tid) ON ct.id = c.id ORDER BY c.name, t.label") == [
    ("ann", "new"), ("ann", "vip"), ("bo", "new"), ("cy", None)]
assert rows(
    "SELECT c.name, ct.tid, t.label FROM customer c LEFT JOIN customer_tag ct ON ct.id = c.id "
    "LEFT JOIN tag t ON t.tid = ct.tid WHERE c.id = 3") == [("cy", 7, None)], "flat differs"
assert rows(
    "SELECT c.name, o.oid, r.rname FROM customer c LEFT JOIN (orders o JOIN region r "
    "ON r.region = o.region) ON o.id = c.id ORDER BY c.name, o.oid") == [
    ("ann", 100, "north"), ("ann", 101, "north"), ("bo", None, None), ("cy", None, None)]
assert rows(
    "SELECT c.name, o.oid FROM customer c JOIN (orders o JOIN region r "
    "ON r.region = o.region) ON o.id = c.id ORDER BY o.oid") == [("ann", 100), ("ann", 101)]
# A nest with a LEFT JOIN inside, one inside another, one first in FROM, a WHERE on it.
assert rows(
    "SELECT c.name, o.oid, r.rname FROM customer c LEFT JOIN (orders o LEFT JOIN region r "
    "ON r.region = o.region) ON o.id = c.id ORDER BY c.name, o.oid") == [
    ("ann", 100, "north"), ("ann", 101, "north"), ("bo", 102, None), ("cy", None, None)]
assert rows(
    "SELECT c.name, ct.tid, t.label, r.rname FROM customer c LEFT JOIN (customer_tag ct JOIN "
    "(tag t JOIN region r ON r.region = t.tid * 10) ON t.tid = ct.tid) ON ct.id = c.id "
    "ORDER BY c.name, ct.tid") == [
    ("ann", 1, "vip", "north"), ("ann", 2, "new", "south"), ("bo", 2, "new", "south"),
    ("cy", None, None, None)]
assert rows(
    "SELECT o.oid, r.rname, c.name FROM (orders o JOIN region r ON r.region = o.region) "
    "LEFT JOIN customer c ON c.id = o.id ORDER BY o.oid") == [
    (100, "north", "ann"), (101, "north", "ann"), (103, "north", None)]
assert rows(
    "SELECT c.name FROM customer c LEFT JOIN (orders o JOIN region r ON r.region = o.region) "
    "ON o.id = c.id WHERE r.rname IS NULL ORDER BY c.name") == [("bo",), ("cy",)]
# Equal rows before the nest each keep their own matches or NULLs.
cur.execute("CREATE TABLE twice (id INT)")
cur.execute("INSERT INTO twice VALUES (1), (1), (3), (3)")
assert rows(
    "SELECT tw.id, t.label FROM twice tw LEFT JOIN (customer_tag ct JOIN tag t "
    "ON t.tid = ct.tid) ON ct.id = tw.id ORDER BY tw.id, t.label") == [
    (1, "new"), (1, "new"), (1, "vip"), (1, "vip"), (3, None), (3, None)]
plan = str(rows(
    "EXPLAIN SELECT * FROM customer c LEFT JOIN (customer_tag ct JOIN tag t ON t.tid = ct.tid) "
    "ON ct.id = c.id"))
assert "left join of 2 tables nested in parentheses" in plan, plan

print("join forms ok")
