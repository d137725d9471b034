"""Exercise checkers for the lessons: strict, kind, and they never leak the answer.

Every checker takes the student's function (or a value, where the exercise asks for one) and returns a
``CheckResult``: ``passed`` (bool), ``status`` (a ``Status``: "passed", "failed", "not attempted" or
"error") and a ``message`` that says what went wrong, on which inputs, and, when it recognises the
mistake, names it (``mistake``).

How a checker works (``attnviz.exercises.engine``, one engine for every exercise):

- fresh random inputs on every call (so a hard-coded answer fails), in shapes chosen to expose the
  classic mistakes: B, T, H all different, the T == H trap where a wrong axis goes unnoticed, B = 1,
  T = 1, the classic example, float64 inputs, inputs that require grad;
- it checks the type, then the exact shape, dtype and device, then the values (against a float64
  oracle, through ``attnviz.tolerance``), then that the inputs were not modified, then the rules the
  task states ("no Python loop", "the result keeps its gradient": ``attnviz.exercises.rules``);
- a function that calls the library's own answer (``attnviz.weighted_sum``, ``attnviz.METHODS``,
  ``attnviz.reference``, the fused kernels, the traces) is refused kindly: the call is observed
  while it runs (``attnviz.exercises.answer_key``), not looked for in the source;
- any exception the student's code raises is caught and explained, naming the torch operation that
  failed and its operands' shapes;
- a mistake is recognised by computing what each known mistake (a registry ``{key: Entry}`` per
  exercise) gives on the same inputs and comparing, on every case, never by reading the code;
- a stub that raises ``NotImplementedError`` is "not attempted";
- messages name shapes, dtypes and the cases by name, and never print an expected value or the
  solution; the result's header names the student's function (``result.function``).

The checkers (each also takes ``seed=`` to repeat a run; ``CHECKERS`` maps names to them):

- lesson 01 (``lesson01``): ``check_broadcast_shape(fn(shape_a, shape_b) -> tuple)``,
  ``check_add_axis(fn(att_scores) -> (B, T, 1))``, ``check_expand_weights(fn(att_scores, h) ->
  (B, T, H) view)``;
- lesson 02 (``lesson02``): ``check_weighted_sum(fn(net_output, att_scores) -> (B, H))``,
  ``check_softmax_weighted_sum(fn(net_output, scores))``,
  ``check_masked_weighted_sum(fn(net_output, att_scores, mask))``,
  ``check_weights_grad(fn(net_output, grad_weighted) -> (B, T))``;
- lesson 03 (``lesson03``): ``check_timer(fn(op, repeats, clock, sync) -> list of seconds)``
  (against a ``VirtualGPU``), ``check_intermediate_bytes(fn(b, t, h, dtype) -> int)``;
- lesson 04 (``lesson04``): ``check_scores(fn(keys, v) -> (B, T))``,
  ``check_masked_softmax(fn(scores, mask) -> (B, T))``; its pooling is ``check_weighted_sum``.
"""

from __future__ import annotations

from collections.abc import Callable

from attnviz.exercises.lesson01 import check_add_axis, check_broadcast_shape, check_expand_weights
from attnviz.exercises.lesson02 import (
    check_masked_weighted_sum,
    check_softmax_weighted_sum,
    check_weighted_sum,
    check_weights_grad,
)
from attnviz.exercises.lesson03 import VirtualGPU, check_intermediate_bytes, check_timer
from attnviz.exercises.lesson04 import check_masked_softmax, check_scores
from attnviz.exercises.result import NOT_ATTEMPTED, STATUSES, CheckResult, Status

CHECKERS: dict[str, Callable[..., CheckResult]] = {
    "add_axis": check_add_axis,
    "broadcast_shape": check_broadcast_shape,
    "expand_weights": check_expand_weights,
    "weighted_sum": check_weighted_sum,
    "masked_weighted_sum": check_masked_weighted_sum,
    "softmax_weighted_sum": check_softmax_weighted_sum,
    "weights_grad": check_weights_grad,
    "intermediate_bytes": check_intermediate_bytes,
    "timer": check_timer,
    "scores": check_scores,
    "masked_softmax": check_masked_softmax,
}

__all__ = [
    "CHECKERS",
    "NOT_ATTEMPTED",
    "STATUSES",
    "CheckResult",
    "Status",
    "VirtualGPU",
    "check_add_axis",
    "check_broadcast_shape",
    "check_expand_weights",
    "check_intermediate_bytes",
    "check_masked_softmax",
    "check_masked_weighted_sum",
    "check_scores",
    "check_softmax_weighted_sum",
    "check_timer",
    "check_weighted_sum",
    "check_weights_grad",
]
