"""Binary data is stored and read back byte for byte, whichever way a MySQL client sends it:
PyMySQL (a `bytes` argument after `_binary`), mysqlclient and mysql-connector-python (the raw
bytes inside a quoted literal; the connector's prepared statements too), and `_binary` and
`X''` literals. Bytes that are not UTF-8 into a utf8mb4 column are refused (1366), never
replaced. Run by crates/kista/tests/sql.rs with the front end's port.
"""
import sys

import MySQLdb
import mysql.connector
import pymysql

port = int(sys.argv[1])
EVERY_BYTE = bytes(range(256))
SAMPLES = [
    EVERY_BYTE,
    bytes(reversed(EVERY_BYTE)),
    b"\x00\xff\x10\x80\xc3",
    b"",
    b"'\\\"%_\x1a\n\r",
    "é".encode() + b"\xe9",
]


def pymysql_connection():
    return pymysql.connect(host="127.0.0.1", port=port, user="root", password="",
                           database="bins", autocommit=True)


def mysqlclient_connection():
    return MySQLdb.connect(host="127.0.0.1", port=port, user="root", passwd="", db="bins",
                           autocommit=True)


def connector_connection():
    return mysql.connector.connect(host="127.0.0.1", port=port, user="root", password="",
                                   database="bins", autocommit=True, use_pure=True)


def store_and_read(name, connect, first_id, prepared=False):
    """Stores every sample through `connect`'s driver and reads it back exactly."""
    conn = connect()
    cur = conn.cursor(prepared=True) if prepared else conn.cursor()
    for offset, sample in enumerate(SAMPLES):
        row_id = first_id + offset
        cur.execute(
            "INSERT INTO t (id, fixed, vb, bl) VALUES (%s, %s, %s, %s)",
            (row_id, sample[:8], sample, sample),
        )
        cur.execute("SELECT fixed, vb, bl FROM t WHERE id = %s", (row_id,))
        fixed, vb, bl = cur.fetchone()
        expected_fixed = sample[:8].ljust(8, b"\x00")
        for column, got, expected in (("fixed", fixed, expected_fixed), ("vb", vb, sample),
                                      ("bl", bl, sample)):
            assert bytes(got) == expected, f"{name} row {row_id} {column}: {bytes(got)!r}"
    # Bytes that are not UTF-8 into a utf8mb4 column: refused, not replaced.
    try:
        cur.execute("INSERT INTO t (id, s) VALUES (%s, %s)", (first_id + 99, b"ok\xff\x10"))
    except Exception as error:  # each driver has its own error class
        assert error.args[0] == 1366, f"{name}: {error}"
        assert "\\xFF\\x10" in error.args[1], f"{name}: {error}"
    else:
        raise AssertionError(f"{name}: a non-UTF-8 string went into a utf8mb4 column")
    conn.close()


admin = pymysql.connect(host="127.0.0.1", port=port, user="root", password="",
                        autocommit=True)
cur = admin.cursor()
cur.execute("CREATE DATABASE bins")
cur.execute(
    "CREATE TABLE bins.t (id INT PRIMARY KEY, fixed BINARY(8), vb VARBINARY(300), bl BLOB, "
    "s VARCHAR(20))"
)

store_and_read("PyMySQL", pymysql_connection, 100)
store_and_read("mysqlclient", mysqlclient_connection, 200)
store_and_read("mysql-connector-python", connector_connection, 300)
store_and_read("mysql-connector-python prepared", connector_connection, 400, prepared=True)

# Literals written in the statement: X'..', _binary X'..', and _binary with the raw bytes.
hex_of = EVERY_BYTE.hex().upper()
cur.execute(f"INSERT INTO bins.t (id, vb, bl) VALUES (500, X'{hex_of}', _binary X'{hex_of}')")
raw = pymysql.converters.escape_bytes(EVERY_BYTE)  # _binary'...' with MySQL's escapes
cur.execute(f"INSERT INTO bins.t (id, vb) VALUES (501, {raw})")
cur.execute("SELECT vb, bl FROM bins.t WHERE id = 500")
assert cur.fetchone() == (EVERY_BYTE, EVERY_BYTE)
cur.execute("SELECT vb FROM bins.t WHERE id = 501")
assert cur.fetchone() == (EVERY_BYTE,)
# String functions on a binary string count bytes and keep every one (MySQL's), and on
# text characters.
cur.execute("SELECT HEX(LEFT(bl, 3)), HEX(RIGHT(bl, 2)), HEX(SUBSTRING(bl, 128, 3)), "
            "CHAR_LENGTH(bl), HEX(REVERSE(LEFT(bl, 2))), LOCATE(X'FF', bl), "
            "HEX(UPPER(SUBSTRING(bl, 98, 2))), HEX(LPAD(SUBSTRING(bl, 256), 3, X'00')), "
            "HEX(REPLACE(LEFT(bl, 3), X'01', X'FEFE')) FROM bins.t WHERE id = 500")
assert cur.fetchone() == ("000102", "FEFF", "7F8081", 256, "0100", 256, "6162", "0000FF",
                          "00FEFE02"), "functions on bytes"
cur.execute("SELECT LEFT('héllo', 2), CHAR_LENGTH('héllo'), UPPER('é'), "
            "HEX(LEFT(_binary'héllo', 2))")
assert cur.fetchone() == ("hé", 5, "É", "68C3"), "functions on text"
# A binary string compares byte by byte; a utf8mb4 one is checked.
cur.execute("SELECT _binary'a' = 'A', 'a' = 'A', _utf8mb4'é'")
assert cur.fetchone() == (0, 1, "é"), "introducers"
for statement, code in (("SELECT _utf8mb4 X'FF'", 1300), ("SELECT _klingon'x'", 1115)):
    try:
        cur.execute(statement)
    except pymysql.err.MySQLError as error:
        assert error.args[0] == code, f"{statement}: {error}"
    else:
        raise AssertionError(f"{statement} was accepted")
print("binary data ok")
