"""Collations as MySQL 8 has them: utf8mb4_0900_ai_ci by default (no case, no accents,
trailing spaces count), utf8mb4_bin and utf8mb4_general_ci per column and per expression
(COLLATE); comparisons, LIKE, IN, BETWEEN, ORDER BY, GROUP BY, DISTINCT, MIN/MAX, primary
and unique keys, ordered-index ranges and the data nodes' pushed filters all follow the
column's collation; two columns of different collations compared are error 1267. A
database's default collation (CREATE DATABASE ... COLLATE, as MariaDB's dumps write it) is
its new tables' where they name none.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
from session_helpers import Session

session = Session("collation_tests")
cur, rows, error_of = session.cur, session.rows, session.error_of

# Literals compare under the default collation.
assert rows("SELECT 'a' = 'A', 'a' = 'á', 'Straße' = 'strasse', 'a' = 'a '") == [(1, 1, 1, 0)]
assert rows("SELECT 'a' COLLATE utf8mb4_bin = 'A', 'a' = 'A' COLLATE utf8mb4_general_ci") == [
    (0, 1)]
assert rows("SELECT 'Banana' LIKE 'b%', 'ß' LIKE 'ss', 'Banana' LIKE BINARY 'b%'") == [
    (1, 0, 0)]
assert error_of("SELECT 'a' COLLATE latin7_estonian_cs") == 1273

# A case-insensitive primary key: one row for every spelling, found by any of them.
cur.execute("CREATE TABLE fruit (name VARCHAR(20) PRIMARY KEY, price INT, "
            "code VARCHAR(10) COLLATE utf8mb4_bin, note VARCHAR(20), "
            "UNIQUE KEY (code), KEY (note))")
cur.execute("INSERT INTO fruit VALUES ('apple', 3, 'AP', 'Red'), ('Banana', 1, 'ba', 'yellow'), "
            "('cherry', 5, 'ch', 'red'), ('Éclair', 9, 'EC', 'brown')")
assert error_of("INSERT INTO fruit VALUES ('APPLE', 4, 'x', NULL)") == 1062
assert rows("SELECT name, price FROM fruit WHERE name = 'APPLE'") == [("apple", 3)]
assert rows("SELECT name FROM fruit WHERE name IN ('CHERRY', 'cherry', 'eclair') "
            "ORDER BY name") == [("cherry",), ("Éclair",)]
cur.execute("UPDATE fruit SET price = 2 WHERE name = 'BANANA'")
assert rows("SELECT price FROM fruit WHERE name = 'banana'") == [(2,)]
assert rows("SELECT price FROM fruit WHERE name = %s", ("ÉCLAIR",)) == [(9,)]
# The key answers a comparison under its own collation only; under another one the front
# end scans and compares.
assert "primary key read" in rows("EXPLAIN SELECT * FROM fruit WHERE name = 'APPLE'")[0][0]
assert "scan of all partitions" in rows(
    "EXPLAIN SELECT * FROM fruit WHERE name COLLATE utf8mb4_bin = 'APPLE'")[0][0]
assert rows("SELECT price FROM fruit WHERE name COLLATE utf8mb4_bin = 'APPLE'") == []
assert rows("SELECT price FROM fruit WHERE name COLLATE utf8mb4_bin = 'apple'") == [(3,)]

# A utf8mb4_bin column keeps case, in its unique key as in comparisons.
cur.execute("INSERT INTO fruit VALUES ('date', 7, 'Ap', 'brown')")
assert rows("SELECT name FROM fruit WHERE code = 'ap'") == []
assert rows("SELECT name FROM fruit WHERE code = 'Ap'") == [("date",)]
assert error_of("INSERT INTO fruit VALUES ('fig', 1, 'Ap', NULL)") == 1062
assert error_of("SELECT name FROM fruit WHERE name = code") == 1267
assert rows("SELECT COUNT(*) FROM fruit WHERE name COLLATE utf8mb4_bin = code COLLATE "
            "utf8mb4_bin") == [(0,)]

# Ordering, ranges (the primary key's ordered index) and pushed filters.
assert rows("SELECT name FROM fruit ORDER BY name") == [
    ("apple",), ("Banana",), ("cherry",), ("date",), ("Éclair",)]
assert rows("SELECT name FROM fruit ORDER BY name COLLATE utf8mb4_bin") == [
    ("Banana",), ("apple",), ("cherry",), ("date",), ("Éclair",)]
# GROUP_CONCAT's ORDER BY sorts under the collation its key derives too.
assert rows("SELECT GROUP_CONCAT(name ORDER BY name) FROM fruit") == [
    ("apple,Banana,cherry,date,Éclair",)]
assert rows("SELECT GROUP_CONCAT(name ORDER BY name COLLATE utf8mb4_bin) FROM fruit") == [
    ("Banana,apple,cherry,date,Éclair",)]
# A union's columns compare under their collation (the first SELECT's), in DISTINCT and
# the union's ORDER BY: code is utf8mb4_bin, so 'AP' and 'Ap' stay apart.
assert rows("SELECT code FROM fruit UNION SELECT UPPER(code) FROM fruit ORDER BY 1") == [
    ("AP",), ("Ap",), ("BA",), ("CH",), ("EC",), ("ba",), ("ch",)]
assert rows("SELECT name FROM fruit WHERE name BETWEEN 'B' AND 'D' ORDER BY name") == [
    ("Banana",), ("cherry",)]
assert rows("SELECT name FROM fruit WHERE name > 'CHERRY' ORDER BY name") == [
    ("date",), ("Éclair",)]
assert rows("SELECT name FROM fruit WHERE note LIKE 'r%' ORDER BY name") == [
    ("apple",), ("cherry",)]
assert rows("SELECT name FROM fruit WHERE note = 'RED' AND price > 2 ORDER BY name") == [
    ("apple",), ("cherry",)]

# Grouping, DISTINCT and MIN/MAX under the column's collation.
assert rows("SELECT LOWER(note), COUNT(*) FROM fruit GROUP BY note ORDER BY 1") == [
    ("brown", 2), ("red", 2), ("yellow", 1)]
assert rows("SELECT COUNT(DISTINCT note) FROM fruit") == [(3,)]
assert len(rows("SELECT DISTINCT note FROM fruit")) == 3
assert rows("SELECT MIN(name), MAX(name) FROM fruit") == [("apple", "Éclair")]

# A table's and a column's collation, as SHOW CREATE TABLE and information_schema tell.
cur.execute("CREATE TABLE tags (tag VARCHAR(10) PRIMARY KEY, label CHAR(5) "
            "CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci) DEFAULT CHARSET=utf8mb4 "
            "COLLATE=utf8mb4_bin")
cur.execute("INSERT INTO tags VALUES ('a', 'Ä'), ('A', 'b ')")
assert rows("SELECT tag FROM tags WHERE label = 'a'") == [("a",)]
assert rows("SELECT tag FROM tags WHERE label = 'B'") == [("A",)]
assert rows("SELECT COLUMN_NAME, COLLATION_NAME FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = 'collation_tests' AND TABLE_NAME = 'tags' ORDER BY 1") == [
    ("label", "utf8mb4_general_ci"), ("tag", "utf8mb4_bin")]
# The table keeps its default: a column shows a COLLATE only where it differs, and one
# ALTER TABLE adds without its own takes it.
create = rows("SHOW CREATE TABLE tags")[0][1]
assert "`tag` varchar(10) NOT NULL" in create, create
assert "`label` char(5) COLLATE utf8mb4_general_ci" in create, create
assert create.endswith("DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"), create
cur.execute("ALTER TABLE tags ADD COLUMN note VARCHAR(5)")
assert rows("SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
            "'collation_tests' AND TABLE_NAME = 'tags' AND COLUMN_NAME = 'note'") == [
    ("utf8mb4_bin",)]
assert rows("SELECT TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
            "'collation_tests' AND TABLE_NAME = 'tags'") == [("utf8mb4_bin",)]
assert error_of("CREATE TABLE bad (a VARCHAR(3) COLLATE klingon_ci)") == 1273
assert error_of("CREATE TABLE bad (a VARCHAR(3) CHARACTER SET klingon)") == 1115
cur.execute("CREATE TABLE raw (a VARCHAR(3) CHARACTER SET binary PRIMARY KEY)")
cur.execute("INSERT INTO raw VALUES ('a'), ('A')")
assert rows("SELECT COUNT(*) FROM raw WHERE a = 'a'") == [(1,)]
assert ("utf8mb4_0900_ai_ci", "utf8mb4", 255) in rows(
    "SELECT COLLATION_NAME, CHARACTER_SET_NAME, ID FROM information_schema.COLLATIONS")
assert rows("SELECT @@collation_connection") == [("utf8mb4_0900_ai_ci",)]
# A database's default collation: its tables' where they name none (MariaDB's and MySQL
# 5.7's dumps create databases in utf8mb4_general_ci), shown by SHOW CREATE DATABASE and
# SCHEMATA; unknown names refused as MySQL refuses them.
cur.execute("CREATE DATABASE old_style /*!40100 DEFAULT CHARACTER SET utf8mb4 "
            "COLLATE utf8mb4_general_ci */")
cur.execute("CREATE TABLE old_style.t (k VARCHAR(10) PRIMARY KEY, b VARCHAR(5) COLLATE utf8mb4_bin)")
cur.execute("INSERT INTO old_style.t VALUES ('straße', 'x')")
assert rows("SELECT COUNT(*) FROM old_style.t WHERE k = 'STRASSE'") == [(0,)], "general_ci: ß is s"
assert rows("SELECT COUNT(*) FROM old_style.t WHERE k = 'STRASE'") == [(1,)]
create = rows("SHOW CREATE TABLE old_style.t")[0][1]
assert "`k` varchar(10) NOT NULL" in create, create
assert "`b` varchar(5) COLLATE utf8mb4_bin" in create, create
assert create.endswith("COLLATE=utf8mb4_general_ci"), create
assert "COLLATE utf8mb4_general_ci" in rows("SHOW CREATE DATABASE old_style")[0][1]
assert rows("SELECT DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA "
            "WHERE SCHEMA_NAME = 'old_style'") == [("utf8mb4_general_ci",)]
cur.execute("DROP DATABASE old_style")
cur.execute("CREATE DATABASE old_style")
cur.execute("CREATE TABLE old_style.t (k VARCHAR(10))")
create = rows("SHOW CREATE TABLE old_style.t")[0][1]
assert "utf8mb4_general_ci" not in create, ("dropped with its database", create)
cur.execute("DROP DATABASE old_style")
assert error_of("CREATE DATABASE bad COLLATE klingon_ci") == 1273
assert error_of("CREATE DATABASE bad CHARACTER SET klingon") == 1115
assert error_of("CREATE DATABASE bad ENCRYPTION 'Y'") == 1235
print("collations ok")
