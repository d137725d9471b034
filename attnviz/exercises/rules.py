"""The rules a task states, enforced: "no Python loop" and "the result keeps its gradient".

A loop is detected two ways, and either is enough:

- statically: the function's own source (``inspect.getsource``, parsed with ``ast``) contains a
  ``for`` or ``while`` statement, a comprehension or a generator expression;
- dynamically: the number of torch operations the function runs (counted by the engine's probe)
  grows with the sizes of the inputs, which is what a loop over sentences or words does, even one
  hidden in a helper function. A loop-free answer runs the same few operations on every shape.

The gradient rule: on a case whose inputs require grad, the result must be attached to the graph
and a gradient must reach every input that requires grad (whether its values are right is the
values' business: a wrong function has a wrong gradient too, and is reported as such).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch import Tensor

if TYPE_CHECKING:
    from attnviz.exercises.outcome import Case, Outcome

_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp)
_WORDS = {
    ast.For: "a `for` loop",
    ast.AsyncFor: "a `for` loop",
    ast.While: "a `while` loop",
    ast.ListComp: "a list comprehension",
    ast.SetComp: "a set comprehension",
    ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression",
}


def _function_node(fn: Callable) -> ast.AST | None:
    """The ast of fn's own definition, or None where its source cannot be read unambiguously."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        try:  # a lambda inside a larger expression: parse its line as an expression
            tree = ast.parse("(" + source.strip().rstrip(",") + ")")
        except SyntaxError:
            return None
    name = getattr(fn, "__name__", "")
    if name == "<lambda>":
        lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
        return lambdas[0] if len(lambdas) == 1 else None
    defs = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name
    ]
    return defs[0] if defs else None


def static_loop(fn: Callable) -> str:
    """'a `for` loop (line 3 of your function: `for b in range(B):`)' or ''."""
    node = _function_node(fn)
    if node is None:
        return ""
    for n in ast.walk(node):
        if isinstance(n, _LOOPS + (ast.GeneratorExp,)):
            try:
                text = ast.unparse(n).split("\n")[0]
            except Exception:  # unparse of odd nodes: the kind of loop is enough
                text = ""
            text = text if len(text) <= 60 else text[:57] + "..."
            line = n.lineno - getattr(node, "lineno", 1) + 1
            where = f" (line {line} of your function: `{text}`)" if text else ""
            return _WORDS[type(n)] + where
    return ""


def dynamic_loop(outcomes: list[Outcome]) -> str:
    """'it ran 39 torch operations on B=2, T=3 but 147 on B=4, T=6 ...' or ''.

    A loop shows as a count that grows with B, with T or with B·T: sorted by that size, the counts
    never go down and take at least three different values. A branch (say, a cast for float64
    inputs) adds a constant on some cases, and does not look like that."""
    ran = [o for o in outcomes if o.exc is None and "B" in o.case.sizes and "T" in o.case.sizes]
    if len({o.ops for o in ran}) < 3:
        return ""
    measures = {
        "B": lambda o: o.case.sizes["B"],
        "T": lambda o: o.case.sizes["T"],
        "B·T": lambda o: o.case.sizes["B"] * o.case.sizes["T"],
    }
    for size in measures.values():
        by_size: dict[int, list[int]] = {}
        for o in ran:
            by_size.setdefault(size(o), []).append(o.ops)
        levels = [by_size[k] for k in sorted(by_size)]
        grows = all(max(lo) <= min(hi) for lo, hi in zip(levels, levels[1:], strict=False))
        if grows and len({n for level in levels for n in level}) >= 3:
            small = min(ran, key=lambda o: (size(o), o.ops))
            large = max(ran, key=lambda o: (size(o), o.ops))
            return (
                f"it ran {small.ops} torch operations on {_sizes(small)} but {large.ops} on "
                f"{_sizes(large)}: the number of operations grows with the sizes, as it does "
                f"when Python loops over sentences or words"
            )
    return ""


def _sizes(o: Outcome) -> str:
    return ", ".join(f"{k}={o.case.sizes[k]}" for k in ("B", "T"))


def find_loop(fn: Callable, outcomes: list[Outcome]) -> str:
    """A sentence saying what loop was detected, or '' when there is none."""
    found = static_loop(fn)
    dynamic = dynamic_loop(outcomes)
    if found and dynamic:
        return f"Your function uses {found}, and {dynamic}."
    if found:
        return f"Your function uses {found}."
    if dynamic:
        return f"Your function has no loop in its own lines, but {dynamic} (a helper it calls?)."
    return ""


def gradient_problem(case: Case, got: Tensor) -> str:
    """'' when got keeps the right gradient for every input of case that requires grad, else what
    is wrong with it."""
    inputs = [(n, a) for n, a in zip(case.names, case.args, strict=True) if _wants_grad(a)]
    if not inputs:
        return ""
    if not got.requires_grad or got.grad_fn is None:
        return (
            "the numbers are right, but your result has no gradient: it is cut off from the "
            "inputs (a `.detach()`, `.data`, `torch.no_grad()`, or numbers copied through "
            "`.tolist()`, numpy or `torch.tensor(...)`). The task says the result keeps its "
            "gradient, so that training can flow back through it: build it from the inputs with "
            "torch operations only."
        )
    upstream = torch.ones_like(got)
    grads = torch.autograd.grad(got, [a for _, a in inputs], upstream, allow_unused=True)
    for (name, _), g in zip(inputs, grads, strict=True):
        if g is None:
            return (
                f"the numbers are right, but no gradient reaches `{name}`: somewhere your code "
                f"cuts it off from the result (a `.detach()`, `.data`, or a copy through numpy). "
                f"The task says the result keeps its gradient."
            )
    return ""


def _wants_grad(a: object) -> bool:
    return isinstance(a, Tensor) and a.requires_grad
