"""The attacks of issue 28 as the soak replays them (scripts/soak_class.py), one registry.

Each attack is what one hostile visitor did through HAProxy, from its own loopback addresses
(127.0.0.x: a client socket bound to a chosen address, so per-source limits meet it as they would
meet a real one), bounded in count and time, and stops by itself or when asked. It starts when the
class the students join has started (it knows the code, as a visitor in the room would), gets a
head start (``ready``), runs on while the students join and follow, then reports what it got.

    join_flood       1,000 joins of the class from one address (fake members)
    failed_joins     10 addresses x 100 wrong codes, then the right code from a fresh address
    idle_websockets  2,000 idle websockets from one address, pings answered (holding the doors)
    big_name         a 23.9 MB name submitted to the join form from 4 tabs of one visitor
    bench_worker     3 tabs of one visitor resubmitting the largest benchmark; a 4th visitor tries
    framing          not a load attack: the headers that forbid another site to frame the page
"""

from __future__ import annotations

import base64
import os
import random
import selectors
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import requests

from attnviz.classroom.secret import CODE_ALPHABET, CODE_LENGTH
from scripts.stclient import XSRF_COOKIE, Session, SourceAdapter

BIG_NAME_BYTES = 23_900_000  # under the 25 MB the attacker used, under maxMessageSize
WAIT_S = 120.0  # the longest a single request of an attack waits


@dataclass
class Target:
    """Where the attacks go: the proxy, the class the students join, a stop signal."""

    url: str
    code: str = ""
    stop: threading.Event = field(default_factory=threading.Event)


def _kind(exc: BaseException) -> str:
    """A short name for how a request failed (its HTTP status when there was one)."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return f"http {status}" if status else type(exc).__name__


class Attack:
    """Threads doing one attack; ``outcomes`` counts what each try got."""

    head_start_s = 0.0  # how long the students wait for it at most (``ready`` may end it sooner)

    def __init__(self, target: Target) -> None:
        self.t = target
        self.outcomes: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []
        self.notes: dict[str, object] = {}

    def count(self, outcome: str, n: int = 1) -> None:
        with self.lock:
            self.outcomes[outcome] += n

    def spawn(self, fn: Callable[..., None], *args: object) -> None:
        th = threading.Thread(target=fn, args=args, daemon=True)
        th.start()
        self.threads.append(th)

    def begin(self) -> None:
        raise NotImplementedError

    def ready(self) -> bool:
        """Whether the head start is over (the attack has done its first part)."""
        return True

    def end(self) -> dict:
        self.t.stop.set()
        for th in self.threads:
            th.join(timeout=WAIT_S)
        return {"outcomes": dict(self.outcomes), **self.notes}


def _open(t: Target, query: str, source: str, path: str = "walkthrough") -> Session:
    s = Session(t.url, path=path, query_string=query, source=source, timeout=WAIT_S)
    s.rerun()
    return s


class JoinFlood(Attack):
    """1,000 sessions from one address open the class's join link (each one a new member, as
    first reported: 1,000 in 23 s), 4 at a time, each closed once its page has run."""

    head_start_s = 60.0
    joins, source, parallel = 1000, "127.0.0.10", 4

    def begin(self) -> None:
        self.left = self.joins
        for _ in range(self.parallel):
            self.spawn(self._work)

    def _work(self) -> None:
        while not self.t.stop.is_set():
            with self.lock:
                if self.left == 0:
                    return
                self.left -= 1
            try:
                with _open(self.t, f"class={self.t.code}", self.source) as s:
                    self.count("following" if s.auto_reruns else "not in the class")
            except Exception as exc:  # a refusal is an outcome to count, not a crash
                self.count(_kind(exc))

    def ready(self) -> bool:
        return self.left == 0 and sum(self.outcomes.values()) >= self.joins


def _wrong_code(rng: random.Random, right: str) -> str:
    while (code := "".join(rng.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))) == right:
        pass
    return code


class FailedJoins(Attack):
    """10 addresses x 100 well-formed wrong codes (each a fresh session on ?class=WRONG), then
    the right code from a fresh address: does it still join?"""

    head_start_s = 120.0
    sources = [f"127.0.0.{20 + i}" for i in range(10)]
    tries, fresh = 100, "127.0.0.30"

    def begin(self) -> None:
        self.done = 0
        for i, src in enumerate(self.sources):
            self.spawn(self._work, src, random.Random(i))

    def _work(self, source: str, rng: random.Random) -> None:
        for _ in range(self.tries):
            if self.t.stop.is_set():
                return
            try:
                with _open(self.t, f"class={_wrong_code(rng, self.t.code)}", source) as s:
                    self.count("in a class (!)" if s.auto_reruns else "refused")
            except Exception as exc:
                self.count(_kind(exc))
        with self.lock:
            self.done += 1
            last = self.done == len(self.sources)
        if last:
            self._right_code()

    def _right_code(self) -> None:
        try:
            with _open(self.t, f"class={self.t.code}", self.fresh) as s:
                self.notes["right_code_from_a_fresh_address_joins"] = bool(s.auto_reruns)
        except Exception as exc:
            self.notes["right_code_from_a_fresh_address_joins"] = f"no: {_kind(exc)}"

    def ready(self) -> bool:
        return "right_code_from_a_fresh_address_joins" in self.notes


def _ws_head(t: Target, cookies: dict[str, str]) -> bytes:
    parts = urlsplit(t.url)
    key = base64.b64encode(os.urandom(16)).decode()
    jar = "; ".join(f"{k}={v}" for k, v in cookies.items())
    return (
        f"GET /_stcore/stream HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
        f"Sec-WebSocket-Version: 13\r\nOrigin: {t.url}\r\nCookie: {jar}\r\n"
        f"Sec-WebSocket-Protocol: streamlit, {cookies.get(XSRF_COOKIE, 'none')}\r\n\r\n"
    ).encode()


def _pong(payload: bytes) -> bytes:
    """A client's (masked) pong frame answering a ping with payload (< 126 bytes)."""
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes([0x8A, 0x80 | len(payload)]) + mask + masked


