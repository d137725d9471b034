"""A server process's long-lived objects, kept out of the garbage collector's full passes.

What a replica loads once (PyTorch, plotly, pandas, Streamlit and the modules a first page run
imports lazily) lives as long as the process. Left to the collector, every full collection walks
all of it again, and meanwhile the replica answers nobody. ``gc.freeze()`` moves what exists to a
permanent generation that collections skip; afterwards a full pass walks only what sessions and
caches made since (before and after, measured: benchmarks/RESULTS-serving-history.md).

``freeze()`` runs once after the warm-up (``attnviz.ui.warm``) and once after the first page run
a process serves (app.py), which imports the rest. Nothing that was garbage is kept: each freeze
collects first.
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_after_first_run = False


def freeze() -> None:
    """Collect, then move every object that exists now out of the collector's passes."""
    gc.collect()
    gc.freeze()


def after_first_run() -> None:
    """The first completed page run of this process freezes what it loaded; later runs do nothing."""
    global _after_first_run
    with _lock:
        if _after_first_run:
            return
        _after_first_run = True
    freeze()
