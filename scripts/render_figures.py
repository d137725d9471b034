"""Render every attnviz figure to PNG (and self-contained HTML) for a look: headless chromium.

    .venv/bin/python scripts/render_figures.py [OUT_DIR] [--shape B T H]

Needs playwright and a chromium, started as scripts/chromium.py says (default /usr/bin/chromium,
or env CHROMIUM). Not used by tests.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the checkout

from attnviz import examples, trace  # noqa: E402
from attnviz.figures import (  # noqa: E402
    alignment_figure,
    figure_html,
    gradient_figure,
    mistake_figure,
    mistakes_figure,
    provenance_figure,
    story_figures,
    view_copy_figure,
)
from scripts.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402  (one way to start chromium)


def figures(b: int, t: int, h: int, cell: tuple[int, int] | None = None) -> dict:
    x, w = (
        examples.preset("classic", b, t, h).net_output,
        examples.preset("classic", b, t, h).att_scores,
    )
    steps = trace.broadcast_steps(x, w)
    out = {
        f"step{i}_{s.key}": f
        for i, (s, f) in enumerate(zip(steps, story_figures(steps, cell=cell), strict=True))
    }
    out["align_clash"] = alignment_figure(
        trace.align_shapes(x.shape, w.shape, name_a="net_output", name_b="att_scores")
    )
    out["provenance"] = provenance_figure(trace.provenance(x, w, 0, min(1, h - 1)))
    items = trace.mistakes(x, w)
    out["mistakes"] = mistakes_figure(items)
    for i, m in enumerate(items):
        out[f"mistake{i}_{m.key}{'_variant' if m.variant else ''}"] = mistake_figure(m)
    g = trace.gradients(x, w)
    out["grad_att"] = gradient_figure(g)
    out["grad_net"] = gradient_figure(g, part="net_output")
    out["view_copy"] = view_copy_figure(trace.view_vs_copy(w, h))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="/tmp/attnviz_figures")
    parser.add_argument("--shape", nargs=3, type=int, default=(2, 3, 5))
    parser.add_argument("--only", default="")
    parser.add_argument("--cell", nargs=2, type=int, default=None, help="follow weighted[b, h]")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    figs = {k: f for k, f in figures(*args.shape, cell=args.cell).items() if args.only in k}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 800})
        for name, fig in figs.items():
            path = out / f"{name}.html"
            path.write_text(figure_html(fig), encoding="utf-8")
            page.goto(path.as_uri())
            page.wait_for_selector(".main-svg")
            page.locator("figure").screenshot(path=str(out / f"{name}.png"))
            print(out / f"{name}.png")
        browser.close()


if __name__ == "__main__":
    main()
