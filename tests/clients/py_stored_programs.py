#!/usr/bin/env python3
"""Stored programs through PyMySQL or mysql-connector-python,
against idgate or MariaDB directly: cursors, handlers, OUT parameters, SIGNAL and multi-result
CALLs ending in an error.

Prints one line per observation so that the transcript through idgate can be compared with the
transcript of a direct connection. Exits non-zero on any unexpected exception.

Usage: py_stored_programs.py DRIVER HOST PORT USER PASSWORD DATABASE  (DRIVER: pymysql|connector)
"""

import sys
import traceback

SETUP = [
    "DROP TABLE IF EXISTS spc_t",
    "CREATE TABLE spc_t (a INT)",
    "INSERT INTO spc_t VALUES (1), (2), (3)",
    "DROP PROCEDURE IF EXISTS spc_loop",
    """CREATE PROCEDURE spc_loop(OUT total INT)
BEGIN
  DECLARE done INT DEFAULT 0;
  DECLARE va INT;
  DECLARE cur CURSOR FOR SELECT a FROM spc_t ORDER BY a;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
  SET total = 0;
  OPEN cur;
  l: LOOP
    FETCH cur INTO va;
    IF done THEN LEAVE l; END IF;
    SET total = total + va;
    SELECT va AS row_seen;
  END LOOP;
  CLOSE cur;
END""",
    "DROP PROCEDURE IF EXISTS spc_error",
    """CREATE PROCEDURE spc_error()
BEGIN
  DECLARE va INT;
  DECLARE cur CURSOR FOR SELECT a FROM spc_t;
  OPEN cur; FETCH cur INTO va; SELECT va AS before_error; CLOSE cur;
  FETCH cur INTO va;
END""",
    "DROP PROCEDURE IF EXISTS spc_signal",
    """CREATE PROCEDURE spc_signal(v INT)
BEGIN
  IF v < 0 THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'negative value', MYSQL_ERRNO = 4025;
  END IF;
  SELECT v AS accepted;
END""",
]

COMPOUND = """BEGIN NOT ATOMIC
  DECLARE va INT;
  DECLARE cur CURSOR FOR SELECT a FROM spc_t WHERE a > 1 ORDER BY a;
  OPEN cur; FETCH cur INTO va; SELECT va; CLOSE cur;
END"""


def out(line):
    print(line, flush=True)


def error_of(e):
    return f"error {e.args[0]}" if e.args else f"error {e!r}"


def all_results(cur):
    """Every result set of the last statement, as lists of rows, until an error or the end."""
    seen = []
    while True:
        if cur.description:
            seen.append([tuple(r) for r in cur.fetchall()])
        if not cur.nextset():
            return seen


def run(conn, cursor_of, label):
    cur = cursor_of(conn)
    try:
        cur.execute(COMPOUND)
        out(f"{label} compound: {all_results(cur)}")
    except Exception as e:  # the client's own error class
        out(f"{label} compound: {error_of(e)}")
    for sql in ["CALL spc_loop(@total)", "CALL spc_error()", "CALL spc_signal(3)", "CALL spc_signal(-1)"]:
        cur = cursor_of(conn)
        try:
            cur.execute(sql)
            out(f"{label} {sql}: {all_results(cur)}")
        except Exception as e:
            out(f"{label} {sql}: {error_of(e)}")
        cur = cursor_of(conn)
        cur.execute("SELECT @total, 40 + 2")
        out(f"{label} after {sql}: {[tuple(r) for r in cur.fetchall()]}")


def main():
    if len(sys.argv) != 7:
        print(__doc__, file=sys.stderr)
        return 2
    driver, host, port, user, password, database = sys.argv[1:]
    try:
        if driver == "pymysql":
            import pymysql

            conn = pymysql.connect(host=host, port=int(port), user=user, password=password,
                                   database=database, autocommit=True)
            cursors = [("plain", lambda c: c.cursor())]
        else:
            import mysql.connector

            conn = mysql.connector.connect(host=host, port=int(port), user=user,
                                           password=password, database=database,
                                           autocommit=True)
            # Its prepared cursor loses the connection on a compound statement directly too.
            cursors = [("plain", lambda c: c.cursor(buffered=True))]
        setup = conn.cursor()
        for sql in SETUP:
            setup.execute(sql)
        for label, cursor_of in cursors:
            run(conn, cursor_of, label)
        out("done")
        return 0
    except Exception:
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
