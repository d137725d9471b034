"""The C kernel's stripes asking for their lines ahead (``native.PREFETCH``): timed on a shape's
first call from beyond L2 and kept where faster, the same sums to the bit either way, bounded,
and the floor's read that asks ahead as well (``native_read.READ_AHEAD``)."""

import time

import pytest
import torch
from torch.testing import assert_close

import attnviz
from attnviz import fused, native, native_op, native_read

needs_kernel = pytest.mark.skipif(
    not native.available(), reason=f"no C kernel here: {native.build().detail}"
)


def random_inputs(b, t, h, *, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, h, generator=g, dtype=torch.float64)  # (B,T,H)
    w = torch.rand(b, t, generator=g, dtype=torch.float64)  # (B,T)
    return x.float(), w.float()


@pytest.fixture
def past_l2(monkeypatch):
    """A 4 KiB "L2" (and 1 GiB of L3): test-sized inputs come from beyond L2, in stripes; every
    plan and decision made afresh, and forgotten after the test."""

    def forget():
        native._plan.cache_clear()
        native._call_shape.cache_clear()
        native._ahead.clear()

    monkeypatch.setattr(native, "_caches", lambda: (2**12, 2**30))
    forget()
    yield
    forget()


class FakeKernel:
    """Stands in for the C library: each call takes 1 tick of a fake clock, 3 in the slow way."""

    def __init__(self, slow_ahead: bool):
        self.slow_ahead, self.clock, self.ways = slow_ahead, 0.0, []

    def weighted_rows_f32(self, *args):
        ahead = bool(args[-1][6] & native.PREFETCH)
        self.ways.append(ahead)
        self.clock += 3.0 if ahead == self.slow_ahead else 1.0


# rows of whole pairs of vectors, past a tile: stripes two vectors a step, which may ask ahead;
# T odd, B = 1, H past one block of 2048 running sums
ASKING = [(3, 100, 320), (1, 403, 2048), (2, 45, 2080), (5, 61, 512)]
# rows off the 64-byte lines, read as whole lines where the build realigns (AVX-512, GCC); with
# short sentences or rows of 17 numbers or fewer, by loads that straddle lines, never asking ahead
REALIGNED = [(4, 60, 777), (1, 301, 1000), (2, 45, 2050)]
STRADDLED = [(40, 16, 61), (12, 32, 45), (9, 50, 5)]  # and (2, 45, 2050)'s last 2 columns


@needs_kernel
@pytest.mark.parametrize("shape", [*ASKING, *REALIGNED])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_shapes_first_call_from_beyond_l2_times_both_ways_once(past_l2, shape, threads):
    if shape in REALIGNED and not native._realigns():
        pytest.skip("this build reads rows off the lines by unaligned loads, which never ask ahead")
    x, w = random_inputs(*shape, seed=sum(shape))
    assert native.may_ask_ahead(*shape, threads)
    assert native.asks_ahead(*shape, threads) is None  # not timed yet
    first = native.weighted_rows(x, w, threads=threads)
    decided = native.asks_ahead(*shape, threads)
    assert decided in (True, False)
    again = native.weighted_rows(x, w, threads=threads)
    assert native.asks_ahead(*shape, threads) is decided and len(native._ahead) == 1
    assert torch.equal(first, again)
    assert_close(first, attnviz.reference(x, w).float(), rtol=1e-5, atol=1e-4)


@needs_kernel
@pytest.mark.parametrize("shape", [*ASKING, *REALIGNED, *STRADDLED, (2, 45, 2064), (3, 37, 128)])
def test_asking_ahead_gives_the_same_bits(past_l2, monkeypatch, shape):
    x, w = random_inputs(*shape, seed=sum(shape) + 1)
    sums = []
    for ahead in (False, True):
        monkeypatch.setattr(native, "asks_ahead", lambda *s, ahead=ahead: ahead)
        sums.append(native.weighted_rows(x, w, threads=2))
    assert torch.equal(*sums)


