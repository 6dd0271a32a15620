"""LOAD DATA [LOCAL] INFILE as MySQL runs it: the client's file (PyMySQL's local_infile)
and the server's; tab-separated by default, CSV with quotes and escapes, IGNORE n LINES, a
column list (the others get their defaults, AUTO_INCREMENT its next values), REPLACE and
IGNORE for taken keys (LOCAL skips them as IGNORE does), fields into @variables with SET
computing columns, triggers firing, a table without a primary key, and the errors: a field
that does not convert (naming its line), a wrong number of fields, a missing file; with
LOCAL or IGNORE those fields and counts are warnings and the closest row is loaded.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
import os
import sys
import tempfile
import threading
import time
from decimal import Decimal

import pymysql

port = int(sys.argv[1])
connection = pymysql.connect(
    host="127.0.0.1", port=port, user="root", password="", autocommit=True, local_infile=True
)
cur = connection.cursor()
cur.execute("CREATE DATABASE ld")
cur.execute("USE ld")
directory = tempfile.mkdtemp()


def file_with(name, text):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def file_with_bytes(name, data):
    path = os.path.join(directory, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def rows(sql):
    cur.execute(sql)
    return list(cur.fetchall())


def error_of(sql):
    try:
        cur.execute(sql)
    except pymysql.MySQLError as error:
        return error.args[0], error.args[1]
    return None


# Tab-separated (LOAD DATA's default) from the client, with \N and escapes.
cur.execute("CREATE TABLE people (id INT PRIMARY KEY, name VARCHAR(20), born DATE)")
tsv = file_with("people.tsv", "1\tann\t2001-02-03\n2\t\\N\t\\N\n3\ttab\\there\t1999-12-31\n")
cur.execute(f"LOAD DATA LOCAL INFILE '{tsv}' INTO TABLE people")
assert cur.rowcount == 3, cur.rowcount
assert rows("SELECT id, name, CAST(born AS CHAR) FROM people ORDER BY id") == [
    (1, "ann", "2001-02-03"),
    (2, None, None),
    (3, "tab\there", "1999-12-31"),
]

# CSV with a header, quotes holding commas, doubled quotes and line breaks.
csv = file_with(
    "people.csv",
    'id,name,born\n4,"Smith, Jo",2000-01-01\n5,"say ""hi""",2000-01-02\n6,"two\nlines",NULL\n',
)
cur.execute(
    f"LOAD DATA LOCAL INFILE '{csv}' INTO TABLE people FIELDS TERMINATED BY ',' "
    "OPTIONALLY ENCLOSED BY '\"' IGNORE 1 LINES"
)
assert rows("SELECT name FROM people WHERE id >= 4 ORDER BY id") == [
    ("Smith, Jo",),
    ('say "hi"',),
    ("two\nlines",),
]

# A taken key: LOCAL skips it with a warning (as IGNORE); REPLACE replaces it.
again = file_with("again.tsv", "1\tann again\t2001-02-03\n7\tnew\t2001-01-01\n")
cur.execute(f"LOAD DATA LOCAL INFILE '{again}' INTO TABLE people")
assert cur.rowcount == 1, cur.rowcount
assert rows("SELECT name FROM people WHERE id = 1") == [("ann",)]
cur.execute(f"LOAD DATA LOCAL INFILE '{again}' REPLACE INTO TABLE people")
assert rows("SELECT name FROM people WHERE id = 1") == [("ann again",)]

# The server's own file: a taken key is an error there, and nothing of the batch stays.
server_file = file_with("server.tsv", "8\teight\t2001-01-08\n1\tclash\t2001-01-01\n")
# (A plain table's rows go encoded straight from the fields: the error is the one the
# general way gives, which names the key where it can: a clash within the batch, or a
# batch of one row.)
code, message = error_of(f"LOAD DATA INFILE '{server_file}' INTO TABLE people")
assert (code, message) == (1062, "Duplicate entry for key 'people.PRIMARY'"), (code, message)
one_row = file_with("one_row.tsv", "1\tclash\t2001-01-01\n")
code, message = error_of(f"LOAD DATA INFILE '{one_row}' INTO TABLE people")
assert (code, message) == (1062, "Duplicate entry '1' for key 'people.PRIMARY'"), (code, message)
twice = file_with("twice.tsv", "9\tnine\t2001-01-09\n9\tagain\t2001-01-09\n")
code, message = error_of(f"LOAD DATA INFILE '{twice}' INTO TABLE people")
assert (code, message) == (1062, "Duplicate entry '9' for key 'people.PRIMARY'"), (code, message)
assert rows("SELECT COUNT(*) FROM people WHERE id = 9") == [(0,)]
assert rows("SELECT COUNT(*) FROM people WHERE id = 8") == [(0,)]
cur.execute(f"LOAD DATA INFILE '{server_file}' IGNORE INTO TABLE people")
assert rows("SELECT name FROM people WHERE id IN (1, 8) ORDER BY id") == [("ann again",), ("eight",)]

