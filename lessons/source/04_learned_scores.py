# %% [markdown]
# # Lesson 4 · Where the scores come from
#
# Lessons 1-3 took `att_scores` as given. In a real model they are **learned**: every word gets a
# score from a learned vector, a softmax over the words of its sentence turns the scores into
# weights, and the one-liner pools the words into one vector per sentence:
#
# ```
# ids (B, T) -> embedding (B, T, H) -> encoder -> net_output (B, T, H)
# scores (B, T) -> masked softmax -> att_scores (B, T)
# pooled (B, H) -> a linear layer -> negative / positive / neutral
# ```
#
# You write the three pieces (the score, the masked softmax, the pooling), train the model on
# 3,000 sentences in a second or two, look at which words it learned to weight, and then meet the
# T == H trap in a model that trains without an error.

# %%
import torch

from attnviz.exercises import check_masked_softmax, check_scores, check_weighted_sum
from attnviz.figures.training import curves_draft, weights_draft
from attnviz.pooling import corpus
from attnviz.pooling.train import TrainConfig, prepare, restore, train

torch.set_num_threads(1)  # the numbers below are for one CPU thread, as the app trains
sentences = corpus.load()
for s in sentences[:6]:
    print(f"{corpus.LABELS[s.label]:<9} {s.text}")

# %% [markdown]
# The sentences come from a small grammar with a fixed seed (`attnviz/pooling/corpus.py`): an
# opinion ("good", "dull"...), sometimes negated ("not", "never", "hardly"), somewhere between
# filler and made-up names; a neutral sentence is the same frame without an opinion. The word that
# decides the label moves from sentence to sentence.
#
# ## 1. Exercise 1: a score for every word
#
# Each word has a vector of H numbers, its **key** (here: its embedding). The model learns one
# vector `v` of H numbers; the score of a word is the dot product of its key with `v`. Write
# `scores(keys, v)`: keys (B, T, H), v (H,) → scores (B, T), with
# `scores[b, t] = Σ_h keys[b, t, h] · v[h]`. No Python loop; keep the dtype, device and gradient.


