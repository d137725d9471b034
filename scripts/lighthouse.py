"""Lighthouse's accessibility score for every page of the app, desktop and mobile.

    python scripts/lighthouse.py                  # serves the app itself, prints the table
    python scripts/lighthouse.py --url http://127.0.0.1:8501

Lighthouse 12.2.3 (pinned; 13.x needs Node 22) is installed by .ci/run into ``.lighthouse/``:
``npm install --prefix .lighthouse -E lighthouse@12.2.3``. It runs with Debian's chromium
(``scripts.chromium``), only the accessibility category, ``desktopConfig`` for desktop and the
default (a phone, 412 CSS px) for mobile. Streamlit draws a page after the HTML has loaded, so
``lighthouse_flow.mjs`` has Lighthouse audit the page once the page's own element is drawn and its
script has finished, and reports the page's h1 with each score: proof that the page audited was the
real one, not the empty shell.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: `python scripts/lighthouse.py`
    sys.path.insert(0, str(ROOT))

from scripts.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

VERSION = "12.2.3"
MODULES = ROOT / ".lighthouse" / "node_modules"
FLOW = Path(__file__).with_name("lighthouse_flow.mjs")
#: (name, path, CSS selector of an element the page draws once it is ready)
PAGES = [
    ("Playground", "", '[data-testid="stPlotlyChart"]'),
    ("Walkthrough", "walkthrough", ".st-key-wt_next"),
    ("Performance", "performance", '[data-testid="stButton"]'),
    ("Learn the scores", "learn", '[data-testid="stButton"]'),
]
FORM_FACTORS = ("desktop", "mobile")


def missing() -> str | None:
    """Why Lighthouse cannot run here (with the command that fixes it), or None."""
    if shutil.which("node") is None:
        return "node is missing (apt-get install -y nodejs npm)"
    if not Path(CHROMIUM).exists():
        return f"Debian's chromium is missing at {CHROMIUM} (apt-get install -y chromium)"
    package = MODULES / "lighthouse" / "package.json"
    if not package.exists() or json.loads(package.read_text())["version"] != VERSION:
        return (
            f"Lighthouse {VERSION} is missing: "
            f"npm install --prefix .lighthouse --no-audit --no-fund -E lighthouse@{VERSION}"
        )
    return None


def audit(url: str, pages=PAGES, form_factors=FORM_FACTORS, timeout_s: float = 600) -> list[dict]:
    """One Lighthouse accessibility audit per page and form factor, in one browser.

    Each result: name, formFactor, score (0..1), failing ([{id, title, nodes}]), applicable (the
    ids of the audits that found something to check), h1 (the audited page's), version."""
    runs = [
        {"name": name, "url": f"{url}/{path}", "ready": ready, "formFactor": form}
        for name, path, ready in pages
        for form in form_factors
    ]
    request = {"lighthouse": str(MODULES), "chrome": CHROMIUM, "args": CHROMIUM_ARGS, "runs": runs}
    done = subprocess.run(
        ["node", str(FLOW)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"Lighthouse failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def problems(result: dict) -> list[str]:
    """What keeps one result from a trustworthy 100: failing audits, or an unrendered page."""
    found = [f"{f['id']} ({f['title']}): {f['nodes']}" for f in result["failing"]]
    if not result["h1"] or "heading-order" not in result["applicable"]:
        found.append("the audited page had no heading: Lighthouse saw the empty shell")
    if result["score"] != 1 and not found:
        found.append(f"score {result['score']} without a failing binary audit")
    return found


def table(results: list[dict]) -> str:
    """The scores and failing audits, one line a page and form factor."""
    lines = [f"{'page':<18} {'form':<8} {'score':>5}  failing audits"]
    for r in results:
        score = "-" if r["score"] is None else f"{round(100 * r['score']):d}"
        failing = ", ".join(f["id"] for f in r["failing"]) or "none"
        lines.append(f"{r['name']:<18} {r['formFactor']:<8} {score:>5}  {failing}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a running app (default: serve this checkout)")
    args = parser.parse_args(argv)
    reason = missing()
    if reason:
        print(reason, file=sys.stderr)
        return 2
    if args.url:
        results = audit(args.url.rstrip("/"))
    else:
        from scripts import streamlit_server

        with streamlit_server.serve() as server:
            results = audit(server.url)
    print(f"Lighthouse {results[0]['version']}, accessibility only")
    print(table(results))
    for r in results:
        for line in problems(r):
            print(f"{r['name']} ({r['formFactor']}): {line}")
    return 0 if not any(problems(r) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
