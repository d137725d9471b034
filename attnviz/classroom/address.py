"""Where students reach the class: the join link's address, and this machine's reachable addresses.

The join link uses, in this order: the operator's public URL (``ATTNVIZ_PUBLIC_URL``, set by
``scripts/serve.py start --public-url``: a DNS name, or a front TLS proxy), else the address the
teacher's browser used. When that address is this machine's own default name (``localhost``,
127.0.0.1, ::1: ``is_default_local``), a student's phone would reach itself, not this machine:
``join_target`` says so, and lists the same page at each
of this machine's reachable addresses (when the server listens on them) so the teacher can reopen it
there before any student is told to join.

Standard library only (no streamlit): a page passes in what its framework knows.

    target = join_target("http://localhost:8740/walkthrough", public_url="", listen="0.0.0.0")
    target.loopback      # True: warn the teacher
    target.elsewhere     # ('http://192.168.1.20:8740/walkthrough', ...)
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from attnviz.errors import AttnvizError

PUBLIC_URL_ENV = "ATTNVIZ_PUBLIC_URL"  # the URL students use, set by the operator
LISTEN_ENV = "ATTNVIZ_LISTEN"  # the address the front proxy listens on (scripts/serve.py --bind)
PAGE = "/walkthrough"
MAX_URL_CHARS = 300
_ANY = ("", "0.0.0.0", "::", "*")  # listening on every interface


_OWN_NAMES = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))


def _host_ip(host: str) -> str | ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """'localhost' for a localhost name, the address for an IP (IPv4-mapped IPv6 unwrapped,
    brackets allowed), None for any other name."""
    host = host.strip().strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return "localhost"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def is_loopback(host: str) -> bool:
    """True for an address only this machine reaches: 127.0.0.0/8, ::1, ``localhost`` (and names
    under ``.localhost``). Brackets around an IPv6 address are allowed."""
    ip = _host_ip(host)
    return ip == "localhost" or (ip is not None and not isinstance(ip, str) and ip.is_loopback)


def is_default_local(host: str) -> bool:
    """True for the names a browser on the server's own machine opens it by: ``localhost`` (and
    names under ``.localhost``), 127.0.0.1, ::1, 0.0.0.0. The teacher is warned for these. Other
    loopback addresses (127.0.0.2, ...) are only ever typed on purpose (a test network, a tunnel):
    the link keeps them and no warning is shown."""
    ip = _host_ip(host)
    if ip is None or isinstance(ip, str):
        return ip == "localhost"
    return ip.is_unspecified or ip in _OWN_NAMES


def parse_base_url(text: object) -> str:
    """A site's root as ``scheme://host[:port][/prefix]`` (no query, no fragment, no trailing
    slash), or AttnvizError naming what a base URL looks like. Used for the operator's public URL
    and for the URL a browser reports (which a visitor controls: it is parsed, never trusted)."""
    help_ = "A public URL looks like https://class.example.org or http://192.168.1.20:8740"
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_URL_CHARS:
        raise AttnvizError(help_)
    parts = urlsplit(text.strip())
    try:
        port = parts.port
        host = parts.hostname or ""
    except ValueError:
        raise AttnvizError(f"{help_} (its port is not a number from 1 to 65535).") from None
    if parts.scheme not in ("http", "https") or not host or parts.username or parts.password:
        raise AttnvizError(help_)
    if not text.isascii() or any(c in text for c in " \"'<>\\`{}|^"):
        raise AttnvizError(f"{help_} (plain ASCII, no spaces or quotes).")
    if port == 0:
        raise AttnvizError(f"{help_} (its port is not a number from 1 to 65535).")
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def page_url(base: str, page: str = PAGE) -> str:
    """The page at base: base's prefix, then page (a base that already ends with it is kept)."""
    base = base.rstrip("/")
    return base if base.endswith(page) else base + page


