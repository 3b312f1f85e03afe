#!/usr/bin/env python3
"""LOAD DATA LOCAL INFILE from PyMySQL, against idgate or MariaDB directly.

Prints one line per observation so that the transcript through idgate can be compared with the
transcript of a direct connection. Exits non-zero on any unexpected exception.

Usage: py_local_infile.py HOST PORT USER PASSWORD DATABASE
"""

import os
import sys
import tempfile
import traceback

import pymysql
import pymysql.constants.CLIENT


def out(line):
    print(line, flush=True)


def connect(args, local_infile, multi=False):
    host, port, user, password, db = args
    flags = pymysql.constants.CLIENT.MULTI_STATEMENTS if multi else 0
    return pymysql.connect(
        host=host,
        port=int(port),
        user=user,
        password=password,
        database=db,
        local_infile=local_infile,
        client_flag=flags,
        autocommit=True,
    )


def error(e):
    return f"error code={e.args[0]} message={e.args[1]}"


def contents(cur, table):
    cur.execute(
        f"SELECT COUNT(*), COALESCE(SUM(CRC32(CONCAT_WS(',', id, name, amount))), 0) FROM {table}"
    )
    return cur.fetchone()


def write_rows(path, first, count, bad_at=None):
    with open(path, "w", encoding="utf-8") as f:
        for i in range(first, first + count):
            name = "bad" if i == bad_at else f"name {i} é"
            f.write(f"{i}\t{name}\t{i * 7 % 1000}.{i % 100:02d}\n")


def main():
    args = sys.argv[1:6]
    os.chdir(tempfile.mkdtemp(prefix="py_local_infile_"))
    write_rows("rows.tsv", 1, 3000)
    write_rows("small.tsv", 5001, 10)
    write_rows("bad.tsv", 7001, 2000, bad_at=7500)

    c = connect(args, local_infile=True)
    cur = c.cursor()
    for t in ("li_py", "li_py2"):
        cur.execute(f"DROP TABLE IF EXISTS {t}")
        cur.execute(
            f"CREATE TABLE {t} (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(10,2)) "
            "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
        )
    cur.execute(
        "CREATE TRIGGER li_py_bad BEFORE INSERT ON li_py FOR EACH ROW "
        "IF NEW.name = 'bad' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'bad row'; END IF"
    )

    n = cur.execute("LOAD DATA LOCAL INFILE 'rows.tsv' INTO TABLE li_py")
    out(f"load rows: affected={n} info={c._result.message!r} warnings={c._result.warning_count}")
    out(f"load rows: contents={contents(cur, 'li_py')}")

    n = cur.execute("LOAD DATA LOCAL INFILE 'rows.tsv' IGNORE INTO TABLE li_py")
    out(f"load again (duplicates): affected={n} info={c._result.message!r}")

    try:
        cur.execute("LOAD DATA LOCAL INFILE 'missing.tsv' INTO TABLE li_py")
        out("missing file: no error")
    except pymysql.MySQLError as e:
        out(f"missing file: {error(e)}")
    cur.execute("SELECT 'usable after a missing file'")
    out(cur.fetchone()[0])

    try:
        cur.execute("LOAD DATA LOCAL INFILE 'bad.tsv' INTO TABLE li_py")
        out("bad row: no error")
    except pymysql.MySQLError as e:
        out(f"bad row: {error(e)}")
    out(f"after bad row: contents={contents(cur, 'li_py')}")

    # Inside a transaction: rolled back, then committed.
    c.begin()
    cur.execute("LOAD DATA LOCAL INFILE 'small.tsv' INTO TABLE li_py2")
    out(f"in transaction: own session sees {contents(cur, 'li_py2')}")
    c.rollback()
    out(f"after rollback: {contents(cur, 'li_py2')}")
    c.begin()
    cur.execute("INSERT INTO li_py2 VALUES (1, 'before', 1)")
    cur.execute("LOAD DATA LOCAL INFILE 'small.tsv' INTO TABLE li_py2")
    c.commit()
    out(f"after commit: {contents(cur, 'li_py2')}")
    c.close()

    # The request in the middle of a multi-statement query.
    m = connect(args, local_infile=True, multi=True)
    cur = m.cursor()
    cur.execute(
        "DELETE FROM li_py2; SELECT 'first'; LOAD DATA LOCAL INFILE 'small.tsv' INTO TABLE li_py2; "
        "SELECT COUNT(*) FROM li_py2"
    )
    k = 0
    while True:
        rows = cur.fetchall() if cur.description else None
        out(f"multi result {k}: rowcount={cur.rowcount} rows={rows}")
        k += 1
        if not cur.nextset():
            break
    cur.execute(
        "BEGIN; LOAD DATA LOCAL INFILE 'small.tsv' REPLACE INTO TABLE li_py2; "
        "SELECT COUNT(*) FROM li_py2; COMMIT"
    )
    k = 0
    while True:
        rows = cur.fetchall() if cur.description else None
        out(f"multi transaction result {k}: rowcount={cur.rowcount} rows={rows}")
        k += 1
        if not cur.nextset():
            break
    cur.execute("SELECT 'usable after the multi-statement load'")
    out(cur.fetchone()[0])
    m.close()

    # A client that did not agree to send files.
    n = connect(args, local_infile=False, multi=True)
    cur = n.cursor()
    try:
        cur.execute("LOAD DATA LOCAL INFILE 'rows.tsv' INTO TABLE li_py2")
        out("without local_infile: no error")
    except pymysql.MySQLError as e:
        out(f"without local_infile: {error(e)}")
    cur.execute("SELECT 'usable without local_infile'")
    out(cur.fetchone()[0])
    try:
        cur.execute(
            "SELECT 'before'; LOAD DATA LOCAL INFILE 'rows.tsv' INTO TABLE li_py2; SELECT 'after'"
        )
        out(f"without local_infile, multi: first {cur.fetchall()}")
        cur.nextset()
        out("without local_infile, multi: no error")
    except pymysql.MySQLError as e:
        out(f"without local_infile, multi: {error(e)}")
    cur.execute("SELECT 'usable after the refused batch'")
    out(cur.fetchone()[0])
    out(f"table untouched: {contents(cur, 'li_py2')}")
    n.close()
    out("done")


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
