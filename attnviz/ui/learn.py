"""Learn the scores: train attention pooling on sentences and watch the weights find the words.

The page reads its widgets, asks ``attnviz.pooling`` for a run and draws it; no tensor arithmetic
here. A run trains in the bounded worker (``attnviz.pooling.worker``: CPU time, memory, one job
per session) and is cached by its configuration (``st.cache_data``: the same configuration pressed
by a whole class is one run, the others wait for it), the cache bounded in entries and bytes. A
cached ``TrainRun`` holds only small numpy arrays (~40 KB pickled), never a tensor. A visitor's
sentence goes through ``vocab.tokenize`` (length-limited) and is shown with ``st.code``.
"""

from __future__ import annotations

import secrets
import threading
import time

import pandas as pd
import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.figures.training import curves_draft, weights_draft
from attnviz.pooling import worker
from attnviz.pooling.corpus import LABELS
from attnviz.pooling.model import POOLINGS
from attnviz.pooling.train import TrainConfig, TrainRun, predict
from attnviz.pooling.vocab import MAX_CHARS
from attnviz.ui import cached
from attnviz.ui.safe import inert

SEEDS = range(10)
EPOCH_CHOICES = (2, 4, 6, 10, 15, 20)
DEFAULT_EPOCHS = TrainConfig().epochs
FRAME_S = 0.08  # between two epochs of the replay after Train
# (max_entries, max_size) of the run cache: 4 poolings x 10 seeds x 6 epoch counts at most, ~40 KB each
RUN_CACHE = (256, "16MiB")
TTL = "2h"
DEFAULT_SENTENCE = "honestly it was not a boring film"
RUNS = {"started": 0}  # training runs this server process has started (the page shows it)
_RUNS_LOCK = threading.Lock()


@st.cache_data(max_entries=RUN_CACHE[0], max_size=RUN_CACHE[1], ttl=TTL, show_spinner=False)
def trained(pooling: str, seed: int, epochs: int, _owner: str | None = None) -> TrainRun:
    """One run per (pooling, seed, epochs), whoever asks (``_owner`` is not part of the key)."""
    with _RUNS_LOCK:
        RUNS["started"] += 1  # only a cache miss gets here
    return worker.submit(TrainConfig(pooling=pooling, seed=seed, epochs=epochs), owner=_owner)


def _owner() -> str:
    if "lt_owner" not in st.session_state:
        st.session_state["lt_owner"] = secrets.token_hex(8)
    return st.session_state["lt_owner"]


def _parse(pooling: object, seed: object, epochs: object) -> tuple[str, int, int]:
    """Widget values -> a checked (pooling, seed, epochs), or AttnvizError."""
    if pooling not in POOLINGS:
        raise AttnvizError(f"Choose a pooling among {', '.join(POOLINGS)}.")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed not in SEEDS:
        raise AttnvizError(f"The seed is a whole number from {SEEDS[0]} to {SEEDS[-1]}.")
    if epochs not in EPOCH_CHOICES:
        raise AttnvizError(f"Choose the epochs among {', '.join(map(str, EPOCH_CHOICES))}.")
    return str(pooling), int(seed), int(epochs)


def learn_controls() -> tuple[str, int, int, bool]:
    """-> (pooling, seed, epochs, Train pressed?)."""
    c1, c2, c3, c4 = st.columns([3, 1, 1, 1], vertical_alignment="bottom")
    pooling = c1.selectbox(
        "Pooling",
        list(POOLINGS),
        format_func=lambda name: POOLINGS[name].title,
        key="lt_pooling",
    )
    seed = c2.selectbox("Seed", list(SEEDS), key="lt_seed")
    epochs = c3.selectbox(
        "Epochs", list(EPOCH_CHOICES), index=EPOCH_CHOICES.index(DEFAULT_EPOCHS), key="lt_epochs"
    )
    pressed = c4.button("Train", key="lt_train", type="primary")
    return (*_parse(pooling, seed, epochs), pressed)


def _train(pooling: str, seed: int, epochs: int) -> TrainRun:
    with st.spinner(f"Training {POOLINGS[pooling].title} for {epochs} epochs..."):
        return trained(pooling, seed, epochs, _owner=_owner())


def _spec(draft) -> cached.Spec:
    return cached.Spec(draft.to_json(), draft.description)


def _curves(run: TrainRun, upto: int) -> cached.Spec:
    return _spec(
        curves_draft(
            run.losses[:upto],
            run.accuracies[: upto + 1],
            title=f"{POOLINGS[run.config.pooling].title}: loss and held-out accuracy",
        )
    )


def _weights(run: TrainRun, s: int, epoch: int) -> cached.Spec:
    words = list(run.watched[s])
    rows = run.weights[: epoch + 1, s, : len(words)]  # (epochs so far, n_words)
    return _spec(
        weights_draft(
            words,
            rows,
            title=f"Weights over the words, epoch by epoch: {' '.join(words)}",
            row_names=[str(e) for e in range(epoch + 1)],
            highlight_row=epoch,
        )
    )


def _summary(run: TrainRun) -> str:
    acc = 100 * run.accuracies[-1]
    text = (
        f"Held-out accuracy after {run.config.epochs} epochs: **{acc:.1f} %** "
        f"({run.steps} training steps, {run.cpu_s:.2f} s of CPU in the worker)."
    )
    if POOLINGS[run.config.pooling].learned:
        text += (
            f" In **{100 * run.key_hit:.0f} %** of the held-out opinions the largest weight sits "
            f"on the sentiment word or its negation."
        )
    return text


