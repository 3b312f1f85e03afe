#!/usr/bin/env python3
"""Generated ids as Python applications see them: SQLAlchemy 2 ORM and Core (over PyMySQL),
PyMySQL's cursor.lastrowid and executemany, mysql-connector-python's lastrowid with a plain and a
prepared cursor.

Run once against tables with `id BIGINT AUTO_INCREMENT` on MariaDB directly and once through idgate
against the same tables without AUTO_INCREMENT (idgate generates the ids): the transcripts must be
identical. Tables py_ids_orm, py_ids_pm and py_ids_mc, each (id, v VARCHAR(40) NOT NULL, n INT),
exist before the run. Prints one line per observation; exits non-zero on any unexpected exception.

Usage: py_ids.py HOST PORT USER PASSWORD DATABASE
"""

import re
import sys
import traceback
from urllib.parse import quote_plus

import mysql.connector
import pymysql
import sqlalchemy
from sqlalchemy import BigInteger, Integer, String, event, insert, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column


def out(line):
    print(line, flush=True)


class Base(DeclarativeBase):
    pass


class Item(Base):
    __tablename__ = "py_ids_orm"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    v: Mapped[str] = mapped_column(String(40))
    n: Mapped[int | None] = mapped_column(Integer, nullable=True)


def shape(statement, parameters, executemany):
    """What SQLAlchemy sent, without the values: verb and table, how many VALUES rows, RETURNING."""
    head = " ".join(statement.split()[:3])
    rows = len(re.findall(r"\(%\(|\(%s", statement))
    returning = re.search(r"RETURNING .*$", statement, re.S)
    many = f" executemany params={len(parameters)}" if executemany else ""
    ret = f" {returning.group(0).strip()}" if returning else ""
    return f"{head} rows={rows}{ret}{many}"


