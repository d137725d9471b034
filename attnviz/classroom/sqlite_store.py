"""The embedded class store: one SQLite file in WAL mode, shared by every process on one machine.

Each thread gets its own connection; each operation is one ``BEGIN IMMEDIATE`` transaction (a
write lock taken up front, so a check and the write after it cannot interleave with another
process's), with a busy timeout instead of an error when another writer holds the lock.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path

from attnviz.classroom.store import ClassRecord, Phase

_SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (
    code TEXT PRIMARY KEY, token_hash TEXT NOT NULL, created REAL NOT NULL, expires REAL NOT NULL,
    slide INTEGER NOT NULL, question TEXT NOT NULL, phase TEXT NOT NULL, version INTEGER NOT NULL,
    example TEXT NOT NULL
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
"""
_COLUMNS = "code, token_hash, created, expires, slide, question, phase, version, example"


class SQLiteStore:
    """The ``Store`` on an SQLite file at path (its folder is created on first use)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[sqlite3.Connection] = []
        self._db().executescript(_SCHEMA)

    # ---- connections ---------------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, isolation_level=None, timeout=10.0)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA busy_timeout=10000")
            self._local.db = db
            with self._lock:
                self._all.append(db)
        return db

    def _tx(self) -> _Transaction:
        return _Transaction(self._db())

    def close(self) -> None:
        with self._lock:
            for db in self._all:
                with contextlib.suppress(sqlite3.ProgrammingError):  # closed by its thread
                    db.close()
            self._all.clear()
        self._local = threading.local()

    # ---- the Store interface -------------------------------------------------------------------

    def create(self, record: ClassRecord) -> bool:
        with self._tx() as db:
            cur = db.execute(
                f"INSERT OR IGNORE INTO classes ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _row(record),
            )
            return cur.rowcount == 1

    def load(self, code: str, now: float) -> ClassRecord | None:
        row = (
            self._db().execute(f"SELECT {_COLUMNS} FROM classes WHERE code = ?", (code,)).fetchone()
        )
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
    ) -> ClassRecord | None:
        with self._tx() as db:
            cur = db.execute(
                "UPDATE classes SET slide = coalesce(?, slide), question = coalesce(?, question), "
                "phase = coalesce(?, phase), version = version + 1 "
                "WHERE code = ? AND token_hash = ? AND expires > ?",
                (slide, question, None if phase is None else phase.value, code, token_hash, now),
            )
            if cur.rowcount != 1:
                return None
            row = db.execute(f"SELECT {_COLUMNS} FROM classes WHERE code = ?", (code,)).fetchone()
            return _record(row)

    def join(self, code: str, student: str, name: str, now: float, max_members: int) -> bool:
        with self._tx() as db:
            if not _live(db, code, now):
                return False
            known = db.execute(
                "SELECT 1 FROM members WHERE code = ? AND student = ?", (code, student)
            ).fetchone()
            if known is None:
                (count,) = db.execute(
                    "SELECT count(*) FROM members WHERE code = ?", (code,)
                ).fetchone()
                if count >= max_members:
                    return False
            db.execute(
                "INSERT INTO members (code, student, name) VALUES (?, ?, ?) "
                "ON CONFLICT (code, student) DO UPDATE SET name = excluded.name",
                (code, student, name),
            )
            return True

    def members(self, code: str) -> dict[str, str]:
        rows = self._db().execute("SELECT student, name FROM members WHERE code = ?", (code,))
        return dict(rows.fetchall())

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
        rows = self._db().execute(
            "SELECT student, answer FROM answers WHERE code = ? AND question = ?", (code, question)
        )
        return dict(rows.fetchall())

    def delete(self, code: str) -> bool:
        with self._tx() as db:
            return _delete(db, code)

    def purge(self, now: float) -> int:
        with self._tx() as db:
            codes = [
                c for (c,) in db.execute("SELECT code FROM classes WHERE expires <= ?", (now,))
            ]
            for code in codes:
                _delete(db, code)
            db.execute("DELETE FROM hits WHERE until <= ?", (now,))
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
        row = (
            self._db()
            .execute("SELECT count FROM hits WHERE key = ? AND until = ?", (key, until))
            .fetchone()
        )
        return 0 if row is None else int(row[0])

    def _delete_expired(self, code: str, now: float) -> None:
        with self._tx() as db:
            if db.execute(
                "SELECT 1 FROM classes WHERE code = ? AND expires <= ?", (code, now)
            ).fetchone():
                _delete(db, code)


class _Transaction:
    """``with`` a write transaction: BEGIN IMMEDIATE, COMMIT on success, ROLLBACK on error."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind, value, tb) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")


def _live(db: sqlite3.Connection, code: str, now: float) -> bool:
    return (
        db.execute("SELECT 1 FROM classes WHERE code = ? AND expires > ?", (code, now)).fetchone()
        is not None
    )


def _delete(db: sqlite3.Connection, code: str) -> bool:
    cur = db.execute("DELETE FROM classes WHERE code = ?", (code,))
    db.execute("DELETE FROM members WHERE code = ?", (code,))
    db.execute("DELETE FROM answers WHERE code = ?", (code,))
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
    )


def _record(row: tuple) -> ClassRecord:
    code, token_hash, created, expires, slide, question, phase, version, example = row
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
    )
