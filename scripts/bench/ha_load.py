"""The switchover and failover figures of scripts/bench-ha: 8 clients (4 writers, 4 readers)
through idgate while the group's primary changes. Prints one JSON object.

  switchover PORT USER PASSWORD DB TARGET  -- IDGATE SWITCHOVER db TO TARGET under the load:
                                              the longest statement, errors, the hold idgate
                                              reports
  failover PORT USER PASSWORD DB NODES...  -- the load, then the caller kills the primary
                                              and promotes (this reads its commands on stdin):
                                              the time from the promotion to the first write
"""
import json
import sys
import threading
import time

import pymysql


def connect(port, user, password, db):
    return pymysql.connect(host="127.0.0.1", port=port, user=user, password=password,
                           database=db, autocommit=True, connect_timeout=10)


class Load:
    def __init__(self, port, user, password, db, first_writer):
        self.args = (port, user, password, db)
        # Writers of each run have ids of their own, so rows of runs on one table differ.
        self.first_writer = first_writer
        self.stop = False
        self.lock = threading.Lock()
        self.longest = 0.0
        self.errors = []
        self.acked = []  # (time, writer)
        self.threads = [threading.Thread(target=self.run, args=(w,)) for w in range(8)]

    def run(self, w):
        c = None
        seq = 0
        while not self.stop:
            if c is None:
                try:
                    c = connect(*self.args)
                except pymysql.MySQLError as e:
                    with self.lock:
                        self.errors.append((time.monotonic(), str(e)))
                    time.sleep(0.02)
                    continue
            seq += 1
            t0 = time.monotonic()
            try:
                with c.cursor() as cur:
                    if w < 4:
                        cur.execute("INSERT INTO ha (writer, seq) VALUES (%s, %s)",
                                    (self.first_writer + w, seq))
                    else:
                        cur.execute("SELECT COUNT(*) FROM ha WHERE writer = %s",
                                    (self.first_writer + w - 4,))
                        cur.fetchall()
                took = time.monotonic() - t0
                with self.lock:
                    self.longest = max(self.longest, took)
                    if w < 4:
                        self.acked.append((time.monotonic(), w))
            except pymysql.MySQLError as e:
                with self.lock:
                    self.errors.append((time.monotonic(), str(e)))
                c = None
            time.sleep(0.002)

    def start(self):
        for t in self.threads:
            t.start()

    def end(self):
        self.stop = True
        for t in self.threads:
            t.join()


def switchover(port, user, password, db, target):
    load = Load(port, user, password, db, 0)
    load.start()
    time.sleep(2)
    admin = connect(port, user, password, db)
    t0 = time.monotonic()
    with admin.cursor() as cur:
        cur.execute(f"IDGATE SWITCHOVER db TO '{target}'")
    took = time.monotonic() - t0
    # The OK packet's info (how long idgate held the statements); PyMySQL keeps its length
    # byte when the server tracks session state.
    raw = getattr(admin._result, "message", b"") or b""
    if raw and raw[0] == len(raw) - 1:
        raw = raw[1:]
    info = raw.decode()
    time.sleep(2)
    load.end()
    print(json.dumps({"statement_s": took, "longest_s": load.longest,
                      "errors": [e for _, e in load.errors], "writes": len(load.acked),
                      "info": info}))


def failover(port, user, password, db):
    load = Load(port, user, password, db, 100)
    load.start()
    time.sleep(2)
    print("ready", flush=True)
    line = sys.stdin.readline()  # "promoted": the caller killed the primary and promoted
    promoted = time.monotonic()
    assert line.strip() == "promoted", line
    deadline = promoted + 30
    first = None
    while first is None and time.monotonic() < deadline:
        with load.lock:
            after = [t for t, _ in load.acked if t > promoted]
        if after:
            first = min(after) - promoted
        time.sleep(0.005)
    time.sleep(1)
    load.end()
    print(json.dumps({"first_write_after_promotion_s": first, "writes": len(load.acked),
                      "errors": len(load.errors),
                      "first_errors": sorted({e for _, e in load.errors})[:5]}), flush=True)


if __name__ == "__main__":
    kind, port, user, password, db = sys.argv[1:6]
    if kind == "switchover":
        switchover(int(port), user, password, db, sys.argv[6])
    else:
        failover(int(port), user, password, db)
