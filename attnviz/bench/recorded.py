"""A GPU measurement we made, shipped with attnviz, for readers on machines without a GPU.

The Performance page and lesson 03 show what the same aggregation does on a real GPU from this
file, never from numbers typed into text: ``attnviz/data/gpu_check.json`` holds the records of one
run of ``benchmarks/gpu_check.py`` (the harness's interleaved rounds, medians and IQRs), the tiny
example inside a CUDA graph, the correctness counts, and when and where it ran. Every sentence
and table row here is computed from it. To ship a new run:

    python -m attnviz.bench.recorded benchmarks/gpu_check.json     # the date the run wrote
    python -m attnviz.bench.recorded benchmarks/gpu_check.json 2026-12-04
"""

from __future__ import annotations

import json
import sys
from functools import cache
from importlib import resources
from pathlib import Path

from attnviz.bench.number import format_bytes, format_rate, format_share, format_time

FILE = "gpu_check.json"
# what a reader compares on the GPU: the reads, the one-liner, and the one-pass methods
METHODS = ("floor", "copy", "broadcast", "bmm", "fused")


@cache
def gpu_check() -> dict:
    """The shipped run (a dict: measured_at, command, environment, records, cuda_graph_tiny,
    correctness)."""
    return json.loads(resources.files("attnviz").joinpath("data", FILE).read_text(encoding="utf-8"))


def _shape(r: dict) -> str:
    return "×".join(str(s) for s in r["shape"])


def _by(run: dict) -> dict[tuple[str, str, str], dict]:
    return {(_shape(r), r["dtype"], r["method"]): r for r in run["records"]}


def where(run: dict | None = None) -> str:
    """'an NVIDIA H200 (torch 2.11.0+cu130, CUDA 13.0), 2026-12-04'."""
    run = run or gpu_check()
    env = run["environment"]
    return (
        f"an {env['device_name']} (torch {env['torch_version']}, CUDA {env['cuda_version']}), "
        f"{run['measured_at']}"
    )


def rows(run: dict | None = None) -> list[dict]:
    """One row per size, dtype and method in METHODS: time per call, speed, and the speed as a
    share of the device copy's in the same rounds (the copy reads and writes x: its speed counts
    both, the others count what they read)."""
    run = run or gpu_check()
    by = _by(run)
    out = []
    for r in run["records"]:
        if r["method"] not in METHODS:
            continue
        copy = by.get((_shape(r), r["dtype"], "copy"))
        out.append(
            {
                "shape": _shape(r),
                "dtype": r["dtype"],
                "input": format_bytes(by[(_shape(r), r["dtype"], "floor")]["bytes"]),
                "method": r["method"],
                "runs": r["notes"].get("path", r["method"]),
                "median": format_time(r["median_s"]),
                "bandwidth": format_rate(r["gbps"] * 1e9),
                "of the copy's bandwidth": format_share(r["gbps"] / copy["gbps"]) if copy else "",
            }
        )
    return out


def summary(run: dict | None = None) -> str:
    """Three sentences a reader can check against ``rows``: the large size against the copy, the
    tiny example from Python and inside a CUDA graph, and the correctness count."""
    run = run or gpu_check()
    records = run["records"]
    big = max(records, key=lambda r: (r["bytes"], r["dtype"] == "float32"))
    by = _by(run)
    fused = by[(_shape(big), big["dtype"], "fused")]
    copy = by[(_shape(big), big["dtype"], "copy")]
    broadcast = by.get((_shape(big), big["dtype"], "broadcast"))
    tiny = min(records, key=lambda r: r["bytes"])
    tiny_fused = by[(_shape(tiny), tiny["dtype"], "fused")]
    graph = {g["method"]: g["per_call_s"] for g in run["cuda_graph_tiny"] if "per_call_s" in g}
    ok, total = run["correctness"]["passed"], run["correctness"]["total"]
    text = (
        f"Measured on {where(run)}. At {_shape(big)} {big['dtype']} "
        f"({format_bytes(fused['bytes'])} read), fused read {format_rate(fused['gbps'] * 1e9)}, "
        f"{format_share(fused['gbps'] / copy['gbps'])} of the device copy's "
        f"{format_rate(copy['gbps'] * 1e9)}"
    )
    if broadcast:
        text += (
            f"; the one-liner took {format_time(broadcast['median_s'])} against fused's "
            f"{format_time(fused['median_s'])}, writing and re-reading a "
            f"{format_bytes(broadcast.get('extra_peak_bytes'))} temporary"
        )
    text += (
        f". The {_shape(tiny)} example took {format_time(tiny_fused['median_s'])} a call from "
        "Python"
    )
    if "fused" in graph:
        text += (
            f" but {format_time(graph['fused'])} inside a CUDA graph: on tiny inputs a GPU "
            "spends its time launching, not reading"
        )
    return text + f". {ok} of {total} correctness checks against float64 passed."


def ship(source: Path, measured_at: str | None = None, target: Path | None = None) -> Path:
    """Write the parts of a gpu_check.py result that the page and the lesson read (the date: the
    one gpu_check.py wrote, unless ``measured_at`` is given)."""
    run = json.loads(source.read_text())
    checks = run["correctness"]
    measured_at = measured_at or run.get("measured_at")
    if not measured_at:
        raise SystemExit(f"{source} says nothing of when it ran: give the date (YYYY-MM-DD).")
    kept = {
        "measured_at": measured_at,
        "command": "python benchmarks/gpu_check.py",
        "environment": run["environment"],
        "records": run["records"],
        "cuda_graph_tiny": run["cuda_graph_tiny"],
        "correctness": {"passed": sum(c["ok"] for c in checks), "total": len(checks)},
    }
    target = target or Path(str(resources.files("attnviz").joinpath("data", FILE)))
    target.write_text(json.dumps(kept, indent=1) + "\n")
    return target


if __name__ == "__main__":
    print(ship(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None))
