"""How every page shows a figure, readable without sight: ``show``.

A figure on screen is four things: the plot, named for assistive technology by its title
(``st.plotly_chart(alt=...)``: role="figure" with that name); its summary in words (the figure's
own description, computed by its builder); its numbers as real HTML tables (a caption, a column
header per column, a row header per row: sentence / word / hidden) one keystroke away in a
``<details>`` element; and, hidden from assistive technology, the plot's loose SVG texts (the
page's script ``A11Y_SCRIPT`` sets aria-hidden on each plot and takes plotly's toolbar out of the
tab order).

``announce`` says one short sentence in the page's single polite live region (made once by the
same script, in a closed shadow root so that no text search of the page finds it twice): a step,
a slide, a result, a verdict, the live class. Each sentence belongs to a slot ("step", "result",
...) and carries a key (the sentence itself unless the page names the event); once a run has
finished, the script says a slot's sentence only when its key differs from the one that slot had
after the last run, so a rerun that draws the same sentence says nothing, and a slot that leaves
the page forgets its key. Of the slots that changed in one run the highest rank is said (equal
ranks joined in page order). The same script gives focus back when a rerun disabled or rebuilt
the focused control (Next on the last step: to its nearest enabled neighbour, Back).

The plotly configs live here too: ``PLOT_CONFIG`` (a screen: the camera icon saves a PNG),
``PHONE_PLOT_CONFIG`` (no toolbar, which would cover the title) and ``SLIDE_CONFIG`` (a slide:
no toolbar at all).
"""

from __future__ import annotations

import hashlib
import html
from typing import Any

import plotly.graph_objects as go
import streamlit as st
from plotly.basedatatypes import BaseFigure

from attnviz import figures
from attnviz.figures.table import figure_tables, plain, tables_html

PLOT_CONFIG: dict[str, Any] = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "png", "scale": 2, "filename": "attnviz"},
}
#: On a phone the plot toolbar would cover the figure's title: no toolbar there.
PHONE_PLOT_CONFIG: dict[str, Any] = {**PLOT_CONFIG, "displayModeBar": False}
#: A Walkthrough slide: no toolbar, drawn to the slide's width.
SLIDE_CONFIG: dict[str, Any] = {"displaylogo": False, "displayModeBar": False, "responsive": True}
#: The label of the expander that holds a figure's numbers.
TABLE_LABEL = "The numbers as a table"


def plot_config(style: str) -> dict[str, Any]:
    """The plotly config of a figure drawn in style ``style`` ("screen", "projector", "phone")."""
    return PHONE_PLOT_CONFIG if style == figures.PHONE.name else PLOT_CONFIG


def spec_of(fig: go.Figure | BaseFigure | dict) -> dict:
    """A figure (``go.Figure``, a prebuilt spec figure, or its dict) as a plain dict."""
    if isinstance(fig, dict):
        return fig
    return fig.to_dict()


def name_of(spec: dict) -> str:
    """The figure's accessible name: its title as plain text ("Figure" when it has none)."""
    title = (spec.get("layout") or {}).get("title") or {}
    text = plain(title.get("text", "") if isinstance(title, dict) else title)
    return text or "Figure"


def details_html(spec: dict, summary: str) -> str:
    """The summary paragraph and the figure's tables inside a <details> (all text escaped)."""
    tables = figure_tables(spec)
    out = f'<p class="attnviz-summary">{html.escape(summary)}</p>' if summary else ""
    if tables:
        out += (
            f'<details class="attnviz-numbers"><summary>{html.escape(TABLE_LABEL)}</summary>'
            f'<div class="attnviz-tables">{tables_html(tables)}</div></details>'
        )
    return out


def show(
    fig: go.Figure | BaseFigure | dict,
    key: str,
    *,
    summary: str | None = None,
    style: str = "screen",
    config: dict[str, Any] | None = None,
    folded: str | None = None,
    **chart: Any,
) -> Any:
    """Draw fig (its name for assistive technology, its summary in words, its numbers as tables).

    summary: the text description (default: the figure's own, ``figures.description``); shown as
    escaped text, never as Markdown (it may quote a visitor's expression); "" shows none.
    config: the plotly config (default: ``plot_config(style)``). folded: the key of an expander
    "Text description of the figure" that holds the summary and the tables (a slide, where the
    screen is counted), instead of the summary under the figure and the tables in a <details>.
    chart: more ``st.plotly_chart`` arguments (``on_select``, ``selection_mode``).
    -> what ``st.plotly_chart`` returns."""
    spec = spec_of(fig)
    if summary is None:
        meta = (spec.get("layout") or {}).get("meta")
        summary = str(meta.get("description", "")) if isinstance(meta, dict) else ""
    out = st.plotly_chart(
        fig,
        key=key,
        config=plot_config(style) if config is None else config,
        width="stretch",
        theme=None,
        alt=f"{name_of(spec)} (chart; its description and numbers follow)",
        **chart,
    )
    if folded is not None:
        with st.expander("Text description of the figure", key=folded):
            st.text(summary)
            tables = figure_tables(spec)
            if tables:
                st.html(f'<div class="attnviz-tables">{tables_html(tables)}</div>')
        return out
    text = details_html(spec, summary)
    if text:
        st.html(text)
    return out


