"""SHOW [FULL] PROCESSLIST and information_schema.PROCESSLIST list this front end's
connections with what each runs; KILL QUERY ends the running statement (SLEEP returns 1
at once, as in MySQL) and leaves the connection; KILL ends the connection, even while it
runs a statement; an unknown id is error 1094.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
import threading
import time

import pymysql

from session_helpers import Session

watcher = Session("processes")
sleeper = Session("processes", create=False)
sleeper_id = sleeper.rows("SELECT CONNECTION_ID()")[0][0]


def run_in_background(session, sql):
    """Runs `sql` on `session` in a thread; returns the thread and where its outcome goes."""
    outcome = {}

    def run():
        started = time.monotonic()
        try:
            outcome["rows"] = session.rows(sql)
        except pymysql.MySQLError as error:
            outcome["error"] = error.args[0]
        outcome["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def wait_until_running(statement):
    """The watcher's view of the sleeper once it runs `statement` (at most 10 s)."""
    for _ in range(200):
        shown = [r for r in watcher.rows("SHOW FULL PROCESSLIST") if r[0] == sleeper_id]
        if shown and shown[0][7] == statement:
            return shown[0]
        time.sleep(0.05)
    raise AssertionError(f"never saw {statement!r} running")


thread, outcome = run_in_background(sleeper, "SELECT SLEEP(20)")
row = wait_until_running("SELECT SLEEP(20)")
assert (row[1], row[3], row[4]) == ("root", "processes", "Query"), row
assert row[2].startswith("127.0.0.1:"), row
listed = watcher.rows("SELECT ID, COMMAND, INFO FROM information_schema.PROCESSLIST "
                      f"WHERE ID = {sleeper_id}")
assert listed == [(sleeper_id, row[4], "SELECT SLEEP(20)")], listed
# The watcher sees itself running its own SHOW.
me = watcher.rows("SELECT CONNECTION_ID()")[0][0]
assert [r[7] for r in watcher.rows("SHOW PROCESSLIST") if r[0] == me] == ["SHOW PROCESSLIST"]

watcher.cur.execute(f"KILL QUERY {sleeper_id}")
thread.join(15)
assert not thread.is_alive()
assert outcome.get("rows") == [(1,)] and outcome["seconds"] < 10, outcome
# The connection goes on.
assert sleeper.rows("SELECT 2") == [(2,)]

thread, outcome = run_in_background(sleeper, "SELECT SLEEP(20)")
wait_until_running("SELECT SLEEP(20)")
watcher.cur.execute(f"KILL {sleeper_id}")
thread.join(15)
assert not thread.is_alive()
assert outcome.get("error") in (2013, 2006), outcome
assert outcome["seconds"] < 10, outcome
for _ in range(100):
    if all(r[0] != sleeper_id for r in watcher.rows("SHOW PROCESSLIST")):
        break
    time.sleep(0.05)
else:
    raise AssertionError("the killed connection is still listed")

# max_execution_time bounds a SELECT: SLEEP returns 1 at the bound (as MySQL), and a
# slow join stops with 3024 while no round trip happens; other statements are unbounded.
watcher.cur.execute("CREATE TABLE nums (n INT PRIMARY KEY)")
watcher.cur.execute("INSERT INTO nums VALUES " + ", ".join(f"({n})" for n in range(900)))
watcher.cur.execute("SET max_execution_time = 300")
assert watcher.rows("SELECT @@max_execution_time") == [(300,)]
started = time.monotonic()
assert watcher.rows("SELECT SLEEP(10)") == [(1,)]
assert time.monotonic() - started < 5
started = time.monotonic()
# (The first join keeps 810,000 rows, under the front end's limit of 1,000,000; the
# second examines 729 million pairs and keeps none: only the bound can stop it.)
assert watcher.error_of(
    "SELECT COUNT(*) FROM nums a JOIN nums b ON a.n + b.n >= 0 "
    "JOIN nums c ON a.n + b.n + c.n < 0") == 3024
assert time.monotonic() - started < 10
assert watcher.rows("SELECT COUNT(*) FROM nums") == [(900,)]
watcher.cur.execute("SET max_execution_time = 0")
assert watcher.error_of("SET max_execution_time = -1") == 1231

assert watcher.error_of("KILL 4000000") == 1094
assert watcher.error_of("KILL QUERY 4000000") == 1094

print("processlist ok")
