"""The privilege matrix: for each kind of statement, an account holding everything on its
own database (`app`) but not the privilege the statement needs elsewhere is refused with
MySQL's error, and once granted that privilege it succeeds. Then what a limited account
may see (SHOW, information_schema, SHOW PROCESSLIST), kill (1095), and what a trigger's
body may do (its definer's privileges, when created and each time it fires).

Every case here was a way around the privileges before (issue 63).
Run by crates/kista/tests/sql.rs with the front end's port.
"""
import sys
import threading
import time

import mysql.connector
import pymysql

from session_helpers import code_of

port = int(sys.argv[1])


def connect(user, password="pw", database=None):
    return pymysql.connect(host="127.0.0.1", port=port, user=user, password=password,
                           database=database, autocommit=True)


root = connect("root", "").cursor()
for statement in [
    "CREATE DATABASE secret",
    "CREATE DATABASE app",
    "CREATE TABLE secret.t (id INT PRIMARY KEY, v VARCHAR(20))",
    "CREATE TABLE secret.other (id INT PRIMARY KEY)",
    "CREATE TABLE secret.log (id INT PRIMARY KEY)",
    "INSERT INTO secret.t VALUES (1, 'gold')",
    "CREATE TABLE app.tt (id INT PRIMARY KEY, v VARCHAR(20))",
    "CREATE TRIGGER secret.watch BEFORE INSERT ON secret.other FOR EACH ROW SET NEW.id = NEW.id",
]:
    root.execute(statement)

accounts = 0


def limited_account():
    """A new account with every privilege on `app` and none elsewhere."""
    global accounts
    accounts += 1
    name = f"u{accounts}"
    root.execute(f"CREATE USER {name} IDENTIFIED BY 'pw'")
    root.execute(f"GRANT ALL ON app.* TO {name}")
    return name


# (the privilege the statement needs, the statement ({n}: the case's number), the refusal)
MATRIX = [
    ("SELECT ON secret.t", "SET @x = (SELECT v FROM secret.t WHERE id = 1)", 1142),
    ("SELECT ON secret.t", "SELECT (SELECT v FROM secret.t WHERE id = 1)", 1142),
    ("SELECT ON secret.t", "SELECT * FROM app.tt WHERE id IN (SELECT id FROM secret.t)", 1142),
    ("SELECT ON secret.t", "UPDATE app.tt SET v = (SELECT v FROM secret.t WHERE id = 1)", 1142),
    ("SELECT ON secret.t", "INSERT INTO app.tt SELECT id + {n} * 1000, v FROM secret.t", 1142),
    ("SELECT ON secret.t", "EXPLAIN SELECT * FROM secret.t", 1142),
    ("SELECT ON secret.t", "CREATE VIEW app.v{n} AS SELECT * FROM secret.t", 1142),
    ("SELECT ON secret.t", "CREATE TABLE app.l{n} LIKE secret.t", 1142),
    ("SELECT ON secret.t", "SHOW CREATE TABLE secret.t", 1142),
    ("SELECT ON secret.t", "DESCRIBE secret.t", 1142),
    ("SELECT ON secret.t", "SHOW COLUMNS FROM secret.t", 1142),
    ("SELECT ON secret.t", "SHOW INDEX FROM t FROM secret", 1142),
    ("SELECT ON secret.t", "SHOW TABLES FROM secret", 1044),
    ("REFERENCES ON secret.t",
     "CREATE TABLE app.c{n} (id INT PRIMARY KEY, r INT, FOREIGN KEY (r) REFERENCES secret.t (id))",
     1142),
    ("INSERT ON secret.log",
     "CREATE TRIGGER app.tr{n} AFTER INSERT ON app.tt FOR EACH ROW "
     "INSERT INTO secret.log VALUES (NEW.id + {n} * 1000)", 1142),
    ("CREATE, INSERT ON secret.*", "ALTER TABLE app.r{n} RENAME TO secret.moved{n}", 1142),
    ("CREATE, INSERT ON secret.*", "RENAME TABLE app.r{n} TO secret.moved{n}", 1142),
    ("INDEX ON secret.other", "CREATE INDEX i{n} ON secret.other (id)", 1142),
    ("SYSTEM_VARIABLES_ADMIN ON *.*", "SET GLOBAL max_connections = 500", 1227),
    ("SUPER ON *.*", "SET @@global.max_connections = 500", 1227),
    ("SELECT ON kista_info.*", "SELECT COUNT(*) FROM kista_info.config", 1142),
    ("TRIGGER ON secret.other", "SHOW CREATE TRIGGER secret.watch", 1142),
]

for number, (privilege, statement, refusal) in enumerate(MATRIX):
    statement = statement.format(n=number)
    name = limited_account()
    before = connect(name).cursor()
    before.execute(f"CREATE TABLE app.r{number} (id INT PRIMARY KEY)")
    got = code_of(lambda: before.execute(statement))
    assert got == refusal, f"{statement!r} without {privilege}: {got}"
    root.execute(f"GRANT {privilege} TO {name}")
    after = connect(name).cursor()  # grants apply to connections made after them
    after.execute(statement)
    after.fetchall()

