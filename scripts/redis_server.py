"""A real redis-server on a free loopback port, started the one way tests and scripts do.

    server = RedisServer(folder)      # its append-only file goes in folder
    server.start()                    # waits until it answers PING (RuntimeError if it never does)
    RedisStore(server.url)            # redis://127.0.0.1:PORT/0
    server.stop(); server.start()     # a restart: the same port and folder, its data kept

Debian's redis-server (`apt-get install -y redis-server`; `.ci/run` installs it), with persistence
as a class store is run: an append-only file written on every command (``appendfsync always``), no
RDB snapshots.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

REDIS = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A redis-server on a free loopback port; with persistence (append-only file) in folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        cmd = [REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        cmd += ["--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.folder)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
            self.proc = None
