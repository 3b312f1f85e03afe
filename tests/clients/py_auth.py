#!/usr/bin/env python3
"""Logs in with one Python driver and runs one query; prints `ok 42` or `error CODE MESSAGE`.

mysql-connector-python answers with caching_sha2_password (its default plugin) and cannot fetch
a server's RSA key, so without TLS it logs in only by the fast path; with TLS
(`connector-tls`) it sends the password in clear inside it for full authentication. PyMySQL fetches the key
(the `cryptography` package does the RSA) and can do full authentication.

Usage: py_auth.py connector|connector-tls|pymysql HOST PORT USER PASSWORD
"""

import sys


def main():
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    driver, host, port, user, password = sys.argv[1:]
    if driver == "connector":
        import mysql.connector as m

        def connect():
            return m.connect(host=host, port=int(port), user=user, password=password,
                             auth_plugin="caching_sha2_password", ssl_disabled=True,
                             use_pure=True)
        errors = (m.Error,)
    elif driver == "connector-tls":
        import mysql.connector as m

        def connect():
            return m.connect(host=host, port=int(port), user=user, password=password,
                             auth_plugin="caching_sha2_password", ssl_disabled=False,
                             ssl_verify_cert=False, use_pure=True)
        errors = (m.Error,)
    elif driver == "pymysql":
        import pymysql as m

        def connect():
            return m.connect(host=host, port=int(port), user=user, password=password)
        errors = (m.err.MySQLError,)
    else:
        print(f"unknown driver {driver}", file=sys.stderr)
        return 2
    try:
        conn = connect()
        cur = conn.cursor()
        cur.execute("SELECT 41 + 1")
        print(f"ok {cur.fetchone()[0]}")
        conn.close()
    except errors as e:
        code = getattr(e, "errno", None)
        if code is None and e.args:
            code = e.args[0]
        msg = getattr(e, "msg", None) or (e.args[1] if len(e.args) > 1 else str(e))
        print(f"error {code} {msg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
