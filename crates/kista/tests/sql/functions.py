"""Native functions as MySQL 8 has them: control, string, numeric, date and time, with
INTERVAL arithmetic, EXTRACT, TRIM and POSITION syntax; unknown functions and wrong
argument counts get MySQL's errors.

Run by crates/kista/tests/sql.rs with the front end's port.
"""
import datetime
from decimal import Decimal

from session_helpers import Session

session = Session("functions")
cur, rows, error_of = session.cur, session.rows, session.error_of


def one(sql):
    """The single value the statement answers."""
    (row,) = rows(sql)
    (value,) = row
    return value


# Control functions evaluate what they need; GREATEST/LEAST are NULL with any NULL.
assert rows("SELECT IF(1 > 0, 'yes', 'no'), IFNULL(NULL, 3), COALESCE(NULL, NULL, 'x'), "
            "NULLIF(1, 1), GREATEST(3, 7, 5), LEAST('b', 'a'), GREATEST(1, NULL)") == [
    ("yes", 3, "x", None, 7, "a", None)]

# Strings count characters; LENGTH counts bytes.
assert rows("SELECT CONCAT_WS(',', 'a', NULL, 'b'), LENGTH('åä'), CHAR_LENGTH('åä'), "
            "SUBSTRING_INDEX('www.kista.io', '.', 2), SUBSTRING_INDEX('www.kista.io', '.', -1), "
            "LPAD('7', 3, '0'), RPAD('ab', 4, 'xy'), REPLACE('banana', 'an', 'AN')") == [
    ("a,b", 4, 2, "www.kista", "io", "007", "abxy", "bANANa")]
assert rows("SELECT LEFT('kista', 2), RIGHT('kista', 3), REVERSE('abc'), REPEAT('ab', 3), "
            "LOCATE('s', 'kista'), INSTR('kista', 't'), TRIM('  x  '), "
            "TRIM(LEADING '0' FROM '007'), TRIM(TRAILING 'x' FROM 'axx'), "
            "POSITION('t' IN 'kista'), SUBSTRING('kista' FROM 2 FOR 3), HEX('AB'), "
            "UPPER('ä'), STRCMP('a', 'b')") == [
    ("ki", "sta", "cba", "ababab", 3, 4, "x", "7", "a", 4, "ist", "4142", "Ä", -1)]

assert rows("SELECT LTRIM('  a '), RTRIM(' a  '), TRIM(BOTH 'x' FROM 'xxaxx')") == [
    ("a ", " a", "a")]
assert error_of("SELECT LTRIM('xxa', 'x')") == 1582, "MySQL's LTRIM takes one argument"

# Numbers: DECIMALs round exactly, half away from zero.
assert rows("SELECT FLOOR(-1.5), CEIL(1.2), ROUND(1.235, 2), ROUND(-2.5), TRUNCATE(1.999, 1), "
            "MOD(7, 3), POWER(2, 10), SQRT(16), SQRT(-1), ABS(-3), SIGN(-2), LOG(0)") == [
    (-2, 2, Decimal("1.24"), -3, Decimal("1.9"), 1, 1024.0, 4.0, None, 3, -1, None)]

# Dates: intervals keep month ends, compound units, formats both ways.
assert rows("SELECT DATE_ADD('2020-01-31', INTERVAL 1 MONTH), '2020-03-01' - INTERVAL 1 DAY, "
            "DATE_SUB('2020-01-01 00:00:00', INTERVAL '1:30' HOUR_MINUTE), "
            "DATEDIFF('2020-03-01', '2020-02-01'), "
            "TIMESTAMPDIFF(MONTH, '2020-01-15', '2020-03-14'), LAST_DAY('2021-02-03')") == [
    (datetime.date(2020, 2, 29), datetime.date(2020, 2, 29),
     datetime.datetime(2019, 12, 31, 22, 30), 29, 1, datetime.date(2021, 2, 28))]
assert rows("SELECT DATE_FORMAT('2026-11-05 14:07:09', '%W %M %D %Y %H:%i:%s %p'), "
            "STR_TO_DATE('05/11/2026', '%d/%m/%Y'), UNIX_TIMESTAMP('2020-01-01 00:00:00'), "
            "FROM_UNIXTIME(86400), EXTRACT(YEAR FROM '2020-05-06'), MONTH('2020-05-06'), "
            "DAYNAME('2026-11-25'), DAYOFWEEK('2026-11-25'), HOUR('10:20:30')") == [
    ("Thursday November 5th 2026 14:07:09 PM", datetime.date(2026, 11, 5), 1577836800,
     datetime.datetime(1970, 1, 2), 2020, 5, "Wednesday", 4, 10)]

