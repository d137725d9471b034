"""The embedded class store: one SQLite file in WAL mode, shared by every process on one machine.

Connections come from a small pool: each operation borrows one and gives it back, and at most
``MAX_IDLE`` wait between operations. (Not one per thread: Streamlit runs every rerun, and so every
poll of a class that follows its teacher, in a thread of its own; a connection per thread meant a
new connection per poll, ~85 KB each that was never given back, measured: a replica with 50
following students grew by 4 MiB a second.) Each write is one ``BEGIN IMMEDIATE`` transaction (a
write lock taken up front, so a check and the write after it cannot interleave with another
process's), with a busy timeout instead of an error when another writer holds the lock.

Ending a class leaves none of it in the files: every connection deletes with ``secure_delete`` (the
freed bytes are overwritten with zeros, not just unlinked), the rate-limit counters that name the
class go with it, and a ``wal_checkpoint(TRUNCATE)`` then copies the zeroed pages into the database
and empties the write-ahead log, which would otherwise keep old copies of every row it saw.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from attnviz.classroom.store import ClassRecord, Phase

_SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (
    code TEXT PRIMARY KEY, token_hash TEXT NOT NULL, created REAL NOT NULL, expires REAL NOT NULL,
    slide INTEGER NOT NULL, question TEXT NOT NULL, phase TEXT NOT NULL, version INTEGER NOT NULL,
    example TEXT NOT NULL, joining INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS classes_expires ON classes (expires);
CREATE TABLE IF NOT EXISTS members (
    code TEXT NOT NULL, student TEXT NOT NULL, name TEXT NOT NULL, PRIMARY KEY (code, student)
);
CREATE TABLE IF NOT EXISTS answers (
    code TEXT NOT NULL, question TEXT NOT NULL, student TEXT NOT NULL, answer TEXT NOT NULL,
    PRIMARY KEY (code, question, student)
);
CREATE TABLE IF NOT EXISTS hits (key TEXT PRIMARY KEY, until REAL NOT NULL, count INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS presenters (
    code TEXT NOT NULL, session TEXT NOT NULL, seen REAL NOT NULL, PRIMARY KEY (code, session)
);
"""
_COLUMNS = "code, token_hash, created, expires, slide, question, phase, version, example, joining"
MAX_IDLE = 8  # connections kept between operations; a burst beyond it opens (and closes) more


