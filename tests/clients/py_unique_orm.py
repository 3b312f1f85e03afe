#!/usr/bin/env python3
"""SQLAlchemy 2 ORM on a table with a unique email that does not pick the shard: get_or_create,
a duplicate INSERT, an UPDATE onto another row's email, moving an email and taking the old one
again. The ORM must meet IntegrityError exactly where one MariaDB raises it.

Run once against MariaDB directly (AUTO_INCREMENT ids, one server) and once through idgate (ids
generated, rows on two shards, `unique: global`): the transcripts must be identical. The script
drops and creates its table itself (through idgate, CREATE TABLE makes the key's lookup).

Usage: py_unique_orm.py HOST PORT USER PASSWORD DATABASE
"""

import sys
import traceback
from urllib.parse import quote_plus

import sqlalchemy
from sqlalchemy import BigInteger, String, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column


def out(line):
    print(line, flush=True)


class Base(DeclarativeBase):
    pass


class Member(Base):
    __tablename__ = "orm_members"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(String(80), unique=True)
    name: Mapped[str] = mapped_column(String(40))


def by_email(s, email):
    return s.scalars(select(Member).where(Member.email == email)).first()


def get_or_create(s, email, name):
    found = by_email(s, email)
    if found is not None:
        return found, False
    s.add(Member(email=email, name=name))
    try:
        s.commit()
        return by_email(s, email), True
    except IntegrityError:
        s.rollback()
        return by_email(s, email), False


def commit(s, what):
    try:
        s.commit()
        out(f"{what}: committed")
    except IntegrityError as e:
        s.rollback()
        out(f"{what}: IntegrityError {e.orig.args[0]} {e.orig.args[1]}")


def main():
    host, port, user, password, db = sys.argv[1:6]
    url = f"mysql+pymysql://{quote_plus(user)}:{quote_plus(password)}@{host}:{port}/{db}"
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as c:
        c.exec_driver_sql("DROP TABLE IF EXISTS orm_members")
    Base.metadata.create_all(engine)
    with Session(engine) as s:
        for email in ["ann@x", "bob@x", "ann@x", "ANN@X"]:
            m, created = get_or_create(s, email, "n")
            out(f"get_or_create {email}: created={created} email={m.email}")
        s.add(Member(email="bob@x", name="twice"))
        commit(s, "insert bob@x again")
        s.add_all([Member(email="cid@x", name="c"), Member(email="Cid@x", name="c2")])
        commit(s, "insert cid@x and Cid@x")
        bob = by_email(s, "bob@x")
        bob.email = "ann@x"
        commit(s, "update bob onto ann@x")
        bob = by_email(s, "bob@x")
        bob.email = "dan@x"
        commit(s, "move bob to dan@x")
        s.add(Member(email="bob@x", name="new bob"))
        commit(s, "insert bob@x after the move")
        dan = by_email(s, "dan@x")
        dan.name = "renamed"
        commit(s, "rename dan")
        dan = by_email(s, "dan@x")
        dan.email = "DAN@x"
        commit(s, "case change of dan")
        s.add(Member(email="dan@x", name="other dan"))
        commit(s, "insert dan@x")
        emails = sorted(m.email for m in s.scalars(select(Member)))
        out(f"emails {emails}")
        out(f"count {s.scalar(select(func.count()).select_from(Member))}")
    out("done")


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
