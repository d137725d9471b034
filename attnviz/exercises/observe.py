"""What the checker observed, said plainly, for when no known mistake explains a failure: on which
sizes it works and fails, which shapes came back, and, only where it is checked (the same output for
two different inputs, or the same size whatever the input), that something is written into the code.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnviz.exercises.cases import join
from attnviz.exercises.outcome import Kind, Outcome, shape_words

_KIND_WORDS = {
    Kind.EXCEPTION: "it raised an error",
    Kind.SHAPE: "wrong shape",
    Kind.VALUES: "right shape, wrong numbers",
    Kind.DTYPE: "wrong dtype",
    Kind.DEVICE: "wrong device",
    Kind.TYPE: "not a tensor",
    Kind.NONE: "returned None",
    Kind.MUTATED: "changed an input",
    Kind.DETACHED: "no gradient",
    Kind.COPY: "a copy",
    Kind.WRONG: "wrong answer",
}


def _partition(passed: list[Outcome], failed: list[Outcome]) -> str:
    """'B' if the cases that passed and the ones that failed differ exactly by B (then T, H)."""
    if len(passed) < 2 or len(failed) < 2:
        return ""
    letters = [k for k in ("B", "T", "H") if all(k in o.case.sizes for o in passed + failed)]
    for letter in letters:
        good = {o.case.sizes[letter] for o in passed}
        bad = {o.case.sizes[letter] for o in failed}
        if not good & bad and len(bad) >= 2:
            return letter
    return ""


def _fixed_size(outcomes: list[Outcome]) -> tuple[int, int, str] | None:
    """(axis, size, letter) when the result's axis has the same size on inputs whose letter
    differs, while the answer's axis follows the letter, and that size is none of the inputs'
    sizes on at least two of them (so it cannot come from a `.shape`): a size written into the
    code."""
    tensors = [o for o in outcomes if isinstance(o.output, Tensor) and o.case.sizes]
    tensors = [o for o in tensors if isinstance(o.case.expected, Tensor)]
    if len(tensors) < 2:
        return None
    ndim = {o.output.ndim for o in tensors} | {o.case.expected.ndim for o in tensors}
    if len(ndim) != 1:
        return None
    for axis in range(ndim.pop()):
        got = {o.output.shape[axis] for o in tensors}
        want = {o.case.expected.shape[axis] for o in tensors}
        if len(got) == 1 and len(want) >= 2:
            size = got.pop()
            foreign = [t for t in tensors if size not in t.case.sizes.values()]
            if len(foreign) < 2:
                continue
            letters = [
                k
                for k in tensors[0].case.sizes
                if all(t.case.expected.shape[axis] == t.case.sizes.get(k) for t in tensors)
            ]
            return axis, size, letters[0] if letters else ""
    return None


def _constant_output(outcomes: list[Outcome]) -> bool:
    """Two different inputs of the same shape gave exactly the same result."""
    by_sizes: dict[tuple, list[Tensor]] = {}
    for o in outcomes:
        if isinstance(o.output, Tensor) and o.case.sizes:
            by_sizes.setdefault(tuple(o.case.sizes.items()), []).append(o.output)
    for outs in by_sizes.values():
        if len(outs) >= 2 and all(
            x.shape == outs[0].shape and torch.equal(outs[0].detach().cpu(), x.detach().cpu())
            for x in outs[1:]
        ):
            return True
    return False


_LETTER_NAMES = {"B": "batch size B", "T": "number of words T", "H": "hidden size H"}


def _sizes_text(o: Outcome) -> str:
    return ", ".join(f"{k}={v}" for k, v in o.case.sizes.items())


def observe(passed: list[Outcome], failed: list[Outcome], outcomes: list[Outcome]):
    """(key, text) from what was observed, or (None, text) where nothing stands out."""
    fixed = _fixed_size(failed + passed)
    hard = ""
    if fixed is not None:
        axis, size, letter = fixed
        which = f" whatever {letter} is" if letter else " whatever the input's sizes"
        hard = (
            f" Your result's axis {axis} has size {size}{which}, so that size seems to be "
            f"written into your code as a number: take every size from the inputs' `.shape`."
        )
    letter = _partition(passed, failed)
    one_shape = {tuple(o.case.sizes.items()) for o in passed}
    if (
        len(one_shape) == 1
        and passed[0].case.sizes
        and all(o.case.sizes != passed[0].case.sizes for o in failed)
    ):
        sizes = passed[0].case.sizes
        shape = tuple(sizes.values())
        one_word = (
            " That is the one case with a single word per sentence (T = 1), so the way your "
            "function combines several words is what is off."
            if sizes.get("T") == 1
            else ""
        )
        return "only_shape", (
            f"\nYour function gives the right answer only on inputs of sizes {shape}; it fails "
            f"on every other size the checker tried.{one_word}" + hard
        )
    if letter:
        good = sorted({o.case.sizes[letter] for o in passed})
        bad = sorted({o.case.sizes[letter] for o in failed})
        return f"only_{letter}", (
            f"\nYour function works when the {_LETTER_NAMES[letter]} is {join(good)}, but not "
            f"when it is {join(bad)}." + hard
        )
    if _constant_output(outcomes):
        return "hard_coded", (
            "\nYour function gave exactly the same numbers for two different inputs of the same "
            "shape, so the answer seems to be written into the code. Compute it from the inputs: "
            "the checker uses fresh random numbers every time."
        )
    if hard:
        return "fixed_size", "\n" + hard.strip()
    errors = {(type(o.exc), str(o.exc)) for o in failed if o.exc is not None}
    if not passed and len(errors) == 1 and all(o.exc is not None for o in failed):
        return None, ""  # the same error everywhere: its explanation says it all
    bad = [f"{o.case.label} ({_sizes_text(o)})" if o.case.sizes else o.case.label for o in failed]
    more = f"; and {len(bad) - 4} more" if len(bad) > 4 else ""
    kinds = sorted({_KIND_WORDS.get(o.kind, o.kind.value) for o in failed})
    return None, (
        f"\nWhat the checker saw: it failed on {len(failed)} of {len(outcomes)} cases "
        f"({'; '.join(bad[:4])}{more}): {', '.join(kinds)}." + _shapes_seen(failed)
    )


def _shapes_seen(failed: list[Outcome]) -> str:
    seen = [
        (tuple(o.output.shape), shape_words(o.case, o.case.expected))
        for o in failed
        if o.kind is Kind.SHAPE
    ]
    if not seen:
        return ""
    pairs = list(dict.fromkeys(f"{g} where the answer is {w}" for g, w in seen))[:3]
    return " Shapes returned: " + "; ".join(pairs) + "."
