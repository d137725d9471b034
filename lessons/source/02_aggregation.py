# %% [markdown]
# # Lesson 2 · Attention-weighted aggregation
#
# A sentence of T words comes out of a network as T vectors of H numbers: `net_output` (B, T, H)
# for a batch of B sentences. Attention gives each word a weight, `att_scores` (B, T). The sentence
# is then summarised by **one** vector of H numbers: the sum of its word vectors, each scaled by
# its weight:
#
# $$\text{weighted}[b, h] = \sum_t \text{att\_scores}[b, t] \cdot \text{net\_output}[b, t, h]$$
#
# In this lesson you write that with broadcasting, see what each step of it does, write it two
# more ways, then add the two things real models need (a softmax and a padding mask) and look at
# the gradient that flows back through the broadcast. Every exercise is checked on fresh random
# inputs, including the shapes where a wrong axis goes unnoticed.

# %%
import torch

import attnviz
from attnviz import figures, trace
from attnviz.exercises import (
    check_masked_weighted_sum,
    check_softmax_weighted_sum,
    check_weighted_sum,
    check_weights_grad,
)

net_output, att_scores = attnviz.examples.classic()  # (2, 3, 5), (2, 3)

# %% [markdown]
# ## 1. One number of the result, by hand
#
# `weighted[b, h]` adds up, over the words t of sentence b, weight × value:
# `att_scores[b, t] * net_output[b, t, h]`. Here is one cell with the actual numbers.

# %%
cell = trace.provenance(net_output, att_scores, b=0, h=0)
print(cell.formula)
print(cell.equation)
figures.provenance_figure(cell)

# %% [markdown]
# ## 2. Exercise 1: the weighted sum, with broadcasting
#
# Lesson 1 gave you every tool: a new axis, broadcasting, and a sum over one axis. Write
# `weighted_sum(net_output, att_scores)`: (B, T, H), (B, T) → (B, H), with
# `weighted[b, h] = Σ_t att_scores[b, t] · net_output[b, t, h]`. Use broadcasting and a sum (no
# Python loop: the check detects one), keep the inputs' dtype and device, keep the gradient (no
# `.detach()`: training must flow back through the result), and don't modify the inputs. The
# weights may be any numbers (they need not sum to 1).
#
# The check runs your function on the classic example and on fresh random inputs: B, T, H all
# different, T == H, B = 1, T = 1, float64, and inputs that require grad. Try a wrong version on
# purpose first, and read what the check says.


# %%
def weighted_sum(net_output: torch.Tensor, att_scores: torch.Tensor) -> torch.Tensor:
    """net_output (B, T, H), att_scores (B, T) -> weighted (B, H)."""
    # BEGIN SOLUTION
    return (net_output * att_scores[..., None]).sum(dim=1)  # (B,T,H) * (B,T,1) -> (B,H)
    # END SOLUTION


# %%
check_weighted_sum(weighted_sum)

# %% [markdown]
# ## 3. The weighted sum, step by step
#
# Once your `weighted_sum` passes, the cells below take the usual way of writing it apart, one
# step at a time, each computed by torch on the classic example; the colours share one scale, so
# they compare across steps. Look for the step where the weights get their trailing axis, the
# stretch along hidden (cells marked ↔ are not stored: stride 0), and the sum that removes the
# word axis. These cells (and the gallery of §4) show the answer, so until Exercise 1 passes they
# only say that they are waiting.

# %%
exercise_1_passed = check_weighted_sum(weighted_sum).passed  # §3 and §4 wait for it
steps = trace.broadcast_steps(net_output, att_scores)
if exercise_1_passed:
    print(f"The usual way, on the classic example, (B, T, H) = {tuple(net_output.shape)}:")
    for step in steps:
        print(f"{step.title:<36} {step.code:<48} shape {step.shape}")
else:
    print("The step-by-step walk-through appears here once Exercise 1 passes: run its check")
    print("above until it does, then run this cell and the ones below again.")

# %%
if exercise_1_passed:
    story = figures.story_figures(steps)
    for step, fig in zip(steps, story, strict=True):
        print(step.explanation)
        fig.show()
else:
    print(f"The {len(steps)} step figures appear here once Exercise 1 passes.")

# %% [markdown]
# ## 4. The wrong forms, run live
#
# Each form below is a real mistake, shown beside the right one. Some fail loudly with torch's
# error; the dangerous ones run and give the wrong numbers. When the example has T != H, each
# wrong form that would be silent with T == H is run a second time on a **T == H variant**: the
# same att_scores with net_output cut to its first T hidden features, so that H = T. Each line
# says which inputs it ran on. Like §3, the gallery waits until Exercise 1 passes.

# %%
gallery = trace.mistakes(net_output, att_scores)
if exercise_1_passed:
    for m in gallery:
        shape = m.input_shape  # (B, T, H)
        ran_on = f"on the T == H variant (B, T, H) = {shape}" if m.variant else f"on {shape}"
        print(f"{m.outcome:<15} {m.code:<46} {ran_on}")
    figures.mistakes_figure(gallery).show()
