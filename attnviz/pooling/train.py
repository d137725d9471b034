"""Training a ``PoolingClassifier`` on the sentiment corpus, deterministically, on one CPU thread.

    data = prepare()                                  # the corpus, split, as padded ids
    run = train(TrainConfig(pooling="attention"), data)
    run.accuracies[-1], run.key_hit                   # held-out accuracy, share of held-out
                                                      # sentences whose top weight is a key word

Same config, same data, same numbers: the seed fixes the initial weights and the order of the
minibatches, and torch runs on one thread (``torch.set_num_threads(1)`` is the caller's choice;
``train`` itself never changes it). A ``TrainRun`` holds only numpy arrays and plain values (a
page can cache it): the loss and held-out accuracy per epoch, the weights over the words of a few
watched sentences after every epoch, and the trained parameters (a few KB) for ``predict``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import Tensor

from attnviz.errors import AttnvizError
from attnviz.pooling import corpus
from attnviz.pooling.model import POOLINGS, PoolingClassifier, check_pooling
from attnviz.pooling.vocab import Vocabulary, tokenize

SPLIT_SEED = 7
HELD_OUT = 0.2
MAX_EPOCHS = 40
#: a few sentences the page follows through training: a negation, an opinion, a double
#: negative, a neutral sentence
WATCHED = (
    "to be honest i found the acting not good at all",
    "it was a boring movie in my opinion",
    "on sunday it was never a dull film",
    "my friends said i found the music for a sunday afternoon",
)


@dataclass(frozen=True)
class TrainConfig:
    """What a run depends on: the same config gives the same run."""

    pooling: str = "attention"
    seed: int = 0
    epochs: int = 10
    lr: float = 0.02
    batch_size: int = 64
    hidden: int = corpus.MAX_WORDS  # H == T, so the trap variant runs
    width: int = 3

    def check(self) -> None:
        """Raise AttnvizError with a plain message when a field is out of range."""
        check_pooling(self.pooling)
        bounds = {
            "seed": (0, 2**31 - 1),
            "epochs": (1, MAX_EPOCHS),
            "batch_size": (8, 512),
            "hidden": (2, 64),
            "width": (1, 5),
        }
        for name, (lo, hi) in bounds.items():
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
                raise AttnvizError(f"{name} must be a whole number from {lo} to {hi}, got {v!r}.")
        if not isinstance(self.lr, float) or not 1e-4 <= self.lr <= 0.5:
            raise AttnvizError(f"lr must be a number from 0.0001 to 0.5, got {self.lr!r}.")
        if self.pooling == "trap" and self.hidden != corpus.MAX_WORDS:
            raise AttnvizError(
                f"The trap only runs when T == H: hidden must be {corpus.MAX_WORDS}, the padded "
                f"sentence length."
            )

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Data:
    """The corpus as tensors: ``train_*`` and ``test_*`` ids (N, T) and masks (N, T), labels (N,)."""

    vocab: Vocabulary
    train_ids: Tensor
    train_mask: Tensor
    train_labels: Tensor
    test_ids: Tensor
    test_mask: Tensor
    test_labels: Tensor
    test_words: list[list[str]] = field(repr=False)


def split(sentences: Sequence[corpus.Sentence]) -> tuple[list, list]:
    """A fixed shuffle (``SPLIT_SEED``) -> (training sentences, held-out sentences)."""
    order = list(range(len(sentences)))
    random.Random(SPLIT_SEED).shuffle(order)
    n_test = int(len(sentences) * HELD_OUT)
    return [sentences[i] for i in order[n_test:]], [sentences[i] for i in order[:n_test]]


def prepare(sentences: Sequence[corpus.Sentence] | None = None) -> Data:
    """The corpus (default: the shipped one), split and encoded, padded to ``corpus.MAX_WORDS``."""
    sentences = corpus.load() if sentences is None else list(sentences)
    train_s, test_s = split(sentences)
    vocab = Vocabulary.of(sentences)
    tr_words = [s.text.split() for s in train_s]
    te_words = [s.text.split() for s in test_s]
    tr_ids, tr_mask = vocab.encode_batch(tr_words)
    te_ids, te_mask = vocab.encode_batch(te_words)
    return Data(
        vocab,
        tr_ids,
        tr_mask,
        torch.tensor([s.label for s in train_s], dtype=torch.int64),
        te_ids,
        te_mask,
        torch.tensor([s.label for s in test_s], dtype=torch.int64),
        te_words,
    )


def _moved(data: Data, device: torch.device) -> Data:
    if device.type == "cpu":
        return data
    tensors = {k: getattr(data, k).to(device) for k in ("train_ids", "train_mask", "train_labels")}
    tensors |= {k: getattr(data, k).to(device) for k in ("test_ids", "test_mask", "test_labels")}
    return Data(data.vocab, **tensors, test_words=data.test_words)


@dataclass(frozen=True)
class TrainRun:
    """A finished run, as plain values (E epochs, S watched sentences, T padded words)."""

    config: TrainConfig
    words: tuple[str, ...]  # the vocabulary
    losses: np.ndarray  # (E,) mean training loss of each epoch
    accuracies: np.ndarray  # (E + 1,) held-out accuracy before training and after each epoch
    watched: tuple[tuple[str, ...], ...]  # the S watched sentences' words
    weights: np.ndarray  # (E + 1, S, T) their att_scores before training and after each epoch
    key_hit: float  # share of held-out sentences whose largest weight is on a key word
    steps: int
    cpu_s: float  # CPU seconds of the training loop in this process
    state: dict[str, np.ndarray]  # the trained parameters


def _model(config: TrainConfig, vocab_size: int) -> PoolingClassifier:
    return PoolingClassifier(vocab_size, config.pooling, hidden=config.hidden, width=config.width)


@torch.no_grad()
def evaluate(model: PoolingClassifier, ids: Tensor, mask: Tensor, labels: Tensor) -> float:
    """ids (N, T), mask (N, T), labels (N,) -> accuracy in [0, 1]."""
    model.eval()
    logits, _ = model(ids, mask)  # (N,)
    return float((logits.argmax(dim=1) == labels).float().mean())


@torch.no_grad()
def key_hit_rate(model: PoolingClassifier, data: Data) -> float:
    """Share of held-out sentences whose largest att_score sits on the sentiment word or its
    negation (``corpus.key_positions``)."""
    _, att = model(data.test_ids, data.test_mask)  # (N, T)
    top = att.argmax(dim=1).tolist()  # (N,)
    polar = data.test_labels != corpus.NEUTRAL_LABEL  # (N,)
    hits = [
        t in corpus.key_positions(w)
        for t, w, p in zip(top, data.test_words, polar.tolist(), strict=True)
        if p
    ]
    return sum(hits) / len(hits)


def train(
    config: TrainConfig,
    data: Data,
    *,
    watch: Sequence[str] = WATCHED,
    on_epoch: Callable[[int, float, float], None] | None = None,
    device: str = "cpu",
) -> TrainRun:
    """Train with Adam on minibatches; ``on_epoch(epoch, loss, accuracy)`` after each epoch.

    ``device`` (e.g. "cuda") moves the model and the data there; the run's arrays come back to
    the CPU. Deterministic on the CPU; on a GPU up to its kernels' order of summation.
    """
    config.check()
    torch.manual_seed(config.seed)
    data = _moved(data, torch.device(device))
    model = _model(config, len(data.vocab)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    order = torch.Generator().manual_seed(config.seed)
    watched = [tokenize(s) for s in watch]
    w_ids, w_mask = (t.to(device) for t in data.vocab.encode_batch(watched))  # (S, T)
    accuracies = [evaluate(model, data.test_ids, data.test_mask, data.test_labels)]
    weights = [_weights(model, w_ids, w_mask)]
    losses: list[float] = []
    n = len(data.train_labels)
    steps = 0
    start = time.process_time()
    for epoch in range(1, config.epochs + 1):
        model.train()
        perm = torch.randperm(n, generator=order)  # (N,)
        total = 0.0
        for i in range(0, n, config.batch_size):
            idx = perm[i : i + config.batch_size].to(device)  # (b,)
            logits, _ = model(data.train_ids[idx], data.train_mask[idx])  # (b,)
            loss = loss_fn(logits, data.train_labels[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
            steps += 1
        losses.append(total / n)
        accuracies.append(evaluate(model, data.test_ids, data.test_mask, data.test_labels))
        weights.append(_weights(model, w_ids, w_mask))
        if on_epoch is not None:
            on_epoch(epoch, losses[-1], accuracies[-1])
    cpu_s = time.process_time() - start
    return TrainRun(
        config=config,
        words=data.vocab.words,
        losses=np.array(losses, dtype=np.float64),
        accuracies=np.array(accuracies, dtype=np.float64),
        watched=tuple(tuple(w) for w in watched),
        weights=np.stack(weights).astype(np.float32),
        key_hit=key_hit_rate(model, data),
        steps=steps,
        cpu_s=cpu_s,
        state={k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()},
    )


@torch.no_grad()
def _weights(model: PoolingClassifier, ids: Tensor, mask: Tensor) -> np.ndarray:
    model.eval()
    _, att = model(ids, mask)  # (S, T)
    return att.cpu().numpy().copy()


def restore(run: TrainRun) -> PoolingClassifier:
    """The trained model of ``run``, rebuilt from its parameters."""
    model = _model(run.config, len(run.words))
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in run.state.items()})
    return model.eval()


@torch.no_grad()
def predict(run: TrainRun, text: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """A sentence -> (its words, class probabilities (3,) in ``corpus.LABELS`` order, its
    att_scores (n_words,)).

    Raises AttnvizError for text ``tokenize`` refuses. Unknown words are read as ``<unk>``.
    """
    words = tokenize(text)
    ids, mask = Vocabulary(run.words).encode_batch([words])  # (1, T), (1, T)
    logits, att = restore(run)(ids, mask)  # (1, 3), (1, T)
    probs = torch.softmax(logits[0].double(), dim=0)  # (3,)
    return words, probs.numpy().copy(), att[0, : len(words)].double().numpy().copy()


__all__ = [
    "POOLINGS",
    "Data",
    "TrainConfig",
    "TrainRun",
    "evaluate",
    "key_hit_rate",
    "predict",
    "prepare",
    "restore",
    "train",
]
