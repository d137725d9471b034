"""The one tolerance table: rounding passes, a wrong value does not, shapes must match."""

import pytest
import torch

from attnviz import tolerance


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_rounding_in_another_order_is_close(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.rand(4, 7, 6, generator=g, dtype=torch.float64)
    want = x.sum(1)  # (4, 6) float64
    got = x.to(dtype).flip(1).sum(1)  # same sum, other order, coarser dtype
    assert tolerance.close(got, want)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_a_mean_instead_of_a_sum_is_not_close(dtype):
    x = torch.rand(4, 7, 6, dtype=torch.float64) + 0.5
    assert not tolerance.close(x.mean(1).to(dtype), x.sum(1))


def test_mismatch_marks_the_differing_cells_only():
    want = torch.zeros(2, 3)
    got = want.clone()
    got[1, 2] = 1.0
    assert tolerance.mismatch(got, want).nonzero().tolist() == [[1, 2]]


def test_shapes_must_match():
    assert not tolerance.close(torch.zeros(2, 3), torch.zeros(3, 2))
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(3, 2\)"):
        tolerance.mismatch(torch.zeros(2, 3), torch.zeros(3, 2))


def test_nan_matches_nan_and_nothing_else():
    assert tolerance.close(torch.tensor([float("nan")]), torch.tensor([float("nan")]))
    assert not tolerance.close(torch.tensor([float("nan")]), torch.tensor([0.0]))


def test_the_loosest_dtype_decides():
    assert tolerance.tolerance(torch.float32, torch.float64) == tolerance.TOLERANCE[torch.float32]
    assert tolerance.tolerance(torch.int64) == (0.0, 0.0)
