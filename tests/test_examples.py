"""The classic example and the presets."""

import pytest
import torch
from torch.testing import assert_close

from attnviz import AttnvizError, examples, weighted_sum


def test_classic_has_the_published_values():
    x, w = examples.classic()
    assert x.shape == (2, 3, 5) and w.shape == (2, 3)
    assert x.dtype == w.dtype == torch.float32
    assert x[0, 0].tolist() == pytest.approx([0.7718, 0.3856, 0.2545, 0.7502, 0.5844])
    assert x[1, 2].tolist() == pytest.approx([0.4244, 0.7947, 0.5711, 0.0720, 0.1106])
    assert_close(w, torch.tensor([[0.2425, 0.5279, 0.2295], [0.2461, 0.4789, 0.2751]]))


def test_classic_returns_fresh_tensors():
    x, _ = examples.classic()
    x[0, 0, 0] = 99.0
    assert examples.classic()[0][0, 0, 0] != 99.0


@pytest.mark.parametrize("name", list(examples.PRESETS))
@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 1, 1), (4, 8, 16), (3, 4, 4)])
def test_every_preset_builds_at_every_shape(name, shape):
    ex = examples.preset(name, *shape, seed=1)
    assert ex.shape == shape
    assert ex.att_scores.shape == shape[:2]
    assert ex.mask is None or ex.mask.shape == shape[:2]
    out = weighted_sum(ex.net_output, ex.att_scores, mask=ex.mask, normalize=ex.normalize)
    assert out.shape == (shape[0], shape[2]) and torch.isfinite(out).all()


def test_uniform_is_mean_pooling():
    x, w = examples.uniform(3, 4, 6)
    assert_close(weighted_sum(x, w), x.mean(dim=1))


def test_one_hot_selects_the_word():
    x, w = examples.one_hot(2, 4, 3, word=3)
    assert_close(weighted_sum(x, w), x[:, 3])


def test_raw_scores_need_softmax():
    _, s = examples.raw_scores()
    assert not torch.allclose(s.sum(dim=1), torch.ones(2))


def test_padded_mask_leaves_padding_out():
    x, w, mask = examples.padded(3, 4, 2)
    assert mask.tolist() == [[True] * 4, [True] * 3 + [False], [True] * 2 + [False] * 2]
    assert_close(w.sum(dim=1), torch.ones(3))
    assert_close(weighted_sum(x, w, mask=mask), weighted_sum(x, w))


def test_random_example_is_seeded():
    a, b = examples.random_example(2, 3, 4, seed=5), examples.random_example(2, 3, 4, seed=5)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], examples.random_example(2, 3, 4, seed=6)[0])


@pytest.mark.parametrize("bad", [(0, 3, 5), (2, -1, 5), (2, 3, 2.5)])
def test_bad_sizes_are_refused(bad):
    with pytest.raises(AttnvizError, match="at least 1"):
        examples.random_example(*bad)


def test_unknown_preset_lists_the_choices():
    with pytest.raises(AttnvizError, match="classic"):
        examples.preset("nope")


def test_a_preset_opens_with_t_equal_to_h():
    """The trap's preset: T == H, where att_scores[:, None] raises nothing."""
    b, t, h = examples.OPENS_AT["square"]
    assert t == h
    ex = examples.preset("square", b, t, h)
    wrong = (ex.net_output * ex.att_scores[:, None]).sum(dim=1)  # (B, T, T) -> (B, T): no error
    right = weighted_sum(ex.net_output, ex.att_scores)
    assert wrong.shape == right.shape and not torch.allclose(wrong, right, atol=1e-3)


def test_every_opening_shape_is_a_preset_within_the_limits():
    for name, shape in examples.OPENS_AT.items():
        assert name in examples.PRESETS
        assert all(
            1 <= n <= m
            for n, m in zip(shape, (examples.MAX_B, examples.MAX_T, examples.MAX_H), strict=True)
        )
