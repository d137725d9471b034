"""How a run's messages leave the server: Nagle's algorithm off on each TCP socket of the process
(attnviz/ui/transport.py), tested on the same kernel as the server with real sockets; and a
session's events handed to a real asyncio event loop in batches, in order (attnviz/ui/compat.py's
``batched_hand_off``).

Streamlit 1.67 makes its listening socket as ``socket.socket(family=...)``, without the protocol
number, so asyncio does not turn Nagle off on the connections it accepts; these tests make theirs
the same way.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from pathlib import Path

import pytest
from streamlit.runtime.app_session import AppSession
from streamlit.testing.v1 import AppTest

from attnviz.ui import compat, transport

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
    """The app's patches as in a process that has not installed them yet (undone afterwards)."""
    original = compat._original.get("_call_soon_on_event_loop")
    if original is not None:
        monkeypatch.setattr(AppSession, "_call_soon_on_event_loop", original)
    monkeypatch.setattr(compat, "_state", {})
    monkeypatch.setattr(compat, "_nodelay_done", threading.Event())
    monkeypatch.delenv(compat.ENV, raising=False)


def test_a_listening_socket_hands_nodelay_to_what_it_accepts(listener):
    sock, connect = listener
    assert transport.send_at_once(sock.fileno())
    assert _nodelay(sock) and _nodelay(connect())


def test_nodelay_all_sets_the_listener_and_the_connections_already_open(listener):
    sock, connect = listener
    early = connect()  # a first visitor, connected before the first page run
    assert transport.nodelay_all() >= 3  # the listener, and both ends of the connection
    assert _nodelay(sock) and _nodelay(early) and _nodelay(connect())


def test_the_nodelay_patch_runs_once_per_process(listener, fresh, monkeypatch):
    calls = []
    monkeypatch.setattr(transport, "nodelay_all", lambda: calls.append(1) or 3)
    assert compat.install(("nodelay",)) == {"nodelay": True}
    assert compat.install(("nodelay",)) == {"nodelay": True}
    assert calls == [1]


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


class _Session:
    """What AppSession's hand-off needs of a session: its event loop (a real one, in a thread)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._event_loop = loop


@pytest.fixture
def loop():
    """A real asyncio event loop running in its own thread; -> (loop, wake-ups counted)."""
    loop = asyncio.new_event_loop()
    wakeups = []
    original = loop.call_soon_threadsafe

    def counted(*args, **kwargs):
        wakeups.append(1)
        return original(*args, **kwargs)

    loop.call_soon_threadsafe = counted
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop, wakeups
    original(loop.stop)
    thread.join(timeout=10)
    loop.close()


def _settle(loop: asyncio.AbstractEventLoop) -> None:
    """Wait until the loop has run everything handed to it so far."""
    done = threading.Event()
    loop.call_soon_threadsafe(done.set)
    assert done.wait(timeout=10)


def test_events_handed_over_while_the_loop_is_busy_take_one_wakeup_and_keep_their_order(loop):
    loop, wakeups = loop
    session, ran = _Session(loop), []
    busy, free = threading.Event(), threading.Event()
    loop.call_soon_threadsafe(lambda: (busy.set(), free.wait(10)))  # the loop serves others
    assert busy.wait(10)
    wakeups.clear()
    for i in range(100):  # a run's messages, from its own thread
        compat.hand_over(session, lambda i=i: ran.append(i))
    free.set()
    _settle(loop)
    assert ran == list(range(100))
    assert len(wakeups) == 2  # one for the hundred events, one for _settle


def test_events_from_many_threads_each_run_once_in_each_threads_order(loop):
    loop, _ = loop
    session, ran = _Session(loop), []

    def run(k: int) -> None:
        for i in range(200):
            compat.hand_over(session, lambda i=i: ran.append((k, i)))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _settle(loop)
    assert sorted(ran) == [(k, i) for k in range(4) for i in range(200)]
    for k in range(4):
        assert [i for kk, i in ran if kk == k] == list(range(200))


def test_an_event_that_fails_leaves_the_others_running(loop, caplog):
    loop, _ = loop
    session, ran = _Session(loop), []
    compat.hand_over(session, lambda: ran.append(1))
    compat.hand_over(session, lambda: 1 / 0)
    compat.hand_over(session, lambda: ran.append(2))
    _settle(loop)
    compat.hand_over(session, lambda: ran.append(3))  # and the queue still works
    _settle(loop)
    assert ran == [1, 2, 3]
    assert "a session's event failed" in caplog.text


def test_the_app_hands_events_over_in_batches(fresh, loop):
    """After app.py's first run, Streamlit's own hand-off (what every message of a run goes
    through) queues a busy loop's events behind one wake-up."""
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    assert not at.exception
    loop, wakeups = loop
    session, ran = _Session(loop), []
    busy, free = threading.Event(), threading.Event()
    loop.call_soon_threadsafe(lambda: (busy.set(), free.wait(10)))
    assert busy.wait(10)
    wakeups.clear()
    for i in range(50):
        AppSession._call_soon_on_event_loop(session, lambda i=i: ran.append(i))
    free.set()
    _settle(loop)
    assert ran == list(range(50))
    assert len(wakeups) == 2  # unbatched, Streamlit wakes the loop 50 times
