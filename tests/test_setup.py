"""The set-up promises: README's test command is what CI runs (the import rule: test_layers)."""

import re
from pathlib import Path

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
