#!/usr/bin/env python3
"""What a session killed mid-statement reads, through PyMySQL's raw socket and through
libmariadb (the C client MariaDB's mysqltest uses): prints one line per step.

1. A statement waiting on another session's table lock, sent without reading its answer, then
   the session killed by its CONNECTION_ID(): the exact bytes that reach the client (none, then
   the connection closes, as MariaDB does), and what libmariadb's mysql_read_query_result says.
2. MariaDB's main.lock_kill flow: a session takes LOCK TABLE t WRITE, sends ALTER TABLE t ADD
   COLUMN without reading, and is killed at once; whichever comes first, its answer must be one
   mysqltest accepts there (0, 2006, 2013, 1927), never a malformed packet.

Usage: py_kill.py HOST PORT USER PASSWORD DATABASE
"""

import ctypes
import sys
import time

import pymysql
from pymysql.constants import COMMAND

HOST, PORT, USER, PASSWORD, DB = sys.argv[1:6]
PORT = int(PORT)


def connect():
    return pymysql.connect(
        host=HOST, port=PORT, user=USER, password=PASSWORD, database=DB, autocommit=True
    )


def run(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def wait_waiting(watcher, marker):
    """Until the statement carrying `marker` waits on a lock (as the process list shows it)."""
    deadline = time.time() + 20
    while time.time() < deadline:
        rows = run(
            watcher,
            "SELECT STATE FROM information_schema.PROCESSLIST WHERE INFO LIKE '%%%s%%' "
            "AND INFO NOT LIKE '%%PROCESSLIST%%'" % marker,
        )
        if rows and "lock" in (rows[0][0] or ""):
            return
        time.sleep(0.02)
    raise SystemExit("%s never waited on the lock" % marker)


def read_all(sock):
    """Every byte until the server closes the connection (or 10 s pass)."""
    sock.settimeout(10)
    data = b""
    while True:
        try:
            part = sock.recv(65536)
        except OSError as e:
            return data, "no close: %s" % e
        if not part:
            return data, "closed"
        data += part


class CClient:
    """The few libmariadb calls mysqltest's --send / reap make."""

    def __init__(self):
        lib = ctypes.CDLL("libmariadb.so.3")
        p = ctypes.c_void_p
        lib.mysql_init.restype = p
        lib.mysql_init.argtypes = [p]
        lib.mysql_real_connect.restype = p
        lib.mysql_real_connect.argtypes = [p, ctypes.c_char_p, ctypes.c_char_p,
                                           ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint,
                                           ctypes.c_char_p, ctypes.c_ulong]
        for f in ("mysql_send_query", "mysql_real_query"):
            getattr(lib, f).argtypes = [p, ctypes.c_char_p, ctypes.c_ulong]
        for f in ("mysql_read_query_result", "mysql_errno", "mysql_thread_id", "mysql_close"):
            getattr(lib, f).argtypes = [p]
        lib.mysql_thread_id.restype = ctypes.c_ulong
        lib.mysql_store_result.restype = p
        lib.mysql_store_result.argtypes = [p]
        lib.mysql_free_result.argtypes = [p]
        self.lib = lib
        self.m = lib.mysql_init(None)
        if not lib.mysql_real_connect(self.m, HOST.encode(), USER.encode(),
                                      PASSWORD.encode(), DB.encode(), PORT, None, 0):
            raise SystemExit("libmariadb could not connect: %d" % lib.mysql_errno(self.m))

    def query(self, sql):
        if self.lib.mysql_real_query(self.m, sql.encode(), len(sql)):
            return self.lib.mysql_errno(self.m)
        res = self.lib.mysql_store_result(self.m)
        if res:
            self.lib.mysql_free_result(res)
        return 0

    def send(self, sql):
        if self.lib.mysql_send_query(self.m, sql.encode(), len(sql)):
            raise SystemExit("mysql_send_query failed: %d" % self.lib.mysql_errno(self.m))

    def reap(self):
        if self.lib.mysql_read_query_result(self.m):
            return self.lib.mysql_errno(self.m)
        return 0

    def close(self):
        self.lib.mysql_close(self.m)


def waiting_statement_killed(admin, watcher):
    run(admin, "DROP TABLE IF EXISTS kill_waits")
    run(admin, "CREATE TABLE kill_waits (a INT) ENGINE=InnoDB")
    blocker = connect()
    run(blocker, "LOCK TABLE kill_waits WRITE")

    victim = connect()
    (vid,), = run(victim, "SELECT CONNECTION_ID()")
    victim._execute_command(COMMAND.COM_QUERY, "ALTER TABLE kill_waits ADD COLUMN pymysql_b INT")
    wait_waiting(watcher, "pymysql_b")
    run(admin, "KILL %d" % vid)
    data, how = read_all(victim._sock)
    print("pymysql waiting statement killed: bytes %r, then %s" % (data, how))

    c = CClient()
    c.send("ALTER TABLE kill_waits ADD COLUMN libmariadb_b INT")
    wait_waiting(watcher, "libmariadb_b")
    run(admin, "KILL %d" % c.lib.mysql_thread_id(c.m))
    print("libmariadb waiting statement killed: reap gives %d" % c.reap())
    c.close()

    run(blocker, "UNLOCK TABLES")
    blocker.close()
    run(admin, "DROP TABLE kill_waits")


def lock_kill(admin):
    answers = set()
    for i in range(10):
        run(admin, "DROP TABLE IF EXISTS kill_lock_kill")
        run(admin, "CREATE TABLE kill_lock_kill (a INT) ENGINE=InnoDB")
        c = CClient()
        if c.query("LOCK TABLE kill_lock_kill WRITE"):
            raise SystemExit("LOCK TABLE failed")
        c.send("ALTER TABLE kill_lock_kill ADD COLUMN b INT")
        run(admin, "KILL %d" % c.lib.mysql_thread_id(c.m))
        answers.add(c.reap())
        c.close()
    run(admin, "DROP TABLE kill_lock_kill")
    accepted = answers <= {0, 2006, 2013, 1927}
    print("lock_kill: every reap is one mysqltest accepts: %s" % accepted)
    if not accepted:
        print("lock_kill answers: %s" % sorted(answers))


def main():
    admin = connect()
    watcher = connect()
    waiting_statement_killed(admin, watcher)
    lock_kill(admin)
    print("done")


main()
