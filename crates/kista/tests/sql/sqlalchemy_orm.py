"""SQLAlchemy (Debian's 1.4) on PyMySQL as an application uses it: create_all of models
with indexes and server defaults, ORM inserts through relationships, queries with joins, grouping and
LIKE, and reflection of tables, columns, primary keys and indexes. (The relationship here
names its join without a foreign key; sqlalchemy_migration.py declares them.)

Run by crates/kista/tests/sql.rs with the front end's port.
"""
import os
import sys
from decimal import Decimal

os.environ.setdefault("SQLALCHEMY_SILENCE_UBER_WARNING", "1")

from sqlalchemy import Column, Integer, Numeric, String, create_engine, func, inspect, select, text
from sqlalchemy.orm import Session, declarative_base, relationship

port = sys.argv[1]
with create_engine(f"mysql+pymysql://root:@127.0.0.1:{port}/").connect() as connection:
    connection.execute(text("CREATE DATABASE orm"))
engine = create_engine(f"mysql+pymysql://root:@127.0.0.1:{port}/orm")
Base = declarative_base()


class Customer(Base):
    __tablename__ = "customer"
    id = Column(Integer, primary_key=True, autoincrement=True)
    name = Column(String(40), nullable=False, index=True)
    orders = relationship(
        "Order", back_populates="customer",
        primaryjoin="Customer.id == foreign(Order.customer_id)")


class Order(Base):
    __tablename__ = "orders"
    id = Column(Integer, primary_key=True)
    customer_id = Column(Integer, index=True)
    total = Column(Numeric(8, 2))
    customer = relationship(
        "Customer", back_populates="orders",
        primaryjoin="foreign(Order.customer_id) == Customer.id")


Base.metadata.create_all(engine)
with Session(engine) as session:
    session.add_all([
        Customer(name="ann", orders=[Order(total=10), Order(total=5)]),
        Customer(name="bob", orders=[Order(total=7)]),
        Customer(name="cy"),
    ])
    session.commit()
    totals = select(Customer.name, func.sum(Order.total)).join(Customer.orders) \
        .group_by(Customer.name).order_by(Customer.name)
    assert session.execute(totals).all() == [("ann", Decimal("15.00")), ("bob", Decimal("7.00"))]
    named_a = select(Customer).where(Customer.name.startswith("a"))
    assert [c.name for c in session.scalars(named_a)] == ["ann"]
    ann = session.scalars(select(Customer).filter_by(name="ann")).one()
    assert sorted(o.total for o in ann.orders) == [Decimal("5.00"), Decimal("10.00")]
    # An outer join keeps the customer with no order.
    counted = select(Customer.name, func.count(Order.id)).outerjoin(Customer.orders) \
        .group_by(Customer.name).order_by(Customer.name)
    assert session.execute(counted).all() == [("ann", 2), ("bob", 1), ("cy", 0)]
    ann.name = "anna"
    session.delete(session.scalars(select(Customer).filter_by(name="cy")).one())
    session.commit()
    assert session.scalars(select(Customer.name).order_by(Customer.name)).all() == ["anna", "bob"]

inspector = inspect(engine)
assert inspector.get_table_names() == ["customer", "orders"]
assert [c["name"] for c in inspector.get_columns("orders")] == ["id", "customer_id", "total"]
assert inspector.get_pk_constraint("orders")["constrained_columns"] == ["id"]
indexes = inspector.get_indexes("customer")
assert [(i["column_names"], i["unique"]) for i in indexes] == [(["name"], False)], indexes

# A server-side default and ON UPDATE as models declare them (server_default=func.now(),
# a text default), reflected back with their defaults.
from sqlalchemy import DateTime, MetaData, Table  # noqa: E402

stamps = Table(
    "stamps", MetaData(),
    Column("id", Integer, primary_key=True),
    Column("note", String(10), server_default="none"),
    Column("created", DateTime, server_default=func.now()),
    Column("changed", DateTime,
           server_default=text("CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP")),
)
stamps.metadata.create_all(engine)
with engine.begin() as connection:
    connection.execute(stamps.insert().values(id=1))
    row = connection.execute(select(stamps)).one()
    assert row.note == "none" and row.created is not None and row.changed is not None, row
    connection.execute(stamps.update().values(changed="2020-01-01 00:00:00"))
    connection.execute(stamps.update().values(note="new"))
    assert connection.execute(select(stamps.c.changed)).scalar().year > 2020
reflected = {c["name"]: c["default"] for c in inspector.get_columns("stamps")}
assert reflected["created"] == "CURRENT_TIMESTAMP" and reflected["note"] == "'none'", reflected

print("sqlalchemy ok")
