#!/usr/bin/env python3
"""Insert load for fault tests: THREADS PyMySQL clients insert 1 to 4 rows at a time into the
tables named on the command line until STOP_FILE exists, reconnecting whenever idgate goes away.

Every attempt is one JSON line on stdout, written before the next statement so nothing a client
was told is lost: {"c": client, "t": table, "notes": [...], "ok": true, "id": lastrowid,
"lid": SELECT LAST_INSERT_ID() or null} for an acknowledged INSERT, {"ok": false, "err": "..."}
when the client got an error or lost the connection (the outcome is then unknown to it). Notes are
unique per row, so the checker can find each row on the shards.

Usage: py_chaos_writer.py HOST PORT USER PASSWORD DATABASE THREADS STOP_FILE TABLE...
"""

import json
import os
import random
import sys
import threading
import time

import pymysql

HOST, PORT, USER, PASSWORD, DB = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
THREADS, STOP = int(sys.argv[6]), sys.argv[7]
TABLES = sys.argv[8:]
LOCK = threading.Lock()


def emit(record):
    record["ts"] = time.monotonic()
    line = json.dumps(record)
    with LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def stopped():
    return os.path.exists(STOP)


def connect():
    while not stopped():
        try:
            return pymysql.connect(host=HOST, port=PORT, user=USER, password=PASSWORD, database=DB,
                                   autocommit=True, connect_timeout=5, read_timeout=30,
                                   write_timeout=30)
        except pymysql.MySQLError:
            time.sleep(0.05)
    return None


def client(n):
    rng = random.Random(n)
    conn = connect()
    seq = 0
    while conn is not None and not stopped():
        table = rng.choice(TABLES)
        rows = rng.choice([1, 1, 2, 3, 4])
        notes = [f"c{n}-{seq}-{i}" for i in range(rows)]
        seq += 1
        users = [rng.randrange(1, 1000) for _ in range(rows)]
        values = ", ".join(f"({u}, '{note}')" for u, note in zip(users, notes))
        rec = {"c": n, "t": table, "notes": notes, "users": users}
        try:
            cur = conn.cursor()
            cur.execute(f"INSERT INTO {table} (user_id, note) VALUES {values}")
            rec["ok"] = True
            rec["id"] = cur.lastrowid
        except pymysql.MySQLError as e:
            rec["ok"] = False
            rec["err"] = str(e)[:200]
            emit(rec)
            try:
                conn.close()
            except Exception:
                pass
            conn = connect()
            continue
        try:
            cur.execute("SELECT LAST_INSERT_ID()")
            rec["lid"] = cur.fetchone()[0]
        except pymysql.MySQLError as e:
            rec["lid"] = None
            rec["lid_err"] = str(e)[:200]
            emit(rec)
            conn = connect()
            continue
        emit(rec)


def main():
    threads = [threading.Thread(target=client, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
