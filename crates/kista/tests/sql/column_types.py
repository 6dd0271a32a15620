"""The column types SQL has and storage does not (YEAR, ENUM, SET, BIT, JSON) and column
and table comments: values are checked and kept as MySQL keeps them, clients are told
the types as MySQL tells them, and the definitions show in SHOW CREATE TABLE, DESCRIBE
and information_schema, also from a second connection (they live in the cluster's
dictionary, not in the front end).

Run by crates/kista/tests/sql.rs with the front end's port.
"""
import json

import pymysql
from pymysql.constants import FIELD_TYPE

from session_helpers import Session

session = Session("column_types")
cur, rows, error_of = session.cur, session.rows, session.error_of

cur.execute(
    "CREATE TABLE item ("
    " id INT PRIMARY KEY COMMENT 'the item''s number',"
    " made YEAR,"
    " state ENUM('new', 'Shipped', 'lost') NOT NULL,"
    " tags SET('red', 'green', 'blue'),"
    " flags BIT(10),"
    " doc JSON"
    ") COMMENT 'things we sell'"
)
cur.execute(
    "INSERT INTO item VALUES (1, 2024, 'shipped', 'blue,red,blue', 513, "
    "'{\"b\": [1, 2.5], \"a\": null}')"
)
cur.execute("INSERT INTO item (id, made, tags, flags) VALUES (2, '99', 6, b'11')")
cur.execute("INSERT INTO item (id, made, state) VALUES (3, 0, 3)")

# Values come back as MySQL keeps them; a NOT NULL ENUM defaults to its first member.
assert rows("SELECT id, made, state, tags, flags, doc FROM item ORDER BY id") == [
    (1, 2024, "Shipped", "red,blue", b"\x02\x01", '{"a": null, "b": [1, 2.5]}'),
    (2, 1999, "new", "green,blue", b"\x00\x03", None),
    (3, 0, "lost", None, None, None),
], rows("SELECT id, made, state, tags, flags, doc FROM item ORDER BY id")
types = {c[0]: c[1] for c in cur.description}
assert types == {
    "id": FIELD_TYPE.LONG, "made": FIELD_TYPE.YEAR, "state": FIELD_TYPE.STRING,
    "tags": FIELD_TYPE.STRING, "flags": FIELD_TYPE.BIT, "doc": FIELD_TYPE.JSON,
}, types
assert json.loads(rows("SELECT doc FROM item WHERE id = 1")[0][0]) == {"a": None, "b": [1, 2.5]}

# In expressions, a YEAR and a BIT are numbers, an ENUM and a SET their text.
assert rows("SELECT made + 1, flags + 0, CONCAT(state, '!') FROM item WHERE id = 1") == [
    (2025, 513, "Shipped!")]
assert rows("SELECT id FROM item WHERE state = 'Shipped'") == [(1,)]
assert rows("SELECT id FROM item WHERE made = 1999") == [(2,)]
assert rows("SELECT id FROM item WHERE tags LIKE '%blue%' ORDER BY id") == [(1,), (2,)]

# JSON functions and operators.
assert rows("SELECT doc->'$.b[1]', doc->>'$.b', JSON_EXTRACT(doc, '$.a', '$.b[0]') "
            "FROM item WHERE id = 1") == [("2.5", "[1, 2.5]", "[null, 1]")]
assert rows("SELECT id FROM item WHERE doc->>'$.b[0]' = '1'") == [(1,)]
assert rows("SELECT JSON_OBJECT('k', 1, 'list', JSON_ARRAY(1, 'two', NULL)), "
            "JSON_UNQUOTE(%s), JSON_TYPE('[1]'), JSON_VALID('{'), "
            "JSON_LENGTH(%s, '$.a'), JSON_KEYS(%s)",
            ['"a\\tb"', '{"a": [1, 2]}', '{"b": 1, "a": 2}']) == [
    ('{"k": 1, "list": [1, "two", null]}', "a\tb", "ARRAY", 0, 2, '["a", "b"]')]
assert rows("SELECT JSON_SET(%s, '$.a', 2, '$.b', 3), JSON_INSERT(%s, '$.a', 2, '$.b', 3), "
            "JSON_REPLACE(%s, '$.a', 2, '$.b', 3), JSON_REMOVE('[1, 2, 3]', '$[1]'), "
            "JSON_CONTAINS(%s, '2', '$.a'), JSON_MERGE_PATCH(%s, %s)",
            ['{"a": 1}', '{"a": 1}', '{"a": 1}', '{"a": [1, 2]}', '{"a": 1, "b": 2}',
             '{"b": null, "c": 3}']) == [
    ('{"a": 2, "b": 3}', '{"a": 1, "b": 3}', '{"a": 2}', "[1, 3]", 1, '{"a": 1, "c": 3}')]
