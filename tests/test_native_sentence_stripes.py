"""Short rows from beyond L2, read as four stripes of whole sentences
(``striped_sentences`` in attnviz/csrc/short_rows.h, mode bit SENTENCE_STRIPES), and longer rows
in short sentences from memory (``striped_long_sentences``, csrc/long_sentences.h): the plan sets
the bit where it applies, and each sentence gets the bits it gets in L2 (on the lines: one row after
another, as tiles sum it; off them the same bits wherever it sits) and the float64 reference's
sums, in groups of four stripes and the sentences left over, on one thread or two. x is small
here: where it sits is what the plan is told."""

import pytest
import torch
from torch.testing import assert_close

import attnviz
from attnviz import native

pytestmark = pytest.mark.skipif(
    not native.available(), reason=f"no C kernel here: {native.build().detail}"
)
# the bit is planned with AVX-512 only (a sentence's sums in registers: 32 of them)
needs_avx512 = pytest.mark.skipif(
    native.available() and native._lanes() < 16, reason="sentence stripes are planned on AVX-512"
)


def random_inputs(b, t, h, *, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, h, generator=g, dtype=torch.float64)
    w = torch.rand(b, t, generator=g, dtype=torch.float64)
    return x.float(), w.float()


@pytest.fixture
def plan_as():
    """plan_as(where)(x, w, threads): the kernel's sums, its mode and its units' sentences, with
    the plan told that x comes from memory ("dram") or sits in L2 ("l2"), however small it is, on
    as many threads as asked."""
    patch = pytest.MonkeyPatch()

    def run(where):
        def call(x, w, threads):
            patch.setattr(native, "_in_llc", lambda numel: where != "dram")
            patch.setattr(native, "_in_l2", lambda numel, threads: where == "l2")
            patch.setattr(native, "MIN_NUMEL_PER_THREAD", 1)
            native._plan.cache_clear()
            native._call_shape.cache_clear()  # their answers hold where x sits
            try:
                b, t, h = x.shape
                shape = native.call_plan(b, t, h, threads)[0]
                return native.weighted_rows(x, w, threads=threads), shape[6], shape[3]
            finally:
                patch.undo()
                native._plan.cache_clear()
                native._call_shape.cache_clear()

        return call

    yield run
    patch.undo()


@needs_avx512
# on the lines: one vector to eight (four stripes of sentences), nine to sixteen (two)
@pytest.mark.parametrize("h", [16, 32, 48, 64, 112, 128, 144, 256])
@pytest.mark.parametrize("t", [1, 3, 16, 37])
# four stripes and one to three left over; on two threads units of 4 (37: the last of 1), 5, 8
@pytest.mark.parametrize("b", [4, 5, 7, 9, 37, 47, 64])
@pytest.mark.parametrize("threads", [1, 2])
def test_each_sentence_has_the_bits_it_has_in_l2(h, t, b, threads, plan_as):
    x, w = random_inputs(b, t, h, seed=h * 1000 + t * 10 + b + threads)
    got, bits, group = plan_as("dram")(x, w, threads)
    in_l2, tiled, _ = plan_as("l2")(x, w, 1)
    assert tiled & 3 == native.TILES  # one row after another
    assert bits & 3 == native.STRIPES
    striped = bool(bits & native.SENTENCE_STRIPES)
    assert striped == (group >= 4)  # units of four whole sentences at least (the last: fewer)
    if striped:  # else each sentence's own four stripes, their sums added in another order
        assert torch.equal(got, in_l2)
    assert_close(got, attnviz.reference(x, w).float(), rtol=1e-5, atol=1e-4)


@pytest.mark.skipif(
    native.available() and not native._realigns(), reason="rows off the lines: AVX-512, GCC"
)
# one vector to eight, the last one part full; nine to sixteen (two stripes)
@pytest.mark.parametrize("h", [5, 17, 24, 45, 61, 100, 127, 129, 200, 255])
@pytest.mark.parametrize("t", [1, 3, 16, 33])  # T * H odd: each sentence at its own place on a line
@pytest.mark.parametrize("b", [4, 7, 37])
@pytest.mark.parametrize("threads", [1, 2])
def test_rows_off_the_lines_give_each_sentence_the_same_bits_wherever_it_sits(
    h, t, b, threads, plan_as
):
    x, w = random_inputs(b, t, h, seed=h * 1000 + t * 10 + b + threads)
    got, bits, group = plan_as("dram")(x, w, threads)
    assert bool(bits & native.SENTENCE_STRIPES) == (group >= 4)
    moved, _, _ = plan_as("dram")(x.roll(1, 0).contiguous(), w.roll(1, 0).contiguous(), threads)
    if group >= 4:  # another stripe, another place on the lines: the same sums
        assert torch.equal(moved, got.roll(1, 0))
    assert_close(got, attnviz.reference(x, w).float(), rtol=1e-5, atol=1e-4)


