"""Which class store a process uses: ``open_store()`` picks the backend from the environment.

- ``ATTNVIZ_CLASS_STORE=redis://host:port/db``: ``RedisStore`` (the ``redis`` client package);
- ``ATTNVIZ_CLASS_STORE=sqlite:///path/file.sqlite3``: ``SQLiteStore`` on that file;
- otherwise ``SQLiteStore`` on ``$ATTNVIZ_DATA_DIR/classes.sqlite3`` (default ``~/.local/share/attnviz``),
  created on first use, in WAL mode so several processes on one machine share it.
"""

from __future__ import annotations

import os
from pathlib import Path

from attnviz.classroom.store import Store
from attnviz.errors import AttnvizError


def default_data_dir() -> Path:
    """$ATTNVIZ_DATA_DIR, or ~/.local/share/attnviz."""
    env = os.environ.get("ATTNVIZ_DATA_DIR")
    return Path(env) if env else Path.home() / ".local" / "share" / "attnviz"


def open_store(url: str | None = None, data_dir: str | Path | None = None) -> Store:
    """The store named by url (default: $ATTNVIZ_CLASS_STORE), else SQLite in data_dir (default:
    ``default_data_dir()``). Raises AttnvizError for a URL it cannot use."""
    url = os.environ.get("ATTNVIZ_CLASS_STORE", "") if url is None else url
    if url.startswith(("redis://", "rediss://", "unix://")):
        from attnviz.classroom.redis_store import RedisStore  # the redis package only when used

        return RedisStore(url)
    if url.startswith("sqlite:///"):
        return _sqlite(Path(url.removeprefix("sqlite:///")))
    if url:
        raise AttnvizError(
            "ATTNVIZ_CLASS_STORE should be redis://host:port/db or sqlite:///path/file.sqlite3, "
            f"got {url[:40]!r}"
        )
    folder = Path(data_dir) if data_dir is not None else default_data_dir()
    return _sqlite(folder / "classes.sqlite3")


def _sqlite(path: Path) -> Store:
    from attnviz.classroom.sqlite_store import SQLiteStore  # sqlite3 loads only when used

    return SQLiteStore(path)
