"""The live class's rules on top of a ``Store``: who may do what, how often, and for how long.

Only the holder of the teacher token moves the class, opens, reveals or closes a question, ends it,
or hands it a new token (``rotate``: every other link and session of the old one is refused at
once); each teacher session reports itself (``present``), so a second device presenting the class
is seen. A student joins with the class code (rate-limited: codes are meant to be unguessable), answers
the open question once (changeable until the reveal) and needs no personal data. A class expires
``Limits.ttl_s`` after it starts; an ended or expired class's data is deleted.

No streamlit and no per-process state: every replica behind a proxy sees the same class. A store
that cannot be reached (a Redis restarting, a locked SQLite file past its timeout) is a
``ClassError`` of kind ``UNREACHABLE``: nothing was done, and the caller says so.
"""

from __future__ import annotations

import enum
import functools
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from attnviz.classroom import secret
from attnviz.classroom.question import Question, is_right, parse_answer
from attnviz.classroom.store import ClassRecord, Phase, Store
from attnviz.errors import AttnvizError

MAX_EXAMPLE_CHARS = 12_000
#: A teacher session not seen for this long has gone (each polls every second).
PRESENT_S = 5.0

try:  # what a store raises when it cannot be reached
    from redis import RedisError as _RedisError

    _UNREACHABLE: tuple[type[BaseException], ...] = (sqlite3.Error, OSError, _RedisError)
except ImportError:  # redis is optional: SQLite alone
    _UNREACHABLE = (sqlite3.Error, OSError)


class Problem(enum.Enum):
    """Why a class operation was refused."""

    NO_CLASS = "no class"  # unknown code, ended or expired
    NOT_TEACHER = "not the teacher"
    RATE_LIMITED = "too many tries"
    FULL = "class full"
    CLOSED = "closed to new students"
    REMOVED = "removed by the teacher"
    NOT_OPEN = "question not open"
    BAD_INPUT = "bad input"
    UNREACHABLE = "store unreachable"  # nothing was done: try again


class ClassError(AttnvizError):
    """A refused class operation; ``problem`` says which kind (compare it, never the text)."""

    def __init__(self, problem: Problem, message: str) -> None:
        super().__init__(message)
        self.problem = problem


@dataclass(frozen=True)
class Limits:
    """Expiry, size and rate limits (per fixed window, counted in the store: they hold across
    replicas). client: whatever identifies a browser's network origin, '' when unknown.

    A failed join is a well-formed code that names no live class: a guess, or a typo that looks
    like one (a code of the wrong shape is neither, and is not counted). A whole school behind one
    NAT address is one client, so the per-client limit leaves room for a class of 300 in which a
    quarter mistype the code in the same minute; guessing stays hopeless at the server's limit
    (23**9 codes, about 1.8e12: at 1,000 guesses a minute for a class's 4 hours, one chance in
    about 7.5 million per live class), and it takes ten addresses at their limit to use it up.
    Starts are counted per address for the same reason: a school's teachers share one, so 60 an
    hour; a class is one small record that expires after ``ttl_s``, so one address holds at most
    240 live classes.

    A right code always joins, whatever wrong codes came before: the code is looked up first, and
    the server-wide count refuses only codes that name no class. An address over its own failed
    limit still joins the classes it is known to (it started the class, or has members in it: a
    school behind one NAT address, one of whose students tried 100 wrong codes); to any other
    class it is refused with the same words whether the code exists or not. Guessing is bounded
    per address: 100 a minute, 24,000 in a class's life, one chance in 7.5e7 per live class.

    New members are limited per address (``joins_per_client_per_min``: a class of 300 behind one
    NAT address joins in one minute) and per class (``joins_per_class_per_min``, twice what one
    address may use), and one address holds at most ``members_per_client`` of a class's
    ``max_members``: one visitor cannot fill a class. A member's tabs, reloads and rejoins are not
    new members and count nothing. The teacher sees who joined, removes a member (their answers go
    with them, and their id cannot rejoin) or closes the class to new students."""

    ttl_s: int = 4 * 3600
    max_members: int = 1000
    failed_joins_per_client_per_min: int = 100
    failed_joins_per_min: int = 1000  # the whole server: bounds guessing codes
    answers_per_student_per_min: int = 30
    starts_per_client_per_hour: int = 60
    joins_per_client_per_min: int = 300  # new members from one address: a school's class at once
    joins_per_class_per_min: int = 600  # more than one address can use up alone
    members_per_client: int = 500  # one address's share of a class: never all of it


