"""Plotly figures for attnviz: every builder returns a ``plotly.graph_objects.Figure``.

Every figure carries a plain-text description for screen readers (and for tests) in
``fig.layout.meta["description"]``; ``description(fig)`` reads it and ``figure_html(fig)`` writes it
beside the figure in a self-contained HTML page (plotly.js inlined: nothing comes from a CDN).

Conventions: numbers in every cell; one colour-blind-safe diverging scale (blue negative, white
zero, orange positive) centred at zero; ``shared_zrange(steps)`` gives one colour range for all the
figures of a story so colours compare between steps; cells that exist only by broadcasting
(stride 0) carry the glyph ↔ and a dotted border, and an annotation names the stretched axis;
axes are labelled sentence / word / hidden; fonts are large enough for a projector.

Builders: ``tensor_figure``, ``step_figure``, ``story_figures``, ``alignment_figure``,
``provenance_figure``, ``mistake_figure``, ``mistakes_figure``, ``gradient_figure``,
``view_copy_figure``. Helpers: ``shared_zrange``, ``description``, ``figure_html``, ``short_title``.

Screens: every builder takes ``style=`` a ``Style``: ``SCREEN`` (the default), ``PROJECTOR`` (every
text in the figure at least 24 px, for the back row) or ``PHONE`` (panels stacked, numbers at least
12 px on a 390 px wide screen).

Building: the builders assemble traces and layout as plain dicts in a ``draft.Draft`` (the
``go.Figure`` calls they need, without plotly's per-call validation: 2-4 ms for a step figure
instead of 20-180 ms) and make one ``go.Figure`` at the end; the tests validate every builder's
figure with plotly. ``step_draft`` and ``tensor_draft`` return that ``Draft`` itself, for a caller
that only sends the figure's JSON (``Draft.to_json``, the same JSON without making the ``go.Figure``).
"""

from attnviz.figures.broadcast import (
    alignment_figure,
    gradient_figure,
    provenance_figure,
    step_draft,
    step_figure,
    story_figures,
    view_copy_figure,
)
from attnviz.figures.heatmap import (
    COLORSCALE,
    STRETCH_GLYPH,
    shared_zrange,
    tensor_draft,
    tensor_figure,
)
from attnviz.figures.mistakes import mistake_figure, mistakes_figure
from attnviz.figures.style import (
    PHONE,
    PROJECTOR,
    SCREEN,
    Style,
)
from attnviz.figures.text import (
    description,
    figure_html,
    short_title,
)

__all__ = [
    "COLORSCALE",
    "PHONE",
    "PROJECTOR",
    "SCREEN",
    "STRETCH_GLYPH",
    "Style",
    "alignment_figure",
    "description",
    "figure_html",
    "gradient_figure",
    "mistake_figure",
    "mistakes_figure",
    "provenance_figure",
    "shared_zrange",
    "short_title",
    "step_draft",
    "step_figure",
    "story_figures",
    "tensor_draft",
    "tensor_figure",
    "view_copy_figure",
]
