"""attnviz.bench: records and their fields, the CLI's JSON schema, the sweep's helpers, the
performance figures as data, the formatted numbers and the ranking a sweep shows. Correctness only:
no timing assertions."""

import json
import os

import pytest
import torch

from attnviz import AttnvizError, bench, fused, native, weighted_sum
from attnviz.bench import (
    FLOOR,
    format_table,
    list_devices,
    measure,
    moved_bytes,
    parse_dtype,
    parse_shape,
    peak_extra_bytes,
    resolve_devices,
)
from attnviz.bench import sweep as sweep_module
from attnviz.bench.__main__ import main as cli
from attnviz.bench.sweep import crossover, roofline, sizes_up_to, sweep

FAST = dict(rounds=2, min_block_s=0.0005)
CLI_FIELDS = {"method", "device", "shape", "dtype", "median_s", "iqr_s", "gbps", "ratio_to_floor"}


@pytest.fixture(scope="module")
def tiny_records():
    return measure((2, 3, 5), methods=["broadcast", "bmm", "fused"], memory=True, **FAST)


def test_floor_comes_first_and_every_method_follows(tiny_records):
    assert [r.method for r in tiny_records] == [FLOOR, "broadcast", "bmm", "fused"]
    assert tiny_records[0].ratio_to_floor == 1.0


def test_records_carry_the_metadata_an_expert_needs(tiny_records):
    for r in tiny_records:
        assert r.device == "cpu" and r.device_name and r.dtype == "float32"
        assert r.shape == (2, 3, 5)
        assert r.threads == torch.get_num_threads() and r.torch_version == torch.__version__
        assert r.tf32 is False and r.transfer_s is None  # cpu: nothing to transfer
        assert r.min_s <= r.q1_s <= r.median_s <= r.q3_s
        assert r.iqr_s == pytest.approx(r.q3_s - r.q1_s) and r.best_ratio_to_floor > 0
        assert r.median_s > 0 and r.first_call_s > 0 and r.calls_per_round >= 1 and r.rounds == 2


def test_records_say_what_each_method_ran(tiny_records):
    runs_as = {r.method: r.notes["path"] for r in tiny_records}
    ways = bench.floor.floor_ways(bench.make_inputs((2, 3, 5))[0])
    assert runs_as["floor"] in ways and runs_as["broadcast"] == "(x * w[..., None]).sum(1)"
    assert runs_as["fused"] == fused.fused_path(*bench.make_inputs((2, 3, 5)))  # tiny: bmm
    assert all(r.notes["cpu_kernel"] == cpu_kernel_detail() for r in tiny_records)


def test_records_carry_the_flag_and_the_ratios_spread(tiny_records):
    for r in tiny_records:
        assert r.notes["above_floor"] == bench.above_floor(r) and r.ratio_iqr >= 0


def test_fused_record_names_the_c_kernel_at_a_large_size():
    recs = measure((2, 256, 512), methods=["fused", "auto"], **FAST)
    expect = "C row-sum kernel" if native.available() else "embedding-bag row sum"
    assert recs[1].notes["path"] == expect and recs[2].notes["path"] == f"fused: {expect}"


def cpu_kernel_detail():
    built = native.build()
    return built.detail if built.ok else f"none: {built.detail}"


def test_bytes_and_bandwidth_are_consistent(tiny_records):
    floor = tiny_records[0]
    assert floor.bytes == 2 * 3 * 5 * 4  # a plain read of x
    for r in tiny_records[1:]:
        assert r.bytes == moved_bytes((2, 3, 5), torch.float32) == (30 + 6 + 10) * 4
        assert r.gbps == pytest.approx(r.bytes / r.median_s / 1e9)
        assert r.ratio_to_floor > 0  # paired per round: near, not equal to, gbps / floor.gbps


