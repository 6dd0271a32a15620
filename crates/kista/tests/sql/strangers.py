"""Strangers cannot lock the accounts out of a front end started with
`--connections-max 4 --connect-timeout-s 2 --wait-timeout-s 4`:

- 1,000 connections that never log in, 16 MiB packet headers and a slowloris (a byte a
  second) leave root logging in at once, and the front end's memory bounded;
- a connection that does not log in within connect_timeout is closed, and so is a
  logged-in one that waits longer than wait_timeout for its client;
- at the connection limit ordinary accounts are refused (1040) but one more is kept for
  an account with CONNECTION_ADMIN (root).

Run by crates/kista/tests/sql.rs with the front end's port and process id.
"""
import resource
import socket
import sys
import threading
import time

import mysql.connector
import pymysql

from session_helpers import code_of

port, pid = int(sys.argv[1]), int(sys.argv[2])
STRANGERS = 1000
# A bound far above what a thousand strangers cost a front end holding a few hundred of
# them at a time (each a thread that touched little of its stack, and a 16 KiB buffer).
RSS_BOUND_MB = 400


def connect(user="root", password=""):
    return pymysql.connect(host="127.0.0.1", port=port, user=user, password=password,
                           autocommit=True, connect_timeout=5)


def rss_mb():
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no VmRSS")


def stranger(kind):
    """A connection that will not log in: silent, a 16 MiB header, or a byte a second."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    if kind == "header":
        sock.sendall(b"\xff\xff\xff\x01")
    return sock


def slowloris(sock, stop):
    while not stop.is_set():
        try:
            sock.sendall(b"\x01")
        except OSError:
            return
        time.sleep(1)


def closed_within(sock, seconds):
    """Whether the server closes `sock` within `seconds` (it may first send its greeting
    or an error)."""
    sock.settimeout(seconds)
    deadline = time.time() + seconds
    try:
        while time.time() < deadline:
            if sock.recv(65536) == b"":
                return True
    except (socket.timeout, TimeoutError):
        return False
    except OSError:
        return True  # reset
    return False


soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
before = rss_mb()
strangers = [stranger(("silent", "header", "loris")[n % 3]) for n in range(STRANGERS)]
stop = threading.Event()
loris = [threading.Thread(target=slowloris, args=(s, stop), daemon=True)
         for s in strangers[2::3][:50]]
for thread in loris:
    thread.start()
started = time.time()
root = connect()
root_cursor = root.cursor()
root_cursor.execute("SELECT 1")
assert root_cursor.fetchall() == ((1,),)
print(f"root logged in {time.time() - started:.3f} s after {STRANGERS} strangers connected")
during = rss_mb()
print(f"front end RSS {before} MB before, {during} MB among the strangers")
assert during < RSS_BOUND_MB, during

# Every stranger is gone within connect_timeout (2 s) and the check's interval: those
# displaced for newer ones at once, the rest when their time is up (the slowloris too).
still_open = [s for s in strangers if not closed_within(s, 6)]
assert not still_open, f"{len(still_open)} strangers still connected"
stop.set()
root.close()  # (quiet for longer than wait_timeout by now)

# At the limit: four logged-in connections; a fifth ordinary account is refused, root
# gets the place kept for an administrator, and no second one.
root_cursor = connect().cursor()
root_cursor.execute("CREATE USER app IDENTIFIED BY 'pw'")
held = [connect("app", "pw") for _ in range(3)]
assert code_of(lambda: connect("app", "pw")) == 1040
admin = connect()
admin.cursor().execute("SELECT 1")
assert code_of(lambda: connect()) == 1040
admin.close()
# The administrator's place goes with the account: a connection in it that changes to an
# ordinary account (COM_CHANGE_USER) is refused with 1040, and the place is free again.
changing = mysql.connector.connect(host="127.0.0.1", port=port, user="root", password="",
                                   connection_timeout=5)
assert code_of(lambda: changing.cmd_change_user(username="app", password="pw")) == 1040
time.sleep(0.2)
connect().close()
held.pop().close()
time.sleep(0.2)
held.append(connect("app", "pw"))

# A logged-in connection quiet for longer than wait_timeout (4 s) is closed; one that
# keeps talking is not.
quiet = held[0].cursor()
talking = held[1].cursor()
for _ in range(14):
    talking.execute("SELECT 1")
    time.sleep(0.5)
assert code_of(lambda: quiet.execute("SELECT 1")) in (2006, 2013)
talking.execute("SELECT 1")
print("strangers ok")
