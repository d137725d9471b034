"""The import rule: only attnviz.ui imports streamlit, so the library and its figures work in a
notebook without a web server. Checked in a fresh interpreter where importing streamlit fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = """
import sys
class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name == "streamlit" or name.startswith("streamlit."):
            raise ImportError(f"{name} is blocked in this test")
        return None
sys.meta_path.insert(0, _Blocked())
import importlib
for name in sys.argv[1:]:
    importlib.import_module(name)
assert not any(m == "streamlit" or m.startswith("streamlit.") for m in sys.modules), "streamlit loaded"
"""


LIBRARY = ["attnviz", "attnviz.figures", "attnviz.trace", "attnviz.sandbox", "attnviz.ui.safe"]


def test_library_and_figures_import_without_streamlit():
    done = subprocess.run(
        [sys.executable, "-c", BLOCK, *LIBRARY],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow  # the check of the check: a second fresh interpreter (~2 s)
def test_blocking_streamlit_really_blocks_it():
    done = subprocess.run(
        [sys.executable, "-c", BLOCK, "attnviz.ui.boundary"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )  # the ui layer proper needs streamlit: refused, so the check above can fail
    assert done.returncode != 0 and "blocked" in done.stderr
