#!/usr/bin/env python3
"""mysql-connector-python (prepared and plain cursors) against idgate or MariaDB directly.

Prints one line per observation so that the transcript through idgate can be compared with the
transcript of a direct connection. Exits non-zero on any unexpected exception.

Usage: py_connector.py HOST PORT USER PASSWORD DATABASE
"""

import datetime
import decimal
import os
import sys
import traceback

import mysql.connector

ALL_BYTES = bytes(range(256))


def out(line):
    print(line, flush=True)


def show(v):
    if v is None:
        return "None"
    if isinstance(v, (bytes, bytearray)):
        return f"{type(v).__name__}:{bytes(v).hex()}"
    return f"{type(v).__name__}:{v!r}"


def main():
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    host, port, user, password, database = sys.argv[1:]
    try:
        conn = mysql.connector.connect(
            host=host, port=int(port), user=user, password=password, database=database,
            charset="utf8mb4", collation="utf8mb4_general_ci", autocommit=True,
            # CLIENT_COMPRESS=1: the same run over the compressed protocol.
            compress=os.environ.get("CLIENT_COMPRESS") == "1",
        )
        run(conn)
        conn.close()
    except Exception:
        traceback.print_exc()
        return 1
    out("done")
    return 0


def run(conn):
    plain = conn.cursor()
    plain.execute("DROP TABLE IF EXISTS py_conn_types")
    plain.execute(
        "CREATE TABLE py_conn_types (id INT AUTO_INCREMENT PRIMARY KEY, ti TINYINT, bi BIGINT, biu BIGINT UNSIGNED, "
        "dcm DECIMAL(18,6), f FLOAT, d DOUBLE, dt DATE, tm TIME(6), dtm DATETIME(6), ts TIMESTAMP(3) NULL DEFAULT NULL, "
        "yr YEAR, vc VARCHAR(50) CHARACTER SET utf8mb4, bin VARBINARY(300), tx TEXT, en ENUM('a','b'), js JSON)"
    )
    out(f"plain create rowcount={plain.rowcount}")

    prep = conn.cursor(prepared=True)
    insert = (
        "INSERT INTO py_conn_types (ti, bi, biu, dcm, f, d, dt, tm, dtm, ts, yr, vc, bin, tx, en, js) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    rows = [
        (-128, -9223372036854775808, 18446744073709551615, decimal.Decimal("-123456789012.123456"), 1.5,
         3.141592653589793, datetime.date(2024, 2, 29), datetime.timedelta(hours=-5, minutes=-6, microseconds=-7),
         datetime.datetime(2024, 2, 29, 23, 59, 59, 999999), datetime.datetime(2021, 1, 2, 3, 4, 5, 678000), 2024,
         "grüße 🦀 𝄞", ALL_BYTES, "text ✓", "b", '{"k": [1, null]}'),
        (None,) * 16,
        (127, 9223372036854775807, 0, decimal.Decimal("0.000001"), -0.0, -1e300, datetime.date(1000, 1, 1),
         datetime.timedelta(hours=838, minutes=59, seconds=59), datetime.datetime(1970, 1, 1, 0, 0, 0),
         None, 1901, "", b"", "", "a", "[]"),
    ]
    for r in rows:
        prep.execute(insert, r)
        out(f"prepared insert rowcount={prep.rowcount} lastrowid={prep.lastrowid}")
    # YEAR is left out: mysql-connector-python reads a binary-protocol YEAR as a length-coded string.
    prep.execute(
        "SELECT id, ti, bi, biu, dcm, f, d, dt, tm, dtm, ts, vc, bin, tx, en, js FROM py_conn_types "
        "WHERE id >= ? ORDER BY id",
        (1,),
    )
    for d in prep.description:
        out(f"prepared column {d}")
    for row in prep.fetchall():
        out("prepared row " + " ".join(show(v) for v in row))
    prep.execute("SELECT bin = ?, LENGTH(bin), vc = ? FROM py_conn_types WHERE id = ?", (ALL_BYTES, "grüße 🦀 𝄞", 1))
    eq, length, vc_eq = prep.fetchone()
    ok = eq == 1 and length == 256 and vc_eq == 1
    out(f"prepared bytes round trip {'OK' if ok else 'FAILED'} (eq={eq} length={length} vc_eq={vc_eq})")
    prep.execute("SELECT ?, ?, ?, ?, ?", (None, 42, "x", 2.5, decimal.Decimal("1.10")))
    out("prepared parameters echo " + " ".join(show(v) for v in prep.fetchone()))
    prep.execute("UPDATE py_conn_types SET vc = ? WHERE id IN (?, ?)", ("updated", 1, 3))
    out(f"prepared update rowcount={prep.rowcount}")
    try:
        prep.execute("INSERT INTO py_conn_types (id) VALUES (?)", (1,))
        out("prepared expected duplicate error did not happen")
    except mysql.connector.Error as e:
        out(f"prepared error errno={e.errno} sqlstate={e.sqlstate} msg={e.msg}")
    try:
        prep.execute("SELECT * FROM py_conn_no_such_table WHERE id = ?", (1,))
        out("prepared expected prepare error did not happen")
    except mysql.connector.Error as e:
        out(f"prepared prepare error errno={e.errno} sqlstate={e.sqlstate} msg={e.msg}")
    prep.close()

    plain.execute("INSERT INTO py_conn_types (vc) VALUES ('p1'), ('p2')")
    out(f"plain multi-row insert rowcount={plain.rowcount} lastrowid={plain.lastrowid}")
    plain.execute("SELECT * FROM py_conn_types ORDER BY id")
    for d in plain.description:
        out(f"plain column {d}")
    for row in plain.fetchall():
        out("plain row " + " ".join(show(v) for v in row))
    plain.execute("SELECT CAST('7x' AS INTEGER)")
    out(f"plain warning select {plain.fetchall()} warning_count={plain.warning_count}")
    plain.execute("SHOW WARNINGS")
    out(f"plain warnings {plain.fetchall()}")
    for sql in ("SELEC 1", "SELECT * FROM py_conn_no_such_table",
                "SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = 3819, MESSAGE_TEXT = 'check failed'"):
        try:
            plain.execute(sql)
            plain.fetchall()
            out(f"plain expected error did not happen: {sql}")
        except mysql.connector.Error as e:
            out(f"plain error errno={e.errno} sqlstate={e.sqlstate} msg={e.msg}")
    conn.start_transaction()
    plain.execute("INSERT INTO py_conn_types (vc) VALUES ('rolled back')")
    conn.rollback()
    plain.execute("SELECT COUNT(*) FROM py_conn_types WHERE vc = 'rolled back'")
    out(f"plain after rollback {plain.fetchall()}")
    plain.execute("SELECT LAST_INSERT_ID()")
    out(f"plain LAST_INSERT_ID() {plain.fetchall()}")
    plain.close()


if __name__ == "__main__":
    sys.exit(main())
