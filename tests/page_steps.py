"""Steps a person takes on a page, as the browser tests take them.

A person opens an expander and then reads it before clicking what it holds; a test that clicks
at once can click while the expander still grows (Streamlit animates its height for ~0.5 s), and
a layout that shifts between the press and the release of the mouse button sends the click to
whatever is under the pointer then: measured, 1 start of a live class in ~40 went nowhere.
"""

from __future__ import annotations

# the expander's box unchanged for this long: its animation has ended
STEADY_MS = 200

_STEADY = """([label, steady]) => {
  const box = [...document.querySelectorAll("[data-testid='stExpander'] details")]
    .find((d) => (d.querySelector("summary")?.innerText || "").includes(label));
  if (!box || !box.open) return false;
  const r = box.getBoundingClientRect();
  const now = performance.now(), shape = [r.x, r.y, r.width, r.height].join(",");
  const seen = (window.__attnvizTestBoxes ||= {});
  const last = seen[label];
  seen[label] = { shape, since: last && last.shape === shape ? last.since : now };
  return now - seen[label].since >= steady;
}"""


def open_expander(page, label: str, timeout_ms: float) -> None:
    """Click the expander whose summary says ``label`` and wait until it is open and has stopped
    growing (its box unchanged for ``STEADY_MS``)."""
    page.get_by_text(label).click()
    page.wait_for_function(_STEADY, arg=[label, STEADY_MS], polling=50, timeout=timeout_ms)