# A column list: the rest get defaults; AUTO_INCREMENT numbers the rows; a trigger fires.
cur.execute(
    "CREATE TABLE notes (id INT AUTO_INCREMENT PRIMARY KEY, body VARCHAR(40), "
    "kind VARCHAR(10) DEFAULT 'plain', length INT)"
)
cur.execute("CREATE TRIGGER notes_length BEFORE INSERT ON notes FOR EACH ROW SET NEW.length = CHAR_LENGTH(NEW.body)")
bodies = file_with("notes.txt", "hello\nworld!\n")
cur.execute(f"LOAD DATA LOCAL INFILE '{bodies}' INTO TABLE notes (body)")
assert rows("SELECT id, body, kind, length FROM notes ORDER BY id") == [
    (1, "hello", "plain", 5),
    (2, "world!", "plain", 6),
]

# Fields into user variables, and SET computing columns from them (and from the columns
# given), each row with its own values.
dates = file_with("dates.csv", "30,zoe,03/02/2001\n31,yan,\\N\n")
cur.execute(
    f"LOAD DATA LOCAL INFILE '{dates}' INTO TABLE people FIELDS TERMINATED BY ',' "
    "(id, @who, @day) SET name = CONCAT(UPPER(@who), '-', id), "
    "born = STR_TO_DATE(@day, '%d/%m/%Y')"
)
assert rows("SELECT id, name, CAST(born AS CHAR) FROM people WHERE id >= 30 ORDER BY id") == [
    (30, "ZOE-30", "2001-02-03"),
    (31, "YAN-31", None),
]
assert error_of(f"LOAD DATA INFILE '{dates}' INTO TABLE people (id, @a, @b) SET nosuch = 1")[0] == 1054

# A table without a primary key gets its hidden one for every row.
cur.execute("CREATE TABLE events (at INT, what VARCHAR(10))")
events = file_with("events.csv", "1,a\n1,a\n2,b\n")
cur.execute(f"LOAD DATA LOCAL INFILE '{events}' INTO TABLE events FIELDS TERMINATED BY ','")
assert rows("SELECT at, what, COUNT(*) FROM events GROUP BY at, what ORDER BY at") == [(1, "a", 2), (2, "b", 1)]

# Errors, each with its reason.
bad_number = file_with("bad.tsv", "9\tnine\t2001-01-09\nten\tx\t2001-01-10\n")
code, message = error_of(f"LOAD DATA INFILE '{bad_number}' INTO TABLE people")
assert code == 1366 and "row 2" in message, (code, message)
short = file_with("short.tsv", "11\tonly two\n")
assert error_of(f"LOAD DATA INFILE '{short}' INTO TABLE people")[0] == 1261
assert error_of("LOAD DATA INFILE '/nonexistent/file' INTO TABLE people")[0] == 29
assert error_of(f"LOAD DATA INFILE '{short}' INTO TABLE nosuch")[0] == 1146
assert error_of(f"LOAD DATA INFILE '{short}' INTO TABLE people (nosuch)")[0] == 1054
unclosed = file_with("unclosed.csv", '12,"never closed\n')
assert error_of(
    f"LOAD DATA INFILE '{unclosed}' INTO TABLE people FIELDS TERMINATED BY ',' ENCLOSED BY '\"'"
)[0] == 1083

