"""The class store and its rules, run for real against BOTH backends: SQLite (a file in tmp_path) and
Redis (a ``redis-server`` this module starts on a free loopback port; `.ci/run` installs it, so in
CI these tests run and never skip). Races are run with threads and with two store objects on the
same backend (two replicas)."""

from __future__ import annotations

import shutil
import socket
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from attnviz import examples
from attnviz.classroom import (
    ClassError,
    ClassRecord,
    Classroom,
    Limits,
    Phase,
    Problem,
    questions,
    sqlite_store,
)
from attnviz.classroom import secret as sec
from attnviz.classroom.backend import open_store
from attnviz.classroom.redis_store import RedisStore
from attnviz.classroom.service import PRESENT_S
from attnviz.classroom.sqlite_store import SQLiteStore

REDIS = shutil.which("redis-server") or "/usr/bin/redis-server"
N_SLIDES = 12


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A redis-server on a free loopback port; with persistence (append-only file) in folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        cmd = [REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        cmd += ["--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.folder)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
            self.proc = None


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    if not Path(REDIS).exists():  # a failure, not a skip: CI installs redis-server
        pytest.fail(f"redis-server is missing at {REDIS} (apt-get install -y redis-server)")
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "redis"])
def backend(request, tmp_path):
    """(kind, make): make() opens one more store object on the same data (another replica)."""
    made = []
    if request.param == "sqlite":
        path = tmp_path / "data" / "classes.sqlite3"

        def make():
            made.append(SQLiteStore(path))
            return made[-1]
    else:
        server = request.getfixturevalue("redis_server")
        RedisStore(server.url)._r.flushdb()

        def make():
            made.append(RedisStore(server.url))
            return made[-1]

    yield request.param, make
    for store in made:
        store.close()


@pytest.fixture
def store(backend):
    return backend[1]()


def _record(code: str = "ACDEFGHJK", **kw) -> ClassRecord:
    now = time.time()
    base = {"token_hash": sec.token_hash("t" * 32), "created": now, "expires": now + 3600}
    return ClassRecord(code=code, **{**base, **kw})


def _room(store, clock=time.time, **limits) -> Classroom:
    return Classroom(store, Limits(**limits), clock=clock)


