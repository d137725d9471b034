"""The server's sockets send every message at once (TCP_NODELAY), as a browser's own sockets do.

Streamlit 1.67 serves on uvicorn from a listening socket it makes itself (``socket.socket(family)``
in ``streamlit.web.server.starlette.starlette_server._bind_socket``). Made without its protocol
number, that socket does not look like TCP to asyncio, which therefore skips what it does for every
TCP connection it accepts: turning Nagle's algorithm off. With Nagle on, a run's first small
message (``new_session``) leaves at once and the rest of the run waits in the kernel until the
browser acknowledges it, and a browser's kernel delays that acknowledgement on purpose (40 ms on
Linux, up to 200 ms on Windows). Measured over the websocket on this 2-core machine: "Next" costs
the server ~6 ms and was answered in 44-48 ms; with Nagle off, in 5-6 ms.

``install()`` turns Nagle off once per process on every TCP socket the process holds: the
listening socket (Linux gives each connection it accepts from then on the same setting) and the
connections already open. The app calls it first thing on every run (app.py); after the first it
does nothing. Where the process's descriptors cannot be listed (no ``/proc`` or ``/dev/fd``) it
changes nothing, and the server works as before, only later.
"""

from __future__ import annotations

import os
import socket
import threading

_lock = threading.Lock()
_done = False
_FD_DIRS = ("/proc/self/fd", "/dev/fd")


def _descriptors() -> list[int]:
    for folder in _FD_DIRS:
        try:
            return [int(name) for name in os.listdir(folder) if name.isdigit()]
        except OSError:
            continue
    return []


def send_at_once(fd: int) -> bool:
    """Turn Nagle's algorithm off on descriptor ``fd`` if it is a TCP socket. -> whether it was one.
    Never closes or otherwise changes ``fd``: anything that is not a TCP socket is left alone."""
    try:
        sock = socket.socket(fileno=fd)  # reads the descriptor's family, type and protocol
    except OSError:  # not a socket (a file, a pipe, an epoll), or closed meanwhile
        return False
    try:
        if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
            return False
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return True
    except OSError:  # closed meanwhile, or not TCP after all
        return False
    finally:
        sock.detach()  # the descriptor stays its owner's


def install() -> int:
    """Once per process: every TCP socket it holds sends at once. -> how many were set (0 after
    the first call)."""
    global _done
    with _lock:
        if _done:
            return 0
        _done = True
        return sum(send_at_once(fd) for fd in _descriptors())
