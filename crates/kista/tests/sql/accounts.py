"""Accounts and privileges as MySQL has them, kept in the cluster: CREATE/ALTER/RENAME/DROP
USER, SET PASSWORD, GRANT and REVOKE at the server, database and table levels, SHOW
GRANTS, and the refusals (1044, 1142, 1227, 1396, 1045) a limited account meets; a second
front end (its port the script's second argument) sees the same accounts.

Run by crates/kista/tests/sql.rs with the front ends' ports.
"""
import sys

import pymysql

from session_helpers import code_of

port, other_port = int(sys.argv[1]), int(sys.argv[2])


def connect(user, password, database=None, to=port):
    return pymysql.connect(host="127.0.0.1", port=to, user=user, password=password,
                           database=database, autocommit=True)


root = connect("root", "").cursor()
root.execute("CREATE DATABASE shop")
root.execute("CREATE DATABASE hr")
root.execute("CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20))")
root.execute("CREATE TABLE shop.orders (id INT PRIMARY KEY, item INT)")
root.execute("CREATE TABLE hr.pay (id INT PRIMARY KEY, amount INT)")
root.execute("INSERT INTO shop.items VALUES (1, 'pen')")
root.execute("CREATE USER 'app'@'%' IDENTIFIED BY 'pw1', 'ro' IDENTIFIED WITH mysql_native_password BY 'pw2'")
assert code_of(lambda: root.execute("CREATE USER app IDENTIFIED BY 'x'")) == 1396
root.execute("CREATE USER IF NOT EXISTS app IDENTIFIED BY 'x'")
root.execute("SHOW WARNINGS")
assert root.fetchall()[0][1] == 3163
root.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON shop.* TO 'app'@'%'")
root.execute("GRANT SELECT ON shop.items TO ro")

# A user limited to one database works there and is refused elsewhere.
assert code_of(lambda: connect("app", "wrong")) == 1045
app = connect("app", "pw1", "shop").cursor()
app.execute("INSERT INTO items VALUES (2, 'ink')")
app.execute("UPDATE items SET name = 'nib' WHERE id = 2")
app.execute("SELECT i.name FROM items i JOIN orders o ON o.item = i.id")
app.execute("DELETE FROM items WHERE id = 2")
assert code_of(lambda: app.execute("USE hr")) == 1044
assert code_of(lambda: connect("app", "pw1", "hr")) == 1044
assert code_of(lambda: app.execute("SELECT * FROM hr.pay")) == 1142
assert code_of(lambda: app.execute("INSERT INTO items SELECT id, 'x' FROM hr.pay")) == 1142
assert code_of(lambda: app.execute("CREATE TABLE shop.more (id INT PRIMARY KEY)")) == 1142
assert code_of(lambda: app.execute("DROP TABLE items")) == 1142
assert code_of(lambda: app.execute("CREATE USER x")) == 1227
assert code_of(lambda: app.execute("GRANT SELECT ON shop.* TO ro")) == 1044, "no GRANT OPTION"
assert code_of(lambda: app.execute("SHOW GRANTS FOR ro")) == 1227
app.execute("SHOW GRANTS")
assert [row[0] for row in app.fetchall()] == [
    "GRANT USAGE ON *.* TO `app`@`%`",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON `shop`.* TO `app`@`%`",
]
app.execute("SELECT COUNT(*) FROM information_schema.TABLES")

# Table level: only the table granted.
ro = connect("ro", "pw2", "shop").cursor()
ro.execute("SELECT name FROM items")
assert ro.fetchall() == (("pen",),)
assert code_of(lambda: ro.execute("SELECT * FROM orders")) == 1142
assert code_of(lambda: ro.execute("INSERT INTO items VALUES (3, 'x')")) == 1142

# The other front end knows the accounts and their grants.
other = connect("app", "pw1", "shop", to=other_port).cursor()
other.execute("SELECT COUNT(*) FROM items")
assert code_of(lambda: other.execute("SELECT * FROM hr.pay")) == 1142

# Passwords change (one's own needs no privilege); grants are revoked; accounts renamed.
app.execute("ALTER USER app IDENTIFIED BY 'pw3'")
assert code_of(lambda: connect("app", "pw1")) == 1045
connect("app", "pw3")
root.execute("SET PASSWORD FOR ro = 'pw4'")
connect("ro", "pw4")
root.execute("REVOKE INSERT ON shop.* FROM app")
again = connect("app", "pw3", "shop").cursor()
assert code_of(lambda: again.execute("INSERT INTO items VALUES (4, 'x')")) == 1142
again.execute("UPDATE items SET name = 'pen' WHERE id = 1")
root.execute("GRANT ALL PRIVILEGES ON hr.pay TO app WITH GRANT OPTION")
again = connect("app", "pw3").cursor()
again.execute("SELECT * FROM hr.pay")
again.execute("GRANT SELECT ON hr.pay TO ro")
root.execute("SHOW GRANTS FOR app")
assert [row[0] for row in root.fetchall()] == [
    "GRANT USAGE ON *.* TO `app`@`%`",
    "GRANT SELECT, UPDATE, DELETE ON `shop`.* TO `app`@`%`",
    "GRANT ALL PRIVILEGES ON `hr`.`pay` TO `app`@`%` WITH GRANT OPTION",
], "ALL at a table level"
root.execute("RENAME USER app TO app2")
assert code_of(lambda: connect("app", "pw3")) == 1045
connect("app2", "pw3", "shop")
root.execute("SHOW GRANTS")
assert root.fetchall()[0][0] == "GRANT ALL PRIVILEGES ON *.* TO `root`@`%` WITH GRANT OPTION"

# Dropped accounts log in no more.
root.execute("DROP USER app2, ro")
assert code_of(lambda: connect("app2", "pw3")) == 1045
assert code_of(lambda: root.execute("DROP USER app2")) == 1396
root.execute("DROP USER IF EXISTS app2")
assert code_of(lambda: root.execute("DROP USER root")) == 1396
root.execute("FLUSH PRIVILEGES")
root.execute("DROP DATABASE shop")
root.execute("DROP DATABASE hr")
print("accounts ok")