def test_inputs_are_read_where_they_sit_unless_rotation_is_asked_for(tiny_records):
    assert all(r.n_input_sets == 1 and r.notes["fits_in_cache"] for r in tiny_records)
    cold = measure((2, 3, 5), methods=["bmm"], rounds=2, min_block_s=0.001, max_input_sets=32)
    assert all(r.n_input_sets == 32 for r in cold)  # 2 x the cache holds far more than 32


def test_naive_extra_memory_is_the_full_temporary():
    shape = (4, 64, 128)
    x = torch.randn(shape)
    w = torch.rand(shape[:2])
    naive = peak_extra_bytes(lambda: (x * w[..., None]).sum(dim=1), "cpu")
    one_pass = peak_extra_bytes(lambda: torch.bmm(w[:, None, :], x)[:, 0], "cpu")
    assert naive >= x.numel() * 4  # the (B, T, H) product
    assert one_pass < x.numel() * 4 // 8  # only the (B, H) output


def test_fused_extra_memory_is_its_output_as_bmm_s_is():
    """fused's operator makes its output where the profiler does not look: still counted."""
    from attnviz import native_op

    if native_op.build(timeout=600).ok:  # the operator, where it builds: what fused calls
        assert native_op.loaded is not None
    x, w = torch.randn(4, 64, 128), torch.rand(4, 64)
    for _ in range(2):  # the second call may take the first one's dropped output again
        fused = peak_extra_bytes(lambda: weighted_sum(x, w, method="fused"), "cpu")
        bmm = peak_extra_bytes(lambda: torch.bmm(w[:, None, :], x)[:, 0], "cpu")
        assert fused == bmm == 4 * 128 * 4  # the (B, H) output alone


def test_memory_field_is_filled_when_asked(tiny_records):
    by = {r.method: r.extra_peak_bytes for r in tiny_records}
    assert by["broadcast"] >= 2 * 3 * 5 * 4
    assert all(v is not None for v in by.values())


def test_as_dict_is_json_safe(tiny_records):
    d = json.loads(json.dumps(tiny_records[1].as_dict()))
    assert d["shape"] == [2, 3, 5] and set(d) >= CLI_FIELDS


def test_table_names_every_method(tiny_records):
    table = format_table(tiny_records)
    for name in ("floor", "broadcast", "bmm", "fused", "speed", "B/s", "2x3x5"):
        assert name in table


@pytest.mark.parametrize(
    ("text", "shape"),
    [("2x3x5", (2, 3, 5)), (" 48X512x1024 ", (48, 512, 1024)), ("8×16×4", (8, 16, 4))],
)
def test_parse_shape_reads_b_t_h(text, shape):
    assert parse_shape(text) == shape


@pytest.mark.parametrize("text", ["2x3", "axbxc", "2x0x5", "1x2x3x4"])
def test_parse_shape_refuses_with_the_expected_form(text):
    with pytest.raises(AttnvizError, match=r"48x512x1024|at least 1"):
        parse_shape(text)


def test_parse_dtype_names_the_choices():
    assert parse_dtype("bf16") is torch.bfloat16
    with pytest.raises(AttnvizError, match="float32, float16, bfloat16, float64"):
        parse_dtype("int8")


def test_unknown_method_is_refused():
    with pytest.raises(AttnvizError, match="'fused'"):
        measure((2, 3, 5), methods=["fastest"], **FAST)


def test_loop_is_refused_on_big_inputs():
    with pytest.raises(AttnvizError, match=r"B\*T = 8192"):
        measure((8, 1024, 4), methods=["loop"], **FAST)


def test_devices_list_the_cpu_with_a_name():
    devs = list_devices()
    assert devs[0].device == "cpu" and devs[0].name
    assert "cpu" in resolve_devices("all")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_missing_device_names_the_ones_that_exist():
    with pytest.raises(AttnvizError, match=r"'cuda:0'.*'cpu'"):
        resolve_devices("cuda")


# --- the CLI ---


