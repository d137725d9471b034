"""The serve command's configs as data (fast): HAProxy's per-source limits and connection numbers
derived from the capacity model (docs/deploy.md, "Connections per source"), written into a config
that `haproxy -c` accepts (write_configs runs it), and the replicas told whose forwarding header to
believe. The behaviour behind each rule is seen in tests/test_serving_proxy.py (a real HAProxy).

Needs Debian's haproxy (write_configs checks the config with it).
"""

from __future__ import annotations

import re

import pytest

from scripts import serve


@pytest.mark.parametrize("replicas", [1, 2, 3, 6, 16])
def test_one_address_never_holds_every_place_on_a_replica(replicas):
    """Even with all its requests pinned to one replica by the affinity cookie, one address leaves
    that replica room for the students it is sized for, with their tabs."""
    limits = serve.Limits.for_replicas(replicas)
    free = limits.replica_maxconn - limits.source_streams
    assert free >= serve.STUDENTS_PER_REPLICA * serve.TABS


@pytest.mark.parametrize("replicas", [1, 2, 6])
def test_a_school_behind_one_address_fits_within_its_limits(replicas):
    limits = serve.Limits.for_replicas(replicas)
    tabs = serve.SCHOOL * serve.TABS
    assert limits.source_streams > tabs  # every tab's websocket, and page loads besides
    assert limits.source_connections >= limits.source_streams
    assert limits.source_connection_rate >= serve.SCHOOL * serve.PAGE_CONNECTIONS
    assert limits.source_request_rate >= serve.SCHOOL * serve.PAGE_REQUESTS
    assert limits.maxconn >= replicas * limits.replica_maxconn + limits.source_connections


def test_an_open_tab_outlives_the_idle_timeout():
    """The replicas ping every websocket each WS_PING_S; the proxy closes one only after several
    pings went unanswered, so a tab that is open but idle is never cut."""
    limits = serve.Limits.for_replicas(2)
    assert limits.tunnel_s >= 3 * serve.WS_PING_S


def _written(tmp_path, **kw) -> tuple[serve.Settings, str, str]:
    s = serve.Settings(replicas=2, replica_ports=[8701, 8702], run_dir=tmp_path, **kw)
    serve.write_configs(s)
    return s, (tmp_path / "haproxy.cfg").read_text(), (tmp_path / "supervisord.conf").read_text()


def test_the_written_config_carries_the_derived_limits(tmp_path):
    s, cfg, conf = _written(tmp_path)
    lim = s.connection_limits
    assert re.search(rf"sc0_conn_cur gt {lim.source_connections}\b", cfg)
    assert re.search(rf"sc0_conn_rate gt {lim.source_connection_rate}\b", cfg)
    assert re.search(rf"sc1_conn_cur gt {lim.source_streams}\b", cfg)
    assert re.search(rf"sc0_http_req_rate gt {lim.source_request_rate}\b", cfg)
    assert re.search(rf"default-server .* maxconn {lim.replica_maxconn}$", cfg, re.M)
    assert re.search(rf"^\s+maxconn {lim.maxconn}$", cfg, re.M)
    assert f"timeout tunnel {lim.tunnel_s}s" in cfg
    assert int(re.search(r"^minfds = (\d+)$", conf, re.M).group(1)) > 2 * lim.maxconn


def test_smaller_limits_reach_the_config_as_given(tmp_path):
    small = serve.Limits(4, 8, 100, 30, 50, 200, 120)
    _, cfg, _ = _written(tmp_path, limits=small)
    assert "sc1_conn_cur gt 4" in cfg and "maxconn 50" in cfg


def test_the_replicas_believe_a_forwarded_address_from_the_proxy_only(tmp_path):
    _, cfg, conf = _written(tmp_path)
    assert serve.environment(serve.Settings(run_dir=tmp_path))["FORWARDED_ALLOW_IPS"] == (
        serve.PROXY_SOURCE
    )
    assert f'FORWARDED_ALLOW_IPS="{serve.PROXY_SOURCE}"' in conf
    assert f"default-server source {serve.PROXY_SOURCE} " in cfg
    # what a visitor sends is dropped; the proxy adds the address it saw as it forwards
    rules = {line.strip() for line in cfg.splitlines() if not line.strip().startswith("#")}
    assert {"http-request del-header X-Forwarded-For", "option forwardfor"} <= rules


def test_the_replicas_ping_as_often_as_the_idle_timeout_assumes(tmp_path):
    _, _, conf = _written(tmp_path)
    assert f'STREAMLIT_SERVER_WEBSOCKET_PING_INTERVAL="{serve.WS_PING_S}"' in conf