#: Ranks of what is said: the live class's news over a result or a verdict over a step or slide.
STEP, RESULT, CLASS = 1, 2, 3


def announce(
    text: str, slot: str = "step", *, rank: int = STEP, key: str | None = None, first: bool = True
) -> None:
    """Say text in the page's polite live region when slot's key changed since the last run.

    key: what makes the sentence news (default: the text; an event's counter where the same
    sentence may be news twice); first=False: the slot's first key on this page is taken as
    it is, not said (what was already there when the visitor arrived). "" says nothing and
    keeps the slot. The element itself is invisible."""
    mark = hashlib.sha256((text if key is None else key).encode()).hexdigest()[:16]
    st.html(
        f'<div class="attnviz-say" data-slot="{html.escape(slot)}" data-rank="{int(rank)}" '
        f'data-key="{mark}" data-first="{int(first)}" data-say="{html.escape(text)}"></div>'
    )


#: The page's script (run once per browser tab): plots hidden from assistive technology (their
#: name, summary and table stand in), plotly's toolbar out of the tab order, the one polite
#: live region that says the newest ``announce`` sentence when it changed, and focus given back
#: after a rerun disabled or rebuilt the focused control.
A11Y_SCRIPT = """
<script>
(() => {
  if (window.__attnvizA11y) return;
  window.__attnvizA11y = true;
  const doc = window.document;
  let said = "";
  let count = 0;
  let region = null;
  const fix = () => {
    if (!region || !region.isConnected) {
      // in a closed shadow root: read by screen readers, never matched by a page's text search
      const host = doc.createElement("div");
      host.id = "attnviz-live";
      host.className = "attnviz-sr";
      region = doc.createElement("div");
      region.setAttribute("role", "status");
      region.setAttribute("aria-live", "polite");
      host.attachShadow({ mode: "closed" }).appendChild(region);
      doc.body.appendChild(host);
      window.attnvizSaid = () => region.textContent;  // for the browser tests ...
      window.attnvizSays = () => count;  // ... and how many sentences it has said
    }
    doc.querySelectorAll(".stPlotlyChart .js-plotly-plot").forEach((p) => {
      if (p.getAttribute("aria-hidden") !== "true") p.setAttribute("aria-hidden", "true");
    });
    doc.querySelectorAll(".stPlotlyChart a, .stPlotlyChart button, .stPlotlyChart [tabindex]")
      .forEach((b) => { if (b.getAttribute("tabindex") !== "-1") b.setAttribute("tabindex", "-1"); });
    // the screen's component draws nothing: no tab stop
    doc.querySelectorAll(".st-key-wt_screen iframe")
      .forEach((f) => { if (f.getAttribute("tabindex") !== "-1") f.setAttribute("tabindex", "-1"); });
    if (!running()) speak();
  };
  // What a finished run says: per slot, its last sentence on the page (not one the run left
  // stale); a slot whose key changed is news, the highest rank of those is said.
  const keys = new Map();
  const speak = () => {
    const now = new Map();
    doc.querySelectorAll(".attnviz-say").forEach((e) => {
      if (!e.closest("[data-stale='true']")) now.set(e.dataset.slot || "", e);
    });
    for (const slot of [...keys.keys()]) if (!now.has(slot)) keys.delete(slot);
    let best = -Infinity;
    let news = [];
    now.forEach((e, slot) => {
      const key = e.dataset.key || "";
      const known = keys.has(slot);
      if (known && keys.get(slot) === key) return;
      keys.set(slot, key);
      const text = (e.dataset.say || "").trim();
      if (!text || (!known && e.dataset.first === "0")) return;
      const rank = Number(e.dataset.rank) || 0;
      if (rank > best) { best = rank; news = [text]; } else if (rank === best) news.push(text);
    });
    if (!news.length) return;
    const text = news.join(" ");
    if (text === said) {  // the same words, news again: cleared first, so that it is said
      region.textContent = "";
      window.setTimeout(() => { region.textContent = text; }, 100);
    } else {
      region.textContent = text;
    }
    said = text;
    count += 1;
  };
  // Focus that a rerun took away goes back to the control the visitor was on. A rerun disables
  // controls for a moment (the tab strip while its tab's rerun runs: focus falls to the body) or
  // rebuilds them (a new element with the same key and label): while the app runs, the script
  // waits for the control to come back; once it stopped, it gives focus to the same control (a
  // tab: the selected one), else, where that stays disabled (Next on the last step), its nearest
  // enabled neighbour, else (the control is gone: Start a live class) the page's heading.
  const FOCUSABLE = "button, input, textarea, select, summary, a[href], [role=tab], [tabindex='0']";
  const usable = (e) => !!e && e.isConnected && !e.disabled
    && e.getAttribute("aria-disabled") !== "true" && !e.closest("[inert]");
  const keyOf = (e) => {
    const box = e.closest("[class*='st-key-']");
    return box ? [...box.classList].find((c) => c.startsWith("st-key-")) : null;
  };
  const kindOf = (e) => e.getAttribute("role") || e.tagName;
  const labelOf = (e) => (e.getAttribute("aria-label") || e.textContent || "").trim();
  const running = () => !!doc.querySelector("[data-testid='stApp'][data-test-script-state='running']");
  const GRACE_MS = 150;  // after the run: a last commit may still enable the control
  let last = null;
  let lastKey = null;
  let lastKind = "";
  let lastLabel = "";
  let lastIndex = -1;
  let lost = false;
  let stoppedAt = 0;
  // a mouse or a finger pressed since the last key pressed on a control: a hand on the page (a
  // key pressed on the page's body, a clicker's, leaves it so: focus was not on a control)
  let pointed = false;
  doc.addEventListener("pointerdown", () => { pointed = true; }, true);
  doc.addEventListener("keydown", () => {
    if (doc.activeElement && doc.activeElement !== doc.body) pointed = false;
  }, true);
  doc.addEventListener("focusin", (ev) => {
    if (ev.target === doc.body) return;
    last = ev.target;
    lastKey = keyOf(last);
    lastKind = kindOf(last);
    lastLabel = labelOf(last);
    const box = lastKey ? doc.querySelector("." + lastKey) : null;
    lastIndex = box ? [...box.querySelectorAll(FOCUSABLE)].indexOf(last) : -1;
    lost = false;
  });
  const twinOf = (box) => {  // the control the visitor was on, as the page has it now
    if (last.isConnected && !(lastKind === "tab" && last.getAttribute("aria-selected") !== "true"))
      return last;
    const all = box ? [...box.querySelectorAll(FOCUSABLE)] : [];
    if (lastKind === "tab") {
      const open = all.find((e) => kindOf(e) === "tab" && e.getAttribute("aria-selected") === "true");
      if (open) return open;
    }
    return all.find((e) => kindOf(e) === lastKind && labelOf(e) === lastLabel)
      || (lastIndex >= 0 ? all[lastIndex] : null) || null;
  };
  const refocus = () => {
    const now = doc.activeElement;
    if ((now && now !== doc.body) || !last || !doc.hasFocus()) { lost = false; return; }
    if (!lost) {
      // a hand left the control (a click on the page, a clicker's press let go): not taken
      // back. After a key, focus on the body was taken by a rerun, even where the control is
      // usable again by the time this runs (the tab strip after a quick rerun)
      if (pointed && usable(last)) return;
      lost = true;
      stoppedAt = 0;
    }
    const box = lastKey ? doc.querySelector("." + lastKey) : null;
    const same = twinOf(box);
    let target = usable(same) ? same : null;
    if (!target) {
      if (running()) { stoppedAt = 0; return; }  // the rerun may give it back: wait
      if (!stoppedAt) stoppedAt = performance.now();
      const waited = performance.now() - stoppedAt;
      if (waited < GRACE_MS) { window.setTimeout(kick, GRACE_MS - waited + 10); return; }
      const anchor = same || box;
      if (anchor) {
        const row = anchor.closest("[data-testid='stHorizontalBlock']") || anchor.parentElement;
        const all = row ? [...row.querySelectorAll(FOCUSABLE)] : [];
        const at = all.indexOf(same);
        const before = all.slice(0, Math.max(at, 0)).reverse().find(usable);
        target = before || all.slice(at + 1).find(usable) || null;
      }
    }
    if (!target) {  // the control is gone (Start a live class): the page's heading, then on
      target = doc.querySelector("[data-testid='stMain'] h1");
      if (target) target.setAttribute("tabindex", "-1");
    }
    lost = false;
    if (target) target.focus({ preventScroll: true });
  };
  let queued = false;
  const kick = () => {
    if (queued) return;
    queued = true;
    window.requestAnimationFrame(() => { queued = false; fix(); refocus(); });
  };
  new MutationObserver(kick).observe(doc.body, { childList: true, subtree: true, attributes: true,
    attributeFilter: ["disabled", "aria-disabled", "aria-selected", "data-test-script-state"] });
  fix();
})();
</script>
"""


def install() -> None:
    """Run the page's accessibility script (a constant: no visitor text in it)."""
    st.html(A11Y_SCRIPT, unsafe_allow_javascript=True)