LIMITS = Limits()
#: A window no class outlives: counters kept for a class's whole life (deleted with the class).
FOREVER_S = 2**40


def _reaching(method):
    """A store that cannot be reached -> ClassError(UNREACHABLE) (the operation was not done)."""

    @functools.wraps(method)
    def wrapped(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except _UNREACHABLE:
            raise ClassError(
                Problem.UNREACHABLE, "Could not reach the class: nothing was changed. Try again."
            ) from None

    return wrapped


@dataclass(frozen=True)
class Started:
    """A new class: its code, the teacher token (shown once, kept in the session and the
    teacher link) and the record."""

    code: str
    token: str
    record: ClassRecord


@dataclass(frozen=True)
class Tally:
    """The answers to one question: count per canonical answer (most common first), how many
    answered and how many are right."""

    counts: tuple[tuple[str, int], ...]
    total: int
    right: int


class Classroom:
    """The live class on a store. clock: seconds since the epoch (tests pass their own)."""

    def __init__(
        self, store: Store, limits: Limits = LIMITS, clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.limits = limits
        self.clock = clock

    # ---- teacher -------------------------------------------------------------------------------

    @_reaching
    def start(self, *, example: str = "", client: str = "") -> Started:
        """Start a class on the example (a Playground link's query string, '' for the classic)."""
        if not isinstance(example, str) or len(example) > MAX_EXAMPLE_CHARS:
            raise ClassError(Problem.BAD_INPUT, "The example is too large for a class.")
        now = self.clock()
        self._limit(f"start:{client}", 3600, self.limits.starts_per_client_per_hour, now)
        self.store.purge(now)
        token = secret.new_token()
        for _ in range(8):  # a clash among 1.8e12 codes is rare; never loop forever
            record = ClassRecord(
                code=secret.new_code(),
                token_hash=secret.token_hash(token),
                created=now,
                expires=now + self.limits.ttl_s,
                example=example,
            )
            if self.store.create(record):
                self.store.hit(f"home:{record.code}:{client}", FOREVER_S, now)
                return Started(record.code, token, record)
        raise ClassError(Problem.BAD_INPUT, "Could not find a free class code; try again.")

    @_reaching
    def is_teacher(self, code: str, token: str) -> bool:
        """Whether token is this live class's teacher token."""
        record = self.store.load(code, self.clock())
        try:
            token = secret.parse_token(token)
        except AttnvizError:
            return False
        return record is not None and secret.token_matches(token, record.token_hash)

    @_reaching
    def move(self, code: str, token: str, slide: int, n_slides: int) -> ClassRecord:
        """Put the class on slide (1..n_slides); a question on screen is taken down."""
        if type(slide) is not int or not 1 <= slide <= n_slides:
            raise ClassError(Problem.BAD_INPUT, f"There are slides 1 to {n_slides}.")
        return self._teacher(code, token, slide=slide, question="", phase=Phase.NONE)

    @_reaching
    def ask(self, code: str, token: str, question: Question) -> ClassRecord:
        """Open a question: students may answer (and change their answer) until the reveal."""
        return self._teacher(code, token, question=question.id, phase=Phase.OPEN)

    @_reaching
    def reveal(self, code: str, token: str) -> ClassRecord:
        """Freeze the answers and show the right one."""
        record = self.state(code)
        if record.phase is not Phase.OPEN:
            raise ClassError(Problem.NOT_OPEN, "No question is open.")
        return self._teacher(code, token, phase=Phase.REVEALED)

    @_reaching
    def close_question(self, code: str, token: str) -> ClassRecord:
        """Take the question off the screen (its answers stay until the class ends)."""
        return self._teacher(code, token, question="", phase=Phase.NONE)

    @_reaching
    def end(self, code: str, token: str) -> None:
        """End the class: its data is deleted."""
        if not self.is_teacher(code, token):
            raise ClassError(Problem.NOT_TEACHER, "Only the teacher can end the class.")
        self.store.delete(code)

    @_reaching
    def rotate(self, code: str, token: str) -> str:
        """A new teacher token for the class; the old one (its links, every session holding it)
        is refused from now on. Returns the new token."""
        new = secret.new_token()
        try:
            token = secret.parse_token(token)
        except AttnvizError:
            raise ClassError(Problem.NOT_TEACHER, "Only the teacher can do this.") from None
        if not self.store.rekey(
            code, secret.token_hash(token), secret.token_hash(new), self.clock()
        ):
            self.state(code)  # NO_CLASS when it is gone
            raise ClassError(Problem.NOT_TEACHER, "Only the teacher can do this.")
        return new

    @_reaching
    def present(self, code: str, token: str, session: str) -> int:
        """A teacher session says it shows the class; returns how many teacher sessions have
        said so in the last PRESENT_S seconds (more than 1: another device presents it too)."""
        if not self.is_teacher(code, token):
            raise ClassError(Problem.NOT_TEACHER, "Only the teacher can do this.")
        try:
            session = secret.parse_session(session)
        except AttnvizError as e:
            raise ClassError(Problem.BAD_INPUT, str(e)) from None
        return self.store.present(code, session, self.clock(), PRESENT_S)

    # ---- anyone --------------------------------------------------------------------------------

    @_reaching
    def state(self, code: str) -> ClassRecord:
        """The live class, or ClassError(NO_CLASS)."""
        record = self.store.load(code, self.clock())
        if record is None:
            raise ClassError(Problem.NO_CLASS, "This class has ended, or its code is unknown.")
        return record

    @_reaching
    def join(self, code_text: object, student: str, name: object = "", client: str = "") -> str:
        """A student joins with what they typed; returns the canonical code. A code of the wrong
        shape (or a name, or a student id) is refused with what it should look like and counts
        nothing; a well-formed code that names no class is a failed try, counted per client and
        for the whole server. The limits and who they stop: ``Limits``."""
        now = self.clock()
        try:
            code = secret.parse_code(code_text)
            student = secret.parse_student(student)
            name = secret.parse_name(name)
        except AttnvizError as e:
            raise ClassError(Problem.BAD_INPUT, str(e)) from None
        record = self.store.load(code, now)
        over = self._failed(f"joinfail:{client}", self.limits.failed_joins_per_client_per_min, now)
        if record is None:
            busy = self._failed("joinfail:*", self.limits.failed_joins_per_min, now)
            if not over:  # every guess counts for its address, whatever the server's count
                self._fail(client, now)
            if over or busy:
                raise ClassError(Problem.RATE_LIMITED, "Too many tries; wait a minute and retry.")
            raise ClassError(Problem.NO_CLASS, "No live class has this code. Check it and retry.")
        if over and not self._known(code, client, now):
            raise ClassError(Problem.RATE_LIMITED, "Too many tries; wait a minute and retry.")
        if self.store.count(f"out:{code}:{student}", FOREVER_S, now):
            raise ClassError(Problem.REMOVED, "The teacher has removed you from this class.")
        new = student not in self.store.members(code)
        if new:
            self._admit(record, client, now)
        if not self.store.join(code, student, name, now, self.limits.max_members):
            if not self.state(code).joining:
                raise ClassError(
                    Problem.CLOSED, "The teacher has closed this class to new students."
                )
            raise ClassError(Problem.FULL, "This class is full.")
        if new:
            self.store.hit(f"share:{code}:{client}", FOREVER_S, now)
        return code

    @_reaching
    def set_joining(self, code: str, token: str, joining: bool) -> ClassRecord:
        """Open or close the class to new students (members may always come back)."""
        if type(joining) is not bool:
            raise ClassError(Problem.BAD_INPUT, "Joining is open or closed.")
        return self._teacher(code, token, joining=joining)

    @_reaching
    def remove(self, code: str, token: str, student: object) -> bool:
        """The teacher removes a member: their answers go, and their id cannot join again (a
        new one is a new member, within the limits). False when they were no member."""
        if not self.is_teacher(code, token):
            raise ClassError(Problem.NOT_TEACHER, "Only the teacher can do this.")
        try:
            student = secret.parse_student(student)
        except AttnvizError as e:
            raise ClassError(Problem.BAD_INPUT, str(e)) from None
        now = self.clock()
        self.store.hit(f"out:{code}:{student}", FOREVER_S, now)
        return self.store.remove(code, student)

    @_reaching
    def member_list(self, code: str, token: str) -> tuple[tuple[str, str], ...]:
        """The teacher's view of who joined: (student id, name) sorted by name, unnamed last.
        Student ids are secrets of their browsers (one votes as its student): teacher only."""
        if not self.is_teacher(code, token):
            raise ClassError(Problem.NOT_TEACHER, "Only the teacher can do this.")
        members = self.store.members(code)
        return tuple(sorted(members.items(), key=lambda kv: (not kv[1], kv[1].casefold(), kv[0])))

    @_reaching
    def answer(self, code: str, student: str, question: Question, text: object) -> str:
        """Record a student's answer to the open question; returns its canonical form."""
        now = self.clock()
        try:
            canonical = parse_answer(question, text)
        except AttnvizError as e:
            raise ClassError(Problem.BAD_INPUT, str(e)) from None
        self._limit(f"answer:{code}:{student}", 60, self.limits.answers_per_student_per_min, now)
        if not self.store.answer(code, question.id, student, canonical, now):
            raise ClassError(Problem.NOT_OPEN, "This question is not open for answers now.")
        return canonical

    @_reaching
    def my_answer(self, code: str, student: str, question: Question) -> str | None:
        """The student's canonical answer to question, or None."""
        return self.store.answers(code, question.id).get(student)

    @_reaching
    def tally(self, code: str, question: Question) -> Tally:
        """How the class answered question."""
        given = self.store.answers(code, question.id)
        counts = Counter(given.values())
        return Tally(
            counts=tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
            total=len(given),
            right=sum(n for a, n in counts.items() if is_right(question, a)),
        )

    @_reaching
    def members(self, code: str) -> int:
        """How many students have joined (browsers: a student's tabs and reloads are one)."""
        return len(self.store.members(code))

    @_reaching
    def roster(self, code: str) -> tuple[int, tuple[str, ...]]:
        """How many students have joined, and the names they gave (sorted; shown as plain text)."""
        members = self.store.members(code)
        return len(members), tuple(sorted(n for n in members.values() if n))

    # ---- helpers -------------------------------------------------------------------------------

    def _teacher(self, code: str, token: str, **changes) -> ClassRecord:
        try:
            token = secret.parse_token(token)
        except AttnvizError:
            raise ClassError(Problem.NOT_TEACHER, "Only the teacher can do this.") from None
        record = self.store.update(code, secret.token_hash(token), self.clock(), **changes)
        if record is None:
            self.state(code)  # NO_CLASS when it is gone
            raise ClassError(Problem.NOT_TEACHER, "Only the teacher can do this.")
        return record

    def _limit(self, key: str, window_s: int, most: int, now: float) -> None:
        if self.store.hit(key, window_s, now) > most:
            raise ClassError(Problem.RATE_LIMITED, "Too many tries; wait a minute and retry.")

    def _failed(self, key: str, most: int, now: float) -> bool:
        """Whether the failed joins counted under key this minute have reached most."""
        return self.store.count(key, 60, now) >= most

    def _known(self, code: str, client: str, now: float) -> bool:
        """Whether client started the class or has members in it (it knows the code)."""
        return any(
            self.store.count(f"{kind}:{code}:{client}", FOREVER_S, now)
            for kind in ("home", "share")
        )

    def _admit(self, record: ClassRecord, client: str, now: float) -> None:
        """The limits on new members, each counted only once the one before let it through."""
        code = record.code
        if not record.joining:
            raise ClassError(Problem.CLOSED, "The teacher has closed this class to new students.")
        self._limit(f"join:{client}", 60, self.limits.joins_per_client_per_min, now)
        if self.store.count(f"share:{code}:{client}", FOREVER_S, now) >= min(
            self.limits.members_per_client, self.limits.max_members
        ):
            raise ClassError(
                Problem.FULL, "This class has room for no more students from your network."
            )
        self._limit(f"joins:{code}", 60, self.limits.joins_per_class_per_min, now)

    def _fail(self, client: str, now: float) -> None:
        self.store.hit(f"joinfail:{client}", 60, now)
        self.store.hit("joinfail:*", 60, now)
