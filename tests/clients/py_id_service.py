"""The ID service from Python: the redis package over RESP2 and RESP3, and ids taken at once
over SQL (pymysql, SELECT NEXT n VALUES), HTTP (/ids, Leaf) and RESP (INCR, INCRBY) by threads,
checked for duplicates and for blocks that are contiguous.

usage: py_id_service.py MYSQL_PORT HTTP_PORT RESP_PORT USER PASSWORD LIMITED_USER LIMITED_PASSWORD
"""
import base64
import json
import sys
import threading
import urllib.request

import pymysql
import redis

mysql_port, http_port, resp_port = (int(a) for a in sys.argv[1:4])
user, password, limited, limited_pw = sys.argv[4:8]


def rclient(protocol, u=user, p=password):
    return redis.Redis(host="127.0.0.1", port=resp_port, username=u, password=p,
                       protocol=protocol, socket_timeout=20)


def http(path):
    req = urllib.request.Request(f"http://127.0.0.1:{http_port}{path}")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    req.add_header("Authorization", f"Basic {token}")
    with urllib.request.urlopen(req, timeout=20) as r:
        return r.read().decode()


def err(f):
    try:
        f()
    except redis.exceptions.RedisError as e:
        return f"{type(e).__name__}: {e}"
    return "no error"


# --- the redis package, both protocol versions ----------------------------------------------
for protocol in (2, 3):
    r = rclient(protocol)
    print(f"resp{protocol} ping {r.ping()}")
    a = r.incr("seq")
    b = r.incrby("seq", 10)
    print(f"resp{protocol} incrby after incr {b - a}")
    print(f"resp{protocol} get {r.get('seq') == str(b).encode()}")
    print(f"resp{protocol} get unused {r.get('snow')}")
    print(f"resp{protocol} snowflake {r.incr('snow') > 0}")
    print(f"resp{protocol} bad count {err(lambda: r.incrby('seq', 0))}")
    print(f"resp{protocol} biased {err(lambda: r.incr('bias'))}")
    print(f"resp{protocol} unknown {err(lambda: r.execute_command('SET', 'seq', '1'))}")
    r.close()
    lim = rclient(protocol, limited, limited_pw)
    print(f"resp{protocol} limited {err(lambda: lim.incr('seq'))}")
    lim.close()
    print(f"resp{protocol} wrong password {err(lambda: rclient(protocol, user, 'nope').ping())}")
anon = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=20)
print(f"anonymous {err(lambda: anon.incr('seq'))}")

# --- every protocol at once -------------------------------------------------------------------
N, ROUNDS = 50, 20
blocks, singles, problems = [], [], []
lock = threading.Lock()


def record(block=None, single=None):
    with lock:
        if block:
            blocks.append(block)
        if single is not None:
            singles.append(single)


def sql_worker():
    c = pymysql.connect(host="127.0.0.1", port=mysql_port, user=user, password=password)
    with c.cursor() as cur:
        for _ in range(ROUNDS):
            cur.execute(f"SELECT NEXT {N} VALUES FROM seq")
            first = cur.fetchone()[0]
            record(block=list(range(first, first + N)))
            cur.execute("SELECT NEXTVAL(seq)")
            record(single=cur.fetchone()[0])
    c.close()


def http_worker():
    for _ in range(ROUNDS):
        b = json.loads(http(f"/ids/seq?count={N}"))
        if b["count"] != N or b["last"] - b["first"] != N - 1:
            with lock:
                problems.append(f"http block {b}")
        record(block=list(range(b["first"], b["last"] + 1)))
        record(single=int(http("/api/segment/get/seq")))


def resp_worker(protocol):
    r = rclient(protocol)
    for _ in range(ROUNDS):
        last = r.incrby("seq", N)
        record(block=list(range(last - N + 1, last + 1)))
        record(single=r.incr("seq"))
    r.close()


def run(target, *args):
    def wrapped():
        try:
            target(*args)
        except Exception as e:  # reported, and the check below fails
            with lock:
                problems.append(f"{target.__name__}: {e!r}")
    return threading.Thread(target=wrapped)


threads = [run(sql_worker) for _ in range(3)] + [run(http_worker) for _ in range(3)]
threads += [run(resp_worker, 2), run(resp_worker, 3), run(resp_worker, 2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
ids = [i for b in blocks for i in b] + singles
print(f"concurrent problems {problems}")
print(f"concurrent blocks {len(blocks)} ids {len(ids)} unique {len(set(ids)) == len(ids)}")
print("done")
