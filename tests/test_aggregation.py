"""weighted_sum: every method against the float64 reference, invariants and errors that teach."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.testing import assert_close

import attnviz
from attnviz import AttnvizError, weighted_sum

METHODS = list(attnviz.METHODS)
TOL = {
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.bfloat16: dict(rtol=2e-2, atol=5e-2),
    torch.float16: dict(rtol=5e-3, atol=1e-2),
}


def random_inputs(b, t, h, *, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, h, generator=g, dtype=torch.float64)  # (B,T,H)
    w = torch.rand(b, t, generator=g, dtype=torch.float64)  # (B,T)
    return x.to(dtype), w.to(dtype)


sizes = st.integers(min_value=1, max_value=7)


@pytest.mark.parametrize("method", METHODS)
@given(b=sizes, t=sizes, h=sizes, seed=st.integers(0, 2**31 - 1))
def test_method_matches_float64_reference(method, b, t, h, seed):
    x, w = random_inputs(b, t, h, seed=seed)
    got = weighted_sum(x, w, method=method)
    assert got.shape == (b, h)
    assert_close(got, attnviz.reference(x, w).float(), **TOL[torch.float32])


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "shape", [(2, 3, 5), (3, 4, 4), (1, 1, 1), (1, 6, 2), (4, 1, 3), (5, 7, 1)]
)
def test_method_on_asymmetric_and_trap_shapes(method, shape):
    x, w = random_inputs(*shape, seed=sum(shape))
    assert_close(weighted_sum(x, w, method=method), attnviz.reference(x, w).float())


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", list(TOL))
def test_method_keeps_dtype(method, dtype):
    x, w = random_inputs(3, 5, 4, seed=7, dtype=dtype)
    got = weighted_sum(x, w, method=method)
    assert got.dtype == dtype
    ref = attnviz.reference(x, w).to(dtype)
    assert_close(got, ref, **TOL[dtype])


@pytest.mark.parametrize("method", METHODS)
def test_method_on_non_contiguous_inputs(method):
    x_big, w_big = random_inputs(6, 8, 10, seed=3)
    x = x_big.transpose(0, 1)[::2, :5]  # (4, 5, 10) non-contiguous
    w = w_big.T[::2, :5]  # (4, 5) non-contiguous
    assert not x.is_contiguous() and not w.is_contiguous()
    assert_close(weighted_sum(x, w, method=method), attnviz.reference(x, w).float())


@pytest.mark.parametrize("method", METHODS)
@given(b=sizes, t=sizes, h=sizes, seed=st.integers(0, 2**31 - 1))
def test_softmax_and_mask_match_reference(method, b, t, h, seed):
    x, s = random_inputs(b, t, h, seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    mask = torch.rand(b, t, generator=g) < 0.7
    got = weighted_sum(x, s * 4 - 2, method=method, mask=mask, normalize="softmax")
    ref = attnviz.reference(x, s * 4 - 2, mask=mask, normalize="softmax").float()
    assert_close(got, ref)


def test_classic_example_known_result():
    got = weighted_sum(*attnviz.examples.classic())
    expected = torch.tensor(
        [[0.5325, 0.4610, 0.3517, 0.4328, 0.3947], [0.3086, 0.3232, 0.6439, 0.4008, 0.5284]]
    )
    assert got.shape == (2, 5)
    assert_close(got, expected, rtol=0, atol=5e-5)


@pytest.mark.parametrize("method", METHODS)
def test_weights_summing_to_one_give_a_convex_combination(method):
    x, s = random_inputs(3, 6, 4, seed=11)
    got = weighted_sum(x, s, method=method, normalize="softmax")
    assert torch.all(got <= x.amax(dim=1) + 1e-6)
    assert torch.all(got >= x.amin(dim=1) - 1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_one_hot_weight_selects_a_word(method):
    x, _ = random_inputs(3, 5, 4, seed=12)
    w = torch.zeros(3, 5)
    w[:, 2] = 1.0
    assert_close(weighted_sum(x, w, method=method), x[:, 2])


@pytest.mark.parametrize("method", METHODS)
def test_masked_words_change_nothing(method):
    x, w = random_inputs(3, 5, 4, seed=13)
    mask = torch.tensor([[1, 1, 0, 1, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    before = weighted_sum(x, w, method=method, mask=mask)
    x2, w2 = x.clone(), w.clone()
    x2[~mask] = 123.0
    w2[~mask] = -7.0
    assert_close(weighted_sum(x2, w2, method=method, mask=mask), before)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("normalize", [None, "softmax"])
def test_fully_masked_sentence_gives_zeros_not_nan(method, normalize):
    x, w = random_inputs(2, 3, 4, seed=14)
    mask = torch.tensor([[True, True, False], [False, False, False]])
    got = weighted_sum(x, w, method=method, mask=mask, normalize=normalize)
    assert not torch.isnan(got).any()
    assert_close(got[1], torch.zeros(4))


def test_inputs_are_not_modified():
    x, w = random_inputs(2, 3, 4, seed=15)
    x0, w0 = x.clone(), w.clone()
    for method in METHODS:
        weighted_sum(x, w, method=method, normalize="softmax")
    assert torch.equal(x, x0) and torch.equal(w, w0)


BAD_INPUTS = [
    # (net_output shape, att_scores shape, words the message must contain)
    ((2, 3, 5), (2, 3, 1), ["(2, 3, 5)", "(2, 3, 1)", "att_scores[..., 0]"]),
    ((2, 3), (2, 3), ["(2, 3)", "3 axes"]),
    ((2, 3, 5), (2,), ["(2, 3, 5)", "(2,)", "2 axes"]),
    ((2, 3, 5), (3, 2), ["(2, 3, 5)", "(3, 2)", ".T"]),
    ((2, 3, 5), (4, 3), ["(2, 3, 5)", "(4, 3)", "sentences"]),
    ((2, 3, 5), (2, 4), ["(2, 3, 5)", "(2, 4)", "words"]),
    ((2, 3, 5, 1), (2, 3), ["(2, 3, 5, 1)", "(2, 3)"]),
]


@pytest.mark.parametrize(("x_shape", "w_shape", "words"), BAD_INPUTS)
def test_bad_shape_names_both_shapes_and_the_fix(x_shape, w_shape, words):
    with pytest.raises(AttnvizError) as err:
        weighted_sum(torch.rand(x_shape), torch.rand(w_shape))
    for word in words:
        assert word in str(err.value)


def test_integer_inputs_are_refused_with_the_fix():
    with pytest.raises(AttnvizError, match=r"floating-point.*\(2, 3, 5\).*\(2, 3\).*float\(\)"):
        weighted_sum(torch.ones(2, 3, 5, dtype=torch.int64), torch.rand(2, 3))


def test_non_tensor_input_is_refused():
    with pytest.raises(AttnvizError, match=r"torch.Tensor, got list"):
        weighted_sum([[[1.0]]], torch.rand(1, 1))


def test_mixed_devices_are_refused():
    x = torch.rand(2, 3, 5)
    w = torch.rand(2, 3, device="meta")
    with pytest.raises(AttnvizError, match=r"\(2, 3, 5\) is on cpu.*\(2, 3\) is on meta"):
        weighted_sum(x, w)


def test_unknown_method_lists_the_valid_ones():
    with pytest.raises(AttnvizError) as err:
        weighted_sum(*attnviz.examples.classic(), method="fast")
    for method in METHODS:
        assert repr(method) in str(err.value)
    assert "(2, 3, 5)" in str(err.value) and "(2, 3)" in str(err.value)


def test_unknown_normalize_is_refused():
    with pytest.raises(AttnvizError, match="softmax"):
        weighted_sum(*attnviz.examples.classic(), normalize="sigmoid")


@pytest.mark.parametrize(
    ("mask", "pattern"),
    [
        (torch.ones(2, 3), "must be bool"),
        (torch.ones(2, 4, dtype=torch.bool), r"\(2, 4\).*\(2, 3\)"),
        ([[True] * 3] * 2, "torch.Tensor"),
    ],
)
def test_bad_mask_is_refused(mask, pattern):
    with pytest.raises(AttnvizError, match=pattern):
        weighted_sum(*attnviz.examples.classic(), mask=mask)


def test_attnviz_error_is_a_value_error():
    assert issubclass(AttnvizError, ValueError)


def test_checks_do_not_scan_values():
    # NaN passes the O(1) checks (value checks belong to the UI) and propagates honestly
    x, w = attnviz.examples.classic()
    x[0, 0, 0] = float("nan")
    got = weighted_sum(x, w)
    assert torch.isnan(got[0, 0]) and not torch.isnan(got[1]).any()


@pytest.mark.parametrize("normalize", [None, "softmax"])
def test_compare_methods_checks_every_method_against_the_reference(normalize):
    x, w = random_inputs(3, 4, 4, seed=16)
    mask = torch.tensor([[1, 1, 0, 1], [1, 0, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    checks = attnviz.compare_methods(x, w, mask=mask, normalize=normalize)
    assert [c.method for c in checks] == METHODS
    ref = attnviz.reference(x, w, mask=mask, normalize=normalize)
    for c in checks:
        assert c.ok and c.max_abs_diff < 1e-5 and c.summary
        assert_close(c.result.double(), ref, rtol=1e-5, atol=1e-6)


def test_compare_methods_flags_a_wrong_method(monkeypatch):
    monkeypatch.setitem(attnviz.METHODS, "wrong", lambda x, w: x.mean(dim=1))
    x, w = random_inputs(2, 3, 5, seed=17)
    wrong = next(c for c in attnviz.compare_methods(x, w) if c.method == "wrong")
    assert not wrong.ok and wrong.max_abs_diff > 1e-3


# --- the fast path: the common case skips the full checks, everything else takes them ---

FAST_SHAPES = [(2, 3, 5), (4, 6, 3), (3, 4, 4), (1, 5, 2)]  # B, T, H all different, and T == H


@pytest.fixture
def full_path_calls(monkeypatch):
    """Counts calls of the full path's check_inputs (still doing its job)."""
    from attnviz import aggregation

    calls = []
    original = aggregation.check_inputs

    def spy(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(aggregation, "check_inputs", spy)
    return calls


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("shape", FAST_SHAPES)
def test_fast_path_matches_float64_reference(method, shape):
    x, w = random_inputs(*shape, seed=31 + sum(shape))
    assert_close(weighted_sum(x, w, method=method), attnviz.reference(x, w).float())


@pytest.mark.parametrize("method", METHODS)
def test_common_case_skips_the_full_checks(method, full_path_calls):
    x, w = random_inputs(2, 3, 5, seed=32)
    weighted_sum(x, w, method=method)
    assert full_path_calls == []


@pytest.mark.parametrize(
    ("kwargs", "dtypes"),
    [
        ({"mask": torch.tensor([[1, 0, 1], [0, 1, 1]], dtype=torch.bool)}, None),
        ({"normalize": "softmax"}, None),
        ({}, (torch.float32, torch.float64)),
        ({}, (torch.float16, torch.float32)),
    ],
    ids=["mask", "softmax", "float32-float64", "float16-float32"],
)
def test_masks_normalize_and_mixed_dtypes_take_the_full_path(kwargs, dtypes, full_path_calls):
    x, w = random_inputs(2, 3, 5, seed=33)
    if dtypes is not None:
        x, w = x.to(dtypes[0]), w.to(dtypes[1])
    got = weighted_sum(x, w, **kwargs)
    assert len(full_path_calls) == 1
    assert got.dtype == torch.promote_types(x.dtype, w.dtype)
    want = attnviz.reference(x, w, **kwargs).to(got.dtype)
    assert_close(got, want, **TOL[got.dtype])


@pytest.mark.parametrize(
    ("x", "w"),
    [
        (torch.ones(2, 3, 5), torch.ones(3, 2)),  # transposed
        (torch.ones(2, 3, 5), torch.ones(2, 4)),  # T differs
        (torch.ones(2, 3, 5), torch.ones(2, 3, 1)),  # trailing axis already there
        (torch.ones(3, 5), torch.ones(3)),  # no sentence axis
        (torch.ones(2, 3, 5, dtype=torch.int64), torch.ones(2, 3, dtype=torch.int64)),
        ([[1.0]], torch.ones(1, 1)),  # not a tensor
    ],
    ids=["transposed", "t-differs", "trailing-axis", "no-batch", "integers", "list"],
)
def test_fast_path_refuses_exactly_what_check_inputs_refuses(x, w):
    with pytest.raises(AttnvizError) as expected:
        attnviz.check_inputs(x, w)
    with pytest.raises(AttnvizError) as got:
        weighted_sum(x, w)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("method", [["bmm"], None, 3])
def test_a_method_that_is_not_a_name_is_refused(method):
    x, w = random_inputs(2, 3, 5, seed=34)
    with pytest.raises(AttnvizError, match="Unknown method"):
        weighted_sum(x, w, method=method)
