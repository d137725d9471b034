"""Performance: time the same aggregation on the CPU or a GPU, every method side by side.

Timings come from ``attnviz.bench.measure`` (warm-up, synchronised, many rounds, median and IQR,
a plain read of the same bytes as the floor). One measurement runs at a time on this server.
"""

from __future__ import annotations

import threading

import pandas as pd
import streamlit as st
import torch

import attnviz
from attnviz import bench

SIZES: tuple[tuple[int, int, int], ...] = (
    (2, 3, 5),
    (8, 64, 128),
    (16, 128, 512),
    (32, 256, 512),
    (48, 512, 1024),
)
_LOCK = threading.Lock()  # one measurement at a time: concurrent runs would spoil each other


@st.cache_data(max_entries=32, show_spinner=False, ttl=3600)
def _measure(shape: tuple[int, int, int], device: str, methods: tuple[str, ...]) -> list[dict]:
    with _LOCK:
        records = bench.measure(shape, device=device, methods=methods, rounds=7, memory=True)
    return [r.__dict__ | {} for r in records]


def _fmt_bytes(n: float | None) -> str:
    if n is None:
        return ""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def _fmt_time(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def page() -> None:
    """The Performance page."""
    st.markdown("## CPU or GPU: the same aggregation, timed right")
    devices = bench.list_devices()
    gpus = [d for d in devices if d.kind != "cpu"]
    if not gpus:
        st.info(
            f"No GPU on this server (torch {torch.__version__} sees no CUDA or MPS device): the "
            f"timings below are for the CPU, {devices[0].name}.",
            icon=":material/memory:",
        )
    cols = st.columns([1.4, 1.4, 3])
    names = {d.device: f"{d.device}: {d.name}" for d in devices}
    device = cols[0].selectbox(
        "Device", list(names), format_func=names.__getitem__, key="pf_device"
    )
    shape = cols[1].selectbox(
        "Size (B, T, H)", SIZES, format_func=lambda s: f"{s[0]} × {s[1]} × {s[2]}", key="pf_size"
    )
    choices = [m for m in attnviz.METHODS if m != "auto"]
    methods = cols[2].multiselect(
        "Methods",
        choices,
        default=[m for m in bench.DEFAULT_METHODS if m in choices],
        key="pf_methods",
    )
    run = st.button("Time them", key="pf_run", type="primary", icon=":material/timer:")
    if not methods:
        st.warning("Pick at least one method to time.")
        return
    if not run and "pf_last" not in st.session_state:
        st.markdown(
            "Press **Time them** to measure every method on the chosen size; the floor is a plain "
            "read of the same bytes (`x.sum()`), the fastest a one-pass method can go."
        )
        return
    if run:
        with st.spinner("Timing: warm-up, then many rounds..."):
            st.session_state["pf_last"] = (shape, device, _measure(shape, device, tuple(methods)))
    shape, device, rows = st.session_state["pf_last"]
    b, t, h = shape
    st.markdown(f"#### {b} × {t} × {h} on {names.get(device, device)}")
    table = pd.DataFrame(
        {
            "method": r["method"],
            "median": _fmt_time(r["median_s"]),
            "IQR": _fmt_time(r["iqr_s"]),
            "GB/s": round(r["gbps"], 2),
            "% of floor": ""
            if r["ratio_to_floor"] is None
            else f"{100 * r['ratio_to_floor']:.0f}%",
            "extra memory": _fmt_bytes(r.get("extra_peak_bytes")),
        }
        for r in rows
    ).set_index("method")
    st.dataframe(table, width="stretch")
