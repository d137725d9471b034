"""Medians over the runs in this folder (t{threads}_{old,new}_{run}.txt): a Markdown table."""

import re
import statistics
from collections import defaultdict
from pathlib import Path

here = Path(__file__).parent
cells = defaultdict(list)  # (threads, side, shape, method) -> µs per run
for f in sorted(here.glob("t*_*_*.txt")):
    threads, side, _ = f.stem.split("_")
    for line in f.read_text().splitlines():
        if line.startswith("("):
            shape = line[: line.index(")") + 1]
            for method, us in re.findall(r"(\w+)\s+([\d.]+)", line[len(shape) :]):
                cells[threads, side, shape, method].append(float(us))
shapes = list(dict.fromkeys(k[2] for k in cells))
print(
    "| threads | shape | auto before -> after | fused before -> after | bmm (after runs) | broadcast (after runs) |"
)
print("|---|---|---|---|---|---|")
for threads in ("t1", "t2"):
    for shape in shapes:

        def med(side, m, threads=threads, shape=shape):
            return statistics.median(cells[threads, side, shape, m])

        row = [f"{med('old', m):.2f} -> {med('new', m):.2f} µs" for m in ("auto", "fused")]
        row += [f"{med('new', m):.2f} µs" for m in ("bmm", "broadcast")]
        print(f"| {threads[1]} | {shape} | " + " | ".join(row) + " |")
