"""The app's first run applies the patches the environment asks for: all of them, or with
ATTNVIZ_PATCHES=off (test_compat runs the page tests that way) none of the optional ones."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from attnviz.ui import compat

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def test_the_app_runs_with_the_patches_the_environment_asks_for():
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    assert not at.exception
    in_force = compat.in_force()
    for name, patch in compat.PATCHES.items():
        assert in_force[name] is (compat.patches_wanted() or not patch.optional), name
