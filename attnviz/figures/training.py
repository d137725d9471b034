"""Figures of a training run: the loss and held-out accuracy by epoch, and the attention weights
over the words of a sentence (the house's heatmap, with the words on the axis).

Both return a ``Draft`` (``.to_json()`` for a page that caches specs, ``.figure()`` for a
``go.Figure``) with a text description: the weights figure names the word with the largest weight
in every row, the curves figure gives every number.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from attnviz.errors import AttnvizError
from attnviz.figures.draft import Draft
from attnviz.figures.heatmap import fmt, tensor_draft
from attnviz.figures.layout import base_layout

LOSS_COLOR = "#b35806"  # the orange end of the house's scale
ACCURACY_COLOR = "#2166ac"  # its blue end


def weights_draft(
    words: Sequence[str],
    weights: np.ndarray,
    *,
    title: str,
    row_names: Sequence[str] | None = None,
    highlight_row: int | None = None,
) -> Draft:
    """weights: (n_words,) or (R, n_words), e.g. one row per epoch -> a heatmap whose columns are
    the words (escaped: a visitor's words are drawn as text). The colour range is (-1, 1) for
    every figure, so the weights of different epochs and sentences compare; ``highlight_row``
    outlines one row (the epoch the slider picked)."""
    arr = np.asarray(weights, dtype=np.float64)
    rows = arr[None, :] if arr.ndim == 1 else arr  # (R, n)
    if rows.ndim != 2 or rows.shape[1] != len(words):
        raise AttnvizError(
            f"weights of shape {tuple(arr.shape)} do not match {len(words)} words: give "
            f"(n_words,) or (rows, n_words)."
        )
    names = list(row_names) if row_names is not None else [str(i) for i in range(len(rows))]
    highlight = [(highlight_row, j) for j in range(len(words))] if highlight_row is not None else []
    if arr.ndim == 1:
        highlight = [(j,) for _, j in highlight]
    fig = tensor_draft(
        arr,
        title=title,
        axis_names=("word",) if arr.ndim == 1 else ("epoch", "word"),
        zrange=(-1.0, 1.0),
        digits=2,
        name="att_scores",
        highlight=highlight,
        highlight_note="the epoch shown" if highlight else None,
    )
    shown = [html.escape(w, quote=False) for w in words]
    fig.update_xaxes(ticktext=shown, tickvals=list(range(len(words))), tickangle=-45)
    if arr.ndim == 2:
        fig.update_yaxes(ticktext=names, tickvals=list(range(len(rows))))
    tops = [
        f"{name}: '{words[int(r.argmax())]}' ({fmt(float(r.max()), 2)})"
        for name, r in zip(names, rows, strict=True)
    ]
    label = "row" if arr.ndim == 1 else "epoch"
    text = (
        f"{fig.description} The words, left to right: {' '.join(words)}. The largest weight by "
        f"{label}: {'; '.join(tops)}."
    )
    return fig.describe(text)


def curves_draft(losses: np.ndarray, accuracies: np.ndarray, *, title: str) -> Draft:
    """losses (E,) after epochs 1..E, accuracies (E + 1,) before training and after each epoch
    -> two lines over the epochs: the training loss (left axis), held-out accuracy in % (right)."""
    losses = np.asarray(losses, dtype=np.float64)
    accuracies = np.asarray(accuracies, dtype=np.float64)
    if accuracies.shape != (len(losses) + 1,):
        raise AttnvizError(
            f"accuracies {accuracies.shape} must have one more entry than losses {losses.shape} "
            f"(before training, then after each epoch)."
        )
    epochs = list(range(len(accuracies)))
    fig = Draft(
        {
            "type": "scatter",
            "x": epochs[1:],
            "y": losses.tolist(),
            "name": "training loss",
            "mode": "lines+markers",
            "line": {"color": LOSS_COLOR, "width": 3},
            "marker": {"symbol": "circle"},
        }
    )
    fig.add_trace(
        {
            "type": "scatter",
            "x": epochs,
            "y": (100 * accuracies).tolist(),
            "name": "held-out accuracy (%)",
            "mode": "lines+markers",
            "yaxis": "y2",
            "line": {"color": ACCURACY_COLOR, "width": 3, "dash": "dash"},
            "marker": {"symbol": "square"},
        }
    )
    base_layout(fig, title=html.escape(title, quote=False), height=380)
    fig.update_layout(
        xaxis={"title": {"text": "epoch"}, "dtick": 1},
        yaxis={"title": {"text": "training loss"}, "rangemode": "tozero"},
        yaxis2={
            "title": {"text": "held-out accuracy (%)"},
            "overlaying": "y",
            "side": "right",
            "range": [0, 101],
        },
        legend={"orientation": "h", "y": -0.25},
        margin={"r": 90},
    )
    loss_text = ", ".join(fmt(v, 3) for v in losses)
    acc_text = ", ".join(f"{100 * v:.1f}%" for v in accuracies)
    return fig.describe(
        f"{title}. Line chart over {len(losses)} epochs. Training loss after each epoch: "
        f"{loss_text}. Held-out accuracy before training and after each epoch: {acc_text}."
    )
