"""The end of a class leaves nothing of it in the store's files, on both stores for real: an SQLite
file (its folder: the database, its write-ahead log and shared-memory index) and a redis-server with
an append-only file (scripts/redis_server.py: ``appendonly yes``, ``appendfsync
always``, no RDB snapshots), whose folder is searched. A class is started, students join with names
and answer; the files are searched byte for byte for the class code, the student ids, their names,
the teacher token and its hash: found before the end (the search can find them), none after. A
second class that goes on is still there. (The HAProxy log and Streamlit's logs after a class:
tests/test_serving.py.)"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from attnviz import examples
from attnviz.classroom import Classroom, Limits, questions
from attnviz.classroom import secret as sec
from attnviz.classroom.redis_store import RedisStore
from attnviz.classroom.sqlite_store import SQLiteStore

NAMES = ("Alice Quinton", "Bob Marchetti", "Chidi Okafor")
STAYING = ("Dana Whitfield", "Emeka Obi", "Farah Nasser")  # the class that goes on
WAIT_S = 60  # for Redis's background rewrite on a busy machine; nothing here measures speed


@pytest.fixture(params=["sqlite", "redis"])
def kept(request, tmp_path):
    """(store, folder, settled): a store, the folder that holds its files, and a wait for the
    store's background writing to finish (Redis's rewrite; nothing for SQLite)."""
    if request.param == "sqlite":
        store = SQLiteStore(tmp_path / "data" / "classes.sqlite3")
        yield store, tmp_path / "data", lambda: None
    else:
        server = request.getfixturevalue("redis_server")
        store = RedisStore(server.url)
        store._r.flushall()
        yield store, server.folder, lambda: _rewritten(store)
    store.close()


def _rewritten(store: RedisStore) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        info = store._r.info("persistence")
        if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
            return
        time.sleep(0.1)
    raise AssertionError(f"Redis still rewriting its append-only file after {WAIT_S} s")


def found(folder: Path, needles: list[str]) -> set[str]:
    """Which needles appear, byte for byte, in any file under folder."""
    blobs = [p.read_bytes() for p in folder.rglob("*") if p.is_file()]
    return {n for n in needles if any(n.encode() in b for b in blobs)}


def _until_none(folder: Path, needles: list[str]) -> set[str]:
    """Until no needle is in the files (Redis deletes an old append-only file once its rewrite
    is in place), or the deadline: what is still found."""
    deadline = time.monotonic() + WAIT_S
    while (left := found(folder, needles)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _a_class_with_answers(
    room: Classroom, names: tuple[str, ...] = NAMES
) -> tuple[str, str, list[str]]:
    """A class whose students joined with names and answered an open question (each answer
    counted under a rate-limit key that names the class and the student)."""
    started = room.start(client="203.0.113.9")
    question = questions(*examples.classic())[0]
    students = [sec.new_student() for _ in names]
    for student, name in zip(students, names, strict=True):
        room.join(started.code, student, name)
    room.ask(started.code, started.token, question)
    for student in students:
        room.answer(started.code, student, question, question.answer)
    room.reveal(started.code, started.token)
    return started.code, started.token, students


def _clock():
    moment = float((int(time.time()) // 60 + 5) * 60 + 1)  # mid-window: no counter rolls over
    return lambda: moment


def test_an_ended_class_leaves_nothing_in_the_stores_files(kept):
    store, folder, settled = kept
    room = Classroom(store, Limits(), clock=_clock())
    code, token, students = _a_class_with_answers(room)
    other, _, others = _a_class_with_answers(room, STAYING)
    needles = [code, *students, *NAMES, token, sec.token_hash(token)]
    settled()
    assert found(folder, [code, *students, *NAMES]) == {code, *students, *NAMES}

    room.end(code, token)
    settled()
    assert _until_none(folder, needles) == set()
    assert store.members(other) == dict(zip(others, STAYING, strict=True))
    assert other in found(folder, [other])


def test_an_ended_class_takes_its_rate_limit_counters_and_keeps_the_others(kept):
    store, _, _ = kept
    clock = _clock()
    room = Classroom(store, Limits(), clock=clock)
    code, token, students = _a_class_with_answers(room)
    key = f"answer:{code}:{students[0]}"
    assert store.count(key, 60, clock()) == 1
    room.end(code, token)
    assert store.count(key, 60, clock()) == 0
    assert store.count("start:203.0.113.9", 3600, clock()) == 1  # names no class: kept


def test_an_expired_class_purged_leaves_nothing_in_the_stores_files(kept):
    store, folder, settled = kept
    moment = [float((int(time.time()) // 60 + 5) * 60 + 1)]
    room = Classroom(store, Limits(ttl_s=120), clock=lambda: moment[0])
    code, token, students = _a_class_with_answers(room)
    settled()
    assert code in found(folder, [code])
    moment[0] += 600
    assert store.purge(moment[0]) == 1
    settled()
    assert _until_none(folder, [code, *students, *NAMES, token]) == set()
