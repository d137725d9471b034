"""Whose benchmark runs next: one job at a time, fairly between visitors.

- At most ``max_waiting`` jobs wait (one more is told "busy", with about how long the queue ahead
  would take);
- each ``owner`` (a session) has at most one job waiting or running;
- each ``source`` (a visitor's address) at most ``PER_SOURCE``: one running and one waiting, so
  one visitor with many tabs cannot fill the queue;
- when a job ends, the turn goes to the longest-waiting job of another source than the one just
  served, so a visitor who resubmits at once cannot keep the worker from the others.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from attnviz.errors import AttnvizError

PER_SOURCE = 2  # one job running and one waiting, at most


@dataclass(eq=False)
class Ticket:
    """A job's place: who asked, and about how long it will take."""

    number: int
    source: str | None
    owner: str | None
    expected_s: float
    started: float = 0.0


def wait_words(seconds: float) -> str:
    """A wait in words, rounded as a person would: '20 s', '3 min'."""
    if seconds < 90:
        return f"{max(5, round(seconds / 5) * 5):.0f} s"
    return f"{round(seconds / 60):.0f} min"


class Turns:
    """The queue in front of one worker. Thread-safe; ``enter`` blocks until the job's turn."""

    def __init__(self, max_waiting: int) -> None:
        self.max_waiting = max_waiting
        self._cond = threading.Condition()  # guards everything below
        self._queue: list[Ticket] = []  # waiting, in arrival order
        self._running: Ticket | None = None
        self._last_source: str | None = None
        self._owners: set[str] = set()  # owners with a job waiting or running
        self._count = 0

    @property
    def waiting(self) -> int:
        return len(self._queue)

    def ahead_s(self) -> float:
        """About how long the running and the waiting jobs will take (their expected times)."""
        left = 0.0
        if self._running is not None:
            elapsed = time.monotonic() - self._running.started
            left += max(0.0, self._running.expected_s - elapsed)
        return left + sum(t.expected_s for t in self._queue)

    def enter(self, owner: str | None, source: str | None, expected_s: float) -> Ticket:
        """Wait for a job's turn, or raise AttnvizError at once if it may not wait."""
        with self._cond:
            if owner is not None and owner in self._owners:
                raise AttnvizError(
                    "Your previous benchmark is still waiting or running; its results appear "
                    "when it finishes. Start the next one after that."
                )
            mine = [t for t in (self._running, *self._queue) if t and t.source == source]
            if source is not None and len(mine) >= PER_SOURCE:
                raise AttnvizError(
                    "You already have a benchmark running and one waiting (from this or another "
                    f"tab); try again in about {wait_words(self.ahead_s())}."
                )
            if len(self._queue) >= self.max_waiting:
                raise AttnvizError(
                    f"The benchmark runner is busy ({len(self._queue)} jobs waiting); try again "
                    f"in about {wait_words(self.ahead_s())}."
                )
            self._count += 1
            ticket = Ticket(self._count, source, owner, expected_s)
            self._queue.append(ticket)
            if owner is not None:
                self._owners.add(owner)
            try:
                while not (self._running is None and self._next() is ticket):
                    self._cond.wait()
            except BaseException:  # interrupted while waiting: the turn passes on
                self._queue.remove(ticket)
                self._owners.discard(owner)
                self._cond.notify_all()
                raise
            self._queue.remove(ticket)
            self._running, ticket.started = ticket, time.monotonic()
            return ticket

    def _next(self) -> Ticket | None:
        """The longest-waiting job of another source than the last one served (else the first)."""
        for t in self._queue:
            if t.source is None or t.source != self._last_source:
                return t
        return self._queue[0] if self._queue else None

    def leave(self, ticket: Ticket) -> None:
        """The job is done (or failed): the next one's turn."""
        with self._cond:
            if self._running is ticket:
                self._running = None
                self._last_source = ticket.source
            self._owners.discard(ticket.owner)
            self._cond.notify_all()
