"""Replay issue 11's memory attack on the sandbox and print what a cached trace would pickle to.

    .venv/bin/python scripts/sandbox_attack.py            # one link per N, sizes pickled
    .venv/bin/python scripts/sandbox_attack.py --flood 64 # 64 distinct links, RSS before/after

The expression is one large product made of views, cut to one cell, followed by many ``.T``:
each step used to keep a view of the large storage, and pickling a trace wrote that storage
out once per step. Prints, for each N, the outcome, the bytes the sandbox counted, and the
pickled size of the trace and of what the expression tab caches (its page summary).
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attnviz import examples  # noqa: E402
from attnviz.sandbox import SandboxError, evaluate  # noqa: E402


def attack(n: int, length: int = 263) -> str:
    head = f"(net_output.view(-1)[:,None]*att_scores[:1,:1].expand(1,{n}))[:1,:1]"
    return head + ".T" * min((length - len(head)) // 2, 28)  # 28: under the depth limit


def rss_mb() -> float:
    """This process's resident memory in MB (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def flood(n_links: int) -> None:
    """Evaluate n_links distinct attack links through the tab's own cache; print RSS around it."""
    from attnviz.ui import expression

    x, w = examples.classic()
    xn, wn = x.numpy(), w.numpy()
    expression._summary("net_output", xn, wn, None, None)  # warm: imports, PyTorch start-up
    before = rss_mb()
    start = time.perf_counter()
    worst = 0.0
    for i in range(n_links):
        t0 = time.perf_counter()
        expression._summary(attack(20_000 + 97 * i), xn, wn, None, None)
        worst = max(worst, time.perf_counter() - t0)
    after = rss_mb()
    print(
        f"flood of {n_links} distinct links through the tab's cache: RSS {before:.0f} MB -> "
        f"{after:.0f} MB (+{after - before:.1f} MB), slowest link {worst * 1e3:.0f} ms, "
        f"total {time.perf_counter() - start:.1f} s"
    )


def main() -> None:
    from attnviz.ui.expression import summarise  # the page's cached value (no streamlit call)

    if "--flood" in sys.argv:
        flood(int(sys.argv[sys.argv.index("--flood") + 1]))
        return

    x, w = examples.classic()  # (2, 3, 5), (2, 3) float32, as the page passes them
    variables = {"net_output": x, "att_scores": w}
    for n in (1000, 10000, 33000, 100000):
        expr = attack(n)
        try:
            trace = evaluate(expr, variables)
            outcome = f"result {tuple(trace.result.shape)}, {len(trace.steps)} steps"
            traced = len(pickle.dumps(trace))
        except SandboxError as exc:
            outcome, traced = f"refused ({exc.kind.value}): {exc.message[:70]}", 0
        cached = len(pickle.dumps(summarise(expr, x.numpy(), w.numpy(), None, None)))
        print(f"N={n:>6} len={len(expr)}: {outcome}")
        print(f"          pickled trace {traced:,} B; pickled tab cache entry {cached:,} B")


if __name__ == "__main__":
    main()