@needs_avx512
# longer rows (up to LONG_STRIPED_H), on the lines and off them; at most BLOCK_ROWS rows in blocks
# of registers (block_sentences, up to BLOCK_MAX_H), more with their sums in the L1 (past 512,
# their lines asked for ahead as non-temporal; past 768, at most 16 rows)
@pytest.mark.parametrize(
    "h", [272, 300, 384, 500, 512, 528, 640, 700, 768, 800, 1000, 1024, 1025, 2001, 2048, 4096]
)
@pytest.mark.parametrize("t", [1, 3, 8, 16, 32])
@pytest.mark.parametrize("b", [4, 7, 9, 37])
@pytest.mark.parametrize("threads", [1, 2])
def test_longer_rows_from_memory_give_each_sentence_the_same_bits_wherever_it_sits(
    h, t, b, threads, plan_as
):
    x, w = random_inputs(b, t, h, seed=h * 1000 + t * 10 + b + threads)
    got, bits, group = plan_as("dram")(x, w, threads)
    assert bits & 3 == native.STRIPES
    rows = native.LONG_WIDE_ROWS if h <= native.LONG_STRIPED_H else native.BLOCK_ROWS
    striped = group >= 4 and (h <= native.LONG_WIDE_H or t <= rows)  # h <= BLOCK_MAX_H here
    assert bool(bits & native.SENTENCE_STRIPES) == striped
    if striped:  # another stripe, another place for its sums, or left over: the same sums
        moved, _, _ = plan_as("dram")(x.roll(1, 0).contiguous(), w.roll(1, 0).contiguous(), threads)
        assert torch.equal(moved, got.roll(1, 0))
        if h % 16 == 0:  # one row after another, as tiles sum it in L2
            in_l2, tiled, _ = plan_as("l2")(x, w, 1)
            assert tiled & 3 == native.TILES and torch.equal(got, in_l2)
    assert_close(got, attnviz.reference(x, w).float(), rtol=1e-5, atol=1e-4)


@needs_avx512
@pytest.mark.parametrize(
    "b, t, h",
    # a group of STRIPED_NUMEL, then 2, 2, 3, 2 and 1 left (256: two stripes of sentences)
    # (512, 384, 768 and 1024: longer rows, 3, 2, 1 and 3 left; 300 off the lines, 5 left: a
    # group of four stripes of one sentence, and one more)
    [
        (130, 64, 128),
        (2050, 32, 16),
        (1027, 16, 64),
        (66, 64, 256),
        (129, 32, 256),
        (131, 16, 512),
        (170, 16, 384),
        (85, 16, 768),
        (67, 16, 1024),
        (221, 16, 300),
    ],
)
@pytest.mark.parametrize("threads", [1, 2])
def test_groups_of_stripes_and_the_sentences_past_them(b, t, h, threads, plan_as):
    group = native.STRIPED_NUMEL // (t * h) // 4 * 4  # sentences a group of four stripes
    assert group < b and group % 4 == 0
    x, w = random_inputs(b, t, h, seed=b + t + h + threads)
    got, bits, _ = plan_as("dram")(x, w, threads)
    assert bits & native.SENTENCE_STRIPES
    if h % 16 == 0:  # one row after another, as tiles sum it in L2
        assert torch.equal(got, plan_as("l2")(x, w, 1)[0])
    else:  # off the lines: in a group or past it, the same sums
        moved, _, _ = plan_as("dram")(x.roll(3, 0).contiguous(), w.roll(3, 0).contiguous(), threads)
        assert torch.equal(moved, got.roll(3, 0))
    assert_close(got, attnviz.reference(x, w).float(), rtol=1e-5, atol=1e-4)


@needs_avx512
# short rows (sums in registers), longer rows on the lines and off them (sums in the L1, streamed
# to out: the inf in a row's last numbers, past its whole vectors where H = 300)
@pytest.mark.parametrize("h", [64, 384, 300, 640, 700, 1000])
def test_a_nan_stays_in_its_own_sentence(plan_as, h):
    x, w = random_inputs(12, 8, h, seed=3)  # stripes of three sentences: 0-2, 3-5, 6-8, 9-11
    x[4, 5, 10] = float("nan")  # read in the same steps as sentences 1, 7 and 10
    x[9, 0, h - 1] = float("inf")
    got, bits, _ = plan_as("dram")(x, w, 1)
    assert bits & native.SENTENCE_STRIPES
    assert got[4, 10].isnan() and got[4].isnan().sum() == 1
    assert got[9, h - 1].isinf() and got[9].isinf().sum() == 1
    others = [s for s in range(12) if s not in (4, 9)]
    assert torch.isfinite(got[others]).all()


