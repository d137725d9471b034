"""The rules a Classroom keeps on each store, for real on BOTH backends (conftest's ``backend`` and
``store``: SQLite and a redis-server): only the teacher's token moves, opens, reveals, closes, ends
or rotates; a student answers once, changeable until the reveal; an ended or expired class is gone;
joins, starts and answers are rate-limited per client, per student and for the whole server, and
across replicas. (Who gets into a class: tests/test_classroom_joins.py.)"""

from __future__ import annotations

import time

import pytest

from attnviz.classroom import ClassError, Classroom, Limits, Phase, Problem
from attnviz.classroom import secret as sec
from attnviz.classroom.redis_store import RedisStore
from attnviz.classroom.service import PRESENT_S
from scripts.redis_server import free_port
from tests.class_steps import classic_question, make_room, mid_window_clock

N_SLIDES = 12


def test_only_the_teacher_token_moves_the_class(store):
    room = make_room(store)
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
    room = make_room(store)
    started = room.start()
    with pytest.raises(ClassError) as e:
        room.move(started.code, started.token, slide, N_SLIDES)
    assert e.value.problem is Problem.BAD_INPUT


def test_only_the_teacher_opens_reveals_closes_and_ends(store):
    room = make_room(store)
    started = room.start()
    q, forged = classic_question("sum_axis"), sec.new_token()
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
    room = make_room(store)
    started = room.start()
    q = classic_question("unsqueeze_shape")
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
    room = make_room(store)
    started = room.start()
    room.join(started.code, "a" * 16)
    room.end(started.code, started.token)
    with pytest.raises(ClassError) as e:
        room.state(started.code)
    assert e.value.problem is Problem.NO_CLASS
    assert store.members(started.code) == {}


def test_rotating_the_token_refuses_the_old_one_at_once(store):
    room = make_room(store)
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
    room = make_room(make())
    started = room.start()
    if kind == "sqlite":
        gone = make()
        gone.close()  # every operation now fails as a store that cannot be reached
    else:
        gone = RedisStore(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    cut = make_room(gone)
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
    room = make_room(store, mid_window_clock(), failed_joins_per_client_per_min=3)
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
    room = make_room(store, mid_window_clock(), failed_joins_per_min=4)
    for i in range(4):
        with pytest.raises(ClassError) as e:
            room.join("ACD-EFG-HJK", "a" * 16, client=f"c{i}")
        assert e.value.problem is Problem.NO_CLASS
    with pytest.raises(ClassError) as e:
        room.join("ACD-EFG-HJK", "a" * 16, client="fresh")
    assert e.value.problem is Problem.RATE_LIMITED


@pytest.mark.parametrize("typed", ["ACD-EFG", "ACD-EFG-HJKK", "ACD-EFG-HJ0", "bad code", ""])
def test_a_code_of_the_wrong_shape_is_not_a_guess(store, typed):
    room = make_room(store, mid_window_clock(), failed_joins_per_client_per_min=2)
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
    room = make_room(store, mid_window_clock())
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
    room = make_room(store, mid_window_clock(), starts_per_client_per_hour=3)
    for _ in range(3):
        room.start(client="school")
    with pytest.raises(ClassError) as e:
        room.start(client="school")
    assert e.value.problem is Problem.RATE_LIMITED
    assert room.start(client="home").code


def test_answers_are_rate_limited_per_student(store):
    room = make_room(store, mid_window_clock(), answers_per_student_per_min=5)
    started = room.start()
    q = classic_question("sum_axis")
    room.join(started.code, "a" * 16)
    room.ask(started.code, started.token, q)
    for i in range(5):
        room.answer(started.code, "a" * 16, q, str(i % 3))
    with pytest.raises(ClassError) as e:
        room.answer(started.code, "a" * 16, q, "1")
    assert e.value.problem is Problem.RATE_LIMITED


def test_the_rate_limit_holds_across_replicas(backend):
    _, make = backend
    clock = mid_window_clock()
    one = make_room(make(), clock, failed_joins_per_client_per_min=2)
    two = make_room(make(), clock)
    for room in (one, two):
        with pytest.raises(ClassError):
            room.join("ACD-EFG-HJK", "a" * 16, client="x")
    with pytest.raises(ClassError) as e:
        one.join("ACD-EFG-HJK", "a" * 16, client="x")
    assert e.value.problem is Problem.RATE_LIMITED