else:
    silent = sum(m.silent for m in gallery)
    print(f"The gallery of {len(gallery)} forms ({silent} of them silently wrong) appears here")
    print("once Exercise 1 passes.")

# %% [markdown]
# ## 5. The same sum, two more ways
#
# **einsum** names every axis with a letter. Letters that appear in the inputs but not after `->`
# are summed over; letters that appear everywhere are kept, matched by name rather than by
# position, so no axis needs lining up.
#
# **Matrix product.** For one sentence, the weights are a row of T numbers and the words a (T, H)
# matrix: a (1, T) @ (T, H) product gives the (1, H) summary. `torch.bmm` (or `@`) does that for
# every sentence of the batch at once, on (B, 1, T) and (B, T, H).
#
# ### Exercise 2: with `torch.einsum`


# %%
def weighted_sum_einsum(net_output: torch.Tensor, att_scores: torch.Tensor) -> torch.Tensor:
    """net_output (B, T, H), att_scores (B, T) -> weighted (B, H), with one torch.einsum."""
    # BEGIN SOLUTION
    return torch.einsum("bth,bt->bh", net_output, att_scores)  # t is summed
    # END SOLUTION


# %%
check_weighted_sum(weighted_sum_einsum)

# %% [markdown]
# ### Exercise 3: with a batched matrix product (`torch.bmm` or `@`)


# %%
def weighted_sum_matmul(net_output: torch.Tensor, att_scores: torch.Tensor) -> torch.Tensor:
    """net_output (B, T, H), att_scores (B, T) -> weighted (B, H), as (B, 1, T) @ (B, T, H)."""
    # BEGIN SOLUTION
    return torch.bmm(att_scores[:, None, :], net_output)[:, 0, :]  # (B,1,T)@(B,T,H) -> (B,H)
    # END SOLUTION


# %%
check_weighted_sum(weighted_sum_matmul)

# %% [markdown]
# All these forms compute the same numbers (the library has them all in `attnviz.METHODS`); the
# last lesson measures which is fastest, and why.

# %%
reference = attnviz.reference(net_output, att_scores)  # float64, on the classic example
for name, method in attnviz.METHODS.items():
    same = attnviz.tolerance.close(method(net_output, att_scores), reference)
    print(f"{name:<10} on the classic example (2, 3, 5) agrees with the float64 reference: {same}")

# %% [markdown]
# ## 6. From raw scores to weights: softmax
#
# A network's attention layer usually produces **raw scores**, any real numbers. A softmax over the
# words of each sentence turns them into weights that are positive and sum to 1:
# `softmax(s)_t = exp(s_t) / Σ_u exp(s_u)`. Over the words means along axis 1 of the (B, T) scores.

# %%
_, scores = attnviz.examples.raw_scores()
print("raw scores\n", scores)
print("softmax over words\n", scores.softmax(dim=1))
print("each row sums to", scores.softmax(dim=1).sum(dim=1))

# %% [markdown]
# Before you write it, **predict**: what would `scores[..., None].softmax(dim=-1)` give, and why?

# %% [markdown] tags=["solution"]
# All ones. After `[..., None]` the last axis has size 1, and a softmax over a single number is
# always exp(s) / exp(s) = 1: every word gets weight 1 and the result is the plain, unweighted sum.
# The softmax must run over the words, before the trailing axis is added.

# %% [markdown]
# ### Exercise 4: softmax, then the weighted sum
#
# Write `softmax_weighted_sum(net_output, scores)`: softmax the raw scores (B, T) over the words,
# then take the weighted sum (no Python loop; the result keeps its gradient). The check includes a case with large scores (tens to a hundred): a
# softmax written as `exp(s) / exp(s).sum(...)` overflows there, so subtract each sentence's
# maximum first, or use `torch.softmax`.


