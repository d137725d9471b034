"""Performance: time the same aggregation on the CPU or a GPU, every method side by side.

Timings come from ``attnviz.bench`` run in its worker process (one job at a time, one per session,
a time budget and OS limits, a size cap from free memory checked before allocating): warm-up,
synchronised, many rounds, median and IQR, and the machine's read limit (a plain read of the same
bytes, on the CPU a C read loop built like the fused kernel: the floor) timed in the same run. Every widget value is parsed by ``attnviz.bench.request`` before it is used.
"""

from __future__ import annotations

import secrets

import pandas as pd
import streamlit as st
import torch

from attnviz import bench
from attnviz.bench import recorded, request, worker
from attnviz.bench import sweep as bench_sweep
from attnviz.bench.floor import small_call_words, writes_words
from attnviz.bench.harness import NOISY_SPREAD, input_bytes, is_noisy, regime
from attnviz.errors import AttnvizError
from attnviz.figures import performance as perf_figures
from attnviz.ui import client, figure
from attnviz.ui.safe import inert

APP_MAX_INPUT_BYTES = 512 * 2**20  # a public server: the sizes offered stay under this
SWEEP_MAX_INPUT_BYTES = 64 * 2**20  # every method is swept up to here, on a small CPU in a minute
# past SWEEP_MAX_INPUT_BYTES (the sweep goes on until it is past the last-level cache) only the
# one-pass methods run: the one-liner and einsum take seconds per call there
ONE_PASS = ("bmm", "fused", "auto")
TIMEOUT_S = 180.0  # the outer cap; each job has its own, smaller limit (worker.wall_limit_s)
ROUNDS = 15  # per job: the default sweep's order then repeats run to run (benchmarks/RESULTS.md)
RATIO = "% of the read limit (higher is faster)"


def job_cap_bytes() -> int:
    """The worker's size cap: the inputs of the largest size offered, and no more."""
    return max(input_bytes(s, torch.float32) for s in request.offered_sizes(APP_MAX_INPUT_BYTES))


def _runner() -> worker.BenchWorker:
    return worker.get_worker(max_input_bytes=job_cap_bytes(), timeout_s=TIMEOUT_S)


def _owner() -> str:
    """This session's name for the worker's queue (one job per session)."""
    if "pf_owner" not in st.session_state:
        st.session_state["pf_owner"] = secrets.token_hex(8)
    return st.session_state["pf_owner"]


def _ratio(r: dict) -> str:
    ratio = r.get("ratio_to_floor")
    if ratio is None:
        return ""
    above = " (above the limit: the floor is wrong here)" if bench.above_floor(r) else ""
    return bench.format_share(ratio) + above


def _spread(r: dict) -> str:
    share = r["iqr_s"] / r["median_s"] if r["median_s"] > 0 else 0.0
    return f"{bench.format_time(r['iqr_s'])} ({bench.format_share(share)})"


def _runs_as(r: dict) -> str:
    return r.get("notes", {}).get("path", "")


def _why(records: list[dict]) -> str:
    """Why fused (and auto, where it runs fused) run what the table says, a line each: under the
    table, where a phone or a laptop shows it whole (a cell cuts it off)."""
    lines = []
    for r in records:
        notes = r.get("notes", {})
        if notes.get("path") and notes.get("why"):
            picked, _, path = notes["path"].rpartition(": ")  # auto's: "fused: C row-sum kernel"
            runs = f"{picked} ({path})" if picked else path
            said = inert(f"{runs}: {notes['why']}.")  # it can quote a compiler's words
            lines.append(f"- **{r['method']}** runs {said}")
    return "\n".join(lines)


def _table(records: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "method": r["method"],
            "median": bench.format_time(r["median_s"]),
            "spread (IQR)": _spread(r),
            "steady?": "noisy: rerun" if is_noisy(r) else "yes",
            "speed": bench.format_rate(r["gbps"] * 1e9),
            RATIO: _ratio(r),
            "extra memory": bench.format_bytes(r.get("extra_peak_bytes")),
            "first call": bench.format_time(r.get("first_call_s")),
            "runs as": _runs_as(r),
        }
        for r in records
    ).set_index("method")


