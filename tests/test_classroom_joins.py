"""Who gets into a class, run for real on BOTH stores (conftest's backend and store): a right
code always joins whatever wrong codes came before, one address cannot fill a class or lock out a
school behind it, the teacher removes a member or closes the class, and text that does not parse
is a refusal of kind BAD_INPUT (the page shows it), never another error."""

from __future__ import annotations

import sqlite3

import pytest

from attnviz.classroom import ClassError, Phase, Problem
from attnviz.classroom.sqlite_store import SQLiteStore
from tests.class_steps import classic_question, make_record, make_room, mid_window_clock


def _ids(prefix: str, n: int) -> list[str]:
    """n distinct student ids (16 url-safe characters)."""
    return [f"{prefix}{i:0{16 - len(prefix)}d}" for i in range(n)]


def _wrong(code: str) -> str:
    return "ACD-EFG-HJK" if code != "ACDEFGHJK" else "ACD-EFG-HJM"


def _refused(problem: Problem, call, *args, **kwargs) -> None:
    with pytest.raises(ClassError) as e:
        call(*args, **kwargs)
    assert e.value.problem is problem, e.value


# ---- failed joins lock out no one innocent -------------------------------------------------------


def test_a_right_code_from_a_fresh_address_joins_whatever_wrong_codes_came_before(store):
    room = make_room(store, mid_window_clock(), failed_joins_per_min=20)
    started = room.start(client="teacher")
    for i in range(10):  # ten addresses, two wrong codes each: the server-wide count is used up
        for _ in range(2):
            _refused(Problem.NO_CLASS, room.join, _wrong(started.code), "a" * 16, client=f"g{i}")
    _refused(Problem.RATE_LIMITED, room.join, _wrong(started.code), "a" * 16, client="fresh")
    assert room.join(started.code, "b" * 16, client="fresh") == started.code


def test_a_school_behind_one_address_joins_after_one_of_it_guessed(store):
    room = make_room(store, mid_window_clock(), failed_joins_per_client_per_min=3)
    started = room.start(client="school")  # the teacher is behind the same NAT address
    for _ in range(3):
        _refused(Problem.NO_CLASS, room.join, _wrong(started.code), "x" * 16, client="school")
    for student in _ids("s", 5):
        assert room.join(started.code, student, client="school") == started.code
    assert room.members(started.code) == 5


def test_a_school_whose_members_came_first_joins_after_one_of_it_guessed(store):
    room = make_room(store, mid_window_clock(), failed_joins_per_client_per_min=3)
    started = room.start(client="home")  # the teacher started it elsewhere
    first, *rest = _ids("s", 4)
    room.join(started.code, first, client="school")
    for _ in range(3):
        _refused(Problem.NO_CLASS, room.join, _wrong(started.code), "x" * 16, client="school")
    for student in rest:
        assert room.join(started.code, student, client="school") == started.code


def test_guesses_count_for_their_address_while_the_server_is_over_its_count(store):
    room = make_room(
        store, mid_window_clock(), failed_joins_per_min=2, failed_joins_per_client_per_min=3
    )
    started = room.start(client="teacher")
    for i in range(2):
        _refused(Problem.NO_CLASS, room.join, _wrong(started.code), "x" * 16, client=f"g{i}")
    for _ in range(3):  # the server's count is used up: refused, and counted for the address
        _refused(Problem.RATE_LIMITED, room.join, _wrong(started.code), "x" * 16, client="guess")
    _refused(Problem.RATE_LIMITED, room.join, started.code, "x" * 16, client="guess")
    assert room.join(started.code, "y" * 16, client="fresh") == started.code


def test_an_address_over_its_limit_is_told_the_same_of_any_class_it_does_not_know(store):
    room = make_room(store, mid_window_clock(), failed_joins_per_client_per_min=2)
    started = room.start(client="teacher")
    for _ in range(2):
        _refused(Problem.NO_CLASS, room.join, _wrong(started.code), "x" * 16, client="guesser")
    for typed in (_wrong(started.code), started.code):
        with pytest.raises(ClassError) as e:
            room.join(typed, "x" * 16, client="guesser")
        assert (e.value.problem, str(e.value)) == (
            Problem.RATE_LIMITED,
            "Too many tries; wait a minute and retry.",
        )


# ---- a class belongs to its students --------------------------------------------------------------


def test_one_address_cannot_fill_a_class(store):
    room = make_room(store, mid_window_clock(), max_members=10, members_per_client=4)
    started = room.start(client="teacher")
    joined = 0
    for student in _ids("f", 20):
        try:
            room.join(started.code, student, client="flood")
            joined += 1
        except ClassError as e:
            assert e.problem is Problem.FULL
    assert joined == 4
    for i, student in enumerate(_ids("s", 6)):  # the rest of the class is the other students'
        assert room.join(started.code, student, client=f"school{i % 2}") == started.code
    _refused(Problem.FULL, room.join, started.code, "z" * 16, client="third")


def test_new_members_are_limited_per_address_and_rejoining_counts_nothing(store):
    room = make_room(store, mid_window_clock(), joins_per_client_per_min=3)
    started = room.start(client="teacher")
    first, *others = _ids("s", 4)
    room.join(started.code, first, client="one")
    for _ in range(10):  # a member's tabs and reloads
        assert room.join(started.code, first, client="one") == started.code
    for student in others[:2]:
        room.join(started.code, student, client="one")
    _refused(Problem.RATE_LIMITED, room.join, started.code, others[2], client="one")
    assert room.join(started.code, others[2], client="two") == started.code


