"""How long can one request hold the benchmark worker? The largest legitimate one against forged ones.

    python benchmarks/bench_worker.py            # about a minute on a 2-core machine

Runs each request through ``attnviz.bench.worker.BenchWorker`` with the app's limits, the way the
Performance page sends it (``attnviz.bench.request.parse_request`` turns widget values into a
spec, so a forged multiselect is de-duplicated and a forged size clamped there), and prints the wall time the worker was held, the
job's budget, and the worker's OS limits (nice, RLIMIT_AS, RLIMIT_CPU) read from /proc.
"""

from __future__ import annotations

import time

from attnviz.bench import worker
from attnviz.bench.request import offered_sizes, parse_request
from attnviz.errors import AttnvizError
from attnviz.ui import performance

BIG = (64, 1024, 1024)
CASES = {  # name -> (device, size, methods) as a browser could send them
    "largest legitimate": ("cpu", BIG, ["broadcast", "einsum", "bmm", "fused", "auto"]),
    "forged: 200x einsum at 64x1024x1024": ("cpu", BIG, ["einsum"] * 200),
    "forged: 300x einsum at 2x3x5": ("cpu", (2, 3, 5), ["einsum"] * 300),
    "forged: 20x einsum + 20x bmm at 64x1024x1024": ("cpu", BIG, ["einsum", "bmm"] * 20),
    "forged: a size not offered (4096^3)": ("cpu", (4096, 4096, 4096), ["bmm"]),
    "forged: a method not offered": ("cpu", (2, 3, 5), ["<b>x</b>", "bmm"]),
    "forged: a device not offered": ("cuda:7", (2, 3, 5), ["bmm"]),
}


def _limits(pid: int) -> str:
    with open(f"/proc/{pid}/limits", encoding="ascii") as f:
        rows = [line for line in f if line.startswith(("Max address space", "Max cpu time"))]
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        nice = f.read().rsplit(")", 1)[1].split()[16]
    return f"nice {nice}; " + "; ".join(" ".join(r.split()) for r in rows)


def main() -> None:
    offered = offered_sizes(performance.APP_MAX_INPUT_BYTES)
    runner = worker.BenchWorker(
        max_input_bytes=performance.job_cap_bytes(), timeout_s=performance.TIMEOUT_S
    )
    runner.start()
    print(f"worker pid {runner.pid}: {_limits(runner.pid)}")
    try:
        for name, (device, size, methods) in CASES.items():
            t0 = time.perf_counter()
            try:
                spec = parse_request(
                    device, size, methods, devices=["cpu"], sizes=offered, rounds=performance.ROUNDS
                )
                budget = worker.wall_limit_s(spec)
                recs = runner.submit(spec, owner="bench")
                what = f"{len(recs)} records ({', '.join(r['method'] for r in recs)})"
            except AttnvizError as e:
                budget, what = None, f"refused: {e}"
            held = time.perf_counter() - t0
            b = "-" if budget is None else f"{budget:.0f} s"
            print(f"{name:<44} held {held:6.1f} s  wall limit {b:>6}  {what}")
        t0 = time.perf_counter()
        try:  # bypassing the page: the worker's own check refuses repeats
            runner.submit(worker.BenchSpec(shape=BIG, methods=("einsum",) * 200), owner="bench")
            what = "ran"
        except AttnvizError as e:
            what = f"refused: {e}"
        held = time.perf_counter() - t0
        print(f"{'library call: 200x einsum, no page':<44} held {held:6.1f} s  {what}")
        print(f"worker pid {runner.pid} after the jobs: {_limits(runner.pid)}")
    finally:
        runner.close()


if __name__ == "__main__":
    main()
