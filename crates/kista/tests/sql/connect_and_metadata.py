"""What drivers and ORMs send at connect and read for metadata: SET lists with NAMES,
SET from a subquery, user variables, the session variables they read, SELECT ... FROM
DUAL, LIKE BINARY, SHOW TABLE STATUS / COLLATION / CHARACTER SET / ENGINES with LIKE and
WHERE, and information_schema's tables and columns as MySQL 8 has them.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
from session_helpers import Session

session = Session("metadata")
cur, rows, error_of = session.cur, session.rows, session.error_of

# MariaDB Connector/J and sqlx at connect; Django and SQLAlchemy read these variables.
cur.execute("SET autocommit=1, NAMES utf8mb4 COLLATE utf8mb4_general_ci, sql_mode='ANSI_QUOTES'")
assert rows("SELECT @@collation_connection, @@character_set_client, @@sql_mode") == [
    ("utf8mb4_general_ci", "utf8mb4", "ANSI_QUOTES")]
cur.execute("SET SESSION sql_mode = (SELECT CONCAT(@@sql_mode, ',STRICT_TRANS_TABLES'))")
assert rows("SELECT @@session.sql_mode") == [("ANSI_QUOTES,STRICT_TRANS_TABLES",)]
assert rows("SELECT @@sql_auto_is_null, @@foreign_key_checks, @@group_concat_max_len") == [
    (0, 1, 1024)]

# User variables: NULL until set; SET @x and reading them back.
assert rows("SELECT @missing") == [(None,)]
cur.execute("SET @limit = 2, @Name := 'ann'")
assert rows("SELECT @limit + 1, @name") == [(3, "ann")]
# `@x := value` inside a query: its value, and the variable takes it row by row.
assert rows("SELECT @a := 1, @b := @a + 1, @a + @b") == [(1, 2, 3)]
cur.execute("SET @n = 0")
numbered = rows("SELECT @n := @n + 1 FROM (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3) AS t")
assert sorted(numbered) == [(1,), (2,), (3,)], numbered
assert rows("SELECT @n") == [(3,)]
assert error_of("SELECT @@autocommit := 1") == 1064

assert rows("SELECT 1 + 1 FROM DUAL") == [(2,)]
assert rows("SELECT 'Banana' LIKE BINARY 'B%', 'Banana' LIKE BINARY 'b%'") == [(1, 0)]
# COLLATE: a _ci collation compares case-insensitively where it stands (Connector/J's
# metadata queries use it); a _bin one as every comparison does; the value stays as it is.
assert rows("SELECT 'Banana' COLLATE utf8mb4_general_ci = 'BANANA', "
            "'Banana' LIKE 'b%' COLLATE utf8mb4_0900_ai_ci, "
            "'Banana' COLLATE utf8mb4_bin = 'BANANA', 'Banana' COLLATE utf8mb4_general_ci") == [
    (1, 1, 0, "Banana")]
assert error_of("SELECT 'a' COLLATE no_such_collation = 'A'") == 1273

cur.execute("CREATE TABLE customer (id INT PRIMARY KEY AUTO_INCREMENT, email VARCHAR(80) "
            "NOT NULL UNIQUE, born DATETIME, note TEXT)")
cur.execute("CREATE TABLE log (at DATETIME, line VARCHAR(200))")
cur.execute("CREATE VIEW emails AS SELECT email FROM customer")

# SHOW statements are queries of information_schema: LIKE and WHERE work on them.
status = rows("SHOW TABLE STATUS")
assert [r[0] for r in status] == ["customer", "emails", "log"], status
assert [d[0] for d in cur.description][:5] == ["Name", "Engine", "Version", "Row_format", "Rows"]
assert rows("SHOW TABLE STATUS FROM metadata LIKE 'cust%'")[0][:2] == ("customer", "ndbcluster")
assert rows("SHOW TABLE STATUS WHERE Engine IS NULL")[0][0] == "emails"
assert rows("SHOW COLLATION LIKE 'utf8mb4%'")[0][:3] == ("utf8mb4_0900_ai_ci", "utf8mb4", 255)
assert rows("SHOW CHARACTER SET WHERE Charset = 'utf8mb4'")[0][0] == "utf8mb4"
assert rows("SHOW ENGINES")[0][:2] == ("ndbcluster", "DEFAULT")

# information_schema as ORMs read it (GORM: COLUMN_COMMENT, DATETIME_PRECISION).
assert rows("SELECT COLUMN_NAME, DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, DATETIME_PRECISION, "
            "COLUMN_COMMENT, COLUMN_KEY, EXTRA FROM information_schema.columns "
            "WHERE TABLE_SCHEMA = 'metadata' AND TABLE_NAME = 'customer' "
            "ORDER BY ORDINAL_POSITION") == [
    ("id", "int", None, None, "", "PRI", "auto_increment"),
    ("email", "varchar", 80, None, "", "UNI", ""),
    ("born", "datetime", None, 0, "", "", ""),
    ("note", "text", 65535, None, "", "", "")]
assert rows("SELECT CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME "
            "FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = 'metadata' "
            "ORDER BY CONSTRAINT_NAME") == [("email", "email", None), ("PRIMARY", "id", None)]
assert rows("SELECT CONSTRAINT_TYPE, TABLE_NAME FROM information_schema.TABLE_CONSTRAINTS "
            "WHERE TABLE_SCHEMA = 'metadata' ORDER BY CONSTRAINT_TYPE") == [
    ("PRIMARY KEY", "customer"), ("UNIQUE", "customer")]
assert rows("SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES "
            "WHERE TABLE_SCHEMA = 'metadata' ORDER BY TABLE_NAME") == [
    ("customer", "BASE TABLE"), ("emails", "VIEW"), ("log", "BASE TABLE")]
assert rows("SELECT VIEW_DEFINITION FROM information_schema.VIEWS "
            "WHERE TABLE_NAME = 'emails'") == [("SELECT email FROM customer",)]
for empty in ("ROUTINES", "TRIGGERS", "REFERENTIAL_CONSTRAINTS"):
    assert rows(f"SELECT COUNT(*) FROM information_schema.{empty}") == [(0,)]
assert error_of("SELECT * FROM information_schema.NO_SUCH_TABLE") == 1109

# Table names keep the case they were created with and are found in any case (MySQL's
# lower_case_table_names=2): Sequelize and GORM compare the names they read back with
# their models', and re-add a foreign key they do not recognise.
cur.execute("CREATE TABLE `Users` (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(20))")
cur.execute("CREATE TABLE Posts (id INT PRIMARY KEY, `UserId` INT, "
            "CONSTRAINT Posts_UserId_fk FOREIGN KEY (`UserId`) REFERENCES `Users` (id))")
cur.execute("INSERT INTO users (name) VALUES ('ann')")
cur.execute("INSERT INTO POSTS VALUES (1, 1)")
assert rows("SELECT p.id, u.name FROM posts AS p JOIN USERS AS u ON u.id = p.UserId") == [(1, "ann")]
listed = sorted(name for (name,) in rows("SHOW TABLES"))
assert listed == ["Posts", "Users", "customer", "emails", "log"], listed
assert rows("SELECT TABLE_NAME, REFERENCED_TABLE_NAME FROM information_schema.KEY_COLUMN_USAGE "
            "WHERE TABLE_SCHEMA = 'metadata' AND TABLE_NAME = 'Posts' "
            "AND REFERENCED_TABLE_NAME IS NOT NULL") == [("Posts", "Users")]
assert rows("SELECT TABLE_NAME FROM information_schema.TABLES "
            "WHERE TABLE_SCHEMA = 'metadata' AND TABLE_NAME = 'users'") == [("Users",)]
created = rows("SHOW CREATE TABLE posts")[0][1]
assert created.startswith("CREATE TABLE `Posts`") and "REFERENCES `Users` (`id`)" in created, created
assert error_of("CREATE TABLE USERS (id INT PRIMARY KEY)") == 1050
# A rename may change only the case; the counters go with the table.
cur.execute("RENAME TABLE Users TO `users`")
cur.execute("INSERT INTO Users (name) VALUES ('bob')")
assert rows("SELECT id, name FROM USERS ORDER BY id") == [(1, "ann"), (2, "bob")]
assert rows("SHOW TABLES LIKE 'users'") == [("users",)]
cur.execute("DROP TABLE POSTS, Users")

print("connect and metadata ok")
