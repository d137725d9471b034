"""The floor, the read limit every method is compared with (attnviz/bench/floor.py): the fastest
of its ways to read, timed in every round; a method above it beyond the rounds' noise is flagged
(then the floor is wrong), and one above it at a size too small to flag is explained. Correctness
only: the timings here are made slow on purpose, never compared."""

import time

import pytest
import torch

from attnviz import bench, native
from attnviz.bench import measure

FAST = dict(rounds=2, min_block_s=0.0005)


def test_the_floors_extra_memory_is_the_same_every_run():
    recs = [measure((2, 3, 5), methods=["bmm"], memory=True, **FAST)[0] for _ in range(3)]
    assert len({r.extra_peak_bytes for r in recs}) == 1
    if native.available():  # the C read loop allocates nothing
        assert recs[0].extra_peak_bytes == 0 and recs[0].notes["floor"] == "C read loop"


def _beat(ratio, iqr, method="fused", shape=(8, 512, 1024)):
    return {
        "method": method,
        "shape": list(shape),
        "device": "cpu",
        "dtype": "float32",
        "ratio_to_floor": ratio,
        "ratio_iqr": iqr,
        "notes": {"floor": "C read loop"},
    }


def test_tiny_calls_measure_fixed_costs_and_are_never_flagged():
    assert not bench.above_floor(_beat(3.0, 0.1, "bmm", shape=(2, 3, 5)))


@pytest.mark.parametrize(
    ("ratio", "iqr", "method", "above"),
    [
        (1.20, 0.05, "fused", True),  # 20% faster than the machine reads: the floor is wrong
        (1.03, 0.05, "fused", False),  # within the rounds' noise
        (0.95, 0.01, "fused", False),
        (1.50, 0.60, "bmm", False),  # a wide spread says nothing
        (1.00, 0.00, "floor", False),
        (2.00, 0.05, "copy", False),  # reads and writes x: its speed counts both
    ],
)
def test_a_method_above_the_read_limit_beyond_its_noise_is_flagged(ratio, iqr, method, above):
    assert bench.above_floor(_beat(ratio, iqr, method)) is above
    warned = bench.floor_warnings([_beat(ratio, iqr, method)])
    assert len(warned) == int(above)
    if above:
        assert warned[0].startswith("WARNING: fused at 8x512x1024") and "floor" in warned[0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])  # the C loop; PyTorch's reads
def test_the_floor_is_the_fastest_of_its_ways_timed_in_every_round(monkeypatch, dtype):
    """Which way to read is fastest depends on where x sits, and one call of each is a contest
    that noise decides: every way is timed in every round, and the one with the lowest median is
    the floor, whichever way is slow."""
    from attnviz.bench import floor, harness

    x = bench.make_inputs((2, 64, 512), dtype)[0]
    names = list(floor.floor_ways(x))
    expected = (
        floor.READ_LOOP if dtype == torch.float32 and native.available() else floor.TORCH_READ
    )
    assert floor.floor_runs(x) == expected and len(names) == (
        3 if expected == floor.READ_LOOP else 2
    )
    # the slow way costs a second a call on the clock the timing reads (a real pause can be
    # outrun on a busy machine)
    late, clock = [0.0], time.perf_counter
    monkeypatch.setattr(harness.time, "perf_counter", lambda: clock() + late[0])
    real = floor.floor_ways
    for slow in names:

        def ways(x, slow=slow):
            made = real(x)

            def late_read(x, w, read=made[slow]):
                late[0] += 1.0
                return read(x, w)

            return made | {slow: late_read}

        monkeypatch.setattr(harness, "floor_ways", ways)
        recs = measure((2, 64, 512), dtype=dtype, methods=["bmm"], **FAST)
        timed = recs[0].notes["floor_ways"]
        assert list(timed) == names  # every way, timed
        assert timed[slow] >= 1.0  # the slow one too, in the rounds
        assert recs[0].notes["path"] != slow and recs[0].notes["path"] in names
        assert recs[0].median_s == min(timed.values()) < 1.0  # the floor: the fastest median
        assert recs[0].notes["floor"] == expected
        assert all("floor_ways" not in r.notes for r in recs[1:])  # on the floor's record only


