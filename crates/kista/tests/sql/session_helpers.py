"""What the PyMySQL test scripts share: a session on the front end whose port the test
passes as the script's argument, with the two questions the scripts ask of statements,
and `code_of` for work that must fail."""
import sys

import pymysql


def code_of(work):
    """The MySQL error code `work` fails with (it must fail), from PyMySQL or
    mysql-connector-python."""
    try:
        work()
    except pymysql.MySQLError as error:
        return error.args[0]
    except Exception as error:  # mysql.connector.Error and its kin carry `errno`
        if getattr(error, "errno", None) is None:
            raise
        return error.errno
    raise AssertionError("accepted")


class Session:
    """A session in a new database of its own, `database` (`create=False`: in one that
    exists)."""

    def __init__(self, database, create=True):
        port = int(sys.argv[1])
        self.connection = pymysql.connect(
            host="127.0.0.1", port=port, user="root", password="", autocommit=True
        )
        self.cur = self.connection.cursor()
        if create:
            self.cur.execute(f"CREATE DATABASE {database}")
        self.cur.execute(f"USE {database}")

    def rows(self, sql, args=None):
        """The statement's rows, as tuples."""
        self.cur.execute(sql, args)
        return [tuple(row) for row in self.cur.fetchall()]

    def error_of(self, sql):
        """The MySQL error code the statement fails with (it must fail)."""
        try:
            self.cur.execute(sql)
        except pymysql.MySQLError as error:
            return error.args[0]
        raise AssertionError(f"accepted: {sql}")