def test_cli_json_lines_follow_the_schema(capsys):
    code = cli(["--sizes", "2x3x5,3x4x4", "--methods", "broadcast,fused", "--rounds", "2",
                "--min-block-s", "0.0005", "--json"])  # fmt: skip
    assert code == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 6
    for rec in lines:
        assert set(rec) >= CLI_FIELDS
        assert isinstance(rec["median_s"], float) and isinstance(rec["gbps"], float)
        assert rec["device"] == "cpu" and rec["dtype"] == "float32"
    floors = [r for r in lines if r["method"] == "floor"]
    assert [f["shape"] for f in floors] == [[2, 3, 5], [3, 4, 4]]
    assert {r["method"] for r in lines} == {"floor", "broadcast", "fused"}


def test_summarize_turns_json_runs_into_markdown_tables(tmp_path, capsys):
    import importlib.util

    path = tmp_path / "run1.jsonl"
    code = cli(["--sizes", "2x3x5", "--methods", "broadcast,bmm,fused", "--rounds", "2",
                "--min-block-s", "0.0005", "--json"])  # fmt: skip
    path.write_text(capsys.readouterr().out)
    assert code == 0
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location(
        "summarize", os.path.join(root, "benchmarks", "summarize.py")
    )
    summarize = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(summarize)
    summarize.main([str(path), str(path)])  # the same run twice: two rows
    out = capsys.readouterr().out
    assert "#### 2x3x5 float32" in out and "### Summary" in out
    rows = [line for line in out.splitlines() if line.startswith("| 2x3x5 |")]
    assert len(rows) == 1 and rows[0].count("|") == 8  # 7 columns, none missing
    assert sum(line.startswith(("| 1 |", "| 2 |")) for line in out.splitlines()) == 2


def test_cli_prints_a_table(capsys):
    assert (
        cli(["--sizes", "2x3x5", "--methods", "bmm", "--rounds", "2", "--min-block-s", "0.0005"])
        == 0
    )
    out = capsys.readouterr().out
    assert "floor" in out and "bmm" in out and "median" in out and "threads" in out
    assert f"C kernel: {cpu_kernel_detail()}" in out


def test_cli_refuses_a_bad_size_with_a_plain_message(capsys):
    assert cli(["--sizes", "2x3"]) == 2
    assert "48x512x1024" in capsys.readouterr().err


# --- the sweep ---


def _rec(device, shape, method, median):
    return {"device": device, "shape": list(shape), "dtype": "float32", "method": method,
            "median_s": median, "gbps": 1.0 / median}  # fmt: skip


def test_crossover_is_where_the_gpu_wins_from_then_on():
    recs = [
        _rec("cpu", (2, 3, 5), "bmm", 1e-6),
        _rec("cuda:0", (2, 3, 5), "fused", 5e-6),
        _rec("cpu", (8, 64, 128), "bmm", 1e-5),
        _rec("cuda:0", (8, 64, 128), "fused", 6e-6),
        _rec("cpu", (48, 512, 1024), "bmm", 2e-3),
        _rec("cuda:0", (48, 512, 1024), "fused", 3e-5),
    ]
    assert crossover(recs, "cpu", "cuda:0") == (8 * 64 * 128 + 8 * 64) * 4
    assert crossover(recs[:2], "cpu", "cuda:0") is None


def test_roofline_is_the_best_floor_per_device():
    recs = [_rec("cpu", (2, 3, 5), "floor", 1.0), _rec("cpu", (4, 3, 5), "floor", 0.5)]
    assert roofline(recs) == {"cpu": 2.0}


def test_sizes_up_to_keeps_what_fits():
    sizes = sizes_up_to(10 * 2**20)
    assert sizes[0] == (2, 3, 5)
    assert all((b * t * h + b * t) * 4 <= 10 * 2**20 for b, t, h in sizes)
    assert sizes_up_to(1) == [(2, 3, 5)]


def test_sweep_refuses_a_size_above_the_cap_before_allocating():
    with pytest.raises(AttnvizError, match=r"\(4096, 4096, 4096\).*MiB"):
        sweep(devices=["cpu"], sizes=[(4096, 4096, 4096)], max_input_bytes=2**20, **FAST)


