#!/usr/bin/env python3
"""PyMySQL and SQLAlchemy (on PyMySQL) against idgate or MariaDB directly.

Prints one line per observation so that the transcript through idgate can be compared with the
transcript of a direct connection. Exits non-zero on any unexpected exception.

Usage: py_pymysql.py HOST PORT USER PASSWORD DATABASE
"""

import datetime
import decimal
import sys
import traceback
from urllib.parse import quote_plus

import pymysql
import pymysql.constants.CLIENT
import sqlalchemy
from sqlalchemy import (
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Float,
    LargeBinary,
    Numeric,
    String,
    Text,
    select,
    text,
)
from sqlalchemy.dialects.mysql import DATETIME
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

ALL_BYTES = bytes(range(256))
UNICODE = "héllo 🦀 世界 𝄞 ✓"


def out(line):
    print(line, flush=True)


def show(v):
    """A value with its Python type, stable across runs."""
    if v is None:
        return "None"
    if isinstance(v, (bytes, bytearray)):
        return f"{type(v).__name__}:{bytes(v).hex()}"
    return f"{type(v).__name__}:{v!r}"


class Base(DeclarativeBase):
    pass


class Item(Base):
    __tablename__ = "py_orm_items"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100, collation="utf8mb4_bin"))
    price: Mapped[decimal.Decimal] = mapped_column(Numeric(12, 4))
    created: Mapped[datetime.datetime] = mapped_column(DATETIME(fsp=6))
    day: Mapped[datetime.date | None] = mapped_column(Date, nullable=True)
    data: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    ratio: Mapped[float | None] = mapped_column(Float, nullable=True)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    note: Mapped[str | None] = mapped_column(Text, nullable=True)

    def line(self):
        return (
            f"id={self.id} name={self.name!r} price={show(self.price)} created={show(self.created)} "
            f"day={show(self.day)} data={show(self.data)} ratio={show(self.ratio)} "
            f"active={show(self.active)} note={show(self.note)}"
        )


def connect(host, port, user, password, database):
    return pymysql.connect(
        host=host, port=port, user=user, password=password, database=database, charset="utf8mb4",
        client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS,
    )


def description(what, cur):
    for d in cur.description:
        out(f"{what} column {d}")


def plain_pymysql(args):
    conn = connect(*args)
    try:
        cur = conn.cursor()
        cur.execute("DROP TABLE IF EXISTS py_plain, py_orm_items")
        cur.execute(
            "CREATE TABLE py_plain (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(50) CHARACTER SET utf8mb4, "
            "amount DECIMAL(10,2), at DATETIME(3), raw VARBINARY(300), f DOUBLE, n INT NULL)"
        )
        n = cur.execute(
            "INSERT INTO py_plain (name, amount, at, raw, f, n) VALUES (%s, %s, %s, %s, %s, %s)",
            (UNICODE, decimal.Decimal("12.34"), datetime.datetime(2024, 2, 29, 23, 59, 59, 123000), ALL_BYTES, 0.5, None),
        )
        out(f"pymysql insert rowcount={n} lastrowid={cur.lastrowid} conn.insert_id={conn.insert_id()}")
        n = cur.execute("INSERT INTO py_plain (name) VALUES ('a'), ('b'), ('c')")
        out(f"pymysql multi-row insert rowcount={n} lastrowid={cur.lastrowid}")
        rows = [(f"many-{i}", decimal.Decimal(i) / 4, None, bytes([i, 255 - i]), i * 1.25, i) for i in range(10)]
        n = cur.executemany(
            "INSERT INTO py_plain (name, amount, at, raw, f, n) VALUES (%s, %s, %s, %s, %s, %s)", rows
        )
        out(f"pymysql executemany rowcount={n} lastrowid={cur.lastrowid}")
        n = cur.executemany("UPDATE py_plain SET n = %s WHERE id = %s", [(100 + i, i) for i in range(1, 6)])
        out(f"pymysql executemany update rowcount={n}")
        cur.execute("SELECT LAST_INSERT_ID()")
        out(f"pymysql LAST_INSERT_ID()={cur.fetchone()}")
        cur.execute("SELECT * FROM py_plain ORDER BY id")
        description("pymysql select", cur)
        for row in cur.fetchall():
            out("pymysql row " + " ".join(show(v) for v in row))
        cur.execute("SELECT raw = %s, HEX(raw) = %s, LENGTH(raw) FROM py_plain WHERE id = 1", (ALL_BYTES, ALL_BYTES.hex().upper()))
        eq, hex_eq, length = cur.fetchone()
        ok = eq == 1 and hex_eq == 1 and length == 256
        out(f"pymysql bytes round trip {'OK' if ok else 'FAILED'} (eq={eq} hex_eq={hex_eq} length={length})")
        cur.execute("SELECT CAST('12abc' AS INTEGER)")
        out(f"pymysql warning select {cur.fetchone()} warning_count={cur._result.warning_count}")
        cur.execute("SHOW WARNINGS")
        for w in cur.fetchall():
            out(f"pymysql warning {w}")
        for sql in (
            "INSERT INTO py_plain (id, name) VALUES (1, 'dup')",
            "SELEC 1",
            "SELECT * FROM py_no_such_table",
            "SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = 4025, MESSAGE_TEXT = 'custom constraint'",
        ):
            try:
                cur.execute(sql)
                out(f"expected error did not happen: {sql}")
            except pymysql.MySQLError as e:
                out(f"pymysql error {type(e).__name__} {e.args}")
        cur.execute("SELECT 1 + 1")
        out(f"pymysql still usable {cur.fetchone()}")
        conn.begin()
        cur.execute("INSERT INTO py_plain (name) VALUES ('tx rolled back')")
        conn.rollback()
        cur.execute("SELECT COUNT(*) FROM py_plain WHERE name = 'tx rolled back'")
        out(f"pymysql after rollback count={cur.fetchone()[0]}")
        cur.execute("SELECT 1; SELECT 'two', 2")
        out(f"pymysql multi-statement first={cur.fetchall()}")
        while cur.nextset():
            out(f"pymysql multi-statement next={cur.fetchall()}")
        cur.close()
    finally:
        conn.close()


