"""Short rows in tiles (mode 1), two sentences at a time (``tiled_sentences`` and
``short_run_pair`` in attnviz/csrc/weighted_rows.c): each sentence's sums are the ones it has
summed alone, to the bit, and the float64 reference's; an odd sentence out, rows off the lines and
rows too long for a pair are summed as before."""

import pytest
import torch
from torch.testing import assert_close

import attnviz
from attnviz import native

pytestmark = pytest.mark.skipif(
    not native.available(), reason=f"no C kernel here: {native.build().detail}"
)


@pytest.fixture(params=[native.TILES, native.PIECES], ids=["tiles", "pieces"])
def in_tiles(request, monkeypatch):
    """Every call in tiles (or in pieces, which sum whole sentences as tiles do where the plan
    does not cut them), as in L2 with AVX-512 (``native.mode``), whatever the host, and small
    inputs on as many threads as asked."""
    monkeypatch.setattr(native, "mode", lambda *shape: request.param)
    monkeypatch.setattr(native, "MIN_NUMEL_PER_THREAD", 1)
    native._call_shape.cache_clear()  # its arrays hold the mode
    yield
    native._call_shape.cache_clear()


def random_inputs(b, t, h, *, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, h, generator=g, dtype=torch.float64)
    w = torch.rand(b, t, generator=g, dtype=torch.float64)
    return x.float(), w.float()


# a vector to 8 (a pair's most, with AVX-512), 9 (one at a time), a whole tile; 48 and 112 are
# not powers of two; 40 is off the 64-byte lines
@pytest.mark.parametrize("h", [16, 32, 40, 48, 64, 112, 128, 144, 256])
@pytest.mark.parametrize("t", [1, 3, 16, 37])
@pytest.mark.parametrize("b", [2, 5, 8])  # pairs only, and one sentence left over
@pytest.mark.parametrize("threads", [1, 2])
def test_each_sentence_of_a_pair_has_the_bits_it_has_alone(h, t, b, threads, in_tiles):
    x, w = random_inputs(b, t, h, seed=h * 1000 + t * 10 + b + threads)
    assert native.plan(b, t, h, threads)[2] == 1  # whole sentences: none cut into pieces
    got = native.weighted_rows(x, w, threads=threads)
    alone = [native.weighted_rows(x[s : s + 1], w[s : s + 1], threads=1) for s in range(b)]
    assert torch.equal(got, torch.cat(alone))
    assert_close(got, attnviz.reference(x, w).float(), rtol=1e-5, atol=1e-4)


def test_a_nan_in_one_sentence_of_a_pair_stays_in_that_sentence(in_tiles):
    x, w = random_inputs(4, 8, 64, seed=7)
    x[1, 3, 10] = float("nan")  # the second sentence of the first pair
    x[2, 0, 63] = float("inf")  # the first of the second
    got = native.weighted_rows(x, w, threads=1)
    assert got[1, 10].isnan() and got[2, 63].isinf()
    assert torch.isfinite(got[0]).all() and torch.isfinite(got[3]).all()
    assert got[1].isnan().sum() == 1 and got[2].isinf().sum() == 1
