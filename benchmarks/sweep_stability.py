"""Is the Performance page's default sweep ordering the same from run to run?

    python benchmarks/sweep_stability.py [ROUNDS ...]      # default: 5 and the page's ROUNDS

Runs the page's default sweep (every offered size up to SWEEP_MAX_INPUT_BYTES, the default
methods) twice per number of rounds, in the benchmark worker as the page does, and prints each
run's ranking (methods whose interquartile ranges overlap share a tier, ``sweep.ranking``) and
the pairs of methods the two runs order the opposite way (``sweep.contradictions``).
"""

from __future__ import annotations

import sys
import time

from attnviz.bench import DEFAULT_METHODS, request, sweep, worker
from attnviz.ui import performance


def run(runner: worker.BenchWorker, rounds: int) -> list[dict]:
    records = []
    for size in request.offered_sizes(performance.SWEEP_MAX_INPUT_BYTES):
        spec = worker.BenchSpec(shape=size, methods=DEFAULT_METHODS, rounds=rounds)
        records += runner.submit(spec)
    return records


def flips(a: list[dict], b: list[dict], key: str) -> tuple[int, int]:
    """(pairs ordered oppositely by ``key`` in runs a and b, all pairs): strict orderings."""

    def order(recs):
        return {
            (tuple(r["shape"]), r["method"]): r[key] for r in recs if r["method"] in DEFAULT_METHODS
        }

    oa, ob = order(a), order(b)
    keys = sorted(set(oa) & set(ob))
    bad = total = 0
    for i, k1 in enumerate(keys):
        for k2 in keys[i + 1 :]:
            if k1[0] == k2[0]:
                total += 1
                bad += (oa[k1] - oa[k2]) * (ob[k1] - ob[k2]) < 0
    return bad, total


def show(ranks: dict) -> str:
    return "; ".join(
        f"{'x'.join(map(str, s))}: " + " < ".join("=".join(t) for t in tiers)
        for s, tiers in sorted(ranks.items())
    )


def main() -> None:
    counts = [int(a) for a in sys.argv[1:]] or [5, performance.ROUNDS]
    runner = worker.BenchWorker(max_input_bytes=performance.job_cap_bytes(), timeout_s=300)
    try:
        for rounds in counts:
            t0 = time.perf_counter()
            recs = [run(runner, rounds) for _ in range(2)]
            first, second = (sweep.ranking(r) for r in recs)
            bad = sweep.contradictions(first, second)
            print(f"rounds={rounds} ({time.perf_counter() - t0:.0f} s for both runs)")
            print(f"  run 1: {show(first)}")
            print(f"  run 2: {show(second)}")
            same = sum(first[s] == second[s] for s in first)
            print(
                f"  identical tiers at {same} of {len(first)} sizes; contradictions: {bad or 'none'}"
            )
            for key in ("median_s", "min_s"):
                n, total = flips(*recs, key)
                print(f"  strict order by {key}: {n} of {total} pairs flipped between the runs")
    finally:
        runner.close()


if __name__ == "__main__":
    main()
