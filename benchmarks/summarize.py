"""Turn runs of ``python -m attnviz.bench --json`` into the Markdown tables of RESULTS.md.

    python benchmarks/summarize.py run1.jsonl run2.jsonl ...    # one file per run

For each (size, threads): one row per run with the floor's GB/s and, per method, the paired
``x floor`` median / ``best`` ratio and the method's IQR as a share of its median, then the one-liner's
time over fused's. A summary table follows: per (size, threads) the range and median over runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

from attnviz.bench import above_floor, format_bytes, format_number, format_share


def load(paths: list[Path]) -> list[list[dict]]:
    return [
        [json.loads(line) for line in p.read_text().splitlines() if line.strip()] for p in paths
    ]


def cell(r: dict) -> str:
    flag = " **above the limit**" if above_floor(r) else ""
    return (
        f"{format_number(r['ratio_to_floor'])} / {format_number(r['best_ratio_to_floor'])} "
        f"(IQR {format_share(r['iqr_s'] / r['median_s'])}){flag}"
    )


def span(values: list[float], unit: str = "") -> str:
    lo, hi, med = min(values), max(values), statistics.median(values)
    n = format_number
    return f"{n(lo)}{unit}-{n(hi)}{unit} (median {n(med)}{unit})"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", type=Path)
    runs = load(p.parse_args(argv).files)
    groups: dict[tuple, list[dict[str, dict]]] = defaultdict(list)  # (shape, threads) -> runs
    for run in runs:
        by_key: dict[tuple, dict[str, dict]] = defaultdict(dict)
        for r in run:
            by_key[(tuple(r["shape"]), r["threads"], r["dtype"])][r["method"]] = r
        for key, methods in by_key.items():
            groups[key].append(methods)
    summary = []
    for (shape, threads, dtype), group in groups.items():
        methods = [m for m in group[0] if m != "floor"]
        size = format_bytes(group[0]["floor"]["bytes"])
        name = "x".join(map(str, shape))
        print(f"#### {name} {dtype} ({size}), {threads} thread{'s' * (threads > 1)}\n")
        head = ["run", "floor GB/s (median)", *methods]
        multiple = "broadcast" in methods and "fused" in methods
        if multiple:
            head.append("one-liner time / fused time")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for i, run in enumerate(group, 1):
            floor = run["floor"]
            row = [
                str(i),
                f"{format_number(floor['gbps'])} "
                f"(IQR {format_share(floor['iqr_s'] / floor['median_s'])})",
            ]
            row += [cell(run[m]) for m in methods]
            if multiple:
                row.append(
                    f"{format_number(run['broadcast']['median_s'] / run['fused']['median_s'])}x"
                )
            print("| " + " | ".join(row) + " |")
        print()
        best = [max(methods, key=lambda m, r=run: r[m]["gbps"]) for run in group]
        ratios = {
            m: span([run[m]["ratio_to_floor"] for run in group]) if m in methods else "-"
            for m in ("fused", "bmm")
        }
        times = (
            [r["broadcast"]["median_s"] / r["fused"]["median_s"] for r in group] if multiple else []
        )
        summary.append(
            [
                name,
                str(threads),
                str(len(group)),
                ", ".join(f"{m} {best.count(m)}" for m in dict.fromkeys(best)),
                ratios["fused"],
                ratios["bmm"],
                span(times, "x") if times else "-",
            ]
        )
    print("### Summary\n")
    head = [
        "size",
        "threads",
        "runs",
        "fastest by median (runs)",
        "fused `x floor`",
        "bmm `x floor`",
    ]
    head.append("one-liner multiple")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in summary:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
