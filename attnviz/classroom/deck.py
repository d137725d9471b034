"""The Walkthrough's slides as data: the broadcast story, one result cell, the silent trap, the
gradient and expand vs repeat, all computed on one example (no streamlit, no plotly).

``story(net_output, att_scores)`` runs the library once and gives both the slides (title, code,
narration) and what their figures are drawn from; the page draws each slide's figure with
``attnviz.figures`` by the slide's ``kind``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from torch import Tensor

from attnviz import trace


class Kind(enum.Enum):
    """What a slide's figure is drawn from."""

    STEP = "step"  # one step of trace.broadcast_steps (Slide.step is its index)
    CELL = "cell"  # where one result cell comes from (trace.provenance)
    TRAP = "trap"  # the silent T == H trap (forms.TRAP) beside the right answer (trace.trap)
    GRAD = "grad"  # the backward pass (trace.gradients)
    VIEW = "view"  # expand vs repeat (trace.view_vs_copy)


@dataclass(frozen=True)
class Slide:
    """One slide. key: a stable id (a step's key, or cell / trap / grad / view), which questions
    refer to. code: the code it is about; right_code: on the trap slide, the right code shown
    beside the wrong one. narration: markdown computed by the library (no visitor text)."""

    key: str
    kind: Kind
    title: str
    code: str
    narration: str
    step: int = -1
    right_code: str = ""
    code_note: str = ""
    right_note: str = ""


@dataclass(frozen=True)
class Story:
    """The slides and the traced objects their figures are drawn from."""

    slides: tuple[Slide, ...]
    steps: tuple[trace.Step, ...]
    provenance: trace.Provenance
    trap: trace.Mistake | None
    gradients: trace.Gradients
    view_copy: trace.ViewCopy


def strides_sentence(step: trace.Step) -> str:
    """One sentence that defines strides, on the step where they first appear."""
    s = tuple(step.strides or ())
    names = ("sentence", "word", "hidden feature")[-len(s) :] if s else ()
    first, *rest = [f"the next {n} {v}" for n, v in zip(names, s, strict=True)] or [""]
    more = (", " + ", ".join(rest)) if rest else ""
    return (
        f"**Strides** say how many numbers to skip in memory to take one step along each axis. "
        f"{step.code} has strides {s}: {first} numbers on"
        f"{more}."
    )


def trap_words(mistake: trace.Mistake, shape: tuple[int, int, int]) -> str:
    """How the T == H example of the trap slide was made, in plain words."""
    if not mistake.variant:
        return f"Here T == H = {shape[1]} already."
    return trace.variant_words(shape)


def story(net_output: Tensor, att_scores: Tensor) -> Story:
    """net_output (B, T, H), att_scores (B, T) (the weights actually applied) -> the deck."""
    x, w = net_output.detach(), att_scores.detach()
    shape = (int(x.shape[0]), int(x.shape[1]), int(x.shape[2]))
    steps = tuple(trace.broadcast_steps(x, w))
    slides = []
    for i, s in enumerate(steps):
        narration = s.explanation
        if i == 0 and s.strides is not None:
            narration += "\n\n" + strides_sentence(s)
        slides.append(Slide(s.key, Kind.STEP, s.title, s.code, narration, step=i))
    prov = trace.provenance(x, w, 0, 0)
    slides.append(
        Slide(
            "cell",
            Kind.CELL,
            "Where one number comes from",
            prov.formula,
            f"Each cell of `weighted` is a weighted sum over the {shape[1]} words of one "
            f"sentence:\n\n`{prov.equation}`",
        )
    )
    trap = trace.trap(x, w)  # forms.TRAP, named, wherever it is silent
    if trap is not None:
        slides.append(
            Slide(
                "trap",
                Kind.TRAP,
                f"The silent trap: {trap.title}",
                trap.code,
                trap_words(trap, shape) + "\n\n" + trap.explanation,
                right_code=trap.expected_code,
                code_note=f"⚠ {trap.outcome}: no error, shape {trap.shape}, wrong numbers",
                right_note=f"✓ right: shape {trap.expected_shape}",
            )
        )
    grads = trace.gradients(x, w)
    slides.append(
        Slide(
            "grad",
            Kind.GRAD,
            "Backward: the stretch becomes a sum",
            grads.att_scores_code,
            grads.explanation,
        )
    )
    vc = trace.view_vs_copy(w, shape[2])
    slides.append(
        Slide(
            "view",
            Kind.VIEW,
            "A stretch costs nothing: expand vs repeat",
            f"{vc.expand.code}  vs  {vc.repeat.code}",
            vc.explanation,
        )
    )
    return Story(tuple(slides), steps, prov, trap, grads, vc)
