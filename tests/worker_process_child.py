"""A child for tests/test_worker_process.py: ``python -m tests.worker_process_child``.

Jobs: ("echo", x) -> x; ("sleep", s) sleeps s seconds, then "woke"; ("spin", s) sets a CPU limit of
s seconds and spins past it; ("nice", None) lowers its priority and says its niceness."""

from __future__ import annotations

import os
import sys
import time
import types
from pathlib import Path

# attnviz.worker_process alone (it imports nothing of attnviz's): the package's own __init__
# imports torch, ~2 CPU-s for every child the tests start, and this child needs none of it
_PACKAGE = types.ModuleType("attnviz")
_PACKAGE.__path__ = [str(Path(__file__).resolve().parents[1] / "attnviz")]
sys.modules.setdefault("attnviz", _PACKAGE)

from attnviz import worker_process  # noqa: E402
from attnviz.worker_process import Status  # noqa: E402


def answer(job_id: int, payload: object) -> tuple:
    kind, arg = payload
    if kind == "echo":
        return (job_id, Status.OK, arg)
    if kind == "sleep":
        time.sleep(arg)
        return (job_id, Status.OK, "woke")
    if kind == "spin":
        worker_process.limit_cpu(arg, "child")
        while True:
            pass
    if kind == "nice":
        worker_process.lower_priority()
        return (job_id, Status.OK, os.nice(0))
    return (job_id, Status.REFUSED, f"no job {kind!r}")


if __name__ == "__main__":
    requests, replies = worker_process.channels()  # first: stdout is the replies' pipe until then
    print("printed after channels(): to stderr, never into the replies")
    worker_process.serve(requests, replies, answer)