class IdleWebsockets(Attack):
    """2,000 websockets from one address, opened as fast as one thread can, then held idle (one
    thread answers the server's pings, as a browser would): each is a session on a replica. They
    carry one affinity cookie, so all that get in sit on one replica (the worst case)."""

    head_start_s = 60.0
    sockets, source = 2000, "127.0.0.40"

    def begin(self) -> None:
        self.opened = False
        self.spawn(self._work)

    def _connect(self, cookies: dict[str, str]) -> socket.socket | None:
        parts = urlsplit(self.t.url)
        try:
            sock = socket.create_connection((parts.hostname, parts.port), 30, (self.source, 0))
        except OSError as exc:
            self.count(f"connect: {type(exc).__name__}")
            return None
        try:
            sock.sendall(_ws_head(self.t, cookies))
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = sock.recv(4096)
                if not chunk:
                    raise ConnectionResetError("closed before answering")
                head += chunk
            status = head.split(b" ", 2)[1].decode()
        except OSError as exc:
            sock.close()
            self.count(f"refused: {type(exc).__name__}")
            return None
        if status != "101":
            sock.close()
            self.count(f"http {status}")
            return None
        self.count("held")
        return sock

    def _work(self) -> None:
        http = _jar(self.t, self.source)  # the XSRF and affinity cookies, as a tab has
        cookies = requests.utils.dict_from_cookiejar(http.cookies)
        sel = selectors.DefaultSelector()
        for _ in range(self.sockets):
            if self.t.stop.is_set():
                break
            sock = self._connect(cookies)
            if sock is not None:
                sock.setblocking(False)
                sel.register(sock, selectors.EVENT_READ, bytearray())
        self.opened = True
        self.notes["held_after_opening"] = len(sel.get_map())
        while not self.t.stop.is_set() and sel.get_map():
            for key, _ in sel.select(timeout=0.5):
                self._serve(sel, key)
        self.notes["still_held_at_the_end"] = len(sel.get_map())
        for key in list(sel.get_map().values()):
            key.fileobj.close()
        sel.close()

    def _serve(self, sel: selectors.BaseSelector, key: selectors.SelectorKey) -> None:
        """Read what the server sent; answer pings; drop a socket the server closed."""
        sock, buf = key.fileobj, key.data
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            sel.unregister(sock)
            sock.close()
            self.count("closed by the server")
            return
        buf += data
        while len(buf) >= 2:
            opcode, n, at = buf[0] & 0x0F, buf[1] & 0x7F, 2
            if n == 126:
                n, at = int.from_bytes(buf[2:4], "big"), 4
            elif n == 127:
                n, at = int.from_bytes(buf[2:10], "big"), 10
            if len(buf) < at + n:
                return
            payload = bytes(buf[at : at + n])
            del buf[: at + n]
            if opcode == 0x9:
                sock.setblocking(True)
                sock.sendall(_pong(payload))
                sock.setblocking(False)
                self.count("pings answered")

    def ready(self) -> bool:
        return self.opened


