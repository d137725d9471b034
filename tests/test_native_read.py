"""The machine's read limit (attnviz.native_read, csrc/read_floats.c), the floor every method is
measured against: it sums every number once, in every way and plan it reads, threaded as the
kernel is, and refuses what it cannot read."""

import math

import pytest
import torch

from attnviz import AttnvizError, native, native_read

needs_kernel = pytest.mark.skipif(
    not native.available(), reason=f"no C kernel here: {native.build().detail}"
)


def random_x(b, t, h, *, seed):
    """net_output (B, T, H), float32, fresh random numbers"""
    return torch.randn(b, t, h, generator=torch.Generator().manual_seed(seed))


@pytest.fixture
def fine_grained(monkeypatch):
    """Cut even small inputs into many units, so every path of the plan runs on test sizes."""
    monkeypatch.setattr(native, "MIN_NUMEL_PER_THREAD", 1)
    monkeypatch.setattr(native, "MAX_UNIT_NUMEL", 64)
    monkeypatch.setattr(native, "MIN_PIECE_ROWS", 2)


@needs_kernel
@pytest.mark.parametrize("n", [0, 1, 127, 128, 129, 1000, 4099, 70000])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_read_sum_is_the_sum_of_every_number(n, threads, fine_grained):
    x = torch.rand(n, generator=torch.Generator().manual_seed(n), dtype=torch.float64)
    got = native_read.read_sum(x.float(), threads=threads)
    assert got == pytest.approx(float(x.float().double().sum()), rel=1e-5, abs=1e-5)


@needs_kernel
@pytest.mark.parametrize("threads", [1, 2])
def test_read_sum_from_memory_reads_units_and_every_number(threads, monkeypatch):
    monkeypatch.setattr(native, "_caches", lambda: (2**10, 2**12))  # x "past" a 4 KiB LLC
    monkeypatch.setattr(native_read, "READ_UNIT_NUMEL", 1000)
    monkeypatch.setattr(native, "MIN_NUMEL_PER_THREAD", 1)
    native_read._read_plan.cache_clear()
    try:
        assert native_read.read_plan(70_001, threads) == (threads, 1000)
        x = torch.arange(70_001, dtype=torch.float32) % 7  # exact in float32 and in the sum
        assert native_read.read_sum(x, threads=threads) == float(x.double().sum())
    finally:
        native_read._read_plan.cache_clear()


@needs_kernel
def test_read_sum_reads_a_b_t_h_tensor_whole():
    x = random_x(3, 17, 17, seed=4)  # T == H
    assert native_read.read_sum(x) == pytest.approx(float(x.double().sum()), rel=1e-5, abs=1e-4)


@needs_kernel
def test_a_reader_reads_every_tensor_of_its_shape_and_refuses_the_rest():
    """The floor's reader is planned for one shape: any other would be read past its end."""
    x = random_x(2, 30, 70, seed=5)
    y = random_x(2, 30, 70, seed=6)
    read = native_read.reader(x, threads=2)
    assert read(y) == pytest.approx(float(y.double().sum()), rel=1e-5, abs=1e-4)
    for wrong in (
        torch.zeros(2, 30, 71),
        torch.zeros(2, 30, 70, dtype=torch.float64),
        x.mT.mT[:, :, :69],
    ):
        with pytest.raises(AttnvizError, match="reads \\(2, 30, 70\\) float32"):
            read(wrong)
    with pytest.raises(AttnvizError, match="reads \\(2, 30, 70\\) float32"):
        read(torch.zeros(2, 70, 30).transpose(1, 2))  # its shape, not contiguous


@pytest.mark.parametrize(("n", "threads"), [(10, 4), (1 << 20, 2), (1 << 30, 2), (5 << 16, 8)])
def test_read_plan_covers_every_number(n, threads):
    used, unit = native_read.read_plan(n, threads)
    assert 1 <= used <= threads and 1 <= unit <= n
    assert math.ceil(n / unit) >= used  # every thread used has a unit
    assert used == 1 or unit <= native.MAX_UNIT_NUMEL


@pytest.mark.parametrize("n", [7 * 3001 * 999, 5 * 2**22 + 3, 2**22 + 1, 3 * 2**17])
@pytest.mark.parametrize("threads", [2, 3])
def test_in_the_last_level_cache_every_thread_reads_as_much(monkeypatch, n, threads):
    """Units of at most MAX_UNIT_NUMEL numbers, as many on every thread: 84 MiB in 16 MiB units
    had left one of two threads a unit more than the other, and the floor 13% too slow."""
    monkeypatch.setattr(native, "_caches", lambda: (2**21, 2**30))  # 2 MiB L2, 1 GiB L3
    native_read._read_plan.cache_clear()
    try:
        used, unit = native_read.read_plan(n, threads)
    finally:
        native_read._read_plan.cache_clear()
    count = math.ceil(n / unit)
    assert used == threads and count % used == 0  # the same number of units on every thread
    assert unit <= native.MAX_UNIT_NUMEL and unit % 256 == 0  # whole KiB: from a line's start
    assert n - (count - 1) * unit > unit - 256 * count  # the last unit (nearly) as long


def test_read_sum_refuses_what_it_cannot_read():
    with pytest.raises(AttnvizError, match="contiguous float32"):
        native_read.read_sum(torch.zeros(4, 4).t())


@needs_kernel
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("n", [1, 15, 16, 255, 256, 257, 5000, 70_001])
def test_every_way_of_reading_sums_every_number_once(n, threads, monkeypatch):
    monkeypatch.setattr(native, "MIN_NUMEL_PER_THREAD", 64)  # threads even for small n
    monkeypatch.setattr(native, "MAX_UNIT_NUMEL", 1024)  # and several units a thread
    x = torch.arange(n, dtype=torch.float32) % 7  # exact in float32 and in the double result
    for own in (False, True):  # units as they come free, or each thread its own (OWN_L2)
        monkeypatch.setattr(native, "_in_l2", lambda numel, used, own=own: own)
        for kind in (native.STRIPES, native.TILES, native_read.READ_AHEAD):
            monkeypatch.setattr(native_read, "read_mode", lambda n, kind=kind: kind)
            assert native_read.read_sum(x, threads=threads) == float(x.double().sum())
