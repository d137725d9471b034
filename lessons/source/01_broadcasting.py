# %% [markdown]
# # Lesson 1 · Broadcasting from scratch
#
# This lesson builds, one idea at a time, everything needed to read this line:
#
# ```python
# weighted = (net_output * att_scores[..., None]).sum(axis=1)   # (B,T,H) * (B,T,1) -> (B,H)
# ```
#
# You will learn what a shape is, the **right-alignment rule** that decides whether two shapes can
# be combined, what `None` / `unsqueeze` do to a shape, and why `expand` costs nothing while
# `repeat` copies. Three exercises check your understanding; each check tells you exactly what
# went wrong, and never gives the answer away.
#
# The letters are fixed for the whole course: **B** sentences (the batch), **T** words per sentence,
# **H** hidden features per word.

# %%
import torch

import attnviz
from attnviz import figures, trace
from attnviz.exercises import check_add_axis, check_broadcast_shape, check_expand_weights

# %% [markdown]
# ## 1. Shapes
#
# A tensor is a box of numbers with a **shape**: how many entries along each axis. Our classic
# example has two sentences of three words, each word described by five hidden numbers, and one
# attention weight per word.

# %%
net_output, att_scores = attnviz.examples.classic()
print("net_output", tuple(net_output.shape), " # (B, T, H)")
print("att_scores", tuple(att_scores.shape), "    # (B, T)")

# %%
figures.tensor_figure(net_output, title="net_output (B, T, H)")

# %% [markdown]
# One panel per sentence: rows are words, columns are hidden features, and every cell shows its
# number. The weights are a (B, T) table, one row per sentence and one column per word:

# %%
figures.tensor_figure(att_scores, title="att_scores (B, T)")

# %% [markdown]
# ## 2. The right-alignment rule
#
# An elementwise operation such as `*` on two tensors of **different** shapes follows one rule:
#
# 1. write the two shapes one under the other, **aligned on the right**;
# 2. compare them axis by axis: two sizes fit when they are **equal** or **one of them is 1**
#    (a missing axis counts as 1);
# 3. the result takes the larger size on every axis; an axis of size 1 is *stretched*.
#
# Before you run the next cell, **predict**: can `net_output (2, 3, 5)` be multiplied by
# `att_scores (2, 3)`?

# %% [markdown] tags=["solution"]
# No. Aligned on the right, the last axis of net_output (5, hidden) meets the last axis of
# att_scores (3, words): 5 and 3 are different and neither is 1, so they clash.

# %%
alignment = trace.align_shapes(
    net_output.shape, att_scores.shape, name_a="net_output", name_b="att_scores"
)
print(alignment.explanation)
figures.alignment_figure(alignment, axis_names=("sentence", "word", "hidden"))

# %% [markdown]
# PyTorch says the same thing, in its own words:

# %%
try:
    net_output * att_scores
except RuntimeError as err:
    print(f"net_output {tuple(net_output.shape)} * att_scores {tuple(att_scores.shape)}:")
    print("RuntimeError:", err)

# %% [markdown]
# ### Exercise 1: the rule, in code
#
# Write `broadcast_shape(shape_a, shape_b)`: it returns the broadcast shape as a **tuple** of ints,
# or raises `ValueError` when the shapes cannot be broadcast. Shapes are tuples of ints, possibly of
# different lengths, possibly empty (`()` is the shape of a single number).
#
# Don't call `torch.broadcast_shapes` or numpy: the point is to write the rule yourself. Hint: pad
# the shorter shape with 1s on the left first.


