"""Warm a server process up before its first visitor, then run Streamlit in that same process.

    python -m attnviz.ui.warm run app.py --server.port 8501 ...   # any `streamlit` arguments

PyTorch, plotly and pyarrow load parts of themselves on first use: in a fresh process the first
"Your expression" costs about 1-2 s (the sandbox's shape-only pass on the ``meta`` device loads
``torch._dynamo``), the first "Gradients" about 0.5 s (autograd's engine) and the first table
pyarrow's conversions. Whoever opens those first in a class would wait for it, and everyone
queued behind them too. ``scripts/serve.py`` starts every replica through this module, so that
the cost is paid before the replica answers its health check (HAProxy sends it nobody until
then). A plain ``streamlit run app.py`` still works and pays the cost on first use.
"""

from __future__ import annotations

import sys
import time
from importlib.metadata import entry_points

import numpy as np
import pandas as pd

from attnviz import examples, figures, sandbox, trace
from attnviz.ui import compat, longlived


def warm_up() -> dict[str, float]:
    """Use, once, on the classic example, what a visitor's first clicks would load.
    -> seconds each part took."""
    took: dict[str, float] = {}
    x, w = examples.classic()

    def part(name: str, fn) -> None:
        t0 = time.perf_counter()
        fn()
        took[name] = time.perf_counter() - t0

    part(
        "sandbox",
        lambda: sandbox.evaluate(
            "(net_output * att_scores.softmax(1)[..., None]).sum(axis=1)",
            {"net_output": x, "att_scores": w},
        ),
    )
    part("autograd", lambda: trace.gradients(x, w))
    part("trace", lambda: (trace.broadcast_steps(x, w), trace.mistakes(x, w)))
    part("figures", lambda: figures.story_figures(trace.broadcast_steps(x, w))[0].to_json())
    part("tables", lambda: _arrow(pd.DataFrame(np.zeros((2, 3)), columns=["a", "b", "c"])))
    return took


def _arrow(frame: pd.DataFrame) -> bytes:
    """A table as Arrow IPC bytes, as st.dataframe and st.data_editor send it (pyarrow's API)."""
    import pyarrow as pa

    table = pa.Table.from_pandas(frame)
    sink = pa.BufferOutputStream()
    with pa.RecordBatchStreamWriter(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def main(argv: list[str]) -> None:
    # before the first request (a failover's first click counts); TCP_NODELAY waits for app.py's
    # first run, once the listening socket exists
    compat.install(tuple(name for name in compat.PATCHES if name != "nodelay"))
    took = warm_up()
    longlived.freeze()  # what the warm-up loaded stays out of the collector's full passes
    print(
        "attnviz: warmed up in "
        + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in took.items()),
        flush=True,
    )
    (command,) = entry_points(group="console_scripts", name="streamlit")  # the `streamlit` command
    sys.argv = ["streamlit", *argv]
    command.load()(prog_name="streamlit")


if __name__ == "__main__":
    main(sys.argv[1:])
