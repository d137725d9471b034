"""The set-up promises: README's test command is what CI runs; the core needs no web stack."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```bash\n(.+?)\n```", text)


def test_readme_has_an_app_command_and_a_test_command():
    commands = readme_commands()
    assert any("streamlit run app.py" in c for c in commands)
    assert any("pytest" in c for c in commands)


def test_ci_runs_readmes_test_command_verbatim():
    test_command = next(c for c in readme_commands() if "pytest" in c)
    assert test_command in (ROOT / ".ci" / "run").read_text().splitlines()


@pytest.mark.slow  # a fresh interpreter importing torch (~2 s); test_layers checks the rule fast
def test_core_imports_without_the_web_stack():
    code = (
        "import sys, attnviz, attnviz.examples, attnviz.aggregation, attnviz.trace, attnviz.sandbox,"
        " attnviz.exercises, attnviz.bench, attnviz.fused;"
        "bad = {'streamlit', 'plotly', 'pandas'} & set(sys.modules);"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd="/")
