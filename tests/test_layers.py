"""The import rules: the core (torch and numpy) imports no streamlit, plotly or pandas, and only
attnviz.ui imports streamlit, so the library and its figures work in a notebook without a web
server. Checked in a fresh interpreter where importing streamlit fails."""

from __future__ import annotations

import subprocess
import sys

import pytest

BLOCK = """
import sys
class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name == "streamlit" or name.startswith("streamlit."):
            raise ImportError(f"{name} is blocked in this test")
        return None
sys.meta_path.insert(0, _Blocked())
import importlib
core, rest = [n for n in sys.argv[1].split(",") if n], sys.argv[2:]
for name in core:
    importlib.import_module(name)
web = {"streamlit", "plotly", "pandas"} & {m.split(".")[0] for m in sys.modules}
assert not web, f"the core loaded {sorted(web)}"
for name in rest:
    importlib.import_module(name)
assert not any(m == "streamlit" or m.startswith("streamlit.") for m in sys.modules), "streamlit loaded"
"""


# the core: torch and numpy only (what a notebook imports to check an exercise)
CORE = [
    "attnviz",
    "attnviz.examples",
    "attnviz.aggregation",
    "attnviz.trace",
    "attnviz.sandbox",
    "attnviz.exercises",
    "attnviz.bench",
    "attnviz.fused",
]
LIBRARY = ["attnviz", "attnviz.figures", "attnviz.trace", "attnviz.sandbox", "attnviz.ui.safe"]


def _fresh_interpreter(*rest: str, core: list[str] = CORE) -> subprocess.CompletedProcess:
    """BLOCK in a new interpreter, outside the checkout (attnviz as installed: requirements.txt
    installs it editable): the core first, then the modules named."""
    return subprocess.run(
        [sys.executable, "-c", BLOCK, ",".join(core), *rest],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_core_needs_no_web_stack_and_figures_no_streamlit():
    """One interpreter for both rules: the core imports neither streamlit, plotly nor pandas;
    then the figures (plotly) and the UI's streamlit-free helpers still import no streamlit."""
    done = _fresh_interpreter(*LIBRARY)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow  # the check of the check: two more fresh interpreters (~1 s)
def test_both_rules_can_fail():
    # the ui layer proper needs streamlit: refused (no core first: no torch to wait for)
    done = _fresh_interpreter("attnviz.ui.boundary", core=[])
    assert done.returncode != 0 and "blocked" in done.stderr
    # a core that loads pandas is caught (pandas alone: no torch to wait for)
    done = _fresh_interpreter(core=["pandas"])
    assert done.returncode != 0 and "the core loaded ['pandas']" in done.stderr
