"""The lowest versions requirements.txt allows, as a pip constraints file.

    python scripts/lowest.py > lowest.txt
    pip install -r requirements.txt -c lowest.txt

Every requirement with a lower bound (``name>=X``) is pinned to ``name==X``, except the tools that
only run the tests and build the lessons (they are not part of what a user runs). .ci/run
installs these into a second environment and runs the page tests and a browser there, so both
ends of every range are proven.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOOLS = {"pytest", "pytest-xdist", "hypothesis", "playwright", "ruff", "zxing-cpp"}
TOOLS |= {"ipykernel", "jupytext", "nbclient", "nbformat", "jupyterlab", "triton"}
_LOWER = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*>=\s*([0-9][^,;\s#]*)")


def lowest(requirements: str) -> dict[str, str]:
    """-> {package: its lowest allowed version} for every lower-bounded requirement but TOOLS."""
    found = {}
    for line in requirements.splitlines():
        match = _LOWER.match(line.strip())
        if match and match.group(1).lower() not in TOOLS:
            found[match.group(1).lower()] = match.group(2)
    return found


def main() -> int:
    pins = lowest((REPO / "requirements.txt").read_text())
    sys.stdout.write("".join(f"{name}=={version}\n" for name, version in pins.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