def sqlalchemy_part(host, port, user, password, database):
    url = f"mysql+pymysql://{quote_plus(user)}:{quote_plus(password)}@{host}:{port}/{database}?charset=utf8mb4"
    engine = sqlalchemy.create_engine(url)
    sent = []

    @event.listens_for(engine, "before_cursor_execute")
    def record(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("INSERT"):
            sent.append(shape(statement, parameters, executemany))

    def show_sent(what):
        for s in sent:
            out(f"{what} sent: {s}")
        sent.clear()

    with engine.connect() as c:
        d = c.dialect
        out(f"sqlalchemy dialect mariadb={d.is_mariadb} server_version={d.server_version_info} "
            f"insert_returning={d.insert_returning} insertmanyvalues={d.use_insertmanyvalues}")

    # The ORM adds 100 objects in one commit: on MariaDB >= 10.5 one INSERT ... RETURNING.
    with Session(engine) as s:
        items = [Item(v=f"orm {i}", n=i) for i in range(100)]
        s.add_all(items)
        s.commit()
        ids = [it.id for it in items]
        out(f"orm add_all 100 ids {ids}")
        show_sent("orm add_all")
        out(f"orm LAST_INSERT_ID() {s.execute(text('SELECT LAST_INSERT_ID()')).scalar()}")

    # One object, flushed: a single-row INSERT, id from lastrowid.
    with Session(engine) as s:
        one = Item(v="orm one")
        s.add(one)
        s.flush()
        out(f"orm add one flushed id {one.id}")
        s.commit()
        show_sent("orm add one")
        # Objects whose id is set to None explicitly generate too.
        pair = [Item(id=None, v="orm none a"), Item(id=None, v="orm none b", n=7)]
        s.add_all(pair)
        s.commit()
        out(f"orm id=None ids {[p.id for p in pair]}")
        show_sent("orm id=None")

    # ORM bulk insert with a list of dicts: executemany, no ids come back to the application.
    with Session(engine) as s:
        s.execute(insert(Item), [{"v": f"bulk {i}", "n": i} for i in range(20)])
        s.commit()
        show_sent("orm bulk insert")
        out(f"orm bulk LAST_INSERT_ID() {s.execute(text('SELECT LAST_INSERT_ID()')).scalar()}")
        # The same with RETURNING: the ids, in parameter order.
        r = s.execute(insert(Item).returning(Item.id, Item.v), [{"v": f"bulk ret {i}"} for i in range(10)])
        out(f"orm bulk insert returning {[(row.id, row.v) for row in r]}")
        s.commit()
        show_sent("orm bulk insert returning")

    # Core: inserted_primary_key and lastrowid.
    with engine.begin() as c:
        r = c.execute(insert(Item.__table__).values(v="core one"))
        out(f"core insert inserted_primary_key {tuple(r.inserted_primary_key)} lastrowid {r.lastrowid} rowcount {r.rowcount}")
        r = c.execute(insert(Item.__table__).values([{"v": "core m1"}, {"v": "core m2"}, {"v": "core m3"}]))
        out(f"core multi-values lastrowid {r.lastrowid} rowcount {r.rowcount}")
        r = c.execute(insert(Item.__table__).values(v="core returning").returning(Item.__table__.c.id))
        out(f"core insert returning {r.scalar_one()}")
        show_sent("core")
    with Session(engine) as s:
        for it in s.scalars(select(Item).order_by(Item.id)):
            out(f"orm row {it.id} {it.v} {it.n}")
    engine.dispose()


def pymysql_part(host, port, user, password, database):
    conn = pymysql.connect(host=host, port=port, user=user, password=password, database=database,
                           charset="utf8mb4", autocommit=True)
    with conn.cursor() as cur:
        def report(what):
            insert_id = conn.insert_id()
            cur2 = conn.cursor()
            cur2.execute("SELECT LAST_INSERT_ID()")
            lid = cur2.fetchone()[0]
            cur2.close()
            out(f"pymysql {what} rowcount={cur.rowcount} lastrowid={cur.lastrowid} "
                f"insert_id={insert_id} LAST_INSERT_ID()={lid}")

        cur.execute("INSERT INTO py_ids_pm (v) VALUES (%s)", ("single",))
        report("single")
        cur.execute("INSERT INTO py_ids_pm (v, n) VALUES (%s, %s), (%s, %s), (%s, %s)",
                    ("m1", 1, "m2", 2, "m3", 3))
        report("multi-row")
        cur.execute("INSERT INTO py_ids_pm (id, v) VALUES (%s, %s)", (None, "id None"))
        report("id None")
        cur.execute("INSERT INTO py_ids_pm (id, v) VALUES (%s, %s)", (0, "id 0"))
        report("id 0")
        # executemany turns INSERT ... VALUES into one multi-row INSERT.
        cur.executemany("INSERT INTO py_ids_pm (v, n) VALUES (%s, %s)", [(f"many {i}", i) for i in range(10)])
        report("executemany")
        cur.executemany("INSERT INTO py_ids_pm (id, v) VALUES (%s, %s)",
                        [(None if i % 2 else 0, f"many id {i}") for i in range(6)])
        report("executemany id None/0")
        # ... except with ON DUPLICATE KEY UPDATE and the like, one execute per row.
        cur.executemany("INSERT INTO py_ids_pm (v) VALUES (%s) ON DUPLICATE KEY UPDATE n = n + 1",
                        [(f"odku {i}",) for i in range(3)])
        report("executemany on duplicate key")
        cur.execute("INSERT INTO py_ids_pm (v) VALUES ('r1'), ('r2') RETURNING id, v")
        out(f"pymysql returning {cur.fetchall()}")
        report("returning")
        cur.execute("SELECT 1")
        cur.fetchall()
        report("after select")
        cur.execute("UPDATE py_ids_pm SET n = 0 WHERE v = 'single'")
        report("after update")
        # Explicit ids last: kept as given.
        cur.execute("INSERT INTO py_ids_pm (id, v) VALUES (%s, %s)", (50000, "explicit"))
        report("explicit")
        cur.executemany("INSERT INTO py_ids_pm (id, v) VALUES (%s, %s)", [(50001, "explicit a"), (50002, "explicit b")])
        report("executemany explicit")
        cur.execute("SELECT id, v, n FROM py_ids_pm ORDER BY id")
        for row in cur.fetchall():
            out(f"pymysql row {row}")
    conn.close()


def connector_part(host, port, user, password, database):
    conn = mysql.connector.connect(host=host, port=port, user=user, password=password, database=database,
                                   charset="utf8mb4", collation="utf8mb4_general_ci", autocommit=True)

    def lid():
        c = conn.cursor()
        c.execute("SELECT LAST_INSERT_ID()")
        v = c.fetchone()[0]
        c.close()
        return v

    plain = conn.cursor()

    def report(kind, cur, what):
        out(f"connector {kind} {what} rowcount={cur.rowcount} lastrowid={cur.lastrowid} LAST_INSERT_ID()={lid()}")

    plain.execute("INSERT INTO py_ids_mc (v) VALUES (%s)", ("plain single",))
    report("plain", plain, "single")
    plain.execute("INSERT INTO py_ids_mc (v) VALUES ('plain a'), ('plain b'), ('plain c')")
    report("plain", plain, "multi-row")
    plain.execute("INSERT INTO py_ids_mc (id, v) VALUES (%s, %s)", (None, "plain None"))
    report("plain", plain, "id None")
    plain.execute("INSERT INTO py_ids_mc (id, v) VALUES (%s, %s)", (0, "plain 0"))
    report("plain", plain, "id 0")
    plain.executemany("INSERT INTO py_ids_mc (v, n) VALUES (%s, %s)", [(f"plain many {i}", i) for i in range(5)])
    report("plain", plain, "executemany")

    prep = conn.cursor(prepared=True)
    prep.execute("INSERT INTO py_ids_mc (v) VALUES (%s)", ("prep single",))
    report("prepared", prep, "single")
    prep.execute("INSERT INTO py_ids_mc (v) VALUES (%s)", ("prep single again",))
    report("prepared", prep, "single again")
    prep.execute("INSERT INTO py_ids_mc (v, n) VALUES (%s, %s), (%s, %s)", ("prep m1", 1, "prep m2", 2))
    report("prepared", prep, "multi-row")
    prep.execute("INSERT INTO py_ids_mc (id, v) VALUES (%s, %s)", (None, "prep None"))
    report("prepared", prep, "id None")
    prep.execute("INSERT INTO py_ids_mc (id, v) VALUES (%s, %s)", (0, "prep 0"))
    report("prepared", prep, "id 0")
    prep.executemany("INSERT INTO py_ids_mc (id, v) VALUES (%s, %s)", [(None, "prep many a"), (0, "prep many b"), (None, "prep many c")])
    report("prepared", prep, "executemany")
    prep.execute("SELECT COUNT(*) FROM py_ids_mc")
    out(f"connector prepared count {prep.fetchall()}")
    report("prepared", prep, "after select")

    # Explicit ids last: kept as given.
    plain.execute("INSERT INTO py_ids_mc (id, v) VALUES (%s, %s)", (70000, "plain explicit"))
    report("plain", plain, "explicit")
    prep.execute("INSERT INTO py_ids_mc (id, v) VALUES (%s, %s)", (70001, "prep explicit"))
    report("prepared", prep, "explicit")
    prep.close()
    plain.execute("SELECT id, v, n FROM py_ids_mc ORDER BY id")
    for row in plain.fetchall():
        out(f"connector row {row}")
    plain.close()
    conn.close()


def main():
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    host, port, user, password, database = sys.argv[1:]
    args = (host, int(port), user, password, database)
    try:
        sqlalchemy_part(*args)
        pymysql_part(*args)
        connector_part(*args)
    except Exception:
        traceback.print_exc()
        return 1
    out("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