def test_sweep_returns_records_per_size():
    recs = sweep(
        devices=["cpu"], sizes=[(2, 3, 5), (4, 8, 16)], methods=["bmm"], memory=False, **FAST
    )
    assert [(r.shape, r.method) for r in recs] == [
        ((2, 3, 5), "floor"), ((2, 3, 5), "bmm"), ((4, 8, 16), "floor"), ((4, 8, 16), "bmm"),
    ]  # fmt: skip


# --- figures ---


def test_performance_figures_are_data_with_descriptions(tiny_records):
    from attnviz.figures.performance import (
        extra_memory_figure,
        roofline_figure,
        time_vs_bytes_figure,
    )

    recs = [
        *tiny_records,
        *measure((4, 8, 16), methods=["broadcast", "bmm", "fused"], memory=True, **FAST),
    ]
    fig = time_vs_bytes_figure(recs)
    names = {t.name for t in fig.data if " · " in t.name}
    assert names == {"read limit · cpu", "broadcast · cpu", "bmm · cpu", "fused · cpu"}
    bmm = next(t for t in fig.data if t.name == "bmm · cpu")
    assert list(bmm.x) == [(30 + 6) * 4, (512 + 32) * 4]
    assert list(bmm.y) == [r.median_s for r in recs if r.method == "bmm"]
    assert "4x8x16" in fig.layout.meta["description"]
    roof = roofline_figure(recs)
    assert "read floor" in roof.layout.meta["description"]
    assert "no method can beat it" in roof.layout.meta["description"]
    limit = next(t for t in roof.data if t.name == "read limit · cpu")
    assert list(limit.y) == [r.gbps for r in recs if r.method == "floor"]  # a line, every size
    assert list(next(t for t in roof.data if t.name == "fused · cpu").y) == [
        r.gbps for r in recs if r.method == "fused"
    ]
    mem = extra_memory_figure(recs)
    naive = next(t for t in mem.data if t.name == "broadcast · cpu")
    assert list(naive.y) == [r.extra_peak_bytes for r in recs if r.method == "broadcast"]
    assert "broadcast" in mem.layout.meta["description"]


def test_time_figure_marks_the_gpu_crossover():
    from attnviz.figures.performance import time_vs_bytes_figure

    recs = [
        _rec("cpu", (2, 3, 5), "bmm", 1e-6) | {"q1_s": 1e-6, "q3_s": 1e-6},
        _rec("cuda:0", (2, 3, 5), "fused", 5e-6) | {"q1_s": 5e-6, "q3_s": 5e-6},
        _rec("cpu", (48, 512, 1024), "bmm", 2e-3) | {"q1_s": 2e-3, "q3_s": 2e-3},
        _rec("cuda:0", (48, 512, 1024), "fused", 3e-5) | {"q1_s": 3e-5, "q3_s": 3e-5},
    ]
    fig = time_vs_bytes_figure(recs)
    assert "cuda:0 is faster than the CPU from 96.1 MiB" in fig.layout.meta["description"]
    assert any("faster from" in a.text for a in fig.layout.annotations)


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (None, "–"),
        (8, "8 B"),
        (1023, "1023 B"),
        (4096, "4 KiB"),
        (100863744, "96.2 MiB"),
        (3 * 2**30, "3 GiB"),
        (1536, "1.50 KiB"),
    ],
)
def test_format_bytes_reads_like_a_person_writes(n, text):
    assert bench.format_bytes(n) == text


@pytest.mark.parametrize(
    ("s", "text"),
    [
        (None, "–"),
        (4.51e-9, "4.51 ns"),
        (1.4e-6, "1.40 µs"),
        (2.31e-3, "2.31 ms"),
        (34.76e-3, "34.8 ms"),
        (1.2, "1.20 s"),
        (2.5e-10, "0.250 ns"),
        (999.96e-9, "1.00 µs"),
        (-3.2e-6, "-3.20 µs"),
        (3600.0, "3600 s"),
        (4.1e-6, "4.10 µs"),  # once shown as "4.1 µs": three significant digits are three
    ],
)
def test_format_time_reads_like_a_person_writes(s, text):
    assert bench.format_time(s) == text


