"""Performance: time the same aggregation on the CPU or a GPU, every method side by side.

Timings come from ``attnviz.bench`` run in its worker process (one job at a time, a size cap from
free memory checked before allocating, a timeout): warm-up, synchronised, many rounds, median and
IQR, and a plain read of the same bytes (the floor) timed in the same run.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
import torch

import attnviz
from attnviz import bench, figures
from attnviz.bench import sweep as bench_sweep
from attnviz.bench import worker
from attnviz.errors import AttnvizError
from attnviz.figures import performance as perf_figures

APP_MAX_INPUT_BYTES = 512 * 2**20  # a public server: no job may ask for more than this
SWEEP_MAX_INPUT_BYTES = 64 * 2**20  # the sweep button stays under a minute on a small CPU
TIMEOUT_S = 90.0


def _runner() -> worker.BenchWorker:
    return worker.get_worker(max_input_bytes=APP_MAX_INPUT_BYTES, timeout_s=TIMEOUT_S)


def _table(records: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "method": r["method"],
            "median": bench.format_time(r["median_s"]),
            "IQR": bench.format_time(r["iqr_s"]),
            "GB/s": f"{r['gbps']:.2f}",
            "vs floor": ""
            if r.get("ratio_to_floor") is None
            else f"{100 * r['ratio_to_floor']:.0f}%",
            "extra memory": bench.format_bytes(r.get("extra_peak_bytes")),
            "first call": bench.format_time(r.get("first_call_s")),
            "runs as": r.get("notes", {}).get("path", ""),
        }
        for r in records
    ).set_index("method")


def _controls(devices: list[bench.DeviceInfo]) -> tuple[str, tuple[int, int, int], list[str]]:
    cols = st.columns([1.6, 1.2, 3])
    names = {d.device: f"{d.device}: {d.name}" for d in devices}
    device = cols[0].selectbox(
        "Device", list(names), format_func=names.__getitem__, key="pf_device"
    )
    sizes = bench_sweep.sizes_up_to(APP_MAX_INPUT_BYTES)
    shape = cols[1].selectbox(
        "Size (B × T × H)",
        sizes,
        format_func=lambda s: f"{s[0]} × {s[1]} × {s[2]}",
        key="pf_size",
    )
    choices = [m for m in attnviz.METHODS if m != "loop" or shape[0] * shape[1] <= 4096]
    methods = cols[2].multiselect(
        "Methods",
        choices,
        default=[m for m in bench.DEFAULT_METHODS if m in choices],
        key="pf_methods",
    )
    return device, tuple(shape), methods


def page() -> None:
    """The Performance page."""
    st.markdown("## CPU or GPU: the same aggregation, timed right")
    devices = bench.list_devices()
    if not any(d.kind != "cpu" for d in devices):
        st.info(
            f"**No GPU on this server**: torch {torch.__version__} sees no CUDA or MPS device, so "
            f"every timing here is on the CPU ({devices[0].name}). On a machine with a GPU the "
            "device list below offers it too.",
            icon=":material/memory:",
        )
    device, shape, methods = _controls(devices)
    st.caption(
        "The floor is a plain read of the same bytes (`x.sum()`): a one-pass method can at best "
        "match it, so a few % above 100% is timing noise. "
        "GB/s counts reading net_output and att_scores once and writing weighted once. "
        "Extra memory is the measured peak above the inputs: the one-liner materialises a "
        "(B, T, H) temporary."
    )
    cols = st.columns([1, 1, 4])
    run = cols[0].button("Time them", key="pf_run", type="primary", icon=":material/timer:")
    run_sweep = cols[1].button("Sweep sizes", key="pf_sweep", icon=":material/show_chart:")
    if (run or run_sweep) and not methods:
        st.warning("Pick at least one method to time.")
        return
    try:
        if run:
            spec = worker.BenchSpec(shape=shape, device=device, methods=tuple(methods))
            with st.spinner("Timing in the worker process: warm-up, then many rounds…"):
                st.session_state["pf_last"] = _runner().submit(spec)
        if run_sweep:
            sizes = bench_sweep.sizes_up_to(SWEEP_MAX_INPUT_BYTES)
            jobs = [(d.device, size) for d in devices for size in sizes]  # every device: crossover
            records: list[dict] = []
            bar = st.progress(0.0, text="Sweeping sizes…")
            for i, (dev, size) in enumerate(jobs):
                ms = [m for m in methods if m != "loop" or size[0] * size[1] <= 4096]
                spec = worker.BenchSpec(shape=size, device=dev, methods=tuple(ms), rounds=5)
                records += _runner().submit(spec)
                bar.progress((i + 1) / len(jobs), text=f"Timed {i + 1} of {len(jobs)} sizes")
            bar.empty()
            st.session_state["pf_sweep_records"] = records
    except AttnvizError as e:
        st.error(str(e), icon="⚠️")
    last = st.session_state.get("pf_last")
    if last:
        b, t, h = last[0]["shape"]
        st.markdown(f"#### {b} × {t} × {h} on {last[0]['device']}: {last[0]['device_name']}")
        st.dataframe(_table(last), width="stretch")
    elif not st.session_state.get("pf_sweep_records"):
        st.markdown(
            "Press **Time them** to measure the chosen size, or **Sweep sizes** to see time and "
            "GB/s grow from the 2 × 3 × 5 example to millions of numbers."
        )
    _sweep_view(st.session_state.get("pf_sweep_records"))


def _figure(fig, key: str) -> None:
    st.plotly_chart(fig, key=key, width="stretch", theme=None, config={"displaylogo": False})
    st.caption(figures.description(fig))


def _sweep_view(records: list[dict] | None) -> None:
    if not records:
        return
    st.markdown("#### Time vs size")
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
    _figure(perf_figures.time_vs_bytes_figure(records), "pf_fig_time")
    roofs = bench_sweep.roofline(records)
    st.markdown(
        "#### GB/s against the measured bandwidth\n"
        + " ".join(f"Read floor on {d}: **{g:.1f} GB/s**." for d, g in roofs.items())
    )
    _figure(perf_figures.roofline_figure(records), "pf_fig_roof")
    st.markdown("#### The one-liner's extra memory")
    _figure(perf_figures.extra_memory_figure(records), "pf_fig_mem")
    st.markdown("#### Every measurement")
    table = pd.DataFrame(
        {
            "shape": "×".join(str(s) for s in r["shape"]),
            "device": r["device"],
            "method": r["method"],
            "median": bench.format_time(r["median_s"]),
            "GB/s": f"{r['gbps']:.2f}",
            "extra memory": bench.format_bytes(r.get("extra_peak_bytes")),
        }
        for r in records
    )
    st.dataframe(table, width="stretch", hide_index=True)
