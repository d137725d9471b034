"""scripts/log_sink.py, the writer of HAProxy's access log: one line a datagram whatever it holds,
the file rotated by size with so many old files kept, a clean exit on supervisord's stop. The sink
behind a real HAProxy: tests/test_serving_proxy.py (a burst while it is stalled loses no line)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scripts import log_sink, serve

SINK = Path(log_sink.__file__)


@pytest.mark.parametrize(
    ("datagram", "line"),
    [
        (b"GET / HTTP/1.1\n", "GET / HTTP/1.1"),
        (b"no newline", "no newline"),
        (b"two\nlines\r\n", "two lines"),  # never a second line forged into the log
        (b"\xff\xfe bytes", "\ufffd\ufffd bytes"),
        (b"", ""),
        (b"x" * (log_sink.MAX_LINE + 100), "x" * log_sink.MAX_LINE),
    ],
)
def test_a_datagram_is_one_line(datagram, line):
    assert log_sink.line(datagram) == line


def _until(check, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_the_log_is_rotated_by_size_and_the_sink_stops_cleanly(tmp_path):
    port = serve._free_udp_port()
    log = tmp_path / "haproxy.log"
    cmd = [sys.executable, str(SINK), f"--port={port}", f"--file={log}"]
    sink = subprocess.Popen([*cmd, "--max-bytes=1000", "--backups=2"], stdout=subprocess.PIPE)
    try:
        assert b"receiving on 127.0.0.1:" in sink.stdout.readline()  # bound: nothing sent is lost
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as out:
            for i in range(100):
                out.sendto(f"line {i:03d} ".encode() + b"." * 40, ("127.0.0.1", port))
        _until(lambda: log.exists() and b"line 099" in log.read_bytes(), "the last line written")
        files = sorted(tmp_path.glob("haproxy.log*"))
        assert [f.name for f in files] == ["haproxy.log", "haproxy.log.1", "haproxy.log.2"]
        assert all(f.stat().st_size <= 1000 for f in files)
        kept = b"".join(f.read_bytes() for f in reversed(files)).splitlines()
        numbers = [int(row.split()[1]) for row in kept]
        assert numbers == list(range(numbers[0], 100))  # the newest lines, in order, none lost
        assert numbers[0] > 0  # the oldest dropped: at most 3 files of 1000 bytes
    finally:
        sink.send_signal(signal.SIGTERM)
        assert sink.wait(timeout=30) == 0
