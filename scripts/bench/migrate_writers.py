"""Writers for scripts/bench-migrate: N threads insert and update through idgate while the main
thread runs SWITCH; prints JSON with the longest statement stall before, during and after it."""
import json
import sys
import threading
import time

import pymysql

host, port, user, password, db, threads = sys.argv[1:7]
port, threads = int(port), int(threads)
stop = threading.Event()
lat = []  # (start, seconds) of every statement
errors = []
lock = threading.Lock()


def writer(k):
    c = pymysql.connect(host=host, port=port, user=user, password=password, database=db, autocommit=True)
    cur = c.cursor()
    mine = []
    i = 0
    while not stop.is_set():
        i += 1
        for sql in (
            f"INSERT INTO accounts (name, note, amount) VALUES ('w{k}', 'n{i}', {i})",
            f"UPDATE accounts SET amount = amount + 1 WHERE id = {mine[i % len(mine)] if mine else 1}",
        ):
            t = time.monotonic()
            try:
                cur.execute(sql)
                if sql.startswith("INSERT"):
                    mine.append(cur.lastrowid)
            except pymysql.MySQLError as e:
                with lock:
                    errors.append(str(e))
            with lock:
                lat.append((t, time.monotonic() - t))


ts = [threading.Thread(target=writer, args=(k,)) for k in range(threads)]
for t in ts:
    t.start()
time.sleep(3)
admin = pymysql.connect(host=host, port=port, user=user, password=password, database=db, autocommit=True)
cur = admin.cursor()
while True:
    t0 = time.monotonic()
    try:
        cur.execute("IDGATE MIGRATE SWITCH accounts")
        break
    except pymysql.MySQLError as e:
        if "behind" not in str(e) and "not ready" not in str(e):
            raise
        time.sleep(0.5)
t1 = time.monotonic()
# PyMySQL keeps the OK packet's info with its length byte (MariaDB sends it length-encoded).
m = admin._result.message or b""
info = (m[1:] if m and m[0] == len(m) - 1 else m).decode()
time.sleep(3)
stop.set()
for t in ts:
    t.join()
before = [d for s, d in lat if s < t0 - 0.5]
during = [d for s, d in lat if t0 - 0.5 <= s <= t1]
after = [d for s, d in lat if s > t1]
print(json.dumps({
    "switch_seconds": t1 - t0,
    "info": info,
    "max_before_ms": 1000 * max(before, default=0),
    "max_during_ms": 1000 * max(during, default=0),
    "max_after_ms": 1000 * max(after, default=0),
    "statements": len(lat),
    "errors": errors[:5],
    "error_count": len(errors),
}))
