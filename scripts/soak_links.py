"""Soak: replay a flood of distinct hostile links against a real server and watch its memory.

    python scripts/soak_links.py [--links 64] [--url http://127.0.0.1:PORT]

Without --url it starts `streamlit run app.py` on a free loopback port (and stops it after). Each
link opens a fresh session over the websocket (scripts/stclient.py), the way a visitor's browser
would, and waits for the page to finish. The links are the kinds issue 11 names: expressions built
from views of a large storage (different N each, so no two share a cache entry), tampered
numbers, huge or non-ASCII digits, Markdown in echoed text, cell values out of range.

Prints the server's resident memory (RSS, from /proc) before, after each eighth link and at the
end, and every answer's time; exits 1 if any answer was not a plain page (an exception box, or
no answer within the timeout). Asserts nothing about speed: it reports.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from scripts import streamlit_server  # noqa: E402
from scripts.stclient import ProtocolError, Session  # noqa: E402

WARM_TABS = (
    "One result cell",
    "Equivalent forms",
    "Mistakes",
    "Gradients",
    "Expand vs repeat",
    "Your expression",
    "Share & export",
    "Step by step",
)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def hostile_links(n: int) -> list[str]:
    """n distinct query strings, cycling through the kinds of attack."""
    out = []
    for i in range(n):
        big = 4096 + 97 * i  # a different N each time: no cache entry is shared
        kind = i % 8
        if kind in (0, 1, 2):  # the view-of-a-large-storage expression, then many .T
            expr = f"(net_output.view(-1)[:,None]*att_scores[:1,:1].expand(1,{big}))[:1,:1]"
            expr += ".T" * 30  # ~263 characters, as in the report (the sandbox caps nesting at 40)
            params = {"tab": "expr", "e": expr}
        elif kind == 3:
            params = {"step": "9" * (1000 + i), "seed": "²"}
        elif kind == 4:
            params = {"p": f"`x{i}` **b** :red[r] $\\Huge x$ [l](https://e.example) www.e.example"}
        elif kind == 5:
            params = {"s": "4x8x16", "x": "_".join([f"1e{30 + i % 9}"] * 512)}
        elif kind == 6:
            params = {"cell": f"{i}_{i}", "tab": "cell", "seed": str(i)}
        else:
            params = {"e": "einsum('...->...', net_output)" + " " * i, "tab": "expr"}
        out.append(urlencode(params))
    return out


def _start() -> tuple[subprocess.Popen, str]:
    port = streamlit_server.free_port()
    cmd = streamlit_server.command(port)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        streamlit_server.wait_healthy(url, proc)
    except streamlit_server.ServerError as e:
        raise SystemExit(str(e)) from None
    return proc, url


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, default=64)
    ap.add_argument("--url", help="a running server (its pid via --pid for RSS)")
    ap.add_argument("--pid", type=int, help="the server's pid when --url is given")
    ap.add_argument("--timeout", type=float, default=30.0)
    args = ap.parse_args()
    proc = None
    if args.url:
        url, pid = args.url.rstrip("/"), args.pid
    else:
        proc, url = _start()
        pid = proc.pid
    bad = 0
    try:
        with Session(url) as warm:  # every tab once, as a benign visitor: "before" is a served app
            warm.rerun()
            for label in WARM_TABS:
                warm.set_widget("pg_tab", label)
                warm.rerun()
        time.sleep(1)
        before = _rss_mb(pid) if pid else float("nan")
        print(f"server RSS before: {before:.0f} MB")
        worst = (0.0, 0.0, "")  # (growth MB, seconds, link)
        times = []
        for i, query in enumerate(hostile_links(args.links)):
            rss0 = _rss_mb(pid) if pid else float("nan")
            t0 = time.perf_counter()
            try:
                with Session(url, query_string=query, timeout=args.timeout) as s:
                    run = s.rerun()
                    ok = run.ok
            except ProtocolError as e:
                ok, run = False, None
                print(f"  link {i + 1}: no answer ({e})")
            dt = time.perf_counter() - t0
            times.append(dt)
            grow = (_rss_mb(pid) if pid else float("nan")) - rss0
            bad += not ok
            if grow > worst[0]:
                worst = (grow, dt, query[:60])
            print(f"  link {i + 1:2d}: {dt:5.2f} s  {'ok ' if ok else 'BAD'}  RSS {grow:+6.1f} MB")
            if (i + 1) % 8 == 0 and pid:
                print(f"  after {i + 1} links: RSS {_rss_mb(pid):.0f} MB")
        time.sleep(1)
        after = _rss_mb(pid) if pid else float("nan")
        print(
            f"server RSS after {args.links} links: {after:.0f} MB (grew {after - before:+.0f} MB)"
        )
        print(f"largest growth from one link: {worst[0]:+.1f} MB ({worst[2]!r})")
        print(f"slowest answer: {max(times):.2f} s; median {sorted(times)[len(times) // 2]:.2f} s")
        print(f"answers that were not a plain page: {bad}")
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