def _mid_window_clock():
    """A fixed moment a second into a minute five minutes ahead: the rate limits count in windows
    aligned to the minute, so calls made with the real clock across a minute's end (a busy machine
    makes that likelier) would start a fresh count; five minutes ahead, no key expires meanwhile."""
    moment = float((int(time.time()) // 60 + 5) * 60 + 1)
    return lambda: moment


def _question(qid: str):
    x, w = examples.classic()
    return next(q for q in questions(x, w) if q.id == qid)


# ---- the store -----------------------------------------------------------------------------------


def test_create_then_load_gives_the_record(store):
    record = _record(example="p=classic&s=2x3x5")
    assert store.create(record)
    assert store.load(record.code, time.time()) == record


def test_create_refuses_a_taken_code(store):
    assert store.create(_record())
    assert not store.create(_record(slide=5))
    assert store.load("ACDEFGHJK", time.time()).slide == 1


def test_load_of_an_unknown_code_is_none(store):
    assert store.load("ACDEFGHJK", time.time()) is None


def test_an_expired_class_is_gone_with_its_data(store):
    record = _record()
    store.create(record)
    store.join(record.code, "s" * 16, "", time.time(), 10)
    assert store.load(record.code, record.expires + 1) is None
    assert store.members(record.code) == {}
    assert store.load(record.code, time.time()) is None  # deleted, not only hidden


def test_purge_deletes_expired_classes_and_keeps_live_ones(store):
    now = time.time()
    store.create(_record("ACDEFGHJK", expires=now + 10))
    store.create(_record("ACDEFGHJM", expires=now + 7200))
    store.join("ACDEFGHJK", "s" * 16, "", now, 10)
    assert store.purge(now + 60) == 1
    assert store.members("ACDEFGHJK") == {}
    assert store.load("ACDEFGHJM", now + 60) is not None


def test_update_needs_the_teacher_token_hash(store):
    record = _record()
    store.create(record)
    assert store.update(record.code, sec.token_hash("x" * 32), time.time(), slide=7) is None
    assert store.load(record.code, time.time()).slide == 1


def test_update_changes_only_what_is_given_and_bumps_the_version(store):
    record = _record()
    store.create(record)
    now = time.time()
    after = store.update(record.code, record.token_hash, now, question="trap", phase=Phase.OPEN)
    assert (after.slide, after.question, after.phase, after.version) == (1, "trap", Phase.OPEN, 1)
    after = store.update(record.code, record.token_hash, now, slide=3)
    assert (after.slide, after.question, after.version) == (3, "trap", 2)


def test_join_stops_at_the_most_members_but_lets_a_member_rename(store):
    record = _record()
    store.create(record)
    now = time.time()
    assert store.join(record.code, "a" * 16, "Ann", now, 2)
    assert store.join(record.code, "b" * 16, "", now, 2)
    assert not store.join(record.code, "c" * 16, "", now, 2)
    assert store.join(record.code, "a" * 16, "Anna", now, 2)
    assert store.members(record.code) == {"a" * 16: "Anna", "b" * 16: ""}


def test_a_member_who_rejoins_without_a_name_keeps_it(store):
    record = _record()
    store.create(record)
    now = time.time()
    assert store.join(record.code, "a" * 16, "Bob", now, 10)
    for _ in range(3):  # a reload, a second tab, a reconnect: the same student, no name typed
        assert store.join(record.code, "a" * 16, "", now, 10)
    assert store.members(record.code) == {"a" * 16: "Bob"}
    assert store.join(record.code, "a" * 16, "Robert", now, 10)  # a new name replaces it
    assert store.members(record.code) == {"a" * 16: "Robert"}


def test_present_counts_the_teacher_sessions_seen_in_the_window(store):
    record = _record()
    store.create(record)
    now = time.time()
    assert store.present(record.code, "one", now, 5) == 1
    assert store.present(record.code, "one", now + 1, 5) == 1  # the same session again
    assert store.present(record.code, "two", now + 2, 5) == 2
    assert store.present(record.code, "two", now + 7, 5) == 1  # "one" was last seen at now + 1
    assert store.present("ACDEFGHJM", "one", now, 5) == 0  # no such class
    assert store.present(record.code, "one", record.expires + 1, 5) == 0  # expired


def test_rekey_needs_the_current_hash_and_forgets_the_sessions(store):
    record = _record()
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
    record = _record()
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
    record = _record()
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
    record = _record()
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
    record = _record()
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
    record = _record()
    store.create(record)
    for _ in range(50):  # fifty polls, one after another, each in a thread of its own
        t = threading.Thread(target=store.load, args=(record.code, time.time()))
        t.start()
        t.join()
    assert store.opened == 1
    store.close()


def test_a_burst_keeps_at_most_a_few_sqlite_connections_open(tmp_path):
    store = SQLiteStore(tmp_path / "classes.sqlite3")
    record = _record()
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
    assert 1 <= store.opened <= 30 and len(store._idle) <= sqlite_store.MAX_IDLE
    idle = list(store._idle)
    store.close()
    for db in idle:  # closed with the store
        with pytest.raises(sqlite3.ProgrammingError):
            db.execute("SELECT 1")
    with pytest.raises(sqlite3.ProgrammingError):
        store.load(record.code, time.time())


def test_a_failed_write_hands_on_no_open_transaction(tmp_path):
    store = SQLiteStore(tmp_path / "classes.sqlite3")
    record = _record()
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
    room.ask(started.code, started.token, _question("trap"))
    room.answer(started.code, "a" * 16, _question("trap"), "2")
    store.close()
    if kind == "redis":
        server = request.getfixturevalue("redis_server")
        server.stop()
        server.start()
    after = Classroom(make())
    record = after.state(started.code)
    assert (record.slide, record.question, record.phase) == (10, "trap", Phase.OPEN)
    assert after.tally(started.code, _question("trap")).counts == (("2", 1),)
    assert after.is_teacher(started.code, started.token)


# ---- the rules (Classroom) on each store -----------------------------------------------------------


def test_only_the_teacher_token_moves_the_class(store):
    room = _room(store)
    started = room.start()
    for forged in ("", "x" * 32, started.token[:-1] + "A", sec.new_token()):
        if forged == started.token:
            continue
        with pytest.raises(ClassError) as e:
            room.move(started.code, forged, 5, N_SLIDES)
        assert e.value.problem is Problem.NOT_TEACHER
    assert room.state(started.code).slide == 1
    assert room.move(started.code, started.token, 5, N_SLIDES).slide == 5


@pytest.mark.parametrize("slide", [0, 13, -1, "4", 4.0, True])
def test_a_slide_outside_the_deck_is_refused(store, slide):
    room = _room(store)
    started = room.start()
    with pytest.raises(ClassError) as e:
        room.move(started.code, started.token, slide, N_SLIDES)
    assert e.value.problem is Problem.BAD_INPUT


def test_only_the_teacher_opens_reveals_closes_and_ends(store):
    room = _room(store)
    started = room.start()
    q, forged = _question("sum_axis"), sec.new_token()
    for act in (
        lambda t: room.ask(started.code, t, q),
        lambda t: room.close_question(started.code, t),
        lambda t: room.end(started.code, t),
    ):
        with pytest.raises(ClassError) as e:
            act(forged)
        assert e.value.problem is Problem.NOT_TEACHER
    room.ask(started.code, started.token, q)
    with pytest.raises(ClassError):
        room.reveal(started.code, forged)
    assert room.state(started.code).phase is Phase.OPEN


def test_a_student_answers_once_changeable_until_the_reveal(store):
    room = _room(store)
    started = room.start()
    q = _question("unsqueeze_shape")
    code = room.join(sec.format_code(started.code).lower(), "a" * 16, "  Ann  ")
    room.ask(code, started.token, q)
    assert room.answer(code, "a" * 16, q, "[2,3]") == "(2, 3)"
    assert room.answer(code, "a" * 16, q, " (2, 3, 1) ") == "(2, 3, 1)"
    room.reveal(code, started.token)
    with pytest.raises(ClassError) as e:
        room.answer(code, "a" * 16, q, "(2, 3, 1)")
    assert e.value.problem is Problem.NOT_OPEN
    tally = room.tally(code, q)
    assert (tally.total, tally.right, tally.counts) == (1, 1, (("(2, 3, 1)", 1),))
    assert store.members(code) == {"a" * 16: "Ann"}


def test_ending_a_class_deletes_its_data(store):
    room = _room(store)
    started = room.start()
    room.join(started.code, "a" * 16)
    room.end(started.code, started.token)
    with pytest.raises(ClassError) as e:
        room.state(started.code)
    assert e.value.problem is Problem.NO_CLASS
    assert store.members(started.code) == {}


def test_rotating_the_token_refuses_the_old_one_at_once(store):
    room = _room(store)
    started = room.start()
    new = room.rotate(started.code, started.token)
    assert sec.parse_token(new) == new and new != started.token
    assert not room.is_teacher(started.code, started.token)
    for act in (
        lambda t: room.move(started.code, t, 4, N_SLIDES),
        lambda t: room.rotate(started.code, t),
        lambda t: room.present(started.code, t, "s" * 16),
        lambda t: room.end(started.code, t),
    ):
        with pytest.raises(ClassError) as e:
            act(started.token)
        assert e.value.problem is Problem.NOT_TEACHER
    assert room.move(started.code, new, 4, N_SLIDES).slide == 4
    room.end(started.code, new)
    with pytest.raises(ClassError) as e:
        room.rotate(started.code, new)
    assert e.value.problem is Problem.NO_CLASS


def test_a_second_teacher_session_is_counted_until_it_goes(store):
    clock = [time.time()]
    room = Classroom(store, clock=lambda: clock[0])
    started = room.start()
    one, two = sec.new_session(), sec.new_session()
    assert room.present(started.code, started.token, one) == 1
    assert room.present(started.code, started.token, two) == 2
    clock[0] += 1
    assert room.present(started.code, started.token, one) == 2
    clock[0] += PRESENT_S + 1  # "two" stopped reporting
    assert room.present(started.code, started.token, one) == 1
    for damaged in ("", "x" * 15, "<script>alert(1)"):
        with pytest.raises(ClassError) as e:
            room.present(started.code, started.token, damaged)
        assert e.value.problem is Problem.BAD_INPUT


def test_an_unreachable_store_is_a_refusal_that_changed_nothing(backend):
    kind, make = backend
    room = _room(make())
    started = room.start()
    if kind == "sqlite":
        gone = make()
        gone.close()  # every operation now fails as a store that cannot be reached
    else:
        gone = RedisStore(f"redis://127.0.0.1:{_free_port()}/0")  # nothing listens there
    cut = _room(gone)
    for act in (
        lambda: cut.move(started.code, started.token, 4, N_SLIDES),
        lambda: cut.state(started.code),
        lambda: cut.join(started.code, "a" * 16),
        lambda: cut.present(started.code, started.token, "s" * 16),
    ):
        with pytest.raises(ClassError) as e:
            act()
        assert e.value.problem is Problem.UNREACHABLE
        assert "try again" in str(e.value).lower()
    assert room.state(started.code).slide == 1


def test_a_class_expires_after_its_time(store):
    clock = [time.time()]
    room = Classroom(store, Limits(ttl_s=3600), clock=lambda: clock[0])
    started = room.start()
    clock[0] += 3601
    with pytest.raises(ClassError) as e:
        room.state(started.code)
    assert e.value.problem is Problem.NO_CLASS


def test_failed_joins_are_rate_limited_per_client(store):
    room = _room(store, _mid_window_clock(), failed_joins_per_client_per_min=3)
    started = room.start(client="teacher")
    wrong = "ACD-EFG-HJM" if started.code != "ACDEFGHJM" else "ACD-EFG-HJK"
    for _ in range(3):
        with pytest.raises(ClassError) as e:
            room.join(wrong, "a" * 16, client="guesser")
        assert e.value.problem is Problem.NO_CLASS
    for typed in (wrong, started.code):  # a class it is no stranger to: the same words
        with pytest.raises(ClassError) as e:
            room.join(typed, "a" * 16, client="guesser")
        assert e.value.problem is Problem.RATE_LIMITED
    assert room.join(started.code, "a" * 16, client="another") == started.code


def test_failed_joins_are_rate_limited_for_the_whole_server(store):
    room = _room(store, _mid_window_clock(), failed_joins_per_min=4)
    for i in range(4):
        with pytest.raises(ClassError) as e:
            room.join("ACD-EFG-HJK", "a" * 16, client=f"c{i}")
        assert e.value.problem is Problem.NO_CLASS
    with pytest.raises(ClassError) as e:
        room.join("ACD-EFG-HJK", "a" * 16, client="fresh")
    assert e.value.problem is Problem.RATE_LIMITED


@pytest.mark.parametrize("typed", ["ACD-EFG", "ACD-EFG-HJKK", "ACD-EFG-HJ0", "bad code", ""])
def test_a_code_of_the_wrong_shape_is_not_a_guess(store, typed):
    room = _room(store, _mid_window_clock(), failed_joins_per_client_per_min=2)
    started = room.start()
    for _ in range(5):
        with pytest.raises(ClassError) as e:
            room.join(typed, "a" * 16, client="school")
        assert e.value.problem is Problem.BAD_INPUT
    assert room.join(started.code, "a" * 16, client="school") == started.code


def test_a_class_of_300_behind_one_address_joins_despite_typos(store):
    """The default limits: one school's NAT address, a quarter of the class typing a wrong code
    (well-formed: it counts as a failed try), a few more a code of the wrong shape, then everyone
    with the right one."""
    room = _room(store, _mid_window_clock())
    started = room.start()
    code = sec.format_code(started.code)
    wrong = "ACD-EFG-HJK" if started.code != "ACDEFGHJK" else "ACD-EFG-HJM"
    students = [f"{i:016d}" for i in range(300)]
    for i, student in enumerate(students):
        if i % 4 == 0:
            with pytest.raises(ClassError) as e:
                room.join(wrong, student, client="school")
            assert e.value.problem is Problem.NO_CLASS
        if i % 7 == 0:
            with pytest.raises(ClassError) as e:
                room.join(code[:-1], student, client="school")
            assert e.value.problem is Problem.BAD_INPUT
        assert room.join(code, student, client="school") == started.code
    assert room.members(started.code) == 300


def test_starts_are_rate_limited_per_client(store):
    room = _room(store, _mid_window_clock(), starts_per_client_per_hour=3)
    for _ in range(3):
        room.start(client="school")
    with pytest.raises(ClassError) as e:
        room.start(client="school")
    assert e.value.problem is Problem.RATE_LIMITED
    assert room.start(client="home").code


def test_answers_are_rate_limited_per_student(store):
    room = _room(store, _mid_window_clock(), answers_per_student_per_min=5)
    started = room.start()
    q = _question("sum_axis")
    room.join(started.code, "a" * 16)
    room.ask(started.code, started.token, q)
    for i in range(5):
        room.answer(started.code, "a" * 16, q, str(i % 3))
    with pytest.raises(ClassError) as e:
        room.answer(started.code, "a" * 16, q, "1")
    assert e.value.problem is Problem.RATE_LIMITED


def test_the_rate_limit_holds_across_replicas(backend):
    _, make = backend
    clock = _mid_window_clock()
    one = _room(make(), clock, failed_joins_per_client_per_min=2)
    two = _room(make(), clock)
    for room in (one, two):
        with pytest.raises(ClassError):
            room.join("ACD-EFG-HJK", "a" * 16, client="x")
    with pytest.raises(ClassError) as e:
        one.join("ACD-EFG-HJK", "a" * 16, client="x")
    assert e.value.problem is Problem.RATE_LIMITED


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
    monkeypatch.setenv("ATTNVIZ_CLASS_STORE", redis_server.url)
    store = open_store()
    try:
        assert isinstance(store, RedisStore) and store.load("ACDEFGHJK", time.time()) is None
    finally:
        store.close()
