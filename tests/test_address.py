"""Where the join link points (attnviz.classroom.address): the public URL when set, else the address
the teacher's browser used; loopback recognised by address, never by the text "127.0.0.1"; this
machine's reachable addresses found for real. The page that draws it: tests/test_serving.py (a
class server bound to 127.0.0.2) and tests/test_join_link.py (AppTest)."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

import pytest

from attnviz.classroom import address
from attnviz.classroom.address import is_loopback, join_target, parse_base_url
from attnviz.errors import AttnvizError

LAN = ("192.168.1.20", "fd00::5")


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("127.255.255.254", True),
        ("localhost", True),
        ("LOCALHOST.", True),
        ("app.localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("128.0.0.1", False),
        ("192.168.1.20", False),
        ("10.0.0.1", False),
        ("fd00::5", False),
        ("class.example.org", False),
        ("localhost.example.org", False),
        ("", False),
    ],
)
def test_loopback_is_recognised_by_address(host, loopback):
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    ("text", "base"),
    [
        ("https://class.example.org", "https://class.example.org"),
        ("https://class.example.org/", "https://class.example.org"),
        ("HTTP://Class.Example.org:8443/attn/", "http://class.example.org:8443/attn"),
        ("http://192.168.1.20:8740/walkthrough?class=X#y", "http://192.168.1.20:8740/walkthrough"),
        ("http://[fd00::5]:8740", "http://[fd00::5]:8740"),
    ],
)
def test_a_base_url_keeps_scheme_host_port_and_prefix_only(text, base):
    assert parse_base_url(text) == base


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "class.example.org",
        "ftp://class.example.org",
        "javascript:alert(1)",
        "http://user:pw@class.example.org",
        "http://class.example.org:99999",
        "http://class.example.org:0",
        "http://class.example.org/<script>",
        'http://a".example.org',
        "http://é.example.org",
        "http://" + "a" * 400 + ".org",
    ],
)
def test_a_bad_base_url_is_refused_with_what_one_looks_like(text):
    with pytest.raises(AttnvizError, match="looks like https://"):
        parse_base_url(text)


def test_the_public_url_wins_over_the_browsers_address():
    t = join_target(
        "http://localhost:8740/walkthrough",
        public_url="https://class.example.org/attn/",
        listen="127.0.0.1",
        addresses=LAN,
    )
    assert t.join_url("ACDEFGHJK") == "https://class.example.org/attn/walkthrough?class=ACDEFGHJK"
    assert t.public and not t.loopback and t.elsewhere == ()


def test_without_a_public_url_the_link_uses_the_browsers_address():
    t = join_target(
        "http://192.168.1.20:8740/walkthrough", public_url="", listen="0.0.0.0", addresses=LAN
    )
    assert t.join_url("ACDEFGHJK") == "http://192.168.1.20:8740/walkthrough?class=ACDEFGHJK"
    assert not t.loopback and not t.public and t.elsewhere == ()


def test_a_page_on_localhost_lists_the_same_page_at_the_machines_addresses():
    t = join_target("http://localhost:8740/walkthrough", public_url="", listen="", addresses=LAN)
    assert t.loopback and t.listening
    assert t.elsewhere == (
        "http://192.168.1.20:8740/walkthrough",
        "http://[fd00::5]:8740/walkthrough",
    )


def test_a_server_bound_to_one_address_lists_only_that_one():
    t = join_target(
        "http://127.0.0.1:8740/walkthrough", public_url="", listen="192.168.1.20", addresses=LAN
    )
    assert t.elsewhere == ("http://192.168.1.20:8740/walkthrough",)


@pytest.mark.parametrize("listen", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_a_server_listening_on_loopback_only_is_not_reachable(listen):
    t = join_target("http://127.0.0.1:8740/walkthrough", public_url="", listen=listen)
    assert t.loopback and not t.listening and t.elsewhere == ()
    assert urlsplit(t.join_url("ACDEFGHJK")).hostname == "127.0.0.1"


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", "0.0.0.0", "app.localhost"])
def test_the_machines_own_default_names_warn_the_teacher(host):
    assert join_target(f"http://{host}:8740/walkthrough", public_url="", listen="").loopback


def test_an_address_typed_on_purpose_is_kept_without_a_warning():
    """127.0.0.2 (the tests' stand-in for a school network's address) is no default name."""
    t = join_target("http://127.0.0.2:8740/walkthrough", public_url="", listen="127.0.0.2")
    assert not t.loopback and t.elsewhere == ()
    assert t.join_url("ACDEFGHJK") == "http://127.0.0.2:8740/walkthrough?class=ACDEFGHJK"


def test_a_forged_browser_url_falls_back_to_streamlits_default():
    t = join_target("javascript:alert(1)", public_url="", listen="", addresses=())
    assert t.join_url("ACDEFGHJK") == "http://localhost:8501/walkthrough?class=ACDEFGHJK"


def test_the_environment_gives_the_public_url_and_the_listening_address(monkeypatch):
    monkeypatch.setenv(address.PUBLIC_URL_ENV, "https://class.example.org")
    monkeypatch.setenv(address.LISTEN_ENV, "127.0.0.1")
    t = join_target("http://localhost:8740/walkthrough")
    assert t.base == "https://class.example.org" and not t.listening


def test_a_bad_public_url_is_the_operators_mistake():
    with pytest.raises(AttnvizError):
        join_target("http://localhost:8501/", public_url="class.example.org", listen="")


def test_the_machines_reachable_addresses_are_real_and_none_is_loopback():
    found = address.reachable_addresses()
    for text in found:
        ip = ipaddress.ip_address(text)
        assert not (ip.is_loopback or ip.is_link_local or ip.is_unspecified), text
    assert len(set(found)) == len(found)
    versions = [ipaddress.ip_address(a).version for a in found]
    assert versions == sorted(versions)  # IPv4 first


def test_loopback_link_local_and_junk_are_never_offered():
    got = address._usable(["127.0.0.1", "::1", "fe80::1%eth0", "0.0.0.0", "x", "10.1.2.3"])
    assert got == ("10.1.2.3",)
