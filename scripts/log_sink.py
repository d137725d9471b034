"""HAProxy's access log, received over UDP on loopback and written to a file rotated by size.

    python scripts/log_sink.py --port 8739 --file RUN_DIR/log/haproxy.log --max-bytes 5242880 --backups 2

scripts/serve.py runs this under supervisord, beside HAProxy (``log 127.0.0.1:PORT`` in its config).
HAProxy never blocks on a log: a line it cannot hand over at once is dropped. Written to its stdout
(a pipe, which supervisord drained before), 74 and 2,317 lines of 6,400 requests in a burst were
lost on 2 cores (the pipe full, or HAProxy's two threads meeting on it), as were, in one run of the
test suite, all of them for its last 6 minutes. Over UDP a line waits in this socket's receive
buffer (asked for 8 MB; the kernel grants up to net.core.rmem_max) until this process writes it:
none of the 6,400 was lost (a unix datagram socket lost 511 and 789: the kernel queues 10 datagrams
on one, net.unix.max_dgram_qlen). HAProxy counts what it drops
(``DroppedLogs`` in ``show info`` on its stats socket; tests/test_serving_proxy.py reads it).

Only this machine can send here (the port is on 127.0.0.1), and every datagram is one line, cut at
``MAX_LINE`` bytes; a line's bytes are kept as they came (HAProxy's log-format already leaves out
query strings). Stdlib only: ``logging.handlers.RotatingFileHandler`` rotates the file
(``haproxy.log.1``, ``.2``, as supervisord names its own).
"""

from __future__ import annotations

import argparse
import logging
import logging.handlers
import signal
import socket
import sys
from pathlib import Path

RECEIVE_BUFFER = 8 * 1024 * 1024  # asked for; the kernel caps it at net.core.rmem_max
MAX_LINE = 4096  # bytes kept of one datagram (HAProxy's lines are at most 1024 by default)


def bind(port: int, host: str = "127.0.0.1") -> socket.socket:
    """A UDP socket on host:port with as large a receive buffer as the kernel allows."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    sock.bind((host, port))
    return sock


def writer(path: Path, max_bytes: int, backups: int) -> logging.Logger:
    """A logger that writes each message as one line to path, rotated at max_bytes."""
    handler = logging.handlers.RotatingFileHandler(
        path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8", errors="replace"
    )
    handler.setFormatter(logging.Formatter("%(message)s"))
    log = logging.getLogger("attnviz.haproxy_access")
    log.propagate = False
    log.setLevel(logging.INFO)
    log.handlers[:] = [handler]
    return log


def line(datagram: bytes) -> str:
    """One datagram as one line of text: cut, without its newline, no line breaks inside."""
    text = datagram[:MAX_LINE].decode("utf-8", errors="replace").rstrip("\r\n")
    return text.replace("\r", " ").replace("\n", " ")


def serve(sock: socket.socket, log: logging.Logger) -> None:
    """Write every datagram that arrives, until the process is told to stop."""
    while True:
        log.info(line(sock.recv(MAX_LINE + 1)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True, help="the UDP port on 127.0.0.1")
    ap.add_argument("--file", type=Path, required=True, help="the log file")
    ap.add_argument("--max-bytes", type=int, required=True, help="rotate at this size")
    ap.add_argument("--backups", type=int, required=True, help="old files kept")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # supervisord's stop: a clean exit
    sock = bind(args.port)
    granted = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    print(f"receiving on 127.0.0.1:{args.port} (buffer {granted} bytes) into {args.file}")
    sys.stdout.flush()
    try:
        serve(sock, writer(args.file, args.max_bytes, args.backups))
    finally:
        logging.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