# %%
def softmax_weighted_sum(net_output: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """net_output (B, T, H), raw scores (B, T) -> (B, H), weights softmaxed over words."""
    # BEGIN SOLUTION
    weights = scores.softmax(dim=1)  # (B,T), each row sums to 1
    return (net_output * weights[..., None]).sum(dim=1)  # (B,H)
    # END SOLUTION


# %%
check_softmax_weighted_sum(softmax_weighted_sum)

# %% [markdown]
# ## 7. Padding and masks
#
# Sentences in a batch have different lengths, so short ones are padded to T words. A boolean
# `mask` (B, T) says which words are real (True) and which are padding (False). Padding must not
# count: its weight has to be zero, whatever number sits there.

# %%
example = attnviz.examples.preset("padded", 3, 4, 5)
print("mask (True = a real word)\n", example.mask)
figures.tensor_figure(example.mask.float(), title="mask (B, T): 1 = a real word, 0 = padding")

# %% [markdown]
# ### Exercise 5: a masked weighted sum
#
# Write `masked_weighted_sum(net_output, att_scores, mask)`: like Exercise 1, but words where `mask`
# is False contribute nothing. Use the weights as they are (don't renormalise them); as in
# Exercise 1, no Python loop, and the result keeps its gradient. A sentence
# that is all padding gives zeros. The check puts nonzero numbers and weights on the padding, so
# ignoring the mask shows.


# %%
def masked_weighted_sum(
    net_output: torch.Tensor, att_scores: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """net_output (B, T, H), att_scores (B, T), mask (B, T) bool -> (B, H), padding left out."""
    # BEGIN SOLUTION
    weights = att_scores * mask  # (B,T), zero on padding (a new tensor: the input is untouched)
    return (net_output * weights[..., None]).sum(dim=1)  # (B,H)
    # END SOLUTION


# %%
check_masked_weighted_sum(masked_weighted_sum)

# %% [markdown]
# ## 8. The gradient through the broadcast
#
# Training needs the gradient of a loss with respect to the weights. Broadcasting and summing swap
# roles in the backward pass: the forward pass **stretched** each weight along the hidden axis, so
# its gradient **adds up** the H contributions; the forward **sum** over words becomes a
# **stretch** of the upstream gradient over words.
#
# ### Exercise 6: the gradient of the weights, by hand
#
# Let `weighted` be Exercise 1's weighted sum, `weighted[b, h] = Σ_t att_scores[b, t] ·
# net_output[b, t, h]`, and let `grad_weighted` (B, H) be the gradient of the loss with respect to
# `weighted`. Write `weights_grad(net_output,
# grad_weighted)` → the gradient with respect to `att_scores`, shape (B, T): what autograd would
# put in `att_scores.grad`. Work it out with broadcasting (no Python loop); you can compare with
# autograd in the cell after the check.


# %%
def weights_grad(net_output: torch.Tensor, grad_weighted: torch.Tensor) -> torch.Tensor:
    """net_output (B, T, H), grad_weighted (B, H) -> d loss / d att_scores (B, T)."""
    # BEGIN SOLUTION
    return (net_output * grad_weighted[:, None, :]).sum(dim=2)  # (B,T,H)*(B,1,H) -> sum H
    # END SOLUTION


# %%
check_weights_grad(weights_grad)

# %%
# Compare with autograd on the classic example (2, 3, 5), once your function is written.
w = att_scores.clone().requires_grad_(True)
upstream = torch.randn(2, 5)  # (B, H)
attnviz.weighted_sum(net_output, w).backward(upstream)  # the library's weighted sum
try:
    mine = weights_grad(net_output, upstream)
except NotImplementedError:
    print("Write weights_grad above first.")
except Exception as exc:  # whatever your code raises, this cell explains it and carries on
    print(f"On the classic example your weights_grad raised {type(exc).__name__}: {exc}")
    print("The check above explains what went wrong; fix it there first.")
else:
    if not isinstance(mine, torch.Tensor) or tuple(mine.shape) != tuple(w.grad.shape):
        got = tuple(mine.shape) if isinstance(mine, torch.Tensor) else type(mine).__name__
        print(f"On the classic example yours gave {got}; autograd's att_scores.grad is (2, 3).")
    else:
        agree = attnviz.tolerance.close(mine, w.grad)
        print("On the classic example (2, 3, 5), autograd and yours agree:", agree)

# %% [markdown]
# Now see it: `attnviz.trace.gradients` runs autograd on the classic example and checks it against
# the formula (with an upstream gradient of ones, i.e. loss = weighted.sum()). The formula is
# Exercise 6's answer, so this cell shows it only once your `weights_grad` passes the check;
# until then it shows the gradient of net_output.

# %%
grads = trace.gradients(net_output, att_scores)  # on the classic example (2, 3, 5)
exercise_6_passed = check_weights_grad(weights_grad).passed
if exercise_6_passed:
    print(grads.explanation)
    print("d loss / d att_scores =", grads.att_scores_code, "| autograd:", grads.att_scores_ok)
    figure = figures.gradient_figure(grads, part="att_scores")
else:
    print("The att_scores formula appears here once Exercise 6 passes. Meanwhile, net_output:")
    print("d loss / d net_output =", grads.net_output_code, "| autograd:", grads.net_output_ok)
    figure = figures.gradient_figure(grads, part="net_output")
figure.show()

# %% [markdown]
# ## Summary
#
# - The weighted sum in one line: a trailing size-1 axis on the weights lines words up with words,
#   the product stretches each weight along hidden (stride 0, no copy), and a sum over the word
#   axis removes it.
# - einsum (one letter per axis, the summed letter left out after `->`) and a batched matrix
#   product compute the same thing.
# - Softmax over the **words** turns raw scores into weights; subtract the maximum for stability.
# - A mask zeroes the weights of padding (don't use -inf unless a softmax follows).
# - Backward, a broadcast becomes a sum and a sum becomes a broadcast.
#
# Next: **Lesson 3, CPU vs GPU**: how fast each form is, and how to measure it honestly.
