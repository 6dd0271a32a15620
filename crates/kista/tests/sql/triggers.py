"""Triggers: BEFORE triggers change the row written (SET NEW.col), triggers write other
tables with the row's NEW and OLD values, once per row, in the statement's transaction
(a failing trigger fails its statement and undoes its writes); MySQL's errors for what a
trigger may not do; a second connection sees and fires them (they live in the cluster);
DROP TRIGGER and DROP TABLE remove them.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
import pymysql

from session_helpers import Session

session = Session("triggers")
cur, rows, error_of = session.cur, session.rows, session.error_of

cur.execute("CREATE TABLE account (id INT PRIMARY KEY, owner VARCHAR(20), balance INT NOT NULL)")
cur.execute("CREATE TABLE audit (n INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(10), "
            "account INT, old_balance INT, new_balance INT)")
cur.execute("CREATE TABLE totals (id INT PRIMARY KEY, accounts INT, money INT)")
cur.execute("INSERT INTO totals VALUES (1, 0, 0)")

# The empty triggers of sqllogictest's evidence files, and a one-statement body.
cur.execute("CREATE TRIGGER nothing AFTER UPDATE ON account FOR EACH ROW BEGIN END")
assert error_of("CREATE TRIGGER nothing AFTER UPDATE ON account FOR EACH ROW BEGIN END") == 1359
cur.execute("DROP TRIGGER nothing")
assert error_of("DROP TRIGGER nothing") == 1360
cur.execute("DROP TRIGGER IF EXISTS nothing")

cur.execute("CREATE TRIGGER owner_upper BEFORE INSERT ON account FOR EACH ROW "
            "SET NEW.owner = UPPER(NEW.owner)")
cur.execute("CREATE DEFINER=`root`@`%` TRIGGER opened AFTER INSERT ON account FOR EACH ROW BEGIN "
            "INSERT INTO audit (what, account, new_balance) VALUES ('open', NEW.id, NEW.balance); "
            "UPDATE totals SET accounts = accounts + 1, money = money + NEW.balance WHERE id = 1; "
            "END")
cur.execute("CREATE TRIGGER no_overdraft BEFORE UPDATE ON account FOR EACH ROW "
            "SET NEW.balance = GREATEST(NEW.balance, 0)")
cur.execute("CREATE TRIGGER moved AFTER UPDATE ON account FOR EACH ROW BEGIN "
            "INSERT INTO audit (what, account, old_balance, new_balance) "
            "VALUES ('move', OLD.id, OLD.balance, NEW.balance); "
            "UPDATE totals SET money = money - OLD.balance + NEW.balance WHERE id = 1; END")
cur.execute("CREATE TRIGGER closed BEFORE DELETE ON account FOR EACH ROW "
            "INSERT INTO audit (what, account, old_balance) VALUES ('close', OLD.id, OLD.balance)")

cur.execute("INSERT INTO account VALUES (1, 'ann', 100), (2, 'bo', 50)")
assert rows("SELECT id, owner FROM account ORDER BY id") == [(1, "ANN"), (2, "BO")]
cur.execute("UPDATE account SET balance = balance - 80 WHERE id IN (1, 2)")
assert rows("SELECT id, balance FROM account ORDER BY id") == [(1, 20), (2, 0)]
cur.execute("DELETE FROM account WHERE id = 2")
assert rows("SELECT what, account, old_balance, new_balance FROM audit ORDER BY n") == [
    ("open", 1, None, 100), ("open", 2, None, 50), ("move", 1, 100, 20), ("move", 2, 50, 0),
    ("close", 2, 0, None)], rows("SELECT * FROM audit ORDER BY n")
assert rows("SELECT accounts, money FROM totals") == [(2, 20)]

# A trigger's failure fails the statement, and its writes go with it.
cur.execute("CREATE TABLE ledger (account INT PRIMARY KEY)")
cur.execute("CREATE TRIGGER one_entry AFTER INSERT ON account FOR EACH ROW "
            "INSERT INTO ledger VALUES (NEW.id)")
cur.execute("INSERT INTO ledger VALUES (3)")
assert error_of("INSERT INTO account VALUES (3, 'cy', 5)") == 1062
assert rows("SELECT COUNT(*) FROM account WHERE id = 3") == [(0,)]
assert rows("SELECT COUNT(*) FROM audit WHERE account = 3") == [(0,)]
cur.execute("BEGIN")
cur.execute("INSERT INTO account VALUES (4, 'di', 7)")
cur.execute("ROLLBACK")
assert rows("SELECT COUNT(*) FROM ledger WHERE account = 4") == [(0,)]
assert rows("SELECT COUNT(*) FROM audit WHERE account = 4") == [(0,)]

# What MySQL refuses.
assert error_of("CREATE TRIGGER t1 AFTER INSERT ON account FOR EACH ROW SET NEW.owner = 'x'") == 1362
assert error_of("CREATE TRIGGER t1 BEFORE DELETE ON account FOR EACH ROW SET NEW.owner = 'x'") == 1363
assert error_of("CREATE TRIGGER t1 BEFORE INSERT ON account FOR EACH ROW SET OLD.owner = 'x'") == 1362
assert error_of("CREATE TRIGGER t1 AFTER INSERT ON account FOR EACH ROW "
                "INSERT INTO audit (account) VALUES (OLD.id)") == 1363
assert error_of("CREATE TRIGGER t1 BEFORE INSERT ON account FOR EACH ROW SET NEW.nope = 1") == 1054
assert error_of("CREATE TRIGGER t1 BEFORE INSERT ON nowhere FOR EACH ROW SET NEW.a = 1") == 1146
cur.execute("CREATE TRIGGER loop_back AFTER INSERT ON ledger FOR EACH ROW "
            "UPDATE account SET balance = 0 WHERE id = NEW.account")
assert error_of("INSERT INTO account VALUES (5, 'ed', 1)") == 1442
assert rows("SELECT COUNT(*) FROM account WHERE id = 5") == [(0,)]
cur.execute("DROP TRIGGER loop_back")

# Another connection sees the triggers and fires them; information_schema lists them.
other = pymysql.connect(host="127.0.0.1", port=session.connection.port, user="root",
                        password="", database="triggers", autocommit=True)
ocur = other.cursor()
ocur.execute("INSERT INTO account VALUES (6, 'flo', 9)")
ocur.execute("SELECT owner FROM account WHERE id = 6")
assert ocur.fetchall() == (("FLO",),)
ocur.execute("SELECT TRIGGER_NAME, EVENT_MANIPULATION, ACTION_TIMING, ACTION_ORDER "
             "FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_TABLE = 'account' "
             "ORDER BY EVENT_MANIPULATION, ACTION_TIMING, ACTION_ORDER")
assert ocur.fetchall() == (
    ("closed", "DELETE", "BEFORE", 1), ("opened", "INSERT", "AFTER", 1),
    ("one_entry", "INSERT", "AFTER", 2), ("owner_upper", "INSERT", "BEFORE", 1),
    ("moved", "UPDATE", "AFTER", 1), ("no_overdraft", "UPDATE", "BEFORE", 1)), ocur.fetchall()
other.close()

# Dropping the table drops its triggers: the names are free again.
cur.execute("DROP TABLE account")
cur.execute("CREATE TABLE account (id INT PRIMARY KEY)")
cur.execute("CREATE TRIGGER opened AFTER INSERT ON account FOR EACH ROW BEGIN END")
assert rows("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'triggers'") == [(1,)]

print("triggers ok")
