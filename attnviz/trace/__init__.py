"""The broadcast, step by step: weighted = (net_output * att_scores[..., None]).sum(axis=1).

Every function here runs torch on the inputs it is given and reports what happened, as data. One
concept per module:

- ``step``: ``broadcast_steps`` -> the story as a list of ``Step`` (code, explanation, shape, value,
  strides); ``feeding_cells`` -> the cells of a step that feed one result cell (to follow it through).
- ``alignment``: ``align_shapes`` -> the right-aligned comparison of two shapes, axis by axis
  (``Alignment`` of ``AxisMatch``: ``EQUAL``, ``STRETCHED`` or ``CLASH``).
- ``cell``: ``provenance`` -> one result cell written out as a sum of products (``Term``) with the
  actual numbers.
- ``mistake``: ``mistakes`` -> the gallery of wrong forms (``attnviz.forms``), each run live: torch's
  error, or the wrong answer; ``trap`` -> the trap slide's form (``forms.TRAP``) where it is silent;
  ``square_variant`` / ``variant_words`` -> the T == H inputs where a wrong axis is silent.
- ``gradient``: ``gradients`` -> the backward pass: the broadcast becomes a sum, checked against autograd.
- ``layout``: ``view_vs_copy`` -> ``expand`` (a stride-0 view, 0 bytes) beside ``repeat`` (a real copy).
- ``inputs``: the checks every function above runs on its inputs first.

Letters are fixed: B sentences, T words, H hidden features. Nothing is hard-coded for 2x3x5: any
small shape works, including the T == H case where a wrong axis goes unnoticed.
"""

from attnviz.trace.alignment import CLASH, EQUAL, STRETCHED, Alignment, AxisMatch, align_shapes
from attnviz.trace.cell import Provenance, Term, provenance
from attnviz.trace.gradient import Gradients, gradients
from attnviz.trace.layout import Layout, ViewCopy, view_vs_copy
from attnviz.trace.mistake import Mistake, mistakes, square_variant, trap, variant_words
from attnviz.trace.step import Step, broadcast_steps, feeding_cells

__all__ = [
    "CLASH",
    "EQUAL",
    "STRETCHED",
    "Alignment",
    "AxisMatch",
    "Gradients",
    "Layout",
    "Mistake",
    "Provenance",
    "Step",
    "Term",
    "ViewCopy",
    "align_shapes",
    "broadcast_steps",
    "feeding_cells",
    "gradients",
    "mistakes",
    "provenance",
    "square_variant",
    "trap",
    "variant_words",
    "view_vs_copy",
]
