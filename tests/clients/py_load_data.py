#!/usr/bin/env python3
"""LOAD DATA LOCAL INFILE into a table with generated ids, from PyMySQL, against idgate (a sharded
table whose ids idgate generates) or MariaDB directly (the same table with AUTO_INCREMENT).

Prints one line per observation, without the id values themselves (the two sides generate
different ones), so that both transcripts must be equal. Exits non-zero on any unexpected
exception.

Usage: py_load_data.py HOST PORT USER PASSWORD DATABASE
"""

import os
import sys
import tempfile

import pymysql


def out(line):
    print(line, flush=True)


def connect(args):
    host, port, user, password, db = args
    return pymysql.connect(
        host=host,
        port=int(port),
        user=user,
        password=password,
        database=db,
        local_infile=True,
        autocommit=True,
    )


def load(conn, sql):
    with conn.cursor() as cur:
        affected = cur.execute(sql)
        # The OK packet's info text (PyMySQL keeps its length byte in front).
        info = conn._result.message[1:].decode()
        warnings = conn._result.warning_count
        cur.execute("SELECT LAST_INSERT_ID()")
        lid = cur.fetchone()[0]
    return affected, info, warnings, lid


def batch_facts(conn, batch):
    with conn.cursor() as cur:
        cur.execute(
            "SELECT COUNT(*), "
            "SUM(CRC32(CONCAT_WS(',', batch, IFNULL(note, 'NULL'), IFNULL(qty, 'NULL')))) "
            "FROM ld_orders WHERE batch = %s",
            (batch,),
        )
        count, crc = cur.fetchone()
        cur.execute("SELECT id FROM ld_orders WHERE batch = %s", (batch,))
        distinct = len({r[0] for r in cur.fetchall()})
        return (count, distinct, int(crc or 0))


def first_generated_is_lid(conn, batch, lid, explicit=()):
    with conn.cursor() as cur:
        cur.execute("SELECT id FROM ld_orders WHERE batch = %s", (batch,))
        ids = sorted(r[0] for r in cur.fetchall() if r[0] not in explicit)
    return bool(ids) and ids[0] == lid


def tag_of(conn, row_id):
    """The row an id names (the two sides' ids differ): its group and tag, or 0 / missing."""
    if not row_id:
        return "0"
    with conn.cursor() as cur:
        cur.execute("SELECT CONCAT(grp, '-', tag) FROM ld_tags WHERE id = %s", (row_id,))
        row = cur.fetchone()
    return row[0] if row else f"no row has id {row_id}"


def left_out_rows(conn):
    """Loads and INSERT IGNORE … SELECTs that leave rows out (LOCAL leaves duplicates out):
    the insert id and LAST_INSERT_ID() name the first row inserted, or stay as they were."""
    files = {
        "t1.tsv": "1\ta\n2\tb\n",
        "t2.tsv": "1\ta\n2\tc\n1\td\n",
        "t3.tsv": "2\tb\n1\ta\n",
    }
    for name, text in files.items():
        with open(name, "w", encoding="utf-8") as f:
            f.write(text)
    statements = [
        "LOAD DATA LOCAL INFILE 't1.tsv' INTO TABLE ld_tags (grp, tag)",
        "LOAD DATA LOCAL INFILE 't2.tsv' INTO TABLE ld_tags (grp, tag)",
        "LOAD DATA LOCAL INFILE 't3.tsv' IGNORE INTO TABLE ld_tags (grp, tag)",
        "INSERT IGNORE INTO ld_tags (grp, tag) SELECT 1, 'a' UNION ALL SELECT 2, 'e' "
        "UNION ALL SELECT 1, 'f'",
        "INSERT IGNORE INTO ld_tags (grp, tag) SELECT 2, 'e' UNION ALL SELECT 1, 'a'",
    ]
    for sql in statements:
        with conn.cursor() as cur:
            affected = cur.execute(sql)
            insert_id = cur.lastrowid
            cur.execute("SELECT LAST_INSERT_ID()")
            lid = cur.fetchone()[0]
        out(f"left out: {sql[:40]}: affected={affected} insert id={tag_of(conn, insert_id)} "
            f"LAST_INSERT_ID()={tag_of(conn, lid)}")


def main():
    args = sys.argv[1:6]
    os.chdir(tempfile.mkdtemp(prefix="py_load_data_"))
    with open("a.tsv", "w", encoding="utf-8") as f:
        f.write("1\thello\t3\n")
        f.write("1\ttab\\there\t\\N\n")
        f.write("1\tshort\n")
        f.write("1\tlong\t5\textra\n")
        f.write("1\t\t\n")
        for i in range(3000):
            f.write(f"1\tnote {i} é {'x' * (i % 70)}\t{i}\n")
    with open("b.csv", "w", encoding="utf-8", newline="") as f:
        f.write("id,batch,note,qty\r\n")
        f.write('\\N,2,"a,b",1\r\n')
        f.write('0,2,"say ""hi""",2\r\n')
        f.write('\\N,2,NULL,3\r\n')
        f.write('5000000001,2,"explicit",4\r\n')
        f.write('0,2,"multi\r\nline",5\r\n')
    with open("c.tsv", "w", encoding="utf-8") as f:
        for i in range(50):
            f.write(f"3\tin a transaction {i}\t{i}\n")

    conn = connect(args)
    affected, info, warnings, lid = load(
        conn, "LOAD DATA LOCAL INFILE 'a.tsv' INTO TABLE ld_orders (batch, note, qty)"
    )
    out(f"tsv: affected={affected} info={info!r} warnings={warnings}")
    out(f"tsv: rows={batch_facts(conn, 1)} lid_is_first={first_generated_is_lid(conn, 1, lid)}")

    affected, info, warnings, lid = load(
        conn,
        "LOAD DATA LOCAL INFILE 'b.csv' INTO TABLE ld_orders CHARACTER SET utf8mb4 "
        "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' "
        "LINES TERMINATED BY '\\r\\n' IGNORE 1 LINES (id, batch, note, qty)",
    )
    out(f"csv: affected={affected} info={info!r} warnings={warnings}")
    out(
        f"csv: rows={batch_facts(conn, 2)} "
        f"lid_is_first={first_generated_is_lid(conn, 2, lid, explicit=(5000000001,))}"
    )
    with conn.cursor() as cur:
        cur.execute("SELECT note, qty FROM ld_orders WHERE id = 5000000001")
        out(f"csv: explicit row {cur.fetchone()}")

    conn.begin()
    affected, info, warnings, _ = load(
        conn, "LOAD DATA LOCAL INFILE 'c.tsv' INTO TABLE ld_orders (batch, note, qty)"
    )
    out(f"txn: affected={affected} info={info!r} in transaction={batch_facts(conn, 3)[0]}")
    conn.rollback()
    out(f"txn: after rollback={batch_facts(conn, 3)}")
    conn.begin()
    load(conn, "LOAD DATA LOCAL INFILE 'c.tsv' INTO TABLE ld_orders (batch, note, qty)")
    conn.commit()
    out(f"txn: after commit={batch_facts(conn, 3)}")

    try:
        load(conn, "LOAD DATA LOCAL INFILE 'missing.tsv' INTO TABLE ld_orders (batch, note, qty)")
        out("missing file: loaded?")
    except (pymysql.err.OperationalError, pymysql.err.InternalError, FileNotFoundError) as e:
        out(f"missing file: {type(e).__name__}")
    conn = connect(args)
    left_out_rows(conn)
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM ld_orders")
        out(f"total rows {cur.fetchone()[0]}")
    out("done")


if __name__ == "__main__":
    main()