# LOCAL (or IGNORE) takes what does not fit as MySQL does outside strict mode: the closest
# value the column holds, and a warning naming the column and the row; the server's file
# without IGNORE stays strict (above). A date that is not one is still an error.
cur.execute(
    "CREATE TABLE loose (id INT PRIMARY KEY, n TINYINT NOT NULL, label VARCHAR(3), "
    "price DECIMAL(5,2), born DATE)"
)
loose = file_with(
    "loose.tsv",
    "1\t12abc\tabcdef\t123456\t2001-01-01\n"
    "2\tx\tok\t1.5\t2001-01-02\n"
    "3\t\\N\tok\t1\n"
    "4\t5\tok\t2\t2001-01-04\textra\n",
)
cur.execute(f"LOAD DATA LOCAL INFILE '{loose}' INTO TABLE loose")
assert cur.rowcount == 4, cur.rowcount
warnings = rows("SHOW WARNINGS")
assert rows("SELECT id, n, label, price, CAST(born AS CHAR) FROM loose ORDER BY id") == [
    (1, 12, "abc", Decimal("999.99"), "2001-01-01"),
    (2, 0, "ok", Decimal("1.50"), "2001-01-02"),
    (3, 0, "ok", Decimal("1.00"), None),
    (4, 5, "ok", Decimal("2.00"), "2001-01-04"),
]
assert [code for _, code, _ in warnings] == [1265, 1265, 1264, 1366, 1261, 1263, 1262], warnings
assert "'n' at row 1" in warnings[0][2] and "'price' at row 1" in warnings[2][2], warnings
assert "row 2" in warnings[3][2] and "Row 3" in warnings[4][2], warnings
cur.execute(f"LOAD DATA LOCAL INFILE '{loose}' REPLACE INTO TABLE loose")
assert len(rows("SHOW WARNINGS")) == 7, "the last statement's warnings only"
server_loose = file_with("server_loose.tsv", "6\tbad\tok\t1\t2001-01-06\n")
assert error_of(f"LOAD DATA INFILE '{server_loose}' INTO TABLE loose")[0] == 1366
cur.execute(f"LOAD DATA INFILE '{server_loose}' IGNORE INTO TABLE loose")
assert rows("SELECT n FROM loose WHERE id = 6") == [(0,)]
not_a_date = file_with("not_a_date.tsv", "7\t1\tok\t1\tsoon\n")
code, message = error_of(f"LOAD DATA LOCAL INFILE '{not_a_date}' INTO TABLE loose")
assert code == 1366 and "row 1" in message, (code, message)

# LOCAL into a plain table over several batches, as a strict load sends them (encoded
# straight, several in flight): rows whose key is taken, by the table or by an earlier
# batch, are skipped with a warning each and the rest of their batch loaded (the batch
# after one that skipped goes the general way too, the one after a batch that skipped
# nothing straight again); from a field that does not fit on (the 5,300th row), the load
# goes the general way with its warning.
cur.execute("CREATE TABLE local_many (id INT PRIMARY KEY, n INT)")
cur.execute("INSERT INTO local_many VALUES (71500, -1), (71501, -1)")
lines = [f"{i}\t{i * 2}" for i in range(70001, 75501)]
lines[5299] = "75300\tx"
lines.insert(2500, "70100\t0")
local_many = file_with("local_many.tsv", "\n".join(lines) + "\n")
cur.execute(f"LOAD DATA LOCAL INFILE '{local_many}' INTO TABLE local_many")
assert cur.rowcount == 5498, cur.rowcount
codes = [code for _, code, _ in rows("SHOW WARNINGS")]
assert sorted(codes) == [1062, 1062, 1062, 1366], codes
assert rows("SELECT COUNT(*), SUM(n = -1) FROM local_many") == [(5500, 2)]
assert rows("SELECT n FROM local_many WHERE id IN (70100, 75300, 75500) ORDER BY id") == [
    (140200,),
    (0,),
    (151000,),
]

# A front end alone numbers a long load's rows consecutively: each batch's values follow
# the last batch's, though a batch of 1,000 leaves a few of each 1,024 the front end
# reserves at a time.
cur.execute("CREATE TABLE numbered (id INT AUTO_INCREMENT PRIMARY KEY, n INT)")
numbered = file_with("numbered.tsv", "".join(f"{i}\n" for i in range(3500)))
cur.execute(f"LOAD DATA INFILE '{numbered}' INTO TABLE numbered (n)")
assert rows("SELECT COUNT(*), MIN(id), MAX(id), SUM(id = n + 1) FROM numbered") == [
    (3500, 1, 3500, Decimal(3500))
]

