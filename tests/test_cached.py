"""attnviz.ui.cached: what its shared caches return is what the library computes for each example."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz import figures, trace
from attnviz.ui import cached

# B, T, H all different; T == H (the trap); one of each
SHAPES = [(2, 3, 5), (3, 4, 4), (1, 1, 1), (4, 8, 16)]


def _example(shape: tuple[int, int, int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    wa = rng.random(shape[:2]).astype(np.float32)
    return x, wa


def _rows(table: str) -> list[list[str]]:
    lines = table.split("\n")
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_the_steps_table_is_every_step_of_this_example(shape):
    """One table serves every example of a size: it must be what this example's own steps say."""
    for seed in range(3):
        x, wa = _example(shape, seed)
        steps = trace.broadcast_steps(torch.from_numpy(x), torch.from_numpy(wa))
        rows = _rows(cached.steps_table(x, wa))
        assert len(rows) == len(steps)
        for row, step in zip(rows, steps, strict=True):
            strides = "–" if step.strides is None else str(step.strides)
            new_bytes = "–" if step.new_bytes is None else str(step.new_bytes)
            assert row[1:] == [step.title, f"`{step.code}`", str(step.shape), strides, new_bytes]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_step_text_and_figure_follow_each_new_example(shape):
    """Several caches share one computation of the steps per example: a new example (an edit)
    never gets the previous one's numbers."""
    for seed in range(10):  # more examples than the shared memo keeps
        x, wa = _example(shape, seed)
        steps = trace.broadcast_steps(torch.from_numpy(x), torch.from_numpy(wa))
        texts = cached.steps(x, wa)
        assert [t.explanation for t in texts] == [s.explanation for s in steps]
        story, zrange = cached._story(x, wa)
        for got, want in zip(story, steps, strict=True):
            if want.value is not None:
                torch.testing.assert_close(got.value, want.value)
        assert zrange == figures.shared_zrange(steps)
