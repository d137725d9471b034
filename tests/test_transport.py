"""The server's sockets send every message at once: Nagle's algorithm off on each TCP socket of the
process (attnviz/ui/transport.py), on the same kernel as the server, with real sockets.

Streamlit 1.67 makes its listening socket as ``socket.socket(family=...)``, without the protocol
number, so asyncio does not turn Nagle off on the connections it accepts; these tests make theirs
the same way.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.ui import transport

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def _nodelay(sock: socket.socket) -> bool:
    return bool(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))


@pytest.fixture
def listener():
    """A loopback listening socket made as Streamlit makes its own: no protocol number."""
    sock = socket.socket(family=socket.AF_INET)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    opened: list[socket.socket] = [sock]

    def connect() -> socket.socket:
        """-> the server's side of a new connection."""
        client = socket.create_connection(sock.getsockname())
        accepted, _ = sock.accept()
        opened.extend((client, accepted))
        return accepted

    yield sock, connect
    for s in opened:
        s.close()


@pytest.fixture
def fresh(monkeypatch):
    """transport.install() as in a process that has not run it yet."""
    monkeypatch.setattr(transport, "_done", False)


def test_a_listening_socket_hands_nodelay_to_what_it_accepts(listener):
    sock, connect = listener
    assert transport.send_at_once(sock.fileno())
    assert _nodelay(sock) and _nodelay(connect())


def test_install_sets_the_listener_and_the_connections_already_open(listener, fresh):
    sock, connect = listener
    early = connect()  # a first visitor, connected before the first page run
    assert transport.install() >= 3  # the listener, and both ends of the connection
    assert _nodelay(sock) and _nodelay(early) and _nodelay(connect())


def test_install_runs_once_per_process(listener, fresh):
    assert transport.install() > 0
    assert transport.install() == 0


@pytest.mark.parametrize("kind", ["pipe", "udp", "unix"])
def test_what_is_not_a_tcp_socket_is_left_alone_and_open(kind):
    if kind == "pipe":
        reader, writer = os.pipe()
        try:
            assert not transport.send_at_once(writer)
            os.write(writer, b"still open")
            assert os.read(reader, 10) == b"still open"
        finally:
            os.close(reader)
            os.close(writer)
        return
    if kind == "udp":
        pair = (socket.socket(socket.AF_INET, socket.SOCK_DGRAM),)
    else:
        pair = socket.socketpair(socket.AF_UNIX)
    try:
        assert not transport.send_at_once(pair[0].fileno())
        assert pair[0].fileno() >= 0  # still this socket's descriptor
        if kind == "unix":
            pair[0].sendall(b"still open")
            assert pair[1].recv(10) == b"still open"
    finally:
        for s in pair:
            s.close()


def test_a_closed_descriptor_is_skipped():
    sock = socket.socket(family=socket.AF_INET)
    fd = sock.fileno()
    sock.close()
    assert not transport.send_at_once(fd)


def test_the_app_turns_nagle_off_on_its_first_run(listener, fresh):
    """app.py's first run in a process reaches the server's listening socket: a visitor who
    connects afterwards gets every message of a run at once."""
    sock, connect = listener
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    assert not at.exception
    assert _nodelay(connect())