# A prepared point read goes through the same check, whatever the key's width on the
# wire (8-byte integers took a path of their own).
name = limited_account()
for key in (1, 2 ** 40):
    connector = mysql.connector.connect(host="127.0.0.1", port=port, user=name, password="pw",
                                        database="app", autocommit=True)
    prepared = connector.cursor(prepared=True)
    got = code_of(lambda: prepared.execute("SELECT v FROM secret.t WHERE id = %s", (key,)))
    assert got == 1142, f"prepared read of key {key}: {got}"
    connector.close()
root.execute(f"GRANT SELECT ON secret.t TO {name}")
connector = mysql.connector.connect(host="127.0.0.1", port=port, user=name, password="pw",
                                    autocommit=True)
prepared = connector.cursor(prepared=True)
prepared.execute("SELECT v FROM secret.t WHERE id = %s", (1,))
assert prepared.fetchall() == [("gold",)]
connector.close()

# What a limited account sees: only what it holds some privilege on.
name = limited_account()
root.execute(f"GRANT SELECT ON secret.t TO {name}")
seen = connect(name).cursor()
seen.execute("SHOW DATABASES")
assert [row[0] for row in seen.fetchall()] == ["app", "information_schema", "secret"]
seen.execute("SHOW TABLES FROM secret")
assert seen.fetchall() == (("t",),), "secret.other and secret.log stay hidden"
seen.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'secret'")
assert seen.fetchall() == (("t",),)
seen.execute("SELECT DISTINCT TABLE_NAME FROM information_schema.COLUMNS "
             "WHERE TABLE_SCHEMA = 'secret'")
assert seen.fetchall() == (("t",),)
blind = connect(limited_account()).cursor()
blind.execute("SHOW DATABASES")
assert [row[0] for row in blind.fetchall()] == ["app", "information_schema"]
blind.execute("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'secret'")
assert blind.fetchall() == ((0,),)
blind.execute("SHOW TABLE STATUS FROM secret")
assert blind.fetchall() == ()
blind.execute("SELECT COUNT(*) FROM information_schema.COLLATIONS")
assert blind.fetchall()[0][0] > 0, "what belongs to no database is everyone's"

# SHOW PROCESSLIST shows another user's statements (passwords in literals) only with
# PROCESS; KILL of another user's connection needs CONNECTION_ADMIN (or SUPER).
victim_name = limited_account()
victim = connect(victim_name)
victim_cursor = victim.cursor()
sleeping = threading.Thread(  # KILL QUERY ends SLEEP early, as MySQL's: it returns 1
    target=lambda: victim_cursor.execute("SELECT SLEEP(30), 'password'"))
sleeping.start()
victim_id = None
for _ in range(100):
    root.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP%'")
    found = root.fetchall()
    if found:
        victim_id = found[0][0]
        break
    time.sleep(0.05)
assert victim_id is not None, "the sleeping statement shows to root"
watcher_name = limited_account()
watcher = connect(watcher_name).cursor()
watcher.execute("SHOW FULL PROCESSLIST")
users = {row[1] for row in watcher.fetchall()}
assert users == {watcher_name}, f"only its own connection: {users}"
assert code_of(lambda: watcher.execute(f"KILL QUERY {victim_id}")) == 1095
assert code_of(lambda: watcher.execute(f"KILL {victim_id}")) == 1095
root.execute(f"GRANT PROCESS, CONNECTION_ADMIN ON *.* TO {watcher_name}")
watcher = connect(watcher_name).cursor()
watcher.execute("SHOW FULL PROCESSLIST")
assert any("password" in (row[7] or "") for row in watcher.fetchall()), "PROCESS sees all"
watcher.execute(f"KILL QUERY {victim_id}")
sleeping.join(timeout=20)
assert not sleeping.is_alive(), "KILL QUERY ended the sleep"
own = connect(victim_name)
own_cursor = own.cursor()
own_cursor.execute("SELECT CONNECTION_ID()")
own_id = own_cursor.fetchall()[0][0]
connect(victim_name).cursor().execute(f"KILL {own_id}")  # one's own, without privileges
assert code_of(lambda: own_cursor.execute("SELECT 1")) in (2013, 2006)

# A trigger runs with its definer's privileges: another account firing it needs none on
# what its body writes, and a REVOKE from the definer stops it from the next statement.
definer = limited_account()
root.execute(f"GRANT INSERT ON secret.log TO {definer}")
creating = connect(definer).cursor()
creating.execute("CREATE TABLE app.fired (id INT PRIMARY KEY)")
creating.execute("CREATE TRIGGER app.logs AFTER INSERT ON app.fired FOR EACH ROW "
                 "INSERT INTO secret.log VALUES (NEW.id)")
creating.execute("SHOW TRIGGERS FROM app LIKE 'fired'")
assert creating.fetchall()[0][7] == f"{definer}@%", "the creator is the definer"
invoker = limited_account()
connect(invoker).cursor().execute("INSERT INTO app.fired VALUES (900001)")
root.execute("SELECT COUNT(*) FROM secret.log WHERE id = 900001")
assert root.fetchall() == ((1,),)
root.execute(f"REVOKE INSERT ON secret.log FROM {definer}")
assert code_of(lambda: connect(invoker).cursor().execute(
    "INSERT INTO app.fired VALUES (900002)")) == 1142
root.execute("SELECT COUNT(*) FROM app.fired WHERE id = 900002")
assert root.fetchall() == ((0,),), "the refused trigger failed its statement"

root.execute("DROP DATABASE app")
root.execute("DROP DATABASE secret")
print("privileges ok")
