"""python -m attnviz.bench: time every method against the machine's read limit, as a table or JSON lines.

python -m attnviz.bench --device cpu --sizes 2x3x5,48x512x1024
python -m attnviz.bench --device all --json > results.jsonl
python -m attnviz.bench --overhead --threads 1    # weighted_sum vs the bare op, on 2x3x5
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from attnviz.bench.devices import DEVICE_CHOICES, list_devices, resolve_devices
from attnviz.bench.floor import floor_ways_words, small_call_words, writes_words
from attnviz.bench.harness import (
    DEFAULT_METHODS,
    floor_warnings,
    format_table,
    parse_dtype,
    parse_shape,
)
from attnviz.bench.overhead import OVERHEAD_METHODS, format_overhead, measure_overhead
from attnviz.bench.sweep import crossing_limit, max_bytes, sizes_up_to, sweep
from attnviz.errors import AttnvizError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m attnviz.bench",
        description="Time weighted = (x * w[..., None]).sum(1) by every method on every device, "
        "side by side with the machine's read limit: a plain read of the same bytes (on the CPU a "
        "C read loop built like the fused kernel).",
    )
    p.add_argument("--device", default="cpu", help=f"one of {', '.join(DEVICE_CHOICES)} or cuda:N")
    p.add_argument(
        "--sizes",
        default=None,
        help="comma-separated BxTxH, e.g. 2x3x5,48x512x1024 (default: the ladder up to what "
        "free memory allows, at most 256 MiB of inputs on the CPU, or past twice its last-level "
        "cache within a quarter of RAM, and 1 GiB on a GPU)",
    )
    p.add_argument(
        "--methods",
        default=None,
        help=f"comma-separated methods (default {','.join(DEFAULT_METHODS)}; also loop, auto; "
        f"with --overhead: {','.join(OVERHEAD_METHODS)})",
    )
    p.add_argument("--dtype", default="float32", help="float32, float16, bfloat16 or float64")
    p.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="interleaved timed rounds (default 15; 7 with --overhead)",
    )
    p.add_argument("--min-block-s", type=float, default=0.02, help="seconds per timed block")
    p.add_argument("--memory", action="store_true", help="also measure peak extra memory")
    p.add_argument(
        "--cold",
        action="store_true",
        help="rotate among input sets up to twice the last-level cache, so that no call finds "
        "the last call's bytes in cache (default: the same inputs every call, timed where they "
        "sit: L2, the last-level cache or memory)",
    )
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--json", action="store_true", help="one JSON object per measurement per line")
    p.add_argument("--list-devices", action="store_true", help="list devices and exit")
    p.add_argument(
        "--overhead",
        action="store_true",
        help="time weighted_sum(method=...) against the bare op it runs, paired per round "
        "(default size: the classic 2x3x5; methods: auto,broadcast,einsum,bmm,fused)",
    )
    p.add_argument(
        "--calls", type=int, default=200, help="--overhead: calls per block (100 pairs per round)"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.threads is not None:
            torch.set_num_threads(args.threads)
        if args.list_devices:
            for d in list_devices():
                print(f"{d.device:<8} {d.name}")
            return 0
        dtype = parse_dtype(args.dtype)
        devices = resolve_devices(args.device)
        default = OVERHEAD_METHODS if args.overhead else DEFAULT_METHODS
        methods = [m.strip() for m in (args.methods or ",".join(default)).split(",") if m.strip()]
        rounds = args.rounds or (7 if args.overhead else 15)
        sizes = None
        if args.sizes:
            sizes = [parse_shape(s) for s in args.sizes.split(",") if s.strip()]
        if args.overhead:
            return _overhead(sizes, methods, rounds, args.calls)
        out = sys.stdout

        def emit(rec):
            if args.json:
                out.write(json.dumps(rec.as_dict()) + "\n")
                out.flush()

        records = []
        for device in devices:
            default_cap = 2**28 if device == "cpu" else 2**30  # the slow methods stay bearable
            if device == "cpu" and not sizes:  # cross the cache: past it, within 1/4 of RAM
                default_cap, reach = crossing_limit(default_cap, dtype=dtype)
                print(reach, file=sys.stderr)
            todo = sizes or sizes_up_to(min(max_bytes(device), default_cap), dtype)
            recs = sweep(
                devices=[device],
                sizes=todo,
                methods=methods,
                dtype=dtype,
                rounds=rounds,
                min_block_s=args.min_block_s,
                memory=args.memory,
                progress=emit,
                max_input_sets=32 if args.cold else 1,
            )
            records.extend(recs)
            if not args.json:
                print(format_table(recs))
                print()
            for line in floor_warnings(recs):  # loud in both modes: the floor is wrong
                print(line, file=sys.stderr)
        if not args.json and records:
            r = records[0]
            print(
                f"torch {r.torch_version}, {r.threads} threads, TF32 {'on' if r.tf32 else 'off'}; "
                f"median and IQR over {r.rounds} interleaved rounds; 'x floor' = median over rounds "
                f"of GB/s / GB/s of the floor in the same round (a '!' marks a method that took "
                f"less time than the read of x alone, by more than the ratio's IQR); 'best' = the same ratio between the fastest "
                f"rounds; '1st call' includes lazy init / JIT compile (and the C kernel's timing of its two"
                f" ways to load, on a shape's first call from beyond L2)."
            )
            floors = sorted({(d.device, d.notes.get("floor", "")) for d in records})
            for device, floor in floors:
                print(
                    f"floor on {device}: {floor}, a plain read of x, the machine's read limit: "
                    f"no method that reads x once can beat it. Each of its ways is timed in "
                    f"every round, and at each size the floor is the one with the lowest median: "
                    f"{floor_ways_words(records, device)}."
                )
            if small := small_call_words(records):
                print(small)
            if writes := writes_words(records):
                print(writes)
            for r in records:
                if r.method == "fused" and "path" in r.notes:
                    shape = "x".join(map(str, r.shape))
                    why = f" ({r.notes['why']})" if "why" in r.notes else ""
                    print(f"fused on {r.device} at {shape}: {r.notes['path']}{why}")
            kernels = {r.notes["cpu_kernel"] for r in records if "cpu_kernel" in r.notes}
            for k in sorted(kernels):
                print(f"C kernel: {k}")
            calls = {r.notes["cpu_kernel_call"] for r in records if "cpu_kernel_call" in r.notes}
            for k in sorted(calls):
                print(f"C kernel called as: {k}")
    except AttnvizError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into head
        return 0
    return 0


def _overhead(sizes: list | None, methods: list[str], rounds: int, calls: int) -> int:
    from attnviz import examples
    from attnviz.bench.harness import make_inputs

    for shape in sizes or [(2, 3, 5)]:
        x, w = examples.classic() if tuple(shape) == (2, 3, 5) else make_inputs(shape)
        rows = measure_overhead(x, w, methods=methods, rounds=rounds, calls=calls)
        print(format_overhead(rows))
        print(
            f"{'x'.join(map(str, shape))} float32, torch {torch.__version__}, "
            f"{torch.get_num_threads()} thread(s); per round 100 pairs of {calls}-call blocks "
            f"(library, bare op, in random order); overhead = median over {rounds} rounds of the "
            f"median over pairs of (weighted_sum - bare op) per call."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