# %%
def scores(keys: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """keys (B, T, H), v (H,) -> scores (B, T)."""
    # BEGIN SOLUTION
    return keys @ v  # (B, T, H) @ (H,) -> (B, T)
    # END SOLUTION


# %%
check_scores(scores)

# %% [markdown]
# ## 2. Exercise 2: the masked softmax
#
# Sentences have different lengths, so a batch pads them to one length T, and `mask` (B, T) is
# True on the real words. Write `masked_softmax(scores, mask)` → att_scores (B, T): a softmax over
# the **real** words of each sentence, exactly 0 on padding, and all zeros for a sentence with no
# real word at all (never NaN). No Python loop.


# %%
def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """scores (B, T), mask (B, T) bool -> att_scores (B, T)."""
    # BEGIN SOLUTION
    filled = scores.masked_fill(~mask, float("-inf"))  # (B, T): exp(-inf) = 0
    return filled.softmax(dim=1).nan_to_num(0.0)  # an all-padding row: 0/0 -> 0
    # END SOLUTION


# %%
check_masked_softmax(masked_softmax)

# %% [markdown]
# ## 3. Exercise 3: the pooling
#
# The one-liner of lesson 2, now on learned weights: `attention_pool(net_output, att_scores)`:
# (B, T, H), (B, T) → (B, H), each sentence the weighted sum of its words.


# %%
def attention_pool(net_output: torch.Tensor, att_scores: torch.Tensor) -> torch.Tensor:
    """net_output (B, T, H), att_scores (B, T) -> pooled (B, H)."""
    # BEGIN SOLUTION
    return (net_output * att_scores[..., None]).sum(dim=1)  # (B,T,H) * (B,T,1) -> (B,H)
    # END SOLUTION


# %%
check_weighted_sum(attention_pool)

# %% [markdown]
# ## 4. Train it
#
# `attnviz.pooling` trains the model (Adam, minibatches of 64, 10 epochs) on 2,400 sentences and
# measures the accuracy on the other 600 after every epoch. Same seed, same numbers.

# %%
data = prepare()
run = train(TrainConfig(pooling="attention", seed=0), data)
print(f"held-out accuracy: {100 * run.accuracies[-1]:.1f} % after {run.steps} steps")
print(f"CPU time of the training loop: {run.cpu_s:.2f} s")
curves_draft(run.losses, run.accuracies, title="attention pooling").figure().show()

# %% [markdown]
# ## 5. Your functions inside the trained model
#
# The trained model computes its logits with the library's own score, softmax and pooling. Put
# yours in their place on the 600 held-out sentences: once your three exercises pass, the logits
# agree.


# %%
def logits_with_yours(model, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The model's logits (B, 3), with your scores, masked_softmax and attention_pool."""
    with torch.no_grad():
        net_output = model.encode(ids, mask)  # (B, T, H)
        keys = model.embedding(ids)  # (B, T, H)
        v = model.score.weight[0]  # (H,)
        att = masked_softmax(scores(keys, v), mask)  # (B, T)
        return model.head(attention_pool(net_output, att))  # (B, 3)


model = restore(run)
try:
    mine = logits_with_yours(model, data.test_ids, data.test_mask)
    theirs, _ = model(data.test_ids, data.test_mask)
    same = isinstance(mine, torch.Tensor) and mine.shape == theirs.shape
    same = same and bool(torch.allclose(mine, theirs, atol=1e-5))
    print("Your functions give the model's logits." if same else "Not the model's logits yet.")
except Exception as e:  # a stub or a wrong shape: the exercises above say what to fix
    print(f"Not yet: {type(e).__name__}. Finish exercises 1-3, then run this cell again.")

# %% [markdown]
# ## 6. Which words did it learn to weight?
#
# The figures show the weights over the words of a few sentences, before training (epoch 0) and
# after each epoch. Then, over all held-out opinions: how often does the largest weight sit on the
# word that decides the label (the sentiment word, or the negation before it)?

# %%
for s, words in enumerate(run.watched):
    rows = run.weights[:, s, : len(words)]  # (epochs + 1, n_words)
    weights_draft(list(words), rows, title=" ".join(words)).figure().show()
print(f"largest weight on the deciding word: {100 * run.key_hit:.0f} % of held-out opinions")

# %% [markdown]
# ## 7. The trap, in a model that trains
#
# **Predict first.** The model pads every sentence to T = 20 words and has H = 20 hidden
# features. Suppose the pooling were written `(net_output * att_scores[:, None]).sum(axis=1)`.
# Does training raise an error? If not, what happens to the held-out accuracy: the same, a little
# lower, or much lower? And mean pooling (every word weighted 1 / length)? Write your prediction,
# then run the next cell.

# %% [markdown] tags=["solution"]
# It raises nothing: `att_scores[:, None]` is (B, 1, T), and with T == H it broadcasts against
# (B, T, H) by pairing the word axis with the hidden axis. The model trains, and is much worse:
# each hidden feature h is scaled by the weight of word h, and the sum over words is a plain sum.
# Mean pooling is lower too, because it adds the noise of every filler word into the sentence.

# %%
results = {"attention": run}
for pooling in ("mean", "trap"):
    results[pooling] = train(TrainConfig(pooling=pooling, seed=0), data)
for pooling, r in results.items():
    print(f"{pooling:<10} held-out accuracy {100 * r.accuracies[-1]:5.1f} %")
lost = 100 * (results["attention"].accuracies[-1] - results["trap"].accuracies[-1])
print(f"the trap lost {lost:.1f} points, without a single error message")

# %% [markdown]
# **Find the trap by its accuracy.** Nothing failed, so nothing but a number tells you. What
# check in your own training code would have caught it before a single epoch?

# %% [markdown] tags=["solution"]
# Check shapes, not just that the code runs: assert that the weights applied to net_output are
# (B, T, 1) (or run the pooling once with T != H, where the trap raises), and compare the pooled
# vector of a one-hot weight with the word it selects. Training curves alone only show "lower".