@pytest.mark.parametrize(
    "b, t, h, why",
    [
        (16, 33, 272, "more rows than LONG_STRIPED_ROWS, longer than STRIPED_COLUMNS"),
        (16, 64, 257, "the same off the lines"),
        (16, 9, 1025, "more than BLOCK_ROWS rows longer than LONG_STRIPED_H"),
        (9, 3, 4097, "rows longer than BLOCK_MAX_H, odd T"),
        (16, 17, 800, "more rows than LONG_WIDE_ROWS, longer than LONG_WIDE_H"),
        (3, 64, 64, "fewer than four sentences"),
        (3, 16, 384, "fewer than four sentences"),
        (4, 256, 1024, "more rows than LONG_WIDE_ROWS, longer than LONG_WIDE_H"),
        (4, 8192, 64, "sentences longer than a quarter of STRIPED_NUMEL"),
    ],
)
# (rows off the lines: each sentence's rows stored past the caches, their lines' ends kept whole
# from one sentence to the next; on two threads, each thread's sentences or columns)
@pytest.mark.parametrize("threads", [1, 2])
def test_other_rows_from_memory_are_summed_as_before(b, t, h, why, threads, plan_as):
    x, w = random_inputs(b, t, h, seed=t + h)
    got, bits, _ = plan_as("dram")(x, w, threads)
    assert not bits & native.SENTENCE_STRIPES, why
    assert_close(got, attnviz.reference(x, w).float(), rtol=1e-5, atol=1e-4)


def test_the_plan_sets_the_bit_beyond_l2_only(monkeypatch):
    """With a 1 MiB L2 and a 32 MiB last-level cache: from memory (64-256 MiB) and in the cache
    (4-16 MiB) for short rows, on one thread and two; not in L2, where short rows go to tiles, nor
    for longer rows or sentences too few a unit."""
    monkeypatch.setattr(native, "_caches", lambda: (2**20, 32 * 2**20))
    native._plan.cache_clear()
    native._call_shape.cache_clear()

    def kind(b, t, h, threads):
        return native._call_shape(b, t, h, threads, *native._limits())[0][6]

    def striped(b, t, h, threads):
        return bool(kind(b, t, h, threads) & native.SENTENCE_STRIPES)

    try:
        avx512, realigns = native._lanes() >= 16, native._realigns()
        for threads in (1, 2):
            assert striped(2048, 64, 128, threads) == avx512  # 64 MiB
            assert striped(8192, 32, 64, threads) == avx512
            assert striped(512, 64, 32, threads) == avx512  # 4 MiB, in the cache
            assert striped(1024, 64, 64, threads) == avx512  # 16 MiB
            assert striped(2048, 64, 100, threads) == realigns  # off the lines
            assert striped(1024, 64, 256, threads) == avx512  # two stripes of sentences
            assert not striped(512, 64, 512, threads)  # longer rows, more than 32 a sentence
            assert striped(8192, 16, 384, threads) == avx512  # 192 MiB: from memory
            assert striped(8192, 32, 300, threads) == avx512  # off the lines
            assert not striped(1024, 16, 384, threads)  # 24 MiB, in the cache
            assert striped(8192, 16, 640, threads) == avx512  # asking ahead, non-temporal
            assert striped(4096, 8, 700, threads) == avx512  # off the lines
            assert striped(8192, 16, 1024, threads) == avx512  # at most LONG_WIDE_ROWS rows
            assert not striped(4096, 32, 1024, threads)  # more, of rows longer than LONG_WIDE_H
            assert striped(4096, 32, 768, threads) == avx512
            assert striped(8192, 8, 1040, threads) == avx512  # at most BLOCK_ROWS rows
            assert striped(1024, 8, 4096, threads) == avx512  # up to BLOCK_MAX_H
            assert not striped(8192, 9, 1040, threads)  # more, longer than LONG_STRIPED_H
            assert not striped(1024, 8, 4112, threads)  # rows longer than BLOCK_MAX_H
            assert not striped(8192, 33, 384, threads)  # more rows than LONG_STRIPED_ROWS
            assert not striped(8, 64, 64, threads)  # 128 KiB, in L2
        assert kind(8, 64, 64, 1) == native.TILES
        assert not striped(3, 4096, 64, 2)  # 3 MiB, sentences cut into pieces
    finally:
        native._plan.cache_clear()
        native._call_shape.cache_clear()
