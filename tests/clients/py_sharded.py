#!/usr/bin/env python3
"""SQLAlchemy 2 ORM doing ordinary CRUD on a sharded schema: users sharded by id and their orders
sharded by user_id, with a relationship between them.

Run once against MariaDB directly (AUTO_INCREMENT ids, one server) and once through idgate (ids
generated, rows on two shards): the transcripts must be identical. Tables sh_users and sh_orders
exist and are empty. Prints one line per observation; exits non-zero on any unexpected exception.

Usage: py_sharded.py HOST PORT USER PASSWORD DATABASE
"""

import sys
import traceback
from decimal import Decimal
from urllib.parse import quote_plus

import sqlalchemy
from sqlalchemy import BigInteger, ForeignKey, Integer, Numeric, String, func, select, update
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship


def out(line):
    print(line, flush=True)


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "sh_users"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(40))
    score: Mapped[int | None] = mapped_column(Integer, nullable=True)
    orders: Mapped[list["Order"]] = relationship(back_populates="user", order_by="Order.id")


class Order(Base):
    __tablename__ = "sh_orders"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    # No database foreign key: the users of an order may live on another shard.
    user_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("sh_users.id"))
    amount: Mapped[Decimal | None] = mapped_column(Numeric(10, 2), nullable=True)
    note: Mapped[str | None] = mapped_column(String(40), nullable=True)
    user: Mapped[User] = relationship(back_populates="orders")


def main(host, port, user, password, database):
    url = f"mysql+pymysql://{quote_plus(user)}:{quote_plus(password)}@{host}:{port}/{database}?charset=utf8mb4"
    engine = sqlalchemy.create_engine(url)

    # Create: users with their orders in one unit of work.
    with Session(engine) as s:
        users = [User(name=f"user {i}", score=i * 3) for i in range(8)]
        for i, u in enumerate(users):
            u.orders = [Order(amount=Decimal(f"{i}.{k}5"), note=f"order {k}") for k in range(1, 3)]
        s.add_all(users)
        s.commit()
        out(f"created users {[u.id for u in users]}")
        out(f"created orders {[o.id for u in users for o in u.orders]}")

    # Read: by primary key (one shard), a relationship (one shard), scans merged in order.
    with Session(engine) as s:
        u = s.get(User, 3)
        out(f"get 3: {u.name} {u.score} orders {[(o.id, o.amount, o.note) for o in u.orders]}")
        for o in s.scalars(select(Order).where(Order.user_id == 6).order_by(Order.id.desc())):
            out(f"orders of 6: {o.id} {o.amount} {o.note} user {o.user.name}")
        out(f"all users {[(x.id, x.name) for x in s.scalars(select(User).order_by(User.id))]}")
        out(f"top scores {s.execute(select(User.id, User.score).order_by(User.score.desc()).limit(3)).all()}")
        out(f"count {s.scalar(select(func.count()).select_from(User))} "
            f"sum amount {s.scalar(select(func.sum(Order.amount)))} "
            f"max order {s.scalar(select(func.max(Order.id)))}")
        out(f"in {sorted(x.id for x in s.scalars(select(User).where(User.id.in_([1, 2, 7]))))}")

    # Update: one object through the unit of work, and a bulk UPDATE over every shard.
    with Session(engine) as s:
        u = s.get(User, 2)
        u.name = "user two renamed"
        s.commit()
        r = s.execute(update(User).where(User.score >= 12).values(score=User.score + 100))
        out(f"bulk update rowcount {r.rowcount}")
        s.commit()
        out(f"after update {s.execute(select(User.id, User.name, User.score).order_by(User.id)).all()}")

    # Delete: a user's orders and the user, then a rollback that leaves everything as it was.
    with Session(engine) as s:
        u = s.get(User, 5)
        for o in list(u.orders):
            s.delete(o)
        s.delete(u)
        s.commit()
        out(f"after delete users {s.scalar(select(func.count()).select_from(User))} "
            f"orders {s.scalar(select(func.count()).select_from(Order))}")
        s.add_all([User(name="rolled back a"), User(name="rolled back b")])
        s.flush()
        s.execute(update(User).values(score=0))
        s.rollback()
        out(f"after rollback {s.execute(select(User.id, User.score).order_by(User.id)).all()}")
    engine.dispose()
    out("done")


if __name__ == "__main__":
    try:
        main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
    except Exception:
        traceback.print_exc()
        sys.exit(1)