# %%
def broadcast_shape(shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of a * b, following the right-alignment rule; ValueError if none."""
    # BEGIN SOLUTION
    n = max(len(shape_a), len(shape_b))
    a = (1,) * (n - len(shape_a)) + tuple(shape_a)  # pad on the left: align on the right
    b = (1,) * (n - len(shape_b)) + tuple(shape_b)
    result = []
    for size_a, size_b in zip(a, b, strict=True):
        if size_a != size_b and 1 not in (size_a, size_b):
            raise ValueError(f"sizes {size_a} and {size_b} clash in {shape_a} and {shape_b}")
        result.append(max(size_a, size_b))
    return tuple(result)
    # END SOLUTION


# %%
check_broadcast_shape(broadcast_shape)

# %% [markdown]
# ## 3. A new axis of size 1: `None` and `unsqueeze`
#
# To line the words of `att_scores` up with the words of `net_output`, `att_scores` needs a
# **trailing axis of size 1**: (B, T) → (B, T, 1). Now the shapes fit: T meets T, and the 1 stretches
# along H.
#
# Indexing with `None` inserts a size-1 axis exactly where you write it; `unsqueeze(dim)` does the
# same by axis number. Neither copies anything: the result is a **view** on the same memory.

# %%
print(f"On the classic att_scores {tuple(att_scores.shape)}:")
for code, value in [
    ("att_scores[None]", att_scores[None]),
    ("att_scores[:, None]", att_scores[:, None]),
    ("att_scores[..., None]", att_scores[..., None]),
    ("att_scores.unsqueeze(-1)", att_scores.unsqueeze(-1)),
]:
    same = value.untyped_storage().data_ptr() == att_scores.untyped_storage().data_ptr()
    print(f"{code:<26} shape {tuple(value.shape)}  strides {value.stride()}  view: {same}")

# %%
fixed = trace.align_shapes(
    net_output.shape,
    att_scores[..., None].shape,
    name_a="net_output",
    name_b="att_scores[..., None]",
)
print(fixed.explanation)
figures.alignment_figure(fixed, axis_names=("sentence", "word", "hidden"))

# %% [markdown]
# ### Exercise 2: add the axis
#
# Write `add_axis(att_scores)`: (B, T) → (B, T, 1), the same numbers with a new last axis of size 1.
# Do it without copying (the check tells you if your result is a copy), and without changing
# `att_scores` itself.


# %%
def add_axis(att_scores: torch.Tensor) -> torch.Tensor:
    """att_scores (B, T) -> (B, T, 1), a view."""
    # BEGIN SOLUTION
    return att_scores[..., None]  # (B,T) -> (B,T,1)
    # END SOLUTION


# %%
check_add_axis(add_axis)

# %% [markdown]
# ## 4. Stretching: `expand` (a view) versus `repeat` (a copy)
#
# Broadcasting behaves *as if* the size-1 axis were copied H times. It never is: the stretched
# axis gets **stride 0**, so stepping along it stays on the same number in memory. You can ask
# for that stretched tensor yourself with `expand`; `repeat` really copies.

# %%
vc = trace.view_vs_copy(att_scores, h=net_output.shape[2])
print(vc.explanation)
figures.view_copy_figure(vc)

# %% [markdown]
# ### Exercise 3: stretch without copying
#
# Write `expand_weights(att_scores, h)`: (B, T) → (B, T, H), each word's weight repeated along a new
# hidden axis of size `h`, **as a view** (stride 0 along the new axis, sharing `att_scores`'
# memory). The check measures the memory, so a copy with the right numbers will not pass.


# %%
def expand_weights(att_scores: torch.Tensor, h: int) -> torch.Tensor:
    """att_scores (B, T), h -> (B, T, H), a stride-0 view."""
    # BEGIN SOLUTION
    return att_scores[..., None].expand(-1, -1, h)  # (B,T,1) -> (B,T,H), no copy
    # END SOLUTION


# %%
check_expand_weights(expand_weights)

# %% [markdown]
# Once Exercise 3 passes, here is your stretched tensor on the classic att_scores, drawn cell by
# cell: cells marked ↔ are the same memory as the first cell of their row.

# %%
h = net_output.shape[2]
try:
    expanded = expand_weights(att_scores, h) if check_expand_weights(expand_weights) else None
except Exception as exc:  # whatever your code raises, this cell says so and carries on
    expanded = None
    print(f"expand_weights(att_scores, {h}) raised {type(exc).__name__}: {exc}")
if expanded is None:
    print("Your stretched tensor is drawn here once Exercise 3 passes.")
else:
    print(f"expand_weights(att_scores, {h}) on the classic att_scores: strides {expanded.stride()}")
    figure = figures.tensor_figure(
        expanded, title=f"expand_weights(att_scores, {h})", stretched=(2,)
    )
    figure.show()

# %% [markdown]
# ## 5. A warning: the T == H trap
#
# The rule only looks at sizes, not at what the axes *mean*. When a sentence has as many words as
# hidden features, forgetting the new axis no longer fails: (1, 4, 4) and (1, 4) fit, with words
# lined up against hidden features. The answer has the right shape and the wrong numbers.

# %%
trap = trace.align_shapes((1, 4, 4), (1, 4), name_a="net_output", name_b="att_scores")
print(trap.explanation)
figures.alignment_figure(trap, axis_names=("sentence", "word", "hidden"))

# %% [markdown]
# That is why every check in these lessons also runs your code on inputs with T == H, and why the
# next lesson starts with the shapes.
#
# ## Summary
#
# - Shapes align **on the right**; sizes fit when equal or when one is 1; missing axes count as 1.
# - `x[..., None]` / `x.unsqueeze(-1)` add a size-1 axis: a free view.
# - Broadcasting stretches size-1 axes with stride 0, like `expand`; `repeat` copies.
# - A wrong axis fails loudly only when the sizes differ: test with B, T and H all different.
#
# Next: **Lesson 2, attention-weighted aggregation**.
