"""Debian's chromium, started the one way every browser test here starts it.

Playwright drives it with ``executable_path=CHROMIUM`` (never ``playwright install``: nothing may be
downloaded), headless, without a sandbox (CI runs as root) and without anything that reaches the
network on its own.
"""

from __future__ import annotations

import os

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
