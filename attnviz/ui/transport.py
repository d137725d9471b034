"""The server's TCP sockets send every message at once (TCP_NODELAY), as a browser's own do.

A listening socket made without its protocol number does not look like TCP to asyncio, which
then skips turning Nagle's algorithm off on the connections it accepts: a run's first small
message leaves at once and the rest wait for the browser's delayed acknowledgement (40 ms on
Linux, up to 200 ms on Windows). ``nodelay_all()`` sets TCP_NODELAY on every TCP socket the
process holds; on Linux a listening socket hands the setting to every connection it accepts
from then on. Where the process's descriptors cannot be listed (no ``/proc`` or ``/dev/fd``)
it changes nothing. ``attnviz.ui.compat`` calls it on the app's first run, once the server's
listening socket exists. Measured gain: docs/patches.md.
"""

from __future__ import annotations

import os
import socket

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


def nodelay_all() -> int:
    """TCP_NODELAY on every TCP socket this process holds. -> how many were set."""
    return sum(send_at_once(fd) for fd in _descriptors())