def _replay(run: TrainRun) -> None:
    """After Train: the curves and the first sentence's weights drawn epoch by epoch."""
    bar = st.progress(0.0, text="epoch 0")
    curve_slot, weight_slot = st.empty(), st.empty()
    n = run.config.epochs
    for e in range(n + 1):
        bar.progress(
            e / n, text=f"epoch {e} of {n}: held-out accuracy {100 * run.accuracies[e]:.1f} %"
        )
        with curve_slot.container():
            cached.show(_curves(run, max(e, 1)), key=f"lt_replay_curves_{e}", caption=False)
        with weight_slot.container():
            cached.show(_weights(run, 0, e), key=f"lt_replay_weights_{e}", caption=False)
        time.sleep(FRAME_S)
    bar.empty()
    curve_slot.empty()
    weight_slot.empty()


def _run_view(run: TrainRun) -> None:
    st.markdown(_summary(run))
    st.caption(
        f"Training runs on this server since it started: {RUNS['started']}. A configuration "
        f"trained here before is shared, not trained again."
    )
    cached.show(_curves(run, run.config.epochs), key="lt_curves")
    epoch = st.slider(
        "Show the weights after epoch",
        0,
        run.config.epochs,
        value=run.config.epochs,
        key=f"lt_epoch_{run.config.epochs}",  # one slider per length: a value never outlives it
    )
    for s in range(len(run.watched)):
        cached.show(_weights(run, s, epoch), key=f"lt_weights_{s}")
    with st.expander(f"The weights after epoch {epoch}, as a table"):
        rows = [
            {"sentence": s + 1, "position": t, "word": word, "weight": round(float(w), 4)}
            for s, words in enumerate(run.watched)
            for t, (word, w) in enumerate(zip(words, run.weights[epoch, s], strict=False))
        ]
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="lt_weights_table")


def _compare(seed: int, epochs: int) -> None:
    st.header("Every pooling on the same split")
    st.caption(
        "Each trains with the seed and epochs above (cached: one run per configuration on this "
        "server). The first followed sentence shows which word each one weights most."
    )
    pressed = st.button("Train and compare all four", key="lt_compare")
    if pressed and "lt_compared" not in st.session_state:
        st.session_state["lt_compared"] = True
    if "lt_compared" not in st.session_state:
        return
    runs = {name: _train(name, seed, epochs) for name in POOLINGS}
    words = list(runs["attention"].watched[0])
    rows = []
    for name, run in runs.items():
        w = run.weights[-1, 0, : len(words)]
        rows.append(
            {
                "pooling": POOLINGS[name].title,
                "held-out accuracy": f"{100 * run.accuracies[-1]:.1f} %",
                "largest weight on a deciding word": (
                    f"{100 * run.key_hit:.0f} %" if POOLINGS[name].learned else "(fixed weights)"
                ),
                f"most weighted word in '{' '.join(words)}'": f"{words[int(w.argmax())]} ({w.max():.2f})",
            }
        )
    st.dataframe(pd.DataFrame(rows).set_index("pooling"), key="lt_compare_table")
    good, trap = runs["attention"].accuracies[-1], runs["trap"].accuracies[-1]
    st.markdown(
        f"The trap `att_scores[:, None]` ran and trained without an error, because here T == H "
        f"== {runs['trap'].config.hidden}. It lost **{100 * (good - trap):.1f} points** of held-out "
        f"accuracy ({100 * good:.1f} % -> {100 * trap:.1f} %): its weights multiplied the hidden "
        f"features instead of the words."
    )


def _your_sentence(run: TrainRun) -> None:
    st.header("Your own sentence")
    text = st.text_input(
        f"A sentence (at most {MAX_CHARS} characters)",
        value=DEFAULT_SENTENCE,
        max_chars=MAX_CHARS,
        key="lt_text",
    )
    try:
        words, probs, weights = predict(run, str(text))
    except AttnvizError as e:
        st.warning(inert(e))
        return
    st.code(" ".join(words), language=None)
    unknown = [w for w in words if w not in set(run.words)]
    if unknown:
        st.caption(f"{len(unknown)} of these words the model never saw; it reads each as `<unk>`.")
    best = int(probs.argmax())
    st.markdown(
        f"Prediction: **{LABELS[best]}** ({100 * probs[best]:.0f} %); "
        + ", ".join(f"{LABELS[k]} {100 * p:.0f} %" for k, p in enumerate(probs))
    )
    cached.show(
        _spec(weights_draft(words, weights, title="Weights over your sentence's words")),
        key="lt_yours",
    )


def page() -> None:
    st.title("Learn the scores")
    st.markdown(
        "Where do `att_scores` come from? Here a small model learns them. Each word of a sentence "
        "gets a score from a learned vector, `att_scores` is the softmax of the scores over the "
        "words (padding left out), and the one-liner "
        "`(net_output * att_scores[..., None]).sum(axis=1)` pools the sentence into one vector "
        "that a linear layer reads as negative, positive or neutral. The sentences come from a "
        "small grammar (3,000 of them, 600 held out for testing); the word that decides each one "
        "moves around, between filler and made-up names."
    )
    if "lt_owner" not in st.session_state:  # a visitor's first run here: the trainer gets ready
        worker.get_worker().start()
    pooling, seed, epochs, pressed = learn_controls()
    if pressed:
        st.session_state["lt_shown"] = (pooling, seed, epochs)
    shown = st.session_state.get("lt_shown")
    if shown is None:
        st.info("Press **Train** to train the model (a second or two of CPU).")
        return
    run = _train(*shown)
    if pressed:
        _replay(run)
    _run_view(run)
    _your_sentence(run)
    _compare(seed, epochs)