def reachable_addresses() -> tuple[str, ...]:
    """This machine's addresses that another device on its networks could use: no loopback, no
    link-local, no unspecified address; IPv4 first, each once. Found from the routes the machine
    would use to reach the internet and its LAN (no packet is sent) and from its host name.
    Empty when it has none (no network)."""
    found: list[str] = []
    for family, probe in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((probe, 9))  # a datagram socket's connect sends nothing: it picks a route
            found.append(s.getsockname()[0])
    with contextlib.suppress(OSError, UnicodeError):
        for *_, sockaddr in socket.getaddrinfo(socket.gethostname(), None):
            found.append(str(sockaddr[0]))
    return _usable(found)


def _usable(candidates: list[str]) -> tuple[str, ...]:
    seen: dict[str, ipaddress.IPv4Address | ipaddress.IPv6Address] = {}
    for text in candidates:
        try:
            ip = ipaddress.ip_address(text.split("%")[0])
        except ValueError:
            continue
        if ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast:
            continue
        seen.setdefault(str(ip), ip)
    return tuple(sorted(seen, key=lambda a: (seen[a].version, seen[a])))


def listens_beyond_loopback(listen: str) -> bool:
    """Whether a server listening on ``listen`` (an address, '' or 0.0.0.0 for all) can be
    reached from another device."""
    return listen.strip().strip("[]") in _ANY or not is_loopback(listen)


@dataclass(frozen=True)
class JoinTarget:
    """Where the join link points. base: the site's root for every link the class hands out.
    public: base came from the operator's public URL. loopback: base reaches only this machine.
    listening: the server listens beyond loopback (else students cannot reach it whatever the
    address). elsewhere: the same page at each reachable address of this machine (only when
    loopback and listening)."""

    base: str
    public: bool
    loopback: bool
    listening: bool
    elsewhere: tuple[str, ...] = ()

    def join_url(self, code: str, page: str = PAGE) -> str:
        """The link a student opens: the page and the class code."""
        return f"{page_url(self.base, page)}?class={code}"


def join_target(
    browser_url: str | None,
    *,
    public_url: str | None = None,
    listen: str | None = None,
    addresses: tuple[str, ...] | None = None,
) -> JoinTarget:
    """Where a class's links point, from the URL the teacher's browser reports, the operator's
    public URL (default ``$ATTNVIZ_PUBLIC_URL``) and the address the server listens on (default
    ``$ATTNVIZ_LISTEN``, '' for every interface). addresses: this machine's reachable ones
    (default ``reachable_addresses()``; looked up only when needed). A public URL that does not
    parse raises AttnvizError (the operator's mistake: say so); a browser URL that does not parse
    counts as ``http://localhost:8501``, Streamlit's default."""
    public_url = os.environ.get(PUBLIC_URL_ENV, "") if public_url is None else public_url
    listen = os.environ.get(LISTEN_ENV, "") if listen is None else listen
    listening = listens_beyond_loopback(listen)
    if public_url:
        base = parse_base_url(public_url)
        return JoinTarget(base, True, is_default_local(urlsplit(base).hostname or ""), listening)
    try:
        base = parse_base_url(browser_url)
    except AttnvizError:
        base = "http://localhost:8501"
    parts = urlsplit(base)
    if parts.path.endswith(PAGE):  # the teacher was on the page: the site's root is above it
        base = urlunsplit((parts.scheme, parts.netloc, parts.path[: -len(PAGE)], "", ""))
    loopback = is_default_local(parts.hostname or "")
    elsewhere: tuple[str, ...] = ()
    if loopback and listening:
        if addresses is None:
            addresses = reachable_addresses()
        here = listen.strip().strip("[]")
        shown = addresses if here in _ANY else tuple(a for a in addresses if a == here) or (here,)
        elsewhere = tuple(_at(base, a) for a in shown)
    return JoinTarget(base, False, loopback, listening, elsewhere)


def _at(base: str, address: str) -> str:
    """base with its host replaced by address (port, scheme and prefix kept)."""
    parts = urlsplit(base)
    host = f"[{address}]" if ":" in address else address
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, page_url(parts.path), "", ""))
