"""Training speed and accuracy of each pooling, on the shipped sentiment corpus.

    python benchmarks/bench_training.py                 # every pooling, seeds 0-4, CPU, one thread
    python benchmarks/bench_training.py --device cuda   # the same on a GPU, where there is one

For each pooling and seed: the held-out accuracy after the default configuration's epochs, the
share of held-out opinions whose largest weight sits on the word that decides them (``key hit``),
training steps per CPU second, and the CPU seconds until the held-out accuracy first reached 95 %
of its final value. Times are CPU time of this process (``time.process_time``), not wall time:
the machine may be shared, and CPU time is what a run costs the server. On a GPU the times are
wall seconds after a synchronize (the CPU time there is the launching thread's).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

from attnviz.pooling.model import POOLINGS
from attnviz.pooling.train import TrainConfig, prepare, train


def _clock(device: str):
    if device == "cpu":
        return time.process_time

    def wall() -> float:
        torch.cuda.synchronize()
        return time.perf_counter()

    return wall


def measure(pooling: str, seed: int, data, device: str) -> dict:
    """One run: final accuracy, key hit, steps per second, seconds to 95 % of the final accuracy."""
    clock = _clock(device)
    marks: list[tuple[float, float]] = []
    start = clock()
    run = train(
        TrainConfig(pooling=pooling, seed=seed),
        data,
        on_epoch=lambda _e, _loss, acc: marks.append((clock() - start, acc)),
        device=device,
    )
    total = marks[-1][0]
    final = run.accuracies[-1]
    to_95 = next(t for t, acc in marks if acc >= 0.95 * final)
    return {
        "accuracy": final,
        "key_hit": run.key_hit,
        "steps_per_s": run.steps / total,
        "to_95_s": to_95,
        "total_s": total,
    }


def _spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}-{format(max(values), fmt)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch threads on the CPU")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    data = prepare()
    config = TrainConfig()
    print(
        f"# {platform.processor() or platform.machine()}, torch {torch.__version__}, "
        f"device {args.device}, {torch.get_num_threads()} thread(s); {config.epochs} epochs of "
        f"{len(data.train_labels)} sentences, batch {config.batch_size}, held out "
        f"{len(data.test_labels)}; seeds 0-{args.seeds - 1}; median (min-max)"
    )
    print("| pooling | held-out accuracy | key hit | steps/s | s to 95% of final | s in all |")
    print("|---|---|---|---|---|---|")
    for pooling in POOLINGS:
        rows = [measure(pooling, seed, data, args.device) for seed in range(args.seeds)]
        col = {k: [r[k] for r in rows] for k in rows[0]}
        hit = (  # mean's weights are equal: its "largest weight" is no choice at all
            f"{_spread([100 * a for a in col['key_hit']], '.0f')} %" if pooling != "mean" else "n/a"
        )
        print(
            f"| {pooling} | {_spread([100 * a for a in col['accuracy']], '.1f')} % | "
            f"{hit} | "
            f"{_spread(col['steps_per_s'], '.0f')} | {_spread(col['to_95_s'], '.2f')} | "
            f"{_spread(col['total_s'], '.2f')} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