@needs_kernel
@pytest.mark.parametrize("slow_ahead", [True, False])
def test_the_faster_way_is_kept(past_l2, monkeypatch, slow_ahead):
    fake = FakeKernel(slow_ahead)
    monkeypatch.setattr(time, "perf_counter", lambda: fake.clock)
    native._time_ahead(fake, (0, 0, 0, 0), 3, 100, 320, 1)
    # first untimed calls, then each way as often, which goes first changing every time
    assert native.AHEAD_WARMUP >= 1 and native.AHEAD_TRIES >= 2
    turns = [[False, True], [True, False]] * native.AHEAD_TRIES
    assert fake.ways == [False] * native.AHEAD_WARMUP + sum(turns[: native.AHEAD_TRIES], [])
    assert native.asks_ahead(3, 100, 320, 1) is (not slow_ahead)
    assert native.call_plan(3, 100, 320, 1)[0][6] == (0 if slow_ahead else native.PREFETCH)


@needs_kernel
def test_the_decisions_kept_are_bounded(past_l2, monkeypatch):
    fake = FakeKernel(slow_ahead=True)
    monkeypatch.setattr(time, "perf_counter", lambda: fake.clock)
    monkeypatch.setattr(native, "MAX_AHEAD_SHAPES", 5)
    for t in range(100, 112):  # a visitor trying shape after shape
        native._time_ahead(fake, (0, 0, 0, 0), 3, t, 320, 1)
        assert 1 <= len(native._ahead) <= 5
    assert native.asks_ahead(3, 111, 320, 1) is False  # the last one is kept


@needs_kernel
@pytest.mark.parametrize("shape", [(3, 37, 128), (2, 50, 48), (2, 40, 2064)])
def test_rows_the_kernel_reads_otherwise_are_never_timed(past_l2, shape):
    """Short rows (their sums in registers) and rows of an odd number of vectors on the lines
    never ask ahead: nothing to time."""
    if shape[2] % (2 * native._lanes()) == 0 and shape[2] > native._tile():
        pytest.skip("with these vectors the rows are whole pairs of them, past the short rows")
    x, w = random_inputs(*shape, seed=3)
    assert not native.may_ask_ahead(*shape, 1)
    native.weighted_rows(x, w, threads=1)
    assert native.asks_ahead(*shape, 1) is False and not native._ahead


@needs_kernel
def test_in_l2_nothing_is_timed_and_nothing_asks_ahead(monkeypatch):
    monkeypatch.setattr(native, "_caches", lambda: (2**21, 2**28))  # 2 MiB of L2, 256 MiB of L3
    native._plan.cache_clear()
    try:
        for shape, threads in [((4, 64, 1024), 1), ((1, 256, 1024), 2), ((16, 128, 128), 2)]:
            assert not native.may_ask_ahead(*shape, threads)
            assert native.asks_ahead(*shape, threads) is False
            assert not native.call_plan(*shape, threads)[0][6] & native.PREFETCH
        assert native.may_ask_ahead(48, 512, 1024, 2)  # 96 MiB: in the L3, timed
    finally:
        native._plan.cache_clear()
        native._call_shape.cache_clear()


@needs_kernel
@pytest.mark.parametrize("n", [1, 255, 5000, 70_001, 3 * 2**20 + 5])
def test_the_read_that_asks_ahead_reads_every_number_once(n):
    x = torch.arange(n, dtype=torch.float32) % 7  # exact in float32 and in the double result
    for threads in (1, 2):
        read = native_read.reader(x, threads=threads, mode=native_read.READ_AHEAD)
        assert read(x) == float(x.double().sum())


@needs_kernel
@pytest.mark.parametrize("ahead", [True, False])
def test_the_benchmarks_reason_says_which_way_to_load_the_first_call_kept(
    past_l2, monkeypatch, ahead
):
    x, w = random_inputs(3, 100, 320, seed=4)
    fake, clock = FakeKernel(slow_ahead=not ahead), time.perf_counter
    monkeypatch.setattr(time, "perf_counter", lambda: fake.clock)
    native._time_ahead(fake, (0, 0, 0, 0), 3, 100, 320, torch.get_num_threads())
    monkeypatch.setattr(time, "perf_counter", clock)
    reason = fused.fused_reason(x, w)
    assert reason.startswith("one pass over x") and "first call timed two ways" in reason
    kept = "asking for x's lines ahead of its loads" if ahead else "plain loads"
    assert reason.endswith(f"kept the faster, {kept}")
    native._ahead.clear()  # not timed yet: nothing to say about it
    native_op.build()  # done first: a build ending mid-test would be undone at teardown
    monkeypatch.setattr(native_op, "loaded", lambda x, w: None)  # called as the operator
    assert fused.fused_reason(x, w).endswith("less fixed cost than bmm's")
