"""How fast the app answers: Playground rerun server time, and first paint in a real browser.

    .venv/bin/python benchmarks/bench_app.py [--reruns 30] [--no-browser] [--protocol]

0. --protocol: a real `streamlit run app.py` driven over its websocket by scripts/stclient.py, one
   session: the server time (request sent -> script_finished) of a plain rerun, of "Next"/"Back"
   in the step-by-step, of a tab switch and of a cell edit; with cProfile's top functions for Next
   when --profile is given. This is what a visitor's click costs the server. Target: Next <= 12 ms.

1. Rerun: the Playground script run by Streamlit's own script runner (AppTest) on the classic
   example, warm (after the first run filled the caches): a plain rerun, stepping Next/Back, and a
   cell edit (new numbers: the library calls and figures are computed afresh). Target <= 150 ms.
2. First paint: `streamlit run app.py` on a free loopback port; once the server answers its health
   check, chromium opens the page; we report the browser's first contentful paint and the time
   until the result table and the first figure are on screen. Target <= 5 s.
Prints the numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # scripts/ lives beside benchmarks/

from scripts import streamlit_server  # noqa: E402  (one way to start the app)
from scripts.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402  (one way to start chromium)


def _ms(samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return f"median {1e3 * statistics.median(samples):6.1f} ms  (IQR {1e3 * q[0]:.1f}-{1e3 * q[2]:.1f} ms, n={len(samples)})"


def bench_rerun(n: int) -> None:
    from streamlit.testing.v1 import AppTest

    from attnviz.ui.playground import editor_key

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    t0 = time.perf_counter()
    at.run()
    print(f"first run (cold caches, imports done): {1e3 * (time.perf_counter() - t0):.0f} ms")
    assert not at.exception, at.exception

    def timed(action) -> float:
        t = time.perf_counter()
        action()
        return time.perf_counter() - t

    plain = [timed(at.run) for _ in range(n)]
    steps = []
    for i in range(n):
        button = "pg_next" if i % 2 == 0 else "pg_back"
        steps.append(timed(lambda b=button: at.button(key=b).click().run()))
    edits = []
    for i in range(n):
        key = editor_key("x", at.session_state["pg_version"], 0)
        at.session_state[key] = {
            "edited_rows": {0: {"h0": 0.5 + i / 1000}},
            "added_rows": [],
            "deleted_rows": [],
        }
        edits.append(timed(at.run))
    assert not at.exception, at.exception
    print(f"Playground rerun, classic example, warm:  {_ms(plain)}")
    print(f"Playground rerun after Next/Back:         {_ms(steps)}")
    print(f"Playground rerun after a new cell value:  {_ms(edits)}")
    print("target: <= 150 ms of server time per rerun")


def bench_first_paint(loads: int) -> None:
    if not Path(CHROMIUM).exists():
        print(f"first paint: skipped, no chromium at {CHROMIUM}")
        return
    from playwright.sync_api import sync_playwright

    port = streamlit_server.free_port()
    cmd = streamlit_server.command(port, args=["--server.fileWatcherType", "none"])
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        t_start = time.perf_counter()
        try:
            streamlit_server.wait_healthy(url.rstrip("/"), proc)
        except streamlit_server.ServerError as e:
            raise SystemExit(str(e)) from None
        print(f"server answers its health check after {time.perf_counter() - t_start:.1f} s")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            fcp, table, figure = [], [], []
            for i in range(loads):
                page = browser.new_page(viewport={"width": 1366, "height": 768})
                t0 = time.perf_counter()
                page.goto(url)
                page.wait_for_selector(".st-key-pg_result table", timeout=120_000)
                table.append(time.perf_counter() - t0)
                page.wait_for_selector('[data-testid="stPlotlyChart"] .main-svg', timeout=120_000)
                figure.append(time.perf_counter() - t0)
                paint = page.evaluate(
                    "() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime"
                )
                if paint:
                    fcp.append(paint / 1e3)
                label = "first load (cold server caches)" if i == 0 else f"load {i + 1}"
                print(
                    f"{label:32s} first contentful paint {fcp[-1] if fcp else float('nan'):.2f} s, "
                    f"result table {table[-1]:.2f} s, first figure {figure[-1]:.2f} s"
                )
                page.close()
            browser.close()
        print(f"first contentful paint: {_ms(fcp)}")
        print(f"result table on screen: {_ms(table)}")
        print(f"first figure on screen: {_ms(figure)}")
        print("target: <= 5 s after the server answers")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def _start_server(port: int, root: Path = ROOT) -> subprocess.Popen:
    cmd = streamlit_server.command(port)
    proc = subprocess.Popen(
        cmd, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=_env(root)
    )
    try:
        streamlit_server.wait_healthy(f"http://127.0.0.1:{port}", proc)
    except streamlit_server.ServerError as e:
        raise SystemExit(str(e)) from None
    return proc


def _env(root: Path) -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(root)}


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) the process has used so far (Linux /proc)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_protocol(n: int, root: Path = ROOT) -> None:
    from scripts.stclient import Session

    port = streamlit_server.free_port()
    proc = _start_server(port, root)
    cpu: dict[str, float] = {}

    def timed(label: str, action) -> list:
        c0 = _cpu_s(proc.pid)
        runs = [action(i) for i in range(n)]
        cpu[label] = (_cpu_s(proc.pid) - c0) / n
        return runs

    def step(s: Session, i: int):
        s.click("pg_next" if i % 2 == 0 else "pg_back")
        return s.rerun()

    def tab(s: Session, i: int):
        s.set_widget("pg_tab", "One result cell" if i % 2 == 0 else "Step by step")
        return s.rerun()

    def cell(s: Session, i: int):
        key = next(k for k in s.known if k.startswith("pg_x") and k.endswith("_0"))
        rows = {"0": {"h0": f"{0.5 + i / 1000:.4f}"}}
        s.set_widget(key, json.dumps({"edited_rows": rows, "added_rows": [], "deleted_rows": []}))
        return s.rerun()

    try:
        with Session(f"http://127.0.0.1:{port}") as s:
            first = s.rerun()
            print(f"first load: {first.elapsed_s * 1e3:.0f} ms, {first.deltas} deltas")
            results = {
                "plain rerun": timed("plain rerun", lambda i: s.rerun()),
                "Next/Back": timed("Next/Back", lambda i: step(s, i)),
                "tab switch": timed("tab switch", lambda i: tab(s, i)),
                "cell edit": timed("cell edit", lambda i: cell(s, i)),
            }
        print("server CPU per interaction: the server's user+system seconds over n interactions")
        for label, runs in results.items():
            bad = sum(not r.ok for r in runs)
            size = statistics.median(r.bytes for r in runs)
            deltas = statistics.median(r.deltas for r in runs)
            print(
                f"{label:12s} server CPU {1e3 * cpu[label]:5.1f} ms | answered {_ms([r.elapsed_s for r in runs])}"
                f" | {size / 1e3:.1f} KB, {deltas:.0f} deltas, {bad} not ok"
            )
        print("target: Next <= 12 ms of server time")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reruns", type=int, default=30)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--protocol", action="store_true", help="only the websocket benchmark")
    parser.add_argument("--root", type=Path, default=ROOT, help="app checkout to serve")
    args = parser.parse_args()
    if args.protocol:
        bench_protocol(args.reruns, args.root)
        return
    bench_rerun(args.reruns)
    if not args.no_browser:
        bench_first_paint(args.loads)


if __name__ == "__main__":
    main()