def _controls(devices: list[bench.DeviceInfo]) -> tuple[object, object, object]:
    """The raw widget values (device, size, methods): parsed by the caller, never trusted."""
    cols = st.columns([1.6, 1.2, 3])
    names = {d.device: f"{d.device}: {d.name}" for d in devices}
    device = cols[0].selectbox(
        "Device", list(names), format_func=lambda d: names.get(d, "?"), key="pf_device"
    )
    sizes = request.offered_sizes(APP_MAX_INPUT_BYTES)
    shape = cols[1].selectbox(
        "Size (B × T × H)", sizes, format_func=lambda s: " × ".join(map(str, s)), key="pf_size"
    )
    try:
        choices = request.offered_methods(request.parse_size(shape, sizes))
    except AttnvizError:
        choices = request.offered_methods(sizes[0])
    methods = cols[2].multiselect(
        "Methods",
        choices,
        default=[m for m in bench.DEFAULT_METHODS if m in choices],
        key="pf_methods",
    )
    return device, shape, methods


def _caption() -> None:
    st.caption(
        "The floor is the machine's read limit: a plain read of the same bytes (on the CPU a C "
        "loop built like the fused kernel, on the same threads, in whichever of its three ways "
        "reads that size fastest), timed in the same rounds. Every "
        "method must read net_output at least once, so none can beat the read limit: none takes "
        "less time than the plain read of net_output, and one that does by more than the rounds' "
        "spread means the floor is wrong (the table says so). A speed may still show above 100%, "
        "as it also counts att_scores and weighted, which a method can write while it reads (the "
        "page says so under the table). Data that fits in a cache (small sizes, marked) arrives several "
        "times faster than data from memory (DRAM), which is farther from the cores and shared "
        "by all of them, so both the limit and the methods are faster there. Speed counts "
        "reading net_output and att_scores once and writing weighted once. Spread is the interquartile range of the rounds; a "
        f"point whose spread exceeds {NOISY_SPREAD:.0%} of its median is flagged noisy. Extra "
        "memory is the measured peak above the inputs, the (B, H) result included: the "
        "one-liner also materialises a (B, T, H) temporary."
    )


def page() -> None:
    """The Performance page."""
    st.markdown("# CPU or GPU: the same aggregation, timed right")
    devices = bench.list_devices()
    if not any(d.kind != "cpu" for d in devices):
        st.info(
            f"**No GPU on this server**: torch {torch.__version__} sees no CUDA or MPS device, so "
            f"every timing here is on the CPU ({devices[0].name}). On a machine with a GPU the "
            "device list below offers it too; what a GPU measured is at the bottom of the page.",
            icon=":material/memory:",
        )
    device, shape, methods = _controls(devices)
    _caption()
    cols = st.columns([1, 1, 4])
    run = cols[0].button("Time them", key="pf_run", type="primary", icon=":material/timer:")
    run_sweep = cols[1].button("Sweep sizes", key="pf_sweep", icon=":material/show_chart:")
    try:
        if run or run_sweep:
            spec = request.parse_request(
                device,
                shape,
                methods,
                devices=[d.device for d in devices],
                sizes=request.offered_sizes(APP_MAX_INPUT_BYTES),
                rounds=ROUNDS,
            )
        if run:
            with st.spinner("Timing in the worker process: warm-up, then many rounds…"):
                st.session_state["pf_last"] = _runner().submit(
                    spec, owner=_owner(), source=client.address()
                )
        if run_sweep:
            st.session_state["pf_sweep_records"] = _sweep(devices, spec.methods)
    except AttnvizError as e:
        st.error(inert(str(e)), icon="⚠️")
    last = st.session_state.get("pf_last")
    if last:
        b, t, h = last[0]["shape"]
        where = (
            "the data fits in cache" if regime(last[0]) == "cache" else "the data comes from memory"
        )
        st.markdown(f"## {b} × {t} × {h} on {last[0]['device']}: {inert(last[0]['device_name'])}")
        st.caption(
            f"{bench.format_bytes(input_bytes((b, t, h), torch.float32))} of input: {where}."
        )
        st.dataframe(_table(last), width="stretch")
        if why := _why(last):
            st.markdown(why)
        if small := small_call_words(last, times=" × "):  # above 100% at a size too small to read
            st.caption(inert(small))
        if writes := writes_words(last, times=" × "):  # above 100%, counting what it writes
            st.caption(inert(writes))
    elif not st.session_state.get("pf_sweep_records"):
        st.markdown(
            "Press **Time them** to measure the chosen size, or **Sweep sizes** to see time and "
            "speed grow from the 2 × 3 × 5 example to millions of numbers."
        )
    _sweep_view(st.session_state.get("pf_sweep_records"))
    _recorded_gpu()


