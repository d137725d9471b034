"""Replay issue 11's memory attack on the sandbox and print what a cached trace would pickle to.

    .venv/bin/python scripts/sandbox_attack.py

The expression is one large product made of views, cut to one cell, followed by many ``.T``:
each step used to keep a view of the large storage, and pickling a trace wrote that storage
out once per step. Prints, for each N, the outcome, the bytes the sandbox counted, and the
pickled size of the trace and of what the expression tab caches (its page summary).
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attnviz import examples  # noqa: E402
from attnviz.sandbox import SandboxError, evaluate  # noqa: E402


def attack(n: int, length: int = 263) -> str:
    head = f"(net_output.view(-1)[:,None]*att_scores[:1,:1].expand(1,{n}))[:1,:1]"
    return head + ".T" * min((length - len(head)) // 2, 28)  # 28: under the depth limit


def main() -> None:
    from attnviz.ui.expression import summarise  # the page's cached value (no streamlit call)

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
