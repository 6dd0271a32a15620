"""A sqllogictest runner for a MySQL-protocol server: runs each .test file given, in a
fresh database `sqllogictest`, as MySQL (records marked `skipif mysql` or `onlyif <other>` are
skipped), and prints one line per failed record and a summary. Exit status 1 if any
record failed.

    python3 run.py PORT FILE...

The format is SQLite's (https://www.sqlite.org/sqllogictest/doc/trunk/about.wiki):
records separated by blank lines; `statement ok|error` then SQL; `query TYPES [SORT]
[LABEL]` then SQL, `----`, and the expected values one per line, or `N values hashing to
MD5` past the file's `hash-threshold`. Values are printed as sqllogictest prints them:
NULL, integers for `I` columns, three decimals for `R`, `(empty)` for an empty string,
unprintable characters as `@`. The corpus files next to this runner are a subset of
../shared/sqllogictest's (MySQL 8's answers), copied for CI.
"""
import hashlib
import sys
import time
from decimal import Decimal

import pymysql

ENGINE = "mysql"
# The database each file runs in, made afresh.
DATABASE = "sqllogictest"
STATEMENT_TIMEOUT_S = 60


def records(path):
    """(line number, lines of the record) for each record of the file."""
    record, start = [], 0
    for number, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
        line = line.rstrip("\n")
        if line.startswith("#") and not record:
            continue
        if line.strip() == "":
            if record:
                yield start, record
            record = []
            continue
        if not record:
            start = number
        record.append(line)
    if record:
        yield start, record


def applies(conditions):
    for condition in conditions:
        kind, engine = condition.split()[:2]
        if kind == "skipif" and engine == ENGINE:
            return False
        if kind == "onlyif" and engine != ENGINE:
            return False
    return True


def printed(value, kind):
    if value is None:
        return "NULL"
    if kind == "I":
        if isinstance(value, (bytes, str)):
            try:
                value = Decimal(value.decode() if isinstance(value, bytes) else value)
            except Exception:
                return "0"
        return str(int(value))
    if kind == "R":
        try:
            return "%.3f" % float(value)
        except (TypeError, ValueError):
            return "0.000"
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    text = str(value)
    if text == "":
        return "(empty)"
    return "".join(c if " " <= c <= "~" else "@" for c in text)


def answer_lines(rows, types, sort):
    rows = [[printed(v, types[i] if i < len(types) else "T") for i, v in enumerate(row)]
            for row in rows]
    if sort == "rowsort":
        rows.sort()
    values = [v for row in rows for v in row]
    if sort == "valuesort":
        values.sort()
    return values


def run_file(connection, path, failures):
    cursor = connection.cursor()
    cursor.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
    cursor.execute(f"CREATE DATABASE {DATABASE}")
    cursor.execute(f"USE {DATABASE}")
    passed, failed = 0, 0
    for line, record in records(path):
        conditions = []
        while record and record[0].split()[0] in ("skipif", "onlyif"):
            conditions.append(record.pop(0))
        if not record:
            continue
        head = record[0].split()
        if head[0] == "hash-threshold":
            continue  # the expected answers say themselves whether they are hashed
        if head[0] == "halt":
            if applies(conditions):
                break
            continue
        if not applies(conditions):
            continue
        problem = None
        if head[0] == "statement":
            sql = "\n".join(record[1:])
            try:
                cursor.execute(sql)
                cursor.fetchall()
                if head[1] == "error":
                    problem = "accepted, an error expected"
            except pymysql.MySQLError as error:
                if head[1] == "ok":
                    problem = f"error {error.args}"
        elif head[0] == "query":
            types, sort = head[1], head[2] if len(head) > 2 else "nosort"
            split = record.index("----") if "----" in record else len(record)
            sql, expected = "\n".join(record[1:split]), record[split + 1:]
            try:
                cursor.execute(sql)
                got = answer_lines(cursor.fetchall(), types, sort)
                if len(expected) == 1 and " values hashing to " in expected[0]:
                    digest = hashlib.md5("".join(v + "\n" for v in got).encode()).hexdigest()
                    got_line = f"{len(got)} values hashing to {digest}"
                    if got_line != expected[0]:
                        problem = f"got {got_line}, expected {expected[0]}"
                elif got != expected:
                    problem = f"got {got[:8]}, expected {expected[:8]}"
            except pymysql.MySQLError as error:
                problem = f"error {error.args}"
        else:
            continue
        if problem:
            failed += 1
            failures.append(f"{path}:{line}: {problem}: {' '.join(record[1:2])[:200]}")
        else:
            passed += 1
    cursor.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
    return passed, failed


def main():
    port, paths = int(sys.argv[1]), sys.argv[2:]
    connection = pymysql.connect(host="127.0.0.1", port=port, user="root", password="",
                                 autocommit=True, read_timeout=STATEMENT_TIMEOUT_S)
    failures, passed, failed = [], 0, 0
    for path in paths:
        started = time.monotonic()
        p, f = run_file(connection, path, failures)
        passed, failed = passed + p, failed + f
        print(f"{path}: {p} passed, {f} failed ({time.monotonic() - started:.1f} s)")
    for failure in failures:
        print("FAILED", failure)
    print(f"records: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