# A file that leaves out the AUTO_INCREMENT column loads the direct way, each row numbered
# once its fields converted, with the rows and the error of the general way (its twin
# has a CHECK, which only the general way runs).
for name, check in (("auto_direct", ""), ("auto_general", ", CHECK (n >= 0)")):
    cur.execute(
        f"CREATE TABLE {name} (id INT AUTO_INCREMENT PRIMARY KEY, n INT, s VARCHAR(3){check})"
    )
auto_file = file_with("auto.tsv", "".join(f"{i}\t{'abcd' if i == 2600 else 's'}\n" for i in range(3000)))
errors = [
    error_of(f"LOAD DATA INFILE '{auto_file}' INTO TABLE {name} (n, s)")
    for name in ("auto_direct", "auto_general")
]
assert errors[0] == errors[1] and errors[0][0] == 1406 and "row 2601" in errors[0][1], errors
loaded = rows("SELECT id, n, s FROM auto_direct ORDER BY id")
assert loaded == rows("SELECT id, n, s FROM auto_general ORDER BY id")
assert len(loaded) == 2000 and loaded[-1] == (2000, 1999, "s"), loaded[-1]

# Inside a transaction the rows are the transaction's: a rollback takes them back.
cur.execute("BEGIN")
late = file_with("late.tsv", "20\ttwenty\t2001-01-20\n")
cur.execute(f"LOAD DATA LOCAL INFILE '{late}' INTO TABLE people")
cur.execute("ROLLBACK")
assert rows("SELECT COUNT(*) FROM people WHERE id = 20") == [(0,)]

# The server's file into a plain table outside a transaction: a batch of 1,000 rows a
# transaction. All of them; then an error stops the load with the batches before it
# committed and none after it: a field that does not convert in the third batch, and a
# taken key in the second before a bad field in the third (the key's error, the first in
# the file's order).
cur.execute("CREATE TABLE many (id INT PRIMARY KEY, n INT)")
def many_rows(first, count, bad_at=None):
    lines = []
    for i in range(first, first + count):
        lines.append(f"{i}\t{'x' if i == bad_at else i * 2}")
    return "\n".join(lines) + "\n"
all_of_them = file_with("many.tsv", many_rows(1, 2500))
cur.execute(f"LOAD DATA INFILE '{all_of_them}' INTO TABLE many")
assert cur.rowcount == 2500, cur.rowcount
assert rows("SELECT COUNT(*), SUM(n) FROM many") == [(2500, Decimal(2500 * 2501))]
bad_third = file_with("bad_third.tsv", many_rows(10001, 2500, bad_at=12200))
code, message = error_of(f"LOAD DATA INFILE '{bad_third}' INTO TABLE many")
assert code == 1366 and "row 2200" in message, (code, message)
assert rows("SELECT COUNT(*), MIN(id), MAX(id) FROM many WHERE id > 10000") == [(2000, 10001, 12000)]
taken_second = file_with(
    "taken_second.tsv", many_rows(20001, 1400) + "5\t5\n" + many_rows(21402, 1100, bad_at=22300)
)
code, message = error_of(f"LOAD DATA INFILE '{taken_second}' INTO TABLE many")
assert code == 1062, (code, message)
assert rows("SELECT COUNT(*), MAX(id) FROM many WHERE id > 20000") == [(1000, 21000)]

# Several batches execute at once, each committing only after every batch before it did
# (several commits in flight): an error in the tenth batch leaves the nine before it
# committed and none of the three after it, executed or not.
tenth = file_with("tenth.tsv", many_rows(30001, 9500) + "5\t5\n" + many_rows(39502, 3000))
code, message = error_of(f"LOAD DATA INFILE '{tenth}' INTO TABLE many")
assert code == 1062, (code, message)
assert rows("SELECT COUNT(*), MIN(id), MAX(id) FROM many WHERE id > 30000") == [(9000, 30001, 39000)]

# A key in two batches sent together: whichever the data nodes lock first, the later
# line's row is the one refused, and only the batches before it stay.
twice = file_with("twice.tsv", many_rows(50001, 2000) + "52000\t0\n" + many_rows(52002, 999))
code, message = error_of(f"LOAD DATA INFILE '{twice}' INTO TABLE many")
assert code == 1062, (code, message)
assert rows("SELECT COUNT(*), MAX(id) FROM many WHERE id > 50000") == [(2000, 52000)]