def test_new_members_are_limited_per_class(store):
    room = make_room(store, mid_window_clock(), joins_per_class_per_min=4)
    started = room.start(client="teacher")
    for i, student in enumerate(_ids("s", 4)):
        room.join(started.code, student, client=f"c{i}")
    _refused(Problem.RATE_LIMITED, room.join, started.code, "y" * 16, client="fresh")
    other = room.start(client="teacher")  # another class's count is its own
    assert room.join(other.code, "y" * 16, client="fresh") == other.code


def test_a_closed_class_takes_no_new_students_but_its_members_return(store):
    room = make_room(store, mid_window_clock())
    started = room.start(client="teacher")
    room.join(started.code, "a" * 16, "Ann", client="school")
    _refused(Problem.NOT_TEACHER, room.set_joining, started.code, "b" * 32, False)
    assert room.set_joining(started.code, started.token, False).joining is False
    _refused(Problem.CLOSED, room.join, started.code, "b" * 16, client="school")
    assert room.join(started.code, "a" * 16, client="school") == started.code
    assert room.roster(started.code) == (1, ("Ann",))
    assert room.set_joining(started.code, started.token, True).joining is True
    assert room.join(started.code, "b" * 16, client="school") == started.code


def test_a_removed_member_loses_their_answers_and_cannot_come_back(store):
    room = make_room(store, mid_window_clock())
    started = room.start(client="teacher")
    q = classic_question("result_shape")
    fake, real = "f" * 16, "r" * 16
    for student in (fake, real):
        room.join(started.code, student, client="school")
    room.ask(started.code, started.token, q)
    room.answer(started.code, fake, q, "(2, 3)")
    room.answer(started.code, real, q, q.answer)
    _refused(Problem.NOT_TEACHER, room.remove, started.code, "b" * 32, fake)
    assert room.remove(started.code, started.token, fake) is True
    assert room.tally(started.code, q).total == 1
    assert room.member_list(started.code, started.token) == ((real, ""),)
    _refused(Problem.REMOVED, room.join, started.code, fake, client="school")
    _refused(Problem.NOT_OPEN, room.answer, started.code, fake, q, "(2, 3)")
    assert room.remove(started.code, started.token, fake) is False


def test_only_the_teacher_sees_the_members_ids(store):
    room = make_room(store, mid_window_clock())
    started = room.start(client="teacher")
    for student, name in (("b" * 16, "bo"), ("a" * 16, ""), ("c" * 16, "Al")):
        room.join(started.code, student, name, client="school")
    assert room.member_list(started.code, started.token) == (
        ("c" * 16, "Al"),
        ("b" * 16, "bo"),
        ("a" * 16, ""),
    )
    _refused(Problem.NOT_TEACHER, room.member_list, started.code, "a" * 16)


@pytest.mark.parametrize(
    "name, student",
    [("x" * 41, "a" * 16), ("a\x00b", "a" * 16), (b"Ann", "a" * 16), ("Ann", "short")],
)
def test_a_name_or_id_that_does_not_parse_is_bad_input(store, name, student):
    room = make_room(store, mid_window_clock())
    started = room.start(client="teacher")
    _refused(Problem.BAD_INPUT, room.join, started.code, student, name, client="school")
    assert room.members(started.code) == 0


def test_a_pasted_zero_width_space_joins_with_the_name_without_it(store):
    room = make_room(store, mid_window_clock())
    started = room.start(client="teacher")
    room.join(started.code, "a" * 16, "Ana\u200bMaria", client="school")
    assert room.roster(started.code) == (1, ("AnaMaria",))


# ---- the stores ----------------------------------------------------------------------------------


def test_a_store_keeps_whether_a_class_takes_new_students(store):
    record = make_record()
    store.create(record)
    now = record.created
    assert store.load(record.code, now).joining is True
    closed = store.update(record.code, record.token_hash, now, joining=False)
    assert closed.joining is False and closed.version == 1
    assert not store.join(record.code, "a" * 16, "", now, 10)
    assert store.update(record.code, record.token_hash, now, slide=2).joining is False
    assert store.update(record.code, record.token_hash, now, joining=True).joining is True
    assert store.join(record.code, "a" * 16, "", now, 10)


def test_a_store_removes_a_member_and_their_answers_only(store):
    record = make_record()
    store.create(record)
    now = record.created
    for student in ("a" * 16, "b" * 16):
        store.join(record.code, student, "", now, 10)
    for q in ("q1", "q2"):
        store.update(record.code, record.token_hash, now, question=q, phase=Phase.OPEN)
        for student in ("a" * 16, "b" * 16):
            assert store.answer(record.code, q, student, "1", now)
    assert store.remove(record.code, "a" * 16)
    assert not store.remove(record.code, "a" * 16)
    assert store.members(record.code) == {"b" * 16: ""}
    assert store.answers(record.code, "q1") == store.answers(record.code, "q2") == {"b" * 16: "1"}


def test_an_sqlite_file_from_before_closing_classes_opens_with_classes_open(tmp_path):
    path = tmp_path / "classes.sqlite3"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE classes (code TEXT PRIMARY KEY, token_hash TEXT NOT NULL, created REAL NOT "
        "NULL, expires REAL NOT NULL, slide INTEGER NOT NULL, question TEXT NOT NULL, phase TEXT "
        "NOT NULL, version INTEGER NOT NULL, example TEXT NOT NULL)"
    )
    r = make_record()
    db.execute(
        "INSERT INTO classes VALUES (?, ?, ?, ?, 3, '', 'none', 0, '')",
        (r.code, r.token_hash, r.created, r.expires),
    )
    db.commit()
    db.close()
    old = SQLiteStore(path)
    try:
        loaded = old.load(r.code, r.created)
        assert (loaded.slide, loaded.joining) == (3, True)
        assert old.join(r.code, "a" * 16, "", r.created, 10)
    finally:
        old.close()
