"""The class store: one small interface, two backends (SQLite by default, Redis across machines).

Everything a live class needs to outlive a process lives here: the class (its slide, its open
question, its expiry), who joined, their answers, and the rate-limit counters. No class state is
kept in a server process, so any replica behind a proxy can serve any student.

``attnviz.classroom.backend.open_store()`` picks one of the backends from the environment.

Every method is atomic on its own: two answers at once, or a teacher moving while students poll,
lose nothing. Times are passed in (``now``, seconds since the epoch) so tests need no sleeping.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol


class Phase(enum.Enum):
    """Where the class's current question is."""

    NONE = "none"  # no question on screen
    OPEN = "open"  # students may answer, and change their answer
    REVEALED = "revealed"  # answers are frozen; the right one and why are shown


@dataclass(frozen=True)
class ClassRecord:
    """One class as stored. token_hash: SHA-256 of the teacher token (the token itself is never
    stored). slide: 1-based. question: the id of the question on screen ("" for none).
    version: bumped by every change the students must see, so a poll can tell cheaply.
    example: the Playground link's query string the slides run on ("" for the classic example).
    joining: whether new students may join (the teacher can close the class to them)."""

    code: str
    token_hash: str
    created: float
    expires: float
    slide: int = 1
    question: str = ""
    phase: Phase = Phase.NONE
    version: int = 0
    example: str = ""
    joining: bool = True


class Store(Protocol):
    """What the live class needs from a store. Each call is one atomic operation."""

    def create(self, record: ClassRecord) -> bool:
        """Store a new class; False (and nothing changed) if its code is taken."""
        ...

    def load(self, code: str, now: float) -> ClassRecord | None:
        """The class, or None when there is none or it has expired (then it is deleted)."""
        ...

    def update(
        self,
        code: str,
        token_hash: str,
        now: float,
        *,
        slide: int | None = None,
        question: str | None = None,
        phase: Phase | None = None,
        joining: bool | None = None,
    ) -> ClassRecord | None:
        """Change what is given and bump the version, only if the class exists, has not expired
        and token_hash is its teacher's. Returns the new record, or None (nothing changed)."""
        ...

    def join(self, code: str, student: str, name: str, now: float, max_members: int) -> bool:
        """Add (or rename) a student; False when the class is gone, already has max_members, or
        is closed to new students (a member may still rejoin). A member who rejoins with the name
        '' keeps the name they gave before."""
        ...

    def remove(self, code: str, student: str) -> bool:
        """Remove a member and every answer they gave; False when they were not one."""
        ...

    def rekey(self, code: str, token_hash: str, new_hash: str, now: float) -> bool:
        """Replace the teacher token's hash (only with the current one) and forget every teacher
        session seen so far; False (nothing changed) when the class is gone or the hash is not
        its teacher's."""
        ...

    def present(self, code: str, session: str, now: float, window_s: float) -> int:
        """Note that teacher session ``session`` is showing the class at now; returns how many
        sessions were seen in the last window_s seconds, this one included (0: no live class)."""
        ...

    def members(self, code: str) -> dict[str, str]:
        """student id -> display name ('' for none)."""
        ...

    def answer(self, code: str, question: str, student: str, answer: str, now: float) -> bool:
        """Record (or change) a student's answer, only while question is the class's current one,
        its phase is OPEN and the student has joined. False (nothing changed) otherwise."""
        ...

    def answers(self, code: str, question: str) -> dict[str, str]:
        """student id -> canonical answer, for one question."""
        ...

    def delete(self, code: str) -> bool:
        """Remove the class, its members, all its answers and every rate-limit counter whose key
        holds its code (``answer:{code}:{student}``, ...), and leave no copy of them in the
        store's files (SQLite: zeroed and checkpointed; Redis: its files rewritten); False when
        there was none."""
        ...

    def purge(self, now: float) -> int:
        """Delete every expired class as ``delete`` does, and the rate-limit counters whose
        window has passed; returns how many classes."""
        ...

    def hit(self, key: str, window_s: int, now: float) -> int:
        """Count one event for key in the current window of window_s seconds; returns the count
        so far in this window (1 for the first)."""
        ...

    def count(self, key: str, window_s: int, now: float) -> int:
        """The count so far for key in the current window, without counting."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...
