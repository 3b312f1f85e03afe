#!/usr/bin/env python3
"""idgate's admin statements through PyMySQL: prints, per statement, one JSON line with the
column names, the type codes PyMySQL read and the rows (values as text, NULL as null), or the
error code and message.

Usage: py_admin.py HOST PORT USER PASSWORD DATABASE STATEMENT...
"""

import json
import sys

import pymysql


def main():
    host, port, user, password, db = sys.argv[1:6]
    conn = pymysql.connect(
        host=host, port=int(port), user=user, password=password, database=db
    )
    with conn.cursor() as cur:
        for stmt in sys.argv[6:]:
            try:
                cur.execute(stmt)
            except pymysql.MySQLError as e:
                print(json.dumps({"stmt": stmt, "error": e.args[0], "message": e.args[1]}))
                continue
            desc = cur.description or []
            rows = [[None if v is None else str(v) for v in r] for r in cur.fetchall()]
            print(
                json.dumps(
                    {
                        "stmt": stmt,
                        "columns": [d[0] for d in desc],
                        "types": [d[1] for d in desc],
                        "rows": rows,
                    }
                )
            )
    conn.close()


if __name__ == "__main__":
    main()
