"""An application's schema and its migrations as SQLAlchemy (Debian's 1.4) and Alembic
(Debian's 1.8) run them on PyMySQL: create_all of models with foreign keys (CASCADE and
SET NULL among them), indexes and server defaults; then a second migration, in Alembic's
operations, that adds a column, an index and a foreign key while another connection
keeps writing; the ORM's cascades and the database's agree; reflection sees it all; and
drop_all takes it down in the order the keys ask for.

Run by crates/kista/tests/sql.rs with the front end's port (and, to compare, against
MariaDB by hand: `python3 sqlalchemy_migration.py PORT`).
"""
import os
import sys
import threading

os.environ.setdefault("SQLALCHEMY_SILENCE_UBER_WARNING", "1")

from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy import (
    Column, DateTime, ForeignKey, Integer, String, create_engine, func, inspect, select, text,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, declarative_base, relationship

port = sys.argv[1]
password = sys.argv[2] if len(sys.argv) > 2 else ""
server = f"mysql+pymysql://root:{password}@127.0.0.1:{port}"
with create_engine(f"{server}/", isolation_level="AUTOCOMMIT").connect() as connection:
    connection.execute(text("DROP DATABASE IF EXISTS migrations"))
    connection.execute(text("CREATE DATABASE migrations"))
# A statement that gets no answer fails with its traceback instead of hanging the test.
engine = create_engine(
    f"{server}/migrations", future=True, connect_args={"read_timeout": 60}
)
Base = declarative_base()


class Team(Base):
    __tablename__ = "team"
    id = Column(Integer, primary_key=True, autoincrement=True)
    name = Column(String(40), nullable=False, unique=True)
    created = Column(DateTime, server_default=func.now())
    members = relationship("Member", back_populates="team", passive_deletes=True)


class Member(Base):
    __tablename__ = "member"
    id = Column(Integer, primary_key=True, autoincrement=True)
    team_id = Column(Integer, ForeignKey("team.id", ondelete="CASCADE"), nullable=False, index=True)
    email = Column(String(80), nullable=False)
    team = relationship("Team", back_populates="members")


class Task(Base):
    __tablename__ = "task"
    id = Column(Integer, primary_key=True, autoincrement=True)
    title = Column(String(80), nullable=False)
    owner_id = Column(Integer, ForeignKey("member.id", ondelete="SET NULL"))
    parent_id = Column(Integer, ForeignKey("task.id"))


# Migration 1: the models as they are.
Base.metadata.create_all(engine)
with Session(engine) as session:
    red = Team(name="red", members=[Member(email="a@red"), Member(email="b@red")])
    blue = Team(name="blue", members=[Member(email="c@blue")])
    session.add_all([red, blue])
    session.flush()
    epic = Task(title="epic", owner_id=red.members[0].id)
    session.add(epic)
    session.flush()
    session.add(Task(title="part", owner_id=red.members[1].id, parent_id=epic.id))
    session.commit()

with Session(engine) as session:
    session.add(Member(team_id=999, email="nobody"))
    try:
        session.commit()
        raise AssertionError("a member of no team was accepted")
    except IntegrityError as error:
        assert error.orig.args[0] == 1452, error.orig.args

# Migration 2, while another connection keeps adding tasks.
stop = threading.Event()
written = []


def keep_writing():
    with engine.connect() as writer:
        n = 0
        while not stop.is_set():
            n += 1
            writer.execute(text("INSERT INTO task (title) VALUES (:t)"), {"t": f"bg{n}"})
            writer.commit()
            written.append(n)


thread = threading.Thread(target=keep_writing)
thread.start()
with engine.begin() as connection:
    op = Operations(MigrationContext.configure(connection))
    op.add_column("member", Column("nickname", String(40), nullable=True))
    op.create_index("ix_member_nickname", "member", ["nickname"])
    op.add_column("task", Column("reviewer_id", Integer, nullable=True))
    op.create_foreign_key("fk_task_reviewer", "task", "member", ["reviewer_id"], ["id"])
stop.set()
thread.join()
assert written, "the writer ran during the migration"

with engine.connect() as connection:
    titles = connection.execute(text("SELECT COUNT(*) FROM task WHERE title LIKE 'bg%'")).scalar()
    assert titles == len(written), (titles, len(written))
    connection.execute(text("UPDATE member SET nickname = 'ay' WHERE email = 'a@red'"))
    connection.execute(text("UPDATE task SET reviewer_id = (SELECT id FROM member WHERE email = 'c@blue') WHERE title = 'epic'"))
    connection.commit()
    try:
        connection.execute(text("UPDATE task SET reviewer_id = 4242 WHERE title = 'part'"))
        raise AssertionError("a reviewer who is no member was accepted")
    except IntegrityError as error:
        assert error.orig.args[0] == 1452, error.orig.args
    connection.rollback()

inspector = inspect(engine)
assert "nickname" in [c["name"] for c in inspector.get_columns("member")]
assert "ix_member_nickname" in [i["name"] for i in inspector.get_indexes("member")]
keys = {k["name"]: k for k in inspector.get_foreign_keys("task")}
assert keys["fk_task_reviewer"]["referred_table"] == "member", keys
assert keys["fk_task_reviewer"]["constrained_columns"] == ["reviewer_id"], keys
member_keys = inspector.get_foreign_keys("member")
assert [(k["referred_table"], k["referred_columns"], k["options"].get("ondelete"))
        for k in member_keys] == [("team", ["id"], "CASCADE")], member_keys

# The database's actions, as the ORM expects them (passive_deletes leaves them to it).
with Session(engine) as session:
    red = session.scalars(select(Team).filter_by(name="red")).one()
    blue = session.scalars(select(Team).filter_by(name="blue")).one()
    session.delete(blue)
    try:
        session.commit()
        raise AssertionError("a team whose member reviews a task was deleted")
    except IntegrityError as error:
        assert error.orig.args[0] == 1451, error.orig.args
    session.rollback()
    session.execute(text("UPDATE task SET reviewer_id = NULL"))
    session.delete(red)
    session.commit()
    assert session.execute(text("SELECT COUNT(*) FROM member WHERE team_id NOT IN "
                                "(SELECT id FROM team)")).scalar() == 0
    owners = session.execute(text("SELECT owner_id FROM task WHERE title IN ('epic', 'part')"))
    assert [row[0] for row in owners] == [None, None], "SET NULL when the owners went"

Base.metadata.drop_all(engine)
assert inspect(engine).get_table_names() == []
with create_engine(f"{server}/", isolation_level="AUTOCOMMIT").connect() as connection:
    connection.execute(text("DROP DATABASE migrations"))
print("sqlalchemy migration ok")