# A batch that waits on another transaction's lock past the lock wait timeout goes again
# (with the batches after it, one at a time): here the other transaction commits the
# row once the batch waits again (another transaction of the load waiting), and the load
# stops at that taken key with the batch before it committed, where giving up at the
# timeout would have reported 1205.
def waiting_transactions():
    cur.execute("SELECT DISTINCT transaction_id FROM kista_info.locks WHERE state = 'waiting'")
    return {row[0] for row in cur.fetchall()}


other = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", database="ld")
other_cur = other.cursor()
other_cur.execute("BEGIN")
other_cur.execute("INSERT INTO many VALUES (61500, 0)")
waiting = file_with("waiting.tsv", many_rows(60001, 3000))
outcome = {}


def load_waiting():
    loader = pymysql.connect(
        host="127.0.0.1", port=port, user="root", password="", database="ld", autocommit=True
    )
    try:
        loader.cursor().execute(f"LOAD DATA INFILE '{waiting}' INTO TABLE many")
        outcome["done"] = True
    except pymysql.MySQLError as error:
        outcome["error"] = error.args
    loader.close()


loading = threading.Thread(target=load_waiting)
loading.start()
seen = set()
deadline = time.monotonic() + 30
while len(seen) < 2 and time.monotonic() < deadline:
    seen |= waiting_transactions()
    time.sleep(0.02)
assert len(seen) == 2, f"the load's batch did not wait again: {seen}"
other_cur.execute("COMMIT")
loading.join(30)
assert not loading.is_alive()
assert outcome.get("error", (None,))[0] == 1062, outcome
assert rows("SELECT COUNT(*), MAX(id) FROM many WHERE id > 60000") == [(1001, 61500)]

# KILL QUERY stops a load between batches: here its fifth batch waits on another
# transaction's lock, the load is killed, the lock freed; the load answers 1317 with the
# batches before the kill committed, whole, and those executing after it rolled back
# (the fifth commits when the load had sent the ninth and waited for the fifth before
# the kill; it is rolled back when the load saw the kill sending the sixth to ninth).
other_cur.execute("BEGIN")
other_cur.execute("INSERT INTO many VALUES (84500, 0)")
killed_file = file_with("killed.tsv", many_rows(80001, 20000))
loader = pymysql.connect(
    host="127.0.0.1", port=port, user="root", password="", database="ld", autocommit=True
)
loader_id = loader.cursor().connection.thread_id()
outcome = {}


def load_killed():
    try:
        loader.cursor().execute(f"LOAD DATA INFILE '{killed_file}' INTO TABLE many")
        outcome["done"] = True
    except pymysql.MySQLError as error:
        outcome["error"] = error.args


loading = threading.Thread(target=load_killed)
loading.start()
deadline = time.monotonic() + 30
while not waiting_transactions() and time.monotonic() < deadline:
    time.sleep(0.02)
assert waiting_transactions(), "the load never waited on the lock"
cur.execute(f"KILL QUERY {loader_id}")
other_cur.execute("ROLLBACK")
loading.join(30)
assert not loading.is_alive()
assert outcome.get("error", (None,))[0] == 1317, outcome
assert rows("SELECT COUNT(*), MAX(id) FROM many WHERE id > 80000") in ([(5000, 85000)], [(4000, 84000)])
assert loader.cursor().execute("SELECT 1") == 1, "the connection goes on"
loader.close()
other.close()

# Bytes that are not UTF-8: a BLOB keeps them as they are; a text column refuses them
# from the server's file (1366, as strict mode; nothing of the batch stays), and a LOCAL
# load keeps '?' for them with a warning, as MySQL outside strict mode.
cur.execute("CREATE TABLE raw (id INT PRIMARY KEY, b BLOB, t VARCHAR(10))")
raw = file_with_bytes("raw.tsv", b"1\t\x00\xff\x10\x80\xc3\tok\n2\tab\t\xff\xfe\n")
code, message = error_of(f"LOAD DATA INFILE '{raw}' INTO TABLE raw")
assert code == 1366 and "'t'" in message, (code, message)
assert rows("SELECT COUNT(*) FROM raw") == [(0,)]
cur.execute(f"LOAD DATA LOCAL INFILE '{raw}' INTO TABLE raw")
cur.execute("SHOW WARNINGS")
assert [w[1] for w in cur.fetchall()] == [1366]
assert rows("SELECT HEX(b), HEX(t) FROM raw ORDER BY id") == [
    ("00FF1080C3", "6F6B"), ("6162", "3F3F")]

print("load data ok")
