"""attnviz.bench.turns: whose benchmark runs next. Real threads, no worker process, no timing:
every wait is on an event the test sets."""

from __future__ import annotations

import threading

import pytest

from attnviz import AttnvizError
from attnviz.bench.turns import PER_SOURCE, Turns, wait_words


class Job:
    """A caller in its own thread: enters, records its turn, holds it until released."""

    def __init__(self, turns: Turns, order: list, name: str, source: str | None, owner=None):
        self.turns, self.order, self.name = turns, order, name
        self.running, self.release, self.error = threading.Event(), threading.Event(), None
        self.thread = threading.Thread(target=self._go, args=(source, owner), daemon=True)

    def _go(self, source, owner) -> None:
        try:
            ticket = self.turns.enter(owner, source, expected_s=10.0)
        except AttnvizError as e:
            self.error = str(e)
            self.running.set()
            return
        self.order.append(self.name)
        self.running.set()
        assert self.release.wait(60)
        self.turns.leave(ticket)

    def start(self) -> Job:
        self.thread.start()
        return self

    def finish(self) -> None:
        self.release.set()
        self.thread.join(60)


def _queued(turns: Turns, n: int) -> None:
    """Wait until n jobs wait (the queue's own state, not a sleep)."""
    for _ in range(6000):
        if turns.waiting == n:
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"{turns.waiting} waiting, expected {n}")


def test_one_visitor_with_many_tabs_holds_at_most_one_running_and_one_waiting():
    turns, order = Turns(max_waiting=3), []
    first = Job(turns, order, "a1", "10.0.0.1").start()
    assert first.running.wait(60)
    second = Job(turns, order, "a2", "10.0.0.1").start()
    _queued(turns, 1)
    with pytest.raises(AttnvizError, match="already have a benchmark running and one waiting"):
        turns.enter(None, "10.0.0.1", 10.0)
    assert PER_SOURCE == 2
    first.finish()
    second.finish()
    assert order == ["a1", "a2"]


def test_another_visitor_gets_the_next_turn_before_a_resubmission():
    """Mallory's second job waited first, yet Bob, who came later, runs next."""
    turns, order = Turns(max_waiting=3), []
    m1 = Job(turns, order, "m1", "mallory").start()
    assert m1.running.wait(60)
    m2 = Job(turns, order, "m2", "mallory").start()
    _queued(turns, 1)
    bob = Job(turns, order, "bob", "bob").start()
    _queued(turns, 2)
    m1.finish()
    assert bob.running.wait(60)
    bob.finish()
    m2.finish()
    assert order == ["m1", "bob", "m2"]


def test_a_full_queue_says_busy_and_about_how_long_to_wait():
    turns, order = Turns(max_waiting=1), []
    running = Job(turns, order, "r", "a").start()
    assert running.running.wait(60)
    waiting = Job(turns, order, "w", "b").start()
    _queued(turns, 1)
    with pytest.raises(AttnvizError, match=r"busy \(1 jobs waiting\); try again in about \d+ s"):
        turns.enter(None, "c", 10.0)
    running.finish()
    waiting.finish()


def test_a_session_has_one_job_at_a_time():
    turns, order = Turns(max_waiting=3), []
    job = Job(turns, order, "s", "a", owner="session-1").start()
    assert job.running.wait(60)
    with pytest.raises(AttnvizError, match="previous benchmark is still waiting or running"):
        turns.enter("session-1", "b", 10.0)
    job.finish()
    turns.leave(turns.enter("session-1", "a", 10.0))  # free again


@pytest.mark.parametrize(
    ("seconds", "words"), [(0, "5 s"), (22, "20 s"), (88, "90 s"), (400, "7 min")]
)
def test_waits_are_said_as_a_person_would(seconds, words):
    assert wait_words(seconds) == words