def test_a_method_above_the_limit_at_a_tiny_size_is_explained_not_flagged():
    from attnviz.bench.floor import FLAG_MIN_BYTES, small_call_words

    def rec(method, shape, ratio, nbytes):
        return {"method": method, "device": "cpu", "shape": list(shape), "ratio_to_floor": ratio,
                "bytes": nbytes}  # fmt: skip

    tiny = [rec("floor", (2, 3, 5), 1.0, 120), rec("fused", (2, 3, 5), 1.3, 184)]
    said = small_call_words(tiny + [rec("bmm", (2, 3, 5), 0.05, 184)])
    assert said.startswith("At 2x3x5 on cpu (120 B of x) fused shows above the read limit")
    assert "64 B more" in said and "bmm" not in said and not bench.above_floor(tiny[1])
    both = small_call_words(tiny + [rec("auto", (2, 3, 5), 1.2, 184)])
    assert "fused and auto show above" in both
    big = FLAG_MIN_BYTES  # from here a method above the limit is flagged instead
    large = [rec("floor", (1, 256, 1024), 1.0, big), rec("fused", (1, 256, 1024), 1.3, big + 5120)]
    assert small_call_words(large) == "" and small_call_words(tiny[:1]) == ""
    assert (
        small_call_words([rec("floor", (2, 3, 5), 1.0, 120), rec("fused", (2, 3, 5), 0.9, 184)])
        == ""
    )


def test_a_float64_record_names_the_plain_read_its_floor_ran():
    recs = measure((4, 64, 32), dtype=torch.float64, methods=["bmm"], **FAST)
    assert recs[0].notes["path"] in bench.floor.TORCH_READS
    assert recs[1].notes["floor"] == recs[0].notes["floor"] == bench.floor.TORCH_READ


# T = 2 from memory: the output is half the size of x, and a method's speed counts it
WIDE = (65536, 2, 127)


@pytest.mark.parametrize(
    ("ratio", "iqr", "above"),
    [
        (
            1.04,
            0.01,
            False,
        ),  # its speed above the limit, its time 1.45x the read of x: nothing wrong
        (1.40, 0.01, False),  # its time 1.08x the read's
        (1.60, 0.02, True),  # 6% less time than reading x: the floor is wrong
        (1.60, 0.30, False),  # ... within a wide spread
    ],
)
def test_a_method_is_flagged_by_the_time_it_took_not_by_the_bytes_it_wrote(ratio, iqr, above):
    record = {**_beat(ratio, iqr, shape=WIDE), "bytes": bench.moved_bytes(WIDE, torch.float32)}
    assert bench.above_floor(record) is above
    assert bench.above_floor({k: v for k, v in record.items() if k != "bytes"}) is above


def test_a_method_above_the_limit_by_what_it_writes_is_explained():
    from attnviz.bench.floor import writes_words

    x_bytes = 65536 * 2 * 127 * 4
    moved = bench.moved_bytes(WIDE, torch.float32)

    def rec(method, ratio, median_s, iqr=0.01):
        return {**_beat(ratio, iqr, method, shape=WIDE), "median_s": median_s,
                "bytes": x_bytes if method == "floor" else moved}  # fmt: skip

    floor = rec("floor", 1.0, 2.0e-3)
    said = writes_words([floor, rec("fused", 1.04, 2.9e-3), rec("bmm", 0.5, 6e-3)], times=" × ")
    assert said.startswith("At 65536 × 2 × 127 on cpu (63.5 MiB of x) fused shows above the read")
    assert "it took 1.45× as long as the read of x alone" in said and "bmm" not in said
    assert "32.2 MiB more than x" in said
    both = writes_words([floor, rec("fused", 1.04, 2.9e-3), rec("auto", 1.02, 3.0e-3)])
    assert "fused and auto show above" in both and "each took at least 1.45×" in both
    # flagged instead (less time than the read of x), below the limit, or too small: not here
    assert writes_words([floor, rec("fused", 1.6, 1.9e-3)]) == ""
    assert writes_words([floor, rec("fused", 0.95, 3.1e-3)]) == ""
    tiny = [
        {**floor, "shape": [2, 3, 5], "bytes": 120},
        {**rec("fused", 1.3, 3e-3), "shape": [2, 3, 5]},
    ]
    assert writes_words(tiny) == ""
