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


def _ranges(lines: list[str]) -> dict[str, str]:
    """-> {package: its version range} of requirement lines ('name>=1,<2  # note')."""
    found = {}
    for line in lines:
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*([<>=!~][^;#]*)", line.strip().strip('",'))
        if m:
            found[m.group(1).lower()] = m.group(2).replace(" ", "")
    return found


def _lowest():
    import importlib.util

    spec = importlib.util.spec_from_file_location("lowest", ROOT / "scripts" / "lowest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_package_of_what_users_run_has_a_lower_and_an_upper_bound():
    requirements = (ROOT / "requirements.txt").read_text()
    pinned = _lowest().lowest(requirements)
    ranges = _ranges(requirements.splitlines())
    for name in ("torch", "numpy", "plotly", "streamlit", "pandas", "pyarrow"):
        assert name in pinned, name  # the lowest version is installed and tested by .ci/run
        assert ">=" in ranges[name] and "<" in ranges[name].replace("<=", ""), (name, ranges[name])


def test_pyproject_promises_the_same_ranges_as_requirements():
    requirements = _ranges((ROOT / "requirements.txt").read_text().splitlines())
    pyproject = _ranges(
        re.findall(r'"([^"]+)"', (ROOT / "pyproject.toml").read_text().split("[project]")[1])
    )
    shared = set(requirements) & set(pyproject)
    assert {"torch", "numpy", "plotly", "streamlit", "pandas"} <= shared
    for name in shared:
        assert pyproject[name] == requirements[name], name


def test_ci_installs_the_lowest_versions_and_runs_the_pages_there():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "scripts/lowest.py" in ci and "-c " in ci
    assert re.search(r"\.venv-lowest/bin/python -m pytest .*tests/test_app\.py", ci)


def test_the_lowest_versions_are_pinned_exactly():
    pins = _lowest().lowest("numpy>=2.0,<3\nstreamlit >= 1.67, <1.68  # x\npytest>=8\nsegno\n")
    assert pins == {"numpy": "2.0", "streamlit": "1.67"}


def _imports(path: Path) -> list[str]:
    import ast

    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return names


SOURCES = [ROOT / "app.py", *sorted((ROOT / "attnviz").rglob("*.py"))]


def test_no_private_module_of_any_package_is_imported():
    for path in SOURCES:
        for name in _imports(path):
            parts = [] if name.startswith("attnviz") else name.split(".")
            private = [p for p in parts if p.startswith("_") and p != "__future__"]
            assert not private, f"{path.relative_to(ROOT)} imports {name}"


def test_streamlits_internals_are_reached_only_from_the_compatibility_module():
    internal = ("streamlit.runtime", "streamlit.proto", "streamlit.web", "streamlit.dataframe_util")
    for path in SOURCES:
        if path.name == "compat.py":
            continue
        for name in _imports(path):
            assert not name.startswith(internal), f"{path.relative_to(ROOT)} imports {name}"


def test_the_readmes_module_map_names_every_module():
    """README's module map (the 'layer | modules | may import' table): every package and module of
    attnviz is named there, by its file name or, inside a package, by its package."""
    text = (ROOT / "README.md").read_text()
    table = text[text.index("| layer | modules | may import |") :].split("\n\n")[0]
    missing = []
    for path in sorted((ROOT / "attnviz").rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        rel = path.relative_to(ROOT / "attnviz")
        named = f"`{path.name}`" in table or f"{rel.as_posix()}" in table
        if len(rel.parts) > 1:  # a package's module: named itself, or its package's own line
            named = named or f"`attnviz/{rel.parts[0]}/`" in table and f"{path.stem}" in table
        if not named:
            missing.append(rel.as_posix())
    assert not missing, f"README's module map does not name: {missing}"
