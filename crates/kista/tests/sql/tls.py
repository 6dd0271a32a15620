"""MySQL clients reach the front end over TLS and verify its certificate:

- PyMySQL and mysql-connector-python with the cluster's authority (`kista tls`), the
  certificate's name checked, and the `mysql` client with --ssl-verify-server-cert: each
  session reports its cipher (Ssl_cipher), a plain session none;
- a client that trusts another authority refuses the front end;
- a front end started with --require-secure-transport refuses plain clients with 3159
  and serves TLS ones;
- a certificate made anew (`kista tls` again: a renewal) is served from the next
  connection on, without a restart.

Run by crates/kista/tests/sql.rs with: the port of a front end with TLS, the port of one
that requires it, the directory `kista tls` wrote, another authority's certificate, and
the kista binary.
"""
import hashlib
import ssl
import subprocess
import sys
import time

import mysql.connector
import pymysql

from session_helpers import code_of

port, required_port = int(sys.argv[1]), int(sys.argv[2])
tls_dir, strangers_ca, kista = sys.argv[3], sys.argv[4], sys.argv[5]
ca = f"{tls_dir}/ca.pem"


def pymysql_connect(port, ca=None):
    secure = {"ca": ca, "check_hostname": True} if ca else None
    return pymysql.connect(host="127.0.0.1", port=port, user="root", password="",
                           autocommit=True, connect_timeout=5, ssl=secure)


def status(connection, name):
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW STATUS LIKE '{name}'")
        rows = cursor.fetchall()
        return rows[0][1] if rows else None


def variable(connection, name):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT @@{name}")
        return cursor.fetchone()[0]


def served_certificate(connection):
    """The fingerprint of the certificate a PyMySQL connection was served."""
    return hashlib.sha256(connection._sock.getpeercert(binary_form=True)).hexdigest()


# PyMySQL, verifying the certificate and its name (127.0.0.1).
secure = pymysql_connect(port, ca)
cipher = status(secure, "Ssl_cipher")
assert cipher.startswith("TLS_"), cipher
assert status(secure, "Ssl_version") == "TLSv1.3", status(secure, "Ssl_version")
assert variable(secure, "have_ssl") == "YES"
assert variable(secure, "require_secure_transport") == 0
with secure.cursor() as cursor:
    cursor.execute("CREATE DATABASE IF NOT EXISTS tls_db")
    cursor.execute("CREATE TABLE tls_db.t (id INT PRIMARY KEY, v VARBINARY(100))")
    cursor.execute("INSERT INTO tls_db.t VALUES (1, %s)", (bytes(range(100)),))
    cursor.execute("SELECT v FROM tls_db.t WHERE id = 1")
    assert cursor.fetchone()[0] == bytes(range(100))
first_certificate = served_certificate(secure)
# Its expiry where operators look: kista tls made it valid for 365 days.
with secure.cursor() as cursor:
    cursor.execute("SELECT role, file, expires, seconds_left FROM kista_info.certificates")
    (role, file, expires, seconds_left), = cursor.fetchall()
    assert role == "sql" and file == f"{tls_dir}/sql.pem", (role, file)
    assert 364 * 86400 < seconds_left <= 365 * 86400, seconds_left
    assert len(expires) == 19 and expires[4] == "-", expires
secure.close()

# A plain session on the same front end: no cipher.
plain = pymysql_connect(port)
assert status(plain, "Ssl_cipher") == "", status(plain, "Ssl_cipher")
plain.close()

# mysql-connector-python, verifying certificate and identity; prepared statements too.
connector = mysql.connector.connect(host="127.0.0.1", port=port, user="root", password="",
                                    ssl_ca=ca, ssl_verify_cert=True,
                                    ssl_verify_identity=True, autocommit=True)
cursor = connector.cursor(prepared=True)
cursor.execute("SELECT v FROM tls_db.t WHERE id = ?", (1,))
assert bytes(cursor.fetchone()[0]) == bytes(range(100))
cursor.close()
cursor = connector.cursor()
cursor.execute("SHOW STATUS LIKE 'Ssl_cipher'")
assert cursor.fetchone()[1].startswith("TLS_")
connector.close()

# The mysql client, verifying the certificate.
shown = subprocess.run(
    ["mysql", "-h", "127.0.0.1", "-P", str(port), "-u", "root", "--ssl", f"--ssl-ca={ca}",
     "--ssl-verify-server-cert", "-N", "-e", "SHOW STATUS LIKE 'Ssl_cipher'"],
    capture_output=True, text=True, timeout=30)
assert shown.returncode == 0 and "TLS_" in shown.stdout, shown

# A client trusting another authority refuses the front end.
try:
    pymysql_connect(port, strangers_ca)
    raise AssertionError("a certificate from another authority was accepted")
except pymysql.err.OperationalError as error:
    assert "CERTIFICATE_VERIFY_FAILED" in str(error), error

# require_secure_transport: plain clients refused with 3159, TLS ones served.
assert code_of(lambda: pymysql_connect(required_port)) == 3159
required = pymysql_connect(required_port, ca)
assert variable(required, "require_secure_transport") == 1
assert status(required, "Ssl_cipher").startswith("TLS_")
required.close()

# A renewed certificate is served from the next connection on.
subprocess.run([kista, "tls", "--dir", tls_dir], check=True, capture_output=True, timeout=60)
deadline = time.time() + 20
while True:
    renewed = pymysql_connect(port, ca)
    served = served_certificate(renewed)
    renewed.close()
    if served != first_certificate:
        break
    assert time.time() < deadline, "the renewed certificate was not served"
    time.sleep(0.5)

print("tls ok")
