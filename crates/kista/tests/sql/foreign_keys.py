"""Foreign keys as MySQL declares them and the data nodes enforce them: FOREIGN KEY and
column REFERENCES in CREATE TABLE and ALTER TABLE, a child index made when none exists,
1452 for a child without its parent and 1451 for a parent with children, ON DELETE and
ON UPDATE CASCADE and SET NULL (3008 past 15 tables deep), a copying ALTER TABLE of a
table with keys on either side (the keys move to the new table), foreign_key_checks = 0
for loads, DROP TABLE refused for a parent
(3730), and SHOW CREATE TABLE and information_schema showing them.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
from session_helpers import Session

session = Session("fks")
cur, rows, error_of = session.cur, session.rows, session.error_of

cur.execute("CREATE TABLE authors (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL UNIQUE)")
cur.execute(
    "CREATE TABLE books (id INT PRIMARY KEY, author_id INT, title VARCHAR(40), "
    "CONSTRAINT books_author FOREIGN KEY (author_id) REFERENCES authors (id) "
    "ON DELETE CASCADE)"
)
cur.execute(
    "CREATE TABLE reviews (id INT PRIMARY KEY, book_id INT REFERENCES books (id), "
    "stars INT)"
)
cur.execute(
    "CREATE TABLE loans (id INT PRIMARY KEY, book_id INT, "
    "FOREIGN KEY (book_id) REFERENCES books (id) ON DELETE SET NULL)"
)

# A child needs its parent; NULL references nothing.
assert error_of("INSERT INTO books VALUES (1, 7, 'orphan')") == 1452
cur.execute("INSERT INTO authors VALUES (1, 'ann'), (2, 'bob')")
cur.execute("INSERT INTO books VALUES (10, 1, 'a1'), (11, 1, 'a2'), (20, 2, 'b1'), (30, NULL, 'x')")
assert error_of("UPDATE books SET author_id = 9 WHERE id = 10") == 1452
cur.execute("INSERT INTO reviews VALUES (100, 10, 5), (101, 20, 4)")
cur.execute("INSERT INTO loans VALUES (200, 11), (201, 20)")

# RESTRICT (the default) keeps a reviewed book; CASCADE takes an author's books along.
assert error_of("DELETE FROM books WHERE id = 10") == 1451
assert error_of("DELETE FROM authors WHERE id = 1") == 1451, "a cascade meeting RESTRICT"
cur.execute("DELETE FROM reviews WHERE id = 100")
cur.execute("DELETE FROM authors WHERE id = 1")
assert rows("SELECT id FROM books ORDER BY id") == [(20,), (30,)]
assert rows("SELECT id, book_id FROM loans ORDER BY id") == [(200, None), (201, 20)]
# A primary key change follows ON UPDATE (RESTRICT by default), not ON DELETE CASCADE.
assert error_of("UPDATE authors SET id = 3 WHERE id = 2") == 1451
assert rows("SELECT author_id FROM books WHERE id = 20") == [(2,)]

# A transaction deleting children and then their parent.
cur.execute("BEGIN")
cur.execute("DELETE FROM reviews")
cur.execute("DELETE FROM loans")
cur.execute("DELETE FROM books WHERE id = 20")
cur.execute("DELETE FROM authors WHERE id = 2")
cur.execute("COMMIT")
assert rows("SELECT COUNT(*) FROM authors") == [(0,)]

# Loads turn the checks off (and no action runs).
cur.execute("SET foreign_key_checks = 0")
assert rows("SELECT @@foreign_key_checks") == [(0,)]
cur.execute("INSERT INTO books VALUES (40, 99, 'loaded first')")
cur.execute("INSERT INTO authors VALUES (99, 'late')")
cur.execute("DELETE FROM authors WHERE id = 99")
cur.execute("SET foreign_key_checks = 1")
assert rows("SELECT author_id FROM books WHERE id = 40") == [(99,)]
cur.execute("DELETE FROM books WHERE id = 40")

# ALTER TABLE adds a key only when every row has its parent, and drops it by name.
cur.execute("CREATE TABLE notes (id INT PRIMARY KEY, author_name VARCHAR(40))")
cur.execute("INSERT INTO authors VALUES (5, 'eve')")
cur.execute("INSERT INTO notes VALUES (1, 'eve'), (2, 'zed')")
assert error_of(
    "ALTER TABLE notes ADD CONSTRAINT notes_author FOREIGN KEY (author_name) "
    "REFERENCES authors (name)"
) == 1452
assert "notes_author" not in rows("SHOW CREATE TABLE notes")[0][1], "the refused key's index went"
cur.execute("DELETE FROM notes WHERE id = 2")
cur.execute(
    "ALTER TABLE notes ADD CONSTRAINT notes_author FOREIGN KEY (author_name) "
    "REFERENCES authors (name)"
)
assert error_of("INSERT INTO notes VALUES (3, 'zed')") == 1452
assert error_of("UPDATE authors SET name = 'eva' WHERE id = 5") == 1451
assert error_of("ALTER TABLE notes DROP INDEX notes_author") == 1553
cur.execute("ALTER TABLE notes DROP FOREIGN KEY notes_author")
cur.execute("INSERT INTO notes VALUES (3, 'zed')")
assert error_of("ALTER TABLE notes DROP FOREIGN KEY notes_author") == 1091

# What MySQL refuses when a key is declared.
assert error_of(
    "CREATE TABLE bad1 (id INT PRIMARY KEY, a VARCHAR(5) REFERENCES authors (id))"
) == 3780
assert error_of(
    "CREATE TABLE bad2 (id INT PRIMARY KEY, a INT, FOREIGN KEY (a) REFERENCES nowhere (id))"
) == 1824
assert error_of(
    "CREATE TABLE bad3 (id INT PRIMARY KEY, a INT, FOREIGN KEY (a) REFERENCES books (author_id))"
) == 1822
assert error_of(
    "CREATE TABLE bad4 (id INT PRIMARY KEY, a INT NOT NULL, "
    "FOREIGN KEY (a) REFERENCES authors (id) ON DELETE SET NULL)"
) == 1830
assert error_of(
    "CREATE TABLE bad5 (id INT PRIMARY KEY, a INT, "
    "CONSTRAINT books_author FOREIGN KEY (a) REFERENCES authors (id))"
) == 1826, "a name another table's key has in the database"
assert rows("SHOW TABLES LIKE 'bad%'") == [], "a refused CREATE leaves no table"

# SHOW CREATE TABLE and information_schema.
create = rows("SHOW CREATE TABLE books")[0][1]
assert (
    "CONSTRAINT `books_author` FOREIGN KEY (`author_id`) REFERENCES `authors` (`id`) "
    "ON DELETE CASCADE" in create
), create
assert "KEY `books_author` (`author_id`)" in create, "the child index MySQL makes"
create = rows("SHOW CREATE TABLE reviews")[0][1]
assert "CONSTRAINT `reviews_ibfk_1` FOREIGN KEY (`book_id`) REFERENCES `books` (`id`)" in create
usage = rows(
    "SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, "
    "REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE "
    "WHERE TABLE_SCHEMA = 'fks' AND REFERENCED_TABLE_NAME IS NOT NULL ORDER BY TABLE_NAME"
)
assert usage == [
    ("books", "books_author", "author_id", "authors", "id"),
    ("loans", "loans_ibfk_1", "book_id", "books", "id"),
    ("reviews", "reviews_ibfk_1", "book_id", "books", "id"),
], usage
rules = rows(
    "SELECT CONSTRAINT_NAME, UNIQUE_CONSTRAINT_NAME, UPDATE_RULE, DELETE_RULE, "
    "REFERENCED_TABLE_NAME FROM information_schema.REFERENTIAL_CONSTRAINTS "
    "WHERE CONSTRAINT_SCHEMA = 'fks' ORDER BY CONSTRAINT_NAME"
)
assert rules == [
    ("books_author", "PRIMARY", "NO ACTION", "CASCADE", "authors"),
    ("loans_ibfk_1", "PRIMARY", "NO ACTION", "SET NULL", "books"),
    ("reviews_ibfk_1", "PRIMARY", "NO ACTION", "NO ACTION", "books"),
], rules
kinds = rows(
    "SELECT CONSTRAINT_NAME FROM information_schema.TABLE_CONSTRAINTS "
    "WHERE TABLE_SCHEMA = 'fks' AND CONSTRAINT_TYPE = 'FOREIGN KEY' ORDER BY 1"
)
assert kinds == [("books_author",), ("loans_ibfk_1",), ("reviews_ibfk_1",)], kinds

# ON UPDATE CASCADE and SET NULL (Sequelize's default for every association): a parent's
# new key reaches its children, and theirs, in the same statement.
cur.execute("CREATE TABLE teams (id INT PRIMARY KEY, code VARCHAR(8) UNIQUE)")
cur.execute(
    "CREATE TABLE players (id INT PRIMARY KEY, team_id INT, team_code VARCHAR(8), "
    "FOREIGN KEY (team_id) REFERENCES teams (id) ON DELETE SET NULL ON UPDATE CASCADE, "
    "FOREIGN KEY (team_code) REFERENCES teams (code) ON UPDATE SET NULL)"
)
cur.execute(
    "CREATE TABLE goals (id INT PRIMARY KEY, player_id INT, "
    "FOREIGN KEY (player_id) REFERENCES players (id) ON UPDATE CASCADE)"
)
cur.execute("INSERT INTO teams VALUES (1, 'red'), (2, 'blue')")
cur.execute("INSERT INTO players VALUES (10, 1, 'red'), (11, 1, 'red'), (20, 2, 'blue')")
cur.execute("INSERT INTO goals VALUES (100, 10), (101, 20)")
cur.execute("UPDATE teams SET id = 5 WHERE id = 1")
players = lambda: rows("SELECT id, team_id, team_code FROM players ORDER BY id")
assert players() == [(10, 5, "red"), (11, 5, "red"), (20, 2, "blue")], players()
cur.execute("UPDATE players SET id = 12 WHERE id = 10")
assert rows("SELECT id, player_id FROM goals ORDER BY id") == [(100, 12), (101, 20)]
cur.execute("UPDATE teams SET code = 'green' WHERE id = 5")
assert players() == [(11, 5, None), (12, 5, None), (20, 2, "blue")], players()
cur.execute("UPDATE teams SET id = id + 10, code = CONCAT(code, '2')")
assert players() == [(11, 15, None), (12, 15, None), (20, 12, None)], players()
assert error_of("INSERT INTO players VALUES (30, 5, NULL)") == 1452, "the old key is gone"
cur.execute("DELETE FROM teams WHERE id = 12")
assert players()[2] == (20, None, None), "ON DELETE SET NULL"
create = rows("SHOW CREATE TABLE players")[0][1]
assert "REFERENCES `teams` (`id`) ON DELETE SET NULL ON UPDATE CASCADE" in create, create
assert "REFERENCES `teams` (`code`) ON UPDATE SET NULL" in create, create
rules = rows(
    "SELECT UPDATE_RULE, DELETE_RULE FROM information_schema.REFERENTIAL_CONSTRAINTS "
    "WHERE CONSTRAINT_SCHEMA = 'fks' AND TABLE_NAME = 'players' ORDER BY CONSTRAINT_NAME"
)
assert rules == [("CASCADE", "SET NULL"), ("SET NULL", "NO ACTION")], rules
assert error_of(
    "CREATE TABLE bad6 (id INT PRIMARY KEY, a INT NOT NULL, "
    "FOREIGN KEY (a) REFERENCES teams (id) ON UPDATE SET NULL)"
) == 1830
# A self-reference cascades too (InnoDB refuses it; each row changes once here).
cur.execute(
    "CREATE TABLE staff (id INT PRIMARY KEY, boss INT, "
    "FOREIGN KEY (boss) REFERENCES staff (id) ON UPDATE CASCADE)"
)
cur.execute("INSERT INTO staff VALUES (1, NULL), (2, 1), (3, 2)")
cur.execute("UPDATE staff SET id = 10 WHERE id = 1")
assert rows("SELECT id, boss FROM staff ORDER BY id") == [(2, 10), (3, 2), (10, None)]
cur.execute("DROP TABLE staff")
# MySQL's limit: a chain of cascades 15 tables deep, no deeper (3008, nothing changed).
cur.execute("CREATE TABLE c0 (id INT PRIMARY KEY)")
for depth in range(1, 17):
    cur.execute(
        f"CREATE TABLE c{depth} (id INT PRIMARY KEY, up INT, "
        f"FOREIGN KEY (up) REFERENCES c{depth - 1} (id) ON DELETE CASCADE)"
    )
cur.execute("INSERT INTO c0 VALUES (1)")
for depth in range(1, 17):
    cur.execute(f"INSERT INTO c{depth} VALUES (1, 1)")
assert error_of("DELETE FROM c0") == 3008
assert rows("SELECT COUNT(*) FROM c0") == [(1,)] and rows("SELECT COUNT(*) FROM c16") == [(1,)]
cur.execute("DELETE FROM c1")
assert rows("SELECT COUNT(*) FROM c16") == [(0,)]
for depth in range(16, -1, -1):
    cur.execute(f"DROP TABLE c{depth}")
cur.execute("DROP TABLE goals, players, teams")

# A copying ALTER TABLE of a table with foreign keys on either side (Django's built-in
# migrations: DROP COLUMN of django_content_type, MODIFY of auth_permission): the keys
# move to the new table with the switch and hold there, by their columns' new places.
cur.execute("CREATE TABLE ctype (id INT PRIMARY KEY, app VARCHAR(20), name VARCHAR(20))")
cur.execute(
    "CREATE TABLE perm (id INT PRIMARY KEY, ctype_id INT NOT NULL, code VARCHAR(20), "
    "CONSTRAINT perm_ctype FOREIGN KEY (ctype_id) REFERENCES ctype (id))"
)
cur.execute(
    "CREATE TABLE grant_log (id INT PRIMARY KEY, perm_id INT, "
    "FOREIGN KEY (perm_id) REFERENCES perm (id) ON DELETE CASCADE)"
)
cur.execute("INSERT INTO ctype VALUES (1, 'auth', 'user'), (2, 'auth', 'group')")
cur.execute("INSERT INTO perm VALUES (10, 1, 'add'), (11, 1, 'change'), (20, 2, 'add')")
cur.execute("INSERT INTO grant_log VALUES (100, 10), (101, 11), (102, 20)")
cur.execute("ALTER TABLE ctype DROP COLUMN name")  # a parent copied
assert rows("SELECT * FROM ctype ORDER BY id") == [(1, "auth"), (2, "auth")]
assert error_of("DELETE FROM ctype WHERE id = 1") == 1451
assert error_of("INSERT INTO perm VALUES (30, 3, 'x')") == 1452
cur.execute("INSERT INTO ctype VALUES (3, 'shop')")
cur.execute("INSERT INTO perm VALUES (30, 3, 'x')")
cur.execute("ALTER TABLE perm MODIFY code VARCHAR(100)")  # a child and a parent copied
assert "perm_ctype" in rows("SHOW CREATE TABLE perm")[0][1]
assert error_of("INSERT INTO perm VALUES (31, 9, 'x')") == 1452
assert error_of("INSERT INTO grant_log VALUES (103, 99)") == 1452
cur.execute("DELETE FROM perm WHERE id = 10")
assert rows("SELECT id FROM grant_log ORDER BY id") == [(101,), (102,)], "the cascade moved too"
# A column of a key renamed and moved in the copy: the key follows it.
cur.execute("ALTER TABLE perm CHANGE ctype_id content_type_id INT NOT NULL AFTER code")
create = rows("SHOW CREATE TABLE perm")[0][1]
assert "FOREIGN KEY (`content_type_id`) REFERENCES `ctype` (`id`)" in create, create
assert error_of("INSERT INTO perm (id, code, content_type_id) VALUES (32, 'x', 9)") == 1452
assert error_of("DELETE FROM ctype WHERE id = 2") == 1451
assert error_of("ALTER TABLE perm DROP COLUMN content_type_id") == 1828
assert error_of("ALTER TABLE perm MODIFY content_type_id BIGINT NOT NULL") == 3780
assert error_of("ALTER TABLE ctype DROP COLUMN id") == 1846, "a primary key column"
usage = rows(
    "SELECT TABLE_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME FROM "
    "information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = 'fks' AND TABLE_NAME IN "
    "('perm', 'grant_log') AND REFERENCED_TABLE_NAME IS NOT NULL ORDER BY 1"
)
assert usage == [("grant_log", "perm_id", "perm"), ("perm", "content_type_id", "ctype")], usage
# A table referencing itself, copied.
cur.execute(
    "CREATE TABLE tree (id INT PRIMARY KEY, up INT, FOREIGN KEY (up) REFERENCES tree (id))"
)
cur.execute("INSERT INTO tree VALUES (1, NULL), (2, 1)")
cur.execute("ALTER TABLE tree ADD COLUMN label VARCHAR(10) FIRST")
assert error_of("DELETE FROM tree WHERE id = 1") == 1451
assert error_of("INSERT INTO tree (id, up) VALUES (3, 7)") == 1452
cur.execute("DROP TABLE tree, grant_log, perm, ctype")

# MySQL's rule for the index made for a key: it goes once another index serves the key
# (SQLAlchemy's reflection reads the indexes back); an index the user made stays; an
# index a key uses may be dropped while another serves it, never the last (1553).
def index_names(table):
    return sorted({row[2] for row in rows(f"SHOW INDEX FROM {table}")})

cur.execute("CREATE TABLE shelves (id INT PRIMARY KEY)")
cur.execute("INSERT INTO shelves VALUES (1), (2)")
cur.execute("CREATE TABLE items (id INT PRIMARY KEY, shelf INT, pos INT, "
            "CONSTRAINT items_shelf FOREIGN KEY (shelf) REFERENCES shelves (id) ON DELETE CASCADE)")
assert index_names("items") == ["PRIMARY", "items_shelf"]
cur.execute("INSERT INTO items VALUES (1, 1, 1), (2, 2, 1)")
cur.execute("CREATE INDEX by_shelf_pos ON items (shelf, pos)")
assert index_names("items") == ["PRIMARY", "by_shelf_pos"], index_names("items")
cur.execute("DELETE FROM shelves WHERE id = 1")
assert rows("SELECT id FROM items") == [(2,)], "cascaded through the index that serves now"
assert error_of("INSERT INTO items VALUES (3, 9, 1)") == 1452
assert error_of("DROP INDEX by_shelf_pos ON items") == 1553
cur.execute("ALTER TABLE items ADD INDEX by_shelf (shelf)")
cur.execute("DROP INDEX by_shelf_pos ON items")
cur.execute("ALTER TABLE items ADD INDEX by_shelf_id (shelf, id)")
assert index_names("items") == ["PRIMARY", "by_shelf", "by_shelf_id"], "made by the user: kept"
assert error_of("ALTER TABLE items DROP INDEX by_shelf, DROP INDEX by_shelf_id") == 1553
# A key added with an index that serves it in the same statement makes none.
cur.execute("CREATE TABLE tags (id INT PRIMARY KEY, shelf INT, name VARCHAR(10))")
cur.execute("ALTER TABLE tags ADD CONSTRAINT tags_shelf FOREIGN KEY (shelf) REFERENCES shelves (id), "
            "ADD INDEX by_shelf_name (shelf, name)")
assert index_names("tags") == ["PRIMARY", "by_shelf_name"], index_names("tags")
assert error_of("INSERT INTO tags VALUES (1, 9, 'x')") == 1452
cur.execute("DROP TABLE tags, items, shelves")

# A parent is dropped after its children, or with them in one statement.
assert error_of("DROP TABLE authors") == 3730
cur.execute("DROP TABLE reviews, loans, books")
cur.execute("SET foreign_key_checks = 0")
cur.execute("CREATE TABLE pets (id INT PRIMARY KEY, owner INT, FOREIGN KEY (owner) REFERENCES authors (id))")
cur.execute("DROP TABLE authors")
cur.execute("SET foreign_key_checks = 1")
cur.execute("INSERT INTO pets VALUES (1, 12345)")
# CREATE TABLE ... LIKE copies columns, keys, indexes and CHECKs, as MySQL: not the
# foreign keys, nor the rows, and AUTO_INCREMENT counts from 1 again.
cur.execute(
    "CREATE TABLE owners (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(20) NOT NULL "
    "DEFAULT 'x', code CHAR(4), pet INT, UNIQUE KEY by_code (code), KEY by_name (name(5)), "
    "CONSTRAINT name_ok CHECK (name <> ''), FOREIGN KEY (pet) REFERENCES pets (id))"
)
cur.execute("INSERT INTO owners (name, code, pet) VALUES ('ann', 'a1', 1), ('bo', 'b2', 1)")
cur.execute("CREATE TABLE owners_copy LIKE owners")
assert rows("SELECT COUNT(*) FROM owners_copy") == [(0,)]
show = lambda table: rows(f"SHOW CREATE TABLE {table}")[0][1]
original = show("owners")
assert " AUTO_INCREMENT=3 " in original, original
# The same text, named for the copy, without the foreign key's line (nor its comma) and
# the counter's value.
expected = "\n".join(
    line for line in original.replace("`owners`", "`owners_copy`", 1).split("\n")
    if "FOREIGN KEY" not in line
).replace(" AUTO_INCREMENT=3", "")
copy = show("owners_copy")
assert copy == expected, (original, copy)
cur.execute("INSERT INTO owners_copy (name, code, pet) VALUES ('cy', 'c3', 999)")
assert rows("SELECT id, pet FROM owners_copy") == [(1, 999)]  # no foreign key, count from 1
assert error_of("INSERT INTO owners_copy (name, code) VALUES ('', 'd4')") == 3819
assert error_of("INSERT INTO owners_copy (name, code) VALUES ('dee', 'c3')") == 1062
assert error_of("CREATE TABLE owners_copy LIKE owners") == 1050
cur.execute("CREATE TABLE IF NOT EXISTS owners_copy LIKE owners")
assert error_of("CREATE TABLE nowhere LIKE no_such_table") == 1146
cur.execute("CREATE DATABASE fks2")
cur.execute("CREATE TABLE fks2.owners LIKE fks.owners")
assert rows("SELECT COUNT(*) FROM fks2.owners") == [(0,)]
cur.execute("DROP DATABASE fks2")
cur.execute("DROP DATABASE fks")
print("foreign keys ok")