cur.execute("UPDATE item SET doc = JSON_SET(doc, '$.a', 'set') WHERE id = 1")
assert rows("SELECT doc FROM item WHERE id = 1") == [('{"a": "set", "b": [1, 2.5]}',)]
assert error_of("SELECT JSON_EXTRACT('{', '$')") == 3141
assert error_of("SELECT JSON_EXTRACT('{}', 'a')") == 3143
assert error_of("SELECT JSON_SET('{}', '$.*', 1)") == 3149

# Values that do not fit are refused with MySQL's strict-mode errors.
assert error_of("INSERT INTO item (id, state) VALUES (10, 'sold')") == 1265
assert error_of("INSERT INTO item (id, state) VALUES (10, 0)") == 1265
assert error_of("INSERT INTO item (id, tags) VALUES (10, 'red,pink')") == 1265
assert error_of("INSERT INTO item (id, made) VALUES (10, 1900)") == 1264
assert error_of("INSERT INTO item (id, made) VALUES (10, 'soon')") == 1366
assert error_of("INSERT INTO item (id, flags) VALUES (10, 1024)") == 1406
assert error_of("INSERT INTO item (id, doc) VALUES (10, '{\"a\": ')") == 3140
assert error_of("INSERT INTO item (id, doc) VALUES (10, 7)") == 3140
assert error_of("UPDATE item SET state = 'gone' WHERE id = 1") == 1265


# Their messages name the statement's row, as MySQL's do: an INSERT's row, counted from 1
# in the order given; the row an UPDATE was changing, among those it read in order.
def message_of(sql):
    try:
        cur.execute(sql)
    except pymysql.MySQLError as error:
        return error.args
    raise AssertionError(f"accepted: {sql}")


assert message_of("INSERT INTO item (id, state) VALUES (10, 'new'), (11, 'sold')") == (
    1265,
    "Data truncated for column 'state' at row 2",
)
code, message = message_of("INSERT INTO item (id, made) VALUES (10, 1999), (11, 2000), (12, 'soon')")
assert code == 1366 and message.endswith("for column 'made' at row 3"), (code, message)
assert message_of("INSERT INTO item (id, flags) VALUES (10, 1024)") == (
    1406,
    "Data too long for column 'flags' at row 1",
)
assert message_of("UPDATE item SET made = IF(id = 2, 1900, made) ORDER BY id") == (
    1264,
    "Out of range value for column 'made' at row 2",
)
assert message_of("INSERT INTO item (id) VALUES (10), (NULL)")[1] == "Column 'id' cannot be null"
assert rows("SELECT COUNT(*) FROM item") == [(3,)]
cur.execute("UPDATE item SET state = 2, made = 70 WHERE id = 3")
assert rows("SELECT state, made FROM item WHERE id = 3") == [("Shipped", 1970)]

# Declarations MySQL refuses.
assert error_of("CREATE TABLE bad (a ENUM('x', 'X'))") == 1291
assert error_of("CREATE TABLE bad (a BIT(65))") == 1439
assert error_of("CREATE TABLE bad (a YEAR(2))") == 1818
assert error_of("CREATE TABLE bad (a ENUM('x') DEFAULT 'y')") == 1067
assert error_of("CREATE TABLE bad (a YEAR AUTO_INCREMENT PRIMARY KEY)") == 1063
assert error_of("CREATE TABLE bad (a INT COMMENT '" + "c" * 1025 + "')") == 1629
assert error_of("SELECT * FROM bad") == 1146

# The definitions, as a second connection (nothing kept in the first) sees them.
other = pymysql.connect(host="127.0.0.1", port=session.connection.port, user="root",
                        password="", database="column_types", autocommit=True)
ocur = other.cursor()
ocur.execute("SHOW CREATE TABLE item")
create = ocur.fetchall()[0][1]
for part in ["`id` int NOT NULL COMMENT 'the item''s number'", "`made` year DEFAULT NULL",
             "`state` enum('new','Shipped','lost') NOT NULL DEFAULT 'new'",
             "`tags` set('red','green','blue')", "`flags` bit(10)", "`doc` json",
             "COMMENT='things we sell'"]:
    assert part in create, (part, create)
ocur.execute("DESCRIBE item")
assert [r[1] for r in ocur.fetchall()] == [
    "int", "year", "enum('new','Shipped','lost')", "set('red','green','blue')", "bit(10)",
    "json"]
ocur.execute(
    "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COLUMN_COMMENT FROM information_schema.COLUMNS "
    "WHERE TABLE_SCHEMA = 'column_types' AND TABLE_NAME = 'item' ORDER BY ORDINAL_POSITION")
assert ocur.fetchall()[:3] == (
    ("id", "int", "int", "the item's number"), ("made", "year", "year", ""),
    ("state", "enum", "enum('new','Shipped','lost')", ""))
ocur.execute("SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_NAME = 'item'")
assert ocur.fetchall() == (("things we sell",),)
ocur.execute("INSERT INTO item (id, state) VALUES (4, 'LOST')")
ocur.execute("SELECT state FROM item WHERE id = 4")
assert ocur.fetchall() == (("lost",),)
other.close()

print("column types ok")
