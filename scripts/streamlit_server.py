"""The app served by a real Streamlit process, started the one way tests, scripts and benchmarks do.

    with streamlit_server.serve(log_path=tmp / "server.log") as server:
        requests.get(server.url)           # http://127.0.0.1:PORT, healthy
        server.proc.pid                    # the process, to measure or to kill
        server.stop(); server.start()      # a restart: the same port, environment and log

The server runs ``python -m streamlit run app.py`` from the repository on a free port of the given
loopback (or other) address, headless, with any extra ``--option value`` arguments and environment;
``serve`` (from this checkout, or ``root``: another one, for a comparison) waits until
``/_stcore/health`` answers (the process exiting first, or the deadline, raises ``ServerError``
with the log's tail), and stops the process on the way out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class ServerError(RuntimeError):
    """The server did not become healthy."""


@dataclasses.dataclass
class Server:
    """One ``streamlit run app.py`` on a fixed port: ``start`` (again, after ``stop``: the same
    port, environment and log, which is appended to) waits until it is healthy."""

    url: str
    port: int
    proc: subprocess.Popen | None
    log_path: Path | None
    env: dict[str, str] = dataclasses.field(default_factory=dict)  # on top of os.environ
    address: str = "127.0.0.1"
    args: tuple[str, ...] = ()
    root: Path = REPO
    timeout_s: float = 120.0

    def start(self) -> None:
        """Start the process and wait until it answers; ServerError (with the log's tail) if not."""
        out = open(self.log_path, "ab") if self.log_path is not None else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(
                command(self.port, self.address, self.args),
                cwd=self.root,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env},
            )
        finally:
            if self.log_path is not None:
                out.close()  # the process writes to its own copy
        try:
            wait_healthy(self.url, self.proc, self.timeout_s)
        except ServerError as e:
            self.stop()
            tail = self.log_path.read_text(errors="replace")[-2000:] if self.log_path else ""
            raise ServerError(f"{e}\n{tail}") from None

    def stop(self) -> None:
        """Terminate the process (killed if it is still there after 30 s); nothing if stopped."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


def free_port(address: str = "127.0.0.1") -> int:
    """A port nothing listens on at ``address`` now."""
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen | None = None, timeout_s: float = 120.0) -> None:
    """Until ``url``/_stcore/health answers 200; ServerError if ``proc`` exits or time runs out."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if proc is not None and proc.poll() is not None:
            raise ServerError(f"the server at {url} exited with code {proc.returncode}")
        if time.monotonic() > deadline:
            raise ServerError(f"the server at {url} was not healthy within {timeout_s:g} s")
        time.sleep(0.2)


def command(port: int, address: str = "127.0.0.1", args: Sequence[str] = ()) -> list[str]:
    """The command line that serves app.py on ``address:port``."""
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)]
    return cmd + ["--server.address", address, "--server.headless", "true", *args]


@contextlib.contextmanager
def serve(
    *,
    address: str = "127.0.0.1",
    port: int | None = None,
    args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    log_path: Path | None = None,
    timeout_s: float = 120.0,
    root: Path = REPO,
) -> Iterator[Server]:
    """A healthy server for the ``with`` block (a fresh log); stopped afterwards."""
    port = port or free_port(address)
    server = Server(
        f"http://{address}:{port}",
        port,
        None,
        log_path,
        dict(env or {}),
        address,
        tuple(args),
        root,
        timeout_s,
    )
    if log_path is not None:
        log_path.write_bytes(b"")
    try:
        server.start()
        yield server
    finally:
        server.stop()


def class_store_env(data_dir: Path) -> dict[str, str]:
    """The environment for a server whose live classes live in their own SQLite store under
    ``data_dir`` (no Redis, nothing shared with another server)."""
    return {"ATTNVIZ_DATA_DIR": str(data_dir), "ATTNVIZ_CLASS_STORE": ""}