def _jar(t: Target, source: str) -> requests.Session:
    """One visitor's cookie jar, its affinity cookie already set (so that all its tabs, opened
    at once, reach one replica, as a browser's tabs do once it has the cookie)."""
    http = requests.Session()
    http.mount("http://", SourceAdapter(source))
    http.get(f"{t.url}/", timeout=WAIT_S).raise_for_status()
    return http


def _button(s: Session, label: str) -> str:
    """The element id of the button labelled label on the page now (a form's has no key)."""
    for e in s.tree.values():
        if e.kind == "button" and e.text == label and e.widget_id:
            return e.widget_id
    raise KeyError(f"no button {label!r} on the page")


class BigName(Attack):
    """4 tabs of one visitor (one cookie jar: one replica) each submit the join form with the
    class's right code and a 23.9 MB name of short words, one submit after another."""

    head_start_s = 5.0
    tabs, submits_each, source = 4, 3, "127.0.0.50"

    def begin(self) -> None:
        self.sent = 0
        self.seconds: list[float] = []
        http = _jar(self.t, self.source)
        name = ("ab " * (BIG_NAME_BYTES // 3 + 1))[:BIG_NAME_BYTES]
        for _ in range(self.tabs):
            self.spawn(self._tab, http, name)

    def _tab(self, http: requests.Session, name: str) -> None:
        s = None
        try:
            for _ in range(self.submits_each):
                if self.t.stop.is_set():
                    return
                if s is None or "wt_join_name" not in s.known:
                    if s is not None:
                        s.close()
                    s = Session(
                        self.t.url,
                        path="walkthrough",
                        http=http,
                        source=self.source,
                        timeout=WAIT_S,
                    )
                    s.rerun()
                s.set_widget("wt_join_code", self.t.code)
                s.set_widget("wt_join_name", name)
                s.set_widget(_button(s, "Join the class"), True, field_name="trigger_value")
                with self.lock:
                    self.sent += 1
                run = s.rerun(timeout=WAIT_S)
                self.seconds.append(run.elapsed_s)
                joined = bool(s.auto_reruns)
                self.count("joined with it (!)" if joined else "refused" if run.ok else "error")
                if not run.ok:
                    shown = [e.text[:160] for e in run.exceptions] or [run.status or "no status"]
                    self.notes.setdefault("error_samples", []).append(shown)
        except Exception as exc:
            self.count(_kind(exc))
        finally:
            if s is not None:
                s.close()

    def ready(self) -> bool:
        return self.sent > 0

    def end(self) -> dict:
        rep = super().end()
        rep["submit_s_max"] = max(self.seconds, default=None)
        return rep


def _options(s: Session, run, key: str) -> list[str]:
    """A selectbox's option labels, from the messages that drew it."""
    wid = s.widget_id(key)
    for msg in run.messages:
        if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
            el = msg.delta.new_element
            if el.WhichOneof("type") == "selectbox" and el.selectbox.id == wid:
                return list(el.selectbox.options)
    raise KeyError(f"no options for {key}")


class BenchWorker(Attack):
    """3 tabs of one visitor (one cookie jar) resubmit the largest benchmark on the Performance
    page; a 4th visitor from another address, pinned to the same replica (its cookie), tries the
    default size every 2 s: how often is it told the runner is busy?"""

    head_start_s = 10.0
    tabs, source, other = 3, "127.0.0.60", "127.0.0.61"

    def begin(self) -> None:
        self.submitted = 0
        self.waits: list[float] = []  # the other visitor's seconds from a press to its answer
        self.http = _jar(self.t, self.source)
        for _ in range(self.tabs):
            self.spawn(self._tab)
        self.spawn(self._fourth)

    def _tab(self) -> None:
        try:
            with Session(
                self.t.url, path="performance", http=self.http, source=self.source, timeout=WAIT_S
            ) as s:
                first = s.rerun()
                s.set_widget("pf_size", _options(s, first, "pf_size")[-1])
                page = _alerts(s.rerun())
                while not self.t.stop.is_set():
                    s.click("pf_run")
                    with self.lock:
                        self.submitted += 1
                    run = s.rerun(timeout=300)
                    self.count(f"attacker: {_answer(run, page)}")
        except Exception as exc:
            self.count(f"attacker: {_kind(exc)}")

    def _fourth(self) -> None:
        while not self.submitted and not self.t.stop.is_set():
            time.sleep(0.2)
        http = requests.Session()
        http.cookies.update(self.http.cookies)  # the same replica as the attacker's tabs
        try:
            with Session(
                self.t.url, path="performance", http=http, source=self.other, timeout=WAIT_S
            ) as s:
                page = _alerts(s.rerun())
                while not self.t.stop.wait(2.0):
                    s.click("pf_run")
                    run = s.rerun(timeout=300)
                    self.count(f"other visitor: {_answer(run, page)}")
                    self.waits.append(run.elapsed_s)
        except Exception as exc:
            self.count(f"other visitor: {_kind(exc)}")

    def ready(self) -> bool:
        return self.submitted >= self.tabs

    def end(self) -> dict:
        rep = super().end()
        rep["other_visitor_answer_s"] = [round(w, 2) for w in self.waits]
        return rep


def _answer(run, page: set[str]) -> str:
    """What the Performance page said to a press of "Time them": the first words of a message it
    did not show before (page: the alerts of its first load), or ran."""
    if not run.ok:
        return "error page"
    said = [e.text for e in run.elements if e.kind == "alert" and e.text and e.text not in page]
    return said[0][:60] if said else "ran"


def _alerts(run) -> set[str]:
    return {e.text for e in run.elements if e.kind == "alert"}


class Framing(Attack):
    """Not a load: the page's answer through the proxy, and whether it may be framed elsewhere."""

    def begin(self) -> None:
        r = requests.get(f"{self.t.url}/walkthrough", timeout=WAIT_S)
        self.notes["X-Frame-Options"] = r.headers.get("X-Frame-Options")
        self.notes["Content-Security-Policy"] = r.headers.get("Content-Security-Policy")


@dataclass(frozen=True)
class Entry:
    """One attack: what it replays, and the class that does it."""

    what: str
    make: type[Attack]


ATTACKS: dict[str, Entry] = {
    "join_flood": Entry("1,000 joins of the class from one address", JoinFlood),
    "failed_joins": Entry("10 addresses x 100 wrong codes, then the right one", FailedJoins),
    "idle_websockets": Entry("2,000 idle websockets from one address", IdleWebsockets),
    "big_name": Entry("a 23.9 MB name from 4 tabs", BigName),
    "bench_worker": Entry("3 tabs hold the benchmark worker; a 4th visitor tries", BenchWorker),
    "framing": Entry("another site frames the page (headers only)", Framing),
}