@pytest.mark.parametrize(
    ("rate", "text"),
    [
        (None, "–"),
        (0.3, "0.300 B/s"),
        (4.6e3, "4.60 kB/s"),  # einsum on 2x3x5 on a loaded machine: once shown as "0.00" GB/s
        (3.12e8, "312 MB/s"),
        (51.4e9, "51.4 GB/s"),
        (1.2e12, "1.20 TB/s"),
        (999.9e9, "1.00 TB/s"),
        (42e6, "42.0 MB/s"),
    ],
)
def test_format_rate_reads_like_a_person_writes(rate, text):
    assert bench.format_rate(rate) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.98, "0.980"),
        (1, "1.00"),
        (0.51, "0.510"),
        (51.37, "51.4"),
        (123.4, "123"),
        (99.96, "100"),
    ],
)
def test_format_number_keeps_three_significant_digits(value, text):
    assert bench.format_number(value) == text


@pytest.mark.parametrize(("ratio", "text"), [(0.51, "51.0%"), (0.9876, "98.8%"), (1.234, "123%")])
def test_format_share_is_a_percentage_with_three_digits(ratio, text):
    assert bench.format_share(ratio) == text


@pytest.mark.parametrize("fmt", ["format_time", "format_bytes", "format_rate"])
@pytest.mark.parametrize("value", [1e-13, 3.3e-9, 4.6e-6, 0.5, 7.0, 1234.5, 6.1e10, 2.2e14])
def test_formatted_values_are_never_a_rounded_zero(fmt, value):
    number, unit = getattr(bench, fmt)(value).split(" ")
    assert float(number) > 0 and unit


# --- ranking: the order a sweep shows, with ties where the rounds overlap ---


def _ranked(method, median, q1, q3, shape=(2, 3, 5)):
    return _rec("cpu", shape, method, median) | {"q1_s": q1, "q3_s": q3}


def test_ranking_puts_overlapping_methods_in_one_tier():
    recs = [
        _ranked("floor", 1.0, 0.9, 1.1),
        _ranked("bmm", 2.0, 1.9, 2.2),
        _ranked("fused", 2.1, 2.0, 2.3),  # overlaps bmm: a tie
        _ranked("einsum", 5.0, 4.8, 5.2),
    ]
    assert sweep_module.ranking(recs) == {(2, 3, 5): [["bmm", "fused"], ["einsum"]]}


def test_contradictions_are_pairs_ordered_both_ways():
    a = {(2, 3, 5): [["bmm"], ["einsum"], ["broadcast"]]}
    b = {(2, 3, 5): [["einsum"], ["bmm", "broadcast"]]}
    assert sweep_module.contradictions(a, b) == [((2, 3, 5), "bmm", "einsum")]
    assert sweep_module.contradictions(a, a) == []


@pytest.mark.parametrize(
    ("notes", "want"),
    [({"fits_in_cache": True}, "cache"), ({"fits_in_cache": False}, "memory"), ({}, "unknown")],
)
def test_regime_reads_the_cache_note(notes, want):
    assert bench.harness.regime(_rec("cpu", (2, 3, 5), "bmm", 1e-6) | {"notes": notes}) == want


@pytest.mark.parametrize(("iqr", "noisy"), [(0.05, False), (0.1, False), (0.11, True)])
def test_a_point_is_noisy_when_its_iqr_exceeds_the_share(iqr, noisy):
    r = _rec("cpu", (2, 3, 5), "bmm", 1.0) | {"iqr_s": iqr}
    assert bench.harness.is_noisy(r) is noisy


