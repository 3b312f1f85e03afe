"""Clients for scripts/bench-migrate: N threads read and update `ledger` through idgate for a
few seconds, then the main thread starts moving `ledger` onto the shards and the threads go on
until its copy is done; prints JSON with the statements' latency before and during the copy."""
import json
import random
import sys
import threading
import time

import pymysql

host, port, user, password, db, threads, rows = sys.argv[1:8]
port, threads, rows = int(port), int(threads), int(rows)
BASELINE_S = 3.0
stop = threading.Event()
lat = []  # (start, seconds) of every statement
errors = []
lock = threading.Lock()


def client(k):
    c = pymysql.connect(host=host, port=port, user=user, password=password, database=db, autocommit=True)
    cur = c.cursor()
    rng = random.Random(k)
    mine = []
    while not stop.is_set():
        row = rng.randint(1, rows)
        for sql in (
            f"SELECT id, note, amount FROM ledger WHERE id = {row}",
            f"UPDATE ledger SET amount = amount + 1 WHERE id = {row}",
        ):
            t = time.monotonic()
            try:
                cur.execute(sql)
                cur.fetchall()
            except pymysql.MySQLError as e:
                with lock:
                    errors.append(str(e))
            d = time.monotonic() - t
            mine.append((t, d))
    with lock:
        lat.extend(mine)


ts = [threading.Thread(target=client, args=(k,)) for k in range(threads)]
for t in ts:
    t.start()
time.sleep(BASELINE_S)
admin = pymysql.connect(host=host, port=port, user=user, password=password, database=db, autocommit=True)
cur = admin.cursor()
t0 = time.monotonic()
cur.execute(
    "IDGATE MIGRATE START ledger TO '{generator: acc_seq, sharding: {columns: [id], "
    "algorithm: mod, shards: [t1, t2]}}'"
)
# rows_copied is saved after each chunk: the copy is done when it reaches the table's rows.
while True:
    cur.execute("IDGATE MIGRATE STATUS ledger")
    status = cur.fetchone()
    if status is not None and int(status[2]) >= rows:
        break
    time.sleep(0.02)
t1 = time.monotonic()
stop.set()
for t in ts:
    t.join()
cur.execute("IDGATE MIGRATE CANCEL ledger")


def pct(ds, p):
    ds = sorted(ds)
    return 1000 * ds[min(len(ds) - 1, int(p * len(ds)))] if ds else 0.0


before = [d for s, d in lat if t0 - BASELINE_S + 0.5 <= s < t0]
during = [d for s, d in lat if t0 <= s <= t1]
print(json.dumps({
    "copy_seconds": t1 - t0,
    "p50_before_ms": pct(before, 0.50),
    "p99_before_ms": pct(before, 0.99),
    "max_before_ms": 1000 * max(before, default=0),
    "p50_during_ms": pct(during, 0.50),
    "p99_during_ms": pct(during, 0.99),
    "max_during_ms": 1000 * max(during, default=0),
    "qps_before": len(before) / (BASELINE_S - 0.5),
    "qps_during": len(during) / max(t1 - t0, 1e-3),
    "errors": errors[:5],
    "error_count": len(errors),
}))
