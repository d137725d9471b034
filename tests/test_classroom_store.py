"""The class store, run for real against BOTH backends (conftest's ``backend`` and ``store``): SQLite (a
file in tmp_path) and Redis (a ``redis-server`` started for this module; `.ci/run` installs it, so in
CI these tests run and never skip): what it keeps, for how long, and for whom. Races are run with
threads and with two store objects on the same backend (two replicas). The rules a Classroom keeps
on top of it: tests/test_classroom_rules.py."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from attnviz.classroom import ClassRecord, Classroom, Phase, sqlite_store
from attnviz.classroom import secret as sec
from attnviz.classroom.backend import open_store
from attnviz.classroom.redis_store import RedisStore
from attnviz.classroom.sqlite_store import SQLiteStore
from tests.class_steps import classic_question, make_record

N_SLIDES = 12


def test_create_then_load_gives_the_record(store):
    record = make_record(example="p=classic&s=2x3x5")
    assert store.create(record)
    assert store.load(record.code, time.time()) == record


def test_create_refuses_a_taken_code(store):
    assert store.create(make_record())
    assert not store.create(make_record(slide=5))
    assert store.load("ACDEFGHJK", time.time()).slide == 1


def test_load_of_an_unknown_code_is_none(store):
    assert store.load("ACDEFGHJK", time.time()) is None


def test_an_expired_class_is_gone_with_its_data(store):
    record = make_record()
    store.create(record)
    store.join(record.code, "s" * 16, "", time.time(), 10)
    assert store.load(record.code, record.expires + 1) is None
    assert store.members(record.code) == {}
    assert store.load(record.code, time.time()) is None  # deleted, not only hidden


def test_purge_deletes_expired_classes_and_keeps_live_ones(store):
    now = time.time()
    store.create(make_record("ACDEFGHJK", expires=now + 10))
    store.create(make_record("ACDEFGHJM", expires=now + 7200))
    store.join("ACDEFGHJK", "s" * 16, "", now, 10)
    assert store.purge(now + 60) == 1
    assert store.members("ACDEFGHJK") == {}
    assert store.load("ACDEFGHJM", now + 60) is not None


def test_update_needs_the_teacher_token_hash(store):
    record = make_record()
    store.create(record)
    assert store.update(record.code, sec.token_hash("x" * 32), time.time(), slide=7) is None
    assert store.load(record.code, time.time()).slide == 1


def test_update_changes_only_what_is_given_and_bumps_the_version(store):
    record = make_record()
    store.create(record)
    now = time.time()
    after = store.update(record.code, record.token_hash, now, question="trap", phase=Phase.OPEN)
    assert (after.slide, after.question, after.phase, after.version) == (1, "trap", Phase.OPEN, 1)
    after = store.update(record.code, record.token_hash, now, slide=3)
    assert (after.slide, after.question, after.version) == (3, "trap", 2)


def test_join_stops_at_the_most_members_but_lets_a_member_rename(store):
    record = make_record()
    store.create(record)
    now = time.time()
    assert store.join(record.code, "a" * 16, "Ann", now, 2)
    assert store.join(record.code, "b" * 16, "", now, 2)
    assert not store.join(record.code, "c" * 16, "", now, 2)
    assert store.join(record.code, "a" * 16, "Anna", now, 2)
    assert store.members(record.code) == {"a" * 16: "Anna", "b" * 16: ""}


def test_a_member_who_rejoins_without_a_name_keeps_it(store):
    record = make_record()
    store.create(record)
    now = time.time()
    assert store.join(record.code, "a" * 16, "Bob", now, 10)
    for _ in range(3):  # a reload, a second tab, a reconnect: the same student, no name typed
        assert store.join(record.code, "a" * 16, "", now, 10)
    assert store.members(record.code) == {"a" * 16: "Bob"}
    assert store.join(record.code, "a" * 16, "Robert", now, 10)  # a new name replaces it
    assert store.members(record.code) == {"a" * 16: "Robert"}


def test_present_counts_the_teacher_sessions_seen_in_the_window(store):
    record = make_record()
    store.create(record)
    now = time.time()
    assert store.present(record.code, "one", now, 5) == 1
    assert store.present(record.code, "one", now + 1, 5) == 1  # the same session again
    assert store.present(record.code, "two", now + 2, 5) == 2
    assert store.present(record.code, "two", now + 7, 5) == 1  # "one" was last seen at now + 1
    assert store.present("ACDEFGHJM", "one", now, 5) == 0  # no such class
    assert store.present(record.code, "one", record.expires + 1, 5) == 0  # expired


def test_rekey_needs_the_current_hash_and_forgets_the_sessions(store):
    record = make_record()
    store.create(record)
    now, new = time.time(), sec.token_hash("n" * 32)
    store.present(record.code, "one", now, 5)
    store.present(record.code, "two", now, 5)
    assert not store.rekey(record.code, sec.token_hash("x" * 32), new, now)  # a forged hash
    assert store.load(record.code, now).token_hash == record.token_hash
    assert store.rekey(record.code, record.token_hash, new, now)
    assert store.load(record.code, now).token_hash == new
    assert store.update(record.code, record.token_hash, now, slide=4) is None  # the old one
    assert store.update(record.code, new, now, slide=4).slide == 4
    assert store.present(record.code, "two", now + 1, 5) == 1  # "one" is forgotten
    assert store.load(record.code, now) == ClassRecord(
        **{**record.__dict__, "token_hash": new, "slide": 4, "version": 1}
    )  # the sessions are not part of the record
    assert not store.rekey("ACDEFGHJM", new, record.token_hash, now)


def test_answers_count_only_while_the_question_is_open_and_from_members(store):
    record = make_record()
    store.create(record)
    now, student = time.time(), "a" * 16
    store.join(record.code, student, "", now, 10)
    assert not store.answer(record.code, "trap", student, "2", now)  # nothing open yet
    store.update(record.code, record.token_hash, now, question="trap", phase=Phase.OPEN)
    assert not store.answer(record.code, "sum_axis", student, "1", now)  # another question
    assert not store.answer(record.code, "trap", "z" * 16, "2", now)  # not a member
    assert store.answer(record.code, "trap", student, "0", now)
    assert store.answer(record.code, "trap", student, "2", now)  # changed before the reveal
    store.update(record.code, record.token_hash, now, phase=Phase.REVEALED)
    assert not store.answer(record.code, "trap", student, "1", now)  # frozen after it
    assert store.answers(record.code, "trap") == {student: "2"}


def test_delete_removes_the_class_its_members_and_answers(store):
    record = make_record()
    store.create(record)
    now = time.time()
    store.join(record.code, "a" * 16, "", now, 10)
    store.update(record.code, record.token_hash, now, question="trap", phase=Phase.OPEN)
    store.answer(record.code, "trap", "a" * 16, "2", now)
    store.present(record.code, "one", now, 5)
    assert store.delete(record.code)
    assert store.load(record.code, now) is None
    assert store.create(record)  # a class of the same code starts with no teacher sessions
    assert store.present(record.code, "two", now, 5) == 1
    assert store.delete(record.code)
    assert store.members(record.code) == {} and store.answers(record.code, "trap") == {}
    assert not store.delete(record.code)


def test_hit_counts_per_window(store):
    now = float(int(time.time()) // 60 * 60 + 5)
    assert [store.hit("k", 60, now) for _ in range(3)] == [1, 2, 3]
    assert store.count("k", 60, now) == 3
    assert store.hit("k", 60, now + 60) == 1
    assert store.count("other", 60, now) == 0


def test_two_answers_at_once_from_two_replicas_both_count(backend):
    _, make = backend
    stores = [make(), make()]
    record = make_record()
    stores[0].create(record)
    now = time.time()
    students = [f"{i:016d}" for i in range(40)]
    for s in students:
        stores[0].join(record.code, s, "", now, 100)
    stores[0].update(record.code, record.token_hash, now, question="trap", phase=Phase.OPEN)
    barrier = threading.Barrier(len(students))

    def answer(i: int) -> None:
        barrier.wait()
        assert stores[i % 2].answer(record.code, "trap", students[i], str(i % 4), now)

    threads = [threading.Thread(target=answer, args=(i,)) for i in range(len(students))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = stores[1].answers(record.code, "trap")
    assert got == {s: str(i % 4) for i, s in enumerate(students)}


def test_teacher_moving_while_students_poll_loses_no_move(backend):
    _, make = backend
    teacher, poller = make(), make()
    record = make_record()
    teacher.create(record)
    seen: list[tuple[int, int]] = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            r = poller.load(record.code, time.time())
            seen.append((r.version, r.slide))

    threads = [threading.Thread(target=poll) for _ in range(3)]
    for t in threads:
        t.start()
    for slide in range(1, 41):
        assert teacher.update(record.code, record.token_hash, time.time(), slide=slide % 12 + 1)
    done.set()
    for t in threads:
        t.join()
    final = poller.load(record.code, time.time())
    assert (final.version, final.slide) == (40, 40 % 12 + 1)
    assert all(slide == v % 12 + 1 for v, slide in seen if v)  # every read is one whole move


def test_a_poll_per_thread_reuses_one_sqlite_connection(tmp_path):
    """Streamlit runs every rerun (each poll of a following class) in a new thread: the store
    must not open a connection per thread and keep it (a replica grew by 4 MiB a second)."""
    store = SQLiteStore(tmp_path / "classes.sqlite3")
    record = make_record()
    store.create(record)
    for _ in range(50):  # fifty polls, one after another, each in a thread of its own
        t = threading.Thread(target=store.load, args=(record.code, time.time()))
        t.start()
        t.join()
    assert store.opened == 1
    store.close()


def test_a_burst_keeps_at_most_a_few_sqlite_connections_open(tmp_path):
    store = SQLiteStore(tmp_path / "classes.sqlite3")
    record = make_record()
    store.create(record)
    barrier = threading.Barrier(30)

    def poll() -> None:
        barrier.wait()
        for _ in range(5):
            assert store.load(record.code, time.time()) == record

    threads = [threading.Thread(target=poll) for _ in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Never more open at once than operations at once (thirty threads, one operation each at a
    # time); a thread that gives one back to a full pool closes it and may open another later, so
    # ``opened`` itself may pass thirty. Afterwards only the pool's few stay open.
    assert 1 <= store.peak <= 30 and len(store._idle) <= sqlite_store.MAX_IDLE
    assert store.open_now == len(store._idle)
    idle = list(store._idle)
    store.close()
    for db in idle:  # closed with the store
        with pytest.raises(sqlite3.ProgrammingError):
            db.execute("SELECT 1")
    assert store.open_now == 0
    with pytest.raises(sqlite3.ProgrammingError):
        store.load(record.code, time.time())


def test_a_failed_write_hands_on_no_open_transaction(tmp_path):
    store = SQLiteStore(tmp_path / "classes.sqlite3")
    record = make_record()
    store.create(record)
    with pytest.raises(ZeroDivisionError), store._tx() as db:
        db.execute("DELETE FROM classes")
        raise ZeroDivisionError
    with store._db() as db:  # the same connection, back from the pool
        assert not db.in_transaction
    assert store.load(record.code, time.time()) == record  # the delete was rolled back
    store.close()


def test_a_restart_keeps_the_class_its_slide_and_its_answers(backend, request):
    kind, make = backend
    store = make()
    room = Classroom(store)
    started = room.start()
    room.move(started.code, started.token, 10, N_SLIDES)
    room.join(started.code, "a" * 16)
    room.ask(started.code, started.token, classic_question("trap"))
    room.answer(started.code, "a" * 16, classic_question("trap"), "2")
    store.close()
    if kind == "redis":
        server = request.getfixturevalue("redis_server")
        server.stop()
        server.start()
    after = Classroom(make())
    record = after.state(started.code)
    assert (record.slide, record.question, record.phase) == (10, "trap", Phase.OPEN)
    assert after.tally(started.code, classic_question("trap")).counts == (("2", 1),)
    assert after.is_teacher(started.code, started.token)


def test_open_store_picks_sqlite_under_the_data_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNVIZ_CLASS_STORE", raising=False)
    monkeypatch.setenv("ATTNVIZ_DATA_DIR", str(tmp_path / "new" / "dir"))
    store = open_store()
    try:
        assert isinstance(store, SQLiteStore)
        assert (tmp_path / "new" / "dir" / "classes.sqlite3").exists()
        with store._db() as db:
            mode = db.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode.lower() == "wal"
    finally:
        store.close()


def test_open_store_picks_redis_from_the_environment(redis_server, monkeypatch):
    # the module's server is shared with the tests before this one (on this worker): emptied first
    RedisStore(redis_server.url)._r.flushdb()
    monkeypatch.setenv("ATTNVIZ_CLASS_STORE", redis_server.url)
    store, there = open_store(), RedisStore(redis_server.url)
    try:
        assert isinstance(store, RedisStore) and store.load("ACDEFGHJK", time.time()) is None
        assert store.create(make_record())
        assert there.load("ACDEFGHJK", time.time()) is not None  # it is that server's
    finally:
        store.close()
        there.close()