# The clock is UTC; CONVERT_TZ knows offsets, UTC and SYSTEM, not named zones.
now, utc = rows("SELECT NOW(), UTC_TIMESTAMP()")[0]
assert abs((utc - now).total_seconds()) <= 1
assert one("SELECT CURDATE() = DATE(NOW())") == 1
assert rows("SELECT CONVERT_TZ('2020-01-01 00:00:00', '+00:00', '+05:30'), "
            "CONVERT_TZ('2020-01-01 00:00:00', 'UTC', 'SYSTEM'), "
            "CONVERT_TZ('2020-01-01 00:00:00', 'UTC', 'Europe/Stockholm')") == [
    (datetime.datetime(2020, 1, 1, 5, 30), datetime.datetime(2020, 1, 1), None)]

# Over a table's rows, and in WHERE.
cur.execute("CREATE TABLE event (id INT PRIMARY KEY, at DATETIME, name VARCHAR(20))")
cur.execute("INSERT INTO event VALUES (1, '2026-01-15 10:00:00', 'launch'), "
            "(2, '2026-02-20 12:30:00', 'Review'), (3, NULL, NULL)")
assert rows("SELECT id, DATE_FORMAT(at, '%b %e'), UPPER(name) FROM event ORDER BY id") == [
    (1, "Jan 15", "LAUNCH"), (2, "Feb 20", "REVIEW"), (3, None, None)]
assert rows("SELECT id FROM event WHERE at > NOW() - INTERVAL 100 YEAR "
            "AND MONTH(at) = 2") == [(2,)]

# GROUP_CONCAT: per group, DISTINCT, ORDER BY, SEPARATOR, several arguments, NULLs
# skipped, cut at group_concat_max_len.
cur.execute("CREATE TABLE tag (post INT, name VARCHAR(10), PRIMARY KEY (post, name))")
cur.execute("INSERT INTO tag VALUES (1, 'b'), (1, 'a'), (1, 'c'), (2, 'a'), (3, 'z')")
assert rows("SELECT post, GROUP_CONCAT(name ORDER BY name) FROM tag GROUP BY post "
            "ORDER BY post") == [(1, "a,b,c"), (2, "a"), (3, "z")]
assert rows("SELECT GROUP_CONCAT(DISTINCT name ORDER BY name DESC SEPARATOR '|') "
            "FROM tag") == [("z|c|b|a",)]
assert rows("SELECT GROUP_CONCAT(post, ':', name ORDER BY post, name) FROM tag "
            "WHERE post < 3") == [("1:a,1:b,1:c,2:a",)]
assert rows("SELECT GROUP_CONCAT(name) FROM tag WHERE post > 9") == [(None,)]
# Ordered by a column nothing else reads.
assert rows("SELECT GROUP_CONCAT(name ORDER BY post DESC, name) FROM tag") == [("z,a,a,b,c",)]
assert rows("SELECT GROUP_CONCAT(NULLIF(name, 'a') ORDER BY name) FROM tag") == [("b,c,z",)]
cur.execute("SET group_concat_max_len = 5")
assert rows("SELECT GROUP_CONCAT(name ORDER BY name) FROM tag") == [("a,a,b",)]

# FOUND_ROWS(): the rows the last SELECT answered; with SQL_CALC_FOUND_ROWS, before its
# LIMIT (also for a UNION's).
assert rows("SELECT SQL_CALC_FOUND_ROWS name FROM tag ORDER BY name LIMIT 2") == [("a",), ("a",)]
assert rows("SELECT FOUND_ROWS()") == [(5,)]
rows("SELECT name FROM tag WHERE post = 1")
assert rows("SELECT FOUND_ROWS()") == [(3,)]
rows("SELECT SQL_CALC_FOUND_ROWS post FROM tag UNION ALL SELECT 9 LIMIT 1")
assert rows("SELECT FOUND_ROWS()") == [(6,)]
# A read by primary key counts too (the binary protocol's fast path: sql.rs's prepared
# point reads test).
cur.execute("CREATE TABLE one (id INT PRIMARY KEY)")
cur.execute("INSERT INTO one VALUES (1)")
assert rows("SELECT id FROM one WHERE id = %s", (1,)) == [(1,)]
assert rows("SELECT FOUND_ROWS()") == [(1,)]

# IS [NOT] TRUE / FALSE: 1 or 0, NULL being neither; strings and numbers by their truth.
assert rows(
    "SELECT 1 IS TRUE, 0 IS TRUE, NULL IS TRUE, 0 IS FALSE, NULL IS FALSE, "
    "NULL IS NOT TRUE, 2 IS NOT FALSE, '0.0' IS FALSE, 0.5 IS TRUE"
) == [(1, 0, 0, 1, 0, 1, 1, 1, 1)]
assert rows("SELECT id FROM one WHERE (id > 5) IS NOT TRUE") == [(1,)]

# Unknown names and wrong counts: MySQL's errors.
assert error_of("SELECT NO_SUCH_FUNCTION(1)") == 1305
assert error_of("SELECT IFNULL(1, 2, 3)") == 1582
assert error_of("SELECT DATE_ADD('2020-01-01', INTERVAL 1 FORTNIGHT)") in (1064, 1235)

print("functions ok")