def test_figures_shade_the_cache_sizes_and_open_the_noisy_markers():
    from attnviz.figures.performance import roofline_figure, time_vs_bytes_figure

    def rec(shape, fits, iqr):
        r = _rec("cpu", shape, "bmm", 1e-3) | {"q1_s": 1e-3, "q3_s": 1e-3 + iqr, "iqr_s": iqr}
        return r | {"notes": {"fits_in_cache": fits}, "ratio_to_floor": 0.5, "bytes": 1}

    recs = [rec((2, 3, 5), True, 5e-4), rec((64, 1024, 1024), False, 1e-6)]
    for fig in (time_vs_bytes_figure(recs), roofline_figure(recs)):
        names = [t.name for t in fig.data]
        assert names[0] == "data fits in cache"
        bmm = next(t for t in fig.data if t.name == "bmm · cpu")
        assert list(bmm.marker.symbol) == ["circle-open", "circle"]
        text = fig.layout.meta["description"]
        assert "fit in the CPU's last-level cache" in text and "bmm at 2x3x5" in text
        assert "from memory (DRAM)" in text and "at least once" in text
        regimes = {a.text.strip() for a in fig.layout.annotations}
        assert {"in cache", "from memory"} <= regimes


# --- the sweep crosses the cache: sizes past the last-level cache, within a quarter of RAM ---

MIB, GIB = 2**20, 2**30


def _top(limit):
    return max(sweep_module.input_bytes(s, torch.float32) for s in sizes_up_to(limit))


@pytest.mark.parametrize(
    ("llc", "ram", "hard", "words"),
    [
        (32 * MIB, 24 * GIB, None, "past 2x the 32 MiB"),  # an AMD EPYC: past at 96 MiB
        (480 * MIB, 24 * GIB, None, "past 2x the 480 MiB"),  # the Xeon of issue 32
        (480 * MIB, 2 * GIB, None, "a quarter of this machine's 2 GiB"),
        (480 * MIB, 24 * GIB, 512 * MIB, "this server's cap of 512 MiB per job"),
    ],
)
def test_the_sweep_crosses_the_cache_or_says_what_stops_it(llc, ram, hard, words):
    limit, note = sweep_module.crossing_limit(
        64 * MIB, llc_bytes=llc, ram_bytes=ram, hard_cap_bytes=hard
    )
    assert words in note and limit <= ram // 4 and (hard is None or limit <= hard)
    if "past" in note:
        assert _top(limit) >= 2 * llc
    else:
        assert _top(limit) < 2 * llc and "short of" in note


def test_cache_levels_read_the_sysfs_layout(tmp_path):
    for i, (level, kind, size) in enumerate(
        [
            (1, "Data", "32K"),
            (1, "Instruction", "32K"),
            (2, "Unified", "1024K"),
            (3, "Unified", "32768K"),
        ]
    ):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    got = bench.devices.cache_levels(str(tmp_path))
    assert got == {1: 32 * 2**10, 2: MIB, 3: 32 * MIB}
    assert bench.devices.cache_levels(str(tmp_path / "missing")) == {}


def test_the_overhead_pairs_each_method_with_the_bare_op_it_runs():
    """``--overhead``: each method against what it ends up running, the C kernel's call for fused
    where it builds; every time a positive, finite number (no claim about which is quicker)."""
    from attnviz import examples
    from attnviz.bench.overhead import bare_for, measure_overhead

    x, w = examples.classic()
    rows = measure_overhead(x, w, methods=("fused", "bmm"), rounds=1, calls=5, pairs=3)
    assert [r.method for r in rows] == ["fused", "bmm"]
    assert all(0 < r.library_s < 1 and 0 < r.bare_s < 1 and r.calls == 15 for r in rows)
    kernel = native.available()
    assert ("attnviz.native" in rows[0].bare) is kernel
    assert rows[1].bare == "torch.bmm(w[:, None, :], x)[:, 0, :]"
    _, bare = bare_for("fused", x, w)
    torch.testing.assert_close(bare(x, w), fused._bmm(x, w), rtol=1e-6, atol=1e-6)
    with pytest.raises(AttnvizError, match="no bare torch one-liner"):
        bare_for("fused", x.double().repeat(1, 1, 9000), w.double())  # embedding-bag row sum
