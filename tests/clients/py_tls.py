#!/usr/bin/env python3
"""PyMySQL or mysql-connector-python over TLS, verifying the server certificate against a CA.

Usage: py_tls.py pymysql|connector HOST PORT USER PASSWORD DATABASE CA_PEM [TLS_VERSION]
Prints `ok <protocol> <value>` (the TLS protocol the socket negotiated) or `error <message>`.
"""

import sys


def main():
    driver, host, port, user, password, db, ca = sys.argv[1:8]
    version = sys.argv[8] if len(sys.argv) > 8 else None
    port = int(port)
    try:
        if driver == "pymysql":
            import ssl

            import pymysql

            ctx = ssl.create_default_context(cafile=ca)
            if version == "TLSv1.2":
                ctx.maximum_version = ssl.TLSVersion.TLSv1_2
            conn = pymysql.connect(
                host=host, port=port, user=user, password=password, database=db, ssl=ctx
            )
            protocol = conn._sock.version()
            cur = conn.cursor()
        else:
            import mysql.connector

            kwargs = {}
            if version:
                kwargs["tls_versions"] = [version]
            conn = mysql.connector.connect(
                host=host,
                port=port,
                user=user,
                password=password,
                database=db,
                ssl_ca=ca,
                ssl_verify_cert=True,
                ssl_verify_identity=True,
                use_pure=True,
                **kwargs,
            )
            protocol = conn._socket.sock.version()
            cur = conn.cursor()
        cur.execute("SELECT CONCAT('tls-', 1 + 1)")
        value = cur.fetchone()[0]
        print(f"ok {protocol} {value}")
        conn.close()
    except Exception as e:  # the test judges the message
        print(f"error {type(e).__name__}: {e}")


main()