class SQLiteStore:
    """The ``Store`` on an SQLite file at path (its folder is created on first use)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._closed = False
        self.opened = 0  # connections made so far (the pool's tests read these three)
        self.open_now = 0  # connections open at this moment, in use or idle
        self.peak = 0  # the most ever open at once
        with self._db() as db:
            db.executescript(_SCHEMA)
            columns = {row[1] for row in db.execute("PRAGMA table_info(classes)")}
            if "joining" not in columns:  # a file written before classes could close
                db.execute("ALTER TABLE classes ADD COLUMN joining INTEGER NOT NULL DEFAULT 1")

    # ---- connections ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # used by one thread at a time, but not always the thread that made it
        db = sqlite3.connect(self.path, isolation_level=None, timeout=10.0, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=10000")
        db.execute("PRAGMA secure_delete=ON")  # a deleted row's bytes are zeroed, not left free
        with self._lock:
            self.opened += 1
            self.open_now += 1
            self.peak = max(self.peak, self.open_now)
        return db

    def _close(self, db: sqlite3.Connection) -> None:
        db.close()
        with self._lock:
            self.open_now -= 1

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """A connection of this operation's own, given back to the pool afterwards."""
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError("the class store is closed")
            db = self._idle.pop() if self._idle else None
        if db is None:
            db = self._connect()
        try:
            yield db
        finally:
            if db.in_transaction:  # never hand on an open transaction
                db.rollback()
            with self._lock:
                keep = not self._closed and len(self._idle) < MAX_IDLE
                if keep:
                    self._idle.append(db)
            if not keep:
                self._close(db)

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: BEGIN IMMEDIATE, COMMIT on success, ROLLBACK on error."""
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def _one(self, sql: str, args: tuple) -> tuple | None:
        with self._db() as db:
            return db.execute(sql, args).fetchone()

    def _all(self, sql: str, args: tuple) -> list[tuple]:
        with self._db() as db:
            return db.execute(sql, args).fetchall()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for db in idle:
            self._close(db)

    # ---- the Store interface -------------------------------------------------------------------

    def create(self, record: ClassRecord) -> bool:
        with self._tx() as db:
            cur = db.execute(
                f"INSERT OR IGNORE INTO classes ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _row(record),
            )
            return cur.rowcount == 1

    def load(self, code: str, now: float) -> ClassRecord | None:
        row = self._one(f"SELECT {_COLUMNS} FROM classes WHERE code = ?", (code,))
        if row is None:
            return None
        record = _record(row)
        if record.expires <= now:
            self._delete_expired(code, now)
            return None
        return record

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
        with self._tx() as db:
            cur = db.execute(
                "UPDATE classes SET slide = coalesce(?, slide), question = coalesce(?, question), "
                "phase = coalesce(?, phase), joining = coalesce(?, joining), "
                "version = version + 1 WHERE code = ? AND token_hash = ? AND expires > ?",
                (
                    slide,
                    question,
                    None if phase is None else phase.value,
                    None if joining is None else int(joining),
                    code,
                    token_hash,
                    now,
                ),
            )
            if cur.rowcount != 1:
                return None
            row = db.execute(f"SELECT {_COLUMNS} FROM classes WHERE code = ?", (code,)).fetchone()
            return _record(row)

    def join(self, code: str, student: str, name: str, now: float, max_members: int) -> bool:
        with self._tx() as db:
            row = db.execute(
                "SELECT joining FROM classes WHERE code = ? AND expires > ?", (code, now)
            ).fetchone()
            if row is None:
                return False
            known = db.execute(
                "SELECT 1 FROM members WHERE code = ? AND student = ?", (code, student)
            ).fetchone()
            if known is None:
                if not row[0]:  # closed to new students
                    return False
                (count,) = db.execute(
                    "SELECT count(*) FROM members WHERE code = ?", (code,)
                ).fetchone()
                if count >= max_members:
                    return False
            db.execute(
                "INSERT INTO members (code, student, name) VALUES (?, ?, ?) "
                "ON CONFLICT (code, student) DO UPDATE "
                "SET name = CASE WHEN excluded.name = '' THEN name ELSE excluded.name END",
                (code, student, name),
            )
            return True

    def rekey(self, code: str, token_hash: str, new_hash: str, now: float) -> bool:
        with self._tx() as db:
            cur = db.execute(
                "UPDATE classes SET token_hash = ? WHERE code = ? AND token_hash = ? AND expires > ?",
                (new_hash, code, token_hash, now),
            )
            if cur.rowcount != 1:
                return False
            db.execute("DELETE FROM presenters WHERE code = ?", (code,))
            return True

    def present(self, code: str, session: str, now: float, window_s: float) -> int:
        with self._tx() as db:
            if not _live(db, code, now):
                return 0
            db.execute(
                "INSERT INTO presenters (code, session, seen) VALUES (?, ?, ?) "
                "ON CONFLICT (code, session) DO UPDATE SET seen = excluded.seen",
                (code, session, now),
            )
            db.execute(
                "DELETE FROM presenters WHERE code = ? AND seen <= ?", (code, now - window_s)
            )
            (n,) = db.execute("SELECT count(*) FROM presenters WHERE code = ?", (code,)).fetchone()
            return int(n)

    def remove(self, code: str, student: str) -> bool:
        with self._tx() as db:
            cur = db.execute("DELETE FROM members WHERE code = ? AND student = ?", (code, student))
            db.execute("DELETE FROM answers WHERE code = ? AND student = ?", (code, student))
            return cur.rowcount == 1

    def members(self, code: str) -> dict[str, str]:
        return dict(self._all("SELECT student, name FROM members WHERE code = ?", (code,)))

    def answer(self, code: str, question: str, student: str, answer: str, now: float) -> bool:
        with self._tx() as db:
            ok = db.execute(
                "SELECT 1 FROM classes JOIN members USING (code) WHERE code = ? AND expires > ? "
                "AND question = ? AND phase = ? AND student = ?",
                (code, now, question, Phase.OPEN.value, student),
            ).fetchone()
            if ok is None:
                return False
            db.execute(
                "INSERT INTO answers (code, question, student, answer) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (code, question, student) DO UPDATE SET answer = excluded.answer",
                (code, question, student, answer),
            )
            return True

    def answers(self, code: str, question: str) -> dict[str, str]:
        return dict(
            self._all(
                "SELECT student, answer FROM answers WHERE code = ? AND question = ?",
                (code, question),
            )
        )

    def delete(self, code: str) -> bool:
        with self._tx() as db:
            gone = _delete(db, code)
        self._scrub()
        return gone

    def purge(self, now: float) -> int:
        with self._tx() as db:
            codes = [
                c for (c,) in db.execute("SELECT code FROM classes WHERE expires <= ?", (now,))
            ]
            for code in codes:
                _delete(db, code)
            db.execute("DELETE FROM hits WHERE until <= ?", (now,))
        if codes:
            self._scrub()
        return len(codes)

    def hit(self, key: str, window_s: int, now: float) -> int:
        until = (int(now) // window_s + 1) * window_s
        with self._tx() as db:
            (count,) = db.execute(
                "INSERT INTO hits (key, until, count) VALUES (?, ?, 1) ON CONFLICT (key) DO UPDATE "
                "SET count = CASE WHEN until = excluded.until THEN count + 1 ELSE 1 END, "
                "until = excluded.until RETURNING count",
                (key, until),
            ).fetchone()
            return int(count)

    def count(self, key: str, window_s: int, now: float) -> int:
        until = (int(now) // window_s + 1) * window_s
        row = self._one("SELECT count FROM hits WHERE key = ? AND until = ?", (key, until))
        return 0 if row is None else int(row[0])

    def _delete_expired(self, code: str, now: float) -> None:
        with self._tx() as db:
            expired = db.execute(
                "SELECT 1 FROM classes WHERE code = ? AND expires <= ?", (code, now)
            ).fetchone()
            if expired:
                _delete(db, code)
        if expired:
            self._scrub()

    def _scrub(self, tries: int = 5) -> bool:
        """Copy every committed page into the database and empty the write-ahead log, so that no
        old copy of a deleted row stays in it. Waits (the busy timeout) for writers, and retries
        while another process is still reading an older snapshot; True when the log is empty."""
        for attempt in range(tries):
            with self._db() as db:
                (busy, *_) = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy:
                return True
            time.sleep(0.05 * (attempt + 1))
        return False


def _live(db: sqlite3.Connection, code: str, now: float) -> bool:
    return (
        db.execute("SELECT 1 FROM classes WHERE code = ? AND expires > ?", (code, now)).fetchone()
        is not None
    )


def _delete(db: sqlite3.Connection, code: str) -> bool:
    cur = db.execute("DELETE FROM classes WHERE code = ?", (code,))
    db.execute("DELETE FROM members WHERE code = ?", (code,))
    db.execute("DELETE FROM answers WHERE code = ?", (code,))
    # rate-limit counters that name the class (answer:{code}:{student}, ...)
    db.execute("DELETE FROM hits WHERE instr(key, ?) > 0", (code,))
    db.execute("DELETE FROM presenters WHERE code = ?", (code,))
    return cur.rowcount == 1


def _row(r: ClassRecord) -> tuple:
    return (
        r.code,
        r.token_hash,
        r.created,
        r.expires,
        r.slide,
        r.question,
        r.phase.value,
        r.version,
        r.example,
        int(r.joining),
    )


def _record(row: tuple) -> ClassRecord:
    code, token_hash, created, expires, slide, question, phase, version, example, joining = row
    return ClassRecord(
        code=code,
        token_hash=token_hash,
        created=float(created),
        expires=float(expires),
        slide=int(slide),
        question=question,
        phase=Phase(phase),
        version=int(version),
        example=example,
        joining=bool(joining),
    )
