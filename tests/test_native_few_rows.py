"""Sentences of few long rows in the cache (``few_rows`` in attnviz/csrc/weighted_rows.c): each two
vectors of columns summed down all of a sentence's rows at once, the sums in registers. The plan
says where it applies (``native.few_rows``: at most FEW_ROWS rows of more than FEW_ROWS_COLUMNS
numbers, in stripes or by columns, not from memory, and no more than FEW_ROWS_WAYS rows at one
place on a 4 KiB page), fused's reason says so, and the sums are the
float64 reference's: odd and even rows, rows on and off the 64-byte lines, the columns past the
last whole pair of vectors, a NaN and an inf kept in their own column, one thread or two. x is
small here: where it sits is what the plan is told (the ``caches`` fixture, tests/conftest.py)."""

import pytest
import torch
from torch.testing import assert_close

from attnviz import fused, native
from tests.test_native import expected, needs_kernel, random_inputs

pytestmark = needs_kernel

IN_L3 = (2**10, 2**30)  # past a 1 KiB "L2", in a 1 GiB last-level cache
FROM_DRAM = (2**10, 2**10)

# T from 1 to FEW_ROWS, odd and even; H past FEW_ROWS_COLUMNS, on the lines and off them, with
# columns left past the last whole pair of vectors (AVX-512: 32 numbers a pair)
SHAPES = [
    (5, 1, 300),
    (7, 2, 512),
    (3, 3, 777),
    (4, 16, 768),
    (9, 17, 1000),
    (2, 19, 257),
    (6, 20, 2050),
    (1, 13, 4099),
    (3, 8, 1024),  # rows 4 KiB apart: at most FEW_ROWS_WAYS of them
    (2, 16, 512),  # 2 KiB apart: twice as many
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_few_long_rows_in_the_cache_sum_to_the_reference(shape, threads, fine_grained, caches):
    caches(*IN_L3)
    b, t, h = shape
    assert native.few_rows(b, t, h, threads)
    assert not native.may_ask_ahead(b, t, h, threads)  # nothing to time: it never asks
    x, w = random_inputs(b, t, h, seed=b * t + h + threads)
    got = native.weighted_rows(x, w, threads=threads)
    assert_close(got, expected(x, w), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_nan_and_an_inf_stay_in_their_own_column(threads, fine_grained, caches):
    caches(*IN_L3)
    x, w = random_inputs(4, 9, 777, seed=threads)
    x[1, 4, 100] = float("nan")  # an even row
    x[2, 7, 776] = float("inf")  # an odd row, the last column (past the pairs of vectors)
    got = native.weighted_rows(x, w, threads=threads)
    assert got[1, 100].isnan() and got[2, 776].isinf()
    want = expected(x, w)
    kept = torch.ones_like(got, dtype=torch.bool)
    kept[1, 100] = kept[2, 776] = False
    assert torch.isfinite(got[kept]).all()
    assert_close(got[kept], want[kept], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(
    ("shape", "where"),
    [
        ((4, 21, 768), IN_L3),  # one row too many: stripes
        ((4, 16, 256), IN_L3),  # rows too short: their own ways (tiles, stripes of sentences)
        ((4, 16, 768), FROM_DRAM),  # from memory: stripes of whole rows
        ((4, 9, 1024), IN_L3),  # 9 rows at one place on a page: more than an L1 set's ways
        ((4, 17, 512), IN_L3),  # 17 rows at two places
        ((2, 9, 2048), IN_L3),  # rows of 8 KiB: one place on a page too
    ],
)
def test_not_where_it_does_not_apply(shape, where, fine_grained, caches):
    caches(*where)
    assert not native.few_rows(*shape, 1)
    x, w = random_inputs(*shape, seed=sum(shape))
    assert_close(native.weighted_rows(x, w, threads=1), expected(x, w), rtol=1e-5, atol=1e-4)


def test_fused_says_why(fine_grained, caches):
    caches(*IN_L3)
    x, w = random_inputs(4, 16, 768, seed=3)
    assert "sums each stretch of columns down all of them at once" in fused.fused_reason(x, w)
    x, w = random_inputs(4, 32, 768, seed=3)
    assert "down all of them" not in fused.fused_reason(x, w)