def _recorded_gpu() -> None:
    """The GPU run shipped with attnviz (``attnviz.bench.recorded``): every number computed from
    its records."""
    st.markdown("## What a GPU measured")
    with st.expander(f"On {recorded.where()}", icon=":material/memory:"):
        st.markdown(recorded.summary())
        st.dataframe(pd.DataFrame(recorded.rows()), width="stretch", hide_index=True)
        st.caption(
            "Measured with benchmarks/gpu_check.py, in the same interleaved rounds as this page "
            "(median of the rounds). 'runs' is what each name ran there: on CUDA, fused runs "
            "cuBLAS's batched matrix-vector product, which read faster than our Triton kernel. The "
            "copy reads and writes the input, and its bandwidth counts both: on a GPU it is the "
            "read limit to compare with. Below a few MiB every method waits on its launch, so "
            "shares of the copy mean little there."
        )


def sweep_reach() -> tuple[int, str]:
    """(input bytes the sweep goes up to, a sentence on where that is against the CPU's caches):
    past the last-level cache where this server's cap per job and a quarter of RAM allow."""
    return bench_sweep.crossing_limit(SWEEP_MAX_INPUT_BYTES, hard_cap_bytes=APP_MAX_INPUT_BYTES)


def _sweep(devices: list[bench.DeviceInfo], methods: tuple[str, ...]) -> list[dict]:
    """Every offered size from the 2x3x5 example to past the last-level cache (``sweep_reach``)
    on every device (for the crossover); above SWEEP_MAX_INPUT_BYTES the one-pass methods only."""
    sizes = request.offered_sizes(sweep_reach()[0])
    jobs = [(d.device, size) for d in devices for size in sizes]
    records: list[dict] = []
    bar = st.progress(0.0, text="Sweeping sizes…")
    for i, (dev, size) in enumerate(jobs):
        ms = tuple(m for m in methods if m in request.offered_methods(size))
        if input_bytes(size, torch.float32) > SWEEP_MAX_INPUT_BYTES:
            ms = tuple(m for m in ms if m in ONE_PASS)
        if ms:  # "loop" alone is not offered at the larger sizes
            spec = worker.BenchSpec(shape=size, device=dev, methods=ms, rounds=ROUNDS)
            records += _runner().submit(spec, owner=_owner(), source=client.address())
        bar.progress((i + 1) / len(jobs), text=f"Timed {i + 1} of {len(jobs)} sizes")
    bar.empty()
    return records


def _sweep_view(records: list[dict] | None) -> None:
    if not records:
        return
    st.markdown("## Time vs size")
    devices = sorted({r["device"] for r in records})
    gpus = [d for d in devices if d != "cpu"]
    if gpus:
        at = bench_sweep.crossover(records, "cpu", gpus[0])
        st.markdown(
            f"**Crossover**: {gpus[0]} beats the CPU from {bench.format_bytes(at)} of input on."
            if at is not None
            else f"**Crossover**: {gpus[0]} never beat the CPU at these sizes."
        )
    else:
        st.markdown(
            "**Crossover**: only the CPU is here, so there is no CPU/GPU crossover to show. On a "
            "GPU, kernel launches and transfers dominate the tiny example, so the CPU wins there; "
            "the GPU overtakes it only once the input is large."
        )
    reach = sweep_reach()[1]
    if max(input_bytes(tuple(r["shape"]), torch.float32) for r in records) > SWEEP_MAX_INPUT_BYTES:
        reach += (
            f" Above {bench.format_bytes(SWEEP_MAX_INPUT_BYTES)} only {', '.join(ONE_PASS)} run: "
            "the one-liner and einsum take seconds per call there."
        )
    st.caption(reach)
    figure.show(perf_figures.time_vs_bytes_figure(records), "pf_fig_time")
    roofs = bench_sweep.roofline(records)
    st.markdown(
        "## Speed against the measured bandwidth\n"
        + " ".join(
            f"Best read limit on {d}: **{bench.format_rate(g * 1e9)}**." for d, g in roofs.items()
        )
    )
    figure.show(perf_figures.roofline_figure(records), "pf_fig_roof")
    st.markdown("## The one-liner's extra memory")
    figure.show(perf_figures.extra_memory_figure(records), "pf_fig_mem")
    st.markdown("## Every measurement")
    table = pd.DataFrame(
        {
            "shape": "×".join(str(s) for s in r["shape"]),
            "device": r["device"],
            "data": "fits in cache" if regime(r) == "cache" else "from memory",
            "method": r["method"],
            "median": bench.format_time(r["median_s"]),
            "spread (IQR)": _spread(r),
            "steady?": "noisy: rerun" if is_noisy(r) else "yes",
            "speed": bench.format_rate(r["gbps"] * 1e9),
            RATIO: _ratio(r),
            "extra memory": bench.format_bytes(r.get("extra_peak_bytes")),
        }
        for r in records
    )
    st.dataframe(table, width="stretch", hide_index=True)