def orm(host, port, user, password, database):
    url = f"mysql+pymysql://{quote_plus(user)}:{quote_plus(password)}@{host}:{port}/{database}?charset=utf8mb4"
    engine = sqlalchemy.create_engine(url, pool_pre_ping=True)
    Base.metadata.create_all(engine)
    created = datetime.datetime(2023, 12, 31, 23, 59, 58, 654321)
    with Session(engine) as s:
        items = [
            Item(name=UNICODE, price=decimal.Decimal("1234.5678"), created=created, day=datetime.date(2024, 2, 29),
                 data=ALL_BYTES, ratio=0.125, active=True, note="first 🦀"),
            Item(name="second", price=decimal.Decimal("-0.0001"), created=created, day=None, data=None, ratio=None,
                 active=False, note=None),
            Item(name="third", price=decimal.Decimal("99999999.9999"), created=created, data=b"", ratio=-2.5),
        ]
        s.add_all(items)
        s.commit()
        out(f"orm inserted ids {[i.id for i in items]}")
    with Session(engine) as s:
        for it in s.scalars(select(Item).order_by(Item.id)):
            out("orm row " + it.line())
        first = s.scalars(select(Item).where(Item.name == UNICODE)).one()
        out(f"orm bytes round trip {'OK' if first.data == ALL_BYTES else 'FAILED'}")
        out(f"orm unicode round trip {'OK' if first.name == UNICODE else 'FAILED'}")
        first.price = first.price + decimal.Decimal("0.0001")
        first.note = "updated ✓"
        s.commit()
        second = s.scalars(select(Item).where(Item.name == "second")).one()
        s.delete(second)
        s.commit()
    with Session(engine) as s:
        for it in s.scalars(select(Item).order_by(Item.id)):
            out("orm after update/delete " + it.line())
        total = s.execute(text("SELECT SUM(price), COUNT(*) FROM py_orm_items")).one()
        out(f"orm aggregate {show(total[0])} {show(total[1])}")
        try:
            s.add(Item(id=1, name="dup", price=decimal.Decimal(0), created=created))
            s.commit()
            out("orm expected duplicate error did not happen")
        except sqlalchemy.exc.IntegrityError as e:
            s.rollback()
            out(f"orm duplicate error {e.orig.args}")
        out(f"orm count after failed insert {s.execute(text('SELECT COUNT(*) FROM py_orm_items')).scalar()}")
    engine.dispose()


def main():
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    host, port, user, password, database = sys.argv[1:]
    args = (host, int(port), user, password, database)
    try:
        plain_pymysql(args)
        orm(*args)
    except Exception:
        traceback.print_exc()
        return 1
    out("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
